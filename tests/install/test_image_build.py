"""Every ``docker build`` command README.md and docs/ show, run exactly as written.

Typed into ``bash`` in the checkout, as a user would: the image builds, with the build
context its ``.dockerignore`` leaves. Without a running ``docker`` (no engine on these
development machines) each is skipped, naming what is missing: never a silent pass. The
images' contents are checked statically, with no engine, by test_dockerfile.py and
test_ansible_operator_image.py.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest
from support.container_engine import engine_problem

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def build_commands() -> list[tuple[str, str]]:
    """(where, command) of every line starting ``docker build`` in a shell block."""
    found = []
    for doc in DOCS:
        for block in re.findall(r"^```(?:sh|console)\n(.*?)^```$", doc.read_text(), re.M | re.S):
            for line in block.splitlines():
                command = line.removeprefix("$ ").partition("#")[0].strip()
                if command.startswith("docker build"):
                    found.append((str(doc.relative_to(ROOT)), command))
    return found


def _id(command: str) -> str:
    words = shlex.split(command)
    dockerfile = words[words.index("-f") + 1] if "-f" in words else "Dockerfile"
    return dockerfile.replace("/", "-")


@pytest.mark.parametrize(
    ("doc", "command"), [pytest.param(*c, id=_id(c[1])) for c in build_commands()]
)
def test_the_documented_image_build(doc, command):
    problem = engine_problem("docker")
    if problem:
        pytest.skip(f"{doc}: `{command}` needs docker: {problem}")
    done = subprocess.run(
        ["bash", "-c", command], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, f"{doc}: {command}\n{done.stdout[-3000:]}{done.stderr[-3000:]}"


def test_the_ansible_operator_image_has_its_build_command():
    """docs/install.md shows how to build the second image, so it is built above."""
    assert "images-ansible-operator-Dockerfile" in {_id(c) for _, c in build_commands()}
