"""hack/time_table.py: the table make test prints at its end, from the records in out/."""

from __future__ import annotations

import json
import os
import time

from support.hack_scripts import hack_script

time_table = hack_script("time_table")


def module(path, setup, call, teardown, tests=1, **outcomes):
    return {
        "path": path,
        "tests": tests,
        "setup": setup,
        "call": call,
        "teardown": teardown,
        "total": setup + call + teardown,
        "outcomes": outcomes or {"passed": tests},
        "started": 0,
        "ended": 0,
    }


def write(path, data, mtime=None):
    path.write_text(json.dumps(data))
    if mtime is not None:
        os.utime(path, (mtime, mtime))


def test_the_table_has_each_step_build_stream_tier_and_node_module(tmp_path):
    began = time.time() - 100
    write(tmp_path / "steps.json", [{"step": "lint", "seconds": 47.2, "exit": 0}])
    builds = [
        {"name": "kube-assets", "outcome": "built", "seconds": 909, "cpu_seconds": 1500},
        {"name": "helm", "outcome": "reused", "seconds": 0.1, "cpu_seconds": 0.1},
    ]
    write(tmp_path / "prebuild.json", builds)
    node = {
        "started": began + 10,
        "ended": began + 70,
        "modules": [
            module("tests/cluster/test_helm.py", 30, 12, 1, tests=4),
            module("tests/molecule/test_scenarios.py", 2, 10, 0, tests=2, passed=1, skipped=1),
        ],
    }
    rest = {
        "started": began + 10,
        "ended": began + 50,
        "modules": [module(f"tests/render/test_{i}.py", 0, i, 0) for i in range(20)],
    }
    write(tmp_path / "timings-node.json", node)
    write(tmp_path / "timings-rest.json", rest)
    write(tmp_path / "timings-unit.json", {"started": 0, "ended": 1, "modules": []}, began - 50)
    table = time_table.write(tmp_path, began=began, ended=began + 100)
    assert (tmp_path / "time-table.txt").read_text() == table
    lines = table.splitlines()
    assert "whole run    100 s (1.7 min)" in lines[1] and "budget 70 min" in lines[1]
    assert "  lint                        47 s" in lines
    assert "  kube-assets                909 s  cold      1500 CPU-s" in lines
    assert "  helm                         0 s  warm         0 CPU-s" in lines
    assert any(
        line.startswith("  node        60 s (1.0 min) +10 s: 5 passed, 1 skipped") for line in lines
    )
    assert not any(line.startswith("  unit ") for line in lines)  # older than the run
    assert any(
        "tests/cluster/test_helm.py" in line and "43 =    30 +    12 +    1  (4 tests)" in line
        for line in lines
    )
    others = [line for line in lines if "tests/render/test_" in line]
    assert len(others) == time_table.LONGEST_OTHERS and "test_19.py" in others[0]
    assert "    render                   190 s" in lines
    recorded = json.loads((tmp_path / "time-table.json").read_text())
    assert set(recorded["streams"]) == {"node", "rest"}


def test_with_no_records_it_says_only_the_whole_run(tmp_path):
    table = time_table.write(tmp_path / "out", began=10.0, ended=70.0)
    assert table.splitlines()[1].startswith("whole run     60 s (1.0 min)")
    assert len(table.splitlines()) == 2


def test_the_cores_line_says_busy_idle_and_stolen_between_the_streams_ends(tmp_path):
    began = time.time() - 100
    write(tmp_path / "timings-unit.json", {"started": began, "ended": began + 20, "modules": []})
    write(tmp_path / "timings-rest.json", {"started": began, "ended": began + 80, "modules": []})
    samples = [[10, 1.0, 0.0, 0.0], [20, 0.9, 0.1, 0.0]]
    samples += [[t, 0.5, 0.3, 0.2] for t in range(30, 90, 10)]
    write(tmp_path / "cpu.json", {"began": began, "every": 10, "cores": 2, "samples": samples})
    lines = time_table.write(tmp_path, began=began, ended=began + 100).splitlines()
    at = lines.index(
        "cores (2, /proc/stat every 10 s): busy / idle / stolen, and the idle core-seconds"
    )
    # 0-20 s: unit and rest, idle 5 % of 2 cores for 20 s; 20-80 s: rest alone (the samples
    # at 30..80), idle 30 % of 2 cores for 60 s.
    assert (
        lines[at + 1]
        == "  unit, rest              0-   20 s   95% /   5% /   0%       2 core-s idle"
    )
    assert (
        lines[at + 2]
        == "  rest                   20-   80 s   50% /  30% /  20%      36 core-s idle"
    )
