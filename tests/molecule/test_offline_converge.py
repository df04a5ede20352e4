"""The offline scenario's converge, on inputs of the test's choosing: one ansible-playbook
run judges and renders them all, and a refused input stops it with a message naming that
input (the scenario itself, on every sample and fixture, is run by test_scenarios.py)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
CONVERGE = ROOT / "molecule" / "offline" / "converge.yml"
SAMPLE = ROOT / "config" / "samples" / "glance_minimal.yaml"
BIN = Path(sys.executable).parent
GOLDEN = ROOT / "tests" / "render" / "golden"


def converge(tmp_path: Path, inputs: list[Path]) -> subprocess.CompletedProcess:
    (tmp_path / "ephemeral").mkdir(exist_ok=True)  # molecule creates it for a scenario
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "MOLECULE_"))}
    env.update(
        ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
        MOLECULE_PROJECT_DIRECTORY=str(ROOT),
        MOLECULE_EPHEMERAL_DIRECTORY=str(tmp_path / "ephemeral"),
        ANSIBLE_NOCOLOR="1",
    )
    return subprocess.run(
        [
            str(BIN / "ansible-playbook"),
            f"--inventory={ROOT / 'molecule' / 'shared' / 'inventory' / 'hosts.yml'}",
            str(CONVERGE),
            "-e",
            json.dumps({"glance_molecule_inputs": [str(p) for p in inputs]}),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def changed(done: subprocess.CompletedProcess) -> int:
    """The changed count of the converge run's recap."""
    return int(re.search(r"changed=(\d+)", done.stdout.split("PLAY RECAP")[-1]).group(1))


def test_a_refused_input_stops_converge_naming_it(tmp_path):
    bad = tmp_path / "unsupported-release.yaml"
    docs = list(yaml.safe_load_all(SAMPLE.read_text()))
    glance = next(d for d in docs if d and d["kind"] == "Glance")
    glance["spec"]["openStackRelease"] = "2026.3"
    bad.write_text(yaml.safe_dump_all(docs))
    later = tmp_path / "later.yaml"
    shutil.copyfile(SAMPLE, later)

    done = converge(tmp_path, [SAMPLE, bad, later])

    assert done.returncode != 0, done.stdout
    failure = next(line for line in done.stdout.splitlines() if "failed:" in line and "msg" in line)
    assert f"{os.path.relpath(bad, ROOT)} failed:" in failure, failure
    assert "spec.openStackRelease" in failure, failure
    out = tmp_path / "ephemeral" / "render"
    assert (out / "glance_minimal" / "manifests.yaml").is_file()  # the input before it
    assert not (out / "unsupported-release").exists()
    assert not (out / "later").exists()  # nothing after it


def test_each_input_renders_as_alone_and_again_writes_nothing(tmp_path):
    """Rendered one after another in one run, each input's render equals its golden file
    (tests/render, one ansible-playbook run per input): no object of the previous input
    carries over."""
    inputs = {
        SAMPLE: "glance-minimal",
        ROOT / "tests" / "render" / "fixtures" / "gateway.yaml": "gateway",
    }
    first = converge(tmp_path, list(inputs))
    assert first.returncode == 0, first.stdout + first.stderr
    for source, golden in inputs.items():
        rendered = tmp_path / "ephemeral" / "render" / source.stem
        for name in ("manifests.yaml", "status.yaml"):
            expected = (GOLDEN / golden / name).read_text()
            assert (rendered / name).read_text() == expected, f"{source.name}: {name}"
    assert changed(first) > 0  # the renders were written
    again = converge(tmp_path, list(inputs))
    assert again.returncode == 0, again.stdout + again.stderr
    assert changed(again) == 0
