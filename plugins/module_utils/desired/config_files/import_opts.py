# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""Image import: the ``[import_filtering_opts]`` values (reference-spec §1.2.1), the
enabled import methods and the import plugins, each resolved from the spec with its
default.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.admission.glance_admission import (
    IMPORT_METHODS,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.config_files.ini import (
    _text,
)

#: ``spec.importMethods`` when unset (the design notes' default).
DEFAULT_IMPORT_METHODS = ("web-download", "copy-image")

DEFAULT_ALLOWED_SCHEMES = ("https",)
DEFAULT_ALLOWED_PORTS = ("443",)
BASELINE_DISALLOWED_HOSTS = (
    "localhost",
    "127.0.0.1",
    "0.0.0.0",
    "::1",
    "169.254.169.254",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)

#: importPlugins block -> glance plugin name, in glance's fixed order.
IMPORT_PLUGIN_ORDER = (
    ("decompression", "image_decompression"),
    ("conversion", "image_conversion"),
    ("injectMetadata", "inject_image_metadata"),
)


def resolve_import_filtering(spec: Mapping[str, Any]) -> dict[str, list[str]]:
    """The six ``[import_filtering_opts]`` values (reference-spec §1.2.1), ports as text.

    A list that is unset (None) resolves to its default; an explicit ``[]`` stays empty.
    ``disallowed_hosts`` is the baseline followed by the user's hosts (deduplicated, first
    occurrence kept), empty when ``allowedHosts`` is non-empty or ``disallowedHosts: []``.
    """
    filtering = spec.get("importFiltering") or {}

    def given(field: str) -> list[str] | None:
        values = filtering.get(field)
        return None if values is None else [_text(v) for v in values]

    allowed_schemes = given("allowedSchemes")
    allowed_ports = given("allowedPorts")
    allowed_hosts = given("allowedHosts") or []
    user_denied_hosts = given("disallowedHosts")
    if allowed_hosts:
        disallowed_hosts: list[str] = []
    elif user_denied_hosts is None:
        disallowed_hosts = list(BASELINE_DISALLOWED_HOSTS)
    elif not user_denied_hosts:
        disallowed_hosts = []
    else:
        disallowed_hosts = list(dict.fromkeys([*BASELINE_DISALLOWED_HOSTS, *user_denied_hosts]))
    return {
        "allowed_schemes": (
            list(DEFAULT_ALLOWED_SCHEMES) if allowed_schemes is None else allowed_schemes
        ),
        "disallowed_schemes": given("disallowedSchemes") or [],
        "allowed_hosts": allowed_hosts,
        "disallowed_hosts": disallowed_hosts,
        "allowed_ports": list(DEFAULT_ALLOWED_PORTS) if allowed_ports is None else allowed_ports,
        "disallowed_ports": given("disallowedPorts") or [],
    }


def import_methods(spec: Mapping[str, Any]) -> list[str]:
    """``enabled_import_methods``: ``spec.importMethods`` (else web-download and copy-image).

    Rendered in the order of ``glance_admission.IMPORT_METHODS``, each once, whatever the
    order of the list (a reordered list does not roll the pods).
    glance-direct and glance-download stage on the pod that takes the request; every pod
    carries its own ``worker_self_reference_url`` (``objects.pods``), so glance proxies a
    later import or delete of a staged image to the pod that holds the data.
    """
    chosen = spec.get("importMethods")
    if chosen is None:
        chosen = DEFAULT_IMPORT_METHODS
    return [method for method in IMPORT_METHODS if method in chosen]


def import_plugins(spec: Mapping[str, Any]) -> list[str]:
    """The enabled import plugins in glance's fixed order (a present block enables one)."""
    blocks = spec.get("importPlugins") or {}
    return [plugin for field, plugin in IMPORT_PLUGIN_ORDER if blocks.get(field) is not None]
