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

The add-ons stay installed for test_with_secrets_from_openbao.py, which runs next and
removes them with ``make cluster-addons-down``; the node's teardown removes them otherwise.
"""

from __future__ import annotations

import secrets
from typing import Any

import pytest

from cluster.conftest import wait_until
from cluster.objects import apply, conditions, get

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
