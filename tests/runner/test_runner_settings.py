"""The runner's settings (flags beat the environment, which beats the defaults), the CPU
limit it defaults its concurrency to, and the environment each ansible-runner run gets."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from runner.kube.watches import load_watches
from runner.kube.workqueue import ObjectKey
from runner.passes.playbook import checkout_ansible_cfg, private_data_dir, run_environment
from runner.settings import (
    BindAddress,
    SettingsError,
    cpu_limit,
    parse_bind_address,
    parse_settings,
)

ROOT = Path(__file__).resolve().parents[2]


def settings(*argv: str, **environ: str):
    return parse_settings(list(argv), environ=environ, concurrency=3)


def test_the_defaults_are_the_manager_deployments():
    s = settings()
    assert s.watches_file == Path("./watches.yaml")
    assert s.metrics_bind_address == BindAddress("", 8080)
    assert s.health_probe_bind_address == BindAddress("", 8081)
    assert s.watch_namespaces == ()
    assert s.max_concurrent_reconciles == 3
    assert s.leader_elect is True
    assert (s.lease_duration, s.renew_deadline, s.retry_period) == (15.0, 10.0, 2.0)
    assert s.leader_election_namespace is None
    assert s.reconcile_period == 36000.0
    assert s.max_backoff == 30.0
    assert (s.webhook_port, s.webhook_cert_dir) == (
        9443,
        Path("/tmp/k8s-webhook-server/serving-certs"),
    )
    assert s.ansible_verbosity == 2
    assert s.dependent_label_selector == "app.kubernetes.io/managed-by=glance-operator"


def test_the_environment_sets_what_the_manager_deployment_sets():
    s = settings(
        WATCH_NAMESPACE="openstack, glance ,openstack",
        LEADER_ELECT="false",
        MAX_CONCURRENT_RECONCILES="4",
        METRICS_BIND_ADDRESS="127.0.0.1:0",
        HEALTH_PROBE_BIND_ADDRESS="0",
        POD_NAMESPACE="c5c3-system",
        WEBHOOK_PORT="9444",
        WEBHOOK_CERT_DIR="/certs",
    )
    assert s.watch_namespaces == ("openstack", "glance")
    assert s.leader_elect is False
    assert s.max_concurrent_reconciles == 4
    assert s.metrics_bind_address == BindAddress("127.0.0.1", 0)
    assert s.health_probe_bind_address is None
    assert s.leader_election_namespace == "c5c3-system"
    assert (s.webhook_port, s.webhook_cert_dir) == (9444, Path("/certs"))


def test_the_runner_dir_is_private_unless_named():
    assert settings().runner_dir is None  # runner.passes.runner_dir makes one per process
    assert settings(RUNNER_DIR="/var/runner").runner_dir == Path("/var/runner")
    assert settings("--runner-dir=/srv/r", RUNNER_DIR="/var/runner").runner_dir == Path("/srv/r")


def test_a_flag_beats_the_environment():
    s = settings(
        "--leader-elect=true", "--watch-namespace=a", LEADER_ELECT="false", WATCH_NAMESPACE="b"
    )
    assert s.leader_elect is True and s.watch_namespaces == ("a",)


def test_durations_are_go_durations_or_seconds():
    s = settings(
        "--leader-elect-lease-duration=1m",
        "--leader-elect-renew-deadline=30",
        "--leader-elect-retry-period=500ms",
        "--reconcile-period=0s",
    )
    assert (s.lease_duration, s.renew_deadline, s.retry_period) == (60.0, 30.0, 0.5)
    assert s.reconcile_period == 0.0


def test_the_clusters_namespace_defaults_to_the_references():
    assert settings().clusters_namespace == "c5c3-clusters"


def test_the_clusters_namespace_from_the_environment_and_the_flag():
    assert settings(CLUSTERS_NAMESPACE="clusters").clusters_namespace == "clusters"
    assert settings("--clusters-namespace", "mine").clusters_namespace == "mine"
    flag_wins = settings("--clusters-namespace=mine", CLUSTERS_NAMESPACE="clusters")
    assert flag_wins.clusters_namespace == "mine"


def test_an_empty_clusters_namespace_turns_target_clusters_off():
    """``--clusters-namespace=``, as the reference chart's namespace-scoped install renders
    it; it beats the variable. An empty variable counts as unset, as every variable does."""
    assert settings("--clusters-namespace=").clusters_namespace == ""
    assert settings("--clusters-namespace=", CLUSTERS_NAMESPACE="x").clusters_namespace == ""
    assert settings(CLUSTERS_NAMESPACE="").clusters_namespace == "c5c3-clusters"


@pytest.mark.parametrize(
    ("argv", "environ", "message"),
    [
        (["--leader-elect-renew-deadline=20s"], {}, "shorter than the lease duration"),
        (["--leader-elect-retry-period=0s"], {}, "--leader-elect-retry-period"),
        ([], {"LEADER_ELECT": "maybe"}, "LEADER_ELECT: 'maybe' is neither true nor false"),
        ([], {"MAX_CONCURRENT_RECONCILES": "0"}, "MAX_CONCURRENT_RECONCILES: 0 must be 1 or more"),
        ([], {"METRICS_BIND_ADDRESS": "8080"}, "METRICS_BIND_ADDRESS: '8080' is not host:port"),
        (["--reconcile-period=soon"], {}, '--reconcile-period: time: invalid duration "soon"'),
        (["--ansible-verbosity=9"], {}, "not 0 to 7"),
        ([], {"WEBHOOK_PORT": "70000"}, "out of range"),
        (
            [],
            {"CLUSTERS_NAMESPACE": "Clusters_NS"},
            "CLUSTERS_NAMESPACE: 'Clusters_NS' is not a namespace name",
        ),
        (["--clusters-namespace=" + "c" * 64], {}, "--clusters-namespace: 'ccc"),
    ],
)
def test_a_bad_setting_names_itself(argv, environ, message):
    with pytest.raises(SettingsError, match=message.replace("(", r"\(")):
        parse_settings(argv, environ=environ, concurrency=1)


@pytest.mark.parametrize(
    ("text", "address"),
    [
        (":8080", BindAddress("", 8080)),
        ("127.0.0.1:0", BindAddress("127.0.0.1", 0)),
        ("[::1]:9", BindAddress("::1", 9)),
        ("0", None),
    ],
)
def test_bind_addresses(text, address):
    assert parse_bind_address(text, "x") == address


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_the_cpu_limit_of_cgroup_v2(tmp_path):
    proc = tmp_path / "proc-cgroup"
    write(proc, "0::/kubepods/pod1\n")
    write(tmp_path / "kubepods/pod1/cpu.max", "150000 100000\n")
    assert cpu_limit(tmp_path, proc) == 2  # 1.5 CPUs round up
    write(tmp_path / "kubepods/pod1/cpu.max", "max 100000\n")
    assert cpu_limit(tmp_path, proc) is None
    write(tmp_path / "kubepods/pod1/cpu.max", "50000 100000\n")
    assert cpu_limit(tmp_path, proc) == 1


def test_the_cpu_limit_of_cgroup_v1_and_of_a_container_root(tmp_path):
    proc = tmp_path / "proc-cgroup"
    write(proc, "4:cpu,cpuacct:/\n")
    write(tmp_path / "cpu,cpuacct/cpu.cfs_quota_us", "400000\n")
    write(tmp_path / "cpu,cpuacct/cpu.cfs_period_us", "100000\n")
    assert cpu_limit(tmp_path, proc) == 4
    write(tmp_path / "cpu,cpuacct/cpu.cfs_quota_us", "-1\n")
    assert cpu_limit(tmp_path, proc) is None
    assert cpu_limit(tmp_path / "nothing", tmp_path / "no-proc") is None


def test_without_a_limit_concurrency_is_the_cpu_count(monkeypatch):
    import runner.settings as module

    monkeypatch.setattr(module, "cpu_limit", lambda: None)
    monkeypatch.setattr(module.os, "cpu_count", lambda: 7)
    assert parse_settings([], environ={}).max_concurrent_reconciles == 7
    monkeypatch.setattr(module, "cpu_limit", lambda: 2)
    assert parse_settings([], environ={}).max_concurrent_reconciles == 2


# -- what each run gets ---------------------------------------------------------------------


def test_a_run_gets_the_kubeconfig_the_checkouts_ansible_cfg_and_this_python():
    env = run_environment(
        {"PATH": "/usr/bin", "KUBECONFIG": "/k"}, None, checkout_ansible_cfg(ROOT / "watches.yaml")
    )
    assert env["KUBECONFIG"] == env["K8S_AUTH_KUBECONFIG"] == "/k"
    assert env["ANSIBLE_CONFIG"] == str(ROOT / "ansible.cfg")
    assert env["PATH"].split(":")[0] == str(Path(sys.executable).parent)
    flag = run_environment({"KUBECONFIG": "/k", "ANSIBLE_CONFIG": "/mine.cfg"}, "/flag", None)
    assert flag["KUBECONFIG"] == "/flag" and "ANSIBLE_CONFIG" not in flag  # the variable stays


def test_in_the_pod_a_run_gets_no_kubeconfig_and_no_ansible_cfg(tmp_path):
    write(tmp_path / "watches.yaml", "[]\n")  # /opt/operator: no galaxy.yml, no ansible.cfg
    env = run_environment(
        {"PATH": "/usr/bin"}, None, checkout_ansible_cfg(tmp_path / "watches.yaml")
    )
    assert "KUBECONFIG" not in env and "K8S_AUTH_KUBECONFIG" not in env
    assert "ANSIBLE_CONFIG" not in env


def test_each_object_has_a_private_data_dir_of_its_own(tmp_path):
    glance, backend = load_watches(ROOT / "watches.yaml")
    key = ObjectKey("glance.openstack.c5c3.io", "Glance", "openstack", "glance")
    assert (
        private_data_dir(tmp_path, glance, key)
        == tmp_path / "glance.openstack.c5c3.io/v1alpha1/Glance/openstack/glance"
    )
    other = private_data_dir(tmp_path, backend, key._replace(kind="GlanceBackend"))
    assert other != private_data_dir(tmp_path, glance, key)


def test_warm_passes_are_on_unless_turned_off():
    assert settings().warm_passes is True
    assert settings(WARM_PASSES="false").warm_passes is False
    assert settings("--warm-passes", "true", WARM_PASSES="false").warm_passes is True
    with pytest.raises(SettingsError, match=r"^WARM_PASSES: 'sometimes' is neither true nor false"):
        settings(WARM_PASSES="sometimes")
