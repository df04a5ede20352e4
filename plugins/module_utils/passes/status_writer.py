# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""The status a pass writes, and whether it has to write it at all.

A pass computes conditions as ``{type, status, reason, message}`` (``conditions.condition``).
This module turns them into the status the report step writes, the way controller-runtime's
``meta.SetStatusCondition`` and the reference's ``updateStatus`` do (reference-spec §1.3,
§2.2 step 5):

* ``merge_conditions``: each computed condition replaces the stored one of its type.
  ``lastTransitionTime`` changes only when ``status`` changes (a new reason or message
  keeps the old time); every computed condition is stamped with the object's
  ``generation`` as ``observedGeneration``. Stored conditions the pass did not compute
  are kept as they were (the pipeline stopped before their step), unless the caller lists
  their type in ``cleared``. The result is sorted by type, so the same conditions always
  give the same list.
* ``glance_status``: the whole Glance status: the merged conditions, ``Ready``
  re-aggregated over the nine parts (``conditions.READY_PARTS``) of the merged list,
  ``observedGeneration``, and ``endpoint``, ``installedRelease``, ``targetRelease`` and
  ``upgradePhase``, each kept from the stored status unless given. An empty string
  leaves the field out (they are ``omitempty`` in the API).
* ``backend_status``: the same for a GlanceBackend, ``Ready`` over CredentialsReady and
  ConfigProjected.
* ``status_patch``: the JSON merge patch that turns the stored status into the new one,
  or None when the two are semantically equal (the same conditions by type, whatever
  their order; the same fields, an empty string counting as absent). The report step
  writes nothing on None, so a pass that changes nothing writes no status.

Time is handed in (``now``), never read: the same inputs give the same status.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.desired import conditions as c

CONDITION_FIELDS = (
    "type",
    "status",
    "observedGeneration",
    "lastTransitionTime",
    "reason",
    "message",
)
# The Glance status fields besides conditions and observedGeneration, by API name.
GLANCE_FIELDS = ("endpoint", "installedRelease", "targetRelease", "upgradePhase")


class _Keep:
    """The default of an optional status field: keep the stored value."""

    def __repr__(self) -> str:
        return "KEEP"


KEEP: Any = _Keep()


def format_time(now: datetime | str) -> str:
    """``now`` as a Kubernetes ``metav1.Time``: RFC 3339 in UTC, whole seconds, ``Z``.

    A string is taken as already formatted. A naive datetime is taken as UTC.
    """
    if isinstance(now, str):
        return now
    aware = now if now.tzinfo else now.replace(tzinfo=UTC)
    return aware.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _ordered(cond: Mapping[str, Any]) -> dict[str, Any]:
    """A condition with its fields in metav1 order; unknown fields follow, as they were."""
    out = {k: cond[k] for k in CONDITION_FIELDS if k in cond}
    out.update({k: v for k, v in cond.items() if k not in out})
    return out


def merge_conditions(
    existing: Iterable[Mapping[str, Any]] | None,
    computed: Iterable[Mapping[str, Any]],
    generation: int,
    now: datetime | str,
    cleared: Iterable[str] = (),
) -> list[dict[str, Any]]:
    """The stored conditions with the computed ones merged in (see the module docstring)."""
    stamp = format_time(now)
    stored = {cond["type"]: cond for cond in existing or [] if cond.get("type")}
    computed_by_type = {cond["type"]: cond for cond in computed}
    gone = set(cleared) - set(computed_by_type)
    merged: dict[str, dict[str, Any]] = {
        type_: _ordered(copy.deepcopy(dict(cond)))
        for type_, cond in stored.items()
        if type_ not in gone and type_ not in computed_by_type
    }
    for type_, cond in computed_by_type.items():
        old = stored.get(type_)
        keep_time = (
            old is not None
            and old.get("status") == cond["status"]
            and old.get("lastTransitionTime")
        )
        merged[type_] = {
            "type": type_,
            "status": cond["status"],
            "observedGeneration": generation,
            "lastTransitionTime": old["lastTransitionTime"] if keep_time else stamp,
            "reason": cond["reason"],
            "message": cond["message"],
        }
    return [merged[type_] for type_ in sorted(merged)]


def _with_ready(
    existing: Iterable[Mapping[str, Any]] | None,
    computed: Iterable[Mapping[str, Any]],
    generation: int,
    now: datetime | str,
    cleared: Iterable[str],
    parts: tuple[str, ...],
) -> list[dict[str, Any]]:
    computed = [cond for cond in computed if cond["type"] != c.READY]
    merged = merge_conditions(existing, computed, generation, now, cleared)
    ready = c.aggregate_ready([cond for cond in merged if cond["type"] != c.READY], parts)
    return merge_conditions(merged, [ready], generation, now)


def _set_field(status: dict[str, Any], key: str, value: Any) -> None:
    if value is KEEP:
        return
    if value in (None, ""):
        status.pop(key, None)
    else:
        status[key] = value


def glance_status(
    existing_status: Mapping[str, Any] | None,
    computed: Iterable[Mapping[str, Any]],
    generation: int,
    now: datetime | str,
    *,
    cleared: Iterable[str] = (),
    endpoint: str | None = KEEP,
    installed_release: str | None = KEEP,
    target_release: str | None = KEEP,
    upgrade_phase: str | None = KEEP,
) -> dict[str, Any]:
    """The whole Glance status after this pass (see the module docstring)."""
    status = copy.deepcopy(dict(existing_status or {}))
    status["conditions"] = _with_ready(
        status.get("conditions"), computed, generation, now, cleared, c.READY_PARTS
    )
    status["observedGeneration"] = generation
    for key, value in (
        ("endpoint", endpoint),
        ("installedRelease", installed_release),
        ("targetRelease", target_release),
        ("upgradePhase", upgrade_phase),
    ):
        _set_field(status, key, value)
    return status


def backend_status(
    existing_status: Mapping[str, Any] | None,
    computed: Iterable[Mapping[str, Any]],
    generation: int,
    now: datetime | str,
    *,
    cleared: Iterable[str] = (),
) -> dict[str, Any]:
    """The whole GlanceBackend status: conditions, Ready over its two parts, generation."""
    status = copy.deepcopy(dict(existing_status or {}))
    status["conditions"] = _with_ready(
        status.get("conditions"), computed, generation, now, cleared, c.BACKEND_READY_PARTS
    )
    status["observedGeneration"] = generation
    return status


def _normal(status: Mapping[str, Any] | None) -> dict[str, Any]:
    """``status`` in a form where semantic equality is ``==``."""
    out: dict[str, Any] = {}
    for key, value in (status or {}).items():
        if value is None or value == "":
            continue
        if key == "conditions":
            value = {cond.get("type"): _ordered(cond) for cond in value or []}
        out[key] = value
    return out


def status_patch(
    existing_status: Mapping[str, Any] | None, new_status: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The merge patch ``{"status": {...}}`` from the stored status to ``new_status``.

    None when nothing changed semantically. Otherwise the patch carries every top-level
    field that changed (``conditions`` always whole: a merge patch replaces lists) and
    ``null`` for every field that went away.
    """
    old, new = _normal(existing_status), _normal(new_status)
    if old == new:
        return None
    changes: dict[str, Any] = {}
    for key in sorted(set(old) | set(new)):
        if key not in new:
            changes[key] = None
        elif old.get(key) != new[key]:
            changes[key] = copy.deepcopy(new_status[key])
    return {"status": changes}
