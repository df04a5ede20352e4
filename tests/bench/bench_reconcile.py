"""Benchmark of reconcile passes: prints numbers and the targets, asserts nothing about time.

    make bench            (or: .venv/bin/python tests/bench/bench_reconcile.py [--noop-runs N])

The full sample (every optional block, two backends) on a real kube-apiserver when
``KUBE_ASSETS_DIR`` names its binaries, else on the REST test double of the API server
(tests/support/fake_apiserver.py); each pass one run of ``playbooks/glance.yml`` through
ansible-runner, as the in-cluster runner runs it. Between passes the simulated
controllers settle (Deployments ready, Jobs complete: "when Jobs and the Deployment
complete at once").

First, the floor: a one-task play run the same way (``bench_support.floor``). Printed per
pass: wall and CPU seconds (ansible-playbook and the processes it started), the module
tasks it ran (gather, apply, report: in the playbook's process on a local connection),
and on the double the API requests and writes. Then the no-op pass over the converged
cluster, repeated. Then the targets, each with its figure and the floor:

* a no-op pass ≤ 2x the floor, and it writes nothing;
* the first full pass (the one that writes the configuration) ≤ 3x the floor;
* the first install converges in ≤ 3 passes: the passes that write, the third of which
  leaves nothing to do (the pass after it is the no-op that shows it).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from bench_support import api_server, floor, host_line, timed, verdict
from support.api_env import sample_documents

GATHER = "c5c3.glance.gather"


def short(action: str) -> str:
    return action.rsplit(".", 1)[-1]


def one_pass(env, double):
    if double is not None:
        double.reset_requests()
    run, wall, cpu = timed(env.glance_pass)
    if not run.ok:
        raise SystemExit(f"pass failed: {run.failures}\n{run.stdout[-2000:]}")
    requests = len(double.requests) if double is not None else None
    writes = len(double.writes()) if double is not None else None
    return run, wall, cpu, requests, writes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--noop-runs", type=int, default=5)
    parser.add_argument("--floor-runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, api_server(Path(tmp)) as (env, double, where):
        print(f"reconcile bench: config/samples/glance_full.yaml on {where}; {host_line()}")
        floor_wall, floor_cpu = floor(Path(tmp), args.floor_runs)
        print(
            f"floor (a one-task play through ansible-runner): median {floor_wall:.2f} s wall, "
            f"{floor_cpu:.2f} CPU-s over {args.floor_runs} runs"
        )
        env.create_all(sample_documents("glance_full.yaml"))
        print(
            f"{'pass':>4}  {'wall s':>7} {'CPU s':>6}  {'module tasks':<24} "
            f"{'requests':>8} {'writes':>6}  requeue"
        )
        passes: list[tuple[float, float, list[str]]] = []
        for number in range(1, 13):
            run, wall, cpu, requests, writes = one_pass(env, double)
            names = ",".join(short(p) for p in run.step_actions)
            print(
                f"{number:>4}  {wall:7.2f} {cpu:6.2f}  {names:<24} "
                f"{'-' if requests is None else requests:>8} "
                f"{'-' if writes is None else writes:>6}  {run.requeue_after}"
            )
            passes.append((wall, cpu, run.step_actions))
            if run.step_actions == [GATHER]:
                break
            env.settle()
        converged = len(passes) - 1 if passes[-1][2] == [GATHER] else None
        walls, cpus, write_counts, task_counts = [], [], set(), set()
        for _ in range(args.noop_runs):
            run, wall, cpu, _, writes = one_pass(env, double)
            walls.append(wall)
            cpus.append(cpu)
            task_counts.add(",".join(short(p) for p in run.step_actions))
            write_counts.add(writes)
        noop = statistics.median(walls)
        print(
            f"no-op pass: median {noop:.2f} s wall, {statistics.median(cpus):.2f} CPU-s over "
            f"{len(walls)} runs; module tasks {sorted(task_counts)}; API writes "
            f"{sorted(write_counts) if double is not None else 'not counted on a real server'}"
        )
        first_wall = passes[0][0]
        print("targets:")
        print(
            f"  no-op pass {noop:.2f} s = {noop / floor_wall:.1f}x the floor {floor_wall:.2f} s "
            f"(target <= 2x): {verdict(noop, 2 * floor_wall)}"
        )
        print(
            f"  first full pass {first_wall:.2f} s = {first_wall / floor_wall:.1f}x the floor "
            f"{floor_wall:.2f} s (target <= 3x): {verdict(first_wall, 3 * floor_wall)}"
        )
        if converged is None:
            print("  first install: no steady state after 12 passes: NOT met")
        else:
            print(
                f"  first install converged in {converged} passes, then the no-op pass "
                f"(target <= 3): {verdict(converged, 3)}"
            )
        if double is not None:
            print(
                f"  a no-op pass writes nothing: {'met' if write_counts == {0} else 'NOT met'} "
                f"(API writes {sorted(write_counts)})"
            )


if __name__ == "__main__":
    main()
