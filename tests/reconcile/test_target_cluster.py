"""Target clusters against two real kube-apiservers (issue 25 item 3, reference-spec §2.11).

Two private etcd + kube-apiserver pairs on loopback: the management cluster (the session's,
serving our CRDs) holds the Glance, its GlanceBackend, its status, its finalizers and the
registration Secret of the target cluster; the target cluster (started here, serving no
CRD of ours) gets every child, in the namespace of the same name, and holds the credential
Secrets the children use. The passes run ``playbooks/glance.yml`` and
``playbooks/glancebackend.yml`` with the management cluster's kubeconfig, as the runner
does; the test plays the target's kubelet and controllers (a Deployment turning ready, a
Job completing) through its API.

Skipped, saying why, without the binaries (``KUBE_ASSETS_DIR``).
"""

from __future__ import annotations

import subprocess
import time

import pytest
from support.api_env import api_env
from support.target_clusters import (
    CHILD_KINDS,
    MAIN_FINALIZER,
    OWNER_LABELS,
    REMOTE_FINALIZER,
    USER_SECRETS,
    Clusters,
)

pytestmark = pytest.mark.integration


@pytest.fixture
def api(request, tmp_path):
    yield from api_env("kube-apiserver", request, tmp_path, "target")


@pytest.fixture
def clusters(api, target_apiserver, tmp_path):
    return Clusters(api, target_apiserver, tmp_path)


def test_children_go_to_the_target_cluster_and_status_stays_in_the_management_cluster(
    api, target_apiserver, tmp_path
):
    c = Clusters(api, target_apiserver, tmp_path, clusters_namespace="c5c3-clusters")
    if api.client.get("v1", "Secret", "edge", c.clusters_namespace) is not None:
        c.deregister()
    c.scene()

    # No registration: TargetClusterUnavailable, polled every 15 s, no finalizer, nothing written.
    run = api.glance_pass(**c.extra)
    assert run.requeue_after == 15
    cond = c.secrets_ready()
    assert (cond["status"], cond["reason"]) == ("False", "TargetClusterUnavailable")
    assert (
        cond["message"]
        == f'cluster "edge" is not registered: no Secret {c.clusters_namespace}/edge'
    )
    assert (c.glance()["metadata"].get("finalizers") or []) == []
    assert c.children(c.target) == {}

    # A Secret without the registration label registers nothing.
    c.register(label=False)
    api.glance_pass(**c.extra)
    assert "lacks the label" in c.secrets_ready()["message"]

    # Registered (with the documented commands): every child on the target, none in the
    # management cluster.
    c.deregister()
    assert len(c.register_as_documented()) == 2
    api.glance_pass(**c.extra)
    glance = c.glance()
    assert glance["metadata"]["finalizers"] == [MAIN_FINALIZER, REMOTE_FINALIZER]
    remote = c.children(c.target)
    # the configuration, the db-connection Secret, the purge CronJob and the db-sync Job
    # (the Deployment waits for the schema)
    assert {kind for kind, _ in remote} == {"ConfigMap", "Secret", "CronJob", "Job"}
    assert c.children(api.client) == {}, "no child may be written to the management cluster"
    for (kind, name), obj in remote.items():
        meta = obj["metadata"]
        assert not meta.get("ownerReferences"), (
            f"{kind} {name} names an owner absent on its cluster"
        )
        labels = meta.get("labels") or {}
        assert [labels.get(k) for k in OWNER_LABELS] == ["Glance", "glance", c.namespace], (
            f"{kind} {name}"
        )

    # The target's controllers run; the passes converge with the status in the management cluster.
    for _ in range(6):
        c.settle()
        api.glance_pass(**c.extra)
    status = c.glance()["status"]
    by_type = {cond["type"]: cond for cond in status["conditions"]}
    assert by_type["SecretsReady"]["status"] == "True"
    assert by_type["DatabaseReady"]["reason"] == "DatabaseSynced"
    assert by_type["DeploymentReady"]["status"] == "True"
    # the health probe went through the target's service proxy (no endpoints there: no kubelet)
    assert by_type["GlanceAPIReady"]["reason"] == "EndpointNotReady"
    remote = c.children(c.target)
    assert {kind for kind, _ in remote} == set(kind for _, kind in CHILD_KINDS)
    assert c.children(api.client) == {}
    for (kind, name), obj in remote.items():
        labels = obj["metadata"].get("labels") or {}
        assert [labels.get(k) for k in OWNER_LABELS] == ["Glance", "glance", c.namespace], (
            f"{kind} {name}"
        )
        assert not obj["metadata"].get("ownerReferences"), f"{kind} {name}"

    # kubectl get glance -o wide shows where the children are (the Target column).
    wide = subprocess.run(
        [str(c.server.assets / "kubectl"), "get", "glance", "-n", c.namespace, "-o", "wide"],
        env={"KUBECONFIG": str(api.kubeconfig), "HOME": str(c.tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.splitlines()
    header, row = wide[0].split(), wide[1].split()
    assert header[-1] == "TARGET" and row[-1] == "edge", wide

    # The backend follows its parent: credentials and projection read on the target.
    api.backend_pass("glance-s3-default", **c.extra)
    backend = {
        cond["type"]: cond
        for cond in api.get("GlanceBackend", "glance-s3-default")["status"]["conditions"]
    }
    assert backend["CredentialsReady"]["status"] == "True"
    assert backend["ConfigProjected"]["status"] == "True"

    # A pass over the converged pair writes nothing anywhere; its reads: the Glance, the
    # backends and the registration here, the rest there (printed: the cost of a target).
    before = {k: o["metadata"]["resourceVersion"] for k, o in c.children(c.target).items()}
    run = api.glance_pass(glance_pass_no_log=False, **c.extra)
    assert run.step_actions == ["c5c3.glance.gather"]
    print(
        f"\n[target] converged pass: {run.result_of('c5c3.glance.gather')['api_requests']} API requests"
    )
    assert before == {k: o["metadata"]["resourceVersion"] for k, o in c.children(c.target).items()}

    # Deregistered: reported, the children on the target untouched.
    c.deregister()
    api.glance_pass(**c.extra)
    assert c.secrets_ready()["reason"] == "TargetClusterUnavailable"
    assert before == {k: o["metadata"]["resourceVersion"] for k, o in c.children(c.target).items()}
    api.backend_pass("glance-s3-default", **c.extra)
    backend = {
        cond["type"]: cond
        for cond in api.get("GlanceBackend", "glance-s3-default")["status"]["conditions"]
    }
    assert backend["CredentialsReady"]["reason"] == "TargetClusterUnavailable"

    # Registered again and the Glance deleted: the sweep empties the target, then both
    # finalizers go.
    c.register()
    api.glance_pass(**c.extra)
    api.client.delete("glance.openstack.c5c3.io/v1alpha1", "Glance", "glance", c.namespace)
    run = api.glance_pass(**c.extra)
    assert c.glance() is None
    left = {
        k for k, o in c.children(c.target).items() if not o["metadata"].get("deletionTimestamp")
    }
    assert left == set(), left
    assert all(c.target.get("v1", "Secret", s, c.namespace) for s in USER_SECRETS)


def test_a_refused_registration_says_why(clusters):
    c, api = clusters, clusters.api
    c.scene()
    kubeconfig = c.kubeconfig()
    kubeconfig["users"][0]["user"] = {
        "tokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token"
    }
    c.register(kubeconfig=kubeconfig)
    api.glance_pass(**c.extra)
    cond = c.secrets_ready()
    assert cond["reason"] == "TargetClusterUnavailable"
    assert "sets tokenFile" in cond["message"] and "inline" in cond["message"]
    # an unreachable server: the pass reports it instead of failing
    kubeconfig = c.kubeconfig()
    kubeconfig["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:1"
    c.register(kubeconfig=kubeconfig)
    api.glance_pass(**c.extra)
    cond = c.secrets_ready()
    assert cond["reason"] == "TargetClusterUnavailable"
    assert "does not answer" in cond["message"], cond["message"]
    # target clusters turned off
    api.glance_pass(clusters_namespace="")
    assert "turned off" in c.secrets_ready()["message"]
    assert c.children(c.target) == {}


def test_an_object_of_someone_else_on_the_target_is_never_taken_over(clusters):
    c, api = clusters, clusters.api
    c.scene()
    c.register()
    foreign = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "glance",
            "namespace": c.namespace,
            "labels": {"team": "someone-else"},
        },
        "spec": {"ports": [{"port": 80}]},
    }
    c.target.create(foreign)
    for _ in range(4):
        c.settle()
        api.glance_pass(**c.extra)
    service = c.target.get("v1", "Service", "glance", c.namespace)
    assert service["spec"]["ports"][0]["port"] == 80
    assert "openstack.c5c3.io/owner-name" not in (service["metadata"].get("labels") or {})
    cond = api.condition("Glance", "glance", "DeploymentReady")
    assert cond["reason"] == "OwnershipConflict", cond
    # and the sweep leaves it
    api.client.delete("glance.openstack.c5c3.io/v1alpha1", "Glance", "glance", c.namespace)
    api.glance_pass(**c.extra)
    assert c.glance() is None
    assert c.target.get("v1", "Service", "glance", c.namespace) is not None


def test_a_target_that_stays_unresolvable_is_abandoned_after_the_window(clusters):
    c, api = clusters, clusters.api
    c.scene()
    c.register()
    api.glance_pass(**c.extra)
    written = set(c.children(c.target))
    assert written
    c.deregister()
    api.client.delete("glance.openstack.c5c3.io/v1alpha1", "Glance", "glance", c.namespace)
    run = api.glance_pass(glance_pass_abandon_after=3, **c.extra)
    assert run.requeue_after == 15
    cond = c.secrets_ready()
    assert cond["reason"] == "TargetClusterUnavailable"
    assert (
        "does not resolve; waiting at least 3s before abandoning its children (" in cond["message"]
    )
    assert MAIN_FINALIZER in c.glance()["metadata"]["finalizers"]
    time.sleep(4)
    api.glance_pass(glance_pass_abandon_after=3, **c.extra)
    assert c.glance() is None
    events = [e for e in api.list("Event") if e.get("reason") == "RemoteChildrenAbandoned"]
    assert events and events[0]["type"] == "Warning"
    assert set(c.children(c.target)) == written, "abandoned children stay where they are"


def test_a_glance_whose_target_never_resolved_is_deleted_at_once(clusters):
    c, api = clusters, clusters.api
    c.scene(cluster="nowhere")
    api.glance_pass(**c.extra)
    # the runner adds the main finalizer before a pass, as ansible-operator does
    api.merge_patch("Glance", "glance", {"metadata": {"finalizers": [MAIN_FINALIZER]}})
    api.client.delete("glance.openstack.c5c3.io/v1alpha1", "Glance", "glance", c.namespace)
    api.glance_pass(**c.extra)
    assert c.glance() is None
