"""The runner end to end: ``python -m runner`` against an API server, no manual playbook
run; the test plays kubelet and the controllers (``ApiEnv.settle``) and looks at what the
cluster holds.

The scenarios run on the test double always and on a real kube-apiserver when
``KUBE_ASSETS_DIR`` is set (skipped, saying why, otherwise), except those about the
runner's own machinery (kill, leader election, shutdown), which run on the double only.
Waits poll with generous timeouts; nothing asserts on how long something took.
"""

from __future__ import annotations

import http.client
import signal
import ssl
from typing import Any

import pytest
from support.api_env import sample_documents
from support.tls import make_server_tls
from test_runner_support import (
    GROUP_VERSION,
    RunnerProcess,
    condition,
    config_maps,
    converged,
    idle,
    processes_naming,
    settle_until,
    wait_until,
)

FINALIZER = "glance.openstack.c5c3.io/finalizer"


@pytest.fixture
def runners(tmp_path):
    """``runners(api, name, **options)`` starts a ``RunnerProcess``; all are stopped after."""
    started: list[RunnerProcess] = []

    def start(api, name: str = "runner", **options: Any) -> RunnerProcess:
        runner = RunnerProcess(api, tmp_path, name, **options).start()
        started.append(runner)
        return runner

    yield start
    for runner in started:
        runner.close()


def second_backend(default: bool = False) -> dict:
    return {
        "apiVersion": GROUP_VERSION,
        "kind": "GlanceBackend",
        "metadata": {"name": "s3-second"},
        "spec": {
            "glanceRef": {"name": "glance"},
            "type": "S3",
            "isDefault": default,
            "s3": {
                "host": "http://rgw.storage.svc:8080",
                "bucket": "glance-second",
                "credentialsSecretRef": {"name": "glance-s3"},
            },
        },
    }


def default_backend_of(config_map: dict) -> str | None:
    for line in config_map["data"]["glance-api.conf"].splitlines():
        if line.startswith("default_backend"):
            return line.split("=", 1)[1].strip()
    return None


# -- on both API servers ----------------------------------------------------------------------


@pytest.mark.double_sees
def test_the_minimal_sample_converges(api, runners):
    api.create_all(sample_documents())
    runner = runners(api)
    settle_until(api, lambda: converged(api), what="Glance and backend to converge")

    glance = api.get("Glance", "glance")
    assert glance["metadata"]["finalizers"] == [FINALIZER]
    assert glance["status"]["observedGeneration"] == glance["metadata"]["generation"]
    assert condition(api, "GlanceBackend", "s3-default", "ConfigProjected")[0] == "True"
    if api.reaches_pods:
        settle_until(api, lambda: condition(api, "Glance", "glance", "Ready")[0] == "True")
    # The runner did it: its passes are counted, and it is ready.
    assert runner.metric_total("controller_runtime_reconcile_total", controller="glance") > 0
    assert runner.metric_total("glance_operator_playbook_runs_total", status="successful") > 0
    assert runner.metric_total("controller_runtime_reconcile_total", result="error") == 0
    # Through the warm server (runner/passes/warm/), which imported everything it should.
    [ready] = runner.find("warm server ready")
    assert ready["skipped"] == []
    assert runner.find("pass finished", warm=True)
    assert not runner.find("warm server exited; passes run cold ansible-playbook")
    # The reference's series: the db-sync Job counted once, the pass's steps observed.
    sync = {"glance": "glance", "namespace": api.namespace}
    wait_until(
        lambda: runner.metric_total("glance_operator_db_sync_total", result="succeeded", **sync),
        what="the db-sync Job counted",
    )
    assert runner.metric_total("glance_operator_db_sync_total", result="succeeded", **sync) == 1
    assert runner.metric_total("glance_operator_db_sync_duration_seconds_count", **sync) == 1
    # What the watches show: the finished db-sync Job, the Glance's Ready condition.
    job_failed = (
        'glance_operator_db_job_failed{component="db-sync",glance="glance",'
        f'namespace="{api.namespace}"}} 0.0'
    )
    assert job_failed in runner.http_get("metrics", "/metrics")[1].splitlines()
    assert runner.metric_total("glance_operator_db_jobs_active", **sync) == 0
    ready = 1.0 if condition(api, "Glance", "glance", "Ready")[0] == "True" else 0.0
    wait_until(
        lambda: runner.metric_total("glance_operator_glance_ready", **sync) == ready,
        what=f"glance_operator_glance_ready to be {ready}",
    )
    step_count = "glance_operator_reconcile_duration_seconds_count"
    assert runner.metric_total(step_count, sub_reconciler="gather") > 0
    assert runner.metric_total(step_count, sub_reconciler="apply") > 0
    assert runner.metric_total("glance_operator_reconcile_errors_total") == 0
    assert runner.http_get("health", "/readyz") == (200, "ok")
    assert runner.http_get("health", "/healthz") == (200, "ok")
    started = runner.find("pass started", controller="glance")
    assert started and all(line["key"] == f"{api.namespace}/glance" for line in started)
    # Every pass says what woke it; the backend saw its section mounted when the parent's
    # Deployment mounted it, not at a backstop poll.
    assert all(line.get("woken_by") for line in runner.find("pass started"))
    assert "ADDED Glance" in started[0]["woken_by"]
    backend_wakes = [
        reason
        for line in runner.find("pass started", controller="glancebackend")
        for reason in line["woken_by"]
    ]
    assert any(
        reason.startswith("parent's ") and reason.endswith(" Deployment mounts")
        for reason in backend_wakes
    ), backend_wakes
    assert runner.terminate() == 0
    assert runner.find("stopped")


def test_flipping_the_default_backend_re_renders_the_parent(api, runners):
    api.create_all(sample_documents())
    runners(api)
    first = wait_until(lambda: config_maps(api), what="the first config ConfigMap")
    assert [default_backend_of(c) for c in first.values()] == ["s3-default"]

    second = second_backend()
    second["metadata"]["namespace"] = api.namespace
    api.client.create(second)
    wait_until(
        lambda: condition(api, "GlanceBackend", "s3-second", "CredentialsReady")[0] == "True",
        what="the second backend's pass",
    )
    api.merge_patch("GlanceBackend", "s3-default", {"spec": {"isDefault": False}})
    api.merge_patch("GlanceBackend", "s3-second", {"spec": {"isDefault": True}})

    def new_config():
        fresh = {name: c for name, c in config_maps(api).items() if name not in first}
        return [c for c in fresh.values() if default_backend_of(c) == "s3-second"]

    [rendered] = settle_until(api, new_config, what="a config naming s3-second the default")
    assert "s3-second:s3" in rendered["data"]["glance-api.conf"]  # enabled_backends
    assert condition(api, "Glance", "glance", "BackendsReady") == ("True", "AllBackendsProjected")


def test_deleting_the_glance_runs_the_finalizer_pass(api, runners):
    api.create_all(sample_documents())
    runner = runners(api)
    wait_until(lambda: config_maps(api), what="the first pass")
    assert api.get("Glance", "glance")["metadata"]["finalizers"] == [FINALIZER]

    api.client.delete(GROUP_VERSION, "Glance", "glance", api.namespace)
    wait_until(lambda: api.get("Glance", "glance") is None, what="the Glance to go")
    runner.wait_for("pass started", controller="glance", finalizing=True)
    assert not runner.find("pass failed")


# -- the runner's machinery, on the double ---------------------------------------------------


def kill_mid_pass(api, runner, trigger) -> None:
    """``trigger()`` wakes the Glance; SIGKILL the runner (and its ansible processes, as a
    pod kill does) as soon as that pass has started."""
    passes = runner.passes_started()
    trigger()
    runner.wait_for("pass started", controller="glance", after=passes)
    runner.kill()
    assert not processes_naming(str(runner.runner_dir))
    started = len(runner.find("pass started", controller="glance"))
    finished = len(runner.find("pass finished", controller="glance"))
    assert finished < started  # the last pass never finished


def test_a_runner_killed_mid_pass_converges_with_no_extra_rollout(double_api, runners):
    api = double_api
    api.create_all(sample_documents())
    first = runners(api, "first")
    wait_until(lambda: api.get("Job", "glance-db-sync"), what="the db-sync Job")

    # The Job completes: the pass it wakes creates the Deployment. Killed in that pass, the
    # Deployment is there or not; the next runner must not write it twice.
    kill_mid_pass(api, first, api.settle)
    second = runners(api, "second")
    settle_until(api, lambda: converged(api), what="convergence after the first kill")
    converged_deployment = api.get("Deployment", "glance")
    assert converged_deployment["metadata"]["generation"] == 1  # created once, never changed
    assert len(config_maps(api)) == 1

    # Converged, then a pass (the PDB deleted: the owner is woken) killed mid-way: the next
    # runner puts the PDB back and leaves the Deployment as it was.
    kill_mid_pass(
        api,
        second,
        lambda: api.client.delete("policy/v1", "PodDisruptionBudget", "glance", api.namespace),
    )
    third = runners(api, "third")
    settle_until(api, lambda: api.get("PodDisruptionBudget", "glance"), what="the PDB again")
    settle_until(api, lambda: converged(api), what="convergence after the second kill")
    wait_until(lambda: idle(third), what="the third runner's passes to end")
    after = api.get("Deployment", "glance")
    assert after["metadata"]["generation"] == 1
    assert after["spec"]["template"] == converged_deployment["spec"]["template"]
    assert len(config_maps(api)) == 1


def test_only_the_leader_reconciles_and_a_standby_takes_over(double_api, runners):
    api = double_api
    lease = ("--leader-elect-lease-duration=3s", "--leader-elect-renew-deadline=2s")
    timing = (*lease, "--leader-elect-retry-period=0.5s")
    leader = runners(api, "leader", leader_elect=True, args=timing)
    leader.wait_for("leader election won")
    standby = runners(api, "standby", leader_elect=True, args=timing)
    standby.wait_for("waiting for the Lease")
    assert standby.http_get("health", "/readyz") == (200, "ok")  # a standby is ready

    api.create_all(sample_documents())
    wait_until(lambda: config_maps(api), what="the leader's first passes")
    wait_until(lambda: leader.metric_total("controller_runtime_reconcile_total") > 0)
    assert standby.metric_total("controller_runtime_reconcile_total") == 0
    assert standby.metric_total("glance_operator_playbook_runs_total") == 0
    assert standby.metric_total("leader_election_master_status") == 0
    assert leader.metric_total("leader_election_master_status") == 1

    # SIGTERM: the leader releases the Lease; the standby takes over and reconciles.
    assert leader.terminate() == 0
    assert leader.find("leader election released")
    standby.wait_for("leader election won")
    wait_until(lambda: standby.metric_total("controller_runtime_reconcile_total") > 0)
    identity = standby.wait_for("waiting for the Lease")["identity"]
    holder = api.client.get(
        "coordination.k8s.io/v1", "Lease", "c5c3-glance-operator", api.namespace
    )
    assert holder["spec"]["holderIdentity"] == identity

    # SIGKILL: no release; the next standby takes over once the Lease has run out.
    third = runners(api, "third", leader_elect=True, args=timing)
    third.wait_for("waiting for the Lease")
    standby.kill()
    third.wait_for("leader election won")
    wait_until(lambda: third.metric_total("controller_runtime_reconcile_total") > 0)
    lease_now = api.client.get(
        "coordination.k8s.io/v1", "Lease", "c5c3-glance-operator", api.namespace
    )
    assert lease_now["spec"]["leaseTransitions"] >= 2


def test_sigterm_lets_a_running_pass_finish_within_the_grace_period(double_api, runners):
    api = double_api
    api.create_all(sample_documents())
    runner = runners(api, args=("--graceful-shutdown-timeout=90s",))
    runner.wait_for("pass started", controller="glance")
    assert runner.terminate(timeout=180) == 0, runner.log_tail()
    lines = [(line["msg"], line.get("controller")) for line in runner.lines()]
    finished = lines.index(("pass finished", "glance"))
    assert lines.index(("stopping", None)) < finished < lines.index(("stopped", None))
    assert not runner.find("pass abandoned")
    assert not processes_naming(str(runner.runner_dir))


def test_sigterm_abandons_a_pass_after_the_grace_period(double_api, runners):
    api = double_api
    api.create_all(sample_documents())
    runner = runners(api, args=("--graceful-shutdown-timeout=0s",))
    runner.wait_for("pass started", controller="glance")
    assert runner.terminate() == 0, runner.log_tail()
    messages = [line["msg"] for line in runner.lines()]
    assert "abandoning running passes" in messages
    assert "pass abandoned" in messages
    assert messages[-1] == "stopped"
    # Ansible was stopped through its process group: nothing of the pass is left running.
    assert not processes_naming(str(runner.runner_dir))


def test_a_sigterm_taken_by_another_thread_stops_the_runner(double_api, runners):
    # The kernel hands a process-directed signal to any thread that does not block it;
    # CPython runs the handler in the main thread only, once it runs bytecode again. A main
    # thread blocked in an untimed wait never did (CI: the runner ignored SIGTERM for 180 s).
    runner = runners(double_api)
    runner.wait_for("informers synced")
    others = runner.worker_threads()
    assert others, "the runner has no thread besides its main thread"
    assert runner.terminate(timeout=60, thread=others[-1]) == 0, runner.log_tail()
    assert [line["signal"] for line in runner.lines() if "signal" in line] == ["SIGTERM"]
    assert runner.lines()[-1]["msg"] == "stopped"


def test_sigusr1_writes_every_threads_stack_and_the_runner_goes_on(double_api, runners):
    runner = runners(double_api)
    runner.wait_for("informers synced")
    runner.process.send_signal(signal.SIGUSR1)
    # faulthandler writes thread after thread, the current one (the main thread) among
    # them: wait for all that is looked for, not for the first of it (under load the test
    # read the log between two threads' stacks).
    wanted = ("in _work", "Current thread", "runner/manager.py")
    wait_until(
        lambda: all(w in runner.log_path.read_text(errors="replace") for w in wanted),
        30,
        0.1,
        "the stacks of every thread of the runner, its workers' among them, in its log",
    )
    assert runner.process.poll() is None
    assert runner.terminate() == 0
    assert runner.lines()[-1]["msg"] == "stopped"


def test_the_webhook_is_served_when_its_certificate_is_there(double_api, runners, tmp_path):
    tls = make_server_tls(tmp_path / "certs")
    runner = runners(
        double_api,
        env={"WEBHOOK_CERT_DIR": str(tmp_path / "certs")},
        args=("--metrics-bind-address=0",),
    )
    serving = runner.wait_for("serving")
    context = ssl.create_default_context(cafile=str(tls.ca_file))
    connection = http.client.HTTPSConnection(
        "127.0.0.1", serving["port"], context=context, timeout=10
    )
    connection.request("POST", "/validate-glance-openstack-c5c3-io-v1alpha1-glance", body=b"{}")
    answer = connection.getresponse()
    assert answer.status == 400  # an empty review: the webhook is there and answers
    connection.close()
    assert not runner.find("serving metrics")  # 0 turns the metrics listener off

    plain = runners(double_api, "plain")
    plain.wait_for("admission webhook not served: no tls.crt and tls.key in its cert dir")


def test_after_sigterm_the_webhook_answers_while_the_endpoints_update(
    double_api, runners, tmp_path
):
    """A call the webhook Service routes to a pod just deleted is answered: the webhook
    serves on for --webhook-shutdown-delay after SIGTERM, and only then closes."""
    tls = make_server_tls(tmp_path / "certs")
    runner = runners(
        double_api,
        env={"WEBHOOK_CERT_DIR": str(tmp_path / "certs")},
        args=("--metrics-bind-address=0", "--webhook-shutdown-delay=20s"),
    )
    port = runner.wait_for("serving")["port"]
    context = ssl.create_default_context(cafile=str(tls.ca_file))

    def empty_review() -> int:
        connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10)
        try:
            connection.request("POST", "/validate-glance-openstack-c5c3-io-v1alpha1-glance", b"{}")
            return connection.getresponse().status
        finally:
            connection.close()

    runner.process.send_signal(signal.SIGTERM)
    waiting = runner.wait_for("webhook serving on while the endpoints update")
    assert 0 < waiting["seconds"] <= 20
    assert runner.process.poll() is None
    assert empty_review() == 400  # answered after SIGTERM, on a new connection
    assert runner.terminate(timeout=60) == 0  # (a second signal ends the wait at once)
    messages = [line["msg"] for line in runner.lines()]
    assert messages.index("webhook serving on while the endpoints update") < messages.index(
        "stopped"
    )
    with pytest.raises(OSError):
        empty_review()


def test_without_a_delay_the_webhook_stops_with_the_rest(double_api, runners, tmp_path):
    make_server_tls(tmp_path / "certs")
    runner = runners(
        double_api,
        env={"WEBHOOK_CERT_DIR": str(tmp_path / "certs")},
        args=("--metrics-bind-address=0", "--webhook-shutdown-delay=0"),
    )
    runner.wait_for("serving")
    assert runner.terminate(timeout=60) == 0
    assert not runner.find("webhook serving on while the endpoints update")
