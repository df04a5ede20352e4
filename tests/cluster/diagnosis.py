"""``make diagnose`` on the node, as docs/operations.md shows it, for the tests that make a
fault and want to read what it says: the report, printed for the log, and waits for the
cause named first or for a healthy Glance."""

from __future__ import annotations

import json
from typing import Any

from support.user_shell import run_as_user

from cluster.conftest import wait_until

SHOWS = 180.0
"""Seconds the cluster gets to show a fault (or its end) to diagnose."""


def diagnose(node, glance: str) -> dict[str, Any]:
    """``make diagnose GLANCE=<glance> FORMAT=json`` (``glance``: ``<namespace>/<name>``), in
    the checkout, with the node's KUBECONFIG, as a user types it; the report."""
    done = run_as_user(f"make diagnose GLANCE={glance} FORMAT=json", node.kubeconfig)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def shown(report: dict[str, Any]) -> str:
    """The report as diagnose prints it for people."""
    from ansible_collections.c5c3.glance.plugins.module_utils.diagnose.findings import text_lines

    return "\n".join(text_lines(report)) if report else "(no report)"


def named_first(node, glance: str, cause: str, say, shows: float = SHOWS) -> dict[str, Any]:
    """The first report whose first cause is ``cause`` (the cluster may take a pass, or the
    kubelet a pull, to show it); printed."""
    last: dict[str, Any] = {}

    def names_it() -> dict[str, Any] | None:
        nonlocal last
        last = diagnose(node, glance)
        return last if last["first_cause"] == cause else None

    try:
        report = wait_until(f"diagnose names {cause} first", names_it, shows, interval=3)
    finally:
        say(f"[diagnose] {glance}, {cause}:\n{shown(last)}")
    return report


def healthy_again(node, glance: str, say, shows: float = SHOWS) -> dict[str, Any]:
    """Wait until diagnose says the Glance is healthy, with no finding at all; the report."""
    last: dict[str, Any] = {}

    def healthy() -> dict[str, Any] | None:
        nonlocal last
        last = diagnose(node, glance)
        return last if last["state"] == "healthy" and not last["findings"] else None

    try:
        return wait_until(f"diagnose says {glance} is healthy", healthy, shows, interval=3)
    except AssertionError:
        say(f"[diagnose] {glance} not healthy again:\n{shown(last)}")
        raise
