"""Every command ``docs/upgrades.md`` tells a user to type, run exactly as written.

The commands are kubectl commands against the namespace ``openstack``; they run with
``bash -c`` and ``KUBECONFIG`` naming the API server of the scenario (the test double, or
the real kube-apiserver when ``KUBE_ASSETS_DIR`` is set), between the reconcile passes of
an upgrade they start, watch, repair and abort.
"""

from __future__ import annotations

import dataclasses
import os
import re
import selectors
import shutil
import subprocess

import pytest
from support.api_env import sample_documents

from ansible_collections.c5c3.glance.plugins.module_utils.admission.collection_files import (
    COLLECTION_ROOT,
)

DOC = COLLECTION_ROOT / "docs" / "upgrades.md"
GATHER_ONLY = ["c5c3.glance.gather"]


def doc_commands() -> list[str]:
    """The lines of the ``sh`` blocks of the page, in order."""
    blocks = re.findall(r"```sh\n(.*?)```", DOC.read_text(), flags=re.S)
    return [line for block in blocks for line in block.splitlines() if line.strip()]


COMMANDS = doc_commands()
PATCH_UP, WATCH, CONDITIONS, EVENTS, DELETE_JOB, PATCH_BACK = range(6)


def test_the_page_shows_the_commands_this_test_runs():
    assert [c.split(" ")[:4] for c in COMMANDS] == [
        ["kubectl", "-n", "openstack", "patch"],
        ["kubectl", "-n", "openstack", "get"],
        ["kubectl", "-n", "openstack", "get"],
        ["kubectl", "-n", "openstack", "get"],
        ["kubectl", "-n", "openstack", "delete"],
        ["kubectl", "-n", "openstack", "patch"],
    ]
    assert COMMANDS[WATCH].endswith(" -w")


def run(api, index: int) -> str:
    result = subprocess.run(
        ["bash", "-c", COMMANDS[index]],
        env=dict(os.environ, KUBECONFIG=str(api.kubeconfig)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, f"{COMMANDS[index]}\n{result.stdout}\n{result.stderr}"
    return result.stdout


def shows(seen: str, want: str) -> bool:
    """Whether a whole line of ``seen`` (one its newline ended) holds ``want``: a pipe may
    hand over half a line, and the rest of it is what the test reads."""
    return any(want in line for line in seen.split("\n")[:-1])


def first_lines(api, index: int, want: str) -> str:
    """Run a command that does not end (``-w``) until a whole line of its output shows
    ``want``."""
    process = subprocess.Popen(
        ["bash", "-c", f"exec {COMMANDS[index]}"],
        env=dict(os.environ, KUBECONFIG=str(api.kubeconfig)),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    seen = ""
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            while not shows(seen, want) and selector.select(timeout=60):
                chunk = os.read(process.stdout.fileno(), 65536)  # unbuffered: select stays true
                if not chunk:
                    break
                seen += chunk.decode("utf-8", errors="replace")
    finally:
        process.terminate()
        process.wait(timeout=30)
        process.stdout.close()
    assert shows(seen, want), f"{COMMANDS[index]}\n{seen}"
    return seen


def converge(api, passes: int = 8) -> None:
    for _ in range(passes):
        if api.glance_pass().step_actions == GATHER_ONLY:
            return
        api.settle()
    raise AssertionError("no steady state")


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="no kubectl on PATH")
def test_the_upgrade_page_commands_start_watch_repair_and_abort_an_upgrade(api):
    api = dataclasses.replace(api, namespace="openstack")  # the namespace the page names
    docs = sample_documents()
    docs[0]["spec"]["openStackRelease"] = "2026.1"
    docs[0]["spec"]["image"]["tag"] = "2026.1"
    api.create_all(docs)
    converge(api)

    run(api, PATCH_UP)
    spec = api.get("Glance", "glance")["spec"]
    assert (spec["openStackRelease"], spec["image"]["tag"]) == ("2026.2", "2026.2")
    api.glance_pass()
    conditions = run(api, CONDITIONS)
    assert (
        "DatabaseReady=False ExpandInProgress: Upgrade detected: 2026.1 → 2026.2 "
        "(phase: Expanding)\n" in conditions
    )
    assert re.search(
        r"Normal +UpgradeInitiated +Upgrade initiated: 2026.1 → 2026.2", run(api, EVENTS)
    )
    watched = first_lines(api, WATCH, "glance")
    if api.double is None:  # the real server prints the CRD's columns, Phase among them
        assert "PHASE" in watched and "Expanding" in watched

    api.glance_pass()  # the db-expand Job
    api.settle(jobs="Failed")
    api.glance_pass()
    assert "DatabaseReady=False ExpandFailed: " in run(api, CONDITIONS)
    assert re.search(r"Warning +ExpandFailed +Expand job glance-db-expand failed", run(api, EVENTS))
    run(api, DELETE_JOB)
    api.glance_pass()  # created again
    job = api.get("Job", "glance-db-expand")
    assert job is not None and not (job.get("status") or {}).get("conditions")

    run(api, PATCH_BACK)
    api.glance_pass()
    assert re.search(r"Normal +UpgradeAborted +Upgrade 2026.1 → 2026.2 aborted", run(api, EVENTS))
    status = api.get("Glance", "glance")["status"]
    assert status.get("upgradePhase") is None and status.get("targetRelease") is None
    converge(api)
    assert "DatabaseReady=True DatabaseSynced: " in run(api, CONDITIONS)
