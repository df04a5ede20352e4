"""The bundled samples pass every rule; both CRDs refuse fields they do not declare."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from support.builders import BACKEND, DELETE, GLANCE, patched

from ansible_collections.c5c3.glance.plugins.module_utils.admission.admission import judge
from ansible_collections.c5c3.glance.plugins.module_utils.admission.collection_files import (
    COLLECTION_ROOT,
    load_catalogs,
    load_crds,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.glance_secrets import (
    db_secret_keys,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.input_documents import (
    error_lines,
    judge_documents,
    split_documents,
)

SAMPLES = sorted((COLLECTION_ROOT / "config" / "samples").glob("*.yaml"))
CRDS = load_crds()


def load(path: Path) -> list:
    return list(yaml.safe_load_all(path.read_text()))


@pytest.mark.parametrize("path", SAMPLES, ids=[p.name for p in SAMPLES])
def test_sample_is_accepted_with_no_warning(path):
    found = split_documents(load(path))
    verdicts = judge_documents(found, CRDS, load_catalogs())
    assert error_lines(found, verdicts) == []
    assert [w for v in verdicts for w in v.warnings] == []
    assert found.glance is not None and found.backends and found.secrets


# Optional blocks the full sample leaves out, each for a reason.
NOT_IN_THE_FULL_SAMPLE = {
    # With it the children go to the named registered cluster (docs/target-clusters.md);
    # make demo-offline and the reconcile bench run the sample where no cluster is registered.
    "targetClusterRef",
}


def test_the_full_sample_sets_every_optional_block_of_the_spec():
    schema = CRDS["Glance"]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    optional = set(schema["properties"]["spec"]["properties"]) - set(
        schema["properties"]["spec"].get("required", [])
    )
    assert optional >= NOT_IN_THE_FULL_SAMPLE
    full = split_documents(load(COLLECTION_ROOT / "config/samples/glance_full.yaml"))
    assert optional - set(full.glance["spec"]) == NOT_IN_THE_FULL_SAMPLE


def test_sample_secrets_hold_every_key_the_resources_reference():
    for path in SAMPLES:
        found = split_documents(load(path))
        keys = {
            s["metadata"]["name"]: set(s.get("stringData", {})) | set(s.get("data", {}))
            for s in found.secrets
        }
        spec = found.glance["spec"]
        stored = judge(CRDS["Glance"], found.glance).object
        assert set(db_secret_keys(stored)) <= keys[spec["database"]["secretRef"]["name"]]
        assert (
            spec["serviceUser"]["secretRef"].get("key", "password")
            in keys[spec["serviceUser"]["secretRef"]["name"]]
        )
        for backend in found.backends:
            ref = backend["spec"]["s3"]["credentialsSecretRef"]["name"]
            assert {"access-key-id", "secret-access-key"} <= keys[ref]


@pytest.mark.parametrize(
    ("kind", "base", "patch", "unknown"),
    [
        ("Glance", GLANCE, {"spec": {"replicas": 3}}, 'unknown field "spec.replicas"'),
        (
            "Glance",
            GLANCE,
            {"spec": {"apiServer": {"workers": 4}}},
            'unknown field "spec.apiServer.workers"',
        ),
        (
            "Glance",
            GLANCE,
            {"spec": {"targetClusterRef": {"name": "x", "namespace": "y"}}},
            'unknown field "spec.targetClusterRef.namespace"',
        ),
        (
            "Glance",
            GLANCE,
            {"spec": {"secretStoreRef": {"name": "x", "namespace": "y"}}},
            'unknown field "spec.secretStoreRef.namespace"',
        ),
        (
            "Glance",
            GLANCE,
            {"spec": {"database": {"clusterName": "x"}}},
            'unknown field "spec.database.clusterName"',
        ),
        (
            "Glance",
            GLANCE,
            {"spec": {"importFiltering": {"allowedHost": ["a"]}}},
            'unknown field "spec.importFiltering.allowedHost"',
        ),
        (
            "GlanceBackend",
            BACKEND,
            {"spec": {"s3": {"endpoint": "x"}}},
            'unknown field "spec.s3.endpoint"',
        ),
        ("GlanceBackend", BACKEND, {"spec": {"default": True}}, 'unknown field "spec.default"'),
    ],
)
def test_crd_refuses_an_undeclared_field_by_name(kind, base, patch, unknown):
    verdict = judge(CRDS[kind], patched(base, patch))
    assert verdict.messages() == [unknown]
    assert verdict.stage == "decoding"


def test_database_needs_a_host_or_a_cluster_ref():
    glance = patched(GLANCE, {})
    del glance["spec"]["database"]["host"]
    assert judge(CRDS["Glance"], glance).messages() == [
        'spec.database: Invalid value: "object": exactly one of clusterRef or host must be set'
    ]


def test_the_managed_database_fields_get_their_schema_defaults():
    glance = patched(GLANCE, {"spec": {"database": {"host": DELETE, "clusterRef": {"name": "db"}}}})
    verdict = judge(CRDS["Glance"], glance)
    assert verdict.messages() == []
    database = verdict.object["spec"]["database"]
    assert (database["replicas"], database["storageSize"]) == (3, "100Gi")
    assert "credentialsMode" not in database  # empty means Static; never written


def test_the_stored_object_carries_schema_and_webhook_defaults():
    verdict = judge(CRDS["Glance"], GLANCE)
    assert verdict.allowed, verdict.messages()
    spec = verdict.object["spec"]
    assert spec["deployment"]["replicas"] == 3
    assert spec["logging"]["format"] == "text"
    assert spec["serviceUser"]["username"] == "glance"
    backend = judge(CRDS["GlanceBackend"], BACKEND)
    assert backend.object["spec"]["s3"]["bucketURLFormat"] == "path"


def test_a_glance_in_a_second_document_set_is_an_error():
    found = split_documents(
        [GLANCE, GLANCE, {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"}}]
    )
    assert found.errors == [
        "document 3 (Deployment x): only glance.openstack.c5c3.io/v1alpha1 Glance and GlanceBackend, and v1 Secret and ConfigMap objects belong in an input",
        "an input holds exactly one Glance, this one holds 2",
    ]


def test_objects_without_a_namespace_take_the_glances():
    backend = patched(BACKEND, {})
    del backend["metadata"]["namespace"]
    found = split_documents([GLANCE, backend])
    assert found.backends[0]["metadata"]["namespace"] == "openstack"
