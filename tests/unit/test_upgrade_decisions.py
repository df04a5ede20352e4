"""The release upgrade's decisions (reference-spec §2.3 steps 5-6, §4.13), table by table."""

from __future__ import annotations

import pytest

from ansible_collections.c5c3.glance.plugins.module_utils.desired import conditions as c
from ansible_collections.c5c3.glance.plugins.module_utils.desired import upgrade as u


@pytest.mark.parametrize(
    ("installed", "target", "sequential"),
    [
        ("2025.2", "2026.1", True),
        ("2026.1", "2026.2", True),
        ("2026.1-p1", "2026.2", True),  # a patch suffix does not change the series
        ("2025.2", "2026.2", False),
        ("2026.1", "2027.1", False),
        ("2026.2", "2026.1", False),
        ("2026.2", "2026.2", False),
        ("2026.1", "grizzly", False),
    ],
)
def test_only_the_next_release_is_sequential(installed, target, sequential):
    assert u.is_sequential(installed, target) is sequential


@pytest.mark.parametrize(
    ("installed", "target", "reason", "says"),
    [
        ("2025.2", "2026.1", None, None),
        ("2026.1", "2026.2", None, None),
        ("2026.2", "2027.1", None, None),
        (
            "2026.2",
            "2026.1",
            c.DOWNGRADE_NOT_SUPPORTED,
            "downgrade from 2026.2 to 2026.1 is not supported",
        ),
        ("2026.1", "2025.2", c.DOWNGRADE_NOT_SUPPORTED, "set spec.openStackRelease back to 2026.1"),
        ("2025.2", "2026.2", c.UPGRADE_PATH_INVALID, "the next release after 2025.2 is 2026.1"),
        ("2026.2", "2027.2", c.UPGRADE_PATH_INVALID, "the next release after 2026.2 is 2027.1"),
        (
            "2025.2",
            "2026.2",
            c.UPGRADE_PATH_INVALID,
            "upgrade from 2025.2 to 2026.2 is not sequential; only sequential upgrades are supported",
        ),
        (
            "grizzly",
            "2026.2",
            c.VERSION_PARSE_ERROR,
            'failed to parse installed release "grizzly": invalid release format "grizzly": expected YYYY.N',
        ),
        (
            "2026.1",
            "2026.9",
            c.VERSION_PARSE_ERROR,
            'failed to parse target release "2026.9": invalid release minor version 9 in "2026.9": must be 1 or 2',
        ),
        (
            "2026.1",
            "x.2",
            c.VERSION_PARSE_ERROR,
            'invalid release year in "x.2": strconv.Atoi: parsing "x": invalid syntax',
        ),
        (
            "2026.1",
            "2009.2",
            c.VERSION_PARSE_ERROR,
            'invalid release year 2009 in "2009.2": must be >= 2010',
        ),
    ],
)
def test_path_problem_names_the_rule_the_path_breaks(installed, target, reason, says):
    problem = u.path_problem(installed, target)
    if reason is None:
        assert problem is None
        return
    assert problem is not None and problem[0] == reason
    assert says in problem[1]


def status(installed="", target="", phase=""):
    return {"installedRelease": installed, "targetRelease": target, "upgradePhase": phase}


@pytest.mark.parametrize(
    ("release", "stored", "action", "phase", "job", "check_image"),
    [
        # steady state and fresh install: db-sync
        ("2026.2", status(), u.SYNC, "", "db_sync_job", True),
        ("2026.2", status("2026.2"), u.SYNC, "", "db_sync_job", True),
        # initiation: the first phase's Job is what follows
        ("2026.2", status("2026.1"), u.INITIATE, "Expanding", "db_expand_job", True),
        ("2026.1", status("2025.2"), u.INITIATE, "Expanding", "db_expand_job", True),
        # refused paths: no database Job at all
        ("2026.1", status("2026.2"), u.REFUSE, "", None, True),
        ("2026.2", status("2025.2"), u.REFUSE, "", None, True),
        ("2026.2", status("bogus"), u.REFUSE, "", None, True),
        # an active upgrade: the phase's Job, none while rolling
        ("2026.2", status("2026.1", "2026.2", "Expanding"), u.PHASE, "Expanding", "db_expand_job", True),
        ("2026.2", status("2026.1", "2026.2", "Migrating"), u.PHASE, "Migrating", "db_migrate_job", True),
        ("2026.2", status("2026.1", "2026.2", "RollingUpdate"), u.PHASE, "RollingUpdate", None, True),
        ("2026.2", status("2026.1", "2026.2", "Contracting"), u.PHASE, "Contracting", "db_contract_job", True),
        # back at the installed release: abort, then db-sync; no lockstep check
        ("2026.1", status("2026.1", "2026.2", "Migrating"), u.ABORT, "Migrating", "db_sync_job", False),
        # a moved target
        ("2027.1", status("2026.1", "2026.2", "Expanding"), u.TARGET_CHANGED, "Expanding", None, True),
    ],
)  # fmt: skip
def test_database_step_and_job(release, stored, action, phase, job, check_image):
    step = u.database_step(release, stored)
    assert (step.action, step.phase, step.check_image) == (action, phase, check_image)
    assert u.database_job(release, stored) == job


def test_a_moved_target_names_both_ways_out():
    step = u.database_step("2027.1", status("2026.1", "2026.2", "Migrating"))
    assert step.reason == c.UPGRADE_TARGET_CHANGED
    assert step.message.startswith(
        "Spec release changed to 2027.1 during active upgrade 2026.1 → 2026.2; complete or roll "
        "back the current upgrade first"
    )
    assert "to 2026.2 to finish it or back to 2026.1 to abort it" in step.message
    assert u.refused_event(step) == {
        "type": "Warning",
        "reason": "UpgradeTargetChanged",
        "message": step.message,
    }


def test_initiation_reports_the_reference_message_and_event():
    step = u.database_step("2026.2", status("2026.1"))
    cond, event = u.initiated(step)
    assert cond == c.condition(
        c.DATABASE_READY,
        False,
        "ExpandInProgress",
        "Upgrade detected: 2026.1 → 2026.2 (phase: Expanding)",
    )
    assert (event["type"], event["reason"]) == ("Normal", "UpgradeInitiated")


STEP = u.Step(u.PHASE, "", "2026.1", "2026.2")


@pytest.mark.parametrize(
    ("phase", "state", "reason", "status_", "event", "next_phase", "now"),
    [
        ("Expanding", u.RUNNING, "ExpandInProgress", "False", None, None, False),
        ("Expanding", u.FAILED, "ExpandFailed", "False", ("Warning", "ExpandFailed"), None, False),
        ("Expanding", u.COMPLETE, "MigrateInProgress", "False", ("Normal", "ExpandComplete"), "Migrating", True),
        ("Migrating", u.RUNNING, "MigrateInProgress", "False", None, None, False),
        ("Migrating", u.FAILED, "MigrateFailed", "False", ("Warning", "MigrateFailed"), None, False),
        ("Migrating", u.COMPLETE, "UpgradeRollingUpdate", "False", ("Normal", "MigrateComplete"), "RollingUpdate", True),
        ("Contracting", u.RUNNING, "ContractInProgress", "False", None, None, False),
        ("Contracting", u.FAILED, "ContractFailed", "False", ("Warning", "ContractFailed"), None, False),
        ("Contracting", u.COMPLETE, "DatabaseSynced", "True", ("Normal", "UpgradeComplete"), "", True),
    ],
)  # fmt: skip
def test_phase_outcome(phase, state, reason, status_, event, next_phase, now):
    outcome = u.phase_outcome(phase, state, STEP, "glance-db-x", "BackoffLimitExceeded: boom")
    assert (outcome.condition["reason"], outcome.condition["status"]) == (reason, status_)
    assert (outcome.event and (outcome.event["type"], outcome.event["reason"])) == event
    assert (outcome.next_phase, outcome.requeue_now) == (next_phase, now)
    if state == u.FAILED:
        assert "BackoffLimitExceeded: boom" in outcome.condition["message"]
        assert "delete the Job" in outcome.condition["message"]


def test_the_reference_messages_of_rolling_update_and_upgrade_complete():
    migrated = u.phase_outcome("Migrating", u.COMPLETE, STEP, "glance-db-migrate")
    assert migrated.condition["message"] == (
        "Migrate complete, waiting for Deployment rollout: 2026.1 → 2026.2"
    )
    rolling = u.rolling_update(STEP)
    assert rolling["message"] == "Waiting for Deployment rollout: 2026.1 → 2026.2"
    expanded = u.phase_outcome("Expanding", u.COMPLETE, STEP, "glance-db-expand")
    assert expanded.condition["message"] == "Expand complete, starting migrate: 2026.1 → 2026.2"
    running = u.phase_outcome("Contracting", u.RUNNING, STEP, "glance-db-contract")
    assert running.condition["message"].startswith("Contract phase running: 2026.1 → 2026.2")
    failed = u.phase_outcome("Migrating", u.FAILED, STEP, "glance-db-migrate", "boom")
    assert failed.condition["message"].startswith("Migrate job glance-db-migrate failed: boom")
    done = u.phase_outcome("Contracting", u.COMPLETE, STEP, "glance-db-contract")
    assert done.condition["message"] == "Database schema is up to date (upgraded 2026.1 → 2026.2)"
    with pytest.raises(ValueError, match="runs no Job"):
        u.phase_outcome("RollingUpdate", u.COMPLETE, STEP, "x")


def deployment(generation=2, observed=2, replicas=3, updated=3, ready=3, total=3):
    return {
        "metadata": {"generation": generation},
        "spec": {"replicas": replicas},
        "status": {
            "observedGeneration": observed,
            "updatedReplicas": updated,
            "readyReplicas": ready,
            "replicas": total,
        },
    }


@pytest.mark.parametrize(
    ("deploy", "converged"),
    [
        (deployment(), True),
        (deployment(observed=1), False),  # the controller has not seen the new template
        (deployment(updated=2), False),
        (deployment(ready=2), False),
        (deployment(total=4), False),  # an old pod is still there
        (deployment(replicas=None, updated=1, ready=1, total=1), True),  # unset: 1
        (None, False),
    ],
)
def test_the_rollout_has_converged_only_when_every_count_is_the_desired_one(deploy, converged):
    assert u.rollout_converged(deploy) is converged


def test_an_abort_during_contract_warns_that_the_old_schema_may_be_gone():
    calm = u.aborted(u.Step(u.ABORT, "Migrating", "2026.1", "2026.2"))
    late = u.aborted(u.Step(u.ABORT, "Contracting", "2026.1", "2026.2"))
    assert (calm["type"], calm["reason"]) == ("Normal", "UpgradeAborted")
    assert "contract phase had started" not in calm["message"]
    assert "contract phase had started" in late["message"]
