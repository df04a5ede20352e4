"""The release upgrade through the playbooks, on an API server (reference-spec §4.13, §7.3).

A Glance converged on 2026.1 is patched to 2026.2 with its image and walks every phase,
pass by pass: ``ApiEnv.settle`` plays the Job controller (phase Jobs complete or fail) and
the Deployment controller (the rollout), and between them the tests set a Deployment
status that is ready but not yet converged, to show that contract waits for the whole
rollout. The refused paths, the abort, a moved target and a failed phase Job follow.
"""

from __future__ import annotations

import pytest
from support.api_env import sample_documents

PHASE_JOBS = ("glance-db-expand", "glance-db-migrate", "glance-db-contract")
GLANCE_MANAGE = "glance-manage --config-dir /etc/glance/glance-api.conf.d/"


def release(version: str) -> dict:
    return {"spec": {"openStackRelease": version, "image": {"tag": version}}}


def converged_on(api, version: str) -> None:
    docs = sample_documents()
    docs[0]["spec"]["openStackRelease"] = version
    docs[0]["spec"]["image"]["tag"] = version
    api.create_all(docs)
    for _ in range(8):
        run = api.glance_pass()
        if run.step_actions == ["c5c3.glance.gather"]:
            break
        api.settle()
    else:
        raise AssertionError("no steady state")
    assert status(api)["installedRelease"] == version


def status(api) -> dict:
    return api.get("Glance", "glance").get("status") or {}


def phase(api) -> tuple[str | None, str | None, str | None]:
    s = status(api)
    return s.get("installedRelease"), s.get("targetRelease"), s.get("upgradePhase")


def database(api) -> tuple[str, str, str]:
    cond = api.condition("Glance", "glance", "DatabaseReady")
    return cond.get("status"), cond.get("reason"), cond.get("message")


class Events:
    """The Events on the Glance, read as they come."""

    def __init__(self, api) -> None:
        self.api = api
        self.seen: set[str] = {e["metadata"]["name"] for e in api.list("Event")}

    def new(self) -> list[tuple[str, str]]:
        fresh = [e for e in self.api.list("Event") if e["metadata"]["name"] not in self.seen]
        self.seen |= {e["metadata"]["name"] for e in fresh}
        fresh.sort(key=lambda e: e["metadata"]["name"])
        return [(e["type"], e["reason"]) for e in fresh]


def image(obj: dict) -> str:
    return obj["spec"]["template"]["spec"]["containers"][0]["image"]


def set_rollout(api, updated: int, ready: int, total: int) -> None:
    """A Deployment that is Available with enough ready pods but has not converged."""
    deploy = api.get("Deployment", "glance")
    replicas = deploy["spec"]["replicas"]
    api.client.patch(
        "apps/v1",
        "Deployment",
        "glance",
        api.namespace,
        {
            "status": {
                "observedGeneration": deploy["metadata"]["generation"],
                "replicas": total,
                "updatedReplicas": updated,
                "readyReplicas": ready,
                "availableReplicas": min(ready, replicas),
                "unavailableReplicas": max(0, total - ready),
                "conditions": [
                    {
                        "type": "Available",
                        "status": "True",
                        "reason": "MinimumReplicasAvailable",
                        "message": "Deployment has minimum availability.",
                        "lastUpdateTime": "2026-03-01T00:00:00Z",
                        "lastTransitionTime": "2026-03-01T00:00:00Z",
                    }
                ],
            }
        },
        subresource="status",
    )


def test_an_upgrade_walks_every_phase_and_contracts_only_after_the_rollout(api):
    converged_on(api, "2026.1")
    events = Events(api)
    api.merge_patch("Glance", "glance", release("2026.2"))

    start = api.glance_pass()
    assert start.requeue_after == 0
    assert phase(api) == ("2026.1", "2026.2", "Expanding")
    assert database(api) == (
        "False",
        "ExpandInProgress",
        "Upgrade detected: 2026.1 → 2026.2 (phase: Expanding)",
    )
    assert events.new() == [("Normal", "UpgradeInitiated")]

    expand = api.glance_pass()
    assert expand.requeue_after == 30
    job = api.get("Job", "glance-db-expand")
    assert image(job) == "ghcr.io/c5c3/glance:2026.2"
    assert job["spec"]["template"]["spec"]["containers"][0]["command"] == [
        "/bin/sh",
        "-eu",
        "-c",
        f"{GLANCE_MANAGE} db expand",
    ]
    assert job["spec"]["backoffLimit"] == 4
    assert job["metadata"]["ownerReferences"][0]["kind"] == "Glance"
    assert image(api.get("Deployment", "glance")) == "ghcr.io/c5c3/glance:2026.1"
    assert image(api.get("Job", "glance-db-sync")) == "ghcr.io/c5c3/glance:2026.1"
    api.settle()
    api.glance_pass()
    assert phase(api)[2] == "Migrating"
    assert database(api)[1] == "MigrateInProgress"
    assert events.new() == [("Normal", "ExpandComplete")]

    api.glance_pass()
    migrate = api.get("Job", "glance-db-migrate")
    assert migrate["spec"]["template"]["spec"]["containers"][0]["command"][-1] == (
        f"{GLANCE_MANAGE} db migrate"
    )
    api.settle()
    api.glance_pass()
    assert phase(api)[2] == "RollingUpdate"
    assert database(api) == (
        "False",
        "UpgradeRollingUpdate",
        "Migrate complete, waiting for Deployment rollout: 2026.1 → 2026.2",
    )
    assert events.new() == [("Normal", "MigrateComplete")]

    # RollingUpdate: the Deployment rolls to the new image; contract waits for all of it
    api.glance_pass()
    assert image(api.get("Deployment", "glance")) == "ghcr.io/c5c3/glance:2026.2"
    for updated, ready, total in ((1, 3, 4), (3, 3, 4)):
        set_rollout(api, updated, ready, total)
        wait = api.glance_pass()
        assert wait.requeue_after == 10
        cond = api.condition("Glance", "glance", "DeploymentReady")
        assert (cond["status"], cond["reason"], cond["message"]) == (
            "False",
            "WaitingForDeployment",
            "Waiting for the upgraded image to finish rolling out before contracting the "
            "database schema",
        )
        assert phase(api)[2] == "RollingUpdate"
        assert api.get("Job", "glance-db-contract") is None
    set_rollout(api, 3, 3, 3)  # every pod updated and ready, the old ones gone
    flip = api.glance_pass()
    assert flip.requeue_after == 0
    assert phase(api)[2] == "Contracting"
    assert api.condition("Glance", "glance", "DeploymentReady")["status"] == "True"
    assert events.new() == [("Normal", "DeploymentRolloutComplete")]

    api.glance_pass()
    assert database(api)[1] == "ContractInProgress"
    contract = api.get("Job", "glance-db-contract")
    assert contract["spec"]["template"]["spec"]["containers"][0]["command"][-1] == (
        f"{GLANCE_MANAGE} db contract"
    )
    api.settle()
    done = api.glance_pass()
    assert done.requeue_after == 0
    assert phase(api) == ("2026.2", None, None)
    assert database(api) == (
        "True",
        "DatabaseSynced",
        "Database schema is up to date (upgraded 2026.1 → 2026.2)",
    )
    assert events.new() == [("Normal", "UpgradeComplete")]

    # the db-sync Job runs again on the new image; the phase Jobs stay
    for _ in range(6):
        run = api.glance_pass()
        if run.step_actions == ["c5c3.glance.gather"]:
            break
        api.settle()
    assert image(api.get("Job", "glance-db-sync")) == "ghcr.io/c5c3/glance:2026.2"
    assert all(api.get("Job", name) is not None for name in PHASE_JOBS)
    assert database(api)[:2] == ("True", "DatabaseSynced")
    assert ("Normal", "DatabaseSynced") in events.new()


@pytest.mark.parametrize(
    ("to", "reason", "says"),
    [
        ("2025.2", "DowngradeNotSupported", "downgrade from 2026.1 to 2025.2 is not supported"),
        ("2027.1", "UpgradePathInvalid", "the next release after 2026.1 is 2026.2"),
    ],
)
def test_a_downgrade_or_a_jump_is_refused_and_changes_nothing(api, to, reason, says):
    converged_on(api, "2026.1")
    events = Events(api)
    before = api.resource_versions()
    api.merge_patch("Glance", "glance", release(to))
    run = api.glance_pass()
    assert run.requeue_after is None
    got = database(api)
    assert got[:2] == ("False", reason)
    assert says in got[2]
    assert events.new() == [("Warning", reason)]
    assert phase(api) == ("2026.1", None, None)
    after = api.resource_versions()
    changed = {k for k in after if before.get(k) != after[k]}
    assert {kind for kind, _ in changed} <= {"Glance", "ConfigMap", "Event"}
    assert image(api.get("Deployment", "glance")) == "ghcr.io/c5c3/glance:2026.1"


def test_a_failed_phase_a_moved_target_and_the_abort(api):
    converged_on(api, "2026.1")
    events = Events(api)
    api.merge_patch("Glance", "glance", release("2026.2"))
    api.glance_pass()  # initiation
    api.glance_pass()  # the db-expand Job
    api.settle(jobs="Failed")
    failed = api.glance_pass()
    assert failed.requeue_after is None
    got = database(api)
    assert got[:2] == ("False", "ExpandFailed")
    assert "Expand job glance-db-expand failed: BackoffLimitExceeded" in got[2]
    assert events.new() == [("Normal", "UpgradeInitiated"), ("Warning", "ExpandFailed")]
    assert phase(api)[2] == "Expanding"

    api.merge_patch("Glance", "glance", release("2027.1"))
    moved = api.glance_pass()
    assert moved.requeue_after is None
    assert database(api)[1] == "UpgradeTargetChanged"
    assert events.new() == [("Warning", "UpgradeTargetChanged")]
    assert phase(api) == ("2026.1", "2026.2", "Expanding")

    api.merge_patch("Glance", "glance", release("2026.1"))
    abort = api.glance_pass()
    assert abort.requeue_after == 0
    assert events.new() == [("Normal", "UpgradeAborted")]
    assert phase(api) == ("2026.1", None, None)
    assert api.get("Job", "glance-db-expand") is None or api.get("Job", "glance-db-expand")[
        "metadata"
    ].get("deletionTimestamp")
    for _ in range(6):
        run = api.glance_pass()
        if run.step_actions == ["c5c3.glance.gather"]:
            break
        api.settle()
    assert database(api)[:2] == ("True", "DatabaseSynced")
    assert image(api.get("Deployment", "glance")) == "ghcr.io/c5c3/glance:2026.1"
