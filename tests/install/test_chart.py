"""The Helm chart (charts/glance-operator), as helm renders it.

helm is the one ``make helm`` builds from hack/helm/go.mod (``HELM`` names it; else the
cached build of hack/helm_tool.py; without either, every test here skips saying how to get
it, which a strict run counts as a failure). The chart must be the kustomize installs in
another form: with the values that mean the same install, ``helm template`` gives the same
objects as ``kustomize build`` of the overlay, field for field, but for Helm's own labels
(test_kustomize.py checks those objects in depth: schemas, RBAC, webhooks, the pod). Then
every value that changes the output is rendered and checked, and bad values are refused
with a message that names them.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from support.helm import find_helm, helm_tool
from test_kustomize import (
    CERT_MANAGER,
    KUBERNETES_VERSION,
    MONITORING,
    NAMESPACE,
    build,
    only,
)

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "glance-operator"

HELM_LABELS = (
    "app.kubernetes.io/managed-by",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/version",
    "helm.sh/chart",
)
# The kustomize installs' prefix and namespace, as chart values.
AS_KUSTOMIZE = ("--set", "fullnameOverride=c5c3-glance", "-n", NAMESPACE)


HELM, HELM_FOUND = find_helm()


def helm(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    if HELM is None:
        pytest.skip(HELM_FOUND)
    done = subprocess.run(
        [HELM, *args], capture_output=True, text=True, cwd=ROOT, timeout=120, check=False
    )
    if check:
        assert done.returncode == 0, f"helm {' '.join(args)}:\n{done.stderr}"
    return done


@functools.cache
def _template(release: str, args: tuple[str, ...]) -> tuple[dict[str, Any], ...]:
    out = helm("template", release, str(CHART), *args).stdout
    return tuple(doc for doc in yaml.safe_load_all(out) if doc)


def template(*args: str, release: str = "glance-operator") -> list[dict[str, Any]]:
    """``helm template`` of the chart with ``args``; a fresh copy each call."""
    return copy.deepcopy(list(_template(release, args)))


def refused(*args: str) -> str:
    """The error of a ``helm template`` that must fail."""
    done = helm("template", "glance-operator", str(CHART), *args, check=False)
    assert done.returncode != 0, f"helm template {' '.join(args)} rendered"
    return done.stderr


def without_helm_marks(objects: list[dict[str, Any]]) -> dict[tuple, dict[str, Any]]:
    """Objects by (kind, namespace, name), with Helm's labels and annotation taken off."""
    found = {}
    for obj in objects:
        metadata = obj["metadata"]
        for label in HELM_LABELS:
            metadata.get("labels", {}).pop(label, None)
        annotations = metadata.get("annotations", {})
        annotations.pop("helm.sh/resource-policy", None)
        if "annotations" in metadata and not annotations:
            del metadata["annotations"]
        found[(obj["kind"], metadata.get("namespace"), metadata["name"])] = obj
    return found


def manager_env(objects: list[dict]) -> dict[str, Any]:
    return {
        e["name"]: e.get("value", e.get("valueFrom")) for e in manager_container(objects)["env"]
    }


def deployment(objects: list[dict], name: str = "glance-operator-controller-manager") -> dict:
    return only(objects, "Deployment", name)


def pod_spec(objects: list[dict]) -> dict:
    return deployment(objects)["spec"]["template"]["spec"]


def manager_container(objects: list[dict]) -> dict:
    (container,) = pod_spec(objects)["containers"]
    return container


# --- the chart is the kustomize installs ---------------------------------------------------------

SAME_AS = {
    "selfsigned": ((), ("selfsigned",)),
    "default": (("--set", "webhook.certificate=cert-manager"), ("default",)),
    "namespaced": (
        (
            "--set",
            "webhook.certificate=cert-manager",
            "--set",
            "rbac.namespaceScoped=true",
            "--set",
            "rbac.watchNamespace=openstack",
        ),
        ("namespaced",),
    ),
    "selfsigned+prometheus": (
        (
            "--set",
            "monitoring.serviceMonitor.enabled=true",
            "--set",
            "monitoring.prometheusRule.enabled=true",
            "--set",
            "monitoring.dashboard.enabled=true",
        ),
        ("selfsigned", "prometheus"),
    ),
}


@pytest.mark.parametrize("case", SAME_AS)
def test_the_chart_renders_the_same_objects_as_the_kustomize_install(case):
    values, overlays = SAME_AS[case]
    rendered = without_helm_marks(template(*AS_KUSTOMIZE, *values, release="c5c3-glance"))
    built = without_helm_marks(
        [o for overlay in overlays for o in build(overlay) if o["kind"] != "Namespace"]
    )
    assert sorted(rendered, key=str) == sorted(built, key=str), "not the same objects"
    for key, obj in built.items():
        assert rendered[key] == obj, (
            f"{key} differs:\n--- kustomize\n{yaml.safe_dump(obj)}\n--- helm\n"
            f"{yaml.safe_dump(rendered[key])}"
        )


@pytest.mark.parametrize("case", SAME_AS)
def test_every_rendered_object_is_valid_and_carries_helm_s_labels(case):
    for obj in template(*SAME_AS[case][0]):
        labels = obj["metadata"]["labels"]
        assert labels["app.kubernetes.io/managed-by"] == "Helm", obj["metadata"]["name"]
        assert labels["app.kubernetes.io/instance"] == "glance-operator"
        assert labels["helm.sh/chart"] == "glance-operator-0.1.0"
        if obj["apiVersion"] not in (CERT_MANAGER, MONITORING):  # test_kustomize checks those
            kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)


def test_helm_lint_finds_nothing_wrong():
    for values in ((), SAME_AS["namespaced"][0], SAME_AS["selfsigned+prometheus"][0]):
        out = helm("lint", "--strict", str(CHART), *values).stdout
        assert "0 chart(s) failed" in out, out
        assert "[WARNING]" not in out and "[ERROR]" not in out, out


def test_make_helm_prints_the_binary_s_path_last():
    if HELM is None:
        pytest.skip(HELM_FOUND)
    done = subprocess.run(
        ["make", "-s", "helm"], capture_output=True, text=True, cwd=ROOT, timeout=900, check=False
    )
    assert done.returncode == 0, done.stderr
    path = Path(done.stdout.splitlines()[-1])
    assert path.name == "helm" and os.access(path, os.X_OK), done.stdout
    assert path.parent.parent.name == "helm"  # the cache's helm/ folder, outside the checkout
    assert ROOT not in path.parents


def _sh_lines(path: Path) -> list[str]:
    text = path.read_text()
    return [
        line.strip()
        for block in text.split("```sh\n")[1:]
        for line in block.split("```", 1)[0].splitlines()
        if line.strip()
    ]


def test_every_helm_command_the_docs_show_is_one_the_cluster_tier_runs():
    """docs/cluster.md's Helm section is run as written (tests/cluster/test_helm.py); the
    README's and install guide's helm commands are among its lines."""
    cluster = _sh_lines(ROOT / "docs" / "cluster.md")
    shown = [
        line
        for doc in (CHART / "README.md", ROOT / "docs" / "install.md", ROOT / "README.md")
        for line in _sh_lines(doc)
        if line.startswith("helm ")
    ]
    assert shown and all(line in cluster for line in shown), shown


def test_helm_is_the_pinned_release():
    version = helm_tool.go_build.required_version(helm_tool.MODULE_DIR, "helm.sh/helm/v4")
    assert helm("version", "--template", "{{ .Version }}").stdout == version


def test_the_chart_s_copies_of_config_are_current():
    stale = helm_tool.stale_chart_files()
    assert not stale, f"run `make chart-files`: {[str(p.relative_to(ROOT)) for p in stale]}"


def test_the_chart_is_made_for_this_operator_release():
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    galaxy = yaml.safe_load((ROOT / "galaxy.yml").read_text())
    assert chart["appVersion"] == galaxy["version"]
    container = manager_container(template())
    assert container["image"] == f"ghcr.io/c5c3/glance-operator:{galaxy['version']}"


def test_the_crds_are_upgraded_with_the_release_and_kept_when_it_goes():
    crds = [o for o in template() if o["kind"] == "CustomResourceDefinition"]
    assert {c["metadata"]["name"] for c in crds} == {
        "glances.glance.openstack.c5c3.io",
        "glancebackends.glance.openstack.c5c3.io",
    }
    for crd in crds:
        assert crd["metadata"]["annotations"] == {"helm.sh/resource-policy": "keep"}
    assert not (CHART / "crds").exists(), "crds/ is installed once and never upgraded by helm"
    assert not [
        o for o in template("--set", "crds.install=false") if o["kind"].endswith("Definition")
    ]


# --- what each value changes ---------------------------------------------------------------------


def test_names_follow_the_release():
    assert deployment(template(release="glance-operator"))
    names = {o["metadata"]["name"] for o in template(release="prod")}
    assert "prod-glance-operator-controller-manager" in names
    assert "prod-glance-operator-webhook-service" in names
    shared = template("--set", "fullnameOverride=glance", release="prod")
    assert only(shared, "Deployment", "glance-controller-manager")


def test_image_values():
    container = manager_container(
        template(
            "--set",
            "image.repository=registry.example/glance-operator",
            "--set",
            "image.tag=0.2.0",
            "--set",
            "image.digest=sha256:" + "a" * 64,
            "--set",
            "image.pullPolicy=Always",
        )
    )
    assert container["image"] == "registry.example/glance-operator:0.2.0@sha256:" + "a" * 64
    assert container["imagePullPolicy"] == "Always"
    spec = pod_spec(template("--set", "imagePullSecrets[0].name=pull"))
    assert spec["imagePullSecrets"] == [{"name": "pull"}]


def test_controller_values_reach_the_runner():
    objects = template(
        "--set",
        "replicas=3",
        "--set",
        "controller.maxConcurrentReconciles=4",
        "--set",
        "controller.clustersNamespace=targets",
        "--set",
        "controller.logLevel=debug",
        "--set",
        "leaderElection.enabled=false",
        "--set",
        "controller.extraEnv[0].name=RECONCILE_PERIOD",
        "--set",
        "controller.extraEnv[0].value=1h",
    )
    assert deployment(objects)["spec"]["replicas"] == 3
    env = manager_env(objects)
    assert env["MAX_CONCURRENT_RECONCILES"] == "4"
    assert env["CLUSTERS_NAMESPACE"] == "targets"
    assert env["LOG_LEVEL"] == "debug"
    assert env["LEADER_ELECT"] == "false"
    assert env["RECONCILE_PERIOD"] == "1h"
    assert "LOG_LEVEL" not in manager_env(template())


def test_resources_and_scheduling_values():
    objects = template(
        "--set",
        "resources.limits.cpu=2",
        "--set",
        "resources.requests.memory=512Mi",
        "--set",
        "nodeSelector.role=control",
        "--set",
        "tolerations[0].key=dedicated",
        "--set",
        "tolerations[0].operator=Exists",
        "--set",
        "priorityClassName=system-cluster-critical",
        "--set",
        "podAnnotations.team=images",
        "--set",
        "podLabels.tier=control",
        "--set-json",
        'affinity={"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":'
        '{"nodeSelectorTerms":[{"matchExpressions":[{"key":"a","operator":"Exists"}]}]}}}',
    )
    resources = manager_container(objects)["resources"]
    assert resources["limits"] == {"cpu": 2, "memory": "1Gi"}
    assert resources["requests"] == {"cpu": "200m", "memory": "512Mi"}
    spec = pod_spec(objects)
    assert spec["nodeSelector"] == {"role": "control"}
    assert spec["tolerations"] == [{"key": "dedicated", "operator": "Exists"}]
    assert spec["priorityClassName"] == "system-cluster-critical"
    assert "nodeAffinity" in spec["affinity"]
    template_meta = deployment(objects)["spec"]["template"]["metadata"]
    assert template_meta["annotations"]["team"] == "images"
    assert template_meta["labels"]["tier"] == "control"
    kubernetes_validate.validate(deployment(objects), KUBERNETES_VERSION, strict=True)


def test_an_existing_service_account_is_bound_instead_of_one_made():
    objects = template("--set", "serviceAccount.create=false", "--set", "serviceAccount.name=ops")
    assert not [o for o in objects if o["kind"] == "ServiceAccount"]
    assert pod_spec(objects)["serviceAccountName"] == "ops"
    bindings = [o for o in objects if o["kind"].endswith("Binding")]
    assert bindings and all(b["subjects"][0]["name"] == "ops" for b in bindings)
    annotated = template("--set", "serviceAccount.annotations.owner=ops")
    assert only(annotated, "ServiceAccount")["metadata"]["annotations"] == {"owner": "ops"}


def test_namespace_scoped_watches_the_release_namespace_unless_told():
    objects = template("--set", "rbac.namespaceScoped=true", "-n", "images")
    assert manager_env(objects)["WATCH_NAMESPACE"] == "images"
    role = only(objects, "Role", "glance-operator-manager-role")
    assert role["metadata"]["namespace"] == "images"
    assert not [
        o
        for o in objects
        if o["metadata"]["name"] == "glance-operator-manager-role" and o["kind"] == "ClusterRole"
    ]
    for hook in only(objects, "ValidatingWebhookConfiguration")["webhooks"]:
        assert hook["namespaceSelector"] == {
            "matchLabels": {"kubernetes.io/metadata.name": "images"}
        }
    assert "--clusters-namespace=" in manager_container(objects)["args"]
    assert "CLUSTERS_NAMESPACE" not in manager_env(objects)


def test_webhook_values():
    objects = template("--set", "webhook.failurePolicy=Ignore", "--set", "webhook.timeoutSeconds=5")
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        for hook in only(objects, kind)["webhooks"]:
            assert (hook["failurePolicy"], hook["timeoutSeconds"]) == ("Ignore", 5)


def test_the_pdb_can_be_left_out_or_changed():
    assert not [
        o
        for o in template("--set", "podDisruptionBudget.enabled=false")
        if o["kind"] == "PodDisruptionBudget"
    ]
    pdb = only(template("--set", "podDisruptionBudget.minAvailable=50%"), "PodDisruptionBudget")
    assert pdb["spec"]["minAvailable"] == "50%"


def test_the_metrics_port_moves_everywhere_it_is_named():
    objects = template("--set", "metrics.port=9090", "--set", "metrics.service.enabled=true")
    assert manager_env(objects)["METRICS_BIND_ADDRESS"] == ":9090"
    (port,) = [p for p in manager_container(objects)["ports"] if p["name"] == "metrics"]
    assert port["containerPort"] == 9090
    service = only(objects, "Service", "glance-operator-controller-manager-metrics-service")
    assert service["spec"]["ports"][0]["port"] == 9090
    assert service["spec"]["ports"][0]["targetPort"] == "metrics"


def test_the_service_monitor_as_the_reference_s_e2e_checks_it():
    """reference-spec: labels, selector, endpoint port, path and interval of the monitor."""
    objects = template(
        "--set",
        "monitoring.serviceMonitor.enabled=true",
        "--set",
        "monitoring.serviceMonitor.interval=15s",
        "--set",
        "monitoring.serviceMonitor.labels.release=kube-prometheus-stack",
    )
    monitor = only(objects, "ServiceMonitor")
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint == {
        "port": "metrics",
        "path": "/metrics",
        "honorLabels": True,
        "scheme": "http",
        "interval": "15s",
    }
    service = only(objects, "Service", "glance-operator-controller-manager-metrics-service")
    selector = monitor["spec"]["selector"]["matchLabels"]
    assert all(service["metadata"]["labels"][k] == v for k, v in selector.items())
    assert not [o for o in template() if o["apiVersion"] == MONITORING]


def test_the_dashboard_and_rules_are_config_s():
    objects = template(
        "--set",
        "monitoring.dashboard.enabled=true",
        "--set",
        "monitoring.prometheusRule.enabled=true",
    )
    dashboard = only(objects, "ConfigMap", "glance-operator-grafana-dashboard")
    source = (ROOT / "config/prometheus/dashboards/glance-operator.json").read_text()
    assert json.loads(dashboard["data"]["glance-operator.json"]) == json.loads(source)
    rule = only(objects, "PrometheusRule")
    assert (
        rule["spec"] == yaml.safe_load((ROOT / "config/prometheus/rules.yaml").read_text())["spec"]
    )


# --- bad values are refused, naming them ---------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--set", "replica=3"), "additional properties 'replica' not allowed"),
        (("--set", "webhook.certificate=certmanager"), "/webhook/certificate"),
        (("--set", "replicas=two"), "/replicas"),
        (("--set", "image.digest=latest"), "/image/digest"),
        (("--set", "controller.logLevel=verbose"), "/controller/logLevel"),
        (("--set", "rbac.watchNamespace=Open_Stack"), "/rbac/watchNamespace"),
        (
            ("--set", "monitoring.serviceMonitor.interval=often"),
            "/monitoring/serviceMonitor/interval",
        ),
        (("--set", "metrics.port=9443"), "metrics.port: 9443 is taken"),
        (("--set", "serviceAccount.create=false"), "serviceAccount.name: needed when"),
        (("--set", "fullnameOverride=" + "g" * 41), "/fullnameOverride"),
    ],
)
def test_a_bad_value_is_refused_with_its_name(args, message):
    assert message in refused(*args)


def test_a_release_name_too_long_for_the_names_is_refused_before_anything_is_made():
    done = helm("template", "a-release-name-that-is-far-too-long", str(CHART), check=False)
    assert done.returncode != 0
    assert "at most 40 (set fullnameOverride, or a shorter release name)" in done.stderr
