"""The documented image builds, run exactly as written, and the images they make.

Every ``make images`` and ``docker build`` line of a shell block in README.md, docs/*.md and
images/*/README.md is typed into ``bash`` in the checkout, as a user would (none of make's
or pytest's variables, nor the knobs of ``make images``, in the environment):

* ``make images ...`` first: it builds on the public Python bases where Docker can pull
  them and makes the local ones otherwise (docs/install.md, "Building the images"). Its
  summary must give each image's size and build seconds; the images it built are then run:
  the Glance image answers ``glance-manage --version`` as uid 42424, the operator image
  ``--help`` as uid 65532, the users config/ and the Glance Deployment run them as.
* each ``docker build ...`` after it, where every base it names is in Docker or can be
  pulled; skipped otherwise, naming the base (on a machine without a registry the public
  bases cannot be had, and the commands on the local base run instead).

Without a running docker (as in CI) each is skipped, naming what is missing: never a silent
pass. ``test_images_script.py`` checks make images' decisions without Docker,
``test_build_contexts.py`` the Dockerfiles and their contexts.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from functools import cache
from pathlib import Path

import pytest
import yaml
from support.container_engine import engine_problem
from support.hack_scripts import hack_script

images = hack_script("images")

ROOT = Path(__file__).resolve().parents[2]
DOCS = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    *sorted((ROOT / "images").glob("*/README.md")),
]
VERSION = yaml.safe_load((ROOT / "galaxy.yml").read_text())["version"]
OPERATOR = f"ghcr.io/c5c3/glance-operator:{VERSION}"
# What the Glance Deployment and the manager Deployment run the images as.
GLANCE_UID = 42424
OPERATOR_UID = 65532


def documented(prefix: str, docs: list[Path] = DOCS) -> list[tuple[str, str]]:
    """(doc, command) of every line of a ``sh``/``console`` block starting with ``prefix``
    (continuation lines joined, comments dropped), each command once."""
    found: dict[str, str] = {}
    for doc in docs:
        for block in re.findall(r"^```(?:sh|console)\n(.*?)^```$", doc.read_text(), re.M | re.S):
            for line in block.replace("\\\n", " ").splitlines():
                command = " ".join(line.removeprefix("$ ").partition("#")[0].split())
                if command.startswith(prefix):
                    found.setdefault(command, str(doc.relative_to(ROOT)))
    return [(doc, command) for command, doc in found.items()]


def user_environment() -> dict[str, str]:
    """The test's environment less what make and pytest add and the knobs of make images."""
    return {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PYTEST_", "MAKE", "MFLAGS", "IMAGES_", "GLANCE_RELEASES"))
    }


def typed(command: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "-c", command],
        cwd=ROOT,
        env=user_environment(),
        capture_output=True,
        text=True,
        check=False,
    )


def docker(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", *argv], capture_output=True, text=True, check=False)


def needs_docker(what: str) -> None:
    problem = engine_problem("docker")
    if problem:
        pytest.skip(f"{what} needs docker: {problem}")


def releases_of(command: str) -> list[str]:
    """The Glance releases a documented ``make images`` builds."""
    for word in shlex.split(command):
        if word.startswith("GLANCE_RELEASES="):
            return word.partition("=")[2].split()
    return images.known_releases()


MAKE_IMAGES = documented("make images")
DOCKER_BUILDS = documented("docker build")


@pytest.fixture(scope="module")
def made(say) -> dict[str, subprocess.CompletedProcess]:
    """Every documented ``make images`` command, run once, in the order the docs give."""
    needs_docker("make images")
    done = {}
    for doc, command in MAKE_IMAGES:
        say(f"[images] {doc}: {command}")
        done[command] = typed(command)
        say("\n".join(done[command].stdout.splitlines()[-8:]))
    return done


@pytest.mark.parametrize(("doc", "command"), MAKE_IMAGES, ids=[c for _, c in MAKE_IMAGES])
def test_the_documented_make_images_builds_each_image_and_reports_size_and_seconds(
    made, doc, command
):
    done = made[command]
    assert done.returncode == 0, f"{doc}: {command}\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    expected = [OPERATOR, *(f"ghcr.io/c5c3/glance:{r}" for r in releases_of(command))]
    for image in expected:
        assert docker("image", "inspect", image).returncode == 0, f"{image} is not in Docker"
        rows = [line for line in done.stdout.splitlines() if line.startswith(f"[images] {image} ")]
        assert rows and re.search(r" \d+ MiB +\d+ s ", rows[-1]), (image, rows)
    ansible_operator = f"{OPERATOR}-ansible-operator"
    assert f"skipped {ansible_operator}" in done.stdout or (
        docker("image", "inspect", ansible_operator).returncode == 0
    ), "the ansible-operator image is neither built nor skipped with a reason"


def test_the_cluster_guide_builds_the_images_the_cluster_tests_load():
    """docs/cluster.md's command is one of those run above (tests/cluster runs it too)."""
    cluster = [c for _, c in documented("make images", [ROOT / "docs" / "cluster.md"])]
    assert cluster == ["make images GLANCE_RELEASES=2026.2"]
    assert cluster[0] in {c for _, c in MAKE_IMAGES}


@pytest.fixture(scope="module")
def glance_image(made) -> str:
    for command, done in made.items():
        if done.returncode == 0 and "2026.2" in releases_of(command):
            return "ghcr.io/c5c3/glance:2026.2"
    pytest.fail("no documented make images built ghcr.io/c5c3/glance:2026.2")


def test_the_glance_image_runs_glance_manage_as_the_glance_user(glance_image):
    version = docker("run", "--rm", glance_image, "glance-manage", "--version")
    assert version.returncode == 0, version.stderr[-2000:]
    assert re.fullmatch(r"\d+\.\d+\.\d+", version.stdout.strip().splitlines()[-1]), version.stdout
    uid = docker("run", "--rm", glance_image, "id", "-u")
    assert uid.stdout.strip() == str(GLANCE_UID)


def test_the_operator_image_runs_the_runner_as_the_manager_uid(made):
    assert any(done.returncode == 0 for done in made.values())
    helped = docker("run", "--rm", OPERATOR, "--help")
    assert helped.returncode == 0, helped.stderr[-2000:]
    assert "--watches-file" in helped.stdout
    uid = docker("run", "--rm", "--entrypoint", "id", OPERATOR, "-u")
    assert uid.stdout.strip() == str(OPERATOR_UID)


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_the_operator_image_has_its_bill_of_materials_and_a_licence_label_that_says_it(made):
    """``make images`` leaves the operator image's CycloneDX SBOM beside it: every package
    of requirements-runtime.txt at its pin (and the venv's own pip), each with an SPDX
    licence (its own, or one ``hack/images.py`` concluded from its licence files), and not
    ``kubernetes``, which the image no longer carries (importing it there fails). The
    image's ``org.opencontainers.image.licenses`` label names exactly those licences, the
    collection's Apache-2.0 and CPython's PSF-2.0."""
    assert any(done.returncode == 0 for done in made.values())
    path = ROOT / "out" / "images" / f"glance-operator-{VERSION}.cdx.json"
    bom = json.loads(path.read_text())
    assert bom["bomFormat"] == "CycloneDX"
    found = {canonical(c["name"]): c["version"] for c in bom["components"]}
    pins = {}
    for line in (ROOT / "requirements-runtime.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            pins[canonical(name)] = version
    assert {k: v for k, v in found.items() if k != "pip"} == pins
    ids = images.spdx_ids(bom)
    assert [name for name, spdx in ids.items() if not spdx] == []
    assert "kubernetes" not in found
    labels = json.loads(
        docker("image", "inspect", "--format", "{{json .Config.Labels}}", OPERATOR).stdout
    )
    label = labels["org.opencontainers.image.licenses"]
    named = set(images.SPDX_WORDS.findall(label)) - {"AND", "OR", "WITH"}
    assert named == set().union(*ids.values()) | {"Apache-2.0", "PSF-2.0"}, label
    imported = docker("run", "--rm", "--entrypoint", "python3", OPERATOR, "-c", "import kubernetes")
    assert imported.returncode != 0 and "No module named 'kubernetes'" in imported.stderr


@cache
def _docker() -> object:
    return images.Docker()


def missing_bases(command: str) -> list[str]:
    """The bases a ``docker build`` command builds on that Docker has not and cannot pull."""
    words = shlex.split(command)
    build_args = dict(
        words[i + 1].split("=", 1) for i, word in enumerate(words) if word == "--build-arg"
    )
    context = words[-1]
    dockerfile = words[words.index("-f") + 1] if "-f" in words else f"{context}/Dockerfile"
    bases = images.bases((ROOT / dockerfile).read_text(), build_args)
    return [f"{base} ({why})" for base in bases if (why := _docker().available(base))]


def _id(command: str) -> str:
    words = shlex.split(command)
    tag = words[words.index("-t") + 1]
    base = [w for w in words if w.startswith("PYTHON_IMAGE=")]
    return tag + (f" on {base[0].partition('=')[2]}" if base else "")


@pytest.mark.parametrize(
    ("doc", "command"), [pytest.param(*c, id=_id(c[1])) for c in DOCKER_BUILDS]
)
def test_the_documented_docker_build(made, doc, command):
    missing = missing_bases(command)
    if missing:
        pytest.skip(f"{doc}: `{command}` builds on what Docker cannot have here: {missing}")
    done = typed(command)
    assert done.returncode == 0, f"{doc}: {command}\n{done.stdout[-3000:]}{done.stderr[-3000:]}"


def test_every_image_has_its_build_command():
    """docs/install.md shows how to build each image by hand, on the public base and, for
    the two make images always builds, on the local base."""
    ids = {_id(c) for _, c in DOCKER_BUILDS}
    for tag in (OPERATOR, "ghcr.io/c5c3/glance:2026.2", f"{OPERATOR}-ansible-operator"):
        assert tag in ids, tag
    assert f"{OPERATOR} on localhost/c5c3-python:3.12-slim-trixie" in ids
    assert "ghcr.io/c5c3/glance:2026.2 on localhost/c5c3-python:3.12-slim-bookworm" in ids
