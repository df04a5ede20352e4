"""Benchmark of reconcile passes: prints numbers, asserts nothing about time.

    make bench            (or: .venv/bin/python tests/bench/bench_reconcile.py [--noop-runs N])

The full sample (every optional block, two backends) against the REST test double of
the API server (tests/support/fake_apiserver.py) over HTTPS on loopback, each pass one
run of ``playbooks/glance.yml`` through ansible-runner, as the in-cluster runner runs it.
Between passes the simulated controllers settle (Deployments ready, Jobs complete).

Printed per pass: wall time, the module processes it started (gather, apply, report),
the API requests and the writes the double received. Then the no-op pass over the
converged cluster, repeated: its wall time (median), processes and writes (target: one
process, zero writes).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / ".collections"), str(ROOT / "tests"), str(ROOT)]

from support.api_env import ApiEnv, HealthServer, sample_documents  # noqa: E402
from support.fake_apiserver import FakeAPIServer  # noqa: E402
from support.playbook_run import run_playbook  # noqa: E402

from ansible_collections.c5c3.glance.plugins.module_utils.kube_client import (  # noqa: E402
    KubeClient,
)


def short(action: str) -> str:
    return action.rsplit(".", 1)[-1]


def one_pass(env: ApiEnv, double: FakeAPIServer) -> tuple[float, list[str], int, int, int | None]:
    double.reset_requests()
    start = time.perf_counter()
    run = run_playbook(
        "glance.yml", {"glance_name": "glance", "glance_namespace": "openstack"}, env.kubeconfig
    )
    wall = time.perf_counter() - start
    if not run.ok:
        raise SystemExit(f"pass failed: {run.failures}\n{run.stdout[-2000:]}")
    return wall, run.module_processes, len(double.requests), len(double.writes()), run.requeue_after


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--noop-runs", type=int, default=5)
    args = parser.parse_args()
    health = HealthServer()
    with tempfile.TemporaryDirectory() as tmp, FakeAPIServer() as double:
        kubeconfig = double.write_kubeconfig(Path(tmp) / "kubeconfig")
        env = ApiEnv(
            "double",
            kubeconfig,
            KubeClient.from_environment(str(kubeconfig)),
            double=double,
            health=health,
        )
        env.create_all(sample_documents("glance_full.yaml"))
        print("reconcile bench: config/samples/glance_full.yaml on the API test double")
        print(
            f"{'pass':>4}  {'wall s':>7}  {'processes':<24} {'requests':>8} {'writes':>6}  requeue"
        )
        for number in range(1, 13):
            wall, processes, requests, writes, requeue = one_pass(env, double)
            names = ",".join(short(p) for p in processes)
            print(f"{number:>4}  {wall:7.2f}  {names:<24} {requests:>8} {writes:>6}  {requeue}")
            if processes == ["c5c3.glance.gather"]:
                break
            env.settle()
        walls, process_counts, write_counts = [], set(), set()
        for _ in range(args.noop_runs):
            wall, processes, _, writes, _ = one_pass(env, double)
            walls.append(wall)
            process_counts.add(len(processes))
            write_counts.add(writes)
        print(
            f"no-op pass: median {statistics.median(walls):.2f} s over {len(walls)} runs, "
            f"module processes {sorted(process_counts)}, API writes {sorted(write_counts)}"
        )
    health.stop()


if __name__ == "__main__":
    main()
