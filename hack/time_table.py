#!/usr/bin/env python3
"""Where ``make test``'s time went: one table, printed at its end and kept in ``out/``.

    python3 hack/time_table.py            # the table of the last run's records in out/

It reads what the run left in ``out/``: ``steps.json`` (each step of ``make test`` and its
seconds, hack/prebuild.py), ``prebuild.json`` (each Go program: built cold, reused warm or
waited for; its wall and CPU seconds) and ``timings-<stream>.json`` (each pytest process's
modules with their set-up, test and tear-down seconds, tests/support/timings.py), and
writes ``time-table.txt`` and ``time-table.json`` beside them. A record older than the run
(``began``) is left out: a stream that did not run this time has no line. The budget it is
held to is docs/decisions.md's "make test's budget". Standard library only.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "out"
STREAMS = ("unit", "node", "apis", "rest")
# Every module of these tiers gets its line; of the others, the longest.
EVERY_MODULE_OF = ("cluster", "molecule")
LONGEST_OTHERS = 12
BUDGET_FRESH_MIN, BUDGET_WARM_MIN = 70, 40


def load(path: Path, began: float | None) -> object | None:
    try:
        if began is not None and path.stat().st_mtime < began:
            return None
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def tier_of(module_path: str) -> str:
    parts = Path(module_path).parts
    return parts[1] if len(parts) > 2 and parts[0] == "tests" else parts[0]


def collect(out: Path, began: float | None = None, ended: float | None = None) -> dict:
    steps = load(out / "steps.json", began) or []
    builds = load(out / "prebuild.json", began) or []
    streams = {}
    for name in STREAMS:
        record = load(out / f"timings-{name}.json", began)
        if isinstance(record, dict):
            streams[name] = record
    return {
        "began": began,
        "ended": ended,
        "steps": steps,
        "builds": builds,
        "streams": streams,
        "cpu": load(out / "cpu.json", began),
    }


def minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min"


def outcomes(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "no test"


def cores(data: dict) -> list[str]:
    """The cores between one stream's end and the next: which streams ran, and the share
    of the time the cores were busy, idle and stolen by the hypervisor (cpu.json)."""
    cpu, streams = data.get("cpu"), data.get("streams") or {}
    if not isinstance(cpu, dict) or not cpu.get("samples") or not streams:
        return []
    began, samples = cpu["began"], cpu["samples"]
    ends = sorted((s["ended"] - began, name) for name, s in streams.items())
    lines = [
        f"cores ({cpu['cores']}, /proc/stat every {cpu['every']:.0f} s): busy / idle / stolen,"
        " and the idle core-seconds"
    ]
    start, running = 0.0, [name for name in STREAMS if name in streams]
    for end, name in ends:
        window = [s for s in samples if start < s[0] <= end]
        if window:
            busy, idle, steal = (sum(s[i] for s in window) / len(window) for i in (1, 2, 3))
            idle_core_s = idle * (end - start) * cpu["cores"]
            lines.append(
                f"  {', '.join(running):<18} {start:6.0f}-{end:5.0f} s  {busy:4.0%} / {idle:4.0%}"
                f" / {steal:4.0%}  {idle_core_s:6.0f} core-s idle"
            )
        running.remove(name)
        start = end
    return lines


def render(data: dict) -> str:
    lines = ["== make test: where the time went (hack/time_table.py) =="]
    began, ended = data.get("began"), data.get("ended")
    if began and ended:
        whole = ended - began
        lines.append(
            f"whole run {whole:6.0f} s ({minutes(whole)}); budget {BUDGET_FRESH_MIN} min on a "
            f"fresh machine, {BUDGET_WARM_MIN} warm (docs/decisions.md)"
        )
    if data["steps"]:
        lines.append("steps (make STEP, in turn)")
        for step in data["steps"]:
            failed = "" if step["exit"] == 0 else f"  exit {step['exit']}"
            lines.append(f"  {step['step']:<22} {step['seconds']:7.0f} s{failed}")
    if data["builds"]:
        lines.append("Go programs (hack/prebuild.py, in the background)")
        cold = {"built": "cold", "reused": "warm", "waited": "waited", "failed": "FAILED"}
        for build in data["builds"]:
            how = cold.get(build["outcome"], build["outcome"])
            lines.append(
                f"  {build['name']:<22} {build['seconds']:7.0f} s  {how:<6}"
                f" {build['cpu_seconds']:7.0f} CPU-s"
            )
        cpu = sum(b["cpu_seconds"] for b in data["builds"])
        wall = sum(b["seconds"] for b in data["builds"])
        lines.append(f"  {'all':<22} {wall:7.0f} s {cpu:14.0f} CPU-s")
    lines += cores(data)
    modules = []
    if data["streams"]:
        lines.append("streams (a pytest process each; from the run's start)")
        for name, stream in data["streams"].items():
            mods = stream.get("modules", [])
            counts: dict[str, int] = {}
            for module in mods:
                for key, n in module["outcomes"].items():
                    counts[key] = counts.get(key, 0) + n
            offset = f" +{stream['started'] - began:.0f} s" if began else ""
            took = stream["ended"] - stream["started"]
            lines.append(f"  {name:<6} {took:7.0f} s ({minutes(took)}){offset}: {outcomes(counts)}")
            tiers: dict[str, float] = {}
            for module in mods:
                tiers[tier_of(module["path"])] = (
                    tiers.get(tier_of(module["path"]), 0) + module["total"]
                )
                modules.append((name, module))
            for tier, seconds in tiers.items():
                lines.append(f"    {tier:<20} {seconds:7.0f} s")
    if modules:
        lines.append("modules: total = set-up + tests + tear-down (s)")
        every = [(s, m) for s, m in modules if tier_of(m["path"]) in EVERY_MODULE_OF]
        others = sorted(
            ((s, m) for s, m in modules if tier_of(m["path"]) not in EVERY_MODULE_OF),
            key=lambda sm: -sm[1]["total"],
        )[:LONGEST_OTHERS]
        for title, chosen in (
            ("the node's tiers, in order", every),
            ("the longest others", others),
        ):
            if not chosen:
                continue
            lines.append(f"  {title}")
            for stream, m in chosen:
                lines.append(
                    f"    {stream:<4} {m['path']:<52} {m['total']:6.0f} = {m['setup']:5.0f} +"
                    f" {m['call']:5.0f} + {m['teardown']:4.0f}  ({m['tests']} tests)"
                )
    return "\n".join(lines) + "\n"


def write(out: Path = OUT, began: float | None = None, ended: float | None = None) -> str:
    """The table of the records in ``out`` newer than ``began``; also written to
    ``out/time-table.txt`` and ``out/time-table.json``."""
    data = collect(out, began, ended)
    table = render(data)
    out.mkdir(parents=True, exist_ok=True)
    (out / "time-table.txt").write_text(table)
    (out / "time-table.json").write_text(json.dumps(data, indent=1) + "\n")
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT, help=f"the records' directory ({OUT})")
    args = parser.parse_args(argv)
    sys.stdout.write(render(collect(args.out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
