"""The collection builds into a tarball that installs, and ansible-doc reads its plugins."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def run(*argv: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    result = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, dict, Path]:
    """The collection built from this checkout and installed into an empty directory.

    Everything runs with a throwaway ansible.cfg, so neither the checkout's own
    collection link nor the caller's ANSIBLE_* settings can stand in for the install.
    """
    tmp = tmp_path_factory.mktemp("collection")
    config = tmp / "ansible.cfg"
    config.write_text("[defaults]\nlocalhost_warning = false\n")
    target = tmp / "installed"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(
        ANSIBLE_CONFIG=str(config), ANSIBLE_COLLECTIONS_PATH=str(target), ANSIBLE_NOCOLOR="1"
    )
    version = yaml.safe_load((ROOT / "galaxy.yml").read_text())["version"]
    run(
        str(BIN / "ansible-galaxy"),
        "collection",
        "build",
        "--output-path",
        str(tmp),
        str(ROOT),
        cwd=ROOT,
        env=env,
    )
    tarball = tmp / f"c5c3-glance-{version}.tar.gz"
    run(
        str(BIN / "ansible-galaxy"),
        "collection",
        "install",
        "--force",
        "-p",
        str(target),
        str(tarball),
        cwd=tmp,
        env=env,
    )
    return tarball, env, tmp


def test_the_tarball_holds_the_crds_and_catalogs_and_no_local_state(installed):
    tarball, _, _ = installed
    with tarfile.open(tarball) as archive:
        names = set(archive.getnames())
    assert "config/crd/bases/glance.openstack.c5c3.io_glances.yaml" in names
    assert "catalogs/glance-2026.2.json" in names
    assert not any(n.startswith((".venv", ".collections", "out/", "molecule/")) for n in names)


def test_ansible_doc_lists_and_documents_the_filters(installed):
    _, env, tmp = installed
    listing = run(str(BIN / "ansible-doc"), "-t", "filter", "-l", "c5c3.glance", cwd=tmp, env=env)
    for name in (
        "judge_input",
        "render_plan",
        "glance_plan",
        "glance_pass",
        "glancebackend_pass",
        "role_objects",
        "owned_objects",
    ):
        assert f"c5c3.glance.{name}" in listing.stdout, name
    doc = run(str(BIN / "ansible-doc"), "-t", "filter", "c5c3.glance.glance_pass", cwd=tmp, env=env)
    assert "the objects the object roles rendered" in " ".join(doc.stdout.split())
    doc = run(str(BIN / "ansible-doc"), "-t", "filter", "c5c3.glance.judge_input", cwd=tmp, env=env)
    assert "Judges each custom resource on create against the CRD schemas" in " ".join(
        doc.stdout.split()
    )


def test_ansible_doc_lists_and_documents_the_modules(installed):
    _, env, tmp = installed
    listing = run(str(BIN / "ansible-doc"), "-t", "module", "-l", "c5c3.glance", cwd=tmp, env=env)
    for name in ("render_output", "gather", "apply", "report"):
        assert f"c5c3.glance.{name} " in listing.stdout, name
    doc = run(
        str(BIN / "ansible-doc"), "-t", "module", "c5c3.glance.render_output", cwd=tmp, env=env
    )
    assert "a reader never sees a half-written manifest" in " ".join(doc.stdout.split())


def test_the_installed_collection_judges_the_sample(installed):
    _, env, tmp = installed
    sample = ROOT / "config" / "samples" / "glance_minimal.yaml"
    result = run(
        str(BIN / "ansible-playbook"),
        "c5c3.glance.validate",
        "-e",
        f"validate_input={sample}",
        cwd=tmp,
        env=env,
    )
    assert "2 of 2 custom resources accepted" in result.stdout
