"""docs/cluster.md's "A Glance of your own", as a user runs it: ``make cluster-services`` in
a second terminal, then the block's commands as written, each in the first; and, last in
the tier, that every command docs/cluster.md shows was run."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from cluster.conftest import ROOT, START, YOUR_GLANCE, doc_commands, wait_until

pytestmark = pytest.mark.cluster

SAVED = Path("/tmp/readme.back")


class Terminal:
    """A foreground command's output, read as it comes."""

    def __init__(self, process: subprocess.Popen):
        self.process = process
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, text: str, timeout: float) -> str:
        def seen():
            if self.process.poll() is not None and not self._reader.is_alive():
                raise AssertionError(
                    f"exited {self.process.returncode}:\n" + "\n".join(self.lines[-40:])
                )
            return next((line for line in self.lines if text in line), None)

        return wait_until(f"{text!r} in the second terminal", seen, timeout, 0.5)

    def interrupt(self, timeout: float = 120) -> None:
        """Ctrl-C: SIGINT to its process group."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(30)
        self._reader.join(10)


@pytest.fixture(scope="module")
def second_terminal(shell, operator, say):
    started = time.monotonic()
    terminal = Terminal(shell.start("make cluster-services", YOUR_GLANCE))
    try:
        terminal.wait_for("serving MariaDB, Keystone and S3", timeout=600)
        say(f"[cluster] make cluster-services: serving after {time.monotonic() - started:.1f}s")
        yield terminal
    finally:
        terminal.interrupt()
        say("[cluster] make cluster-services: " + " | ".join(terminal.lines[-3:]))
    assert "services stopped" in terminal.lines, "\n".join(terminal.lines[-40:])


def test_a_glance_of_your_own_serves_an_image_and_goes_away(shell, node, second_terminal, say):
    SAVED.unlink(missing_ok=True)
    shell.ok("kubectl apply -f /var/lib/c5c3-node/services/glance.yaml", YOUR_GLANCE)
    started = time.monotonic()
    shell.ok("kubectl -n demo wait glance/glance", YOUR_GLANCE)
    say(f"[cluster] your Glance: Ready {time.monotonic() - started:.1f}s after kubectl apply")
    second_terminal.wait_for("Keystone's image endpoints: http://10.96.", timeout=60)

    created = shell.ok("openstack image create", YOUR_GLANCE)
    assert "| status" in created.stdout and "active" in created.stdout, created.stdout
    shell.ok("openstack image save", YOUR_GLANCE)
    assert SAVED.read_bytes() == (ROOT / "README.md").read_bytes()

    shell.ok("kubectl -n demo delete glance glance", YOUR_GLANCE)
    shell.ok("kubectl delete namespace demo", YOUR_GLANCE)
    gone = node.kubectl("get", "namespace", "demo", check=False)
    assert gone.returncode != 0 and "NotFound" in gone.stderr, gone.stdout + gone.stderr
    SAVED.unlink(missing_ok=True)


def test_every_command_docs_cluster_md_shows_was_run_as_written(shell):
    """``make cluster-down`` runs when the tier ends (the ``node`` fixture)."""
    assert doc_commands(START)[-1] == "make cluster-down"
    assert [c for c in doc_commands(START) if c not in shell.ran] == ["make cluster-down"]
    assert [c for c in doc_commands(YOUR_GLANCE) if c not in shell.ran] == []
    assert [c for c in doc_commands("The operator with Helm") if c not in shell.ran] == []
    assert [c for c in doc_commands("A Gateway in front of Glance") if c not in shell.ran] == []
    assert [c for c in doc_commands("NetworkPolicy on the node") if c not in shell.ran] == []
    assert [c for c in doc_commands("Secrets from OpenBao") if c not in shell.ran] == []
    assert [c for c in doc_commands("The operator with cert-manager") if c not in shell.ran] == []
    assert [c for c in doc_commands("MariaDB from mariadb-operator") if c not in shell.ran] == []
