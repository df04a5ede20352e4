# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""One reconcile pass of a GlanceBackend, decided: its status and when to look again.

``decide_backend_pass(backend, parent, secrets, parent_deployment, mounted_secret, now)``
follows reference-spec §2.4. The backend controller writes nothing but the backend's
status and emits no events:

1. A backend being deleted: nothing (it has no finalizer; the parent drops its section).
2. No parent Glance (``spec.glanceRef.name`` in the same namespace):
   ``CredentialsReady=False/WaitingForParent``, and a standing ``ConfigProjected=True``
   is demoted to ``False/WaitingForProjection``; requeue 15 s.
3. ``CredentialsReady`` from the credentials Secret (``access-key-id`` and
   ``secret-access-key``, ``backend_projection.backend_credentials``).
4. ``ConfigProjected``: the Secret the parent Deployment mounts as its ``backends`` volume
   holds a ``backends.conf`` with the whole line ``[<backend name>]``. We observe it
   whatever the credentials say (the reference stops at a credentials failure and leaves
   a stale ``ConfigProjected`` behind; the parent drops an unready backend's section, so
   it goes False on its own once the parent has rolled).
5. ``Ready`` over the two; requeue 15 s while either is False (the backstop poll: the
   backend watches no Secret).

The gather step reads ``parent_deployment`` (the Deployment named after the parent) and
``mounted_secret`` (the Secret its ``backends`` volume names); a read that failed is the
gather step's error, not an input here, so a transient failure never demotes a True.

``parent_to_wake(backend, old_backend)`` is the other half of the contract: a backend
change the parent must see (created, deleted, a spec change, its credentials turning
ready or not) names the parent to enqueue. The in-cluster runner enqueues it; a
workstation run of the backend playbook can run the parent's playbook for it.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.desired import conditions as c
from ansible_collections.c5c3.glance.plugins.module_utils.desired.backend_projection import (
    BACKENDS_CONF_KEY,
    backend_credentials,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.render_plan import decode_secrets
from ansible_collections.c5c3.glance.plugins.module_utils.kube import live_state as ls
from ansible_collections.c5c3.glance.plugins.module_utils.passes.status_writer import (
    backend_status,
    status_patch,
)

REQUEUE_BACKSTOP = 15


@dataclass
class BackendPassResult:
    """The status to write (``status_patch`` None: write nothing) and the requeue."""

    status: dict[str, Any] | None = None
    status_patch: dict[str, Any] | None = None
    requeue_after: int | None = None
    conditions: list[dict[str, str]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "status_patch": self.status_patch,
            "requeue_after": self.requeue_after,
        }


def _meta(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return (obj or {}).get("metadata") or {}


def _parent_name(backend: Mapping[str, Any]) -> str:
    return str(((backend.get("spec") or {}).get("glanceRef") or {}).get("name") or "")


def _secret_text(secret: Mapping[str, Any], key: str) -> str | None:
    """The decoded ``key`` of a Secret (``stringData`` over ``data``), None when absent."""
    string_data = secret.get("stringData") or {}
    if key in string_data:
        return str(string_data[key])
    value = (secret.get("data") or {}).get(key)
    if value is None:
        return None
    try:
        return base64.b64decode(str(value), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


def has_section(text: str, name: str) -> bool:
    """``text`` has a line that is exactly ``[<name>]`` (a trailing CR ignored)."""
    wanted = f"[{name}]"
    return any(line.rstrip("\r") == wanted for line in text.split("\n"))


# The reference's ConfigProjected messages (glancebackend_controller.go); ours say after
# them what was found.
PROJECTION_WAITING = (
    "waiting for the Glance Deployment to mount this backend's rendered store section"
)
PROJECTED = "store section is rendered into the Glance Deployment's backends config"


def config_projected(
    backend: Mapping[str, Any],
    parent_deployment: Mapping[str, Any] | None,
    mounted_secret: Mapping[str, Any] | None,
) -> dict[str, str]:
    """``ConfigProjected`` from the parent Deployment's mounted backends Secret (§2.4 step 4)."""
    name = str(_meta(backend).get("name", ""))
    namespace = str(_meta(backend).get("namespace", ""))
    glance = _parent_name(backend)
    where = f"Deployment {namespace}/{glance}"

    def waiting(message: str) -> dict[str, str]:
        return c.condition(
            c.CONFIG_PROJECTED, False, c.WAITING_FOR_PROJECTION, f"{PROJECTION_WAITING}: {message}"
        )

    if parent_deployment is None:
        return waiting(f"the Glance API {where} does not exist yet")
    secret_name = ls.mounted_artifacts(parent_deployment)[1]
    if not secret_name:
        return waiting(f"{where} mounts no backends Secret yet")
    if mounted_secret is None or _meta(mounted_secret).get("name") != secret_name:
        return waiting(
            f"the backends Secret {namespace}/{secret_name} mounted by {where} is not found"
        )
    text = _secret_text(mounted_secret, BACKENDS_CONF_KEY)
    if text is None or not has_section(text, name):
        return waiting(
            f"the backends Secret {namespace}/{secret_name} mounted by {where} has no [{name}] "
            "section yet"
        )
    return c.condition(
        c.CONFIG_PROJECTED,
        True,
        c.CONFIG_PROJECTED_REASON,
        f"{PROJECTED}: [{name}] is in the backends Secret {namespace}/{secret_name} mounted by "
        f"{where}",
    )


def decide_backend_pass(
    backend: Mapping[str, Any],
    parent: Mapping[str, Any] | None,
    secrets: Sequence[Mapping[str, Any]],
    parent_deployment: Mapping[str, Any] | None,
    mounted_secret: Mapping[str, Any] | None,
    now: datetime | str,
    target_cluster: Mapping[str, Any] | None = None,
) -> BackendPassResult:
    """Decide one pass of ``backend`` (see the module docstring).

    ``secrets`` are the Secret objects of the backend's namespace the gather step read
    (at least its credentials Secret when it exists), where the parent's children are.
    ``target_cluster``: the parent's target cluster as the gather step found it; one that
    cannot be resolved (its ``error``) gives CredentialsReady False,
    TargetClusterUnavailable (§2.4 step 2), and ConfigProjected is left as it is.
    """
    meta = _meta(backend)
    if meta.get("deletionTimestamp"):
        return BackendPassResult()
    existing_status = backend.get("status") or {}
    existing = c.by_type(existing_status.get("conditions") or [])
    if parent is not None and target_cluster and target_cluster.get("error"):
        conds = [
            c.condition(
                c.CREDENTIALS_READY,
                False,
                c.TARGET_CLUSTER_UNAVAILABLE,
                str(target_cluster["error"]),
            )
        ]
        new_status = backend_status(existing_status, conds, int(meta.get("generation") or 1), now)
        return BackendPassResult(
            status=new_status,
            status_patch=status_patch(existing_status, new_status),
            requeue_after=REQUEUE_BACKSTOP,
            conditions=conds,
        )
    decoded = decode_secrets([dict(s) for s in secrets])
    credentials = backend_credentials(backend, parent, decoded)
    conds = [credentials]
    if parent is None:
        stored = existing.get(c.CONFIG_PROJECTED)
        if stored is not None and stored.get("status") == c.TRUE:
            namespace = meta.get("namespace", "")
            conds.append(
                c.condition(
                    c.CONFIG_PROJECTED,
                    False,
                    c.WAITING_FOR_PROJECTION,
                    f"parent Glance {namespace}/{_parent_name(backend)} does not exist; nothing "
                    "mounts this backend's rendered store section",
                )
            )
    else:
        conds.append(config_projected(backend, parent_deployment, mounted_secret))
    generation = int(meta.get("generation") or 1)
    new_status = backend_status(existing_status, conds, generation, now)
    ready = c.by_type(new_status["conditions"]).get(c.READY) or {}
    return BackendPassResult(
        status=new_status,
        status_patch=status_patch(existing_status, new_status),
        requeue_after=None if ready.get("status") == c.TRUE else REQUEUE_BACKSTOP,
        conditions=conds,
    )


def _credentials_status(backend: Mapping[str, Any] | None) -> str | None:
    for cond in ((backend or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == c.CREDENTIALS_READY:
            return cond.get("status")
    return None


def parent_to_wake(
    backend: Mapping[str, Any] | None, old_backend: Mapping[str, Any] | None
) -> tuple[str, str] | None:
    """``(namespace, name)`` of the Glance to reconcile after this backend event, or None.

    ``backend`` is the object after the event (None: deleted), ``old_backend`` before
    (None: created). The parent must see a backend appear or go, a spec change (a new
    host, bucket, option or isDefault changes its projection), the start of a deletion
    and a CredentialsReady flip (the credentials Secret appeared or lost a key, which the
    parent does not watch). A status write that only touches ConfigProjected or Ready is
    the parent's own doing and wakes nothing.
    """
    current = backend if backend is not None else old_backend
    if current is None:
        return None
    key = (str(_meta(current).get("namespace", "")), _parent_name(current))
    if not key[1]:
        return None
    if backend is None or old_backend is None:
        return key
    if (backend.get("spec") or {}) != (old_backend.get("spec") or {}):
        return key
    if bool(_meta(backend).get("deletionTimestamp")) != bool(
        _meta(old_backend).get("deletionTimestamp")
    ):
        return key
    if _credentials_status(backend) != _credentials_status(old_backend):
        return key
    return None
