"""Target clusters without a cluster: the registration Secret's rules, the ownership labels,
and what a pass decides for a Glance whose children live elsewhere (reference-spec §2.2,
§2.10, §2.11). ``tests/reconcile/test_target_cluster.py`` runs the same against two real
kube-apiservers."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta

import pytest
from support.builders import BACKEND, GLANCE, patched
from support.cluster import FakeCluster, Reconciler, glance_object, plan_inputs, stored

from ansible_collections.c5c3.glance.plugins.module_utils.desired import conditions as c
from ansible_collections.c5c3.glance.plugins.module_utils.kube import apply_plan as ap
from ansible_collections.c5c3.glance.plugins.module_utils.kube import live_state as ls
from ansible_collections.c5c3.glance.plugins.module_utils.kube import target_cluster as tc
from ansible_collections.c5c3.glance.plugins.module_utils.passes import glancebackend_pass as bp
from ansible_collections.c5c3.glance.plugins.module_utils.passes.glance.decide import (
    decide_pass,
)
from ansible_collections.c5c3.glance.plugins.module_utils.passes.glance.pass_state import (
    ADD,
    FINALIZER,
    REMOTE_CHILDREN_FINALIZER,
    REMOVE,
    REQUEUE_SECRETS,
    PassResult,
)

RESOLVED = {
    "name": "edge",
    "registration": "c5c3-clusters/edge",
    "server": "https://x",
    "error": None,
}
UNAVAILABLE = {
    **RESOLVED,
    "error": 'cluster "edge" is not registered: no Secret c5c3-clusters/edge',
}
OWNER = ls.label_owner("Glance", "openstack", "glance")


def kubeconfig(**user) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "edge", "cluster": {"server": "https://10.0.0.1:6443"}}],
        "users": [{"name": "op", "user": user or {"token": "t"}}],
        "contexts": [{"name": "edge", "context": {"cluster": "edge", "user": "op"}}],
        "current-context": "edge",
    }


class Mgmt:
    """The management cluster as ``resolve`` reads it: one GET of the Secret."""

    def __init__(self, secret: dict | None):
        self.secret = secret

    def get(self, api_version, kind, name, namespace):
        assert (api_version, kind, namespace) == ("v1", "Secret", "c5c3-clusters")
        return self.secret if self.secret and self.secret["metadata"]["name"] == name else None


def registration(document, label: str | None = "true", key: str = "kubeconfig") -> dict:
    raw = document if isinstance(document, bytes) else json.dumps(document).encode()
    return {
        "metadata": {"name": "edge", "labels": {tc.REGISTRATION_LABEL: label} if label else {}},
        "data": {key: base64.b64encode(raw).decode()},
    }


def refusal(secret: dict | None, namespace: str = "c5c3-clusters") -> str:
    with pytest.raises(tc.Unavailable) as caught:
        tc.resolve(Mgmt(secret), "edge", namespace, 5.0)
    return str(caught.value)


def test_a_registration_gives_a_client_for_its_server():
    target = tc.resolve(Mgmt(registration(kubeconfig())), "edge", "c5c3-clusters", 5.0)
    assert target.client.connection.server == "https://10.0.0.1:6443"
    assert target.registration == "c5c3-clusters/edge"


@pytest.mark.parametrize(
    ("secret", "namespace", "message"),
    [
        (None, "c5c3-clusters", 'cluster "edge" is not registered: no Secret c5c3-clusters/edge'),
        (registration(kubeconfig()), "", "target clusters are turned off"),
        (registration(kubeconfig(), label=None), "c5c3-clusters", "lacks the label"),
        (registration(kubeconfig(), label="yes"), "c5c3-clusters", "lacks the label"),
        (registration(kubeconfig(), key="config"), "c5c3-clusters", "has no 'kubeconfig' key"),
        (registration(b"\xff\xfe"), "c5c3-clusters", "is not a kubeconfig"),
        (registration(b"- a list"), "c5c3-clusters", "is not a kubeconfig"),
    ],
)
def test_an_unusable_registration_says_why(secret, namespace, message):
    assert message in refusal(secret, namespace)


@pytest.mark.parametrize(
    "user",
    [
        {"exec": {"command": "/bin/sh", "apiVersion": "client.authentication.k8s.io/v1"}},
        {"auth-provider": {"name": "oidc"}},
        {"tokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token"},
        {"client-certificate": "/etc/tls.crt", "client-key-data": "eA=="},
        {"client-key": "/etc/tls.key", "client-certificate-data": "eA=="},
    ],
)
def test_a_credential_from_the_operators_pod_is_refused(user):
    message = refusal(registration(kubeconfig(**user)))
    assert f"sets {next(iter(user))}" in message and "inline" in message


def test_a_ca_file_of_the_operators_pod_is_refused():
    document = kubeconfig()
    document["clusters"][0]["cluster"]["certificate-authority"] = "/etc/ca.crt"
    assert "sets certificate-authority" in refusal(registration(document))


# --- what a pass decides --------------------------------------------------------------------


def targeted(**kw) -> Reconciler:
    glance = glance_object(
        patched(GLANCE, {"spec": {"targetClusterRef": {"name": "edge"}}}),
        finalizer=kw.pop("finalizer", False),
    )
    return Reconciler(glance, plan_inputs([stored(BACKEND, "b-uid")], None), FakeCluster())


def decide(r: Reconciler, target=RESOLVED, **kw) -> PassResult:
    return decide_pass(r.glance, r.inputs, r.cluster.live(), r.now, target_cluster=target, **kw)


def test_an_unavailable_target_is_a_condition_and_adds_no_finalizer():
    r = targeted()
    result = decide(r, UNAVAILABLE)
    assert result.finalizer is None and result.writes == []
    assert result.requeue_after == REQUEUE_SECRETS
    cond = c.by_type(result.status["conditions"])[c.SECRETS_READY]
    assert (cond["status"], cond["reason"], cond["message"]) == (
        "False",
        c.TARGET_CLUSTER_UNAVAILABLE,
        UNAVAILABLE["error"],
    )
    assert decide(r, None).status_patch is not None  # not gathered at all: the same


def test_children_on_a_target_carry_the_ownership_labels_and_no_owner_reference():
    r = targeted()
    result = decide(r)
    assert result.finalizer == ADD
    assert result.finalizers == [FINALIZER, REMOTE_CHILDREN_FINALIZER]
    assert result.target_cluster == "edge"
    assert result.writes
    for action in result.writes:
        meta = action.object["metadata"]
        assert not meta.get("ownerReferences"), action.kind
        assert ls.controller_key(action.object) == OWNER, action.kind
    # the pod templates keep their own labels: the selector must not change with the owner
    job = next(a for a in result.writes if a.kind == "Job")
    assert (
        "openstack.c5c3.io/owner-name" not in job.object["spec"]["template"]["metadata"]["labels"]
    )


def test_on_a_target_an_unlabelled_object_is_someone_elses():
    unlabelled = {"metadata": {"name": "glance", "labels": {"team": "x"}}}
    assert ls.controlled_by_other(unlabelled, OWNER)
    assert not ls.controlled_by_other(unlabelled, "a-uid")  # adopted on its own cluster
    labelled = {
        "metadata": {
            "labels": {
                "openstack.c5c3.io/owner-kind": "Glance",
                "openstack.c5c3.io/owner-name": "glance",
                "openstack.c5c3.io/owner-namespace": "openstack",
            }
        }
    }
    assert ls.controlled_by(labelled, OWNER) and not ls.controlled_by_other(labelled, OWNER)
    other = patched(labelled, {"metadata": {"labels": {"openstack.c5c3.io/owner-name": "other"}}})
    assert ls.controlled_by_other(other, OWNER)
    assert ls.describe_controller(other) == "Glance openstack/other (by its labels)"


def deleting(r: Reconciler, finalizers, deleted_at: datetime, status=None) -> dict:
    glance = patched(r.glance, {"metadata": {"finalizers": finalizers}})
    glance["metadata"]["deletionTimestamp"] = deleted_at.strftime("%Y-%m-%dT%H:%M:%SZ")
    if status is not None:
        glance["status"] = status
    return glance


def test_a_deleted_glance_sweeps_its_children_on_the_target_then_releases_both_finalizers():
    r = targeted()
    both = [FINALIZER, REMOTE_CHILDREN_FINALIZER]
    glance = deleting(r, both, datetime(2026, 1, 1, tzinfo=UTC))
    ours = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "glance-config-1",
            "namespace": "openstack",
            "labels": {
                "openstack.c5c3.io/owner-kind": "Glance",
                "openstack.c5c3.io/owner-name": "glance",
                "openstack.c5c3.io/owner-namespace": "openstack",
            },
        },
    }
    gone = patched(
        ours, {"metadata": {"name": "glance-config-0", "deletionTimestamp": "2026-01-01T00:00:00Z"}}
    )
    foreign = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "glance", "namespace": "openstack"},
    }
    result = decide_pass(
        glance,
        r.inputs,
        ls.live_objects("glance", []),
        r.now,
        target_cluster=RESOLVED,
        remote_children=[ours, gone, foreign],
    )
    assert [(a.verb, a.kind, a.name, a.reason) for a in result.writes] == [
        ("delete", "ConfigMap", "glance-config-1", ap.SWEPT)
    ]
    assert result.writes[0].propagation_policy == ap.BACKGROUND
    assert (result.finalizer, result.finalizers) == (REMOVE, both)
    assert [e["reason"] for e in result.events] == [c.EVENT_REMOTE_CHILDREN_SWEPT]


def test_an_unresolvable_target_is_waited_for_then_abandoned():
    r = targeted()
    both = [FINALIZER, REMOTE_CHILDREN_FINALIZER]
    deleted_at = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    glance = deleting(r, both, deleted_at)
    live = ls.live_objects("glance", [])
    wait = decide_pass(
        glance, r.inputs, live, deleted_at + timedelta(seconds=10), target_cluster=UNAVAILABLE
    )
    assert wait.finalizer is None and wait.requeue_after == REQUEUE_SECRETS
    cond = c.by_type(wait.status["conditions"])[c.SECRETS_READY]
    assert cond["reason"] == c.TARGET_CLUSTER_UNAVAILABLE
    assert cond["message"].startswith(
        "target cluster edge does not resolve; waiting at least 5m0s before abandoning its "
        "children ("
    )
    # The window runs from the first pass that found it unresolvable, not from the deletion
    # alone: a Glance deleted long ago still waits the whole window.
    glance = deleting(r, both, deleted_at, status=wait.status)
    later = datetime.fromisoformat(cond["lastTransitionTime"].replace("Z", "+00:00"))
    still = decide_pass(
        glance, r.inputs, live, later + timedelta(seconds=299), target_cluster=UNAVAILABLE
    )
    assert still.finalizer is None
    given_up = decide_pass(
        glance, r.inputs, live, later + timedelta(seconds=300), target_cluster=UNAVAILABLE
    )
    assert (given_up.finalizer, given_up.finalizers) == (REMOVE, both)
    assert [(e["type"], e["reason"]) for e in given_up.events] == [
        ("Warning", c.EVENT_REMOTE_CHILDREN_ABANDONED)
    ]
    fresh = deleting(r, both, later + timedelta(seconds=290), status=wait.status)
    assert (
        decide_pass(
            fresh, r.inputs, live, later + timedelta(seconds=300), target_cluster=UNAVAILABLE
        ).finalizer
        is None
    )


def test_a_glance_that_never_reached_its_target_is_released_at_once():
    r = targeted()
    glance = deleting(r, [FINALIZER], datetime(2026, 1, 1, tzinfo=UTC))
    result = decide_pass(
        glance, r.inputs, ls.live_objects("glance", []), r.now, target_cluster=None
    )
    assert (result.finalizer, result.finalizers, result.writes) == (REMOVE, [FINALIZER], [])


def test_a_backend_whose_parents_target_is_unavailable_says_so():
    parent = patched(GLANCE, {"spec": {"targetClusterRef": {"name": "edge"}}})
    result = bp.decide_backend_pass(
        stored(BACKEND, "b-uid"),
        parent,
        [],
        None,
        None,
        "2026-01-01T00:00:00Z",
        target_cluster=UNAVAILABLE,
    )
    cond = c.by_type(result.status["conditions"])[c.CREDENTIALS_READY]
    assert (cond["status"], cond["reason"]) == ("False", c.TARGET_CLUSTER_UNAVAILABLE)
    assert result.requeue_after == bp.REQUEUE_BACKSTOP
