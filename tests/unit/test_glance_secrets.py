"""The Secrets gate and the database connection URL (reference-spec §2.3 steps 1 and 2)."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import pytest
import yaml
from support.builders import DELETE, GLANCE, patched, secret_data

from ansible_collections.c5c3.glance.plugins.module_utils.admission import (
    admission,
    collection_files,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.glance_secrets import (
    ExternalSecrets,
    SecretsGate,
    db_connection_dsn,
    dsn_digest,
    gate_secrets,
)

SAMPLES = collection_files.COLLECTION_ROOT / "config" / "samples"
CRDS = collection_files.load_crds()


def load_sample(path: Path) -> tuple[dict, dict[str, dict[str, str]]]:
    """The stored Glance of a sample and its Secrets, by name."""
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    glance = next(d for d in docs if d["kind"] == "Glance")
    stored = admission.judge(CRDS["Glance"], glance).object
    assert stored is not None
    secrets = {d["metadata"]["name"]: secret_data(d) for d in docs if d["kind"] == "Secret"}
    return stored, secrets


def stored(patch: dict | None = None) -> dict:
    verdict = admission.judge(CRDS["Glance"], patched(GLANCE, patch or {}))
    assert verdict.allowed, verdict.messages()
    return verdict.object


DB = {"username": "glance", "password": "db-secret"}
SERVICE = {"password": "service-secret"}
SECRETS = {"glance-db": DB, "glance-service-user": SERVICE}


# --- the gate ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", sorted(SAMPLES.glob("*.yaml")), ids=lambda p: p.name)
def test_the_sample_secrets_pass_the_gate_and_digest_the_service_password(path):
    glance, secrets = load_sample(path)
    gate = gate_secrets(glance, secrets)
    assert gate.condition == {
        "type": "SecretsReady",
        "status": "True",
        "reason": "SecretsAvailable",
        "message": "Database and service-user credentials are available",
    }
    password = secrets["glance-service-user"]["password"]
    assert gate.authtoken_digest == hashlib.sha256(password.encode()).hexdigest()
    assert gate.requeue_after is None and gate.ready


GATE_CASES = [
    (
        {"glance-service-user": SERVICE},
        None,
        "WaitingForDBCredentials",
        "Database credentials Secret openstack/glance-db not found yet; it must carry the data keys username and password",
    ),
    (
        {"glance-db": {"password": "x"}, "glance-service-user": SERVICE},
        None,
        "WaitingForDBCredentials",
        "Database credentials Secret exists but is missing expected keys: openstack/glance-db lacks username; it must carry the data keys username and password",
    ),
    (
        {"glance-db": {"username": "glance", "password": ""}, "glance-service-user": SERVICE},
        None,
        "WaitingForDBCredentials",
        "Database credentials Secret exists but is missing expected keys: openstack/glance-db lacks password (empty); it must carry the data keys username and password",
    ),
    (
        {"glance-db": {}, "glance-service-user": SERVICE},
        None,
        "WaitingForDBCredentials",
        "Database credentials Secret exists but is missing expected keys: openstack/glance-db lacks username, password; it must carry the data keys username and password",
    ),
    (
        {"glance-db": {"password": "x"}},
        None,
        "WaitingForDBCredentials",
        "Database credentials Secret exists but is missing expected keys: openstack/glance-db lacks username; it must carry the data keys username and password",
    ),
    (
        {"glance-db": DB},
        None,
        "WaitingForServiceUserCredentials",
        "Service-user credentials Secret openstack/glance-service-user not found yet; it must carry the data key password",
    ),
    (
        {"glance-db": DB, "glance-service-user": {"pass": "x"}},
        None,
        "WaitingForServiceUserCredentials",
        "Service-user credentials Secret exists but is missing expected keys: openstack/glance-service-user lacks password; it must carry the data key password",
    ),
    (
        SECRETS,
        {"spec": {"serviceUser": {"secretRef": {"key": "token"}}}},
        "WaitingForServiceUserCredentials",
        "Service-user credentials Secret exists but is missing expected keys: openstack/glance-service-user lacks token; it must carry the data key token",
    ),
    (
        SECRETS,
        {"spec": {"importCABundleSecretRef": {"name": "mirror-ca"}}},
        "WaitingForImportCABundle",
        "spec.importCABundleSecretRef: Import CA bundle Secret openstack/mirror-ca not found yet; it must carry the data key ca.crt",
    ),
    (
        {**SECRETS, "mirror-ca": {"tls.crt": "x", "ca.crt": ""}},
        {"spec": {"importCABundleSecretRef": {"name": "mirror-ca"}}},
        "WaitingForImportCABundle",
        "spec.importCABundleSecretRef: Import CA bundle Secret exists but is missing expected keys: openstack/mirror-ca lacks ca.crt (empty); it must carry the data key ca.crt",
    ),
]


@pytest.mark.parametrize(
    "secrets, patch, reason, message",
    GATE_CASES,
    ids=[
        "a missing DB Secret waits for DB credentials",
        "a DB Secret without username waits (brownfield takes the DSN user from it)",
        "an empty DB password counts as missing",
        "every missing DB key is named",
        "the DB Secret is reported before the service-user Secret",
        "a missing service-user Secret waits for service-user credentials",
        "a service-user Secret without the key waits",
        "a custom service-user key is the one required",
        "a missing import CA Secret waits, naming the field",
        "an import CA Secret with an empty ca.crt waits",
    ],
)
def test_the_gate_waits_naming_the_secret_and_the_keys(secrets, patch, reason, message):
    gate = gate_secrets(stored(patch), secrets)
    assert gate == SecretsGate(
        {"type": "SecretsReady", "status": "False", "reason": reason, "message": message},
        authtoken_digest=None,
        requeue_after=15,
    )
    assert not gate.ready


def test_a_custom_service_user_key_is_the_password_digested():
    glance = stored({"spec": {"serviceUser": {"secretRef": {"key": "token"}}}})
    gate = gate_secrets(glance, {"glance-db": DB, "glance-service-user": {"token": "t0k"}})
    assert gate.authtoken_digest == hashlib.sha256(b"t0k").hexdigest()


def test_the_import_ca_bundle_is_digested_and_a_new_bundle_changes_the_digest():
    glance = stored({"spec": {"importCABundleSecretRef": {"name": "mirror-ca"}}})
    first = gate_secrets(glance, {**SECRETS, "mirror-ca": {"ca.crt": "PEM one"}})
    assert first.ready and first.import_ca_digest == hashlib.sha256(b"PEM one").hexdigest()
    second = gate_secrets(glance, {**SECRETS, "mirror-ca": {"ca.crt": "PEM two"}})
    assert second.import_ca_digest not in (None, first.import_ca_digest)
    assert (
        gate_secrets(stored(), {**SECRETS, "mirror-ca": {"ca.crt": "x"}}).import_ca_digest is None
    )


def test_a_rotated_service_password_changes_the_authtoken_digest():
    before = gate_secrets(stored(), SECRETS).authtoken_digest
    after = gate_secrets(stored(), {**SECRETS, "glance-service-user": {"password": "new"}})
    assert after.authtoken_digest not in (None, before)


def test_a_service_user_key_left_empty_by_a_bypassed_webhook_falls_back_to_password():
    glance = patched(GLANCE, {"spec": {"serviceUser": {"secretRef": {"key": ""}}}})
    assert gate_secrets(glance, SECRETS).authtoken_digest == (
        hashlib.sha256(b"service-secret").hexdigest()
    )


# --- external-secrets ---------------------------------------------------------------------

READY = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
NOT_READY = {"status": {"conditions": [{"type": "Ready", "status": "False"}]}}
NAMED = {"spec": {"secretStoreRef": {"kind": "SecretStore", "name": "vault"}}}
UNREACHABLE = "is not ready; upstream secret backend unreachable"


def eso(store=None, **external) -> ExternalSecrets:
    return ExternalSecrets(store=store, external=external)


def waiting(gate: SecretsGate) -> tuple[str, str]:
    assert gate.authtoken_digest is None and gate.requeue_after == 15, gate
    return gate.condition["reason"], gate.condition["message"]


@pytest.mark.parametrize(
    "external",
    [None, eso(), eso(None, **{"glance-db": NOT_READY})],
    ids=["offline-render", "no-default-store", "no-store-external-secret-ignored"],
)
def test_no_store_named_and_no_default_store_means_plain_secrets(external):
    assert gate_secrets(stored(), SECRETS, external).ready
    reason, message = waiting(gate_secrets(stored(), {}, external))
    assert reason == "WaitingForDBCredentials"
    assert message.startswith("Database credentials Secret openstack/glance-db not found yet")


@pytest.mark.parametrize(
    "patch, external, message",
    [
        ({}, eso(NOT_READY), f'ClusterSecretStore "openbao-cluster-store" {UNREACHABLE}'),
        ({}, eso({}), f'ClusterSecretStore "openbao-cluster-store" {UNREACHABLE}'),
        (NAMED, eso(), f'SecretStore "vault" {UNREACHABLE}'),
        (NAMED, eso(NOT_READY), f'SecretStore "vault" {UNREACHABLE}'),
        (
            {"spec": {"secretStoreRef": {"name": "vault"}}},
            eso(),
            f'ClusterSecretStore "vault" {UNREACHABLE}',
        ),
    ],
    ids=[
        "default-not-ready",
        "default-no-status",
        "named-missing",
        "named-not-ready",
        "kind-default",
    ],
)
def test_a_store_that_is_missing_or_not_ready_holds_the_glance_first(patch, external, message):
    # Even with every Secret in place: the store is checked first, as the reference does.
    assert waiting(gate_secrets(stored(patch), SECRETS, external)) == (
        "SecretStoreNotReady",
        message,
    )


@pytest.mark.parametrize("patch", [{}, NAMED], ids=["default-store", "named-store"])
def test_with_a_ready_store_a_missing_secret_is_explained_by_its_external_secret(patch):
    glance = stored(patch)
    assert waiting(gate_secrets(glance, {}, eso(READY))) == (
        "WaitingForDBCredentials",
        "Database credentials ExternalSecret openstack/glance-db not found yet",
    )
    assert waiting(gate_secrets(glance, {}, eso(READY, **{"glance-db": NOT_READY}))) == (
        "WaitingForDBCredentials",
        "Waiting for ESO to sync database credentials from OpenBao",
    )
    # Synced, but the Secret it wrote lacks a key: the keys are named, as without ESO.
    reason, message = waiting(
        gate_secrets(
            glance, {"glance-db": {"username": "glance"}}, eso(READY, **{"glance-db": READY})
        )
    )
    assert (reason, message.split(":")[0]) == (
        "WaitingForDBCredentials",
        "Database credentials Secret exists but is missing expected keys",
    )
    only_db = {"glance-db": DB}
    assert waiting(gate_secrets(glance, only_db, eso(READY, **{"glance-db": READY}))) == (
        "WaitingForServiceUserCredentials",
        "Service-user credentials ExternalSecret openstack/glance-service-user not found yet",
    )
    synced = eso(READY, **{"glance-service-user": NOT_READY})
    assert waiting(gate_secrets(glance, only_db, synced)) == (
        "WaitingForServiceUserCredentials",
        "Waiting for ESO to sync the Glance service-user password from OpenBao",
    )
    # Secrets in place: ready, whether or not ExternalSecrets wrote them.
    assert gate_secrets(glance, SECRETS, eso(READY)).ready


# --- the DSN ----------------------------------------------------------------------------

# The pattern SQLAlchemy's make_url reads a URL with (sqlalchemy/engine/url.py): the user
# ends at ':' or '/', the password at '@'; both are then percent-decoded with unquote.
SQLALCHEMY_URL = re.compile(
    r"""
        (?P<name>[\w\+]+)://
        (?:
            (?P<username>[^:/]*)
            (?::(?P<password>[^@]*))?
        @)?
        (?:
            (?:
                \[(?P<ipv6host>[^/\?]+)\] |
                (?P<ipv4host>[^/:\?]+)
            )?
            (?::(?P<port>[^/\?]*))?
        )?
        (?:/(?P<database>[^\?]*))?
        (?:\?(?P<query>.*))?
    """,
    re.X,
)

TLS_REFS = {
    "caBundleSecretRef": {"name": "glance-db-ca"},
    "clientCertSecretRef": {"name": "glance-db-client"},
}


def tls(mode: str) -> dict:
    return {"mode": mode, **TLS_REFS}


TLS_FILES = "ssl_ca=/etc/glance/db-tls/ca.crt&ssl_cert=/etc/glance/db-tls/tls.crt&ssl_key=/etc/glance/db-tls/tls.key"


def test_the_minimal_sample_dsn():
    glance, secrets = load_sample(SAMPLES / "glance_minimal.yaml")
    assert db_connection_dsn(glance, secrets["glance-db"]) == (
        "mysql+pymysql://glance:change-me-db-password@mariadb.openstack.svc:3306/glance"
        "?charset=utf8"
    )


def test_the_full_sample_dsn_verifies_the_server_identity():
    glance, secrets = load_sample(SAMPLES / "glance_full.yaml")
    assert db_connection_dsn(glance, secrets["glance-db"]) == (
        "mysql+pymysql://glance:change-me-db-password@mariadb.openstack.svc:3306/glance"
        f"?charset=utf8&{TLS_FILES}&ssl_verify_cert=true&ssl_verify_identity=true"
    )


@pytest.mark.parametrize(
    "block, query",
    [
        (DELETE, "charset=utf8"),
        (tls("disabled"), "charset=utf8"),
        (tls("prefer"), f"charset=utf8&{TLS_FILES}"),
        (tls("require"), f"charset=utf8&{TLS_FILES}"),
        (tls("verify-ca"), f"charset=utf8&{TLS_FILES}&ssl_verify_cert=true"),
        (
            tls("verify-full"),
            f"charset=utf8&{TLS_FILES}&ssl_verify_cert=true&ssl_verify_identity=true",
        ),
    ],
    ids=[
        "no tls block is plaintext",
        "disabled is plaintext",
        "prefer passes the files",
        "require passes the files",
        "verify-ca verifies the certificate",
        "verify-full also verifies the identity",
    ],
)
def test_the_tls_mode_sets_the_ssl_parameters(block, query):
    glance = stored({"spec": {"database": {"tls": block}}})
    assert db_connection_dsn(glance, DB).split("?", 1)[1] == query


@pytest.mark.parametrize(
    "database, netloc",
    [
        ({}, "mariadb.openstack.svc:3306"),
        ({"port": 3307}, "mariadb.openstack.svc:3307"),
        ({"host": "10.0.0.5"}, "10.0.0.5:3306"),
        ({"host": "fd00::5"}, "[fd00::5]:3306"),
    ],
    ids=["the port defaults to 3306", "an explicit port", "an IPv4 address", "an IPv6 address"],
)
def test_the_host_and_port(database, netloc):
    dsn = db_connection_dsn(stored({"spec": {"database": database}}), DB)
    assert dsn == f"mysql+pymysql://glance:db-secret@{netloc}/glance?charset=utf8"


HARD_CREDENTIALS = [
    ("glance", "plain-Pass_1.~"),
    ("gl@nce:admin/x", "p@ss:w/rd?#[]"),
    ("user%41", "100%-sure&a=b+c;d,e"),
    ("ünïcode", "pässwörd €"),
    ("glance", "$HOME ${x} $$"),
    ("glance", "ends with space "),
]


@pytest.mark.parametrize("username, password", HARD_CREDENTIALS)
def test_credentials_round_trip_through_url_parsing(username, password):
    glance = stored(
        {"spec": {"database": {"port": 3307, "tls": tls("verify-ca")}}},
    )
    dsn = db_connection_dsn(glance, {"username": username, "password": password})
    parts = urlsplit(dsn)
    assert parts.scheme == "mysql+pymysql"
    assert unquote(parts.username or "") == username
    assert unquote(parts.password or "") == password
    assert (parts.hostname, parts.port, parts.path) == ("mariadb.openstack.svc", 3307, "/glance")
    assert parse_qs(parts.query, strict_parsing=True) == {
        "charset": ["utf8"],
        "ssl_ca": ["/etc/glance/db-tls/ca.crt"],
        "ssl_cert": ["/etc/glance/db-tls/tls.crt"],
        "ssl_key": ["/etc/glance/db-tls/tls.key"],
        "ssl_verify_cert": ["true"],
    }
    sqlalchemy = SQLALCHEMY_URL.match(dsn)
    assert sqlalchemy is not None
    assert unquote(sqlalchemy["username"]) == username
    assert unquote(sqlalchemy["password"]) == password
    assert (sqlalchemy["ipv4host"], sqlalchemy["port"], sqlalchemy["database"]) == (
        "mariadb.openstack.svc",
        "3307",
        "glance",
    )
    # nothing oslo.config could substitute, no whitespace in the URL
    assert "$" not in dsn and " " not in dsn


def test_an_ipv6_host_round_trips():
    dsn = db_connection_dsn(stored({"spec": {"database": {"host": "fd00::5"}}}), DB)
    assert urlsplit(dsn).hostname == "fd00::5"
    assert SQLALCHEMY_URL.match(dsn)["ipv6host"] == "fd00::5"


def test_the_dsn_needs_both_credentials():
    with pytest.raises(ValueError, match="username"):
        db_connection_dsn(stored(), {"password": "x"})
    with pytest.raises(ValueError, match="password"):
        db_connection_dsn(stored(), {"username": "glance", "password": ""})


def test_the_dsn_digest_is_the_sha256_of_the_dsn_and_follows_a_rotation():
    dsn = db_connection_dsn(stored(), DB)
    assert dsn_digest(dsn) == hashlib.sha256(dsn.encode()).hexdigest()
    rotated = db_connection_dsn(stored(), {**DB, "password": "rotated"})
    assert dsn_digest(rotated) != dsn_digest(dsn)
    moved = db_connection_dsn(stored({"spec": {"database": {"port": 3307}}}), DB)
    assert dsn_digest(moved) != dsn_digest(dsn)


def test_an_unknown_tls_mode_that_bypassed_the_schema_is_refused_not_rendered_partially():
    glance = patched(GLANCE, {"spec": {"database": {"tls": tls("verify-all")}}})
    with pytest.raises(ValueError, match="unknown database TLS mode 'verify-all'"):
        db_connection_dsn(glance, DB)


# --- managed mode (database.clusterRef) -----------------------------------------------

MANAGED = {"database": {"host": DELETE, "clusterRef": {"name": "mariadb"}, "port": 3307}}
DYNAMIC = {"database": {**MANAGED["database"], "credentialsMode": "Dynamic"}}


def test_managed_static_connects_as_the_glance_to_the_mariadb_service():
    glance = stored({"spec": MANAGED})
    dsn = db_connection_dsn(glance, {"password": "p@ss"})  # no username needed
    assert dsn == "mysql+pymysql://glance:p%40ss@mariadb.openstack.svc:3307/glance?charset=utf8"


def test_managed_static_ignores_the_secret_username():
    glance = stored({"spec": MANAGED, "metadata": {"name": "images"}})
    dsn = db_connection_dsn(glance, {"username": "someone", "password": "x"})
    assert urlsplit(dsn).username == "images"


def test_managed_dynamic_connects_as_the_secret_user():
    glance = stored({"spec": DYNAMIC})
    dsn = db_connection_dsn(glance, {"username": "v-glance-3f9a", "password": "x"})
    assert urlsplit(dsn).username == "v-glance-3f9a"
    assert urlsplit(dsn).hostname == "mariadb.openstack.svc"


def test_managed_port_defaults_to_3306():
    spec = {"database": {"host": DELETE, "clusterRef": {"name": "db"}}}
    dsn = db_connection_dsn(stored({"spec": spec}), {"password": "x"})
    assert urlsplit(dsn).netloc.endswith("@db.openstack.svc:3306")


def test_the_gate_asks_for_a_username_only_where_the_dsn_uses_it():
    only_password = {"glance-db": {"password": "x"}, "glance-service-user": SERVICE}
    assert gate_secrets(stored({"spec": MANAGED}), only_password).ready
    for patch in ({"spec": DYNAMIC}, None):
        gate = gate_secrets(stored(patch), only_password)
        assert gate.condition["reason"] == "WaitingForDBCredentials"
        assert gate.condition["message"].endswith(
            "lacks username; it must carry the data keys username and password"
        )
    gate = gate_secrets(
        stored({"spec": MANAGED}), {"glance-db": {}, "glance-service-user": SERVICE}
    )
    assert gate.condition["message"].endswith("lacks password; it must carry the data key password")
