"""The Kubernetes API test double, driven over real HTTPS with the standard library.

Each section matches one rule of the double's contract (``support.fake_apiserver``):
lifecycle and auth, discovery, reads and selectors, writes, deletion and garbage
collection, patches, server-side apply, the status subresource, validation and
defaults, the service proxy, watches, and the Python test controls.
"""

from __future__ import annotations

import base64
import copy
import http.client
import http.server
import json
import socket
import ssl
import threading
import time
from typing import Any

import pytest
import yaml
from support.builders import BACKEND, GLANCE
from support.cluster import desired_manifests
from support.fake_apiserver import FakeAPIServer, Request

from ansible_collections.c5c3.glance.plugins.module_utils.kube import apply_plan

NS = "openstack"
APPLY = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"
JSONPATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
_TOKEN = object()


class Api:
    """A minimal client: one HTTPS request per call, CA verified, bearer token."""

    def __init__(self, server: FakeAPIServer) -> None:
        self.server = server
        self.context = ssl.create_default_context(cafile=str(server.ca_file))

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
        token: Any = _TOKEN,
    ) -> tuple[int, Any]:
        conn = http.client.HTTPSConnection("127.0.0.1", self.server.port, context=self.context)
        headers = {"Content-Type": content_type, "User-Agent": "fake-test/1.0"}
        token = self.server.token if token is _TOKEN else token
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        data = body if body is None or isinstance(body, bytes | str) else json.dumps(body)
        try:
            conn.request(method, path, body=data, headers=headers)
            response = conn.getresponse()
            raw = response.read()
        finally:
            conn.close()
        ctype = response.getheader("Content-Type") or ""
        return response.status, json.loads(raw) if raw and "json" in ctype else raw

    def get(self, path: str) -> tuple[int, Any]:
        return self.call("GET", path)

    def post(self, path: str, body: Any) -> tuple[int, Any]:
        return self.call("POST", path, body)

    def put(self, path: str, body: Any) -> tuple[int, Any]:
        return self.call("PUT", path, body)

    def patch(self, path: str, body: Any, content_type: str = MERGE) -> tuple[int, Any]:
        return self.call("PATCH", path, body, content_type)

    def apply(
        self, path: str, body: Any, manager: str = "op", force: bool = False
    ) -> tuple[int, Any]:
        query = f"?fieldManager={manager}" + ("&force=true" if force else "")
        return self.call("PATCH", path + query, body, APPLY)

    def delete(self, path: str, body: Any = None) -> tuple[int, Any]:
        return self.call("DELETE", path, body)

    def watch_lines(self, path: str, until: int, timeout: float = 10.0) -> list[dict]:
        """Read watch events until ``until`` arrived or the stream ended."""
        conn = http.client.HTTPSConnection(
            "127.0.0.1", self.server.port, context=self.context, timeout=timeout
        )
        conn.request("GET", path, headers={"Authorization": f"Bearer {self.server.token}"})
        response = conn.getresponse()
        assert response.status == 200
        events = []
        try:
            while len(events) < until:
                line = response.readline()
                if not line:
                    break
                events.append(json.loads(line))
        finally:
            conn.close()
        return events


@pytest.fixture
def server(tmp_path):
    with FakeAPIServer(tmp_path / "apiserver") as srv:
        yield srv


@pytest.fixture
def api(server):
    return Api(server)


CM = f"/api/v1/namespaces/{NS}/configmaps"
SECRETS = f"/api/v1/namespaces/{NS}/secrets"
SVC = f"/api/v1/namespaces/{NS}/services"
DEPLOY = f"/apis/apps/v1/namespaces/{NS}/deployments"
JOBS = f"/apis/batch/v1/namespaces/{NS}/jobs"
GLANCES = f"/apis/glance.openstack.c5c3.io/v1alpha1/namespaces/{NS}/glances"


def configmap(name: str, labels: dict | None = None, **data: str) -> dict:
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def deployment(name: str = "api", image: str = "glance:1", **spec: Any) -> dict:
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [
                        {
                            "name": "api",
                            "image": image,
                            "ports": [{"containerPort": 9292, "name": "api"}],
                            "env": [{"name": "A", "value": "1"}],
                        }
                    ]
                },
            },
        },
    }
    body["spec"].update(spec)
    return body


def job(name: str = "db-sync", command: str = "sync") -> dict:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "sync", "image": "glance:1", "command": [command]}],
                }
            }
        },
    }


def service(name: str = "glance", port: int = 9292) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {"selector": {"app": name}, "ports": [{"name": "api", "port": port}]},
    }


def owner(obj: dict, controller: bool = True) -> dict:
    return {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "name": obj["metadata"]["name"],
        "uid": obj["metadata"]["uid"],
        "controller": controller,
        "blockOwnerDeletion": True,
    }


def glance(name: str = "glance") -> dict:
    body = copy.deepcopy(GLANCE)
    body["metadata"] = {"name": name}
    # what the operator's defaulting webhook adds (the double runs no webhooks)
    body["spec"]["cache"]["backend"] = "dogpile.cache.pymemcache"
    return body


def manager_entry(obj: dict, manager: str, operation: str = "Apply", sub: str = "") -> dict:
    for entry in obj["metadata"].get("managedFields") or []:
        if (entry["manager"], entry["operation"], entry.get("subresource", "")) == (
            manager,
            operation,
            sub,
        ):
            return entry
    raise KeyError((manager, operation, sub))


def managers(obj: dict) -> set[tuple[str, str]]:
    return {(e["manager"], e["operation"]) for e in obj["metadata"].get("managedFields") or []}


# ---------------------------------------------------------------------------------------
# lifecycle, authentication, kubeconfig


def test_stop_closes_the_socket_and_ends_the_threads(tmp_path):
    before = set(threading.enumerate())
    server = FakeAPIServer(tmp_path / "s").start()
    port = server.port
    status, _ = Api(server).get("/version")
    assert status == 200
    server.stop()
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=2):
        pass
    deadline = time.monotonic() + 5
    while set(threading.enumerate()) - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not set(threading.enumerate()) - before


def test_stop_ends_an_open_watch(tmp_path):
    server = FakeAPIServer(tmp_path / "s").start()
    api = Api(server)
    got: list = []
    reader = threading.Thread(target=lambda: got.extend(api.watch_lines(CM + "?watch=1", 5)))
    reader.start()
    time.sleep(0.3)
    server.stop()
    reader.join(timeout=5)
    assert not reader.is_alive()
    assert got == []


def test_binds_loopback_only(server):
    assert server.url.startswith("https://127.0.0.1:")
    assert server._httpd is not None
    assert server._httpd.server_address[0] == "127.0.0.1"


@pytest.mark.parametrize("token", [None, "wrong"])
def test_requests_without_the_token_are_401(api, token):
    status, body = api.call("GET", "/api/v1", token=token)
    assert status == 401
    assert body["kind"] == "Status"
    assert body["reason"] == "Unauthorized"
    assert body["code"] == 401


def test_the_token_is_accepted(api):
    assert api.get("/api/v1")[0] == 200


def test_tls_verifies_against_the_ca_only(server):
    conn = http.client.HTTPSConnection(
        "127.0.0.1", server.port, context=ssl.create_default_context()
    )
    with pytest.raises(ssl.SSLCertVerificationError):
        conn.request("GET", "/version")
    conn.close()


def test_kubeconfig_loads_like_a_real_one(server, tmp_path):
    path = server.write_kubeconfig(tmp_path / "kubeconfig", namespace=NS)
    config = yaml.safe_load(path.read_text())
    current = next(c for c in config["contexts"] if c["name"] == config["current-context"])
    cluster = next(c for c in config["clusters"] if c["name"] == current["context"]["cluster"])
    user = next(u for u in config["users"] if u["name"] == current["context"]["user"])
    assert current["context"]["namespace"] == NS
    ca = base64.b64decode(cluster["cluster"]["certificate-authority-data"]).decode()
    context = ssl.create_default_context(cadata=ca)
    host, port = cluster["cluster"]["server"].removeprefix("https://").split(":")
    conn = http.client.HTTPSConnection(host, int(port), context=context)
    conn.request("GET", "/api", headers={"Authorization": f"Bearer {user['user']['token']}"})
    response = conn.getresponse()
    assert response.status == 200
    assert json.loads(response.read())["versions"] == ["v1"]
    conn.close()


def test_kubeconfig_without_namespace(server, tmp_path):
    config = yaml.safe_load(server.write_kubeconfig(tmp_path / "kc").read_text())
    assert "namespace" not in config["contexts"][0]["context"]


# ---------------------------------------------------------------------------------------
# discovery


def _resources(body: dict) -> dict[str, dict]:
    return {r["name"]: r for r in body["resources"]}


def test_discovery_core(api):
    status, body = api.get("/api")
    assert status == 200 and body["versions"] == ["v1"]
    status, body = api.get("/api/v1")
    assert body["kind"] == "APIResourceList" and body["groupVersion"] == "v1"
    resources = _resources(body)
    assert {"secrets", "configmaps", "services", "events", "services/proxy"} <= set(resources)
    assert resources["services"]["namespaced"] is True
    assert resources["namespaces"]["namespaced"] is False
    assert resources["configmaps"]["kind"] == "ConfigMap"
    assert "watch" in resources["configmaps"]["verbs"]
    assert resources["services/status"]["verbs"] == ["get", "patch", "update"]
    assert "configmaps/status" not in resources


def test_discovery_groups_with_gateway_api(api):
    body = api.get("/apis")[1]
    groups = {g["name"]: g for g in body["groups"]}
    assert {
        "apps",
        "policy",
        "autoscaling",
        "networking.k8s.io",
        "batch",
        "events.k8s.io",
        "coordination.k8s.io",
        "scheduling.k8s.io",
        "glance.openstack.c5c3.io",
        "gateway.networking.k8s.io",
    } <= set(groups)
    assert groups["autoscaling"]["preferredVersion"]["groupVersion"] == "autoscaling/v2"
    status, body = api.get("/apis/gateway.networking.k8s.io/v1")
    assert status == 200
    assert _resources(body)["httproutes"]["kind"] == "HTTPRoute"
    assert "httproutes/status" in _resources(body)


def test_discovery_custom_resources_list_status(api):
    status, body = api.get("/apis/glance.openstack.c5c3.io/v1alpha1")
    assert status == 200
    resources = _resources(body)
    assert resources["glances"]["kind"] == "Glance"
    assert resources["glancebackends"]["namespaced"] is True
    assert resources["glances/status"]["kind"] == "Glance"


def test_priorityclasses_are_cluster_scoped(api):
    resources = _resources(api.get("/apis/scheduling.k8s.io/v1")[1])
    assert resources["priorityclasses"]["namespaced"] is False
    body = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "high"},
        "value": 1000,
    }
    status, created = api.post("/apis/scheduling.k8s.io/v1/priorityclasses", body)
    assert status == 201 and "namespace" not in created["metadata"]
    assert api.get("/apis/scheduling.k8s.io/v1/priorityclasses/high")[0] == 200
    assert api.get("/apis/scheduling.k8s.io/v1/namespaces/x/priorityclasses/high")[0] == 404


def test_discovery_without_gateway_api(tmp_path):
    with FakeAPIServer(tmp_path / "s", gateway_api=False) as server:
        api = Api(server)
        groups = {g["name"] for g in api.get("/apis")[1]["groups"]}
        assert "gateway.networking.k8s.io" not in groups
        status, body = api.get("/apis/gateway.networking.k8s.io/v1")
        assert status == 404 and body["kind"] == "Status" and body["reason"] == "NotFound"
        path = f"/apis/gateway.networking.k8s.io/v1/namespaces/{NS}/httproutes"
        assert api.get(path)[0] == 404


@pytest.mark.parametrize(
    "path", ["/apis/apps/v2", "/apis/nope/v1", "/api/v2", "/apis/apps/v1/namespaces/x/widgets"]
)
def test_unserved_paths_are_404(api, path):
    status, body = api.get(path)
    assert status == 404
    assert body["kind"] == "Status"


# ---------------------------------------------------------------------------------------
# create, get, list


def test_create_fills_in_what_the_server_owns(api):
    status, body = api.post(CM, configmap("a", x="1"))
    assert status == 201
    meta = body["metadata"]
    assert meta["namespace"] == NS
    assert meta["uid"] and meta["creationTimestamp"].endswith("Z")
    assert meta["generation"] == 1
    assert meta["resourceVersion"] == "1"
    entry = manager_entry(body, "fake-test", "Update")  # no fieldManager: the User-Agent
    assert entry["fieldsV1"] == {"f:data": {"f:x": {}}}
    status, got = api.get(f"{CM}/a")
    assert status == 200 and got == body


def test_create_twice_is_409_already_exists(api):
    api.post(CM, configmap("a"))
    status, body = api.post(CM, configmap("a"))
    assert status == 409
    assert body["kind"] == "Status" and body["apiVersion"] == "v1"
    assert body["status"] == "Failure"
    assert body["reason"] == "AlreadyExists"
    assert body["message"] == 'configmaps "a" already exists'
    assert body["details"] == {"name": "a", "kind": "configmaps"}


def test_get_missing_is_404_not_found(api):
    status, body = api.get(f"{DEPLOY}/nope")
    assert status == 404
    assert body["reason"] == "NotFound"
    assert body["message"] == 'deployments.apps "nope" not found'
    assert body["details"] == {"name": "nope", "group": "apps", "kind": "deployments"}


def test_generate_name(api):
    status, body = api.post(
        CM, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "cfg-"}}
    )
    assert status == 201
    assert body["metadata"]["name"].startswith("cfg-") and len(body["metadata"]["name"]) == 9


def test_create_in_another_namespace_than_the_path_is_400(api):
    body = configmap("a")
    body["metadata"]["namespace"] = "elsewhere"
    status, out = api.post(CM, body)
    assert status == 400 and out["reason"] == "BadRequest"


def test_create_without_a_name_is_422(api):
    status, out = api.post(CM, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}})
    assert status == 422
    assert out["reason"] == "Invalid"
    assert out["details"]["causes"][0]["field"] == "metadata.name"


def test_create_with_a_resource_version_is_refused(api):
    body = configmap("a")
    body["metadata"]["resourceVersion"] = "5"
    assert api.post(CM, body)[0] == 500


def test_resource_version_is_one_global_counter(api):
    a = api.post(CM, configmap("a"))[1]
    b = api.post(DEPLOY, deployment())[1]
    c = api.post("/api/v1/namespaces/other/configmaps", configmap("c"))[1]
    assert [int(o["metadata"]["resourceVersion"]) for o in (a, b, c)] == [1, 2, 3]


LABELLED = {
    "a": {"app": "glance", "tier": "api"},
    "b": {"app": "glance", "tier": "db"},
    "c": {"app": "keystone"},
    "d": {},
}


@pytest.mark.parametrize(
    ("selector", "names"),
    [
        ("app=glance", ["a", "b"]),
        ("app==glance", ["a", "b"]),
        ("app!=glance", ["c", "d"]),
        ("tier", ["a", "b"]),
        ("!tier", ["c", "d"]),
        ("tier in (api,web)", ["a"]),
        ("tier notin (api)", ["b", "c", "d"]),
        ("app=glance,tier!=db", ["a"]),
        ("app in (glance, keystone),!tier", ["c"]),
        ("", ["a", "b", "c", "d"]),
    ],
)
def test_list_label_selectors(api, selector, names):
    for name, labels in LABELLED.items():
        api.post(CM, configmap(name, labels))
    status, body = api.get(f"{CM}?labelSelector={urllib_quote(selector)}")
    assert status == 200
    assert [i["metadata"]["name"] for i in body["items"]] == names


def urllib_quote(text: str) -> str:
    import urllib.parse

    return urllib.parse.quote(text)


def test_bad_label_selector_is_400(api):
    status, body = api.get(f"{CM}?labelSelector={urllib_quote('a in b')}")
    assert status == 400 and body["reason"] == "BadRequest"


def test_list_shape_and_field_selectors(api):
    api.post(CM, configmap("a"))
    api.post(CM, configmap("b"))
    api.post("/api/v1/namespaces/other/configmaps", configmap("a"))
    status, body = api.get(f"{CM}?fieldSelector=metadata.name%3Da")
    assert status == 200
    assert body["kind"] == "ConfigMapList" and body["apiVersion"] == "v1"
    assert body["metadata"]["resourceVersion"] == "3"
    assert [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in body["items"]] == [
        (NS, "a")
    ]
    assert "kind" not in body["items"][0] and "apiVersion" not in body["items"][0]
    everywhere = api.get("/api/v1/configmaps?fieldSelector=metadata.name%3Da")[1]
    assert [i["metadata"]["namespace"] for i in everywhere["items"]] == [NS, "other"]
    other = api.get("/api/v1/configmaps?fieldSelector=metadata.namespace%21%3Dopenstack")[1]
    assert [i["metadata"]["namespace"] for i in other["items"]] == ["other"]
    assert api.get(f"{CM}?fieldSelector=spec.foo%3Da")[0] == 400


def test_core_events_select_by_involved_object_reason_and_type(api):
    events = f"/api/v1/namespaces/{NS}/events"

    def event(name, kind, involved, reason, type_="Normal"):
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name},
            "involvedObject": {"kind": kind, "name": involved, "namespace": NS},
            "reason": reason,
            "type": type_,
        }

    assert api.post(events, event("e1", "Glance", "glance", "UpgradeInitiated"))[0] == 201
    assert api.post(events, event("e2", "Job", "glance", "Completed"))[0] == 201
    assert api.post(events, event("e3", "Glance", "other", "ExpandFailed", "Warning"))[0] == 201

    def names(selector):
        status, body = api.get(f"{events}?fieldSelector={selector}")
        assert status == 200, body
        return [i["metadata"]["name"] for i in body["items"]]

    assert names("involvedObject.kind%3DGlance,involvedObject.name%3Dglance") == ["e1"]
    assert names("type%3DWarning") == ["e3"]
    assert names("reason%21%3DCompleted") == ["e1", "e3"]
    assert api.get(f"{CM}?fieldSelector=involvedObject.name%3Dglance")[0] == 400


def test_custom_resource_list_items_keep_their_kind(api):
    assert api.post(GLANCES, glance())[0] == 201
    body = api.get(GLANCES)[1]
    assert body["kind"] == "GlanceList"
    assert body["items"][0]["kind"] == "Glance"
    assert body["items"][0]["apiVersion"] == "glance.openstack.c5c3.io/v1alpha1"
    all_ns = api.get("/apis/glance.openstack.c5c3.io/v1alpha1/glances")[1]
    assert len(all_ns["items"]) == 1


# ---------------------------------------------------------------------------------------
# replace


def test_put_with_a_stale_resource_version_is_409(api):
    created = api.post(CM, configmap("a", x="1"))[1]
    fresh = copy.deepcopy(created)
    fresh["data"]["x"] = "2"
    status, updated = api.put(f"{CM}/a", fresh)
    assert status == 200
    assert int(updated["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    stale = copy.deepcopy(created)
    stale["data"]["x"] = "3"
    status, body = api.put(f"{CM}/a", stale)
    assert status == 409
    assert body["reason"] == "Conflict"
    assert "the object has been modified" in body["message"]
    assert api.get(f"{CM}/a")[1]["data"]["x"] == "2"


def test_put_that_changes_nothing_keeps_the_resource_version(api):
    created = api.post(CM, configmap("a", x="1"))[1]
    status, same = api.put(f"{CM}/a", created)
    assert status == 200
    assert same["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


def test_put_to_a_missing_object_is_404(api):
    assert api.put(f"{CM}/nope", configmap("nope"))[0] == 404


def test_put_name_mismatch_is_400(api):
    api.post(CM, configmap("a"))
    assert api.put(f"{CM}/a", configmap("b"))[0] == 400


# ---------------------------------------------------------------------------------------
# generation


def test_generation_counts_changes_outside_metadata_and_status(api):
    api.post(DEPLOY, deployment())
    status, body = api.patch(f"{DEPLOY}/api", {"metadata": {"labels": {"x": "y"}}})
    assert status == 200 and body["metadata"]["generation"] == 1
    body = api.patch(f"{DEPLOY}/api", {"spec": {"replicas": 3}})[1]
    assert body["metadata"]["generation"] == 2
    body = api.patch(f"{DEPLOY}/api/status", {"status": {"replicas": 3}})[1]
    assert body["metadata"]["generation"] == 2


# ---------------------------------------------------------------------------------------
# delete, finalizers, garbage collection


def test_delete_returns_a_success_status_and_removes(api):
    created = api.post(CM, configmap("a"))[1]
    status, body = api.delete(f"{CM}/a")
    assert status == 200
    assert body["kind"] == "Status" and body["status"] == "Success"
    assert body["details"]["uid"] == created["metadata"]["uid"]
    assert api.get(f"{CM}/a")[0] == 404
    assert api.delete(f"{CM}/a")[0] == 404


def test_finalizers_keep_a_deleted_object_until_removed(api):
    body = configmap("a")
    body["metadata"]["finalizers"] = ["example.com/hold"]
    api.post(CM, body)
    status, pending = api.delete(f"{CM}/a")
    assert status == 200
    assert pending["metadata"]["deletionTimestamp"]
    assert pending["metadata"]["deletionGracePeriodSeconds"] == 0
    assert pending["metadata"]["generation"] == 2
    assert api.get(f"{CM}/a")[0] == 200
    status, _ = api.patch(f"{CM}/a", {"metadata": {"finalizers": ["example.com/hold", "new"]}})
    assert status == 422
    status, _ = api.patch(f"{CM}/a", {"metadata": {"finalizers": None}})
    assert status == 200
    assert api.get(f"{CM}/a")[0] == 404


def _owned(api, owner_obj: dict, name: str, **extra_refs: Any) -> dict:
    body = configmap(name)
    body["metadata"]["ownerReferences"] = [owner(owner_obj)]
    status, created = api.post(CM, body)
    assert status == 201, created
    return created


def test_background_deletion_collects_dependents(api):
    parent = api.post(GLANCES, glance())[1]
    _owned(api, parent, "child")
    grandchild = configmap("grandchild")
    grandchild["metadata"]["ownerReferences"] = [owner(api.get(f"{CM}/child")[1])]
    api.post(CM, grandchild)
    api.post(CM, configmap("unrelated"))
    assert api.delete(f"{GLANCES}/glance?propagationPolicy=Background")[0] == 200
    names = [i["metadata"]["name"] for i in api.get(CM)[1]["items"]]
    assert names == ["unrelated"]


def test_orphan_deletion_keeps_dependents_without_the_reference(api):
    parent = api.post(GLANCES, glance())[1]
    _owned(api, parent, "child")
    api.delete(
        f"{GLANCES}/glance",
        {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Orphan"},
    )
    status, child = api.get(f"{CM}/child")
    assert status == 200
    assert "ownerReferences" not in child["metadata"]


def test_a_dependent_with_another_live_owner_survives(api):
    first = api.post(GLANCES, glance("first"))[1]
    second = api.post(GLANCES, glance("second"))[1]
    body = configmap("shared")
    body["metadata"]["ownerReferences"] = [owner(first), owner(second, controller=False)]
    api.post(CM, body)
    api.delete(f"{GLANCES}/first")
    status, shared = api.get(f"{CM}/shared")
    assert status == 200
    assert [r["name"] for r in shared["metadata"]["ownerReferences"]] == ["second"]


def test_foreground_deletion_waits_for_blocking_dependents(api):
    parent = api.post(GLANCES, glance())[1]
    child = configmap("child")
    child["metadata"]["ownerReferences"] = [owner(parent)]
    child["metadata"]["finalizers"] = ["example.com/hold"]
    api.post(CM, child)
    status, pending = api.delete(f"{GLANCES}/glance?propagationPolicy=Foreground")
    assert status == 200
    assert "foregroundDeletion" in pending["metadata"]["finalizers"]
    assert api.get(f"{CM}/child")[1]["metadata"]["deletionTimestamp"]
    assert api.get(f"{GLANCES}/glance")[0] == 200
    api.patch(f"{CM}/child", {"metadata": {"finalizers": []}})
    assert api.get(f"{CM}/child")[0] == 404
    assert api.get(f"{GLANCES}/glance")[0] == 404


def test_jobs_default_to_orphaning(api):
    parent = api.post(JOBS, job())[1]
    _owned(api, parent, "pod-like")
    api.delete(f"{JOBS}/db-sync")
    assert api.get(f"{CM}/pod-like")[0] == 200
    parent = api.post(JOBS, job())[1]
    _owned(api, parent, "pod-like-2")
    api.delete(f"{JOBS}/db-sync?propagationPolicy=Background")
    assert api.get(f"{CM}/pod-like-2")[0] == 404


def test_delete_collection_with_a_selector(api):
    api.post(CM, configmap("a", {"t": "x"}))
    api.post(CM, configmap("b", {"t": "y"}))
    status, body = api.delete(f"{CM}?labelSelector=t%3Dx")
    assert status == 200
    assert [i["metadata"]["name"] for i in body["items"]] == ["a"]
    assert [i["metadata"]["name"] for i in api.get(CM)[1]["items"]] == ["b"]


def test_dry_run_writes_nothing(api, server):
    status, body = api.post(f"{CM}?dryRun=All", configmap("a"))
    assert status == 201 and body["metadata"]["name"] == "a"
    assert api.get(f"{CM}/a")[0] == 404
    assert server.resource_version == "0"


# ---------------------------------------------------------------------------------------
# patches


def test_merge_patch(api):
    api.post(CM, configmap("a", x="1", y="2"))
    status, body = api.patch(f"{CM}/a", {"data": {"x": None, "z": "3"}})
    assert status == 200
    assert body["data"] == {"y": "2", "z": "3"}
    assert ("fake-test", "Update") in managers(body)


def test_json_patch(api):
    api.post(CM, configmap("a", x="1"))
    ops = [
        {"op": "test", "path": "/data/x", "value": "1"},
        {"op": "add", "path": "/data/y", "value": "2"},
        {"op": "remove", "path": "/data/x"},
    ]
    status, body = api.patch(f"{CM}/a", ops, JSONPATCH)
    assert status == 200 and body["data"] == {"y": "2"}
    status, body = api.patch(
        f"{CM}/a", [{"op": "test", "path": "/data/y", "value": "9"}], JSONPATCH
    )
    assert status == 422 and body["kind"] == "Status"
    assert api.get(f"{CM}/a")[1]["data"] == {"y": "2"}


def test_strategic_merge_patch_merges_containers_by_name(api):
    api.post(DEPLOY, deployment())
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {"name": "api", "env": [{"name": "B", "value": "2"}]},
                        {"name": "sidecar", "image": "side:1"},
                    ]
                }
            }
        }
    }
    status, body = api.patch(f"{DEPLOY}/api", patch, STRATEGIC)
    assert status == 200
    containers = body["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["api", "sidecar"]
    assert containers[0]["image"] == "glance:1"
    assert [e["name"] for e in containers[0]["env"]] == ["A", "B"]
    delete = {
        "spec": {"template": {"spec": {"containers": [{"name": "sidecar", "$patch": "delete"}]}}}
    }
    body = api.patch(f"{DEPLOY}/api", delete, STRATEGIC)[1]
    assert [c["name"] for c in body["spec"]["template"]["spec"]["containers"]] == ["api"]


def test_strategic_merge_patch_is_refused_for_custom_resources(api):
    api.post(GLANCES, glance())
    status, body = api.patch(f"{GLANCES}/glance", {"metadata": {"labels": {"a": "b"}}}, STRATEGIC)
    assert status == 415 and body["reason"] == "UnsupportedMediaType"


def test_unknown_patch_type_is_415(api):
    api.post(CM, configmap("a"))
    assert api.patch(f"{CM}/a", {}, "application/json")[0] == 415


def test_patch_missing_object_is_404(api):
    assert api.patch(f"{CM}/nope", {"data": {}})[0] == 404


def test_patch_with_a_stale_resource_version_is_409(api):
    api.post(CM, configmap("a"))
    status, body = api.patch(f"{CM}/a", {"metadata": {"resourceVersion": "99"}, "data": {"x": "1"}})
    assert status == 409 and body["reason"] == "Conflict"


# ---------------------------------------------------------------------------------------
# server-side apply


def test_apply_creates_a_missing_object_with_an_apply_entry(api):
    status, body = api.apply(f"{DEPLOY}/api", deployment())
    assert status == 201
    entry = manager_entry(body, "op")
    assert entry["operation"] == "Apply"
    assert entry["fieldsType"] == "FieldsV1"
    assert entry["apiVersion"] == "apps/v1"
    assert entry["time"].endswith("Z")
    spec = entry["fieldsV1"]["f:spec"]
    assert spec["f:selector"] == {}
    container = spec["f:template"]["f:spec"]["f:containers"]['k:{"name":"api"}']
    assert container["."] == {}
    assert container["f:image"] == {}
    assert container["f:env"]['k:{"name":"A"}'] == {".": {}, "f:name": {}, "f:value": {}}
    port = container["f:ports"]['k:{"containerPort":9292,"protocol":"TCP"}']
    assert port == {".": {}, "f:containerPort": {}, "f:name": {}}
    assert "f:replicas" not in spec
    assert "f:name" not in entry["fieldsV1"].get("f:metadata", {})
    assert body["spec"]["replicas"] == 1


def test_apply_field_encoding_for_volumes_mounts_services_conditions(api):
    dep = deployment()
    pod = dep["spec"]["template"]["spec"]
    pod["volumes"] = [{"name": "config", "configMap": {"name": "cfg"}}]
    pod["containers"][0]["volumeMounts"] = [{"name": "config", "mountPath": "/etc/glance"}]
    dep["metadata"]["finalizers"] = ["example.com/x"]
    body = api.apply(f"{DEPLOY}/api", dep)[1]
    fields = manager_entry(body, "op")["fieldsV1"]
    pod_fields = fields["f:spec"]["f:template"]["f:spec"]
    assert 'k:{"name":"config"}' in pod_fields["f:volumes"]
    mounts = pod_fields["f:containers"]['k:{"name":"api"}']["f:volumeMounts"]
    assert 'k:{"mountPath":"/etc/glance"}' in mounts
    assert (
        fields["f:metadata"]["f:finalizers"] == {".": {}, 'v:"example.com/x"': {}}
        or 'v:"example.com/x"' in fields["f:metadata"]["f:finalizers"]
    )
    svc = api.apply(f"{SVC}/glance", service())[1]
    svc_fields = manager_entry(svc, "op")["fieldsV1"]["f:spec"]
    assert svc_fields["f:selector"] == {}
    assert 'k:{"port":9292,"protocol":"TCP"}' in svc_fields["f:ports"]
    status = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "api"},
        "status": {"conditions": [{"type": "Available", "status": "True"}]},
    }
    body = api.apply(f"{DEPLOY}/api/status", status, manager="ctrl")[1]
    entry = manager_entry(body, "ctrl", sub="status")
    assert 'k:{"type":"Available"}' in entry["fieldsV1"]["f:status"]["f:conditions"]


def test_noop_apply_changes_no_resource_version(api, server):
    first = api.apply(f"{DEPLOY}/api", deployment())[1]
    api.apply(f"{SVC}/glance", service())
    rv = server.resource_version
    server.reset_requests()
    status, again = api.apply(f"{DEPLOY}/api", deployment())
    assert status == 200
    assert again == first
    status, svc_again = api.apply(f"{SVC}/glance", service())
    assert status == 200
    assert svc_again["spec"]["clusterIP"]
    assert server.resource_version == rv
    assert len(server.writes()) == 2


def test_noop_apply_with_yaml_body(api, server):
    api.apply(f"{CM}/a", configmap("a", x="1"))
    rv = server.resource_version
    conn_body = yaml.safe_dump(configmap("a", x="1"))
    status, body = api.call("PATCH", f"{CM}/a?fieldManager=op", conn_body, APPLY)
    assert status == 200
    assert body["data"] == {"x": "1"}
    assert server.resource_version == rv


def test_apply_removes_a_field_it_no_longer_applies(api):
    api.apply(f"{CM}/a", configmap("a", {"keep": "1", "drop": "1"}, x="1", y="2"))
    status, body = api.apply(f"{CM}/a", configmap("a", {"keep": "1"}, x="1"))
    assert status == 200
    assert body["metadata"]["labels"] == {"keep": "1"}
    assert body["data"] == {"x": "1"}
    assert "f:y" not in manager_entry(body, "op")["fieldsV1"]["f:data"]


def test_apply_removes_a_list_item_it_no_longer_applies(api):
    dep = deployment()
    dep["spec"]["template"]["spec"]["containers"][0]["env"].append({"name": "B", "value": "2"})
    api.apply(f"{DEPLOY}/api", dep)
    body = api.apply(f"{DEPLOY}/api", deployment())[1]
    env = body["spec"]["template"]["spec"]["containers"][0]["env"]
    assert env == [{"name": "A", "value": "1"}]


def test_apply_keeps_a_dropped_field_another_manager_owns(api):
    api.apply(f"{CM}/a", configmap("a", x="1", y="2"))
    api.apply(f"{CM}/a", configmap("a", y="2"), manager="other")
    body = api.apply(f"{CM}/a", configmap("a", x="1"))[1]
    assert body["data"] == {"x": "1", "y": "2"}
    assert manager_entry(body, "other")["fieldsV1"]["f:data"] == {"f:y": {}}


def test_apply_dropping_replicas_falls_back_to_the_default(api):
    api.apply(f"{DEPLOY}/api", deployment(replicas=3))
    body = api.apply(f"{DEPLOY}/api", deployment())[1]
    assert body["spec"]["replicas"] == 1
    assert body["metadata"]["generation"] == 2


def test_apply_conflict_without_force_is_409(api):
    api.apply(f"{DEPLOY}/api", deployment(replicas=2), manager="hpa")
    status, body = api.apply(f"{DEPLOY}/api", deployment(replicas=3))
    assert status == 409
    assert body["reason"] == "Conflict"
    assert body["message"] == 'Apply failed with 1 conflict: conflict with "hpa": .spec.replicas'
    assert body["details"]["causes"] == [
        {
            "reason": "FieldManagerConflict",
            "message": 'conflict with "hpa"',
            "field": ".spec.replicas",
        }
    ]
    assert api.get(f"{DEPLOY}/api")[1]["spec"]["replicas"] == 2


def test_apply_conflict_with_an_update_manager_names_its_version(api):
    api.post(CM, configmap("a", x="1"))
    status, body = api.apply(f"{CM}/a", configmap("a", x="2"))
    assert status == 409
    assert 'conflict with "fake-test" using v1: .data.x' in body["message"]


def test_apply_with_the_same_value_shares_the_field(api):
    api.apply(f"{DEPLOY}/api", deployment(replicas=2), manager="hpa")
    status, body = api.apply(f"{DEPLOY}/api", deployment(replicas=2))
    assert status == 200
    assert "f:replicas" in manager_entry(body, "hpa")["fieldsV1"]["f:spec"]
    assert "f:replicas" in manager_entry(body, "op")["fieldsV1"]["f:spec"]


def test_force_apply_takes_the_field_over(api):
    api.apply(f"{DEPLOY}/api", deployment(replicas=2), manager="hpa")
    status, body = api.apply(f"{DEPLOY}/api", deployment(replicas=3), force=True)
    assert status == 200
    assert body["spec"]["replicas"] == 3
    assert "f:replicas" not in manager_entry(body, "hpa")["fieldsV1"]["f:spec"]
    assert "f:replicas" in manager_entry(body, "op")["fieldsV1"]["f:spec"]


def test_apply_without_field_manager_is_422(api):
    status, body = api.call("PATCH", f"{CM}/a", configmap("a"), APPLY)
    assert status == 422 and "fieldManager" in body["message"]


def test_update_takes_fields_from_an_applier(api):
    api.apply(f"{CM}/a", configmap("a", x="1", y="2"))
    body = api.patch(f"{CM}/a?fieldManager=editor", {"data": {"x": "9"}})[1]
    assert manager_entry(body, "op")["fieldsV1"]["f:data"] == {"f:y": {}}
    assert manager_entry(body, "editor", "Update")["fieldsV1"]["f:data"] == {"f:x": {}}
    # the applier re-applying x conflicts now; dropping x leaves it to the editor
    assert api.apply(f"{CM}/a", configmap("a", x="1", y="2"))[0] == 409
    body = api.apply(f"{CM}/a", configmap("a", y="2"))[1]
    assert body["data"] == {"x": "9", "y": "2"}


def test_apply_keyed_list_merges_with_other_managers_items(api):
    api.apply(f"{DEPLOY}/api", deployment())
    other = deployment()
    other["spec"]["template"]["spec"]["containers"] = [{"name": "sidecar", "image": "side:1"}]
    del other["spec"]["selector"]
    other["spec"]["template"]["metadata"]["labels"] = {"app": "api"}
    body = api.apply(f"{DEPLOY}/api", other, manager="injector")[1]
    assert [c["name"] for c in body["spec"]["template"]["spec"]["containers"]] == ["api", "sidecar"]
    body = api.apply(f"{DEPLOY}/api", deployment(image="glance:2"))[1]
    containers = body["spec"]["template"]["spec"]["containers"]
    assert [(c["name"], c["image"]) for c in containers] == [
        ("api", "glance:2"),
        ("sidecar", "side:1"),
    ]


def test_apply_to_the_wrong_name_is_400(api):
    assert api.apply(f"{CM}/b", configmap("a"))[0] == 400


def test_apply_label_change_bumps_resource_version_not_generation(api):
    created = api.apply(f"{DEPLOY}/api", deployment())[1]
    dep = deployment()
    dep["metadata"]["labels"] = {"new": "1"}
    body = api.apply(f"{DEPLOY}/api", dep)[1]
    assert body["metadata"]["generation"] == 1
    assert body["metadata"]["resourceVersion"] != created["metadata"]["resourceVersion"]


# ---------------------------------------------------------------------------------------
# status subresource


def test_status_writes_change_only_status(api):
    created = api.post(DEPLOY, deployment())[1]
    assert created["status"] == {}
    changed = copy.deepcopy(created)
    changed["status"] = {"readyReplicas": 1}
    changed["spec"]["replicas"] = 5
    status, body = api.put(f"{DEPLOY}/api/status", changed)
    assert status == 200
    assert body["status"] == {"readyReplicas": 1}
    assert body["spec"]["replicas"] == 1
    body = api.patch(f"{DEPLOY}/api/status", {"spec": {"replicas": 7}, "status": {"replicas": 1}})[
        1
    ]
    assert body["spec"]["replicas"] == 1 and body["status"]["replicas"] == 1
    assert api.get(f"{DEPLOY}/api/status")[1]["status"]["replicas"] == 1


def test_main_resource_writes_ignore_status(api):
    api.post(GLANCES, glance())
    api.patch(f"{GLANCES}/glance/status", {"status": {"phase": "Ready"}})
    body = api.patch(
        f"{GLANCES}/glance", {"status": {"phase": "Broken"}, "metadata": {"labels": {"a": "b"}}}
    )[1]
    assert body["status"] == {"phase": "Ready"}
    assert body["metadata"]["labels"] == {"a": "b"}


def test_create_drops_status(api):
    body = glance()
    body["status"] = {"phase": "Ready"}
    created = api.post(GLANCES, body)[1]
    assert "status" not in created


def test_status_of_a_kind_without_the_subresource_is_404(api):
    api.post(CM, configmap("a"))
    assert api.get(f"{CM}/a/status")[0] == 404


def test_custom_resource_schema_defaults_and_validation(api):
    body = glance()
    body["spec"]["logging"] = {"level": "DEBUG"}
    created = api.post(GLANCES, body)[1]
    assert created["spec"]["logging"] == {"level": "DEBUG", "format": "text"}  # the CRD's default
    bad = glance("bad")
    del bad["spec"]["image"]
    status, body = api.post(GLANCES, bad)
    assert status == 422
    assert body["message"].startswith('Glance.glance.openstack.c5c3.io "bad" is invalid: ')
    assert {
        "reason": "FieldValueRequired",
        "message": "Required value",
        "field": "spec.image",
    } in body["details"]["causes"]


# ---------------------------------------------------------------------------------------
# test controls


def test_store_get_list_put_delete(server, api):
    server.store.put(configmap("a", x="1") | {"metadata": {"name": "a", "namespace": NS}})
    assert api.get(f"{CM}/a")[1]["data"] == {"x": "1"}
    assert server.store.get("v1", "ConfigMap", NS, "a")["metadata"]["resourceVersion"] == "1"
    assert [o["metadata"]["name"] for o in server.store.list("v1", "ConfigMap")] == ["a"]
    assert server.store.get("v1", "ConfigMap", NS, "nope") is None
    server.store.delete("v1", "ConfigMap", NS, "a")
    assert api.get(f"{CM}/a")[0] == 404


def test_set_status_bumps_the_resource_version(server, api):
    created = api.post(DEPLOY, deployment())[1]
    out = server.set_status("apps/v1", "Deployment", NS, "api", {"readyReplicas": 1})
    assert (
        int(out["metadata"]["resourceVersion"]) == int(created["metadata"]["resourceVersion"]) + 1
    )
    assert api.get(f"{DEPLOY}/api")[1]["status"] == {"readyReplicas": 1}
    assert out["metadata"]["generation"] == 1


def test_requests_and_writes_are_recorded(server, api):
    api.post(CM, configmap("a"))
    api.get(f"{CM}/a")
    api.apply(f"{CM}/a", configmap("a", x="1"))
    api.get(f"{CM}?labelSelector=a%3Db")
    assert server.requests[0] == Request("POST", CM, {}, "application/json")
    assert server.requests[3].query == {"labelSelector": "a=b"}
    assert [(r.method, r.content_type) for r in server.writes()] == [
        ("POST", "application/json"),
        ("PATCH", APPLY),
    ]
    method, path, query, content_type = server.writes()[1]
    assert (method, path, query, content_type) == (
        "PATCH",
        f"{CM}/a",
        {"fieldManager": "op"},
        APPLY,
    )
    server.reset_requests()
    assert server.requests == [] and server.writes() == []


# ---------------------------------------------------------------------------------------
# every registered resource


MINIMAL = {
    ("v1", "secrets"): {"kind": "Secret", "type": "Opaque"},
    ("v1", "configmaps"): {"kind": "ConfigMap"},
    ("v1", "services"): {"kind": "Service", "spec": {"ports": [{"port": 80}]}},
    ("v1", "events"): {"kind": "Event", "reason": "Test", "involvedObject": {"kind": "Glance"}},
    ("apps/v1", "deployments"): deployment("x"),
    ("policy/v1", "poddisruptionbudgets"): {
        "kind": "PodDisruptionBudget",
        "spec": {"maxUnavailable": 1},
    },
    ("autoscaling/v2", "horizontalpodautoscalers"): {
        "kind": "HorizontalPodAutoscaler",
        "spec": {"maxReplicas": 3},
    },
    ("networking.k8s.io/v1", "networkpolicies"): {
        "kind": "NetworkPolicy",
        "spec": {"podSelector": {}},
    },
    ("batch/v1", "jobs"): job("x"),
    ("batch/v1", "cronjobs"): {
        "kind": "CronJob",
        "spec": {"schedule": "@daily", "jobTemplate": {"spec": job()["spec"]}},
    },
    ("events.k8s.io/v1", "events"): {"kind": "Event", "reason": "Test", "action": "Test"},
    ("coordination.k8s.io/v1", "leases"): {"kind": "Lease", "spec": {"holderIdentity": "me"}},
    ("gateway.networking.k8s.io/v1", "httproutes"): {
        "kind": "HTTPRoute",
        "spec": {"parentRefs": [{"name": "gw"}]},
    },
    ("glance.openstack.c5c3.io/v1alpha1", "glances"): glance("x"),
}


@pytest.mark.parametrize(("api_version", "plural"), sorted(MINIMAL))
def test_every_namespaced_resource_round_trips(api, server, api_version, plural):
    body = copy.deepcopy(MINIMAL[(api_version, plural)])
    body["apiVersion"] = api_version
    body["metadata"] = {"name": "x"}
    base = f"/api/{api_version}" if api_version == "v1" else f"/apis/{api_version}"
    status, created = api.post(f"{base}/namespaces/{NS}/{plural}", body)
    assert status == 201, created
    assert created["kind"] == body["kind"] and created["apiVersion"] == api_version
    assert api.get(f"{base}/namespaces/{NS}/{plural}/x")[1] == created
    assert server.store.get(api_version, body["kind"], NS, "x") == created
    assert len(api.get(f"{base}/{plural}")[1]["items"]) == 1
    assert api.delete(f"{base}/namespaces/{NS}/{plural}/x?propagationPolicy=Background")[0] == 200
    assert api.get(f"{base}/namespaces/{NS}/{plural}/x")[0] == 404


def test_core_and_events_api_events_are_distinct_kinds(api):
    api.post(
        f"/api/v1/namespaces/{NS}/events",
        {"kind": "Event", "apiVersion": "v1", "metadata": {"name": "e"}},
    )
    assert api.get(f"/apis/events.k8s.io/v1/namespaces/{NS}/events/e")[0] == 404


def test_namespaces_are_cluster_scoped_with_status(api):
    status, ns = api.post(
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}},
    )
    assert status == 201 and ns["spec"] == {"finalizers": ["kubernetes"]}
    assert ns["status"] == {"phase": "Active"}
    assert ns["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team"}
    body = api.patch("/api/v1/namespaces/team/status", {"status": {"phase": "Terminating"}})[1]
    assert body["status"] == {"phase": "Terminating"}
    assert api.get("/api/v1/namespaces/team")[1]["status"] == {"phase": "Terminating"}


# ---------------------------------------------------------------------------------------
# validation and defaults


IMMUTABLE_MESSAGE = (
    'ConfigMap "a" is invalid: data: Forbidden: field is immutable when `immutable` is set'
)


def test_immutable_configmap_data_is_422(api):
    body = configmap("a", x="1")
    body["immutable"] = True
    api.post(CM, body)
    status, out = api.patch(f"{CM}/a", {"data": {"x": "2"}})
    assert status == 422
    assert out["reason"] == "Invalid"
    assert out["message"] == IMMUTABLE_MESSAGE
    assert out["details"]["kind"] == "ConfigMap"
    assert out["details"]["causes"] == [
        {
            "reason": "FieldValueForbidden",
            "message": "Forbidden: field is immutable when `immutable` is set",
            "field": "data",
        }
    ]
    status, out = api.apply(f"{CM}/a", configmap("a", x="3") | {"immutable": True}, force=True)
    assert status == 422 and out["message"] == IMMUTABLE_MESSAGE
    assert api.patch(f"{CM}/a", {"immutable": False})[0] == 422
    status, out = api.patch(f"{CM}/a", {"metadata": {"labels": {"ok": "1"}}})
    assert status == 200 and out["data"] == {"x": "1"}


def test_immutable_secret_and_string_data(api):
    body = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s"},
        "stringData": {"pw": "hunter2"},
        "immutable": True,
    }
    status, created = api.post(SECRETS, body)
    assert status == 201
    assert created["type"] == "Opaque"
    assert created["data"] == {"pw": base64.b64encode(b"hunter2").decode()}
    assert "stringData" not in created
    status, out = api.patch(f"{SECRETS}/s", {"stringData": {"pw": "other"}})
    assert status == 422
    assert (
        out["message"]
        == 'Secret "s" is invalid: data: Forbidden: field is immutable when `immutable` is set'
    )


def test_string_data_merges_into_existing_data(api):
    api.post(
        SECRETS,
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "s"},
            "data": {"a": base64.b64encode(b"1").decode()},
        },
    )
    body = api.patch(f"{SECRETS}/s", {"stringData": {"b": "2"}})[1]
    assert {k: base64.b64decode(v).decode() for k, v in body["data"].items()} == {
        "a": "1",
        "b": "2",
    }


def test_deployment_defaults(api):
    body = api.post(DEPLOY, deployment())[1]
    spec = body["spec"]
    assert spec["replicas"] == 1
    assert spec["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
    }
    container = spec["template"]["spec"]["containers"][0]
    assert container["ports"][0]["protocol"] == "TCP"
    assert container["imagePullPolicy"] == "IfNotPresent"
    recreate = api.post(DEPLOY, deployment("r", strategy={"type": "Recreate"}, replicas=0))[1][
        "spec"
    ]
    assert recreate["strategy"] == {"type": "Recreate"} and recreate["replicas"] == 0


def test_deployment_selector_is_immutable(api):
    api.apply(f"{DEPLOY}/api", deployment())
    changed = deployment()
    changed["spec"]["selector"] = {"matchLabels": {"app": "api", "v": "2"}}
    changed["spec"]["template"]["metadata"]["labels"]["v"] = "2"
    status, out = api.apply(f"{DEPLOY}/api", changed)
    assert status == 422
    assert out["message"].startswith(
        'Deployment.apps "api" is invalid: spec.selector: Invalid value: '
    )
    assert out["message"].endswith(": field is immutable")
    assert out["details"]["causes"][0]["field"] == "spec.selector"
    assert api.get(f"{DEPLOY}/api")[1]["spec"]["selector"] == {"matchLabels": {"app": "api"}}


def test_deployment_selector_must_match_the_template(api):
    body = deployment()
    body["spec"]["template"]["metadata"]["labels"] = {"app": "other"}
    status, out = api.post(DEPLOY, body)
    assert status == 422
    assert out["details"]["causes"][0]["field"] == "spec.template.metadata.labels"


def test_job_gets_a_selector_and_its_template_is_immutable(api):
    status, created = api.apply(f"{JOBS}/db-sync", job())
    assert status == 201
    uid = created["metadata"]["uid"]
    assert created["spec"]["selector"] == {
        "matchLabels": {"batch.kubernetes.io/controller-uid": uid}
    }
    labels = created["spec"]["template"]["metadata"]["labels"]
    assert labels["batch.kubernetes.io/job-name"] == "db-sync" and labels["controller-uid"] == uid
    assert created["spec"]["backoffLimit"] == 6
    rv = created["metadata"]["resourceVersion"]
    assert api.apply(f"{JOBS}/db-sync", job())[1]["metadata"]["resourceVersion"] == rv
    status, out = api.apply(f"{JOBS}/db-sync", job(command="other"))
    assert status == 422
    assert out["message"].startswith(
        'Job.batch "db-sync" is invalid: spec.template: Invalid value: '
    )
    status, out = api.patch(f"{JOBS}/db-sync", {"spec": {"selector": {"matchLabels": {"a": "b"}}}})
    assert status == 422 and out["details"]["causes"][0]["field"] == "spec.selector"


def test_job_restart_policy_always_is_422(api):
    body = job()
    del body["spec"]["template"]["spec"]["restartPolicy"]
    status, out = api.post(JOBS, body)
    assert status == 422
    assert out["details"]["causes"][0]["field"] == "spec.template.spec.restartPolicy"
    assert out["details"]["causes"][0]["reason"] == "FieldValueNotSupported"


def test_service_cluster_ip_is_allocated_kept_and_immutable(api):
    first = api.post(SVC, service("glance"))[1]
    second = api.post(SVC, service("other"))[1]
    ip = first["spec"]["clusterIP"]
    assert ip.startswith("10.96.") and ip != second["spec"]["clusterIP"]
    assert first["spec"]["clusterIPs"] == [ip]
    assert first["spec"]["type"] == "ClusterIP"
    assert first["spec"]["ports"][0] == {
        "name": "api",
        "port": 9292,
        "protocol": "TCP",
        "targetPort": 9292,
    }
    status, kept = api.put(f"{SVC}/glance", service("glance") | {"metadata": {"name": "glance"}})
    assert status == 200 and kept["spec"]["clusterIP"] == ip
    changed = copy.deepcopy(kept)
    changed["spec"]["clusterIP"] = "10.96.9.9"
    changed["spec"]["clusterIPs"] = ["10.96.9.9"]
    status, out = api.put(f"{SVC}/glance", changed)
    assert status == 422
    assert out["details"]["causes"][0]["field"] == "spec.clusterIPs[0]"
    assert "may not change once set" in out["message"]
    external = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "ext"},
        "spec": {"type": "ExternalName", "externalName": "example.com"},
    }
    assert "clusterIP" not in api.post(SVC, external)[1]["spec"]


def test_service_apply_without_cluster_ip_is_a_noop_the_second_time(api, server):
    first = api.apply(f"{SVC}/glance", service())[1]
    assert (
        api.apply(f"{SVC}/glance", service())[1]["metadata"]["resourceVersion"]
        == first["metadata"]["resourceVersion"]
    )


def test_two_controller_references_are_422(api):
    a = api.post(GLANCES, glance("a"))[1]
    b = api.post(GLANCES, glance("b"))[1]
    body = configmap("c")
    body["metadata"]["ownerReferences"] = [owner(a), owner(b)]
    status, out = api.post(CM, body)
    assert status == 422
    assert out["details"]["causes"][0]["field"] == "metadata.ownerReferences"
    assert "Only one reference can have Controller set to true" in out["message"]
    body["metadata"]["ownerReferences"] = [owner(a), owner(b, controller=False)]
    assert api.post(CM, body)[0] == 201


def test_other_defaults(api):
    np = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "n"},
        "spec": {"podSelector": {}, "egress": [{"ports": [{"port": 53}]}]},
    }
    body = api.post(f"/apis/networking.k8s.io/v1/namespaces/{NS}/networkpolicies", np)[1]
    assert body["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert body["spec"]["egress"][0]["ports"][0]["protocol"] == "TCP"
    hpa = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "h"},
        "spec": {"maxReplicas": 3},
    }
    assert (
        api.post(f"/apis/autoscaling/v2/namespaces/{NS}/horizontalpodautoscalers", hpa)[1]["spec"][
            "minReplicas"
        ]
        == 1
    )
    route = {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": "r"},
        "spec": {
            "parentRefs": [{"name": "gw"}],
            "rules": [{"backendRefs": [{"name": "glance", "port": 9292}]}],
        },
    }
    spec = api.post(f"/apis/gateway.networking.k8s.io/v1/namespaces/{NS}/httproutes", route)[1][
        "spec"
    ]
    assert spec["parentRefs"][0] == {
        "name": "gw",
        "group": "gateway.networking.k8s.io",
        "kind": "Gateway",
    }
    assert spec["rules"][0]["backendRefs"][0] == {
        "name": "glance",
        "port": 9292,
        "group": "",
        "kind": "Service",
        "weight": 1,
    }


@pytest.mark.parametrize("name", ["Upper", "under_score", "-lead", "a" * 254])
def test_invalid_names_are_422(api, name):
    status, out = api.post(CM, configmap(name))
    assert status == 422 and out["details"]["causes"][0]["field"] == "metadata.name"


def test_service_names_are_dns_labels(api):
    assert api.post(SVC, service("1glance"))[0] == 422
    assert api.post(CM, configmap("1glance"))[0] == 201


# ---------------------------------------------------------------------------------------
# service proxy


class _Backend(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        status = 500 if self.path.startswith("/fail") else 200
        body = json.dumps({"path": self.path}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def backend():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Backend)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()
    thread.join()


PROXY = f"/api/v1/namespaces/{NS}/services"


def test_proxy_forwards_to_the_registered_backend(api, server, backend):
    api.post(SVC, service())
    server.set_service_backend(NS, "glance", 9292, backend)
    status, body = api.get(f"{PROXY}/glance:9292/proxy/healthcheck?x=1")
    assert status == 200 and body == {"path": "/healthcheck?x=1"}
    assert api.get(f"{PROXY}/http:glance:9292/proxy/v2/images")[1] == {"path": "/v2/images"}
    assert api.get(f"{PROXY}/glance:api/proxy/")[1] == {"path": "/"}
    status, body = api.get(f"{PROXY}/glance:9292/proxy/fail")
    assert status == 500 and body == {"path": "/fail"}


def test_proxy_without_endpoints_is_503(api, server, backend):
    api.post(SVC, service())
    status, body = api.get(f"{PROXY}/glance:9292/proxy/healthcheck")
    assert status == 503
    assert body["kind"] == "Status" and body["reason"] == "ServiceUnavailable"
    assert body["message"] == 'no endpoints available for service "glance"'
    server.set_service_backend(NS, "glance", 9292, backend)
    assert api.get(f"{PROXY}/glance:9292/proxy/healthcheck")[0] == 200
    server.set_service_backend(NS, "glance", 9292, None)
    assert api.get(f"{PROXY}/glance:9292/proxy/healthcheck")[0] == 503


def test_proxy_to_a_missing_service_is_404(api, server, backend):
    server.set_service_backend(NS, "glance", 9292, backend)
    status, body = api.get(f"{PROXY}/glance:9292/proxy/healthcheck")
    assert status == 404
    assert body["message"] == 'services "glance" not found'


def test_proxy_needs_the_token(api, server, backend):
    api.post(SVC, service())
    server.set_service_backend(NS, "glance", 9292, backend)
    assert api.call("GET", f"{PROXY}/glance:9292/proxy/", token=None)[0] == 401


# ---------------------------------------------------------------------------------------
# watch


def test_watch_replays_from_a_resource_version(api):
    created = api.post(CM, configmap("a", {"app": "x"}, v="1"))[1]
    api.patch(f"{CM}/a", {"data": {"v": "2"}})
    api.post("/api/v1/namespaces/other/configmaps", configmap("elsewhere"))
    api.delete(f"{CM}/a")
    rv = created["metadata"]["resourceVersion"]
    events = api.watch_lines(f"{CM}?watch=1&resourceVersion={rv}&timeoutSeconds=1", 10)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("MODIFIED", "a"),
        ("DELETED", "a"),
    ]
    assert events[0]["object"]["data"] == {"v": "2"}
    assert events[0]["object"]["kind"] == "ConfigMap"
    assert int(events[1]["object"]["metadata"]["resourceVersion"]) == 4
    everywhere = api.watch_lines(
        f"/api/v1/configmaps?watch=true&resourceVersion={rv}&timeoutSeconds=1", 10
    )
    assert [e["type"] for e in everywhere] == ["MODIFIED", "ADDED", "DELETED"]


def test_watch_from_now_lists_then_streams(api):
    api.post(CM, configmap("a"))
    got: list = []
    reader = threading.Thread(
        target=lambda: got.extend(api.watch_lines(f"{CM}?watch=1&timeoutSeconds=5", 3))
    )
    reader.start()
    time.sleep(0.3)
    api.post(CM, configmap("b"))
    api.patch(f"{CM}/b", {"data": {"x": "1"}})
    reader.join(timeout=5)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in got] == [
        ("ADDED", "a"),
        ("ADDED", "b"),
        ("MODIFIED", "b"),
    ]


def test_watch_with_a_selector_sees_objects_leave_and_enter(api):
    start = api.post(CM, configmap("a", {"app": "x"}))[1]["metadata"]["resourceVersion"]
    api.patch(f"{CM}/a", {"metadata": {"labels": {"app": "y"}}})
    api.patch(f"{CM}/a", {"metadata": {"labels": {"app": "x"}}})
    api.patch(f"{CM}/a", {"data": {"k": "v"}})
    events = api.watch_lines(
        f"{CM}?watch=1&labelSelector=app%3Dx&resourceVersion={start}&timeoutSeconds=1", 10
    )
    assert [e["type"] for e in events] == ["DELETED", "ADDED", "MODIFIED"]


def test_watch_too_old_resource_version_is_410(tmp_path):
    with FakeAPIServer(tmp_path / "s", history_size=3) as server:
        api = Api(server)
        for i in range(6):
            api.post(CM, configmap(f"c{i}"))
        events = api.watch_lines(f"{CM}?watch=1&resourceVersion=1", 5)
        assert len(events) == 1
        assert events[0]["type"] == "ERROR"
        status = events[0]["object"]
        assert (
            status["kind"] == "Status" and status["code"] == 410 and status["reason"] == "Expired"
        )
        assert status["message"].startswith("too old resource version: 1")
        recent = api.watch_lines(f"{CM}?watch=1&resourceVersion=4&timeoutSeconds=1", 5)
        assert [e["object"]["metadata"]["name"] for e in recent] == ["c4", "c5"]


def test_watch_bookmarks_carry_the_latest_resource_version(tmp_path):
    with FakeAPIServer(tmp_path / "s", bookmark_interval=0.2) as server:
        api = Api(server)
        api.post(CM, configmap("a"))
        api.post(SECRETS, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}})
        events = api.watch_lines(
            f"{CM}?watch=1&resourceVersion=2&allowWatchBookmarks=true&timeoutSeconds=1", 2
        )
        assert events[0]["type"] == "BOOKMARK"
        assert events[0]["object"]["metadata"] == {"resourceVersion": "2"}
        assert events[0]["object"]["kind"] == "ConfigMap"
        plain = api.watch_lines(f"{CM}?watch=1&resourceVersion=2&timeoutSeconds=1", 2)
        assert plain == []


def test_watch_ends_at_its_timeout(api):
    began = time.monotonic()
    assert api.watch_lines(f"{CM}?watch=1&timeoutSeconds=1", 1) == []
    assert 0.9 <= time.monotonic() - began < 4


# ---------------------------------------------------------------------------------------
# the operator's own flows


def test_replicas_handover_to_an_hpa_manager(api):
    """The apply_plan hand-over: a second manager keeps spec.replicas while ours lets go."""
    api.apply(f"{DEPLOY}/api", deployment(replicas=3))
    server_side = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "api"},
        "spec": {"replicas": 3},
    }
    status, _ = api.apply(f"{DEPLOY}/api", server_side, manager="handover")
    assert status == 200
    body = api.apply(f"{DEPLOY}/api", deployment())[1]
    assert body["spec"]["replicas"] == 3
    assert "f:replicas" not in manager_entry(body, "op")["fieldsV1"]["f:spec"]
    # an autoscaler scaling through an update takes the field; our applies leave it be
    body = api.patch(f"{DEPLOY}/api?fieldManager=hpa-controller", {"spec": {"replicas": 5}})[1]
    assert api.apply(f"{DEPLOY}/api", deployment())[1]["spec"]["replicas"] == 5


def test_glance_status_apply_keys_conditions_by_type(api, server):
    api.post(GLANCES, glance())
    status_doc = {
        "apiVersion": "glance.openstack.c5c3.io/v1alpha1",
        "kind": "Glance",
        "metadata": {"name": "glance"},
        "status": {
            "conditions": [
                {
                    "type": "Ready",
                    "status": "False",
                    "reason": "Progressing",
                    "message": "",
                    "lastTransitionTime": "2026-03-01T00:00:00Z",
                }
            ]
        },
    }
    status, body = api.apply(f"{GLANCES}/glance/status", status_doc, manager="op", force=True)
    assert status == 200, body
    entry = manager_entry(body, "op", sub="status")
    assert 'k:{"type":"Ready"}' in entry["fieldsV1"]["f:status"]["f:conditions"]
    assert body["metadata"]["generation"] == 1
    rv = server.resource_version
    assert api.apply(f"{GLANCES}/glance/status", status_doc, force=True)[0] == 200
    assert server.resource_version == rv
    missing = copy.deepcopy(status_doc) | {"metadata": {"name": "nope"}}
    assert api.apply(f"{GLANCES}/nope/status", missing)[0] == 404


def test_the_operators_manifests_apply_and_a_second_pass_is_a_noop(api, server):
    """What the roles render is accepted as a cluster accepts it, defaults and all."""
    body = glance()
    assert api.post(GLANCES, body)[0] == 201
    objects = [
        o
        for o in desired_manifests(
            body | {"metadata": {"name": "glance", "namespace": NS}}, [BACKEND]
        ).values()
        if o
    ]
    assert {o["kind"] for o in objects} >= {"ConfigMap", "Secret", "Deployment", "Service", "Job"}

    def path(obj: dict) -> str:
        version = obj["apiVersion"]
        base = "/api/v1" if version == "v1" else f"/apis/{version}"
        plural = server.resource_for(version, obj["kind"]).plural
        return f"{base}/namespaces/{NS}/{plural}/{obj['metadata']['name']}"

    for obj in objects:
        status, out = api.apply(path(obj), obj, manager=apply_plan.FIELD_MANAGER, force=True)
        assert status == 201, out
    rv = server.resource_version
    for obj in objects:
        assert api.apply(path(obj), obj, manager=apply_plan.FIELD_MANAGER, force=True)[0] == 200
        live = server.store.get(obj["apiVersion"], obj["kind"], NS, obj["metadata"]["name"])
        assert apply_plan.is_noop(live, obj), obj["kind"]
    assert server.resource_version == rv
