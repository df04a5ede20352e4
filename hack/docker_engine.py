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

Standard library only.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import debian_packages

PROGRAMS = {"dockerd": "docker.io", "docker": "docker.io", "mmdebstrap": "mmdebstrap"}
LOG = Path("/var/log/c5c3-dockerd.log")
WAIT_SECONDS = 60


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


def main() -> int:
    try:
        debian_packages.install(debian_packages.missing(PROGRAMS).values(), say)
    except debian_packages.PackagesError as exc:
        say(f"error: {exc}")
        return 1
    why = problem()
    if not why:
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
