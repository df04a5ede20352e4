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

This module runs the pipeline and holds steps 1 to 3 itself. The other steps are in this
folder, one module each: ``deletion`` (0), ``config_step`` (4), ``database_step`` (5),
``deployment_step`` (6) and ``api_health`` (7), beside ``gates`` (the target cluster, the
managed database, the release); ``pass_state`` holds what a pass takes, accumulates and
returns, ``report`` how it ends (the status, the events, the ``PassResult``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.desired import conditions as c
from ansible_collections.c5c3.glance.plugins.module_utils.desired.glance_secrets import (
    ExternalSecrets,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.input_documents import InputSet
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects import keys as ok
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects import metadata
from ansible_collections.c5c3.glance.plugins.module_utils.desired.render_plan import (
    Plan,
    build_plan,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.role_templates import (
    render_objects,
)
from ansible_collections.c5c3.glance.plugins.module_utils.kube import apply_plan as ap
from ansible_collections.c5c3.glance.plugins.module_utils.kube import live_state as ls
from ansible_collections.c5c3.glance.plugins.module_utils.passes.glance.api_health import (
    Health,
    health_condition,
)
from ansible_collections.c5c3.glance.plugins.module_utils.passes.glance.config_step import (
    _config_step,
    _db_purge_step,
    _hpa_step,
    _http_route_step,
    _network_policy_step,
)
from ansible_collections.c5c3.glance.plugins.module_utils.passes.glance.database_step import (
    _database_step,
)
from ansible_collections.c5c3.glance.plugins.module_utils.passes.glance.deletion import (
    ABANDON_AFTER,
    _deletion,
    _remote_deletion,
)
from ansible_collections.c5c3.glance.plugins.module_utils.passes.glance.deployment_step import (
    _deployment_step,
)
from ansible_collections.c5c3.glance.plugins.module_utils.passes.glance.gates import (
    _target_unavailable,
)
from ansible_collections.c5c3.glance.plugins.module_utils.passes.glance.pass_state import (
    ADD,
    FINALIZER,
    REMOTE_CHILDREN_FINALIZER,
    REQUEUE_SECRETS,
    PassResult,
    PlanInputs,
    _conflict,
    _meta,
    _Pass,
    _spec,
)
from ansible_collections.c5c3.glance.plugins.module_utils.passes.glance.report import (
    _events_on_change,
    _finish,
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
        c.WAITING_FOR_IMPORT_CA_BUNDLE,
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


def _attached_backends(glance: Mapping[str, Any], backends: Iterable[Mapping[str, Any]]) -> list:
    name = _meta(glance).get("name")
    namespace = _meta(glance).get("namespace")
    return [
        b
        for b in backends
        if (_spec(b).get("glanceRef") or {}).get("name") == name
        and (_meta(b).get("namespace") or namespace) == namespace
    ]
