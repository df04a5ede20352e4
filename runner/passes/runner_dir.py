"""The runner dir: where ansible-runner's private data dirs live, one process at a time.

Two kinds (``claim``):

* **private** (no ``--runner-dir``/``RUNNER_DIR``, the default): a new directory of this
  process, ``<tmp>/c5c3-glance-runner-<uid>/<pid>-<random>``, removed when the process ends
  cleanly (``release``). Two runners on one host (two ``make run``, a failover test) never
  meet, and no pass can find what another process left. A directory there whose process
  is gone (SIGKILL, a crash: nothing removed it) is removed by the next runner that
  starts: its ``<pid>`` runs no more (or is this very process, as pid 1 of a restarted
  container is) and its lock is free. The parent is the user's own: made ``0700``, and
  refused when it is a symbolic link, another user's, or writable by others (whoever could
  swap a private data dir there could hand ansible-runner an ``args`` file: a command line
  of theirs).
* **explicit** (``--runner-dir``/``RUNNER_DIR``): that directory, kept across restarts
  and locked (``flock`` on ``<dir>/.lock``, released by the kernel when the process dies):
  a second runner on it is refused, as two would run passes on one private data dir.

Each pass still writes its own inputs (``runner.passes.playbook.clear_inputs``), so a kept
directory carries only artifacts from one process to the next.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

DEFAULT_PARENT = Path(tempfile.gettempdir()) / f"c5c3-glance-runner-{os.getuid()}"
LOCK_FILE = ".lock"
_PRIVATE_NAME = re.compile(r"(\d+)-[A-Za-z0-9_]+")


class RunnerDirError(RuntimeError):
    """The runner dir cannot be used; the message says why."""


class RunnerDirBusy(RunnerDirError):
    """Another process holds the explicit runner dir."""


@dataclass
class RunnerDir:
    path: Path
    private: bool
    removed_stale: tuple[Path, ...] = ()
    _lock: IO[str] | None = field(default=None, repr=False)

    def release(self) -> None:
        """Unlock; a private dir is removed with everything in it."""
        if self._lock is not None:
            self._lock.close()
            self._lock = None
        if self.private:
            shutil.rmtree(self.path, ignore_errors=True)


def claim(explicit: Path | None, parent: Path = DEFAULT_PARENT) -> RunnerDir:
    """The runner dir of this process, locked: ``explicit`` (``RunnerDirBusy`` when another
    process holds it), else a new private dir under ``parent`` (stale ones removed first).
    ``OSError`` when a directory cannot be made."""
    if explicit is not None:
        explicit.mkdir(parents=True, exist_ok=True)
        lock = _try_lock(explicit)
        if lock is None:
            raise RunnerDirBusy(
                f"another runner uses {explicit}; give this one another --runner-dir "
                "(or none: each process then has a private one)"
            )
        return RunnerDir(explicit, private=False, _lock=lock)
    parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    _check_own(parent)
    removed = remove_stale(parent)
    path = Path(tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=parent))
    lock = _try_lock(path)
    if lock is None:  # a fresh directory of ours: nobody else can hold it
        raise RunnerDirBusy(f"cannot lock the new runner dir {path}")
    return RunnerDir(path, private=True, removed_stale=removed, _lock=lock)


def _check_own(parent: Path) -> None:
    """``RunnerDirError`` unless ``parent`` is a directory of this user that only it can
    write to."""
    info = os.lstat(parent)
    problem = None
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        problem = "is not a directory (a symbolic link?)"
    elif info.st_uid != os.getuid():
        problem = f"belongs to uid {info.st_uid}, not to this user (uid {os.getuid()})"
    elif info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        problem = f"is writable by others (mode {stat.S_IMODE(info.st_mode):o})"
    if problem:
        raise RunnerDirError(
            f"the private runner dirs' parent {parent} {problem}; remove it, "
            "or name a runner dir with --runner-dir"
        )


def remove_stale(parent: Path, running: Callable[[int], bool] | None = None) -> tuple[Path, ...]:
    """Remove the private dirs under ``parent`` whose process is gone: its pid is not
    running (``running``; this process's own pid counts as gone, the dir being older than
    this process) and nobody holds its lock. Other entries are left alone."""
    running = running or _pid_running
    removed = []
    for entry in sorted(parent.iterdir()):
        match = _PRIVATE_NAME.fullmatch(entry.name)
        if match is None or not entry.is_dir() or entry.is_symlink():
            continue
        pid = int(match.group(1))
        if pid != os.getpid() and running(pid):
            continue
        lock = _try_lock(entry)  # one killed before it locked has none: made, then free
        if lock is None:
            continue
        try:
            shutil.rmtree(entry, ignore_errors=True)
        finally:
            lock.close()
        if not entry.exists():
            removed.append(entry)
    return tuple(removed)


def _try_lock(directory: Path) -> IO[str] | None:
    """An open handle holding ``flock`` on ``<directory>/.lock`` (made when missing), or
    None when another process holds it."""
    handle = open(directory / LOCK_FILE, "a+")  # noqa: SIM115 - held by the caller
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        return None
    return handle


def _pid_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(OSError):
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
        if state == "Z":  # exited, not yet reaped
            return False
    return True
