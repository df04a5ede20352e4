#!/usr/bin/python3 -IS
"""runc for Docker where root may not hold every capability: the ``c5c3-bounded`` runtime.

Docker runs a ``--privileged`` container (and ``docker exec --privileged``) with every
capability the kernel knows. Where the daemon's own bounding set lacks one (on the machines
this project is built on, root has no CAP_SYS_RESOURCE), runc cannot grant it, and every
privileged container fails to start: "unable to apply caps: operation not permitted". kind
runs its nodes privileged and executes every step in them with ``docker exec --privileged``.

This program stands between the containerd shim and runc (``hack/docker_engine.py``
registers it as the daemon's default runtime only on such machines): before ``runc create``
or ``runc run`` it removes from the bundle's ``config.json``, and before ``runc exec`` from
the ``--process`` file, every capability outside its own bounding set, which is the
daemon's, then runs runc with the same arguments. Whatever the container could be granted
it still is; other commands go to runc untouched. Standard library only, no site packages.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

RUNC = "/usr/sbin/runc"
# Linux's capabilities by number (include/uapi/linux/capability.h).
NAMES = [
    "CHOWN",
    "DAC_OVERRIDE",
    "DAC_READ_SEARCH",
    "FOWNER",
    "FSETID",
    "KILL",
    "SETGID",
    "SETUID",
    "SETPCAP",
    "LINUX_IMMUTABLE",
    "NET_BIND_SERVICE",
    "NET_BROADCAST",
    "NET_ADMIN",
    "NET_RAW",
    "IPC_LOCK",
    "IPC_OWNER",
    "SYS_MODULE",
    "SYS_RAWIO",
    "SYS_CHROOT",
    "SYS_PTRACE",
    "SYS_PACCT",
    "SYS_ADMIN",
    "SYS_BOOT",
    "SYS_NICE",
    "SYS_RESOURCE",
    "SYS_TIME",
    "SYS_TTY_CONFIG",
    "MKNOD",
    "LEASE",
    "AUDIT_WRITE",
    "AUDIT_CONTROL",
    "SETFCAP",
    "MAC_OVERRIDE",
    "MAC_ADMIN",
    "SYSLOG",
    "WAKE_ALARM",
    "BLOCK_SUSPEND",
    "AUDIT_READ",
    "PERFMON",
    "BPF",
    "CHECKPOINT_RESTORE",
]
SETS = ("bounding", "effective", "inheritable", "permitted", "ambient")


def bounding_set(status: str) -> int:
    """The CapBnd mask of a /proc/<pid>/status text."""
    for line in status.splitlines():
        if line.startswith("CapBnd:"):
            return int(line.split()[1], 16)
    raise ValueError("no CapBnd in the status")


def outside(mask: int) -> set[str]:
    """The capability names (CAP_...) the mask does not hold."""
    return {f"CAP_{name}" for number, name in enumerate(NAMES) if not mask >> number & 1}


def bound(capabilities: dict, missing: set[str]) -> bool:
    """Remove ``missing`` from every set of an OCI ``capabilities`` object; whether any was."""
    changed = False
    for key in SETS:
        names = capabilities.get(key)
        if names:
            kept = [n for n in names if n not in missing]
            changed |= len(kept) != len(names)
            capabilities[key] = kept
    return changed


def option(argv: list[str], *names: str) -> str | None:
    """The value of the first of ``names`` in ``argv`` (``--x v`` or ``--x=v``)."""
    for i, arg in enumerate(argv):
        for name in names:
            if arg == name and i + 1 < len(argv):
                return argv[i + 1]
            if arg.startswith(name + "="):
                return arg.split("=", 1)[1]
    return None


def spec_to_bound(argv: list[str]) -> tuple[Path, bool] | None:
    """The file holding the capabilities this runc call grants, and whether they sit under
    ``process`` (a bundle's config.json) or at the top (an exec's process file)."""
    words = [a for a in argv if not a.startswith("-")]
    if "exec" in words:
        process = option(argv, "--process", "-p")
        return (Path(process), False) if process else None
    if "create" in words or "run" in words:
        bundle = option(argv, "--bundle", "-b") or "."
        return Path(bundle) / "config.json", True
    return None


def rewrite(path: Path, nested: bool, missing: set[str]) -> None:
    spec = json.loads(path.read_text())
    capabilities = (spec.get("process") or {}) if nested else spec
    capabilities = capabilities.get("capabilities")
    if capabilities and bound(capabilities, missing):
        staged = path.with_name(path.name + ".c5c3-bounded")
        staged.write_text(json.dumps(spec))
        os.replace(staged, path)


def main(argv: list[str]) -> None:
    target = spec_to_bound(argv)
    if target is not None:
        missing = outside(bounding_set(Path("/proc/self/status").read_text()))
        if missing:
            rewrite(*target, missing)
    os.execv(RUNC, [RUNC, *argv])


if __name__ == "__main__":
    main(sys.argv[1:])
