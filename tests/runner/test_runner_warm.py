"""Passes through the warm fork server (``runner/passes/warm/``) behind ansible-runner.

Real processes throughout: the server (``python -m runner.passes.warm serve``), the client
ansible-runner starts as its ``binary``, ansible-playbook's CLI in the forked child, and
the Glance playbook against the API double and, with ``KUBE_ASSETS_DIR``, a real
kube-apiserver. What a warm pass must keep from a cold one: the events and stats
ansible-runner reads, the artifacts it writes, the outcome and requeue the runner takes
from them, a cancel that stops it, its own environment (``ANSIBLE_*`` and verbosity
read per pass); and when the server is gone, a cold pass, not a failed one.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from support.api_env import sample_documents
from test_runner_support import (
    ROOT,
    RunnerProcess,
    processes_naming,
    reported,
    wait_until,
)

from runner.kube.watches import GroupVersionKind, Watch, load_watches
from runner.kube.workqueue import ObjectKey
from runner.passes.playbook import PlaybookRunner, checkout_ansible_cfg, run_environment
from runner.passes.warm.handle import WarmServer, client_script
from runner.passes.warm.protocol import CLIENT_NAME, SOCKET_NAME

GROUP = "glance.openstack.c5c3.io"
GVK = GroupVersionKind("example.c5c3.io", "v1", "Thing")
KEY = ObjectKey("example.c5c3.io", "Thing", "ns", "one")
SLEEP_MARKER = "3600.4242"

PLAYBOOK = """\
- hosts: localhost
  gather_facts: false
  tasks:
    - name: Report what the pass saw
      ansible.builtin.debug:
        msg:
          kubeconfig: "{{ lookup('ansible.builtin.env', 'KUBECONFIG') }}"
          keep_remote_files: "{{ lookup('ansible.builtin.config', 'DEFAULT_KEEP_REMOTE_FILES') }}"
          size: "{{ size | default('absent') }}"
    - name: Wait when asked
      ansible.builtin.command: sleep {{ sleep }}
      when: sleep is defined
      changed_when: false
"""


def thing(annotations: dict | None = None, **spec) -> dict:
    return {
        "apiVersion": "example.c5c3.io/v1",
        "kind": "Thing",
        "metadata": {
            "name": "one",
            "namespace": "ns",
            "generation": 1,
            "annotations": annotations or {},
        },
        "spec": spec,
    }


def pass_environment(kubeconfig: str | None = None) -> dict[str, str]:
    return run_environment(
        {"PATH": os.environ["PATH"]}, kubeconfig, checkout_ansible_cfg(ROOT / "watches.yaml")
    )


@pytest.fixture
def warm():
    """A warm server with a pass's environment; stopped after, and nothing of it left."""
    server = WarmServer({**os.environ, **pass_environment()}, cwd=ROOT / "playbooks")
    try:
        server.start()
        assert server.ready is not None, "the warm server did not report ready"
        yield server
    finally:
        directory = server.directory
        server.stop()
        if directory is not None:
            wait_until(lambda: not processes_naming(str(directory)), 30, what="server gone")
            assert not directory.exists()


@pytest.fixture
def watch(tmp_path) -> Watch:
    playbook = tmp_path / "project" / "thing.yml"
    playbook.parent.mkdir()
    playbook.write_text(PLAYBOOK)
    return Watch(gvk=GVK, playbook=playbook)


def shape(events: list[dict]) -> list[tuple]:
    """What a pass's events say, without their times, uuids and pids."""
    out = []
    for event in events:
        data = event.get("event_data") or {}
        out.append(
            (
                event.get("event"),
                data.get("task"),
                data.get("task_action"),
                data.get("host"),
                (data.get("res") or {}).get("changed"),
                tuple(sorted(k for k in data if k not in ("uuid", "pid"))),
            )
        )
    return out


def artifact_shape(directory: Path, ident: str) -> list[str]:
    run = directory / "artifacts" / ident
    names = []
    for path in sorted(run.rglob("*")):
        relative = path.relative_to(run)
        if path.is_dir():
            names.append(f"{relative}/")
        elif relative.parts[0] == "job_events":
            # <counter>-<uuid>.json: the counter and the event say what it is.
            event = json.loads(path.read_text())
            names.append(f"job_events/{event['counter']}-{event['event']}")
        else:
            names.append(str(relative))
    return names


def test_the_warm_up_reads_no_configuration_and_skips_nothing():
    """``python -m runner.passes.warm check``: every module of the preload lists imported, the
    collection's module_utils through the collection finder, ``ansible.constants`` not."""
    result = subprocess.run(
        [sys.executable, "-m", "runner.passes.warm", "check"],
        cwd=ROOT,
        env={**os.environ, **pass_environment(), "PYTHONPATH": f"{ROOT}/.collections:{ROOT}"},
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    report_ = json.loads(result.stdout)
    assert report_["skipped"] == []
    assert report_["configuration_imported"] == []
    module_utils = "ansible_collections.c5c3.glance.plugins.module_utils"
    assert f"{module_utils}.passes.pass_inputs" in report_["collection"]
    assert f"{module_utils}.kube.kube_client" in report_["collection"]


CONFIGURATION_PROBE = """
import json, os, sys
import runner.passes.warm.preload as warm
if sys.argv[1] == "warm":
    warm.warm_up(*warm.probe_collection_paths())
    os.environ["ANSIBLE_FORKS"] = "7"  # a pass's own variable, set after the warm-up
    pid = os.fork()
    if pid:
        sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
import ansible.constants as C
builtin = sys.modules.get("ansible_collections.ansible.builtin")
print(json.dumps({
    "definitions": C.config._base_defs,
    "forks": C.DEFAULT_FORKS,
    "reader": type(C.config)._read_config_yaml_file.__module__,
    "builtin_routing": sorted(getattr(builtin, "_collection_meta", None) or []),
}, default=str))
sys.stdout.flush()
"""


def test_a_pass_reads_its_own_configuration_over_the_kept_definitions():
    """The server keeps ansible's configuration definitions (``base.yml``) and the
    ``ansible.builtin`` routing: a pass forked from it builds the same definitions as a cold
    ``import ansible.constants``, and still reads its own ``ANSIBLE_*`` variables."""
    answers = {}
    for mode, extra in (("warm", {}), ("cold", {"ANSIBLE_FORKS": "7"})):
        result = subprocess.run(
            [sys.executable, "-c", CONFIGURATION_PROBE, mode],
            cwd=ROOT,
            env={
                **os.environ,
                **pass_environment(),
                **extra,
                "PYTHONPATH": f"{ROOT}/.collections:{ROOT}",
            },
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        )
        answers[mode] = json.loads(result.stdout)
    assert answers["warm"]["forks"] == answers["cold"]["forks"] == 7
    assert answers["warm"]["definitions"] == answers["cold"]["definitions"]
    assert len(answers["warm"]["definitions"]) > 100
    assert (answers["warm"]["reader"], answers["cold"]["reader"]) == (
        "runner.passes.warm.preload",
        "ansible.config.manager",
    )
    assert "plugin_routing" in answers["warm"]["builtin_routing"]  # read in the server


def test_two_passes_read_their_own_environment_and_verbosity(warm, watch, tmp_path):
    """The child imports ansible's configuration after the pass's environment is set: an
    ``ANSIBLE_*`` variable, ``KUBECONFIG`` and ``-v`` of one pass do not reach the next."""
    root = tmp_path / "runner-dir"
    first = PlaybookRunner(
        root,
        {**pass_environment("/kube/one"), "ANSIBLE_KEEP_REMOTE_FILES": "true"},
        verbosity=0,
        environ={},
        warm=warm,
    ).run(watch, KEY, thing(size=1), threading.Event())
    second = PlaybookRunner(
        root, pass_environment("/kube/two"), verbosity=0, environ={}, warm=warm
    ).run(
        watch,
        KEY,
        thing({"ansible.sdk.operatorframework.io/verbosity": "3"}, size=2),
        threading.Event(),
    )
    assert first.warm and second.warm
    assert reported(first) == {"kubeconfig": "/kube/one", "keep_remote_files": True, "size": 1}
    assert reported(second) == {"kubeconfig": "/kube/two", "keep_remote_files": False, "size": 2}
    directory = root / "example.c5c3.io" / "v1" / "Thing" / "ns" / "one"
    first_log = (directory / "artifacts" / first.ident / "stdout").read_text()
    second_log = (directory / "artifacts" / second.ident / "stdout").read_text()
    assert "task path:" not in first_log  # -vvv names each task's file; -v0 does not
    assert "task path:" in second_log
    # The events were written to this pass's artifact dir (ansible-runner's per-run
    # AWX_ISOLATED_DATA_DIR): the recap of each, in its own run.
    for run in (first, second):
        assert any(
            name.endswith("playbook_on_stats") for name in artifact_shape(directory, run.ident)
        )


def test_a_warm_pass_matches_a_cold_one_on_a_toy_playbook(warm, watch, tmp_path):
    cold_root, warm_root = tmp_path / "cold", tmp_path / "warm"
    cold = PlaybookRunner(cold_root, pass_environment("/kube"), verbosity=0, environ={})
    hot = PlaybookRunner(warm_root, pass_environment("/kube"), verbosity=0, environ={}, warm=warm)
    cold_run = cold.run(watch, KEY, thing(size=3), threading.Event())
    warm_run = hot.run(watch, KEY, thing(size=3), threading.Event())
    assert (cold_run.warm, warm_run.warm) == (False, True)
    assert (warm_run.status, warm_run.rc) == (cold_run.status, cold_run.rc) == ("successful", 0)
    assert shape(warm_run.events) == shape(cold_run.events)
    assert warm_run.outcome == cold_run.outcome
    part = ("example.c5c3.io", "v1", "Thing", "ns", "one")
    assert artifact_shape(warm_root.joinpath(*part), warm_run.ident) == artifact_shape(
        cold_root.joinpath(*part), cold_run.ident
    )


def test_a_cancel_stops_a_warm_pass_and_everything_it_started(warm, watch, tmp_path):
    runner = PlaybookRunner(
        tmp_path / "runner-dir",
        pass_environment(),
        verbosity=0,
        environ={},
        kill_grace=5,
        warm=warm,
    )
    cancel = threading.Event()
    result: dict = {}
    thread = threading.Thread(
        target=lambda: result.update(run=runner.run(watch, KEY, thing(sleep=SLEEP_MARKER), cancel))
    )
    thread.start()
    try:
        wait_until(lambda: processes_naming(SLEEP_MARKER), 120, what="the pass's sleep")
        cancel.set()
        thread.join(60)
        assert not thread.is_alive()
        run = result["run"]
        assert run.warm and run.cancelled
        assert run.status in ("canceled", "failed")
        wait_until(lambda: not processes_naming(SLEEP_MARKER), 30, what="the sleep gone")
        # The server outlives the cancelled pass and serves the next one.
        after = runner.run(watch, KEY, thing(size=5), threading.Event())
        assert after.warm and reported(after)["size"] == 5
    finally:
        cancel.set()
        thread.join(60)


def test_a_killed_client_takes_its_pass_with_it(warm, watch, tmp_path):
    """ansible-runner SIGKILLs what a cancel left after the grace: the server sees the
    client's socket close and kills the pass's process group."""
    runner = PlaybookRunner(
        tmp_path / "runner-dir", pass_environment(), verbosity=0, environ={}, warm=warm
    )
    result: dict = {}
    thread = threading.Thread(
        target=lambda: result.update(
            run=runner.run(watch, KEY, thing(sleep=SLEEP_MARKER), threading.Event())
        )
    )
    thread.start()
    try:
        wait_until(lambda: processes_naming(SLEEP_MARKER), 120, what="the pass's sleep")
        [client] = [
            pid for pid in processes_naming(str(warm.directory / CLIENT_NAME)) if pid != warm.pid
        ]
        os.kill(client, signal.SIGKILL)
        thread.join(60)
        assert not thread.is_alive()
        assert result["run"].status == "failed"
        wait_until(lambda: not processes_naming(SLEEP_MARKER), 30, what="the sleep gone")
    finally:
        for pid in processes_naming(SLEEP_MARKER):
            os.kill(pid, signal.SIGKILL)
        thread.join(60)


def test_a_dead_server_means_cold_passes_not_failed_ones(warm, watch, tmp_path):
    runner = PlaybookRunner(
        tmp_path / "runner-dir", pass_environment("/kube"), verbosity=0, environ={}, warm=warm
    )
    assert runner.run(watch, KEY, thing(size=1), threading.Event()).warm
    warm.restart_interval = 3600.0  # no restart within the test: the fallback is what counts
    os.kill(warm.pid, signal.SIGKILL)
    warm.process.wait(30)
    run = runner.run(watch, KEY, thing(size=2), threading.Event())
    assert not run.warm
    assert reported(run) == {"kubeconfig": "/kube", "keep_remote_files": False, "size": 2}


def test_a_dead_server_is_started_again(warm, watch, tmp_path):
    runner = PlaybookRunner(
        tmp_path / "runner-dir", pass_environment("/kube"), verbosity=0, environ={}, warm=warm
    )
    warm.restart_interval = 0.0
    old = warm.pid
    os.kill(old, signal.SIGKILL)
    warm.process.wait(30)
    assert not runner.run(watch, KEY, thing(size=1), threading.Event()).warm  # cold, restarts
    wait_until(warm.alive, 120, what="the server started again")
    assert warm.pid != old
    assert runner.run(watch, KEY, thing(size=2), threading.Event()).warm


def test_the_client_runs_cold_when_the_socket_is_gone(tmp_path):
    """The race the runner cannot see (the server dies between its check and the pass):
    the client says so on stderr and becomes the cold ansible-playbook."""
    cold = str(Path(sys.executable).parent / "ansible-playbook")
    client = tmp_path / CLIENT_NAME
    client.write_text(client_script(tmp_path, cold))
    client.chmod(0o700)
    assert not (tmp_path / SOCKET_NAME).exists()
    result = subprocess.run(
        [str(client), "--version"], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ansible-playbook [core ")
    assert f"[c5c3 warm server] cannot reach {tmp_path / SOCKET_NAME}" in result.stderr


# -- the Glance pass: warm and cold side by side -----------------------------------------------


def glance_passes(api, runner: PlaybookRunner, watch: Watch, limit: int = 8) -> list:
    """The minimal sample's passes until one writes nothing (settling in between)."""
    runs = []
    for _ in range(limit):
        obj = api.client.get(f"{GROUP}/v1alpha1", "Glance", "glance", api.namespace)
        key = ObjectKey(GROUP, "Glance", api.namespace, "glance")
        run = runner.run(watch, key, obj, threading.Event())
        assert run.status == "successful", run.stdout_tail
        runs.append(run)
        if not any(
            (e.get("event_data") or {}).get("res", {}).get("changed")
            for e in run.events
            if e.get("event") == "runner_on_ok"
        ):
            break
        api.settle()
    return runs


def test_glance_passes_through_the_warm_server_match_cold_ones(api, warm, tmp_path):
    """The minimal sample installed twice, in two namespaces: by cold passes and by warm
    ones. Pass by pass: the same status, the same events (type, task, action, host,
    changed), the same recap, the same outcome (requeue, conditions), the same artifacts."""
    [watch] = [w for w in load_watches(ROOT / "watches.yaml") if w.gvk.kind == "Glance"]
    envvars = run_environment(
        os.environ, str(api.kubeconfig), checkout_ansible_cfg(ROOT / "watches.yaml")
    )
    results = {}
    for label, server in (("cold", None), ("warm", warm)):
        env = dataclasses.replace(api, namespace=f"{api.namespace}-{label}", runs=[])
        env.create_all(sample_documents())
        runner = PlaybookRunner(tmp_path / label, envvars, verbosity=2, environ={}, warm=server)
        results[label] = glance_passes(env, runner, watch)
    cold, hot = results["cold"], results["warm"]
    assert len(hot) == len(cold) >= 2
    for number, (c, w) in enumerate(zip(cold, hot, strict=True), 1):
        assert (c.warm, w.warm) == (False, True)
        assert (w.status, w.rc) == (c.status, c.rc), number
        assert shape(w.events) == shape(c.events), number
        recaps = [
            {k: e["event_data"][k] for k in ("ok", "changed", "failures", "skipped")}
            for e in (c.events[-1], w.events[-1])
        ]
        assert recaps[0] == recaps[1], number
        assert w.outcome == c.outcome, number
    assert hot[0].outcome.requeue_after is not None  # the runner's requeue came through


@pytest.mark.parametrize("setting", ["true", "false"])
def test_warm_passes_setting_of_the_runner(double_api, tmp_path, setting):
    """``python -m runner`` runs its passes through the warm server; ``WARM_PASSES=false``
    runs a cold ansible-playbook per pass and starts no server. The server's processes and
    private dir are gone when the runner stops."""
    double_api.create_all(sample_documents())
    runner = RunnerProcess(double_api, tmp_path, env={"WARM_PASSES": setting}).start()
    try:
        if setting == "true":
            [ready] = wait_until(lambda: runner.find("warm server ready"), what="server ready")
            assert ready["skipped"] == []
            wait_until(lambda: runner.find("pass finished", warm=True), 300, what="a warm pass")
            directory = ready["directory"]
            assert processes_naming(directory)
        else:
            finished = runner.wait_for("pass finished", timeout=300, controller="glance")
            assert finished["warm"] is False
            assert not runner.find("warm server ready")
        assert runner.terminate(timeout=120) == 0
        if setting == "true":
            wait_until(lambda: not processes_naming(directory), 30, what="the server gone")
            assert not Path(directory).exists()
    finally:
        runner.kill()
