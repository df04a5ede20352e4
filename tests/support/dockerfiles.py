"""Dockerfiles and their build contexts as Docker reads them, for the static image tests.

* ``instructions(text)``: the instructions, continuation lines joined, comments dropped,
  each with the index of the stage (``FROM``) it belongs to.
* ``ignore_patterns(path)``: the patterns of a ``.dockerignore``, exceptions (``!``) kept.
* ``ignored(relative, patterns)``: Docker's rule (moby/patternmatcher,
  ``MatchesOrParentMatches``): the patterns are read in order, a pattern applies when it
  matches the path or a folder above it, and the last one that applies decides; an
  exception lets the path back in.
* ``context_files(context, patterns)``: every file Docker sends from ``context`` (less the
  ``Dockerfile`` and ``.dockerignore``, which the CLI always sends).

No container engine is needed.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Instruction:
    keyword: str
    arguments: str
    stage: int  # index of the FROM it follows; -1 before the first FROM
    line: int  # where it starts, 1-based


def instructions(text: str) -> list[Instruction]:
    """The Dockerfile's instructions, continuation lines joined and comments dropped."""
    found, stage, pending, start = [], -1, "", 0
    for number, line in enumerate(text.splitlines(), 1):
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if pending and line.lstrip().startswith("#"):
            continue  # a comment inside a continued instruction
        if not pending:
            start = number
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        keyword, _, arguments = (pending + line).strip().partition(" ")
        pending = ""
        keyword = keyword.upper()
        if keyword == "FROM":
            stage += 1
        found.append(Instruction(keyword, " ".join(arguments.split()), stage, start))
    assert not pending, "the Dockerfile ends inside a continued line"
    return found


def ignore_patterns(path: Path) -> list[str]:
    lines = [line.strip() for line in path.read_text().splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def _regex(pattern: str) -> re.Pattern:
    out, i = "", 0
    pattern = os.path.normpath(pattern).lstrip("/")
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        elif pattern[i] == "[":
            end = pattern.index("]", i)
            out, i = out + pattern[i : end + 1], end + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return re.compile(out)


def ignored(relative: str, patterns: list[str]) -> bool:
    """Whether Docker leaves ``relative`` (a path in the context) out."""
    parts = relative.strip("/").split("/")
    prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    verdict = False
    for pattern in patterns:
        exception = pattern.startswith("!")
        regex = _regex(pattern.removeprefix("!"))
        if any(regex.fullmatch(prefix) for prefix in prefixes):
            verdict = not exception
    return verdict


def _may_let_back_in(folder: str, patterns: list[str]) -> bool:
    """Whether an exception could let a path under the ignored ``folder`` back in."""
    for pattern in patterns:
        body = pattern.removeprefix("!")
        if pattern.startswith("!") and (body.startswith(f"{folder}/") or body[:1] in "*?["):
            return True
    return False


def context_files(context: Path, patterns: list[str]) -> set[str]:
    """The files (relative, ``/``-separated) Docker sends from ``context``."""
    found = set()
    for folder, subfolders, files in os.walk(context):
        base = Path(folder).relative_to(context)
        subfolders[:] = [
            d
            for d in subfolders
            if not ignored((base / d).as_posix(), patterns)
            or _may_let_back_in((base / d).as_posix(), patterns)
        ]
        for name in files:
            relative = (base / name).as_posix()
            if relative not in {"Dockerfile", ".dockerignore"} and not ignored(relative, patterns):
                found.add(relative)
    return found
