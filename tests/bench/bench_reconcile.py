"""Benchmark of reconcile passes: prints numbers and the targets, asserts nothing about time.

    make bench            (or: .venv/bin/python tests/bench/bench_reconcile.py [--noop-runs N])

The full sample (every optional block, two backends) on a real kube-apiserver when
``KUBE_ASSETS_DIR`` names its binaries, else on the REST test double of the API server
(tests/support/fake_apiserver.py); each pass one run of ``playbooks/glance.yml`` through
ansible-runner, as the in-cluster runner runs it. Between passes the simulated
controllers settle (Deployments ready, Jobs complete: "when Jobs and the Deployment
complete at once").

First, the floor: a one-task play run the same way with a cold ``ansible-playbook``
(``bench_support.floor``), and the same play through the warm server. Then the passes twice,
each time in a namespace of its own: with a cold ``ansible-playbook`` per pass, and through
the warm fork server (``runner/passes/warm/``) as the runner runs them (its CPU counted too:
the server reaps the passes it forks). Printed per
pass: wall and CPU seconds (ansible-playbook and the processes it started), the step
actions it ran (gather, apply, report: action plugins in the playbook's process),
and on the double the API requests and writes. Then the no-op pass over the converged
cluster, repeated. Then the targets, each with its figure and the floor:

* a no-op pass ≤ 2x the floor, and it writes nothing;
* the first full pass (the one that writes the configuration) ≤ 3x the floor;
* the first install converges in ≤ 3 passes: the passes that write, the third of which
  leaves nothing to do (the pass after it is the no-op that shows it).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import statistics
import tempfile
from pathlib import Path

from bench_support import api_server, floor, host_line, timed, verdict, warm_server
from support.api_env import sample_documents

GATHER = "c5c3.glance.gather"


def short(action: str) -> str:
    return action.rsplit(".", 1)[-1]


def one_pass(env, double, warm):
    if double is not None:
        double.reset_requests()
    run, wall, cpu = timed(env.glance_pass, warm)
    if not run.ok:
        raise SystemExit(f"pass failed: {run.failures}\n{run.stdout[-2000:]}")
    requests = len(double.requests) if double is not None else None
    writes = len(double.writes()) if double is not None else None
    return run, wall, cpu, requests, writes


def install_and_noop(env, double, warm, noop_runs: int) -> dict:
    """The first install pass by pass until the no-op, then ``noop_runs`` no-op passes."""
    env.warm = warm
    docs = sample_documents("glance_full.yaml")
    for doc in docs:
        if doc["kind"] == "Glance":
            # The double serves no external-secrets.io: a named store would hold every pass.
            doc["spec"].pop("secretStoreRef", None)
    env.create_all(docs)
    print(
        f"{'pass':>4}  {'wall s':>7} {'CPU s':>6}  {'step actions':<24} "
        f"{'requests':>8} {'writes':>6}  requeue"
    )
    passes: list[tuple[float, float, list[str]]] = []
    for number in range(1, 13):
        run, wall, cpu, requests, writes = one_pass(env, double, warm)
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
    for _ in range(noop_runs):
        run, wall, cpu, _, writes = one_pass(env, double, warm)
        walls.append(wall)
        cpus.append(cpu)
        task_counts.add(",".join(short(p) for p in run.step_actions))
        write_counts.add(writes)
    print(
        f"no-op pass: median {statistics.median(walls):.2f} s wall, "
        f"{statistics.median(cpus):.2f} CPU-s over {len(walls)} runs; step actions "
        f"{sorted(task_counts)}; API writes "
        f"{sorted(write_counts) if double is not None else 'not counted on a real server'}"
    )
    return {
        "noop_wall": statistics.median(walls),
        "noop_cpu": statistics.median(cpus),
        "first_wall": passes[0][0],
        "first_cpu": passes[0][1],
        "converged": converged,
        "writes": write_counts,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--noop-runs", type=int, default=5)
    parser.add_argument("--floor-runs", type=int, default=5)
    parser.add_argument(
        "--cold-only", action="store_true", help="only the cold ansible-playbook per pass"
    )
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory() as tmp,
        api_server(Path(tmp)) as (env, double, where),
        contextlib.ExitStack() as stack,
    ):
        print(f"reconcile bench: config/samples/glance_full.yaml on {where}; {host_line()}")
        warm = None if args.cold_only else stack.enter_context(warm_server())
        floor_wall, floor_cpu = floor(Path(tmp), args.floor_runs)
        print(
            f"floor (a one-task play through ansible-runner, cold ansible-playbook): median "
            f"{floor_wall:.2f} s wall, {floor_cpu:.2f} CPU-s over {args.floor_runs} runs"
        )
        if warm is not None:
            print(
                f"warm server: warm-up {warm.ready['cpu_seconds']:.2f} CPU-s once, "
                f"{warm.ready['modules']} modules pre-imported"
            )
            warm_floor_wall, warm_floor_cpu = floor(Path(tmp), args.floor_runs, warm)
            print(
                f"the one-task play through the warm server: median {warm_floor_wall:.2f} s "
                f"wall, {warm_floor_cpu:.2f} CPU-s"
            )
        results = {}
        for label, server, namespace in (
            ("cold ansible-playbook", None, env.namespace),
            ("warm server (the runner's way)", warm, f"{env.namespace}-warm"),
        ):
            if label.startswith("warm") and warm is None:
                continue
            print(f"-- passes through {label}, namespace {namespace}")
            results[label] = install_and_noop(
                dataclasses.replace(env, namespace=namespace, runs=[]),
                double,
                server,
                args.noop_runs,
            )
        print(
            f"targets (floor: the cold one-task play, {floor_cpu:.2f} CPU-s, {floor_wall:.2f} s):"
        )
        for label, result in results.items():
            noop, first = result["noop_cpu"], result["first_cpu"]
            print(f"  {label}:")
            print(
                f"    no-op pass {noop:.2f} CPU-s = {noop / floor_cpu:.1f}x the floor "
                f"(target <= 2x): {verdict(noop, 2 * floor_cpu)}; wall "
                f"{result['noop_wall']:.2f} s = {result['noop_wall'] / floor_wall:.1f}x"
            )
            print(
                f"    first full pass {first:.2f} CPU-s = {first / floor_cpu:.1f}x the floor "
                f"(target <= 3x): {verdict(first, 3 * floor_cpu)}; wall "
                f"{result['first_wall']:.2f} s = {result['first_wall'] / floor_wall:.1f}x"
            )
            if result["converged"] is None:
                print("    first install: no steady state after 12 passes: NOT met")
            else:
                print(
                    f"    first install converged in {result['converged']} passes, then the "
                    f"no-op pass (target <= 3): {verdict(result['converged'], 3)}"
                )
            if double is not None:
                writes = result["writes"]
                print(
                    f"    a no-op pass writes nothing: {'met' if writes == {0} else 'NOT met'} "
                    f"(API writes {sorted(writes)})"
                )


if __name__ == "__main__":
    main()
