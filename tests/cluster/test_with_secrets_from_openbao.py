"""A Glance whose Secrets come from OpenBao through the real external-secrets: ``make
cluster-addons`` (external-secrets v0.16.2 from its Go module and chart, an OpenBao dev
server, the reference's ClusterSecretStore ``openbao-cluster-store``), as docs/cluster.md
"Secrets from OpenBao" shows it. No test writes a status of external-secrets' kinds: their
controller does.

1. ``make cluster-addons`` installs external-secrets and OpenBao and the store is Ready
   (cert-manager and mariadb-operator, installed too, are test_with_cert_manager.py's and
   test_with_mariadb_operator.py's; ``make cluster-addons-down`` at the end must leave
   none of them). The doc's ``bao kv put`` lands in OpenBao, and an ExternalSecret
   naming that key gets a Secret with its values.
2. A Glance naming no store (the default store exists, so it is gated) with no credential
   Secrets: the gate's messages come in the order docs/secrets.md gives, each held until
   the next thing is there - no ExternalSecret, the ExternalSecrets not synced (the keys
   are not in OpenBao yet; external-secrets says why on them), the database's synced and
   the service user's not, both synced - and the Glance becomes Ready with the credentials
   from OpenBao (a database user of this module's own).
3. Rotation: the database user's password changed in MariaDB and then in OpenBao reaches
   the Secret (external-secrets' refresh), then the pods (they roll), and the API answers
   from the database with the new password.
4. OpenBao gone: external-secrets marks the store not Ready and the Glance says
   ``SecretStoreNotReady`` in the reference's words, with its running pods untouched;
   OpenBao back (a dev server starts empty: the Secrets external-secrets wrote stay), the
   store is Ready again and so is the Glance.

The module runs late in the tier, after test_operator.py (the kustomize install it shares)
and test_the_gateway.py, so that external-secrets' build (the largest, in hack/prebuild.py's
background) overlaps the modules before it. When it ends, external-secrets' and OpenBao's
logs go to the log and ``make cluster-addons-down`` removes everything it installed.
"""

from __future__ import annotations

import base64
import secrets
from typing import Any

import pytest
from e2e.stack import DEMO_PASSWORD, GLANCE_PASSWORD, http

from cluster.conftest import wait_until
from cluster.objects import (
    apply,
    conditions,
    get,
    glance_pods,
    pod_ready,
    sample_documents,
    status_report,
)

pytestmark = pytest.mark.cluster

SECTION = "Secrets from OpenBao"
NAMESPACE = "openbao-glance"
GLANCE = "glance"
DATABASE = "glance_openbao"
DB_USER = "glance_openbao"  # this module's own: rotating it touches no other module's Glance
STORE = "openbao-cluster-store"
ESO_NAMESPACE = "external-secrets"
KV_PREFIX = "openbao-glance"  # this module's keys in OpenBao's secret/ mount
DB_SECRET, SERVICE_SECRET = "glance-db", "glance-service-user"
REFRESH = "5s"  # the ExternalSecrets' refreshInterval
STEP_TIMEOUT = 180
READY_TIMEOUT = 600


def bao(node, *args: str) -> str:
    """``bao`` in the OpenBao pod, as docs/cluster.md runs it (the pod has its address and
    token)."""
    done = node.kubectl("-n", "openbao", "exec", "deploy/openbao", "--", "bao", *args)
    return done.stdout


def put_db_credentials(node, password: str) -> None:
    """The database user's name and ``password`` into OpenBao, where the ExternalSecret
    ``glance-db`` reads them."""
    bao(
        node,
        "kv",
        "put",
        "-mount=secret",
        f"{KV_PREFIX}/db",
        f"username={DB_USER}",
        f"password={password}",
    )


def glance(node) -> dict[str, Any]:
    return get(node, "glance", GLANCE, "-n", NAMESPACE)


def secrets_ready(node) -> tuple[str, str, str]:
    cond = conditions(glance(node)).get("SecretsReady", {})
    return cond.get("status", ""), cond.get("reason", ""), cond.get("message", "")


def secret_values(node, name: str) -> dict[str, str]:
    found = get(node, "secret", name, "-n", NAMESPACE)
    return {k: base64.b64decode(v).decode() for k, v in (found.get("data") or {}).items()}


def external_secret(name: str, keys: dict[str, tuple[str, str]]) -> dict[str, Any]:
    """An ExternalSecret ``name`` from the default store: {Secret key: (OpenBao key, its
    property)}."""
    return {
        "apiVersion": "external-secrets.io/v1",
        "kind": "ExternalSecret",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "refreshInterval": REFRESH,
            "secretStoreRef": {"kind": "ClusterSecretStore", "name": STORE},
            "target": {"name": name},
            "data": [
                {"secretKey": key, "remoteRef": {"key": path, "property": prop}}
                for key, (path, prop) in keys.items()
            ],
        },
    }


def eso_ready(node, name: str) -> dict[str, Any]:
    found = get(node, "externalsecret", name, "-n", NAMESPACE)
    return conditions(found).get("Ready", {})


def report(node) -> str:
    """external-secrets' kinds with their status, the namespace's events, its controllers'
    and OpenBao's log tails: for the log."""
    return status_report(
        node,
        NAMESPACE,
        [("clustersecretstores",), ("externalsecrets", "-n", NAMESPACE)],
        [
            (ESO_NAMESPACE, "external-secrets"),
            (ESO_NAMESPACE, "external-secrets-webhook"),
            (ESO_NAMESPACE, "external-secrets-cert-controller"),
            ("openbao", "openbao"),
        ],
    )


@pytest.fixture(scope="module")
def addons(shell, node, operator, say):
    """``make cluster-addons`` as the doc shows it; its lines."""
    done = shell.ok("make cluster-addons", SECTION)
    lines = done.stdout.strip().splitlines()
    say(f"[addons] make cluster-addons:\n{done.stdout}{(done.stderr or '')[-1500:]}")
    try:
        yield lines
    finally:
        say("[addons] at the end:\n" + report(node))
        removed = node.kubectl(
            "delete", "namespace", NAMESPACE, "--ignore-not-found", "--timeout=300s", check=False
        )
        say(f"[addons] namespace {NAMESPACE} deleted: {removed.returncode == 0}")
        down = shell.run("make cluster-addons-down", SECTION)
        say(f"[addons] uninstalled: {down.returncode}: {down.stderr.strip()[-600:]}")
        assert down.returncode == 0, down.stdout + down.stderr
        left = node.kubectl("get", "crd", "-o", "name").stdout
        for group in ("external-secrets.io", "cert-manager.io", "k8s.mariadb.com"):
            assert group not in left, left
        namespaces = node.kubectl("get", "namespaces", "-o", "name").stdout.split()
        for gone in (
            "external-secrets",
            "openbao",
            "cert-manager",
            "mariadb-operator",
            "databases",
        ):
            assert f"namespace/{gone}" not in namespaces, namespaces


def test_the_addons_install_says_what_it_could_not_and_the_store_is_ready(node, addons):
    assert addons[0].startswith("external-secrets: v0.16.2 "), addons
    assert addons[1].startswith("openbao: 2.7.2 dev server at http://10.96.0.11:8200 "), addons
    assert not [line for line in addons if "not installed: " in line], addons
    store = get(node, "clustersecretstore", STORE)
    ready = conditions(store)["Ready"]
    assert (ready["status"], ready["reason"]) == ("True", "Valid"), store["status"]
    webhook = get(node, "validatingwebhookconfiguration", "secretstore-validate")
    bundles = [w["clientConfig"].get("caBundle") for w in webhook["webhooks"]]
    assert all(bundles), "the cert-controller has not injected the webhook's CA"


def test_the_docs_secret_reaches_a_secret_through_an_external_secret(shell, node, addons):
    node.kubectl("create", "namespace", NAMESPACE, check=False)
    shell.ok("kubectl -n openbao exec deploy/openbao -- bao kv put", SECTION)
    shown = shell.ok("kubectl -n openbao exec deploy/openbao -- bao kv get", SECTION).stdout
    assert "username" in shown and "glance" in shown, shown
    password = bao(node, "kv", "get", "-mount=secret", "-field=password", "glance/db").strip()
    assert len(password) == 32, "the doc's password is 16 random bytes in hex"
    keys = {"username": ("glance/db", "username"), "password": ("glance/db", "password")}
    apply(node, [external_secret("doc-db", keys)])
    synced = wait_until(
        "the doc's key synced into Secret doc-db",
        lambda: (
            node.kubectl("get", "secret", "doc-db", "-n", NAMESPACE, check=False).returncode == 0
            and secret_values(node, "doc-db")
        ),
        STEP_TIMEOUT,
        1,
    )
    assert synced == {"username": "glance", "password": password}
    assert eso_ready(node, "doc-db")["status"] == "True"


@pytest.fixture(scope="module")
def gated(node, services, addons, say) -> dict[str, Any]:
    """A Glance without its credential Secrets, brought to Ready step by step; the
    SecretsReady (status, reason, message) seen at each step, and external-secrets' own
    Ready condition on the database's ExternalSecret while its key was missing."""
    password = secrets.token_hex(16)
    services.root_sql(
        "openbao-db-user",
        f"CREATE DATABASE IF NOT EXISTS {DATABASE} CHARACTER SET utf8 COLLATE utf8_general_ci; "
        f"CREATE USER IF NOT EXISTS '{DB_USER}'@'%' IDENTIFIED BY '{password}'; "
        f"GRANT ALL PRIVILEGES ON {DATABASE}.* TO '{DB_USER}'@'%';",
    )
    node.kubectl("create", "namespace", NAMESPACE, check=False)
    docs = [
        d
        for d in sample_documents(services, NAMESPACE, replicas=1, database=DATABASE)
        if not (d["kind"] == "Secret" and d["metadata"]["name"] in (DB_SECRET, SERVICE_SECRET))
    ]
    seen: list[tuple[str, str, str]] = []

    def step(what: str, reason: str, message: str) -> None:
        def there():
            found = secrets_ready(node)
            return found if found[1:] == (reason, message) else None

        seen.append(wait_until(what, there, STEP_TIMEOUT, 1))
        say(f"[addons] {what}: {seen[-1]}")

    apply(node, docs)
    step(
        "no ExternalSecret yet",
        "WaitingForDBCredentials",
        f"Database credentials ExternalSecret {NAMESPACE}/{DB_SECRET} not found yet",
    )
    db_keys = {
        "username": (f"{KV_PREFIX}/db", "username"),
        "password": (f"{KV_PREFIX}/db", "password"),
    }
    service_keys = {"password": (f"{KV_PREFIX}/service-user", "password")}
    apply(
        node, [external_secret(DB_SECRET, db_keys), external_secret(SERVICE_SECRET, service_keys)]
    )
    step(
        "ExternalSecrets not synced",
        "WaitingForDBCredentials",
        "Waiting for ESO to sync database credentials from OpenBao",
    )
    unsynced = wait_until(
        "external-secrets says why the database's ExternalSecret is not synced",
        lambda: (c := eso_ready(node, DB_SECRET)).get("status") == "False" and c,
        STEP_TIMEOUT,
        1,
    )
    put_db_credentials(node, password)
    step(
        "the database's synced, the service user's not",
        "WaitingForServiceUserCredentials",
        "Waiting for ESO to sync the Glance service-user password from OpenBao",
    )
    bao(
        node,
        "kv",
        "put",
        "-mount=secret",
        f"{KV_PREFIX}/service-user",
        f"password={GLANCE_PASSWORD}",
    )

    def ready():
        found = glance(node)
        pods = glance_pods(node, NAMESPACE, GLANCE)
        ok = conditions(found).get("Ready", {}).get("status") == "True"
        return found if ok and pods and all(pod_ready(p) for p in pods) else None

    found = wait_until(
        "the Glance Ready with its credentials from OpenBao", ready, READY_TIMEOUT, 2
    )
    seen.append(secrets_ready(node))
    say("[addons] Ready:\n" + report(node))
    return {"seen": seen, "unsynced": unsynced, "glance": found, "password": password}


def test_the_gate_follows_external_secrets_sync_in_the_documented_order(node, gated):
    reasons = [reason for _, reason, _ in gated["seen"]]
    assert reasons == [
        "WaitingForDBCredentials",
        "WaitingForDBCredentials",
        "WaitingForServiceUserCredentials",
        "SecretsAvailable",
    ], gated["seen"]
    assert [status for status, _, _ in gated["seen"]] == ["False", "False", "False", "True"]
    # external-secrets' own words while the key was missing, written by its controller
    assert gated["unsynced"]["reason"] == "SecretSyncedError", gated["unsynced"]
    assert secret_values(node, DB_SECRET) == {"username": DB_USER, "password": gated["password"]}
    assert secret_values(node, SERVICE_SECRET) == {"password": GLANCE_PASSWORD}
    owner = get(node, "secret", DB_SECRET, "-n", NAMESPACE)["metadata"]["ownerReferences"]
    assert [(o["kind"], o["name"]) for o in owner] == [("ExternalSecret", DB_SECRET)], owner


def api_answers(node, services) -> bool:
    """The API lists images: a request that reads Glance's database."""
    found = get(node, "services", "-n", NAMESPACE, "-l", f"app.kubernetes.io/instance={GLANCE}")
    api = [s for s in found["items"] if any(p["port"] == 9292 for p in s["spec"]["ports"])]
    url = f"http://{api[0]['spec']['clusterIP']}:9292/v2/images"
    token = services.keystone_token("demo", DEMO_PASSWORD, "demo")
    return http("GET", url, headers={"X-Auth-Token": token}).status == 200


def test_a_password_rotated_in_openbao_reaches_the_secret_then_the_pods(node, services, gated, say):
    before = {p["metadata"]["uid"] for p in glance_pods(node, NAMESPACE, GLANCE)}
    assert api_answers(node, services)
    rotated = secrets.token_hex(16)
    services.root_sql("openbao-db-rotate", f"ALTER USER '{DB_USER}'@'%' IDENTIFIED BY '{rotated}';")
    put_db_credentials(node, rotated)
    wait_until(
        "the rotated password in the Secret",
        lambda: secret_values(node, DB_SECRET).get("password") == rotated,
        STEP_TIMEOUT,
        1,
    )

    def rolled():
        pods = glance_pods(node, NAMESPACE, GLANCE)
        uids = {p["metadata"]["uid"] for p in pods}
        ready = conditions(glance(node)).get("Ready", {}).get("status") == "True"
        fresh = pods and not uids & before and all(pod_ready(p) for p in pods)
        return uids if ready and fresh else None

    wait_until("new API pods Ready with the rotated password", rolled, READY_TIMEOUT, 2)
    assert wait_until(
        "the API answers from its database", lambda: api_answers(node, services), 60, 2
    )
    say("[addons] rotated:\n" + report(node))


def test_openbao_gone_holds_the_glance_without_touching_its_pods(node, gated, say):
    pods = {p["metadata"]["uid"] for p in glance_pods(node, NAMESPACE, GLANCE)}
    node.kubectl("-n", "openbao", "scale", "deployment/openbao", "--replicas=0")

    def store_not_ready():
        cond = conditions(get(node, "clustersecretstore", STORE)).get("Ready", {})
        return cond if cond.get("status") == "False" else None

    try:
        down = wait_until("the store not Ready", store_not_ready, STEP_TIMEOUT, 1)
        held = wait_until(
            "SecretStoreNotReady",
            lambda: (s := secrets_ready(node))[1] == "SecretStoreNotReady" and s,
            STEP_TIMEOUT,
            1,
        )
        say(f"[addons] OpenBao gone: store {down}; Glance {held}")
        assert held == (
            "False",
            "SecretStoreNotReady",
            f'ClusterSecretStore "{STORE}" is not ready; upstream secret backend unreachable',
        )
        running = glance_pods(node, NAMESPACE, GLANCE)
        assert {p["metadata"]["uid"] for p in running} == pods
        assert all(pod_ready(p) for p in running)
    finally:
        node.kubectl("-n", "openbao", "scale", "deployment/openbao", "--replicas=1")
    node.kubectl("-n", "openbao", "rollout", "status", "deployment/openbao", "--timeout=300s")
    wait_until(
        "the Glance Ready again",
        lambda: (
            secrets_ready(node)[0] == "True"
            and conditions(glance(node)).get("Ready", {}).get("status") == "True"
        ),
        STEP_TIMEOUT,
        1,
    )
    assert {p["metadata"]["uid"] for p in glance_pods(node, NAMESPACE, GLANCE)} == pods
    say("[addons] OpenBao back:\n" + report(node))
