"""One reconcile pass of a Glance, decided (reference-spec §1.5, §2, §4.11 to §4.14, §6.2).

Most tests run passes against ``support.cluster.FakeCluster``, which performs the actions
as the apply step would and plays the controllers (Deployments get ready, Jobs finish).
"""

from __future__ import annotations

import base64
import copy
import dataclasses
from datetime import UTC, datetime

import pytest
from support.builders import BACKEND, DELETE, GLANCE, patched
from support.cluster import (
    GLANCE_UID,
    HEALTHY,
    FakeCluster,
    Reconciler,
    default_secrets,
    glance_object,
    owner_ref,
    plan_inputs,
    purge_run,
    secret,
    stored,
)

from ansible_collections.c5c3.glance.plugins.module_utils.desired import conditions as c
from ansible_collections.c5c3.glance.plugins.module_utils.kube import apply_plan as ap
from ansible_collections.c5c3.glance.plugins.module_utils.kube import live_state as ls
from ansible_collections.c5c3.glance.plugins.module_utils.passes.glance.api_health import (
    Health,
    endpoint_url,
    health_check_url,
    health_condition,
)
from ansible_collections.c5c3.glance.plugins.module_utils.passes.glance.decide import (
    decide_pass,
)
from ansible_collections.c5c3.glance.plugins.module_utils.passes.glance.deployment_step import (
    DEPLOYMENT_NOT_AVAILABLE,
)
from ansible_collections.c5c3.glance.plugins.module_utils.passes.glance.pass_state import (
    ADD,
    REMOVE,
    PassResult,
)

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
ROUTE = {"hostname": "images.example.com", "parentRef": {"name": "public", "namespace": "gw"}}


def make(spec=None, backends=None, secrets=None, cluster=None, finalizer=False, **kw) -> Reconciler:
    glance = glance_object(patched(GLANCE, {"spec": spec or {}}), finalizer=finalizer)
    backends = [stored(BACKEND, "b-uid")] if backends is None else backends
    return Reconciler(glance, plan_inputs(backends, secrets, **kw), cluster or FakeCluster())


def converged(**kw) -> Reconciler:
    r = make(**kw)
    r.converge()
    return r


def edit_spec(r: Reconciler, patch: dict) -> None:
    r.glance = patched(r.glance, {"spec": patch})
    r.glance["metadata"]["generation"] += 1


def with_inputs(r: Reconciler, **changes) -> None:
    r.inputs = dataclasses.replace(r.inputs, **changes)


def writes(result: PassResult) -> list[tuple[str, str, str, str]]:
    return [(a.verb, a.kind, a.name, a.reason) for a in result.writes]


def kinds_written(result: PassResult) -> list[str]:
    return [a.kind for a in result.writes]


def reasons(r: Reconciler) -> dict[str, tuple[str, str]]:
    return {
        cond["type"]: (cond["status"], cond["reason"]) for cond in r.glance["status"]["conditions"]
    }


# --- finalizer and deletion ----------------------------------------------------------------------


def test_a_new_glance_gets_the_finalizer_in_the_pass_that_configures_it():
    r = make(finalizer=False)
    result = r.run_pass(settle=False)
    assert result.finalizer == ADD
    assert r.glance["metadata"]["finalizers"] == ["glance.openstack.c5c3.io/finalizer"]
    # the pass does not stop for it: the first install's writes come with it
    assert kinds_written(result) == ["ConfigMap", "Secret", "Secret", "CronJob", "Job"]
    assert result.requeue_after == 30 and result.status_patch is not None
    assert r.run_pass(settle=False).finalizer is None  # carried from then on


def test_a_glance_the_rules_refuse_still_gets_the_finalizer_and_nothing_else():
    r = make(spec={"networkPolicy": {"ingress": []}}, finalizer=False)
    result = r.run_pass()
    assert result.finalizer == ADD and result.writes == []
    assert r.condition(c.SECRETS_READY)["reason"] == c.CONFIG_ERROR


@pytest.mark.parametrize("finalizer, expected", [(True, REMOVE), (False, None)])
def test_a_deleted_glance_only_releases_its_finalizer(finalizer, expected):
    glance = glance_object(GLANCE, finalizer=finalizer, deletionTimestamp="2026-03-01T00:00:00Z")
    result = decide_pass(glance, plan_inputs([]), ls.LiveObjects(), NOW)
    assert result.finalizer == expected
    assert (result.actions, result.events, result.status_patch, result.requeue_after) == (
        [],
        [],
        None,
        None,
    )


# --- the whole install ----------------------------------------------------------------------------


def test_a_fresh_install_converges_pass_by_pass():
    r = make()
    # 1: the finalizer, the configuration, the Secrets, the CronJob and the db-sync Job
    first = r.run_pass(HEALTHY)
    assert first.finalizer == ADD
    assert kinds_written(first) == ["ConfigMap", "Secret", "Secret", "CronJob", "Job"]
    assert first.requeue_after == 30
    assert reasons(r)[c.DATABASE_READY] == ("False", c.DB_SYNC_IN_PROGRESS)
    assert c.DEPLOYMENT_READY not in reasons(r)
    # 2: the schema is synced: the Deployment, and the Service already narrowed to its pods
    second = r.run_pass(HEALTHY)
    assert kinds_written(second) == ["Deployment", "Service", "PodDisruptionBudget"]
    service = r.cluster.get("Service", "glance")
    assert service["spec"]["selector"]["app.kubernetes.io/component"] == "api"
    assert second.events == [
        {"type": "Normal", "reason": "DatabaseSynced", "message": "Database schema is up to date"}
    ]
    assert reasons(r)[c.DEPLOYMENT_READY] == ("False", c.WAITING_FOR_DEPLOYMENT)
    assert reasons(r)[c.GLANCE_API_READY] == ("False", c.ENDPOINT_NOT_READY)
    assert second.requeue_after == 10
    # 3: the rollout is done: the status alone, no write (no latch pass of its own)
    third = r.run_pass(HEALTHY)
    assert third.writes == [] and third.status_patch is not None
    assert third.requeue_after is None
    status = r.glance["status"]
    assert status["endpoint"] == "http://glance.openstack.svc.cluster.local:9292/"
    assert status["installedRelease"] == "2026.2"
    assert status["observedGeneration"] == 1
    assert set(reasons(r).values()) >= {("True", c.ALL_READY), ("True", c.API_HEALTHY)}
    assert all(cond["status"] == "True" for cond in status["conditions"])


def test_a_second_pass_over_unchanged_live_state_yields_no_write_actions_and_no_status_patch():
    r = converged()
    before = copy.deepcopy(r.glance["status"])
    again = r.run_pass(HEALTHY)
    assert again.writes == []
    assert again.status_patch is None
    assert again.events == []
    assert again.requeue_after is None
    assert r.glance["status"] == before
    assert {a.reason for a in again.actions} <= {
        ap.UNCHANGED,
        ap.EXISTS,
        ap.JOB_COMPLETE,
        ap.NOT_WANTED,
    }


# --- the Secrets gate and the configuration ------------------------------------------------------------


@pytest.mark.parametrize(
    "secrets, reason",
    [
        (default_secrets()[1:], c.WAITING_FOR_DB_CREDENTIALS),
        ([default_secrets()[0], default_secrets()[2]], c.WAITING_FOR_SERVICE_USER_CREDENTIALS),
        (
            [secret("glance-db", username="glance", password=""), *default_secrets()[1:]],
            c.WAITING_FOR_DB_CREDENTIALS,
        ),
    ],
    ids=["no-db-secret", "no-service-user-secret", "empty-password"],
)
def test_a_missing_secret_writes_nothing_and_polls(secrets, reason):
    r = converged()
    with_inputs(r, secrets=secrets)
    result = r.run_pass(HEALTHY)
    assert result.writes == []
    assert result.requeue_after == 15
    got = reasons(r)
    assert got[c.SECRETS_READY] == ("False", reason)
    assert got[c.DEPLOYMENT_READY] == ("True", c.DEPLOYMENT_READY_REASON)  # kept as it was
    assert got[c.READY] == ("False", c.NOT_ALL_READY)


def test_a_config_error_is_a_condition_that_polls_not_a_failure():
    r = make(spec={"policyOverrides": {"configMapRef": {"name": "glance-policy"}}})
    result = r.run_pass()
    assert reasons(r)[c.SECRETS_READY] == ("False", c.CONFIG_ERROR)
    assert "glance-policy" in r.condition(c.SECRETS_READY)["message"]
    assert result.requeue_after == 15
    assert kinds_written(result) == ["Secret"]  # only the db-connection Secret
    with_inputs(
        r,
        configmaps=[
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "glance-policy", "namespace": "openstack"},
                "data": {"policy.yaml": "get_image: role:admin\n"},
            }
        ],
    )
    r.converge()
    assert reasons(r)[c.READY] == ("True", c.ALL_READY)


def test_a_stored_glance_the_rules_refuse_is_reported_and_nothing_is_written():
    r = make(spec={"networkPolicy": {"ingress": []}})
    result = r.run_pass()
    assert result.writes == [] and result.requeue_after is None
    cond = r.condition(c.SECRETS_READY)
    assert (cond["status"], cond["reason"]) == ("False", c.CONFIG_ERROR)
    assert "spec.networkPolicy" in cond["message"]


# --- backends and last-good retention ---------------------------------------------------------------


def test_no_default_backend_keeps_the_last_good_config_names_and_parks_at_no_default_backend():
    r = converged()
    deployment = r.cluster.get("Deployment", "glance")
    mounted = ls.mounted_artifacts(deployment)
    with_inputs(r, backends=[stored(patched(BACKEND, {"spec": {"isDefault": False}}), "b-uid")])
    result = r.run_pass(HEALTHY)
    assert result.writes == []
    assert result.requeue_after is None  # a backend change wakes the Glance
    assert result.plan.retained and (result.plan.config_map, result.plan.backends_secret) == mounted
    got = reasons(r)
    assert got[c.BACKENDS_READY] == ("False", c.NO_DEFAULT_BACKEND)
    assert got[c.DATABASE_READY] == ("True", c.DATABASE_SYNCED)
    assert got[c.DEPLOYMENT_READY] == ("True", c.DEPLOYMENT_READY_REASON)
    assert got[c.READY] == ("False", c.NOT_ALL_READY)
    # Deployment knobs still converge, on the last-good names.
    edit_spec(r, {"deployment": {"replicas": 4}})
    knob = r.run_pass(HEALTHY)
    assert writes(knob) == [("apply", "Deployment", "glance", "changed")]
    assert ls.mounted_artifacts(r.cluster.get("Deployment", "glance")) == mounted
    assert r.cluster.get("Deployment", "glance")["spec"]["replicas"] == 4
    assert len(r.cluster.of_kind("ConfigMap")) == 1
    settled = r.converge()
    assert settled.writes == [] and reasons(r)[c.BACKENDS_READY][1] == c.NO_DEFAULT_BACKEND


def test_two_defaults_park_at_no_default_backend_rather_than_refusing_the_input():
    second = stored(
        patched(BACKEND, {"metadata": {"name": "s3-second"}, "spec": {"isDefault": True}}), "b2"
    )
    r = converged()
    with_inputs(r, backends=[*r.inputs.backends, second])
    result = r.run_pass(HEALTHY)
    assert result.writes == []
    assert reasons(r)[c.BACKENDS_READY] == ("False", c.NO_DEFAULT_BACKEND)
    assert "s3-default, s3-second" in r.condition(c.BACKENDS_READY)["message"]


def test_a_first_install_without_a_default_backend_waits_before_the_database():
    r = make(backends=[stored(patched(BACKEND, {"spec": {"isDefault": False}}), "b-uid")])
    result = r.run_pass()
    assert kinds_written(result) == ["Secret"]  # the db-connection Secret alone
    assert result.requeue_after == 30
    got = reasons(r)
    assert got[c.DATABASE_READY] == ("False", c.WAITING_FOR_BACKENDS)
    assert c.DEPLOYMENT_READY not in got and c.HPA_READY not in got


def test_an_s3_key_rotation_yields_a_new_backends_secret_and_a_deployment_apply():
    r = converged()
    old_secret = ls.mounted_artifacts(r.cluster.get("Deployment", "glance"))[1]
    with_inputs(r, secrets=default_secrets(**{"secret-access-key": "rotated"}))
    result = r.run_pass(HEALTHY)
    (created,) = [a for a in result.writes if a.verb == "create"]
    assert (created.kind, created.reason) == ("Secret", ap.ABSENT)
    assert created.name != old_secret and created.name.startswith("glance-backends-")
    assert writes(result)[-1] == ("apply", "Deployment", "glance", "changed")
    assert ls.mounted_artifacts(r.cluster.get("Deployment", "glance"))[1] == created.name
    assert result.requeue_after == 10  # the rollout is waited for
    assert reasons(r)[c.DATABASE_READY] == ("True", c.DATABASE_SYNCED)  # db-sync does not rerun
    assert r.cluster.get("Secret", old_secret) is not None  # kept: one of the three newest
    assert r.converge().writes == []


def test_an_import_ca_bundle_is_waited_for_then_rolled_in_and_a_new_one_rolls_the_pods():
    """spec.importCABundleSecretRef: while its Secret is missing nothing is written (the
    running Deployment stays as it was); once there, the pods carry the bundle's digest,
    and a new bundle rolls them again."""
    r = converged()
    edit_spec(r, {"importCABundleSecretRef": {"name": "mirror-ca"}})
    waiting = r.run_pass(HEALTHY)
    assert waiting.writes == [] and waiting.requeue_after == 15
    assert reasons(r)[c.SECRETS_READY] == ("False", c.WAITING_FOR_IMPORT_CA_BUNDLE)
    template = r.cluster.get("Deployment", "glance")["spec"]["template"]
    assert "import-ca" not in {v["name"] for v in template["spec"]["volumes"]}

    def annotation() -> str:
        meta = r.cluster.get("Deployment", "glance")["spec"]["template"]["metadata"]
        return meta["annotations"]["glance.c5c3.io/import-ca-hash"]

    with_inputs(r, secrets=[*default_secrets(), secret("mirror-ca", **{"ca.crt": "PEM one"})])
    rolled = r.run_pass(HEALTHY)
    assert writes(rolled)[-1] == ("apply", "Deployment", "glance", "changed")
    assert reasons(r)[c.SECRETS_READY] == ("True", c.SECRETS_AVAILABLE)
    first = annotation()
    r.converge()
    with_inputs(r, secrets=[*default_secrets(), secret("mirror-ca", **{"ca.crt": "PEM two"})])
    again = r.run_pass(HEALTHY)
    assert writes(again)[-1] == ("apply", "Deployment", "glance", "changed")
    assert annotation() != first


ARCHIVE_SECRET = secret("glance-s3-archive", **{"access-key-id": "a", "secret-access-key": "x\ny"})


@pytest.mark.parametrize(
    "archive_spec, why",
    [
        ({"s3": {"credentialsSecretRef": {"name": "glance-s3-archive"}}}, "newline"),
        ({"extraOptions": {"x": "a\nb"}}, "refused by the admission rules"),
    ],
    ids=["secret-value-with-a-newline", "refused-by-the-rules"],
)
def test_a_faulty_backend_is_skipped_with_one_warning_and_its_siblings_still_project(
    archive_spec, why
):
    archive = stored(
        patched(
            BACKEND,
            {"metadata": {"name": "s3-archive"}, "spec": {"isDefault": False, **archive_spec}},
        ),
        "b2",
    )
    r = make(
        backends=[stored(BACKEND, "b-uid"), archive], secrets=[*default_secrets(), ARCHIVE_SECRET]
    )
    first = r.run_pass()
    skipped = [e for e in first.events if e["reason"] == "GlanceBackendSkipped"]
    assert len(skipped) == 1 and skipped[0]["message"].startswith("Skipping backend s3-archive: ")
    assert why in skipped[0]["message"]
    assert reasons(r)[c.BACKENDS_READY] == ("False", c.WAITING_FOR_BACKENDS)
    assert "ConfigMap" in kinds_written(first)  # the default still projects
    assert not [e for e in r.run_pass().events if e["reason"] == "GlanceBackendSkipped"]


# --- the database step ---------------------------------------------------------------------------------


def test_a_configuration_change_reruns_db_sync_before_the_deployment_rolls():
    r = converged()
    edit_spec(r, {"logging": {"debug": True}})
    first = r.run_pass(HEALTHY, settle=False)
    assert writes(first)[0][1] == "ConfigMap"
    assert ("delete", "Job", "glance-db-sync", ap.RERUN) in writes(first)
    assert "Deployment" not in kinds_written(first)
    assert first.requeue_after == 5
    assert reasons(r)[c.DATABASE_READY] == ("False", c.DB_SYNC_IN_PROGRESS)
    second = r.run_pass(HEALTHY, settle=False)
    assert writes(second) == [("create", "Job", "glance-db-sync", ap.ABSENT)]
    running = r.run_pass(HEALTHY, settle=False)
    assert running.writes == [] and running.requeue_after == 30
    r.cluster.settle()
    fourth = r.run_pass(HEALTHY)
    assert ("apply", "Deployment", "glance", "changed") in writes(fourth)


def test_a_failed_db_sync_with_the_same_hash_is_not_rerun():
    r = make()
    r.run_pass(jobs="Failed")
    failed = r.run_pass(HEALTHY, jobs="Failed")
    assert failed.writes == []
    assert reasons(r)[c.DATABASE_READY] == ("False", c.DB_SYNC_FAILED)
    assert "glance-db-sync failed: BackoffLimitExceeded" in r.condition(c.DATABASE_READY)["message"]
    assert failed.events == [
        {
            "type": "Warning",
            "reason": "DBSyncFailed",
            "message": "db_sync job failed: BackoffLimitExceeded",
        }
    ]
    assert failed.requeue_after is None  # a spec change or a deleted Job brings the next pass
    again = r.run_pass(HEALTHY, jobs="Failed")
    assert (again.writes, again.events, again.status_patch) == ([], [], None)
    assert r.cluster.get("Deployment", "glance") is None
    # a spec change gives a new pod template: the Job runs again
    edit_spec(r, {"image": {"tag": "2026.2-p1"}})
    rerun = r.run_pass(HEALTHY, settle=False)
    assert ("delete", "Job", "glance-db-sync", ap.RERUN) in writes(rerun)


def test_an_image_tag_of_another_release_stops_before_the_database():
    r = make(spec={"image": {"tag": "2026.1"}})
    result = r.run_pass()
    assert reasons(r)[c.DATABASE_READY] == ("False", c.IMAGE_RELEASE_MISMATCH)
    assert "2026.1" in r.condition(c.DATABASE_READY)["message"]
    assert result.requeue_after == 30
    assert "Job" not in kinds_written(result) and "Deployment" not in kinds_written(result)
    assert "CronJob" in kinds_written(result)  # applied once a configuration exists


@pytest.mark.parametrize("tag", ["latest", "2026.2-p2", None])
def test_a_tag_that_names_no_other_release_passes_the_check(tag):
    image = {"tag": tag} if tag else {"tag": None, "digest": "sha256:" + "a" * 64}
    r = make(spec={"image": image})
    r.converge()
    assert reasons(r)[c.DATABASE_READY] == ("True", c.DATABASE_SYNCED)


# --- the release upgrade (reference-spec §4.13) ---------------------------------------------------

OLD = {"openStackRelease": "2026.1", "image": {"tag": "2026.1"}}
NEW = {"openStackRelease": "2026.2", "image": {"tag": "2026.2"}}
PHASE_JOBS = ("glance-db-expand", "glance-db-migrate", "glance-db-contract")


def upgrading(spec: dict = NEW, old: dict = OLD) -> Reconciler:
    """A Glance converged on ``old`` whose spec was just patched to ``spec``."""
    r = converged(spec=old)
    assert r.glance["status"]["installedRelease"] == old["openStackRelease"]
    edit_spec(r, spec)
    return r


def release_fields(r: Reconciler) -> tuple[str | None, str | None, str | None]:
    status = r.glance["status"]
    return (status.get("installedRelease"), status.get("targetRelease"), status.get("upgradePhase"))


def event_reasons(result: PassResult) -> list[tuple[str, str]]:
    return [(e["type"], e["reason"]) for e in result.events]


def rolling_status(deploy: dict, updated: int, ready: int, total: int) -> dict:
    replicas = deploy["spec"]["replicas"]
    return {
        "observedGeneration": deploy["metadata"]["generation"],
        "replicas": total,
        "updatedReplicas": updated,
        "readyReplicas": ready,
        "availableReplicas": min(ready, replicas),
        "conditions": [
            {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"}
        ],
    }


def image_of(obj: dict) -> str:
    return obj["spec"]["template"]["spec"]["containers"][0]["image"]


def test_an_upgrade_walks_expand_migrate_rollout_contract_and_reruns_db_sync():
    r = upgrading()
    # initiation: status and condition only, nothing applied to the database yet
    start = r.run_pass(HEALTHY, settle=False)
    assert release_fields(r) == ("2026.1", "2026.2", "Expanding")
    assert r.condition(c.DATABASE_READY)["reason"] == c.EXPAND_IN_PROGRESS
    assert r.condition(c.DATABASE_READY)["message"] == (
        "Upgrade detected: 2026.1 → 2026.2 (phase: Expanding)"
    )
    assert event_reasons(start) == [("Normal", "UpgradeInitiated")]
    assert start.requeue_after == 0
    assert "Job" not in kinds_written(start) and "Deployment" not in kinds_written(start)
    assert image_of(r.cluster.get("Deployment", "glance")) == "ghcr.io/c5c3/glance:2026.1"
    # Expanding: the db-expand Job on the new image; the API keeps the old one
    expand = r.run_pass(HEALTHY, settle=False)
    assert ("create", "Job", "glance-db-expand", ap.ABSENT) in writes(expand)
    job = r.cluster.get("Job", "glance-db-expand")
    assert image_of(job) == "ghcr.io/c5c3/glance:2026.2"
    assert job["spec"]["template"]["spec"]["containers"][0]["command"][-1] == (
        "glance-manage --config-dir /etc/glance/glance-api.conf.d/ db expand"
    )
    assert expand.requeue_after == 30 and expand.events == []
    assert r.condition(c.DATABASE_READY)["reason"] == c.EXPAND_IN_PROGRESS
    assert "Deployment" not in kinds_written(expand)
    assert "CronJob" not in kinds_written(expand)  # the purge keeps the old image for now
    r.cluster.settle()
    done = r.run_pass(HEALTHY, settle=False)
    assert event_reasons(done) == [("Normal", "ExpandComplete")]
    assert release_fields(r) == ("2026.1", "2026.2", "Migrating")
    assert r.condition(c.DATABASE_READY)["reason"] == c.MIGRATE_IN_PROGRESS
    assert done.requeue_after == 0 and done.writes == []
    # Migrating
    migrate = r.run_pass(HEALTHY, settle=False)
    assert ("create", "Job", "glance-db-migrate", ap.ABSENT) in writes(migrate)
    r.cluster.settle()
    migrated = r.run_pass(HEALTHY, settle=False)
    assert event_reasons(migrated) == [("Normal", "MigrateComplete")]
    assert release_fields(r) == ("2026.1", "2026.2", "RollingUpdate")
    assert r.condition(c.DATABASE_READY)["reason"] == c.UPGRADE_ROLLING_UPDATE
    assert migrated.requeue_after == 0
    # RollingUpdate: the Deployment (and the purge CronJob) roll to the new image
    roll = r.run_pass(HEALTHY, settle=False)
    assert ("apply", "Deployment", "glance", ap.CHANGED) in writes(roll)
    assert "CronJob" in kinds_written(roll)
    deploy = r.cluster.get("Deployment", "glance")
    assert image_of(deploy) == "ghcr.io/c5c3/glance:2026.2"
    assert r.condition(c.DATABASE_READY)["message"] == (
        "Waiting for Deployment rollout: 2026.1 → 2026.2"
    )
    assert r.cluster.get("Job", "glance-db-contract") is None
    # ready (Available, enough ready pods) but not converged: no contract yet
    rolling = (
        "Waiting for the upgraded image to finish rolling out before contracting the database "
        "schema"
    )
    for updated, ready, total, message in (
        (1, 3, 4, rolling),  # ready and Available: the old pods still run
        (3, 3, 4, rolling),  # one old pod still terminating
        (3, 2, 3, DEPLOYMENT_NOT_AVAILABLE),  # not even ready
    ):
        deploy["status"] = rolling_status(deploy, updated, ready, total)
        wait = r.run_pass(HEALTHY, settle=False)
        assert r.glance["status"]["upgradePhase"] == "RollingUpdate", (updated, ready, total)
        cond = r.condition(c.DEPLOYMENT_READY)
        assert (cond["status"], cond["reason"]) == ("False", c.WAITING_FOR_DEPLOYMENT)
        assert cond["message"] == message
        assert wait.requeue_after == 10 and wait.events == []
        assert r.cluster.get("Job", "glance-db-contract") is None
    deploy["status"] = rolling_status(deploy, 3, 3, 3)
    endpoint = r.glance["status"]["endpoint"]
    r.glance["status"]["endpoint"] = ""
    flip = r.run_pass(HEALTHY, settle=False)
    assert event_reasons(flip) == [("Normal", "DeploymentRolloutComplete")]
    assert release_fields(r) == ("2026.1", "2026.2", "Contracting")
    assert reasons(r)[c.DEPLOYMENT_READY] == ("True", c.DEPLOYMENT_READY_REASON)
    assert flip.requeue_after == 0
    assert not r.glance["status"].get("endpoint")  # not stamped on the flip
    r.glance["status"]["endpoint"] = endpoint
    # Contracting
    contract = r.run_pass(HEALTHY, settle=False)
    assert ("create", "Job", "glance-db-contract", ap.ABSENT) in writes(contract)
    assert r.condition(c.DATABASE_READY)["reason"] == c.CONTRACT_IN_PROGRESS
    r.cluster.settle()
    complete = r.run_pass(HEALTHY, settle=False)
    assert event_reasons(complete) == [("Normal", "UpgradeComplete")]
    assert release_fields(r) == ("2026.2", None, None)
    cond = r.condition(c.DATABASE_READY)
    assert (cond["status"], cond["reason"], cond["message"]) == (
        "True",
        c.DATABASE_SYNCED,
        "Database schema is up to date (upgraded 2026.1 → 2026.2)",
    )
    assert complete.requeue_after == 0
    # the db-sync Job re-runs on the new image; the phase Jobs stay
    rerun = r.run_pass(HEALTHY, settle=False)
    assert ("delete", "Job", "glance-db-sync", ap.RERUN) in writes(rerun)
    r.converge()
    assert image_of(r.cluster.get("Job", "glance-db-sync")) == "ghcr.io/c5c3/glance:2026.2"
    assert all(r.cluster.get("Job", name) is not None for name in PHASE_JOBS)
    assert reasons(r)[c.READY] == ("True", c.ALL_READY)
    assert release_fields(r) == ("2026.2", None, None)


@pytest.mark.parametrize(
    ("old", "new", "reason", "says"),
    [
        (NEW, OLD, c.DOWNGRADE_NOT_SUPPORTED, "downgrade from 2026.2 to 2026.1 is not supported"),
        (
            {"openStackRelease": "2025.2", "image": {"tag": "2025.2"}},
            NEW,
            c.UPGRADE_PATH_INVALID,
            "the next release after 2025.2 is 2026.1",
        ),
        (
            {"openStackRelease": "2025.2", "image": {"tag": "2025.2"}},
            {"openStackRelease": "2026.2", "image": {"tag": "latest"}},
            c.UPGRADE_PATH_INVALID,
            "upgrade from 2025.2 to 2026.2 is not sequential",
        ),
    ],
)
def test_a_refused_upgrade_path_is_a_condition_and_a_warning_and_changes_nothing(
    old, new, reason, says
):
    r = upgrading(new, old)
    deployment = copy.deepcopy(r.cluster.get("Deployment", "glance"))
    cron = copy.deepcopy(r.cluster.get("CronJob", "glance-db-purge"))
    refused = r.run_pass(HEALTHY)
    cond = r.condition(c.DATABASE_READY)
    assert (cond["status"], cond["reason"]) == ("False", reason)
    assert says in cond["message"]
    assert event_reasons(refused) == [("Warning", reason)]
    assert refused.events[0]["message"] == cond["message"]
    assert refused.requeue_after is None  # as the reference's error: the fix brings a pass
    assert not {"Job", "Deployment", "CronJob"} & set(kinds_written(refused))
    assert r.cluster.get("Deployment", "glance") == deployment
    assert r.cluster.get("CronJob", "glance-db-purge") == cron
    assert release_fields(r) == (old["openStackRelease"], None, None)
    again = r.run_pass(HEALTHY)
    assert (again.writes, again.events, again.status_patch) == ([], [], None)
    # going back to the installed release is the fix
    edit_spec(r, old)
    r.converge()
    assert reasons(r)[c.DATABASE_READY] == ("True", c.DATABASE_SYNCED)


def test_an_unparseable_installed_release_is_a_version_parse_error():
    r = converged()
    r.glance["status"]["installedRelease"] = "grizzly"
    result = r.run_pass(HEALTHY)
    cond = r.condition(c.DATABASE_READY)
    assert (cond["status"], cond["reason"]) == ("False", c.VERSION_PARSE_ERROR)
    assert 'failed to parse installed release "grizzly"' in cond["message"]
    assert event_reasons(result) == [("Warning", "VersionParseError")]
    assert "Job" not in kinds_written(result)


@pytest.mark.parametrize("phase_passes", [2, 4])  # abort in Expanding, in Migrating
def test_returning_to_the_installed_release_aborts_and_db_sync_resumes(phase_passes):
    r = upgrading()
    for _ in range(phase_passes):
        r.run_pass(HEALTHY)
    phase = r.glance["status"]["upgradePhase"]
    assert phase in ("Expanding", "Migrating")
    present = [n for n in PHASE_JOBS if r.cluster.get("Job", n) is not None]
    assert present
    edit_spec(r, OLD)
    abort = r.run_pass(HEALTHY, settle=False)
    deletes = [a for a in abort.writes if a.verb == "delete"]
    assert [(a.kind, a.name, a.propagation_policy) for a in deletes] == [
        ("Job", name, "Background") for name in present
    ]
    assert event_reasons(abort) == [("Normal", "UpgradeAborted")]
    assert f"aborted in phase {phase}" in abort.events[0]["message"]
    assert abort.requeue_after == 0
    assert release_fields(r) == ("2026.1", None, None)
    assert all(r.cluster.get("Job", n) is None for n in PHASE_JOBS)
    r.converge()
    assert reasons(r)[c.DATABASE_READY] == ("True", c.DATABASE_SYNCED)
    assert image_of(r.cluster.get("Deployment", "glance")) == "ghcr.io/c5c3/glance:2026.1"


def test_aborting_during_contract_says_the_schema_may_be_gone():
    r = upgrading()
    r.glance["status"].update(targetRelease="2026.2", upgradePhase="Contracting")
    edit_spec(r, OLD)
    abort = r.run_pass(HEALTHY)
    assert "the contract phase had started" in abort.events[0]["message"]


def test_a_target_moved_mid_upgrade_stops_the_upgrade_without_advancing():
    r = upgrading()
    r.run_pass(HEALTHY)
    r.run_pass(HEALTHY)  # db-expand created and (settled) complete
    edit_spec(
        r,
        {"openStackRelease": "2027.1", "image": {"tag": "2027.1"}},
    )
    moved = r.run_pass(HEALTHY)
    cond = r.condition(c.DATABASE_READY)
    assert (cond["status"], cond["reason"]) == ("False", c.UPGRADE_TARGET_CHANGED)
    assert "set spec.openStackRelease to 2026.2 to finish it or back to 2026.1" in cond["message"]
    assert event_reasons(moved) == [("Warning", "UpgradeTargetChanged")]
    assert moved.requeue_after is None
    assert release_fields(r) == ("2026.1", "2026.2", "Expanding")
    assert "Job" not in kinds_written(moved)
    # the image/release lockstep check runs first while an upgrade is active
    edit_spec(r, {"openStackRelease": "2026.2", "image": {"tag": "2027.1"}})
    r.run_pass(HEALTHY)
    assert reasons(r)[c.DATABASE_READY] == ("False", c.IMAGE_RELEASE_MISMATCH)
    edit_spec(r, NEW)
    resumed = r.run_pass(HEALTHY)
    assert event_reasons(resumed) == [("Normal", "ExpandComplete")]


@pytest.mark.parametrize(
    ("passes", "phase", "job", "reason"),
    [
        (1, "Expanding", "glance-db-expand", c.EXPAND_FAILED),
        (3, "Migrating", "glance-db-migrate", c.MIGRATE_FAILED),
        (7, "Contracting", "glance-db-contract", c.CONTRACT_FAILED),
    ],
)
def test_a_failed_phase_job_stops_the_upgrade_until_it_is_deleted(passes, phase, job, reason):
    r = upgrading()
    for _ in range(passes):
        r.run_pass(HEALTHY)
    assert r.glance["status"]["upgradePhase"] == phase
    created = r.run_pass(HEALTHY, settle=False)
    assert ("create", "Job", job, ap.ABSENT) in writes(created)
    r.cluster.settle(jobs="Failed")
    failed = r.run_pass(HEALTHY, settle=False)
    cond = r.condition(c.DATABASE_READY)
    assert (cond["status"], cond["reason"]) == ("False", reason)
    assert f"job {job} failed: BackoffLimitExceeded" in cond["message"]
    assert event_reasons(failed) == [("Warning", reason)]
    assert failed.requeue_after is None
    assert r.glance["status"]["upgradePhase"] == phase
    again = r.run_pass(HEALTHY, settle=False)
    assert (again.writes, again.events, again.status_patch) == ([], [], None)
    # deleting the failed Job runs it again
    r.cluster.perform(
        [
            ap.delete_action(
                next(
                    k
                    for k, v in {
                        "db_expand_job": "glance-db-expand",
                        "db_migrate_job": "glance-db-migrate",
                        "db_contract_job": "glance-db-contract",
                    }.items()
                    if v == job
                ),
                r.cluster.get("Job", job),
                GLANCE_UID,
            )
        ]
    )
    retry = r.run_pass(HEALTHY)
    assert ("create", "Job", job, ap.ABSENT) in writes(retry)
    r.converge()
    assert release_fields(r) == ("2026.2", None, None)


def test_the_purge_cronjob_waits_for_the_migrated_schema_and_reports_what_runs():
    r = upgrading()
    cron = copy.deepcopy(r.cluster.get("CronJob", "glance-db-purge"))
    r.run_pass(HEALTHY)  # initiation
    edit_spec(r, {"dbPurge": {"suspend": True}})
    r.run_pass(HEALTHY, settle=False)  # Expanding: the db-expand Job
    assert r.cluster.get("CronJob", "glance-db-purge") == cron  # old image, not suspended
    assert reasons(r)[c.DB_PURGE_READY] == ("True", c.DB_PURGE_SCHEDULED)
    r.cluster.settle()
    for _ in range(3):  # expand done; the db-migrate Job runs; migrate done
        assert r.cluster.get("CronJob", "glance-db-purge") == cron
        r.run_pass(HEALTHY)
    assert r.glance["status"]["upgradePhase"] == "RollingUpdate"
    r.run_pass(HEALTHY)
    rolled = r.cluster.get("CronJob", "glance-db-purge")
    assert rolled["spec"]["suspend"] is True
    pod = rolled["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert pod["containers"][0]["image"] == "ghcr.io/c5c3/glance:2026.2"
    assert reasons(r)[c.DB_PURGE_READY] == ("True", c.DB_PURGE_SUSPENDED)


def test_a_patch_suffix_on_the_image_stays_on_db_sync():
    r = converged()
    edit_spec(r, {"image": {"tag": "2026.2-p1"}})
    result = r.run_pass(HEALTHY, settle=False)
    assert ("delete", "Job", "glance-db-sync", ap.RERUN) in writes(result)
    assert r.glance["status"].get("upgradePhase") is None


# --- the Deployment ------------------------------------------------------------------------------------


def test_a_changed_selector_deletes_the_deployment_first():
    r = converged()
    r.cluster.get("Deployment", "glance")["spec"]["selector"] = {"matchLabels": {"app": "glance"}}
    result = r.run_pass(HEALTHY, settle=False)
    assert ("delete", "Deployment", "glance", ap.SELECTOR_CHANGED) in writes(result)
    assert ("apply", "Deployment", "glance", ap.ABSENT) not in writes(result)
    assert result.requeue_after == 5
    assert reasons(r)[c.DEPLOYMENT_READY] == ("False", c.WAITING_FOR_DEPLOYMENT)
    recreate = r.run_pass(HEALTHY)
    assert ("apply", "Deployment", "glance", ap.ABSENT) in writes(recreate)
    assert r.converge().writes == []


def test_a_deployment_someone_else_controls_is_reported_not_overwritten():
    foreign = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "glance",
            "namespace": "openstack",
            "uid": "d",
            "generation": 1,
            "ownerReferences": [owner_ref("other-uid", kind="Glance", name="glance")],
        },
        "spec": {"selector": {"matchLabels": {"app": "x"}}, "template": {"spec": {"volumes": []}}},
    }
    r = make(cluster=FakeCluster([foreign]))
    r.run_pass()
    result = r.run_pass()
    assert not {"Deployment", "Service", "PodDisruptionBudget"} & set(kinds_written(result))
    cond = r.condition(c.DEPLOYMENT_READY)
    assert (cond["status"], cond["reason"]) == ("False", "OwnershipConflict")
    assert "never overwrites" in cond["message"]
    assert result.requeue_after == 30


def test_a_config_map_name_taken_by_someone_else_stops_the_pass():
    r = make()
    name = r.run_pass(settle=False).plan.config_map
    taken = r.cluster.get("ConfigMap", name)
    taken["metadata"]["ownerReferences"] = [owner_ref("other-uid")]
    r.cluster.objects = {k: v for k, v in r.cluster.objects.items() if k[0] != "Job"}
    result = r.run_pass()
    assert reasons(r)[c.SECRETS_READY] == ("False", "OwnershipConflict")
    assert "Job" not in kinds_written(result)


def test_autoscaling_leaves_replicas_to_the_hpa_and_disabling_it_deletes_our_hpa():
    r = converged(
        spec={"autoscaling": {"minReplicas": 2, "maxReplicas": 6, "targetCPUUtilization": 75}}
    )
    assert r.cluster.get("HorizontalPodAutoscaler", "glance") is not None
    assert reasons(r)[c.HPA_READY] == ("True", c.HPA_READY_REASON)
    assert r.cluster.get("Deployment", "glance")["spec"]["replicas"] == 1  # the API default
    r.cluster.get("Deployment", "glance")["spec"]["replicas"] = 4  # the HPA scaled
    assert r.run_pass(HEALTHY).writes == []
    r.glance["spec"].pop("autoscaling")
    r.glance["metadata"]["generation"] += 1
    result = r.run_pass(HEALTHY)
    assert ("delete", "HorizontalPodAutoscaler", "glance", ap.NOT_WANTED) in writes(result)
    assert reasons(r)[c.HPA_READY] == ("True", c.HPA_NOT_REQUIRED)
    assert r.cluster.get("Deployment", "glance")["spec"]["replicas"] == 3


def test_switching_autoscaling_on_hands_the_replica_count_over():
    r = converged()
    edit_spec(r, {"autoscaling": {"minReplicas": 2, "maxReplicas": 6, "targetCPUUtilization": 75}})
    result = r.run_pass(HEALTHY)
    assert [a.reason for a in result.writes if a.kind == "Deployment"] == [
        ap.REPLICAS_HANDOVER,
        ap.CHANGED,
    ]
    assert r.cluster.get("Deployment", "glance")["spec"]["replicas"] == 3
    assert r.converge().writes == []


def test_exposure_objects_are_applied_while_the_database_is_still_syncing():
    spec = {
        "autoscaling": {"maxReplicas": 4, "targetCPUUtilization": 80},
        "networkPolicy": {"ingress": [{"namespaceSelector": {"matchLabels": {"team": "a"}}}]},
        "gateway": ROUTE,
    }
    r = make(spec=spec)
    first = r.run_pass(settle=False)
    assert reasons(r)[c.DATABASE_READY][1] == c.DB_SYNC_IN_PROGRESS
    assert {"HorizontalPodAutoscaler", "NetworkPolicy", "HTTPRoute", "CronJob"} <= set(
        kinds_written(first)
    )
    assert reasons(r)[c.HTTPROUTE_READY] == ("False", c.HTTPROUTE_NOT_ACCEPTED)
    assert first.requeue_after == 10  # the shortest asked for: the route


# --- HTTPRoute, db-purge, health ------------------------------------------------------------------------


def test_a_gateway_without_the_gateway_api_is_a_condition_checked_again_every_minute():
    r = make(spec={"gateway": ROUTE}, cluster=FakeCluster(gateway_api=False))
    result = r.run_pass(settle=False)
    assert reasons(r)[c.HTTPROUTE_READY] == ("False", c.GATEWAY_API_NOT_INSTALLED)
    assert "HTTPRoute" not in kinds_written(result)
    assert result.requeue_after == 30  # db-sync is shorter than the minute
    r.cluster.settle()
    r.run_pass(HEALTHY)
    assert r.run_pass(HEALTHY).requeue_after == 60


def test_an_accepted_route_makes_the_endpoint_the_gateway_url():
    r = converged(spec={"gateway": ROUTE})
    assert reasons(r)[c.HTTPROUTE_READY] == ("True", c.HTTPROUTE_ACCEPTED)
    assert r.glance["status"]["endpoint"] == "https://images.example.com/"


def test_a_route_the_gateway_does_not_accept_polls():
    r = make(spec={"gateway": ROUTE})
    result = r.converge(routes=False)
    assert reasons(r)[c.HTTPROUTE_READY] == ("False", c.HTTPROUTE_NOT_ACCEPTED)
    assert result.requeue_after == 10
    assert r.glance["status"]["endpoint"] == "https://images.example.com/"


def test_a_failed_purge_run_turns_db_purge_false_and_warns_once():
    r = converged()
    uid = r.cluster.get("CronJob", "glance-db-purge")["metadata"]["uid"]
    run = purge_run("glance-db-purge-29000000", "Failed", "2026-03-02T00:01:00Z", uid)
    r.cluster.objects[("Job", run["metadata"]["name"])] = run
    result = r.run_pass(HEALTHY)
    assert reasons(r)[c.DB_PURGE_READY] == ("False", c.DB_PURGE_JOB_FAILED)
    assert [e["reason"] for e in result.events] == ["DBPurgeJobFailed"]
    assert "glance-db-purge-29000000" in result.events[0]["message"]
    assert r.run_pass(HEALTHY).events == []
    later = purge_run("glance-db-purge-29000001", "Complete", "2026-03-03T00:01:00Z", uid)
    r.cluster.objects[("Job", later["metadata"]["name"])] = later
    r.run_pass(HEALTHY)
    assert reasons(r)[c.DB_PURGE_READY] == ("True", c.DB_PURGE_SCHEDULED)


PURGE_RECORD = "cobaltcore.c5c3.io/last-db-purge-job-uid"


def test_each_finished_purge_run_is_recorded_on_the_glance_once():
    """The reference's RecordJobTerminalState: the newest finished run's UID, failed or
    not, in ``cobaltcore.c5c3.io/last-db-purge-job-uid``; written by the pass that first
    sees it, by no later one (the runner counts the run when the record changes)."""
    r = converged()
    assert PURGE_RECORD not in (r.glance["metadata"].get("annotations") or {})
    uid = r.cluster.get("CronJob", "glance-db-purge")["metadata"]["uid"]
    running = purge_run("glance-db-purge-1", "Running", "2026-03-02T00:01:00Z", uid)
    r.cluster.objects[("Job", "glance-db-purge-1")] = running
    assert r.run_pass(HEALTHY, settle=False).annotations == {}
    failed = purge_run("glance-db-purge-1", "Failed", "2026-03-02T00:01:00Z", uid)
    r.cluster.objects[("Job", "glance-db-purge-1")] = failed
    assert r.run_pass(HEALTHY).annotations == {PURGE_RECORD: "uid-glance-db-purge-1"}
    assert r.glance["metadata"]["annotations"][PURGE_RECORD] == "uid-glance-db-purge-1"
    assert r.run_pass(HEALTHY).annotations == {}
    later = purge_run("glance-db-purge-2", "Complete", "2026-03-03T00:01:00Z", uid)
    r.cluster.objects[("Job", "glance-db-purge-2")] = later
    assert r.run_pass(HEALTHY).annotations == {PURGE_RECORD: "uid-glance-db-purge-2"}
    assert r.run_pass(HEALTHY).annotations == {}


def test_the_finished_db_sync_job_is_recorded_as_the_reference_does():
    r = make()
    r.converge()
    job = r.cluster.get("Job", "glance-db-sync")
    record = r.glance["metadata"]["annotations"]["cobaltcore.c5c3.io/last-db-sync-job-uid"]
    assert record == job["metadata"]["uid"]
    assert [res.annotations for res in r.results].count({}) == len(r.results) - 1


def test_a_suspended_purge_stays_true_and_names_the_failed_run():
    r = converged(spec={"dbPurge": {"suspend": True, "retentionDays": 90}})
    uid = r.cluster.get("CronJob", "glance-db-purge")["metadata"]["uid"]
    run = purge_run("glance-db-purge-1", "Failed", "2026-03-02T00:01:00Z", uid)
    r.cluster.objects[("Job", "glance-db-purge-1")] = run
    result = r.run_pass(HEALTHY)
    cond = r.condition(c.DB_PURGE_READY)
    assert (cond["status"], cond["reason"]) == ("True", c.DB_PURGE_SUSPENDED)
    assert "retention 90 days" in cond["message"]
    assert cond["message"].endswith("the last run (Job glance-db-purge-1) failed before the pause")
    assert result.events == []


URL = "http://glance.openstack.svc.cluster.local:9292/healthcheck"


@pytest.mark.parametrize(
    "health, reason, status, message",
    [
        ({"status_code": 200}, c.API_HEALTHY, "True", f"Glance API is responding at {URL}"),
        ({"status_code": 204}, c.API_HEALTHY, "True", f"Glance API is responding at {URL}"),
        (
            {"status_code": 503, "body": ""},
            c.API_UNHEALTHY,
            "False",
            "Glance API returned HTTP 503",
        ),
        (
            {"status_code": 500, "body": "no endpoints\r\navailable\nfor service\n"},
            c.API_UNHEALTHY,
            "False",
            "Glance API returned HTTP 500: no endpoints available for service",
        ),
        (
            {"error_kind": "timeout"},
            c.HEALTH_CHECK_TIMEOUT,
            "False",
            f"health check timed out: {URL}",
        ),
        ({"error_kind": "dns"}, c.ENDPOINT_NOT_READY, "False", f"endpoint not resolvable: {URL}"),
        (
            {"error_kind": "refused", "error": "dial tcp 10.0.0.1:9292: connection refused"},
            c.CONNECTION_FAILED,
            "False",
            f"connection failed: {URL}: dial tcp 10.0.0.1:9292: connection refused",
        ),
        (
            {"error_kind": "other", "error": "unexpected EOF"},
            c.HEALTH_CHECK_FAILED,
            "False",
            f"health check failed: {URL}: unexpected EOF",
        ),
    ],
    ids=["200", "204", "503", "500-with-body", "timeout", "dns", "refused", "other"],
)
def test_the_health_probe_sets_glance_api_ready(health, reason, status, message):
    cond, requeue = health_condition(Health.from_data({"url": URL, **health}))
    assert (cond["type"], cond["status"], cond["reason"], cond["message"]) == (
        c.GLANCE_API_READY,
        status,
        reason,
        message,
    )
    assert requeue == (None if status == "True" else 10)


def test_a_long_body_is_cut_to_256_bytes():
    cond, _ = health_condition(Health(URL, status_code=500, body="é" * 300))
    excerpt = cond["message"].removeprefix("Glance API returned HTTP 500: ")
    assert len(excerpt.encode()) <= 256 and excerpt == "é" * 128


def test_an_unhealthy_api_polls_and_a_pass_without_a_probe_keeps_the_condition():
    r = converged()
    result = r.run_pass({"url": URL, "status_code": 503})
    assert result.requeue_after == 10
    assert reasons(r)[c.GLANCE_API_READY] == ("False", c.API_UNHEALTHY)
    assert reasons(r)[c.READY] == ("False", c.NOT_ALL_READY)
    unprobed = r.run_pass(None)
    assert unprobed.status_patch is None
    assert reasons(r)[c.GLANCE_API_READY] == ("False", c.API_UNHEALTHY)


def test_the_probe_url_is_in_cluster_whatever_the_gateway():
    glance = glance_object(patched(GLANCE, {"spec": {"gateway": ROUTE}}))
    assert health_check_url(glance) == URL
    assert endpoint_url(glance) == "https://images.example.com/"
    assert endpoint_url(glance_object(GLANCE)) == "http://glance.openstack.svc.cluster.local:9292/"


# --- events only on change -------------------------------------------------------------------------------


def test_extra_config_warns_when_it_turns_false_or_its_message_changes():
    r = make(spec={"extraConfig": {"DEFAULT": {"debug": "True"}}})
    first = r.run_pass()
    assert [e["reason"] for e in first.events] == ["ExtraConfigOwnedKeyOverride"]
    assert reasons(r)[c.EXTRA_CONFIG_HEALTHY] == ("False", c.OWNED_KEYS_OVERRIDDEN)
    assert not [e for e in r.run_pass().events if e["reason"] == "ExtraConfigOwnedKeyOverride"]
    edit_spec(r, {"extraConfig": {"DEFAULT": {"debug": "True", "use_stderr": "false"}}})
    changed = r.run_pass()
    assert [e["reason"] for e in changed.events] == ["ExtraConfigOwnedKeyOverride"]
    since = r.condition(c.EXTRA_CONFIG_HEALTHY)["lastTransitionTime"]
    r.run_pass()
    assert r.condition(c.EXTRA_CONFIG_HEALTHY)["lastTransitionTime"] == since


def test_the_status_is_stamped_with_the_generation_and_transition_times_hold():
    r = converged()
    since = r.condition(c.DEPLOYMENT_READY)["lastTransitionTime"]
    edit_spec(r, {"deployment": {"replicas": 2}})
    r.converge()
    assert r.glance["status"]["observedGeneration"] == 2
    assert all(cond["observedGeneration"] == 2 for cond in r.glance["status"]["conditions"])
    # the rollout turned DeploymentReady False and back: a new transition time
    assert r.condition(c.DEPLOYMENT_READY)["lastTransitionTime"] != since
    assert r.condition(c.SECRETS_READY)["lastTransitionTime"] == "2026-03-01T12:00:30Z"


def test_the_result_is_plain_data():
    r = make()
    data = r.run_pass().as_dict()
    assert set(data) == {
        "actions",
        "status",
        "status_patch",
        "events",
        "requeue_after",
        "finalizer",
        "finalizers",
        "target_cluster",
        "annotations",
    }
    assert data["actions"][0]["kind"] == "ConfigMap"
    assert GLANCE_UID in str(data["actions"][0]["object"]["metadata"]["ownerReferences"])


# --- someone else's objects under owned names ------------------------------------------------------------

FULL_SPEC = {
    "autoscaling": {"maxReplicas": 4, "targetCPUUtilization": 80},
    "networkPolicy": {"ingress": [{"namespaceSelector": {"matchLabels": {"team": "a"}}}]},
    "gateway": ROUTE,
}


def foreign(kind: str, name: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": "openstack",
            "uid": f"foreign-{kind}",
            "generation": 1,
            "ownerReferences": [owner_ref("other-uid", kind="Glance", name="other")],
        },
        "spec": {},
    }


@pytest.mark.parametrize(
    "kind, name, condition",
    [
        ("HorizontalPodAutoscaler", "glance", c.HPA_READY),
        ("NetworkPolicy", "glance", c.NETWORK_POLICY_READY),
        ("HTTPRoute", "glance", c.HTTPROUTE_READY),
        ("CronJob", "glance-db-purge", c.DB_PURGE_READY),
        ("Job", "glance-db-sync", c.DATABASE_READY),
        ("Secret", "glance-db-connection", c.SECRETS_READY),
        ("Service", "glance", c.DEPLOYMENT_READY),
        ("PodDisruptionBudget", "glance", c.DEPLOYMENT_READY),
    ],
)
def test_an_owned_name_taken_by_someone_else_is_a_condition_and_is_never_written(
    kind, name, condition
):
    r = make(spec=FULL_SPEC, cluster=FakeCluster([foreign(kind, name)]))
    r.converge()
    cond = r.condition(condition)
    assert (cond["status"], cond["reason"]) == ("False", "OwnershipConflict")
    assert "not by this Glance" in cond["message"]
    assert not [a for a in r.cluster.writes if (a.kind, a.name) == (kind, name)]
    assert r.results[-1].requeue_after is not None


def test_a_config_copy_of_ours_still_being_deleted_is_waited_for():
    r = make()
    name = r.run_pass(settle=False).plan.config_map
    r.cluster.get("ConfigMap", name)["metadata"]["deletionTimestamp"] = "2026-03-01T00:00:00Z"
    result = r.run_pass()
    assert reasons(r)[c.SECRETS_READY] == ("False", c.CONFIG_ERROR)
    assert "is being deleted" in r.condition(c.SECRETS_READY)["message"]
    assert result.requeue_after == 5


def test_without_the_gateway_api_and_without_a_gateway_the_route_is_not_required():
    r = converged(cluster=FakeCluster(gateway_api=False))
    assert reasons(r)[c.HTTPROUTE_READY] == ("True", c.HTTPROUTE_NOT_REQUIRED)
    assert not [a for a in r.cluster.writes if a.kind == "HTTPRoute"]


def test_a_health_result_may_be_given_as_data_or_as_a_health():
    probe = Health(URL, status_code=200)
    assert Health.from_data(probe) is probe
    assert Health.from_data({"url": URL}) == Health(URL)
    cond, requeue = health_condition(Health(URL))  # neither a code nor an error kind
    assert (cond["reason"], cond["message"], requeue) == (
        c.HEALTH_CHECK_FAILED,
        f"health check failed: {URL}: no answer",
        10,
    )


# --- managed mode: the MariaDB gate and the Database, User and Grant (§2.3 step 5, §2.10) ----

MANAGED = {"database": {"host": DELETE, "clusterRef": {"name": "mariadb"}}}
DYNAMIC = {"database": {**MANAGED["database"], "credentialsMode": "Dynamic"}}
READY = {"conditions": [{"type": "Ready", "status": "True", "reason": "Ready", "message": "ok"}]}
MARIADB = {
    "apiVersion": "k8s.mariadb.com/v1alpha1",
    "kind": "MariaDB",
    "metadata": {"name": "mariadb", "namespace": "openstack", "uid": "mariadb-uid"},
    "status": READY,
}


def managed(spec: dict = MANAGED, cluster_ready: bool = True, **kw) -> Reconciler:
    mariadb = copy.deepcopy(MARIADB)
    if not cluster_ready:
        mariadb["status"] = {"conditions": [{"type": "Ready", "status": "False"}]}
    return make(spec=spec, database_cluster=mariadb, **kw)


def set_ready(r: Reconciler, *kinds: str) -> None:
    for kind in kinds:
        r.cluster.get(kind, "glance")["status"] = copy.deepcopy(READY)


def database(r: Reconciler) -> tuple[str, str, str]:
    cond = r.condition(c.DATABASE_READY)
    return cond["status"], cond["reason"], cond["message"]


@pytest.mark.parametrize("cluster_ready", [False, None])
def test_managed_mode_waits_for_a_ready_mariadb_before_anything_of_the_database(cluster_ready):
    r = make(spec=MANAGED) if cluster_ready is None else managed(cluster_ready=False)
    result = r.run_pass()
    assert database(r) == ("False", "ClusterNotReady", 'MariaDB cluster "mariadb" is not ready')
    assert result.requeue_after == 30
    written = kinds_written(result)
    assert not {"Database", "User", "Grant", "Job"} & set(written), written


def test_managed_static_applies_the_database_then_the_user_and_grant_then_syncs():
    r = managed()
    first = r.run_pass()
    assert [w for w in writes(first) if w[1] in ("Database", "User", "Grant", "Job")] == [
        ("apply", "Database", "glance", ap.ABSENT)
    ]
    assert database(r)[:2] == ("False", "WaitingForDatabase")
    assert (
        'Database glance to be ready (mariadb-operator, on the MariaDB "mariadb")' in database(r)[2]
    )
    assert first.requeue_after == 30
    database_obj = r.cluster.get("Database", "glance")
    assert database_obj["metadata"]["ownerReferences"] == [owner_ref()]
    assert database_obj["spec"]["mariaDbRef"] == {"name": "mariadb"}

    r.run_pass()  # still not Ready: nothing more
    assert r.cluster.get("User", "glance") is None
    set_ready(r, "Database")
    second = r.run_pass()
    assert [w[1] for w in writes(second) if w[1] in ("User", "Grant", "Job")] == ["User", "Grant"]
    assert database(r)[:2] == ("False", "WaitingForDatabase")
    assert "User glance and Grant glance" in database(r)[2]

    set_ready(r, "User", "Grant")
    third = r.run_pass()
    assert "Job" in kinds_written(third)
    assert database(r)[:2] == ("False", "DBSyncInProgress")
    secret_dsn = r.cluster.get("Secret", "glance-db-connection")["data"]["connection"]
    assert base64.b64decode(secret_dsn).decode() == (
        "mysql+pymysql://glance:db-pass@mariadb.openstack.svc:3306/glance?charset=utf8"
    )
    r.converge()
    assert r.condition(c.DATABASE_READY)["reason"] == c.DATABASE_SYNCED


def test_managed_dynamic_manages_the_database_alone_and_connects_as_the_secret_user():
    secrets = [
        secret("glance-db", username="v-glance-7d1e", password="issued"),
        secret("glance-service-user", password="service-pass"),
        *default_secrets()[2:],
    ]
    r = managed(DYNAMIC, secrets=secrets)
    r.run_pass()
    set_ready(r, "Database")
    result = r.run_pass()
    assert "Job" in kinds_written(result)
    assert r.cluster.get("User", "glance") is None and r.cluster.get("Grant", "glance") is None
    dsn = base64.b64decode(r.cluster.get("Secret", "glance-db-connection")["data"]["connection"])
    assert dsn.decode().startswith(
        "mysql+pymysql://v-glance-7d1e:issued@mariadb.openstack.svc:3306/"
    )


def test_a_mariadb_resource_someone_else_controls_is_an_ownership_conflict():
    foreign = {
        "apiVersion": "k8s.mariadb.com/v1alpha1",
        "kind": "Database",
        "metadata": {
            "name": "glance",
            "namespace": "openstack",
            "uid": "db-uid",
            "ownerReferences": [owner_ref("other-uid", "Keystone", "keystone")],
        },
        "status": READY,
    }
    r = make(spec=MANAGED, database_cluster=MARIADB, cluster=FakeCluster([foreign]))
    result = r.run_pass()
    assert database(r)[:2] == ("False", c.OWNERSHIP_CONFLICT)
    assert "Database" not in kinds_written(result)


def test_deleting_a_managed_glance_deletes_its_mariadb_resources_before_the_finalizer():
    r = managed()
    r.run_pass()
    set_ready(r, "Database")
    r.run_pass()
    r.glance["metadata"]["deletionTimestamp"] = "2026-03-01T00:00:00Z"
    first = decide_pass(r.glance, r.inputs, r.cluster.live(), NOW)
    assert [(a.verb, a.kind, a.name) for a in first.writes] == [
        ("delete", "Database", "glance"),
        ("delete", "User", "glance"),
        ("delete", "Grant", "glance"),
    ]
    assert first.finalizer is None and first.requeue_after == 30
    assert [e["reason"] for e in first.events] == ["FinalizingDatabase"]
    for kind in ("Database", "User", "Grant"):  # mariadb-operator's finalizers still run
        r.cluster.get(kind, "glance")["metadata"]["deletionTimestamp"] = "2026-03-01T00:00:01Z"
    second = decide_pass(r.glance, r.inputs, r.cluster.live(), NOW)
    assert second.writes == [] and second.finalizer == REMOVE
    assert [e["reason"] for e in second.events] == ["DatabaseFinalized"]
    r.cluster.objects.clear()
    assert decide_pass(r.glance, r.inputs, r.cluster.live(), NOW).finalizer == REMOVE
