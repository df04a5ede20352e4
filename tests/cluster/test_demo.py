"""README's first command, ``make demo``, typed as written in the checkout, then what it
tells the user to try, ``make demo-down`` last: the tier's last module (it takes the node
down; tests/cluster/conftest.py orders it).

The tier's node goes first (``make demo-down`` with no demo up), so ``make demo`` starts
from no cluster, as on a fresh clone; the caches (the images in Docker, the Go programs,
the Python environments) are the run's, warm by now.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from support.readme import readme_make

from cluster.conftest import ROOT, node_cluster

pytestmark = pytest.mark.cluster

STATE = Path("/var/lib/c5c3-demo")
NODE_STATE = Path("/var/lib/c5c3-node")


def as_user(shell, command: str, timeout: float = 1800) -> subprocess.CompletedProcess:
    """``command`` in bash in the checkout with a user's environment: none of the test run's
    pytest, make, Ansible or suite variables, no KUBECONFIG; KUBE_ASSETS_DIR as the run
    has it (the binaries of ``make kube-assets``; docs/cluster.md's rule)."""
    env = {
        key: value
        for key, value in shell.env.items()
        if not key.startswith(("ANSIBLE_", "C5C3_")) and key != "PYTHONPATH"
    }
    return subprocess.run(
        ["bash", "-c", command],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_make_demo_brings_the_operator_up_live_and_make_demo_down_removes_it(
    shell, node, images, say
):
    down = as_user(shell, readme_make("demo-down"))
    assert down.returncode == 0, down.stdout + down.stderr
    assert not NODE_STATE.exists() and not STATE.exists()

    started = time.monotonic()
    demo = as_user(shell, readme_make("demo"))
    took = time.monotonic() - started
    assert demo.returncode == 0, demo.stdout[-6000:] + demo.stderr[-6000:]
    out = demo.stdout
    say(f"[cluster] make demo from no cluster: {took:.1f}s")
    for line in out.splitlines():
        if line.startswith("["):
            say(f"[cluster]   {line}")
    # One line per step, with its seconds; the cluster made, not kept.
    for step in (
        "the one-node cluster is up (make cluster-up)",
        "the images loaded into the node (make cluster-load-images)",
        "the operator installed and rolled out (kubectl apply -k config/selfsigned)",
        "MariaDB, Keystone and S3 serve on 10.250.0.1",
        "Glance demo/glance Ready, with its two GlanceBackends",
        "uploaded and downloaded through Keystone's catalog, the same bytes",
        "make diagnose GLANCE=demo/glance",
    ):
        assert any(line.startswith("[") and " s] " in line and step in line
                   for line in out.splitlines()), f"no step line {step!r}:\n{out}"  # fmt: skip
    table = out.split("$ kubectl -n demo get glance,glancebackends\n", 1)[1]
    header, glance = table.splitlines()[:2]
    assert header.split()[:5] == ["NAME", "READY", "RELEASE", "PHASE", "ENDPOINT"], table
    assert glance.split()[:3] == ["glance.glance.openstack.c5c3.io/glance", "True", "2026.2"]
    assert "\n$ make diagnose GLANCE=demo/glance\nGlance demo/glance is healthy\n" in out
    pid = int((STATE / "services.pid").read_text())
    assert node_cluster.alive(pid), "the services stopped with make demo"

    # What it says to try, typed as it says, one line after another in one shell.
    tried = out.split("It stays up; try:\n", 1)[1].splitlines()
    commands = [line.strip() for line in tried if line.startswith("  ")]
    assert commands[-1] == "make demo-down" and len(commands) == 5, commands
    done = as_user(shell, "set -e\n" + "\n".join(commands), timeout=600)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-6000:]
    assert "demo-image" in done.stdout and "active" in done.stdout, done.stdout
    assert "Glance demo/glance is healthy" in done.stdout, done.stdout
    assert "make demo-down: done" in done.stdout, done.stdout
    assert not node_cluster.alive(pid), "make demo-down left the services running"
    assert not STATE.exists(), "make demo-down left /var/lib/c5c3-demo"
    assert not NODE_STATE.exists(), "make demo-down left the node's state"
