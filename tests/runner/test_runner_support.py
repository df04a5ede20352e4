"""What the runner scenarios share (no tests here): the API servers, ``python -m runner`` as
a child process, waiting, and reading its log and its metrics.

The runner is started exactly as the manager Deployment starts it, with the test's
kubeconfig, namespace and 127.0.0.1 addresses; its log (JSON lines) goes to a file the test
reads. Every process a test starts is stopped in the fixture's teardown: the runner with
SIGKILL if SIGTERM did not end it, and every ansible-playbook it left (found by its private
data dir on the command line, as ansible-runner starts them in sessions of their own).
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from integration.kube_harness import KubeApiServer, assets_dir
from support.api_env import ApiEnv
from support.api_env import api_env as shared_api_env

from ansible_collections.c5c3.glance.plugins.module_utils.admission.collection_files import (
    load_crds,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.content_address import (
    CONFIG_BASE_LABEL,
)

ROOT = Path(__file__).resolve().parents[2]
WATCHES = ROOT / "watches.yaml"
GROUP_VERSION = "glance.openstack.c5c3.io/v1alpha1"
_namespaces = itertools.count(1)

# -- API servers --------------------------------------------------------------------------


REPORTING_PLAYBOOK = """\
- hosts: localhost
  gather_facts: false
  tasks:
    - name: Write down the clusters namespace the pass got
      ansible.builtin.copy:
        content: "{{ clusters_namespace | default('absent') }}"
        dest: "{{ report_dir }}/{{ ansible_operator_meta.name }}"
        mode: "0600"
"""
"""A pass that only writes down what it got, so that what a test sees of a pass is the
runner's doing: which keys it ran, woken by what, with which runner variables."""

REPORTING_WATCH = """\
- version: v1alpha1
  group: glance.openstack.c5c3.io
  kind: {kind}
  playbook: report.yml
  vars:
    report_dir: {report_dir}
"""


def reporting_project(tmp_path: Path, kinds: tuple[str, ...] = ("Glance",)) -> tuple[Path, Path]:
    """A watches file for ``kinds`` whose playbook is :data:`REPORTING_PLAYBOOK`, and the
    directory it writes to (a file per object, named after it)."""
    reports = tmp_path / "reports"
    reports.mkdir()
    project = tmp_path / "project"
    project.mkdir()
    (project / "report.yml").write_text(REPORTING_PLAYBOOK)
    watches = "".join(REPORTING_WATCH.format(kind=k, report_dir=reports) for k in kinds)
    (project / "watches.yaml").write_text(watches)
    return project, reports


def reporting_runner(
    api: ApiEnv,
    tmp_path: Path,
    kinds: tuple[str, ...] = ("Glance",),
    env: dict[str, str] | None = None,
    args: tuple[str, ...] = (),
) -> tuple[RunnerProcess, Path]:
    """A runner (not started) with :func:`reporting_project`'s watches file, and the
    directory its playbook writes to."""
    project, reports = reporting_project(tmp_path, kinds)
    watches = ("--watches-file", str(project / "watches.yaml"), *args)
    return RunnerProcess(api, tmp_path, env=env, args=watches), reports


def passes(runner: RunnerProcess, controller: str = "glance") -> list[tuple[str, tuple[str, ...]]]:
    """Every pass of ``controller`` the runner started: (name, what woke it)."""
    return [
        (line["key"].rpartition("/")[2], tuple(line.get("woken_by") or ()))
        for line in runner.find("pass started", controller=controller)
    ]


def ended(runner: RunnerProcess, controller: str = "glance") -> int:
    """How many passes of ``controller`` have ended (finished or failed)."""
    return len(runner.find("pass finished", controller=controller)) + len(
        runner.find("pass failed", controller=controller)
    )


def start_real_apiserver():
    """A kube-apiserver with both CRDs (skips the test, saying why, without the binaries)."""
    path, reason = assets_dir()
    if path is None:
        pytest.skip(reason)
    server = KubeApiServer(path)
    server.start()
    for crd in load_crds().values():
        server.install_crd(crd)
    return server


@contextlib.contextmanager
def own_real_apiserver() -> Iterator[KubeApiServer]:
    """:func:`start_real_apiserver` for the block, stopped after it (a test module's or a
    session's ``real_apiserver`` fixture)."""
    server = start_real_apiserver()
    try:
        yield server
    finally:
        server.stop()


def api_env(kind: str, request, tmp_path: Path) -> Iterator[ApiEnv]:
    """An ``ApiEnv`` with an empty namespace of its own (``support.api_env.api_env``); the
    double sends watch bookmarks every second."""
    yield from shared_api_env(kind, request, tmp_path, "runner", bookmark_interval=1.0)


# -- waiting ------------------------------------------------------------------------------


def wait_until[T](
    probe: Callable[[], T], timeout: float = 120.0, interval: float = 0.25, what: str = ""
) -> T:
    """Poll ``probe`` until it returns something true; that value. Fails after ``timeout``
    seconds (generous: the assertion is on the outcome, never on the time it took)."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what or probe}: last {last!r}")


def settle_until[T](
    api: ApiEnv,
    probe: Callable[[], T],
    timeout: float = 150.0,
    what: str = "",
    jobs: str = "Complete",
) -> T:
    """Play kubelet and the controllers (``ApiEnv.settle``) until ``probe`` holds."""

    def step() -> T:
        api.settle(jobs=jobs)
        return probe()

    return wait_until(step, timeout, 0.5, what)


def condition(api: ApiEnv, kind: str, name: str, type_: str) -> tuple[str | None, str | None]:
    found = api.condition(kind, name, type_)
    return found.get("status"), found.get("reason")


def config_maps(api: ApiEnv) -> dict[str, dict]:
    """The Glance's content-addressed config ConfigMaps, by name."""
    return {
        c["metadata"]["name"]: c
        for c in api.list("ConfigMap", selector=f"{CONFIG_BASE_LABEL}=glance-config")
    }


def converged(api: ApiEnv) -> bool:
    """The minimal sample's Glance synced and deployed, and its backend Ready."""
    ready = condition(api, "Glance", "glance", "DatabaseReady") == ("True", "DatabaseSynced")
    ready = ready and condition(api, "Glance", "glance", "DeploymentReady")[0] == "True"
    backend = condition(api, "GlanceBackend", "s3-default", "Ready")[0] == "True"
    return ready and backend


def idle(runner: RunnerProcess, kind: str = "glance") -> bool:
    """Every pass of ``kind`` the runner started has ended."""
    ended = runner.find("pass finished", controller=kind) + runner.find(
        "pass failed", controller=kind
    )
    return runner.passes_started(kind) == len(ended)


# -- processes ----------------------------------------------------------------------------


def reported(run) -> dict[str, Any]:
    """The ``msg`` of a test playbook's "Report what the pass saw" task in a ``PassRun``."""
    assert run.status == "successful", run.stdout_tail
    [event] = [
        e
        for e in run.events
        if e.get("event") == "runner_on_ok"
        and e["event_data"].get("task") == "Report what the pass saw"
    ]
    return event["event_data"]["res"]["msg"]


def processes_naming(marker: str) -> list[int]:
    """Every process whose command line contains ``marker``."""
    found = []
    needle = marker.encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def kill_processes_naming(marker: str) -> None:
    """SIGKILL every process naming ``marker``, with its process group, until none is left."""
    for _ in range(50):
        pids = processes_naming(marker)
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.killpg(os.getpgid(pid), signal.SIGKILL)
        time.sleep(0.1)


class RunnerProcess:
    """``python -m runner`` against ``api``, watching its namespace."""

    def __init__(
        self,
        api: ApiEnv,
        tmp_path: Path,
        name: str = "runner",
        *,
        leader_elect: bool = False,
        env: dict[str, str] | None = None,
        args: tuple[str, ...] = (),
    ) -> None:
        self.api = api
        self.name = name
        self.log_path = tmp_path / f"{name}.log"
        self.runner_dir = tmp_path / f"{name}-dir"
        self.environment = {
            key: value
            for key, value in os.environ.items()
            if key not in ("KUBECONFIG", "K8S_AUTH_KUBECONFIG", "ANSIBLE_CONFIG", "WATCH_NAMESPACE")
        }
        self.environment.update(
            {
                "PYTHONPATH": os.pathsep.join([str(ROOT / ".collections"), str(ROOT)]),
                "KUBECONFIG": str(api.kubeconfig),
                "WATCH_NAMESPACE": api.namespace,
                "POD_NAMESPACE": api.namespace,
                "LEADER_ELECT": "true" if leader_elect else "false",
                "METRICS_BIND_ADDRESS": "127.0.0.1:0",
                "HEALTH_PROBE_BIND_ADDRESS": "127.0.0.1:0",
                "WEBHOOK_HOST": "127.0.0.1",
                "WEBHOOK_PORT": "0",
                "WEBHOOK_CERT_DIR": str(tmp_path / f"{name}-no-certs"),
                "LOG_LEVEL": "debug",
                **(env or {}),
            }
        )
        self.args = ("--watches-file", str(WATCHES), "--runner-dir", str(self.runner_dir), *args)
        self.process: subprocess.Popen | None = None

    def start(self) -> RunnerProcess:
        log = self.log_path.open("ab")
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "runner", *self.args],
                cwd=ROOT,
                env=self.environment,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        finally:
            log.close()
        return self

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    # -- the log ------------------------------------------------------------------------------
    def lines(self) -> list[dict[str, Any]]:
        out = []
        if not self.log_path.exists():
            return out
        for raw in self.log_path.read_text(errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                record = json.loads(raw)
                if isinstance(record, dict):
                    out.append(record)
        return out

    def log_tail(self, characters: int = 12000) -> str:
        """The end of the runner's log, for an assertion's message."""
        if not self.log_path.exists():
            return "(no log)"
        return self.log_path.read_text(errors="replace")[-characters:]

    def find(self, msg: str, **fields: Any) -> list[dict[str, Any]]:
        return [
            line
            for line in self.lines()
            if line.get("msg") == msg and all(line.get(k) == v for k, v in fields.items())
        ]

    def wait_for(self, msg: str, timeout: float = 120.0, after: int = 0, **fields: Any) -> dict:
        """The first log line ``msg`` (with ``fields``) beyond the first ``after`` of them."""

        def probe():
            self.assert_running_or_exited_cleanly()
            found = self.find(msg, **fields)
            return found[after] if len(found) > after else None

        return wait_until(probe, timeout, 0.1, f"{self.name} to log {msg!r} {fields}")

    def assert_running_or_exited_cleanly(self) -> None:
        if self.process is not None and self.process.poll() not in (None, 0):
            tail = self.log_path.read_text(errors="replace")[-3000:]
            raise AssertionError(f"{self.name} exited {self.process.returncode}:\n{tail}")

    def passes_started(self, kind: str = "glance") -> int:
        return len(self.find("pass started", controller=kind))

    # -- endpoints ---------------------------------------------------------------------------------
    def url(self, which: str, path: str) -> str:
        message = {"metrics": "serving metrics", "health": "serving health probes"}[which]
        address = self.wait_for(message, timeout=60)["address"]
        return f"http://{address}{path}"

    def http_get(self, which: str, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(self.url(which, path), timeout=10) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def metric_total(self, name: str, **labels: str) -> float:
        """The sum of a metric's samples whose labels include ``labels``."""
        _, text = self.http_get("metrics", "/metrics")
        return metric_sum(text, name, **labels)

    # -- stopping ----------------------------------------------------------------------------------
    def terminate(self, timeout: float = 90.0, thread: int | None = None) -> int:
        """SIGTERM, then the exit code (the runner drains for its grace period first).

        With ``thread`` (a thread id of the runner's, from ``worker_threads``) the signal
        goes to that thread alone, as the kernel may deliver a process-directed one."""
        assert self.process is not None
        if self.process.poll() is None:
            if thread is None:
                self.process.send_signal(signal.SIGTERM)
            else:
                _tgkill(self.process.pid, thread, signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            # Where it hangs: the runner writes every thread's stack to its log on SIGUSR1.
            with contextlib.suppress(OSError):
                self.process.send_signal(signal.SIGUSR1)
            time.sleep(2)
            raise AssertionError(
                f"{self.name} did not stop within {timeout}s of SIGTERM; its log ends:\n"
                f"{self.log_tail()}"
            ) from None

    def worker_threads(self) -> list[int]:
        """The runner's thread ids other than its main thread's (Linux, /proc)."""
        assert self.process is not None
        pid = self.process.pid
        return sorted(
            int(task.name) for task in Path(f"/proc/{pid}/task").iterdir() if int(task.name) != pid
        )

    def kill(self) -> None:
        """SIGKILL the runner and every process of its passes, as a pod kill would."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(30)
        kill_processes_naming(str(self.runner_dir))

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(15)
        self.kill()


def _tgkill(pid: int, tid: int, signum: int) -> None:
    """Send ``signum`` to one thread of another process (glibc's ``tgkill``, Linux)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.tgkill(pid, tid, signum) != 0:
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error))


_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def metric_sum(text: str, name: str, **labels: str) -> float:
    total = 0.0
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if not match or match.group(1) != name:
            continue
        found = dict(_LABEL.findall(match.group(3) or ""))
        if all(found.get(k) == v for k, v in labels.items()):
            total += float(match.group(4))
    return total
