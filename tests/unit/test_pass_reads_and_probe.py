"""What a pass reads (pass_reads) and how the health probe's answers are classified (probe)."""

from __future__ import annotations

import json

import pytest
from support.builders import BACKEND, GLANCE, patched
from support.cluster import glance_object, stored

from ansible_collections.c5c3.glance.plugins.module_utils.passes import pass_reads as pr
from ansible_collections.c5c3.glance.plugins.module_utils.passes.glance.api_health import (
    HEALTH_DNS,
    HEALTH_OTHER,
    HEALTH_REFUSED,
    HEALTH_TIMEOUT,
    Health,
    health_condition,
)
from ansible_collections.c5c3.glance.plugins.module_utils.passes.probe import classify

URL = "http://glance.openstack.svc.cluster.local:9292/healthcheck"


def test_a_glance_pass_reads_its_secrets_the_policy_configmap_and_what_it_owns():
    glance = glance_object(
        patched(GLANCE, {"spec": {"policyOverrides": {"configMapRef": {"name": "policy"}}}})
    )
    other = patched(
        BACKEND,
        {
            "metadata": {"name": "other"},
            "spec": {
                "glanceRef": {"name": "x"},
                "s3": {"credentialsSecretRef": {"name": "not-ours"}},
            },
        },
    )
    reads = pr.glance_reads(glance, [stored(BACKEND, "b"), stored(other, "o")], gateway_api=True)
    named = {(r.kind, r.name) for r in reads if not r.owned}
    assert named == {
        ("Secret", "glance-db"),
        ("Secret", "glance-service-user"),
        ("Secret", "glance-s3"),
        ("ConfigMap", "policy"),
    }
    owned = {(r.kind, r.name, r.label_selector) for r in reads if r.owned}
    assert ("Deployment", "glance", None) in owned
    assert ("HTTPRoute", "glance", None) in owned
    assert ("Secret", "glance-db-connection", None) in owned
    assert ("CronJob", "glance-db-purge", None) in owned
    assert ("ConfigMap", None, "cobaltcore.c5c3.io/config-base=glance-config") in owned
    assert ("Secret", None, "cobaltcore.c5c3.io/config-base=glance-backends") in owned
    assert (
        "Job",
        None,
        "app.kubernetes.io/instance=glance,app.kubernetes.io/managed-by=glance-operator,app.kubernetes.io/name=glance",
    ) in owned
    assert all(r.namespace == "openstack" for r in reads)


def test_the_import_ca_bundle_secret_is_read_and_watched_with_the_credentials():
    glance = patched(GLANCE, {"spec": {"importCABundleSecretRef": {"name": "mirror-ca"}}})
    assert pr.referenced_secrets(glance, []) == ["glance-db", "glance-service-user", "mirror-ca"]
    assert pr.referenced_secrets(GLANCE, []) == ["glance-db", "glance-service-user"]


def test_without_the_gateway_api_no_route_is_read():
    reads = pr.owned_reads("glance", "openstack", gateway_api=False)
    assert "HTTPRoute" not in {r.kind for r in reads}


def test_a_backend_pass_reads_its_parent_credentials_and_the_parent_deployment():
    reads = pr.backend_reads(stored(BACKEND, "b"))
    assert [(r.kind, r.name) for r in reads] == [
        ("Glance", "glance"),
        ("Secret", "glance-s3"),
        ("Deployment", "glance"),
    ]


JSON = {"content-type": "application/json"}
TEXT = {"content-type": "text/plain"}


def status(message: str, code: int = 503) -> bytes:
    return json.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "message": message,
            "code": code,
        }
    ).encode()


@pytest.mark.parametrize(
    ("code", "headers", "body", "expected"),
    [
        (200, TEXT, b"OK", {"status_code": 200, "error_kind": None, "body": "OK"}),
        (503, TEXT, b"DISABLED BY FILE", {"status_code": 503, "error_kind": None}),
        (
            503,
            JSON,
            status('no endpoints available for service "glance"'),
            {"status_code": None, "error_kind": HEALTH_REFUSED},
        ),
        (
            503,
            JSON,
            status(
                "error trying to reach service: dial tcp 10.0.0.5:9292: connect: connection refused"
            ),
            {"status_code": None, "error_kind": HEALTH_REFUSED},
        ),
        (
            503,
            JSON,
            status("error trying to reach service: dial tcp 10.0.0.5:9292: i/o timeout"),
            {"status_code": None, "error_kind": HEALTH_TIMEOUT},
        ),
        (
            503,
            JSON,
            status("error trying to reach service: dial tcp: lookup x: no such host"),
            {"status_code": None, "error_kind": HEALTH_DNS},
        ),
        (
            404,
            JSON,
            status('services "glance" not found', 404),
            {"status_code": None, "error_kind": HEALTH_DNS},
        ),
        (
            502,
            JSON,
            status("something odd", 502),
            {"status_code": None, "error_kind": HEALTH_OTHER},
        ),
        # A JSON answer of Glance's own is Glance's, not the proxy's.
        (500, JSON, b'{"error": "boom"}', {"status_code": 500, "error_kind": None}),
    ],
)
def test_answers_through_the_service_proxy_are_classified(code, headers, body, expected):
    got = classify(URL, code, headers, body)
    assert got["url"] == URL
    for key, value in expected.items():
        assert got[key] == value, (key, got)


def test_a_proxy_error_becomes_the_condition_the_pass_reports():
    got = classify(URL, 503, JSON, status('no endpoints available for service "glance"'))
    cond, requeue = health_condition(Health.from_data(got))
    assert (cond["status"], cond["reason"], requeue) == ("False", "ConnectionFailed", 10)
    assert 'no endpoints available for service "glance"' in cond["message"]


@pytest.mark.parametrize(
    "ref, store",
    [
        (None, ("ClusterSecretStore", "openbao-cluster-store")),
        ({"name": "vault"}, ("ClusterSecretStore", "vault")),
        ({"kind": "SecretStore", "name": "vault"}, ("SecretStore", "vault")),
    ],
)
def test_where_external_secrets_is_served_the_store_and_the_external_secrets_are_read(ref, store):
    glance = glance_object(patched(GLANCE, {"spec": {"secretStoreRef": ref}} if ref else {}))
    plain = pr.glance_reads(glance, [], gateway_api=True)
    assert not [r for r in plain if r.api_version == "external-secrets.io/v1"]
    reads = pr.glance_reads(glance, [], gateway_api=True, external_secrets_api=True)
    eso = [(r.kind, r.name) for r in reads if r.api_version == "external-secrets.io/v1"]
    assert eso == [
        store,
        ("ExternalSecret", "glance-db"),
        ("ExternalSecret", "glance-service-user"),
    ]
    assert len(reads) == len(plain) + 3


def test_managed_mode_reads_the_mariadb_and_its_database_user_and_grant():
    spec = {"database": {"host": None, "clusterRef": {"name": "mariadb"}}}
    glance = glance_object(patched(GLANCE, {"spec": spec}))
    reads = {(r.api_version, r.kind, r.name, r.owned) for r in pr.glance_reads(glance, [], True)}
    api = "k8s.mariadb.com/v1alpha1"
    assert (api, "MariaDB", "mariadb", False) in reads  # an input, not owned
    assert {(api, k, "glance", True) for k in ("Database", "User", "Grant")} <= reads
    assert [(r.kind, r.name) for r in pr.deletion_reads(glance)] == [
        ("Database", "glance"),
        ("User", "glance"),
        ("Grant", "glance"),
    ]


def test_brownfield_mode_reads_nothing_of_mariadb_operator():
    glance = glance_object(GLANCE)
    assert not any(
        r.api_version.startswith("k8s.mariadb.com") for r in pr.glance_reads(glance, [], True)
    )
    assert pr.deletion_reads(glance) == []
