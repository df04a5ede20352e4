"""Benchmark of the runner at scale: prints numbers, asserts nothing about time.

    make bench            (or: .venv/bin/python tests/bench/bench_runner_scale.py
                           [--glances 50] [--concurrency N] [--converge])

On the API test double (in this process), ``python -m runner`` (a child process, all
namespaces, no leader election) and N copies of the minimal sample (Glance, GlanceBackend,
Secrets), each in a namespace of its own, all created at once. Printed:

* **reconciled**: the time from the creation until every Glance has had its first full
  pass, i.e. its status shows ``DatabaseReady`` (``False/DBSyncInProgress``: the first pass
  configured everything and started the db-sync Job; the runner added the finalizer before
  it); the median and the 90th percentile of the per-Glance times too;
* with ``--converge``: the time until every Glance is converged while the bench plays the
  Job and Deployment controllers (``ApiEnv.settle``): ``DeploymentReady=True`` and
  ``GlanceAPIReady=True``, and every GlanceBackend ``Ready=True``;
* **passes per second**: playbook runs (both kinds, from the runner's
  ``glance_operator_playbook_runs_total``) over that time;
* **memory**: the runner process's peak RSS (``VmHWM``), and the peak of the summed RSS of
  the ansible processes of its passes (sampled every 0.5 s), which the pod's memory
  limit must hold too.
"""

from __future__ import annotations

import argparse
import copy
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
for entry in (ROOT / "tests" / "runner", ROOT / "tests", ROOT / ".collections", ROOT):
    sys.path.insert(0, str(entry))

from support.api_env import ApiEnv, HealthServer, sample_documents  # noqa: E402
from support.fake_apiserver import FakeAPIServer  # noqa: E402
from test_runner_support import RunnerProcess, processes_naming  # noqa: E402

from ansible_collections.c5c3.glance.plugins.module_utils.kube_client import (  # noqa: E402
    KubeClient,
)

GROUP_VERSION = "glance.openstack.c5c3.io/v1alpha1"


def status_of(obj: dict, type_: str) -> tuple[str | None, str | None]:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == type_:
            return cond.get("status"), cond.get("reason")
    return None, None


def rss_kib(pid: int, field: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


class Sampler:
    """The runner's VmHWM and the peak summed RSS of its pass processes."""

    def __init__(self, runner: RunnerProcess) -> None:
        self.runner = runner
        self.passes_peak = 0
        self.runner_peak = 0

    def sample(self) -> None:
        self.runner_peak = max(self.runner_peak, rss_kib(self.runner.pid, "VmHWM"))
        marker = str(self.runner.runner_dir)
        pids = [p for p in processes_naming(marker) if p != self.runner.pid]
        self.passes_peak = max(self.passes_peak, sum(rss_kib(p, "VmRSS") for p in pids))


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--glances", type=int, default=50)
    parser.add_argument("--concurrency", type=int, default=None, help="MAX_CONCURRENT_RECONCILES")
    parser.add_argument("--converge", action="store_true", help="also settle until converged")
    parser.add_argument("--timeout", type=float, default=1800.0)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench-runner-"))
    health = HealthServer()
    with FakeAPIServer(directory=work / "apiserver", history_size=100000) as double:
        kubeconfig = double.write_kubeconfig(work / "kubeconfig")
        client = KubeClient.from_environment(str(kubeconfig))
        env = ApiEnv(
            "double", kubeconfig, client, namespace="bench-0", double=double, health=health
        )
        namespaces = [f"bench-{index}" for index in range(args.glances)]
        extra = {"WATCH_NAMESPACE": "", "LOG_LEVEL": "info"}
        if args.concurrency:
            extra["MAX_CONCURRENT_RECONCILES"] = str(args.concurrency)
        runner = RunnerProcess(env, work, "runner", env=extra).start()
        sampler = Sampler(runner)
        try:
            runner.wait_for("informers synced", timeout=120)
            concurrency = runner.wait_for("controller started", controller="glance")["workers"]
            documents = sample_documents()
            start = time.monotonic()
            for namespace in namespaces:
                env.ensure_namespace(namespace)
                for doc in documents:
                    doc = copy.deepcopy(doc)
                    doc["metadata"]["namespace"] = namespace
                    client.create(doc)
            created = time.monotonic() - start
            first: dict[str, float] = {}
            deadline = start + args.timeout
            while len(first) < len(namespaces) and time.monotonic() < deadline:
                for glance in client.list(GROUP_VERSION, "Glance"):
                    namespace = glance["metadata"]["namespace"]
                    if namespace not in first and status_of(glance, "DatabaseReady")[0] is not None:
                        first[namespace] = time.monotonic() - start
                sampler.sample()
                time.sleep(0.5)
            reconciled = time.monotonic() - start
            runs_first = runner.metric_total("glance_operator_playbook_runs_total")
            converged_after = None
            if args.converge:
                while time.monotonic() < deadline:
                    for namespace in namespaces:
                        env.settle(namespace)
                    sampler.sample()
                    glances = client.list(GROUP_VERSION, "Glance")
                    backends = client.list(GROUP_VERSION, "GlanceBackend")
                    if (
                        len(glances) == len(namespaces)
                        and all(status_of(g, "DeploymentReady")[0] == "True" for g in glances)
                        and all(status_of(g, "GlanceAPIReady")[0] == "True" for g in glances)
                        and all(status_of(b, "Ready")[0] == "True" for b in backends)
                    ):
                        converged_after = time.monotonic() - start
                        break
                    time.sleep(0.5)
            runs_total = runner.metric_total("glance_operator_playbook_runs_total")
            glance_runs = runner.metric_total(
                "glance_operator_playbook_runs_total", controller="glance"
            )
            errors = runner.metric_total("controller_runtime_reconcile_total", result="error")
            sampler.sample()
        finally:
            code = runner.terminate(timeout=120)
            runner.kill()
    health.stop()
    shutil.rmtree(work, ignore_errors=True)

    times = list(first.values())
    print(
        f"runner scale: {args.glances} Glances in {args.glances} namespaces, on the API test double"
    )
    print(
        f"  workers per kind: {concurrency} (host CPUs: {os.cpu_count()}); objects created in {created:.1f} s"
    )
    if len(first) < len(namespaces):
        print(f"  TIMED OUT: {len(first)} of {len(namespaces)} reconciled after {reconciled:.1f} s")
    else:
        print(
            f"  reconciled (first pass done, DatabaseReady set) for all: {reconciled:.1f} s "
            f"(per Glance: median {statistics.median(times):.1f} s, p90 {percentile(times, 0.9):.1f} s, "
            f"max {max(times):.1f} s)"
        )
        print(f"  passes until then: {runs_first:.0f} ({runs_first / reconciled:.2f} passes/s)")
    if args.converge:
        if converged_after is None:
            print("  converged: TIMED OUT")
        else:
            print(
                f"  converged (DeploymentReady, GlanceAPIReady, backends Ready) for all: {converged_after:.1f} s; "
                f"{runs_total:.0f} passes ({glance_runs:.0f} Glance), {runs_total / converged_after:.2f} passes/s"
            )
    print(f"  reconcile errors: {errors:.0f}; runner exit code {code}")
    print(
        f"  runner peak RSS (VmHWM): {sampler.runner_peak / 1024:.0f} MiB; "
        f"its pass processes, peak summed RSS: {sampler.passes_peak / 1024:.0f} MiB"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
