"""What a Glance's gates wait for wakes it (the reference's ``Watches(MariaDB)`` and its
store watches): ``python -m runner`` against a real kube-apiserver of this module's own that
serves mariadb-operator's and external-secrets' kinds (``tests/support/crds/``,
``integration.external_secrets``), and against the API double, which serves neither.

* a MariaDB created, deleted, or whose ``Ready`` flips wakes exactly the Glances of its
  namespace whose ``spec.database.clusterRef.name`` is its name (``ClusterNotReady``);
* a ClusterSecretStore or a SecretStore the same, for the Glances whose
  ``spec.secretStoreRef`` selects it (``SecretStoreNotReady``);
* never a Glance with a target cluster (it reads both there); a label edit, or a status
  that stays not Ready, wakes nothing;
* where the kinds are not served, the runner says so and watches none (served later:
  test_runner_late_gates.py).

The watches file is the test's own, its playbook only writes down that it ran
(``test_runner_support.reporting_runner``): what the test sees is the runner's doing. The
gates themselves are tests/reconcile's (test_managed_database.py, the external-secrets
tests).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from integration import external_secrets as eso
from support.api_env import sample_documents
from test_runner_support import (
    RunnerProcess,
    api_env,
    ended,
    passes,
    reporting_runner,
    start_real_apiserver,
    wait_until,
)

MARIADB_CRDS = Path(__file__).resolve().parents[1] / "support" / "crds" / "k8s.mariadb.com.yaml"
MARIADB_API = "k8s.mariadb.com/v1alpha1"

# Glance name -> its spec's changes: the MariaDB it names, the store it selects, a target.
GLANCES: dict[str, dict[str, Any]] = {
    "on-db": {"database": "db"},
    "on-db-too": {"database": "db"},
    "on-other": {"database": "other"},
    "brownfield": {},
    "on-db-elsewhere": {"database": "db", "targetClusterRef": {"name": "edge"}},
    "on-vault": {"secretStoreRef": {"name": "vault"}},
    "on-local": {"secretStoreRef": {"kind": "SecretStore", "name": "local"}},
    "on-vault-elsewhere": {"secretStoreRef": {"name": "vault"}, "targetClusterRef": {"name": "e"}},
}


def glances(namespace: str) -> list[dict[str, Any]]:
    [sample] = [d for d in sample_documents() if d["kind"] == "Glance"]
    out = []
    for name, changes in GLANCES.items():
        obj = copy.deepcopy(sample)
        obj["metadata"] = {"name": name, "namespace": namespace}
        changes = dict(changes)
        cluster = changes.pop("database", None)
        if cluster is not None:
            obj["spec"]["database"].pop("host", None)
            obj["spec"]["database"]["clusterRef"] = {"name": cluster}
        obj["spec"].update(changes)
        out.append(obj)
    return out


@pytest.fixture
def real_apiserver():
    """A kube-apiserver of the test's own (a cluster-wide runner sees every namespace):
    the Glance CRDs, mariadb-operator's and external-secrets' (kept from the other runner
    tests, whose Glances a store would gate)."""
    server = start_real_apiserver()
    try:
        for crd in yaml.safe_load_all(MARIADB_CRDS.read_text()):
            server.install_crd(crd)
        for crd in eso.CRDS:
            server.install_crd(crd)
        yield server
    finally:
        server.stop()


@pytest.fixture
def gated(request, tmp_path, real_apiserver):
    yield from api_env("kube-apiserver", request, tmp_path)


def start_runner(api, tmp_path: Path) -> RunnerProcess:
    api.ensure_namespace()
    for obj in glances(api.namespace):
        api.client.create(obj)
    runner = reporting_runner(api, tmp_path, env={"WATCH_NAMESPACE": api.namespace})[0].start()
    wait_until(
        lambda: (
            sorted(name for name, _ in passes(runner)) == sorted(GLANCES)
            and ended(runner) == len(GLANCES)
        ),
        what="every Glance's first pass (the workers start once the informers synced)",
    )
    return runner


def wake(runner: RunnerProcess, change: Callable[[], Any], woken: list[str], reason: str) -> None:
    """``change()``, then wait until it has woken exactly ``woken`` (one pass each, for
    ``reason``) and those passes have ended."""
    before = len(passes(runner))
    change()

    def done() -> bool:
        new = passes(runner)[before:]
        return sorted(name for name, _ in new) == sorted(woken) and ended(runner) == len(
            passes(runner)
        )

    wait_until(done, timeout=120, what=f"{woken} woken by {reason!r}")
    new = passes(runner)[before:]
    assert all(reasons == (reason,) for _, reasons in new), new


def ready(api, api_version: str, kind: str, name: str, status: bool, namespace=None) -> None:
    api.client.patch(
        api_version,
        kind,
        name,
        namespace,
        eso.ready(status, "Test", ""),
        subresource="status",
    )


@pytest.mark.integration
def test_a_mariadb_and_a_store_wake_exactly_the_glances_they_gate(gated, tmp_path):
    api = gated
    runner = start_runner(api, tmp_path)
    try:
        for kind in ("MariaDB", "SecretStore", "ClusterSecretStore"):
            assert not runner.find(f"{kind} not served, not watched")
        # The namespace-scoped runner: SecretStores of its namespace, no ClusterSecretStore.
        synced = [line["informer"] for line in runner.find("synced") if "informer" in line]
        assert f"SecretStore.external-secrets.io/v1@{api.namespace}" in synced
        assert not [name for name in synced if name.startswith("ClusterSecretStore")]

        mariadb = {
            "apiVersion": MARIADB_API,
            "kind": "MariaDB",
            "metadata": {"name": "db", "namespace": api.namespace},
            "spec": {},
        }
        on_db = ["on-db", "on-db-too"]
        wake(runner, lambda: api.client.create(mariadb), on_db, "database's ADDED MariaDB")
        # A MariaDB no Glance names, a status that stays not Ready, a label: nothing the
        # gate reads, so they wake nothing (checked by the exact count of the next wake).
        other = copy.deepcopy(mariadb)
        other["metadata"]["name"] = "unnamed"
        api.client.create(other)
        ready(api, MARIADB_API, "MariaDB", "db", False, api.namespace)
        labels = {"metadata": {"labels": {"a": "b"}}}
        api.client.patch(MARIADB_API, "MariaDB", "db", api.namespace, labels)
        readiness = "database's MODIFIED MariaDB readiness"
        wake(
            runner,
            lambda: ready(api, MARIADB_API, "MariaDB", "db", True, api.namespace),
            on_db,
            readiness,
        )
        wake(
            runner,
            lambda: ready(api, MARIADB_API, "MariaDB", "db", False, api.namespace),
            on_db,
            readiness,
        )
        wake(
            runner,
            lambda: api.client.delete(MARIADB_API, "MariaDB", "db", api.namespace),
            on_db,
            "database's DELETED MariaDB",
        )

        local = eso.store("SecretStore", "local", api.namespace)
        wake(runner, lambda: api.client.create(local), ["on-local"], "store's ADDED SecretStore")
        wake(
            runner,
            lambda: ready(api, eso.API_VERSION, "SecretStore", "local", True, api.namespace),
            ["on-local"],
            "store's MODIFIED SecretStore readiness",
        )
        counts: dict[str, int] = {}
        for name, _ in passes(runner):
            counts[name] = counts.get(name, 0) + 1
        assert counts == {
            "on-db": 5,
            "on-db-too": 5,
            "on-local": 3,
            **{name: 1 for name in ("on-other", "brownfield", "on-db-elsewhere", "on-vault")},
            "on-vault-elsewhere": 1,
        }
        assert not runner.find("pass failed")
    finally:
        runner.close()


def start_cluster_wide(api, tmp_path: Path, **env: str) -> RunnerProcess:
    """A runner of every namespace over :data:`GLANCES`, after their first passes."""
    api.ensure_namespace()
    for obj in glances(api.namespace):
        api.client.create(obj)
    env = {"WATCH_NAMESPACE": "", **env}
    runner = reporting_runner(api, tmp_path, env=env)[0].start()
    wait_until(
        lambda: ended(runner) >= len(GLANCES) and ended(runner) == len(passes(runner)),
        what="the first passes",
    )
    return runner


def vault_wakes_its_glance(api, runner: RunnerProcess) -> None:
    """The ClusterSecretStore ``vault`` created, then Ready: each wakes ``on-vault`` alone."""
    vault = eso.store("ClusterSecretStore", "vault")
    wake(runner, lambda: api.client.create(vault), ["on-vault"], "store's ADDED ClusterSecretStore")
    wake(
        runner,
        lambda: ready(api, eso.API_VERSION, "ClusterSecretStore", "vault", True),
        ["on-vault"],
        "store's MODIFIED ClusterSecretStore readiness",
    )


@pytest.mark.integration
def test_a_cluster_wide_runner_watches_the_cluster_secret_stores(gated, tmp_path):
    """Every namespace watched: the ClusterSecretStore a Glance selects wakes it."""
    api = gated
    runner = start_cluster_wide(api, tmp_path)
    try:
        try:
            vault_wakes_its_glance(api, runner)
        finally:
            api.client.delete(eso.API_VERSION, "ClusterSecretStore", "vault")
    finally:
        runner.close()


def test_where_the_gates_kinds_are_not_served_the_runner_watches_none(double_api, tmp_path):
    runner = start_runner(double_api, tmp_path)
    try:
        for kind in ("MariaDB", "SecretStore"):  # a ClusterSecretStore: not namespaced
            runner.wait_for(f"{kind} not served, not watched yet")
        synced = [line["informer"] for line in runner.find("synced") if "informer" in line]
        gates = ("MariaDB", "SecretStore", "ClusterSecretStore")
        assert not [name for name in synced if name.startswith(gates)], synced
    finally:
        runner.close()
