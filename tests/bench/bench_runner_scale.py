"""Benchmark of the runner at scale: prints numbers and the targets, asserts nothing about time.

    make bench            (or: .venv/bin/python tests/bench/bench_runner_scale.py
                           [--glances 50] [--concurrency N] [--first-pass-only] [--cold]
                           [--keep-log FILE])

On a real kube-apiserver when ``KUBE_ASSETS_DIR`` names its binaries, else on the API test
double (in this process): ``python -m runner`` (a child process, all namespaces, no leader
election) and N copies of the minimal sample (a Glance with its GlanceBackend and
Secrets), each in a namespace of its own, all created at once. The bench plays the Job
and Deployment controllers (``ApiEnv.settle``) while it waits. Printed, next to the floor
(a one-task play run as a pass is run, ``bench_support.floor``) of the same run:

* **reconciled**: the time from the creation until every Glance has had its first full
  pass (its status shows ``DatabaseReady``); the median and the 90th percentile of the
  per-Glance times too;
* **converged** (unless ``--first-pass-only``): the time until every Glance has
  ``DeploymentReady=True`` and ``GlanceAPIReady=True`` (on a real kube-apiserver, whose
  service proxy reaches no pod, ``GlanceAPIReady`` is ``EndpointNotReady`` instead: the
  probe ran) and every GlanceBackend ``Ready=True``; target ≤ 60 s for 50;
* **passes per second** and **CPU-seconds per pass**: playbook runs (both kinds, from the
  runner's ``glance_operator_playbook_runs_total``) over that time, and the CPU time of
  the runner and every process it started and waited for (``/proc/<pid>/stat``: utime,
  stime, cutime, cstime) over the passes, plus the same of the warm server (the passes
  it forks are its children, not the runner's: it reaps them, so its ``cutime`` holds
  them); ``--cold`` runs the runner with ``WARM_PASSES=false`` (a cold ansible-playbook
  per pass) for the figures to compare;
* **pass accounting**: the passes per Glance and per GlanceBackend (min, median, max) and
  by what woke them (the first ``woken_by`` of each ``pass started``), the mean time a key
  waited in its queue and then with its worker (``workqueue_*_duration_seconds``), and
  how busy the pass slots were running playbooks (the runs' summed wall time over
  slots times the run; passes that end after the last look count too, so it can pass
  100 %); ``--keep-log`` keeps the runner's log;
* **the other processes' CPU**: of this process (creating, polling, playing the Job and
  Deployment controllers for every namespace every 0.5 s) and of kube-apiserver and
  etcd, which share the cores with the runner;
* **memory**: the peak of the summed PSS of the runner and all its descendants (sampled
  every 0.5 s), which the pod's memory limit must hold (target < 400 MiB), and the peak
  of their summed RSS (which counts the warm server's pages, shared copy-on-write with
  every pass it forks, once per process).
"""

from __future__ import annotations

import argparse
import copy
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "bench"))

from bench_support import api_server, floor, host_line, verdict  # noqa: E402
from support.api_env import sample_documents  # noqa: E402
from support.hack_scripts import hack_script  # noqa: E402
from test_runner_support import RunnerProcess  # noqa: E402

prebuild = hack_script("prebuild")

GROUP_VERSION = "glance.openstack.c5c3.io/v1alpha1"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
API_PROCESSES = ("kube-apiserver", "etcd")


def status_of(obj: dict, type_: str) -> tuple[str | None, str | None]:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == type_:
            return cond.get("status"), cond.get("reason")
    return None, None


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (hack/prebuild.py's walk of /proc)."""
    return [pid, *prebuild.descendants(pid)]


def rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def cpu_of(pid: int) -> float:
    """CPU seconds of ``pid`` and of the children it waited for."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    utime, stime, cutime, cstime = (int(v) for v in fields[11:15])
    return (utime + stime + cutime + cstime) / CLOCK_TICKS


def pss_kib(pid: int) -> int:
    """Proportional set size: each page shared by n processes counted 1/n in each."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


class Sampler:
    """The peak summed RSS of the runner and all its descendants, and the peak summed PSS.

    The passes the warm server forks share its pre-imported pages copy-on-write: summed
    RSS counts those pages once per process, summed PSS once in all (what the pod's
    memory cgroup is charged)."""

    def __init__(self, runner: RunnerProcess) -> None:
        self.runner = runner
        self.peak = 0
        self.peak_processes = 0
        self.peak_pss = 0

    def sample(self) -> None:
        pids = descendants(self.runner.pid)
        total = sum(rss_kib(p) for p in pids)
        if total > self.peak:
            self.peak, self.peak_processes = total, len(pids)
        self.peak_pss = max(self.peak_pss, sum(pss_kib(p) for p in pids))


def process_cpu(names: tuple[str, ...]) -> float:
    """CPU seconds of this process's descendants named ``names`` (the real kube-apiserver
    and etcd the bench started), with the children they waited for."""
    total = 0.0
    for pid in descendants(os.getpid()):
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() in names:
                total += cpu_of(pid)
        except OSError:
            continue
    return total


def self_cpu() -> float:
    """CPU seconds of the bench process itself (all its threads; not its children)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def pass_accounting(runner: RunnerProcess) -> dict[str, dict]:
    """Per controller: the passes per object, and the passes by what woke them (the first
    ``woken_by`` reason of each ``pass started`` line; the adds that coalesced into the
    pass are counted apart); the playbook runs' summed wall time (``pass finished``,
    ``pass failed``: ``seconds``)."""
    out: dict[str, dict] = {}

    def entry(controller: str) -> dict:
        return out.setdefault(
            controller,
            {"per_key": Counter(), "woken": Counter(), "coalesced": 0, "run_seconds": 0.0},
        )

    for line in runner.lines():
        if line.get("msg") == "pass started":
            counts = entry(line.get("controller"))
            counts["per_key"][line.get("key")] += 1
            woken_by = line.get("woken_by") or [""]
            counts["woken"][woken_by[0] or "(none)"] += 1
            counts["coalesced"] += len(woken_by) - 1
        elif line.get("msg") in ("pass finished", "pass failed"):
            entry(line.get("controller"))["run_seconds"] += float(line.get("seconds") or 0)
    return out


def queue_waits(runner: RunnerProcess, controller: str) -> tuple[float, float]:
    """Mean seconds a key of ``controller`` waited in the queue before a worker took it,
    and mean seconds a worker spent on it (the slot wait, the reads, the run)."""
    _, text = runner.http_get("metrics", "/metrics")
    samples = {}
    for line in text.splitlines():  # the label is ``name``: metric_sum's own parameter
        series, _, value = line.rpartition(" ")
        if f'name="{controller}"' in series:
            samples[series.split("{", 1)[0]] = float(value)
    means = []
    for family in ("workqueue_queue_duration_seconds", "workqueue_work_duration_seconds"):
        count = samples.get(f"{family}_count", 0.0)
        means.append(samples.get(f"{family}_sum", 0.0) / count if count else 0.0)
    return means[0], means[1]


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def converged(glance: dict, real: bool) -> bool:
    api = status_of(glance, "GlanceAPIReady")
    return status_of(glance, "DeploymentReady")[0] == "True" and (
        api[0] == "True" or (real and api[1] == "EndpointNotReady")
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--glances", type=int, default=50)
    parser.add_argument("--concurrency", type=int, default=None, help="MAX_CONCURRENT_RECONCILES")
    parser.add_argument(
        "--first-pass-only", action="store_true", help="stop once every Glance had its first pass"
    )
    parser.add_argument("--floor-runs", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument(
        "--cold", action="store_true", help="WARM_PASSES=false: a cold ansible-playbook per pass"
    )
    parser.add_argument("--keep-log", type=Path, default=None, help="copy the runner's log here")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench-runner-"))
    options = {"directory": work / "apiserver", "history_size": 100000}
    with api_server(work, namespace="bench-0", **options) as (env, double, where):
        real = double is None
        client = env.client
        floor_wall, floor_cpu = floor(work, args.floor_runs)
        namespaces = [f"bench-{index}" for index in range(args.glances)]
        extra = {
            "WATCH_NAMESPACE": "",
            "LOG_LEVEL": "info",
            "WARM_PASSES": "false" if args.cold else "true",
        }
        if args.concurrency:
            extra["MAX_CONCURRENT_RECONCILES"] = str(args.concurrency)
        runner = RunnerProcess(env, work, "runner", env=extra).start()
        sampler = Sampler(runner)
        converged_after = None
        try:
            runner.wait_for("informers synced", timeout=120)
            concurrency = runner.wait_for("controller started", controller="glance")["workers"]
            server = None
            if not args.cold:
                server = runner.wait_for("warm server ready", timeout=300)["pid"]
            documents = sample_documents()
            cpu_start = cpu_of(runner.pid) + (cpu_of(server) if server else 0.0)
            bench_cpu_start = self_cpu()
            api_cpu_start = process_cpu(API_PROCESSES)
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
            while time.monotonic() < deadline:
                glances = client.list(GROUP_VERSION, "Glance")
                for glance in glances:
                    namespace = glance["metadata"]["namespace"]
                    if namespace not in first and status_of(glance, "DatabaseReady")[0] is not None:
                        first[namespace] = time.monotonic() - start
                sampler.sample()
                if len(first) == len(namespaces) and args.first_pass_only:
                    break
                if not args.first_pass_only:
                    backends = client.list(GROUP_VERSION, "GlanceBackend")
                    if (
                        len(glances) == len(namespaces)
                        and all(converged(g, real) for g in glances)
                        and all(status_of(b, "Ready")[0] == "True" for b in backends)
                    ):
                        converged_after = time.monotonic() - start
                        break
                    for namespace in namespaces:
                        env.settle(namespace)
                time.sleep(0.5)
            elapsed = time.monotonic() - start
            cpu = cpu_of(runner.pid) + (cpu_of(server) if server else 0.0) - cpu_start
            bench_cpu = self_cpu() - bench_cpu_start
            api_cpu = process_cpu(API_PROCESSES) - api_cpu_start
            warm_passes = len(runner.find("pass finished", warm=True))
            all_passes = len(runner.find("pass finished")) + len(runner.find("pass failed"))
            runs_total = runner.metric_total("glance_operator_playbook_runs_total")
            glance_runs = runner.metric_total(
                "glance_operator_playbook_runs_total", controller="glance"
            )
            errors = runner.metric_total("controller_runtime_reconcile_total", result="error")
            waits = {name: queue_waits(runner, name) for name in ("glance", "glancebackend")}
            slots = runner.find("controller started", controller="glance")[0]["workers"]
            sampler.sample()
        finally:
            code = runner.terminate(timeout=120)
            runner.kill()
            accounting = pass_accounting(runner)
            if args.keep_log is not None:
                shutil.copyfile(runner.log_path, args.keep_log)
    shutil.rmtree(work, ignore_errors=True)

    times = list(first.values())
    how = "a cold ansible-playbook per pass" if args.cold else "passes through the warm server"
    print(
        f"runner scale: {args.glances} Glances, each with a GlanceBackend, on {where}; {how} "
        f"({warm_passes} of {all_passes} logged passes warm)"
    )
    print(f"  {host_line()}; workers per kind: {concurrency}; objects created in {created:.1f} s")
    print(
        f"  floor (a one-task play through ansible-runner): {floor_wall:.2f} s wall, "
        f"{floor_cpu:.2f} CPU-s"
    )
    if len(first) < len(namespaces):
        print(f"  first pass: only {len(first)} of {len(namespaces)} after {elapsed:.1f} s")
    else:
        print(
            f"  first pass done (DatabaseReady set) for all: {max(times):.1f} s "
            f"(per Glance: median {statistics.median(times):.1f} s, "
            f"p90 {percentile(times, 0.9):.1f} s)"
        )
    passes = max(runs_total, 1)
    print(
        f"  passes: {runs_total:.0f} ({glance_runs:.0f} Glance) in {elapsed:.1f} s = "
        f"{runs_total / elapsed:.2f} passes/s; {cpu / passes:.2f} CPU-s per pass "
        f"({cpu / passes / floor_cpu:.1f}x the floor's CPU); reconcile errors {errors:.0f}; "
        f"runner exit code {code}"
    )
    print(
        f"  CPU over those {elapsed:.1f} s: runner and its passes {cpu:.0f} CPU-s, "
        f"this bench process (creating, polling, settling Jobs and Deployments) "
        f"{bench_cpu:.0f} CPU-s, kube-apiserver and etcd {api_cpu:.0f} CPU-s "
        f"({'the API test double runs in the bench process' if not real else 'real'}); "
        f"{(cpu + bench_cpu + api_cpu) / elapsed:.2f} of {os.cpu_count()} CPUs busy"
    )
    run_seconds = sum(entry["run_seconds"] for entry in accounting.values())
    print(
        f"  pass slots ({slots}) busy running playbooks {run_seconds / (elapsed * slots):.0%} "
        f"of the time; a playbook run {run_seconds / passes:.2f} s wall on average"
    )
    for name, entry in sorted(accounting.items()):
        counts = sorted(entry["per_key"].values())
        queued, worked = waits[name]
        print(
            f"  {name} passes: {sum(counts)} over {len(counts)} objects, per object "
            f"min {counts[0]} median {statistics.median(counts):g} max {counts[-1]}; "
            f"{entry['coalesced']} more wake-ups coalesced into them; a key waited "
            f"{queued:.1f} s in the queue, then {worked:.1f} s with its worker (slot, reads, "
            f"run) on average; woken by:"
        )
        for reason, count in entry["woken"].most_common():
            print(f"    {count:5d}  {reason}")
    peak_mib = sampler.peak / 1024
    print("targets:")
    if not args.first_pass_only:
        if converged_after is None:
            print(f"  converged: TIMED OUT after {elapsed:.1f} s (target <= 60 s): NOT met")
        else:
            print(
                f"  converged (DeploymentReady, GlanceAPIReady, backends Ready) for all: "
                f"{converged_after:.1f} s (target <= 60 s): {verdict(converged_after, 60)}"
            )
    pss_mib = sampler.peak_pss / 1024
    print(
        f"  runner with all its children, peak summed PSS (each shared page once): "
        f"{pss_mib:.0f} MiB (target < 400 MiB): {verdict(pss_mib, 399.99)}; peak summed RSS "
        f"{peak_mib:.0f} MiB ({sampler.peak_processes} processes at the peak; shared pages "
        f"counted in every process)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
