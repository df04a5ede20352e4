# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""The Glance API health probe, through the API server's service proxy (reference-spec §4.14).

``GET /api/v1/namespaces/<ns>/services/<name>:9292/proxy/healthcheck`` reaches the API the
same way from a workstation and from the operator's pod. Two kinds of answer come back:
Glance's own (any status; ``/healthcheck`` answers in plain text) and the proxy's, when it
could not reach a pod (a ``Status`` object, usually 503). ``classify`` turns the second
kind into the transport-error kinds ``api_health.health_condition`` knows, from the
message the API server relays (``no endpoints available``, ``connection refused``,
``i/o timeout``, ``no such host``...).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.api import (
    HEALTHCHECK_PATH,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.pods import (
    API_PORT,
)
from ansible_collections.c5c3.glance.plugins.module_utils.passes.glance.api_health import (
    HEALTH_DNS,
    HEALTH_OTHER,
    HEALTH_REFUSED,
    HEALTH_TIMEOUT,
    health_check_url,
)

BODY_LIMIT = 4096

# Substrings of the proxy's error message -> error kind, first match wins.
PROXY_ERRORS: tuple[tuple[str, str], ...] = (
    ("no endpoints available", HEALTH_REFUSED),
    ("connection refused", HEALTH_REFUSED),
    ("i/o timeout", HEALTH_TIMEOUT),
    ("timeout", HEALTH_TIMEOUT),
    ("deadline exceeded", HEALTH_TIMEOUT),
    ("no such host", HEALTH_DNS),
)


def _proxy_status(headers: Mapping[str, str], body: bytes) -> dict[str, Any] | None:
    """The API server's own ``Status`` answer, or None when the body is Glance's."""
    if "json" not in headers.get("content-type", ""):
        return None
    try:
        doc = json.loads(body)
    except ValueError:
        return None
    if isinstance(doc, dict) and doc.get("kind") == "Status" and doc.get("apiVersion") == "v1":
        return doc
    return None


def classify(url: str, status: int, headers: Mapping[str, str], body: bytes) -> dict[str, Any]:
    """The probe result for one answer through the proxy (``api_health.Health`` data)."""
    text = body[:BODY_LIMIT].decode("utf-8", "replace")
    proxy = _proxy_status(headers, body)
    if proxy is None:
        return {"url": url, "status_code": status, "error_kind": None, "body": text}
    message = str(proxy.get("message") or "")
    lowered = message.lower()
    kind = next((k for needle, k in PROXY_ERRORS if needle in lowered), HEALTH_OTHER)
    if status == 404 and kind == HEALTH_OTHER:
        kind = HEALTH_DNS  # the Service itself does not exist
    return {"url": url, "status_code": None, "error_kind": kind, "body": "", "error": message}


def probe_health(client: Any, glance: Mapping[str, Any], timeout: float) -> dict[str, Any]:
    """Probe the Glance API of ``glance`` and classify the answer."""
    meta = glance["metadata"]
    url = health_check_url(glance)
    try:
        answer = client.service_proxy_get(
            meta["namespace"], meta["name"], API_PORT, HEALTHCHECK_PATH, timeout
        )
    except TimeoutError as exc:
        return {"url": url, "status_code": None, "error_kind": HEALTH_TIMEOUT, "error": str(exc)}
    except OSError as exc:
        return {"url": url, "status_code": None, "error_kind": HEALTH_OTHER, "error": str(exc)}
    return classify(url, answer.status, answer.headers, answer.body)
