"""The four object roles, run by ansible-playbook, emit exactly what desired_objects says.

One ``ansible-playbook`` run per scenario (all started at once) includes the roles
glance_config, glance_api, glance_exposure and glance_database with ``glance_desired`` set,
and writes the ``glance_manifests`` fact they build to a file. The roles render their
templates with the filter ``c5c3.glance.role_objects``; a reconcile pass renders the same
templates in one task (``c5c3.glance.owned_objects``), and the decision layer with
``render_objects``: both are held here to what the roles emit. Each rendered object is then
compared with the object its data describes, validated against the Kubernetes OpenAPI
schemas (``kubernetes-validate``, strict: unknown fields are errors) and, for pods, checked
against the restricted Pod Security Standard.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from support.pod_security import pod_templates, restricted_violations
from support.python_env import collection_python_env

from ansible_collections.c5c3.glance.plugins.module_utils.admission.admission import judge
from ansible_collections.c5c3.glance.plugins.module_utils.admission.collection_files import (
    COLLECTION_ROOT,
    load_crds,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.keys import (
    DB_JOBS,
    MARIADB_OBJECTS,
    OBJECT_KEYS,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.metadata import (
    Artifacts,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.owned import (
    desired_objects,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.pods import (
    pod_template_object,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.role_templates import (
    KINDS,
    objects_by_key,
    owned_objects,
    render_object,
    render_objects,
    role_objects,
)
from ansible_collections.c5c3.glance.plugins.module_utils.gosemantics.quantity import parse_quantity

ROOT = COLLECTION_ROOT
SAMPLES = ROOT / "config" / "samples"
# The Kubernetes versions whose OpenAPI schemas every rendered object must satisfy.
KUBERNETES_VERSIONS = ("1.30", "1.37")
# The roles in the order a pass includes them, and the keys each one emits, in order.
ROLE_KEYS = {
    "glance_config": ("config_map", "backends_secret", "db_connection_secret"),
    "glance_api": ("deployment", "service", "pdb", "hpa"),
    "glance_exposure": ("http_route", "network_policy"),
    "glance_database": (
        "mariadb_database",
        "mariadb_user",
        "mariadb_grant",
        "db_sync_job",
        "db_expand_job",
        "db_migrate_job",
        "db_contract_job",
        "db_purge_cronjob",
    ),
}
EMIT_ORDER = tuple(key for keys in ROLE_KEYS.values() for key in keys)
# Text a template engine must not touch: it reaches the ConfigMap verbatim.
JINJA_LOOKALIKE = "# {{ not_a_variable }} {% raw %} {# no comment #}\n"

PLAYBOOK = """\
- name: Render the objects of one Glance
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    # As in a reconcile pass, the data is a filter's result: Ansible trusts strings
    # loaded from a vars file (-e @file) as templates, a lookup's result it does not.
    - name: Load the desired objects
      ansible.builtin.set_fact:
        glance_desired: "{{{{ lookup('ansible.builtin.file', desired_path) | from_json }}}}"
{includes}
    - name: Write the manifests the roles built
      ansible.builtin.copy:
        content: "{{{{ glance_manifests | default([]) | to_json }}}}"
        dest: "{{{{ render_out }}}}"
        mode: "0644"
""".format(
    includes="".join(
        f"    - name: Include {role}\n"
        f"      ansible.builtin.include_role:\n"
        f"        name: c5c3.glance.{role}\n"
        for role in ROLE_KEYS
    )
)


def load_sample(name: str) -> list[dict]:
    return list(yaml.safe_load_all((SAMPLES / name).read_text()))


def stored_glance(docs: list[dict]) -> dict:
    glance = next(d for d in docs if d["kind"] == "Glance")
    verdict = judge(load_crds()["Glance"], glance)
    assert verdict.allowed, verdict.messages()
    return verdict.object


def fake_artifacts(docs: list[dict], glance: dict) -> Artifacts:
    """Plausible artefacts for a sample: what the config and secrets steps would produce."""
    name = glance["metadata"]["name"]
    config_data = {
        "glance-api.conf": "[DEFAULT]\nuse_stderr = true\n" + JINJA_LOOKALIKE,
        "glance-api-paste.ini": "[pipeline:api]\npipeline = cors authtoken context rootapp\n",
    }
    backends = sorted(d["metadata"]["name"] for d in docs if d["kind"] == "GlanceBackend")
    backends_data = {
        "backends.conf": "".join(f"[{b}]\ns3_store_bucket = images\n\n" for b in backends)
    }
    host = glance["spec"]["database"].get("host") or "mariadb.openstack.svc"
    dsn = f"mysql+pymysql://glance:change-me@{host}:3306/glance?charset=utf8"
    cache = glance["spec"].get("imageCache")
    max_size = None
    if cache is not None:
        max_size = int(parse_quantity(cache.get("sizeLimit") or "10Gi")) // 10 * 8
    return Artifacts(
        config_map=f"{name}-config-{hashlib.sha256(repr(config_data).encode()).hexdigest()[:8]}",
        backends_secret=f"{name}-backends-{hashlib.sha256(repr(backends_data).encode()).hexdigest()[:8]}",
        config_data=config_data,
        backends_data=backends_data,
        dsn=dsn,
        dsn_digest=hashlib.sha256(dsn.encode()).hexdigest(),
        authtoken_digest=hashlib.sha256(b"change-me-service-password").hexdigest(),
        s3_hosts=[d["spec"]["s3"]["host"] for d in docs if d["kind"] == "GlanceBackend"],
        image_cache_max_size=max_size,
        owner={
            "apiVersion": glance["apiVersion"],
            "kind": glance["kind"],
            "name": name,
            "uid": "3f0c6a4e-2b1d-4e5f-8a9b-0c1d2e3f4a5b",
        },
    )


@dataclasses.dataclass
class Scenario:
    sample: str
    pending: bool = False  # no valid configuration and no DSN yet
    hash_seed: str = "0"
    kw: dict = dataclasses.field(default_factory=dict)

    def desired(self) -> dict:
        docs = load_sample(self.sample)
        glance = stored_glance(docs)
        art = fake_artifacts(docs, glance)
        if self.pending:
            art = dataclasses.replace(
                art, config_map="", backends_secret="", dsn=None, dsn_digest=None
            )
        return desired_objects(glance, art, **self.kw)


SCENARIOS = {
    "minimal": Scenario("glance_minimal.yaml"),
    "full": Scenario(
        "glance_full.yaml", kw={"operator_namespace": "glance-operator", "narrow_selector": True}
    ),
    "full-other-hash-seed": Scenario(
        "glance_full.yaml",
        hash_seed="4242",
        kw={"operator_namespace": "glance-operator", "narrow_selector": True},
    ),
    "minimal-pending": Scenario("glance_minimal.yaml", pending=True),
    # Managed mode: the mariadb-operator Database, User and Grant come with everything else.
    "managed": Scenario("glance_managed.yaml"),
    # During an upgrade the phase's Job takes the db-sync Job's place, from the same template.
    "minimal-expand": Scenario("glance_minimal.yaml", kw={"database_job": "db_expand_job"}),
    "full-contract": Scenario(
        "glance_full.yaml",
        kw={
            "operator_namespace": "glance-operator",
            "narrow_selector": True,
            "database_job": "db_contract_job",
        },
    ),
}


@dataclasses.dataclass
class Render:
    desired: dict
    text: str

    @property
    def manifests(self) -> list[dict]:
        return json.loads(self.text)


@pytest.fixture(scope="module")
def renders(tmp_path_factory) -> dict[str, Render]:
    """Every scenario rendered by ansible-playbook, the runs in parallel."""
    work = tmp_path_factory.mktemp("role-templates")
    playbook = work / "render.yml"
    playbook.write_text(PLAYBOOK)
    binary = str(Path(sys.executable).parent / "ansible-playbook")
    running = {}
    for name, scenario in SCENARIOS.items():
        desired = scenario.desired()
        out = work / f"{name}.json"
        variables = work / f"{name}.vars.json"
        data = work / f"{name}.desired.json"
        data.write_text(json.dumps(desired))
        variables.write_text(json.dumps({"desired_path": str(data), "render_out": str(out)}))
        env = dict(
            os.environ,
            ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
            ANSIBLE_NOCOLOR="1",
            PYTHONHASHSEED=scenario.hash_seed,
        )
        process = subprocess.Popen(
            [binary, str(playbook), "-e", f"@{variables}"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        running[name] = (process, desired, out)
    renders = {}
    for name, (process, desired, out) in running.items():
        log, _ = process.communicate(timeout=300)
        assert process.returncode == 0, f"{name}:\n{log}"
        assert "[WARNING]" not in log and "[DEPRECATION WARNING]" not in log, log
        renders[name] = Render(desired, out.read_text())
    return renders


# --- what each rendered object must be, built independently from its data -----------------


def _metadata(d: dict, annotations: dict | None = None) -> dict:
    metadata = {"name": d["name"], "namespace": d["namespace"], "labels": d["labels"]}
    if annotations:
        metadata["annotations"] = annotations
    metadata["ownerReferences"] = d["owner_references"]
    return metadata


def expected_object(key: str, d: dict) -> dict:
    """The Kubernetes object the data ``d`` of ``key`` describes."""
    if key in MARIADB_OBJECTS:
        spec = {"mariaDbRef": d["mariadb_ref"]}
        if key == "mariadb_database":
            spec.update(characterSet=d["character_set"], collate=d["collate"], name=d["database"])
        elif key == "mariadb_user":
            spec["passwordSecretKeyRef"] = d["password_secret_key_ref"]
        else:
            spec.update(
                privileges=d["privileges"],
                database=d["database"],
                table=d["table"],
                username=d["username"],
            )
        metadata = _metadata(d, d.get("annotations"))
        kind = {"mariadb_database": "Database", "mariadb_user": "User"}.get(key, "Grant")
        return {
            "apiVersion": "k8s.mariadb.com/v1alpha1",
            "kind": kind,
            "metadata": metadata,
            "spec": spec,
        }
    head = {"metadata": _metadata(d)}
    if key == "config_map":
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            **head,
            "immutable": True,
            "data": d["data"],
        }
    if key == "backends_secret":
        return {
            "apiVersion": "v1",
            "kind": "Secret",
            **head,
            "type": "Opaque",
            "immutable": True,
            "data": d["data"],
        }
    if key == "db_connection_secret":
        return {"apiVersion": "v1", "kind": "Secret", **head, "type": "Opaque", "data": d["data"]}
    if key == "deployment":
        spec = {
            "selector": d["selector"],
            "strategy": d["strategy"],
            "template": pod_template_object(d["pod"]),
        }
        if d["replicas"] is not None:
            spec["replicas"] = d["replicas"]
        return {"apiVersion": "apps/v1", "kind": "Deployment", **head, "spec": spec}
    if key == "service":
        spec = {"type": d["type"], "selector": d["selector"], "ports": d["ports"]}
        return {"apiVersion": "v1", "kind": "Service", **head, "spec": spec}
    if key == "pdb":
        spec = {"selector": d["selector"]}
        if d["min_available"] is not None:
            spec["minAvailable"] = d["min_available"]
        if d["max_unavailable"] is not None:
            spec["maxUnavailable"] = d["max_unavailable"]
        return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", **head, "spec": spec}
    if key == "hpa":
        spec = {
            "scaleTargetRef": d["scale_target_ref"],
            "minReplicas": d["min_replicas"],
            "maxReplicas": d["max_replicas"],
            "metrics": d["metrics"],
        }
        return {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            **head,
            "spec": spec,
        }
    if key == "http_route":
        rule = {
            "matches": [{"path": d["path"]}],
            "backendRefs": d["backend_refs"],
            "timeouts": d["timeouts"],
        }
        spec = {"parentRefs": d["parent_refs"], "hostnames": d["hostnames"], "rules": [rule]}
        return {
            "apiVersion": "gateway.networking.k8s.io/v1",
            "kind": "HTTPRoute",
            "metadata": _metadata(d, d["annotations"]),
            "spec": spec,
        }
    if key == "network_policy":
        spec = {
            "podSelector": d["pod_selector"],
            "policyTypes": d["policy_types"],
            "ingress": d["ingress"],
            "egress": d["egress"],
        }
        return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", **head, "spec": spec}
    if key in DB_JOBS:
        spec = {"backoffLimit": d["backoff_limit"], "template": pod_template_object(d["pod"])}
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": _metadata(d, d["annotations"]),
            "spec": spec,
        }
    if key == "db_purge_cronjob":
        job = {
            "metadata": {"labels": d["job_labels"]},
            "spec": {
                "activeDeadlineSeconds": d["active_deadline_seconds"],
                "template": pod_template_object(d["pod"]),
            },
        }
        spec = {
            "schedule": d["schedule"],
            "suspend": d["suspend"],
            "concurrencyPolicy": d["concurrency_policy"],
            "jobTemplate": job,
        }
        return {"apiVersion": "batch/v1", "kind": "CronJob", **head, "spec": spec}
    raise AssertionError(f"unknown key {key}")


CUSTOM_GROUPS = ("gateway.networking.k8s.io", "k8s.mariadb.com")
RENDERED = ("minimal", "full", "minimal-expand", "full-contract", "managed")


@pytest.mark.parametrize("scenario", RENDERED)
def test_the_roles_emit_every_wanted_object_in_role_order_exactly_as_its_data_says(
    renders, scenario
):
    render = renders[scenario]
    expected = [
        expected_object(key, render.desired[key])
        for key in EMIT_ORDER
        if render.desired[key] is not None
    ]
    assert render.manifests == expected


def test_the_minimal_sample_renders_no_hpa_route_or_network_policy(renders):
    kinds = [o["kind"] for o in renders["minimal"].manifests]
    assert kinds == [
        "ConfigMap",
        "Secret",
        "Secret",
        "Deployment",
        "Service",
        "PodDisruptionBudget",
        "Job",
        "CronJob",
    ]


def test_the_full_sample_renders_all_eleven_objects(renders):
    found = [(o["kind"], o["metadata"]["name"]) for o in renders["full"].manifests]
    config_map = renders["full"].desired["config_map"]["name"]
    backends = renders["full"].desired["backends_secret"]["name"]
    assert found == [
        ("ConfigMap", config_map),
        ("Secret", backends),
        ("Secret", "glance-db-connection"),
        ("Deployment", "glance"),
        ("Service", "glance"),
        ("PodDisruptionBudget", "glance"),
        ("HorizontalPodAutoscaler", "glance"),
        ("HTTPRoute", "glance"),
        ("NetworkPolicy", "glance"),
        ("Job", "glance-db-sync"),
        ("CronJob", "glance-db-purge"),
    ]


@pytest.mark.parametrize(
    ("scenario", "job", "command"),
    [
        ("minimal", "glance-db-sync", "db sync && "),
        ("minimal-expand", "glance-db-expand", "db expand"),
        ("full-contract", "glance-db-contract", "db contract"),
    ],
)
def test_the_database_role_emits_exactly_the_one_database_job_the_data_names(
    renders, scenario, job, command
):
    jobs = [o for o in renders[scenario].manifests if o["kind"] == "Job"]
    assert [o["metadata"]["name"] for o in jobs] == [job]
    (container,) = jobs[0]["spec"]["template"]["spec"]["containers"]
    assert container["name"] == job.removeprefix("glance-")
    script = container["command"][-1]
    assert script.startswith("glance-manage --config-dir /etc/glance/glance-api.conf.d/ " + command)


def test_a_phase_job_differs_from_the_db_sync_job_only_in_name_command_and_labels(renders):
    sync = next(o for o in renders["minimal"].manifests if o["kind"] == "Job")
    expand = next(o for o in renders["minimal-expand"].manifests if o["kind"] == "Job")
    pods = []
    for job in (sync, expand):
        pod = copy.deepcopy(job["spec"]["template"]["spec"])
        (container,) = pod["containers"]
        del container["name"], container["command"]
        pods.append(pod)
    assert pods[0] == pods[1]  # image, config mount, env, TLS, security: the same
    assert sync["spec"]["backoffLimit"] == expand["spec"]["backoffLimit"] == 4
    assert expand["spec"]["template"]["spec"]["containers"][0]["command"] == [
        "/bin/sh",
        "-eu",
        "-c",
        "glance-manage --config-dir /etc/glance/glance-api.conf.d/ db expand",
    ]


def test_without_a_valid_config_or_dsn_the_roles_emit_nothing_for_the_minimal_sample(renders):
    assert renders["minimal-pending"].manifests == []


def test_rendering_is_byte_identical_under_another_hash_seed(renders):
    assert renders["full-other-hash-seed"].text == renders["full"].text


@pytest.mark.parametrize("scenario", RENDERED)
def test_every_object_is_namespaced_and_owned_by_the_glance(renders, scenario):
    for obj in renders[scenario].manifests:
        assert obj["metadata"]["namespace"] == "openstack"
        assert obj["metadata"]["ownerReferences"] == [
            {
                "apiVersion": "glance.openstack.c5c3.io/v1alpha1",
                "kind": "Glance",
                "name": "glance",
                "uid": "3f0c6a4e-2b1d-4e5f-8a9b-0c1d2e3f4a5b",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        assert obj["metadata"]["labels"]["app.kubernetes.io/instance"] == "glance"


def test_text_that_looks_like_jinja_reaches_the_config_map_verbatim(renders):
    config_map = renders["full"].manifests[0]
    assert config_map["kind"] == "ConfigMap"
    assert config_map["data"]["glance-api.conf"].endswith(JINJA_LOOKALIKE)


@pytest.mark.parametrize("scenario", RENDERED)
def test_the_db_sync_annotation_is_the_hash_of_the_rendered_pod_template(renders, scenario):
    job = next(o for o in renders[scenario].manifests if o["kind"] == "Job")
    canonical = json.dumps(
        job["spec"]["template"], sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    assert job["metadata"]["annotations"] == {
        "cobaltcore.c5c3.io/pod-spec-hash": hashlib.sha256(canonical.encode()).hexdigest()
    }


def test_the_full_deployment_carries_the_sample_knobs(renders):
    deployment = next(o for o in renders["full"].manifests if o["kind"] == "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    api, sidecar = pod["containers"]
    assert "replicas" not in deployment["spec"]  # autoscaling owns it
    assert pod["terminationGracePeriodSeconds"] == 900
    assert pod["priorityClassName"] == "openstack-control-plane"
    assert api["lifecycle"]["preStop"]["exec"]["command"] == ["/bin/sh", "-c", "sleep 10"]
    assert api["command"][-2:] == ["--harakiri", "870"]
    assert "--http-keepalive=5" in api["command"]
    assert sidecar["name"] == "cache-maintenance"
    assert [v["name"] for v in pod["volumes"]] == [
        "config",
        "backends",
        "staging",
        "tasks-work",
        "db-tls",
        "image-cache",
        "import-ca",
        "tmp",
    ]
    assert pod["volumes"][2]["emptyDir"] == {"sizeLimit": "40Gi"}
    assert pod["volumes"][4]["projected"]["defaultMode"] == 0o400


def test_the_import_ca_bundle_is_the_api_containers_ssl_cert_file_and_nothing_else(renders):
    """spec.importCABundleSecretRef: the key ca.crt, mounted whole (no subPath: the kubelet's
    updates of the Secret reach the file), named by SSL_CERT_FILE in the API container only;
    the minimal sample, which does not set it, has neither."""
    deployment = next(o for o in renders["full"].manifests if o["kind"] == "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    api, sidecar = pod["containers"]
    volume = next(v for v in pod["volumes"] if v["name"] == "import-ca")
    assert volume["secret"] == {
        "secretName": "image-mirror-ca",
        "items": [{"key": "ca.crt", "path": "ca.crt"}],
        "defaultMode": 0o444,
    }
    mount = next(m for m in api["volumeMounts"] if m["name"] == "import-ca")
    assert mount == {"name": "import-ca", "mountPath": "/etc/glance/import-ca/", "readOnly": True}
    env = {e["name"]: e for e in api["env"]}
    assert env["SSL_CERT_FILE"] == {
        "name": "SSL_CERT_FILE",
        "value": "/etc/glance/import-ca/ca.crt",
    }
    assert "SSL_CERT_FILE" not in {e["name"] for e in sidecar.get("env", [])}
    assert "import-ca" not in {m["name"] for m in sidecar.get("volumeMounts", [])}
    minimal = next(o for o in renders["minimal"].manifests if o["kind"] == "Deployment")
    minimal_pod = minimal["spec"]["template"]["spec"]
    assert "import-ca" not in {v["name"] for v in minimal_pod["volumes"]}
    for container in minimal_pod["containers"]:
        assert "SSL_CERT_FILE" not in {e["name"] for e in container.get("env", [])}


def test_the_full_network_policy_has_keystone_egress_and_the_additional_rule_last(renders):
    policy = next(o for o in renders["full"].manifests if o["kind"] == "NetworkPolicy")
    ports = [
        [(p["protocol"], p["port"]) for p in rule.get("ports", [])]
        for rule in policy["spec"]["egress"]
    ]
    assert ports == [
        [("UDP", 53), ("TCP", 53)],
        [("TCP", 3306)],
        [("TCP", 11211)],
        [("TCP", 443), ("TCP", 8080)],
        [("TCP", 443), ("TCP", 5000)],
        [("TCP", 9292)],
        [("TCP", 443)],
    ]
    assert policy["spec"]["egress"][-2]["to"] == [
        {"podSelector": {"matchLabels": policy["spec"]["podSelector"]["matchLabels"]}}
    ]
    assert "to" in policy["spec"]["egress"][-1]


@pytest.mark.parametrize("scenario", RENDERED)
def test_every_pod_passes_the_restricted_pod_security_standard(renders, scenario):
    pods = [
        (obj["kind"], metadata, spec)
        for obj in renders[scenario].manifests
        for metadata, spec in pod_templates(obj)
    ]
    assert [kind for kind, _, _ in pods] == ["Deployment", "Job", "CronJob"]
    for kind, metadata, spec in pods:
        assert restricted_violations(spec, metadata) == [], kind


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("scenario", RENDERED)
def test_every_object_is_valid_against_the_kubernetes_schemas(renders, scenario, version):
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    checked = []
    for obj in renders[scenario].manifests:
        if obj["apiVersion"].split("/")[0] in CUSTOM_GROUPS:
            continue  # CRDs (Gateway API, mariadb-operator): kubernetes-validate ships core only
        try:
            kubernetes_validate.validate(obj, version, strict=True)
        except kubernetes_validate.ValidationError as error:
            path = ".".join(str(part) for part in error.path)
            pytest.fail(f"{obj['kind']} {obj['metadata']['name']}: {path}: {error.message}")
        checked.append(obj["kind"])
    assert {"Deployment", "Job", "CronJob", "Service"} <= set(checked)


def test_the_schema_check_refuses_an_unknown_field(renders):
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    deployment = next(o for o in renders["minimal"].manifests if o["kind"] == "Deployment")
    deployment["spec"]["template"]["spec"]["containers"][0]["chunkedInputLimit"] = 1
    with pytest.raises(kubernetes_validate.ValidationError, match="chunkedInputLimit"):
        kubernetes_validate.validate(deployment, KUBERNETES_VERSIONS[-1], strict=True)


# --- the same templates rendered outside the roles (role_templates) ------------------------


@pytest.mark.parametrize("scenario", RENDERED)
def test_the_templates_rendered_outside_the_roles_are_what_the_roles_emit(renders, scenario):
    render = renders[scenario]
    by_key = objects_by_key(render.desired, render.manifests)
    assert by_key == render_objects(render.desired)
    for key, obj in by_key.items():
        if obj is not None:
            assert list(obj) == list(render_object(key, render.desired[key]))  # field order too
    # a pass's render step: the same objects (KINDS order: the route after the policy)
    owned = owned_objects(render.desired)
    assert sorted(map(json.dumps, owned)) == sorted(map(json.dumps, render.manifests))
    assert objects_by_key(render.desired, owned) == by_key


def test_a_role_may_render_only_its_own_keys_with_their_templates(renders):
    desired = renders["full"].desired
    api = ROOT / "roles" / "glance_api" / "templates"
    assert role_objects(api, "glance_api", desired, {"service": "service.yaml.j2"}) == [
        render_object("service", desired["service"])
    ]
    with pytest.raises(
        ValueError, match=re.escape("glance_api renders service with pdb.yaml.j2; ")
    ):
        role_objects(api, "glance_api", desired, {"service": "pdb.yaml.j2"})
    with pytest.raises(
        ValueError, match=re.escape("KINDS says glance_config/templates/configmap.yaml.j2")
    ):
        role_objects(api, "glance_api", desired, {"config_map": "configmap.yaml.j2"})
    with pytest.raises(ValueError, match="glance_desired has no entry hpa"):
        role_objects(api, "glance_api", {"service": desired["service"]}, {"hpa": "hpa.yaml.j2"})
    with pytest.raises(ValueError, match="glance_desired has no entry"):
        owned_objects({"service": desired["service"]})


def test_every_key_has_a_kind_and_a_template_file():
    assert set(KINDS) == set(OBJECT_KEYS)
    for kind in KINDS.values():
        assert (ROOT / "roles" / kind.role / "templates" / kind.template).is_file()
    assert {(k, KINDS[k].role) for k in KINDS} == {
        (key, role) for role, keys in ROLE_KEYS.items() for key in keys
    }


@pytest.mark.parametrize("scenario", RENDERED)
def test_each_object_rendered_alone_is_what_its_data_says(renders, scenario):
    desired = renders[scenario].desired
    for key in EMIT_ORDER:
        if desired[key] is not None:
            obj = render_object(key, desired[key])
            assert obj == expected_object(key, desired[key])
            assert (obj["apiVersion"], obj["kind"]) == (KINDS[key].api_version, KINDS[key].kind)


def test_optional_fields_are_left_out_when_their_data_is_unset(renders):
    desired = renders["full"].desired
    deployment = dict(desired["deployment"], replicas=3)
    assert render_object("deployment", deployment)["spec"]["replicas"] == 3
    assert "replicas" not in render_object("deployment", dict(deployment, replicas=None))["spec"]
    pdb = dict(desired["pdb"], min_available=None, max_unavailable=1)
    assert render_object("pdb", pdb) == expected_object("pdb", pdb)
    route = dict(desired["http_route"], annotations={})
    assert "annotations" not in render_object("http_route", route)["metadata"]


def test_matching_rendered_objects_to_keys_refuses_a_missing_or_an_extra_object(renders):
    render = renders["full"]
    manifests = render.manifests
    with pytest.raises(ValueError, match="rendered no Service glance for service"):
        objects_by_key(render.desired, [o for o in manifests if o["kind"] != "Service"])
    stray = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "stray"}}
    with pytest.raises(ValueError, match="did not decide: ConfigMap stray"):
        objects_by_key(render.desired, [*manifests, stray])
    with pytest.raises(KeyError):
        render_object("pod", {})


RENDER_PROBE = """
import json, sys
from ansible_collections.c5c3.glance.plugins.module_utils.desired.role_templates import (
    owned_objects,
)
print(json.dumps(owned_objects(json.load(open(sys.argv[1])))))
"""


def test_compiled_templates_are_kept_in_the_users_cache_and_render_the_same(renders, tmp_path):
    """Each ansible-playbook compiles the templates once (0.06 CPU-s) or loads them from
    the user's cache (role_templates._bytecode_cache); what they render does not change."""
    desired = renders["full"].desired
    data = tmp_path / "desired.json"
    data.write_text(json.dumps(desired))
    env = collection_python_env(XDG_CACHE_HOME=str(tmp_path / "cache"))
    run = [sys.executable, "-c", RENDER_PROBE, str(data)]
    first = subprocess.run(run, env=env, check=True, capture_output=True, text=True).stdout
    cached = sorted((tmp_path / "cache" / "c5c3-glance" / "templates").iterdir())
    used = {(KINDS[key].role, KINDS[key].template) for key, d in desired.items() if d is not None}
    assert len(cached) == len(used)
    written = [path.stat().st_mtime_ns for path in cached]
    again = subprocess.run(run, env=env, check=True, capture_output=True, text=True).stdout
    assert json.loads(first) == json.loads(again) == owned_objects(desired)
    assert [path.stat().st_mtime_ns for path in cached] == written
