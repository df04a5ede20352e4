#!/usr/bin/env python3
"""Set up what the e2e suite runs: the e2e environment, MariaDB and qemu-img (``make e2e-env``).

    python3 tests/e2e/setup_env.py            # idempotent: build what is missing
    python3 tests/e2e/setup_env.py --lock     # re-resolve tests/e2e/requirements-2026.2.txt

1. **The e2e environment** ``.venv-glance/e2e-2026.2``: glance 33 (release 2026.2) with
   keystone, keystonemiddleware, python-openstackclient, python-glanceclient, pyuwsgi,
   moto[server], boto3, PyMySQL and python-memcached, from ONE complete pinned list,
   ``tests/e2e/requirements-2026.2.txt``, installed with ``pip install --no-deps`` and
   then ``pip check``. A stamp records the list's SHA-256 and the Python version; when
   both match nothing is done, otherwise the environment is rebuilt from scratch.
2. **Debian packages**: ``mariadb-server`` (``mariadbd``, ``mariadb-install-db``),
   ``qemu-utils`` (``qemu-img``: the image_conversion import plugin runs it, as the
   Glance image ships it) and ``strace`` (the pass benchmark counts the programs a pass
   starts with it), each only when one of its programs is missing:
   ``apt-get install -y --no-install-recommends`` of the missing packages, with one
   ``apt-get update`` first only when the install fails. Needs root (CI runs as root).
   mariadb-server's own service is not used (the harness runs a private ``mariadbd``) and
   is kept from starting during the install by a temporary ``policy-rc.d``
   (``hack/debian_packages.py`` installs them).

``--lock`` is a resolver run: pip resolves the packages above for Python 3.12 with every
pin of ``images/glance/requirements/2026.2.txt`` as a constraint (the Glance the image
ships, so both agree), and the list is written from its report. Run it when a pin must
move, review the diff, then ``make e2e-env``.

Standard library only (plus ``hack/glance_venv.py`` for finding Python 3.12 and its lock).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
RELEASE = "2026.2"
REQUIREMENTS = REPO_ROOT / "tests" / "e2e" / f"requirements-{RELEASE}.txt"
GLANCE_REQUIREMENTS = REPO_ROOT / "images" / "glance" / "requirements" / f"{RELEASE}.txt"
VENV_NAME = f"e2e-{RELEASE}"
VENV = REPO_ROOT / ".venv-glance" / VENV_NAME
# What the e2e suite runs, on top of Glance itself (``--lock`` resolves these).
TOP_LEVEL = (
    "glance==33.0.0",
    "glance-store[s3]",
    "keystone",
    "keystonemiddleware",
    "python-openstackclient",
    "python-glanceclient",
    "pyuwsgi",
    "moto[server]",
    "boto3",
    "pymysql",
    # keystonemiddleware's token cache (the rendered [keystone_authtoken] memcached_servers)
    # imports python-memcached; the image's pin list lacks it (see the e2e report).
    "python-memcached",
)
# Debian package -> the programs the suite runs from it.
DEBIAN_PACKAGES = {
    "mariadb-server": ("mariadbd", "mariadb-install-db"),
    "qemu-utils": ("qemu-img",),
    # the pass benchmark counts the programs a pass starts (tests/bench/bench_pass.py)
    "strace": ("strace",),
}
DEBIAN_DIRS = ("/usr/sbin", "/usr/bin")


def _hack(name: str):
    """``hack/<name>.py``, loaded as the module ``hack_<name>``."""
    spec = importlib.util.spec_from_file_location(f"hack_{name}", REPO_ROOT / "hack" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


glance_venv = _hack("glance_venv")
debian_packages = _hack("debian_packages")


def log(msg: str) -> None:
    print(f"[e2e-env] {msg}", file=sys.stderr, flush=True)


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pins(path: Path) -> dict[str, tuple[str, str]]:
    """canonical name -> (the line's spelling of the requirement, version)."""
    out = {}
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if "==" not in line:
            continue
        spelled, version = (part.strip() for part in line.split("==", 1))
        out[_canonical(spelled.split("[", 1)[0])] = (spelled, version)
    return out


# ---------------------------------------------------------------------------------------
# --lock: one resolver run


def lock(python: str) -> None:
    glance_pins = _pins(GLANCE_REQUIREMENTS)
    with tempfile.TemporaryDirectory(prefix="e2e-lock-") as tmp:
        venv = Path(tmp) / "venv"
        glance_venv._run([python, "-m", "venv", str(venv)], "python -m venv")
        constraints = Path(tmp) / "constraints.txt"
        constraints.write_text(
            "".join(
                f"{spelled.split('[', 1)[0]}=={version}\n"
                for spelled, version in glance_pins.values()
            )
        )
        report = Path(tmp) / "report.json"
        started = time.monotonic()
        glance_venv._run(
            [
                str(venv / "bin" / "python"),
                "-m",
                "pip",
                "install",
                "--quiet",
                "--dry-run",
                "--ignore-installed",
                "--report",
                str(report),
                "-c",
                str(constraints),
                *TOP_LEVEL,
            ],
            "pip install --dry-run (resolver)",
        )
        log(f"resolved in {time.monotonic() - started:.1f}s")
        installed = json.loads(report.read_text())["install"]
    lines = {}
    for item in installed:
        meta = item["metadata"]
        key = _canonical(meta["name"])
        spelled = glance_pins.get(key, (key, ""))[0]
        lines[key] = f"{spelled}=={meta['version']}"
    for key, (spelled, version) in glance_pins.items():
        lines.setdefault(key, f"{spelled}=={version}")  # setuptools: not a resolved dependency
    moved = sorted(k for k, (_, v) in glance_pins.items() if lines[k].split("==")[1] != v)
    if moved:
        raise SystemExit(f"the resolver moved glance pins {moved}: they must agree")
    header = (
        f"# The e2e environment (.venv-glance/{VENV_NAME}): glance 33.0.0 (release {RELEASE})\n"
        "# with keystone, keystonemiddleware, python-openstackclient, python-glanceclient,\n"
        "# pyuwsgi, moto[server], boto3, PyMySQL and python-memcached, for Python 3.12.\n"
        "# Complete: install with `pip install --no-deps -r`. Every pin of\n"
        "# images/glance/requirements/2026.2.txt is kept as is. Generated by\n"
        "# `python3 tests/e2e/setup_env.py --lock` (one resolver run); do not edit by hand.\n"
    )
    REQUIREMENTS.write_text(header + "".join(f"{lines[k]}\n" for k in sorted(lines)))
    log(f"wrote {REQUIREMENTS.relative_to(REPO_ROOT)}: {len(lines)} pins")


# ---------------------------------------------------------------------------------------
# the environment


def ensure_venv(python: str | None) -> bool:
    """Build the environment unless it is current (in the user's cache, linked at
    ``.venv-glance/e2e-<release>``: ``hack/glance_venv.py``); True when it was built."""
    return glance_venv.ensure_environment(VENV_NAME, REQUIREMENTS, VENV, python, log)


# ---------------------------------------------------------------------------------------
# Debian packages: MariaDB, qemu-img


def find_program(name: str) -> str | None:
    """A program on PATH or in the Debian packages' directories."""
    found = shutil.which(name)
    if found:
        return found
    for directory in DEBIAN_DIRS:
        candidate = Path(directory) / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def missing_packages() -> list[str]:
    """The Debian packages of which a program is missing."""
    return [
        package
        for package, programs in DEBIAN_PACKAGES.items()
        if not all(find_program(p) for p in programs)
    ]


def ensure_debian_packages() -> list[str]:
    """Install the Debian packages of which a program is missing; the ones installed."""
    missing = missing_packages()
    if not missing:
        log(f"{', '.join(DEBIAN_PACKAGES)} installed")
        return []
    try:  # as root; the packages' services are kept from starting: the harness runs its own
        debian_packages.install(missing, log)
    except debian_packages.PackagesError as exc:
        raise SystemExit(str(exc)) from None
    still = missing_packages()
    if still:
        raise SystemExit(
            f"installed {' '.join(missing)}, yet programs of {', '.join(still)} are missing"
        )
    return missing


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lock", action="store_true", help="re-resolve the pinned list")
    parser.add_argument("--python", help="the Python 3.12 interpreter to use")
    args = parser.parse_args(argv)
    try:
        if args.lock:
            lock(glance_venv.find_python(args.python))
            return 0
        ensure_debian_packages()
        ensure_venv(args.python)
    except glance_venv.GlanceVenvError as exc:
        log(str(exc))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
