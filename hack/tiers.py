#!/usr/bin/env python3
"""Every test tier but tests/unit, as two pytest processes at once (``make other-tiers``).

    python3 hack/tiers.py [pytest options...]

* ``node``: the one-node cluster's tier, tests/cluster, then the molecule scenario that
  runs on that node (``node``: the cluster tier ends by taking its node down first). Most
  of their time is spent waiting on the node: pods scheduled and started, Glance importing
  itself, Jobs completing, a rollout. It is the longer stream: what can run elsewhere does.
* ``rest``: every other tier (render, playbooks, reconcile, integration, runner, install,
  e2e, then the molecule scenarios that need no node: ``offline``, ``default`` on a
  kube-apiserver of its own, ``kind`` in Docker; ``tests/support/tiers.py``'s order). It
  runs at the lowest CPU priority (nice 19), so it takes what the node's tiers leave of
  the cores instead of slowing them.

Nothing of one is the other's: the node is the node stream's alone; the rest binds
loopback ports it picks free and its own kube-apiservers, and kind's node is a Docker
container with a network namespace of its own; ``make images``, which both run, holds a
lock (hack/images.py). Each stream writes its output to
``out/tiers-<stream>.log`` and to standard output line by line with its name in front,
its results to ``out/tiers-<stream>.xml`` (JUnit), its modules' seconds to
``out/timings-<stream>.json`` (tests/support/timings.py, for hack/time_table.py), and its
pytest cache apart. At the end each stream's summary is printed again; the exit status is
the first non-zero of the two.
SIGTERM or SIGINT stops both. Standard library only.
"""

from __future__ import annotations

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


@dataclass
class Stream:
    name: str
    args: list[str]
    nice: int = 0
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


def streams() -> list[Stream]:
    rest = ["--ignore=tests/unit", "--ignore=tests/cluster", f"--deselect={NODE_SCENARIO}", "tests"]
    return [Stream("node", ["tests/cluster", NODE_SCENARIO]), Stream("rest", rest, nice=19)]


def summary(lines: list[str]) -> list[str]:
    """The end of a pytest output: from its slowest durations or its short test summary,
    else its last lines."""
    for marker in ("slowest", "short test summary info"):
        for i, line in enumerate(lines):
            if line.startswith("=") and marker in line:
                return lines[i:]
    return lines[-5:]


def run(
    options: list[str], python: str = sys.executable, out: Path = OUT, signals: bool = False
) -> int:
    """Both streams at once; the first non-zero exit status of the two. With ``signals``,
    SIGTERM and SIGINT are passed on to both (the command line's run)."""
    out.mkdir(exist_ok=True)
    out_lock = threading.Lock()
    found = streams()

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
            env={**os.environ, "C5C3_TIMINGS_FILE": str(out / f"timings-{stream.name}.json")},
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
    for stream, code in zip(found, codes, strict=True):
        print(f"\n[tiers] {stream.name}: exit {code} after {stream.ended - stream.started:.0f} s")
        for line in summary(stream.lines):
            print(f"[{stream.name}] {line}")
    return next((code for code in codes if code != 0), 0)


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:], signals=True))
