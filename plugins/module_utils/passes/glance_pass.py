# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""One reconcile pass of a Glance, decided: the writes, the status, the events, the requeue.

``decide_pass(glance_obj, plan_inputs, live, now, health=None)`` runs the pipeline of
reference-spec §2.2 and §2.3 on what the gather step read, and returns a ``PassResult``.
It is pure: the clock is ``now``, the cluster is ``live`` (``live_state.LiveObjects``)
and the API health probe, when the gather step made one, is ``health``. The apply step
performs ``actions``, the report step writes ``status_patch`` (nothing when None) and
``events``, and the runner requeues after ``requeue_after`` seconds (0: at once; None: no
requeue, the watches bring the next pass).

The pipeline (``docs/reconcile.md`` tells it for users):

0. Finalizer: a Glance being deleted releases ``glance.openstack.c5c3.io/finalizer``; in
   managed mode only once its MariaDB Database, User and Grant are gone (deleted by that
   pass, FinalizingDatabase, 30 s; then DatabaseFinalized). Brownfield mode owns nothing
   outside the namespace's garbage collection. A Glance without the finalizer gets it
   (``finalizer``: the apply step adds it before any other write) and the same pass goes
   on, so a first install needs no pass of its own for it.
1. Secrets gate (``SecretsReady``): a missing or incomplete Secret stops the pass, which
   writes nothing and polls every 15 s.
2. The db-connection Secret is applied.
3. Backends (``BackendsReady``): never stops the pass. An invalid projection keeps the
   last-good names the live Deployment mounts (``Plan.retained``).
4. Configuration: ``ExtraConfigHealthy`` (its Warning event only when it turns False or
   its message changes); a ConfigError stops the pass (15 s). Once a configuration
   exists (new or last-good) the config copies are created, old ones pruned, and the
   HPA, NetworkPolicy, HTTPRoute and db-purge CronJob applied with their conditions,
   whatever the later steps say (DECISIONS.md).
5. Database (``DatabaseReady``): in managed mode the MariaDB of ``clusterRef`` must be
   Ready (ClusterNotReady, 30 s), then the Database and (Static credentials) the User and
   Grant are applied and waited for (WaitingForDatabase, 30 s); no configuration yet →
   WaitingForBackends (30 s); an
   image tag naming another release → ImageReleaseMismatch (30 s, also during an
   upgrade, but not when it is aborted); a release change → the expand-migrate-contract
   upgrade (``upgrade``, reference-spec §4.13): initiation (or VersionParseError,
   DowngradeNotSupported, UpgradePathInvalid), abort, UpgradeTargetChanged, or the
   current phase's Job (Expanding, Migrating, Contracting) under the rerun-key rule;
   RollingUpdate goes on to the Deployment. Otherwise the db-sync Job: running →
   DBSyncInProgress (30 s), failed → DBSyncFailed, complete → DatabaseSynced and
   ``installedRelease``.
6. Deployment (``DeploymentReady``): apply the Deployment, Service and PDB; ready →
   ``status.endpoint``; not ready → WaitingForDeployment (10 s). In RollingUpdate, only a
   fully converged rollout counts, and it moves the upgrade on to Contracting (at once,
   without stamping the endpoint).
7. ``GlanceAPIReady`` from ``health`` once the Deployment is ready (10 s while unhealthy).

A step that stops the pass leaves the conditions of later steps as they were. A state
the user or the cluster will fix (a missing Secret, a failed Job, an object someone else
owns, a refused upgrade path) is a condition, never an error: the pass always completes,
and where the reference returns an error (and backs off) the pass emits the Warning event
when the condition changes and asks for no requeue: the fix (a change to the Glance, a
deleted Job) brings the next pass.

While an upgrade has not yet migrated the schema (a refused or moved target, initiation,
Expanding, Migrating) the live db-purge CronJob is kept as it is: it runs the old image
against the old schema, as the reference's does, until the Deployment rolls.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.admission.glance_admission import (
    DEFAULT_RETENTION_DAYS,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired import conditions as c
from ansible_collections.c5c3.glance.plugins.module_utils.desired import upgrade
from ansible_collections.c5c3.glance.plugins.module_utils.desired.content_address import (
    db_purge_cronjob_name,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.glance_secrets import (
    ExternalSecrets,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.input_documents import InputSet
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects import keys as ok
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects import metadata
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.api import (
    HEALTHCHECK_PATH,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.database import (
    DEFAULT_PURGE_SCHEDULE,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.pods import (
    API_PORT,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.release import (
    image_release_mismatch,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.render_plan import (
    Plan,
    build_plan,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.role_templates import (
    render_objects,
)
from ansible_collections.c5c3.glance.plugins.module_utils.kube import apply_plan as ap
from ansible_collections.c5c3.glance.plugins.module_utils.kube import live_state as ls
from ansible_collections.c5c3.glance.plugins.module_utils.passes.status_writer import (
    KEEP,
    glance_status,
    status_patch,
)

FINALIZER = "glance.openstack.c5c3.io/finalizer"
# Held while children of the Glance exist on a target cluster, where no garbage collector
# follows an owner reference to it (the reference's shared multicluster finalizer).
REMOTE_CHILDREN_FINALIZER = "openstack.c5c3.io/remote-children"
ADD = "add"
REMOVE = "remove"
ABANDON_AFTER = 300
"""Seconds a Glance being deleted waits for a target cluster that cannot be resolved
before it gives up its children there (the reference's AbandonAfter, 5 minutes)."""

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

BODY_EXCERPT_BYTES = 256

# --- health results (the gather step's probe of the API) --------------------------------
HEALTH_TIMEOUT = "timeout"
HEALTH_DNS = "dns"
HEALTH_REFUSED = "refused"
HEALTH_OTHER = "other"
HEALTH_ERROR_KINDS = (HEALTH_TIMEOUT, HEALTH_DNS, HEALTH_REFUSED, HEALTH_OTHER)

# --- messages ----------------------------------------------------------------------------
DB_WAITING_FOR_BACKENDS = (
    "Waiting for a ready default backend before provisioning the database schema"
)
DB_SYNCED = "Database schema is up to date (revision verified)"
DB_SYNCED_EVENT = "Database schema is up to date"
DEPLOYMENT_AVAILABLE = "Glance API deployment is available"
DEPLOYMENT_NOT_AVAILABLE = "Glance API deployment is not yet available"
ENDPOINT_NOT_CONFIGURED = "endpoint not yet configured"
HPA_CONFIGURED = "HorizontalPodAutoscaler is configured"
HPA_NOT_CONFIGURED = "Autoscaling is not configured"
NP_CONFIGURED = "NetworkPolicy is configured"
NP_NOT_CONFIGURED = "Network isolation is not configured"
ROUTE_NOT_CONFIGURED = "External Glance API exposure via Gateway API is not configured"
ROUTE_ACCEPTED = "HTTPRoute accepted by Gateway"
ROUTE_NOT_ACCEPTED = "HTTPRoute not yet accepted by Gateway"
ROUTE_NO_GATEWAY_API = (
    "spec.gateway is set but the gateway.networking.k8s.io/v1 HTTPRoute CRD is not installed "
    "in this cluster; install Gateway API to enable external Glance API exposure (the "
    "operator checks again every minute)"
)


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


@dataclass
class PassResult:
    """What one pass decided (see the module docstring)."""

    actions: list[ap.Action] = field(default_factory=list)
    status: dict[str, Any] | None = None
    status_patch: dict[str, Any] | None = None
    events: list[dict[str, str]] = field(default_factory=list)
    requeue_after: int | None = None
    finalizer: str | None = None
    finalizers: list[str] = field(default_factory=lambda: [FINALIZER])
    target_cluster: str | None = None
    plan: Plan | None = None

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
        }


# ---------------------------------------------------------------------------------------
# small pieces


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("spec") or {}


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
        HEALTH_TIMEOUT: (c.HEALTH_CHECK_TIMEOUT, f"health check of {url} timed out"),
        HEALTH_DNS: (c.ENDPOINT_NOT_READY, f"endpoint not resolvable: {url}"),
        HEALTH_REFUSED: (c.CONNECTION_FAILED, f"connection failed: {url}: {detail}"),
    }.get(health.error_kind or "", (c.HEALTH_CHECK_FAILED, f"health check failed: {url}: {detail}"))
    return c.condition(c.GLANCE_API_READY, False, reason, message), REQUEUE_HEALTH


def _owner_uid(glance: Mapping[str, Any]) -> str:
    """Who the Glance's children name as their controller: its uid (owner references), or
    on a target cluster its ownership labels' key (``live_state.label_owner``)."""
    meta = _meta(glance)
    if metadata.target_cluster(glance) is not None:
        kind = str(glance.get("kind") or "Glance")
        return ls.label_owner(kind, str(meta.get("namespace") or ""), str(meta.get("name") or ""))
    return str(meta.get("uid") or "")


def _attached_backends(glance: Mapping[str, Any], backends: Iterable[Mapping[str, Any]]) -> list:
    name = _meta(glance).get("name")
    namespace = _meta(glance).get("namespace")
    return [
        b
        for b in backends
        if (_spec(b).get("glanceRef") or {}).get("name") == name
        and (_meta(b).get("namespace") or namespace) == namespace
    ]


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
        release = str(_spec(glance).get("openStackRelease") or "")
        self.upgrade = upgrade.database_step(release, status)

    # -- recording --------------------------------------------------------------------
    def set(self, cond: dict[str, str], requeue: int | None = None) -> None:
        self.conditions.append(cond)
        if requeue is not None:
            self.requeues.append(requeue)

    def event(self, type_: str, reason: str, message: str) -> None:
        self.events.append({"type": type_, "reason": reason, "message": message})

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


def _config_step(p: _Pass, plan: Plan) -> bool:
    """Create the config copies (or keep the last-good ones); False stops the pass."""
    for key in ap.CREATE_ONLY:
        p.want(key, plan.desired.get(key))
    probe = ap.apply_actions({k: p.desired[k] for k in ap.CREATE_ONLY}, p.live, p.owner_uid)
    for action in probe:
        if action.reason == ap.PRUNED:
            continue
        if action.error:
            _conflict(p, c.SECRETS_READY, action)
            return False
        if action.reason == ap.DELETING:
            message = (
                f"{action.kind} {action.namespace}/{action.name} is being deleted; waiting to "
                "create it again"
            )
            p.set(c.condition(c.SECRETS_READY, False, c.CONFIG_ERROR, message), REQUEUE_RECREATE)
            return False
    return True


def _hpa_step(p: _Pass, plan: Plan) -> None:
    obj = p.want(ok.HPA, plan.desired.get(ok.HPA))
    if obj is None:
        p.set(c.condition(c.HPA_READY, True, c.HPA_NOT_REQUIRED, HPA_NOT_CONFIGURED))
        return
    action = ap.ssa_action(ok.HPA, obj, p.live.get(ok.HPA), p.owner_uid)
    if action.error:
        _conflict(p, c.HPA_READY, action)
        return
    p.set(c.condition(c.HPA_READY, True, c.HPA_READY_REASON, HPA_CONFIGURED))


def _network_policy_step(p: _Pass, plan: Plan) -> None:
    obj = p.want(ok.NETWORK_POLICY, plan.desired.get(ok.NETWORK_POLICY))
    if obj is None:
        p.set(
            c.condition(
                c.NETWORK_POLICY_READY, True, c.NETWORK_POLICY_NOT_REQUIRED, NP_NOT_CONFIGURED
            )
        )
        return
    action = ap.ssa_action(ok.NETWORK_POLICY, obj, p.live.get(ok.NETWORK_POLICY), p.owner_uid)
    if action.error:
        _conflict(p, c.NETWORK_POLICY_READY, action)
        return
    p.set(c.condition(c.NETWORK_POLICY_READY, True, c.NETWORK_POLICY_READY_REASON, NP_CONFIGURED))


def _http_route_step(p: _Pass, plan: Plan) -> None:
    data = plan.desired.get(ok.HTTP_ROUTE)
    not_required = c.condition(
        c.HTTPROUTE_READY, True, c.HTTPROUTE_NOT_REQUIRED, ROUTE_NOT_CONFIGURED
    )
    if not p.live.gateway_api:
        # Nothing to apply or delete: the cluster serves no HTTPRoute.
        if data is None:
            p.set(not_required)
        else:
            p.set(
                c.condition(
                    c.HTTPROUTE_READY, False, c.GATEWAY_API_NOT_INSTALLED, ROUTE_NO_GATEWAY_API
                ),
                REQUEUE_GATEWAY_PROBE,
            )
        return
    obj = p.want(ok.HTTP_ROUTE, data)
    if obj is None:
        p.set(not_required)
        return
    live = p.live.get(ok.HTTP_ROUTE)
    action = ap.ssa_action(ok.HTTP_ROUTE, obj, live, p.owner_uid)
    if action.error:
        _conflict(p, c.HTTPROUTE_READY, action)
        return
    if action.verb == ap.NONE and action.reason == ap.UNCHANGED and ls.httproute_accepted(live):
        p.set(c.condition(c.HTTPROUTE_READY, True, c.HTTPROUTE_ACCEPTED, ROUTE_ACCEPTED))
        return
    # Just written (a new generation the Gateway has not seen), being deleted, or refused.
    p.set(
        c.condition(c.HTTPROUTE_READY, False, c.HTTPROUTE_NOT_ACCEPTED, ROUTE_NOT_ACCEPTED),
        REQUEUE_ROUTE,
    )


def _holds_old_schema(step: upgrade.Step) -> bool:
    """The schema is not migrated yet: the upgrade is refused, starts, or expands/migrates."""
    return step.action in (upgrade.INITIATE, upgrade.REFUSE, upgrade.TARGET_CHANGED) or (
        step.action == upgrade.PHASE and step.phase in (upgrade.EXPANDING, upgrade.MIGRATING)
    )


def _db_purge_step(p: _Pass, plan: Plan) -> None:
    live = p.live.get(ok.DB_PURGE_CRONJOB)
    purge = _spec(p.glance).get("dbPurge") or {}
    suspended = bool(purge.get("suspend"))
    held = live is not None and _holds_old_schema(p.upgrade)
    if held:
        suspended = bool((live.get("spec") or {}).get("suspend"))  # what runs is the live one
        # Kept as it is (old image, old configuration) until the schema is migrated.
        if ls.controlled_by_other(live, p.owner_uid):
            _conflict(
                p,
                c.DB_PURGE_READY,
                ap.ssa_action(ok.DB_PURGE_CRONJOB, live, live, p.owner_uid),
            )
            return
    else:
        obj = p.want(ok.DB_PURGE_CRONJOB, plan.desired.get(ok.DB_PURGE_CRONJOB))
        if obj is None:  # no configuration: not reached
            return
        action = ap.ssa_action(ok.DB_PURGE_CRONJOB, obj, live, p.owner_uid)
        if action.error:
            _conflict(p, c.DB_PURGE_READY, action)
            return
    schedule = purge.get("schedule") or DEFAULT_PURGE_SCHEDULE
    days = purge.get("retentionDays") or DEFAULT_RETENTION_DAYS
    name = db_purge_cronjob_name(_meta(p.glance)["name"])
    observed = ls.newest_terminal_job(p.live.jobs, name, ls.meta(live).get("uid"))
    failed = observed is not None and ls.job_state(observed) == ls.JOB_FAILED
    job_name = ls.meta(observed).get("name", "")
    if suspended:
        message = (
            "Database purge CronJob suspended via spec.dbPurge.suspend; no rows are being "
            f'hard-deleted and the soft-deleted backlog keeps growing (schedule "{schedule}", '
            f"retention {days} days when resumed)"
        )
        if failed:
            message += f"; the last run (Job {job_name}) failed before the pause"
        p.set(c.condition(c.DB_PURGE_READY, True, c.DB_PURGE_SUSPENDED, message))
        return
    if failed:
        cond = c.condition(
            c.DB_PURGE_READY,
            False,
            c.DB_PURGE_JOB_FAILED,
            f"Database purge Job {job_name} failed; the soft-deleted backlog is no longer "
            "shrinking",
        )
        if p.changed(cond):
            p.event(
                "Warning",
                c.EVENT_DB_PURGE_JOB_FAILED,
                f"Database purge Job {job_name} failed; inspect its pod logs — the soft-deleted "
                "image and task rows keep accumulating until a run succeeds",
            )
        p.set(cond)
        return
    p.set(
        c.condition(
            c.DB_PURGE_READY,
            True,
            c.DB_PURGE_SCHEDULED,
            f'Database purge scheduled "{schedule}", hard-deleting rows soft-deleted more than '
            f"{days} days ago",
        )
    )


def _image_matches(p: _Pass, spec: Mapping[str, Any], release: str) -> bool:
    """The image/release lockstep check; False (ImageReleaseMismatch, 30 s) stops the pass."""
    tag = (spec.get("image") or {}).get("tag")
    named = image_release_mismatch(tag, release)
    if named is None:
        return True
    message = (
        f'spec.image.tag "{tag}" names release {named}, but spec.openStackRelease is '
        f"{release}; change them together (the database schema follows the release)"
    )
    p.set(
        c.condition(c.DATABASE_READY, False, c.IMAGE_RELEASE_MISMATCH, message),
        REQUEUE_DATABASE,
    )
    return False


def _cluster_ref(glance: Mapping[str, Any]) -> str | None:
    ref = (_spec(glance).get("database") or {}).get("clusterRef")
    return str(ref.get("name") or "") if ref is not None else None


def _mariadb_resources(p: _Pass, plan: Plan, keys: Sequence[str]) -> list[str] | None:
    """Apply the MariaDB resources of ``keys`` (those the plan wants); the ones not Ready
    yet, as ``<Kind> <name>``, or None after an ownership conflict (reported)."""
    waiting = []
    for key in keys:
        obj = p.want(key, plan.desired.get(key))
        if obj is None:  # the User and Grant with Dynamic credentials
            continue
        live = p.live.get(key)
        action = ap.ssa_action(key, obj, live, p.owner_uid)
        if action.error:
            _conflict(p, c.DATABASE_READY, action)
            return None
        # Just written (its status is not about this spec yet), being deleted, or not Ready.
        if action.writes or action.reason == ap.DELETING or not ls.condition_ready(live):
            waiting.append(f"{action.kind} {action.name}")
    return waiting


def _managed_database(p: _Pass, plan: Plan) -> bool:
    """Managed mode's gate (reference-spec §2.3 step 5): the MariaDB of ``clusterRef`` is
    Ready, then the Database, then (Static credentials) the User and Grant; each applied
    server-side and waited for (30 s). True in brownfield mode; False stops the pass."""
    cluster = _cluster_ref(p.glance)
    if cluster is None:
        return True
    if not ls.condition_ready(p.cluster):
        message = f'MariaDB cluster "{cluster}" is not ready'
        p.set(c.condition(c.DATABASE_READY, False, c.CLUSTER_NOT_READY, message), REQUEUE_DATABASE)
        return False
    for keys in ((ok.MARIADB_DATABASE,), (ok.MARIADB_USER, ok.MARIADB_GRANT)):
        waiting = _mariadb_resources(p, plan, keys)
        if waiting is None:
            return False
        if waiting:
            message = (
                f"Waiting for the MariaDB {' and '.join(waiting)} to be ready (mariadb-operator, "
                f'on the MariaDB "{cluster}")'
            )
            p.set(
                c.condition(c.DATABASE_READY, False, c.WAITING_FOR_DATABASE, message),
                REQUEUE_DATABASE,
            )
            return False
    return True


def _database_step(p: _Pass, plan: Plan) -> bool:
    """The database step; False stops the pass."""
    spec = _spec(p.glance)
    release = str(spec.get("openStackRelease") or "")
    if not _managed_database(p, plan):
        return False
    if not plan.config_map:
        p.set(
            c.condition(c.DATABASE_READY, False, c.WAITING_FOR_BACKENDS, DB_WAITING_FOR_BACKENDS),
            REQUEUE_DATABASE,
        )
        return False
    step = p.upgrade
    if step.action == upgrade.ABORT:
        _abort_upgrade(p, step)
        return False
    if step.check_image and not _image_matches(p, spec, release):
        return False
    if step.action == upgrade.SYNC:
        return _db_sync(p, plan, release)
    if step.action == upgrade.INITIATE:
        cond, event = upgrade.initiated(step)
        p.fields["target_release"] = step.target
        p.fields["upgrade_phase"] = step.phase
        p.events.append(event)
        p.set(cond, REQUEUE_NOW)
        return False
    if step.action in (upgrade.REFUSE, upgrade.TARGET_CHANGED):
        cond = c.condition(c.DATABASE_READY, False, step.reason, step.message)
        if p.changed(cond):
            p.events.append(upgrade.refused_event(step))
        p.set(cond)
        return False
    if step.phase == upgrade.ROLLING_UPDATE:
        # No Job: the Deployment step rolls the API to the new release.
        p.set(upgrade.rolling_update())
        return True
    return _phase_job(p, plan, step)


def _abort_upgrade(p: _Pass, step: upgrade.Step) -> None:
    """The spec is back at the installed release: delete the phase Jobs, clear the phase."""
    for key in ok.DB_PHASE_JOBS:
        action = ap.delete_action(key, p.live.get(key), p.owner_uid)
        if action.writes:
            p.extra_actions.append(action)
    p.fields["target_release"] = ""
    p.fields["upgrade_phase"] = ""
    p.events.append(upgrade.aborted(step))
    p.requeues.append(REQUEUE_NOW)


_PHASE_JOB_RUNNING = {
    ap.ABSENT: REQUEUE_DATABASE,
    ap.JOB_RUNNING: REQUEUE_DATABASE,
    ap.RERUN: REQUEUE_RECREATE,
    ap.DELETING: REQUEUE_RECREATE,
}


def _phase_job(p: _Pass, plan: Plan, step: upgrade.Step) -> bool:
    """Expanding, Migrating, Contracting: the phase's Job decides; False stops the pass."""
    key = upgrade.PHASE_JOBS[step.phase]
    job = p.want(key, plan.desired.get(key))
    live = p.live.get(key)
    action = ap.job_action(job, live, p.owner_uid, key)
    if action.error:
        _conflict(p, c.DATABASE_READY, action)
        return False
    if action.reason in _PHASE_JOB_RUNNING:
        outcome = upgrade.phase_outcome(step.phase, upgrade.RUNNING, step, action.name)
        p.set(outcome.condition, _PHASE_JOB_RUNNING[action.reason])
        return False
    failed = action.reason == ap.JOB_FAILED
    outcome = upgrade.phase_outcome(
        step.phase,
        upgrade.FAILED if failed else upgrade.COMPLETE,
        step,
        action.name,
        ls.job_failure_detail(live) if failed else "",
    )
    if outcome.event is not None and (not outcome.warning or p.changed(outcome.condition)):
        p.events.append(outcome.event)
    if outcome.next_phase == "":
        p.fields["installed_release"] = step.target
        p.fields["target_release"] = ""
        p.fields["upgrade_phase"] = ""
    elif outcome.next_phase is not None:
        p.fields["upgrade_phase"] = outcome.next_phase
    p.set(outcome.condition, REQUEUE_NOW if outcome.requeue_now else None)
    return False


def _db_sync(p: _Pass, plan: Plan, release: str) -> bool:
    """The steady-state db-sync Job; False stops the pass."""
    installed = str(p.existing_status.get("installedRelease") or "")
    job = p.want(ok.DB_SYNC_JOB, plan.desired.get(ok.DB_SYNC_JOB))
    action = ap.job_action(job, p.live.get(ok.DB_SYNC_JOB), p.owner_uid)
    name = action.name
    if action.error:
        _conflict(p, c.DATABASE_READY, action)
        return False
    progress = {
        ap.ABSENT: (f"Running the db-sync Job {name}", REQUEUE_DATABASE),
        ap.JOB_RUNNING: (f"Waiting for the db-sync Job {name} to complete", REQUEUE_DATABASE),
        ap.RERUN: (
            f"The pod template of the db-sync Job {name} changed (configuration, image or "
            "environment): deleting the finished Job to run it again",
            REQUEUE_RECREATE,
        ),
        ap.DELETING: (
            f"Waiting for the previous db-sync Job {name} to be deleted",
            REQUEUE_RECREATE,
        ),
    }
    if action.reason in progress:
        message, requeue = progress[action.reason]
        p.set(c.condition(c.DATABASE_READY, False, c.DB_SYNC_IN_PROGRESS, message), requeue)
        return False
    if action.reason == ap.JOB_FAILED:
        detail = ls.job_failure_detail(p.live.get(ok.DB_SYNC_JOB)) or "see its pod logs"
        cond = c.condition(
            c.DATABASE_READY,
            False,
            c.DB_SYNC_FAILED,
            f"db-sync Job {name} failed: {detail}; it runs again when the configuration, the "
            "image or the environment changes, or when the Job is deleted",
        )
        if p.changed(cond):
            p.event("Warning", c.EVENT_DB_SYNC_FAILED, f"db_sync job failed: {detail}")
        p.set(cond)
        return False
    cond = c.condition(c.DATABASE_READY, True, c.DATABASE_SYNCED, DB_SYNCED)
    if p.changed(cond) or installed != release:
        p.event("Normal", c.EVENT_DATABASE_SYNCED, DB_SYNCED_EVENT)
    p.fields["installed_release"] = release
    p.set(cond)
    return True


def _deployment_step(p: _Pass, plan: Plan) -> bool:
    """Deployment, Service, PDB; True when the Deployment is ready."""
    deployment = p.want(ok.DEPLOYMENT, plan.desired.get(ok.DEPLOYMENT))
    service = p.want(ok.SERVICE, plan.desired.get(ok.SERVICE))
    pdb = p.want(ok.PDB, plan.desired.get(ok.PDB))
    live_deployment = p.live.deployment
    actions = ap.deployment_actions(deployment, live_deployment, p.owner_uid)
    main = actions[-1]  # the Deployment's own action (after a replicas hand-over)
    actions.append(ap.service_action(service, p.live.get(ok.SERVICE), live_deployment, p.owner_uid))
    actions.append(ap.ssa_action(ok.PDB, pdb, p.live.get(ok.PDB), p.owner_uid))
    for action in actions:
        if action.error:
            _conflict(p, c.DEPLOYMENT_READY, action)
            if action is main:
                # No Service or PDB in front of pods this Glance does not run.
                p.desired.pop(ok.SERVICE)
                p.desired.pop(ok.PDB)
            return False
    if main.reason == ap.SELECTOR_CHANGED:
        message = (
            f"The selector of Deployment {main.namespace}/{main.name} changed and is immutable: "
            "deleting it to create it again"
        )
        p.set(
            c.condition(c.DEPLOYMENT_READY, False, c.WAITING_FOR_DEPLOYMENT, message),
            REQUEUE_RECREATE,
        )
        return False
    ready = main.reason == ap.UNCHANGED and ls.deployment_ready(live_deployment)
    rolling = p.upgrade.action == upgrade.PHASE and p.upgrade.phase == upgrade.ROLLING_UPDATE
    if ready and rolling:
        if not upgrade.rollout_converged(live_deployment):
            p.set(
                c.condition(
                    c.DEPLOYMENT_READY, False, c.WAITING_FOR_DEPLOYMENT, upgrade.ROLLOUT_WAITING
                ),
                REQUEUE_DEPLOYMENT,
            )
            return False
        # Every pod runs the new release: contract next, at once; the endpoint waits.
        p.fields["upgrade_phase"] = upgrade.CONTRACTING
        p.events.append(upgrade.rollout_complete(p.upgrade))
        p.set(
            c.condition(c.DEPLOYMENT_READY, True, c.DEPLOYMENT_READY_REASON, DEPLOYMENT_AVAILABLE),
            REQUEUE_NOW,
        )
        return False
    if not ready:
        p.set(
            c.condition(
                c.DEPLOYMENT_READY, False, c.WAITING_FOR_DEPLOYMENT, DEPLOYMENT_NOT_AVAILABLE
            ),
            REQUEUE_DEPLOYMENT,
        )
        if not p.existing_status.get("endpoint"):
            p.set(
                c.condition(
                    c.GLANCE_API_READY, False, c.ENDPOINT_NOT_READY, ENDPOINT_NOT_CONFIGURED
                ),
                REQUEUE_HEALTH,
            )
        return False
    p.fields["endpoint"] = endpoint_url(p.glance)
    p.set(c.condition(c.DEPLOYMENT_READY, True, c.DEPLOYMENT_READY_REASON, DEPLOYMENT_AVAILABLE))
    return True


def _events_on_change(p: _Pass, plan: Plan, conds: Mapping[str, Mapping[str, str]]) -> None:
    """The plan's events, each only when the condition it belongs to changed."""
    extra = conds.get(c.EXTRA_CONFIG_HEALTHY)
    backends = conds.get(c.BACKENDS_READY)
    gates = {
        c.EVENT_EXTRA_CONFIG_OWNED_KEY_OVERRIDE: extra,
        c.EVENT_GLANCE_BACKEND_SKIPPED: backends,
    }
    for event in plan.events:
        cond = gates.get(event["reason"])
        if cond is None or p.changed(cond):
            p.events.append(dict(event))


def _finish(p: _Pass, plan: Plan | None, now: datetime | str) -> PassResult:
    generation = int(_meta(p.glance).get("generation") or 1)
    new_status = glance_status(
        p.existing_status,
        p.conditions,
        generation,
        now,
        endpoint=p.fields.get("endpoint", KEEP),
        installed_release=p.fields.get("installed_release", KEEP),
        target_release=p.fields.get("target_release", KEEP),
        upgrade_phase=p.fields.get("upgrade_phase", KEEP),
    )
    actions = ap.apply_actions(p.desired, p.live, p.owner_uid) + p.extra_actions
    return PassResult(
        actions=actions,
        status=new_status,
        status_patch=status_patch(p.existing_status, new_status),
        events=p.events,
        requeue_after=p.requeue_after,
        plan=plan,
    )


def is_active(glance_obj: Mapping[str, Any]) -> bool:
    """The pass goes beyond step 0: the Glance is not being deleted (a missing finalizer
    is added by the same pass). A Glance being deleted only releases the finalizer, and
    its pass needs nothing but the Glance itself and, in managed mode, its MariaDB
    resources (``pass_reads.deletion_reads``)."""
    return not _meta(glance_obj).get("deletionTimestamp")


def pass_plan(glance_obj: Mapping[str, Any], plan_inputs: PlanInputs, live: ls.LiveObjects) -> Plan:
    """The compute half of a pass: ``build_plan`` on what the gather step read, with the
    last-good names the live Deployment mounts and the latched Service selector. The
    roles render ``plan.desired``; ``decide_pass`` takes what they rendered."""
    mounted = ls.mounted_artifacts(live.deployment)
    found = InputSet(
        glance=dict(glance_obj),
        backends=[dict(b) for b in _attached_backends(glance_obj, plan_inputs.backends)],
        secrets=[dict(s) for s in plan_inputs.secrets],
        configmaps=[dict(m) for m in plan_inputs.configmaps],
    )
    return build_plan(
        found,
        plan_inputs.crds,
        plan_inputs.catalogs,
        configmaps=decode_configmaps(plan_inputs.configmaps),
        last_good=mounted if all(mounted) else None,
        narrow_selector=ls.narrow_selector(live.get(ok.SERVICE), live.deployment),
        operator_namespace=plan_inputs.operator_namespace,
        stored=True,
        external=ExternalSecrets(
            store=plan_inputs.secret_store,
            external={str(_meta(e).get("name")): dict(e) for e in plan_inputs.external_secrets},
        ),
    )


def decide_pass(
    glance_obj: Mapping[str, Any],
    plan_inputs: PlanInputs,
    live: ls.LiveObjects,
    now: datetime | str,
    health: Mapping[str, Any] | Health | None = None,
    objects: Mapping[str, dict[str, Any] | None] | None = None,
    plan: Plan | None = None,
    target_cluster: Mapping[str, Any] | None = None,
    remote_children: Sequence[Mapping[str, Any]] = (),
    abandon_after: int = ABANDON_AFTER,
) -> PassResult:
    """Decide one reconcile pass of ``glance_obj`` (see the module docstring).

    ``target_cluster``: what the gather step found of the target cluster the Glance names
    (``name``, ``registration``, ``server``, ``error``: None when it answered), None when
    it names none; ``remote_children``: a deleted Glance's children on it, to sweep.

    ``objects``: the owned objects the roles rendered from ``pass_plan(...).desired``, by
    key (``role_templates.objects_by_key``); when None they are rendered here from the
    same templates (``role_templates.render_objects``). ``plan``: ``pass_plan`` of the same
    arguments when the caller has it already (None: computed here).
    """
    meta = _meta(glance_obj)
    finalizers = list(meta.get("finalizers") or [])
    target = metadata.target_cluster(glance_obj)
    if meta.get("deletionTimestamp"):
        held = [f for f in (FINALIZER, REMOTE_CHILDREN_FINALIZER) if f in finalizers]
        if not held:
            return PassResult()
        if REMOTE_CHILDREN_FINALIZER in held:
            return _remote_deletion(
                glance_obj, live, target_cluster, remote_children, held, now, abandon_after
            )
        result = _deletion(glance_obj, live if target is None else ls.live_objects("", []))
        result.finalizers = held
        return result
    if target is not None and (not target_cluster or target_cluster.get("error")):
        # Nothing is read or written, and no finalizer added: a Glance naming a cluster
        # that never resolved leaves nothing behind to clean up (reference-spec §2.2).
        return _target_unavailable(glance_obj, live, target, target_cluster, now)
    result = _decide(glance_obj, plan_inputs, live, now, health, objects, plan)
    wanted = [FINALIZER] + ([REMOTE_CHILDREN_FINALIZER] if target is not None else [])
    missing = [f for f in wanted if f not in finalizers]
    if missing:
        # Added by the apply step before any other write; the pass does not stop for it.
        result.finalizer = ADD
        result.finalizers = missing
    result.target_cluster = target
    return result


def _unavailable_message(target: str, info: Mapping[str, Any] | None) -> str:
    return str((info or {}).get("error") or f'target cluster "{target}" was not resolved')


def _target_unavailable(
    glance_obj: Mapping[str, Any],
    live: ls.LiveObjects,
    target: str,
    info: Mapping[str, Any] | None,
    now: datetime | str,
    message: str | None = None,
) -> PassResult:
    """SecretsReady False, TargetClusterUnavailable, polled every 15 s; nothing else."""
    p = _Pass(glance_obj, live, {})
    p.set(
        c.condition(
            c.SECRETS_READY,
            False,
            c.TARGET_CLUSTER_UNAVAILABLE,
            message or _unavailable_message(target, info),
        ),
        REQUEUE_SECRETS,
    )
    return _finish(p, None, now)


def _duration(seconds: int) -> str:
    """Go's time.Duration String() of whole seconds (``5m0s``), as the reference words it."""
    minutes, rest = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours}h{minutes}m{rest}s"
    return f"{minutes}m{rest}s" if minutes else f"{rest}s"


def _remote_deletion(
    glance_obj: Mapping[str, Any],
    live: ls.LiveObjects,
    info: Mapping[str, Any] | None,
    remote_children: Sequence[Mapping[str, Any]],
    held: list[str],
    now: datetime | str,
    abandon_after: int,
) -> PassResult:
    """A Glance being deleted whose children are on a target cluster (reference-spec §2.2,
    §2.10). The cluster resolves: the MariaDB resources first (as ``_deletion``), then
    every child carrying the Glance's ownership labels is deleted and both finalizers go.
    It does not: the pass waits, polling every 15 s, until the cluster has been
    unresolvable for ``abandon_after`` seconds since both the deletion and the first pass
    that found it so (the condition's lastTransitionTime); then the children are given up
    (Warning RemoteChildrenAbandoned) and the finalizers released."""
    target = metadata.target_cluster(glance_obj) or ""
    name = str(_meta(glance_obj).get("name") or "")
    if not info or info.get("error"):
        existing = c.by_type((glance_obj.get("status") or {}).get("conditions") or [])
        secrets = existing.get(c.SECRETS_READY) or {}
        first = (
            ls.parse_time(secrets.get("lastTransitionTime"))
            if secrets.get("reason") == c.TARGET_CLUSTER_UNAVAILABLE
            and secrets.get("status") == c.FALSE
            else ls.parse_time(now)
        )
        since = max(first, ls.parse_time(_meta(glance_obj).get("deletionTimestamp")))
        if (ls.parse_time(now) - since).total_seconds() < abandon_after:
            message = (
                f"{_unavailable_message(target, info)}; waiting at least "
                f"{_duration(abandon_after)} before abandoning its children"
            )
            return _target_unavailable(glance_obj, live, target, info, now, message)
        return PassResult(
            finalizer=REMOVE,
            finalizers=held,
            events=[
                {
                    "type": "Warning",
                    "reason": c.EVENT_REMOTE_CHILDREN_ABANDONED,
                    "message": f'Target cluster "{target}" did not resolve for '
                    f"{_duration(abandon_after)}; releasing the finalizers without deleting "
                    "the objects on it labelled as owned by this Glance",
                }
            ],
        )
    result = _deletion(glance_obj, live)
    if result.finalizer != REMOVE:
        result.target_cluster = target
        return result  # the MariaDB resources first
    owner = _owner_uid(glance_obj)
    sweep = [a for a in (ap.sweep_action(obj, owner) for obj in remote_children) if a.writes]
    result.actions = sweep
    result.finalizers = held
    result.target_cluster = target
    if sweep:
        result.events.append(
            {
                "type": "Normal",
                "reason": c.EVENT_REMOTE_CHILDREN_SWEPT,
                "message": f"Deleting the {len(sweep)} objects of {name} on target cluster "
                f'"{target}"; releasing the finalizers',
            }
        )
    return result


def _deletion(glance_obj: Mapping[str, Any], live: ls.LiveObjects) -> PassResult:
    """A Glance being deleted that still holds the finalizer (reference-spec §2.10).

    Brownfield mode owns nothing outside garbage collection: the finalizer goes at once.
    Managed mode: if any of its MariaDB Database, User or Grant is still live (ours and not
    yet being deleted) they are deleted and the pass asks again in 30 s
    (``FinalizingDatabase``); once none is, the finalizer goes (``DatabaseFinalized``).
    mariadb-operator drops the database and the user when their resources go.
    """
    cluster = _cluster_ref(glance_obj)
    if cluster is None:
        return PassResult(finalizer=REMOVE)
    name = str(_meta(glance_obj).get("name") or "")
    uid = _owner_uid(glance_obj)
    actions = [ap.delete_action(key, live.get(key), uid) for key in ok.MARIADB_OBJECTS]
    deletes = [a for a in actions if a.writes]
    if deletes:
        kinds = " and ".join(a.kind for a in deletes)
        return PassResult(
            actions=deletes,
            events=[
                {
                    "type": "Normal",
                    "reason": c.EVENT_FINALIZING_DATABASE,
                    "message": f"Deleting the MariaDB {kinds} {name} before the Glance goes",
                }
            ],
            requeue_after=REQUEUE_DATABASE,
        )
    return PassResult(
        finalizer=REMOVE,
        events=[
            {
                "type": "Normal",
                "reason": c.EVENT_DATABASE_FINALIZED,
                "message": f'The MariaDB resources of {name} on "{cluster}" are gone; '
                "releasing the finalizer",
            }
        ],
    )


def _decide(
    glance_obj: Mapping[str, Any],
    plan_inputs: PlanInputs,
    live: ls.LiveObjects,
    now: datetime | str,
    health: Mapping[str, Any] | Health | None,
    objects: Mapping[str, dict[str, Any] | None] | None,
    plan: Plan | None = None,
) -> PassResult:
    """Steps 1 to 7 of a Glance that is not being deleted."""
    if plan is None:
        plan = pass_plan(glance_obj, plan_inputs, live)
    if objects is None:
        objects = render_objects(plan.desired) if not plan.errors else {}
    p = _Pass(glance_obj, live, objects, plan_inputs.database_cluster)
    if plan.errors:
        message = "the stored objects are refused: " + "; ".join(plan.errors)
        p.set(c.condition(c.SECRETS_READY, False, c.CONFIG_ERROR, message))
        return _finish(p, plan, now)

    conds = c.by_type(plan.glance_conditions)
    secrets = conds[c.SECRETS_READY]
    # 1. the Secrets gate
    if secrets["reason"] in (
        c.SECRET_STORE_NOT_READY,
        c.WAITING_FOR_DB_CREDENTIALS,
        c.WAITING_FOR_SERVICE_USER_CREDENTIALS,
    ):
        p.set(dict(secrets), REQUEUE_SECRETS)
        for type_ in (c.BACKENDS_READY, c.EXTRA_CONFIG_HEALTHY):
            p.set(dict(conds[type_]))
        _events_on_change(p, plan, conds)
        return _finish(p, plan, now)
    # 2. the db-connection Secret
    connection = p.want(ok.DB_CONNECTION_SECRET, plan.desired.get(ok.DB_CONNECTION_SECRET))
    connection_action = (
        ap.ssa_action(
            ok.DB_CONNECTION_SECRET, connection, live.get(ok.DB_CONNECTION_SECRET), p.owner_uid
        )
        if connection is not None
        else None
    )
    # 3. backends, 4. configuration
    p.set(dict(conds[c.BACKENDS_READY]))
    p.set(dict(conds[c.EXTRA_CONFIG_HEALTHY]))
    _events_on_change(p, plan, conds)
    if connection_action is not None and connection_action.error:
        _conflict(p, c.SECRETS_READY, connection_action)
        return _finish(p, plan, now)
    if plan.config_error:
        p.set(dict(secrets), REQUEUE_SECRETS)
        return _finish(p, plan, now)
    p.set(dict(secrets))
    if plan.config_map:
        if not _config_step(p, plan):
            return _finish(p, plan, now)
        # Applied as soon as a configuration exists (DECISIONS.md), whatever follows.
        _hpa_step(p, plan)
        _network_policy_step(p, plan)
        _http_route_step(p, plan)
        _db_purge_step(p, plan)
    # 5. database, 6. deployment, 7. API health
    if not _database_step(p, plan):
        return _finish(p, plan, now)
    if not _deployment_step(p, plan):
        return _finish(p, plan, now)
    if health is not None:
        cond, requeue = health_condition(Health.from_data(health))
        p.set(cond, requeue)
    return _finish(p, plan, now)


def decode_configmaps(configmaps: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, str]]:
    """ConfigMap name -> its ``data``."""
    return {
        str(_meta(m).get("name")): {str(k): str(v) for k, v in (m.get("data") or {}).items()}
        for m in configmaps
    }
