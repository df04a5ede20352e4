# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""Callback plugin of ``tests/bench/bench_pass.py``: where one ``ansible-playbook`` run's time
goes, task by task, written as JSON to ``$C5C3_PASS_PROFILE`` when the run ends.

Per task: its name, action and role, the status of its result, its wall seconds (from its
start to the next task's start, or to the end), the CPU seconds the playbook's own process
spent in that span (queueing the task, forking its worker, reading the result, the
callbacks) and the CPU seconds of the task's worker (each task runs in a process forked
from the playbook's, one per task and host: the one child that appears between the task's
start and its result, read from ``/proc/<pid>/task/*/children`` and ``/proc/<child>/stat``
while the worker is alive or not yet reaped). ``$C5C3_PASS_STARTED`` (``time.time()`` when
the bench started the process) dates the start, so the span before the first task (the
imports, the configuration, the inventory, the playbook's parse) is there too.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: pass_profile
type: aggregate
short_description: the bench's per-task profile of a pass (tests/bench/bench_pass.py)
description: Writes each task's wall and CPU seconds, and its worker's, to $C5C3_PASS_PROFILE.
requirements: [Linux /proc]
"""

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _children() -> dict[int, float]:
    """The CPU seconds (user + system) of each child of this process that is still there."""
    out: dict[int, float] = {}
    for children in Path(f"/proc/{os.getpid()}/task").glob("*/children"):
        try:
            pids = children.read_text().split()
        except OSError:
            continue
        for pid in pids:
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2 :].split()
            out[int(pid)] = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    return out


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "pass_profile"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._started = float(os.environ.get("C5C3_PASS_STARTED") or time.time())
        self._tasks: list[dict] = []
        self._seen: dict[int, float] = {}
        self._workers: dict[int, int] = {}  # child pid -> task index

    def _mark(self) -> tuple[float, float]:
        return time.time() - self._started, time.process_time()

    def _scan(self, task: int | None) -> None:
        for pid, cpu in _children().items():
            if pid not in self._workers and task is not None:
                self._workers[pid] = task
            self._seen[pid] = cpu

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._scan(None)
        at, cpu = self._mark()
        role = task._role.get_name(include_role_fqcn=False) if task._role else None
        self._tasks.append(
            {"name": task.name, "action": task.action, "role": role, "at": at, "cpu": cpu}
        )

    def _result(self, status: str) -> None:
        if self._tasks:
            self._scan(len(self._tasks) - 1)
            self._tasks[-1]["status"] = status

    def v2_runner_on_ok(self, result):
        self._result("ok")

    def v2_runner_on_skipped(self, result):
        self._result("skipped")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._result("failed")

    def v2_runner_on_unreachable(self, result):
        self._result("unreachable")

    def v2_playbook_on_stats(self, stats):
        self._scan(None)
        at, cpu = self._mark()
        ends = [t["at"] for t in self._tasks[1:]] + [at]
        cpus = [t["cpu"] for t in self._tasks[1:]] + [cpu]
        workers: dict[int, float] = {}
        for pid, index in self._workers.items():
            workers[index] = workers.get(index, 0.0) + self._seen.get(pid, 0.0)
        tasks = [
            {
                "name": t["name"],
                "action": t["action"],
                "role": t["role"],
                "status": t.get("status", "none"),
                "wall": end - t["at"],
                "main_cpu": cpu_end - t["cpu"],
                "worker_cpu": workers.get(index, 0.0),
            }
            for index, (t, end, cpu_end) in enumerate(zip(self._tasks, ends, cpus, strict=True))
        ]
        first = self._tasks[0] if self._tasks else {"at": at, "cpu": cpu}
        profile = {
            "before_first_task": {"wall": first["at"], "main_cpu": first["cpu"]},
            "tasks": tasks,
            "stats_at": at,
        }
        target = os.environ.get("C5C3_PASS_PROFILE")
        if target:
            Path(target).write_text(json.dumps(profile))
