"""The pass benchmark (``tests/bench/bench_pass.py``), run exactly as docs/reconcile.md says.

It prints its figures and asserts no time; this holds what it prints to what a pass must
do: on the real kube-apiserver's audit log, a no-op pass writes nothing and reads the
Glance once, the first pass writes; the first install converges in at most three passes;
a pass starts no program but ansible-playbook (and the ``ldconfig`` that Python's
``ctypes`` runs when ansible looks up libc and libcrypt); the per-task table has the role's
tasks in their order, apply and report skipped on the no-op pass; a no-op pass does not
import cel-python (its CEL verdicts are kept).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
COMMAND = ".venv/bin/python tests/bench/bench_pass.py"  # docs/reconcile.md
ROLE_TASKS = [
    "Read the Glance and what its pass needs",
    "Plan the pass (configuration, names, every owned object's data)",
    "Render the owned objects from the object roles' templates",
    "Decide the writes, the status, the events and the requeue",
    "Apply the owned objects and the finalizer",
    "Report the status and the events",
]
GLANCE = "get /apis/glance.openstack.c5c3.io/v1alpha1/namespaces/bench/glances/glance"


def section(text: str, heading: str) -> str:
    """The lines of ``text`` from the one starting with ``heading`` to the next ``--``."""
    start = text.index(heading)
    end = text.find("\n--", start + 1)
    return text[start : end if end > 0 else None]


@pytest.mark.integration
def test_the_pass_bench_prints_what_a_pass_does():
    assert COMMAND in (ROOT / "docs" / "reconcile.md").read_text()
    run = subprocess.run(COMMAND, shell=True, cwd=ROOT, capture_output=True, text=True, timeout=900)
    out = run.stdout
    assert run.returncode == 0, out[-3000:] + run.stderr[-3000:]
    for heading, skipped in (("-- the first pass", set()), ("-- the no-op pass", {4, 5})):
        table = section(out, heading)
        rows = re.findall(r"^  glance_pass : (.+?)\s+[\d.]+ +[\d.]+ +[\d.]+  (\w+)$", table, re.M)
        names = [name for name, _ in rows]  # the table cuts long names short
        assert len(names) == len(ROLE_TASKS), table
        assert all(task.startswith(name) for name, task in zip(names, ROLE_TASKS, strict=True))
        assert {i for i, (_, status) in enumerate(rows) if status == "skipped"} == skipped
        assert re.search(r"whole run: [\d.]+ s wall, [\d.]+ CPU-s = [\d.]+x the floor", table)
    noop = section(out, "-- API requests of a no-op pass")
    assert ", 0 writes;" in noop and f"  1  {GLANCE}" in noop
    assert re.search(r"bytes read [1-9][\d.]* KiB", noop)
    first = section(out, "-- API requests of the first pass")
    assert "patch" in first and ", 0 writes;" not in first
    programs = re.search(r"programs a no-op pass starts \(strace -f, execve\): (.*)", out)
    assert programs, "no strace (make e2e-env installs it)"
    started = programs.group(1).split(", ")
    assert started[0] == "ansible-playbook" and set(started[1:]) <= {"ldconfig"}, started
    assert re.search(r"writes \[0\] \(target 0\): met", out)
    converged = re.search(r"the first install converged in (\d) passes", out)
    assert converged and 1 <= int(converged.group(1)) <= 3
    assert re.search(
        r"imports of a no-op pass .*: \d{3,} modules, [\d.]+ s, celpy not imported", out
    )
