# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""Managed mode: the mariadb-operator Database, User and Grant of a Glance
(reference-spec §4.10), emitted by role ``glance_database``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.desired.glance_secrets import (
    DB_PASSWORD_KEY,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.metadata import (
    DB_CONNECTION_HASH_ANNOTATION,
    Artifacts,
    _metadata,
    _name,
    _spec,
    common_labels,
)

MARIADB_API_VERSION = "k8s.mariadb.com/v1alpha1"
MARIADB_CHARACTER_SET = "utf8"
MARIADB_COLLATE = "utf8_general_ci"
MARIADB_PRIVILEGES = ("ALL PRIVILEGES",)
MARIADB_GRANT_TABLE = "*"


def _mariadb_metadata(glance: Mapping[str, Any], artifacts: Artifacts) -> dict[str, Any]:
    # The reference leaves them unlabelled; ours carry the common labels like every other
    # owned object, so `kubectl get databases,users,grants -l app.kubernetes.io/instance=`
    # finds them (labels add nothing a cluster switching operators would have to edit).
    name = _name(glance)
    return _metadata(glance, artifacts, name, common_labels(name))


def _mariadb_ref(spec: Mapping[str, Any]) -> dict[str, str]:
    return {"name": spec["database"]["clusterRef"]["name"]}


def _static_managed(spec: Mapping[str, Any]) -> bool:
    database = spec.get("database") or {}
    return database.get("clusterRef") is not None and database.get("credentialsMode") != "Dynamic"


def mariadb_database(glance: Mapping[str, Any], artifacts: Artifacts) -> dict[str, Any] | None:
    """The ``Database`` ``{name}`` on the MariaDB of ``clusterRef``; None outside managed mode."""
    spec = _spec(glance)
    if (spec.get("database") or {}).get("clusterRef") is None:
        return None
    out = _mariadb_metadata(glance, artifacts)
    out["mariadb_ref"] = _mariadb_ref(spec)
    out["character_set"] = MARIADB_CHARACTER_SET
    out["collate"] = MARIADB_COLLATE
    out["database"] = spec["database"]["database"]
    return out


def mariadb_user(glance: Mapping[str, Any], artifacts: Artifacts) -> dict[str, Any] | None:
    """The ``User`` ``{name}`` with the password of ``database.secretRef`` (key ``password``);
    None unless managed with Static credentials. ``maxUserConnections`` stays unset.

    Annotated with the DSN's hash (the pod template's ``db-connection-hash``), which the
    reference does not do: mariadb-operator reads the password when the User changes, and
    watches the Secret only when it carries the label ``k8s.mariadb.com/watch`` (else it
    reads it again at its ``--requeue-sql`` period, 10 h by default). A password rotated in
    the Secret changes the annotation, so the User is written and mariadb-operator sets the
    new password in the same pass that rolls the pods onto it (found with the real
    controller, tests/cluster/test_with_mariadb_operator.py)."""
    spec = _spec(glance)
    if not _static_managed(spec):
        return None
    out = _mariadb_metadata(glance, artifacts)
    if artifacts.dsn_digest is not None:
        out["annotations"] = {DB_CONNECTION_HASH_ANNOTATION: artifacts.dsn_digest}
    out["mariadb_ref"] = _mariadb_ref(spec)
    out["password_secret_key_ref"] = {
        "name": spec["database"]["secretRef"]["name"],
        "key": DB_PASSWORD_KEY,
    }
    return out


def mariadb_grant(glance: Mapping[str, Any], artifacts: Artifacts) -> dict[str, Any] | None:
    """The ``Grant`` ``{name}``: ALL PRIVILEGES on ``<database>.*`` to the User ``{name}``;
    None unless managed with Static credentials."""
    spec = _spec(glance)
    if not _static_managed(spec):
        return None
    out = _mariadb_metadata(glance, artifacts)
    out["mariadb_ref"] = _mariadb_ref(spec)
    out["privileges"] = list(MARIADB_PRIVILEGES)
    out["database"] = spec["database"]["database"]
    out["table"] = MARIADB_GRANT_TABLE
    out["username"] = _name(glance)
    return out
