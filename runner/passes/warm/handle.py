"""The runner's handle on its warm fork server (``WarmServer``): starts it, restarts it,
stops it, and names the client a pass runs in ``ansible-playbook``'s place."""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from runner.passes.warm.protocol import CLIENT_NAME, KILL_GRACE, SOCKET_NAME

START_TIMEOUT = 60.0
RESTART_INTERVAL = 60.0
"""A dead server is started again at most this often (meanwhile passes run cold)."""


def client_script(directory: Path, cold: str) -> str:
    """The client launcher: this Python, without site (the client needs the standard
    library only), the client's code, the socket and the cold ansible-playbook."""
    source = (Path(__file__).parent / "client.py").read_text()
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
        root = str(Path(__file__).resolve().parents[3])
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
