# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""The gates that stop a pass before the step they guard, each with its condition.

* the target cluster (``TargetClusterUnavailable``): a Glance naming one that does not
  resolve, or does not answer, is neither read nor written;
* the database, in managed mode (``DatabaseReady``): the MariaDB of ``clusterRef`` is
  Ready, then its Database, User and Grant;
* the release (``ImageReleaseMismatch``): the image tag names the spec's release.

The Secrets gate (``SecretsReady``, the secret store's readiness among its reasons) is
the plan's condition, which ``decide._decide`` checks first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.desired import conditions as c
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects import keys as ok
from ansible_collections.c5c3.glance.plugins.module_utils.desired.release import (
    image_release_mismatch,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.render_plan import Plan
from ansible_collections.c5c3.glance.plugins.module_utils.kube import apply_plan as ap
from ansible_collections.c5c3.glance.plugins.module_utils.kube import live_state as ls
from ansible_collections.c5c3.glance.plugins.module_utils.passes.glance.pass_state import (
    REQUEUE_DATABASE,
    REQUEUE_SECRETS,
    PassResult,
    _conflict,
    _Pass,
    _spec,
)
from ansible_collections.c5c3.glance.plugins.module_utils.passes.glance.report import _finish

# The reference's messages (internal/common/database/flow.go, reconcile_database.go).
MARIADB_DATABASE_NOT_READY = "MariaDB Database CR is not ready"
MARIADB_USER_NOT_READY = "MariaDB User or Grant CR is not ready"


def image_release_mismatch_message(tag: str, named: str, release: str) -> str:
    """ImageReleaseMismatch: the image tag names release ``named``, the spec ``release``."""
    return (
        f'spec.image.tag "{tag}" names OpenStack release {named} but spec.openStackRelease is '
        f'"{release}"; bump spec.image in lockstep with spec.openStackRelease (the database '
        "schema follows the release)"
    )


def _unavailable_message(target: str, info: Mapping[str, Any] | None) -> str:
    return str((info or {}).get("error") or f'target cluster "{target}" was not resolved')


def _target_unavailable(
    glance_obj: Mapping[str, Any],
    live: ls.LiveObjects,
    target: str,
    info: Mapping[str, Any] | None,
    now: datetime | str,
    message: str | None = None,
) -> PassResult:
    """SecretsReady False, TargetClusterUnavailable, polled every 15 s; nothing else."""
    p = _Pass(glance_obj, live, {})
    p.set(
        c.condition(
            c.SECRETS_READY,
            False,
            c.TARGET_CLUSTER_UNAVAILABLE,
            message or _unavailable_message(target, info),
        ),
        REQUEUE_SECRETS,
    )
    return _finish(p, None, now)


def _cluster_ref(glance: Mapping[str, Any]) -> str | None:
    ref = (_spec(glance).get("database") or {}).get("clusterRef")
    return str(ref.get("name") or "") if ref is not None else None


def _mariadb_resources(p: _Pass, plan: Plan, keys: Sequence[str]) -> list[str] | None:
    """Apply the MariaDB resources of ``keys`` (those the plan wants); the ones not Ready
    yet, as ``<Kind> <name>``, or None after an ownership conflict (reported)."""
    waiting = []
    for key in keys:
        obj = p.want(key, plan.desired.get(key))
        if obj is None:  # the User and Grant with Dynamic credentials
            continue
        live = p.live.get(key)
        action = ap.ssa_action(key, obj, live, p.owner_uid)
        if action.error:
            _conflict(p, c.DATABASE_READY, action)
            return None
        # Just written (its status is not about this spec yet), being deleted, or not Ready.
        if action.writes or action.reason == ap.DELETING or not ls.condition_ready(live):
            waiting.append(f"{action.kind} {action.name}")
    return waiting


def _managed_database(p: _Pass, plan: Plan) -> bool:
    """Managed mode's gate (reference-spec §2.3 step 5): the MariaDB of ``clusterRef`` is
    Ready, then the Database, then (Static credentials) the User and Grant; each applied
    server-side and waited for (30 s). True in brownfield mode; False stops the pass."""
    cluster = _cluster_ref(p.glance)
    if cluster is None:
        return True
    if not ls.condition_ready(p.cluster):
        message = f'MariaDB cluster "{cluster}" is not ready'
        p.set(c.condition(c.DATABASE_READY, False, c.CLUSTER_NOT_READY, message), REQUEUE_DATABASE)
        return False
    for keys, not_ready in (
        ((ok.MARIADB_DATABASE,), MARIADB_DATABASE_NOT_READY),
        ((ok.MARIADB_USER, ok.MARIADB_GRANT), MARIADB_USER_NOT_READY),
    ):
        waiting = _mariadb_resources(p, plan, keys)
        if waiting is None:
            return False
        if waiting:
            message = (
                f"{not_ready}: waiting for the MariaDB {' and '.join(waiting)} to be ready "
                f'(mariadb-operator, on the MariaDB "{cluster}")'
            )
            p.set(
                c.condition(c.DATABASE_READY, False, c.WAITING_FOR_DATABASE, message),
                REQUEUE_DATABASE,
            )
            return False
    return True


def _image_matches(p: _Pass, spec: Mapping[str, Any], release: str) -> bool:
    """The image/release lockstep check; False (ImageReleaseMismatch, 30 s) stops the pass."""
    tag = (spec.get("image") or {}).get("tag")
    named = image_release_mismatch(tag, release)
    if named is None:
        return True
    message = image_release_mismatch_message(tag, named, release)
    p.set(
        c.condition(c.DATABASE_READY, False, c.IMAGE_RELEASE_MISMATCH, message),
        REQUEUE_DATABASE,
    )
    return False
