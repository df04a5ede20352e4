"""``make diagnose`` on a Glance broken on purpose, on the one-node cluster (``make chaos``).

A Glance of its own (two replicas, two stores) on the operator installed in the cluster and
MariaDB, Keystone and the S3 server at the node's address. Each fault is made the way it
happens to users, ``make diagnose GLANCE=diagnose/glance`` is run as docs/operations.md
shows it (waiting, up to two minutes, for the cluster to show the fault), and the test
asserts the cause it names first and the fix it prints; then the fault is undone and the
Glance must be reported healthy again, with no finding, before the next:

1. Keystone no longer accepts the service user's password (changed in Keystone, not in
   the Secret): the Glance stays Ready, only the check from inside a pod sees it;
2. MariaDB no longer accepts Glance's database password (changed in the database);
3. MariaDB down (stopped, as a service stop does; started again on its data after);
4. the S3 server unreachable (its port refused on the node), then refusing the stores'
   secret key (moto told to check keys, the Secret's secret key changed);
5. the service user's Secret deleted: ``SecretsReady`` says so;
6. a policy override whose rule asks an HTTP endpoint that does not answer (500s);
7. an image tag that does not exist: the db-sync Job's pod cannot pull it (last: the
   Glance is left as it is and deleted with its namespace).

Each diagnosis is printed in full (``[diagnose] ...``).
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest
from e2e.stack import DB_PASSWORD, DB_USER, GLANCE_PASSWORD

from cluster import diagnosis
from cluster.conftest import wait_until
from cluster.objects import apply, conditions, get, sample_documents

pytestmark = [pytest.mark.cluster, pytest.mark.chaos]

NAMESPACE = "diagnose"
GLANCE = "glance"
REF = f"{NAMESPACE}/{GLANCE}"


def diagnose(node) -> dict[str, Any]:
    return diagnosis.diagnose(node, REF)


def named_first(node, cause: str, say) -> dict[str, Any]:
    return diagnosis.named_first(node, REF, cause, say)


def healthy_again(node, say) -> None:
    diagnosis.healthy_again(node, REF, say)


shown = diagnosis.shown


@pytest.fixture(scope="module")
def broken(node, operator, services, say):
    """The Glance, Ready and diagnosed healthy; deleted with its namespace at the end."""
    services.create_database("glance_diagnose")
    node.kubectl("create", "namespace", NAMESPACE, check=False)
    apply(node, sample_documents(services, NAMESPACE, database="glance_diagnose"))
    wait_until(
        "the Glance is Ready",
        lambda: (
            conditions(get(node, "glance", GLANCE, "-n", NAMESPACE)).get("Ready", {}).get("status")
            == "True"
        ),
        600,
        interval=2,
    )
    healthy_again(node, say)
    say(f"[diagnose] healthy:\n{shown(diagnose(node))}")
    yield services
    node.kubectl("delete", "namespace", NAMESPACE, "--timeout=300s", check=False)


def keystone_user(services, name: str) -> str:
    return services.keystone_admin("GET", f"/users?name={name}")["users"][0]["id"]


def test_a_service_user_password_keystone_no_longer_accepts(node, broken, say):
    user = keystone_user(broken, "glance")
    broken.keystone_admin("PATCH", f"/users/{user}", {"user": {"password": "rotated-elsewhere"}})
    try:
        report = named_first(node, "keystone-auth", say)
        first = report["findings"][0]
        assert first["subject"].endswith(" check keystone"), first
        assert first["fix"].startswith("make the service user's Secret hold the password")
        # The Glance itself says nothing is wrong: only the check from a pod sees it.
        ready = conditions(get(node, "glance", GLANCE, "-n", NAMESPACE))["Ready"]
        assert ready["status"] == "True"
    finally:
        broken.keystone_admin("PATCH", f"/users/{user}", {"user": {"password": GLANCE_PASSWORD}})
    healthy_again(node, say)


def test_a_database_password_mariadb_no_longer_accepts(node, broken, say):
    changed = broken.root_sql("diagnose-db", f"ALTER USER '{DB_USER}'@'%' IDENTIFIED BY 'rotated';")
    assert changed.returncode == 0, changed
    try:
        report = named_first(node, "db-auth", say)
        first = report["findings"][0]
        assert first["subject"].endswith(" check database"), first
        assert "Access denied for user" in first["detail"]
        assert "rotated" not in json.dumps(report)
    finally:
        restored = broken.root_sql(
            "diagnose-db", f"ALTER USER '{DB_USER}'@'%' IDENTIFIED BY '{DB_PASSWORD}';"
        )
        assert restored.returncode == 0, restored
    healthy_again(node, say)


def test_mariadb_down(node, broken, say):
    broken.stop_mariadb()
    try:
        report = named_first(node, "db-unreachable", say)
        first = report["findings"][0]
        assert first["subject"].endswith(" check database"), first
        assert first["fix"].startswith("check that MariaDB runs and that spec.database.host")
    finally:
        broken.start_mariadb_again()
    healthy_again(node, say)


def test_the_s3_server_unreachable(node, broken, say):
    rule = ["INPUT", "-p", "tcp", "-d", broken.host, "--dport", str(broken.moto_port), "-j",
            "REJECT", "--reject-with", "tcp-reset"]  # fmt: skip
    subprocess.run(["iptables", "-I", *rule], check=True)
    try:
        report = named_first(node, "s3-unreachable", say)
        stores = [f for f in report["findings"] if f["cause"] == "s3-unreachable"]
        assert len(stores) == 2, shown(report)  # both stores are on that server
    finally:
        subprocess.run(["iptables", "-D", *rule], check=True)
    healthy_again(node, say)


def s3_secret(data: dict[str, str], string: bool = True) -> list[dict[str, Any]]:
    """The stores' credentials Secret with ``data`` (as ``stringData``, or ``data``)."""
    meta = {"name": "glance-s3", "namespace": NAMESPACE}
    key = "stringData" if string else "data"
    return [{"apiVersion": "v1", "kind": "Secret", "metadata": meta, key: data}]


def test_an_s3_secret_key_the_server_refuses(node, broken, say):
    """moto checks no key unless told to: the stores get the key pair of a user of moto's
    own IAM, moto checks every request's key and signature from then on, and the Glance is
    diagnosed healthy on it; then the Secret's secret key is changed, as a rotation typed
    wrong would change it."""
    original = get(node, "secret", "glance-s3", "-n", NAMESPACE)["data"]
    key_id, secret = broken.s3_user("glance-diagnose")
    apply(node, s3_secret({"access-key-id": key_id, "secret-access-key": secret}))
    try:
        with broken.s3_checking_keys():
            healthy_again(node, say)  # the pods rolled to the new pair, which moto accepts
            apply(node, s3_secret({"access-key-id": key_id, "secret-access-key": "mistyped"}))
            report = named_first(node, "s3-auth", say)
        stores = [f for f in report["findings"] if f["cause"] == "s3-auth"]
        assert len(stores) == 2, shown(report)  # both stores use the Secret
        assert all("SignatureDoesNotMatch" in f["detail"] for f in stores), shown(report)
        assert stores[0]["fix"].startswith("make the GlanceBackend's credentials Secret hold")
        assert secret not in json.dumps(report) and "mistyped" not in json.dumps(report)
    finally:
        apply(node, s3_secret(original, string=False))
    healthy_again(node, say)


def test_the_service_users_secret_deleted(node, broken, say):
    secret = get(node, "secret", "glance-service-user", "-n", NAMESPACE)
    node.kubectl("delete", "secret", "glance-service-user", "-n", NAMESPACE)
    try:
        report = named_first(node, "service-user-secret", say)
        first = report["findings"][0]
        assert first["subject"] == f"Glance {NAMESPACE}/{GLANCE}"
        assert first["fix"].startswith("create the Secret with the password under its key")
    finally:
        apply(
            node,
            [
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": "glance-service-user", "namespace": NAMESPACE},
                    "data": secret["data"],
                }
            ],
        )
    healthy_again(node, say)


def test_a_policy_override_that_breaks_the_api(node, broken, say):
    """A rule that asks an HTTP endpoint (oslo.policy's ``http:`` check) that does not
    answer: every image list is a 500 once the new pods serve."""
    patch = {"spec": {"policyOverrides": {"rules": {"get_images": "http://127.0.0.1:9/"}}}}
    node.kubectl(
        "patch", "glance", GLANCE, "-n", NAMESPACE, "--type=merge", "-p", json.dumps(patch)
    )
    try:
        report = named_first(node, "api-errors", say)
        first = report["findings"][0]
        assert first["subject"].endswith(" check images"), first
        assert "HTTP 500" in first["detail"], first
        assert "spec.policyOverrides" in first["fix"], first
    finally:
        undo = {"spec": {"policyOverrides": None}}
        node.kubectl(
            "patch", "glance", GLANCE, "-n", NAMESPACE, "--type=merge", "-p", json.dumps(undo)
        )
    healthy_again(node, say)


def test_an_image_tag_that_does_not_exist(node, broken, say):
    glance = get(node, "glance", GLANCE, "-n", NAMESPACE)
    release = glance["spec"]["openStackRelease"]
    patch = {"spec": {"image": {"tag": f"{release}-does-not-exist"}}}
    node.kubectl(
        "patch", "glance", GLANCE, "-n", NAMESPACE, "--type=merge", "-p", json.dumps(patch)
    )
    report = named_first(node, "image-pull", say)
    first = report["findings"][0]
    assert f"{release}-does-not-exist" in first["detail"], first
    assert first["fix"].startswith("check spec.image.repository and spec.image.tag")
