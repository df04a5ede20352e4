"""Every Dockerfile builds with Docker's classic builder as with BuildKit, and each build
context lets in exactly what its Dockerfiles copy. Static: no container engine is needed.

The classic builder (``docker build`` without buildx, as on a Debian ``docker.io``) knows
no heredoc (``RUN <<EOF``), no ``RUN`` flag (``--mount``, ``--network``, ``--security``), no
``COPY``/``ADD`` flag but ``--from`` and ``--chown`` (``--chmod``, ``--link``, ``--parents``,
``--exclude``, ``--checksum``, ``--keep-git-dir`` are BuildKit's), reads no per-Dockerfile
ignore file (``Dockerfile.dockerignore``: BuildKit alone reads it, so the two builders would
send different contexts) and sets no automatic platform argument (``TARGETARCH`` ...: an
``ARG`` of one needs a default). A ``# syntax=`` line would make BuildKit fetch a frontend
image from a registry and is ignored by the classic builder: none either.

The contexts: the repository root for the two operator images (``Dockerfile``,
``images/ansible-operator/Dockerfile``; the root ``.dockerignore``), ``images/glance`` for the
Glance image (its own ``.dockerignore``), as ``make images`` and the docs build them.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from support.dockerfiles import context_files, ignore_patterns, ignored, instructions

ROOT = Path(__file__).resolve().parents[2]
# Dockerfile -> its build context, both relative to the repository root.
DOCKERFILES = {
    "Dockerfile": ".",
    "images/glance/Dockerfile": "images/glance",
    "images/ansible-operator/Dockerfile": ".",
}
CONTEXTS = sorted(set(DOCKERFILES.values()))
COPY_FLAGS = {"--from", "--chown"}
PLATFORM_ARGS = {
    "TARGETPLATFORM",
    "TARGETOS",
    "TARGETARCH",
    "TARGETVARIANT",
    "BUILDPLATFORM",
    "BUILDOS",
    "BUILDARCH",
    "BUILDVARIANT",
}
HEREDOC = re.compile(r"<<-?\s*[\"']?[A-Za-z_]\w*")


def _repository_files(pattern: str) -> set[str]:
    """Files named ``pattern`` (a glob) in the checkout, less local state and output."""
    found = set()
    for folder, subfolders, files in os.walk(ROOT):
        subfolders[:] = [
            d for d in subfolders if not d.startswith(".") and d not in {"out", "build"}
        ]
        for name in files:
            if Path(name).match(pattern):
                found.add((Path(folder) / name).relative_to(ROOT).as_posix())
    return found


def _flags(arguments: str) -> list[str]:
    return [w.split("=", 1)[0] for w in arguments.split() if w.startswith("--")]


def copy_sources(dockerfile: str) -> list[str]:
    """The context paths each COPY/ADD of ``dockerfile`` takes (``--from`` copies left out);
    a build argument in a path stands for any name."""
    found = []
    for instruction in instructions((ROOT / dockerfile).read_text()):
        if instruction.keyword not in {"COPY", "ADD"} or "--from" in _flags(instruction.arguments):
            continue
        paths = [w for w in instruction.arguments.split() if not w.startswith("--")]
        found += [re.sub(r"\$\{?\w+\}?", "*", p) for p in paths[:-1]]
    return found


def copied_files(source: str, files: set[str]) -> set[str]:
    """The files of a context that a COPY of ``source`` takes."""
    source = source.rstrip("/")
    if source == ".":
        return set(files)
    return {f for f in files if Path(f).match(source) or f.startswith(f"{source}/")}


def test_every_dockerfile_is_known_with_its_context():
    assert _repository_files("Dockerfile") == set(DOCKERFILES)
    for context in CONTEXTS:
        assert (ROOT / context / ".dockerignore").is_file(), f"{context} has no .dockerignore"


def test_no_per_dockerfile_ignore_file():
    """BuildKit would read it instead of the context's .dockerignore; the classic builder
    would not: the two builders would send different contexts."""
    assert _repository_files("?*.dockerignore") == set()


@pytest.mark.parametrize("dockerfile", sorted(DOCKERFILES))
def test_no_buildkit_only_syntax(dockerfile):
    text = (ROOT / dockerfile).read_text()
    problems = [
        f"line {n}: a parser directive ({line.strip()})"
        for n, line in enumerate(text.splitlines(), 1)
        if re.match(r"#\s*(syntax|check)\s*=", line)
    ]
    for instruction in instructions(text):
        where = f"line {instruction.line}: {instruction.keyword}"
        if instruction.keyword in {"RUN", "COPY", "ADD"} and HEREDOC.search(instruction.arguments):
            problems.append(f"{where} with a heredoc")
        flags = _flags(instruction.arguments)
        if instruction.keyword == "RUN" and flags and instruction.arguments.startswith("--"):
            problems.append(f"{where} {' '.join(flags)}")
        if instruction.keyword in {"COPY", "ADD"} and set(flags) - COPY_FLAGS:
            problems.append(f"{where} {' '.join(sorted(set(flags) - COPY_FLAGS))}")
        if instruction.keyword == "ARG":
            name, _, default = instruction.arguments.partition("=")
            if name in PLATFORM_ARGS and not default:
                problems.append(f"{where} {name} without a default (the classic builder sets none)")
    assert not problems, f"{dockerfile}: BuildKit-only: " + "; ".join(problems)


@pytest.mark.parametrize("context", CONTEXTS)
def test_every_copied_path_is_in_its_context(context):
    files = context_files(ROOT / context, ignore_patterns(ROOT / context / ".dockerignore"))
    for dockerfile in (d for d, c in DOCKERFILES.items() if c == context):
        for source in copy_sources(dockerfile):
            assert copied_files(source, files), f"{dockerfile}: COPY {source}: not in {context}"


def test_the_glance_context_is_exactly_what_its_dockerfile_copies():
    context = ROOT / "images" / "glance"
    files = context_files(context, ignore_patterns(context / ".dockerignore"))
    copied = set()
    for source in copy_sources("images/glance/Dockerfile"):
        copied |= copied_files(source, files)
    assert files == copied, f"in the context, not copied: {sorted(files - copied)}"
    # Every pin list goes in (the release is a build argument), the README does not.
    pins = {f"requirements/{p.name}" for p in (context / "requirements").glob("*.txt")}
    assert pins and pins <= files
    assert "README.md" not in files


def test_the_root_context_lets_in_from_images_only_what_a_dockerfile_names():
    """The root context serves both operator images (``COPY . /src`` takes all of it); of
    the images' directories only the file the ansible-operator image copies goes in."""
    patterns = ignore_patterns(ROOT / ".dockerignore")
    files = context_files(ROOT, patterns)
    named = {
        f
        for dockerfile, context in DOCKERFILES.items()
        if context == "."
        for source in copy_sources(dockerfile)
        if source != "."
        for f in copied_files(source, files)
    }
    assert (
        {f for f in files if f.startswith("images/")}
        == {f for f in named if f.startswith("images/")}
        == {"images/ansible-operator/requirements.yml"}
    )
    for path in (
        "images/glance/Dockerfile",
        "images/glance/requirements/2026.2.txt",
        "hack/images.py",
    ):
        assert ignored(path, patterns), path
