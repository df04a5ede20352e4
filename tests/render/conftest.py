"""Render every sample and fixture once per session through ``playbooks/render.yml``."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "render" / "fixtures"
GOLDEN = ROOT / "tests" / "render" / "golden"
SAMPLES = ROOT / "config" / "samples"
PLAYBOOK = ROOT / "playbooks" / "render.yml"


def inputs() -> dict[str, Path]:
    """Every render input by name: the two samples and one fixture per optional block."""
    found = {p.stem.replace("_", "-"): p for p in sorted(SAMPLES.glob("*.yaml"))}
    found.update({p.stem: p for p in sorted(FIXTURES.glob("*.yaml"))})
    return found


@dataclass
class Render:
    name: str
    source: Path
    output: Path
    returncode: int
    stdout: str
    stderr: str

    @property
    def manifests_text(self) -> str:
        return (self.output / "manifests.yaml").read_text()

    @property
    def status_text(self) -> str:
        return (self.output / "status.yaml").read_text()

    @property
    def manifests(self) -> list[dict]:
        return [d for d in yaml.safe_load_all(self.manifests_text) if d]

    @property
    def status(self) -> list[dict]:
        return [d for d in yaml.safe_load_all(self.status_text) if d]

    def find(self, kind: str, name: str | None = None) -> dict:
        for obj in self.manifests:
            if obj["kind"] == kind and (name is None or obj["metadata"]["name"] == name):
                return obj
        raise KeyError(f"{self.name}: no {kind} {name or ''} rendered")


def run_render(source: Path, output: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    return subprocess.run(
        [
            str(Path(sys.executable).parent / "ansible-playbook"),
            str(PLAYBOOK),
            "-e",
            f"render_input={source}",
            "-e",
            f"render_output={output}",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def render_to(name: str, source: Path, output: Path) -> Render:
    result = run_render(source, output)
    return Render(name, source, output, result.returncode, result.stdout, result.stderr)


@pytest.fixture(scope="session")
def renders(tmp_path_factory) -> dict[str, Render]:
    """Each input rendered once; two at a time, one per core."""
    base = tmp_path_factory.mktemp("render")
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {
            name: pool.submit(render_to, name, source, base / name)
            for name, source in inputs().items()
        }
    done = {name: f.result() for name, f in futures.items()}
    for render in done.values():
        assert render.returncode == 0, f"{render.name}:\n{render.stdout}\n{render.stderr}"
    return done
