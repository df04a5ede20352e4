"""The order ``make unit`` runs the tiers in (tests/support/tiers.py, the Makefile's
``unit-tier`` and ``other-tiers``): tests/unit alone first, the one-node cluster's tiers last."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time

from support.hack_scripts import hack_script
from support.tiers import TESTS, TIER_ORDER, tier_rank

ROOT = TESTS.parent


def test_every_directory_with_tests_has_its_place():
    with_tests = {path.parent.relative_to(TESTS).parts[0] for path in TESTS.rglob("test_*.py")}
    assert with_tests == set(TIER_ORDER)


def test_the_clusters_tiers_come_last_and_molecule_after_the_cluster_tier():
    assert TIER_ORDER[0] == "unit"
    assert TIER_ORDER[-2:] == ("cluster", "molecule")
    last_before_the_node = max(TIER_ORDER.index(t) for t in ("runner", "install", "e2e"))
    assert last_before_the_node < TIER_ORDER.index("cluster")


def test_a_path_takes_its_tiers_place_and_anything_else_goes_last():
    assert tier_rank(TESTS / "unit" / "test_x.py") == 0
    assert tier_rank(TESTS / "cluster" / "sub" / "test_y.py") == TIER_ORDER.index("cluster")
    assert tier_rank(TESTS / "conftest.py") == len(TIER_ORDER)
    assert tier_rank(ROOT / "plugins" / "x.py") == len(TIER_ORDER)


def make_would_run(target: str) -> str:
    """What ``make -n <target>`` prints: the commands, not run."""
    return subprocess.run(
        ["make", "-n", "--no-print-directory", target],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def test_make_unit_runs_the_unit_tier_before_the_others_and_not_twice():
    printed = make_would_run("unit")
    runs = [line for line in printed.splitlines() if "-m pytest" in line or "tiers.py" in line]
    assert len(runs) == 2, printed
    first, second = runs
    assert first.endswith(" -m pytest -q --durations=10 tests/unit")
    assert "KUBE_ASSETS_DIR" not in first
    assert "hack/tiers.py" in second and "KUBE_ASSETS_DIR" in second
    assert all("C5C3_STRICT_SKIPS=1" in run for run in runs)


# --- hack/tiers.py: the node's tiers and the rest at once ---------------------------------------

tiers = hack_script("tiers")


NODE_SCENARIO = "tests/molecule/test_scenarios.py::test_molecule_scenario[node]"


def test_the_node_stream_has_what_runs_on_the_node_and_the_others_the_rest_at_nice_19():
    node, apis, rest = tiers.streams()
    assert (node.name, node.args, node.nice) == ("node", ["tests/cluster", NODE_SCENARIO], 0)
    assert (apis.name, apis.nice) == ("apis", 19)
    assert apis.args == ["tests/reconcile", "tests/integration", "tests/runner"]
    assert (rest.name, rest.nice) == ("rest", 19) and rest.args[-1] == "tests"
    ignored = {arg.removeprefix("--ignore=") for arg in rest.args if arg.startswith("--ignore=")}
    assert ignored == {"tests/unit", "tests/cluster", *apis.args}
    assert f"--deselect={NODE_SCENARIO}" in rest.args
    # Every tier in exactly one stream (tests/unit in make test's fourth).
    every = {f"tests/{tier}" for tier in TIER_ORDER}
    placed = {"tests/unit", "tests/cluster", *apis.args}
    assert placed <= every and "tests/molecule" in every - placed


def test_the_streams_split_the_molecule_scenarios_between_them():
    """Each scenario in exactly one stream: ``node`` on the node, the others beside it."""

    def collected(args):
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "--collect-only", "-q", *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        return {line for line in done.stdout.splitlines() if "test_molecule_scenario[" in line}

    node, _apis, rest = tiers.streams()
    on_node = collected(node.args[1:])
    beside = collected([*rest.args[:-1], "tests/molecule"])
    assert on_node == {NODE_SCENARIO}
    assert NODE_SCENARIO not in beside and any("[kind]" in line for line in beside)
    assert any("[offline]" in line for line in beside)


FAKE_PYTEST = """#!/bin/sh
# Stands in for `python -m pytest ...`: says its niceness and arguments, then ends like
# pytest, failing (exit 1) when it was given the cluster tier.
echo "nice $(nice)"
echo "args $*"
echo "============ short test summary info ============"
case "$*" in *" tests/cluster tests/molecule/"*) echo "FAILED tests/cluster/test_x.py::test_y"; exit 1;; esac
sleep 2
echo "1 passed"
"""


def test_both_streams_run_at_once_each_logged_and_the_failure_is_the_exit_status(tmp_path, capsys):
    python = tmp_path / "python"
    python.write_text(FAKE_PYTEST)
    python.chmod(0o755)
    code = tiers.run(["-q", "-m", "not chaos"], python=str(python), out=tmp_path / "out")
    assert code == 1
    node = (tmp_path / "out" / "tiers-node.log").read_text()
    rest = (tmp_path / "out" / "tiers-rest.log").read_text()
    assert "nice 0" in node and "nice 19" in rest
    assert "args -m pytest -o cache_dir=.pytest_cache/node" in node
    assert f"--junitxml={tmp_path / 'out' / 'tiers-rest.xml'}" in rest
    assert f"-q -m not chaos tests/cluster {NODE_SCENARIO}" in node
    printed = capsys.readouterr().out
    assert "[node] FAILED tests/cluster/test_x.py::test_y" in printed
    # Each stream's own time: the node's fails at once, the rest's takes its 2 s more.
    took = dict(re.findall(r"\[tiers\] (\w+): exit (\d) after", printed))
    assert took == {"node": "1", "apis": "0", "rest": "0"}, printed
    seconds = {k: int(v) for k, v in re.findall(r"\[tiers\] (\w+): exit \d after (\d+) s", printed)}
    assert seconds["rest"] >= 2 and seconds["node"] < seconds["rest"], printed
    assert printed.count("[rest] 1 passed") == 2  # as it came, and in the summary at the end


FAKE_PYTEST_ENV = """#!/bin/sh
# Stands in for `python -m pytest ...`: says whether it sees the Kubernetes binaries.
echo "args $*"
echo "assets ${KUBE_ASSETS_DIR:-none} helm ${HELM:-none}"
echo "1 passed"
"""


def test_make_test_runs_the_unit_tier_as_a_third_stream_without_the_cluster_variables(
    tmp_path, monkeypatch
):
    unit, node, apis, rest = tiers.streams(with_unit=True)
    assert (unit.name, unit.args, unit.nice) == ("unit", ["tests/unit"], 0)
    assert [s.name for s in (node, apis, rest)] == ["node", "apis", "rest"]
    python = tmp_path / "python"
    python.write_text(FAKE_PYTEST_ENV)
    python.chmod(0o755)
    monkeypatch.setenv("KUBE_ASSETS_DIR", "/opt/kube")
    monkeypatch.setenv("HELM", "/opt/helm")
    assert tiers.run(["-q"], python=str(python), out=tmp_path / "out", with_unit=True) == 0
    logs = {name: (tmp_path / "out" / f"tiers-{name}.log").read_text() for name in ("unit", "node")}
    assert "assets none helm none" in logs["unit"] and "-q tests/unit" in logs["unit"]
    assert "assets /opt/kube helm /opt/helm" in logs["node"]
    printed = make_would_run("all-tiers")
    assert (
        'hack/tiers.py --with-unit -q --durations=30 -m "not chaos and not figures and not molecule_target"'
        in printed
    )


def test_the_cores_are_sampled_busy_idle_and_stolen_until_the_streams_end(tmp_path):
    stat = tmp_path / "stat"
    # user nice system idle iowait irq softirq steal ...
    stat.write_text("cpu  100 0 100 700 100 0 0 0 0 0\ncpu0 1 2 3\n")
    assert tiers.cpu_times(stat) == (200, 800, 0)
    # Then 60 jiffies busy, 30 idle and 10 stolen; then nothing more (no sample: no time).
    readings = iter([(200, 800, 0), (260, 830, 10)])
    out, done = tmp_path / "cpu.json", threading.Event()
    sampler = threading.Thread(
        target=tiers.sample_cpu, args=(out, done, 0.01, lambda: next(readings, (260, 830, 10)))
    )
    sampler.start()
    try:
        deadline = time.monotonic() + 30
        while not out.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.05)  # a few more rounds, which add no sample
    finally:
        done.set()
        sampler.join()
    record = json.loads(out.read_text())
    assert record["every"] == 0.01 and record["cores"] == os.cpu_count()
    assert [sample[1:] for sample in record["samples"]] == [[0.6, 0.3, 0.1]]
    assert record["began"] <= time.time()


def test_without_proc_stat_nothing_is_sampled(tmp_path):
    assert tiers.cpu_times(tmp_path / "none") is None
    done = threading.Event()
    tiers.sample_cpu(tmp_path / "cpu.json", done, 0.01, lambda: None)
    assert not (tmp_path / "cpu.json").exists()
