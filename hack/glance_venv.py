#!/usr/bin/env python3
"""Build the virtual environment of a Glance release: ``.venv-glance/<release>``.

Each environment holds exactly the pinned package set of
``images/glance/requirements/<release>.txt`` (``pip install --no-deps``: the file is
complete, so the result is reproducible) on Python 3.12, and ``pip check`` must pass.
Tests run the real Glance code of a release with ``.venv-glance/<release>/bin/python``.

Idempotent: a stamp file records the SHA-256 of the requirements file and the Python
version the environment was built from; when both match nothing is done, otherwise the
environment is rebuilt from scratch. A lock file serialises concurrent builds.

    python3 hack/glance_venv.py                 # every release
    python3 hack/glance_venv.py 2026.2          # one
    make glance-venvs GLANCE_RELEASES="2026.2"

Python 3.12: ``--python``, else ``$C5C3_GLANCE_PYTHON``, else the newest
``~/.pyenv/versions/3.12.*/bin/python3.12``, else ``python3.12`` on PATH.

Standard library only; importable (``ensure_venv``) by the test suite.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
VENV_ROOT = REPO_ROOT / ".venv-glance"
REQUIREMENTS_DIR = REPO_ROOT / "images" / "glance" / "requirements"
STAMP = ".c5c3-glance-venv.json"
PYTHON_SERIES = "3.12"
# Lines pip prints because of this machine's pip configuration, not because of the install.
_PIP_NOISE = ("is ignored: it is neither",)


class GlanceVenvError(RuntimeError):
    """The environment cannot be built (no Python 3.12, pip failed, pip check failed)."""


def releases() -> list[str]:
    """Every release with a requirements file, sorted."""
    return sorted(p.stem for p in REQUIREMENTS_DIR.glob("*.txt"))


def requirements_file(release: str) -> Path:
    return REQUIREMENTS_DIR / f"{release}.txt"


def venv_dir(release: str) -> Path:
    return VENV_ROOT / release


def venv_python(release: str) -> Path:
    return venv_dir(release) / "bin" / "python"


def _python_version(python: str) -> str | None:
    try:
        proc = subprocess.run(
            [python, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
            text=True,
            capture_output=True,
            check=False,
        )
    except OSError:
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def _series(version: str | None) -> str | None:
    return ".".join(version.split(".")[:2]) if version else None


def find_python(explicit: str | None = None) -> str:
    """A Python 3.12 interpreter; GlanceVenvError when there is none."""
    candidates: list[str] = []
    if explicit:
        candidates.append(explicit)
    elif os.environ.get("C5C3_GLANCE_PYTHON"):
        candidates.append(os.environ["C5C3_GLANCE_PYTHON"])
    else:
        pyenv = Path.home() / ".pyenv" / "versions"

        def patch_level(p: Path) -> int:
            tail = p.parents[1].name.split(".")[-1]
            return int(tail) if tail.isdigit() else -1

        found = sorted(pyenv.glob(f"{PYTHON_SERIES}.*/bin/python{PYTHON_SERIES}"), key=patch_level)
        candidates.extend(str(p) for p in reversed(found))
        on_path = shutil.which(f"python{PYTHON_SERIES}")
        if on_path:
            candidates.append(on_path)
    for python in candidates:
        if _series(_python_version(python)) == PYTHON_SERIES:
            return python
    tried = ", ".join(candidates) or "nothing found"
    raise GlanceVenvError(
        f"no Python {PYTHON_SERIES} interpreter (tried: {tried}); install one with "
        f"`pyenv install {PYTHON_SERIES}` or put python{PYTHON_SERIES} on PATH"
    )


def stamp_of(release: str, python_version: str) -> dict[str, str]:
    """What the environment of ``release`` must have been built from to be reused."""
    digest = hashlib.sha256(requirements_file(release).read_bytes()).hexdigest()
    return {"requirements_sha256": digest, "python": python_version}


def _read_stamp(release: str) -> dict[str, str] | None:
    try:
        return json.loads((venv_dir(release) / STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def is_current(release: str) -> bool:
    """The environment exists and was built from the current requirements file."""
    stamp = _read_stamp(release)
    python = venv_python(release)
    if stamp is None or not python.exists():
        return False
    version = _python_version(str(python))
    return version is not None and stamp == stamp_of(release, version)


@contextlib.contextmanager
def _locked(release: str) -> Iterator[None]:
    VENV_ROOT.mkdir(parents=True, exist_ok=True)
    with open(VENV_ROOT / f".{release}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _run(cmd: list[str], what: str) -> str:
    proc = subprocess.run(cmd, text=True, capture_output=True, check=False)
    out = "\n".join(
        line
        for line in (proc.stdout + proc.stderr).splitlines()
        if not any(noise in line for noise in _PIP_NOISE)
    ).strip()
    if proc.returncode != 0:
        raise GlanceVenvError(f"{what} failed (exit {proc.returncode}):\n{out}")
    return out


def ensure_venv(
    release: str, python: str | None = None, log: Callable[[str], None] | None = None
) -> Path:
    """Build ``.venv-glance/<release>`` unless it is current; return its python.

    Raises GlanceVenvError when it cannot be built.
    """
    log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    req = requirements_file(release)
    if not req.is_file():
        raise GlanceVenvError(f"no {req.relative_to(REPO_ROOT)}: unknown release {release}")
    with _locked(release):
        if is_current(release):
            log(f"[{release}] {venv_dir(release).relative_to(REPO_ROOT)} is up to date")
            return venv_python(release)
        interpreter = find_python(python)
        version = _python_version(interpreter) or "?"
        target = venv_dir(release)
        if target.exists():
            shutil.rmtree(target)
        log(f"[{release}] creating {target.relative_to(REPO_ROOT)} with Python {version}")
        _run([interpreter, "-m", "venv", str(target)], "python -m venv")
        pip = [str(venv_python(release)), "-m", "pip", "--disable-pip-version-check"]
        log(f"[{release}] pip install --no-deps -r {req.relative_to(REPO_ROOT)}")
        out = _run([*pip, "install", "--quiet", "--no-deps", "-r", str(req)], "pip install")
        if out:
            log(out)
        _run([*pip, "check"], "pip check")
        (target / STAMP).write_text(
            json.dumps(stamp_of(release, version), indent=1, sort_keys=True) + "\n",
            encoding="utf-8",
        )
        return venv_python(release)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("release", nargs="*", help=f"default: all ({' '.join(releases())})")
    parser.add_argument("--python", help=f"the Python {PYTHON_SERIES} interpreter to use")
    args = parser.parse_args(argv)
    known = releases()
    for release in args.release:
        if release not in known:
            parser.error(f"unknown release {release!r}; known: {' '.join(known)}")
    for release in args.release or known:
        started = time.monotonic()
        try:
            ensure_venv(release, args.python)
        except GlanceVenvError as exc:
            print(f"[{release}] {exc}", file=sys.stderr)
            return 1
        print(f"[{release}] ready in {time.monotonic() - started:.1f}s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
