# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""Step 0 of a pass: a Glance being deleted releases its finalizers (reference-spec
§2.10). In managed mode its MariaDB Database, User and Grant go first; on a target
cluster its children there are swept, or given up after ``ABANDON_AFTER`` seconds of the
cluster not resolving.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.desired import conditions as c
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects import keys as ok
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects import metadata
from ansible_collections.c5c3.glance.plugins.module_utils.kube import apply_plan as ap
from ansible_collections.c5c3.glance.plugins.module_utils.kube import live_state as ls
from ansible_collections.c5c3.glance.plugins.module_utils.passes.glance.gates import (
    _cluster_ref,
    _target_unavailable,
    _unavailable_message,
)
from ansible_collections.c5c3.glance.plugins.module_utils.passes.glance.pass_state import (
    REMOVE,
    REQUEUE_DATABASE,
    PassResult,
    _meta,
    _owner_uid,
)

ABANDON_AFTER = 300
"""Seconds a Glance being deleted waits for a target cluster that cannot be resolved
before it gives up its children there (the reference's AbandonAfter, 5 minutes)."""


def _duration(seconds: int) -> str:
    """Go's time.Duration String() of whole seconds (``5m0s``), as the reference words it."""
    minutes, rest = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours}h{minutes}m{rest}s"
    return f"{minutes}m{rest}s" if minutes else f"{rest}s"


def _remote_deletion(
    glance_obj: Mapping[str, Any],
    live: ls.LiveObjects,
    info: Mapping[str, Any] | None,
    remote_children: Sequence[Mapping[str, Any]],
    held: list[str],
    now: datetime | str,
    abandon_after: int,
) -> PassResult:
    """A Glance being deleted whose children are on a target cluster (reference-spec §2.2,
    §2.10). The cluster resolves: the MariaDB resources first (as ``_deletion``), then
    every child carrying the Glance's ownership labels is deleted and both finalizers go.
    It does not: the pass waits, polling every 15 s, until the cluster has been
    unresolvable for ``abandon_after`` seconds since both the deletion and the first pass
    that found it so (the condition's lastTransitionTime); then the children are given up
    (Warning RemoteChildrenAbandoned) and the finalizers released."""
    target = metadata.target_cluster(glance_obj) or ""
    name = str(_meta(glance_obj).get("name") or "")
    if not info or info.get("error"):
        existing = c.by_type((glance_obj.get("status") or {}).get("conditions") or [])
        secrets = existing.get(c.SECRETS_READY) or {}
        first = (
            ls.parse_time(secrets.get("lastTransitionTime"))
            if secrets.get("reason") == c.TARGET_CLUSTER_UNAVAILABLE
            and secrets.get("status") == c.FALSE
            else ls.parse_time(now)
        )
        since = max(first, ls.parse_time(_meta(glance_obj).get("deletionTimestamp")))
        if (ls.parse_time(now) - since).total_seconds() < abandon_after:
            message = (
                f"target cluster {target} does not resolve; waiting at least "
                f"{_duration(abandon_after)} before abandoning its children "
                f"({_unavailable_message(target, info)})"
            )
            return _target_unavailable(glance_obj, live, target, info, now, message)
        return PassResult(
            finalizer=REMOVE,
            finalizers=held,
            events=[
                {
                    "type": "Warning",
                    "reason": c.EVENT_REMOTE_CHILDREN_ABANDONED,
                    "message": f'Target cluster "{target}" did not resolve for '
                    f"{_duration(abandon_after)}; releasing the finalizers without deleting "
                    "the objects on it labelled as owned by this Glance",
                }
            ],
        )
    result = _deletion(glance_obj, live)
    if result.finalizer != REMOVE:
        result.target_cluster = target
        return result  # the MariaDB resources first
    owner = _owner_uid(glance_obj)
    sweep = [a for a in (ap.sweep_action(obj, owner) for obj in remote_children) if a.writes]
    result.actions = sweep
    result.finalizers = held
    result.target_cluster = target
    if sweep:
        result.events.append(
            {
                "type": "Normal",
                "reason": c.EVENT_REMOTE_CHILDREN_SWEPT,
                "message": f"Deleting the {len(sweep)} objects of {name} on target cluster "
                f'"{target}"; releasing the finalizers',
            }
        )
    return result


def _deletion(glance_obj: Mapping[str, Any], live: ls.LiveObjects) -> PassResult:
    """A Glance being deleted that still holds the finalizer (reference-spec §2.10).

    Brownfield mode owns nothing outside garbage collection: the finalizer goes at once.
    Managed mode: if any of its MariaDB Database, User or Grant is still live (ours and not
    yet being deleted) they are deleted and the pass asks again in 30 s
    (``FinalizingDatabase``); once none is, the finalizer goes (``DatabaseFinalized``).
    mariadb-operator drops the database and the user when their resources go.
    """
    cluster = _cluster_ref(glance_obj)
    if cluster is None:
        return PassResult(finalizer=REMOVE)
    name = str(_meta(glance_obj).get("name") or "")
    uid = _owner_uid(glance_obj)
    actions = [ap.delete_action(key, live.get(key), uid) for key in ok.MARIADB_OBJECTS]
    deletes = [a for a in actions if a.writes]
    if deletes:
        kinds = " and ".join(a.kind for a in deletes)
        return PassResult(
            actions=deletes,
            events=[
                {
                    "type": "Normal",
                    "reason": c.EVENT_FINALIZING_DATABASE,
                    "message": f"Deleting the MariaDB {kinds} {name} before the Glance goes",
                }
            ],
            requeue_after=REQUEUE_DATABASE,
        )
    return PassResult(
        finalizer=REMOVE,
        events=[
            {
                "type": "Normal",
                "reason": c.EVENT_DATABASE_FINALIZED,
                "message": f'The MariaDB resources of {name} on "{cluster}" are gone; '
                "releasing the finalizer",
            }
        ],
    )
