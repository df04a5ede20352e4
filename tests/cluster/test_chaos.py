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
   the Service stop sending it new ones: no request fails; force-deleted: only requests
   begun before the Service forgot it may fail; the Deployment replaces it both times;
3. the S3 server unreachable for 60 s (its port refused on the node, as a stopped server's
   is; moto keeps its objects in memory, so it is not killed): ``/healthcheck`` answers 200
   on every pod throughout, no pod restarts, transfers fail while it is away and work again
   after, no image is ``active`` without its data;
4. MariaDB restarted (down 10 s): requests fail while it is down, the API recovers with no
   restart;
8. a drain through the eviction API: the node cordoned, the first API pod evicted, the
   second refused by the PodDisruptionBudget while it is the last one, evicted once the
   first's replacement runs; no request fails.

docs/operations.md keeps the measured table and what each fault means for users.
"""

from __future__ import annotations

import collections
import json
import os
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from e2e.stack import DEMO_PASSWORD, http

from cluster.conftest import OPERATOR_NAMESPACE, wait_until
from cluster.load import Load, active_without_data, lost_or_corrupted, make_sources
from cluster.objects import apply, conditions, get, glance_pods, pod_ready, sample_documents

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

    def line(self) -> str:
        failed = sum(self.failed.values())
        why = ", ".join(f"{n} {what}" for what, n in sorted(self.failed.items()))
        return (
            f"{self.fault:<34} {self.requests:>8} {failed:>6}  {len(self.lost):>4}  "
            f"{self.recovery:>8.1f}  {self.restarted:>9}  {self.rollouts:>8}  {why or '-'}"
            + (f"; {self.note}" if self.note else "")
        )


HEADER = (
    f"{'fault':<34} {'requests':>8} {'failed':>6}  {'lost':>4}  {'recovery':>8}  "
    f"{'restarted':>9}  {'rollouts':>8}  why"
)


# --- the Glance and what is read around each fault ------------------------------------------


def api_pods(node) -> list[dict[str, Any]]:
    return glance_pods(node, NAMESPACE, GLANCE)


def deployment(node) -> dict[str, Any]:
    return get(node, "deployment", GLANCE, "-n", NAMESPACE)


def snapshot(node) -> dict[str, Any]:
    """The API pods (uid: container restarts) and the Deployment's generation."""
    pods = {
        p["metadata"]["uid"]: sum(
            c.get("restartCount", 0) for c in p.get("status", {}).get("containerStatuses") or []
        )
        for p in api_pods(node)
        if not p["metadata"].get("deletionTimestamp")
    }
    return {"pods": pods, "generation": deployment(node)["metadata"]["generation"]}


def changes(before: dict[str, Any], after: dict[str, Any]) -> tuple[int, int]:
    """Restarted (containers restarted in pods that stayed, plus pods replaced) and
    rollouts (generations the Deployment moved)."""
    kept = before["pods"].keys() & after["pods"].keys()
    restarts = sum(after["pods"][uid] - before["pods"][uid] for uid in kept)
    replaced = len(before["pods"].keys() - after["pods"].keys())
    return restarts + replaced, after["generation"] - before["generation"]


def two_ready(node) -> bool:
    pods = [p for p in api_pods(node) if not p["metadata"].get("deletionTimestamp")]
    return len(pods) == 2 and all(pod_ready(p) for p in pods)


def json_lines(text: str) -> list[dict[str, Any]]:
    out = []
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            out.append(entry)
    return out


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

    def __init__(self, node):
        self.node = node
        container = deployment(node)["spec"]["template"]["spec"]["containers"][0]
        self.timeout = float(container["readinessProbe"]["timeoutSeconds"])
        self.bad: list[str] = []
        self.asked = 0
        self.slowest = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        ips = [p["status"]["podIP"] for p in api_pods(self.node)]
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
    started = time.monotonic()
    wait_until(
        "the chaos Glance Ready",
        lambda: (
            conditions(get(node, "glance", GLANCE, "-n", NAMESPACE)).get("Ready", {}).get("status")
            == "True"
            and two_ready(node)
        ),
        600,
        interval=2,
    )
    say(f"[chaos] Glance (2 replicas, 2 stores) Ready: {time.monotonic() - started:.1f}s")
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


def under_load(node, client, fault: str, act: Callable[[], float], table: list[Row]):
    """Run ``act`` (which makes the fault, ends it and returns the monotonic time it ended)
    under the load; the row, the load and the fault's end. Asserts nothing was lost."""
    before = snapshot(node)
    load = Load(client["url"], client["token"], client["sources"], prefix=fault.split()[0])
    load.start()
    try:
        with Health(node) as health:
            time.sleep(BEFORE)
            ended = act()
            wait_until("two API pods Ready again", lambda: two_ready(node), 300, interval=2)
            time.sleep(AFTER)
    finally:
        load.stop()
    after = snapshot(node)
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
    row.lost = lost_or_corrupted(client["url"], client["token"], load.uploaded)
    table.append(row)
    assert not row.lost, f"{fault}: images lost or corrupted: {row.lost}"
    empty = active_without_data(client["url"], client["token"], load.attempted)
    assert not empty, f"{fault}: images active without their data: {empty}"
    assert load.uploaded, f"{fault}: no upload succeeded under the load"
    return row, load, ended


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


def test_an_api_pod_force_deleted_fails_only_what_was_on_it(node, client, table):
    def act() -> float:
        victim = api_pods(node)[0]["metadata"]["name"]
        node.kubectl("-n", NAMESPACE, "delete", "pod", victim, "--grace-period=0", "--force")
        return time.monotonic()

    row, load, ended = under_load(node, client, "API pod force-deleted", act, table)
    assert row.rollouts == 0, row
    assert not late_failures(load, ended), late_failures(load, ended)


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
