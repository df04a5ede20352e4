# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""Where a Glance's API is reached, and step 7 of its pass: ``GlanceAPIReady``.

The in-cluster Service URL, ``status.endpoint``, the URL the gather step probes
(``probe.py``), and the condition and requeue a probe's result (``Health``) gives.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.desired import conditions as c
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.api import (
    HEALTHCHECK_PATH,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.pods import (
    API_PORT,
)
from ansible_collections.c5c3.glance.plugins.module_utils.passes.glance.pass_state import (
    REQUEUE_HEALTH,
    _meta,
    _spec,
)

BODY_EXCERPT_BYTES = 256

# --- health results (the gather step's probe of the API) --------------------------------
HEALTH_TIMEOUT = "timeout"
HEALTH_DNS = "dns"
HEALTH_REFUSED = "refused"
HEALTH_OTHER = "other"
HEALTH_ERROR_KINDS = (HEALTH_TIMEOUT, HEALTH_DNS, HEALTH_REFUSED, HEALTH_OTHER)


@dataclass(frozen=True)
class Health:
    """One probe of ``GET <url>``: the HTTP status code, or the kind of transport error.

    ``error_kind`` is None for an HTTP answer, else ``timeout``, ``dns``, ``refused`` or
    ``other``; ``body`` is the answer's body (an excerpt goes into the condition) and
    ``error`` the transport error's text.
    """

    url: str
    status_code: int | None = None
    error_kind: str | None = None
    body: str = ""
    error: str = ""

    @classmethod
    def from_data(cls, data: Mapping[str, Any] | Health) -> Health:
        """A ``Health`` from the dict the gather step returns (``url``, ``status_code``,
        ``error_kind``, ``body``, optionally ``error``)."""
        if isinstance(data, Health):
            return data
        return cls(
            url=str(data.get("url") or ""),
            status_code=data.get("status_code"),
            error_kind=data.get("error_kind"),
            body=str(data.get("body") or ""),
            error=str(data.get("error") or ""),
        )


def service_url(glance: Mapping[str, Any]) -> str:
    """``http://<name>.<ns>.svc.cluster.local:9292/``: the in-cluster API URL."""
    meta = _meta(glance)
    return f"http://{meta['name']}.{meta['namespace']}.svc.cluster.local:{API_PORT}/"


def endpoint_url(glance: Mapping[str, Any]) -> str:
    """``status.endpoint``: ``https://<gateway.hostname>/`` with a gateway, else the Service URL."""
    gateway = _spec(glance).get("gateway")
    if gateway is not None:
        return f"https://{gateway['hostname']}/"
    return service_url(glance)


def health_check_url(glance: Mapping[str, Any]) -> str:
    """What the gather step probes: always the in-cluster ``/healthcheck``, gateway or not."""
    return service_url(glance) + HEALTHCHECK_PATH.lstrip("/")


def body_excerpt(body: str) -> str:
    """At most 256 bytes of ``body``, line breaks turned into spaces, trimmed."""
    raw = body.encode("utf-8")[:BODY_EXCERPT_BYTES].decode("utf-8", errors="ignore")
    return raw.replace("\r\n", " ").replace("\n", " ").replace("\r", " ").strip()


def health_condition(health: Health) -> tuple[dict[str, str], int | None]:
    """``GlanceAPIReady`` from a probe (§4.14), and the requeue it asks for."""
    url = health.url
    if health.error_kind is None and health.status_code is not None:
        if 200 <= health.status_code < 300:
            return c.condition(
                c.GLANCE_API_READY, True, c.API_HEALTHY, f"Glance API is responding at {url}"
            ), None
        message = f"Glance API returned HTTP {health.status_code}"
        excerpt = body_excerpt(health.body)
        if excerpt:
            message += f": {excerpt}"
        return c.condition(c.GLANCE_API_READY, False, c.API_UNHEALTHY, message), REQUEUE_HEALTH
    detail = health.error or health.body or "no answer"
    reason, message = {
        HEALTH_TIMEOUT: (c.HEALTH_CHECK_TIMEOUT, f"health check timed out: {url}"),
        HEALTH_DNS: (c.ENDPOINT_NOT_READY, f"endpoint not resolvable: {url}"),
        HEALTH_REFUSED: (c.CONNECTION_FAILED, f"connection failed: {url}: {detail}"),
    }.get(health.error_kind or "", (c.HEALTH_CHECK_FAILED, f"health check failed: {url}: {detail}"))
    return c.condition(c.GLANCE_API_READY, False, reason, message), REQUEUE_HEALTH
