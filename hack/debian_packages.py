"""Debian packages the set-up installs: which are missing, and ``apt-get install`` of them.

Used by the hack scripts that bring up what the tests run on (``docker_engine.py``,
``node_cluster.py``). A program counts as present when it is on ``PATH`` (or, for a file
such as a CNI plugin, when the file exists): a machine that has it from elsewhere is not
made to install the package. Installing needs root and ``apt-get``; ``apt-get update`` runs
only when the first install fails (a fresh machine's package lists may be stale or absent).
The packages' services are kept from starting (``policy-rc.d``): what needs a daemon starts
its own. Standard library only.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

POLICY = Path("/usr/sbin/policy-rc.d")


class PackagesError(Exception):
    """The packages could not be installed; the message says which and why."""


def missing(programs: Mapping[str, str], files: Mapping[str, str] | None = None) -> dict[str, str]:
    """``{program or file: package}`` of the programs not on PATH and the files absent."""
    found = {p: pkg for p, pkg in programs.items() if shutil.which(p) is None}
    found.update({f: pkg for f, pkg in (files or {}).items() if not Path(f).exists()})
    return found


def _apt_install(packages: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages],
        env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"),
        capture_output=True,
        text=True,
        check=False,
    )


def install(packages: Iterable[str], say: Callable[[str], None] = print) -> None:
    """``apt-get install`` ``packages`` (none: nothing happens)."""
    wanted = sorted(set(packages))
    if not wanted:
        return
    if shutil.which("apt-get") is None:
        raise PackagesError(f"{' '.join(wanted)} missing and there is no apt-get")
    if os.geteuid() != 0:
        raise PackagesError(
            f"{' '.join(wanted)} missing: run `apt-get install {' '.join(wanted)}` as root"
        )
    own_policy = not POLICY.exists()
    if own_policy:
        POLICY.write_text("#!/bin/sh\nexit 101\n")
        POLICY.chmod(0o755)
    started = time.monotonic()
    try:
        done = _apt_install(wanted)
        if done.returncode != 0:
            say("apt-get install failed; apt-get update, then once more")
            subprocess.run(["apt-get", "update", "-qq"], capture_output=True, check=False)
            done = _apt_install(wanted)
    finally:
        if own_policy:
            POLICY.unlink()
    if done.returncode != 0:
        raise PackagesError(
            f"apt-get install {' '.join(wanted)} failed:\n{done.stdout}{done.stderr}"
        )
    say(f"installed {' '.join(wanted)} in {time.monotonic() - started:.0f} s")
