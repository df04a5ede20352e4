#!/usr/bin/env python3
"""Build the virtual environment of a Glance release: ``.venv-glance/<release>``.

Each environment holds exactly the pinned package set of
``images/glance/requirements/<release>.txt`` (``pip install --no-deps``: the file is
complete, so the result is reproducible) on Python 3.12, and ``pip check`` must pass.
Tests run the real Glance code of a release with ``.venv-glance/<release>/bin/python``.

Built once per machine, not per checkout: the environment lives in the user's cache
(``<cache>/venvs/<name>-py<version>-<digest>``, the cache of ``hack/go_build.py``, the digest
covering the requirements file and the Python version), and ``.venv-glance/<release>`` is a
link to it. A stamp file, written last, records what it was built from; when it matches,
nothing is done but the link, otherwise the environment is rebuilt from scratch. A lock file
in the cache serialises concurrent builds, also from two checkouts.

    python3 hack/glance_venv.py                 # every release
    python3 hack/glance_venv.py 2026.2          # one
    make glance-venvs GLANCE_RELEASES="2026.2"

Python 3.12: ``--python``, else ``$C5C3_GLANCE_PYTHON``, else the newest
``~/.pyenv/versions/3.12.*/bin/python3.12``, else ``python3.12`` on PATH.

``--checkout-venv`` does the same for the checkout's ``.venv`` (``make venv``: pip upgraded,
then ``pip install -r requirements.txt``, as before), so a second checkout of the same pins
starts with its environment at once.

Standard library only; importable (``ensure_venv``, ``ensure_environment``) by the test
suite and ``tests/e2e/setup_env.py``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import go_build

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


def shown(path: Path) -> str:
    """``path`` relative to the checkout where it is in it."""
    return str(path.relative_to(REPO_ROOT)) if path.is_relative_to(REPO_ROOT) else str(path)


def cached_dir(name: str, requirements: Path, python_version: str) -> Path:
    """Where the environment ``name`` built from ``requirements`` with that Python lives in
    the user's cache."""
    hashed = hashlib.sha256(requirements.read_bytes() + b"\0" + python_version.encode())
    return go_build.cache_root() / "venvs" / f"{name}-py{python_version}-{hashed.hexdigest()[:12]}"


def _link(link: Path, target: Path) -> None:
    """``link`` (a checkout's ``.venv-glance/<name>``) made a link to ``target``, whatever
    was there: an environment built in place by an earlier version, or an old link."""
    if link.is_symlink():
        if link.readlink() == target:
            return
        link.unlink()
    elif link.exists():
        shutil.rmtree(link)
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)


def ensure_environment(
    name: str,
    requirements: Path,
    link: Path,
    python: str | None = None,
    log: Callable[[str], None] | None = None,
    complete: bool = True,
) -> bool:
    """The environment of ``requirements`` in the user's cache, linked at ``link``; built
    first unless a complete one is there. A ``complete`` file is a whole pinned set:
    ``pip install --no-deps``, then ``pip check``; otherwise pip is upgraded and the file
    installed as ``pip install -r`` does (the checkout's ``.venv``). True when it was built.
    Raises GlanceVenvError when it cannot be."""
    log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    interpreter = find_python(python)
    version = _python_version(interpreter) or "?"
    target = cached_dir(name, requirements, version)
    stamp = {"requirements_sha256": hashlib.sha256(requirements.read_bytes()).hexdigest()}
    stamp["python"] = version
    target.parent.mkdir(parents=True, exist_ok=True)
    lock = go_build.cache_root() / ".locks" / f"venv-{target.name}"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with go_build.exclusive(lock, lambda: log(f"[{name}] waiting for its build under way")):
        try:
            reused = json.loads((target / STAMP).read_text(encoding="utf-8")) == stamp
        except (OSError, ValueError):
            reused = False
        if not reused:
            _build(name, requirements, target, interpreter, version, complete, log)
            (target / STAMP).write_text(
                json.dumps(stamp, indent=1, sort_keys=True) + "\n", encoding="utf-8"
            )
        _link(link, target)
    if reused:
        log(f"[{name}] {shown(link)} is up to date ({target})")
    return not reused


def _build(
    name: str,
    requirements: Path,
    target: Path,
    interpreter: str,
    version: str,
    complete: bool,
    log: Callable[[str], None],
) -> None:
    if target.exists():
        shutil.rmtree(target)
    started = time.monotonic()
    log(f"[{name}] creating {target} with Python {version}")
    _run([interpreter, "-m", "venv", str(target)], "python -m venv")
    pip = [str(target / "bin" / "python"), "-m", "pip", "--disable-pip-version-check"]
    source = shown(requirements)
    if complete:
        log(f"[{name}] pip install --no-deps -r {source}")
        out = _run(
            [*pip, "install", "--quiet", "--no-deps", "-r", str(requirements)], "pip install"
        )
        if out:
            log(out)
        _run([*pip, "check"], "pip check")
    else:
        _run([*pip, "install", "--quiet", "--upgrade", "pip"], "pip install --upgrade pip")
        log(f"[{name}] pip install -r {source}")
        _run([*pip, "install", "--quiet", "-r", str(requirements)], "pip install")
    log(f"[{name}] built in {time.monotonic() - started:.1f}s")


def ensure_venv(
    release: str, python: str | None = None, log: Callable[[str], None] | None = None
) -> Path:
    """``.venv-glance/<release>``, built first unless it is current; return its python.

    Raises GlanceVenvError when it cannot be built.
    """
    req = requirements_file(release)
    if not req.is_file():
        raise GlanceVenvError(f"no {req.relative_to(REPO_ROOT)}: unknown release {release}")
    ensure_environment(release, req, venv_dir(release), python, log)
    return venv_python(release)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("release", nargs="*", help=f"default: all ({' '.join(releases())})")
    parser.add_argument("--python", help=f"the Python {PYTHON_SERIES} interpreter to use")
    parser.add_argument(
        "--checkout-venv",
        action="store_true",
        help="instead: the checkout's .venv from requirements.txt (make venv)",
    )
    args = parser.parse_args(argv)
    if args.checkout_venv:
        try:
            ensure_environment(
                "venv",
                REPO_ROOT / "requirements.txt",
                REPO_ROOT / ".venv",
                args.python,
                complete=False,
            )
        except GlanceVenvError as exc:
            print(f"[venv] {exc}", file=sys.stderr)
            return 1
        return 0
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
