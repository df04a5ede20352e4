"""Which writes turn live objects into desired ones (reference-spec §2.6, §2.7, §4.4)."""

from __future__ import annotations

import copy

import pytest
from support.builders import BACKEND, GLANCE, patched
from support.cluster import (
    GLANCE_UID,
    FakeCluster,
    desired_manifests,
    glance_object,
    job_status,
    owner_ref,
    stored,
)

from ansible_collections.c5c3.glance.plugins.module_utils.kube import apply_plan as ap
from ansible_collections.c5c3.glance.plugins.module_utils.kube import live_state as ls

BASE = "cobaltcore.c5c3.io/config-base"
COMPONENT = "app.kubernetes.io/component"


@pytest.fixture(scope="module")
def desired() -> dict:
    return desired_manifests(glance_object(GLANCE), [stored(BACKEND, "b-uid")])


@pytest.fixture(scope="module")
def autoscaled() -> dict:
    glance = patched(
        GLANCE,
        {"spec": {"autoscaling": {"maxReplicas": 6, "minReplicas": 2, "targetCPUUtilization": 70}}},
    )
    return desired_manifests(glance_object(glance), [stored(BACKEND, "b-uid")])


def applied(desired: dict) -> FakeCluster:
    """A cluster after one apply of ``desired`` and its controllers settling."""
    cluster = FakeCluster()
    cluster.perform(ap.apply_actions(desired, cluster.live(), GLANCE_UID))
    cluster.settle()
    return cluster


def verbs(actions) -> list[tuple[str, str, str, str]]:
    return [(a.verb, a.kind, a.name, a.reason) for a in actions if a.writes]


def test_a_first_apply_creates_every_object_in_write_order(desired):
    actions = ap.apply_actions(desired, ls.LiveObjects(), GLANCE_UID)
    config, backends = desired["config_map"], desired["backends_secret"]
    assert verbs(actions) == [
        ("create", "ConfigMap", config["metadata"]["name"], "absent"),
        ("create", "Secret", backends["metadata"]["name"], "absent"),
        ("apply", "Secret", "glance-db-connection", "absent"),
        ("apply", "CronJob", "glance-db-purge", "absent"),
        ("create", "Job", "glance-db-sync", "absent"),
        ("apply", "Deployment", "glance", "absent"),
        ("apply", "Service", "glance", "absent"),
        ("apply", "PodDisruptionBudget", "glance", "absent"),
    ]
    assert all(a.field_manager == "c5c3-glance-operator" for a in actions)


def test_applying_the_same_objects_again_writes_nothing(desired):
    cluster = applied(desired)
    # The Service was created narrowed with the Deployment (no older pods existed), so
    # the rollout leaves nothing to write.
    actions = ap.apply_actions(desired, cluster.live(), GLANCE_UID)
    assert ap.writes(actions) == []
    reasons = {a.key: a.reason for a in actions}
    assert reasons["config_map"] == ap.EXISTS
    assert reasons["deployment"] == ap.UNCHANGED
    assert reasons["db_sync_job"] == ap.JOB_COMPLETE


def test_a_key_left_out_of_desired_is_not_acted_on(desired):
    actions = ap.apply_actions({"pdb": desired["pdb"]}, ls.LiveObjects(), GLANCE_UID)
    assert [a.kind for a in actions] == ["PodDisruptionBudget"]


# --- is_noop -------------------------------------------------------------------------------


def live_deployment(desired: dict) -> dict:
    return copy.deepcopy(applied(desired).get("Deployment", "glance"))


def _image(obj, value):
    obj["spec"]["template"]["spec"]["containers"][0]["image"] = value


def _resources(obj, value):
    obj["spec"]["template"]["spec"]["containers"][0]["resources"] = value


@pytest.mark.parametrize(
    "change_live, change_desired, noop",
    [
        (None, None, True),
        (lambda o: o["metadata"]["labels"].update(extra="x"), None, True),
        (lambda o: o["metadata"].setdefault("annotations", {}).update(a="b"), None, True),
        (lambda o: _image(o, "ghcr.io/c5c3/glance:2026.1"), None, False),
        (None, lambda o: o["metadata"]["labels"].update(extra="x"), False),
        (lambda o: o["spec"].update(replicas=5), None, False),
        (
            lambda o: o["spec"]["template"]["spec"]["volumes"].append(
                {"name": "x", "emptyDir": {}}
            ),
            None,
            False,
        ),
        (
            lambda o: _resources(o, {"requests": {"cpu": "500m", "memory": "1Gi"}}),
            lambda o: _resources(o, {"requests": {"cpu": "0.5", "memory": "1024Mi"}}),
            True,
        ),
        (
            lambda o: _resources(o, {"requests": {"cpu": "500m"}}),
            lambda o: _resources(o, {"requests": {"cpu": "600m"}}),
            False,
        ),
    ],
    ids=[
        "same",
        "someone-elses-label",
        "someone-elses-annotation",
        "image-drift",
        "new-label",
        "replicas-drift",
        "extra-volume",
        "same-quantity-other-spelling",
        "other-quantity",
    ],
)
def test_a_noop_compares_only_the_fields_desired_sets(desired, change_live, change_desired, noop):
    live = live_deployment(desired)
    want = copy.deepcopy(desired["deployment"])
    if change_live:
        change_live(live)
    if change_desired:
        change_desired(want)
    assert ap.is_noop(live, want) is noop


def test_a_field_our_manager_applied_and_no_longer_sets_is_a_change(desired):
    want = copy.deepcopy(desired["deployment"])
    want["metadata"]["labels"]["tier"] = "api"
    cluster = applied({"deployment": want})
    live = cluster.get("Deployment", "glance")
    assert ap.is_noop(live, want)
    assert not ap.is_noop(live, desired["deployment"])  # SSA would remove the label


def test_owned_paths_read_the_apply_entry_of_the_manager_only():
    live = {
        "metadata": {
            "managedFields": [
                {
                    "manager": "c5c3-glance-operator",
                    "operation": "Apply",
                    "fieldsV1": {
                        "f:metadata": {"f:labels": {".": {}, "f:a": {}}},
                        "f:spec": {
                            "f:replicas": {},
                            "f:template": {"f:spec": {"f:containers": {'k:{"name":"x"}': {}}}},
                        },
                    },
                },
                {
                    "manager": "c5c3-glance-operator",
                    "operation": "Apply",
                    "subresource": "status",
                    "fieldsV1": {"f:status": {}},
                },
                {
                    "manager": "kube-controller-manager",
                    "operation": "Update",
                    "fieldsV1": {"f:spec": {"f:x": {}}},
                },
            ]
        }
    }
    assert ap.owned_paths(live) == {
        ("metadata", "labels", "a"),
        ("spec", "replicas"),
        ("spec", "template", "spec", "containers"),
    }


def test_no_live_object_is_never_a_noop(desired):
    assert not ap.is_noop(None, desired["pdb"])


# --- create-only content-addressed copies --------------------------------------------------


def copy_of(desired: dict, key: str, owner_uid: str | None = GLANCE_UID, **meta) -> dict:
    obj = copy.deepcopy(desired[key])
    obj["metadata"]["ownerReferences"] = [owner_ref(owner_uid)] if owner_uid else []
    obj["metadata"].update(uid="uid-copy", **meta)
    return obj


@pytest.mark.parametrize(
    "owner, meta, verb, reason, error",
    [
        (None, None, "create", ap.ABSENT, False),
        (GLANCE_UID, {}, "none", ap.EXISTS, False),
        (GLANCE_UID, {"deletionTimestamp": "2026-03-01T00:00:00Z"}, "none", ap.DELETING, False),
        ("another-glance", {}, "none", ap.CONFLICT, True),
        ("", {}, "none", ap.CONFLICT, True),  # not controlled by anyone: still not ours
    ],
    ids=["absent", "ours", "ours-deleting", "anothers", "uncontrolled"],
)
@pytest.mark.parametrize("key", ["config_map", "backends_secret"])
def test_a_content_addressed_copy_is_created_once_and_never_overwritten(
    desired, key, owner, meta, verb, reason, error
):
    existing = None if meta is None else copy_of(desired, key, owner, **meta)
    action = ap.create_only_action(key, desired[key], existing, GLANCE_UID)
    assert (action.verb, action.reason, bool(action.error)) == (verb, reason, error)
    if error:
        assert "never overwrites" in action.error
        assert desired[key]["metadata"]["name"] in action.error


def listed_copy(name: str, created: str, owner: str | None = GLANCE_UID, **meta) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": "openstack",
            "creationTimestamp": created,
            "labels": {BASE: "glance-config"},
            "ownerReferences": [owner_ref(owner)] if owner else [],
            **meta,
        },
    }


def test_old_copies_are_pruned_to_three_newest_plus_current_never_someone_elses(desired):
    current = desired["config_map"]["metadata"]["name"]
    listing = [
        listed_copy(current, "2026-03-09T00:00:00Z"),
        listed_copy("glance-config-00000001", "2026-03-01T00:00:00Z"),
        listed_copy("glance-config-00000002", "2026-03-02T00:00:00Z"),
        listed_copy("glance-config-00000003", "2026-03-03T00:00:00Z"),
        listed_copy("glance-config-00000004", "2026-03-04T00:00:00Z"),
        listed_copy("glance-config-00000005", "2026-03-05T00:00:00Z"),
        listed_copy("glance-config-0000000f", "2026-02-01T00:00:00Z", owner="someone"),
        listed_copy("glance-config-0000000e", "2026-02-01T00:00:00Z", owner=None),
        listed_copy(
            "glance-config-0000000d",
            "2026-02-01T00:00:00Z",
            deletionTimestamp="2026-03-09T00:00:00Z",
        ),
    ]
    live = ls.LiveObjects(config_maps=listing)
    actions = ap.apply_actions({"config_map": desired["config_map"]}, live, GLANCE_UID)
    assert verbs(actions) == [
        ("delete", "ConfigMap", "glance-config-00000002", ap.PRUNED),
        ("delete", "ConfigMap", "glance-config-00000001", ap.PRUNED),
    ]


def test_pruning_never_deletes_what_the_live_deployment_mounts(desired):
    current = desired["config_map"]["metadata"]["name"]
    listing = [
        listed_copy(f"glance-config-0000000{i}", f"2026-03-0{i}T00:00:00Z") for i in range(1, 6)
    ]
    mounting = {
        "kind": "Deployment",
        "metadata": {"name": "glance"},
        "spec": {
            "template": {
                "spec": {
                    "volumes": [{"name": "config", "configMap": {"name": "glance-config-00000001"}}]
                }
            }
        },
    }
    live = ls.LiveObjects(
        objects={"deployment": mounting},
        config_maps=[*listing, listed_copy(current, "2026-03-09T00:00:00Z")],
    )
    actions = ap.apply_actions({"config_map": desired["config_map"]}, live, GLANCE_UID)
    assert verbs(actions) == [("delete", "ConfigMap", "glance-config-00000002", ap.PRUNED)]


def test_with_the_last_good_copy_retained_the_mounted_one_is_current(desired):
    listing = [
        listed_copy(f"glance-config-0000000{i}", f"2026-03-0{i}T00:00:00Z") for i in range(1, 6)
    ]
    mounting = {
        "kind": "Deployment",
        "metadata": {"name": "glance"},
        "spec": {
            "template": {
                "spec": {
                    "volumes": [{"name": "config", "configMap": {"name": "glance-config-00000001"}}]
                }
            }
        },
    }
    live = ls.LiveObjects(objects={"deployment": mounting}, config_maps=listing)
    actions = ap.apply_actions({"config_map": None}, live, GLANCE_UID)
    assert verbs(actions) == [("delete", "ConfigMap", "glance-config-00000002", ap.PRUNED)]
    assert (
        ap.apply_actions({"config_map": None}, ls.LiveObjects(config_maps=listing), GLANCE_UID)[
            0
        ].reason
        == ap.NOT_YET
    )
    assert (
        ap.writes(
            ap.apply_actions({"config_map": None}, ls.LiveObjects(config_maps=listing), GLANCE_UID)
        )
        == []
    )


# --- optional kinds, keep-live, conflicts ---------------------------------------------------


def live_object(desired: dict, key: str, owner: str | None = GLANCE_UID, **meta) -> dict:
    obj = copy.deepcopy(desired[key])
    obj["metadata"]["ownerReferences"] = [owner_ref(owner)] if owner else []
    obj["metadata"].update(uid=f"uid-{key}", **meta)
    return obj


@pytest.mark.parametrize("key", ["hpa", "network_policy", "http_route"])
@pytest.mark.parametrize(
    "owner, meta, verb, reason",
    [
        (GLANCE_UID, {}, "delete", ap.NOT_WANTED),
        ("someone-else", {}, "none", ap.FOREIGN),
        (None, {}, "none", ap.FOREIGN),
        (GLANCE_UID, {"deletionTimestamp": "2026-03-01T00:00:00Z"}, "none", ap.DELETING),
    ],
    ids=["ours", "anothers", "uncontrolled", "already-deleting"],
)
def test_disabling_an_optional_kind_deletes_ours_but_not_a_foreign_one(
    key, owner, meta, verb, reason
):
    full = desired_manifests(
        glance_object(
            patched(
                GLANCE,
                {
                    "spec": {
                        "autoscaling": {"maxReplicas": 5, "targetCPUUtilization": 70},
                        "networkPolicy": {"ingress": [{"namespaceSelector": {}}]},
                        "gateway": {
                            "hostname": "glance.example.com",
                            "parentRef": {"name": "public"},
                        },
                    }
                },
            )
        ),
        [stored(BACKEND, "b-uid")],
    )
    live = ls.LiveObjects(objects={key: live_object(full, key, owner, **meta)})
    (action,) = ap.apply_actions({key: None}, live, GLANCE_UID)
    assert (action.verb, action.reason) == (verb, reason)
    assert action.name == "glance"


def test_disabling_autoscaling_deletes_our_hpa_but_not_a_foreign_one(autoscaled):
    ours = ls.LiveObjects(objects={"hpa": live_object(autoscaled, "hpa")})
    foreign = ls.LiveObjects(objects={"hpa": live_object(autoscaled, "hpa", owner="other")})
    assert verbs(ap.apply_actions({"hpa": None}, ours, GLANCE_UID)) == [
        ("delete", "HorizontalPodAutoscaler", "glance", ap.NOT_WANTED)
    ]
    assert verbs(ap.apply_actions({"hpa": None}, foreign, GLANCE_UID)) == []


def test_nothing_is_deleted_when_nothing_is_live():
    (action,) = ap.apply_actions({"hpa": None}, ls.LiveObjects(), GLANCE_UID)
    assert (action.verb, action.reason) == ("none", ap.NOT_WANTED)


def test_without_the_gateway_api_the_route_is_neither_applied_nor_deleted(desired):
    live = ls.LiveObjects(gateway_api=False)
    for want in (
        None,
        {
            "apiVersion": "x",
            "kind": "HTTPRoute",
            "metadata": {"name": "glance", "namespace": "openstack"},
        },
    ):
        (action,) = ap.apply_actions({"http_route": want}, live, GLANCE_UID)
        assert (action.verb, action.reason) == ("none", ap.NO_GATEWAY_API)


@pytest.mark.parametrize(
    "key",
    ["deployment", "service", "pdb", "db_purge_cronjob", "db_connection_secret", "db_sync_job"],
)
def test_a_kind_that_is_not_optional_keeps_its_live_object_while_not_yet_desired(desired, key):
    live = ls.LiveObjects(objects={key: live_object(desired, key)})
    (action,) = ap.apply_actions({key: None}, live, GLANCE_UID)
    assert (action.verb, action.reason) == ("none", ap.NOT_YET)


@pytest.mark.parametrize(
    "key", ["pdb", "db_purge_cronjob", "db_connection_secret", "deployment", "service"]
)
def test_an_object_another_controller_owns_is_never_applied(desired, key):
    live = ls.LiveObjects(objects={key: live_object(desired, key, owner="another")})
    actions = ap.apply_actions({key: desired[key]}, live, GLANCE_UID)
    assert ap.writes(actions) == []
    (action,) = ap.errors(actions)
    assert action.reason == ap.CONFLICT and "never overwrites" in action.error


def test_an_object_without_a_controller_is_adopted(desired):
    stray = live_object(desired, "pdb", owner=None)
    (action,) = ap.apply_actions(
        {"pdb": desired["pdb"]}, ls.LiveObjects(objects={"pdb": stray}), GLANCE_UID
    )
    assert (action.verb, action.reason) == ("apply", ap.CHANGED)
    assert action.object["metadata"]["ownerReferences"][0]["uid"] == GLANCE_UID


def test_an_object_being_deleted_is_waited_for(desired):
    gone = live_object(desired, "pdb", deletionTimestamp="2026-03-01T00:00:00Z")
    (action,) = ap.apply_actions(
        {"pdb": desired["pdb"]}, ls.LiveObjects(objects={"pdb": gone}), GLANCE_UID
    )
    assert (action.verb, action.reason) == ("none", ap.DELETING)


# --- the Deployment ----------------------------------------------------------------------------


def test_a_changed_selector_deletes_the_deployment_first(desired):
    cluster = applied(desired)
    live = cluster.get("Deployment", "glance")
    live["spec"]["selector"] = {"matchLabels": {"app": "glance"}}
    actions = ap.apply_actions(desired, cluster.live(), GLANCE_UID)
    (delete,) = ap.for_key(actions, "deployment")
    assert (delete.verb, delete.reason, delete.propagation_policy) == (
        "delete",
        ap.SELECTOR_CHANGED,
        "Background",
    )
    assert delete.object is None
    cluster.perform(actions)
    assert cluster.get("Deployment", "glance") is None
    again = ap.apply_actions(desired, cluster.live(), GLANCE_UID)
    assert verbs(ap.for_key(again, "deployment")) == [("apply", "Deployment", "glance", ap.ABSENT)]


def test_a_changed_selector_on_a_deployment_we_do_not_control_is_an_error(desired):
    stray = live_object(desired, "deployment", owner=None)
    stray["spec"]["selector"] = {"matchLabels": {"app": "glance"}}
    (action,) = ap.apply_actions(
        {"deployment": desired["deployment"]},
        ls.LiveObjects(objects={"deployment": stray}),
        GLANCE_UID,
    )
    assert (action.verb, action.reason) == ("none", ap.CONFLICT)
    assert "selector is immutable" in action.error


def test_with_autoscaling_a_new_deployment_carries_no_replicas(autoscaled):
    (action,) = ap.apply_actions(
        {"deployment": autoscaled["deployment"]}, ls.LiveObjects(), GLANCE_UID
    )
    assert action.verb == "apply" and "replicas" not in action.object["spec"]
    cluster = applied({"deployment": autoscaled["deployment"]})
    assert cluster.get("Deployment", "glance")["spec"]["replicas"] == 1  # the API default


def test_switching_autoscaling_on_hands_replicas_to_the_hpa_and_keeps_the_live_count(
    desired, autoscaled
):
    cluster = applied({"deployment": desired["deployment"]})
    assert cluster.get("Deployment", "glance")["spec"]["replicas"] == 3
    actions = ap.apply_actions({"deployment": autoscaled["deployment"]}, cluster.live(), GLANCE_UID)
    handover, main = actions
    assert (handover.verb, handover.reason, handover.field_manager) == (
        "apply",
        ap.REPLICAS_HANDOVER,
        "c5c3-glance-operator-hpa-handover",
    )
    assert handover.object == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "glance", "namespace": "openstack"},
        "spec": {"replicas": 3},
    }
    assert (main.verb, main.field_manager) == ("apply", "c5c3-glance-operator")
    assert "replicas" not in main.object["spec"]
    cluster.perform(actions)
    cluster.settle()
    assert cluster.get("Deployment", "glance")["spec"]["replicas"] == 3  # not reset to 1
    # The HPA scales; our manager no longer owns the field, so nothing fights it.
    cluster.get("Deployment", "glance")["spec"]["replicas"] = 5
    assert (
        ap.writes(
            ap.apply_actions({"deployment": autoscaled["deployment"]}, cluster.live(), GLANCE_UID)
        )
        == []
    )


# --- the Service ---------------------------------------------------------------------------------


def test_a_first_apply_creates_the_service_narrowed_with_its_deployment(desired):
    cluster = applied(desired)
    service = cluster.get("Service", "glance")
    assert service["spec"]["selector"][COMPONENT] == "api"  # no older pods to keep


def test_a_wide_service_narrows_once_the_deployment_converged_and_then_stays(desired):
    cluster = applied(desired)
    # The Service is (re)created while the live Deployment still rolls out pods of an
    # older template: it selects them all until every pod carries the label.
    cluster.objects = {k: v for k, v in cluster.objects.items() if k[0] != "Service"}
    cluster.get("Deployment", "glance")["status"]["updatedReplicas"] = 0
    (wide,) = ap.for_key(ap.apply_actions(desired, cluster.live(), GLANCE_UID), "service")
    assert wide.verb == "apply" and COMPONENT not in wide.object["spec"]["selector"]
    cluster.perform([wide])
    (waiting,) = ap.for_key(ap.apply_actions(desired, cluster.live(), GLANCE_UID), "service")
    assert (waiting.verb, waiting.reason) == ("none", ap.UNCHANGED)
    cluster.settle()  # every pod runs the current template
    (action,) = ap.for_key(ap.apply_actions(desired, cluster.live(), GLANCE_UID), "service")
    assert action.verb == "apply" and action.object["spec"]["selector"][COMPONENT] == "api"
    cluster.perform([action])
    cluster.get("Deployment", "glance")["status"]["updatedReplicas"] = 1  # a rollout starts
    (again,) = ap.for_key(ap.apply_actions(desired, cluster.live(), GLANCE_UID), "service")
    assert (again.verb, again.reason) == ("none", ap.UNCHANGED)


@pytest.mark.parametrize(
    "desired_spec, live_spec, problem",
    [
        ({}, {"clusterIP": "10.0.0.1", "clusterIPs": ["10.0.0.1"]}, None),
        ({"clusterIP": "10.0.0.1"}, {"clusterIP": "10.0.0.1"}, None),
        ({"clusterIP": "10.0.0.2"}, {"clusterIP": "10.0.0.1"}, "spec.clusterIP"),
        ({"ipFamilies": ["IPv6"]}, {"ipFamilies": ["IPv4"]}, "spec.ipFamilies"),
        ({"clusterIPs": ["None"]}, {"clusterIPs": ["10.0.0.1"]}, "spec.clusterIPs"),
        (
            {"type": "ClusterIP"},
            {"type": "ExternalName", "externalName": "x.example"},
            "ExternalName",
        ),
    ],
    ids=["unset", "same", "clusterIP", "ipFamilies", "clusterIPs", "external-name"],
)
def test_the_service_guard_refuses_to_change_cluster_ips(desired, desired_spec, live_spec, problem):
    want = copy.deepcopy(desired["service"])
    want["spec"].update(desired_spec)
    live = live_object(desired, "service")
    live["spec"].update(live_spec)
    action = ap.service_action(want, live, None, GLANCE_UID)
    if problem is None:
        assert not action.error
    else:
        assert (action.verb, action.reason) == ("none", ap.CLUSTER_IP_IMMUTABLE)
        assert problem in action.error


# --- the db-sync Job -----------------------------------------------------------------------------


def live_job(desired: dict, state: str | None, same_hash: bool = True, **meta) -> dict:
    job = live_object(desired, "db_sync_job", **meta)
    if not same_hash:
        job["metadata"]["annotations"]["cobaltcore.c5c3.io/pod-spec-hash"] = "0" * 64
    job["status"] = job_status(state) if state else {}
    return job


@pytest.mark.parametrize(
    "state, same_hash, meta, verb, reason",
    [
        (None, True, {}, "none", ap.JOB_RUNNING),
        (None, False, {}, "none", ap.JOB_RUNNING),  # a running Job is never interrupted
        ("Complete", True, {}, "none", ap.JOB_COMPLETE),
        ("Complete", False, {}, "delete", ap.RERUN),
        ("Failed", True, {}, "none", ap.JOB_FAILED),
        ("Failed", False, {}, "delete", ap.RERUN),
        ("Complete", False, {"deletionTimestamp": "2026-03-01T00:00:00Z"}, "none", ap.DELETING),
    ],
    ids=[
        "running",
        "running-stale",
        "complete",
        "complete-stale",
        "failed-same-hash",
        "failed-stale",
        "deleting",
    ],
)
def test_the_db_sync_job_follows_the_rerun_key(desired, state, same_hash, meta, verb, reason):
    live = ls.LiveObjects(objects={"db_sync_job": live_job(desired, state, same_hash, **meta)})
    (action,) = ap.apply_actions({"db_sync_job": desired["db_sync_job"]}, live, GLANCE_UID)
    assert (action.verb, action.reason) == (verb, reason)
    if verb == "delete":
        assert action.propagation_policy == "Background"


def test_a_failed_db_sync_with_the_same_hash_is_not_rerun(desired):
    live = ls.LiveObjects(objects={"db_sync_job": live_job(desired, "Failed")})
    actions = ap.apply_actions({"db_sync_job": desired["db_sync_job"]}, live, GLANCE_UID)
    assert ap.writes(actions) == []
    assert actions[0].reason == ap.JOB_FAILED


def test_a_db_sync_job_of_another_owner_is_a_conflict(desired):
    live = ls.LiveObjects(
        objects={"db_sync_job": live_job(desired, "Complete", False, ownerReferences=[])}
    )
    (action,) = ap.apply_actions({"db_sync_job": desired["db_sync_job"]}, live, GLANCE_UID)
    assert (action.verb, action.reason) == ("none", ap.CONFLICT)


def test_actions_are_plain_data_for_the_apply_module(desired):
    (action,) = ap.apply_actions({"pdb": desired["pdb"]}, ls.LiveObjects(), GLANCE_UID)
    data = action.as_dict()
    assert data["verb"] == "apply" and data["kind"] == "PodDisruptionBudget"
    assert data["namespace"] == "openstack" and data["object"] == desired["pdb"]
    assert data["object"] is not desired["pdb"]


def obj(spec: dict) -> dict:
    return {"apiVersion": "v1", "kind": "X", "metadata": {"name": "x"}, "spec": spec}


@pytest.mark.parametrize(
    "want, have, noop",
    [
        ({"a": True}, {"a": 1}, False),  # a bool is no number
        ({"a": 1}, {"a": 1.0}, True),
        ({"a": {}}, {}, True),  # an empty map matches an absent one
        ({"a": []}, {}, True),
        ({"a": {}}, {"a": None}, True),
        ({"a": [1]}, {"a": None}, False),
        ({"a": {"b": 1}}, {"a": "b"}, False),
        ({"a": [1]}, {"a": {"0": 1}}, False),
        ({"a": [1, 2]}, {"a": [1]}, False),
        ({"resources": {"limits": {"cpu": "x"}}}, {"resources": {"limits": {"cpu": "y"}}}, False),
        (
            {"resources": {"limits": {"memory": 1024}}},
            {"resources": {"limits": {"memory": "1Ki"}}},
            True,
        ),
        ({"volume": {"sizeLimit": "1Gi"}}, {"volume": {"sizeLimit": "1024Mi"}}, True),
        ({"name": "1Gi"}, {"name": "1024Mi"}, False),  # quantities only where they are quantities
    ],
    ids=[
        "bool-vs-int",
        "int-vs-float",
        "empty-map-absent",
        "empty-list-absent",
        "empty-map-null",
        "list-vs-null",
        "map-vs-scalar",
        "list-vs-map",
        "list-length",
        "bad-quantity",
        "quantity-int",
        "size-limit",
        "not-a-quantity-field",
    ],
)
def test_the_noop_comparison_rules(want, have, noop):
    assert ap.is_noop(obj(have), obj(want)) is noop


def test_an_owned_field_inside_a_list_counts_as_set_by_the_list():
    live = obj({"items": [{"a": 1}]})
    live["metadata"]["managedFields"] = [
        {
            "manager": ap.FIELD_MANAGER,
            "operation": "Apply",
            "fieldsV1": {"f:spec": {"f:items": {'k:{"a":1}': {}}}},
        }
    ]
    assert ap.is_noop(live, obj({"items": [{"a": 1}]}))
    assert not ap.is_noop(live, obj({}))  # dropping the list removes it
