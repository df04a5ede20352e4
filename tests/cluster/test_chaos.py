"""Day two on real pods: faults under a client load, and nothing lost (``make chaos``).

A Glance of two replicas and two stores on the one-node cluster, the operator installed in
the cluster. For each fault a client load runs through the Glance's Service (uploads of 16
to 64 MiB, downloads compared by SHA-256, image lists; ``load.py``), every request
recorded, and one row is printed: the fault, the requests, the failed ones and why, the
images lost or corrupted, how long after the fault's end the API failed last, the API pods
restarted (container restarts and pods replaced) and the rollouts (the Deployment's
generation). Asserted per fault: no image lost or corrupted, no image ``active`` without
its data, and only the failures the fault explains:

1. the operator's leader force-deleted in the middle of a pass: the other replica leads,
   the pass is done again (the object it was restoring is back), no API pod restarts, no
   rollout, no request fails;
2. an API pod deleted gracefully: preStop and the grace period let its requests finish and
   the Service stop sending it new ones: no request fails; force-deleted: a download read
   slowly from that pod fails, and only requests begun before the Service forgot it may
   fail; the Deployment replaces it both times;
3. the S3 server unreachable for 60 s (its port refused on the node, as a stopped server's
   is; moto keeps its objects in memory, so it is not killed): ``/healthcheck`` answers 200
   on every pod throughout, no pod restarts, transfers fail while it is away and work again
   after, no image is ``active`` without its data;
4. MariaDB restarted (down 10 s): requests fail while it is down, the API recovers with no
   restart;
5. the kube-apiserver stopped, etcd compacted meanwhile, the apiserver started again: the
   operator lists anew (a watch told 410 Gone relists; a leader that lost its Lease
   restarts and lists), a spec change made once the webhook answers is reconciled, no API
   pod rolls, no request fails;
6. a release upgrade 2026.1 -> 2026.2 of a Glance holding data (its own namespace): the
   phases in order, their Jobs on the new image, no request fails, every image reads back
   and its API document, members, database rows and S3 objects are unchanged, the pods end
   on the new image;
7. the staging and image-cache bounds (its own Glance, both at 32Mi): a staged upload and
   then a cached download past the bound get their pod evicted by the kubelet, the
   Deployment replaces it, the staged image stays non-active and can be deleted, the load
   on the other pod never fails; ``make diagnose`` names the bound first, with its rule;
8. a drain through the eviction API: the node cordoned, the first API pod evicted, the
   second refused by the PodDisruptionBudget while it is the last one, evicted once the
   first's replacement runs; no request fails.

docs/operations.md keeps the measured table and what each fault means for users.
"""

from __future__ import annotations

import base64
import collections
import json
import os
import subprocess
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from http import client as httpclient
from typing import Any

import pytest
from e2e.stack import DEMO_PASSWORD, http
from e2e.upgrade import DataSet, Step, Upgrade, same

from cluster.conftest import OPERATOR_NAMESPACE, ROOT, wait_until
from cluster.diagnosis import named_first
from cluster.load import (
    Load,
    ReadBack,
    active_without_data,
    download,
    lost_or_corrupted,
    make_sources,
    upload,
)
from cluster.objects import (
    apply,
    conditions,
    get,
    glance_pods,
    json_lines,
    pod_ready,
    sample_documents,
)
from cluster.timeline import Timeline

pytestmark = [pytest.mark.cluster, pytest.mark.chaos]

NAMESPACE = "chaos"
GLANCE = "glance"
LEASE = "c5c3-glance-operator"
BEFORE, AFTER = 8.0, 12.0
S3_AWAY = 60.0
DB_DOWN = 10.0
SETTLE = 30.0
"""After a fault's end, the seconds in which a failure still counts as the fault's."""


@dataclass
class Row:
    fault: str
    requests: int = 0
    failed: dict[str, int] = field(default_factory=dict)
    lost: list[str] = field(default_factory=list)
    recovery: float = 0.0
    restarted: int = 0
    rollouts: int = 0
    note: str = ""
    health: list[str] = field(default_factory=list)
    checked_again: int = 0
    """Reads of the final check that met a transport error and were read whole later."""
    evicted_in_check: int = 0
    """Pods evicted while the final check read the images back."""

    def line(self) -> str:
        failed = sum(self.failed.values())
        why = ", ".join(f"{n} {what}" for what, n in sorted(self.failed.items()))
        check = [f"check: {self.checked_again} reads tried again"] if self.checked_again else []
        if self.evicted_in_check:
            check.append(f"{self.evicted_in_check} pods evicted during the check")
        return (
            f"{self.fault:<34} {self.requests:>8} {failed:>6}  {len(self.lost):>4}  "
            f"{self.recovery:>8.1f}  {self.restarted:>9}  {self.rollouts:>8}  {why or '-'}"
            + "".join(f"; {part}" for part in [self.note, *check] if part)
        )


HEADER = (
    f"{'fault':<34} {'requests':>8} {'failed':>6}  {'lost':>4}  {'recovery':>8}  "
    f"{'restarted':>9}  {'rollouts':>8}  why"
)


# --- the Glance and what is read around each fault ------------------------------------------


def api_pods(node, ns: str = NAMESPACE) -> list[dict[str, Any]]:
    return glance_pods(node, ns, GLANCE)


def pod_url(pod: dict[str, Any]) -> str:
    return f"http://{pod['status']['podIP']}:9292"


def evicted(node, ns: str, pod: str) -> str:
    """The message of the kubelet's ``Evicted`` event on ``pod``, or ''."""
    events = get(node, "events", "-n", ns, "--field-selector",
                 f"involvedObject.name={pod},reason=Evicted")  # fmt: skip
    return next((e.get("message", "") for e in events["items"]), "")


def new_image(url: str, token: str, name: str) -> str:
    body = {"name": name, "disk_format": "raw", "container_format": "bare"}
    resp = http("POST", f"{url}/v2/images", body, {"X-Auth-Token": token})
    assert resp.status == 201, (resp.status, resp.body[:300])
    return resp.json()["id"]


def live(pod: dict[str, Any]) -> bool:
    """Neither being deleted nor ended (a pod the kubelet evicted stays, Failed)."""
    return not pod["metadata"].get("deletionTimestamp") and pod.get("status", {}).get(
        "phase"
    ) not in ("Failed", "Succeeded")


def deployment(node, ns: str = NAMESPACE) -> dict[str, Any]:
    return get(node, "deployment", GLANCE, "-n", ns)


def snapshot(node, ns: str = NAMESPACE) -> dict[str, Any]:
    """The API pods (uid: container restarts) and the Deployment's generation."""
    pods = {
        p["metadata"]["uid"]: sum(
            c.get("restartCount", 0) for c in p.get("status", {}).get("containerStatuses") or []
        )
        for p in api_pods(node, ns)
        if live(p)
    }
    return {"pods": pods, "generation": deployment(node, ns)["metadata"]["generation"]}


def changes(before: dict[str, Any], after: dict[str, Any]) -> tuple[int, int]:
    """Restarted (containers restarted in pods that stayed, plus pods replaced) and
    rollouts (generations the Deployment moved)."""
    kept = before["pods"].keys() & after["pods"].keys()
    restarts = sum(after["pods"][uid] - before["pods"][uid] for uid in kept)
    replaced = len(before["pods"].keys() - after["pods"].keys())
    return restarts + replaced, after["generation"] - before["generation"]


def two_ready(node, ns: str = NAMESPACE) -> bool:
    pods = [p for p in api_pods(node, ns) if live(p)]
    return len(pods) == 2 and all(pod_ready(p) for p in pods)


def wait_glance_ready(node, ns: str, what: str, say) -> None:
    """Wait (10 min at most) for the Glance of ``ns`` to be Ready with two API pods Ready;
    say how long it took, as ``[chaos] <what> Ready: <seconds>s``."""
    started = time.monotonic()
    wait_until(
        f"{what} Ready",
        lambda: (
            conditions(get(node, "glance", GLANCE, "-n", ns)).get("Ready", {}).get("status")
            == "True"
            and two_ready(node, ns)
        ),
        600,
        interval=2,
    )
    say(f"[chaos] {what} Ready: {time.monotonic() - started:.1f}s")


def leader_pod(node) -> str:
    holder = get(node, "lease", LEASE, "-n", OPERATOR_NAMESPACE)["spec"].get("holderIdentity")
    pods = get(node, "pods", "-n", OPERATOR_NAMESPACE, "-l", "control-plane=controller-manager")
    for pod in pods["items"]:
        if holder and holder.startswith(pod["metadata"]["name"]):
            return pod["metadata"]["name"]
    raise AssertionError(f"no manager pod holds the Lease ({holder!r})")


class Health:
    """``/healthcheck`` of every API pod, asked each second in a thread, with the timeout of
    the pods' own readiness probe (what the kubelet would count as a failure): the answers
    that were not 200 within it, and the slowest answer."""

    def __init__(self, node, ns: str = NAMESPACE):
        self.node = node
        self.ns = ns
        container = deployment(node, ns)["spec"]["template"]["spec"]["containers"][0]
        self.timeout = float(container["readinessProbe"]["timeoutSeconds"])
        self.bad: list[str] = []
        self.asked = 0
        self.slowest = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        ips = [p["status"]["podIP"] for p in api_pods(self.node, self.ns)]
        while not self._stop.wait(1.0):
            for ip in ips:
                self.asked += 1
                started = time.monotonic()
                try:
                    status = http("GET", f"http://{ip}:9292/healthcheck", timeout=self.timeout)
                    status = status.status
                except Exception as exc:
                    self.bad.append(f"{ip}: {exc}")
                    continue
                finally:
                    self.slowest = max(self.slowest, time.monotonic() - started)
                if status != 200:
                    self.bad.append(f"{ip}: {status}")

    def note(self) -> str:
        return (
            f"/healthcheck {self.asked - len(self.bad)}/{self.asked} answered 200 within the "
            f"probe's {self.timeout:.0f} s, slowest {self.slowest:.1f} s"
        )

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(30)


# --- the fixtures ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def chaos_glance(node, operator, services, say):
    services.create_database("glance_chaos")
    node.kubectl("create", "namespace", NAMESPACE, check=False)
    apply(node, sample_documents(services, NAMESPACE, database="glance_chaos"))
    wait_glance_ready(node, NAMESPACE, "Glance (2 replicas, 2 stores)", say)
    service = get(node, "service", GLANCE, "-n", NAMESPACE)["spec"]["clusterIP"]
    yield f"http://{service}:9292"
    node.kubectl("delete", "namespace", NAMESPACE, "--timeout=300s", check=False)


@pytest.fixture(scope="module")
def table(say):
    rows: list[Row] = []
    yield rows
    if rows:
        say(
            "[chaos] one row per fault (recovery: seconds from the fault's end to the last "
            "failure; restarted: containers restarted + pods replaced):\n  "
            + "\n  ".join([HEADER, *(row.line() for row in rows)])
        )


@pytest.fixture(scope="module")
def client(chaos_glance, services, tmp_path_factory):
    token = services.keystone_token("demo", DEMO_PASSWORD, "demo")
    sources = make_sources(tmp_path_factory.mktemp("load"))
    return {"url": chaos_glance, "token": token, "sources": sources}


def under_load(
    node,
    client,
    fault: str,
    act: Callable[[], float],
    table: list[Row],
    remedy: Callable[[], None] | None = None,
):
    """Run ``act`` (which makes the fault, ends it and returns the monotonic time it ended)
    under the load; the row, the load and the fault's end. Asserts nothing was lost.

    ``client`` may name the Glance's ``namespace`` (else the chaos Glance's), turn the
    load's ``downloads`` off, and give the ``check_url`` the images are checked through
    (else the load's ``url``); ``remedy`` (what the cloud's operator does after the fault)
    runs once the load has stopped, before the images are checked."""
    ns = client.get("namespace", NAMESPACE)
    before = snapshot(node, ns)
    load = Load(
        client["url"],
        client["token"],
        client["sources"],
        prefix=fault.split()[0],
        downloads=client.get("downloads", True),
    )
    load.start()
    try:
        with Health(node, ns) as health:
            time.sleep(BEFORE)
            ended = act()
            wait_until("two API pods Ready again", lambda: two_ready(node, ns), 300, interval=2)
            time.sleep(AFTER)
    finally:
        load.stop()
    after = snapshot(node, ns)
    restarted, rollouts = changes(before, after)
    failures = load.failed()
    why = collections.Counter(f"{r.op}: {r.detail.split(':')[0]}" for r in failures)
    last = max((r.ended for r in failures), default=ended)
    row = Row(
        fault,
        requests=len(load.requests),
        failed=dict(why),
        recovery=max(0.0, last - ended) if failures else 0.0,
        restarted=restarted,
        rollouts=rollouts,
        note=health.note(),
    )
    row.health = health.bad
    check = client.get("check_url", client["url"])
    retried: list[ReadBack] = []
    with Timeline(node, ns, API_SELECTOR, GLANCE, volumes=VOLUMES) as timeline:
        if remedy is not None:
            timeline.mark("remedy begins")
            remedy()
            timeline.mark("remedy done")
        timeline.mark(f"check: {len(load.uploaded)} uploaded images read back")
        row.lost = lost_or_corrupted(check, client["token"], load.uploaded, retried)
        timeline.mark(f"check: {len(load.attempted)} attempted images read back")
        empty = active_without_data(check, client["token"], load.attempted, retried)
        timeline.mark("check done")
        for read in retried:
            timeline.mark(f"check: read again: {read.image_id}: {'; '.join(read.transport)}")
    row.checked_again = len(retried)
    row.evicted_in_check = len(timeline.evictions)
    write_timeline(fault, timeline, say=bool(retried or timeline.evictions or row.lost or empty))
    table.append(row)
    assert not row.lost, f"{fault}: images lost or corrupted: {row.lost}\n{timeline.text()}"
    assert not empty, f"{fault}: images active without their data: {empty}\n{timeline.text()}"
    assert load.uploaded, f"{fault}: no upload succeeded under the load"
    return row, load, ended


TIMELINES = ROOT / "out" / "chaos"
"""Where each row's check writes its timeline; the run prints it too when a read was tried
again, a pod evicted or an image found wanting."""
VOLUMES = ("image-cache", "staging")
"""The bounded volumes whose use the check's timeline follows."""
API_SELECTOR = f"app.kubernetes.io/name=glance,app.kubernetes.io/instance={GLANCE}"


def write_timeline(fault: str, timeline: Timeline, say: bool) -> None:
    """The check's timeline into a file under ``TIMELINES``; with ``say``, into the run's
    output too."""
    text = timeline.text()
    if say:
        print(f"\n[chaos] {fault}: the check's timeline\n{text}", flush=True)
    TIMELINES.mkdir(parents=True, exist_ok=True)
    name = "".join(c if c.isalnum() else "-" for c in fault)[:60]
    (TIMELINES / f"{name}.txt").write_text(text + "\n")


def late_failures(load: Load, ended: float) -> list[str]:
    return [f"{r.op}: {r.detail}" for r in load.failed() if r.started > ended + SETTLE]


# --- 1. the operator ------------------------------------------------------------------------


def test_the_operators_leader_force_deleted_mid_pass(node, client, table):
    def act() -> float:
        leader = leader_pod(node)
        follow = subprocess.Popen(
            [node._bin("kubectl"), "-n", OPERATOR_NAMESPACE, "logs", "-f", leader, "--since=1s"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=dict(os.environ, KUBECONFIG=str(node.kubeconfig)),
        )
        try:
            # A pass that changes nothing the pods see: the PDB is deleted, the pass makes it.
            node.kubectl("-n", NAMESPACE, "delete", "pdb", GLANCE)
            deadline = time.monotonic() + 120
            for line in follow.stdout:
                if time.monotonic() > deadline:
                    raise AssertionError("the leader started no pass of the chaos Glance")
                started = json_lines(line)
                if (
                    started
                    and started[0].get("msg") == "pass started"
                    and started[0].get("key") == f"{NAMESPACE}/{GLANCE}"
                ):
                    break
            node.kubectl(
                "-n", OPERATOR_NAMESPACE, "delete", "pod", leader, "--grace-period=0", "--force"
            )
            ended = time.monotonic()
        finally:
            follow.kill()
            follow.wait()
        new = wait_until(
            "another manager pod leads",
            lambda: (name := leader_pod(node)) != leader and name,
            120,
            interval=1,
        )
        wait_until(
            "the new leader made the PDB again",
            lambda: (
                node.kubectl("-n", NAMESPACE, "get", "pdb", GLANCE, check=False).returncode == 0
            ),
            180,
        )
        wait_until(
            "the new leader finished a pass of the chaos Glance",
            lambda: any(
                entry.get("msg") == "pass finished" and entry.get("key") == f"{NAMESPACE}/{GLANCE}"
                for entry in json_lines(node.kubectl("-n", OPERATOR_NAMESPACE, "logs", new).stdout)
            ),
            180,
            interval=2,
        )
        return ended

    row, load, _ = under_load(node, client, "operator leader force-deleted", act, table)
    assert row.restarted == 0 and row.rollouts == 0, row
    assert not row.health, row.health[:10]
    assert not load.failed(), [f"{r.op}: {r.detail}" for r in load.failed()]


# --- 2. an API pod --------------------------------------------------------------------------


def test_an_api_pod_deleted_gracefully_fails_no_request(node, client, table):
    def act() -> float:
        victim = api_pods(node)[0]["metadata"]["name"]
        node.kubectl("-n", NAMESPACE, "delete", "pod", victim, "--timeout=300s")
        return time.monotonic()

    row, load, _ = under_load(node, client, "API pod deleted (graceful)", act, table)
    assert row.rollouts == 0, row
    assert not load.failed(), [f"{r.op}: {r.detail}" for r in load.failed()]


class SlowRead(threading.Thread):
    """A download read slowly (one chunk every ``pause`` seconds) straight from one pod: a
    request surely in flight on it. ``got`` bytes so far; ``error`` how it ended, if badly."""

    def __init__(self, url: str, token: str, image_id: str, pause: float = 0.5):
        super().__init__(daemon=True)
        self.url, self.token, self.image_id, self.pause = url, token, image_id, pause
        self.got = 0
        self.error = ""
        self.started_reading = threading.Event()

    def run(self) -> None:
        parts = urllib.parse.urlsplit(self.url)
        conn = httpclient.HTTPConnection(parts.hostname, parts.port, timeout=60)
        try:
            conn.request("GET", f"/v2/images/{self.image_id}/file",
                         headers={"X-Auth-Token": self.token})  # fmt: skip
            resp = conn.getresponse()
            assert resp.status == 200, resp.status
            length = int(resp.headers["Content-Length"])
            while chunk := resp.read(2**16):
                self.got += len(chunk)
                self.started_reading.set()
                time.sleep(self.pause)
            if self.got < length:
                self.error = f"ended after {self.got} of {length} bytes"
        except Exception as exc:
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self.started_reading.set()
            conn.close()


def test_an_api_pod_force_deleted_fails_only_what_was_on_it(node, client, table):
    """A download read slowly from one pod is in flight when that pod is force-deleted: it
    fails; the load through the Service sees no failure once the Service has forgotten the
    pod (SETTLE), and the other replica serves throughout."""
    source = max(client["sources"], key=lambda s: s.path.stat().st_size)
    image = new_image(client["url"], client["token"], "force-in-flight")
    upload(client["url"], client["token"], image, source.path)
    seen: dict[str, Any] = {}

    def act() -> float:
        victim = api_pods(node)[0]
        reader = SlowRead(pod_url(victim), client["token"], image)
        reader.start()
        assert reader.started_reading.wait(60) and not reader.error, reader.error
        name = victim["metadata"]["name"]
        node.kubectl("-n", NAMESPACE, "delete", "pod", name, "--grace-period=0", "--force")
        ended = time.monotonic()
        reader.join(120)
        seen["in flight"] = reader.error or f"completed ({reader.got} bytes)"
        return ended

    row, load, ended = under_load(node, client, "API pod force-deleted", act, table)
    row.note += f"; the download in flight on the deleted pod: {seen.get('in flight')}"
    assert row.rollouts == 0, row
    assert not late_failures(load, ended), late_failures(load, ended)
    assert not seen["in flight"].startswith("completed"), seen


# --- 3. the S3 server -----------------------------------------------------------------------


def refuse(address: str, port: int, on: bool) -> None:
    """Refuse TCP to ``address:port`` on the node (a reset, as a stopped server's port)."""
    rule = ["INPUT", "-p", "tcp", "-d", address, "--dport", str(port), "-j", "REJECT",
            "--reject-with", "tcp-reset"]  # fmt: skip
    subprocess.run(["iptables", "-I" if on else "-D", *rule], check=True)


def test_the_s3_server_away_for_a_minute(node, client, services, table):
    host, port = services.host, services.moto_port

    def act() -> float:
        refuse(host, port, True)
        try:
            time.sleep(S3_AWAY)
        finally:
            refuse(host, port, False)
        return time.monotonic()

    row, load, ended = under_load(node, client, f"S3 away {S3_AWAY:.0f} s", act, table)
    assert not row.health, row.health[:10]
    assert row.restarted == 0 and row.rollouts == 0, row
    assert not late_failures(load, ended), late_failures(load, ended)
    failed_ops = {r.op for r in load.failed()}
    assert failed_ops <= {"upload", "download"}, failed_ops


# --- 4. the database ------------------------------------------------------------------------


def test_mariadb_restarted(node, client, services, table):
    def act() -> float:
        services.restart_mariadb(DB_DOWN)
        return time.monotonic()

    fault = f"MariaDB restarted (down {DB_DOWN:.0f} s)"
    row, load, ended = under_load(node, client, fault, act, table)
    assert row.restarted == 0 and row.rollouts == 0, row
    assert not row.health, row.health[:10]
    assert not late_failures(load, ended), late_failures(load, ended)


# --- 8. a drain -----------------------------------------------------------------------------


def evict(node, pod: str) -> subprocess.CompletedProcess:
    """The eviction API, as ``kubectl drain`` calls it, for one pod of the chaos namespace."""
    body = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": pod, "namespace": NAMESPACE},
    }
    path = f"/api/v1/namespaces/{NAMESPACE}/pods/{pod}/eviction"
    return node.kubectl("create", "--raw", path, "-f", "-", input=json.dumps(body), check=False)


def test_a_drain_keeps_the_floor_the_pdb_promises(node, client, table):
    """The node cordoned, both API pods evicted in turn, as ``kubectl drain`` does: the first
    goes; its replacement cannot be scheduled, so the PDB (``minAvailable: 1``) refuses the
    second; uncordoned, the replacement runs, and then the second may go too."""
    name = get(node, "nodes")["items"][0]["metadata"]["name"]
    seen: dict[str, str] = {}

    def act() -> float:
        first, second = sorted(p["metadata"]["name"] for p in api_pods(node))
        node.kubectl("cordon", name)
        try:
            evicted = evict(node, first)
            assert evicted.returncode == 0, evicted.stderr
            wait_until(
                "the evicted pod gone",
                lambda: first not in {p["metadata"]["name"] for p in api_pods(node)},
                180,
            )
            refused = evict(node, second)
            seen["refused"] = refused.stderr.strip().splitlines()[-1] if refused.stderr else ""
            assert refused.returncode != 0, "the PDB let the last API pod be evicted"
            assert "disruption budget" in refused.stderr, refused.stderr
        finally:
            node.kubectl("uncordon", name)
        wait_until("two API pods Ready again", lambda: two_ready(node), 300, interval=2)
        evicted = evict(node, second)
        assert evicted.returncode == 0, evicted.stderr
        return time.monotonic()

    row, load, _ = under_load(node, client, "drain: both pods evicted", act, table)
    row.note += f"; the second eviction while one pod was left: {seen.get('refused', '')[:120]}"
    assert row.rollouts == 0, row
    assert not load.failed(), [f"{r.op}: {r.detail}" for r in load.failed()]


# --- 5. the API server ----------------------------------------------------------------------

API_DOWN = 8.0
SCHEDULE = "7 3 * * *"


def manager_restarts(node) -> int:
    pods = get(node, "pods", "-n", OPERATOR_NAMESPACE, "-l", "control-plane=controller-manager")
    return sum(
        c.get("restartCount", 0)
        for p in pods["items"]
        for c in p.get("status", {}).get("containerStatuses") or []
    )


def etcd_post(node, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """etcd's v3 JSON gateway on the node's loopback client URL."""
    resp = http("POST", f"{node.etcd_url()}{path}", body, timeout=30)
    assert resp.status == 200, f"{path}: {resp.status} {resp.body[:200]!r}"
    return resp.json()


def compact_etcd(node) -> int:
    """Compact etcd at its current revision, as its periodic compaction does: a watch that
    asks to resume from an older revision gets 410 Gone. The revision."""
    key = base64.b64encode(b"/registry/").decode()
    revision = int(etcd_post(node, "/v3/kv/range", {"key": key, "limit": 1})["header"]["revision"])
    etcd_post(node, "/v3/kv/compaction", {"revision": revision, "physical": True})
    return revision


def test_the_api_server_restarted_with_etcd_compacted(node, client, table):
    """The kube-apiserver stopped, etcd compacted meanwhile, the apiserver started again and
    a spec change (the db-purge schedule, which rolls nothing) made as soon as the admission
    webhook answers: the operator lists again (a watch told 410 Gone relists; a manager that
    lost its Lease restarts and lists), reconciles the change, and rolls no API pod; the
    data path never needed the API server, so no request fails."""
    started = time.time()
    seen: dict[str, Any] = {}
    managers_before = manager_restarts(node)

    def act() -> float:
        node.stop_apiserver()
        try:
            for _ in range(3):  # writes that go around the API server: the revision moves on
                etcd_post(node, "/v3/kv/put", {"key": base64.b64encode(b"/c5c3-chaos").decode(),
                                               "value": base64.b64encode(b"x").decode()})  # fmt: skip
            seen["revision"] = compact_etcd(node)
            time.sleep(API_DOWN)
        finally:
            node.start_apiserver()
        back = time.monotonic()
        patch = json.dumps({"spec": {"dbPurge": {"schedule": SCHEDULE}}})

        # The admission webhook is the operator's: while its pods are not ready again (a
        # manager that lost its Lease restarts) the API server refuses the write; a user
        # tries again, and so does this.
        def admitted() -> bool:
            out = node.kubectl("-n", NAMESPACE, "patch", "glance", GLANCE, "--type=merge",
                               "-p", patch, check=False)  # fmt: skip
            if out.returncode:
                seen.setdefault("refused", out.stderr.strip())
            return out.returncode == 0

        wait_until("the spec change admitted", admitted, 300, interval=2)
        seen["admitted"] = time.monotonic() - back
        wait_until(
            "the operator reconciled the new schedule",
            lambda: (
                get(node, "cronjob", f"{GLANCE}-db-purge", "-n", NAMESPACE)["spec"]["schedule"]
                == SCHEDULE
            ),
            300,
            interval=2,
        )
        return time.monotonic()

    row, load, _ = under_load(node, client, "API server restarted, etcd compacted", act, table)
    since = f"--since-time={time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(started))}"
    entries = []
    pods = get(node, "pods", "-n", OPERATOR_NAMESPACE, "-l", "control-plane=controller-manager")
    for pod in pods["items"]:
        # A manager that lost its Lease while the API server was away exits and restarts:
        # its previous container's log is where it relisted.
        for previous in ([], ["--previous"]):
            out = node.kubectl("-n", OPERATOR_NAMESPACE, "logs", pod["metadata"]["name"], since,
                               *previous, check=False)  # fmt: skip
            entries += json_lines(out.stdout)
    relisted = [
        e
        for e in entries
        if e.get("msg") == "watch expired, listing again"
        or (e.get("msg") == "list or watch failed, retrying" and "410" in str(e.get("error")))
    ]
    lost = [e for e in entries if e.get("msg") == "leader election lost"]
    restarted_managers = manager_restarts(node) - managers_before
    row.note += (
        f"; compacted at revision {seen.get('revision')}; {len(relisted)} watches relisted "
        f"after 410, {restarted_managers} manager restarts (a restart lists anew; "
        f"{len(lost)} said 'leader election lost'); the spec change admitted "
        f"{seen.get('admitted', 0):.1f} s after the API server was back"
        + (f", refused before that: {seen['refused'][:160]}" if "refused" in seen else "")
    )
    # Either way the operator's view starts again from a list: a watch told 410 Gone lists
    # again, and a manager that lost its Lease while the API server was away restarts.
    assert relisted or restarted_managers, "the operator neither relisted nor restarted"
    assert row.restarted == 0 and row.rollouts == 0, row
    assert not load.failed(), [f"{r.op}: {r.detail}" for r in load.failed()]


# --- 6. a release upgrade -------------------------------------------------------------------

UPGRADE_NAMESPACE = "upgrade"
STEP = Step("2026.1", "2026.2")
PHASE_JOBS = {"Expanding": "expand", "Migrating": "migrate", "Contracting": "contract"}
UPGRADE_EVENTS = (
    "UpgradeInitiated",
    "ExpandComplete",
    "MigrateComplete",
    "DeploymentRolloutComplete",
    "UpgradeComplete",
)


@pytest.fixture
def upgrade_glance(node, operator, services, shell, say, tmp_path_factory):
    """A Glance of two replicas and two stores on release 2026.1 (its image built and
    loaded into the node as docs/cluster.md does it for 2026.2), in a namespace, database
    and second bucket of its own; deleted afterwards."""
    started = time.monotonic()
    for target in ("images", "cluster-load-images"):
        done = subprocess.run(
            ["make", target, f"GLANCE_RELEASES={STEP.older}"],
            cwd=ROOT,
            env=shell.env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, f"make {target}:\n{done.stdout[-2000:]}{done.stderr[-3000:]}"
    say(f"[chaos] the {STEP.older} image built and loaded: {time.monotonic() - started:.1f}s")
    upgrade = Upgrade(services, STEP, "cluster", venvs={})
    services.create_database(upgrade.database)
    created = http("PUT", f"{services.s3_url}/{upgrade.bucket}", body=b"")
    assert created.status == 200, (created.status, created.body[:300])
    node.kubectl("create", "namespace", UPGRADE_NAMESPACE, check=False)
    docs = sample_documents(
        services,
        UPGRADE_NAMESPACE,
        database=upgrade.database,
        release=STEP.older,
        second_bucket=upgrade.bucket,
    )
    apply(node, docs)
    wait_glance_ready(node, UPGRADE_NAMESPACE, f"Glance {STEP.older} (2 replicas, 2 stores)", say)
    service = get(node, "service", GLANCE, "-n", UPGRADE_NAMESPACE)["spec"]["clusterIP"]
    client = {
        "url": f"http://{service}:9292",
        "token": services.keystone_token("demo", DEMO_PASSWORD, "demo"),
        "sources": make_sources(tmp_path_factory.mktemp("upgrade-load")),
        "namespace": UPGRADE_NAMESPACE,
    }
    yield upgrade, client
    node.kubectl("delete", "namespace", UPGRADE_NAMESPACE, "--timeout=300s", check=False)


def api_images(node, ns: str) -> set[str]:
    return {c["image"] for p in api_pods(node, ns) if live(p) for c in p["spec"]["containers"]}


def test_a_release_upgrade_under_load_keeps_every_image(node, upgrade_glance, services, table):
    """2026.1 -> 2026.2 of a Glance holding data (images in both stores, tags, a member, a
    public, a deactivated, a deleted and a queued image) while the client load runs: the
    operator walks Expanding, Migrating, RollingUpdate, Contracting; the phase Jobs run the
    new image's glance-manage in pods; no request fails; every image reads back and its
    API document, members, database rows and S3 objects are what they were; the pods end on
    the new image."""
    upgrade, client = upgrade_glance
    url, ns = client["url"], UPGRADE_NAMESPACE
    dataset = DataSet.create(services, upgrade, url, cache=False)
    before = dataset.snapshot(url)
    phases: list[str] = []
    seen: dict[str, float] = {}
    patch = json.dumps({"spec": {"openStackRelease": STEP.newer, "image": {"tag": STEP.newer}}})

    def act() -> float:
        began = time.monotonic()
        node.kubectl("-n", ns, "patch", "glance", GLANCE, "--type=merge", "-p", patch)

        def upgraded() -> bool:
            status = get(node, "glance", GLANCE, "-n", ns).get("status") or {}
            phase = status.get("upgradePhase")
            if phase and (not phases or phases[-1] != phase):
                phases.append(phase)
            return (
                status.get("installedRelease") == STEP.newer
                and not phase
                and api_images(node, ns) == {f"ghcr.io/c5c3/glance:{STEP.newer}"}
            )

        wait_until(f"the Glance upgraded to {STEP.newer}", upgraded, 900, interval=1)
        seen["took"] = time.monotonic() - began
        return time.monotonic()

    row, load, _ = under_load(node, client, f"release upgrade {STEP}", act, table)
    jobs = {}
    for phase, verb in PHASE_JOBS.items():
        job = get(node, "job", f"{GLANCE}-db-{verb}", "-n", ns)
        jobs[phase] = (
            job["spec"]["template"]["spec"]["containers"][0]["image"],
            job.get("status", {}).get("succeeded"),
        )
    events = get(node, "events", "-n", ns, "--field-selector",
                 f"involvedObject.kind=Glance,involvedObject.name={GLANCE}")  # fmt: skip
    reasons = [e["reason"] for e in sorted(events["items"], key=lambda e: e["lastTimestamp"] or "")]
    row.note += (
        f"; the patch to the last phase's end {seen.get('took', 0):.0f} s; phases seen "
        f"{' > '.join(phases)}; events {reasons}; jobs {jobs}"
    )
    for reason in UPGRADE_EVENTS:
        assert reason in reasons, (reason, reasons)
    glance = get(node, "glance", GLANCE, "-n", ns)
    assert conditions(glance)["Ready"]["status"] == "True", conditions(glance)
    assert phases and phases[-1] == "Contracting" and "RollingUpdate" in phases, phases
    for phase, (image, succeeded) in jobs.items():
        assert image == f"ghcr.io/c5c3/glance:{STEP.newer}" and succeeded == 1, (phase, image)
    assert row.rollouts >= 1, row
    assert not load.failed(), [f"{r.op}: {r.detail}" for r in load.failed()]
    dataset.verify_reads(url)
    same(before, dataset.snapshot(url), STEP.newer, f"the cluster's {STEP}")


# --- 7. the staging and image-cache bounds --------------------------------------------------

BOUNDS_NAMESPACE = "bounds"
BOUND = "32Mi"
"""The staging or the image-cache volume's sizeLimit; the 64 MiB source goes past it."""
REMEDY = "10Gi"
"""The image cache's bound after the fault. The sidecar prunes only back to
``image_cache_max_size`` (80% of the bound), and only when a 30 s poll finds the cache at
it: what a pod serves of uncached images between two polls must fit in the other 20%. The
check reads every image back through the Service, all of them uncached (about 75 MB/s
across the two pods here: 2.2 GB per poll), so the bound is five times that and more.
With 1Gi (205 MiB of room) the check's reads can take the cache past its bound: in one run
(issue 36) two of them failed as reads of an evicted pod do, a reset on the download under
way and "no route to host" on the next to its address."""


def bounded_glance(node, services, say, tmp_path_factory, database: str, spec: dict[str, Any]):
    """A Glance of two replicas with ``spec`` merged in, Ready; the client dict of
    ``under_load`` (no url yet)."""
    services.create_database(database)
    node.kubectl("create", "namespace", BOUNDS_NAMESPACE, check=False)
    docs = sample_documents(services, BOUNDS_NAMESPACE, database=database)
    for doc in docs:
        if doc["kind"] == "Glance":
            doc["spec"].update(spec)
    apply(node, docs)
    wait_glance_ready(node, BOUNDS_NAMESPACE, f"Glance {json.dumps(spec)}", say)
    return {
        "token": services.keystone_token("demo", DEMO_PASSWORD, "demo"),
        "sources": make_sources(tmp_path_factory.mktemp("bounds-load")),
        "namespace": BOUNDS_NAMESPACE,
    }


@pytest.fixture
def bounds(node, operator, services, say, tmp_path_factory):
    """``bounded_glance`` for the test to call; the namespace deleted afterwards."""
    yield lambda database, spec: bounded_glance(
        node, services, say, tmp_path_factory, database, spec
    )
    node.kubectl("delete", "namespace", BOUNDS_NAMESPACE, "--timeout=300s", check=False)


def driven_past(
    node, ns: str, pod: dict[str, Any], fill: Callable[[str, Callable[[], str]], None]
) -> tuple[str, float]:
    """``fill(pod's url, the eviction so far)``, then wait for the kubelet's ``Evicted``
    event on the pod and for two API pods Ready again: the event's message, and the seconds
    from the fill's start to it."""
    name = pod["metadata"]["name"]
    began = time.monotonic()
    fill(pod_url(pod), lambda: evicted(node, ns, name))
    message = wait_until(f"{name} evicted", lambda: evicted(node, ns, name), 600)
    took = time.monotonic() - began
    wait_until(f"a pod in place of {name}", lambda: two_ready(node, ns), 300, interval=2)
    return message, took


def two_pods(node, ns: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The two live API pods: the one the load goes to, the one driven past its bound."""
    keep, victim = sorted((p for p in api_pods(node, ns) if live(p)), key=pod_url)
    return keep, victim


def test_a_staged_upload_past_the_staging_bound_evicts_only_its_pod(node, bounds, table, say):
    """glance-direct on, staging bounded at 32Mi, no image cache. One pod serves the client
    load throughout; on the other a 64 MiB stage goes past the bound and the kubelet evicts
    that pod (``Evicted``); the Deployment replaces it with no operator action; the staged
    image stays non-active and can be deleted; the load on the other pod never fails."""
    ns = BOUNDS_NAMESPACE
    client = bounds(
        "glance_staging_bound",
        {"importMethods": ["glance-direct", "web-download", "copy-image"],
         "staging": {"sizeLimit": BOUND}},
    )  # fmt: skip
    token = client["token"]
    big = max(client["sources"], key=lambda s: s.path.stat().st_size)
    keep, victim = two_pods(node, ns)
    client["url"] = pod_url(keep)
    seen: dict[str, Any] = {}

    def act() -> float:
        staged = new_image(client["url"], token, "bounds-staged")
        seen["staged"] = staged
        seen["evicted"], seen["after"] = driven_past(
            node, ns, victim, lambda url, _: upload(url, token, staged, big.path, to="stage")
        )
        ended = time.monotonic()
        # Not active, and it can be deleted: the pod that staged it is gone, so the delete's
        # proxy to that pod fails and the API deletes the image where it is.
        shown = http("GET", f"{client['url']}/v2/images/{staged}", headers={"X-Auth-Token": token})
        seen["status"] = shown.json()["status"]
        began = time.monotonic()
        gone = http("DELETE", f"{client['url']}/v2/images/{staged}",
                    headers={"X-Auth-Token": token}, timeout=180)  # fmt: skip
        seen["delete"] = f"{gone.status} after {time.monotonic() - began:.1f} s"
        return ended

    row, load, _ = under_load(node, client, f"staged upload past the staging bound ({BOUND})",
                              act, table)  # fmt: skip
    row.note += (
        f"; {seen.get('evicted', '')} ({seen.get('after', 0):.0f} s after the stage began);"
        f" the staged image {seen.get('status')}, deleted: {seen.get('delete')}"
    )
    assert 'volume "staging" exceeds the limit' in seen["evicted"], seen
    # The evicted pod stays (Failed) until deleted: diagnose names the bound and its rule.
    report = named_first(node, f"{ns}/{GLANCE}", "staging-bound", say)
    first = report["findings"][0]
    assert 'volume "staging" exceeds the limit "32Mi"' in first["detail"], first
    assert first["fix"].startswith("size spec.staging.sizeLimit above the largest image"), first
    assert seen["status"] != "active", seen
    assert seen["delete"].startswith("204"), seen
    gone = http("GET", f"{client['url']}/v2/images/{seen['staged']}",
                headers={"X-Auth-Token": token})  # fmt: skip
    assert gone.status == 404, gone.status
    assert row.rollouts == 0, row
    assert not load.failed(), [f"{r.op}: {r.detail}" for r in load.failed()]


def test_downloads_past_the_image_cache_bound_evict_their_pod(node, bounds, table, say):
    """The image cache bounded at 32Mi. glance caches a whole image as it serves it,
    whatever its size, and only the sidecar prunes (it looks every 30 s): 64 MiB images
    downloaded one after another through one pod keep its cache volume past the bound until
    the kubelet, which measures volumes on its own period, sees it and evicts the pod; the
    Deployment replaces it. The load (uploads and lists: a read would fill its pod's cache
    too) goes to the other pod and never fails. Then the remedy, a bound whose fifth is
    above what a pod serves between two prunes (``REMEDY``), rolls the pods, and the images
    are checked through the Service, no pod evicted on the way."""
    ns = BOUNDS_NAMESPACE
    client = bounds("glance_cache_bound", {"imageCache": {"sizeLimit": BOUND}})
    token = client["token"]
    big = max(client["sources"], key=lambda s: s.path.stat().st_size)
    service = get(node, "service", GLANCE, "-n", ns)["spec"]["clusterIP"]
    keep, victim = two_pods(node, ns)
    client.update(url=pod_url(keep), downloads=False, check_url=f"http://{service}:9292")
    # Two images: once the sidecar has pruned one, reading it again caches it again.
    images = []
    for n in range(2):
        images.append(new_image(client["url"], token, f"bounds-cached-{n}"))
        upload(client["url"], token, images[-1], big.path)
    seen: dict[str, Any] = {"downloads": 0, "digests": set()}

    def read(url: str, gone: Callable[[], str]) -> None:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and not gone():
            try:
                seen["digests"].add(download(url, token, images[seen["downloads"] % 2])[1])
            except Exception as exc:  # the pod evicted under the download
                seen["cut"] = f"{type(exc).__name__}: {exc}"[:120]
                return
            seen["downloads"] += 1

    def act() -> float:
        seen["evicted"], seen["after"] = driven_past(node, ns, victim, read)
        return time.monotonic()

    def remedy() -> None:
        # Before the remedy rolls the pods: what diagnose says of the eviction.
        seen["diagnosis"] = named_first(node, f"{ns}/{GLANCE}", "cache-bound", say)
        patch = json.dumps({"spec": {"imageCache": {"sizeLimit": REMEDY}}})
        node.kubectl("-n", ns, "patch", "glance", GLANCE, "--type=merge", "-p", patch)
        wait_until(
            f"the pods rolled to the {REMEDY} cache",
            lambda: (
                two_ready(node, ns)
                and all(
                    v.get("emptyDir", {}).get("sizeLimit") == REMEDY
                    for p in api_pods(node, ns)
                    if live(p)
                    for v in p["spec"]["volumes"]
                    if v["name"] == "image-cache"
                )
            ),
            600,
            interval=2,
        )

    row, load, _ = under_load(node, client, f"downloads past the image-cache bound ({BOUND})",
                              act, table, remedy=remedy)  # fmt: skip
    row.note += (
        f"; {seen.get('evicted', '')} ({seen.get('after', 0):.0f} s and {seen['downloads']} "
        f"whole 64 MiB downloads after the first began"
        + (f"; the download under way when it went: {seen['cut']}" if "cut" in seen else "")
        + ")"
    )
    assert 'volume "image-cache" exceeds the limit' in seen["evicted"], seen
    first = seen["diagnosis"]["findings"][0]
    assert 'volume "image-cache" exceeds the limit "32Mi"' in first["detail"], first
    assert first["fix"].startswith("set spec.imageCache.sizeLimit to at least five times"), first
    assert seen["digests"] <= {big.digest}, "a download that filled the cache differs"
    assert row.rollouts == 0, row
    assert row.evicted_in_check == 0, f"the check's reads evicted a pod: {row}"
    assert not load.failed(), [f"{r.op}: {r.detail}" for r in load.failed()]
