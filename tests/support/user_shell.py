"""A command typed into ``bash`` in the checkout the way a user types it from the docs: the
user's environment with the checkout's virtual environment first on ``PATH`` (as after
``make venv``; make puts it there for its own targets anyway), ``KUBECONFIG`` naming the
cluster, and none of the test run's ``ANSIBLE_CONFIG`` (the checkout's ansible.cfg is
found from the working directory, as for a user)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_as_user(
    command: str, kubeconfig: Path, timeout: float = 300, path: tuple[str, ...] = ()
) -> subprocess.CompletedProcess:
    """``path``: directories the user has put first on ``PATH`` (the Kubernetes binaries'
    for ``kubectl``, as docs/cluster.md's ``export PATH=...`` line does)."""
    env = {
        **os.environ,
        "KUBECONFIG": str(kubeconfig),
        "PATH": ":".join([*path, str(ROOT / ".venv" / "bin"), os.environ["PATH"]]),
    }
    env.pop("ANSIBLE_CONFIG", None)
    return subprocess.run(
        ["bash", "-c", command],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
