"""Programs built from the Go module proxy into a cache outside the checkout.

A small Go module under ``hack/`` pins what to build: its ``go.mod`` requires the upstream
module at an exact version and names the programs in a ``tool`` block; ``go.sum`` checks
what the proxy serves. ``ensure`` builds them once into
``<cache>/<kind>/<label>-<go version>-<os>-<arch>-<digest>`` and reuses that directory
while it is complete; the digest covers the module's files and the build command, so a
change to either builds anew. A build writes into a temporary sibling renamed into place
when every binary is there: an interrupted build is never taken for a finished one. The
directory's ``versions.json`` records the label, the Go toolchain, the build seconds and
each binary's size.

The cache is ``$C5C3_CACHE_DIR``, else ``${XDG_CACHE_HOME:-~/.cache}/c5c3-glance``; Go's own
module and build caches are where ``go env`` puts them. Builds are static
(``CGO_ENABLED=0``), on the machine's Go (``GOTOOLCHAIN=local``), with ``-trimpath``.
Standard library only: ``hack/kube_assets.py`` and ``hack/kind_node.py`` use it.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

RECORD = "versions.json"
GO_SERIES = "go1.26"


class BuildError(Exception):
    """Why the programs cannot be built here; the message names what to do."""


@dataclass(frozen=True)
class GoBuild:
    kind: str  # the cache folder: kube-assets, kind-tools ...
    label: str  # what the directory name starts with: versions of what is built
    module_dir: Path
    packages: tuple[str, ...]  # import paths (the tool block) or ./relative main packages
    binaries: tuple[str, ...]  # what a complete directory holds
    ldflags: str = "-s -w"

    def command(self, output: Path) -> list[str]:
        return [
            "go",
            "build",
            "-trimpath",
            "-ldflags",
            self.ldflags,
            "-o",
            f"{output}/",
            *self.packages,
        ]


def go_mod(module_dir: Path) -> str:
    return (module_dir / "go.mod").read_text()


def required_version(module_dir: Path, module: str) -> str:
    """The version ``module_dir``'s go.mod requires of ``module``."""
    found = re.search(rf"^\s*(?:require\s+)?{re.escape(module)} (v\S+)", go_mod(module_dir), re.M)
    if not found:
        raise BuildError(f"{module_dir / 'go.mod'} requires no {module}")
    return found.group(1)


def tools(module_dir: Path) -> tuple[str, ...]:
    """The programs of ``module_dir``'s go.mod ``tool`` block."""
    block = re.search(r"^tool \((.*?)^\)", go_mod(module_dir), re.M | re.S)
    found = (
        tuple(line.strip() for line in block.group(1).splitlines() if line.strip()) if block else ()
    )
    single = re.findall(r"^tool ([^(\s]\S*)$", go_mod(module_dir), re.M)
    if not found + tuple(single):
        raise BuildError(f"{module_dir / 'go.mod'} names no tool to build")
    return found + tuple(single)


def build_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if environ is None else environ)
    env.update(CGO_ENABLED="0", GOTOOLCHAIN="local", GOFLAGS="-mod=readonly -buildvcs=false")
    return env


def module_source(module_dir: Path, module: str) -> Path:
    """The directory of ``module``, at the version ``module_dir``'s go.mod requires, in Go's
    module cache (downloaded first if missing): its charts, CRDs and manifests."""
    version = required_version(module_dir, module)
    done = subprocess.run(
        ["go", "mod", "download", "-json", f"{module}@{version}"],
        cwd=module_dir,
        env=build_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise BuildError(f"go mod download {module}@{version}: {done.stdout}{done.stderr}")
    return Path(json.loads(done.stdout)["Dir"])


def go_env(env: dict[str, str], *names: str) -> list[str]:
    if shutil.which("go", path=env.get("PATH")) is None:
        raise BuildError(f"no go on PATH: these programs are built with Go ({GO_SERIES}.x)")
    done = subprocess.run(
        ["go", "env", *names], capture_output=True, text=True, env=env, check=False
    )
    values = done.stdout.splitlines()
    if done.returncode != 0 or len(values) != len(names):
        raise BuildError(f"go env {' '.join(names)} failed: {done.stderr.strip()}")
    return values


def check_go(version: str, series: str = GO_SERIES) -> None:
    if not (version == series or version.startswith(series + ".")):
        raise BuildError(
            f"these programs are built with {series}.x, and `go` is {version} "
            "(an apiserver built with Go 1.27 served a broken OpenAPI document here)"
        )


def digest(build: GoBuild) -> str:
    """A digest of what decides the output: the module's files and the build command."""
    hashed = hashlib.sha256()
    for path in sorted(p for p in build.module_dir.rglob("*") if p.is_file()):
        hashed.update(str(path.relative_to(build.module_dir)).encode() + b"\0")
        hashed.update(path.read_bytes() + b"\0")
    hashed.update(" ".join(build.command(Path("out"))).encode())
    return hashed.hexdigest()[:12]


def cache_root(environ: dict[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    if env.get("C5C3_CACHE_DIR"):
        return Path(env["C5C3_CACHE_DIR"])
    base = env.get("XDG_CACHE_HOME") or str(Path(env.get("HOME", "~")).expanduser() / ".cache")
    return Path(base) / "c5c3-glance"


def output_dir(build: GoBuild, env: dict[str, str]) -> Path:
    go, goos, goarch = go_env(env, "GOVERSION", "GOOS", "GOARCH")
    check_go(go)
    name = f"{build.label}-{go}-{goos}-{goarch}-{digest(build)}"
    return cache_root(env) / build.kind / name


def complete(build: GoBuild, directory: Path) -> bool:
    return (directory / RECORD).is_file() and all(
        os.access(directory / b, os.X_OK) for b in build.binaries
    )


def lock_path(target: Path, env: dict[str, str]) -> Path:
    """The lock file of ``target``'s build: beside the cache's folders, not in them."""
    return cache_root(env) / ".locks" / f"{target.parent.name}-{target.name}"


@contextmanager
def exclusive(lock: Path, waiting: Callable[[], None]) -> Iterator[None]:
    """Hold ``lock`` (an ``flock`` on that file) for the block; ``waiting()`` first if
    another process holds it, then wait for it."""
    with lock.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            waiting()
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield  # the lock goes with the file's closing


def ensure(build: GoBuild, say: Callable[[str], None], env: dict[str, str] | None = None) -> Path:
    """The directory of ``build``'s binaries, built first unless a complete one is cached.
    One build of a directory at a time: a second caller (``hack/prebuild.py`` building in
    the background, another test) waits for the first and takes what it made."""
    env = build_env(env)
    target = output_dir(build, env)
    if complete(build, target):
        say(f"reusing {target}")
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    lock = lock_path(target, env)
    lock.parent.mkdir(parents=True, exist_ok=True)
    with exclusive(lock, lambda: say(f"waiting for the build of {build.label} under way")):
        if complete(build, target):
            say(f"reusing {target}, built meanwhile")
            return target
        return _build(build, say, env, target)


def _build(build: GoBuild, say: Callable[[str], None], env: dict[str, str], target: Path) -> Path:
    staging = Path(tempfile.mkdtemp(prefix=target.name + ".building-", dir=target.parent))
    try:
        command = build.command(staging)
        say(f"building {build.label}: {' '.join(build.packages)}")
        started = time.monotonic()
        done = subprocess.run(command, cwd=build.module_dir, env=env, check=False)
        seconds = round(time.monotonic() - started, 1)
        if done.returncode != 0:
            raise BuildError(f"go build failed (exit {done.returncode}) in {build.module_dir}")
        missing = [b for b in build.binaries if not os.access(staging / b, os.X_OK)]
        if missing:
            raise BuildError(f"go build made no {', '.join(missing)}")
        record = {
            "label": build.label,
            "go": go_env(env, "GOVERSION")[0],
            "build_seconds": seconds,
            "sizes": {b: (staging / b).stat().st_size for b in build.binaries},
        }
        (staging / RECORD).write_text(json.dumps(record, indent=2) + "\n")
        staging.chmod(0o755)
        if target.exists():  # another build finished first: same inputs, same result
            shutil.rmtree(staging)
        else:
            staging.rename(target)
        total = sum(record["sizes"].values()) / 2**20
        say(f"built in {seconds:.0f} s, {total:.0f} MiB: {target}")
        return target
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
