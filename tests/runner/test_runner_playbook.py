"""One pass through ansible-runner (``runner.passes.playbook.PlaybookRunner``), with a real
ansible-playbook: each pass starts from inputs written for it, whatever an earlier pass or
an earlier process left in the object's private data dir.

ansible-runner 2.4.3 writes ``env/envvars``, ``env/extravars``, ``env/settings`` and the
rest only when they are absent, and reads what it finds (``env/envvars`` over the
``envvars`` it is given): a runner restarted with another ``KUBECONFIG`` kept running its
passes with the old one.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from test_runner_support import reported

from runner.kube.watches import GroupVersionKind, Watch
from runner.kube.workqueue import ObjectKey
from runner.passes.playbook import (
    KEPT_ENTRIES,
    PlaybookRunner,
    clear_inputs,
    private_data_dir,
    run_environment,
)

GVK = GroupVersionKind("example.c5c3.io", "v1", "Thing")
KEY = ObjectKey("example.c5c3.io", "Thing", "ns", "one")

# Says what the pass saw: its KUBECONFIG, its extra vars (the runner's clusters_namespace
# too), and whether it ran in check mode.
PLAYBOOK = """\
- hosts: localhost
  gather_facts: false
  tasks:
    - name: Report what the pass saw
      ansible.builtin.debug:
        msg:
          kubeconfig: "{{ lookup('ansible.builtin.env', 'KUBECONFIG') }}"
          size: "{{ size | default('absent') }}"
          stale: "{{ stale | default('absent') }}"
          clusters_namespace: "{{ clusters_namespace | default('absent') }}"
          check_mode: "{{ ansible_check_mode }}"
"""


def thing(**spec) -> dict:
    return {
        "apiVersion": "example.c5c3.io/v1",
        "kind": "Thing",
        "metadata": {"name": "one", "namespace": "ns", "generation": 1},
        "spec": spec,
    }


@pytest.fixture
def watch(tmp_path) -> Watch:
    playbook = tmp_path / "project" / "thing.yml"
    playbook.parent.mkdir()
    playbook.write_text(PLAYBOOK)
    return Watch(gvk=GVK, playbook=playbook)


def runner(tmp_path: Path, kubeconfig: str) -> PlaybookRunner:
    """Passes as the manager runs them, with ``kubeconfig`` as the runner's."""
    envvars = run_environment({"PATH": os.environ["PATH"]}, kubeconfig, None)
    return PlaybookRunner(tmp_path / "runner-dir", envvars, verbosity=0, environ={})


def test_a_pass_sees_its_own_environment_and_variables(watch, tmp_path):
    run = runner(tmp_path, "/kube/now").run(watch, KEY, thing(size=3), threading.Event())
    assert reported(run) == {
        "kubeconfig": "/kube/now",
        "size": 3,
        "stale": "absent",
        "clusters_namespace": "absent",
        "check_mode": False,
    }


def test_what_an_earlier_process_left_decides_nothing(watch, tmp_path):
    """A private data dir as a killed process (or one with another configuration) leaves
    it: every input file ansible-runner would read. The pass runs with its own inputs."""
    directory = private_data_dir(tmp_path / "runner-dir", watch, KEY)
    env = directory / "env"
    env.mkdir(parents=True)
    (env / "envvars").write_text(json.dumps({"KUBECONFIG": "/kube/deleted"}))
    (env / "extravars").write_text(json.dumps({"stale": "from before", "size": 1}))
    (env / "settings").write_text(json.dumps({"job_timeout": 1, "suppress_ansible_output": False}))
    (env / "cmdline").write_text("--check")
    (env / "passwords").write_text(json.dumps({"^Password:": "secret"}))
    (env / "ssh_key").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nnot a key\n")
    (directory / "args").write_text("ansible-playbook --version")
    (directory / "inventory").mkdir()
    (directory / "inventory" / "hosts").write_text("unreachable.invalid\n")
    (directory / "roles" / "stale").mkdir(parents=True)
    old_run = directory / "artifacts" / "20260101T000000-00000000"
    old_run.mkdir(parents=True)
    (old_run / "stdout").write_text("an earlier run's log\n")

    run = runner(tmp_path, "/kube/now").run(watch, KEY, thing(size=3), threading.Event())
    assert reported(run) == {
        "kubeconfig": "/kube/now",
        "size": 3,
        "stale": "absent",
        "clusters_namespace": "absent",
        "check_mode": False,
    }
    # This pass's inputs are on disk (as ansible-operator's input dir is), nothing else.
    assert json.loads((env / "envvars").read_text())["KUBECONFIG"] == "/kube/now"
    assert "stale" not in json.loads((env / "extravars").read_text())
    assert sorted(p.name for p in env.iterdir() if not p.name.startswith(".")) == [
        "envvars",
        "extravars",
        "settings",
    ]
    assert not (directory / "args").exists()
    assert not (directory / "roles").exists()
    assert [p.name for p in (directory / "inventory").iterdir()] == ["hosts.json"]
    assert (old_run / "stdout").read_text() == "an earlier run's log\n"  # artifacts stay


def test_a_spec_key_removed_between_two_passes_is_gone_from_the_second(watch, tmp_path):
    """Within one process too: the first pass's ``env/extravars`` must not feed the second
    (ansible-runner puts ``-e @env/extravars`` before the fresh ``-e``)."""
    passes = runner(tmp_path, "/kube/now")
    first = passes.run(watch, KEY, thing(size=3, stale="yes"), threading.Event())
    assert reported(first)["stale"] == "yes"
    second = passes.run(watch, KEY, thing(size=4), threading.Event())
    assert reported(second) == {
        "kubeconfig": "/kube/now",
        "size": 4,
        "stale": "absent",
        "clusters_namespace": "absent",
        "check_mode": False,
    }


@pytest.mark.parametrize("clusters_namespace", ["c5c3-clusters", ""])
def test_a_pass_sees_the_runners_clusters_namespace(watch, tmp_path, clusters_namespace):
    """The runner's ``--clusters-namespace`` reaches the playbook as ``clusters_namespace``,
    empty when target clusters are off (``Manager`` hands it to the ``PlaybookRunner``)."""
    envvars = run_environment({"PATH": os.environ["PATH"]}, "/kube/now", None)
    passes = PlaybookRunner(
        tmp_path / "runner-dir",
        envvars,
        verbosity=0,
        environ={},
        runner_vars={"clusters_namespace": clusters_namespace},
    )
    run = passes.run(watch, KEY, thing(size=3), threading.Event())
    assert reported(run)["clusters_namespace"] == clusters_namespace


def test_clear_inputs_keeps_only_the_artifacts(tmp_path):
    (tmp_path / "artifacts" / "run").mkdir(parents=True)
    (tmp_path / "env").mkdir()
    (tmp_path / "env" / "envvars").write_text("{}")
    (tmp_path / "args").write_text("false")
    (tmp_path / "link").symlink_to(tmp_path / "artifacts")
    clear_inputs(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(KEPT_ENTRIES) == ["artifacts"]
    assert (tmp_path / "artifacts" / "run").is_dir()
