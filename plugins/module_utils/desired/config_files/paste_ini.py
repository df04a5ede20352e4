# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""``glance-api-paste.ini`` (reference-spec §3.2): the pipeline, the user's middleware
before and after its core, the image cache filter and the static sections.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.desired.config_files.ini import (
    ConfigError,
    Sections,
    _spec,
    _text,
    render_ini,
)

# On the pod's writable tmp volume (the root filesystem is read-only), so that
# `kubectl exec <pod> -- touch /tmp/glance-healthcheck-disable` takes a pod out of rotation.
HEALTHCHECK_DISABLE_FILE = "/tmp/glance-healthcheck-disable"

# --- paste pipeline ------------------------------------------------------------------------
PIPELINE_CORE = ("cors", "http_proxy_to_wsgi", "versionnegotiation", "authtoken", "context")
MIDDLEWARE_POSITIONS = ("before", "after")
CACHE_FILTER = "cache"
_FILTER_FACTORY = "paste.filter_factory"
_STATIC_PASTE_SECTIONS: dict[str, dict[str, str]] = {
    "composite:glance-api-keystone": {
        "paste.composite_factory": "glance.api:root_app_factory",
        "/": "api",
        "/healthcheck": "healthcheck",
    },
    "composite:rootapp": {
        "paste.composite_factory": "glance.api:root_app_factory",
        "/": "apiversions",
        "/v2": "apiv2app",
    },
    "app:healthcheck": {
        "paste.app_factory": "oslo_middleware:Healthcheck.app_factory",
        "backends": "disable_by_file",
        "disable_by_file_path": HEALTHCHECK_DISABLE_FILE,
    },
    "app:apiversions": {"paste.app_factory": "glance.api.versions:create_resource"},
    "app:apiv2app": {"paste.app_factory": "glance.api.v2.router:API.factory"},
    "filter:cors": {
        _FILTER_FACTORY: "oslo_middleware.cors:filter_factory",
        "oslo_config_project": "glance",
        "oslo_config_program": "glance-api",
    },
    "filter:http_proxy_to_wsgi": {_FILTER_FACTORY: "oslo_middleware:HTTPProxyToWSGI.factory"},
    "filter:versionnegotiation": {
        _FILTER_FACTORY: (
            "glance.api.middleware.version_negotiation:VersionNegotiationFilter.factory"
        )
    },
    "filter:authtoken": {
        _FILTER_FACTORY: "keystonemiddleware.auth_token:filter_factory",
        "delay_auth_decision": "true",
    },
    "filter:context": {_FILTER_FACTORY: "glance.api.middleware.context:ContextMiddleware.factory"},
}
_CACHE_FILTER_SECTION = {_FILTER_FACTORY: "glance.api.middleware.cache:CacheFilter.factory"}


# The reference's pipeline name in its renderer's errors (plugins.RenderPastePipeline).
PIPELINE_NAME = "api"


def _middleware_name_problem(name: str) -> str | None:
    if not name:
        return f'pipeline "{PIPELINE_NAME}" contains a MiddlewareSpec with an empty Name'
    if any(c.isspace() for c in name) or "[" in name or "]" in name:
        return (
            f"middleware name {name!r} must not contain whitespace or brackets: it is a "
            "pipeline entry and a section name"
        )
    return None


def render_paste_ini(glance: Mapping[str, Any]) -> str:
    """``glance-api-paste.ini`` (reference-spec §3.2).

    Raises :class:`ConfigError` for an empty middleware name or factory, a duplicate
    name, an unknown position, the name ``cache`` while the image cache is set, or a name
    that cannot be a pipeline entry.
    """
    spec = _spec(glance)
    cache = spec.get("imageCache") is not None
    before: list[str] = []
    after: list[str] = []
    sections: Sections = {}
    seen: dict[str, int] = {}
    for i, middleware in enumerate(spec.get("middleware") or []):
        path = f"spec.middleware[{i}]"
        name = middleware.get("name") or ""
        problem = _middleware_name_problem(name)
        if problem:
            raise ConfigError(f"{path}.name: {problem}")
        # The reference's words (plugins.RenderPastePipeline), then the field path.
        if name in seen:
            raise ConfigError(
                f'{path}.name: duplicate middleware Name "{name}" in pipeline "{PIPELINE_NAME}" '
                f"(spec.middleware[{seen[name]}] has it too)"
            )
        if cache and name == CACHE_FILTER:
            raise ConfigError(
                f'{path}.name: duplicate middleware Name "cache" in pipeline "{PIPELINE_NAME}" '
                "(the operator's image cache filter while spec.imageCache is set: rename this "
                "middleware)"
            )
        seen[name] = i
        factory = middleware.get("filterFactory") or ""
        if not factory:
            raise ConfigError(
                f'{path}.filterFactory: middleware "{name}" in pipeline "{PIPELINE_NAME}" has an '
                "empty FilterFactory"
            )
        position = middleware.get("position")
        if position not in MIDDLEWARE_POSITIONS:
            raise ConfigError(
                f'{path}.position: middleware "{name}" in pipeline "{PIPELINE_NAME}" has '
                f'unrecognised Position "{_text(position)}" (must be before or after)'
            )
        options: dict[str, str] = {}
        config = middleware.get("config") or {}
        for key in sorted(config):
            if key.lower() == _FILTER_FACTORY:
                continue  # the filterFactory field decides the factory
            if key.lower() in {k.lower() for k in options}:
                raise ConfigError(
                    f"{path}.config: option {key!r} is given twice (paste option names are "
                    "case-insensitive)"
                )
            options[key] = _text(config[key])
        options[_FILTER_FACTORY] = factory
        sections[f"filter:{name}"] = options
        (before if position == "before" else after).append(name)
    if cache:
        after.append(CACHE_FILTER)
        sections[f"filter:{CACHE_FILTER}"] = dict(_CACHE_FILTER_SECTION)
    sections["pipeline:api"] = {"pipeline": " ".join([*before, *PIPELINE_CORE, *after, "rootapp"])}
    # The static sections are merged last: they win on a name clash (§3.2).
    for name, options in _STATIC_PASTE_SECTIONS.items():
        sections[name] = dict(options)
    return render_ini(sections, order=sorted(sections))
