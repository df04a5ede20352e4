"""The Helm chart on the one-node cluster: docs/cluster.md's "The operator with Helm", run
as written, with a Glance through each step.

1. ``helm install`` (the chart's defaults: the manager makes its webhook certificate): the
   manager pods roll out, one leads, the CA is in both webhook configurations, and a Glance
   (one replica, two stores, on MariaDB, Keystone and S3 at the node's address) is Ready;
2. ``helm upgrade --reuse-values --set controller.logLevel=debug``: the manager pods roll,
   the Glance's API pods do not, and the new manager reconciles the Glance (Ready again,
   its debug log names it);
3. the monitoring values against the Prometheus Operator's own CRDs (``hack/crds/go.mod``
   pins its module): the ServiceMonitor, PrometheusRule and dashboard admitted, the
   ServiceMonitor's labels, selector, port, path and interval as the reference's metrics
   e2e checks them, ``/metrics`` through the metrics Service; the manager not rolled;
4. ``helm uninstall``: the manager, its RBAC and the webhooks go; the CRDs, the Glance and
   its API pods stay, and the pods keep answering; the monitoring objects go;
5. ``helm install`` again picks the Glance up; deleting it releases its finalizer; then
   uninstall and the doc's ``kubectl delete crd``: nothing of the chart is left.

The module runs before test_operator.py (which installs with kustomize) and leaves the
cluster as it found it: the CRDs, namespaces and webhooks gone.
"""

from __future__ import annotations

import base64
import subprocess
import time

import pytest
from e2e.stack import http
from support.helm import find_helm
from support.neighbour_crds import prometheus_operator_crds

from cluster.conftest import OPERATOR_IMAGE, ROOT, wait_until
from cluster.objects import (
    apply,
    conditions,
    get,
    glance_pods,
    json_lines,
    pod_ready,
    sample_documents,
)

SECTION = "The operator with Helm"
RELEASE_NAMESPACE = "glance-operator-system"
MANAGER = "glance-operator-controller-manager"
NAMESPACE = "helm-glance"
GLANCE = "glance"
DATABASE = "glance_helm"
BUCKET = "glance-helm-second"
CRDS = ("glances.glance.openstack.c5c3.io", "glancebackends.glance.openstack.c5c3.io")
WEBHOOKS = (
    ("mutatingwebhookconfiguration", "glance-operator-mutating-webhook-configuration"),
    ("validatingwebhookconfiguration", "glance-operator-validating-webhook-configuration"),
)
MONITORING_CRDS = ("servicemonitors.monitoring.coreos.com", "prometheusrules.monitoring.coreos.com")
READY_TIMEOUT = 600

pytestmark = pytest.mark.cluster


def manager_pods(node) -> list[dict]:
    selector = "app.kubernetes.io/name=glance-operator,control-plane=controller-manager"
    return get(node, "pods", "-n", RELEASE_NAMESPACE, "-l", selector)["items"]


def glance_ready(node) -> bool:
    glance = get(node, "glance", GLANCE, "-n", NAMESPACE)
    return conditions(glance).get("Ready", {}).get("status") == "True"


def passed_the_glance(node) -> bool:
    """A running manager pod (its log starts with the pod) logged a finished pass of the
    Glance: the operator of this install reconciled it, whatever its status said before."""
    logs = node.kubectl(
        "logs", "-n", RELEASE_NAMESPACE, "-l", "control-plane=controller-manager", "--tail=-1",
        check=False,
    ).stdout  # fmt: skip
    return any(
        line.get("msg") == "pass finished" and line.get("key") == f"{NAMESPACE}/{GLANCE}"
        for line in json_lines(logs)
    )


def exists(node, *args: str) -> bool:
    return node.kubectl("get", *args, check=False).returncode == 0


def api_answers(pod: dict) -> bool:
    return http("GET", f"http://{pod['status']['podIP']}:9292/healthcheck").status == 200


@pytest.fixture(scope="module")
def chart(shell, node, images, services, say):
    """The chart installed as the doc shows it, a Glance Ready under it; what is left is
    removed at the end, whatever failed."""
    assert not any(exists(node, "crd", crd) for crd in CRDS), "an operator is installed already"
    services.create_database(DATABASE)
    assert http("PUT", f"{services.s3_url}/{BUCKET}", body=b"").status == 200
    started = time.monotonic()
    try:
        shell.ok("helm install", SECTION)
        shell.ok("kubectl -n glance-operator-system rollout status", SECTION)
        say(f"[cluster] helm install to the manager rolled out: {time.monotonic() - started:.1f}s")
        node.kubectl("create", "namespace", NAMESPACE)
        apply(
            node,
            sample_documents(
                services, NAMESPACE, replicas=1, database=DATABASE, second_bucket=BUCKET
            ),
        )
        wait_until("the Glance is Ready", lambda: glance_ready(node), READY_TIMEOUT, interval=2)
        say(f"[cluster] helm install to a Glance Ready: {time.monotonic() - started:.1f}s")
        yield
    finally:
        _clean_up(shell, node, say)


def _clean_up(shell, node, say) -> None:
    """Whatever a failed test left: the Glance deleted while an operator runs (its
    finalizer), then the release, the CRDs and the namespaces."""
    if exists(node, "namespace", NAMESPACE):
        if exists(node, "crd", CRDS[0]) and not exists(
            node, "deployment", MANAGER, "-n", RELEASE_NAMESPACE
        ):
            shell.run("helm install", SECTION)
        node.kubectl("delete", "glance", "--all", "-n", NAMESPACE, "--timeout=300s", check=False)
        node.kubectl("delete", "namespace", NAMESPACE, "--timeout=300s", check=False)
    if exists(node, "deployment", MANAGER, "-n", RELEASE_NAMESPACE):
        shell.run("helm uninstall", SECTION)
    node.kubectl("delete", "crd", *CRDS, *MONITORING_CRDS, "--ignore-not-found", check=False)
    node.kubectl("delete", "namespace", RELEASE_NAMESPACE, "--ignore-not-found", check=False)
    say("[cluster] helm tests: the release, the CRDs and the namespaces removed")


def test_helm_install_runs_the_operator_image_and_injects_its_webhook_ca(node, chart):
    pods = [p for p in manager_pods(node) if p["status"]["phase"] == "Running"]
    assert len(pods) == 2 and all(pod_ready(p) for p in pods), [p["status"] for p in pods]
    assert {c["image"] for p in pods for c in p["spec"]["containers"]} == {OPERATOR_IMAGE}
    secret = get(node, "secret", "glance-operator-webhook-server-cert", "-n", RELEASE_NAMESPACE)
    bundle = base64.b64decode(secret["data"]["ca.crt"])
    for kind, name in WEBHOOKS:
        for webhook in get(node, kind, name)["webhooks"]:
            assert base64.b64decode(webhook["clientConfig"]["caBundle"]) == bundle, name
    for crd in CRDS:
        annotations = get(node, "crd", crd)["metadata"]["annotations"]
        assert annotations["helm.sh/resource-policy"] == "keep"
        assert annotations["meta.helm.sh/release-name"] == "glance-operator"


def test_the_webhook_of_the_chart_refuses_a_bad_glance(node, chart, services):
    docs = [d for d in sample_documents(services, NAMESPACE) if d["kind"] == "Glance"]
    docs[0]["metadata"]["name"] = "refused"
    docs[0]["spec"]["deployment"]["priorityClassName"] = "no-such-priority-class"
    done = apply(node, docs, check=False)
    assert done.returncode != 0
    assert 'Not found: "no-such-priority-class"' in done.stderr, done.stderr


def test_helm_upgrade_rolls_the_manager_and_not_the_glance(node, chart, shell, say):
    before_pods = {p["metadata"]["uid"] for p in manager_pods(node)}
    api_before = glance_pods(node, NAMESPACE, GLANCE)
    deployment = get(node, "deployment", "glance", "-n", NAMESPACE)
    started = time.monotonic()
    shell.ok("helm upgrade", SECTION)
    shell.ok("kubectl -n glance-operator-system rollout status", SECTION)
    say(f"[cluster] helm upgrade to the manager rolled out: {time.monotonic() - started:.1f}s")
    # rollout status returns once the new pods are available; the old ones may still be
    # terminating (their grace period) and listed.
    wait_until(
        "the old manager pods are gone",
        lambda: not before_pods & {p["metadata"]["uid"] for p in manager_pods(node)},
        120,
    )
    after_pods = manager_pods(node)
    assert len(after_pods) == 2
    for pod in after_pods:
        env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
        assert env["LOG_LEVEL"] == "debug"

    wait_until("the new manager logs a pass of the Glance", lambda: passed_the_glance(node), 300)
    assert glance_ready(node)
    after = get(node, "deployment", "glance", "-n", NAMESPACE)
    assert after["metadata"]["generation"] == deployment["metadata"]["generation"]
    assert {p["metadata"]["uid"] for p in glance_pods(node, NAMESPACE, GLANCE)} == {
        p["metadata"]["uid"] for p in api_before
    }


def test_the_monitoring_values_give_what_the_prometheus_operator_admits(node, chart, say):
    """reference-spec's metrics e2e: the chart with the ServiceMonitor on, against the
    Prometheus Operator's own CRDs (their schemas judge the objects): its labels, selector,
    port, path and interval; the PrometheusRule and the dashboard beside it; the metrics
    Service answers /metrics. Nothing of the manager rolls for it."""
    helm, found = find_helm()
    assert helm, found
    for path in prometheus_operator_crds("servicemonitors", "prometheusrules"):
        node.kubectl("apply", "--server-side", "-f", str(path))
    for crd in MONITORING_CRDS:
        node.kubectl("wait", "--for=condition=Established", f"crd/{crd}", "--timeout=60s")
    generation = get(node, "deployment", MANAGER, "-n", RELEASE_NAMESPACE)["metadata"]["generation"]
    done = subprocess.run(
        [helm, "upgrade", "glance-operator", str(ROOT / "charts" / "glance-operator"), "-n",
         RELEASE_NAMESPACE,
         "--reuse-values", "--set", "monitoring.serviceMonitor.enabled=true",
         "--set", "monitoring.serviceMonitor.labels.release=kube-prometheus-stack",
         "--set", "monitoring.prometheusRule.enabled=true",
         "--set", "monitoring.dashboard.enabled=true"],
        capture_output=True, text=True, check=False,
        env={"KUBECONFIG": str(node.kubeconfig), "HOME": "/tmp", "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    monitor = get(node, "servicemonitor", "glance-operator-controller-manager-metrics-monitor",
                  "-n", RELEASE_NAMESPACE)  # fmt: skip
    labels = monitor["metadata"]["labels"]
    assert labels["release"] == "kube-prometheus-stack"
    assert labels["app.kubernetes.io/managed-by"] == "Helm"
    (endpoint,) = monitor["spec"]["endpoints"]
    assert (endpoint["port"], endpoint["path"], endpoint["interval"]) == (
        "metrics",
        "/metrics",
        "30s",
    )
    service = get(node, "service", "glance-operator-controller-manager-metrics-service",
                  "-n", RELEASE_NAMESPACE)  # fmt: skip
    selector = monitor["spec"]["selector"]["matchLabels"]
    assert all(service["metadata"]["labels"].get(k) == v for k, v in selector.items())
    rule = get(node, "prometheusrule", "glance-operator-alerts", "-n", RELEASE_NAMESPACE)
    assert [g["name"] for g in rule["spec"]["groups"]] == ["glance-operator"]
    dashboard = get(node, "configmap", "glance-operator-grafana-dashboard", "-n", RELEASE_NAMESPACE)
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    port = service["spec"]["ports"][0]["port"]
    metrics = wait_until(
        "the metrics Service answers",
        lambda: http("GET", f"http://{service['spec']['clusterIP']}:{port}/metrics"),
        60,
    )
    assert metrics.status == 200 and b"# TYPE" in metrics.body
    after = get(node, "deployment", MANAGER, "-n", RELEASE_NAMESPACE)["metadata"]["generation"]
    assert after == generation, "the manager rolled for monitoring values"
    say("[cluster] helm: the ServiceMonitor and PrometheusRule admitted by their CRDs")


def test_helm_uninstall_keeps_the_crds_and_the_glance_serving(node, chart, shell):
    shell.ok("helm uninstall", SECTION)
    wait_until("the manager pods are gone", lambda: manager_pods(node) == [], 120)
    assert not exists(node, "deployment", MANAGER, "-n", RELEASE_NAMESPACE)
    for kind, name in WEBHOOKS:
        assert not exists(node, kind, name), name
    assert not exists(node, "clusterrole", "glance-operator-manager-role")
    for kind in ("servicemonitor", "prometheusrule"):
        assert get(node, kind, "-n", RELEASE_NAMESPACE)["items"] == [], kind
    for crd in CRDS:
        assert exists(node, "crd", crd), f"{crd} went with the release"
    assert exists(node, "glance", GLANCE, "-n", NAMESPACE)
    pods = glance_pods(node, NAMESPACE, GLANCE)
    assert pods and all(pod_ready(p) and api_answers(p) for p in pods)


def test_installed_again_the_operator_picks_the_glance_up_and_deletes_it(node, chart, shell):
    shell.ok("helm install", SECTION)
    shell.ok("kubectl -n glance-operator-system rollout status", SECTION)
    # Ready is still the status the first install's operator wrote: the new manager's own
    # pass of the Glance is what shows it picked it up.
    wait_until("the new manager logs a pass of the Glance", lambda: passed_the_glance(node), 300)
    assert glance_ready(node)
    node.kubectl("delete", "glance", GLANCE, "-n", NAMESPACE, "--timeout=300s")
    assert not exists(node, "glance", GLANCE, "-n", NAMESPACE)
    node.kubectl("delete", "namespace", NAMESPACE, "--timeout=300s")
    shell.ok("helm uninstall", SECTION)
    shell.ok("kubectl delete crd", SECTION)
    for crd in CRDS:
        assert not exists(node, "crd", crd)
    wait_until("the manager pods are gone", lambda: manager_pods(node) == [], 120)
