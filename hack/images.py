#!/usr/bin/env python3
"""Build the project's container images in the local Docker daemon: ``make images``.

    make images                               # the operator and the Glance image of every release
    make images GLANCE_RELEASES=2026.2        # the operator and the Glance image of 2026.2
    python3 hack/images.py --base local 2026.2
    python3 hack/images.py --dry-run          # the decisions and the commands; nothing is built

The images (docs/install.md, "Building the images"):

* ``ghcr.io/c5c3/glance-operator:<galaxy.yml version>``: ``Dockerfile``, context the
  repository root;
* ``ghcr.io/c5c3/glance:<release>`` for each release asked for (default: every
  ``images/glance/requirements/<release>.txt``): ``images/glance/Dockerfile``, context
  ``images/glance``;
* ``ghcr.io/c5c3/glance-operator:<version>-ansible-operator``:
  ``images/ansible-operator/Dockerfile``, context the repository root, only where its base
  (operator-framework's ansible-operator) is in Docker or can be pulled. Nothing here can
  make that base, so the image is skipped, saying so, where it cannot be pulled.

The Python base. Each Dockerfile names its public base as the default of ``ARG
PYTHON_IMAGE`` (``python:3.12.13-slim-trixie`` for the operator images,
``python:3.12-slim-bookworm`` for Glance). ``--base auto`` (the default) builds on the
public base where Docker has it or can pull it, and otherwise on a local base made here
(``--build-arg PYTHON_IMAGE=<local base>``); ``--base public`` builds on the public base or
fails, naming it; ``--base local`` always builds on the local base.

The local base, ``localhost/c5c3-python:<x.y.z>-slim-<suite>`` (also tagged
``<x.y>-slim-<suite>``), is what the public image is: Debian ``<suite>`` (``mmdebstrap
--variant=minbase``, documentation and locales left out as in Debian's slim images) with a
CPython 3.12 in ``/usr/local`` (``python``, ``python3``, ``pip``, ``venv``), the runtime
libraries it links, ``ca-certificates``, ``netbase`` and ``tzdata``. The CPython is the
install prefix of ``--python`` (pyenv's), less its tests, IDLE, tkinter, static library and
bytecode, with debugging symbols stripped; pip comes from its own ``ensurepip``. One base
per Debian suite the Dockerfiles name. The machine's extra CA certificates
(``--extra-ca-dir``, ``/usr/local/share/ca-certificates/*.crt``) are added to the local
base's trust store and ``PIP_CERT`` points pip at it: pip in the builds reaches PyPI
through this machine's egress proxy, which presents its own CA. That is the local base
only; the Dockerfiles and the public bases carry no such certificate. A local base is made
once; ``docker rmi`` it to have it made anew.

Every build runs with ``--network host`` unless ``--network`` says otherwise (an empty
value: Docker's default network). The run ends with each image's size and build seconds.

Standard library only; the decisions are functions the tests call without Docker
(tests/install/test_images_script.py).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import go_build

ROOT = Path(__file__).resolve().parent.parent
REQUIREMENTS_DIR = ROOT / "images" / "glance" / "requirements"
REGISTRY = "ghcr.io/c5c3"
LOCAL_BASE_REPOSITORY = "localhost/c5c3-python"
PYTHON_SERIES = "3.12"
EXTRA_CA_DIR = Path("/usr/local/share/ca-certificates")
PULL_TIMEOUT = 600
MODES = ("auto", "public", "local")
# The Debian packages of the local base: the public python:*-slim images' runtime set. The
# bookworm names; apt picks the t64 package that provides each in trixie (libssl3t64 ...).
BASE_PACKAGES = (
    "ca-certificates",
    "netbase",
    "tzdata",
    "libbz2-1.0",
    "libexpat1",
    "libffi8",
    "liblzma5",
    "libncursesw6",
    "libnsl2",
    "libreadline8",
    "libsqlite3-0",
    "libssl3",
    "libtinfo6",
    "libtirpc3",
    "libuuid1",
    "zlib1g",
)
# What Debian's slim images leave out (debuerreotype's slimify), as dpkg options.
SLIM_DPKG_OPTIONS = (
    "path-exclude=/usr/share/doc/*",
    "path-include=/usr/share/doc/*/copyright",
    "path-exclude=/usr/share/man/*",
    "path-exclude=/usr/share/info/*",
    "path-exclude=/usr/share/locale/*",
    "path-exclude=/usr/share/groff/*",
    "path-exclude=/usr/share/lintian/*",
)
# mmdebstrap's hooks that set up merged /usr with directory symlinks (usr-is-merged).
MERGED_USR_HOOKS = Path("/usr/share/mmdebstrap/hooks/merged-usr")
# Left out of the CPython copied into the local base (the public image has no tests either).
PRUNED_DIRS = {"test", "tests", "idle_test", "idlelib", "tkinter", "turtledemo", "__pycache__"}
PRUNED_FILES = re.compile(r".*\.py[co]|libpython.*\.a|_tkinter\..*\.so|idle.*|python.*-gdb\.py")
# The modules a Python build must have (their libraries come from BASE_PACKAGES).
REQUIRED_MODULES = (
    "bz2 ctypes curses decimal ensurepip hashlib lzma pyexpat readline sqlite3 ssl uuid venv zlib"
)


class ImagesError(RuntimeError):
    """Something the user must change: the message says what."""


# --- what to build ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Image:
    """One image: its tag, Dockerfile and context (relative to the repository root), the
    build arguments beyond the Python base. ``optional``: skipped, not failed, where a base
    other than the Python one cannot be had (the ansible-operator image)."""

    name: str
    dockerfile: str
    context: str
    build_args: tuple[tuple[str, str], ...] = ()
    optional: bool = False
    sbom_stage: str | None = None  # the stage writing /sbom.cdx.json (``write_sbom``)


def galaxy_version(root: Path = ROOT) -> str:
    """The collection's version in galaxy.yml: the operator image's tag."""
    found = re.search(r"^version:\s*['\"]?([^'\"\s]+)", (root / "galaxy.yml").read_text(), re.M)
    if not found:
        raise ImagesError("galaxy.yml has no version")
    return found[1]


def known_releases(requirements_dir: Path = REQUIREMENTS_DIR) -> list[str]:
    return sorted(p.stem for p in requirements_dir.glob("*.txt"))


def check_releases(asked: Iterable[str], known: list[str]) -> list[str]:
    """The releases to build: those asked for (every known one when none is), each of
    which must have its pin list."""
    asked = list(dict.fromkeys(asked)) or known
    if not known:
        raise ImagesError(f"no pin list in {REQUIREMENTS_DIR.relative_to(ROOT)}: no Glance image")
    unknown = [r for r in asked if r not in known]
    if unknown:
        raise ImagesError(
            f"no Glance pin list for {', '.join(unknown)} "
            f"(images/glance/requirements/<release>.txt); the releases are {', '.join(known)}"
        )
    return asked


def images(version: str, releases: Iterable[str]) -> list[Image]:
    """Every image ``make images`` builds, in order: the operator, Glance per release, the
    ansible-operator variant."""
    found = [Image(f"{REGISTRY}/glance-operator:{version}", "Dockerfile", ".", sbom_stage="sbom")]
    for release in releases:
        found.append(
            Image(
                f"{REGISTRY}/glance:{release}",
                "images/glance/Dockerfile",
                "images/glance",
                (("OPENSTACK_RELEASE", release),),
            )
        )
    found.append(
        Image(
            f"{REGISTRY}/glance-operator:{version}-ansible-operator",
            "images/ansible-operator/Dockerfile",
            ".",
            optional=True,
        )
    )
    return found


# --- what a Dockerfile builds on ---------------------------------------------------------------


def _logical_lines(text: str) -> list[str]:
    lines, pending = [], ""
    for line in text.splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if pending and line.lstrip().startswith("#"):
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        lines.append((pending + line).strip())
        pending = ""
    return lines


def arg_defaults(text: str) -> dict[str, str]:
    """The ``ARG NAME=default`` lines before the first FROM (those FROM lines may use)."""
    found = {}
    for line in _logical_lines(text):
        keyword, _, rest = line.partition(" ")
        if keyword.upper() == "FROM":
            break
        if keyword.upper() == "ARG" and "=" in rest:
            name, _, default = rest.strip().partition("=")
            found[name] = default.strip().strip("\"'")
    return found


def bases(text: str, build_args: dict[str, str] | None = None) -> list[str]:
    """The images the Dockerfile's FROM lines name (stages excluded), build arguments
    applied over the ARG defaults, in order, each once."""
    values = {**arg_defaults(text), **(build_args or {})}
    stages: set[str] = set()
    found: list[str] = []
    for line in _logical_lines(text):
        keyword, _, rest = line.partition(" ")
        if keyword.upper() != "FROM":
            continue
        words = [w for w in rest.split() if not w.startswith("--")]
        image = re.sub(r"\$\{?(\w+)\}?", lambda m: values.get(m[1], ""), words[0])
        if len(words) >= 3 and words[1].upper() == "AS":
            stages.add(words[2])
        if image not in stages and image not in found:
            found.append(image)
    return found


def python_base(text: str) -> str:
    """The public Python base: the default of ``ARG PYTHON_IMAGE``."""
    try:
        return arg_defaults(text)["PYTHON_IMAGE"]
    except KeyError:
        raise ImagesError("the Dockerfile has no ARG PYTHON_IMAGE=<public base>") from None


def debian_suite(image: str) -> str:
    """``trixie`` of ``python:3.12.13-slim-trixie`` (a digest, if any, is ignored)."""
    found = re.search(r"-slim-([a-z]+)$", image.split("@", 1)[0])
    if not found:
        raise ImagesError(
            f"cannot tell the Debian suite of {image}: the local base needs one named in the "
            "tag, as in python:3.12-slim-bookworm"
        )
    return found[1]


def local_base(python_version: str, suite: str) -> str:
    return f"{LOCAL_BASE_REPOSITORY}:{python_version}-slim-{suite}"


def local_base_alias(python_version: str, suite: str) -> str:
    return local_base(".".join(python_version.split(".")[:2]), suite)


# --- the decisions ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Build:
    image: Image
    base: str  # the Python base the image builds on
    local_suite: str | None  # the Debian suite of the local base to make, or None (public)


@dataclass(frozen=True)
class Skip:
    image: Image
    reason: str


def decide(
    image: Image,
    dockerfile_text: str,
    mode: str,
    available: Callable[[str], str],
    local: Callable[[str], str],
) -> Build | Skip:
    """Build ``image`` on which Python base, or skip it and why. ``available(ref)`` is ""
    where Docker has ``ref`` or can pull it, else why not; ``local(suite)`` names the local
    base of a Debian suite."""
    if mode not in MODES:
        raise ImagesError(f"the base is one of {', '.join(MODES)}, not {mode!r}")
    public = python_base(dockerfile_text)
    for other in bases(dockerfile_text, dict(image.build_args)):
        if other == public:
            continue
        problem = available(other)
        if problem and image.optional:
            return Skip(
                image,
                f"its base {other} is not in Docker and cannot be pulled here ({problem}); "
                "nothing here can make it",
            )
        if problem:
            raise ImagesError(f"{image.name}: its base {other} cannot be had: {problem}")
    if mode == "local":
        suite = debian_suite(public)
        return Build(image, local(suite), suite)
    problem = available(public)
    if not problem:
        return Build(image, public, None)
    if mode == "public":
        raise ImagesError(
            f"{image.name}: the public base {public} is not in Docker and cannot be pulled "
            f"({problem}); IMAGES_BASE=auto or local builds it on a local base made here"
        )
    suite = debian_suite(public)
    return Build(image, local(suite), suite)


# --- the bill of materials -----------------------------------------------------------------------

SBOM_DIR = ROOT / "out" / "images"
SBOM_PATH = "/sbom.cdx.json"
CONCLUDED_LICENSES = {
    # name: (SPDX expression, why): runtime packages whose metadata gives a licence as a
    # trove classifier or not at all; the expression is read off the licence files each
    # wheel ships (cyclonedx-py puts their texts in the SBOM beside it).
    "Jinja2": ("BSD-3-Clause", "classifier 'BSD License'; LICENSE.txt is BSD 3-Clause"),
    "google-re2": ("BSD-3-Clause", "classifier 'BSD License'; LICENSE is RE2's BSD 3-Clause"),
    "ansible-runner": ("Apache-2.0", "classifier 'Apache Software License'; LICENSE.md"),
    "python-daemon": (
        "Apache-2.0 AND GPL-3.0-or-later",
        "License 'Copying this work'; ships LICENSE.ASF-2 (its code) and LICENSE.GPL-3",
    ),
    "cel-python": ("Apache-2.0", "no licence in its metadata; LICENSE is Apache License 2.0"),
}
SPDX_WORDS = re.compile(r"[A-Za-z0-9.+-]+")


def spdx_ids(bom: dict) -> dict[str, set[str]]:
    """Each component's SPDX licence ids (from its expressions and ids; a classifier name or
    a licence file is not one)."""
    out: dict[str, set[str]] = {}
    for component in bom.get("components") or []:
        ids: set[str] = set()
        for entry in component.get("licenses") or []:
            text = entry.get("expression") or (entry.get("license") or {}).get("id") or ""
            ids |= {w for w in SPDX_WORDS.findall(text) if w not in ("AND", "OR", "WITH")}
        out[component["name"]] = ids
    return out


def conclude_licenses(bom: dict) -> list[str]:
    """Give each component without an SPDX licence the one ``CONCLUDED_LICENSES`` holds
    (CycloneDX's ``acknowledgement: concluded``: ours, read off its licence files, where
    the declared ones are the package's own). The names of those still without one."""
    ids = spdx_ids(bom)
    missing = []
    for component in bom.get("components") or []:
        if ids[component["name"]]:
            continue
        concluded = CONCLUDED_LICENSES.get(component["name"])
        if concluded is None:
            missing.append(component["name"])
            continue
        component.setdefault("licenses", []).append(
            {"expression": concluded[0], "acknowledgement": "concluded"}
        )
    return missing


def write_sbom(docker: Docker, build: Build, network: str, out_dir: Path = SBOM_DIR) -> Path:
    """Build the image's SBOM stage (its layers cached by the image's own build) and copy
    the CycloneDX document it wrote out, beside the image: ``out/images/<name>-<tag>.cdx.json``,
    with the concluded licences added. Nothing of the stage is left in Docker."""
    image = build.image
    staged = f"{image.name}-sbom-stage"
    command = build_command(build, network, target=image.sbom_stage, tag=staged)
    if docker.stream(command[1:]) != 0:
        raise ImagesError(f"docker build of {image.name}'s SBOM failed: " + shlex.join(command))
    try:
        bom = json.loads(docker.file_of(staged, SBOM_PATH))
    finally:
        docker.remove_image(staged)
    missing = conclude_licenses(bom)
    if missing:
        raise ImagesError(
            f"{image.name}: no licence for {', '.join(missing)} in the SBOM: read it off the "
            "package's licence files into CONCLUDED_LICENSES (hack/images.py)"
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / (image.name.rsplit("/", 1)[-1].replace(":", "-") + ".cdx.json")
    path.write_text(json.dumps(bom, indent=2) + "\n")
    return path


def build_command(
    build: Build, network: str, target: str | None = None, tag: str | None = None
) -> list[str]:
    """The ``docker build`` of one image, run from the repository root. The Python base is
    passed only where it is not the Dockerfile's default; ``-f`` only where the Dockerfile
    is not the context's own. ``target``: one stage of it (``--target``), tagged ``tag``."""
    image = build.image
    command = ["docker", "build"]
    if network:
        command += ["--network", network]
    if build.local_suite:
        command += ["--build-arg", f"PYTHON_IMAGE={build.base}"]
    for name, value in image.build_args:
        command += ["--build-arg", f"{name}={value}"]
    if Path(image.dockerfile) != Path(image.context) / "Dockerfile":
        command += ["-f", image.dockerfile]
    if target:
        command += ["--target", target]
    return [*command, "-t", tag or image.name, image.context]


# --- Docker -----------------------------------------------------------------------------------


class Docker:
    """The docker CLI, as this script uses it."""

    def __init__(self, program: str = "docker"):
        self.program = program
        self._available: dict[str, str] = {}

    def _run(self, *argv: str, timeout: float | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(
            [self.program, *argv],
            capture_output=True,
            text=True,
            check=False,
            timeout=timeout,
        )

    def problem(self) -> str:
        """Why Docker cannot build here, or ""."""
        if shutil.which(self.program) is None:
            return f"no {self.program} on PATH (Debian: apt-get install docker.io)"
        try:
            info = self._run("info", "--format", "{{.ServerVersion}}", timeout=60)
        except subprocess.TimeoutExpired:
            return "docker info did not answer in 60 s"
        if info.returncode != 0:
            why = (info.stderr or info.stdout).strip().splitlines()
            last = why[-1] if why else f"exit {info.returncode}"
            return f"docker info failed: {last} (is dockerd running?)"
        return ""

    def has(self, ref: str) -> bool:
        return self._run("image", "inspect", "--format", "{{.Id}}", ref).returncode == 0

    def available(self, ref: str) -> str:
        """Why Docker cannot have ``ref`` (not there, and no pull), or "" (once per ref)."""
        if ref not in self._available:
            self._available[ref] = self._find(ref)
        return self._available[ref]

    def _find(self, ref: str) -> str:
        if self.has(ref):
            return ""
        if ref.startswith("localhost/"):
            return f"{ref} is not in Docker"
        say(f"not in Docker: docker pull {ref}")
        try:
            pulled = self._run("pull", ref, timeout=PULL_TIMEOUT)
        except subprocess.TimeoutExpired:
            return f"docker pull {ref} took over {PULL_TIMEOUT} s"
        if pulled.returncode == 0:
            return ""
        why = (pulled.stderr or pulled.stdout).strip().splitlines()
        return f"docker pull: {why[-1] if why else pulled.returncode}"

    def size(self, ref: str) -> int:
        out = self._run("image", "inspect", "--format", "{{.Size}}", ref)
        return int(out.stdout.strip()) if out.returncode == 0 else 0

    def stream(self, argv: list[str], cwd: Path = ROOT) -> int:
        """Run a docker command with its output on the terminal; the exit status."""
        return subprocess.run([self.program, *argv], cwd=cwd, check=False).returncode

    def file_of(self, ref: str, path: str) -> bytes:
        """The content of the file ``path`` of image ``ref`` (through a container created,
        never started, and removed)."""
        created = self._run("create", ref, "true")
        if created.returncode != 0:
            raise ImagesError(f"docker create {ref}: {created.stderr.strip()}")
        container = created.stdout.strip()
        try:
            with tempfile.TemporaryDirectory() as scratch:
                copied = self._run("cp", f"{container}:{path}", scratch)
                if copied.returncode != 0:
                    raise ImagesError(f"docker cp {ref}:{path}: {copied.stderr.strip()}")
                return (Path(scratch) / Path(path).name).read_bytes()
        finally:
            self._run("rm", container)

    def remove_image(self, ref: str) -> None:
        self._run("rmi", ref)

    def tag(self, source: str, target: str) -> None:
        done = self._run("tag", source, target)
        if done.returncode != 0:
            raise ImagesError(f"docker tag {source} {target}: {done.stderr.strip()}")


def say(message: str) -> None:
    print(f"[images] {message}", flush=True)


# --- the local base ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SourcePython:
    """The CPython install prefix copied into the local base."""

    prefix: Path
    version: str


def source_python(python: str) -> SourcePython:
    """The install prefix and version of ``python``, which must be a self-contained CPython
    3.12 (pyenv's), not the distribution's."""
    try:
        probe = subprocess.run(
            [
                python,
                "-c",
                "import json, platform, sys; "
                "print(json.dumps([sys.base_prefix, platform.python_version(), "
                "platform.python_implementation()]))",
            ],
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError as exc:
        raise ImagesError(f"--python {python}: {exc}") from None
    if probe.returncode != 0:
        raise ImagesError(f"--python {python} does not run: {probe.stderr.strip()[-300:]}")
    prefix, version, implementation = json.loads(probe.stdout)
    return check_source_python(Path(prefix), version, implementation, python)


def check_source_python(
    prefix: Path, version: str, implementation: str, python: str = "python"
) -> SourcePython:
    if implementation != "CPython" or not version.startswith(f"{PYTHON_SERIES}."):
        raise ImagesError(
            f"the local base needs a CPython {PYTHON_SERIES}; {python} is {implementation} "
            f"{version} (pyenv install {PYTHON_SERIES}, then --python or PYTHON312)"
        )
    if prefix == Path("/usr"):
        raise ImagesError(
            f"{python} is the distribution's Python (prefix /usr), patched and split into "
            "packages; the local base needs a self-contained CPython install prefix such as "
            f"pyenv's (pyenv install {PYTHON_SERIES})"
        )
    for needed in (f"bin/python{PYTHON_SERIES}", f"lib/python{PYTHON_SERIES}/os.py"):
        if not (prefix / needed).exists():
            raise ImagesError(f"{python}: no {needed} under its prefix {prefix}")
    return SourcePython(prefix, version)


def _is_elf(path: Path) -> bool:
    with path.open("rb") as f:
        return f.read(4) == b"\x7fELF"


def stage_python(source: SourcePython, target: Path) -> None:
    """Copy ``source`` into ``target`` laid out as ``/usr/local``: bin (the interpreter, its
    names, pydoc, 2to3, python-config), lib (libpython, the standard library), include,
    pkgconfig; pruned (PRUNED_DIRS, PRUNED_FILES, site-packages, which ensurepip fills in
    the base); the prefix rewritten to /usr/local in every text file; shared objects
    stripped of debugging symbols where ``strip`` is installed."""
    series = PYTHON_SERIES
    prefix = source.prefix

    def ignore(folder: str, names: list[str]) -> set[str]:
        skipped = {n for n in names if n in PRUNED_DIRS or PRUNED_FILES.fullmatch(n)}
        if Path(folder).name == "site-packages":
            skipped |= set(names)
        return skipped

    (target / "bin").mkdir(parents=True, exist_ok=True)
    for entry in sorted((prefix / "bin").iterdir()):
        name = entry.name
        ours = re.fullmatch(
            rf"(python|pydoc|2to3)(3|{re.escape(series)}|-{series})?(-config)?", name
        )
        if not ours or PRUNED_FILES.fullmatch(name):
            continue
        shutil.copy2(entry, target / "bin" / name, follow_symlinks=False)
    for name in (f"lib/python{series}", f"include/python{series}"):
        if (prefix / name).is_dir():
            shutil.copytree(prefix / name, target / name, symlinks=True, ignore=ignore)
    for entry in sorted((prefix / "lib").glob("libpython3*.so*")):
        shutil.copy2(entry, target / "lib" / entry.name, follow_symlinks=False)
    for entry in sorted((prefix / "lib" / "pkgconfig").glob("python*.pc")):
        (target / "lib" / "pkgconfig").mkdir(parents=True, exist_ok=True)
        shutil.copy2(entry, target / "lib" / "pkgconfig" / entry.name, follow_symlinks=False)
    old = str(prefix).encode()
    strip = shutil.which("strip")
    for path in target.rglob("*"):
        if path.is_symlink() or not path.is_file():
            continue
        if _is_elf(path):
            if strip:
                subprocess.run([strip, "--strip-unneeded", str(path)], check=True)
            continue
        data = path.read_bytes()
        if old in data and b"\0" not in data[:8192]:
            path.write_bytes(data.replace(old, b"/usr/local"))


CUSTOMIZE = """#!/bin/sh
# mmdebstrap --customize-hook: the CPython, the extra CA certificates, the checks.
set -eu
root="$1"
cp -a {stage}/. "$root/usr/local/"
{copy_certificates}
chroot "$root" /bin/sh -eu <<'IN_ROOT'
ldconfig
# Quiet unless they fail: their warnings (openssl rehash skipping the bundle, pip as root)
# are expected here.
update-ca-certificates >/tmp/c5c3.log 2>&1 || {{ cat /tmp/c5c3.log >&2; exit 1; }}
/usr/local/bin/python3 -m ensurepip --default-pip >/tmp/c5c3.log 2>&1 \\
    || {{ cat /tmp/c5c3.log >&2; exit 1; }}
rm -f /tmp/c5c3.log
missing=$(find /usr/local -type f \\( -name '*.so*' -o -perm -u+x \\) \\
    -exec ldd {{}} + 2>/dev/null | grep 'not found' | sort -u || true)
if [ -n "$missing" ]; then
    echo "the CPython in /usr/local links libraries this Debian has not installed:" >&2
    echo "$missing" >&2
    exit 1
fi
for module in {modules}; do
    /usr/local/bin/python3 -c "import $module" \\
        || {{ echo "python3 cannot import $module" >&2; exit 1; }}
done
/usr/local/bin/python3 -m venv /tmp/venv-check && rm -rf /tmp/venv-check
/usr/local/bin/pip --version
find /usr/local -depth -type d -name __pycache__ -exec rm -rf {{}} +
IN_ROOT
"""


@dataclass
class LocalBase:
    """A local base this run made (or found), for the summary."""

    tag: str
    seconds: float | None  # None: it was there already
    size: int = 0


def extra_certificates(ca_dir: Path) -> list[Path]:
    return sorted(ca_dir.glob("**/*.crt")) if ca_dir.is_dir() else []


def mmdebstrap_command(
    suite: str, hook: Path | None, output: Path, packages: Iterable[str] = BASE_PACKAGES
) -> list[str]:
    """Debian ``suite``'s minbase with ``packages`` (the local Python base's by default;
    hack/kind_node.py makes its bases with its own), slimmed, into ``output``; ``hook``
    is run as the customize hook, where given."""
    command = ["mmdebstrap", "--variant=minbase", "--include=" + ",".join(packages)]
    # Without recommended packages, as the public images install theirs; merged /usr set up
    # as debootstrap (and so Debian's images) does, not by the usrmerge package, which
    # brings perl.
    command.append('--aptopt=APT::Install-Recommends "false"')
    if MERGED_USR_HOOKS.is_dir():
        command.append(f"--hook-dir={MERGED_USR_HOOKS}")
    command += [f"--dpkgopt={option}" for option in SLIM_DPKG_OPTIONS]
    if hook is not None:
        command.append(f"--customize-hook={hook}")
    return [*command, suite, str(output)]


def import_changes(python_version: str, certificates: bool) -> list[str]:
    """The image configuration of the public python images (PATH, LANG, PYTHON_VERSION,
    CMD), and PIP_CERT where extra certificates were added: the pip that ensurepip
    installs trusts only its own CA bundle (certifi), not the system's."""
    changes = [
        "ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin",
        "ENV LANG=C.UTF-8",
        f"ENV PYTHON_VERSION={python_version}",
    ]
    if certificates:
        changes.append("ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt")
    return [*changes, 'CMD ["python3"]']


def make_local_base(docker: Docker, source: SourcePython, suite: str, ca_dir: Path) -> LocalBase:
    tag = local_base(source.version, suite)
    if docker.has(tag):
        say(f"{tag}: there already (docker rmi it to have it made anew)")
        docker.tag(tag, local_base_alias(source.version, suite))
        return LocalBase(tag, None, docker.size(tag))
    if shutil.which("mmdebstrap") is None:
        raise ImagesError(
            f"the local base {tag} needs mmdebstrap (Debian: apt-get install mmdebstrap); "
            "or build on the public base where the registry is reachable (IMAGES_BASE=public)"
        )
    certificates = extra_certificates(ca_dir)
    started = time.monotonic()
    say(
        f"making {tag}: Debian {suite} (mmdebstrap) with the CPython {source.version} of "
        f"{source.prefix}"
        + (f" and {len(certificates)} CA certificate(s) of {ca_dir}" if certificates else "")
    )
    with tempfile.TemporaryDirectory(prefix="c5c3-base-") as scratch:
        work = Path(scratch)
        stage_python(source, work / "stage")
        copy = "\n".join(
            f'cp {shlex.quote(str(c))} "$root/usr/local/share/ca-certificates/"'
            for c in certificates
        )
        hook = work / "customize.sh"
        hook.write_text(
            CUSTOMIZE.format(
                stage=shlex.quote(str(work / "stage")),
                copy_certificates=copy,
                modules=REQUIRED_MODULES,
            )
        )
        hook.chmod(0o755)
        rootfs = work / "rootfs.tar"
        command = mmdebstrap_command(suite, hook, rootfs)
        say("$ " + shlex.join(command))
        if subprocess.run(command, check=False).returncode != 0:
            raise ImagesError(f"mmdebstrap could not make the {suite} root filesystem (above)")
        command = ["import"]
        for change in import_changes(source.version, bool(certificates)):
            command += ["--change", change]
        message = f"c5c3 local base: Debian {suite} minbase, CPython {source.version}"
        command += ["--message", message, str(rootfs), tag]
        if docker.stream(command) != 0:
            raise ImagesError(f"docker import of {tag} failed (above)")
    docker.tag(tag, local_base_alias(source.version, suite))
    return LocalBase(tag, time.monotonic() - started, docker.size(tag))


# --- the run ----------------------------------------------------------------------------------


@dataclass
class Built:
    name: str
    base: str
    seconds: float
    size: int
    sbom: Path | None = None


@dataclass
class Report:
    built: list[Built] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)
    bases: list[LocalBase] = field(default_factory=list)

    def lines(self) -> list[str]:
        rows = [("image", "size", "build", "base")]
        rows += [
            (b.name, f"{b.size / 2**20:.0f} MiB", f"{b.seconds:.0f} s", b.base) for b in self.built
        ]
        for base in self.bases:
            made = "there already" if base.seconds is None else f"{base.seconds:.0f} s"
            rows.append((base.tag, f"{base.size / 2**20:.0f} MiB", made, "(local base)"))
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        out = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
        out += [f"{b.name}: SBOM {b.sbom}" for b in self.built if b.sbom]
        out += [f"skipped {s.image.name}: {s.reason}" for s in self.skipped]
        return out


def run(
    releases: list[str],
    mode: str,
    network: str,
    python: str,
    ca_dir: Path,
    dry_run: bool = False,
    docker: Docker | None = None,
    sbom_dir: Path = SBOM_DIR,
) -> Report:
    docker = docker or Docker()
    problem = docker.problem()
    if problem:
        raise ImagesError(f"make images builds with Docker: {problem}")
    releases = check_releases(releases, known_releases())
    version = galaxy_version()
    source: SourcePython | None = None

    def local(suite: str) -> str:
        nonlocal source
        source = source or source_python(python)
        return local_base(source.version, suite)

    report = Report()
    plan: list[Build] = []
    for image in images(version, releases):
        text = (ROOT / image.dockerfile).read_text()
        decision = decide(image, text, mode, docker.available, local)
        if isinstance(decision, Skip):
            say(f"skipping {image.name}: {decision.reason}")
            report.skipped.append(decision)
        else:
            say(f"{image.name}: on {decision.base}")
            plan.append(decision)
    if dry_run:
        for build in plan:
            if build.local_suite and not docker.has(build.base):
                say(f"would make the local base {build.base}")
            say("would run: " + shlex.join(build_command(build, network)))
        return report
    made: dict[str, LocalBase] = {}
    for build in plan:
        if build.local_suite and build.base not in made:
            assert source is not None
            made[build.base] = make_local_base(docker, source, build.local_suite, ca_dir)
            report.bases.append(made[build.base])
        command = build_command(build, network)
        say("$ " + shlex.join(command))
        started = time.monotonic()
        status = docker.stream(command[1:])
        if status != 0:
            raise ImagesError(
                f"docker build of {build.image.name} failed (exit {status}, output above): "
                + shlex.join(command)
            )
        seconds = time.monotonic() - started
        sbom = None
        if build.image.sbom_stage:
            sbom = write_sbom(docker, build, network, sbom_dir)
            say(f"{build.image.name}: its bill of materials is {sbom}")
        report.built.append(
            Built(build.image.name, build.base, seconds, docker.size(build.image.name), sbom)
        )
    return report


@contextlib.contextmanager
def one_at_a_time(lock: Path | None = None):
    """Held while images are built: a second ``make images`` (another terminal, or the
    other stream of ``make test``) waits for the first instead of making the same local
    base beside it. The lock is a file of the user's cache directory."""
    if lock is None:
        lock = go_build.cache_root() / "images.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with lock.open("w") as held:
        try:
            fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"waiting for another make images to finish ({lock})")
            fcntl.flock(held, fcntl.LOCK_EX)
        yield


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Build the operator image and the Glance image of each release in Docker "
        "(docs/install.md, 'Building the images').",
    )
    parser.add_argument(
        "releases",
        nargs="*",
        help="Glance releases (default: every images/glance/requirements/<release>.txt)",
    )
    parser.add_argument(
        "--base",
        choices=MODES,
        default="auto",
        help="the Python base: the public one where it can be had, else a local one (auto); "
        "only the public one (public); the local one (local)",
    )
    parser.add_argument(
        "--network",
        default="host",
        help="docker build --network (default host: pip and apt reach the network as the "
        "host does); empty for Docker's default",
    )
    parser.add_argument(
        "--python",
        default=sys.executable,
        help="the CPython 3.12 whose install prefix the local base copies (default: this one)",
    )
    parser.add_argument(
        "--extra-ca-dir",
        type=Path,
        default=EXTRA_CA_DIR,
        help="the machine's extra CA certificates (*.crt) the local base trusts "
        f"(default {EXTRA_CA_DIR})",
    )
    parser.add_argument(
        "--sbom-dir",
        type=Path,
        default=SBOM_DIR,
        help="where the operator image's SBOM is written (default out/images)",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="say what would be built on which base; build nothing",
    )
    args = parser.parse_args(argv)
    try:
        with contextlib.nullcontext() if args.dry_run else one_at_a_time():
            report = run(
                args.releases,
                args.base,
                args.network,
                args.python,
                args.extra_ca_dir,
                args.dry_run,
                sbom_dir=args.sbom_dir,
            )
    except ImagesError as exc:
        print(f"make images: {exc}", file=sys.stderr)
        return 1
    if not args.dry_run:
        print()
        for line in report.lines():
            say(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
