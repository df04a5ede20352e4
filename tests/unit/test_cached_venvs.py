"""hack/glance_venv.py's environments in the user's cache: built once per pin set and
Python, linked from each checkout; a changed pin set builds anew."""

from __future__ import annotations

import subprocess

import pytest
from support.hack_scripts import hack_script

glance_venv = hack_script("glance_venv")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("C5C3_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_two_checkouts_share_one_environment_and_new_pins_build_another(tmp_path, cache):
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("")  # an empty pin set: the venv alone, quick to build
    first, second = tmp_path / "one" / ".venv-x", tmp_path / "two" / ".venv-x"
    said: list[str] = []
    assert glance_venv.ensure_environment("x", requirements, first, log=said.append) is True
    assert glance_venv.ensure_environment("x", requirements, second, log=said.append) is False
    assert first.is_symlink() and first.readlink() == second.readlink()
    target = first.readlink()
    assert target.parent == cache / "venvs" and target.name.startswith("x-py3.12.")
    assert any("is up to date" in line for line in said)
    python = second / "bin" / "python"
    done = subprocess.run(
        [python, "-c", "import sys; print(sys.prefix)"], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() in (str(second), str(target))

    requirements.write_text("# a changed pin set\n")
    assert glance_venv.ensure_environment("x", requirements, first, log=said.append) is True
    assert first.readlink() != target and second.readlink() == target


def test_an_environment_built_in_place_before_is_replaced_by_the_link(tmp_path, cache):
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("")
    link = tmp_path / "checkout" / ".venv-glance" / "x"
    (link / "bin").mkdir(parents=True)
    glance_venv.ensure_environment("x", requirements, link, log=lambda _: None)
    assert link.is_symlink() and (link / "bin" / "python").exists()


def test_an_interrupted_build_without_its_stamp_is_built_again(tmp_path, cache):
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("")
    link = tmp_path / "c" / "x"
    glance_venv.ensure_environment("x", requirements, link, log=lambda _: None)
    (link.readlink() / glance_venv.STAMP).unlink()  # as a build stopped before its end
    assert glance_venv.ensure_environment("x", requirements, link, log=lambda _: None) is True
    assert (link.readlink() / glance_venv.STAMP).is_file()
