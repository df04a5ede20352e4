"""``make images`` (hack/images.py): its decisions, without Docker.

Which images for which releases and under which tags (the ones ``make cluster-load-images``
and the cluster tests expect), which Python base each builds on (the public one where Docker
has it or can pull it, else the local one of the Dockerfile's Debian suite; IMAGES_BASE
forcing either), the ansible-operator image skipped where its base cannot be had, the
``docker build`` command of each, the local base's copy of a CPython, and the errors a user
can cause. A stand-in ``docker`` on PATH plays the daemon for the command-line runs.
``tests/install/test_image_build.py`` builds the images for real where Docker runs.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml
from support.hack_scripts import hack_script

images = hack_script("images")

ROOT = Path(__file__).resolve().parents[2]
VERSION = yaml.safe_load((ROOT / "galaxy.yml").read_text())["version"]
RELEASES = sorted(p.stem for p in (ROOT / "images/glance/requirements").glob("*.txt"))
OPERATOR = f"ghcr.io/c5c3/glance-operator:{VERSION}"
ANSIBLE_OPERATOR = f"ghcr.io/c5c3/glance-operator:{VERSION}-ansible-operator"
QUAY = "quay.io/operator-framework/ansible-operator:v1.42.3"


def text(dockerfile: str) -> str:
    return (ROOT / dockerfile).read_text()


def by_name(found: list) -> dict:
    return {image.name: image for image in found}


def local(suite: str) -> str:
    return f"localhost/c5c3-python:3.12.1-slim-{suite}"


def nothing_pulls(ref: str) -> str:
    return "" if ref.startswith("localhost/") else "no such host"


def everything_pulls(ref: str) -> str:
    return ""


# --- which images ------------------------------------------------------------------------------


def test_the_operator_every_release_and_the_ansible_operator_variant_by_default():
    found = images.images(VERSION, images.check_releases([], images.known_releases()))
    assert [i.name for i in found] == [
        OPERATOR,
        *(f"ghcr.io/c5c3/glance:{r}" for r in RELEASES),
        ANSIBLE_OPERATOR,
    ]
    assert [i.optional for i in found] == [False] * (1 + len(RELEASES)) + [True]


def test_one_release_asked_for_builds_only_its_glance_image():
    found = by_name(images.images(VERSION, images.check_releases(["2026.2"], RELEASES)))
    assert set(found) == {OPERATOR, "ghcr.io/c5c3/glance:2026.2", ANSIBLE_OPERATOR}
    glance = found["ghcr.io/c5c3/glance:2026.2"]
    assert (glance.dockerfile, glance.context) == ("images/glance/Dockerfile", "images/glance")
    assert glance.build_args == (("OPENSTACK_RELEASE", "2026.2"),)
    assert (found[OPERATOR].dockerfile, found[OPERATOR].context) == ("Dockerfile", ".")


def test_an_unknown_release_is_refused_naming_the_known_ones():
    with pytest.raises(images.ImagesError) as caught:
        images.check_releases(["2026.2", "2027.1"], RELEASES)
    assert "2027.1" in str(caught.value) and ", ".join(RELEASES) in str(caught.value)


def test_the_tags_are_the_ones_the_cluster_loads():
    """make cluster-load-images copies exactly these tags into the node."""
    dry = subprocess.run(
        ["make", "-s", "-n", "cluster-load-images", "GLANCE_RELEASES=2026.2"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    built = {i.name for i in images.images(images.galaxy_version(), ["2026.2"]) if not i.optional}
    assert built == {OPERATOR, "ghcr.io/c5c3/glance:2026.2"}
    assert all(name in dry.split() for name in built), dry


def test_the_dockerfiles_and_contexts_are_the_ones_the_static_tests_check():
    from install.test_build_contexts import DOCKERFILES

    found = images.images(VERSION, RELEASES)
    assert {(i.dockerfile, i.context) for i in found} == set(DOCKERFILES.items())


# --- which base -------------------------------------------------------------------------------


def test_the_public_bases_are_the_dockerfiles_defaults():
    assert images.python_base(text("Dockerfile")) == "python:3.12.13-slim-trixie"
    assert images.python_base(text("images/glance/Dockerfile")) == "python:3.12-slim-bookworm"
    assert images.bases(text("images/ansible-operator/Dockerfile")) == [
        "python:3.12.13-slim-trixie",
        QUAY,
    ]
    assert images.bases(text("Dockerfile"), {"PYTHON_IMAGE": "x:1"}) == ["x:1"]


@pytest.mark.parametrize(
    ("image", "suite"),
    [
        ("python:3.12.13-slim-trixie", "trixie"),
        ("python:3.12-slim-bookworm", "bookworm"),
        ("python:3.12.13-slim-trixie@sha256:" + "0" * 64, "trixie"),
    ],
)
def test_the_local_base_takes_the_debian_suite_of_the_public_one(image, suite):
    assert images.debian_suite(image) == suite


def test_a_public_base_without_a_suite_in_its_tag_cannot_have_a_local_twin():
    with pytest.raises(images.ImagesError, match=re.escape("Debian suite of python:3.12-slim")):
        images.debian_suite("python:3.12-slim")


def test_auto_builds_on_the_public_base_where_it_can_be_had():
    image = by_name(images.images(VERSION, ["2026.2"]))[OPERATOR]
    decided = images.decide(image, text("Dockerfile"), "auto", everything_pulls, local)
    assert decided == images.Build(image, "python:3.12.13-slim-trixie", None)


def test_auto_builds_on_the_local_base_of_each_dockerfiles_suite_without_a_registry():
    found = by_name(images.images(VERSION, ["2026.2"]))
    operator = images.decide(found[OPERATOR], text("Dockerfile"), "auto", nothing_pulls, local)
    glance = found["ghcr.io/c5c3/glance:2026.2"]
    glance_decided = images.decide(
        glance, text("images/glance/Dockerfile"), "auto", nothing_pulls, local
    )
    assert operator.base == local("trixie") and operator.local_suite == "trixie"
    assert glance_decided.base == local("bookworm") and glance_decided.local_suite == "bookworm"


def test_local_builds_on_the_local_base_even_where_the_public_one_can_be_had():
    image = by_name(images.images(VERSION, ["2026.2"]))[OPERATOR]
    decided = images.decide(image, text("Dockerfile"), "local", everything_pulls, local)
    assert decided.base == local("trixie")


def test_public_without_a_registry_is_an_error_that_names_the_base_and_the_way_out():
    image = by_name(images.images(VERSION, ["2026.2"]))[OPERATOR]
    with pytest.raises(images.ImagesError) as caught:
        images.decide(image, text("Dockerfile"), "public", nothing_pulls, local)
    assert "python:3.12.13-slim-trixie" in str(caught.value)
    assert "IMAGES_BASE=auto" in str(caught.value) and "no such host" in str(caught.value)


def test_an_unknown_base_mode_is_refused():
    image = by_name(images.images(VERSION, ["2026.2"]))[OPERATOR]
    with pytest.raises(images.ImagesError, match="auto, public, local"):
        images.decide(image, text("Dockerfile"), "remote", everything_pulls, local)


# --- the ansible-operator image ----------------------------------------------------------------


def test_the_ansible_operator_image_is_skipped_where_its_base_cannot_be_pulled():
    made = []
    image = by_name(images.images(VERSION, ["2026.2"]))[ANSIBLE_OPERATOR]
    decided = images.decide(
        image,
        text("images/ansible-operator/Dockerfile"),
        "auto",
        nothing_pulls,
        lambda suite: made.append(suite) or local(suite),
    )
    assert isinstance(decided, images.Skip)
    assert QUAY in decided.reason and "no such host" in decided.reason
    assert made == [], "no local base is made for an image that is skipped"


def test_the_ansible_operator_image_builds_where_its_base_is_there_on_either_python_base():
    image = by_name(images.images(VERSION, ["2026.2"]))[ANSIBLE_OPERATOR]
    dockerfile = text("images/ansible-operator/Dockerfile")
    decided = images.decide(image, dockerfile, "auto", lambda r: "" if r == QUAY else "no", local)
    assert decided.base == local("trixie")
    assert images.build_command(decided, "host")[-5:] == [
        "-f",
        "images/ansible-operator/Dockerfile",
        "-t",
        ANSIBLE_OPERATOR,
        ".",
    ]


# --- the docker build commands -------------------------------------------------------------------


def test_on_the_public_base_the_commands_are_the_documented_ones_plus_the_network():
    found = by_name(images.images(VERSION, ["2026.2"]))
    operator = images.Build(found[OPERATOR], "python:3.12.13-slim-trixie", None)
    glance = images.Build(found["ghcr.io/c5c3/glance:2026.2"], "python:3.12-slim-bookworm", None)
    assert images.build_command(operator, "host") == [
        *["docker", "build", "--network", "host", "-t"],
        OPERATOR,
        ".",
    ]
    assert images.build_command(glance, "") == [
        *["docker", "build", "--build-arg", "OPENSTACK_RELEASE=2026.2", "-t"],
        "ghcr.io/c5c3/glance:2026.2",
        "images/glance",
    ]


def test_on_the_local_base_the_command_names_it():
    found = by_name(images.images(VERSION, ["2026.2"]))
    glance = images.Build(found["ghcr.io/c5c3/glance:2026.2"], local("bookworm"), "bookworm")
    assert images.build_command(glance, "host") == [
        *["docker", "build", "--network", "host", "--build-arg"],
        f"PYTHON_IMAGE={local('bookworm')}",
        *[
            "--build-arg",
            "OPENSTACK_RELEASE=2026.2",
            "-t",
            "ghcr.io/c5c3/glance:2026.2",
            "images/glance",
        ],
    ]


# --- the local base's CPython --------------------------------------------------------------------


def test_the_distributions_python_is_refused_for_the_local_base():
    with pytest.raises(images.ImagesError, match="distribution's Python"):
        images.check_source_python(Path("/usr"), "3.12.3", "CPython", "/usr/bin/python3.12")


def test_a_python_other_than_cpython_3_12_is_refused_for_the_local_base(tmp_path):
    with pytest.raises(images.ImagesError, match=r"needs a CPython 3\.12"):
        images.check_source_python(tmp_path, "3.11.9", "CPython")
    with pytest.raises(images.ImagesError, match=re.escape("no bin/python3.12")):
        images.check_source_python(tmp_path, "3.12.1", "CPython")


def _fake_prefix(prefix: Path) -> None:
    lib = prefix / "lib" / "python3.12"
    for relative, content in {
        "bin/python3.12": b"\x7fELF fake interpreter /old/prefix/lib",
        "bin/pydoc3.12": b"#!/old/prefix/bin/python3.12\nimport pydoc\n",
        "bin/idle3.12": b"#!/old/prefix/bin/python3.12\n",
        "bin/pip3.12": b"#!/old/prefix/bin/python3.12\n",
        "bin/python3.12-gdb.py": b"",
        "lib/libpython3.12.so.1.0": b"\x7fELF",
        "lib/pkgconfig/python-3.12.pc": b"prefix=/old/prefix\n",
        "lib/python3.12/os.py": b"# os\n",
        "lib/python3.12/_sysconfigdata__linux.py": b"build_time_vars = {'prefix': '/old/prefix'}\n",
        "lib/python3.12/config-3.12/libpython3.12.a": b"!<arch>",
        "lib/python3.12/test/test_os.py": b"",
        "lib/python3.12/idlelib/idle.py": b"",
        "lib/python3.12/tkinter/__init__.py": b"",
        "lib/python3.12/__pycache__/os.cpython-312.pyc": b"",
        "lib/python3.12/lib-dynload/_tkinter.cpython-312-x86_64-linux-gnu.so": b"\x7fELF",
        "lib/python3.12/lib-dynload/_ssl.cpython-312-x86_64-linux-gnu.so": b"\x7fELF",
        "lib/python3.12/site-packages/pip/__init__.py": b"",
        "lib/python3.12/site-packages/_host_only.pth": b"",
        "include/python3.12/Python.h": b"",
    }.items():
        (prefix / relative).parent.mkdir(parents=True, exist_ok=True)
        (prefix / relative).write_bytes(content)
    for name, target in {"python3": "python3.12", "python": "python3.12"}.items():
        (prefix / "bin" / name).symlink_to(target)
    assert lib.is_dir()


def test_the_local_base_copies_the_interpreter_and_its_library_without_tests_idle_or_site_packages(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("PATH", str(tmp_path / "no-strip"))  # the fake ELF files are not stripped
    prefix = tmp_path / "old" / "prefix"
    _fake_prefix(prefix)
    source = images.SourcePython(prefix, "3.12.1")
    # The prefix in the fake files is /old/prefix; stage_python rewrites the real one.
    for path in prefix.rglob("*"):
        if path.is_file() and not path.is_symlink():
            path.write_bytes(path.read_bytes().replace(b"/old/prefix", str(prefix).encode()))
    stage = tmp_path / "stage"
    images.stage_python(source, stage)
    files = {p.relative_to(stage).as_posix() for p in stage.rglob("*") if not p.is_dir()}
    assert files == {
        "bin/python3.12",
        "bin/python3",
        "bin/python",
        "bin/pydoc3.12",
        "include/python3.12/Python.h",
        "lib/libpython3.12.so.1.0",
        "lib/pkgconfig/python-3.12.pc",
        "lib/python3.12/os.py",
        "lib/python3.12/_sysconfigdata__linux.py",
        "lib/python3.12/lib-dynload/_ssl.cpython-312-x86_64-linux-gnu.so",
    }
    assert (stage / "bin" / "python3").readlink() == Path("python3.12")
    assert (stage / "lib/python3.12/site-packages").is_dir(), "ensurepip fills it in the base"
    assert (stage / "bin/pydoc3.12").read_text().startswith("#!/usr/local/bin/python3.12\n")
    assert (stage / "lib/pkgconfig/python-3.12.pc").read_text() == "prefix=/usr/local\n"
    assert str(prefix) in (stage / "bin/python3.12").read_text(errors="replace"), "ELF untouched"


def test_the_local_base_is_configured_as_the_public_image_is():
    changes = images.import_changes("3.12.1", certificates=True)
    assert "ENV LANG=C.UTF-8" in changes and 'CMD ["python3"]' in changes
    assert "ENV PYTHON_VERSION=3.12.1" in changes
    assert "ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt" in changes
    assert not any("PIP_CERT" in c for c in images.import_changes("3.12.1", certificates=False))
    assert images.local_base_alias("3.12.1", "trixie") == "localhost/c5c3-python:3.12-slim-trixie"


# --- the command line, with a stand-in docker ------------------------------------------------------

FAKE_DOCKER = r"""#!/bin/bash
# A stand-in docker: the refs in $FAKE_DOCKER_STATE are there, nothing can be pulled.
echo "$*" >> "$FAKE_DOCKER_LOG"
ref="${@: -1}"
case "$1" in
  info) echo 20.10.24 ;;
  image)
    grep -qxF "$ref" "$FAKE_DOCKER_STATE" || { echo "Error: No such image: $ref" >&2; exit 1; }
    [ "$4" = "{{.Size}}" ] && echo 330301440 || echo sha256:0 ;;
  pull) echo "Error response from daemon: dial tcp: lookup registry-1.docker.io: no such host" >&2; exit 1 ;;
  build) while [ "$1" != "-t" ]; do shift; done; echo "$2" >> "$FAKE_DOCKER_STATE" ;;
  tag) echo "$3" >> "$FAKE_DOCKER_STATE" ;;
  create) echo container-1 ;;
  cp) echo '{"components": [{"name": "cel-python", "version": "0.5.0"},
       {"name": "PyYAML", "version": "6.0.3", "licenses": [{"expression": "MIT"}]}]}' \
        > "$3/sbom.cdx.json" ;;
  rm|rmi) ;;
  *) echo "unexpected: $*" >&2; exit 2 ;;
esac
"""


@pytest.fixture
def fake_docker(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # Nothing else on PATH: no mmdebstrap, no strip, no real docker.
    (bin_dir / "grep").symlink_to(shutil.which("grep"))
    docker = bin_dir / "docker"
    docker.write_text(FAKE_DOCKER)
    docker.chmod(0o755)
    state = tmp_path / "state"
    state.write_text("")
    env = {
        **os.environ,
        "PATH": str(bin_dir),
        "FAKE_DOCKER_LOG": str(tmp_path / "log"),
        "FAKE_DOCKER_STATE": str(state),
    }
    return env, state, tmp_path / "log"


def hack_images(*argv: str, env: dict) -> subprocess.CompletedProcess:
    state = env.get("FAKE_DOCKER_STATE")
    sbom_dir = Path(state).parent / "sbom" if state else ROOT / "out" / "no-sbom-expected"
    return subprocess.run(
        [
            sys.executable,
            str(ROOT / "hack" / "images.py"),
            "--python",
            sys.executable,
            "--sbom-dir",
            str(sbom_dir),
            *argv,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_without_a_registry_it_builds_on_the_local_bases_skips_ansible_operator_and_reports(
    fake_docker,
):
    env, state, log = fake_docker
    version = images.source_python(sys.executable).version
    state.write_text(f"{local('trixie')}\n{local('bookworm')}\n".replace("3.12.1", version))
    done = hack_images("2026.2", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    builds = [line for line in log.read_text().splitlines() if line.startswith("build")]
    trixie, bookworm = (f"localhost/c5c3-python:{version}-slim-{s}" for s in ("trixie", "bookworm"))
    assert builds == [
        f"build --network host --build-arg PYTHON_IMAGE={trixie} -t {OPERATOR} .",
        f"build --network host --build-arg PYTHON_IMAGE={trixie} "
        f"--target sbom -t {OPERATOR}-sbom-stage .",
        f"build --network host --build-arg PYTHON_IMAGE={bookworm} "
        "--build-arg OPENSTACK_RELEASE=2026.2 -t ghcr.io/c5c3/glance:2026.2 images/glance",
    ]
    # the SBOM stage's document, copied out beside the image, a concluded licence added
    # where the package's metadata gives none; the stage's image removed again
    sbom = log.parent / "sbom" / f"glance-operator-{VERSION}.cdx.json"
    components = {c["name"]: c for c in json.loads(sbom.read_text())["components"]}
    assert components["cel-python"]["licenses"] == [
        {"expression": "Apache-2.0", "acknowledgement": "concluded"}
    ]
    assert components["PyYAML"]["licenses"] == [{"expression": "MIT"}]
    assert f"rmi {OPERATOR}-sbom-stage" in log.read_text().splitlines()
    assert f"{OPERATOR}: SBOM {sbom}" in done.stdout
    out = done.stdout
    assert f"skipped {ANSIBLE_OPERATOR}: its base {QUAY}" in out
    for name in (OPERATOR, "ghcr.io/c5c3/glance:2026.2"):
        (row,) = [line for line in out.splitlines() if line.startswith(f"[images] {name} ")]
        assert re.search(r" 315 MiB +\d+ s +localhost/c5c3-python:", row), row
    assert "there already" in out  # the local bases were not made again


def test_ansible_operator_is_built_where_its_base_is_in_docker(fake_docker):
    env, state, log = fake_docker
    state.write_text(f"{QUAY}\npython:3.12.13-slim-trixie\npython:3.12-slim-bookworm\n")
    done = hack_images("2026.1", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    builds = [line for line in log.read_text().splitlines() if line.startswith("build")]
    assert (
        builds[-1]
        == f"build --network host -f images/ansible-operator/Dockerfile -t {ANSIBLE_OPERATOR} ."
    )
    assert not any("PYTHON_IMAGE" in b for b in builds), "on the public bases"
    assert "skipped" not in done.stdout


def test_the_dry_run_says_what_it_would_make_and_builds_nothing(fake_docker):
    env, _, log = fake_docker
    done = hack_images("--dry-run", "--base", "local", "2026.2", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "would make the local base localhost/c5c3-python:" in done.stdout
    assert "would run: docker build --network host --build-arg PYTHON_IMAGE=" in done.stdout
    assert not [line for line in log.read_text().splitlines() if line.startswith("build")]


def test_public_without_a_registry_fails_naming_the_base(fake_docker):
    env, _, _ = fake_docker
    done = hack_images("--base", "public", "2026.2", env=env)
    assert done.returncode == 1
    assert done.stderr.startswith("make images: ghcr.io/c5c3/glance-operator:")
    assert "python:3.12.13-slim-trixie" in done.stderr and "IMAGES_BASE=auto" in done.stderr


def test_an_unknown_release_fails_naming_the_known_ones(fake_docker):
    env, _, _ = fake_docker
    done = hack_images("2027.1", env=env)
    assert done.returncode == 1
    assert "no Glance pin list for 2027.1" in done.stderr


def test_without_docker_it_says_so(tmp_path):
    env = {**os.environ, "PATH": str(tmp_path)}
    done = hack_images("2026.2", env=env)
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "make images: make images builds with Docker: no docker on PATH "
        "(Debian: apt-get install docker.io)"
    )


def test_without_mmdebstrap_the_local_base_cannot_be_made_and_it_says_so(fake_docker):
    env, _, _ = fake_docker
    done = hack_images("2026.2", env=env)  # no local base there, no mmdebstrap on PATH
    assert done.returncode == 1
    assert "needs mmdebstrap (Debian: apt-get install mmdebstrap)" in done.stderr


def test_make_passes_the_knobs_through():
    dry = subprocess.run(
        [
            "make",
            "-s",
            "-n",
            "images",
            "GLANCE_RELEASES=2026.2",
            "IMAGES_BASE=local",
            "IMAGES_NETWORK=",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert 'hack/images.py --base "local" --network ""' in dry
    assert dry.split()[-1] == "2026.2"


def test_a_second_make_images_waits_for_the_first(tmp_path, capsys):
    lock = tmp_path / "images.lock"
    order: list[str] = []
    with images.one_at_a_time(lock):

        def second() -> None:
            with images.one_at_a_time(lock):
                order.append("second")

        waiting = threading.Thread(target=second)
        waiting.start()
        waiting.join(2)
        assert waiting.is_alive()  # held by the first: the second waits
        order.append("first")
    waiting.join(30)
    assert order == ["first", "second"]
    assert f"waiting for another make images to finish ({lock})" in capsys.readouterr().out
