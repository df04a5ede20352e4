"""The informer: list, watch from the list's version, restart where a watch stopped, relist
on 410 Gone (reporting the differences as events), retry failures. With a scripted client
(every path, deterministically) and on the API test double (the wire format)."""

from __future__ import annotations

import base64
import copy
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from integration.kube_harness import started_apiserver
from support.fake_apiserver import FakeAPIServer
from test_runner_support import wait_until

from ansible_collections.c5c3.glance.plugins.module_utils.kube.kube_client import (
    ApiError,
    KubeClient,
)
from runner.kube.informer import ADDED, DELETED, MODIFIED, Informer


def cm(name: str, rv: str, value: str = "") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv},
        "data": {"v": value},
    }


def listed(rv: str, *items: dict) -> dict[str, Any]:
    return {"metadata": {"resourceVersion": rv}, "items": [copy.deepcopy(i) for i in items]}


def event(kind: str, obj: dict) -> dict[str, Any]:
    return {"type": kind, "object": copy.deepcopy(obj)}


GONE = {
    "type": "ERROR",
    "object": {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"},
}


class ScriptedClient:
    """``list_object`` answers the next list; ``watch`` plays the next script (events, or
    exceptions to raise), then ends; once the scripts run out it blocks until released."""

    def __init__(self, lists: list[Any], watches: list[list[Any]]) -> None:
        self.lists = list(lists)
        self.watches = list(watches)
        self.watch_versions: list[str | None] = []
        self.list_calls = 0
        self.release = threading.Event()

    def list_object(self, api_version, kind, namespace=None, label_selector=None):
        self.list_calls += 1
        answer = self.lists.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return copy.deepcopy(answer)

    def watch(
        self,
        api_version,
        kind,
        namespace=None,
        resource_version=None,
        label_selector=None,
        timeout_seconds=300,
    ) -> Iterator[dict]:
        self.watch_versions.append(resource_version)
        if not self.watches:
            self.release.wait(30)
            return
        for item in self.watches.pop(0):
            if isinstance(item, Exception):
                raise item
            yield copy.deepcopy(item)


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str | None, str | None]] = []
        self.lock = threading.Lock()

    def __call__(self, kind: str, new: dict | None, old: dict | None) -> None:
        name = (new or old)["metadata"]["name"]
        with self.lock:
            self.events.append(
                (
                    kind,
                    name,
                    None if new is None else new["metadata"]["resourceVersion"],
                    None if old is None else old["metadata"]["resourceVersion"],
                )
            )


@pytest.fixture
def informers():
    started: list[tuple[Informer, ScriptedClient | None]] = []

    def start(client, handler, **options) -> Informer:
        informer = Informer(
            client, "v1", "ConfigMap", "ns", handler, backoff=(0.01, 0.05), **options
        ).start()
        started.append((informer, client if isinstance(client, ScriptedClient) else None))
        return informer

    yield start
    for informer, client in started:
        informer.stop()
        if client is not None:
            client.release.set()
        informer.stop(timeout=10)


def test_it_lists_then_watches_and_restarts_where_the_watch_stopped(informers):
    a1, a2 = cm("a", "5"), cm("a", "7", "x")
    client = ScriptedClient(
        [listed("5", a1)],
        [
            [event(MODIFIED, a2)],  # the stream ends: watch again from 7
            [{"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "9"}}}],
            [event(ADDED, cm("b", "10")), event(DELETED, cm("a", "11", "x"))],
        ],
    )
    seen = Recorder()
    informer = informers(client, seen)
    wait_until(lambda: len(client.watch_versions) == 4, what="four watches")
    assert informer.synced.is_set()
    assert client.list_calls == 1  # never listed again
    assert client.watch_versions == ["5", "7", "9", "11"]
    assert seen.events == [
        (ADDED, "a", "5", None),
        (MODIFIED, "a", "7", "5"),
        (ADDED, "b", "10", None),
        (DELETED, "a", None, "7"),
    ]
    assert [o["metadata"]["name"] for o in informer.items()] == ["b"]


def test_410_gone_relists_and_reports_the_differences(informers):
    client = ScriptedClient(
        [
            listed("5", cm("a", "1"), cm("b", "2"), cm("d", "3")),
            listed("20", cm("a", "15", "x"), cm("c", "16"), cm("d", "3")),
        ],
        [[GONE]],
    )
    seen = Recorder()
    informers(client, seen)
    wait_until(lambda: len(client.watch_versions) == 2, what="the watch after the relist")
    assert client.list_calls == 2
    assert client.watch_versions == ["5", "20"]
    assert seen.events[3:] == [
        (MODIFIED, "a", "15", "1"),
        (ADDED, "c", "16", None),
        (DELETED, "b", None, "2"),
    ]  # d did not change: no event


def test_a_410_answer_to_the_watch_request_relists_too(informers):
    client = ScriptedClient(
        [listed("5"), listed("30", cm("a", "29"))],
        [[ApiError(410, {"reason": "Expired", "message": "too old"}, "GET", "/api/v1/configmaps")]],
    )
    seen = Recorder()
    informers(client, seen)
    wait_until(lambda: len(client.watch_versions) == 2)
    assert client.watch_versions == ["5", "30"] and seen.events == [(ADDED, "a", "29", None)]


def test_failures_are_retried_and_sync_waits_for_the_first_good_list(informers):
    client = ScriptedClient(
        [
            ApiError(503, {"message": "etcd is away"}, "GET", "/x"),
            ConnectionRefusedError(),
            listed("5", cm("a", "5")),
        ],
        [[RuntimeError("stream broke")]],
    )
    seen = Recorder()
    informer = informers(client, seen)
    wait_until(informer.synced.is_set, what="the first good list")
    wait_until(lambda: len(client.watch_versions) == 2)
    assert client.list_calls == 3
    assert client.watch_versions == ["5", "5"]  # a broken watch starts again from where it was


def test_the_transform_shapes_what_is_kept_and_handed_out(informers):
    client = ScriptedClient([listed("5", cm("a", "5", "secret"))], [])
    kept = []
    informer = informers(
        client,
        lambda kind, new, old: kept.append(new),
        transform=lambda o: {"metadata": o["metadata"]},
    )
    wait_until(informer.synced.is_set)
    assert kept == [{"metadata": {"name": "a", "namespace": "ns", "resourceVersion": "5"}}]
    assert informer.get("ns", "a") == kept[0]


def test_a_failing_handler_does_not_stop_the_informer(informers):
    client = ScriptedClient([listed("5", cm("a", "5"))], [[event(ADDED, cm("b", "6"))]])
    calls = []

    def handler(kind, new, old):
        calls.append(new["metadata"]["name"])
        raise ValueError("bug")

    informers(client, handler)
    wait_until(lambda: calls == ["a", "b"])


def test_on_the_double_watches_restart_from_the_last_version_without_relisting(informers, tmp_path):
    with FakeAPIServer(bookmark_interval=0.2) as double:
        double.write_kubeconfig(tmp_path / "kubeconfig")
        client = KubeClient.from_environment(str(tmp_path / "kubeconfig"))
        for name in ("a", "b"):
            client.create(
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": name, "namespace": "ns"},
                }
            )
        seen = Recorder()
        informer = informers(client, seen, watch_timeout=(1, 1))
        wait_until(informer.synced.is_set)
        watches = lambda: [r for r in double.requests if r.query.get("watch") == "true"]  # noqa: E731
        wait_until(lambda: len(watches()) >= 2, what="a watch restart")
        client.patch("v1", "ConfigMap", "a", "ns", {"data": {"v": "1"}})
        client.delete("v1", "ConfigMap", "b", "ns")
        client.create(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"}}
        )
        wait_until(lambda: len(seen.events) == 5, what="the changes")
        kinds = [(kind, name) for kind, name, _, _ in seen.events]
        assert kinds == [(ADDED, "a"), (ADDED, "b"), (MODIFIED, "a"), (DELETED, "b"), (ADDED, "c")]
        lists = [
            r
            for r in double.requests
            if r.method == "GET"
            and r.query.get("watch") != "true"
            and r.path.endswith("/configmaps")
        ]
        assert len(lists) == 1
        assert all(r.query.get("resourceVersion") not in (None, "", "0") for r in watches())
        assert sorted(o["metadata"]["name"] for o in informer.items()) == ["a", "c"]


def test_on_a_real_apiserver_restarted_over_a_compacted_etcd_it_relists(informers, caplog):
    """The kube-apiserver stopped, etcd written around it and compacted, the apiserver
    started again: the informer's next watch asks for a version etcd no longer keeps, gets
    410 Gone and lists again; the changes made before it watched again (one object changed,
    one deleted, one made) reach the handler through that list, each once."""
    caplog.set_level("INFO", logger="runner")
    with started_apiserver() as server:
        server.client.create("/api/v1/namespaces", {"metadata": {"name": "ns"}})
        for name in ("a", "b"):
            server.client.create(
                "/api/v1/namespaces/ns/configmaps", {"metadata": {"name": name}, "data": {}}
            )
        kubeconfig = server.write_kubeconfig(Path(server.workdir) / "kubeconfig")
        client = KubeClient.from_environment(str(kubeconfig))
        seen = Recorder()
        # A backoff long enough that the changes below are made before the informer tries
        # the API server again (it retries from its last version, not with a list).
        informer = Informer(client, "v1", "ConfigMap", "ns", seen, backoff=(8.0, 8.0)).start()
        try:
            wait_until(informer.synced.is_set, what="the first list")
            before = informer._resource_version

            server.stop_apiserver()
            key = base64.b64encode(b"/c5c3-informer-test").decode()
            for value in (b"1", b"2", b"3"):  # the revision moves on past the informer's
                server.etcd("/v3/kv/put", {"key": key, "value": base64.b64encode(value).decode()})
            head = server.etcd("/v3/kv/range", {"key": key})["header"]["revision"]
            server.etcd("/v3/kv/compaction", {"revision": head, "physical": True})
            server.start_apiserver()

            server.client.request(
                "PATCH",
                "/api/v1/namespaces/ns/configmaps/a",
                {"data": {"v": "changed"}},
                content_type="application/merge-patch+json",
            )
            server.client.delete("/api/v1/namespaces/ns/configmaps/b")
            server.client.create(
                "/api/v1/namespaces/ns/configmaps", {"metadata": {"name": "c"}, "data": {}}
            )
            wait_until(lambda: len(seen.events) == 5, timeout=60, what="the changes")
        finally:
            informer.stop(timeout=10)

    assert int(before) < int(head), (before, head)
    assert informer.lists == 2, "the 410 should have led to exactly one new list"
    assert "watch expired, listing again" in caplog.text
    kinds = sorted((kind, name) for kind, name, _, _ in seen.events)
    assert kinds == [(ADDED, "a"), (ADDED, "b"), (ADDED, "c"), (DELETED, "b"), (MODIFIED, "a")]
    assert sorted(o["metadata"]["name"] for o in informer.items()) == ["a", "c"]


@pytest.mark.integration
def test_a_metadata_informer_never_receives_a_secrets_data(real_apiserver, tmp_path):
    """``metadata_only`` on a real kube-apiserver: the list and the watch events carry the
    Secrets' metadata (``PartialObjectMetadata``, labelled back as ``v1`` ``Secret``), never
    their data, and the events are the usual ones."""
    server = real_apiserver
    namespace = f"metadata-{tmp_path.name[-20:].lower().strip('-_')}".replace("_", "-")
    server.client.create("/api/v1/namespaces", {"metadata": {"name": namespace}})
    secrets = f"/api/v1/namespaces/{namespace}/secrets"
    server.client.create(secrets, {"metadata": {"name": "a"}, "stringData": {"pw": "first-pw"}})
    client = KubeClient.from_environment(str(server.write_kubeconfig(tmp_path / "kubeconfig")))
    handed: list[dict] = []
    seen = Recorder()

    def handler(kind: str, new: dict | None, old: dict | None) -> None:
        handed.extend(o for o in (new, old) if o is not None)
        seen(kind, new, old)

    informer = Informer(client, "v1", "Secret", namespace, handler, metadata_only=True).start()
    try:
        wait_until(informer.synced.is_set, what="the first list")
        server.client.request(
            "PATCH",
            f"{secrets}/a",
            {"stringData": {"pw": "second-pw"}},
            content_type="application/merge-patch+json",
        )
        server.client.create(secrets, {"metadata": {"name": "b"}, "stringData": {"pw": "b-pw"}})
        server.client.delete(f"{secrets}/a")
        wait_until(lambda: len(seen.events) == 4, timeout=60, what="the changes")
    finally:
        informer.stop(timeout=10)
        server.client.delete(f"/api/v1/namespaces/{namespace}")
    assert [(kind, name) for kind, name, _, _ in seen.events] == [
        (ADDED, "a"),
        (MODIFIED, "a"),
        (ADDED, "b"),
        (DELETED, "a"),
    ]
    for obj in handed:
        assert (obj["apiVersion"], obj["kind"]) == ("v1", "Secret"), obj
        assert set(obj) == {"apiVersion", "kind", "metadata"}, obj
    text = repr(handed)
    for value in (b"first-pw", b"second-pw", b"b-pw"):
        assert value.decode() not in text and base64.b64encode(value).decode() not in text
    assert informer.name == f"Secret.v1/metadata@{namespace}"
