"""``make run`` from the checkout, typed as README.md and docs/runner.md say, with the
environment a user has: ``KUBECONFIG`` naming the cluster and none of the runner's own
variables (the ones a test names are said where it sets them).

Unlike the scenarios of ``test_runner_scenarios.py`` (which start ``python -m runner`` with
absolute paths, a namespace and a runner dir of their own), these run the documented
command itself, from the checkout root: ``--watches-file ./watches.yaml``, every namespace,
the default runner dir, the default endpoints. Each test gets an API server of its own
because the runner watches every namespace: the double always, and a fresh real
kube-apiserver when ``KUBE_ASSETS_DIR`` is set (skipped, saying why, otherwise). The test
plays kubelet and the controllers (``ApiEnv.settle``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support.api_env import sample_documents
from test_runner_support import (
    ROOT,
    RunnerProcess,
    config_maps,
    converged,
    kill_processes_naming,
    own_real_apiserver,
    settle_until,
    wait_until,
)

from runner.settings import _OPTIONS

# What a user's shell would not carry into `make run`: the runner's own variables, the
# cluster's, and what pytest or an outer make may have set.
RUNNER_VARIABLES = {variable for _, variable, _, _ in _OPTIONS if variable} | {
    "KUBECONFIG",
    "K8S_AUTH_KUBECONFIG",
    "ANSIBLE_CONFIG",
    "PYTHONPATH",
    "MAKEFLAGS",
    "MAKELEVEL",
    "MFLAGS",
}


@pytest.fixture
def real_apiserver():
    """A kube-apiserver of the test's own: `make run` watches every namespace."""
    with own_real_apiserver() as server:
        yield server


class MakeRun(RunnerProcess):
    """``make run`` in the checkout root with ``KUBECONFIG=kubeconfig`` (and ``env``)."""

    def __init__(
        self, api, tmp_path: Path, name: str, kubeconfig: Path, env: dict[str, str] | None = None
    ) -> None:
        self.api = api
        self.name = name
        self.log_path = tmp_path / f"{name}.log"
        self.process: subprocess.Popen | None = None
        self.environment = {k: v for k, v in os.environ.items() if k not in RUNNER_VARIABLES}
        self.environment.update({"KUBECONFIG": str(kubeconfig), **(env or {})})

    def start(self) -> MakeRun:
        log = self.log_path.open("ab")
        try:
            self.process = subprocess.Popen(
                ["make", "run"],
                cwd=ROOT,
                env=self.environment,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        finally:
            log.close()
        return self

    def logged(self, msg: str) -> dict[str, Any]:
        """The first log line ``msg``: read from the log once there, even after an exit."""
        found = self.find(msg)
        return found[0] if found else self.wait_for(msg, timeout=120)

    @property
    def started(self) -> dict[str, Any]:
        """The runner's ``starting`` line (its pid)."""
        return self.logged("starting")

    @property
    def runner_dir(self) -> Path:
        return Path(self.logged("runner dir")["runner_dir"])

    def stop_runner(self, timeout: float = 90.0) -> int:
        """SIGTERM to the runner, as ``kill <pid>`` would; make's exit code (the runner's)."""
        assert self.process is not None
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.started["pid"], signal.SIGTERM)
        return self.process.wait(timeout)

    def kill(self) -> None:
        """SIGKILL make, the runner and every process of its passes (a host going down)."""
        runner_dir = self.runner_dir if self.find("runner dir") else None
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(30)
        if runner_dir is not None:
            kill_processes_naming(str(runner_dir))

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None and self.find("starting"):
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.stop_runner(timeout=30)
        self.kill()


@pytest.fixture
def make_runs(tmp_path):
    """``make_runs(api, name, kubeconfig, **env)`` starts a ``MakeRun``; all stopped after."""
    started: list[MakeRun] = []

    def start(api, name: str, kubeconfig: Path, **env: str) -> MakeRun:
        run = MakeRun(api, tmp_path, name, kubeconfig, env).start()
        started.append(run)
        return run

    yield start
    for run in started:
        run.close()


def converged_by(api, *runs: MakeRun):
    """``converged(api)``, failing at once with the first failed pass of ``runs``."""

    def probe() -> bool:
        for run in runs:
            failures = run.find("pass failed")
            assert not failures, f"{run.name}: {failures[0]}"
            run.assert_running_or_exited_cleanly()
        return converged(api)

    return probe


def no_failed_pass(run: MakeRun) -> None:
    failures = run.find("pass failed")
    assert not failures, failures[0]
    assert run.metric_total("controller_runtime_reconcile_total", result="error") == 0


def wait_for_started_passes(run: MakeRun, what: str) -> None:
    """Until every pass started so far has ended. (Not until the runner is idle: on a real
    kube-apiserver the Glance never turns Ready, so its pass polls the API every 10 s.)"""
    kinds = ("glance", "glancebackend")
    started = {kind: run.passes_started(kind) for kind in kinds}

    def ended(kind: str) -> int:
        return len(run.find("pass finished", controller=kind)) + len(
            run.find("pass failed", controller=kind)
        )

    wait_until(lambda: all(ended(kind) >= started[kind] for kind in kinds), what=what)


@pytest.mark.double_sees
@pytest.mark.parametrize("runner_dir", ["default-runner-dir", "RUNNER_DIR"])
def test_make_run_converges_and_a_restart_with_another_kubeconfig_rolls_nothing(
    api, make_runs, tmp_path, runner_dir
):
    """The README's `make run` converges the minimal sample; SIGKILLed, then started again
    with KUBECONFIG naming another file for the same cluster (the first one deleted), it
    converges again with no failed pass, no new rollout and no new config copy. With
    ``RUNNER_DIR`` both processes use one runner dir, so the second finds the first's
    private data dirs (their ansible-runner inputs named the deleted kubeconfig)."""
    env = {"RUNNER_DIR": str(tmp_path / "runner-dir")} if runner_dir == "RUNNER_DIR" else {}
    first_config = tmp_path / "kube" / "first.yaml"
    first_config.parent.mkdir()
    shutil.copy(api.kubeconfig, first_config)
    api.create_all(sample_documents())

    first = make_runs(api, "first", first_config, **env)
    if runner_dir == "RUNNER_DIR":
        assert first.runner_dir == tmp_path / "runner-dir"
    settle_until(api, converged_by(api, first), what="the sample to converge under make run")
    if api.reaches_pods:
        settle_until(
            api, lambda: api.condition("Glance", "glance", "Ready").get("status") == "True"
        )
    wait_for_started_passes(first, "the first runner's passes to end")
    no_failed_pass(first)
    assert first.metric_total("glance_operator_playbook_runs_total", status="successful") > 0
    deployment = api.get("Deployment", "glance")
    configs = sorted(config_maps(api))
    assert len(configs) == 1

    first.kill()
    second_config = tmp_path / "kube" / "second.yaml"
    shutil.copy(first_config, second_config)
    first_config.unlink()

    second = make_runs(api, "second", second_config, **env)
    # Its first list brings every object back: one pass each, all successful.
    wait_until(
        lambda: (
            converged_by(api, second)()
            and second.find("pass finished", controller="glance")
            and second.find("pass finished", controller="glancebackend")
        ),
        what="the second runner's first passes",
    )
    settle_until(api, converged_by(api, second), what="convergence after the restart")
    wait_for_started_passes(second, "the second runner's passes to end")
    no_failed_pass(second)
    after = api.get("Deployment", "glance")
    assert after["metadata"]["generation"] == deployment["metadata"]["generation"]
    assert after["spec"]["template"] == deployment["spec"]["template"]
    assert sorted(config_maps(api)) == configs

    if runner_dir == "RUNNER_DIR":
        assert second.runner_dir == first.runner_dir
    else:
        # Each process had a private dir; the SIGKILLed one's is cleaned by the next.
        assert second.runner_dir != first.runner_dir
        assert second.runner_dir.parent == first.runner_dir.parent
        assert not first.runner_dir.exists()
        assert second.find("stale runner dir removed", runner_dir=str(first.runner_dir))
    assert second.stop_runner() == 0
    assert second.find("stopped")
    assert second.runner_dir.exists() == (runner_dir == "RUNNER_DIR")


def test_two_make_runs_with_leader_election_one_leads_and_the_other_takes_over(api, make_runs):
    """`LEADER_ELECT=true make run` twice on one host: both start (no clash of ports or
    runner dirs), the first leads and reconciles, the second stands by with no pass, and
    takes over when the first is stopped with SIGTERM."""
    leader = make_runs(api, "leader", api.kubeconfig, LEADER_ELECT="true")
    leader.wait_for("leader election won")
    standby = make_runs(api, "standby", api.kubeconfig, LEADER_ELECT="true")
    standby.wait_for("waiting for the Lease")
    assert standby.runner_dir != leader.runner_dir
    for run in (leader, standby):  # make run serves on loopback only
        assert run.wait_for("serving metrics")["address"].startswith("127.0.0.1:")
        assert run.wait_for("serving health probes")["address"].startswith("127.0.0.1:")
    assert standby.http_get("health", "/readyz") == (200, "ok")

    api.create_all(sample_documents())
    settle_until(api, converged_by(api, leader), what="the leader to converge the sample")
    assert leader.metric_total("controller_runtime_reconcile_total") > 0
    assert leader.metric_total("leader_election_master_status") == 1
    assert standby.metric_total("controller_runtime_reconcile_total") == 0
    assert standby.metric_total("glance_operator_playbook_runs_total") == 0
    assert standby.metric_total("leader_election_master_status") == 0
    assert not standby.find("pass started")
    wait_for_started_passes(leader, "the leader's passes to end")
    no_failed_pass(leader)

    assert leader.stop_runner() == 0
    assert leader.find("leader election released")
    standby.wait_for("leader election won")
    wait_until(
        lambda: standby.metric_total("controller_runtime_reconcile_total") > 0,
        what="the new leader's passes",
    )
    wait_for_started_passes(standby, "the new leader's passes to end")
    no_failed_pass(standby)
    assert standby.stop_runner() == 0


def test_make_run_with_watch_namespace_reconciles_that_namespace_only(api, make_runs):
    """`WATCH_NAMESPACE=openstack make run` (docs/runner.md): the sample in `openstack`
    converges; the same sample in another namespace is not touched."""
    api.namespace = "openstack"  # the double's already; the real server is the test's own
    api.create_all(sample_documents())
    other = "elsewhere"
    api.ensure_namespace(other)
    for doc in sample_documents():
        doc["metadata"]["namespace"] = other
        api.client.create(doc)

    run = make_runs(api, "namespaced", api.kubeconfig, WATCH_NAMESPACE="openstack")
    assert run.wait_for("informers started")["namespaces"] == ["openstack"]
    settle_until(api, converged_by(api, run), what="the sample in openstack to converge")
    wait_for_started_passes(run, "the passes to end")
    no_failed_pass(run)
    keys = {line["key"] for line in run.find("pass started")}
    assert keys == {"openstack/glance", "openstack/s3-default"}
    untouched = api.get("Glance", "glance", namespace=other)
    assert not untouched["metadata"].get("finalizers")
    assert not (untouched.get("status") or {}).get("conditions")
    assert api.get("Deployment", "glance", namespace=other) is None
    assert run.stop_runner() == 0
