"""One pass: the watch's playbook for one object, through ansible-runner.

As ansible-operator runs it (``docs/research/ansible-operator-conventions.md`` §1.3):

* one private data dir per object, ``<runner dir>/<group>/<version>/<kind>/<namespace>/<name>``,
  reused by every pass over it (one pass per object at a time, so no two runs share it);
  each run is an artifacts dir of its own, rotated to the watch's ``maxRunnerArtifacts``
  (or the object's ``ansible.sdk.operatorframework.io/max-runner-artifacts``);
* every pass starts from inputs written for it, as ansible-operator writes its input dir
  afresh for each run: everything in the private data dir but ``artifacts/`` is removed
  first (``clear_inputs``), then ansible-runner writes this pass's ``env/envvars``,
  ``env/extravars``, ``env/settings`` and ``inventory/hosts.json``. ansible-runner 2.4.3
  writes an ``env/`` file only when it is absent, and reads whatever it finds there (and
  lets ``env/envvars`` beat the ``envvars`` it is given), so a dir left by an earlier
  process (a restart with another ``KUBECONFIG``, or an explicit ``--runner-dir``) would
  otherwise decide the pass;
* the extra vars of ``runner.passes.extravars.extra_vars`` (with the runner's own,
  ``runner_vars``: ``clusters_namespace``), an inventory of ``localhost`` with a
  local connection and this Python, ``-v`` from ``runner.kube.watches.ansible_verbosity``;
* the environment: the runner's own, plus ``KUBECONFIG``/``K8S_AUTH_KUBECONFIG`` naming the
  runner's kubeconfig when it has one (in the pod there is none: the modules use the
  service account), ``ANSIBLE_CONFIG`` pointing at the collection's ``ansible.cfg`` when
  the watches file sits in a checkout (and the variable is not set already), and ``PATH``
  starting with this Python's directory, where ``ansible-playbook`` is installed;
* the events are read in memory as they come (``event_handler``) and handed to
  ``runner.passes.extravars.run_outcome``; only failures and the recap are written to the run's
  artifacts (``KEPT_EVENTS``), next to its ``stdout``, ``rc`` and ``status``.

With a warm server (``runner/passes/warm/``, on unless ``WARM_PASSES=false``), ansible-runner's
``binary`` is the server's client and the playbook its ``cmdline``: the pass runs in a
process forked from a pre-imported interpreter; everything above, the events and the
artifacts are the same (``docs/runner.md``, "Warm passes"). When the server is not up,
the pass runs the cold ``ansible-playbook``.

ansible-runner starts ``ansible-playbook`` under a pseudo-terminal, in a session (and
process group) of its own. **Cancelling** a run (shutdown after the grace period, or a
lost Lease) sends that process group SIGTERM, so Ansible can stop its workers and remove
its temporary files, waits up to ``kill_grace`` seconds, then lets ansible-runner SIGKILL
what is left and reap it. The run's outcome is then "cancelled": the object was not
reconciled, and the next leader's first list brings it back.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import sys
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ansible_runner

from runner.kube.watches import Watch, ansible_verbosity, max_runner_artifacts
from runner.kube.workqueue import ObjectKey
from runner.passes.extravars import RunOutcome, extra_vars, run_outcome
from runner.passes.warm.handle import WarmServer

KILL_GRACE = 5.0
KEPT_ENTRIES = frozenset({"artifacts"})
"""What ``clear_inputs`` keeps of a private data dir: the earlier runs' artifacts (each run
writes a new ``artifacts/<ident>``, and ansible-runner reads none of them as input).

What ansible-runner 2.4.3 reads from a private data dir when it is there
(``utils.dump_artifacts``, ``config._base.prepare_env``, ``config.runner``): ``env/envvars``
(over the ``envvars`` argument), ``env/extravars`` (``-e @``, besides the ``extravars``
argument), ``env/settings``, ``env/passwords``, ``env/ssh_key`` (then the run goes through
``ssh-agent``), ``env/cmdline`` (extra ``ansible-playbook`` arguments), ``args`` (a whole
command line instead of ``ansible-playbook``), ``inventory/`` (when no inventory is given),
``project/`` (the working directory when no ``project_dir`` is given) and ``roles/`` (added
to ``ANSIBLE_ROLES_PATH`` for a role). None of it may outlive the pass it was written for."""
KEPT_EVENTS = frozenset({"runner_on_failed", "runner_on_unreachable", "playbook_on_stats"})
"""The events written to a run's ``artifacts/<ident>/job_events``: a run's failures and its
recap. A Glance pass emits ~80 events (~200 KB); kept for every run and rotated at 20 runs
per object, they filled hundreds of MB for a few dozen objects (ansible-operator-plugins#231,
#47). ``stdout`` keeps the whole log of each run."""
PEXPECT_TIMEOUT = 0.5
"""How often ansible-runner asks whether to cancel while the playbook is quiet (seconds)."""


@dataclass
class PassRun:
    """What one run did."""

    outcome: RunOutcome
    status: str
    rc: int | None
    ident: str
    seconds: float
    cancelled: bool = False
    stdout_tail: str = ""
    events: list[dict[str, Any]] = field(default_factory=list, repr=False)
    warm: bool = False
    """Run through the warm fork server (``runner/passes/warm/``), not a cold ansible-playbook."""


def checkout_ansible_cfg(watches_file: Path) -> Path | None:
    """The collection's ``ansible.cfg`` when ``watches_file`` is in a checkout of it."""
    directory = watches_file.resolve().parent
    candidate = directory / "ansible.cfg"
    if candidate.is_file() and (directory / "galaxy.yml").is_file():
        return candidate
    return None


def run_environment(
    environ: Mapping[str, str], kubeconfig: str | None, ansible_cfg: Path | None
) -> dict[str, str]:
    """The variables each run gets on top of the runner's own environment."""
    env = {
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), environ.get("PATH", "")]),
        "ANSIBLE_NOCOLOR": "1",
    }
    config = kubeconfig or environ.get("K8S_AUTH_KUBECONFIG") or environ.get("KUBECONFIG")
    if config:
        env["KUBECONFIG"] = env["K8S_AUTH_KUBECONFIG"] = config
    if ansible_cfg is not None and not environ.get("ANSIBLE_CONFIG"):
        env["ANSIBLE_CONFIG"] = str(ansible_cfg)
    return env


def private_data_dir(root: Path, watch: Watch, key: ObjectKey) -> Path:
    gvk = watch.gvk
    parts = [gvk.group or "core", gvk.version, gvk.kind, key.namespace or "_cluster", key.name]
    return root.joinpath(*parts)


def clear_inputs(directory: Path) -> None:
    """Remove from a private data dir everything but ``KEPT_ENTRIES``: the inputs an earlier
    pass (of this process or of another) left for ansible-runner to find."""
    for entry in list(directory.iterdir()):
        if entry.name in KEPT_ENTRIES and entry.is_dir() and not entry.is_symlink():
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink(missing_ok=True)


class PlaybookRunner:
    """Runs passes; thread-safe (each object has its own private data dir)."""

    def __init__(
        self,
        root: Path,
        envvars: Mapping[str, str],
        verbosity: int = 2,
        environ: Mapping[str, str] | None = None,
        kill_grace: float = KILL_GRACE,
        warm: WarmServer | None = None,
        runner_vars: Mapping[str, Any] | None = None,
    ) -> None:
        """``runner_vars``: the extra vars every pass gets from the runner's settings
        (``runner.passes.extravars.extra_vars``, last in precedence)."""
        self.root = root
        self.runner_vars = dict(runner_vars or {})
        self.envvars = dict(envvars)
        self.verbosity = verbosity
        self.environ = os.environ if environ is None else environ
        self.kill_grace = kill_grace
        self.warm = warm

    def run(
        self,
        watch: Watch,
        key: ObjectKey,
        obj: Mapping[str, Any],
        cancel: threading.Event,
    ) -> PassRun:
        target = watch.target(finalizing=bool((obj.get("metadata") or {}).get("deletionTimestamp")))
        annotations = (obj.get("metadata") or {}).get("annotations")
        directory = private_data_dir(self.root, watch, key)
        directory.mkdir(parents=True, exist_ok=True)
        clear_inputs(directory)
        ident = f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"
        events: list[dict[str, Any]] = []
        cancelled = threading.Event()

        def on_event(event: dict[str, Any]) -> bool:
            events.append(event)
            return event.get("event") in KEPT_EVENTS

        def should_cancel() -> bool:
            if not cancel.is_set():
                return False
            if not cancelled.is_set():
                cancelled.set()
                self._terminate(directory)
            return True

        options: dict[str, Any] = {
            "private_data_dir": str(directory),
            "ident": ident,
            "extravars": extra_vars(watch, obj, self.runner_vars),
            "envvars": dict(self.envvars),  # ansible-runner adds to it for a role
            "inventory": {
                "all": {
                    "hosts": {
                        "localhost": {
                            "ansible_connection": "local",
                            "ansible_python_interpreter": sys.executable,
                        }
                    }
                }
            },
            "rotate_artifacts": max(1, max_runner_artifacts(watch, annotations)),
            "verbosity": ansible_verbosity(watch, annotations, self.environ, self.verbosity)
            or None,
            "quiet": True,
            "json_mode": False,
            "event_handler": on_event,
            "cancel_callback": should_cancel,
            "settings": {"pexpect_timeout": PEXPECT_TIMEOUT, "suppress_ansible_output": True},
        }
        if target.playbook is not None:
            options["playbook"] = str(target.playbook)
            options["project_dir"] = str(target.playbook.parent)
        else:
            options["role"] = target.role.name
            options["roles_path"] = [str(target.role.parent)]
            options["project_dir"] = str(directory)
        binary = self.warm.binary() if self.warm is not None else None
        if binary is not None:
            # With a ``binary`` ansible-runner leaves the playbook off the command line;
            # for a role it is the play it writes to ``project/main.json``.
            playbook = options.get("playbook") or str(directory / "project" / "main.json")
            options["binary"] = binary
            options["cmdline"] = shlex.quote(playbook)
        start = time.monotonic()
        result = ansible_runner.run(**options)
        seconds = time.monotonic() - start
        tail = ""
        if result.status not in ("successful",):
            try:
                tail = result.stdout.read()[-4000:] if result.stdout else ""
            except (OSError, ValueError):
                tail = ""
        return PassRun(
            outcome=run_outcome(events),
            status=result.status,
            rc=result.rc,
            ident=ident,
            seconds=seconds,
            cancelled=cancelled.is_set() or result.status == "canceled",
            stdout_tail=tail,
            events=events,
            warm=binary is not None,
        )

    def _terminate(self, directory: Path) -> None:
        """SIGTERM the process group of this run's ansible-playbook; wait for it a little."""
        groups = {pgid for pid in _children_running(directory) if (pgid := _pgid(pid)) is not None}
        for group in groups:
            with contextlib.suppress(OSError):
                os.killpg(group, signal.SIGTERM)
        deadline = time.monotonic() + self.kill_grace
        while groups and time.monotonic() < deadline:
            if not _children_running(directory):
                return
            time.sleep(0.05)

    def forget(self, watch: Watch, key: ObjectKey) -> None:
        """Remove an object's private data dir (the object is gone)."""
        directory = private_data_dir(self.root, watch, key)
        if directory.is_dir():
            _remove_tree(directory)


def _children_running(directory: Path) -> list[int]:
    """Our child processes whose command line names ``directory`` (ansible-playbook is
    started with ``-i <dir>/inventory`` and ``-e @<dir>/env/extravars``)."""
    me = os.getpid()
    marker = str(directory).encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            ppid = int(stat.rpartition(")")[2].split()[1])
            state = stat.rpartition(")")[2].split()[0]
            if ppid != me or state == "Z":
                continue
            if marker in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except (OSError, ValueError, IndexError):
            continue
    return found


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None


def _remove_tree(directory: Path) -> None:
    shutil.rmtree(directory, ignore_errors=True)
