"""Gates and dependents whose kinds the cluster serves only after the runner started:
external-secrets or mariadb-operator installed after the operator. Found on the node with
the real controllers: external-secrets' stores were never watched, so a Ready Glance did not
see its store fail (tests/cluster/test_with_secrets_from_openbao.py), and a managed Glance
saw its Database, User and Grant turn Ready only at its next requeue
(tests/cluster/test_with_mariadb_operator.py). ``python -m runner`` against a kube-apiserver
of this module's own that serves those kinds only once the test installs their CRDs: the
runner asks again every ``--gate-discovery-period`` and watches a kind from when it is
served, waking the Glances as test_runner_gates.py's stores and MariaDBs do.
"""

from __future__ import annotations

import pytest
import yaml
from integration import external_secrets as eso
from support.api_env import GROUP_VERSION
from test_runner_gates import (
    MARIADB_API,
    MARIADB_CRDS,
    ready,
    start_cluster_wide,
    vault_wakes_its_glance,
    wake,
)
from test_runner_support import api_env, own_real_apiserver


@pytest.fixture
def real_apiserver():
    """The Glance CRDs only, at first."""
    with own_real_apiserver() as server:
        yield server


@pytest.fixture
def late(request, tmp_path, real_apiserver):
    yield from api_env("kube-apiserver", request, tmp_path)


@pytest.mark.integration
def test_stores_served_after_the_runner_started_are_watched_from_then_on(
    late, real_apiserver, tmp_path
):
    """Not served at start: said so; served once the CRDs are in: watched, and a store
    created or whose readiness flips wakes the Glance it gates."""
    api = late
    runner = start_cluster_wide(api, tmp_path, GATE_DISCOVERY_PERIOD="1s")
    try:
        runner.wait_for("ClusterSecretStore not served, not watched yet")
        for crd in eso.CRDS:
            real_apiserver.install_crd(crd)
        for kind in ("SecretStore", "ClusterSecretStore"):
            runner.wait_for(f"{kind} served now, watched")
        vault_wakes_its_glance(api, runner)
        assert not runner.find("pass failed")
    finally:
        runner.close()


@pytest.mark.integration
def test_mariadb_operator_installed_after_the_runner_started_is_watched_from_then_on(
    late, real_apiserver, tmp_path
):
    """Its MariaDB (a gate) and its Database, User and Grant (kinds a Glance pass writes)
    are asked for again and watched once served; a Database of the operator's (its
    managed-by label) turning Ready wakes the Glance that owns it, as when served from the
    start."""
    api = late
    runner = start_cluster_wide(api, tmp_path, GATE_DISCOVERY_PERIOD="1s")
    try:
        for kind in ("MariaDB", "Database", "User", "Grant"):
            runner.wait_for(f"{kind} not served, not watched yet")
        for crd in yaml.safe_load_all(MARIADB_CRDS.read_text()):
            if crd:
                real_apiserver.install_crd(crd)
        for kind in ("MariaDB", "Database", "User", "Grant"):
            runner.wait_for(f"{kind} served now, watched")
        owner = api.client.get(GROUP_VERSION, "Glance", "on-db", api.namespace)
        database = {
            "apiVersion": MARIADB_API,
            "kind": "Database",
            "metadata": {
                "name": "on-db",
                "namespace": api.namespace,
                "labels": {"app.kubernetes.io/managed-by": "glance-operator"},
                "ownerReferences": [
                    {
                        "apiVersion": GROUP_VERSION,
                        "kind": "Glance",
                        "name": "on-db",
                        "uid": owner["metadata"]["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": {
                "mariaDbRef": {"name": "db"},
                "characterSet": "utf8",
                "collate": "utf8_general_ci",
                "name": "on_db",
            },
        }
        api.client.create(database)
        # mariadb-operator's first status write adds its managedFields entry: a change
        wake(
            runner,
            lambda: ready(api, MARIADB_API, "Database", "on-db", False, api.namespace),
            ["on-db"],
            "dependent MODIFIED Database changed",
        )
        wake(
            runner,
            lambda: ready(api, MARIADB_API, "Database", "on-db", True, api.namespace),
            ["on-db"],
            "dependent MODIFIED Database readiness",
        )
        assert not runner.find("pass failed")
    finally:
        runner.close()
