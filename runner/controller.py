"""What the runner decides, without I/O: which watch events wake which object, what a pass
starts with (the finalizer), and what follows it (requeue or backoff).

Event to key, as controller-runtime's handlers do it for ansible-operator:

* **the watched kinds** (``watches.yaml``): the object's own key, through
  ansible-operator's predicates (:func:`primary_wants`): a create, a delete, and an update
  that changes ``metadata.generation`` (or of an object that has none), that starts the
  deletion, or, with ``watchAnnotationsChanges``, that changes the annotations; the
  watch's ``selector`` must match. A status write, a label edit or the runner's own
  finalizer change wakes nothing.
* **a GlanceBackend** also wakes its parent Glance (``spec.glanceRef.name``, same
  namespace) when the parent must see the event (``glancebackend_pass.parent_to_wake``:
  created, deleted, spec changed, deletion started, ``CredentialsReady`` flipped), and on
  an update that moves it to another Glance, the old parent as well (:func:`parent_keys`).
* **dependents** (the kinds a Glance pass writes, ``role_templates.KINDS``): the owner
  named by the controller ``ownerReference``, when the owner's kind is watched with
  ``watchDependentResources`` (``EnqueueRequestForOwner(OnlyControllerOwner)``), through
  operator-lib's ``DependentPredicate`` (:func:`dependent_wants`): a delete always, a create
  never, an update only when something besides ``status``, ``resourceVersion`` and the
  ``managedFields`` times changed. One addition: a change of a Deployment's, Job's,
  CronJob's or HTTPRoute's readiness (:func:`readiness`) wakes the owner too, although it
  is a status change, and so does a mariadb-operator Database's, User's or Grant's
  ``Ready``. The Glance pass waits for exactly these (DeploymentReady, the db-sync Job, a
  db-purge run's end, HTTPRouteAccepted, the managed database); with the predicate alone
  the pass would see them only at its next requeue (10 to 30 s later; a purge run's end
  only at the next periodic pass). Other status changes (a Deployment's ``conditions`` timestamps
  or a replica count that flips none of the pass's predicates, a Job's ``active`` count)
  still wake nothing.

* **a parent's Deployment** also wakes the parent's GlanceBackends (those whose
  ``spec.glanceRef.name`` is the owner Glance, same namespace) when the backends Secret it
  mounts changes: created with one, deleted, or mounting another (:func:`mount_change`;
  the Secret is content-addressed and create-only, so a new section is a new name). That
  is what a backend's ``ConfigProjected`` reads; without the wake a backend sees it at its
  next backstop poll, up to 15 s later and after polls that change nothing. This is a
  ``Watches(Deployment, EnqueueRequestsFromMapFunc)`` of the GlanceBackend controller,
  which ansible-operator has no ``watches.yaml`` field for.

* **a target cluster's registration Secret** (a Secret of the clusters namespace,
  ``--clusters-namespace``, labelled ``sigs.k8s.io/multicluster-runtime-kubeconfig=true``:
  the kubeconfig of the cluster it is named after, reference-spec §2.11) wakes every
  Glance whose ``spec.targetClusterRef.name`` is its name, in every watched namespace,
  when it is created, deleted (or loses the label), or its data changes
  (:func:`registration_change`, :func:`target_cluster_keys`). A Glance waiting for its
  cluster to be registered, or to answer with a new kubeconfig, sees it at once instead
  of at its next requeue. This is a ``Watches(Secret, EnqueueRequestsFromMapFunc)`` of the
  Glance controller on a label-selected informer of that one namespace
  (:func:`registrations_namespace`), so no other Secret is cached. The same event wakes
  those Glances' GlanceBackends: they read their credentials and their parent's
  Deployment in the same target cluster, and that Deployment is not watched there, so
  no other event would tell them the cluster went away or came back.

* **a Glance's MariaDB** (``k8s.mariadb.com`` ``MariaDB``, managed database mode) wakes
  the Glances of its namespace whose ``spec.database.clusterRef.name`` is its name when it
  is created, deleted or recreated, or its ``Ready`` condition flips
  (:func:`readiness_change`, :func:`database_cluster_keys`): the pass's gate
  (``ClusterNotReady``) reads nothing else of it. A Glance waiting for its MariaDB goes on
  at once instead of at its 30 s poll: the reference's ``Watches(MariaDB)``. The informer
  exists when the cluster serves the kind when the runner starts (as for the dependent
  kinds) and keeps identity and readiness only (:func:`compact_readiness`). A
  Glance with a target cluster reads its MariaDB there, where nothing is watched.

* **a Glance's secret store** (external-secrets' ``ClusterSecretStore`` or
  ``SecretStore``) wakes the Glances it gates (:func:`secret_store_keys`) on the same
  events as a MariaDB (:func:`readiness_change`): the reference's store watches.

* **a Secret or ConfigMap a spec names** wakes the Glances of its namespace that read it
  (database and service-user Secrets, the policy ConfigMap, the credentials of an attached
  backend) and the GlanceBackends whose credentials it is, when it is created, deleted or
  written (:func:`reference_change`, :func:`referenced_keys`): the reference's
  ``Watches(Secret)`` through its indexes. Watched as metadata only
  (``PartialObjectMetadata``; :func:`compact_reference` keeps identity and version), so the
  runner never receives what they hold; any write counts, as the metadata cannot tell a
  data change from another. Not for a Glance with a target cluster, nor its backends.

Dependent objects are cached in compact form (:func:`compact_dependent`: identity, owner
references, a digest of everything the predicate compares and the readiness), as
client-go's informer transforms allow, so the runner never holds the data of the Secrets
it watches (a Job's entry keeps what the db-sync and db-purge metrics need).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.desired import (
    glance_secrets,
    upgrade,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.backend_projection import (
    credentials_secret,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.role_templates import KINDS
from ansible_collections.c5c3.glance.plugins.module_utils.kube import live_state
from ansible_collections.c5c3.glance.plugins.module_utils.passes import (
    glancebackend_pass,
    pass_reads,
)
from runner.endpoints.metrics import (
    RESULT_ERROR,
    RESULT_REQUEUE,
    RESULT_REQUEUE_AFTER,
    RESULT_SUCCESS,
)
from runner.endpoints.metrics_feed import job_facts
from runner.kube.informer import ADDED, DELETED
from runner.kube.watches import Watch
from runner.kube.workqueue import HIGH_PRIORITY, LOW_PRIORITY, ObjectKey
from runner.passes.extravars import RunOutcome

GLANCE_GROUP = "glance.openstack.c5c3.io"

DEPENDENT_KINDS: tuple[tuple[str, str], ...] = tuple(
    dict.fromkeys((kind.api_version, kind.kind) for kind in KINDS.values())
)
"""``(apiVersion, kind)`` of every object a Glance pass writes."""

PARENT_KINDS: Mapping[tuple[str, str], str] = {
    ("glance.openstack.c5c3.io", "GlanceBackend"): "Glance"
}
"""A watched kind whose events also wake an object of another watched kind: the parent."""

TARGET_CLUSTER_KINDS: frozenset[tuple[str, str]] = frozenset(
    {("glance.openstack.c5c3.io", "Glance")}
)
"""The watched kinds whose ``spec.targetClusterRef.name`` names a target cluster: a change
of that cluster's registration Secret wakes them."""

REGISTRATION_LABEL = "sigs.k8s.io/multicluster-runtime-kubeconfig"
"""The label of a target cluster's kubeconfig Secret (multicluster-runtime's kubeconfig
provider, which the reference operator uses)."""
REGISTRATION_SELECTOR = f"{REGISTRATION_LABEL}=true"
"""The label selector of the registration Secrets' informer."""
TARGET_CLUSTER = "target cluster's"
"""The relation of a wake by a registration Secret (:func:`event_reason`)."""


def group_of(api_version: str) -> str:
    """``apps`` of ``apps/v1``; ``""`` for the core ``v1``."""
    return api_version.rpartition("/")[0]


def _meta(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return (obj or {}).get("metadata") or {}


def _identity(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A compact cache entry's identity: kind, name, namespace, uid, resourceVersion."""
    meta = _meta(obj)
    names = ("name", "namespace", "uid", "resourceVersion")
    return {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "metadata": {name: meta[name] for name in names if name in meta},
    }


def key_of(watch: Watch, obj: Mapping[str, Any]) -> ObjectKey:
    meta = _meta(obj)
    return ObjectKey(watch.gvk.group, watch.gvk.kind, meta.get("namespace", ""), meta["name"])


def describe(key: ObjectKey) -> str:
    """``namespace/name`` (``name`` for a cluster-scoped object): the ``key`` of a log line."""
    return f"{key.namespace}/{key.name}" if key.namespace else key.name


def controller_name(watch: Watch) -> str:
    """The name of a watch's controller, its work queue and its metrics: the lower-case
    kind, as controller-runtime names a controller built ``For`` a kind."""
    return watch.gvk.kind.lower()


# -- the watched kinds ---------------------------------------------------------------------


def primary_wants(
    watch: Watch, event: str, new: Mapping[str, Any] | None, old: Mapping[str, Any] | None
) -> bool:
    """Whether an event of a watched object asks for a pass over it (ansible-operator's
    ``GenerationChanged | NoGeneration [| AnnotationChanged]`` and ``selector`` predicates,
    plus the start of a deletion)."""
    if event == DELETED:
        return watch.selector.matches(_meta(old or new).get("labels"))
    if not watch.selector.matches(_meta(new).get("labels")):
        return False
    if event == ADDED or old is None:
        return True
    before, after = _meta(old), _meta(new)
    if before.get("uid") != after.get("uid"):
        return True  # deleted and created again between two looks
    if not after.get("generation") or before.get("generation") != after.get("generation"):
        return True
    if bool(before.get("deletionTimestamp")) != bool(after.get("deletionTimestamp")):
        return True
    return watch.watch_annotations_changes and (before.get("annotations") or {}) != (
        after.get("annotations") or {}
    )


def parent_keys(
    watch: Watch,
    new: Mapping[str, Any] | None,
    old: Mapping[str, Any] | None,
    watched: Mapping[tuple[str, str], Watch],
) -> list[ObjectKey]:
    """The parents a child event wakes: ``parent_to_wake`` of the GlanceBackend pass, and
    the old parent when an update moved the child to another one."""
    parent_kind = PARENT_KINDS.get((watch.gvk.group, watch.gvk.kind))
    if parent_kind is None or (watch.gvk.group, parent_kind) not in watched:
        return []
    keys: list[ObjectKey] = []
    woken = glancebackend_pass.parent_to_wake(new, old)
    if woken is not None:
        keys.append(ObjectKey(watch.gvk.group, parent_kind, *woken))
    if new is not None and old is not None:
        before, after = _parent_name(old), _parent_name(new)
        if before and before != after:
            keys.append(
                ObjectKey(watch.gvk.group, parent_kind, _meta(old).get("namespace", ""), before)
            )
    return list(dict.fromkeys(keys))


def _parent_name(child: Mapping[str, Any]) -> str:
    return str(((child.get("spec") or {}).get("glanceRef") or {}).get("name") or "")


# -- dependents ----------------------------------------------------------------------------


def readiness(obj: Mapping[str, Any]) -> Any:
    """What a pass waits for in a dependent's status, comparable; None for other kinds.

    Deployment: the three predicates the Glance pass reads its status through
    (``live_state.deployment_ready``, ``live_state.deployment_converged``,
    ``upgrade.rollout_converged``), not the replica counts themselves: a rollout's
    intermediate states (2 of 3 pods ready, a new ``unavailableReplicas``) change none of
    them, and a pass they woke would find the same and wait again. Job: whether it is
    Complete or Failed. CronJob (db-purge): its runs under way (``status.active``) and the
    last success - a run that ends leaves ``active``, so the pass that reports its outcome
    and records it (``cobaltcore.c5c3.io/last-db-purge-job-uid``) follows at once, as the
    reference's reconcile on its owned CronJob's status does. HTTPRoute: each parent's
    ``Accepted`` with its observed generation.
    """
    kind = obj.get("kind")
    status = obj.get("status") or {}
    if kind == "Deployment":
        return (
            live_state.deployment_ready(obj),
            live_state.deployment_converged(obj),
            upgrade.rollout_converged(obj),
        )
    if kind == "Job":
        return tuple(
            sorted(
                c.get("type")
                for c in status.get("conditions") or []
                if c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
            )
        )
    if kind == "CronJob":
        active = sorted(
            str(ref.get("uid") or ref.get("name")) for ref in status.get("active") or []
        )
        return (status.get("lastSuccessfulTime"), tuple(active))
    if kind in ("Database", "User", "Grant") and str(obj.get("apiVersion", "")).startswith(
        "k8s.mariadb.com/"
    ):
        # Managed mode's gate waits for each one's Ready (live_state.condition_ready).
        return live_state.condition_ready(obj)
    if kind == "HTTPRoute":
        return tuple(
            (
                json.dumps(parent.get("parentRef") or {}, sort_keys=True),
                next(
                    (
                        (c.get("status"), c.get("observedGeneration"))
                        for c in parent.get("conditions") or []
                        if c.get("type") == "Accepted"
                    ),
                    None,
                ),
            )
            for parent in status.get("parents") or []
        )
    return None


def _predicate_digest(obj: Mapping[str, Any]) -> str:
    """A digest of what ``DependentPredicate`` compares: the object without ``status``,
    ``metadata.resourceVersion`` and the ``managedFields`` times."""
    body = {key: value for key, value in obj.items() if key != "status"}
    meta = dict(body.get("metadata") or {})
    meta.pop("resourceVersion", None)
    if meta.get("managedFields"):
        meta["managedFields"] = [
            {k: v for k, v in entry.items() if k != "time"} for entry in meta["managedFields"]
        ]
    body["metadata"] = meta
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def compact_dependent(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The informer's cache entry of a dependent (its transform): identity, owner
    references, the predicate's digest, the readiness; for a Job also its labels, creation
    time and terminal condition (``job``: what
    ``runner.endpoints.metrics_feed.DbJobCounter`` counts); for a Deployment the backends
    Secret it mounts (``mounts``, :func:`mount_change`)."""
    meta = _meta(obj)
    entry = {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "metadata": {
            name: meta[name]
            for name in (
                "name",
                "namespace",
                "uid",
                "resourceVersion",
                "generation",
                "ownerReferences",
            )
            if name in meta
        },
        "digest": _predicate_digest(obj),
        "readiness": readiness(obj),
    }
    if obj.get("kind") == "Job":
        entry["job"] = job_facts(obj)
    if obj.get("kind") == "Deployment":
        entry["mounts"] = live_state.mounted_artifacts(obj)[1]
    return entry


def mount_change(event: str, new: Mapping[str, Any] | None, old: Mapping[str, Any] | None) -> bool:
    """Whether a dependent's event changes what its owner's children read from it: a
    Deployment (compact entry) created mounting a backends Secret, deleted, or mounting
    another one."""
    before = (old or {}).get("mounts") or ""
    after = (new or {}).get("mounts") or ""
    if event == ADDED or old is None:
        return bool(after)
    if event == DELETED or new is None:
        return bool(before)
    return before != after


def child_keys(
    owner: ObjectKey,
    watched: Mapping[tuple[str, str], Watch],
    children: Iterable[Mapping[str, Any]],
) -> list[ObjectKey]:
    """The keys of ``children`` (objects of the kinds :data:`PARENT_KINDS` names
    ``owner``'s kind the parent of) whose parent is ``owner``."""
    keys: list[ObjectKey] = []
    for child in children:
        group, kind = owner.group, str(child.get("kind") or "")
        if PARENT_KINDS.get((group, kind)) != owner.kind or (group, kind) not in watched:
            continue
        namespace = _meta(child).get("namespace", "")
        if namespace == owner.namespace and _parent_name(child) == owner.name:
            keys.append(ObjectKey(group, kind, namespace, _meta(child)["name"]))
    return keys


# -- target clusters -----------------------------------------------------------------------


def registrations_namespace(
    clusters_namespace: str,
    watch_namespaces: Iterable[str],
    watched: Mapping[tuple[str, str], Watch],
) -> str | None:
    """The namespace whose registration Secrets the runner watches, or None: none when
    target clusters are off (``--clusters-namespace=``), when no watched kind names a target
    cluster, or when the runner watches some namespaces only (``--watch-namespace``, the
    namespace-scoped install, whose RBAC reaches no other) and the clusters namespace is
    not one of them."""
    if not clusters_namespace or not TARGET_CLUSTER_KINDS & set(watched):
        return None
    namespaces = set(watch_namespaces)
    if namespaces and clusters_namespace not in namespaces:
        return None
    return clusters_namespace


def compact_registration(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The informer's cache entry of a registration Secret (its transform): identity and a
    digest of its ``type`` and ``data``, never the kubeconfig itself."""
    body = {"type": obj.get("type"), "data": obj.get("data") or {}}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
    return {**_identity(obj), "digest": hashlib.sha256(text.encode()).hexdigest()}


def registration_change(
    event: str, new: Mapping[str, Any] | None, old: Mapping[str, Any] | None
) -> bool:
    """Whether a registration Secret's event (compact entries) changes the cluster its
    Glances write to: created, deleted (or no longer labelled: the label-selected watch
    says DELETED), recreated, or its data changed. A label or annotation edit that keeps it
    registered changes nothing a pass reads."""
    if event in (ADDED, DELETED) or new is None or old is None:
        return True
    if _meta(old).get("uid") != _meta(new).get("uid"):
        return True
    return old.get("digest") != new.get("digest")


def target_cluster_name(obj: Mapping[str, Any]) -> str:
    """``spec.targetClusterRef.name`` of a Glance; ``""`` without one."""
    return str((((obj or {}).get("spec") or {}).get("targetClusterRef") or {}).get("name") or "")


def target_cluster_keys(
    cluster: str,
    watched: Mapping[tuple[str, str], Watch],
    objects: Iterable[Mapping[str, Any]],
) -> list[ObjectKey]:
    """The keys of ``objects`` (of the watched :data:`TARGET_CLUSTER_KINDS`, any namespace)
    whose ``spec.targetClusterRef.name`` is ``cluster``."""
    keys: list[ObjectKey] = []
    if not cluster:
        return keys
    for obj in objects:
        group = group_of(str(obj.get("apiVersion") or ""))
        kind = str(obj.get("kind") or "")
        if (group, kind) not in TARGET_CLUSTER_KINDS or (group, kind) not in watched:
            continue
        if target_cluster_name(obj) == cluster:
            meta = _meta(obj)
            keys.append(ObjectKey(group, kind, meta.get("namespace", ""), meta["name"]))
    return list(dict.fromkeys(keys))


# -- the MariaDB of a managed database --------------------------------------------------------

DATABASE_CLUSTER_API = "k8s.mariadb.com/v1alpha1"
DATABASE_CLUSTER_KIND = "MariaDB"
"""The mariadb-operator kind ``spec.database.clusterRef`` names (managed database mode)."""
DATABASE_CLUSTER_KINDS: frozenset[tuple[str, str]] = frozenset(
    {("glance.openstack.c5c3.io", "Glance")}
)
"""The watched kinds whose ``spec.database.clusterRef.name`` names a MariaDB: its
readiness wakes them."""
DATABASE_CLUSTER = "database's"
"""The relation of a wake by a Glance's MariaDB (:func:`event_reason`)."""


def compact_readiness(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The informer's cache entry of a MariaDB or a secret store (its transform): identity
    and whether it is Ready, all the Glance pass reads of it (the gates,
    ``ClusterNotReady`` and ``SecretStoreNotReady``)."""
    return {**_identity(obj), "readiness": live_state.condition_ready(obj)}


def readiness_change(
    event: str, new: Mapping[str, Any] | None, old: Mapping[str, Any] | None
) -> str | None:
    """Why a MariaDB's or a secret store's event (compact entries) wakes the Glances on it:
    ``ADDED``, ``DELETED``, :data:`READINESS` (its ``Ready`` flipped, or it was recreated);
    None for any other change, which the pass does not read."""
    if event in (ADDED, DELETED):
        return event
    if new is None or old is None or _meta(old).get("uid") != _meta(new).get("uid"):
        return READINESS
    return READINESS if old.get("readiness") != new.get("readiness") else None


def database_cluster_name(obj: Mapping[str, Any]) -> str:
    """``spec.database.clusterRef.name`` of a Glance; ``""`` without one."""
    database = (((obj or {}).get("spec") or {}).get("database")) or {}
    return str((database.get("clusterRef") or {}).get("name") or "")


def database_cluster_keys(
    mariadb: Mapping[str, Any],
    watched: Mapping[tuple[str, str], Watch],
    objects: Iterable[Mapping[str, Any]],
) -> list[ObjectKey]:
    """The keys of ``objects`` (of the watched :data:`DATABASE_CLUSTER_KINDS`) in the
    MariaDB's namespace whose ``spec.database.clusterRef.name`` is its name. A Glance with a
    target cluster reads its MariaDB there, not this one."""
    meta = _meta(mariadb)
    name, namespace = meta.get("name"), meta.get("namespace")
    keys: list[ObjectKey] = []
    for obj in objects:
        group = group_of(str(obj.get("apiVersion") or ""))
        kind = str(obj.get("kind") or "")
        if (group, kind) not in DATABASE_CLUSTER_KINDS or (group, kind) not in watched:
            continue
        if _meta(obj).get("namespace") != namespace or target_cluster_name(obj):
            continue
        if database_cluster_name(obj) == name:
            keys.append(ObjectKey(group, kind, namespace, _meta(obj)["name"]))
    return list(dict.fromkeys(keys))


# -- the secret store of external-secrets ----------------------------------------------------

SECRET_STORE_KINDS: tuple[str, ...] = (
    glance_secrets.CLUSTER_SECRET_STORE,
    glance_secrets.SECRET_STORE,
)
"""The external-secrets stores a Glance is gated on (``glance_secrets.selected_store``)."""
SECRET_STORE = "store's"
"""The relation of a wake by a Glance's secret store (:func:`event_reason`)."""


def secret_store_keys(
    store: Mapping[str, Any],
    watched: Mapping[tuple[str, str], Watch],
    objects: Iterable[Mapping[str, Any]],
) -> list[ObjectKey]:
    """The keys of the Glances gated on ``store``: those whose ``spec.secretStoreRef``
    names it (a SecretStore: in its namespace), and for the default ClusterSecretStore
    ``openbao-cluster-store`` those that name none (its existence gates them). Not a
    Glance with a target cluster: it reads its store there."""
    if (GLANCE_GROUP, "Glance") not in watched:
        return []
    meta = _meta(store)
    kind, name = store.get("kind"), meta.get("name")
    keys: list[ObjectKey] = []
    for obj in objects:
        if obj.get("kind") != "Glance" or target_cluster_name(obj):
            continue
        if kind != glance_secrets.CLUSTER_SECRET_STORE and (
            _meta(obj).get("namespace") != meta.get("namespace")
        ):
            continue
        if glance_secrets.selected_store(obj)[:2] == (kind, name):
            keys.append(
                ObjectKey(GLANCE_GROUP, "Glance", _meta(obj)["namespace"], _meta(obj)["name"])
            )
    return keys


# -- the Secrets and ConfigMaps a spec names -------------------------------------------------

REFERENCED_KINDS: tuple[tuple[str, str], ...] = (("v1", "Secret"), ("v1", "ConfigMap"))
"""The kinds of the inputs a spec names (``pass_reads.referenced_secrets``,
``referenced_configmaps``, a backend's credentials): watched metadata only."""
REFERENCED = "referenced"
"""The relation of a wake by a Secret or ConfigMap the object's spec names."""


def compact_reference(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The informer's cache entry of a Secret or ConfigMap (its transform over the
    ``PartialObjectMetadata`` the server sends): identity and ``resourceVersion``."""
    return _identity(obj)


def reference_change(
    event: str, new: Mapping[str, Any] | None, old: Mapping[str, Any] | None
) -> bool:
    """Whether a referenced object's event may change what a pass reads: created, deleted,
    or written (a new ``resourceVersion``: with the metadata alone, any write may have
    changed the data; a relist that finds it unchanged says nothing)."""
    if event in (ADDED, DELETED) or new is None or old is None:
        return True
    return _meta(old).get("resourceVersion") != _meta(new).get("resourceVersion")


def referenced_keys(
    reference: Mapping[str, Any],
    watched: Mapping[tuple[str, str], Watch],
    glances: Iterable[Mapping[str, Any]],
    backends: Iterable[Mapping[str, Any]],
) -> list[ObjectKey]:
    """The keys of the Glances and GlanceBackends of ``reference``'s namespace whose passes
    read it: a Glance's database and service-user Secrets, its attached backends' S3
    credentials and its policy ConfigMap; a backend's credentials Secret. Not a Glance with
    a target cluster, nor its backends: they read their Secrets there."""
    meta = _meta(reference)
    kind, name, namespace = reference.get("kind"), meta.get("name"), meta.get("namespace")
    local = [g for g in glances if _meta(g).get("namespace") == namespace]
    attached = [b for b in backends if _meta(b).get("namespace") == namespace]
    targeted = {_meta(g).get("name") for g in local if target_cluster_name(g)}
    keys: list[ObjectKey] = []
    if (GLANCE_GROUP, "Glance") in watched:
        for glance in local:
            if glance.get("kind") != "Glance" or target_cluster_name(glance):
                continue
            if kind == "Secret":
                names = pass_reads.referenced_secrets(glance, attached)
            else:
                names = pass_reads.referenced_configmaps(glance)
            if name in names:
                keys.append(ObjectKey(GLANCE_GROUP, "Glance", namespace, _meta(glance)["name"]))
    if kind == "Secret" and (GLANCE_GROUP, "GlanceBackend") in watched:
        for backend in attached:
            if backend.get("kind") != "GlanceBackend" or _parent_name(backend) in targeted:
                continue
            if credentials_secret(backend) == name:
                keys.append(
                    ObjectKey(GLANCE_GROUP, "GlanceBackend", namespace, _meta(backend)["name"])
                )
    return keys


CHANGED = "changed"
"""A dependent's update the predicate passes: something besides its status changed."""
READINESS = "readiness"
"""A dependent's update that changed only its readiness (:func:`readiness`)."""


def dependent_change(
    event: str, new: Mapping[str, Any] | None, old: Mapping[str, Any] | None
) -> str | None:
    """Why a dependent's event wakes its owner: ``DELETED``, :data:`CHANGED`,
    :data:`READINESS`; None when it does not."""
    if event == DELETED:
        return DELETED
    if event == ADDED or old is None or new is None:
        return None
    if _meta(old).get("resourceVersion") == _meta(new).get("resourceVersion"):
        return None
    if old.get("digest") != new.get("digest"):
        return CHANGED
    return READINESS if old.get("readiness") != new.get("readiness") else None


def dependent_wants(
    event: str, new: Mapping[str, Any] | None, old: Mapping[str, Any] | None
) -> bool:
    """operator-lib's ``DependentPredicate`` on compact entries, plus readiness changes."""
    return dependent_change(event, new, old) is not None


def owner_keys(obj: Mapping[str, Any], watched: Mapping[tuple[str, str], Watch]) -> list[ObjectKey]:
    """The watched owner named by the controller ``ownerReference`` (at most one), when its
    watch asks for dependents."""
    namespace = _meta(obj).get("namespace", "")
    for reference in _meta(obj).get("ownerReferences") or []:
        if not reference.get("controller"):
            continue
        group = group_of(str(reference.get("apiVersion") or ""))
        watch = watched.get((group, str(reference.get("kind") or "")))
        if watch is None or not watch.watch_dependent_resources:
            return []
        return [ObjectKey(group, watch.gvk.kind, namespace, str(reference.get("name") or ""))]
    return []


def dependent_kinds(watches: Iterable[Watch]) -> list[tuple[str, str]]:
    """The dependent ``(apiVersion, kind)`` pairs to watch: none unless a watch asks for
    dependents, and none that every such watch blacklists."""
    asking = [w for w in watches if w.watch_dependent_resources]
    out = []
    for api_version, kind in DEPENDENT_KINDS:
        group, _, version = api_version.rpartition("/")
        if any(
            not any((b.group, b.version, b.kind) == (group, version, kind) for b in w.blacklist)
            for w in asking
        ):
            out.append((api_version, kind))
    return out


# -- a pass: the finalizer -----------------------------------------------------------------

SKIP = "skip"
"""Being deleted without our finalizer: nothing to do ("Resource is terminated")."""
ADD_FINALIZER = "add-finalizer"
"""Add the finalizer first, then run the pass with the updated object."""
RUN = "run"
FINALIZE = "finalize"
"""Being deleted, our finalizer still listed: the deletion pass, then release it."""


def first_step(watch: Watch, obj: Mapping[str, Any]) -> str:
    """How a pass over ``obj`` begins (ansible-operator's reconcile.go)."""
    meta = _meta(obj)
    finalizers = meta.get("finalizers") or []
    name = watch.finalizer.name if watch.finalizer else None
    if meta.get("deletionTimestamp"):
        return FINALIZE if name and name in finalizers else SKIP
    if name and name not in finalizers:
        return ADD_FINALIZER
    return RUN


def finalizer_patch(obj: Mapping[str, Any], name: str, add: bool) -> dict[str, Any] | None:
    """The merge patch adding or removing finalizer ``name``; None when there is nothing
    to do. It carries the object's ``resourceVersion``: a stale object gets 409 Conflict
    instead of overwriting someone else's finalizer change."""
    meta = _meta(obj)
    current = list(meta.get("finalizers") or [])
    if add == (name in current):
        return None
    wanted = [*current, name] if add else [item for item in current if item != name]
    return {"metadata": {"finalizers": wanted, "resourceVersion": meta.get("resourceVersion")}}


# -- a pass: what follows ------------------------------------------------------------------

FORGET = "forget"
"""Success: reset the backoff; nothing scheduled (or the periodic pass, ``seconds``)."""
AFTER = "after"
"""Success with a requeue request: reset the backoff, come back in ``seconds``."""
RATE_LIMITED = "rate-limited"
"""An error, or a request to come back at once: the next pass after the backoff."""


@dataclass(frozen=True)
class Requeue:
    """What the queue does with a key after its pass, and the pass's metrics result."""

    how: str
    seconds: float | None
    result: str


def after_pass(outcome: RunOutcome, reconcile_period: float) -> Requeue:
    """controller-runtime's reading of a reconcile result, for a playbook run.

    A failed run is an error: exponential backoff per key (5 ms doubling, capped at the
    runner's ``--max-backoff``). ``requeue_after: 0`` is ``Requeue: true``: at once, through
    the rate limiter. A positive ``requeue_after`` resets the backoff and comes back then.
    Otherwise the backoff is reset and the periodic pass (``reconcile_period``; 0: none) is
    scheduled; ansible-operator returns that period as ``RequeueAfter`` (result
    ``requeue_after``), here the result is ``success``, so the metrics tell a playbook's
    request from the periodic pass.
    """
    if not outcome.succeeded:
        return Requeue(RATE_LIMITED, None, RESULT_ERROR)
    if outcome.requeue:
        return Requeue(RATE_LIMITED, None, RESULT_REQUEUE)
    if outcome.requeue_after:
        return Requeue(AFTER, outcome.requeue_after, RESULT_REQUEUE_AFTER)
    return Requeue(FORGET, reconcile_period or None, RESULT_SUCCESS)


def requeue_reason(requeue: Requeue) -> str:
    """Why the queue brings a key back after its pass: the ``woken_by`` of that pass."""
    if requeue.how == RATE_LIMITED:
        return WOKEN_BY_BACKOFF
    return WOKEN_BY_REQUEUE_AFTER if requeue.how == AFTER else WOKEN_BY_PERIOD


def requeue_priority(requeue: Requeue) -> int:
    """The priority of the add that follows a pass: low for a look again that no change
    asked for (``requeue_after``, the periodic pass), so the passes events asked for go
    first; the backoff keeps the high one (an error to retry, ``requeue_after: 0``: the
    next step of an upgrade)."""
    return HIGH_PRIORITY if requeue.how == RATE_LIMITED else LOW_PRIORITY


WOKEN_BY_BACKOFF = "backoff"
"""The last pass failed or asked to come back at once: the rate limiter brought the key."""
WOKEN_BY_REQUEUE_AFTER = "requeue_after"
"""The last pass asked to come back after ``requeue_after`` seconds."""
WOKEN_BY_PERIOD = "reconcile_period"
"""The periodic pass (``--reconcile-period``, the ``reconcile-period`` annotation)."""


def event_reason(source_kind: str, event: str, relation: str = "", detail: str = "") -> str:
    """Why an event wakes a key, as ``woken_by`` shows it: the event, the kind it came from,
    the relation (``child``: a parent woken by its child; ``dependent``: an owner by what it
    owns; ``parent's``: a child by its parent's dependent; :data:`TARGET_CLUSTER`: a
    Glance by its cluster's registration Secret; ``parent's`` :data:`TARGET_CLUSTER`: a
    GlanceBackend by its parent's) and what changed (``readiness``, ``changed``,
    ``mounts``): ``MODIFIED Glance``, ``child ADDED GlanceBackend``, ``dependent MODIFIED
    Job readiness``, ``parent's ADDED Deployment mounts``, ``target cluster's MODIFIED
    Secret``, ``parent's target cluster's DELETED Secret``."""
    return " ".join(part for part in (relation, event, source_kind, detail) if part)


ERROR = Requeue(RATE_LIMITED, None, RESULT_ERROR)
"""A pass that could not run (the API refused a read or the finalizer write)."""
DONE = Requeue(FORGET, None, RESULT_SUCCESS)
"""Nothing to do: the object is gone, or terminating without our finalizer."""
