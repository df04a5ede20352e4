"""The pass benchmark (``tests/bench/bench_pass.py``), run as the docs say, once.

It prints its figures and asserts no time; this holds what it counts to what a pass must
do: on the real kube-apiserver's audit log, a no-op pass writes nothing and reads the
Glance, the first pass writes; the pass starts no program but ansible-playbook (and the
``ldconfig`` Python's ``ctypes`` runs: ansible looks up libc and libcrypt); the per-task
profile has the role's tasks in their order, a worker each; the relay counted bytes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ROLE_TASKS = [
    "Read the Glance and what its pass needs",
    "Plan the pass (configuration, names, every owned object's data)",
    "Render the owned objects from the object roles' templates",
    "Decide the writes, the status, the events and the requeue",
    "Apply the owned objects and the finalizer",
    "Report the status and the events",
]


@pytest.mark.integration
def test_the_pass_bench_counts_what_a_pass_does(tmp_path):
    figures = tmp_path / "figures.json"
    run = subprocess.run(
        [sys.executable, "tests/bench/bench_pass.py", "--runs", "1", "--json", str(figures)],
        cwd=ROOT,
        env={**os.environ},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "targets (the floor:" in run.stdout
    data = json.loads(figures.read_text())
    (noop,) = data["noop"]
    first = data["first"]
    glance = "get /apis/glance.openstack.c5c3.io/v1alpha1/namespaces/bench/glances/glance"
    assert noop["api"]["writes"] == 0 and noop["api"]["by_path"][glance] == 1
    assert noop["api"]["requests"] >= 10 and noop["bytes_read"] > 0
    assert first["api"]["writes"] > 0
    assert data["converged_in"] >= 1
    assert data["programs"] is not None, "strace is not installed (make e2e-env installs it)"
    assert data["programs"][0] == "ansible-playbook"
    assert set(data["programs"][1:]) <= {"ldconfig"}, data["programs"]
    for result in (first, noop):
        tasks = result["profile"]["tasks"]
        names = [t["name"] for t in tasks if t["role"] == "glance_pass"]
        assert names == ROLE_TASKS
        assert all(t["wall"] > 0 and t["main_cpu"] >= 0 for t in tasks)
    statuses = {t["name"]: t["status"] for t in noop["profile"]["tasks"]}
    assert statuses[ROLE_TASKS[4]] == statuses[ROLE_TASKS[5]] == "skipped"
    assert data["imports"]["modules"] > 500
