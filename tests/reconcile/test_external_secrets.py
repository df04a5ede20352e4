"""external-secrets gating (reference-spec §2.3 step 1), on a real kube-apiserver that
serves external-secrets.io (``integration/external_secrets.py``: its CRDs, and the status
its controllers would write, written here by the test, late).

A Glance naming a store waits for it (``SecretStoreNotReady`` with the reference's message)
before anything else, then says which ExternalSecret it waits for, then runs as usual
once the Secrets are there. With no store named, a Glance is gated on the reference's
default store only when that store exists; without it, the Secrets are plain Secrets.
"""

from __future__ import annotations

import pytest
from integration.external_secrets import CRDS, external_secret, ready, store
from integration.kube_harness import started_apiserver
from support.api_env import api_env, sample_documents
from test_reconcile import GATHER, converge, status_of

from ansible_collections.c5c3.glance.plugins.module_utils.admission.collection_files import (
    load_crds,
)

pytestmark = pytest.mark.integration

DB, SERVICE = "glance-db", "glance-service-user"
UNREACHABLE = "is not ready; upstream secret backend unreachable"


@pytest.fixture(scope="module")
def real_apiserver():
    """A kube-apiserver of this module's own: ours and external-secrets' CRDs."""
    with started_apiserver([*load_crds().values(), *CRDS]) as server:
        yield server


@pytest.fixture
def api(request, tmp_path):
    yield from api_env("kube-apiserver", request, tmp_path, "eso")


def secrets_ready(api) -> tuple[str, str, str]:
    cond = api.condition("Glance", "glance", "SecretsReady")
    return cond.get("status"), cond.get("reason"), cond.get("message")


def set_ready(api, kind: str, name: str, namespace: str | None, ok: bool, reason: str) -> None:
    api.client.patch(
        "external-secrets.io/v1",
        kind,
        name,
        namespace,
        ready(ok, reason, f"{reason} (written by the test)"),
        subresource="status",
    )


def without_secrets(names: set[str]) -> list[dict]:
    return [
        d
        for d in sample_documents()
        if not (d["kind"] == "Secret" and d["metadata"]["name"] in names)
    ]


def test_a_named_store_then_each_external_secret_are_waited_for_with_the_references_words(api):
    docs = without_secrets({DB, SERVICE})
    glance = next(d for d in docs if d["kind"] == "Glance")
    glance["spec"]["secretStoreRef"] = {"kind": "SecretStore", "name": "vault"}
    api.create_all(docs)
    ns = api.namespace

    # The store is missing: nothing but the finalizer and the status is written.
    run = api.glance_pass()
    assert secrets_ready(api) == (
        "False",
        "SecretStoreNotReady",
        f'SecretStore "vault" {UNREACHABLE}',
    )
    assert run.requeue_after == 15
    assert api.get("Job", "glance-db-sync") is None

    # There, but its provider not validated yet: still the store.
    api.client.create(store("SecretStore", "vault", ns))
    set_ready(api, "SecretStore", "vault", ns, False, "InvalidProviderConfig")
    api.glance_pass()
    assert secrets_ready(api)[1] == "SecretStoreNotReady"

    # Ready: now the database credentials' ExternalSecret is what is missing.
    set_ready(api, "SecretStore", "vault", ns, True, "Valid")
    api.glance_pass()
    assert secrets_ready(api) == (
        "False",
        "WaitingForDBCredentials",
        f"Database credentials ExternalSecret {ns}/{DB} not found yet",
    )

    # Created, not synced yet.
    api.client.create(external_secret(DB, ns, ["username", "password"]))
    api.glance_pass()
    assert secrets_ready(api) == (
        "False",
        "WaitingForDBCredentials",
        "Waiting for ESO to sync database credentials from OpenBao",
    )

    # Synced: external-secrets writes the Secret, then the condition.
    db_secret = next(d for d in sample_documents() if d["metadata"]["name"] == DB)
    api.create_all([db_secret])
    set_ready(api, "ExternalSecret", DB, ns, True, "SecretSynced")
    api.glance_pass()
    assert secrets_ready(api) == (
        "False",
        "WaitingForServiceUserCredentials",
        f"Service-user credentials ExternalSecret {ns}/{SERVICE} not found yet",
    )

    api.client.create(external_secret(SERVICE, ns, ["password"]))
    service_secret = next(d for d in sample_documents() if d["metadata"]["name"] == SERVICE)
    api.create_all([service_secret])
    set_ready(api, "ExternalSecret", SERVICE, ns, True, "SecretSynced")
    run = api.glance_pass()
    assert status_of(api, "SecretsReady") == ("True", "SecretsAvailable")
    assert api.get("Job", "glance-db-sync") is not None
    api.settle()
    converge(api)

    # The store going away later holds the Glance again; what runs stays as it is.
    deployment = api.get("Deployment", "glance")["metadata"]["resourceVersion"]
    set_ready(api, "SecretStore", "vault", ns, False, "ValidationFailed")
    api.glance_pass()
    assert secrets_ready(api)[1] == "SecretStoreNotReady"
    assert api.get("Deployment", "glance")["metadata"]["resourceVersion"] == deployment


def test_without_a_named_store_only_the_references_default_store_gates(api):
    api.create_all(sample_documents())
    # external-secrets is installed but the default store does not exist: plain Secrets.
    converge(api)
    assert status_of(api, "SecretsReady") == ("True", "SecretsAvailable")

    api.client.create(store("ClusterSecretStore", "openbao-cluster-store"))
    try:
        api.glance_pass()
        assert secrets_ready(api) == (
            "False",
            "SecretStoreNotReady",
            f'ClusterSecretStore "openbao-cluster-store" {UNREACHABLE}',
        )
        set_ready(api, "ClusterSecretStore", "openbao-cluster-store", None, True, "Valid")
        api.glance_pass()
        assert status_of(api, "SecretsReady") == ("True", "SecretsAvailable")
        assert api.glance_pass().step_actions == [GATHER]
    finally:
        api.client.delete("external-secrets.io/v1", "ClusterSecretStore", "openbao-cluster-store")
