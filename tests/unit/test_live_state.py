"""Readiness predicates and the live-object reads of a pass (reference-spec §2.3, §4.4, §4.12)."""

from __future__ import annotations

import pytest
from support.cluster import (
    GLANCE_UID,
    job_status,
    owner_ref,
    ready_deployment_status,
    route_status,
)

from ansible_collections.c5c3.glance.plugins.module_utils.kube import live_state as ls

API = "app.kubernetes.io/component"
SELECTOR = {"app.kubernetes.io/name": "glance", "app.kubernetes.io/instance": "glance"}


def deployment(generation=2, replicas=3, status=None, component="api", volumes=None):
    labels = dict(SELECTOR)
    if component:
        labels[API] = component
    spec = {
        "selector": {"matchLabels": SELECTOR},
        "template": {"metadata": {"labels": labels}, "spec": {"volumes": volumes or []}},
    }
    if replicas is not None:
        spec["replicas"] = replicas
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "glance", "namespace": "openstack", "generation": generation},
        "spec": spec,
        "status": status or {},
    }


def with_status(**status):
    return deployment(status=status)


READY = ready_deployment_status(2, 3)
AVAILABLE = READY["conditions"]


@pytest.mark.parametrize(
    "deploy, expected",
    [
        (None, False),
        (deployment(status=READY), True),
        (deployment(status={**READY, "observedGeneration": 1}), False),
        (deployment(status={**READY, "readyReplicas": 2}), False),
        (deployment(status={**READY, "readyReplicas": 4}), True),  # a surge pod counts
        (deployment(status={**READY, "conditions": []}), False),
        (
            deployment(status={**READY, "conditions": [{"type": "Available", "status": "False"}]}),
            False,
        ),
        (deployment(replicas=None, status={**READY, "readyReplicas": 1}), True),  # default 1
        (deployment(replicas=0, status={"observedGeneration": 2, "conditions": AVAILABLE}), True),
    ],
    ids=[
        "absent",
        "ready",
        "generation-not-observed",
        "too-few-ready",
        "surge",
        "no-available-condition",
        "available-false",
        "replicas-default",
        "scaled-to-zero",
    ],
)
def test_deployment_ready(deploy, expected):
    assert ls.deployment_ready(deploy) is expected
    assert ls.is_ready(deploy) is expected


CONVERGED = {"observedGeneration": 2, "replicas": 3, "updatedReplicas": 3}


@pytest.mark.parametrize(
    "deploy, expected",
    [
        (None, False),
        (deployment(status=CONVERGED), True),
        (deployment(status={**CONVERGED, "readyReplicas": 0}), True),  # readiness is not asked
        (deployment(status={**CONVERGED, "observedGeneration": 1}), False),
        (deployment(status={**CONVERGED, "replicas": 4}), False),  # an old pod survives
        (deployment(status={"observedGeneration": 2}), False),  # no pod yet
        (deployment(status=CONVERGED, component=None), False),  # template without the label
        (deployment(status=CONVERGED, component="db-purge"), False),
    ],
    ids=[
        "absent",
        "converged",
        "unready-but-converged",
        "generation",
        "old-pod",
        "no-pods",
        "no-label",
        "other-component",
    ],
)
def test_deployment_converged(deploy, expected):
    assert ls.deployment_converged(deploy) is expected


def job(conditions=None):
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j"},
        "status": {"conditions": conditions or []},
    }


@pytest.mark.parametrize(
    "obj, expected",
    [
        (None, ls.JOB_ABSENT),
        (job(), ls.JOB_RUNNING),
        ({"kind": "Job", "metadata": {"name": "j"}}, ls.JOB_RUNNING),
        (job(job_status("Complete")["conditions"]), ls.JOB_COMPLETE),
        (job(job_status("Failed")["conditions"]), ls.JOB_FAILED),
        (job([{"type": "FailureTarget", "status": "True"}]), ls.JOB_RUNNING),
        (job([{"type": "SuccessCriteriaMet", "status": "True"}]), ls.JOB_RUNNING),
        (job([{"type": "Complete", "status": "False"}]), ls.JOB_RUNNING),
        (job([{"type": "Suspended", "status": "True"}]), ls.JOB_RUNNING),
    ],
    ids=[
        "absent",
        "no-conditions",
        "no-status",
        "complete",
        "failed",
        "failure-target",
        "success-criteria-met",
        "complete-false",
        "suspended",
    ],
)
def test_job_state_follows_the_terminal_conditions(obj, expected):
    assert ls.job_state(obj) == expected
    assert ls.is_ready(obj) is (expected == ls.JOB_COMPLETE)


def test_a_failed_job_names_its_reason_and_message():
    failed = job(job_status("Failed", "Job has reached the specified backoff limit")["conditions"])
    assert ls.job_failure_detail(failed) == (
        "BackoffLimitExceeded: Job has reached the specified backoff limit"
    )
    assert ls.job_failure_detail(job()) == ""


def route(status, generation=1):
    return {
        "kind": "HTTPRoute",
        "metadata": {"name": "glance", "generation": generation},
        "status": status,
    }


def two_parents(first: bool, second: bool) -> dict:
    one, two = route_status(first)["parents"][0], route_status(second)["parents"][0]
    return {"parents": [one, two]}


@pytest.mark.parametrize(
    "obj, expected",
    [
        (None, False),
        (route({}), False),
        (route(route_status(True)), True),
        (route(route_status(False)), False),
        (route(route_status(True, generation=1), generation=2), False),  # stale acceptance
        (route(two_parents(False, True)), True),
        (
            route({"parents": [{"conditions": [{"type": "Accepted", "status": "True"}]}]}, 5),
            True,
        ),  # no observedGeneration: counts
    ],
    ids=["absent", "no-status", "accepted", "refused", "stale", "second-parent", "no-generation"],
)
def test_httproute_accepted(obj, expected):
    assert ls.httproute_accepted(obj) is expected


VOLUMES = [
    {"name": "config", "configMap": {"name": "glance-config-aaaa1111"}},
    {"name": "backends", "secret": {"secretName": "glance-backends-bbbb2222"}},
    {"name": "staging", "emptyDir": {}},
]


@pytest.mark.parametrize(
    "deploy, expected",
    [
        (deployment(volumes=VOLUMES), ("glance-config-aaaa1111", "glance-backends-bbbb2222")),
        (None, ("", "")),
        (deployment(volumes=VOLUMES[:1]), ("glance-config-aaaa1111", "")),
        (deployment(volumes=[{"name": "config", "secret": {"secretName": "x"}}]), ("", "")),
    ],
    ids=["both", "no-deployment", "no-backends-volume", "wrong-source"],
)
def test_mounted_artifacts_are_the_config_and_backends_volumes(deploy, expected):
    assert ls.mounted_artifacts(deploy) == expected


def service(selector):
    return {"kind": "Service", "metadata": {"name": "glance"}, "spec": {"selector": selector}}


NARROW = {**SELECTOR, API: "api"}


@pytest.mark.parametrize(
    "live_service, live_deployment, expected",
    [
        (None, None, NARROW),  # the Deployment this pass creates runs the current template
        (service(SELECTOR), None, NARROW),  # its Deployment deleted to be created again
        (None, deployment(status=CONVERGED), NARROW),
        (None, deployment(status={**CONVERGED, "replicas": 4}), SELECTOR),
        (None, deployment(status=CONVERGED, component=None), SELECTOR),
        (service(SELECTOR), deployment(status={**CONVERGED, "replicas": 4}), SELECTOR),
        (service(SELECTOR), deployment(status=CONVERGED), NARROW),
        (service(NARROW), deployment(status={**CONVERGED, "replicas": 4}), NARROW),  # latched
        (service(NARROW), None, NARROW),
    ],
    ids=[
        "first-install",
        "deployment-gone",
        "converged",
        "rolling",
        "template-without-label",
        "wide-rolling",
        "narrows",
        "latched-mid-rollout",
        "latched-no-deploy",
    ],
)
def test_the_service_selector_narrows_once_every_pod_can_match_and_never_widens(
    live_service, live_deployment, expected
):
    assert ls.service_selector(SELECTOR, live_service, live_deployment) == expected
    # a desired selector that already carries the label is decided the same way
    assert ls.service_selector(NARROW, live_service, live_deployment) == expected
    assert ls.narrow_selector(live_service, live_deployment) is (expected == NARROW)


def purge_job(name, created, state, cronjob="glance-db-purge", uid="cj-uid"):
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "creationTimestamp": created,
            "ownerReferences": [owner_ref(uid, "CronJob", cronjob)],
        },
        "status": job_status(state) if state else {},
    }


def test_the_newest_terminal_run_of_the_cronjob_is_reported():
    jobs = [
        purge_job("glance-db-purge-1", "2026-03-01T00:01:00Z", "Failed"),
        purge_job("glance-db-purge-2", "2026-03-02T00:01:00Z", "Complete"),
        purge_job("glance-db-purge-3", "2026-03-03T00:01:00Z", None),  # still running
        purge_job("other-db-purge-9", "2026-03-04T00:01:00Z", "Failed", cronjob="other"),
        purge_job("glance-db-purge-8", "2026-03-05T00:01:00Z", "Failed", uid="old-uid"),
    ]
    newest = ls.newest_terminal_job(jobs, "glance-db-purge", "cj-uid")
    assert newest["metadata"]["name"] == "glance-db-purge-2"
    # without the CronJob's uid, any CronJob of that name counts
    assert ls.newest_terminal_job(jobs, "glance-db-purge")["metadata"]["name"] == (
        "glance-db-purge-8"
    )
    assert ls.newest_terminal_job([], "glance-db-purge") is None


def test_ties_in_creation_time_go_to_the_greater_name():
    jobs = [
        purge_job("glance-db-purge-a", "2026-03-01T00:01:00Z", "Failed"),
        purge_job("glance-db-purge-b", "2026-03-01T00:01:00Z", "Complete"),
    ]
    assert ls.newest_terminal_job(jobs, "glance-db-purge")["metadata"]["name"] == (
        "glance-db-purge-b"
    )


@pytest.mark.parametrize(
    "refs, controlled, other",
    [
        ([owner_ref()], True, False),
        ([owner_ref("someone-else")], False, True),
        ([{**owner_ref(), "controller": False}], False, False),
        ([], False, False),
    ],
    ids=["ours", "someone-elses", "owner-not-controller", "none"],
)
def test_control_is_a_controller_reference_to_the_glance_uid(refs, controlled, other):
    obj = {"metadata": {"name": "x", "ownerReferences": refs}}
    assert ls.controlled_by(obj, GLANCE_UID) is controlled
    assert ls.controlled_by_other(obj, GLANCE_UID) is other


def test_kinds_without_a_predicate_are_ready_once_they_exist():
    assert ls.is_ready({"kind": "ConfigMap", "metadata": {"name": "x"}})
    assert ls.is_ready({"kind": "CronJob", "metadata": {"name": "x"}})
    assert not ls.is_ready(None)
    assert set(ls.READY_PREDICATES) == {"Deployment", "Job", "HTTPRoute", "CronJob"}


def test_a_flat_list_of_live_objects_is_sorted_by_what_the_pass_reads():
    def obj(kind, name, labels=None):
        return {"kind": kind, "metadata": {"name": name, "labels": labels or {}}}

    base = "cobaltcore.c5c3.io/config-base"
    live = ls.live_objects(
        "glance",
        [
            obj("Deployment", "glance"),
            obj("Service", "glance"),
            obj("Job", "glance-db-sync"),
            obj("Job", "glance-db-purge-123"),
            obj("CronJob", "glance-db-purge"),
            obj("Secret", "glance-db-connection"),
            obj("ConfigMap", "glance-config-1", {base: "glance-config"}),
            obj("ConfigMap", "glance-config-2", {base: "other-config"}),
            obj("Secret", "glance-backends-1", {base: "glance-backends"}),
            obj("Deployment", "unrelated"),
        ],
        gateway_api=False,
    )
    assert set(live.objects) == {
        "deployment",
        "service",
        "db_sync_job",
        "db_purge_cronjob",
        "db_connection_secret",
    }
    assert [o["metadata"]["name"] for o in live.config_maps] == ["glance-config-1"]
    assert [o["metadata"]["name"] for o in live.backends_secrets] == ["glance-backends-1"]
    assert [o["metadata"]["name"] for o in live.jobs] == ["glance-db-purge-123"]
    assert live.copy_named("config_map", "glance-config-1") is live.config_maps[0]
    assert live.copy_named("backends_secret", "nope") is None
    assert live.listed("deployment") == ()
    assert live.gateway_api is False


def test_creation_times_may_be_datetimes_and_a_missing_one_is_the_oldest():
    from datetime import UTC, datetime

    jobs = [
        purge_job("glance-db-purge-a", None, "Failed"),
        purge_job("glance-db-purge-b", datetime(2026, 3, 1), "Complete"),  # naive: UTC
        purge_job("glance-db-purge-c", datetime(2026, 2, 1, tzinfo=UTC), "Failed"),
    ]
    assert ls.newest_terminal_job(jobs, "glance-db-purge")["metadata"]["name"] == (
        "glance-db-purge-b"
    )
