# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""The Secrets gate and the database connection URL (reference-spec §2.3 steps 1 and 2).

``gate_secrets`` decides ``SecretsReady`` from the two Secrets a Glance references: the
database credentials (``database.secretRef``: the data key ``password``, and ``username``
wherever the DSN user comes from the Secret: brownfield mode and managed mode with Dynamic
credentials; in managed mode with Static credentials the user is the Glance's own name,
the MariaDB ``User`` the operator applies) and the Keystone service user
(``serviceUser.secretRef``, the data key ``key``, default ``password``). The database
Secret is checked first. A key whose value is empty counts as missing: an empty
password or user name can only give pods that fail to authenticate, so the operator waits
and says so instead. On success it returns the SHA-256 of the service password (the
``authtoken`` digest the pod template carries, so a rotation rolls the pods).

**external-secrets** (``ExternalSecrets``): when the Glance is gated on a secret store,
the store is checked before the Secrets (``SecretStoreNotReady``: missing, or its ``Ready``
condition not True), and a Secret that is missing or lacks keys is explained by the
ExternalSecret of the same name: not there yet, or not synced. The Glance is gated when
``spec.secretStoreRef`` names a store, or, when it names none, when the reference's
default store (ClusterSecretStore ``openbao-cluster-store``) exists: a cluster set up like
the reference's. Otherwise (the reference gates every Glance on its default store, so it
cannot run without external-secrets) the Secrets are plain Secrets (docs/secrets.md).

``db_connection_dsn`` builds ``mysql+pymysql://<user>:<password>@<host>:<port>/<db>?charset=utf8``
plus the ``ssl_*`` parameters of ``database.tls``. The host is ``database.host``
(brownfield) or the MariaDB's Service ``<clusterRef>.<namespace>.svc`` (managed). User and
password are percent-encoded except for the RFC 3986 unreserved characters (letters,
digits, ``-._~``). That is stricter
than Go's ``url.UserPassword`` (which leaves ``$&+,;=`` literal); SQLAlchemy decodes both
alike, and the stricter form keeps ``$`` away from oslo.config, which would otherwise read
``$name`` in the ``OS_DATABASE__CONNECTION`` value as a reference to another option.

Secrets are passed as ``Mapping[str, Mapping[str, str]]``: Secret name to its decoded data.
A missing Secret is absent from the mapping. Everything here is pure.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode

from ansible_collections.c5c3.glance.plugins.module_utils.desired.conditions import (
    SECRET_STORE_NOT_READY,
    SECRETS_AVAILABLE,
    SECRETS_READY,
    WAITING_FOR_DB_CREDENTIALS,
    WAITING_FOR_IMPORT_CA_BUNDLE,
    WAITING_FOR_SERVICE_USER_CREDENTIALS,
    condition,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.content_address import sha256_hex

Secrets = Mapping[str, Mapping[str, str]]

SECRET_POLL_SECONDS = 15
DB_USERNAME_KEY = "username"
DB_PASSWORD_KEY = "password"
DB_KEYS = (DB_USERNAME_KEY, DB_PASSWORD_KEY)
DEFAULT_SERVICE_USER_KEY = "password"
IMPORT_CA_KEY = "ca.crt"

DEFAULT_DB_PORT = 3306
DB_TLS_MOUNT_PATH = "/etc/glance/db-tls/"
DB_TLS_CA = DB_TLS_MOUNT_PATH + "ca.crt"
DB_TLS_CERT = DB_TLS_MOUNT_PATH + "tls.crt"
DB_TLS_KEY = DB_TLS_MOUNT_PATH + "tls.key"
TLS_MODES = ("disabled", "prefer", "require", "verify-ca", "verify-full")

SECRETS_AVAILABLE_MESSAGE = "Database and service-user credentials are available"

EXTERNAL_SECRETS_API = "external-secrets.io/v1"
CLUSTER_SECRET_STORE = "ClusterSecretStore"
SECRET_STORE = "SecretStore"
DEFAULT_SECRET_STORE = "openbao-cluster-store"
"""The reference's store when ``secretStoreRef`` is unset (a ClusterSecretStore)."""


def selected_store(glance: Mapping[str, Any]) -> tuple[str, str, bool]:
    """``(kind, name, named)``: the store ``spec.secretStoreRef`` names (kind defaults to
    ClusterSecretStore), or the reference's default store with ``named`` False."""
    ref = _spec(glance).get("secretStoreRef") or {}
    if ref.get("name"):
        return ref.get("kind") or CLUSTER_SECRET_STORE, str(ref["name"]), True
    return CLUSTER_SECRET_STORE, DEFAULT_SECRET_STORE, False


@dataclass(frozen=True)
class ExternalSecrets:
    """What the pass read of external-secrets.io for one Glance.

    ``store``: the selected store (``selected_store``) as read, None when it does not
    exist (or external-secrets is not installed); ``external``: the ExternalSecrets of the
    Glance's namespace named like the Secrets it references, by name.
    """

    store: Mapping[str, Any] | None = None
    external: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def gated(self, glance: Mapping[str, Any]) -> bool:
        """Gated: a store is named, or the default store exists."""
        return selected_store(glance)[2] or self.store is not None


def is_ready(obj: Mapping[str, Any] | None) -> bool:
    """An external-secrets object whose ``Ready`` condition is True."""
    conditions = ((obj or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def store_gate_message(glance: Mapping[str, Any], external: ExternalSecrets) -> str | None:
    """Why the selected store holds the Glance back (the reference's words), or None."""
    if not external.gated(glance) or is_ready(external.store):
        return None
    kind, name, _ = selected_store(glance)
    return f'{kind} "{name}" is not ready; upstream secret backend unreachable'


# The reference's waiting messages (reconcile_secrets.go, CredentialGateSpec.WaitingMsg).
ESO_WAITING = {
    "database": "Waiting for ESO to sync database credentials from OpenBao",
    "service-user": "Waiting for ESO to sync the Glance service-user password from OpenBao",
}


def external_secret_message(
    what: str, namespace: str, name: str, external: ExternalSecrets
) -> str | None:
    """Why the Secret ``name`` is not there yet, as its ExternalSecret says (``what``:
    "database" or "service-user"), or None when no ExternalSecret explains it."""
    found = external.external.get(name)
    if found is None:
        return f"{what.capitalize()} credentials ExternalSecret {namespace}/{name} not found yet"
    if not is_ready(found):
        return ESO_WAITING[what]
    return None


@dataclass(frozen=True)
class SecretsGate:
    """The outcome of the Secrets step.

    ``condition`` is ``SecretsReady``; ``authtoken_digest`` is the hex SHA-256 of the
    service-user password when the gate passed, else None; ``import_ca_digest`` that of
    the import CA bundle when ``spec.importCABundleSecretRef`` is set and the gate passed;
    ``requeue_after`` is the polling interval in seconds while waiting, else None.
    """

    condition: dict[str, str]
    authtoken_digest: str | None = None
    import_ca_digest: str | None = None
    requeue_after: int | None = None

    @property
    def ready(self) -> bool:
        return self.authtoken_digest is not None


def _spec(glance: Mapping[str, Any]) -> Mapping[str, Any]:
    return glance.get("spec") or {}


def _namespace(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("namespace") or "default")


def service_user_key(glance: Mapping[str, Any]) -> str:
    """The data key of the service-user password: ``serviceUser.secretRef.key`` or ``password``."""
    ref = (_spec(glance).get("serviceUser") or {}).get("secretRef") or {}
    return ref.get("key") or DEFAULT_SERVICE_USER_KEY


def missing_keys_detail(data: Mapping[str, str], keys: Sequence[str]) -> list[str]:
    """Each of ``keys`` that ``data`` lacks (``k``) or holds empty (``k (empty)``)."""
    detail = []
    for key in keys:
        if key not in data:
            detail.append(key)
        elif not data[key]:
            detail.append(f"{key} (empty)")
    return detail


def _and(words: Sequence[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def credential_gate_message(
    noun: str, namespace: str, name: str, data: Mapping[str, str] | None, keys: Sequence[str]
) -> str | None:
    """Why the Secret ``namespace/name`` does not yet carry ``keys``, or None when it does.

    The wording follows the reference (``<noun> Secret exists but is missing expected
    keys``) and adds which keys, so the message says what to change.
    """
    needs = f"it must carry the data key{'s' if len(keys) > 1 else ''} {_and(list(keys))}"
    if data is None:
        return f"{noun} Secret {namespace}/{name} not found yet; {needs}"
    detail = missing_keys_detail(data, keys)
    if not detail:
        return None
    return (
        f"{noun} Secret exists but is missing expected keys: {namespace}/{name} lacks "
        f"{', '.join(detail)}; {needs}"
    )


def managed(glance: Mapping[str, Any]) -> bool:
    """Managed mode: ``database.clusterRef`` names a mariadb-operator MariaDB."""
    return (_spec(glance).get("database") or {}).get("clusterRef") is not None


def dynamic_credentials(glance: Mapping[str, Any]) -> bool:
    """``database.credentialsMode`` is Dynamic (empty means Static)."""
    return (_spec(glance).get("database") or {}).get("credentialsMode") == "Dynamic"


def user_from_glance(glance: Mapping[str, Any]) -> bool:
    """The DSN user is the Glance's name (the managed ``User``): managed and Static."""
    return managed(glance) and not dynamic_credentials(glance)


def db_secret_keys(glance: Mapping[str, Any]) -> tuple[str, ...]:
    """The data keys the database Secret must carry: ``password``, and ``username`` where
    the DSN user comes from the Secret (DECISIONS.md: only where it is used)."""
    return (DB_PASSWORD_KEY,) if user_from_glance(glance) else DB_KEYS


def db_host(glance: Mapping[str, Any]) -> str:
    """``database.host``, or in managed mode the MariaDB's Service ``<ref>.<ns>.svc``."""
    database = _spec(glance).get("database") or {}
    if managed(glance):
        return f"{database['clusterRef']['name']}.{_namespace(glance)}.svc"
    return str(database["host"])


def db_username(glance: Mapping[str, Any], db_secret_data: Mapping[str, str]) -> str:
    """The DSN user: the Glance's name (managed, Static), else the Secret's ``username``."""
    if user_from_glance(glance):
        return str(glance["metadata"]["name"])
    return db_secret_data[DB_USERNAME_KEY]


def gate_secrets(
    glance: Mapping[str, Any], secrets: Secrets, external: ExternalSecrets | None = None
) -> SecretsGate:
    """``SecretsReady`` from the secret store (when gated), then the database and
    service-user Secrets (§2.3 step 1). ``external`` None: not gated (the offline render)."""
    spec = _spec(glance)
    namespace = _namespace(glance)
    gated = external is not None and external.gated(glance)
    external = external or ExternalSecrets()
    message = store_gate_message(glance, external) if gated else None
    if message is not None:
        return SecretsGate(
            condition(SECRETS_READY, False, SECRET_STORE_NOT_READY, message),
            requeue_after=SECRET_POLL_SECONDS,
        )
    db_name = ((spec.get("database") or {}).get("secretRef") or {}).get("name", "")
    message = credential_gate_message(
        "Database credentials", namespace, db_name, secrets.get(db_name), db_secret_keys(glance)
    )
    if message is not None and gated:
        message = external_secret_message("database", namespace, db_name, external) or message
    if message is not None:
        return SecretsGate(
            condition(SECRETS_READY, False, WAITING_FOR_DB_CREDENTIALS, message),
            requeue_after=SECRET_POLL_SECONDS,
        )
    su_name = ((spec.get("serviceUser") or {}).get("secretRef") or {}).get("name", "")
    su_key = service_user_key(glance)
    su_data = secrets.get(su_name)
    message = credential_gate_message(
        "Service-user credentials", namespace, su_name, su_data, (su_key,)
    )
    if message is not None and gated:
        message = external_secret_message("service-user", namespace, su_name, external) or message
    if message is not None:
        return SecretsGate(
            condition(SECRETS_READY, False, WAITING_FOR_SERVICE_USER_CREDENTIALS, message),
            requeue_after=SECRET_POLL_SECONDS,
        )
    ca_name = (spec.get("importCABundleSecretRef") or {}).get("name")
    ca_data = secrets.get(ca_name) if ca_name else None
    if ca_name:
        message = credential_gate_message(
            "Import CA bundle", namespace, ca_name, ca_data, (IMPORT_CA_KEY,)
        )
        if message is not None:
            return SecretsGate(
                condition(
                    SECRETS_READY,
                    False,
                    WAITING_FOR_IMPORT_CA_BUNDLE,
                    f"spec.importCABundleSecretRef: {message}",
                ),
                requeue_after=SECRET_POLL_SECONDS,
            )
    return SecretsGate(
        condition(SECRETS_READY, True, SECRETS_AVAILABLE, SECRETS_AVAILABLE_MESSAGE),
        authtoken_digest=sha256_hex((su_data or {})[su_key]),
        import_ca_digest=sha256_hex(ca_data[IMPORT_CA_KEY]) if ca_data else None,
    )


def tls_enabled(glance: Mapping[str, Any]) -> bool:
    """True when ``database.tls.mode`` is set and not ``disabled``."""
    mode = ((_spec(glance).get("database") or {}).get("tls") or {}).get("mode") or ""
    return mode not in ("", "disabled")


def tls_query(mode: str) -> dict[str, str]:
    """The pymysql ``ssl_*`` parameters of an enabled TLS ``mode``."""
    if mode not in TLS_MODES or mode == "disabled":
        raise ValueError(
            f"unknown database TLS mode {mode!r}: want one of prefer, require, verify-ca, "
            "verify-full"
        )
    params = {"ssl_ca": DB_TLS_CA, "ssl_cert": DB_TLS_CERT, "ssl_key": DB_TLS_KEY}
    if mode in ("verify-ca", "verify-full"):
        params["ssl_verify_cert"] = "true"
    if mode == "verify-full":
        params["ssl_verify_identity"] = "true"
    return params


def _userinfo(text: str) -> str:
    # Everything but the RFC 3986 unreserved characters, so '@', ':', '/', '?', '#', '%'
    # and '$' can never be read as syntax by SQLAlchemy, urllib or oslo.config.
    return quote(text, safe="")


def _host(host: str) -> str:
    try:
        ipaddress.IPv6Address(host)
    except ValueError:
        return host
    return f"[{host}]"


def db_connection_dsn(glance: Mapping[str, Any], db_secret_data: Mapping[str, str]) -> str:
    """The ``[database] connection`` URL of ``glance`` (§2.3 step 2).

    ``db_secret_data`` is the decoded data of the database credentials Secret; it must
    carry the keys ``db_secret_keys`` names (run ``gate_secrets`` first), else ValueError.
    """
    missing = [k for k in db_secret_keys(glance) if not db_secret_data.get(k)]
    if missing:
        raise ValueError(f"database credentials lack {', '.join(missing)}")
    database = _spec(glance).get("database") or {}
    port = database.get("port") or DEFAULT_DB_PORT
    query = {"charset": "utf8"}
    if tls_enabled(glance):
        query.update(tls_query(database["tls"]["mode"]))
    encoded_query = urlencode(sorted(query.items())).replace("%2F", "/")
    return (
        f"mysql+pymysql://{_userinfo(db_username(glance, db_secret_data))}:"
        f"{_userinfo(db_secret_data[DB_PASSWORD_KEY])}@{_host(db_host(glance))}:{port}/"
        f"{quote(database['database'], safe='')}?{encoded_query}"
    )


def dsn_digest(dsn: str) -> str:
    """The hex SHA-256 of the DSN (the pod-template ``db-connection-hash`` annotation)."""
    return sha256_hex(dsn)
