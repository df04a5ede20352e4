"""hack/prebuild.py, which `make test` runs: the builds it starts are the ones the tiers ask
for, the command's exit status is its own, and a build still running when the command ends
is stopped with nothing half-made left in the cache and no process left behind."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.hack_scripts import hack_script

ROOT = Path(__file__).resolve().parents[2]
prebuild = hack_script("prebuild")
addons_tool = hack_script("addons_tool")
gateway_tool = hack_script("gateway_tool")
helm_tool = hack_script("helm_tool")
kube_assets = hack_script("kube_assets")
netpol_tool = hack_script("netpol_tool")
PREBUILD = [sys.executable, str(ROOT / "hack" / "prebuild.py")]


def test_it_builds_what_the_tiers_build_kubernetes_first():
    labels = [make().label for _, make in prebuild.builds({})]
    assert labels[:2] == [kube_assets.kube_build().label, helm_tool.helm_build().label]
    assert netpol_tool.build().label in labels and gateway_tool.eg_build().label in labels
    for build in (addons_tool.eso_build, addons_tool.cm_build, addons_tool.mdb_build):
        assert build().label in labels
    assert len(labels) == len(set(labels)) == 11  # and the kind node's four tools


def test_binaries_named_by_the_environment_are_not_built():
    names = [name for name, _ in prebuild.builds({"KUBE_ASSETS_DIR": "/x", "HELM": "/y"})]
    assert "kube-assets" not in names and "helm" not in names and "kube-router" in names


def run(
    tmp_path: Path, *command: str, log: Path | None = None, **environ: str
) -> subprocess.CompletedProcess:
    """hack/prebuild.py with ``command`` (``--steps ...`` or ``-- command``), its cache and
    its log in ``tmp_path``."""
    env = dict(os.environ, C5C3_CACHE_DIR=str(tmp_path / "cache"), **environ)
    env.pop("KUBE_ASSETS_DIR", None)
    arguments = list(command) if command[:1] == ("--steps",) else ["--", *command]
    return subprocess.run(
        [*PREBUILD, "--log", str(log or tmp_path / "log"), *arguments],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_the_commands_status_is_its_own_and_the_builds_stop_with_it(tmp_path):
    """The command ends while the Kubernetes build has just begun: the builder and its
    ``go build`` are gone when prebuild returns, and no staging directory is left."""
    done = run(tmp_path, "sh", "-c", "sleep 3; exit 3")
    assert done.returncode == 3, done.stderr
    assert "building the tests' Go programs in the background" in done.stderr
    cache = tmp_path / "cache"
    left = [p.name for p in cache.rglob("*") if ".building-" in p.name] if cache.exists() else []
    assert left == []
    mine = subprocess.run(
        ["pgrep", "-f", str(cache)], capture_output=True, text=True, check=False
    ).stdout.split()
    assert mine == []  # neither the builder nor a go build of that cache runs on
    log = (tmp_path / "log").read_text()
    assert "kube-assets: building kubernetes-" in log, log[-2000:]


def test_the_summary_keeps_each_builds_outcome_and_time():
    log = (
        "[prebuild] kube-assets: building kubernetes-v1: k8s.io/...\n"
        "go: downloading k8s.io/api v0.36.3\n"
        "[prebuild] kube-assets: built in 301 s, 562 MiB: /c/kube-assets/x\n"
        "[prebuild] kube-assets: 302 s\n"
        "[prebuild] helm: reusing /c/helm/y\n"
        "[prebuild] helm: 0 s\n"
    )
    assert prebuild.summary(log) == [
        "kube-assets: built in 301 s, 562 MiB: /c/kube-assets/x",
        "kube-assets: 302 s",
        "helm: 0 s",
    ]


def test_without_a_command_it_says_how_to_call_it(tmp_path):
    done = run(tmp_path)
    assert done.returncode == 2 and "no command to run" in done.stderr


FAKE_MAKE = """#!/bin/sh
# Stands in for make: `make --no-print-directory STEP`; the step "bad" fails.
echo "make $2" >> "$STEPS_SEEN"
[ "$2" = bad ] && exit 4
exit 0
"""


def test_steps_run_in_turn_until_one_fails_each_timed_and_the_table_is_written(tmp_path):
    make = tmp_path / "make"
    make.write_text(FAKE_MAKE)
    make.chmod(0o755)
    seen = tmp_path / "seen"
    out = tmp_path / "out"
    done = run(
        tmp_path,
        *("--steps", "venv", "bad", "never"),
        log=out / "prebuild.log",
        MAKE=str(make),
        STEPS_SEEN=str(seen),
    )
    assert done.returncode == 4, done.stderr
    assert seen.read_text().splitlines() == ["make venv", "make bad"]
    steps = json.loads((out / "steps.json").read_text())
    assert [(s["step"], s["exit"]) for s in steps] == [("venv", 0), ("bad", 4)]
    assert "step bad failed (exit 4): the steps after it were not run" in done.stderr
    table = (out / "time-table.txt").read_text()
    assert "== make test: where the time went" in table and table in done.stderr
    assert re.search(r"^  bad +\d+ s  exit 4$", table, re.M), table


def test_stopped_it_ends_every_process_below_it_also_one_that_ignores_sigterm(tmp_path):
    """An orphaned process in a session of its own that ignores SIGTERM (a test's daemon, or
    a pytest with a test's handler left in it) is ended too: SIGKILL after the grace."""
    pidfile = tmp_path / "pid"
    # The subshell starts it and ends at once: an orphan, handed to prebuild (its subreaper).
    script = f"(setsid sh -c 'trap \"\" TERM; echo $$ > {pidfile}; exec sleep 300' &); sleep 300"
    env = dict(os.environ, C5C3_CACHE_DIR=str(tmp_path / "cache"))
    prebuild_run = subprocess.Popen(
        [*PREBUILD, "--log", str(tmp_path / "log"), "--stop-grace", "2", "--", "sh", "-c", script],
        cwd=ROOT,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not (pidfile.exists() and pidfile.read_text().strip()):
        assert time.monotonic() < deadline and prebuild_run.poll() is None
        time.sleep(0.1)
    stray = int(pidfile.read_text())
    prebuild_run.send_signal(signal.SIGTERM)
    _, err = prebuild_run.communicate(timeout=90)
    assert prebuild_run.returncode == 128 + signal.SIGTERM, err
    assert "SIGTERM: stopping every process started below this one" in err
    with pytest.raises(ProcessLookupError):
        os.kill(stray, 0)


def test_when_its_parent_is_killed_it_stops_what_runs_below_it(tmp_path):
    """``make`` killed alone (``kill <pid>``, ``timeout``): prebuild is told with SIGTERM
    and ends its command too."""
    pidfile = tmp_path / "pid"
    parent = subprocess.Popen(
        [
            "sh",
            "-c",
            f"{sys.executable} {ROOT / 'hack' / 'prebuild.py'} --log {tmp_path / 'log'} "
            f"--stop-grace 2 -- sh -c 'echo $$ > {pidfile}; exec sleep 300' & wait",
        ],
        cwd=ROOT,
        env=dict(os.environ, C5C3_CACHE_DIR=str(tmp_path / "cache")),
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while not (pidfile.exists() and pidfile.read_text().strip()):
        assert time.monotonic() < deadline and parent.poll() is None
        time.sleep(0.1)
    command = int(pidfile.read_text())
    parent.kill()  # SIGKILL: the shell standing in for make ends at once
    parent.wait()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            os.kill(command, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    pytest.fail(f"the command (pid {command}) outlived prebuild's parent by 60 s")
