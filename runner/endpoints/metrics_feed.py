"""What feeds the reference's ``glance_operator_*`` series (reference-spec §6.1).

**Per-step reconcile metrics.** A Glance pass is one ansible-playbook run, not the Go
operator's chain of sub-reconcilers, so ``sub_reconciler`` names our pass's steps
(``roles/glance_pass/tasks/main.yml`` and ``render.yml``): ``gather``, ``plan``,
``render``, ``decide``, ``apply``, ``report``. :func:`step_of` maps one ansible-runner
task event to its step by an explicit table: the three modules by their action, and the
filter ``set_fact`` tasks (plan, render, decide) and the two ``fail`` checks by their task
name in role ``glance_pass``. (The pass renders the object roles' templates in one task of
its own; it does not run the roles.)
ansible-runner's events carry no task tags, so tags cannot do this; a unit test checks
the table against the role files, so a renamed task fails it.

:func:`pass_steps` sums the ``duration`` of each step's task results (``runner_on_ok``,
``_failed``, ``_skipped``, ``_unreachable``; ``end - start`` when there is no duration) and
keeps the steps that ran (at least one result that is not a skip): one observation each.
A step with a failure that is not ignored is an error, counted with the condition of
:data:`STEP_CONDITIONS`. GlanceBackend passes feed nothing: the reference's series is the
Glance reconciler's pipeline.

**db-sync and db-purge Jobs.** :class:`DbJobCounter` reads the Jobs of the dependent
informer (compact entries, :func:`job_facts`) and counts each finished Job once, when the
pass that saw it finished records its UID on the Glance (the reference's
``cobaltcore.c5c3.io/last-<kind>-job-uid``; the Glance informer shows the change):
``db_sync_*`` for a Job whose controller owner is a Glance, ``db_purge_*`` for a Job of
the Glance's db-purge CronJob. Duration: the terminal condition's ``lastTransitionTime``
(else ``status.completionTime``) minus ``metadata.creationTimestamp``. The upgrade phase
Jobs (db-expand, db-migrate, db-contract) are Glance-owned and count as db-sync, as in the
reference.

**Upgrade phases.** :class:`UpgradePhaseTimer` reads the Glances of the primary informer
and times each phase of a release upgrade (``status.upgradePhase``) from the moment the
watch shows it to the moment it shows the next one: one observation of
``glance_operator_upgrade_phase_duration_seconds{phase}`` per phase that ended by moving
on (Expanding → Migrating → RollingUpdate → Contracting → done). A phase already under
way when the runner first sees the Glance (its informer's first list, a new leader) has
no known start and is not observed; neither is a phase ended by an abort. The time is
the runner's monotonic clock, so RollingUpdate, which runs no Job, is timed as well. The
same events set ``glance_operator_upgrade_phase{phase}`` to 1 for the phase under way.

**What the watches show now** (gauges: state, so the informers' first lists feed them
too). :class:`DbJobCounter` also keeps, per Glance and database Job component, how many
Jobs have not finished (``glance_operator_db_jobs_active``) and whether the newest
finished one failed (``glance_operator_db_job_failed``). :class:`GlanceConditions` reads
the Glances' ``status.conditions``: ``glance_operator_glance_ready`` (1 when Ready is
True) and ``glance_operator_glance_condition{type,status}``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.desired.content_address import (
    db_purge_cronjob_name,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.upgrade import (
    CONTRACTING,
    NEXT_PHASE,
)
from ansible_collections.c5c3.glance.plugins.module_utils.passes.glance.pass_state import (
    job_uid_suffix,
)
from runner.endpoints.metrics import CONDITION_STATUSES, RunnerMetrics

GATHER, PLAN, RENDER, DECIDE, APPLY, REPORT = STEPS = (
    "gather",
    "plan",
    "render",
    "decide",
    "apply",
    "report",
)

PASS_ROLE = "glance_pass"
STEP_ACTIONS: Mapping[str, str] = {
    "c5c3.glance.gather": GATHER,
    "c5c3.glance.apply": APPLY,
    "c5c3.glance.report": REPORT,
}
"""The pass's module tasks (role ``glance_pass``), by action."""
STEP_TASKS: Mapping[str, str] = {
    "Plan the pass (configuration, names, every owned object's data)": PLAN,
    "Render the owned objects from the object roles' templates": RENDER,
    "Decide the writes, the status, the events and the requeue": DECIDE,
}
"""The pass's other step tasks (role ``glance_pass``), by name."""
UNSTEPPED_TASKS = frozenset(
    {
        "Plan and render the owned objects (a pass that goes beyond the finalizer)",
        "Fail the pass with what its step said",
    }
)
"""Tasks of ``glance_pass`` that belong to no step (the import of ``render.yml``; the rescue,
which fails the pass with the message of the step that failed, counted there): a test
checks the role has no other task."""

STEP_CONDITIONS: Mapping[str, str] = {
    GATHER: "SecretsReady",
    PLAN: "SecretsReady",
    RENDER: "Ready",
    DECIDE: "Ready",
    APPLY: "Ready",
    REPORT: "Ready",
}
"""``condition_type`` of a failed step. gather reads the Glance, its Secrets and backends,
plan computes the config and Secret data: the reference maps its Secrets,
DBConnectionSecret and Config steps to SecretsReady. The other steps cover every owned
object at once, so their failure leaves the aggregate Ready unknown."""

RESULT_EVENTS = frozenset(
    {"runner_on_ok", "runner_on_failed", "runner_on_skipped", "runner_on_unreachable"}
)


def step_of(data: Mapping[str, Any]) -> str | None:
    """The step of one task event's ``event_data``; None for a task of no step."""
    if data.get("role") != PASS_ROLE:
        return None
    for action in (data.get("resolved_action"), data.get("task_action")):
        if action in STEP_ACTIONS:
            return STEP_ACTIONS[action]
    return STEP_TASKS.get(str(data.get("task") or ""))


@dataclass(frozen=True)
class StepRun:
    step: str
    seconds: float
    failed: bool


def pass_steps(events: Iterable[Mapping[str, Any]]) -> list[StepRun]:
    """The steps of one run that ran, in :data:`STEPS` order, with their time and failure."""
    seconds: dict[str, float] = {}
    ran: set[str] = set()
    failed: set[str] = set()
    for event in events:
        kind = event.get("event")
        if kind not in RESULT_EVENTS:
            continue
        data = event.get("event_data") or {}
        step = step_of(data)
        if step is None:
            continue
        seconds[step] = seconds.get(step, 0.0) + _duration(data)
        if kind != "runner_on_skipped":
            ran.add(step)
        if kind == "runner_on_unreachable" or (
            kind == "runner_on_failed" and not data.get("ignore_errors")
        ):
            failed.add(step)
    return [StepRun(step, seconds[step], step in failed) for step in STEPS if step in ran]


def _duration(data: Mapping[str, Any]) -> float:
    value = data.get("duration")
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return float(value)
    start, end = _time(data.get("start")), _time(data.get("end"))
    if start is None or end is None:
        return 0.0
    return max(0.0, (end - start).total_seconds())


def _time(text: Any) -> datetime | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def observe_pass(metrics: RunnerMetrics, events: Iterable[Mapping[str, Any]]) -> list[StepRun]:
    """One duration observation per step that ran, one error per step that failed."""
    steps = pass_steps(events)
    for run in steps:
        metrics.reconcile_duration.labels(sub_reconciler=run.step).observe(run.seconds)
        if run.failed:
            metrics.reconcile_errors.labels(
                sub_reconciler=run.step, condition_type=STEP_CONDITIONS[run.step]
            ).inc()
    return steps


# -- db-sync and db-purge Jobs -----------------------------------------------------------------

GLANCE_GROUP = "glance.openstack.c5c3.io"
INSTANCE_LABEL = "app.kubernetes.io/instance"
COMPONENT_LABEL = "app.kubernetes.io/component"
SUCCEEDED = "succeeded"
FAILED = "failed"
SYNC = "sync"
PURGE = "purge"


def job_facts(obj: Mapping[str, Any]) -> dict[str, Any]:
    """What the Job counting needs of a Job, for its compact cache entry: labels, creation
    time and the terminal condition (``{"result", "time"}``, None while it runs)."""
    meta = obj.get("metadata") or {}
    status = obj.get("status") or {}
    terminal = None
    for condition in status.get("conditions") or []:
        if condition.get("status") != "True":
            continue
        if condition.get("type") == "Complete":
            time = condition.get("lastTransitionTime") or status.get("completionTime")
            terminal = {"result": SUCCEEDED, "time": time}
            break
        if condition.get("type") == "Failed":
            terminal = {"result": FAILED, "time": condition.get("lastTransitionTime")}
            break
    return {
        "labels": dict(meta.get("labels") or {}),
        "created": meta.get("creationTimestamp"),
        "terminal": terminal,
    }


def job_owner(entry: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(SYNC|PURGE, glance name)`` of a compact Job entry; None for another Job.

    db-sync: the controller owner is a Glance. db-purge: the controller owner is the
    CronJob named ``db_purge_cronjob_name(<instance label>)``, or the Job carries the
    ``component: db-purge`` label with an instance label.
    """
    meta = entry.get("metadata") or {}
    labels = (entry.get("job") or {}).get("labels") or {}
    instance = str(labels.get(INSTANCE_LABEL) or "")
    for reference in meta.get("ownerReferences") or []:
        if not reference.get("controller"):
            continue
        group = str(reference.get("apiVersion") or "").rpartition("/")[0]
        if group == GLANCE_GROUP and reference.get("kind") == "Glance":
            return SYNC, str(reference.get("name") or "")
        if (
            reference.get("kind") == "CronJob"
            and instance
            and reference.get("name") == db_purge_cronjob_name(instance)
        ):
            return PURGE, instance
    if instance and labels.get(COMPONENT_LABEL) == "db-purge":
        return PURGE, instance
    return None


DB_COMPONENTS = ("db-sync", "db-expand", "db-migrate", "db-contract", "db-purge")
"""The ``component`` label of the database Job gauges: the Job's
``app.kubernetes.io/component`` (``{name}-db-sync`` and the upgrade phase Jobs carry their
suffix), ``db-sync`` for another Glance-owned Job, ``db-purge`` for a db-purge run."""


def _records(glance: Mapping[str, Any]) -> dict[str, str]:
    """The finished-Job records on a Glance: Job kind -> UID (``job_uid_suffix``)."""
    annotations = (glance.get("metadata") or {}).get("annotations") or {}
    return {
        suffix: str(value)
        for key, value in annotations.items()
        if (suffix := job_uid_suffix(key)) is not None and value
    }


def job_component(entry: Mapping[str, Any], which: str) -> str:
    """The ``component`` of a database Job entry that :func:`job_owner` placed (``which``)."""
    if which == PURGE:
        return "db-purge"
    labels = (entry.get("job") or {}).get("labels") or {}
    component = str(labels.get(COMPONENT_LABEL) or "")
    return component if component in DB_COMPONENTS[:-1] else "db-sync"


@dataclass(frozen=True)
class _JobState:
    glance: str
    namespace: str
    component: str
    which: str  # SYNC or PURGE: the series it counts in
    result: str | None  # SUCCEEDED, FAILED; None while it runs
    ended: datetime | None  # when it ended (else when it was created), to find the newest
    seconds: float | None  # its duration once it ended, when the times are known


class DbJobCounter:
    """Counts each db-sync and db-purge Job once, when its Glance records it, and keeps the
    gauges of the database Jobs that exist.

    ``seen(event, new, old, listed)`` takes the dependent informer's Job events and keeps
    what each Job is (its Glance, kind, result, duration). ``recorded(event, new, old,
    listed)`` takes the Glance informer's events: a pass that sees a finished Job records
    its UID on the Glance (``cobaltcore.c5c3.io/last-<kind>-job-uid``, as the reference's
    RecordJobTerminalState does), and a record that changes is what counts the Job - in
    ``db_purge_*`` for db-purge, in ``db_sync_*`` for db-sync and the upgrade phases, as
    the reference does. So a run is counted once however many passes and runners see it,
    and a Job that ended while no runner watched is counted when the next pass records
    it. A record already there in the Glance informer's first list (``listed``) was
    counted by the runner that saw it change; a record whose Job the Job informer has not
    shown finished yet is counted when it does. As in the reference, only the newest
    finished run a pass sees is recorded: two purge runs that both end between two passes
    count once.

    The gauges are state, not events, so the first list feeds them too: per Glance and
    :func:`job_component`, ``glance_operator_db_jobs_active`` counts the Jobs that have not
    finished, and ``glance_operator_db_job_failed`` is the result of the newest finished
    one (by its end time) among those that still exist. A (Glance, component) without a
    Job has no series.
    """

    def __init__(self, metrics: RunnerMetrics) -> None:
        self.metrics = metrics
        self.counted: set[str] = set()
        self.pending: dict[str, tuple[str, str]] = {}  # recorded UID -> its Glance's key
        self.jobs: dict[str, _JobState] = {}
        self._lock = threading.Lock()

    def seen(
        self,
        event: str,
        new: Mapping[str, Any] | None,
        old: Mapping[str, Any] | None,
        listed: bool = False,
    ) -> bool:
        """Handle one Job event; whether it counted a Job (recorded before it was shown
        finished)."""
        entry = new if new is not None else old
        if not entry or entry.get("kind") != "Job":
            return False
        uid = str((entry.get("metadata") or {}).get("uid") or "")
        if not uid:
            return False
        owner = job_owner(new) if new is not None else None
        with self._lock:
            if owner is None:
                self._track(uid, None)
                if new is None:
                    self.counted.discard(uid)
                return False
            which, glance = owner
            facts = new.get("job") or {}
            terminal = facts.get("terminal")
            self._track(
                uid,
                _JobState(
                    glance,
                    str((new.get("metadata") or {}).get("namespace") or ""),
                    job_component(new, which),
                    which,
                    terminal["result"] if terminal else None,
                    (_time(terminal.get("time")) or _time(facts.get("created")))
                    if terminal
                    else None,
                    _seconds_between(facts.get("created"), terminal.get("time"))
                    if terminal
                    else None,
                ),
            )
            if terminal is None or uid not in self.pending:
                return False
            del self.pending[uid]
            return self._count(uid)

    def recorded(
        self,
        event: str,
        new: Mapping[str, Any] | None,
        old: Mapping[str, Any] | None,
        listed: bool = False,
    ) -> list[str]:
        """Handle one Glance event; the UIDs of the Jobs its changed records counted."""
        entry = new if new is not None else old
        if not entry or entry.get("kind") != "Glance":
            return []
        meta = entry.get("metadata") or {}
        key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        with self._lock:
            if new is None:
                self.pending = {u: k for u, k in self.pending.items() if k != key}
                return []
            before = _records(old) if old is not None else {}
            counted = []
            for suffix, uid in _records(new).items():
                if listed or before.get(suffix) == uid or uid in self.counted:
                    continue
                state = self.jobs.get(uid)
                if state is None or state.result is None:
                    self.pending[uid] = key
                elif self._count(uid):
                    counted.append(uid)
            return counted

    def _count(self, uid: str) -> bool:
        """Count the finished Job ``uid`` in its series; lock held."""
        if uid in self.counted:
            return False
        self.counted.add(uid)
        job = self.jobs[uid]
        total, duration = (
            (self.metrics.db_sync_total, self.metrics.db_sync_duration)
            if job.which == SYNC
            else (self.metrics.db_purge_total, self.metrics.db_purge_duration)
        )
        total.labels(glance=job.glance, namespace=job.namespace, result=job.result).inc()
        if job.seconds is not None:
            duration.labels(glance=job.glance, namespace=job.namespace).observe(job.seconds)
        return True

    def _track(self, uid: str, state: _JobState | None) -> None:
        """Record (or, with None, drop) one Job and set its gauges again; lock held."""
        before = self.jobs.pop(uid, None)
        if state is not None:
            self.jobs[uid] = state
        for changed in {before, state} - {None}:
            self._set_gauges(changed.glance, changed.namespace, changed.component)

    def _set_gauges(self, glance: str, namespace: str, component: str) -> None:
        jobs = [
            job
            for job in self.jobs.values()
            if (job.glance, job.namespace, job.component) == (glance, namespace, component)
        ]
        labels = (glance, namespace, component)
        if not jobs:
            self.metrics.db_jobs_active.remove(*labels)
            self.metrics.db_job_failed.remove(*labels)
            return
        active = sum(1 for job in jobs if job.result is None)
        self.metrics.db_jobs_active.labels(*labels).set(active)
        finished = [job for job in jobs if job.result is not None]
        if not finished:
            self.metrics.db_job_failed.remove(*labels)
            return
        newest = max(finished, key=lambda job: job.ended.timestamp() if job.ended else 0.0)
        self.metrics.db_job_failed.labels(*labels).set(1 if newest.result == FAILED else 0)


def _seconds_between(start: Any, end: Any) -> float | None:
    begun, ended = _time(start), _time(end)
    if begun is None or ended is None:
        return None
    return max(0.0, (ended - begun).total_seconds())


# -- upgrade phases ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Phase:
    phase: str
    target: str
    since: float | None  # None: under way when first seen, start unknown


def _upgrade_fields(obj: Mapping[str, Any]) -> tuple[str, str, str]:
    status = obj.get("status") or {}
    return (
        str(status.get("upgradePhase") or ""),
        str(status.get("targetRelease") or ""),
        str(status.get("installedRelease") or ""),
    )


class UpgradePhaseTimer:
    """Times the phases of release upgrades from the Glance status the watch shows.

    ``seen(event, new, old, listed)`` takes the primary informer's Glance events (whole
    objects); ``clock`` is monotonic seconds. Returns the phase it observed, or None.
    """

    def __init__(self, metrics: RunnerMetrics, clock: Callable[[], float] = time.monotonic):
        self.metrics = metrics
        self.clock = clock
        self.current: dict[tuple[str, str], _Phase] = {}
        self._lock = threading.Lock()

    def seen(
        self,
        event: str,
        new: Mapping[str, Any] | None,
        old: Mapping[str, Any] | None,
        listed: bool = False,
    ) -> str | None:
        entry = new if new is not None else old
        if not entry or entry.get("kind") != "Glance":
            return None
        meta = entry.get("metadata") or {}
        key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        now = self.clock()
        gauge = self.metrics.upgrade_phase
        with self._lock:
            before = self.current.get(key)
            if new is None:
                self.current.pop(key, None)
                gauge.remove_by_labels({"glance": key[1], "namespace": key[0]})
                return None
            phase, target, installed = _upgrade_fields(new)
            if before is not None and before.phase == phase:
                return None
            # Never seen before (the first list, a new leader): when this phase began is
            # unknown, so it is not timed.
            since = now if before is not None and not listed else None
            self.current[key] = _Phase(phase, target, since)
            if before is not None and before.phase:
                gauge.remove(key[1], key[0], before.phase)
            if phase:
                gauge.labels(glance=key[1], namespace=key[0], phase=phase).set(1)
        if before is None or not before.phase or before.since is None:
            return None
        moved_on = NEXT_PHASE.get(before.phase) == phase or (
            before.phase == CONTRACTING and not phase and installed == before.target
        )
        if not moved_on:
            return None
        self.metrics.upgrade_phase_duration.labels(
            glance=key[1], namespace=key[0], phase=before.phase
        ).observe(max(0.0, now - before.since))
        return before.phase


# -- Glance conditions -------------------------------------------------------------------------

READY = "Ready"


def condition_statuses(obj: Mapping[str, Any]) -> dict[str, str]:
    """``type`` → ``True``/``False``/``Unknown`` of a Glance's ``status.conditions`` (a
    status that is none of the three counts as ``Unknown``)."""
    found: dict[str, str] = {}
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if not isinstance(condition, Mapping) or not condition.get("type"):
            continue
        status = str(condition.get("status") or "")
        found[str(condition["type"])] = status if status in CONDITION_STATUSES else "Unknown"
    return found


class GlanceConditions:
    """Feeds ``glance_operator_glance_ready`` and ``glance_operator_glance_condition``
    from the Glances the primary informer shows (whole objects, every event, the first
    list included: these are state). A deleted Glance's series go; so do those of a
    condition type the Glance no longer has."""

    def __init__(self, metrics: RunnerMetrics) -> None:
        self.metrics = metrics
        self.types: dict[tuple[str, str], set[str]] = {}
        self._lock = threading.Lock()

    def seen(
        self,
        event: str,
        new: Mapping[str, Any] | None,
        old: Mapping[str, Any] | None,
        listed: bool = False,
    ) -> None:
        entry = new if new is not None else old
        if not entry or entry.get("kind") != "Glance":
            return
        meta = entry.get("metadata") or {}
        namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        ready, condition = self.metrics.glance_ready, self.metrics.glance_condition
        with self._lock:
            if new is None:
                self.types.pop((namespace, name), None)
                ready.remove(name, namespace)
                condition.remove_by_labels({"glance": name, "namespace": namespace})
                return
            statuses = condition_statuses(new)
            ready.labels(glance=name, namespace=namespace).set(
                1 if statuses.get(READY) == "True" else 0
            )
            for gone in self.types.get((namespace, name), set()) - set(statuses):
                condition.remove_by_labels({"glance": name, "namespace": namespace, "type": gone})
            for type_, status in statuses.items():
                for value in CONDITION_STATUSES:
                    condition.labels(
                        glance=name, namespace=namespace, type=type_, status=value
                    ).set(1 if value == status else 0)
            self.types[(namespace, name)] = set(statuses)
