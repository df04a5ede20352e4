"""The collection builds into a tarball that installs, and ansible-doc reads its plugins."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def isolated_env(tmp_path: Path, installed: Path) -> dict:
    """An environment that sees only the installed collection, not this checkout."""
    config = tmp_path / "ansible.cfg"
    config.write_text("[defaults]\nlocalhost_warning = false\n")
    return dict(
        os.environ,
        ANSIBLE_COLLECTIONS_PATH=str(installed),
        ANSIBLE_CONFIG=str(config),
        ANSIBLE_NOCOLOR="1",
    )


def run(*argv: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    result = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def test_the_built_collection_installs_and_documents_its_filters(tmp_path):
    version = yaml.safe_load((ROOT / "galaxy.yml").read_text())["version"]
    run(
        str(BIN / "ansible-galaxy"),
        "collection",
        "build",
        "--output-path",
        str(tmp_path),
        str(ROOT),
        cwd=ROOT,
    )
    tarball = tmp_path / f"c5c3-glance-{version}.tar.gz"
    with tarfile.open(tarball) as archive:
        names = set(archive.getnames())
    assert "config/crd/bases/glance.openstack.c5c3.io_glances.yaml" in names
    assert "catalogs/glance-2026.2.json" in names
    assert not any(n.startswith((".venv", ".collections", "out/")) for n in names)

    installed = tmp_path / "installed"
    run(
        str(BIN / "ansible-galaxy"),
        "collection",
        "install",
        "-p",
        str(installed),
        str(tarball),
        cwd=tmp_path,
    )
    env = isolated_env(tmp_path, installed)
    listing = run(
        str(BIN / "ansible-doc"), "-t", "filter", "-l", "c5c3.glance", cwd=tmp_path, env=env
    )
    assert "c5c3.glance.judge_input" in listing.stdout
    doc = run(
        str(BIN / "ansible-doc"), "-t", "filter", "c5c3.glance.judge_input", cwd=tmp_path, env=env
    )
    assert "Judges each custom resource on create against the CRD schemas" in " ".join(
        doc.stdout.split()
    )


def test_the_installed_collection_judges_the_sample(tmp_path):
    version = yaml.safe_load((ROOT / "galaxy.yml").read_text())["version"]
    run(
        str(BIN / "ansible-galaxy"),
        "collection",
        "build",
        "--output-path",
        str(tmp_path),
        str(ROOT),
        cwd=ROOT,
    )
    installed = tmp_path / "installed"
    run(
        str(BIN / "ansible-galaxy"),
        "collection",
        "install",
        "-p",
        str(installed),
        str(tmp_path / f"c5c3-glance-{version}.tar.gz"),
        cwd=tmp_path,
    )
    env = isolated_env(tmp_path, installed)
    sample = ROOT / "config" / "samples" / "glance_minimal.yaml"
    result = run(
        str(BIN / "ansible-playbook"),
        "c5c3.glance.validate",
        "-e",
        f"validate_input={sample}",
        cwd=tmp_path,
        env=env,
    )
    assert "2 of 2 custom resources accepted" in result.stdout
