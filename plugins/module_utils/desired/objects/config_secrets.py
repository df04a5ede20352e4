# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""The objects of the configuration (role ``glance_config``): the content-addressed config
ConfigMap and backends Secret, and the db-connection Secret that holds the DSN.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.metadata import (
    BACKENDS_SUFFIX,
    CONFIG_BASE_LABEL,
    CONFIG_SUFFIX,
    DB_CONNECTION_SUFFIX,
    Artifacts,
    _metadata,
    _name,
    common_labels,
)

DB_CONNECTION_KEY = "connection"


def _b64(value: str) -> str:
    return base64.b64encode(value.encode("utf-8")).decode("ascii")


def config_map(glance: Mapping[str, Any], artifacts: Artifacts) -> dict[str, Any] | None:
    """The immutable, content-addressed ConfigMap; None while no valid config exists."""
    if not artifacts.config_map:
        return None
    name = _name(glance)
    labels = {**common_labels(name), CONFIG_BASE_LABEL: name + CONFIG_SUFFIX}
    out = _metadata(glance, artifacts, artifacts.config_map, labels)
    out["data"] = {key: artifacts.config_data[key] for key in sorted(artifacts.config_data)}
    return out


def backends_secret(glance: Mapping[str, Any], artifacts: Artifacts) -> dict[str, Any] | None:
    """The immutable, content-addressed backends Secret (``data`` base64-encoded)."""
    if not artifacts.backends_secret:
        return None
    name = _name(glance)
    labels = {**common_labels(name), CONFIG_BASE_LABEL: name + BACKENDS_SUFFIX}
    out = _metadata(glance, artifacts, artifacts.backends_secret, labels)
    out["data"] = {
        key: _b64(artifacts.backends_data[key]) for key in sorted(artifacts.backends_data)
    }
    return out


def db_connection_secret(glance: Mapping[str, Any], artifacts: Artifacts) -> dict[str, Any] | None:
    """``{name}-db-connection`` holding the DSN under ``connection``; None without a DSN."""
    if artifacts.dsn is None:
        return None
    name = _name(glance)
    out = _metadata(glance, artifacts, name + DB_CONNECTION_SUFFIX, common_labels(name))
    out["data"] = {DB_CONNECTION_KEY: _b64(artifacts.dsn)}
    return out
