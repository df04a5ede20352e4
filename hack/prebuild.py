#!/usr/bin/env python3
"""The Go programs the tests use, built in the background while a command runs.

    python3 hack/prebuild.py -- make lint unit     # what `make test` runs
    python3 hack/prebuild.py --list                # what it builds, in order

Starts one process that builds, one after another and at the lowest CPU priority (nice 19),
every program of hack/go_build.py the tiers ask for: the Kubernetes binaries and etcd, helm,
the kind node's tools, kube-router, Envoy Gateway and external-secrets; each the very build
its make target or test asks for, into the same cache directory. Then it runs the command in
the foreground. Whoever needs a program first takes it from the cache, or waits for its
build under way (``go_build.ensure`` holds a lock per directory) instead of building it a
second time. So the builds use what the command leaves of the machine's cores: the first
tiers run one test at a time. When the command ends, builds still running are stopped (their
half-made directories removed) and the command's exit status is this one's.

What is cached already costs nothing. ``KUBE_ASSETS_DIR`` or ``HELM`` naming other binaries
drop those builds. A build that fails here is only logged: the make target or test that
needs the program builds it again and reports. The log: ``out/prebuild.log`` (``--log``).
Standard library only.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import go_build

ROOT = Path(__file__).resolve().parents[1]
LOG = ROOT / "out" / "prebuild.log"
STOP_GRACE = 30  # seconds a stopped build has to remove its half-made directory


def builds(
    environ: dict[str, str] | None = None,
) -> list[tuple[str, Callable[[], go_build.GoBuild]]]:
    """(name, the build) in the order the tiers need them: the Kubernetes binaries before
    the first test, helm with them, the rest in the cluster tier's modules."""
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
    for tool in kind_node.TOOLS:
        found.append((tool.name, lambda tool=tool: kind_node.tool_build(tool)))
    found.append(("kube-router", netpol_tool.build))
    found.append(("envoy-gateway", gateway_tool.eg_build))
    found.append(("cert-manager", addons_tool.cm_build))
    found.append(("mariadb-operator", addons_tool.mdb_build))
    found.append(("external-secrets", addons_tool.eso_build))
    return found


def say(message: str) -> None:
    print(f"[prebuild] {message}", file=sys.stderr, flush=True)


def build_all() -> int:
    """The builder process: each build in turn; a failure is logged and the next goes on.
    SIGTERM ends it through ``SystemExit``, so the build under way removes its staging."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    os.nice(19)
    for name, make in builds():
        started = time.monotonic()
        try:
            go_build.ensure(make(), lambda m, name=name: say(f"{name}: {m}"))
        except go_build.BuildError as exc:
            say(f"{name}: not built here ({exc}); its make target or test builds it")
        say(f"{name}: {time.monotonic() - started:.0f} s")
    return 0


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


def run(command: list[str], log_path: Path = LOG) -> int:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("w") as log:
        builder = subprocess.Popen(
            [sys.executable, __file__, "--build-all"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    say(f"building the tests' Go programs in the background (pid {builder.pid}, log {log_path})")
    try:
        return subprocess.run(command, check=False).returncode
    finally:
        stop(builder)
        for line in summary(log_path.read_text(errors="replace")):
            say(line)


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
    parser.add_argument("--build-all", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- the command to run")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if args.list:
        for name, make in builds():
            print(f"{name}\t{make().label}")
        return 0
    if args.build_all:
        return build_all()
    if not command:
        parser.error("no command to run (python3 hack/prebuild.py -- make lint unit)")
    return run(command, args.log)


if __name__ == "__main__":
    sys.exit(main())
