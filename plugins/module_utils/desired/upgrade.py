# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""The expand-migrate-contract release upgrade, decided (reference-spec §2.3 steps 5-6, §4.13).

A Glance whose ``spec.openStackRelease`` moves to the next release while
``status.installedRelease`` holds the old one is upgraded in phases, each recorded in
``status.upgradePhase`` (with the release it goes to in ``status.targetRelease``):

=============  ===========================  ============================================
phase          what runs                    done when
=============  ===========================  ============================================
Expanding      Job ``{name}-db-expand``      the Job completes → Migrating
Migrating      Job ``{name}-db-migrate``     the Job completes → RollingUpdate
RollingUpdate  the API Deployment rolls     every pod runs the new template → Contracting
Contracting    Job ``{name}-db-contract``    the Job completes → done: installedRelease
=============  ===========================  ============================================

Everything here is pure and reads only strings: the spec's release and image tag, and the
stored status (``installedRelease``, ``targetRelease``, ``upgradePhase``).

* ``path_problem(installed, target)``: why an upgrade from ``installed`` to ``target`` is
  refused (``VersionParseError``, ``DowngradeNotSupported``, ``UpgradePathInvalid``), as
  ``(reason, message)``, or None. The only steps are Y.1 → Y.2 and Y.2 → (Y+1).1.
* ``database_step(release, status)``: what the database step does on this pass, a
  ``Step``: ``sync`` (the steady-state db-sync Job), ``initiate``, ``refuse`` (a refused
  path), ``abort`` (the spec went back to the installed release), ``target-changed`` or
  ``phase`` (work on the current phase).
* ``database_job(release, status)``: the one database Job the pass works towards, as a
  ``desired_objects`` key (``db_sync_job``, ``db_expand_job``, ``db_migrate_job``,
  ``db_contract_job``) or None. Initiation counts as Expanding and an abort as the
  db-sync that follows it, so an offline render shows the Job the next passes run.
* ``phase_outcome(phase, job_state, transition)``: the condition, event and next phase for
  a phase Job in a given state (``JOB_*`` of ``apply_plan``, folded to ``running``,
  ``failed``, ``complete``).
* ``rollout_converged(deployment)``: the RollingUpdate → Contracting gate.

The messages name the releases; ``transition`` is ``"A → B"`` (installed → target).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.desired import conditions as c
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.keys import (
    DB_CONTRACT_JOB,
    DB_EXPAND_JOB,
    DB_MIGRATE_JOB,
    DB_SYNC_JOB,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.release import (
    is_upgrade,
    parse_release,
    release_parse_error,
)

EXPANDING = "Expanding"
MIGRATING = "Migrating"
ROLLING_UPDATE = "RollingUpdate"
CONTRACTING = "Contracting"
PHASES = (EXPANDING, MIGRATING, ROLLING_UPDATE, CONTRACTING)
NEXT_PHASE = {EXPANDING: MIGRATING, MIGRATING: ROLLING_UPDATE, ROLLING_UPDATE: CONTRACTING}
# The phases that run a Job, and its desired_objects key.
PHASE_JOBS = {
    EXPANDING: DB_EXPAND_JOB,
    MIGRATING: DB_MIGRATE_JOB,
    CONTRACTING: DB_CONTRACT_JOB,
}

# --- what the database step does (Step.action) --------------------------------------------
SYNC = "sync"
INITIATE = "initiate"
REFUSE = "refuse"
ABORT = "abort"
TARGET_CHANGED = "target-changed"
PHASE = "phase"

# --- a phase Job's state, as phase_outcome takes it ---------------------------------------
RUNNING = "running"
FAILED = "failed"
COMPLETE = "complete"

ROLLOUT_WAITING = (
    "Waiting for the upgraded image to finish rolling out before contracting the database schema"
)

# Per phase: the reason while it runs, the reason when its Job failed and that failure's
# event, the event when it is done, and the glance-manage command (for messages).
_IN_PROGRESS = {
    EXPANDING: c.EXPAND_IN_PROGRESS,
    MIGRATING: c.MIGRATE_IN_PROGRESS,
    ROLLING_UPDATE: c.UPGRADE_ROLLING_UPDATE,
    CONTRACTING: c.CONTRACT_IN_PROGRESS,
}
_FAILED = {
    EXPANDING: (c.EXPAND_FAILED, c.EVENT_EXPAND_FAILED),
    MIGRATING: (c.MIGRATE_FAILED, c.EVENT_MIGRATE_FAILED),
    CONTRACTING: (c.CONTRACT_FAILED, c.EVENT_CONTRACT_FAILED),
}
_DONE_EVENT = {
    EXPANDING: c.EVENT_EXPAND_COMPLETE,
    MIGRATING: c.EVENT_MIGRATE_COMPLETE,
    CONTRACTING: c.EVENT_UPGRADE_COMPLETE,
}
_COMMAND = {EXPANDING: "db expand", MIGRATING: "db migrate", CONTRACTING: "db contract"}
# The reference's name of each phase in its messages ("Expand phase running: ...").
_NAME = {EXPANDING: "Expand", MIGRATING: "Migrate", CONTRACTING: "Contract"}


@dataclass(frozen=True)
class Step:
    """What the database step does on this pass.

    ``action`` is one of ``SYNC``, ``INITIATE``, ``REFUSE``, ``ABORT``, ``TARGET_CHANGED``,
    ``PHASE``; ``phase`` the current (or, for ``INITIATE``, the first) phase; ``installed``
    and ``target`` the releases the upgrade goes between; ``check_image`` whether the
    image/release lockstep check runs first (all but ``ABORT``); for ``REFUSE`` and
    ``TARGET_CHANGED`` the condition ``reason`` and ``message``.
    """

    action: str
    phase: str = ""
    installed: str = ""
    target: str = ""
    reason: str = ""
    message: str = ""
    check_image: bool = True

    @property
    def transition(self) -> str:
        return transition(self.installed, self.target)


@dataclass(frozen=True)
class Outcome:
    """What a phase Job's state means: the DatabaseReady ``condition``, the ``event``
    (``{type, reason, message}``, or None), the ``next_phase`` (``""``: the upgrade is
    done; None: stay), whether the pass requeues at once (``requeue_now``) and whether the
    state is a failure (``warning``: the event only when the condition changed)."""

    condition: dict[str, str]
    event: dict[str, str] | None = None
    next_phase: str | None = None
    requeue_now: bool = False
    warning: bool = False


def transition(installed: str, target: str) -> str:
    return f"{installed} → {target}"


def _status_text(status: Mapping[str, Any] | None, key: str) -> str:
    return str((status or {}).get(key) or "")


def is_sequential(installed: str, target: str) -> bool:
    """``target`` is the release right after ``installed`` (Y.1 → Y.2, Y.2 → (Y+1).1)."""
    old, new = parse_release(installed), parse_release(target)
    if old is None or new is None:
        return False
    year, minor = old.series
    following = (year, 2) if minor == 1 else (year + 1, 1)
    return new.series == following


def path_problem(installed: str, target: str) -> tuple[str, str] | None:
    """Why the schema cannot go from ``installed`` to ``target``, or None. The messages are
    the reference's (``InitiateUpgrade``), then what to change."""
    for which, value in (("installed", installed), ("target", target)):
        error = release_parse_error(value)
        if error is not None:
            return c.VERSION_PARSE_ERROR, (
                f'failed to parse {which} release "{value}": {error}; the upgrade '
                f"{transition(installed, target)} cannot be planned"
            )
    old, new = parse_release(installed), parse_release(target)
    if new.series < old.series:
        return c.DOWNGRADE_NOT_SUPPORTED, (
            f"downgrade from {old.raw} to {new.raw} is not supported: the database schema of "
            f"{old} cannot be taken back; set spec.openStackRelease back to {installed} (and "
            "spec.image with it)"
        )
    if not is_sequential(installed, target):
        year, minor = old.series
        following = f"{year}.2" if minor == 1 else f"{year + 1}.1"
        return c.UPGRADE_PATH_INVALID, (
            f"upgrade from {old.raw} to {new.raw} is not sequential; only sequential upgrades "
            f"are supported: the next release after {old} is {following}; set "
            f"spec.openStackRelease to {following} (and spec.image with it) first"
        )
    return None


def database_step(release: str, status: Mapping[str, Any] | None) -> Step:
    """What the database step does for ``spec.openStackRelease`` = ``release`` and the
    stored ``status`` (see the module docstring)."""
    installed = _status_text(status, "installedRelease")
    target = _status_text(status, "targetRelease")
    phase = _status_text(status, "upgradePhase")
    if phase:
        if release == installed:
            return Step(ABORT, phase, installed, target, check_image=False)
        if release != target:
            message = (
                f"Spec release changed to {release} during active upgrade "
                f"{transition(installed, target)}; complete or roll back the current upgrade "
                f"first: it is in phase {phase} and neither advances nor restarts; set "
                f"spec.openStackRelease to {target} to finish it or back to {installed} to "
                "abort it"
            )
            return Step(TARGET_CHANGED, phase, installed, target, c.UPGRADE_TARGET_CHANGED, message)
        return Step(PHASE, phase, installed, target)
    if is_upgrade(release, installed):
        problem = path_problem(installed, release)
        if problem is not None:
            return Step(REFUSE, "", installed, release, *problem)
        return Step(INITIATE, EXPANDING, installed, release)
    return Step(SYNC, "", installed, release)


def database_job(release: str, status: Mapping[str, Any] | None) -> str | None:
    """The ``desired_objects`` key of the database Job the passes work towards, or None."""
    step = database_step(release, status)
    if step.action in (SYNC, ABORT):
        return DB_SYNC_JOB
    if step.action in (INITIATE, PHASE):
        return PHASE_JOBS.get(step.phase)
    return None


def initiated(step: Step) -> tuple[dict[str, str], dict[str, str]]:
    """The DatabaseReady condition and the event of a started upgrade."""
    cond = c.condition(
        c.DATABASE_READY,
        False,
        c.EXPAND_IN_PROGRESS,
        f"Upgrade detected: {step.transition} (phase: {EXPANDING})",
    )
    event = _event("Normal", c.EVENT_UPGRADE_INITIATED, f"Upgrade initiated: {step.transition}")
    return cond, event


def aborted(step: Step) -> dict[str, str]:
    """The event of an aborted upgrade."""
    warning = (
        "; the contract phase had started, so the schema may already have dropped what "
        f"{step.installed} needs: check the database before relying on it"
        if step.phase == CONTRACTING
        else ""
    )
    return _event(
        "Normal",
        c.EVENT_UPGRADE_ABORTED,
        f"Upgrade {step.transition} aborted in phase {step.phase}: spec.openStackRelease is "
        f"back at {step.installed}; the phase Jobs are deleted and db-sync runs again{warning}",
    )


def refused_event(step: Step) -> dict[str, str]:
    """The Warning event of a refused path or a moved target (its reason is the condition's)."""
    event_reason = {
        c.VERSION_PARSE_ERROR: c.EVENT_VERSION_PARSE_ERROR,
        c.DOWNGRADE_NOT_SUPPORTED: c.EVENT_DOWNGRADE_NOT_SUPPORTED,
        c.UPGRADE_PATH_INVALID: c.EVENT_UPGRADE_PATH_INVALID,
        c.UPGRADE_TARGET_CHANGED: c.EVENT_UPGRADE_TARGET_CHANGED,
    }[step.reason]
    return _event("Warning", event_reason, step.message)


def rolling_update(step: Step, migrated: bool = False) -> dict[str, str]:
    """DatabaseReady while the API Deployment rolls to the new release; ``migrated``: on
    the pass that finished the migrate phase."""
    message = f"Waiting for Deployment rollout: {step.transition}"
    if migrated:
        message = f"Migrate complete, waiting for Deployment rollout: {step.transition}"
    return c.condition(c.DATABASE_READY, False, c.UPGRADE_ROLLING_UPDATE, message)


def rollout_converged(deployment: Mapping[str, Any] | None) -> bool:
    """The rollout is done: the controller observed the current generation and the
    updated, ready and total replica counts all equal the desired count."""
    if not deployment:
        return False
    meta = deployment.get("metadata") or {}
    spec = deployment.get("spec") or {}
    status = deployment.get("status") or {}
    desired = spec.get("replicas")
    desired = 1 if desired is None else desired
    observed = status.get("observedGeneration") or 0
    counts = [status.get(k) or 0 for k in ("updatedReplicas", "readyReplicas", "replicas")]
    return observed >= (meta.get("generation") or 0) and all(n == desired for n in counts)


def rollout_complete(step: Step) -> dict[str, str]:
    """The event of the RollingUpdate → Contracting flip."""
    return _event(
        "Normal",
        c.EVENT_DEPLOYMENT_ROLLOUT_COMPLETE,
        f"Every Glance API pod runs {step.target}: upgrade {step.transition} continues with "
        f"phase {CONTRACTING}",
    )


def phase_outcome(
    phase: str, job_state: str, step: Step, job_name: str, detail: str = ""
) -> Outcome:
    """What the state of the current phase's Job means (see ``Outcome``).

    ``job_state`` is ``RUNNING`` (also: not created yet, being re-created), ``FAILED`` or
    ``COMPLETE``; ``detail`` the failed Job's reason and message.
    """
    if phase not in PHASE_JOBS:
        raise ValueError(f"phase {phase!r} runs no Job")
    command = _COMMAND[phase]
    name = _NAME[phase]
    if job_state == RUNNING:
        return Outcome(
            c.condition(
                c.DATABASE_READY,
                False,
                _IN_PROGRESS[phase],
                f"{name} phase running: {step.transition} (glance-manage {command}, Job "
                f"{job_name})",
            )
        )
    if job_state == FAILED:
        reason, event_reason = _FAILED[phase]
        detail = detail or "see its pod logs"
        message = (
            f"{name} job {job_name} failed: {detail}; upgrade {step.transition}: fix the "
            "cause and delete the Job to run it again (a change of the configuration, image "
            "or environment also re-runs it)"
        )
        return Outcome(
            c.condition(c.DATABASE_READY, False, reason, message),
            _event("Warning", event_reason, message),
            warning=True,
        )
    if phase == CONTRACTING:
        return Outcome(
            c.condition(
                c.DATABASE_READY,
                True,
                c.DATABASE_SYNCED,
                f"Database schema is up to date (upgraded {step.transition})",
            ),
            _event("Normal", c.EVENT_UPGRADE_COMPLETE, f"Upgrade {step.transition} complete"),
            next_phase="",
            requeue_now=True,
        )
    following = NEXT_PHASE[phase]
    cond = (
        rolling_update(step, migrated=True)
        if following == ROLLING_UPDATE
        else c.condition(
            c.DATABASE_READY,
            False,
            _IN_PROGRESS[following],
            f"Expand complete, starting migrate: {step.transition}",
        )
    )
    return Outcome(
        cond,
        _event(
            "Normal",
            _DONE_EVENT[phase],
            f"Upgrade {step.transition}: {command} complete, next phase {following}",
        ),
        next_phase=following,
        requeue_now=True,
    )


def _event(type_: str, reason: str, message: str) -> dict[str, str]:
    return {"type": type_, "reason": reason, "message": message}
