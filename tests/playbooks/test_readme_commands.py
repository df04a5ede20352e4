"""The README's render and validate commands, run exactly as written: from the checkout,
with a relative input file and output directory, in a user's environment (no
``ANSIBLE_CONFIG`` from make; ansible-playbook finds ``./ansible.cfg`` itself).

Ansible resolves a relative ``lookup('file', ...)`` against the playbook's directory
first, so these commands once read ``playbooks/my-glance.yaml`` and failed; the playbooks
now take relative paths from the directory the user runs them in.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from support.readme import readme_make

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
USER_INPUT = "my-glance.yaml"  # the file name the README's commands use


def readme_command(playbook: str) -> str:
    """The README line that runs ``playbook`` on ``my-glance.yaml``, comment dropped."""
    for line in README.read_text().splitlines():
        if line.startswith(f".venv/bin/ansible-playbook {playbook}") and USER_INPUT in line:
            return line.partition("#")[0].strip()
    raise AssertionError(f"README.md shows no command running {playbook} on {USER_INPUT}")


def user_environment() -> dict[str, str]:
    """The test process's environment less what make and pytest add for the suite."""
    return {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("ANSIBLE_", "PYTEST_", "C5C3_")) and key != "PYTHONPATH"
    }


def run_as_user(command: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        command,
        shell=True,
        cwd=ROOT,
        env=user_environment(),
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture
def my_glance():
    """``my-glance.yaml`` in the checkout, as the README's reader has it; removed after,
    with the README's output directory."""
    path = ROOT / USER_INPUT
    output = ROOT / "out" / "mine"
    assert not path.exists(), f"{path} exists already; this test would overwrite it"
    shutil.copyfile(ROOT / "config" / "samples" / "glance_minimal.yaml", path)
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)
        shutil.rmtree(output, ignore_errors=True)


def test_the_readme_render_command_renders_a_relative_input_into_a_relative_dir(my_glance):
    command = readme_command("playbooks/render.yml")
    assert "render_output=out/mine" in command
    result = run_as_user(command)
    assert result.returncode == 0, result.stdout + result.stderr
    manifests = list(yaml.safe_load_all((ROOT / "out" / "mine" / "manifests.yaml").read_text()))
    kinds = {doc["kind"] for doc in manifests if doc}
    assert {"Deployment", "Service", "ConfigMap", "Job", "CronJob"} <= kinds
    assert not (ROOT / "playbooks" / "out").exists()


def test_the_readme_validate_command_judges_a_relative_input(my_glance):
    result = run_as_user(readme_command("playbooks/validate.yml"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "custom resources accepted" in result.stdout


# --- make demo-offline, and make demo where the node cannot be made ---------------------

SAMPLES = ("glance_minimal", "glance_full", "glance_managed", "glance_target_cluster")


def test_make_demo_offline_renders_each_bundled_sample_with_its_summary():
    result = run_as_user(readme_make("demo-offline"))
    assert result.returncode == 0, result.stdout + result.stderr
    for sample in SAMPLES:
        assert f"== config/samples/{sample}.yaml -> out/{sample}/" in result.stdout
        assert (ROOT / "out" / sample / "status.yaml").is_file()
    assert "default store: s3-default of [s3-default]" in result.stdout
    assert "the 8 objects above go there" in result.stdout  # the target cluster's summary
    # docs/database.md's review of what the operator asks mariadb-operator for, as written.
    shown = run_as_user("grep -A12 'kind: Database' out/glance_managed/manifests.yaml")
    assert shown.returncode == 0 and "kind: Database" in shown.stdout, shown.stdout + shown.stderr


def test_make_demo_says_why_it_cannot_run_live_and_renders_instead(tmp_path):
    """The real hack/demo.py as a user without root runs it (``os.geteuid`` says 1000),
    through the Makefile's fallback; one sample, to keep it short."""
    python = ROOT / ".venv" / "bin" / "python"
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "ansible-playbook").symlink_to(ROOT / ".venv" / "bin" / "ansible-playbook")
    (fake / "python").write_text(
        "#!/bin/sh\n"
        'if [ "$1" = hack/demo.py ]; then\n'
        f"  exec {python} -c 'import os, runpy; os.geteuid = lambda: 1000; "
        'runpy.run_path("hack/demo.py", run_name="__main__")\'\n'
        "fi\n"
        f'exec {python} "$@"\n'
    )
    (fake / "python").chmod(0o755)
    result = run_as_user(f"make demo BIN={fake} SAMPLES=config/samples/glance_minimal.yaml")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    rendered = lines.index("== config/samples/glance_minimal.yaml -> out/glance_minimal/")
    assert lines[0] == "make demo: the live demo cannot run on this machine:", result.stdout
    assert (
        "  - the one-node cluster needs root (network devices, iptables, mounts, cgroups)"
        in lines[1:rendered]
    ), result.stdout
    assert lines[rendered - 1] == (
        "make demo: showing `make demo-offline` instead (the bundled samples, rendered)"
    )
    assert "default store: s3-default of [s3-default]" in result.stdout
