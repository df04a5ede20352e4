"""Warm passes: a fork server that runs ``ansible-playbook`` in a pre-imported interpreter.

A pass still runs through ansible-runner (``runner/passes/playbook.py``): ansible-runner writes the
pass's inputs, starts the command under its pseudo-terminal and reads the events, the
artifacts and the status as ever. Only the command differs: ansible-runner's ``binary``
option names a small client (``runner/passes/warm_client.py``, started as ``ansible-playbook``
from the server's private dir) instead of ``ansible-playbook``. The client hands its
argv, environment, working directory and its stdin/stdout/stderr (the pty ansible-runner
reads) over a unix socket (``SCM_RIGHTS``) to this server, which forks; the child makes
them its own (a session of its own, the pty as fds 0-2), then runs ansible-playbook's CLI
``main`` in-process. The server tells the client the child's pid, then its exit status
and CPU time; the client forwards the signals it gets (a cancel's SIGTERM, ansible-runner's
SIGINT/SIGHUP/SIGKILL sequence) to the child's process group and exits as the child did.
A client that dies (SIGKILL) takes its child with it: the server sees the socket close and
kills the child's process group.

**What the server imports before a pass's environment is known** (``warm_up``):

* the standard library and third-party modules a pass imports (``PRELOAD``: jinja2, yaml,
  the ``kubernetes`` client, celpy, cryptography, multiprocessing, ...);
* the part of ansible that reads no configuration at import (``ANSIBLE_PRELOAD``): every
  module of it that can be imported without ``ansible.constants``. The warm-up imports
  them with an import hook that refuses ``ansible.constants``, so a module that starts to
  read the configuration in a later ansible-core is skipped (and reported), never
  half-configured; ``ansible.constants`` is never in the server; ansible's configuration
  definitions (``base.yml``, not the configuration) are read once and copied to each
  pass's configuration manager;
* the collection's ``module_utils`` through Ansible's collection finder, installed with the
  collection paths an ``ansible-playbook`` would use in the server's environment (asked of
  a forked probe that imports ``ansible.constants`` there), then removed again so the
  pass's CLI installs its own; the CRDs parsed, the option catalogs read, the CRDs' CEL
  rules compiled (the memoised programs are inherited by every pass).

**What it does not import, and why:** ``ansible.constants`` builds the configuration
(``ConfigManager``) from the environment, the working directory's ``ansible.cfg`` and
``ANSIBLE_*`` at import, and ansible binds it at import in many places (the plugin loaders
take their search paths from it, ``ansible.utils.display`` its colours and log path, the
templar and error handler ``from ansible.constants import config``). Reloading it in the
child would leave those bound to the server's configuration, so the child imports it, and
everything that needs it (the CLI, the executor, the plugin loaders, the callbacks of
ansible-runner), after its environment and working directory are set: each pass reads
its own ``ANSIBLE_*`` variables, ansible.cfg and ansible-runner's per-run artifact dir.

When a pass's environment names other collection paths than the server warmed for
(``KEY_VARIABLES``, and the working directory when no ``ANSIBLE_CONFIG`` is set), the child
drops the warm collection modules first and imports them afresh.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import copy
import gc
import importlib
import json
import os
import selectors
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import Any

SOCKET_NAME = "sock"
CLIENT_NAME = "ansible-playbook"
"""The client's file name: ansible-runner's ``binary``. ansible-playbook's name, so the
process list and ansible's own ``sys.argv[0]`` checks look as they do for a cold pass."""
MAX_REQUEST = 4 * 1024 * 1024
KILL_GRACE = 5.0
START_TIMEOUT = 60.0
RESTART_INTERVAL = 60.0
"""A dead server is started again at most this often (meanwhile passes run cold)."""
KEY_VARIABLES = (
    "ANSIBLE_CONFIG",
    "ANSIBLE_COLLECTIONS_PATH",
    "ANSIBLE_COLLECTIONS_PATHS",
    "ANSIBLE_COLLECTIONS_SCAN_SYS_PATH",
    "ANSIBLE_HOME",
    "HOME",
)
"""The variables that decide where the collection's modules are found (with the working
directory when no ``ANSIBLE_CONFIG`` is set: ansible then reads ``./ansible.cfg``)."""
COLLECTION = "ansible_collections.c5c3.glance"
BUILTIN_COLLECTION = "ansible_collections.ansible.builtin"

PRELOAD = (
    "argparse",
    "base64",
    "concurrent.futures",
    "configparser",
    "csv",
    "ctypes",
    "curses",
    "dataclasses",
    "datetime",
    "decimal",
    "difflib",
    "email.parser",
    "getpass",
    "glob",
    "hashlib",
    "hmac",
    "inspect",
    "ipaddress",
    "json",
    "logging",
    "multiprocessing.queues",
    "multiprocessing.synchronize",
    "pickle",
    "platform",
    "pprint",
    "pty",
    "queue",
    "secrets",
    "shlex",
    "subprocess",
    "tarfile",
    "termios",
    "textwrap",
    "tty",
    "urllib.parse",
    "uuid",
    "zipfile",
    "cryptography.hazmat.primitives.ciphers",
    "jinja2",
    "jinja2.nativetypes",
    "jinja2.sandbox",
    "markupsafe",
    "packaging.version",
    "yaml",
    "distro",
    "kubernetes.client",
    "kubernetes.config",
    "urllib3",
    "celpy",
)
"""Standard and third-party modules of a pass (ansible-playbook's own imports and the
collection's); none reads ansible's configuration."""
ANSIBLE_PRELOAD = (
    "ansible._internal",
    "ansible._internal._ansiballz",
    "ansible._internal._collection_proxy",
    "ansible._internal._datatag._tags",
    "ansible._internal._datatag._utils",
    "ansible._internal._datatag._wrappers",
    "ansible._internal._display_utils",
    "ansible._internal._errors._alarm_timeout",
    "ansible._internal._errors._attribute_unavailable",
    "ansible._internal._errors._captured",
    "ansible._internal._errors._error_factory",
    "ansible._internal._errors._error_utils",
    "ansible._internal._event_formatting",
    "ansible._internal._locking",
    "ansible._internal._plugins._strategy",
    "ansible._internal._powershell._clixml",
    "ansible._internal._powershell._script",
    "ansible._internal._rpc_host",
    "ansible._internal._ssh._ssh_agent",
    "ansible._internal._templating._access",
    "ansible._internal._templating._errors",
    "ansible._internal._templating._jinja_patches",
    "ansible._internal._templating._utils",
    "ansible._internal._worker._inventory_rpc",
    "ansible._internal._wrapt",
    "ansible._internal._yaml._errors",
    "ansible.config.manager",
    "ansible.context",
    "ansible.errors",
    "ansible.executor.powershell",
    "ansible.executor.process",
    "ansible.inventory",
    "ansible.module_utils._internal._ambient_context",
    "ansible.module_utils._internal._concurrent._daemon_threading",
    "ansible.module_utils._internal._concurrent._futures",
    "ansible.module_utils._internal._dataclass_validation",
    "ansible.module_utils._internal._datatag._tags",
    "ansible.module_utils._internal._debugging",
    "ansible.module_utils._internal._deprecator",
    "ansible.module_utils._internal._errors",
    "ansible.module_utils._internal._event_utils",
    "ansible.module_utils._internal._json._profiles",
    "ansible.module_utils._internal._messages",
    "ansible.module_utils._internal._no_six",
    "ansible.module_utils._internal._patches._dataclass_annotation_patch",
    "ansible.module_utils._internal._patches._socket_patch",
    "ansible.module_utils._internal._patches._sys_intern_patch",
    "ansible.module_utils._internal._plugin_info",
    "ansible.module_utils._internal._stack",
    "ansible.module_utils._internal._text_utils",
    "ansible.module_utils._internal._traceback",
    "ansible.module_utils._internal._validation",
    "ansible.module_utils.common._utils",
    "ansible.module_utils.common.collections",
    "ansible.module_utils.common.file",
    "ansible.module_utils.common.locale",
    "ansible.module_utils.common.process",
    "ansible.module_utils.common.sentinel",
    "ansible.module_utils.common.sys_info",
    "ansible.module_utils.common.text.converters",
    "ansible.module_utils.common.text.formatters",
    "ansible.module_utils.common.warnings",
    "ansible.module_utils.common.yaml",
    "ansible.module_utils.compat.selinux",
    "ansible.module_utils.compat.typing",
    "ansible.module_utils.compat.version",
    "ansible.module_utils.datatag",
    "ansible.module_utils.distro",
    "ansible.module_utils.errors",
    "ansible.module_utils.json_utils",
    "ansible.module_utils.parsing.convert_bool",
    "ansible.parsing.quoting",
    "ansible.parsing.splitter",
    "ansible.parsing.utils.addresses",
    "ansible.parsing.yaml",
    "ansible.release",
    "ansible.utils.collection_loader._collection_finder",
    "ansible.utils.collection_loader._collection_meta",
    "ansible.utils.context_objects",
    "ansible.utils.fqcn",
    "ansible.utils.hashing",
    "ansible.utils.helpers",
    "ansible.utils.lock",
    "ansible.utils.multiprocessing",
    "ansible.utils.path",
    "ansible.utils.sentinel",
    "ansible.utils.singleton",
    "ansible.utils.unicode",
    "ansible.utils.version",
    "ansible.vars.hostvars",
)
"""The modules of ansible-core a pass imports that read no configuration at import (found
with an import hook refusing ``ansible.constants``; ``warm_up`` checks it again)."""
CONFIGURATION_MODULES = frozenset({"ansible.constants"})
BASE_DEFINITIONS = "ansible/config/base.yml"


class _RefuseConfiguration:
    """An import hook: importing ``ansible.constants`` fails (it reads the configuration)."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name in CONFIGURATION_MODULES:
            raise ImportError(f"{name} reads the configuration at import: not in the server")


def warm_up(collection_paths: list[str] | None, scan_sys_path: bool) -> dict[str, Any]:
    """Import what is safe before a pass's environment is known (module docstring).

    Returns what was done: ``skipped`` names the modules that failed or wanted
    ``ansible.constants`` (and ``BASE_DEFINITIONS`` when they could not be kept);
    ``collection`` is the collection's modules imported."""
    start = time.process_time()
    hook = _RefuseConfiguration()
    sys.meta_path.insert(0, hook)
    skipped: list[str] = []
    try:
        for name in (*PRELOAD, *ANSIBLE_PRELOAD):
            before = set(sys.modules)
            try:
                importlib.import_module(name)
            except Exception as error:  # an ansible-core that changed: skip, report
                skipped.append(f"{name}: {error}")
                for added in set(sys.modules) - before:
                    sys.modules.pop(added, None)
    finally:
        sys.meta_path.remove(hook)
    if CONFIGURATION_MODULES & set(sys.modules):
        raise RuntimeError("ansible.constants was imported by the warm-up")
    try:
        _keep_base_definitions()
    except Exception as error:  # an ansible-core that changed: skip, report
        skipped.append(f"{BASE_DEFINITIONS}: {error}")
    collection: list[str] = []
    if collection_paths is not None:
        collection = _warm_collection(collection_paths, scan_sys_path)
    return {
        "skipped": skipped,
        "collection": collection,
        "cpu_seconds": round(time.process_time() - start, 3),
        "modules": len(sys.modules),
    }


def _keep_base_definitions() -> None:
    """Read ansible's configuration definitions (``ansible/config/base.yml``: 0.03 CPU-s of
    YAML, ansible's own file, the same for every configuration) once: the configuration
    manager every pass builds at ``import ansible.constants`` gets a copy of them while the
    file is unchanged. Only the definitions are kept: the pass's ``ansible.cfg`` and
    ``ANSIBLE_*`` are read by the pass."""
    from ansible.config import manager

    read = manager.ConfigManager._read_config_yaml_file
    path = os.path.join(os.path.dirname(manager.__file__), "base.yml")
    stamp = _file_stamp(path)
    definitions = read(None, path)
    if not isinstance(definitions, dict) or not definitions:
        raise ValueError("no configuration definitions read")

    def _read_config_yaml_file(self: Any, yml_file: Any) -> Any:
        if os.fsdecode(yml_file) == path and _file_stamp(path) == stamp:
            return copy.deepcopy(definitions)
        return read(self, yml_file)

    manager.ConfigManager._read_config_yaml_file = _read_config_yaml_file


def _file_stamp(path: str) -> tuple[int, int, int] | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_ino, stat.st_mtime_ns, stat.st_size


def _warm_collection(paths: list[str], scan_sys_path: bool) -> list[str]:
    """The collection's module_utils through Ansible's collection finder, the CRDs and
    their CEL rules, the object roles' templates compiled, and ``ansible.builtin``'s
    package with its routing metadata; the finder is removed again (the pass's CLI
    installs its own)."""
    import ansible._internal as internal
    from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder

    # As ansible.plugins.loader._configure_collection_loader: the internal collection first.
    internal_path = os.path.dirname(internal.__file__)
    finder = _AnsibleCollectionFinder(
        [internal_path, *paths], scan_sys_path, internal_collections=internal_path
    )
    finder._install()
    imported = []
    try:
        package = importlib.import_module(f"{COLLECTION}.plugins.module_utils")
        root = Path(next(iter(package.__path__)))
        # Every floor's files (docs/architecture.md): module_utils/<floor>/<file>.py.
        for entry in sorted(root.glob("*/*.py")):
            if entry.stem != "__init__":
                name = ".".join((package.__name__, entry.parent.name, entry.stem))
                imported.append(importlib.import_module(name).__name__)
        cel = importlib.import_module(f"{package.__name__}.admission.cel_validation")
        files = importlib.import_module(f"{package.__name__}.admission.collection_files")
        files.load_catalogs()
        for rule in cel.crd_rules(files.load_crds()):
            cel.compile_rule(rule)
        templates = importlib.import_module(f"{package.__name__}.desired.role_templates")
        templates.compile_templates()
        # ansible.builtin's routing (ansible/config/ansible_builtin_runtime.yml, ~10,000
        # lines of YAML: 0.18 CPU-s) is read when the package is imported and kept on it.
        imported.append(importlib.import_module(BUILTIN_COLLECTION).__name__)
    finally:
        _AnsibleCollectionFinder._remove()
    return imported


def collection_key(env: Mapping[str, str], cwd: str) -> tuple[tuple[str, str | None], ...]:
    """What decides where the collection's modules come from (``KEY_VARIABLES``)."""
    key = [(name, env.get(name)) for name in KEY_VARIABLES]
    if not env.get("ANSIBLE_CONFIG"):
        key.append(("cwd", cwd))
    return tuple(key)


def probe_collection_paths() -> tuple[list[str], bool]:
    """``COLLECTIONS_PATHS`` and ``COLLECTIONS_SCAN_SYS_PATH`` as ansible reads them here:
    asked of a forked child (``ansible.constants`` must not enter the server)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read)
        code = 0
        try:
            from ansible import constants

            payload = json.dumps(
                [list(constants.COLLECTIONS_PATHS), bool(constants.COLLECTIONS_SCAN_SYS_PATH)]
            )
            os.write(write, payload.encode())
        except BaseException:
            traceback.print_exc()
            code = 1
        os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as stream:
        data = stream.read()
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0 or not data:
        raise RuntimeError("could not read ansible's collection paths")
    paths, scan = json.loads(data)
    return [str(p) for p in paths], bool(scan)


# -- the server ------------------------------------------------------------------------------


class _Pass:
    def __init__(self, conn: socket.socket, pid: int) -> None:
        self.conn = conn
        self.pid = pid
        self.kill_at: float | None = None


class Server:
    """The fork server's loop (single-threaded: accept, fork, reap, relay)."""

    def __init__(self, directory: Path, key: tuple[Any, ...], base_path: list[str]) -> None:
        self.directory = directory
        self.key = key
        self.base_path = base_path
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.selector = selectors.DefaultSelector()
        self.wake_read, self.wake_write = os.pipe()
        self.passes: dict[int, _Pass] = {}
        self.by_conn: dict[socket.socket, _Pass] = {}
        self.stopping = False
        self.parent = os.getppid()
        self.cpu_total = 0.0
        self.sweep_until = 0.0

    def bind(self) -> None:
        path = self.directory / SOCKET_NAME
        temporary = self.directory / f".{SOCKET_NAME}.{os.getpid()}"
        temporary.unlink(missing_ok=True)
        self.listener.bind(str(temporary))
        os.chmod(temporary, 0o600)
        self.listener.listen(64)
        os.replace(temporary, path)  # the socket appears only once the server is ready

    def run(self) -> int:
        _become_subreaper()
        os.set_blocking(self.wake_read, False)
        os.set_blocking(self.wake_write, False)
        signal.set_wakeup_fd(self.wake_write)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.signal(signal.SIGTERM, self._on_stop)
        signal.signal(signal.SIGINT, self._on_stop)
        self.selector.register(self.listener, selectors.EVENT_READ, "accept")
        self.selector.register(self.wake_read, selectors.EVENT_READ, "wake")
        while not self.stopping:
            for item, _ in self.selector.select(timeout=0.5):
                if item.data == "accept":
                    self._accept()
                elif item.data == "wake":
                    with contextlib.suppress(OSError):
                        os.read(self.wake_read, 4096)
                else:
                    self._client_readable(item.data)
            self._reap()
            self._enforce()
            if os.getppid() != self.parent:  # the runner is gone
                self.stopping = True
        self._stop_passes()
        return 0

    def _on_stop(self, *_: Any) -> None:
        self.stopping = True

    def _accept(self) -> None:
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return
        fds: list[int] = []
        try:
            creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            _, uid, _ = struct.unpack("3i", creds)
            if uid != os.getuid():
                conn.close()
                return
            conn.settimeout(10)
            request, fds = _receive(conn)
            conn.settimeout(None)
        except (OSError, ValueError) as error:
            for fd in fds:
                os.close(fd)
            with contextlib.suppress(OSError):
                conn.sendall(f"error {error}\n".encode())
            conn.close()
            return
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child (measured by the runner tests)
            self._become_pass(request, fds, conn)
        for fd in fds:
            os.close(fd)  # only the child holds the pty now: pexpect sees its EOF
        entry = _Pass(conn, pid)
        self.passes[pid] = entry
        self.by_conn[conn] = entry
        self.selector.register(conn, selectors.EVENT_READ, conn)
        with contextlib.suppress(OSError):
            conn.sendall(f"pid {pid}\n".encode())

    def _client_readable(self, conn: socket.socket) -> None:
        try:
            data = conn.recv(4096)
        except OSError:
            data = b""
        if data:
            return
        entry = self.by_conn.pop(conn, None)
        self.selector.unregister(conn)
        conn.close()
        if entry is not None and entry.pid in self.passes:
            # The client died (ansible-runner's SIGKILL after a cancel's grace): the pass
            # goes with it. SIGTERM first, so ansible-playbook stops its workers (each in
            # a session of its own), SIGKILL after the grace (``_enforce``).
            with contextlib.suppress(OSError):
                os.killpg(entry.pid, signal.SIGTERM)
            entry.kill_at = time.monotonic() + KILL_GRACE

    def _enforce(self) -> None:
        """SIGKILL the passes whose grace ran out; kill what killed passes left behind."""
        now = time.monotonic()
        for entry in self.passes.values():
            if entry.kill_at is not None and now >= entry.kill_at:
                with contextlib.suppress(OSError):
                    os.killpg(entry.pid, signal.SIGKILL)
        if now < self.sweep_until:
            self._kill_orphans()

    def _kill_orphans(self) -> None:
        """A pass killed before it stopped its workers leaves them (and their modules,
        each worker a session of its own) to the server, a child subreaper: every child of
        the server that is not a pass is such an orphan; its process group is killed."""
        me = str(os.getpid())
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) in self.passes:
                continue
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[1] == me:
                with contextlib.suppress(OSError):
                    os.killpg(int(fields[2]), signal.SIGKILL)
                with contextlib.suppress(OSError):
                    os.kill(int(entry.name), signal.SIGKILL)

    def _reap(self) -> None:
        while self.passes:
            try:
                pid, status, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            entry = self.passes.pop(pid, None)
            cpu = usage.ru_utime + usage.ru_stime
            self.cpu_total += cpu
            if entry is None:
                continue  # an orphan of a killed pass (``_kill_orphans``)
            if os.WIFSIGNALED(status) or entry.kill_at is not None:
                self.sweep_until = time.monotonic() + KILL_GRACE
                self._kill_orphans()
            # Whatever the pass left in its process group goes with it, as with a cold pass
            # whose ansible-runner closes the pty.
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)
            if entry.conn in self.by_conn:
                self.by_conn.pop(entry.conn)
                with contextlib.suppress(OSError, ValueError):
                    entry.conn.sendall(f"exit {status} {cpu:.3f}\n".encode())
                with contextlib.suppress(KeyError, ValueError):
                    self.selector.unregister(entry.conn)
                entry.conn.close()

    def _stop_passes(self) -> None:
        for pid in list(self.passes):
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + KILL_GRACE
        while self.passes and time.monotonic() < deadline:
            self._reap()
            time.sleep(0.05)
        for pid in list(self.passes):
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)
        while self.passes:
            try:
                os.waitpid(-1, 0)
            except ChildProcessError:
                break
            self._reap()
        # The server's private dir goes with it (the runner may have been SIGKILLed).
        shutil.rmtree(self.directory, ignore_errors=True)

    # -- the child ------------------------------------------------------------------------
    def _become_pass(  # pragma: no cover - runs in the forked child
        self, request: dict[str, Any], fds: list[int], conn: socket.socket
    ) -> None:
        code = 1
        try:
            signal.set_wakeup_fd(-1)
            for signum in (signal.SIGCHLD, signal.SIGTERM):
                signal.signal(signum, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            os.setsid()
            for target, fd in enumerate(fds[:3]):
                os.dup2(fd, target)
            for fd in {*fds, self.wake_read, self.wake_write}:
                if fd > 2:
                    os.close(fd)
            self.selector.close()
            self.listener.close()
            conn.close()
            for other in self.by_conn:
                other.close()
            code = run_playbook_here(request, self.key, self.base_path)
        except BaseException:
            with contextlib.suppress(Exception):
                traceback.print_exc()
            code = 1
        finally:
            os._exit(code)


def _become_subreaper() -> None:
    """``prctl(PR_SET_CHILD_SUBREAPER)``: orphans of the passes become the server's."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER


def _receive(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    """One request: a 4-byte length, the JSON, fds 0-2 of the client (``SCM_RIGHTS``)."""
    data, fds, _, _ = socket.recv_fds(conn, 65536, 3)
    if len(fds) != 3:
        for fd in fds:
            os.close(fd)
        raise ValueError("a request must carry the client's stdin, stdout and stderr")
    try:
        if len(data) < 4:
            raise ValueError("short request")
        (length,) = struct.unpack("!I", data[:4])
        if length > MAX_REQUEST:
            raise ValueError("request too long")
        body = bytearray(data[4:])
        while len(body) < length:
            chunk = conn.recv(length - len(body))
            if not chunk:
                raise ValueError("request cut short")
            body += chunk
        request = json.loads(bytes(body))
        if not isinstance(request.get("argv"), list) or not isinstance(request.get("env"), dict):
            raise ValueError("a request needs argv and env")
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    return request, list(fds)


def run_playbook_here(  # pragma: no cover - runs in the forked child
    request: Mapping[str, Any], key: tuple[Any, ...], base_path: list[str]
) -> int:
    """Become the pass's ansible-playbook: its environment, directory, stdio; run the CLI."""
    env = {str(k): str(v) for k, v in request["env"].items()}
    cwd = str(request.get("cwd") or "/")
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    tempfile.tempdir = None  # TMPDIR of this pass
    with contextlib.suppress(OSError):
        import fcntl
        import termios

        fcntl.ioctl(0, termios.TIOCSCTTY, 0)  # fails while the client's session holds it
    tty = os.isatty(1)
    sys.stdin = sys.__stdin__ = open(0, closefd=False, encoding="utf-8")  # noqa: SIM115
    sys.stdout = sys.__stdout__ = open(  # noqa: SIM115
        1, "w", buffering=1 if tty else -1, closefd=False, encoding="utf-8"
    )
    sys.stderr = sys.__stderr__ = open(  # noqa: SIM115
        2, "w", buffering=1, closefd=False, encoding="utf-8", errors="backslashreplace"
    )
    program = shutil.which("ansible-playbook", path=env.get("PATH")) or "ansible-playbook"
    sys.argv = [program, *[str(a) for a in request["argv"][1:]]]
    python_path = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[:] = [os.path.dirname(program), *python_path, *base_path]
    if collection_key(env, cwd) != key:
        stale = [n for n in sys.modules if n.split(".")[0] == "ansible_collections"]
        for name in stale:
            del sys.modules[name]
    code: Any = 0
    try:
        from ansible.cli.playbook import main

        code = main()
    except SystemExit as exit_:
        code = exit_.code
    if code is None:
        code = 0
    elif not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    threading_shutdown = getattr(threading, "_shutdown", None)
    if threading_shutdown is not None:
        threading_shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    return code & 0xFF


def serve(directory: Path, cwd: Path | None) -> int:
    """The server process: warm up, listen on ``<directory>/sock``, fork a pass per request."""
    if cwd is not None:
        os.chdir(cwd)
    # What ansible-playbook's sys.path has besides its script's dir and PYTHONPATH: the
    # standard library and site-packages (sys.path[0] is this module's start directory).
    python_path = {p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p}
    base_path = [p for p in sys.path[1:] if p not in python_path]
    try:
        paths, scan = probe_collection_paths()
    except RuntimeError as error:
        print(f"warm server: {error}; the collection is not pre-imported", file=sys.stderr)
        paths, scan = None, False
    report = warm_up(paths, scan)
    key = collection_key(os.environ, os.getcwd())
    server = Server(directory, key, base_path)
    # Everything imported so far lives as long as the server: out of the collector's
    # generations, so a pass's collections do not touch (and copy) the shared pages.
    gc.collect()
    gc.freeze()
    server.bind()
    print(json.dumps({"ready": True, "pid": os.getpid(), **report}), flush=True)
    return server.run()


# -- the runner's handle ---------------------------------------------------------------------


def client_script(directory: Path, cold: str) -> str:
    """The client launcher: this Python, without site (the client needs the standard
    library only), the client's code, the socket and the cold ansible-playbook."""
    source = (Path(__file__).parent / "warm_client.py").read_text()
    header = f"#!{sys.executable} -IS\n"  # one argument: -I and -S
    tail = f"\nmain({str(directory / SOCKET_NAME)!r}, {cold!r})\n"
    return header + source + tail


class WarmServer:
    """The runner's handle on its fork server: start, stop, the client to run a pass with.

    Thread-safe. ``binary()`` is the client's path while the server is up, else None (a
    pass then runs the cold ``ansible-playbook``); a server that died is started again at
    most every ``RESTART_INTERVAL`` seconds."""

    def __init__(
        self,
        env: Mapping[str, str],
        cwd: Path | None = None,
        log: Any = None,
        restart_interval: float = RESTART_INTERVAL,
    ) -> None:
        self.env = dict(env)
        self.cwd = cwd
        self.log = log
        self.restart_interval = restart_interval
        self.directory: Path | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self.ready: dict[str, Any] | None = None
        self._lock = threading.Lock()
        self._started_at = 0.0
        self._reported_down = False
        self._stopped = False

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def start(self, wait: float | None = START_TIMEOUT) -> WarmServer:
        with self._lock:
            self._start_locked()
        if wait:
            self.wait_ready(wait)
        return self

    def _start_locked(self) -> None:
        self._started_at = time.monotonic()
        self.directory = Path(tempfile.mkdtemp(prefix="c5c3-warm-"))  # 0700, short for AF_UNIX
        cold = shutil.which("ansible-playbook", path=self.env.get("PATH")) or str(
            Path(sys.executable).parent / "ansible-playbook"
        )
        client = self.directory / CLIENT_NAME
        client.write_text(client_script(self.directory, cold))
        client.chmod(0o700)
        command = [sys.executable, "-m", "runner.passes.warm", "serve", str(self.directory)]
        if self.cwd is not None:
            command += ["--cwd", str(self.cwd)]
        env = dict(self.env)
        root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join([p for p in (env.get("PYTHONPATH", ""), root) if p])
        self.process = subprocess.Popen(
            command,
            env=env,
            cwd=root,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            start_new_session=True,
        )
        self.ready = None

    def wait_ready(self, timeout: float) -> bool:
        """Wait for the server's ready line (its warm-up report); False if it did not come."""
        process = self.process
        if process is None or process.stdout is None:
            return False
        selector = selectors.DefaultSelector()
        selector.register(process.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout
        line = b""
        while time.monotonic() < deadline and not line.endswith(b"\n"):
            if not selector.select(timeout=max(0.0, deadline - time.monotonic())):
                break
            chunk = os.read(process.stdout.fileno(), 65536)
            if not chunk:
                break
            line += chunk
        selector.close()
        if line.endswith(b"\n"):
            with contextlib.suppress(ValueError):
                self.ready = json.loads(line)
        if self.ready is not None and self.log is not None:
            self.log.info(
                "warm server ready",
                pid=process.pid,
                directory=str(self.directory),
                warm_up_cpu_seconds=self.ready.get("cpu_seconds"),
                modules=self.ready.get("modules"),
                skipped=self.ready.get("skipped"),
            )
        return self.ready is not None

    def alive(self) -> bool:
        return (
            self.process is not None
            and self.process.poll() is None
            and self.directory is not None
            and (self.directory / SOCKET_NAME).exists()
        )

    def binary(self) -> str | None:
        """The client to hand ansible-runner as ``binary``, or None: run this pass cold."""
        with self._lock:
            if self._stopped:
                return None
            if self.alive() and self.directory is not None:
                self._reported_down = False
                return str(self.directory / CLIENT_NAME)
            if self.process is not None and self.process.poll() is not None:
                if not self._reported_down and self.log is not None:
                    self.log.warning(
                        "warm server exited; passes run cold ansible-playbook",
                        exit_code=self.process.returncode,
                    )
                self._reported_down = True
                if time.monotonic() - self._started_at >= self.restart_interval:
                    self._cleanup_locked()
                    self._start_locked()
                    threading.Thread(
                        target=self.wait_ready, args=(START_TIMEOUT,), daemon=True
                    ).start()
            return None

    def cpu_seconds(self) -> float:
        """CPU seconds of the server and every pass it forked and reaped (``/proc``)."""
        if self.process is None:
            return 0.0
        try:
            stat = Path(f"/proc/{self.process.pid}/stat").read_text()
        except OSError:
            return 0.0
        fields = stat.rsplit(")", 1)[1].split()
        return sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK")

    def stop(self, timeout: float = KILL_GRACE + 5) -> None:
        with self._lock:
            self._stopped = True
            self._cleanup_locked(timeout)

    def _cleanup_locked(self, timeout: float = KILL_GRACE + 5) -> None:
        process = self.process
        if process is not None:
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(OSError):
                        os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
            if process.stdout is not None:
                process.stdout.close()
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m runner.passes.warm", description=__doc__.split("\n")[0]
    )
    commands = parser.add_subparsers(dest="command", required=True)
    serve_parser = commands.add_parser("serve", help="run the fork server")
    serve_parser.add_argument("directory", type=Path)
    serve_parser.add_argument("--cwd", type=Path, default=None)
    check = commands.add_parser("check", help="warm up, print what was imported, exit")
    check.add_argument("--no-collection", action="store_true")
    args = parser.parse_args(argv)
    if args.command == "serve":
        return serve(args.directory, args.cwd)
    paths, scan = (None, False) if args.no_collection else probe_collection_paths()
    report = warm_up(paths, scan)
    report["configuration_imported"] = sorted(CONFIGURATION_MODULES & set(sys.modules))
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
