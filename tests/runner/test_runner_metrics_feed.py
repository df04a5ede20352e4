"""What feeds the ``glance_operator_*`` series: the steps of a pass read from its
ansible-runner events, the db-sync and db-purge Jobs counted once per UID, and the series
of a Glance dropped when its finalizer is released."""

from __future__ import annotations

import copy
import json
import threading
from pathlib import Path

import pytest
import yaml
from test_metrics import Page
from test_runner_controller import (
    FINALIZER,
    GLANCE_WATCH,
    KEY,
    STATS,
    StubClient,
    StubPlaybook,
    glance,
)

from runner import controller as ctl
from runner.endpoints.metrics import RunnerMetrics
from runner.endpoints.metrics_feed import (
    PASS_ROLE,
    STEP_ACTIONS,
    STEP_CONDITIONS,
    STEP_TASKS,
    STEPS,
    UNSTEPPED_TASKS,
    DbJobCounter,
    GlanceConditions,
    UpgradePhaseTimer,
    observe_pass,
    pass_steps,
    step_of,
)
from runner.kube.informer import ADDED, DELETED, MODIFIED
from runner.passes.extravars import RunOutcome
from runner.reconciler import Reconciler

ROOT = Path(__file__).resolve().parents[2]
EVENTS = json.loads((Path(__file__).parent / "data" / "glance_pass_events.json").read_text())[
    "runs"
]
FULL_PASS = EVENTS["glance pass 1 (first full pass)"]
RELEASE_PASS = EVENTS["glance pass of a Glance being deleted (releases the finalizer)"]
DURATION = "glance_operator_reconcile_duration_seconds"
ERRORS = "glance_operator_reconcile_errors_total"


# -- the step table ------------------------------------------------------------------------


def _tasks(path: Path) -> list[dict]:
    return [task for task in yaml.safe_load(path.read_text()) or [] if isinstance(task, dict)]


def _flatten(tasks: list[dict]) -> list[dict]:
    out = []
    for task in tasks:
        out.append(task)
        for section in ("block", "rescue", "always"):
            out += _flatten(task.get(section) or [])
    return out


def test_every_task_of_the_pass_role_is_in_the_step_table_or_named_as_no_step():
    tasks = [
        task
        for name in ("main.yml", "render.yml")
        for task in _flatten(_tasks(ROOT / "roles" / PASS_ROLE / "tasks" / name))
        if "block" not in task
    ]
    names = {task["name"] for task in tasks}
    actions = {key for task in tasks for key in task if key in STEP_ACTIONS}
    assert actions == set(STEP_ACTIONS)  # each module task is there, by its action
    assert set(STEP_TASKS) <= names, set(STEP_TASKS) - names  # no renamed step task
    by_action = {task["name"] for task in tasks if set(task) & set(STEP_ACTIONS)}
    assert names == by_action | set(STEP_TASKS) | UNSTEPPED_TASKS


def test_the_pass_runs_no_object_role_so_every_step_task_is_its_own():
    # The render step renders the object roles' templates in one task of glance_pass
    # (c5c3.glance.owned_objects); a role imported again would run tasks no step measures.
    tasks = [
        task
        for name in ("main.yml", "render.yml")
        for task in _flatten(_tasks(ROOT / "roles" / PASS_ROLE / "tasks" / name))
    ]
    roles = [
        task
        for task in tasks
        for key in ("ansible.builtin.import_role", "ansible.builtin.include_role")
        if key in task
    ]
    assert tasks and roles == []
    render = [name for name, step in STEP_TASKS.items() if step == "render"]
    assert render == ["Render the owned objects from the object roles' templates"]
    (task,) = [task for task in tasks if task.get("name") == render[0]]
    assert "c5c3.glance.owned_objects" in task["ansible.builtin.set_fact"]["glance_manifests"]


def test_real_events_map_to_the_steps():
    # role, task and action as a real pass's events carry them (ansible-runner gives no tags)
    steps = {}
    for event in FULL_PASS:
        data = event["event_data"]
        steps.setdefault(step_of(data), set()).add(data["task"])
    assert steps["gather"] == {"Read the Glance and what its pass needs"}
    assert steps["plan"] == {"Plan the pass (configuration, names, every owned object's data)"}
    assert steps["render"] == {"Render the owned objects from the object roles' templates"}
    assert steps["decide"] == {"Decide the writes, the status, the events and the requeue"}
    assert steps["apply"] == {"Apply the owned objects and the finalizer"}
    assert steps["report"] == {"Report the status and the events"}
    assert "Ask to be reconciled again" in steps[None]  # the playbook's, not the role's


def test_a_full_pass_observes_every_step_once_with_its_task_durations():
    steps = pass_steps(FULL_PASS)
    assert [s.step for s in steps] == list(STEPS)
    assert not any(s.failed for s in steps)
    gather = [e for e in FULL_PASS if step_of(e["event_data"]) == "gather"]
    assert steps[0].seconds == pytest.approx(sum(e["event_data"]["duration"] for e in gather))
    assert all(s.seconds > 0 for s in steps)


def test_skipped_steps_are_not_observed():
    # the pass of a Glance being deleted only releases the finalizer: no plan, render or report
    assert [s.step for s in pass_steps(RELEASE_PASS)] == ["gather", "decide", "apply"]


def test_a_backend_pass_has_no_glance_steps():
    backend = EVENTS["glancebackend pass with the parent glance_pass (workstation mode)"]
    own = [e for e in backend if e["event_data"].get("role") == "glancebackend_pass"]
    assert own and pass_steps(own) == []


def test_the_duration_falls_back_to_end_minus_start():
    event = {
        "event": "runner_on_ok",
        "event_data": {
            "role": PASS_ROLE,
            "task_action": "c5c3.glance.report",
            "start": "2026-11-30T05:00:00.250000",
            "end": "2026-11-30T05:00:01.000000",
        },
    }
    [step] = pass_steps([event])
    assert (step.step, step.seconds) == ("report", 0.75)


def failing(events: list[dict], task: str) -> list[dict]:
    """``events`` with ``task`` failed, and nothing after it but the recap (a run stops)."""
    out = []
    for event in copy.deepcopy(events):
        out.append(event)
        if event["event_data"]["task"] == task:
            event["event"] = "runner_on_failed"
            break
    return out


def test_a_failed_step_is_an_error_with_its_condition():
    metrics = RunnerMetrics()
    observe_pass(metrics, failing(FULL_PASS, "Apply the owned objects and the finalizer"))
    page = Page(metrics.exposition())
    assert page.value(ERRORS, sub_reconciler="apply", condition_type="Ready") == 1
    assert page.series(ERRORS) == [{"sub_reconciler": "apply", "condition_type": "Ready"}]
    assert page.value(f"{DURATION}_count", sub_reconciler="apply") == 1
    assert page.value(f"{DURATION}_count", sub_reconciler="gather") == 1
    assert {s["sub_reconciler"] for s in page.series(f"{DURATION}_count")} == set(STEPS) - {
        "report"
    }


def test_a_failed_gather_is_a_secrets_ready_error_and_an_ignored_failure_none():
    metrics = RunnerMetrics()
    observe_pass(metrics, failing(FULL_PASS, "Read the Glance and what its pass needs"))
    ignored = failing(FULL_PASS, "Plan the pass (configuration, names, every owned object's data)")
    ignored[-1]["event_data"]["ignore_errors"] = True
    observe_pass(metrics, ignored)
    page = Page(metrics.exposition())
    assert page.series(ERRORS) == [{"sub_reconciler": "gather", "condition_type": "SecretsReady"}]


def test_every_step_has_a_condition():
    assert set(STEP_CONDITIONS) == set(STEPS)


def test_the_observations_show_on_the_page():
    metrics = RunnerMetrics()
    observe_pass(metrics, FULL_PASS)
    observe_pass(metrics, RELEASE_PASS)
    page = Page(metrics.exposition())
    assert page.type[DURATION] == "histogram"
    assert page.value(f"{DURATION}_count", sub_reconciler="gather") == 2
    assert page.value(f"{DURATION}_count", sub_reconciler="render") == 1
    buckets = page.buckets(DURATION, sub_reconciler="gather")
    gathers = [pass_steps(run)[0].seconds for run in (FULL_PASS, RELEASE_PASS)]
    assert buckets["+Inf"] == 2
    for le in ("0.1", "0.5", "1", "2.5"):
        assert buckets[le] == sum(seconds <= float(le) for seconds in gathers), le


# -- db-sync and db-purge Jobs --------------------------------------------------------------

CREATED = "2026-11-30T05:00:00Z"


def job(
    name: str = "glance-db-sync",
    uid: str = "u1",
    state: str | None = "Complete",
    owner: tuple[str, str, str] = ("glance.openstack.c5c3.io/v1alpha1", "Glance", "glance"),
    labels: dict | None = None,
    ended: str = "2026-11-30T05:00:42Z",
) -> dict:
    api_version, kind, owner_name = owner
    conditions = []
    if state:
        conditions = [
            {"type": "SuccessCriteriaMet", "status": "True", "lastTransitionTime": ended},
            {"type": state, "status": "True", "lastTransitionTime": ended},
        ]
    return ctl.compact_dependent(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": name,
                "namespace": "openstack",
                "uid": uid,
                "resourceVersion": "5",
                "creationTimestamp": CREATED,
                "labels": labels
                or {
                    "app.kubernetes.io/instance": "glance",
                    "app.kubernetes.io/managed-by": "glance-operator",
                },
                "ownerReferences": [
                    {
                        "apiVersion": api_version,
                        "kind": kind,
                        "name": owner_name,
                        "controller": True,
                    }
                ],
            },
            "spec": {"template": {"spec": {"containers": [{"name": "x", "image": "y"}]}}},
            "status": {"conditions": conditions},
        }
    )


PURGE_OWNER = ("batch/v1", "CronJob", "glance-db-purge")
SYNC = "glance_operator_db_sync_total"
PURGE = "glance_operator_db_purge_total"
LABELS = {"glance": "glance", "namespace": "openstack"}


def test_a_job_entry_keeps_its_labels_creation_and_end_and_no_spec():
    entry = job(state="Failed")
    assert entry["job"] == {
        "labels": {
            "app.kubernetes.io/instance": "glance",
            "app.kubernetes.io/managed-by": "glance-operator",
        },
        "created": CREATED,
        "terminal": {"result": "failed", "time": "2026-11-30T05:00:42Z"},
    }
    assert "spec" not in entry and job(state=None)["job"]["terminal"] is None


def glance_recording(**uids: str) -> dict:
    """The Glance with the finished-Job records ``kind=uid`` (``db_purge`` for db-purge)."""
    annotations = {
        f"cobaltcore.c5c3.io/last-{kind.replace('_', '-')}-job-uid": uid
        for kind, uid in uids.items()
    }
    annotations["kubectl.kubernetes.io/last-applied-configuration"] = "{}"
    return {
        "apiVersion": "glance.openstack.c5c3.io/v1alpha1",
        "kind": "Glance",
        "metadata": {"name": "glance", "namespace": "openstack", "annotations": annotations},
    }


def test_a_db_sync_job_is_counted_once_when_its_glance_records_it():
    metrics = RunnerMetrics()
    counter = DbJobCounter(metrics)
    running = job(state=None)
    assert not counter.seen(ADDED, running, None)
    assert not counter.seen(MODIFIED, job(), running)  # ended, not recorded yet
    assert Page(metrics.exposition()).series(SYNC) == []
    before = glance_recording()
    assert counter.recorded(MODIFIED, glance_recording(db_sync="u1"), before) == ["u1"]
    recorded = glance_recording(db_sync="u1")
    assert counter.recorded(MODIFIED, recorded, recorded) == []  # a status write after it
    assert not counter.seen(MODIFIED, job(), job())
    page = Page(metrics.exposition())
    assert page.value(SYNC, result="succeeded", **LABELS) == 1
    assert page.value("glance_operator_db_sync_duration_seconds_sum", **LABELS) == 42
    assert page.buckets("glance_operator_db_sync_duration_seconds", **LABELS)["60"] == 1
    assert page.series(PURGE) == []


def test_a_record_seen_before_its_job_is_shown_finished_counts_when_it_is():
    metrics = RunnerMetrics()
    counter = DbJobCounter(metrics)
    running = job(state=None)
    counter.seen(ADDED, running, None)
    assert counter.recorded(MODIFIED, glance_recording(db_sync="u1"), glance_recording()) == []
    assert counter.pending == {"u1": ("openstack", "glance")}
    assert counter.seen(MODIFIED, job(), running)
    assert counter.pending == {}
    assert Page(metrics.exposition()).value(SYNC, result="succeeded", **LABELS) == 1


def test_a_recreated_job_is_a_new_uid_and_a_deleted_one_is_forgotten():
    metrics = RunnerMetrics()
    counter = DbJobCounter(metrics)
    counter.seen(ADDED, job(state="Failed"), None)
    counter.recorded(MODIFIED, glance_recording(db_sync="u1"), glance_recording())
    counter.seen(DELETED, None, job(state="Failed"))
    assert counter.counted == set()
    counter.seen(ADDED, job(uid="u2"), None)
    counter.recorded(MODIFIED, glance_recording(db_sync="u2"), glance_recording(db_sync="u1"))
    page = Page(metrics.exposition())
    assert page.value(SYNC, result="failed", **LABELS) == 1
    assert page.value(SYNC, result="succeeded", **LABELS) == 1
    assert counter.counted == {"u2"}


def test_a_db_purge_run_is_told_from_a_db_sync():
    metrics = RunnerMetrics()
    counter = DbJobCounter(metrics)
    counter.seen(ADDED, job("glance-db-purge-29400000", "p1", owner=PURGE_OWNER), None)
    counter.seen(ADDED, job("glance-db-purge-29400060", "p2", "Failed", owner=PURGE_OWNER), None)
    first, second = glance_recording(db_purge="p1"), glance_recording(db_purge="p2")
    assert counter.recorded(MODIFIED, first, glance_recording()) == ["p1"]
    assert counter.recorded(MODIFIED, second, first) == ["p2"]
    page = Page(metrics.exposition())
    assert page.value(PURGE, result="succeeded", **LABELS) == 1
    assert page.value(PURGE, result="failed", **LABELS) == 1
    assert page.value("glance_operator_db_purge_duration_seconds_count", **LABELS) == 2
    assert page.series(SYNC) == []


def test_an_upgrade_phase_job_counts_as_db_sync_as_in_the_reference():
    metrics = RunnerMetrics()
    counter = DbJobCounter(metrics)
    counter.seen(ADDED, job("glance-db-expand", "e1", labels=component("db-expand")), None)
    assert counter.recorded(MODIFIED, glance_recording(db_expand="e1"), glance_recording()) == [
        "e1"
    ]
    assert Page(metrics.exposition()).value(SYNC, result="succeeded", **LABELS) == 1


def test_other_jobs_are_not_counted():
    counter = DbJobCounter(RunnerMetrics())
    foreign_cron = ("batch/v1", "CronJob", "backup")
    assert not counter.seen(ADDED, job("backup-1", "b1", owner=foreign_cron), None)
    assert not counter.seen(ADDED, job("x", "b2", owner=("apps/v1", "ReplicaSet", "x")), None)
    assert counter.recorded(MODIFIED, glance_recording(db_sync="b1"), glance_recording()) == []
    assert counter.counted == set()


def test_a_record_in_the_first_list_was_counted_and_a_later_one_is():
    """A new leader: the record already on the Glance was counted by the runner that saw
    it change; a Job that ended while no runner watched is counted when a pass records it."""
    metrics = RunnerMetrics()
    counter = DbJobCounter(metrics)
    counter.seen(ADDED, job(), None, listed=True)
    counter.seen(ADDED, job(uid="u2", state="Failed"), None, listed=True)
    listed = glance_recording(db_sync="u1")
    assert counter.recorded(ADDED, listed, None, listed=True) == []
    assert Page(metrics.exposition()).series(SYNC) == []
    assert counter.recorded(MODIFIED, glance_recording(db_sync="u2"), listed) == ["u2"]
    assert Page(metrics.exposition()).value(SYNC, result="failed", **LABELS) == 1


def test_a_deleted_glance_s_pending_records_go_with_it():
    counter = DbJobCounter(RunnerMetrics())
    counter.recorded(MODIFIED, glance_recording(db_purge="p9"), glance_recording())
    assert counter.pending == {"p9": ("openstack", "glance")}
    counter.recorded(DELETED, None, glance_recording(db_purge="p9"))
    assert counter.pending == {}


def test_a_job_that_ends_before_it_began_by_the_clocks_takes_zero_seconds():
    metrics = RunnerMetrics()
    counter = DbJobCounter(metrics)
    counter.seen(ADDED, job(ended="2026-11-30T00:00:00Z"), None)
    counter.recorded(MODIFIED, glance_recording(db_sync="u1"), glance_recording())
    page = Page(metrics.exposition())
    assert page.value("glance_operator_db_sync_duration_seconds_sum", **LABELS) == 0


# -- a gone Glance's series ----------------------------------------------------------------


def test_releasing_the_finalizer_drops_the_glance_s_series():
    released = []
    client = StubClient(glance(deletionTimestamp="2026-11-30T05:00:00Z", finalizers=[FINALIZER]))
    playbook = StubPlaybook(RunOutcome(None, (), None))
    reconciler = Reconciler(GLANCE_WATCH, client, playbook, 0.0, on_released=released.append)
    reconciler.reconcile(KEY, threading.Event())
    assert released == []  # the deletion pass failed (no recap): the finalizer stays
    playbook.outcome = RunOutcome(STATS, (), None)
    reconciler.reconcile(KEY, threading.Event())
    assert released == [KEY]


# -- upgrade phases ------------------------------------------------------------------------

PHASE_DURATION = "glance_operator_upgrade_phase_duration_seconds"


def glance_at(phase: str = "", installed: str = "2026.1", target: str = "") -> dict:
    status = {"installedRelease": installed}
    if phase:
        status.update(upgradePhase=phase, targetRelease=target or "2026.2")
    return {
        "apiVersion": "glance.openstack.c5c3.io/v1alpha1",
        "kind": "Glance",
        "metadata": {"name": "glance", "namespace": "openstack", "uid": "g1"},
        "status": status,
    }


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def walk(timer: UpgradePhaseTimer, clock: Clock, steps) -> list:
    """Feed (seconds later, Glance) MODIFIED events; what each one observed."""
    observed, previous = [], None
    for later, obj in steps:
        clock.now += later
        observed.append(timer.seen(MODIFIED, obj, previous))
        previous = obj
    return observed


def test_each_phase_of_an_upgrade_is_timed_from_the_status_transitions():
    metrics, clock = RunnerMetrics(), Clock()
    timer = UpgradePhaseTimer(metrics, clock)
    timer.seen(ADDED, glance_at(), None, listed=True)
    observed = walk(
        timer,
        clock,
        [
            (5, glance_at("Expanding")),
            (3, glance_at("Expanding")),  # another write in the same phase
            (40, glance_at("Migrating")),
            (70, glance_at("RollingUpdate")),
            (200, glance_at("Contracting")),
            (30, glance_at(installed="2026.2")),
        ],
    )
    assert observed == [None, None, "Expanding", "Migrating", "RollingUpdate", "Contracting"]
    page = Page(metrics.exposition())
    assert page.type[PHASE_DURATION] == "histogram"
    for phase, seconds in (
        ("Expanding", 43),
        ("Migrating", 70),
        ("RollingUpdate", 200),
        ("Contracting", 30),
    ):
        labels = {**LABELS, "phase": phase}
        assert page.value(f"{PHASE_DURATION}_sum", **labels) == seconds
        assert page.value(f"{PHASE_DURATION}_count", **labels) == 1


def test_a_phase_under_way_when_first_seen_or_ended_by_an_abort_is_not_timed():
    metrics, clock = RunnerMetrics(), Clock()
    timer = UpgradePhaseTimer(metrics, clock)
    # a new leader lists the Glance in the middle of Migrating: its start is unknown
    timer.seen(ADDED, glance_at("Migrating"), None, listed=True)
    assert walk(timer, clock, [(60, glance_at("RollingUpdate")), (10, glance_at())]) == [
        None,
        None,  # back without the phase and installedRelease unchanged: an abort
    ]
    assert timer.seen(DELETED, None, glance_at()) is None
    page = Page(metrics.exposition())
    assert [key for key in page.samples if key[0] == f"{PHASE_DURATION}_count"] == []


def test_a_glance_s_phase_series_go_with_its_other_series():
    metrics, clock = RunnerMetrics(), Clock()
    timer = UpgradePhaseTimer(metrics, clock)
    timer.seen(ADDED, glance_at(), None, listed=True)
    walk(timer, clock, [(1, glance_at("Expanding")), (2, glance_at("Migrating"))])
    page = Page(metrics.exposition())
    assert len(page.series(f"{PHASE_DURATION}_count")) == 1
    assert page.series("glance_operator_upgrade_phase") == [
        {"glance": "glance", "namespace": "openstack", "phase": "Migrating"}
    ]
    metrics.forget_glance("glance", "openstack")
    page = Page(metrics.exposition())
    assert page.series(f"{PHASE_DURATION}_count") == []
    assert page.series("glance_operator_upgrade_phase") == []


# -- the gauges of what the watches show --------------------------------------------------------

ACTIVE = "glance_operator_db_jobs_active"
FAILED_GAUGE = "glance_operator_db_job_failed"


def gauges(metrics: RunnerMetrics, name: str) -> dict[str, float]:
    """``component`` → value of one database Job gauge of the Glance ``openstack/glance``."""
    page = Page(metrics.exposition())
    return {
        labels["component"]: page.value(name, **labels)
        for labels in page.series(name)
        if labels["glance"] == "glance" and labels["namespace"] == "openstack"
    }


def component(name: str) -> dict:
    return {
        "app.kubernetes.io/instance": "glance",
        "app.kubernetes.io/component": name,
    }


def test_running_database_jobs_are_counted_per_component_and_go_when_they_end():
    metrics = RunnerMetrics()
    counter = DbJobCounter(metrics)
    sync = job(state=None, labels=component("db-sync"))
    expand = job("glance-db-expand", "u2", state=None, labels=component("db-expand"))
    purge = job("glance-db-purge-1", "u3", state=None, owner=PURGE_OWNER)
    for entry in (sync, expand, purge):
        counter.seen(ADDED, entry, None)
    assert gauges(metrics, ACTIVE) == {"db-sync": 1, "db-expand": 1, "db-purge": 1}
    assert gauges(metrics, FAILED_GAUGE) == {}  # none has finished
    counter.seen(MODIFIED, job(labels=component("db-sync")), sync)
    assert gauges(metrics, ACTIVE) == {"db-sync": 0, "db-expand": 1, "db-purge": 1}
    assert gauges(metrics, FAILED_GAUGE) == {"db-sync": 0}
    counter.seen(DELETED, None, expand)
    assert "db-expand" not in gauges(metrics, ACTIVE)


def test_the_failed_gauge_follows_the_newest_finished_job_that_still_exists():
    metrics = RunnerMetrics()
    counter = DbJobCounter(metrics)
    old = job("glance-db-purge-1", "u1", "Complete", PURGE_OWNER, ended="2026-11-30T05:00:42Z")
    new = job("glance-db-purge-2", "u2", "Failed", PURGE_OWNER, ended="2026-12-01T05:00:42Z")
    # In the informer's first list: not counted (a previous leader did), but shown.
    counter.seen(ADDED, new, None, listed=True)
    counter.seen(ADDED, old, None, listed=True)
    assert gauges(metrics, FAILED_GAUGE) == {"db-purge": 1}
    assert Page(metrics.exposition()).series(PURGE) == []
    counter.seen(DELETED, None, new)  # the failed one is garbage-collected
    assert gauges(metrics, FAILED_GAUGE) == {"db-purge": 0}
    counter.seen(DELETED, None, old)
    assert gauges(metrics, FAILED_GAUGE) == {} and gauges(metrics, ACTIVE) == {}


def test_a_job_of_no_glance_feeds_no_gauge():
    metrics = RunnerMetrics()
    counter = DbJobCounter(metrics)
    other = job(owner=("apps/v1", "Deployment", "x"), labels={"app": "x"}, state="Failed")
    counter.seen(ADDED, other, None)
    assert gauges(metrics, ACTIVE) == {} and gauges(metrics, FAILED_GAUGE) == {}


def glance_with(*conditions: tuple[str, str]) -> dict:
    obj = glance()
    obj["status"] = {"conditions": [{"type": t, "status": s} for t, s in conditions]}
    return obj


def test_the_glance_conditions_are_shown_as_gauges_and_go_with_the_glance():
    metrics = RunnerMetrics()
    shown = GlanceConditions(metrics)
    shown.seen(ADDED, glance_with(), None, listed=True)  # no status yet: not Ready
    page = Page(metrics.exposition())
    assert page.value("glance_operator_glance_ready", **LABELS) == 0
    assert page.series("glance_operator_glance_condition") == []
    shown.seen(MODIFIED, glance_with(("Ready", "False"), ("DatabaseReady", "Maybe")), glance_with())
    page = Page(metrics.exposition())
    assert page.value("glance_operator_glance_ready", **LABELS) == 0
    condition = "glance_operator_glance_condition"
    assert page.value(condition, **LABELS, type="Ready", status="False") == 1
    assert page.value(condition, **LABELS, type="Ready", status="True") == 0
    assert page.value(condition, **LABELS, type="DatabaseReady", status="Unknown") == 1
    shown.seen(MODIFIED, glance_with(("Ready", "True")), None)
    page = Page(metrics.exposition())
    assert page.value("glance_operator_glance_ready", **LABELS) == 1
    assert {s["type"] for s in page.series(condition)} == {"Ready"}  # DatabaseReady went
    shown.seen(DELETED, None, glance_with(("Ready", "True")))
    page = Page(metrics.exposition())
    assert page.series("glance_operator_glance_ready") == page.series(condition) == []
