"""Offline render, end to end through ``playbooks/render.yml``: goldens, schemas, behaviours.

Golden files make every change in output a visible diff. After an intended change,
regenerate them with ``UPDATE_GOLDEN=1 make unit`` and review the diff before committing.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import sys
from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from conftest import GOLDEN, inputs, render_to
from support.pod_security import restricted_violations

KUBERNETES_VERSION = "1.37.0"
NAMES = sorted(inputs())
POD_KINDS = {
    "Deployment": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
}


@pytest.mark.parametrize("name", NAMES)
def test_render_matches_its_golden_files(renders, name):
    render = renders[name]
    folder = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "manifests.yaml").write_text(render.manifests_text)
        (folder / "status.yaml").write_text(render.status_text)
    assert render.manifests_text == (folder / "manifests.yaml").read_text()
    assert render.status_text == (folder / "status.yaml").read_text()


@pytest.mark.parametrize("name", NAMES)
def test_every_rendered_object_is_valid_for_kubernetes(renders, name):
    for obj in renders[name].manifests:
        if obj["kind"] == "HTTPRoute":
            continue  # a Gateway API CRD, not in the Kubernetes schemas: see test_httproute_shape
        if obj["apiVersion"].startswith("k8s.mariadb.com/"):
            continue  # mariadb-operator's CRDs: see test_the_managed_sample_renders_its_mariadb_resources
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)


@pytest.mark.parametrize("name", NAMES)
def test_every_pod_spec_passes_the_restricted_pod_security_standard(renders, name):
    for obj in renders[name].manifests:
        path = POD_KINDS.get(obj["kind"])
        if path is None:
            continue
        pod = obj
        for key in path:
            pod = pod[key]
        assert restricted_violations(pod) == [], f"{obj['kind']} {obj['metadata']['name']}"


@pytest.mark.parametrize("name", NAMES)
def test_every_object_is_owned_by_the_glance_and_namespaced(renders, name):
    for obj in renders[name].manifests:
        meta = obj["metadata"]
        assert meta["namespace"] == "openstack"
        if name == "glance-target-cluster":  # by labels there: see the test below
            assert meta["labels"]["openstack.c5c3.io/owner-name"] == "glance"
            continue
        (owner,) = meta["ownerReferences"]
        assert owner["kind"] == "Glance" and owner["name"] == "glance"
        assert owner["controller"] is True and owner["uid"]


def test_rendering_twice_gives_identical_bytes(renders, tmp_path):
    first = renders["glance-full"]
    again = render_to("again", first.source, tmp_path / "again")
    assert again.returncode == 0, again.stdout
    assert again.manifests_text == first.manifests_text
    assert again.status_text == first.status_text


def _with_default(source_text: str, default: str) -> str:
    docs = list(yaml.safe_load_all(source_text))
    for doc in docs:
        if doc["kind"] == "GlanceBackend":
            doc["spec"]["isDefault"] = doc["metadata"]["name"] == default
    return yaml.safe_dump_all(docs)


def test_an_isdefault_flip_changes_the_config_map_name_but_not_the_backends_secret(
    renders, tmp_path
):
    full = renders["glance-full"]
    flipped_input = tmp_path / "flipped.yaml"
    flipped_input.write_text(_with_default(full.source.read_text(), "s3-archive"))
    flipped = render_to("flipped", flipped_input, tmp_path / "flipped")
    assert flipped.returncode == 0, flipped.stdout

    def names(render, kind, base):
        return [
            o["metadata"]["name"]
            for o in render.manifests
            if o["kind"] == kind and o["metadata"]["name"].startswith(base)
        ]

    assert names(flipped, "ConfigMap", "glance-config-") != names(
        full, "ConfigMap", "glance-config-"
    )
    assert names(flipped, "Secret", "glance-backends-") == names(full, "Secret", "glance-backends-")
    conf = flipped.find("ConfigMap")["data"]["glance-api.conf"]
    assert "default_backend = s3-archive" in conf


def test_an_invalid_input_fails_names_each_field_and_writes_nothing(tmp_path):
    docs = list(yaml.safe_load_all(inputs()["glance-minimal"].read_text()))
    for doc in docs:
        if doc["kind"] == "Glance":
            doc["spec"]["openStackRelease"] = "2026.3"
            doc["spec"]["image"]["digest"] = "sha256:" + "0" * 64
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump_all(docs))
    out = tmp_path / "out"
    result = render_to("bad", bad, out)
    assert result.returncode != 0
    assert "spec.openStackRelease in body should match" in result.stdout
    assert "exactly one of image.tag or image.digest must be set" in result.stdout
    assert not out.exists()


def test_without_a_default_backend_only_the_db_connection_secret_is_rendered(renders):
    render = renders["no-default-backend"]
    assert [(o["kind"], o["metadata"]["name"]) for o in render.manifests] == [
        ("Secret", "glance-db-connection")
    ]
    glance = render.status[0]["status"]["conditions"]
    backends = {c["type"]: c for c in glance}["BackendsReady"]
    assert (backends["status"], backends["reason"]) == ("False", "NoDefaultBackend")


def test_the_minimal_sample_reports_what_it_can_know_offline(renders):
    glance_status, backend_status = renders["glance-minimal"].status
    conds = {c["type"]: (c["status"], c["reason"]) for c in glance_status["status"]["conditions"]}
    assert conds == {
        "SecretsReady": ("True", "SecretsAvailable"),
        "BackendsReady": ("True", "AllBackendsProjected"),
        "ExtraConfigHealthy": ("True", "NoOwnedKeysOverridden"),
        "HPAReady": ("True", "HPANotRequired"),
        "NetworkPolicyReady": ("True", "NetworkPolicyNotRequired"),
        "HTTPRouteReady": ("True", "HTTPRouteNotRequired"),
        "Ready": ("False", "NotAllReady"),
    }
    backend = {
        c["type"]: (c["status"], c["reason"]) for c in backend_status["status"]["conditions"]
    }
    assert backend == {
        "CredentialsReady": ("True", "CredentialsAvailable"),
        "Ready": ("False", "NotAllReady"),
    }


def test_httproute_shape(renders):
    route = renders["gateway"].find("HTTPRoute")
    assert route["apiVersion"] == "gateway.networking.k8s.io/v1"
    assert route["metadata"]["annotations"] == {"example.com/owner": "images-team"}
    assert route["spec"]["parentRefs"] == [
        {"name": "public", "namespace": "gateways", "sectionName": "https-glance"}
    ]
    assert route["spec"]["hostnames"] == ["glance.example.com"]
    (rule,) = route["spec"]["rules"]
    assert rule["matches"] == [{"path": {"type": "PathPrefix", "value": "/image"}}]
    assert rule["backendRefs"] == [{"kind": "Service", "name": "glance", "port": 9292}]
    assert rule["timeouts"] == {"request": "4h"}


def test_a_second_render_into_the_same_directory_rewrites_nothing(tmp_path):
    source = inputs()["glance-minimal"]
    first = render_to("first", source, tmp_path / "out")
    assert first.returncode == 0, first.stdout
    stamp = (tmp_path / "out" / "manifests.yaml").stat().st_mtime_ns
    again = render_to("again", source, tmp_path / "out")
    assert again.returncode == 0, again.stdout
    assert (tmp_path / "out" / "manifests.yaml").stat().st_mtime_ns == stamp
    assert "changed=0" in again.stdout


def test_without_db_credentials_nothing_is_rendered_and_secrets_ready_waits(renders):
    render = renders["missing-db-credentials"]
    assert render.manifests == []
    conds = {c["type"]: c for c in render.status[0]["status"]["conditions"]}
    assert (conds["SecretsReady"]["status"], conds["SecretsReady"]["reason"]) == (
        "False",
        "WaitingForDBCredentials",
    )
    assert "username" in conds["SecretsReady"]["message"]


def _database_jobs(render) -> dict[str, dict]:
    return {o["metadata"]["name"]: o for o in render.manifests if o["kind"] == "Job"}


@pytest.mark.parametrize(
    ("name", "job", "command", "phase"),
    [
        ("upgrade-start", "glance-db-expand", "db expand", "Expanding"),
        ("upgrade-migrating", "glance-db-migrate", "db migrate", "Migrating"),
    ],
)
def test_an_upgrade_in_the_input_status_renders_its_phase_job_instead_of_db_sync(
    renders, name, job, command, phase
):
    render = renders[name]
    jobs = _database_jobs(render)
    assert list(jobs) == [job]
    pod = jobs[job]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["command"] == [
        "/bin/sh",
        "-eu",
        "-c",
        f"glance-manage --config-dir /etc/glance/glance-api.conf.d/ {command}",
    ]
    assert container["image"] == "ghcr.io/c5c3/glance:2026.2"
    assert jobs[job]["spec"]["backoffLimit"] == 4
    # The same configuration mount and environment as the db-sync Job of the same Glance.
    (sync,) = _database_jobs(renders["glance-minimal"]).values()
    sync_pod = sync["spec"]["template"]["spec"]
    assert pod["volumes"] == sync_pod["volumes"]
    assert container["volumeMounts"] == sync_pod["containers"][0]["volumeMounts"]
    assert container["env"] == sync_pod["containers"][0]["env"]
    status = render.status[0]["status"]
    assert (status["installedRelease"], status["targetRelease"], status["upgradePhase"]) == (
        "2026.1",
        "2026.2",
        phase,
    )
    assert f"upgrade: 2026.1 → 2026.2, phase {phase}" in render.stdout


def test_the_upgrade_review_command_of_the_render_docs_runs_as_written(tmp_path):
    """``docs/render.md`` shows how to render an upgrade under way; run that line as is."""
    root = GOLDEN.parents[2]
    (line,) = [
        text
        for text in (root / "docs" / "render.md").read_text().splitlines()
        if text.startswith("ansible-playbook") and "upgrade-migrating.yaml" in text
    ]
    out = root / "out" / "upgrade"
    shutil.rmtree(out, ignore_errors=True)
    env = dict(
        os.environ,
        PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        ANSIBLE_CONFIG=str(root / "ansible.cfg"),
    )
    result = subprocess.run(
        ["bash", "-c", line], cwd=root, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr
    try:
        manifests = [d for d in yaml.safe_load_all((out / "manifests.yaml").read_text()) if d]
        jobs = [o["metadata"]["name"] for o in manifests if o["kind"] == "Job"]
        assert jobs == ["glance-db-migrate"]
        assert "upgrade: 2026.1 → 2026.2, phase Migrating" in result.stdout
    finally:
        shutil.rmtree(out, ignore_errors=True)


def test_the_managed_sample_renders_its_mariadb_resources(renders):
    """Managed mode (reference-spec §4.10): the Database, User and Grant named after the
    Glance, on the MariaDB of clusterRef; the DSN names its Service and the Glance's user."""
    render = renders["glance-managed"]
    ref = {"name": "mariadb"}
    database = render.find("Database", "glance")
    assert database["apiVersion"] == "k8s.mariadb.com/v1alpha1"
    assert database["spec"] == {
        "mariaDbRef": ref,
        "characterSet": "utf8",
        "collate": "utf8_general_ci",
        "name": "glance",
    }
    assert render.find("User", "glance")["spec"] == {
        "mariaDbRef": ref,
        "passwordSecretKeyRef": {"name": "glance-db", "key": "password"},
    }
    assert render.find("Grant", "glance")["spec"] == {
        "mariaDbRef": ref,
        "privileges": ["ALL PRIVILEGES"],
        "database": "glance",
        "table": "*",
        "username": "glance",
    }
    kinds = [obj["kind"] for obj in render.manifests]
    assert kinds.index("Grant") < kinds.index("Job")  # what the db-sync Job needs comes first
    secret = render.find("Secret", "glance-db-connection")
    dsn = base64.b64decode(secret["data"]["connection"]).decode()
    assert dsn.startswith(
        "mysql+pymysql://glance:change-me-db-password@mariadb.openstack.svc:3306/"
    )


def test_the_target_cluster_sample_says_where_its_children_go(renders):
    """A Glance naming a target cluster (reference-spec §2.11): every child carries the
    ownership labels instead of an owner reference, and the summary names the cluster."""
    render = renders["glance-target-cluster"]
    owner = {
        "openstack.c5c3.io/owner-kind": "Glance",
        "openstack.c5c3.io/owner-name": "glance",
        "openstack.c5c3.io/owner-namespace": "openstack",
    }
    assert render.manifests
    for obj in render.manifests:
        meta = obj["metadata"]
        assert not meta.get("ownerReferences"), obj["kind"]
        assert owner.items() <= (meta.get("labels") or {}).items(), obj["kind"]
    deployment = render.find("Deployment", "glance")
    assert "openstack.c5c3.io/owner-name" not in deployment["spec"]["selector"]["matchLabels"]
    assert (
        'target cluster: \\"edge\\"' in render.stdout or 'target cluster: "edge"' in render.stdout
    )
