# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""How the API is reached (role ``glance_exposure``): the NetworkPolicy with its ingress
peers and its egress rules and ports, and the HTTPRoute.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.metadata import (
    NAMESPACE_NAME_LABEL,
    Artifacts,
    _metadata,
    _name,
    _namespace,
    _spec,
    common_labels,
    selector_labels,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.pods import (
    API_PORT,
)
from ansible_collections.c5c3.glance.plugins.module_utils.gosemantics.go_url import (
    URLError,
    parse_url,
    url_port,
)

# --- ports ---------------------------------------------------------------------------------
DEFAULT_DB_PORT = 3306
DNS_PORT = 53
MEMCACHED_PORT = 11211
MAX_PORT = 65535
SCHEME_PORTS = {"https": 443, "http": 80}
_PORT_DIGITS = re.compile(r"[+-]?[0-9]+")

# --- HTTPRoute -----------------------------------------------------------------------------
ROUTE_REQUEST_TIMEOUT = "4h"  # no CR field: long transfers pass, a stalled one is still cut
ROUTE_PATH_TYPE = "PathPrefix"
DEFAULT_ROUTE_PATH = "/"


def _split_host_port_port(hostport: str) -> str | None:
    """The port part of Go's ``net.SplitHostPort``, or None where Go returns an error."""
    last = hostport.rfind(":")
    if last < 0:
        return None
    start, end_bracket = 0, 0
    if hostport.startswith("["):
        end = hostport.find("]")
        if end < 0 or end + 1 != last:
            return None
        start, end_bracket = 1, end + 1
    elif ":" in hostport[:last]:
        return None
    if "[" in hostport[start:] or "]" in hostport[end_bracket:]:
        return None
    return hostport[last + 1 :]


def _valid_port(text: str) -> int | None:
    """Go's ``strconv.ParseInt(text, 10, 32)`` then the 1-65535 range, or None."""
    if not _PORT_DIGITS.fullmatch(text):
        return None
    port = int(text)
    return port if 0 < port <= MAX_PORT else None


def cache_egress_ports(spec: Mapping[str, Any]) -> list[int]:
    """11211 for a clusterRef; else each server's port (11211 when absent or invalid).

    Deduplicated, in first-seen order.
    """
    cache = spec.get("cache") or {}
    servers = cache.get("servers") or []
    if not servers:
        return [MEMCACHED_PORT] if cache.get("clusterRef") is not None else []
    ports: list[int] = []
    for server in servers:
        text = _split_host_port_port(server)
        port = (_valid_port(text) if text is not None else None) or MEMCACHED_PORT
        if port not in ports:
            ports.append(port)
    return ports


def s3_egress_ports(hosts: Sequence[str]) -> list[int]:
    """Each backend URL's port, or 443/80 by scheme; unusable URLs skipped; sorted, unique."""
    ports = set()
    for host in hosts:
        try:
            url = parse_url(host)
        except URLError:
            continue
        if not url.hostname:
            continue
        port = _valid_port(url.port) if url.port else SCHEME_PORTS.get(url.scheme)
        if port is not None:
            ports.add(port)
    return sorted(ports)


def keystone_port(endpoint: str) -> int:
    """The port of a Keystone URL: explicit, else 80 for http, else 443 (fail closed)."""
    try:
        port = url_port(endpoint)
    except URLError:
        return 443
    if port is not None and 0 < port <= MAX_PORT:
        return port
    return 80 if parse_url(endpoint).scheme == "http" else 443


def keystone_egress_ports(spec: Mapping[str, Any]) -> list[int]:
    """The ports of ``keystoneEndpoint`` and ``keystonePublicEndpoint``; sorted, unique."""
    endpoints = [spec["keystoneEndpoint"]]
    if spec.get("keystonePublicEndpoint"):
        endpoints.append(spec["keystonePublicEndpoint"])
    return sorted({keystone_port(endpoint) for endpoint in endpoints})


def _tcp_rule(ports: Sequence[int]) -> dict[str, Any]:
    return {"ports": [{"protocol": "TCP", "port": port} for port in ports]}


def _sibling_pods(name: str) -> list[dict[str, Any]]:
    """The peer "pods of this Glance, in its namespace": the Deployment's selector labels."""
    return [{"podSelector": {"matchLabels": selector_labels(name)}}]


def sibling_egress_rule(name: str) -> dict[str, Any]:
    """To the other pods of this Glance on the API port: glance forwards a staged import."""
    return {**_tcp_rule([API_PORT]), "to": _sibling_pods(name)}


def egress_rules(
    spec: Mapping[str, Any], s3_hosts: Sequence[str], name: str
) -> list[dict[str, Any]]:
    """The egress rules, in order: DNS, database, cache, S3, Keystone, sibling pods,
    additionalEgress.

    The derived rules restrict ports only, never the destination, except the rule to the
    sibling pods (a pod forwards an import or delete of an image another pod staged,
    ``worker_self_reference_url``), which admits only this Glance's pods on 9292. Ports
    are deduplicated within a rule, not across rules, so each rule depends on its own
    input alone. Keystone follows the reference's four derived rules, so their positions
    stay the reference's; the user's rules come last, verbatim.
    """
    database = spec.get("database") or {}
    rules = [
        {"ports": [{"protocol": "UDP", "port": DNS_PORT}, {"protocol": "TCP", "port": DNS_PORT}]},
        _tcp_rule([database.get("port") or DEFAULT_DB_PORT]),
    ]
    for ports in (
        cache_egress_ports(spec),
        s3_egress_ports(s3_hosts),
        keystone_egress_ports(spec),
    ):
        if ports:
            rules.append(_tcp_rule(ports))
    rules.append(sibling_egress_rule(name))
    rules += copy.deepcopy(list((spec.get("networkPolicy") or {}).get("additionalEgress") or []))
    return rules


def _namespace_peer(namespace: str) -> dict[str, Any]:
    return {"namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: namespace}}}


def ingress_peers(
    glance: Mapping[str, Any], operator_namespace: str | None = None
) -> list[dict[str, Any]]:
    """The spec's sources, the Gateway's namespace, the operator's namespace, then the
    other pods of this Glance (a forwarded import or delete of a staged image)."""
    spec = _spec(glance)
    peers = []
    for source in (spec.get("networkPolicy") or {}).get("ingress") or []:
        peer = {}
        if source.get("namespaceSelector") is not None:
            peer["namespaceSelector"] = copy.deepcopy(source["namespaceSelector"])
        if source.get("podSelector") is not None:
            peer["podSelector"] = copy.deepcopy(source["podSelector"])
        peers.append(peer)
    gateway = spec.get("gateway")
    if gateway is not None:
        peers.append(_namespace_peer(gateway["parentRef"].get("namespace") or _namespace(glance)))
    if operator_namespace:
        peers.append(_namespace_peer(operator_namespace))
    peers += _sibling_pods(_name(glance))
    return peers


def network_policy(
    glance: Mapping[str, Any], artifacts: Artifacts, operator_namespace: str | None = None
) -> dict[str, Any] | None:
    """The per-Glance NetworkPolicy; None when ``spec.networkPolicy`` is unset.

    Raises ValueError for an empty ingress list (schema and webhook reject it): a rule
    with no peers would admit everyone, so the policy fails closed instead.
    """
    spec = _spec(glance)
    policy = spec.get("networkPolicy")
    if policy is None:
        return None
    if not policy.get("ingress"):
        raise ValueError(
            "spec.networkPolicy.ingress must not be empty: refusing to create a "
            "NetworkPolicy that would allow all ingress"
        )
    name = _name(glance)
    out = _metadata(glance, artifacts, name, common_labels(name))
    out["pod_selector"] = {"matchLabels": selector_labels(name)}
    out["policy_types"] = ["Ingress", "Egress"]
    out["ingress"] = [
        {
            "ports": [{"protocol": "TCP", "port": API_PORT}],
            "from": ingress_peers(glance, operator_namespace),
        }
    ]
    out["egress"] = egress_rules(spec, artifacts.s3_hosts, name)
    return out


def route_path(gateway: Mapping[str, Any]) -> str:
    """``gateway.path`` with a leading ``/``; ``/`` when empty."""
    path = gateway.get("path") or DEFAULT_ROUTE_PATH
    return path if path.startswith("/") else "/" + path


def http_route(glance: Mapping[str, Any], artifacts: Artifacts) -> dict[str, Any] | None:
    """The gateway.networking.k8s.io/v1 HTTPRoute; None when ``spec.gateway`` is unset."""
    gateway = _spec(glance).get("gateway")
    if gateway is None:
        return None
    name = _name(glance)
    parent = gateway["parentRef"]
    out = _metadata(glance, artifacts, name, common_labels(name))
    out["annotations"] = dict(gateway.get("annotations") or {})
    out["parent_refs"] = [
        {key: parent[key] for key in ("name", "namespace", "sectionName") if parent.get(key)}
    ]
    out["hostnames"] = [gateway["hostname"]]
    out["path"] = {"type": ROUTE_PATH_TYPE, "value": route_path(gateway)}
    out["backend_refs"] = [{"kind": "Service", "name": name, "port": API_PORT}]
    out["timeouts"] = {"request": ROUTE_REQUEST_TIMEOUT}
    return out
