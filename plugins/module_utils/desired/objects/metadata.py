# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""What every owned object carries: its labels and annotations, its name, and its metadata.

The labels, annotation keys and name suffixes of the owned objects; the ``Artifacts`` the
other compute steps hand in; and the metadata of an entry (``name``, ``namespace``,
``labels``, ``owner_references``, or the ownership labels on a target cluster).

The names with a leading underscore (``_spec``, ``_name``, ``_namespace``, ``_metadata``)
are the package's own: the modules of ``desired/objects/`` share them, nothing outside
it uses them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.admission.glance_admission import (
    POD_INSTANCE_LABEL,
    POD_NAME_LABEL,
)

# --- labels and annotations --------------------------------------------------------------
APP_NAME = "glance"
MANAGED_BY = "glance-operator"
NAME_LABEL = POD_NAME_LABEL
INSTANCE_LABEL = POD_INSTANCE_LABEL
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
COMPONENT_LABEL = "app.kubernetes.io/component"
COMPONENT_API = "api"
COMPONENT_DB_SYNC = "db-sync"
COMPONENT_DB_PURGE = "db-purge"
CONFIG_BASE_LABEL = "cobaltcore.c5c3.io/config-base"
# The ownership labels of a child on a target cluster (the reference's multicluster ones):
# there, no owner reference can hold, so these name the owner, and the deletion sweep
# selects by them.
OWNER_KIND_LABEL = "openstack.c5c3.io/owner-kind"
OWNER_NAME_LABEL = "openstack.c5c3.io/owner-name"
OWNER_NAMESPACE_LABEL = "openstack.c5c3.io/owner-namespace"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
POD_SPEC_HASH_ANNOTATION = "cobaltcore.c5c3.io/pod-spec-hash"
DB_CONNECTION_HASH_ANNOTATION = "glance.c5c3.io/db-connection-hash"
AUTHTOKEN_HASH_ANNOTATION = "glance.c5c3.io/authtoken-hash"
# The SHA-256 of spec.importCABundleSecretRef's ca.crt: a new bundle rolls the API pods,
# as each uWSGI worker's urllib keeps the TLS context of its first download.
IMPORT_CA_HASH_ANNOTATION = "glance.c5c3.io/import-ca-hash"

# --- names -------------------------------------------------------------------------------
CONFIG_SUFFIX = "-config"
BACKENDS_SUFFIX = "-backends"
DB_CONNECTION_SUFFIX = "-db-connection"
DB_SYNC_SUFFIX = "-db-sync"
DB_EXPAND_SUFFIX = "-db-expand"
DB_MIGRATE_SUFFIX = "-db-migrate"
DB_CONTRACT_SUFFIX = "-db-contract"
# A longer Glance name gets a hashed db-purge name: CronJob names are capped at 52.


@dataclass(frozen=True)
class Artifacts:
    """What the other compute steps produced for this pass, handed in.

    ``config_map`` and ``backends_secret`` are the content-addressed names
    (``{name}-config-<hash8>``, ``{name}-backends-<hash8>``); ``config_map`` is ``""``
    while no valid configuration exists. ``dsn`` is None when the database Secret gate
    failed. ``s3_hosts`` are the ``s3.host`` URLs of every attached backend.
    ``image_cache_max_size`` (bytes) is required when ``spec.imageCache`` is set.
    ``owner`` is the Glance's ``apiVersion``, ``kind``, ``name`` and ``uid``.
    """

    config_map: str
    backends_secret: str
    config_data: Mapping[str, str]
    backends_data: Mapping[str, str]
    dsn: str | None
    dsn_digest: str | None
    authtoken_digest: str | None
    s3_hosts: Sequence[str]
    image_cache_max_size: int | None
    owner: Mapping[str, str]
    import_ca_digest: str | None = None


# ---------------------------------------------------------------------------------------
# small pieces shared by several objects


def _spec(glance: Mapping[str, Any]) -> Mapping[str, Any]:
    return glance.get("spec") or {}


def _name(glance: Mapping[str, Any]) -> str:
    return glance["metadata"]["name"]


def _namespace(glance: Mapping[str, Any]) -> str:
    return glance["metadata"]["namespace"]


def common_labels(name: str) -> dict[str, str]:
    """The labels every owned object carries."""
    return {NAME_LABEL: APP_NAME, INSTANCE_LABEL: name, MANAGED_BY_LABEL: MANAGED_BY}


def selector_labels(name: str) -> dict[str, str]:
    """The immutable Deployment selector: name and instance."""
    return {NAME_LABEL: APP_NAME, INSTANCE_LABEL: name}


def component_labels(name: str, component: str) -> dict[str, str]:
    """The common labels plus ``app.kubernetes.io/component``."""
    return {**common_labels(name), COMPONENT_LABEL: component}


def owner_references(owner: Mapping[str, str]) -> list[dict[str, Any]]:
    """The controller reference to the Glance, for garbage collection."""
    return [
        {
            "apiVersion": owner["apiVersion"],
            "kind": owner["kind"],
            "name": owner["name"],
            "uid": owner["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def target_cluster(glance: Mapping[str, Any]) -> str | None:
    """The registered cluster ``spec.targetClusterRef`` names, or None: this cluster."""
    ref = _spec(glance).get("targetClusterRef")
    return str(ref.get("name") or "") if isinstance(ref, Mapping) else None


def owner_labels(kind: str, name: str, namespace: str) -> dict[str, str]:
    """The labels that name the owner of a child on a target cluster."""
    return {OWNER_KIND_LABEL: kind, OWNER_NAME_LABEL: name, OWNER_NAMESPACE_LABEL: namespace}


def _metadata(
    glance: Mapping[str, Any], artifacts: Artifacts, name: str, labels: Mapping[str, str]
) -> dict[str, Any]:
    if target_cluster(glance) is not None:
        owner = artifacts.owner
        return {
            "name": name,
            "namespace": _namespace(glance),
            "labels": {**labels, **owner_labels(owner["kind"], owner["name"], _namespace(glance))},
            "owner_references": [],
        }
    return {
        "name": name,
        "namespace": _namespace(glance),
        "labels": dict(labels),
        "owner_references": owner_references(artifacts.owner),
    }
