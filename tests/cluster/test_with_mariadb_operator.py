"""The real mariadb-operator on the node: ``make cluster-addons`` (mariadb-operator v25.10.2
from its Go module and its two charts, a ``MariaDB`` ``mariadb`` in ``databases`` on Debian's
server), as docs/cluster.md "MariaDB from mariadb-operator" shows it. No test writes a
status of mariadb-operator's kinds: its controller does.

1. ``make cluster-addons`` says mariadb-operator is installed and its MariaDB Ready; the
   operator's controller, webhook and cert-controller run; the doc's ``SELECT VERSION()``
   answers as root in the MariaDB's pod.
2. A ``Database``, a ``User`` (its password from a Secret) and a ``Grant``, as the reference
   has mariadb-operator make Glance's: each Ready from the real controller, and the user
   reaches its database over TCP with that password and no other.
3. A ``User`` naming no MariaDB is refused by the CRDs of mariadb-operator's chart (the
   API server's schema check, before its webhook is asked).
4. A managed-database Glance (config/samples/glance_managed.yaml, pointed at the tier's
   Keystone and S3) in namespace ``managed-db``, applied before its MariaDB exists: it says
   ``ClusterNotReady`` and asks for nothing; the ``MariaDB`` made there by the real
   controller wakes it (the operator's log names the MariaDB's event), its Database, User
   and Grant are made Ready by the controller, db-sync runs as the user the controller
   made with the Secret's password (its tables seen as that user), and the Glance's API
   reads its database. The pods find ``mariadb.managed-db.svc`` through the cluster DNS.
5. The password rotated in the Secret: mariadb-operator sets it on the user (the old one
   is refused), the pods roll, the API answers.
6. A second Glance with ``credentialsMode: Dynamic`` on the same MariaDB: a Database alone
   is asked for, and db-sync runs as the Secret's user (made as a credentials engine would).
7. The first Glance deleted: its Database, User and Grant go before it (the reference's
   events), and mariadb-operator drops its database and user; the second Glance's stay.

The add-ons stay installed for test_with_secrets_from_openbao.py, which runs next and
removes them with ``make cluster-addons-down``; the node's teardown removes them otherwise.
"""

from __future__ import annotations

import secrets
from typing import Any

import pytest
import yaml
from e2e.stack import DEMO_PASSWORD, GLANCE_PASSWORD, S3_ACCESS_KEY, S3_SECRET_KEY, http

from cluster.conftest import OPERATOR_NAMESPACE, RELEASE, ROOT, wait_until
from cluster.objects import (
    apply,
    conditions,
    get,
    glance_pods,
    json_lines,
    pod_ready,
    status_report,
)

pytestmark = pytest.mark.cluster

SECTION = "MariaDB from mariadb-operator"
DATABASES = "databases"
NAME = "glance_mdb"  # this module's database and user
PASSWORD_SECRET = "glance-mdb-password"
STEP_TIMEOUT = 180


def mariadb_sql(node, sql: str, user: str = "root", password: str | None = None):
    """``sql`` through the ``mariadb`` client in the MariaDB's pod, over TCP (as a client
    from another pod would), as ``user`` (root: the pod's own root password)."""
    secret = '"$MARIADB_ROOT_PASSWORD"' if password is None else f"'{password}'"
    command = f'mariadb -h 127.0.0.1 -u{user} -p{secret} -N -e "{sql}"'
    return node.kubectl(
        "-n", DATABASES, "exec", "mariadb-0", "--", "sh", "-c", command, check=False
    )  # fmt: skip


def ready(node, kind: str, name: str) -> dict[str, Any]:
    return conditions(get(node, f"{kind}.k8s.mariadb.com", name, "-n", DATABASES)).get("Ready", {})


@pytest.fixture(scope="module")
def addons(shell, node, operator, say) -> list[str]:
    """``make cluster-addons`` as the doc shows it; its lines."""
    done = shell.ok("make cluster-addons", SECTION)
    say(f"[mariadb-operator] make cluster-addons:\n{done.stdout}{(done.stderr or '')[-1500:]}")
    return done.stdout.strip().splitlines()


def test_the_addons_install_mariadb_operator_and_a_ready_mariadb(shell, node, addons):
    found = [line for line in addons if line.startswith("mariadb-operator: ")]
    assert found == [
        "mariadb-operator: v25.10.2 (helm release mariadb-operator in mariadb-operator); "
        "MariaDB databases/mariadb Ready"
    ], addons
    for deployment in ("mariadb-operator", "mariadb-operator-webhook",
                       "mariadb-operator-cert-controller"):  # fmt: skip
        got = get(node, "deployment", deployment, "-n", "mariadb-operator")
        assert got["status"].get("readyReplicas") == 1, got["status"]
    cond = ready(node, "mariadb", "mariadb")
    assert cond.get("status") == "True", cond
    shown = shell.ok("kubectl -n databases get mariadb mariadb", SECTION).stdout
    assert "mariadb" in shown and "True" in shown, shown
    version = shell.ok("kubectl -n databases exec mariadb-0 --", SECTION).stdout
    assert "MariaDB" in version, version


def test_the_real_controller_makes_a_database_a_user_and_a_grant(node, addons, say):
    password = secrets.token_hex(12)
    ref = {"name": "mariadb"}
    objects = [
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": PASSWORD_SECRET, "namespace": DATABASES},
            "stringData": {"password": password},
        },
        {
            "apiVersion": "k8s.mariadb.com/v1alpha1",
            "kind": "Database",
            "metadata": {"name": NAME.replace("_", "-"), "namespace": DATABASES},
            "spec": {
                "mariaDbRef": ref,
                "name": NAME,
                "characterSet": "utf8",
                "collate": "utf8_general_ci",
            },
        },
        {
            "apiVersion": "k8s.mariadb.com/v1alpha1",
            "kind": "User",
            "metadata": {"name": NAME.replace("_", "-"), "namespace": DATABASES},
            "spec": {
                "mariaDbRef": ref,
                "name": NAME,
                "passwordSecretKeyRef": {"name": PASSWORD_SECRET, "key": "password"},
                "host": "%",
            },
        },
        {
            "apiVersion": "k8s.mariadb.com/v1alpha1",
            "kind": "Grant",
            "metadata": {"name": NAME.replace("_", "-"), "namespace": DATABASES},
            "spec": {
                "mariaDbRef": ref,
                "privileges": ["ALL PRIVILEGES"],
                "database": NAME,
                "table": "*",
                "username": NAME,
                "host": "%",
            },
        },
    ]
    apply(node, objects)
    for kind in ("database", "user", "grant"):
        cond = wait_until(
            f"the {kind} Ready",
            lambda kind=kind: (
                (c := ready(node, kind, NAME.replace("_", "-"))).get("status") == "True" and c
            ),
            STEP_TIMEOUT,
        )
        say(f"[mariadb-operator] {kind}: {cond.get('reason')}: {cond.get('message')}")
    done = mariadb_sql(node, "SELECT DATABASE()", user=NAME, password=password)
    assert done.returncode == 0, done.stderr
    tables = mariadb_sql(node, f"CREATE TABLE {NAME}.t (i INT)", user=NAME, password=password)
    assert tables.returncode == 0, tables.stderr
    wrong = mariadb_sql(node, "SELECT 1", user=NAME, password="not-" + password)
    assert wrong.returncode != 0 and "Access denied" in wrong.stderr, wrong.stderr
    charset = mariadb_sql(
        node,
        f"SELECT DEFAULT_CHARACTER_SET_NAME FROM information_schema.SCHEMATA "
        f"WHERE SCHEMA_NAME = '{NAME}'",
    )
    assert charset.stdout.strip() in ("utf8", "utf8mb3"), charset.stdout + charset.stderr


def test_a_user_naming_no_mariadb_is_refused_by_its_crds_schema(node, addons):
    user = {
        "apiVersion": "k8s.mariadb.com/v1alpha1",
        "kind": "User",
        "metadata": {"name": "no-mariadb", "namespace": DATABASES},
        "spec": {"name": "x", "host": "%"},
    }
    done = apply(node, [user], check=False)
    assert done.returncode != 0, done.stdout
    assert 'The User "no-mariadb" is invalid: spec.mariaDbRef: Required value' in done.stderr, (
        done.stderr
    )


# -- a managed-database Glance on the real mariadb-operator ------------------------------------

MANAGED = "managed-db"  # the namespace of the MariaDB and the Glances on it
MANAGED_SAMPLE = ROOT / "config" / "samples" / "glance_managed.yaml"
STATIC, DYNAMIC = "glance", "dynglance"  # the two Glances; their databases are <name>_db
DYNAMIC_USER = "v_dynglance_1"  # what a credentials engine would have made
READY_TIMEOUT = 600
OURS = "app.kubernetes.io/managed-by=glance-operator"


def managed_documents(services, name: str, db_secret: dict[str, str]) -> list[dict[str, Any]]:
    """config/samples/glance_managed.yaml as the Glance ``name`` in ``MANAGED``, its objects
    prefixed with ``name``, pointed at the services' addresses (Keystone, S3; one replica);
    ``db_secret`` is the database Secret's data."""
    out = []
    for doc in yaml.safe_load_all(MANAGED_SAMPLE.read_text()):
        if not doc:
            continue
        meta, kind = doc["metadata"], doc["kind"]
        meta["namespace"] = MANAGED
        spec = doc.get("spec") or {}
        if kind == "Glance":
            meta["name"] = name
            spec["openStackRelease"] = RELEASE
            spec["image"]["tag"] = RELEASE
            spec["deployment"] = {"replicas": 1}
            spec["database"]["database"] = f"{name}_db"
            spec["database"]["secretRef"]["name"] = f"{name}-db"
            spec["keystoneEndpoint"] = services.keystone_url
            spec["cache"]["servers"] = [f"{services.host}:{services.memcached_port}"]
            spec["serviceUser"]["secretRef"]["name"] = f"{name}-service-user"
        elif kind == "GlanceBackend":
            meta["name"] = f"{name}-s3"
            spec["glanceRef"]["name"] = name
            spec["s3"].update(host=services.s3_url, bucket=services.bucket)
            spec["s3"]["credentialsSecretRef"]["name"] = f"{name}-s3"
        else:
            meta["name"] = meta["name"].replace("glance", name, 1)
            doc["stringData"] = {
                f"{name}-db": db_secret,
                f"{name}-service-user": {"password": GLANCE_PASSWORD},
                f"{name}-s3": {"access-key-id": S3_ACCESS_KEY, "secret-access-key": S3_SECRET_KEY},
            }[meta["name"]]
        out.append(doc)
    return out


def managed_sql(node, sql: str, user: str = "root", password: str | None = None):
    """``sql`` in the managed namespace's MariaDB, as ``mariadb_sql`` does in ``databases``."""
    secret = '"$MARIADB_ROOT_PASSWORD"' if password is None else f"'{password}'"
    command = f'mariadb -h 127.0.0.1 -u{user} -p{secret} -N -B -e "{sql}"'
    return node.kubectl(
        "-n", MANAGED, "exec", "mariadb-0", "--", "sh", "-c", command, check=False
    )  # fmt: skip


def database_condition(node, name: str) -> tuple[str, str, str]:
    found = conditions(get(node, "glance", name, "-n", MANAGED)).get("DatabaseReady", {})
    return found.get("status"), found.get("reason"), found.get("message")


def mariadb_resources(node, selector: str = OURS) -> dict[str, dict[str, Any]]:
    """The namespace's Databases, Users and Grants by ``<Kind> <name>``: the Glance
    operator's (by default; mariadb-operator makes a User and Grants of its own for each
    MariaDB), or those ``selector`` selects."""
    found = get(node, "databases.k8s.mariadb.com,users.k8s.mariadb.com,grants.k8s.mariadb.com",
                "-n", MANAGED, "-l", selector)  # fmt: skip
    return {f"{o['kind']} {o['metadata']['name']}": o for o in found["items"]}


def glance_ready(node, name: str) -> dict[str, Any] | None:
    found = get(node, "glance", name, "-n", MANAGED)
    pods = glance_pods(node, MANAGED, name)
    ok = conditions(found).get("Ready", {}).get("status") == "True"
    return found if ok and pods and all(pod_ready(p) for p in pods) else None


def images_answer(node, services, name: str) -> bool:
    """The Glance ``name``'s API lists images: a request that reads its database."""
    found = get(node, "services", "-n", MANAGED, "-l", f"app.kubernetes.io/instance={name}")
    api = [s for s in found["items"] if any(p["port"] == 9292 for p in s["spec"]["ports"])]
    url = f"http://{api[0]['spec']['clusterIP']}:9292/v2/images"
    token = services.keystone_token("demo", DEMO_PASSWORD, "demo")
    return http("GET", url, headers={"X-Auth-Token": token}).status == 200


def operator_passes(node, name: str) -> list[dict[str, Any]]:
    """The operator's ``pass started`` log records of the Glance ``name``."""
    logs = node.kubectl(
        "logs", "-n", OPERATOR_NAMESPACE, "-l", "control-plane=controller-manager", "--tail=-1"
    ).stdout  # fmt: skip
    return [
        r
        for r in json_lines(logs)
        if r.get("key") == f"{MANAGED}/{name}" and r.get("msg") == "pass started"
    ]


def managed_report(node) -> str:
    """mariadb-operator's kinds in the managed namespace with their status, its events and
    the controller's log tail: for the log."""
    kinds = ["mariadbs", "databases", "users", "grants"]
    listing = ",".join(f"{kind}.k8s.mariadb.com" for kind in kinds)
    return status_report(
        node, MANAGED, [(listing, "-n", MANAGED)], [("mariadb-operator", "mariadb-operator")], 60
    )


@pytest.fixture(scope="module")
def managed(node, services, operator, addons, say) -> dict[str, Any]:
    """The managed sample applied before its MariaDB exists, then the MariaDB made by the
    real controller, until the Glance is Ready: what was seen on the way."""
    seen: dict[str, Any] = {"password": secrets.token_hex(16)}
    node.kubectl("create", "namespace", MANAGED, check=False)
    apply(node, managed_documents(services, STATIC, {"password": seen["password"]}))
    seen["no cluster"] = wait_until(
        "ClusterNotReady without a MariaDB",
        lambda: (c := database_condition(node, STATIC))[1] == "ClusterNotReady" and c,
        STEP_TIMEOUT,
    )
    seen["asked before the MariaDB"] = sorted(mariadb_resources(node))
    image = get(node, "mariadb", "mariadb", "-n", DATABASES)["spec"]["image"]
    root = secrets.token_hex(16)
    apply(
        node,
        [
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "mariadb-root", "namespace": MANAGED},
                "stringData": {"password": root},
            },
            {
                "apiVersion": "k8s.mariadb.com/v1alpha1",
                "kind": "MariaDB",
                "metadata": {"name": "mariadb", "namespace": MANAGED},
                "spec": {
                    "image": image,
                    "imagePullPolicy": "IfNotPresent",
                    "rootPasswordSecretKeyRef": {"name": "mariadb-root", "key": "password"},
                    "storage": {"ephemeral": True},
                },
            },
        ],
    )
    try:
        seen["glance"] = wait_until(
            "the managed Glance Ready", lambda: glance_ready(node, STATIC), READY_TIMEOUT, 2
        )
    finally:
        say("[managed] the Glance:\n" + managed_report(node))
    return seen


def test_a_managed_glance_waits_for_its_mariadb_and_the_watch_releases_it(node, managed):
    assert managed["no cluster"] == (
        "False",
        "ClusterNotReady",
        'MariaDB cluster "mariadb" is not ready',
    )
    assert managed["asked before the MariaDB"] == []  # nothing of the database is asked for
    woken = [w for r in operator_passes(node, STATIC) for w in r.get("woken_by") or []]
    assert any(w.startswith("database's ") and "MariaDB" in w for w in woken), woken
    # mariadb-operator was installed after the operator: its kinds are watched since then
    assert any(w.startswith("dependent MODIFIED Database") for w in woken), woken
    assert database_condition(node, STATIC)[:2] == ("True", "DatabaseSynced")


def test_the_real_controller_makes_the_database_user_and_grant_and_db_sync_runs_as_the_user(
    node, services, managed
):
    resources = mariadb_resources(node)
    assert sorted(resources) == [f"Database {STATIC}", f"Grant {STATIC}", f"User {STATIC}"]
    glance = managed["glance"]
    for obj in resources.values():
        assert conditions(obj)["Ready"]["status"] == "True", obj.get("status")
        owners = obj["metadata"]["ownerReferences"]
        assert [(o["kind"], o["uid"]) for o in owners] == [("Glance", glance["metadata"]["uid"])]
    # the user mariadb-operator made, with the Secret's password, sees the schema db-sync made
    tables = managed_sql(node, f"SHOW TABLES FROM {STATIC}_db", STATIC, managed["password"])
    assert tables.returncode == 0, tables.stderr
    assert {"images", "alembic_version", "metadef_namespaces"} <= set(tables.stdout.split())
    job = get(node, "job", f"{STATIC}-db-sync", "-n", MANAGED)
    assert job["status"].get("succeeded") == 1, job["status"]
    assert wait_until("the API answers", lambda: images_answer(node, services, STATIC), 60, 2)


def test_a_password_rotated_in_the_secret_reaches_the_user_then_the_pods(
    node, services, managed, say
):
    before = {p["metadata"]["uid"] for p in glance_pods(node, MANAGED, STATIC)}
    rotated = secrets.token_hex(16)
    docs = managed_documents(services, STATIC, {"password": rotated})
    apply(node, [d for d in docs if d["metadata"]["name"] == f"{STATIC}-db"])

    def rolled():
        pods = glance_pods(node, MANAGED, STATIC)
        fresh = pods and not {p["metadata"]["uid"] for p in pods} & before
        return fresh and glance_ready(node, STATIC)

    try:
        wait_until("new API pods Ready with the rotated password", rolled, READY_TIMEOUT, 2)
        login = wait_until(
            "mariadb-operator sets the rotated password",
            lambda: (d := managed_sql(node, "SELECT 1", STATIC, rotated)).returncode == 0 and d,
            STEP_TIMEOUT,
        )
        assert login.stdout.strip() == "1"
        assert wait_until(
            "the API answers with the rotated password",
            lambda: images_answer(node, services, STATIC),
            60,
            2,
        )
    finally:
        say("[managed] rotated:\n" + managed_report(node))
    old = managed_sql(node, "SELECT 1", STATIC, managed["password"])
    assert old.returncode != 0 and "Access denied" in old.stderr, old.stdout + old.stderr


def test_dynamic_credentials_only_the_database_is_asked_for_and_db_sync_runs_as_the_secret_user(
    node, services, managed, say
):
    password = secrets.token_hex(16)
    # What a credentials engine (OpenBao's database engine) does: a user with rights on
    # the database, written into the Secret.
    made = managed_sql(
        node,
        f"CREATE USER '{DYNAMIC_USER}'@'%' IDENTIFIED BY '{password}'; "
        f"GRANT ALL PRIVILEGES ON {DYNAMIC}_db.* TO '{DYNAMIC_USER}'@'%';",
    )
    assert made.returncode == 0, made.stderr
    docs = managed_documents(services, DYNAMIC, {"username": DYNAMIC_USER, "password": password})
    docs[0]["spec"]["database"]["credentialsMode"] = "Dynamic"
    apply(node, docs)
    try:
        wait_until(
            "the Dynamic Glance Ready", lambda: glance_ready(node, DYNAMIC), READY_TIMEOUT, 2
        )
    finally:
        say("[managed] Dynamic:\n" + managed_report(node))
    ours = [k for k in mariadb_resources(node) if k.endswith(f" {DYNAMIC}")]
    assert ours == [f"Database {DYNAMIC}"]  # no User, no Grant
    tables = managed_sql(node, f"SHOW TABLES FROM {DYNAMIC}_db", DYNAMIC_USER, password)
    assert tables.returncode == 0, tables.stderr
    assert "alembic_version" in tables.stdout.split()
    assert wait_until("the API answers", lambda: images_answer(node, services, DYNAMIC), 60, 2)


def test_deleting_the_glance_removes_its_database_objects_first_then_the_finalizer(
    node, managed, say
):
    node.kubectl("-n", MANAGED, "delete", "glance", STATIC, "--wait=false")
    try:
        gone = node.kubectl(
            "-n", MANAGED, "wait", "glance", STATIC, "--for=delete", f"--timeout={STEP_TIMEOUT}s",
            check=False,
        )  # fmt: skip
        assert gone.returncode == 0, gone.stdout + gone.stderr
    finally:
        say("[managed] deleted:\n" + managed_report(node))
    left = [k for k in mariadb_resources(node) if k.endswith(f" {STATIC}")]
    assert left == []
    events = get(node, "events", "-n", MANAGED, "--field-selector",
                 f"involvedObject.name={STATIC},involvedObject.kind=Glance")  # fmt: skip
    reasons = [e["reason"] for e in sorted(events["items"], key=lambda e: e["metadata"]["name"])]
    assert "FinalizingDatabase" in reasons and "DatabaseFinalized" in reasons, reasons
    # what mariadb-operator did on the deletions (its cleanupPolicy Delete, the default):
    # the database and the user are gone from the server; the other Glance's stays
    schemas = managed_sql(node, "SHOW DATABASES").stdout.split()
    assert f"{STATIC}_db" not in schemas and f"{DYNAMIC}_db" in schemas, schemas
    users = managed_sql(node, "SELECT User FROM mysql.user").stdout.split()
    assert STATIC not in users and DYNAMIC_USER in users, users
