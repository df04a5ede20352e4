# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""Step 5 of a pass, the database: after the managed-mode and release gates, the
steady-state db-sync Job, or the steps of a release change's expand-migrate-contract
upgrade (initiation or refusal, abort, the phase Jobs; ``desired/upgrade.py`` decides
which).
"""

from __future__ import annotations

from ansible_collections.c5c3.glance.plugins.module_utils.desired import conditions as c
from ansible_collections.c5c3.glance.plugins.module_utils.desired import upgrade
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects import keys as ok
from ansible_collections.c5c3.glance.plugins.module_utils.desired.render_plan import Plan
from ansible_collections.c5c3.glance.plugins.module_utils.kube import apply_plan as ap
from ansible_collections.c5c3.glance.plugins.module_utils.kube import live_state as ls
from ansible_collections.c5c3.glance.plugins.module_utils.passes.glance.gates import (
    _image_matches,
    _managed_database,
)
from ansible_collections.c5c3.glance.plugins.module_utils.passes.glance.pass_state import (
    REQUEUE_DATABASE,
    REQUEUE_NOW,
    REQUEUE_RECREATE,
    _conflict,
    _Pass,
    _spec,
)

DB_WAITING_FOR_BACKENDS = (
    "Waiting for a ready default backend before provisioning the database schema"
)
DB_SYNCED = "Database schema is up to date (revision verified)"
# The reference's words (internal/common/database/flow.go); ours add the Job and the why.
DB_SYNC_RUNNING = "db_sync job is running"
DB_SYNC_FAILED = "db_sync job failed"
DB_SYNCED_EVENT = "Database schema is up to date"


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
        p.set(upgrade.rolling_update(step))
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
    p.finished(_job_suffix(key), live)
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


def _job_suffix(key: str) -> str:
    """The reference's name for a database Job's kind: ``db_expand_job`` -> ``db-expand``."""
    return key.removesuffix("_job").replace("_", "-")


def _db_sync(p: _Pass, plan: Plan, release: str) -> bool:
    """The steady-state db-sync Job; False stops the pass."""
    installed = str(p.existing_status.get("installedRelease") or "")
    job = p.want(ok.DB_SYNC_JOB, plan.desired.get(ok.DB_SYNC_JOB))
    action = ap.job_action(job, p.live.get(ok.DB_SYNC_JOB), p.owner_uid)
    name = action.name
    if action.error:
        _conflict(p, c.DATABASE_READY, action)
        return False
    p.finished(_job_suffix(ok.DB_SYNC_JOB), p.live.get(ok.DB_SYNC_JOB))
    progress = {
        ap.ABSENT: (f"{DB_SYNC_RUNNING}: creating the db-sync Job {name}", REQUEUE_DATABASE),
        ap.JOB_RUNNING: (
            f"{DB_SYNC_RUNNING}: waiting for the db-sync Job {name} to complete",
            REQUEUE_DATABASE,
        ),
        ap.RERUN: (
            f"{DB_SYNC_RUNNING}: the pod template of the db-sync Job {name} changed "
            "(configuration, image or environment): deleting the finished Job to run it again",
            REQUEUE_RECREATE,
        ),
        ap.DELETING: (
            f"{DB_SYNC_RUNNING}: waiting for the previous db-sync Job {name} to be deleted",
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
            f"{DB_SYNC_FAILED}: Job {name} failed: {detail}; it runs again when the "
            "configuration, the image or the environment changes, or when the Job is deleted",
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
