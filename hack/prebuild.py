#!/usr/bin/env python3
"""The Go programs the tests use, built in the background while ``make test`` runs its steps.

    python3 hack/prebuild.py --steps venv lint ... all-tiers   # what `make test` runs
    python3 hack/prebuild.py -- make lint unit     # any one command instead of steps
    python3 hack/prebuild.py --list                # what it builds, in order

Starts one process that builds, one after another, every program of hack/go_build.py the
tiers ask for (the Kubernetes binaries and etcd, helm, CoreDNS, kube-router, Envoy Gateway,
cert-manager, mariadb-operator, external-secrets, the kind node's tools), each the very build
its make target or test asks for, into the same cache directory, in the order the node's
tiers need them. It runs at nice ``BUILD_NICE``: below the tests on the node, which wait
for these programs, above the other tiers (nice 19, hack/tiers.py), which do not. Then it
runs the steps (each ``make STEP``, in turn, until one fails) or the command in the
foreground. Whoever needs a program first takes it from the cache, or waits for its build
under way (``go_build.ensure`` holds a lock per directory) instead of building it a second
time. When the steps end, builds still running are stopped (their half-made directories
removed) and the exit status is the steps'.

At the end it prints where the time went (hack/time_table.py: each step, each Go build cold
or warm, each tier and module) and keeps it in ``out/time-table.txt``. It stops everything
it started when it is stopped itself: it is the subreaper of what runs under it (a process
whose parent ends is handed to it, not to init), so on SIGTERM, SIGINT or SIGHUP every
process below it, also one that started a session of its own or ignores SIGTERM, gets
SIGTERM and, ``STOP_GRACE`` seconds later, SIGKILL.

What is cached already costs nothing. ``KUBE_ASSETS_DIR`` or ``HELM`` naming other binaries
drop those builds. A build that fails here is only logged: the make target or test that
needs the program builds it again and reports. The log: ``out/prebuild.log`` (``--log``),
each build's outcome also in ``out/prebuild.json``. Standard library only.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import go_build
import time_table

ROOT = Path(__file__).resolve().parents[1]
LOG = ROOT / "out" / "prebuild.log"
STOP_GRACE = 30  # seconds a stopped build (or step) has to end before SIGKILL
# Below the node's tiers (nice 0), which wait for these programs; above the other tiers
# (nice 19), which need none of them but the Kubernetes binaries, built first.
BUILD_NICE = 10
PR_SET_CHILD_SUBREAPER = 36
PR_SET_PDEATHSIG = 1


def builds(
    environ: dict[str, str] | None = None,
) -> list[tuple[str, Callable[[], go_build.GoBuild]]]:
    """(name, the build) in the order the tiers need them: the Kubernetes binaries before
    the first test, helm with them (the node's first module installs the chart), then the
    cluster tier's modules in their order (the Gateway module: CoreDNS, kube-router, Envoy
    Gateway; then cert-manager, mariadb-operator, external-secrets), the kind node's tools
    last (tests/molecule's ``kind`` scenario, after the cluster tier)."""
    import addons_tool
    import gateway_tool
    import helm_tool
    import kind_node
    import kube_assets
    import netpol_tool

    env = os.environ if environ is None else environ
    found: list[tuple[str, Callable[[], go_build.GoBuild]]] = []
    if not env.get("KUBE_ASSETS_DIR"):
        found.append(("kube-assets", kube_assets.kube_build))
    if not env.get("HELM"):
        found.append(("helm", helm_tool.helm_build))
    tools = {tool.name: tool for tool in kind_node.TOOLS}
    first = [name for name in ("coredns",) if name in tools]
    for name in first:
        found.append((name, lambda tool=tools[name]: kind_node.tool_build(tool)))
    found.append(("kube-router", netpol_tool.build))
    found.append(("envoy-gateway", gateway_tool.eg_build))
    found.append(("cert-manager", addons_tool.cm_build))
    found.append(("mariadb-operator", addons_tool.mdb_build))
    found.append(("external-secrets", addons_tool.eso_build))
    for name, tool in tools.items():
        if name not in first:
            found.append((name, lambda tool=tool: kind_node.tool_build(tool)))
    return found


def say(message: str) -> None:
    print(f"[prebuild] {message}", file=sys.stderr, flush=True)


def cpu_seconds() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def build_all(record: Path | None = None) -> int:
    """The builder process: each build in turn; a failure is logged and the next goes on.
    Each outcome (built, reused, failed; wall and CPU seconds) is added to ``record`` as it
    comes. SIGTERM ends it through ``SystemExit``, so the build under way removes its
    staging."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    os.nice(BUILD_NICE)
    outcomes: list[dict] = []
    for name, make in builds():
        started, cpu = time.monotonic(), cpu_seconds()
        said: list[str] = []

        def note(message: str, name: str = name, said: list[str] = said) -> None:
            said.append(message)
            say(f"{name}: {message}")

        try:
            go_build.ensure(make(), note)
            outcome = "built" if any(m.startswith("built in ") for m in said) else "reused"
            if outcome == "reused" and any("built meanwhile" in m for m in said):
                outcome = "waited"
        except go_build.BuildError as exc:
            say(f"{name}: not built here ({exc}); its make target or test builds it")
            outcome = "failed"
        seconds = time.monotonic() - started
        say(f"{name}: {seconds:.0f} s")
        outcomes.append(
            {
                "name": name,
                "outcome": outcome,
                "seconds": round(seconds, 1),
                "cpu_seconds": round(cpu_seconds() - cpu, 1),
            }
        )
        if record is not None:
            record.write_text(json.dumps(outcomes, indent=1) + "\n")
    return 0


def descendants(root: int) -> list[int]:
    """Every process below ``root``, from /proc (children before their parents' end)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def end_all_below(grace: float = STOP_GRACE) -> list[int]:
    """SIGTERM to every process below this one, then SIGKILL to those still there after
    ``grace`` seconds; the pids signalled."""
    targets = descendants(os.getpid())
    for pid in targets:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(pid in descendants(os.getpid()) for pid in targets):
        reap()
        time.sleep(0.2)
    for pid in descendants(os.getpid()):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and descendants(os.getpid()):
        reap()
        time.sleep(0.1)
    return targets


def reap() -> None:
    """Collect the exit status of every ended child that nobody waits for (orphans handed to
    this subreaper)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def become_subreaper() -> bool:
    """This process the subreaper of what runs below it, and told with SIGTERM when its
    parent ends (``make`` stopped alone, as ``kill <pid>`` or ``timeout`` stop it): Linux's
    prctl; False where it is not there."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            return False
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        return False
    return True


class Stopped(Exception):
    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def wait_for(process: subprocess.Popen) -> int:
    """``process``'s exit status, reaping orphans handed to this subreaper meanwhile (a
    zombie left unreaped would look alive to a test waiting for its process to end)."""
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            return process.wait()
        if pid == process.pid:
            process.returncode = os.waitstatus_to_exitcode(status)
            return process.returncode


def stop(builder: subprocess.Popen) -> None:
    """SIGTERM to the builder's process group (it and its ``go build``), SIGKILL after
    ``STOP_GRACE`` seconds."""
    if builder.poll() is not None:
        return
    os.killpg(builder.pid, signal.SIGTERM)
    try:
        builder.wait(STOP_GRACE)
    except subprocess.TimeoutExpired:
        os.killpg(builder.pid, signal.SIGKILL)
        builder.wait()


def run_steps(commands: list[tuple[str, list[str]]], out: Path) -> int:
    """Each command in turn until one fails; each step's seconds to ``out/steps.json``."""
    steps: list[dict] = []
    record = out / "steps.json"
    code = 0
    for name, command in commands:
        started = time.monotonic()
        process = subprocess.Popen(command)
        code = wait_for(process)
        steps.append({"step": name, "seconds": round(time.monotonic() - started, 1), "exit": code})
        record.write_text(json.dumps(steps, indent=1) + "\n")
        if code != 0:
            say(f"step {name} failed (exit {code}): the steps after it were not run")
            break
    return code


def run(
    commands: list[tuple[str, list[str]]], log_path: Path = LOG, grace: float = STOP_GRACE
) -> int:
    out = log_path.parent
    out.mkdir(parents=True, exist_ok=True)
    began = time.time()
    builds_record = log_path.with_suffix(".json")
    for stale in (out / "steps.json", builds_record):
        stale.unlink(missing_ok=True)

    def on_signal(signum: int, _frame) -> None:
        raise Stopped(signum)

    previous = {
        s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
    }
    subreaper = become_subreaper()
    with log_path.open("w") as log:
        builder = subprocess.Popen(
            [sys.executable, __file__, "--build-all", "--record", str(builds_record)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    say(f"building the tests' Go programs in the background (pid {builder.pid}, log {log_path})")
    code = 1
    try:
        code = run_steps(commands, out)
    except Stopped as stopped:
        say(f"{stopped}: stopping every process started below this one")
        code = 128 + stopped.signum
        signal.signal(stopped.signum, signal.SIG_IGN)
        ended = end_all_below(grace) if subreaper else []
        say(f"{len(ended)} processes stopped")
    finally:
        stop(builder)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for line in summary(log_path.read_text(errors="replace")):
            say(line)
        table = time_table.write(out, began=began, ended=time.time())
        print(table, file=sys.stderr, flush=True)
    return code


def summary(log: str) -> list[str]:
    """What each build came to, from the builder's log: its seconds, and built, reused or
    waited for."""
    return [
        line.removeprefix("[prebuild] ")
        for line in log.splitlines()
        if line.startswith("[prebuild] ") and (" built in " in line or line.endswith(" s"))
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="print what would be built")
    parser.add_argument("--log", type=Path, default=LOG, help=f"the builds' log ({LOG})")
    parser.add_argument(
        "--steps", nargs="+", metavar="TARGET", help="make targets to run in turn, each timed"
    )
    parser.add_argument("--build-all", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--record", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--stop-grace", type=float, default=STOP_GRACE, help=argparse.SUPPRESS)
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- the command to run")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if args.list:
        for name, make in builds():
            print(f"{name}\t{make().label}")
        return 0
    if args.build_all:
        return build_all(args.record)
    if args.steps:
        make = os.environ.get("MAKE", "make")
        commands = [(step, [make, "--no-print-directory", step]) for step in args.steps]
    elif command:
        commands = [(" ".join(command), command)]
    else:
        parser.error("no command to run (python3 hack/prebuild.py -- make lint unit)")
    return run(commands, args.log, args.stop_grace)


if __name__ == "__main__":
    sys.exit(main())
