"""What an image transfer through the pods costs, beside the same Glance on loopback.

One Glance of one replica (namespace ``transfer``), and the e2e stack's Glance launched
from the same render as processes on 127.0.0.1 (``tests/e2e/stack.py``), both storing in
the same kind of S3 server. Each round uploads a 128 MiB file (``PUT .../file`` with a
Content-Length, as ``glance image-upload --file`` does) and downloads it, hashing what
comes back. Paths:

* ``service``: through the Glance Service's ClusterIP (kube-proxy's DNAT and masquerade);
* ``pod``: to the API pod's own address;
* ``loopback``: to the e2e Glance on 127.0.0.1 (no container, no CPU limit);

first with the rendered resources (the reference's 500m CPU limit), then with a 2-CPU
limit (``spec.deployment.resources``). Printed per path: the median MiB/s up and down,
the API's CPU seconds per GiB (the pod's cgroup; on loopback the launch's process group:
uWSGI's master, router and workers) and, for the pod, the time the CPU limit throttled it
(its cgroup's ``cpu.stat``). Asserted: every byte that came back is the byte sent. Nothing is
asserted on time; docs/e2e.md keeps the figures and what they say. ``make
transfer-figures`` runs it (with ``make cluster-test``, not in ``make test``).
"""

from __future__ import annotations

import hashlib
import os
import statistics
from collections.abc import Callable
from pathlib import Path

import pytest
from e2e.procstat import group_cpu_seconds
from e2e.stack import DEMO_PASSWORD, Stack, StackError, http

from cluster.conftest import wait_until
from cluster.load import download, upload
from cluster.objects import (
    apply,
    conditions,
    get,
    glance_pods,
    pod_cgroup_stats,
    pod_ready,
    sample_documents,
)

# Figures, not a gate: `make transfer-figures` runs it, not make test (docs/decisions.md,
# "make test's budget": the changes that must run it before they land).
pytestmark = [pytest.mark.cluster, pytest.mark.figures]

NAMESPACE = "transfer"
SIZE = 128 * 2**20
ROUNDS = 3
LIMITS = {
    "rendered (500m CPU limit)": None,
    "2 CPUs": {
        "requests": {"cpu": "100m", "memory": "512Mi"},
        "limits": {"cpu": "2", "memory": "1Gi"},
    },
}


def rounds(
    url: str, token: str, source: Path, digest: str, stats: Callable[[], dict] | None = None
) -> dict[str, float]:
    """Median MiB/s up and down over ``ROUNDS`` rounds (each image deleted after); with
    ``stats`` (the API's CPU seconds, ``cpu``, and, in a pod, the seconds it was throttled,
    ``throttled``), the API's CPU seconds per GiB uploaded and downloaded, read around each
    transfer, and the seconds throttled."""
    took = {"up": [], "down": []}
    cpu = {"up": 0.0, "down": 0.0}
    seen: set[str] = set()

    def measured(direction: str, transfer):
        before = stats() if stats else {}
        result = transfer()
        after = stats() if stats else {}
        for key, field in ((direction, "cpu"), ("throttled", "throttled")):
            if field in before and field in after:
                cpu[key] = cpu.get(key, 0.0) + after[field] - before[field]
                seen.add(field)
        return result

    for n in range(ROUNDS):
        created = http(
            "POST",
            f"{url}/v2/images",
            {"name": f"transfer-{n}", "disk_format": "raw", "container_format": "bare"},
            {"X-Auth-Token": token},
        )
        assert created.status == 201, created.body
        image_id = created.json()["id"]
        took["up"].append(measured("up", lambda i=image_id: upload(url, token, i, source)))
        seconds, got = measured("down", lambda i=image_id: download(url, token, i))
        assert got == digest, "the bytes back differ from the bytes sent"
        took["down"].append(seconds)
        http("DELETE", f"{url}/v2/images/{image_id}", headers={"X-Auth-Token": token})
    mib, gib = SIZE / 2**20, ROUNDS * SIZE / 2**30
    out = {d: mib / statistics.median(took[d]) for d in ("up", "down")}
    if "cpu" in seen:
        out |= {f"cpu {d}": cpu[d] / gib for d in ("up", "down")}
    if "throttled" in seen:
        out["throttled"] = cpu["throttled"]
    return out


def describe(figures: dict[str, float]) -> str:
    text = f"up {figures['up']:.1f} MiB/s, down {figures['down']:.1f} MiB/s"
    if "cpu up" in figures:
        text += f"; API CPU-s per GiB up {figures['cpu up']:.2f}, down {figures['cpu down']:.2f}"
    if "throttled" in figures:
        text += f"; throttled {figures['throttled']:.1f} s"
    return text


def one_ready_pod(node, cpu_limit: str) -> dict | None:
    """The Glance's one API pod once it alone is Ready with ``cpu_limit`` and the Glance
    is Ready; else None."""
    pods = [p for p in glance_pods(node, NAMESPACE, "glance") if pod_ready(p)]
    limits = [
        c["resources"].get("limits", {}).get("cpu")
        for p in pods
        for c in p["spec"]["containers"]
        if c["name"] == "glance-api"
    ]
    glance = get(node, "glance", "glance", "-n", NAMESPACE)
    ready = conditions(glance).get("Ready", {}).get("status") == "True"
    return pods[0] if len(pods) == 1 and limits == [cpu_limit] and ready else None


@pytest.fixture(scope="module")
def loopback(tmp_path_factory, say):
    stack = Stack(tmp_path_factory.mktemp("loopback"), log=say)
    try:
        try:
            stack.start()
        except StackError as exc:
            pytest.fail(f"the loopback Glance did not come up: {exc}", pytrace=False)
        yield stack
    finally:
        stack.stop()


def test_an_image_through_the_pods_and_on_loopback(
    node, operator, services, loopback, tmp_path, say
):
    source = tmp_path / "image.raw"
    source.write_bytes(os.urandom(SIZE))
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    services.create_database("glance_transfer")
    node.kubectl("create", "namespace", NAMESPACE, check=False)
    token = services.keystone_token("demo", DEMO_PASSWORD, "demo")
    lines = []

    loop_token = loopback.keystone_token("demo", DEMO_PASSWORD, "demo")
    # The launch's process group (uWSGI's master, router and workers), as the pod's cgroup.
    launch = loopback.glance.popen.pid
    figures = rounds(
        loopback.glance_url, loop_token, source, digest, lambda: {"cpu": group_cpu_seconds(launch)}
    )
    lines.append(f"loopback (e2e, no limit): {describe(figures)}")

    for label, resources in LIMITS.items():
        docs = sample_documents(services, NAMESPACE, replicas=1, database="glance_transfer")
        for doc in docs:
            if doc["kind"] == "Glance" and resources:
                doc["spec"]["deployment"]["resources"] = resources
        apply(node, docs)
        wanted = resources["limits"]["cpu"] if resources else "500m"
        pod = wait_until(
            f"one Ready API pod, {label}",
            lambda wanted=wanted: one_ready_pod(node, wanted),
            600,
            interval=2,
        )
        service = get(node, "service", "glance", "-n", NAMESPACE)["spec"]["clusterIP"]
        for path, url in (
            ("service", f"http://{service}:9292"),
            ("pod", f"http://{pod['status']['podIP']}:9292"),
        ):
            uid = pod["metadata"]["uid"]
            figures = rounds(url, token, source, digest, lambda uid=uid: pod_cgroup_stats(uid))
            lines.append(f"{label}, {path}: {describe(figures)}")
    say(
        f"[cluster] {SIZE // 2**20} MiB x {ROUNDS} rounds, medians "
        f"(load {os.getloadavg()[0]:.1f}):\n  " + "\n  ".join(lines)
    )
    node.kubectl("delete", "namespace", NAMESPACE, "--wait=false")
