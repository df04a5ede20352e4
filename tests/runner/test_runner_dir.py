"""The runner dir (``runner.passes.runner_dir``): a private dir per process by default, removed on
release, stale ones of gone processes removed; an explicit dir kept and held by one process.
Other processes are real ones (a child Python holding a lock, a pid that has exited)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from runner.passes.runner_dir import (
    DEFAULT_PARENT,
    LOCK_FILE,
    RunnerDirBusy,
    RunnerDirError,
    claim,
    remove_stale,
)

HOLD_LOCK = textwrap.dedent(
    """
    import fcntl, sys, time
    handle = open(sys.argv[1], "a+")
    fcntl.flock(handle, fcntl.LOCK_EX)
    print("locked", flush=True)
    sys.stdin.read()
    """
)


def gone_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


class Holder:
    """A child process holding the lock of ``directory`` until closed."""

    def __init__(self, directory: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", HOLD_LOCK, str(directory / LOCK_FILE)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout.readline().strip() == "locked"

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(30)


@pytest.fixture
def holders():
    started: list[Holder] = []

    def hold(directory: Path) -> Holder:
        started.append(Holder(directory))
        return started[-1]

    yield hold
    for holder in started:
        holder.close()


def test_each_claim_without_a_dir_is_a_private_dir_removed_on_release(tmp_path):
    first, second = claim(None, tmp_path), claim(None, tmp_path)
    assert first.private and second.private
    assert first.path != second.path
    assert first.path.parent == second.path.parent == tmp_path
    assert first.path.name.startswith(f"{os.getpid()}-")
    (first.path / "glance.openstack.c5c3.io" / "v1alpha1").mkdir(parents=True)
    first.release()
    assert not first.path.exists()
    assert second.path.is_dir()
    second.release()
    assert list(tmp_path.iterdir()) == []


def test_an_explicit_dir_is_held_by_one_process_and_kept(tmp_path, holders):
    directory = tmp_path / "runner"
    claimed = claim(directory)
    assert (claimed.path, claimed.private) == (directory, False)
    (directory / "kept").mkdir()
    claimed.release()
    assert (directory / "kept").is_dir()

    holder = holders(directory)
    with pytest.raises(RunnerDirBusy, match=f"another runner uses {directory}; give this one"):
        claim(directory)
    holder.close()
    claim(directory).release()  # the kernel released the lock with the process


def test_stale_private_dirs_of_gone_processes_are_removed(tmp_path, holders):
    dead = tmp_path / f"{gone_pid()}-abc123"
    (dead / "glance.openstack.c5c3.io").mkdir(parents=True)
    (dead / LOCK_FILE).touch()
    unlocked = tmp_path / f"{gone_pid()}-nolock"  # killed before it locked
    unlocked.mkdir()
    mine = tmp_path / f"{os.getpid()}-old"  # pid 1 of a restarted container: not this one
    mine.mkdir()
    alive = tmp_path / f"{os.getppid()}-running"
    alive.mkdir()
    held = tmp_path / f"{gone_pid()}-held"  # the pid looks gone, the lock says otherwise
    held.mkdir()
    holders(held)
    other = tmp_path / "not-ours"
    other.mkdir()
    (tmp_path / "12345-file").write_text("not a dir")

    claimed = claim(None, tmp_path)
    assert sorted(claimed.removed_stale) == sorted([dead, unlocked, mine])
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted([alive.name, held.name, "not-ours", "12345-file", claimed.path.name])
    claimed.release()


def test_a_live_process_s_dir_is_never_removed(tmp_path):
    live = claim(None, tmp_path)
    assert remove_stale(tmp_path) == ()
    assert remove_stale(tmp_path, running=lambda pid: False) == ()  # its lock is held
    assert live.path.is_dir()
    live.release()


def test_the_default_parent_is_the_user_s_own():
    assert DEFAULT_PARENT.name == f"c5c3-glance-runner-{os.getuid()}"


def test_a_new_parent_is_made_private(tmp_path):
    parent = tmp_path / "runners"
    claim(None, parent).release()
    assert stat.S_IMODE(parent.stat().st_mode) == 0o700


@pytest.mark.parametrize("case", ["symlink", "group-writable", "another user's"])
def test_a_parent_others_could_swap_dirs_in_is_refused(tmp_path, case):
    parent = tmp_path / "runners"
    if case == "symlink":
        (tmp_path / "elsewhere").mkdir(mode=0o700)
        parent.symlink_to(tmp_path / "elsewhere")
        problem = "is not a directory (a symbolic link?)"
    elif case == "group-writable":
        parent.mkdir()
        parent.chmod(0o770)
        problem = "is writable by others (mode 770)"
    else:
        if os.getuid() != 0:
            pytest.skip("giving a directory to another user needs root")
        parent.mkdir(mode=0o700)
        os.chown(parent, 65534, 65534)
        problem = f"belongs to uid 65534, not to this user (uid {os.getuid()})"
    message = (
        f"the private runner dirs' parent {parent} {problem}; remove it, "
        "or name a runner dir with --runner-dir"
    )
    with pytest.raises(RunnerDirError) as caught:
        claim(None, parent)
    assert str(caught.value) == message
    assert not any(p.name[0].isdigit() for p in tmp_path.rglob("*"))  # nothing made there
