# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""What one Glance pass takes, accumulates and returns, and the words its steps share.

The finalizers and their changes (``ADD``, ``REMOVE``), the requeue intervals, the
inputs of the compute pass (``PlanInputs``), the result (``PassResult``), the state a
pass accumulates step by step (``_Pass``: conditions, events, requeues, the objects it
wants) and the ownership conflict every step reports the same way (``_conflict``).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.desired import conditions as c
from ansible_collections.c5c3.glance.plugins.module_utils.desired import upgrade
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects import metadata
from ansible_collections.c5c3.glance.plugins.module_utils.desired.render_plan import Plan
from ansible_collections.c5c3.glance.plugins.module_utils.kube import apply_plan as ap
from ansible_collections.c5c3.glance.plugins.module_utils.kube import live_state as ls

FINALIZER = "glance.openstack.c5c3.io/finalizer"
# Held while children of the Glance exist on a target cluster, where no garbage collector
# follows an owner reference to it (the reference's shared multicluster finalizer).
REMOTE_CHILDREN_FINALIZER = "openstack.c5c3.io/remote-children"
ADD = "add"
REMOVE = "remove"

# The reference's record of the last finished Job of each kind it counts (its
# job.JobUIDAnnotationFormat): on the Glance, so it outlives the Job and the operator's
# process. Suffixes: db-purge, db-sync and the upgrade phases' db-expand, db-migrate,
# db-contract.
JOB_UID_ANNOTATION = "cobaltcore.c5c3.io/last-{}-job-uid"


def job_uid_annotation(suffix: str) -> str:
    """The annotation recording the UID of the last finished ``suffix`` Job."""
    return JOB_UID_ANNOTATION.format(suffix)


def job_uid_suffix(annotation: str) -> str | None:
    """The Job kind a :func:`job_uid_annotation` names (None for any other key)."""
    head, tail = JOB_UID_ANNOTATION.split("{}")
    if (
        annotation.startswith(head)
        and annotation.endswith(tail)
        and len(annotation) > len(head + tail)
    ):
        return annotation[len(head) : -len(tail)]
    return None


# --- requeue intervals, seconds (reference-spec §2.3 "Requeue intervals") ---------------
REQUEUE_NOW = 0  # upgrade initiation, phase steps, abort
REQUEUE_RECREATE = 5  # after deleting an object to create it again; while one is deleted
REQUEUE_DEPLOYMENT = 10  # Deployment not ready, route not accepted, API unhealthy
REQUEUE_HEALTH = 10
REQUEUE_ROUTE = 10
REQUEUE_SECRETS = 15  # Secrets gate, ConfigError
REQUEUE_DATABASE = 30  # db-sync or a phase Job running, waiting for a backend, mismatch
REQUEUE_CONFLICT = 30  # an owned name taken by someone else's object
REQUEUE_GATEWAY_PROBE = 60  # spec.gateway set, no Gateway API: probed again


@dataclass(frozen=True)
class PlanInputs:
    """What the compute pass needs besides the Glance, as the gather step read it.

    ``backends``: the GlanceBackends of the namespace (any parent; the pass keeps its
    own); ``secrets``, ``configmaps``: the Secrets and ConfigMaps they and the Glance
    reference, as API objects; ``crds`` and ``catalogs``: ``collection_files.load_crds()``
    and ``load_catalogs()``; ``operator_namespace``: where the operator runs (the
    NetworkPolicy admits its health check from there), None when unknown;
    ``secret_store`` and ``external_secrets``: the store the Glance selects (None when it
    does not exist) and the ExternalSecrets named like its Secrets (``pass_reads``).
    ``database_cluster``: the k8s.mariadb.com MariaDB ``database.clusterRef`` names, None
    when it does not exist or in brownfield mode.
    """

    crds: Mapping[str, Mapping[str, Any]]
    backends: Sequence[Mapping[str, Any]] = ()
    secrets: Sequence[Mapping[str, Any]] = ()
    configmaps: Sequence[Mapping[str, Any]] = ()
    catalogs: Mapping[str, Mapping[str, Any]] | None = None
    operator_namespace: str | None = None
    secret_store: Mapping[str, Any] | None = None
    external_secrets: Sequence[Mapping[str, Any]] = ()
    database_cluster: Mapping[str, Any] | None = None


@dataclass
class PassResult:
    """What one pass decided (see the docstring of ``decide.py``)."""

    actions: list[ap.Action] = field(default_factory=list)
    status: dict[str, Any] | None = None
    status_patch: dict[str, Any] | None = None
    events: list[dict[str, str]] = field(default_factory=list)
    requeue_after: int | None = None
    finalizer: str | None = None
    finalizers: list[str] = field(default_factory=lambda: [FINALIZER])
    target_cluster: str | None = None
    plan: Plan | None = None
    # job_uid_annotation(suffix) -> the UID of a finished Job the Glance does not record yet
    annotations: dict[str, str] = field(default_factory=dict)

    @property
    def writes(self) -> list[ap.Action]:
        """The actions that are API writes."""
        return ap.writes(self.actions)

    def as_dict(self) -> dict[str, Any]:
        return {
            "actions": [a.as_dict() for a in self.actions],
            "status": self.status,
            "status_patch": self.status_patch,
            "events": self.events,
            "requeue_after": self.requeue_after,
            "finalizer": self.finalizer,
            "finalizers": list(self.finalizers),
            "target_cluster": self.target_cluster,
            "annotations": dict(self.annotations),
        }


# ---------------------------------------------------------------------------------------
# small pieces


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("spec") or {}


def _owner_uid(glance: Mapping[str, Any]) -> str:
    """Who the Glance's children name as their controller: its uid (owner references), or
    on a target cluster its ownership labels' key (``live_state.label_owner``)."""
    meta = _meta(glance)
    if metadata.target_cluster(glance) is not None:
        kind = str(glance.get("kind") or "Glance")
        return ls.label_owner(kind, str(meta.get("namespace") or ""), str(meta.get("name") or ""))
    return str(meta.get("uid") or "")


# ---------------------------------------------------------------------------------------
# the pass


class _Pass:
    """The state one pass accumulates: conditions, events, requeues, desired keys."""

    def __init__(
        self,
        glance: Mapping[str, Any],
        live: ls.LiveObjects,
        objects: Mapping[str, dict[str, Any] | None],
        cluster: Mapping[str, Any] | None = None,
    ) -> None:
        self.glance = glance
        self.live = live
        self.cluster = cluster
        self.objects = objects
        self.owner_uid = _owner_uid(glance)
        status = glance.get("status") or {}
        self.existing_status = status
        self.existing = c.by_type(status.get("conditions") or [])
        self.conditions: list[dict[str, str]] = []
        self.events: list[dict[str, str]] = []
        self.requeues: list[int] = []
        self.desired: dict[str, dict[str, Any] | None] = {}
        self.fields: dict[str, Any] = {}
        # Deletions beyond the desired objects' own (the phase Jobs of an aborted upgrade).
        self.extra_actions: list[ap.Action] = []
        self.annotations: dict[str, str] = {}
        release = str(_spec(glance).get("openStackRelease") or "")
        self.upgrade = upgrade.database_step(release, status)

    # -- recording --------------------------------------------------------------------
    def set(self, cond: dict[str, str], requeue: int | None = None) -> None:
        self.conditions.append(cond)
        if requeue is not None:
            self.requeues.append(requeue)

    def event(self, type_: str, reason: str, message: str) -> None:
        self.events.append({"type": type_, "reason": reason, "message": message})

    def finished(self, suffix: str, job: Mapping[str, Any] | None) -> None:
        """Record ``job``, the Job of kind ``suffix`` this pass observed, on the Glance when
        it has finished and the Glance does not name it yet (the reference's
        RecordJobTerminalState: the runner counts its metrics from this record, once)."""
        if ls.job_state(job) not in (ls.JOB_COMPLETE, ls.JOB_FAILED):
            return
        uid = str(ls.meta(job).get("uid") or "")
        key = job_uid_annotation(suffix)
        if uid and (_meta(self.glance).get("annotations") or {}).get(key) != uid:
            self.annotations[key] = uid

    def changed(self, cond: Mapping[str, str]) -> bool:
        """``cond`` differs from the stored one of its type in status, reason or message."""
        old = self.existing.get(cond["type"])
        return old is None or any(old.get(k) != cond[k] for k in ("status", "reason", "message"))

    def want(self, key: str, data: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """Put ``key`` on the apply list with its rendered object (None: not wanted / not
        yet)."""
        obj = copy.deepcopy(self.objects.get(key)) if data is not None else None
        if data is not None and obj is None:
            raise ValueError(f"no rendered object for {key}")
        self.desired[key] = obj
        return obj

    @property
    def requeue_after(self) -> int | None:
        return min(self.requeues) if self.requeues else None


def _conflict(p: _Pass, type_: str, action: ap.Action) -> None:
    reason = (
        c.CLUSTER_IP_IMMUTABLE if action.reason == ap.CLUSTER_IP_IMMUTABLE else c.OWNERSHIP_CONFLICT
    )
    p.set(c.condition(type_, False, reason, action.error), REQUEUE_CONFLICT)
