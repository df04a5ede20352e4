"""What mariadb-operator does with the resources a managed-mode Glance asks for, for tests.

The reconcile tests of managed database mode run the passes against a real kube-apiserver
that serves the four k8s.mariadb.com kinds (``tests/support/crds/k8s.mariadb.com.yaml``)
but runs no mariadb-operator. :func:`reconcile` plays it, against the REAL MariaDB of the
e2e stack (``e2e.stack.Stack.start_mariadb``), for every resource of one namespace:

* ``Database``: ``CREATE DATABASE IF NOT EXISTS <spec.name> CHARACTER SET .. COLLATE ..``;
* ``User``: the user ``<spec.name or metadata.name>@<spec.host or %>`` with the password
  of the Secret ``spec.passwordSecretKeyRef`` names (created, or its password set again)
  and ``MAX_USER_CONNECTIONS spec.maxUserConnections``;
* ``Grant``: ``GRANT <privileges> ON <database>.<table> TO <username>@<host>``;

then sets ``status.conditions`` ``Ready=True``, as mariadb-operator reports a resource it
has made. A resource whose MariaDB (``spec.mariaDbRef``) is not Ready, or whose User does
not exist yet (for a Grant), is left not Ready, as the real operator leaves it. Deleting a
resource here drops nothing: the tests check what the Glance operator deletes.

The cluster tier runs the real mariadb-operator (tests/cluster/test_with_mariadb_operator.py);
this stand-in serves the reconcile tier, where no controller runs. Unlike the real one it
never comes back to a Ready resource: the real controller reconciles a User again when the
User changes (the operator's DSN-hash annotation on a rotation) and drops the database and
user when their resources are deleted (``cleanupPolicy`` ``Delete``, its default).

SQL identifiers come from the CRs; they are quoted, and only ``[A-Za-z0-9_]`` names are
accepted (the Glance CRD's pattern for the database; the Glance's name for the user).
"""

from __future__ import annotations

import base64
import re
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.kube import live_state as ls
from ansible_collections.c5c3.glance.plugins.module_utils.kube.kube_client import KubeClient

API = "k8s.mariadb.com/v1alpha1"
STAMP = "2026-11-30T00:00:00Z"
_NAME = re.compile(r"[A-Za-z0-9_-]{1,80}")


def _ident(name: str) -> str:
    if not _NAME.fullmatch(name):
        raise ValueError(f"refusing SQL identifier {name!r}")
    return f"`{name}`"


def _literal(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def ready_status(generation: int) -> dict[str, Any]:
    return {
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "Created",
                "message": "Created",
                "lastTransitionTime": STAMP,
                "observedGeneration": generation,
            }
        ]
    }


def set_ready(client: KubeClient, kind: str, obj: dict[str, Any]) -> None:
    meta = obj["metadata"]
    client.patch(
        API,
        kind,
        meta["name"],
        meta["namespace"],
        {"status": ready_status(int(meta.get("generation") or 1))},
        subresource="status",
    )


def _secret_value(client: KubeClient, namespace: str, ref: dict[str, Any]) -> str | None:
    secret = client.get("v1", "Secret", ref["name"], namespace)
    value = ((secret or {}).get("data") or {}).get(ref["key"])
    return base64.b64decode(value).decode() if value is not None else None


def reconcile(client: KubeClient, namespace: str, stack: Any) -> list[str]:
    """One round over the namespace's Database, User and Grant resources (see the module
    docstring); what was made Ready, as ``<Kind> <name>``."""
    made = []
    mariadbs = {m["metadata"]["name"]: m for m in client.list(API, "MariaDB", namespace)}
    users = set()
    for kind in ("Database", "User", "Grant"):
        for obj in client.list(API, kind, namespace):
            meta, spec = obj["metadata"], obj.get("spec") or {}
            if ls.is_deleting(obj) or ls.condition_ready(obj):
                if kind == "User":
                    users.add(spec.get("name") or meta["name"])
                continue
            if not ls.condition_ready(mariadbs.get(spec["mariaDbRef"]["name"])):
                continue
            if kind == "Database":
                statement = (
                    f"CREATE DATABASE IF NOT EXISTS {_ident(spec.get('name') or meta['name'])} "
                    f"CHARACTER SET {_ident(spec['characterSet'])} "
                    f"COLLATE {_ident(spec['collate'])};"
                )
            elif kind == "User":
                password = _secret_value(client, namespace, spec["passwordSecretKeyRef"])
                if password is None:
                    continue
                user = f"{_literal(spec.get('name') or meta['name'])}@{_literal(spec.get('host') or '%')}"
                statement = (
                    f"CREATE USER IF NOT EXISTS {user}; "
                    f"ALTER USER {user} IDENTIFIED BY {_literal(password)} "
                    f"WITH MAX_USER_CONNECTIONS {int(spec.get('maxUserConnections', 10))};"
                )
                users.add(spec.get("name") or meta["name"])
            else:
                if spec["username"] not in users:
                    continue  # mariadb-operator waits for the user too
                privileges = ", ".join(p for p in spec["privileges"] if re.fullmatch(r"[A-Z ]+", p))
                table = "*" if spec["table"] == "*" else _ident(spec["table"])
                statement = (
                    f"GRANT {privileges} ON {_ident(spec['database'])}.{table} TO "
                    f"{_literal(spec['username'])}@{_literal(spec['host'])};"
                )
            stack.root_sql(f"mariadb-operator-{kind.lower()}-{meta['name']}", statement)
            set_ready(client, kind, obj)
            made.append(f"{kind} {meta['name']}")
    return made
