"""Running the node's programs to completion, and stopping the ones it started."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class NodeError(RuntimeError):
    """A step of bringing the node up failed; the message says which and why."""


def run(argv: list[str], check: bool = True, **kw) -> subprocess.CompletedProcess:
    """Run ``argv`` to completion; with ``check``, a failure raises ``NodeError`` with what
    the command printed."""
    kw.setdefault("text", "stdin" not in kw)
    done = subprocess.run(argv, check=False, capture_output=True, **kw)
    if check and done.returncode != 0:
        out = done.stdout + done.stderr
        out = out.decode(errors="replace") if isinstance(out, bytes) else out
        raise NodeError(f"{' '.join(argv)}: exit {done.returncode}: {out.strip()[-2000:]}")
    return done


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is not running
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def send_signal(pid: int, signo: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signo)


def stop(pid: int | None, also: Iterable[int] = (), grace: float = 15.0) -> None:
    """SIGTERM ``pid`` and ``also``; SIGKILL what is left after ``grace`` seconds."""
    targets = {p for p in [pid, *also] if p}
    for p in targets:
        send_signal(p, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(alive(p) for p in targets):
        time.sleep(0.1)
    for p in targets:
        if alive(p):
            send_signal(p, signal.SIGKILL)
