"""``playbooks/validate.yml`` end to end: ansible-playbook, the filter, the CRDs, the samples."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
PLAYBOOK = ROOT / "playbooks" / "validate.yml"


def run_playbook(input_path: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    return subprocess.run(
        [
            str(Path(sys.executable).parent / "ansible-playbook"),
            str(PLAYBOOK),
            "-e",
            f"validate_input={input_path}",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize("sample", ["glance_minimal.yaml", "glance_full.yaml"])
def test_a_valid_sample_passes_and_is_described(sample):
    result = run_playbook(ROOT / "config" / "samples" / sample)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Glance openstack/glance: release 2026.2" in result.stdout
    assert "custom resources accepted" in result.stdout


def test_an_invalid_input_fails_naming_every_field_and_rule(tmp_path):
    docs = list(yaml.safe_load_all((ROOT / "config/samples/glance_minimal.yaml").read_text()))
    for doc in docs:
        if doc["kind"] == "Glance":
            doc["spec"]["openStackRelease"] = "2026.3"
            doc["spec"]["extraConfig"] = {"keystone_authtoken": {"password": "x"}}
        if doc["kind"] == "GlanceBackend":
            doc["metadata"]["name"] = "default"
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump_all(docs))
    result = run_playbook(bad)
    assert result.returncode != 0
    assert "spec.openStackRelease in body should match" in result.stdout
    assert 'name \\"default\\" collides with the reserved' in result.stdout
