#!/usr/bin/env python3
"""Every test tier but tests/unit, as three pytest processes at once (``make
other-tiers``); with ``--with-unit``, tests/unit as a fourth beside them (``make
all-tiers``, what ``make test`` runs).

    python3 hack/tiers.py [--with-unit] [pytest options...]

* ``node``: the one-node cluster's tier, tests/cluster, then the molecule scenario that
  runs on that node (``node``: the cluster tier ends by taking its node down first; ``make
  test`` leaves it to ``make molecule`` with ``-m "not molecule_target"``). Most
  of their time is spent waiting on the node: pods scheduled and started, Glance importing
  itself, Jobs completing, a rollout. It is the longer stream: what can run elsewhere does.
* ``apis``: the tiers that run against kube-apiservers of their own (reconcile,
  integration, runner), at the lowest CPU priority (nice 19), so that they take what the
  node's tiers leave of the cores instead of slowing them.
* ``rest``: every other tier (render, playbooks, install, e2e, then the molecule scenarios
  that need no node: ``offline``, ``default`` on a kube-apiserver of its own, ``kind`` in
  Docker; ``tests/support/tiers.py``'s order; ``make test`` runs ``kind`` alone of them),
  at nice 19 too. One process for all of these left a fifth of the two cores idle while
  the node stream ran (``out/cpu.json``): each waits on its own things (a kube-apiserver
  starting, a pass's subprocesses, Glance's database migrations), and two fill each
  other's waits.

* ``unit`` (``--with-unit``): tests/unit, which needs Python and nothing else (none of
  the Kubernetes binaries' or helm's variables reach it, as under ``make unit-tier``). It
  is pure CPU for about two and a half minutes, while the node stream starts its node
  and builds its images, which is mostly waiting: run before the two, it kept a core idle
  that long.

Nothing of one is another's: the node is the node stream's alone; the others bind
loopback ports they pick free and their own kube-apiservers, and kind's node is a Docker
container with a network namespace of its own; ``make images``, which both run, holds a
lock (hack/images.py). Each stream writes its output to
``out/tiers-<stream>.log`` and to standard output line by line with its name in front,
its results to ``out/tiers-<stream>.xml`` (JUnit), its modules' seconds to
``out/timings-<stream>.json`` (tests/support/timings.py, for hack/time_table.py), and its
pytest cache apart. Meanwhile the machine's cores are sampled from ``/proc/stat`` every
``CPU_EVERY`` seconds into ``out/cpu.json`` (busy, idle and stolen by the hypervisor), so
the table says whether a slow run waited on its own work, on idle cores or on a neighbour.
At the end each stream's summary is printed again; the exit status is the first non-zero of
them. SIGTERM or SIGINT stops them all. Standard library only.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "out"
NODE_TIERS = ("tests/cluster", "tests/molecule")
# The one molecule scenario that runs on the machine's one node; its others (offline, default
# on a kube-apiserver of its own, kind in Docker) need no node and run in the rest stream.
NODE_SCENARIO = "tests/molecule/test_scenarios.py::test_molecule_scenario[node]"
# The tiers that run on kube-apiservers of their own (no node, no Docker): a stream apart from
# the rest's, so that what one waits on (an apiserver starting, a pass's subprocesses, a
# watch) the other's work fills.
APIS_TIERS = ("tests/reconcile", "tests/integration", "tests/runner")
# What the unit tier must not see (tests/unit needs Python alone; make unit-tier runs it so).
NOT_FOR_UNIT = ("KUBE_ASSETS_DIR", "KUBEBUILDER_ASSETS", "HELM")
CPU_EVERY = 10.0


def cpu_times(stat: Path = Path("/proc/stat")) -> tuple[int, int, int] | None:
    """The machine's (busy, idle, steal) jiffies so far, from the ``cpu`` line of
    /proc/stat (idle counts iowait; steal is what the hypervisor gave others)."""
    try:
        first = stat.read_text().splitlines()[0].split()
    except (OSError, IndexError):
        return None
    if first[0] != "cpu" or len(first) < 9:
        return None
    user, nice, system, idle, iowait, irq, softirq, steal = (int(v) for v in first[1:9])
    return user + nice + system + irq + softirq, idle + iowait, steal


def sample_cpu(path: Path, done: threading.Event, every: float = CPU_EVERY, read=cpu_times) -> None:
    """Until ``done``: every ``every`` seconds, the fractions of the cores busy, idle and
    stolen since the reading before (``read()``, /proc/stat's), written to ``path`` as JSON
    after each sample."""
    began, wall = time.monotonic(), time.time()
    samples: list[list[float]] = []
    last = read()
    while last is not None and not done.wait(every):
        now = read()
        if now is None:
            return
        busy, idle, steal = (b - a for a, b in zip(last, now, strict=True))
        total = busy + idle + steal
        if total > 0:
            shares = (round(v / total, 3) for v in (busy, idle, steal))
            samples.append([round(time.monotonic() - began, 1), *shares])
            record = {"began": wall, "every": every, "cores": os.cpu_count(), "samples": samples}
            path.write_text(json.dumps(record))
        last = now


@dataclass
class Stream:
    name: str
    args: list[str]
    nice: int = 0
    unset: tuple[str, ...] = ()
    process: subprocess.Popen | None = None
    lines: list[str] = field(default_factory=list)
    started: float = 0.0
    ended: float = 0.0

    def command(self, python: str, options: list[str], out: Path) -> list[str]:
        return [
            python,
            "-m",
            "pytest",
            "-o",
            f"cache_dir=.pytest_cache/{self.name}",
            f"--junitxml={out / f'tiers-{self.name}.xml'}",
            *options,
            *self.args,
        ]


def streams(with_unit: bool = False) -> list[Stream]:
    ignored = [f"--ignore={tier}" for tier in ("tests/unit", "tests/cluster", *APIS_TIERS)]
    rest = [*ignored, f"--deselect={NODE_SCENARIO}", "tests"]
    found = [
        Stream("node", ["tests/cluster", NODE_SCENARIO]),
        Stream("apis", list(APIS_TIERS), nice=19),
        Stream("rest", rest, nice=19),
    ]
    if with_unit:
        found.insert(0, Stream("unit", ["tests/unit"], unset=NOT_FOR_UNIT))
    return found


def summary(lines: list[str]) -> list[str]:
    """The end of a pytest output: from its slowest durations or its short test summary,
    else its last lines."""
    for marker in ("slowest", "short test summary info"):
        for i, line in enumerate(lines):
            if line.startswith("=") and marker in line:
                return lines[i:]
    return lines[-5:]


def run(
    options: list[str],
    python: str = sys.executable,
    out: Path = OUT,
    signals: bool = False,
    with_unit: bool = False,
) -> int:
    """The streams at once; the first non-zero exit status of them. With ``signals``,
    SIGTERM and SIGINT are passed on to each (the command line's run)."""
    out.mkdir(exist_ok=True)
    out_lock = threading.Lock()
    found = streams(with_unit)

    def log_of(stream: Stream) -> Path:
        return out / f"tiers-{stream.name}.log"

    def pump(stream: Stream) -> None:
        assert stream.process is not None and stream.process.stdout is not None
        with log_of(stream).open("w") as log:
            for line in stream.process.stdout:
                log.write(line)
                log.flush()
                stream.lines.append(line.rstrip("\n"))
                with out_lock:
                    sys.stdout.write(f"[{stream.name}] {line}")
                    sys.stdout.flush()
        stream.ended = time.monotonic()  # its output closed: the stream's own end

    def stop(signum: int, _frame) -> None:
        for stream in found:
            if stream.process is not None and stream.process.poll() is None:
                os.killpg(stream.process.pid, signum)

    if signals:
        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
    sampled = threading.Event()
    sampler = threading.Thread(target=sample_cpu, args=(out / "cpu.json", sampled), daemon=True)
    sampler.start()
    pumps = []
    for stream in found:
        nice = stream.nice
        stream.started = time.monotonic()
        stream.process = subprocess.Popen(
            stream.command(python, options, out),
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            start_new_session=True,
            env={
                **{k: v for k, v in os.environ.items() if k not in stream.unset},
                "C5C3_TIMINGS_FILE": str(out / f"timings-{stream.name}.json"),
            },
            preexec_fn=(lambda nice=nice: os.nice(nice)) if nice else None,
        )
        print(
            f"[tiers] {stream.name}: pytest {' '.join(stream.args)}"
            + (f" (nice {nice})" if nice else "")
            + f", its output also in {log_of(stream)}",
            flush=True,
        )
        pumping = threading.Thread(target=pump, args=(stream,), daemon=True)
        pumping.start()
        pumps.append(pumping)
    codes = []
    for stream, pumping in zip(found, pumps, strict=True):
        assert stream.process is not None
        codes.append(stream.process.wait())
        pumping.join()
    sampled.set()
    sampler.join()
    for stream, code in zip(found, codes, strict=True):
        print(f"\n[tiers] {stream.name}: exit {code} after {stream.ended - stream.started:.0f} s")
        for line in summary(stream.lines):
            print(f"[{stream.name}] {line}")
    return next((code for code in codes if code != 0), 0)


if __name__ == "__main__":
    arguments = sys.argv[1:]
    unit = "--with-unit" in arguments
    sys.exit(run([a for a in arguments if a != "--with-unit"], signals=True, with_unit=unit))
