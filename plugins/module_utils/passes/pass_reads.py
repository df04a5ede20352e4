# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""What the gather step reads for one pass, decided without the cluster.

A pass reads a fixed, small set of objects: the custom resource, its siblings, the
Secrets and ConfigMaps the spec names, the MariaDB ``database.clusterRef`` names (managed
mode), the secret store and ExternalSecrets where the cluster serves external-secrets.io,
and the objects the Glance owns (by their fixed names, or listed by a label).
``glance_reads`` and ``backend_reads`` name them; the
gather module performs the reads, one API request each, and nothing else.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.desired import glance_secrets as gs
from ansible_collections.c5c3.glance.plugins.module_utils.desired.backend_projection import (
    credentials_secret,
    is_attached,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.content_address import (
    CONFIG_BASE_LABEL,
    backends_base,
    config_base,
    db_purge_cronjob_name,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.mariadb import (
    MARIADB_API_VERSION,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.metadata import (
    DB_CONNECTION_SUFFIX,
    common_labels,
    owner_labels,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.role_templates import KINDS

GROUP_VERSION = "glance.openstack.c5c3.io/v1alpha1"
HTTP_ROUTE_API = "gateway.networking.k8s.io/v1"
MARIADB_API = MARIADB_API_VERSION
MARIADB_KINDS = ("Database", "User", "Grant")


@dataclass(frozen=True)
class Read:
    """One GET (``name`` set) or LIST (``label_selector``, may be empty) in ``namespace``.

    ``owned``: the read is of objects the Glance owns (the live state the apply step
    compares with), not of an input the spec names.
    """

    api_version: str
    kind: str
    namespace: str
    name: str | None = None
    label_selector: str | None = None
    owned: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "api_version": self.api_version,
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
            "label_selector": self.label_selector,
            "owned": self.owned,
        }


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("spec") or {}


def _selector(labels: Mapping[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def referenced_secrets(glance: Mapping[str, Any], backends: Iterable[Mapping[str, Any]]) -> list:
    """The Secret names the pass reads: database and service-user credentials, the import
    CA bundle, and the S3 credentials of every backend attached to this Glance. Sorted,
    without repeats."""
    spec = _spec(glance)
    names = {
        ((spec.get("database") or {}).get("secretRef") or {}).get("name"),
        ((spec.get("serviceUser") or {}).get("secretRef") or {}).get("name"),
        (spec.get("importCABundleSecretRef") or {}).get("name"),
    }
    names |= {credentials_secret(b) for b in backends if is_attached(b, glance)}
    return sorted(n for n in names if n)


def referenced_configmaps(glance: Mapping[str, Any]) -> list:
    """The ConfigMap names the pass reads: the policy overrides' ``configMapRef``."""
    ref = (_spec(glance).get("policyOverrides") or {}).get("configMapRef") or {}
    return [ref["name"]] if ref.get("name") else []


def database_cluster(glance: Mapping[str, Any]) -> str | None:
    """The MariaDB ``database.clusterRef`` names (managed mode), or None (brownfield)."""
    ref = (_spec(glance).get("database") or {}).get("clusterRef")
    return str(ref.get("name") or "") if ref is not None else None


def mariadb_reads(name: str, namespace: str) -> list[Read]:
    """The mariadb-operator Database, User and Grant named ``name`` (managed mode). On a
    cluster that does not serve them, each GET finds nothing."""
    return [Read(MARIADB_API, kind, namespace, name=name, owned=True) for kind in MARIADB_KINDS]


def deletion_reads(glance: Mapping[str, Any]) -> list[Read]:
    """What the pass of a Glance being deleted reads (reference-spec §2.10): its MariaDB
    resources in managed mode, checked and deleted before the finalizer goes; nothing in
    brownfield mode."""
    if database_cluster(glance) is None:
        return []
    meta = glance.get("metadata") or {}
    return mariadb_reads(str(meta["name"]), str(meta["namespace"]))


def sweep_reads(glance: Mapping[str, Any]) -> list[Read]:
    """On a target cluster, every object of every kind a Glance writes that carries its
    ownership labels (reference-spec §2.10: the label-selected sweep of a Glance being
    deleted; no garbage collector there follows an owner reference to it). The MariaDB
    resources are deleted (and waited for) before; a kind the cluster does not serve is
    skipped."""
    meta = glance.get("metadata") or {}
    name, namespace = str(meta["name"]), str(meta["namespace"])
    selector = _selector(owner_labels(str(glance.get("kind") or "Glance"), name, namespace))
    kinds = dict.fromkeys((k.api_version, k.kind) for k in KINDS.values())
    return [
        Read(api, kind, namespace, label_selector=selector, owned=True)
        for api, kind in kinds
        if kind not in MARIADB_KINDS
    ]


def owned_reads(name: str, namespace: str, gateway_api: bool, managed: bool = False) -> list[Read]:
    """The objects a Glance named ``name`` owns, as ``live_state.live_objects`` sorts them:
    the fixed names (the MariaDB resources too when ``managed``), the content-addressed
    copies by their config-base label, and the Jobs by the common labels (the db-sync Job
    and the db-purge runs)."""
    fixed = [
        ("v1", "Secret", name + DB_CONNECTION_SUFFIX),
        ("apps/v1", "Deployment", name),
        ("v1", "Service", name),
        ("policy/v1", "PodDisruptionBudget", name),
        ("autoscaling/v2", "HorizontalPodAutoscaler", name),
        ("networking.k8s.io/v1", "NetworkPolicy", name),
        ("batch/v1", "CronJob", db_purge_cronjob_name(name)),
    ]
    if gateway_api:
        fixed.append((HTTP_ROUTE_API, "HTTPRoute", name))
    listed = [
        ("v1", "ConfigMap", f"{CONFIG_BASE_LABEL}={config_base(name)}"),
        ("v1", "Secret", f"{CONFIG_BASE_LABEL}={backends_base(name)}"),
        ("batch/v1", "Job", _selector(common_labels(name))),
    ]
    reads = [Read(api, kind, namespace, name=n, owned=True) for api, kind, n in fixed]
    if managed:
        reads += mariadb_reads(name, namespace)
    return reads + [
        Read(api, kind, namespace, label_selector=sel, owned=True) for api, kind, sel in listed
    ]


def external_secrets_reads(glance: Mapping[str, Any]) -> list[Read]:
    """Where the cluster serves external-secrets.io: the store the Glance selects (a
    ClusterSecretStore is cluster-scoped: discovery says so, the namespace is ignored) and
    the ExternalSecrets named like its database and service-user Secrets."""
    namespace = str((glance.get("metadata") or {})["namespace"])
    kind, store, _ = gs.selected_store(glance)
    reads = [Read(gs.EXTERNAL_SECRETS_API, kind, namespace, name=store)]
    spec = _spec(glance)
    names = {
        ((spec.get("database") or {}).get("secretRef") or {}).get("name"),
        ((spec.get("serviceUser") or {}).get("secretRef") or {}).get("name"),
    }
    return reads + [
        Read(gs.EXTERNAL_SECRETS_API, "ExternalSecret", namespace, name=n)
        for n in sorted(n for n in names if n)
    ]


def glance_reads(
    glance: Mapping[str, Any],
    backends: Iterable[Mapping[str, Any]],
    gateway_api: bool,
    external_secrets_api: bool = False,
) -> list[Read]:
    """Everything a Glance pass reads once the Glance and its namespace's backends are in
    (``external_secrets_api``: the cluster serves external-secrets.io)."""
    meta = glance.get("metadata") or {}
    name, namespace = str(meta["name"]), str(meta["namespace"])
    reads = [Read("v1", "Secret", namespace, name=s) for s in referenced_secrets(glance, backends)]
    reads += [Read("v1", "ConfigMap", namespace, name=m) for m in referenced_configmaps(glance)]
    if external_secrets_api:
        reads += external_secrets_reads(glance)
    cluster = database_cluster(glance)
    if cluster is not None:
        reads.append(Read(MARIADB_API, "MariaDB", namespace, name=cluster))
    return reads + owned_reads(name, namespace, gateway_api, managed=cluster is not None)


def backend_reads(backend: Mapping[str, Any]) -> list[Read]:
    """A GlanceBackend pass: its parent Glance, its credentials Secret, the parent's
    Deployment (the backends Secret it mounts is read once the Deployment is in)."""
    meta = backend.get("metadata") or {}
    namespace = str(meta["namespace"])
    parent = str((_spec(backend).get("glanceRef") or {}).get("name") or "")
    reads = [Read(GROUP_VERSION, "Glance", namespace, name=parent)] if parent else []
    secret = credentials_secret(backend)
    if secret:
        reads.append(Read("v1", "Secret", namespace, name=secret))
    if parent:
        reads.append(Read("apps/v1", "Deployment", namespace, name=parent))
    return reads
