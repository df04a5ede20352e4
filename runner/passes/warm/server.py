"""The fork server: its loop (accept, fork, reap, relay), the passes it runs and kills, and
``serve``, the process ``python -m runner.passes.warm serve`` runs."""

from __future__ import annotations

import contextlib
import gc
import json
import os
import selectors
import shutil
import signal
import socket
import struct
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from runner.passes.warm.child import run_playbook_here
from runner.passes.warm.preload import collection_key, probe_collection_paths, warm_up
from runner.passes.warm.protocol import KILL_GRACE, SOCKET_NAME, receive


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
            request, fds = receive(conn)
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
