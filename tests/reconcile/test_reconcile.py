"""Reconcile scenarios: the playbooks against an API server, passes driven as a caller would.

Each scenario creates the sample's objects, runs ``playbooks/glance.yml`` (and
``glancebackend.yml``) through ansible-runner with a kubeconfig, plays the controllers that
do not run between passes (``ApiEnv.settle``), and checks what the cluster holds: the
conditions, the owned objects, what was written. The scenarios follow reference-spec §7.1
(those needing no kubelet) and §7.3 (the controller tests).
"""

from __future__ import annotations

import base64

import pytest
from support.api_env import ApiEnv, sample_documents
from support.fake_apiserver import FakeAPIServer
from support.playbook_run import run_playbook

from ansible_collections.c5c3.glance.plugins.module_utils.desired.content_address import (
    CONFIG_BASE_LABEL,
)
from ansible_collections.c5c3.glance.plugins.module_utils.kube.kube_client import KubeClient
from runner.passes.extravars import run_outcome

GATHER = "c5c3.glance.gather"
APPLY = "c5c3.glance.apply"
REPORT = "c5c3.glance.report"


def volume_source(deployment: dict, volume: str) -> str:
    for item in deployment["spec"]["template"]["spec"]["volumes"]:
        if item["name"] == volume:
            source = item.get("configMap") or item.get("secret") or {}
            return source.get("name") or source.get("secretName")
    raise KeyError(volume)


def converge(api, passes: int = 8):
    """Glance passes, settling the simulated controllers after each, until a pass writes
    nothing and reports nothing; that pass is returned."""
    for _ in range(passes):
        run = api.glance_pass()
        if run.step_actions == [GATHER]:
            return run
        api.settle()
    raise AssertionError(
        f"no steady state after {passes} passes: {[r.step_actions for r in api.runs]}"
    )


def status_of(api, type_: str) -> tuple[str, str]:
    cond = api.condition("Glance", "glance", type_)
    return cond.get("status"), cond.get("reason")


@pytest.mark.double_sees
def test_the_minimal_sample_converges_in_three_passes(api):
    api.create_all(sample_documents())
    if api.double is not None:
        api.double.reset_requests()
    # 1: the finalizer comes with the configuration, the Secrets, the CronJob, the db-sync Job
    first = api.glance_pass()
    assert api.get("Glance", "glance")["metadata"]["finalizers"] == [
        "glance.openstack.c5c3.io/finalizer"
    ]
    assert first.step_actions == [GATHER, APPLY, REPORT]
    if api.double is not None:  # the finalizer is written before anything else
        write = api.double.writes()[0]
        assert (write.method, write.path.rsplit("/", 2)[-2:]) == ("PATCH", ["glances", "glance"])
    assert status_of(api, "SecretsReady") == ("True", "SecretsAvailable")
    assert status_of(api, "BackendsReady") == ("True", "AllBackendsProjected")
    assert status_of(api, "DatabaseReady") == ("False", "DBSyncInProgress")
    assert first.requeue_after == 30
    assert api.get("Job", "glance-db-sync") is not None
    assert api.get("Deployment", "glance") is None  # not before the schema is synced
    [config] = api.list("ConfigMap", selector=f"{CONFIG_BASE_LABEL}=glance-config")
    assert config["immutable"] is True

    api.settle()  # db-sync completes
    # 2: the Deployment, and its Service already narrowed to the API pods
    second = api.glance_pass()
    assert status_of(api, "DatabaseReady") == ("True", "DatabaseSynced")
    assert api.get("Glance", "glance")["status"]["installedRelease"] == "2026.2"
    assert status_of(api, "DeploymentReady") == ("False", "WaitingForDeployment")
    assert second.requeue_after == 10
    deployment = api.get("Deployment", "glance")
    assert volume_source(deployment, "config") == config["metadata"]["name"]
    selector = api.get("Service", "glance")["spec"]["selector"]
    assert selector["app.kubernetes.io/component"] == "api"

    api.settle()  # the Deployment becomes ready
    # 3: the status alone; nothing is left to write
    third = api.glance_pass()
    assert third.step_actions == [GATHER, REPORT]
    assert api.glance_pass().step_actions == [GATHER]  # the no-op that shows it
    glance = api.get("Glance", "glance")
    assert glance["status"]["endpoint"] == (
        f"http://glance.{api.namespace}.svc.cluster.local:9292/"
    )
    assert status_of(api, "DeploymentReady") == ("True", "DeploymentReady")
    if api.reaches_pods:
        assert status_of(api, "GlanceAPIReady") == ("True", "APIHealthy")
        assert status_of(api, "Ready")[0] == "True"
        assert api.health.hits >= 1
    else:  # a bare kube-apiserver's proxy: no Endpoints object, 404 (see support.api_env)
        assert status_of(api, "GlanceAPIReady") == ("False", "EndpointNotReady")
    assert glance["status"]["observedGeneration"] == glance["metadata"]["generation"]


@pytest.mark.double_sees
def test_a_pass_over_an_unchanged_cluster_writes_nothing(api):
    api.create_all(sample_documents())
    converge(api)
    before = api.resource_versions()
    if api.double is not None:
        api.double.reset_requests()
    run = api.glance_pass()
    assert run.step_actions == [GATHER]
    assert api.resource_versions() == before
    if api.double is not None:
        assert api.double.writes() == []
    backend = api.backend_pass("s3-default", glancebackend_wake_parent=False)
    assert backend.step_actions in ([GATHER], [GATHER, REPORT])
    again = api.backend_pass("s3-default", glancebackend_wake_parent=False)
    assert again.step_actions == [GATHER]
    assert api.condition("GlanceBackend", "s3-default", "ConfigProjected")["status"] == "True"


@pytest.mark.parametrize(
    ("playbook", "kind"), [("glance.yml", "Glance"), ("glancebackend.yml", "GlanceBackend")]
)
def test_a_pass_not_told_which_object_fails_saying_how_to_name_it(api, playbook, kind):
    run = run_playbook(playbook, {}, kubeconfig=api.kubeconfig)
    assert not run.ok
    assert run.step_actions == [GATHER]  # the gather step refused: the role has no assert
    var = kind.lower()
    said = (
        f"name the {kind}: its name and namespace are empty (ansible-playbook "
        f"playbooks/{playbook} -e {var}_name=<name> -e {var}_namespace=<namespace>)"
    )
    # gather's own result is hidden (no_log); the rescue fails the pass with its message,
    # and that is the one failure the runner reports
    assert [task.message for task in run_outcome(run.events).failed_tasks] == [said]
    assert run.stats["rescued"] == {"localhost": 1}


@pytest.mark.double_sees
def test_no_default_backend_parks_and_keeps_the_last_good_config(api):
    api.create_all(sample_documents())
    converge(api)
    deployment = api.get("Deployment", "glance")
    copies = {c["metadata"]["name"] for c in api.list("ConfigMap")}
    api.merge_patch("GlanceBackend", "s3-default", {"spec": {"isDefault": False}})
    run = api.glance_pass()
    assert status_of(api, "BackendsReady") == ("False", "NoDefaultBackend")
    assert {c["metadata"]["name"] for c in api.list("ConfigMap")} == copies
    after = api.get("Deployment", "glance")
    assert after["spec"]["template"] == deployment["spec"]["template"]  # nothing rolls
    # NoDefaultBackend asks for no requeue (a backend change brings the next pass); only
    # the health probe, which cannot reach pods on a real kube-apiserver, polls.
    assert run.requeue_after == (None if api.reaches_pods else 10)


def test_a_credential_rotation_rolls_the_pods_through_a_new_backends_secret(api):
    api.create_all(sample_documents())
    converge(api)
    old = volume_source(api.get("Deployment", "glance"), "backends")
    new_key = base64.b64encode(b"rotated-secret-key").decode()
    api.merge_patch("Secret", "glance-s3", {"data": {"secret-access-key": new_key}})
    converge(api)
    new = volume_source(api.get("Deployment", "glance"), "backends")
    assert new != old
    assert new.startswith("glance-backends-")
    assert api.get("Secret", new)["immutable"] is True
    assert api.get("Secret", old) is not None  # kept for a rollback (pruned later, to 3)


def test_old_content_addressed_copies_are_pruned_to_three(api):
    api.create_all(sample_documents())
    converge(api)
    made = [volume_source(api.get("Deployment", "glance"), "config")]
    for level in ("DEBUG", "WARNING", "ERROR", "CRITICAL"):
        api.merge_patch("Glance", "glance", {"spec": {"logging": {"level": level}}})
        converge(api)
        made.append(volume_source(api.get("Deployment", "glance"), "config"))
    names = {
        c["metadata"]["name"]
        for c in api.list("ConfigMap", selector=f"{CONFIG_BASE_LABEL}=glance-config")
    }
    current = made[-1]
    assert len(set(made)) == len(made), made  # every change made a new copy
    assert current in names
    assert names == set(made[1:]), names  # the current copy and the three newest before it


FULL_BLOCKS = {
    "autoscaling": {"minReplicas": 2, "maxReplicas": 4, "targetCPUUtilization": 70},
    "networkPolicy": {"ingress": [{"namespaceSelector": {"matchLabels": {"team": "edge"}}}]},
    "gateway": {"hostname": "glance.example.com", "parentRef": {"name": "public"}},
}


def test_disabling_autoscaling_network_policy_and_gateway_deletes_their_objects(api):
    docs = sample_documents()
    docs[0]["spec"].update(FULL_BLOCKS)
    api.create_all(docs)
    converge(api)
    assert api.get("HorizontalPodAutoscaler", "glance") is not None
    assert api.get("NetworkPolicy", "glance") is not None
    gateway_api = api.client.serves("gateway.networking.k8s.io/v1", "HTTPRoute")
    if gateway_api:
        assert api.get("HTTPRoute", "glance") is not None
    api.merge_patch("Glance", "glance", {"spec": {k: None for k in FULL_BLOCKS}})
    api.glance_pass()
    assert api.get("HorizontalPodAutoscaler", "glance") is None
    assert api.get("NetworkPolicy", "glance") is None
    if gateway_api:
        assert api.get("HTTPRoute", "glance") is None
    assert status_of(api, "HPAReady") == ("True", "HPANotRequired")
    assert status_of(api, "NetworkPolicyReady") == ("True", "NetworkPolicyNotRequired")
    assert status_of(api, "HTTPRouteReady") == ("True", "HTTPRouteNotRequired")


def test_a_backend_default_flip_from_the_backend_playbook_wakes_the_parent(api):
    docs = sample_documents()
    second = {
        "apiVersion": "glance.openstack.c5c3.io/v1alpha1",
        "kind": "GlanceBackend",
        "metadata": {"name": "s3-second"},
        "spec": {
            "glanceRef": {"name": "glance"},
            "type": "S3",
            "isDefault": False,
            "s3": {
                "host": "http://rgw.storage.svc:8080",
                "bucket": "glance-second",
                "credentialsSecretRef": {"name": "glance-s3"},
            },
        },
    }
    api.create_all([*docs, second])
    converge(api)
    attach = api.backend_pass("s3-second", glancebackend_wake_parent=False)
    assert attach.step_actions[-1] == REPORT
    assert api.condition("GlanceBackend", "s3-second", "ConfigProjected")["status"] == "True"
    before = volume_source(api.get("Deployment", "glance"), "config")

    api.merge_patch("GlanceBackend", "s3-default", {"spec": {"isDefault": False}})
    api.merge_patch("GlanceBackend", "s3-second", {"spec": {"isDefault": True}})
    woke = api.backend_pass("s3-second")  # from a workstation: runs the parent's pass too
    assert GATHER in woke.step_actions[1:]  # the parent's gather ran in the same run
    copies = {
        c["metadata"]["name"]: c
        for c in api.list("ConfigMap", selector=f"{CONFIG_BASE_LABEL}=glance-config")
    }
    [new] = set(copies) - {before}
    assert "default_backend = s3-second" in copies[new]["data"]["glance-api.conf"]
    api.settle()  # the db-sync Job of the new configuration runs, then the pods roll
    converge(api)
    assert volume_source(api.get("Deployment", "glance"), "config") == new


def test_deleting_the_glance_releases_the_finalizer(api):
    api.create_all(sample_documents())
    converge(api)
    api.client.delete("glance.openstack.c5c3.io/v1alpha1", "Glance", "glance", api.namespace)
    deleting = api.get("Glance", "glance")
    assert deleting is not None and deleting["metadata"].get("deletionTimestamp")
    run = api.glance_pass()
    assert run.step_actions == [GATHER, APPLY]
    assert api.get("Glance", "glance") is None
    gone = api.glance_pass()  # a pass for a Glance that no longer exists does nothing
    assert gone.step_actions == [GATHER]


def test_a_gateway_without_the_gateway_api_is_reported_and_asked_again(tmp_path):
    """On a cluster that serves no HTTPRoute (the double without the Gateway API)."""
    with FakeAPIServer(gateway_api=False) as double:
        kubeconfig = double.write_kubeconfig(tmp_path / "kubeconfig")
        api = ApiEnv(
            "double", kubeconfig, KubeClient.from_environment(str(kubeconfig)), double=double
        )
        docs = sample_documents()
        docs[0]["spec"]["gateway"] = FULL_BLOCKS["gateway"]
        api.create_all(docs)
        api.glance_pass()
        run = api.glance_pass()
        assert status_of(api, "HTTPRouteReady") == ("False", "GatewayAPINotInstalled")
        assert run.requeue_after == 30  # db-sync runs; the 60 s probe is the longer ask
        assert not any(r.path.endswith("/httproutes/glance") for r in double.requests)


PURGE_RECORD = "cobaltcore.c5c3.io/last-db-purge-job-uid"


def purge_run(api, name: str, state: str) -> dict:
    """A finished run of the Glance's db-purge CronJob, as the CronJob controller makes it."""
    cronjob = api.get("CronJob", "glance-db-purge")
    api.client.create(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": name,
                "namespace": api.namespace,
                "labels": cronjob["spec"]["jobTemplate"]["metadata"]["labels"],
                "ownerReferences": [
                    {
                        "apiVersion": "batch/v1",
                        "kind": "CronJob",
                        "name": "glance-db-purge",
                        "uid": cronjob["metadata"]["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": cronjob["spec"]["jobTemplate"]["spec"],
        }
    )
    api.settle(jobs=state)
    return api.get("Job", name)


def test_a_finished_purge_run_is_recorded_on_the_glance_once_and_a_refused_record_waits(api):
    """The reference's record of the last finished purge run
    (``cobaltcore.c5c3.io/last-db-purge-job-uid``): written by the pass that sees the run
    finished, at the resourceVersion it read; a pass whose Glance has moved on since (an
    edit between its read and its write: here a stale object handed to the pass) writes
    nothing over it, warns as the reference does and leaves the record to the next pass."""
    api.create_all(sample_documents())
    converge(api)
    stale = api.get("Glance", "glance")
    run = purge_run(api, "glance-db-purge-29000000", "Complete")
    recorded = api.glance_pass()
    assert recorded.step_actions == [GATHER, APPLY]
    glance = api.get("Glance", "glance")
    assert glance["metadata"]["annotations"][PURGE_RECORD] == run["metadata"]["uid"]
    assert glance["metadata"]["generation"] == stale["metadata"]["generation"]
    assert api.glance_pass().step_actions == [GATHER]  # recorded once

    failed = purge_run(api, "glance-db-purge-29000060", "Failed")
    deferred = api.glance_pass(_glance_openstack_c5c3_io_glance=stale)
    assert deferred.ok and deferred.step_actions == [GATHER, APPLY, REPORT]
    glance = api.get("Glance", "glance")
    assert glance["metadata"]["annotations"][PURGE_RECORD] == run["metadata"]["uid"]
    warnings = [
        e["message"]
        for e in api.list("Event")
        if e["reason"] == "DBPurgeMetricEmissionDeferred" and e["type"] == "Warning"
    ]
    assert len(warnings) == 1
    assert warnings[0].startswith(
        "Patching last-observed db-purge Job UID failed; metric emission deferred to the next "
        "reconcile: Operation cannot be fulfilled on glances.glance.openstack.c5c3.io "
        '"glance": the object has been modified'
    ), warnings
    api.glance_pass()
    glance = api.get("Glance", "glance")
    assert glance["metadata"]["annotations"][PURGE_RECORD] == failed["metadata"]["uid"]
    assert status_of(api, "DBPurgeReady") == ("False", "DBPurgeJobFailed")
