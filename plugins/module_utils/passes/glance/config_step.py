# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""Step 4 of a pass: once a configuration exists (new or last-good), the config copies
are created and old ones pruned, and the HPA, NetworkPolicy, HTTPRoute and db-purge
CronJob are applied with their conditions, whatever the later steps say.
"""

from __future__ import annotations

from ansible_collections.c5c3.glance.plugins.module_utils.admission.glance_admission import (
    DEFAULT_RETENTION_DAYS,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired import conditions as c
from ansible_collections.c5c3.glance.plugins.module_utils.desired import upgrade
from ansible_collections.c5c3.glance.plugins.module_utils.desired.content_address import (
    db_purge_cronjob_name,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects import keys as ok
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.database import (
    DEFAULT_PURGE_SCHEDULE,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.render_plan import Plan
from ansible_collections.c5c3.glance.plugins.module_utils.kube import apply_plan as ap
from ansible_collections.c5c3.glance.plugins.module_utils.kube import live_state as ls
from ansible_collections.c5c3.glance.plugins.module_utils.passes.glance.pass_state import (
    REQUEUE_GATEWAY_PROBE,
    REQUEUE_RECREATE,
    REQUEUE_ROUTE,
    _conflict,
    _meta,
    _Pass,
    _spec,
)

HPA_CONFIGURED = "HorizontalPodAutoscaler is configured"
HPA_NOT_CONFIGURED = "Autoscaling is not configured"
NP_CONFIGURED = "NetworkPolicy is configured"
NP_NOT_CONFIGURED = "Network isolation is not configured"
ROUTE_NOT_CONFIGURED = "External Glance API exposure via Gateway API is not configured"
ROUTE_ACCEPTED = "HTTPRoute accepted by Gateway"
ROUTE_NOT_ACCEPTED = "HTTPRoute not yet accepted by Gateway"
# The reference's words, then ours: this operator probes again every minute (a restart is
# not needed), and has no watch on a target cluster to restore (its drift-watch advice is
# left out of the target cluster's message).
ROUTE_NO_GATEWAY_API = (
    "spec.gateway is set but the gateway.networking.k8s.io/v1 HTTPRoute CRD is not installed "
    "in this cluster; install Gateway API and restart the operator to enable external Glance "
    "API exposure (or wait: the operator checks again every minute)"
)
ROUTE_NO_GATEWAY_API_TARGET = (
    "spec.gateway is set but the target cluster does not serve the "
    "gateway.networking.k8s.io/v1 HTTPRoute CRD; install Gateway API on the target cluster "
    "(the operator re-checks on every reconcile)"
)


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
            target = (_spec(p.glance).get("targetClusterRef") or {}).get("name")
            message = ROUTE_NO_GATEWAY_API_TARGET if target else ROUTE_NO_GATEWAY_API
            p.set(
                c.condition(c.HTTPROUTE_READY, False, c.GATEWAY_API_NOT_INSTALLED, message),
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
    p.finished("db-purge", observed)
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
