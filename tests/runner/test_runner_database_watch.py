"""The MariaDB of a managed database wakes its Glances (the reference's ``Watches(MariaDB)``):
``python -m runner`` against the API double (which serves no ``k8s.mariadb.com``) and a real
kube-apiserver with mariadb-operator's CRDs (``tests/support/crds/k8s.mariadb.com.yaml``,
marked ``integration``).

* on a cluster that serves MariaDB, one created, deleted, or whose ``Ready`` flips wakes
  exactly the Glances of its namespace whose ``spec.database.clusterRef.name`` is its name
  (not one with a target cluster, whose MariaDB is there); a label edit, or a status that
  stays not Ready, wakes nothing;
* on one that does not serve it, the runner says so and watches none.

The watches file is the test's own, its playbook only writes down that it ran
(``test_runner_support.reporting_project``): what the test sees is the runner's doing. The
Glance pass's gate itself (``ClusterNotReady``) is tests/reconcile/test_managed_database.py's.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.api_env import sample_documents
from test_runner_support import (
    RunnerProcess,
    api_env,
    ended,
    passes,
    reporting_project,
    wait_until,
)

MARIADB_CRDS = Path(__file__).resolve().parents[1] / "support" / "crds" / "k8s.mariadb.com.yaml"
MARIADB_API = "k8s.mariadb.com/v1alpha1"

# Glance name -> (the MariaDB its database.clusterRef names, its target cluster).
GLANCES: dict[str, tuple[str | None, str | None]] = {
    "on-db": ("db", None),
    "on-db-too": ("db", None),
    "on-other": ("other", None),
    "brownfield": (None, None),
    "on-db-elsewhere": ("db", "edge"),
}
ON_DB = ["on-db", "on-db-too"]


def glances(namespace: str) -> list[dict[str, Any]]:
    [sample] = [d for d in sample_documents() if d["kind"] == "Glance"]
    out = []
    for name, (cluster, target) in GLANCES.items():
        obj = copy.deepcopy(sample)
        obj["metadata"] = {"name": name, "namespace": namespace}
        if cluster is not None:
            database = obj["spec"]["database"]
            database.pop("host", None)
            database["clusterRef"] = {"name": cluster}
        if target is not None:
            obj["spec"]["targetClusterRef"] = {"name": target}
        out.append(obj)
    return out


def start_runner(api, tmp_path: Path) -> RunnerProcess:
    api.ensure_namespace()
    for obj in glances(api.namespace):
        api.client.create(obj)
    project, _ = reporting_project(tmp_path)
    return RunnerProcess(
        api,
        tmp_path,
        env={"WATCH_NAMESPACE": api.namespace},
        args=("--watches-file", str(project / "watches.yaml")),
    ).start()


def first_passes(runner: RunnerProcess) -> None:
    """Wait for one pass of each Glance (the workers start once the informers synced)."""
    wait_until(
        lambda: (
            sorted(name for name, _ in passes(runner)) == sorted(GLANCES)
            and ended(runner) == len(GLANCES)
        ),
        what="every Glance's first pass",
    )


@pytest.fixture
def mariadb_api(request, tmp_path, real_apiserver):
    """A namespace of the test's own on the runner tests' kube-apiserver, which serves
    mariadb-operator's kinds from here on (installed once; the other runner tests then
    watch MariaDBs too, and find none)."""
    for crd in yaml.safe_load_all(MARIADB_CRDS.read_text()):
        name = crd["metadata"]["name"]
        path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}"
        try:
            real_apiserver.client.get(path)
        except Exception:
            real_apiserver.install_crd(crd)
    yield from api_env("kube-apiserver", request, tmp_path)


def wake(runner: RunnerProcess, change, reason: str) -> None:
    """``change()``, then wait until it has woken exactly the Glances on ``db`` (one pass
    each, for ``reason``) and those passes have ended."""
    before = len(passes(runner))
    change()

    def woken() -> bool:
        new = passes(runner)[before:]
        return sorted(name for name, _ in new) == ON_DB and ended(runner) == len(passes(runner))

    wait_until(woken, timeout=120, what=f"{ON_DB} woken by {reason!r}")
    new = passes(runner)[before:]
    assert all(reasons == (reason,) for _, reasons in new), new


@pytest.mark.integration
def test_a_mariadb_wakes_exactly_the_glances_that_name_it(mariadb_api, tmp_path):
    api = mariadb_api
    runner = start_runner(api, tmp_path)
    try:
        first_passes(runner)
        assert not runner.find("MariaDB not served, not watched")
        mariadb = {
            "apiVersion": MARIADB_API,
            "kind": "MariaDB",
            "metadata": {"name": "db", "namespace": api.namespace},
            "spec": {},
        }

        def status(ready: str) -> None:
            conditions = [{"type": "Ready", "status": ready, "reason": "Test", "message": ""}]
            api.client.patch(
                MARIADB_API,
                "MariaDB",
                "db",
                api.namespace,
                {"status": {"conditions": conditions}},
                subresource="status",
            )

        wake(runner, lambda: api.client.create(mariadb), "database's ADDED MariaDB")
        # A MariaDB no Glance names, a status that stays not Ready, a label: nothing the
        # gate reads, so they wake nothing (checked by the exact count of the next wake).
        other = copy.deepcopy(mariadb)
        other["metadata"]["name"] = "unnamed"
        api.client.create(other)
        status("False")
        api.client.patch(
            MARIADB_API, "MariaDB", "db", api.namespace, {"metadata": {"labels": {"a": "b"}}}
        )
        wake(runner, lambda: status("True"), "database's MODIFIED MariaDB readiness")
        wake(runner, lambda: status("False"), "database's MODIFIED MariaDB readiness")
        wake(
            runner,
            lambda: api.client.delete(MARIADB_API, "MariaDB", "db", api.namespace),
            "database's DELETED MariaDB",
        )
        # The others ran their first pass only.
        counts: dict[str, int] = {}
        for name, _ in passes(runner):
            counts[name] = counts.get(name, 0) + 1
        assert counts == {
            "on-db": 5,
            "on-db-too": 5,
            "on-other": 1,
            "brownfield": 1,
            "on-db-elsewhere": 1,
        }
        assert not runner.find("pass failed")
    finally:
        runner.close()


def test_without_mariadb_served_the_runner_watches_none(double_api, tmp_path):
    runner = start_runner(double_api, tmp_path)
    try:
        runner.wait_for("MariaDB not served, not watched", api_version=MARIADB_API)
        first_passes(runner)
        informers = [line["informer"] for line in runner.find("synced") if "informer" in line]
        assert not [name for name in informers if name.startswith("MariaDB")], informers
    finally:
        runner.close()
