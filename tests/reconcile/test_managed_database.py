"""Managed database mode against a real kube-apiserver and a real MariaDB (issue 25 item 1).

A Glance with ``database.clusterRef`` is reconciled pass by pass through
``playbooks/glance.yml`` on a real kube-apiserver that serves mariadb-operator's kinds
(``tests/support/crds/k8s.mariadb.com.yaml``). Between the passes the test plays the
controllers that do not run here: mariadb-operator (``support.mariadb_controller``, which
creates the database, the user and the grant the resources ask for in the REAL MariaDB of
the e2e stack and reports them Ready) and the kubelet, which runs the db-sync Job's
container as the e2e stack runs it (``e2e.stack``: its mounts materialized, its command and
environment remapped), with one stand-in more: the cluster DNS name of the MariaDB's
Service, ``<clusterRef>.<namespace>.svc``, resolves to the MariaDB on loopback. So
glance-manage really creates the schema, with the user the pass put into the DSN, in the
database the Database resource asked for: as the Glance's own user (Static credentials,
made by the User and Grant) or as the user of the Secret (Dynamic credentials).

Skipped, saying why, without the Kubernetes binaries (``KUBE_ASSETS_DIR``) or without what
``make e2e-env`` installs (MariaDB, the e2e Glance environment).
"""

from __future__ import annotations

import copy
import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml
from e2e.stack import (
    MARIADB_PROGRAMS,
    VENV_BIN,
    Remap,
    Rendered,
    Stack,
    debian_program,
    materialize,
    pod_container,
)
from support import mariadb_controller as operator
from support.api_env import GROUP_VERSION, api_env, sample_documents

pytestmark = pytest.mark.integration

MARIADB_CRDS = Path(__file__).resolve().parents[1] / "support" / "crds" / "k8s.mariadb.com.yaml"
API = operator.API
GATHER, APPLY, REPORT = "c5c3.glance.gather", "c5c3.glance.apply", "c5c3.glance.report"


@pytest.fixture(scope="session")
def mariadb_kinds(real_apiserver):
    """The session's kube-apiserver, serving the k8s.mariadb.com kinds too."""
    for crd in yaml.safe_load_all(MARIADB_CRDS.read_text()):
        if crd:
            real_apiserver.install_crd(crd)
    return real_apiserver


@pytest.fixture(scope="session")
def mariadb(tmp_path_factory):
    """A real MariaDB on loopback (the e2e stack's), stopped after the session."""
    if os.environ.get("C5C3_SKIP_E2E") == "1":
        pytest.skip("C5C3_SKIP_E2E=1: no MariaDB is started")
    missing = [p for p in MARIADB_PROGRAMS if not debian_program(p)]
    missing += [] if os.access(VENV_BIN / "glance-manage", os.X_OK) else ["glance-manage"]
    if missing:
        pytest.skip(f"needs what `make e2e-env` installs: {', '.join(missing)}")
    stack = Stack(tmp_path_factory.mktemp("managed-db", numbered=True))
    try:
        stack.start_mariadb()
        yield stack
    finally:
        stack.stop()


@pytest.fixture
def api(request, tmp_path, mariadb_kinds):
    yield from api_env("kube-apiserver", request, tmp_path, "managed")


def managed_documents(name: str, database: str, port: int, **db: str) -> list[dict]:
    """The managed sample as Glance ``name`` on ``database``, port ``port``; ``db`` is
    the database Secret's data."""
    docs = copy.deepcopy(sample_documents("glance_managed.yaml"))
    for doc in docs:
        if doc["kind"] == "Glance":
            doc["metadata"]["name"] = name
            doc["spec"]["database"].update(database=database, port=port)
        elif doc["kind"] == "GlanceBackend":
            doc["spec"]["glanceRef"]["name"] = name
        elif doc["metadata"]["name"] == "glance-db":
            doc["stringData"] = dict(db)
    return docs


def create_mariadb(api) -> None:
    api.client.create(
        {
            "apiVersion": API,
            "kind": "MariaDB",
            "metadata": {"name": "mariadb", "namespace": api.namespace},
            "spec": {},
        }
    )


def database(api, name: str) -> tuple[str, str, str]:
    cond = api.condition("Glance", name, "DatabaseReady")
    return cond.get("status"), cond.get("reason"), cond.get("message")


def mariadb_resources(api) -> set[str]:
    return {
        f"{kind} {obj['metadata']['name']}"
        for kind in ("Database", "User", "Grant")
        for obj in api.client.list(API, kind, api.namespace)
    }


def run_db_sync(api, stack: Stack, name: str, root: Path) -> None:
    """The kubelet's part: the db-sync Job's container, run to completion here."""
    job = dict(api.get("Job", f"{name}-db-sync"), kind="Job")
    # What the pod's volumes and env may name, as the kubelet reads them from the API.
    objects = [job]
    for kind in ("ConfigMap", "Secret"):
        objects += [dict(obj, kind=kind) for obj in api.list(kind)]  # list items lack kind
    rendered = Rendered(objects, {})
    remap = Remap(root, 0)
    pod, container = pod_container(job, "db-sync")
    materialize(rendered, pod, container, remap)
    env = remap.environment(rendered.container_env(container, remap.downward_api))
    # The cluster DNS stand-in: the MariaDB's Service name is the MariaDB on loopback.
    service = re.compile(rf"@mariadb\.{re.escape(api.namespace)}\.svc:{stack.mariadb_port}/")
    env = {k: service.sub(f"@{stack.host}:{stack.mariadb_port}/", v) for k, v in env.items()}
    stack.run(f"db-sync-{api.namespace}", remap.command(container["command"]), env=env)


def tables(stack: Stack, schema: str, user: str, password: str) -> set[str]:
    """The tables of ``schema`` as ``user`` sees them over TCP (its password, its grant)."""
    out = subprocess.run(
        [
            debian_program("mariadb"),
            "--no-defaults",
            f"-h{stack.host}",
            f"-P{stack.mariadb_port}",
            f"-u{user}",
            f"-p{password}",
            "-N",
            "-B",
            schema,
            "-e",
            "SHOW TABLES",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    return set(out.stdout.split())


def test_static_credentials_the_operator_makes_the_user_and_db_sync_runs_as_it(
    api, mariadb, tmp_path
):
    name, schema, password = "images", "images_managed", "static-pw-1"
    api.create_all(managed_documents(name, schema, mariadb.mariadb_port, password=password))

    # 1: no MariaDB yet: nothing of the database is asked for
    first = api.glance_pass(name)
    assert database(api, name) == (
        "False",
        "ClusterNotReady",
        'MariaDB cluster "mariadb" is not ready',
    )
    assert first.requeue_after == 30
    assert mariadb_resources(api) == set()
    create_mariadb(api)
    api.glance_pass(name)
    assert database(api, name)[1] == "ClusterNotReady"  # exists, not Ready
    operator.set_ready(
        api.client, "MariaDB", api.client.get(API, "MariaDB", "mariadb", api.namespace)
    )

    # 2: the Database, owned by the Glance; the User and Grant wait for it
    api.glance_pass(name)
    assert mariadb_resources(api) == {"Database images"}
    assert database(api, name)[1] == "WaitingForDatabase"
    db = api.client.get(API, "Database", name, api.namespace)
    glance = api.get("Glance", name)
    assert [(r["kind"], r["uid"], r["controller"]) for r in db["metadata"]["ownerReferences"]] == [
        ("Glance", glance["metadata"]["uid"], True)
    ]
    assert db["spec"] == {
        "mariaDbRef": {"name": "mariadb"},
        "characterSet": "utf8",
        "collate": "utf8_general_ci",
        "name": schema,
    }
    assert operator.reconcile(api.client, api.namespace, mariadb) == ["Database images"]

    # 3: the User and the Grant; mariadb-operator makes the user with the Secret's password
    api.glance_pass(name)
    assert mariadb_resources(api) == {"Database images", "User images", "Grant images"}
    assert api.get("Job", f"{name}-db-sync") is None  # not before they are Ready
    assert operator.reconcile(api.client, api.namespace, mariadb) == [
        "User images",
        "Grant images",
    ]

    # 4: db-sync, run for real on the database and as the user the resources asked for
    api.glance_pass(name)
    assert database(api, name)[1] == "DBSyncInProgress"
    run_db_sync(api, mariadb, name, tmp_path / "pod")
    assert {"images", "alembic_version", "metadef_namespaces"} <= tables(
        mariadb, schema, name, password
    )
    api.settle()  # the Job is Complete
    api.glance_pass(name)
    assert database(api, name)[:2] == ("True", "DatabaseSynced")

    # deletion (§2.10): the MariaDB resources go first, then the finalizer
    api.client.delete(GROUP_VERSION, "Glance", name, api.namespace)
    finalizing = api.glance_pass(name)
    assert finalizing.step_actions == [GATHER, APPLY, REPORT]
    assert finalizing.requeue_after == 30
    assert mariadb_resources(api) == set()
    assert api.get("Glance", name) is not None  # still held by the finalizer
    api.glance_pass(name)
    assert api.get("Glance", name) is None
    reasons = [e["reason"] for e in api.list("Event") if e["involvedObject"]["name"] == name]
    assert "FinalizingDatabase" in reasons and "DatabaseFinalized" in reasons


def test_dynamic_credentials_only_the_database_is_managed_and_db_sync_runs_as_the_secret_user(
    api, mariadb, tmp_path
):
    name, schema = "dynimages", "dynimages_managed"
    user, password = "v_dyn_glance_1", "issued-pw-1"
    # What a credentials engine (OpenBao's database engine) would have done: a user with
    # rights on the database, written into the Secret.
    mariadb.root_sql(
        "credentials-engine",
        f"CREATE USER '{user}'@'%' IDENTIFIED BY '{password}'; "
        f"GRANT ALL PRIVILEGES ON `{schema}`.* TO '{user}'@'%';",
    )
    docs = managed_documents(name, schema, mariadb.mariadb_port, username=user, password=password)
    docs[0]["spec"]["database"]["credentialsMode"] = "Dynamic"
    api.create_all(docs)
    create_mariadb(api)
    operator.set_ready(
        api.client, "MariaDB", api.client.get(API, "MariaDB", "mariadb", api.namespace)
    )

    api.glance_pass(name)
    assert mariadb_resources(api) == {"Database dynimages"}
    assert operator.reconcile(api.client, api.namespace, mariadb) == ["Database dynimages"]
    api.glance_pass(name)
    assert mariadb_resources(api) == {"Database dynimages"}  # no User, no Grant
    assert database(api, name)[1] == "DBSyncInProgress"
    run_db_sync(api, mariadb, name, tmp_path / "pod")
    assert "alembic_version" in tables(mariadb, schema, user, password)
    api.settle()
    api.glance_pass(name)
    assert database(api, name)[:2] == ("True", "DatabaseSynced")
