"""The README's commands, read from it so that a test runs them as written."""

from __future__ import annotations

from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_make(target: str) -> str:
    """The README's ``make <target>`` line of a shell block, its comment dropped."""
    for line in README.read_text().splitlines():
        command = line.partition("#")[0].strip()
        if command == f"make {target}":
            return command
    raise AssertionError(f"README.md shows no `make {target}`")
