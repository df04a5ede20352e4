"""Run one of the collection's playbooks through ansible-runner, as the in-cluster runner does,
and read back what a caller of a pass needs: the outcome, the requeue request, the failed
tasks, and which of the collection's steps (gather, apply, report) ran."""

from __future__ import annotations

import os
import shlex
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ansible_runner

from ansible_collections.c5c3.glance.plugins.module_utils.admission.collection_files import (
    COLLECTION_ROOT,
)

# Ansible's own task actions a pass uses; every other action that runs is a step of the
# collection (gather, apply, report: action plugins, in the playbook's process).
BUILTIN_ACTIONS = frozenset(
    {
        "ansible.builtin.set_fact",
        "ansible.builtin.assert",
        "ansible.builtin.fail",
        "ansible.builtin.debug",
        "ansible.builtin.set_stats",
        "ansible.builtin.include_role",
        "ansible.builtin.include_tasks",
        "ansible.builtin.meta",
        "set_fact",
        "assert",
        "fail",
        "debug",
        "set_stats",
        "include_role",
        "include_tasks",
        "meta",
    }
)


@dataclass
class PlaybookRun:
    rc: int
    status: str
    stats: dict[str, Any]
    events: list[dict[str, Any]] = field(default_factory=list)
    stdout: str = ""

    @property
    def ok(self) -> bool:
        return self.rc == 0 and self.status == "successful"

    @property
    def requeue_after(self) -> int | None:
        value = (self.stats.get("artifact_data") or {}).get("requeue_after")
        return None if value is None else int(value)

    def _task_events(self, *names: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("event") in names]

    @property
    def step_actions(self) -> list[str]:
        """The actions of the collection's steps that ran (gather, apply, report: the tasks
        that talk to the cluster; each an action plugin in the playbook's process), in
        order. A pass over an unchanged cluster runs ``[c5c3.glance.gather]``."""
        return [
            e["event_data"]["task_action"]
            for e in self._task_events("runner_on_ok", "runner_on_failed")
            if e["event_data"].get("task_action") not in BUILTIN_ACTIONS
        ]

    @property
    def failures(self) -> list[str]:
        return [
            f"{e['event_data'].get('task')}: {e['event_data'].get('res', {}).get('msg')}"
            for e in self._task_events("runner_on_failed")
            if not e["event_data"].get("ignore_errors")
        ]

    def result_of(self, action: str) -> dict[str, Any] | None:
        """The result of the last task of ``action`` that ran (None when none ran)."""
        found = None
        for event in self._task_events("runner_on_ok", "runner_on_failed"):
            if event["event_data"].get("task_action") == action:
                found = event["event_data"].get("res")
        return found


def run_playbook(
    playbook: str,
    extravars: dict[str, Any],
    kubeconfig: Path | None = None,
    env: dict[str, str] | None = None,
    binary: str | None = None,
) -> PlaybookRun:
    """Run ``playbooks/<playbook>`` of the collection with ``extravars``; wait for it.

    ``binary``: the warm server's client (``runner.passes.warm.handle.WarmServer.binary()``)
    to run it with, as the runner does; None: a cold ``ansible-playbook``."""
    root = Path(COLLECTION_ROOT)
    envvars = {
        "ANSIBLE_CONFIG": str(root / "ansible.cfg"),
        "ANSIBLE_NOCOLOR": "1",
        # ansible-runner starts ansible-playbook from PATH: the one next to this Python.
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
        **(env or {}),
    }
    if kubeconfig is not None:
        envvars["KUBECONFIG"] = str(kubeconfig)
        envvars["K8S_AUTH_KUBECONFIG"] = str(kubeconfig)
    path = playbook if os.path.isabs(playbook) else str(root / "playbooks" / playbook)
    warm = {"binary": binary, "cmdline": shlex.quote(path)} if binary else {}
    with tempfile.TemporaryDirectory(prefix="c5c3-run-") as private:
        runner = ansible_runner.run(
            private_data_dir=private,
            project_dir=str(root),
            playbook=path,
            **warm,
            extravars=extravars,
            envvars=envvars,
            quiet=True,
            json_mode=False,
            rotate_artifacts=1,
            # Without a cancel callback ansible-runner installs SIGTERM and SIGINT handlers
            # of its own in the calling (main) thread and leaves them there: pytest would
            # then ignore the signals make test stops it with (tests/support/timings.py).
            cancel_callback=lambda: False,
        )
        events = list(runner.events)
        stdout = runner.stdout.read() if runner.stdout else ""
        stats_event = next(
            (e for e in reversed(events) if e.get("event") == "playbook_on_stats"), None
        )
        stats = dict((stats_event or {}).get("event_data") or {})
        return PlaybookRun(
            rc=runner.rc, status=runner.status, stats=stats, events=events, stdout=stdout
        )


__all__ = ["PlaybookRun", "run_playbook"]
