#!/usr/bin/env python3
"""A Docker daemon that answers: ``make docker-engine``.

    make docker-engine     # install Debian's docker.io if dockerd is missing, start it if
                           # `docker info` does not answer; idempotent

The images are built in Docker (``make images``), the cluster tier copies them from there
into its node, and kind runs its nodes as Docker containers: all need a daemon. On a
machine where one answers ``docker info`` (Docker Desktop, a distribution's service,
rootless Docker) this does nothing. Otherwise, as root:

* the Debian packages it lacks: ``docker.io`` (dockerd, with Debian's containerd and runc)
  and ``mmdebstrap`` (the local image bases of ``hack/images.py``);
* the daemon: ``systemctl start docker`` where systemd runs the machine, else ``dockerd``
  started in a session of its own (a service: it outlives this command, as
  ``systemctl start`` would leave it), its log in ``/var/log/c5c3-dockerd.log``; then
  ``docker info`` is asked until it answers (60 s).

Where root lacks a capability the kernel knows (here: CAP_SYS_RESOURCE), Docker cannot
start a ``--privileged`` container ("unable to apply caps: operation not permitted"), and
kind's nodes are privileged. There, whether or not a daemon answers, this installs
``hack/runc_bounded.py`` as ``/usr/local/libexec/c5c3/runc-bounded`` and makes it the
daemon's default runtime in ``/etc/docker/daemon.json`` (other settings kept): runc, with
the capabilities the daemon cannot hold taken out of each container's spec. A running
daemon reloads that file on SIGHUP, which restarts nothing.

Standard library only.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import debian_packages

PROGRAMS = {"dockerd": "docker.io", "docker": "docker.io", "mmdebstrap": "mmdebstrap"}
LOG = Path("/var/log/c5c3-dockerd.log")
WAIT_SECONDS = 60
RUNTIME = "c5c3-bounded"
RUNTIME_SOURCE = Path(__file__).resolve().parent / "runc_bounded.py"
RUNTIME_PATH = Path("/usr/local/libexec/c5c3/runc-bounded")
DAEMON_JSON = Path("/etc/docker/daemon.json")


def say(message: str) -> None:
    print(f"[docker-engine] {message}", file=sys.stderr, flush=True)


def problem() -> str:
    """Why ``docker info`` does not answer, or "" when it does."""
    if shutil.which("docker") is None:
        return "no docker on PATH"
    try:
        done = subprocess.run(
            ["docker", "info", "--format", "{{.ServerVersion}}"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return "docker info did not answer in 30 s"
    if done.returncode != 0 or not done.stdout.strip():
        return (done.stderr or done.stdout).strip()[:300] or f"docker info exited {done.returncode}"
    return ""


def systemd_runs() -> bool:
    return Path("/run/systemd/system").is_dir()


def start_daemon() -> None:
    if systemd_runs():
        subprocess.run(["systemctl", "start", "docker"], check=True)
        return
    with LOG.open("ab") as log:
        subprocess.Popen(
            ["dockerd"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def capabilities_missing(status: str, last: int) -> list[int]:
    """The capabilities up to ``last`` (the kernel's cap_last_cap) that the bounding set
    of a /proc/<pid>/status text lacks."""
    mask = next(
        int(line.split()[1], 16) for line in status.splitlines() if line.startswith("CapBnd:")
    )
    return [n for n in range(last + 1) if not mask >> n & 1]


def with_runtime(config: dict) -> dict:
    """The daemon's configuration with the bounded runtime registered and made default."""
    runtimes = dict(config.get("runtimes") or {})
    runtimes[RUNTIME] = {"path": str(RUNTIME_PATH)}
    return {**config, "runtimes": runtimes, "default-runtime": RUNTIME}


def bounded_runtime() -> bool:
    """Install and configure the bounded runtime where root lacks a capability; whether
    the daemon's configuration changed."""
    last = int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    missing = capabilities_missing(Path("/proc/self/status").read_text(), last)
    if not missing:
        return False
    RUNTIME_PATH.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(RUNTIME_SOURCE, RUNTIME_PATH)
    RUNTIME_PATH.chmod(0o755)
    config = json.loads(DAEMON_JSON.read_text()) if DAEMON_JSON.exists() else {}
    wanted = with_runtime(config)
    if wanted == config:
        return False
    say(f"root lacks capabilities {missing}: {RUNTIME} ({RUNTIME_PATH}) is the default runtime")
    DAEMON_JSON.parent.mkdir(parents=True, exist_ok=True)
    DAEMON_JSON.write_text(json.dumps(wanted, indent=2) + "\n")
    return True


def reload_daemon() -> None:
    """SIGHUP every running dockerd: it reads daemon.json again, restarting nothing."""
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "comm").read_text().strip() == "dockerd":
                os.kill(int(entry.name), signal.SIGHUP)
                say(f"dockerd {entry.name} reloads {DAEMON_JSON}")
        except (OSError, ProcessLookupError):
            continue


def main() -> int:
    try:
        debian_packages.install(debian_packages.missing(PROGRAMS).values(), say)
    except debian_packages.PackagesError as exc:
        say(f"error: {exc}")
        return 1
    changed = os.geteuid() == 0 and bounded_runtime()
    why = problem()
    if not why:
        if changed:
            reload_daemon()
        say("docker answers")
        return 0
    if os.geteuid() != 0:
        say(f"error: docker does not answer ({why}), and starting dockerd needs root")
        return 1
    say(f"starting dockerd ({why})")
    start_daemon()
    deadline = time.monotonic() + WAIT_SECONDS
    while (why := problem()) and time.monotonic() < deadline:
        time.sleep(1)
    if why:
        tail = LOG.read_text(errors="replace")[-2000:] if LOG.exists() else ""
        say(f"error: dockerd did not answer within {WAIT_SECONDS} s: {why}\n{tail}")
        return 1
    say("docker answers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
