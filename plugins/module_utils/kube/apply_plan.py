# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""Which API writes turn the live objects of a Glance into the desired ones.

``apply_actions(desired, live, owner_uid)`` decides, per owned object, one ``Action``:
a verb (``apply``: server-side apply; ``create``; ``delete``; ``none``), why, and the
object to send. The apply step performs the actions in order and nothing else; a
``none`` action with an ``error`` is a state the pass reports as a condition.

``desired`` maps ``desired_objects`` keys to the Kubernetes objects the roles render
(``role_templates``). A key that is absent is not acted on at all (the pass did not
reach that step); a key whose value is None means "not wanted" for the optional kinds
(``OPTIONAL_OBJECTS``: HPA, NetworkPolicy, HTTPRoute: a live one that is ours is
deleted) and "not yet" for every other kind (a live one is kept).

The rules, per kind (reference-spec §2.6, §2.7, §4.4, with our choices):

* Server-side apply, field manager ``c5c3-glance-operator``, force: Deployment, Service,
  PDB, HPA, NetworkPolicy, HTTPRoute, CronJob, the db-connection Secret and the
  mariadb-operator Database, User and Grant of managed mode. The write
  is skipped when ``is_noop`` says the apply would change nothing. An existing object
  whose controller is another object is never touched (an error: the API server would
  refuse a second controller reference anyway); one without a controller is adopted.
* Create-only: the immutable content-addressed ConfigMap and backends Secret. One that
  exists and is controlled by this Glance is left alone (same name, same content); one
  that is not is an error and is never overwritten.
* Pruning: the copies listed by the config-base label that this Glance controls, other
  than the current one and those the live Deployment mounts, are kept newest first up
  to three (``content_address.retained_copies``) and the rest deleted.
* Disabled optional kinds: deleted when the live object is controlled by this Glance;
  anyone else's is left alone. The HTTPRoute is not touched at all while the cluster
  does not serve the Gateway API.
* Deployment: the selector is immutable, so a live Deployment of ours with another
  selector is deleted (background) and created again on a later pass. While autoscaling
  is set the desired object has no ``spec.replicas``: the API server defaults a new
  Deployment to 1 and the HPA owns the field from then on. A field an apply omits stays
  as it is unless the applying manager owned it, in which case SSA removes it (and
  ``replicas`` would fall back to 1); so when our manager still owns ``spec.replicas``
  (autoscaling was just switched on), an apply of only ``spec.replicas`` at its live
  value under the manager ``c5c3-glance-operator-hpa-handover`` comes first, which keeps
  the value owned while our manager lets go of it (the Kubernetes documentation's
  hand-over to an HPA).
* Service: the selector is ``live_state.service_selector`` (latched narrowing). The
  clusterIP guard: the desired Service never sets ``clusterIP``, ``clusterIPs`` or
  ``ipFamilies``, so SSA keeps the live ones; should it ever set one that differs, or
  should the apply turn an ExternalName Service into one that gets a cluster IP, the
  action is an error instead of a write.
* The database Jobs, db-sync and the upgrade phase Jobs (the rerun key): absent →
  create. A running Job is left to finish. A Complete or Failed Job whose
  ``cobaltcore.c5c3.io/pod-spec-hash`` differs from the desired one is deleted
  (background) and created on a later pass; a Failed Job with the same hash is left as
  it is (DBSyncFailed or the phase's failure until the spec changes or someone deletes
  the Job). ``delete_action`` deletes a phase Job when an upgrade is aborted.
* An object being deleted is waited for (``none``): writing to it would race its removal.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.desired.content_address import (
    retained_copies,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects import keys as ok
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.metadata import (
    POD_SPEC_HASH_ANNOTATION,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.role_templates import KINDS
from ansible_collections.c5c3.glance.plugins.module_utils.gosemantics.quantity import parse_quantity
from ansible_collections.c5c3.glance.plugins.module_utils.kube import live_state as ls

FIELD_MANAGER = "c5c3-glance-operator"
HPA_HANDOVER_MANAGER = "c5c3-glance-operator-hpa-handover"
BACKGROUND = "Background"

APPLY = "apply"
CREATE = "create"
DELETE = "delete"
NONE = "none"
VERBS = (APPLY, CREATE, DELETE, NONE)

# --- Action.reason ---------------------------------------------------------------------
ABSENT = "absent"  # not there yet: create or apply
CHANGED = "changed"  # an apply changes the live object
UNCHANGED = "unchanged"  # an apply would change nothing: skipped
EXISTS = "exists"  # a content-addressed copy of ours already exists
NOT_WANTED = "not-wanted"  # an optional kind whose spec block is unset
NOT_YET = "not-yet"  # no desired object yet: the live one is kept
FOREIGN = "foreign"  # a disabled kind's live object is someone else's: left alone
CONFLICT = "conflict"  # the name is taken by an object this Glance does not control
DELETING = "deleting"  # the live object is being deleted: wait for it
PRUNED = "pruned"  # an old content-addressed copy beyond the three newest
SELECTOR_CHANGED = "selector-changed"  # the Deployment is re-created
REPLICAS_HANDOVER = "replicas-handover"  # spec.replicas handed to the HPA
CLUSTER_IP_IMMUTABLE = "cluster-ip-immutable"  # the Service guard refused
NO_GATEWAY_API = "no-gateway-api"  # the cluster serves no HTTPRoute
JOB_RUNNING = "job-running"
JOB_COMPLETE = "job-complete"
JOB_FAILED = "job-failed"
RERUN = "rerun-key-changed"  # a finished Job of an older pod template is deleted

CREATE_ONLY = (ok.CONFIG_MAP, ok.BACKENDS_SECRET)
# The order the apply step writes in: what others reference first, deletions last.
APPLY_ORDER = (
    ok.CONFIG_MAP,
    ok.BACKENDS_SECRET,
    ok.DB_CONNECTION_SECRET,
    *ok.MARIADB_OBJECTS,
    ok.HPA,
    ok.NETWORK_POLICY,
    ok.HTTP_ROUTE,
    ok.DB_PURGE_CRONJOB,
    *ok.DB_JOBS,
    ok.DEPLOYMENT,
    ok.SERVICE,
    ok.PDB,
)
GUARDED_SERVICE_FIELDS = ("clusterIP", "clusterIPs", "ipFamilies")
_QUANTITY_KEYS = frozenset({"sizeLimit"})


@dataclass(frozen=True)
class Action:
    """One decision about one object: send ``object`` with ``verb``, or do nothing.

    ``verb`` is one of ``apply`` (server-side apply with ``field_manager``, force),
    ``create``, ``delete`` (with ``propagation_policy`` when set) or ``none``. ``reason``
    is one of this module's reason constants; ``error`` is set on a ``none`` the pass
    must report (a conflict the operator refuses to resolve by overwriting). ``key`` is
    the desired_objects key the action belongs to (``""`` for none).
    """

    kind: str
    api_version: str
    name: str
    verb: str
    reason: str
    object: dict[str, Any] | None = None
    key: str = ""
    namespace: str = ""
    error: str = ""
    field_manager: str = FIELD_MANAGER
    propagation_policy: str | None = None

    @property
    def writes(self) -> bool:
        """The action is an API write."""
        return self.verb != NONE

    def as_dict(self) -> dict[str, Any]:
        """The action as plain data, for a module's arguments or a report."""
        return {
            "kind": self.kind,
            "api_version": self.api_version,
            "name": self.name,
            "namespace": self.namespace,
            "verb": self.verb,
            "reason": self.reason,
            "key": self.key,
            "error": self.error,
            "field_manager": self.field_manager,
            "propagation_policy": self.propagation_policy,
            "object": self.object,
        }


def _action(
    key: str,
    verb: str,
    reason: str,
    name: str,
    namespace: str,
    obj: Mapping[str, Any] | None = None,
    **extra: Any,
) -> Action:
    api_version, kind = KINDS[key].api_version, KINDS[key].kind
    return Action(
        kind=kind,
        api_version=api_version,
        name=name,
        verb=verb,
        reason=reason,
        object=copy.deepcopy(dict(obj)) if obj is not None else None,
        key=key,
        namespace=namespace,
        **extra,
    )


def _name_ns(obj: Mapping[str, Any] | None) -> tuple[str, str]:
    metadata = ls.meta(obj)
    return str(metadata.get("name", "")), str(metadata.get("namespace", ""))


def conflict_message(kind: str, obj: Mapping[str, Any] | None) -> str:
    """Why an existing object of an owned name is left alone, and what to do about it."""
    name, namespace = _name_ns(obj)
    return (
        f"{kind} {namespace}/{name} exists and is controlled by {ls.describe_controller(obj)}, "
        "not by this Glance; the operator never overwrites an object it does not control: "
        "delete or rename that object"
    )


# ---------------------------------------------------------------------------------------
# is_noop: would a server-side apply change anything?


def _scalar_equal(want: Any, have: Any, path: tuple[str, ...]) -> bool:
    if want == have and type(want) is type(have):
        return True
    if isinstance(want, bool) or isinstance(have, bool):
        return False
    if isinstance(want, int | float) and isinstance(have, int | float):
        return want == have
    quantity = "resources" in path or (path and path[-1] in _QUANTITY_KEYS)
    if quantity and isinstance(want, str | int) and isinstance(have, str | int):
        try:
            return parse_quantity(str(want)) == parse_quantity(str(have))
        except ValueError:
            return False
    return False


def _covered(want: Any, have: Any, path: tuple[str, ...] = ()) -> bool:
    """Every field ``want`` sets has the same value in ``have``.

    Maps are compared by the keys ``want`` has (SSA merges maps field by field); lists
    must have the same length and match element by element (an extra live element
    would be kept by other managers, but one our manager dropped would go: both count as
    a change, which costs one write at worst). An empty map or list in ``want`` matches
    an absent one. Quantities compare by value under ``resources`` and ``sizeLimit``.
    """
    if isinstance(want, Mapping):
        if have is None:
            return not want
        if not isinstance(have, Mapping):
            return False
        for key, value in want.items():
            if key not in have:
                if value in ({}, []):
                    continue
                return False
            if not _covered(value, have[key], (*path, str(key))):
                return False
        return True
    if isinstance(want, list):
        if have is None:
            return not want
        if not isinstance(have, list) or len(want) != len(have):
            return False
        return all(_covered(w, h, path) for w, h in zip(want, have, strict=True))
    return _scalar_equal(want, have, path)


def _field_paths(fields: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> Iterable[tuple]:
    """The field paths of a ``fieldsV1`` tree, a list counting as one field."""
    for key, child in fields.items():
        if not key.startswith("f:"):
            continue
        path = (*prefix, key[2:])
        children = [k for k in (child or {}) if k != "."]
        if not children or any(not k.startswith("f:") for k in children):
            yield path
        else:
            yield from _field_paths(child, path)


def owned_paths(live: Mapping[str, Any] | None, manager: str = FIELD_MANAGER) -> set[tuple]:
    """The field paths ``manager`` owns on ``live`` through server-side apply.

    Read from ``metadata.managedFields`` (operation ``Apply``, no subresource); a list is
    one path, its elements are not told apart.
    """
    paths: set[tuple] = set()
    for entry in ls.meta(live).get("managedFields") or []:
        if entry.get("manager") != manager or entry.get("operation") != "Apply":
            continue
        if entry.get("subresource"):
            continue
        paths.update(_field_paths(entry.get("fieldsV1") or {}))
    return paths


def _sets(obj: Any, path: tuple[str, ...]) -> bool:
    for part in path:
        if isinstance(obj, list):
            return True
        if not isinstance(obj, Mapping) or part not in obj:
            return False
        obj = obj[part]
    return True


def is_noop(
    live: Mapping[str, Any] | None, desired: Mapping[str, Any], manager: str = FIELD_MANAGER
) -> bool:
    """Whether a server-side apply of ``desired`` by ``manager`` would change nothing on ``live``.

    Only the fields ``desired`` sets are compared (``_covered``); a field ``manager``
    owns on ``live`` that ``desired`` no longer sets would be removed by the apply, so it
    counts as a change too. No live object: never a no-op.
    """
    if live is None:
        return False
    if not _covered(desired, live):
        return False
    return all(_sets(desired, path) for path in owned_paths(live, manager))


# ---------------------------------------------------------------------------------------
# per-kind decisions


def create_only_action(
    key: str, desired: Mapping[str, Any], existing: Mapping[str, Any] | None, owner_uid: str
) -> Action:
    """The decision for an immutable content-addressed object of the desired name.

    ``existing`` is the live object of that name (from the label listing, or read after
    a create met AlreadyExists), or None.
    """
    name, namespace = _name_ns(desired)
    if existing is None:
        return _action(key, CREATE, ABSENT, name, namespace, desired)
    if ls.controlled_by(existing, owner_uid):
        if ls.is_deleting(existing):
            return _action(key, NONE, DELETING, name, namespace)
        return _action(key, NONE, EXISTS, name, namespace)
    return _action(
        key,
        NONE,
        CONFLICT,
        name,
        namespace,
        error=conflict_message(KINDS[key].kind, existing),
    )


def ssa_action(
    key: str, desired: Mapping[str, Any], live: Mapping[str, Any] | None, owner_uid: str
) -> Action:
    """Server-side apply of ``desired`` unless it would change nothing on ``live``."""
    name, namespace = _name_ns(desired)
    if live is None:
        return _action(key, APPLY, ABSENT, name, namespace, desired)
    if ls.is_deleting(live):
        return _action(key, NONE, DELETING, name, namespace)
    if ls.controlled_by_other(live, owner_uid):
        return _action(
            key, NONE, CONFLICT, name, namespace, error=conflict_message(KINDS[key].kind, live)
        )
    if is_noop(live, desired):
        return _action(key, NONE, UNCHANGED, name, namespace)
    return _action(key, APPLY, CHANGED, name, namespace, desired)


def absent_action(key: str, live: Mapping[str, Any] | None, owner_uid: str) -> Action:
    """The decision when ``desired`` has None for ``key`` (see the module docstring)."""
    if key not in ok.OPTIONAL_OBJECTS:
        return _action(key, NONE, NOT_YET, *_name_ns(live))
    return _delete_if_ours(key, live, owner_uid)


def _selector(obj: Mapping[str, Any] | None) -> Any:
    return ((obj or {}).get("spec") or {}).get("selector")


def deployment_actions(
    desired: Mapping[str, Any], live: Mapping[str, Any] | None, owner_uid: str
) -> list[Action]:
    """The Deployment: the selector recreate rule, the replicas hand-over, then apply."""
    key = ok.DEPLOYMENT
    name, namespace = _name_ns(desired)
    if live is None or ls.is_deleting(live) or ls.controlled_by_other(live, owner_uid):
        return [ssa_action(key, desired, live, owner_uid)]
    if _selector(live) != _selector(desired):
        if not ls.controlled_by(live, owner_uid):
            return [
                _action(
                    key,
                    NONE,
                    CONFLICT,
                    name,
                    namespace,
                    error=(
                        f"Deployment {namespace}/{name} has the selector {_selector(live)} and "
                        f"this Glance needs {_selector(desired)}; a selector is immutable and "
                        "the operator deletes only a Deployment it controls: delete it"
                    ),
                )
            ]
        return [
            _action(key, DELETE, SELECTOR_CHANGED, name, namespace, propagation_policy=BACKGROUND)
        ]
    actions = []
    spec = desired.get("spec") or {}
    if "replicas" not in spec and ("spec", "replicas") in owned_paths(live):
        handover = {
            "apiVersion": desired["apiVersion"],
            "kind": desired["kind"],
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": ls.desired_replicas(live)},
        }
        actions.append(
            _action(
                key,
                APPLY,
                REPLICAS_HANDOVER,
                name,
                namespace,
                handover,
                field_manager=HPA_HANDOVER_MANAGER,
            )
        )
    actions.append(ssa_action(key, desired, live, owner_uid))
    return actions


def cluster_ip_problem(desired: Mapping[str, Any], live: Mapping[str, Any] | None) -> str | None:
    """Why applying ``desired`` would change the live Service's cluster IPs, or None."""
    if live is None:
        return None
    want = desired.get("spec") or {}
    have = live.get("spec") or {}
    name, namespace = _name_ns(live)
    for field_name in GUARDED_SERVICE_FIELDS:
        if field_name in want and field_name in have and want[field_name] != have[field_name]:
            return (
                f"Service {namespace}/{name}: the operator never changes spec.{field_name} "
                f"({have[field_name]!r} live, {want[field_name]!r} desired)"
            )
    if have.get("type") == "ExternalName" and want.get("type", "ClusterIP") != "ExternalName":
        return (
            f"Service {namespace}/{name} is of type ExternalName; turning it into a "
            f"{want.get('type', 'ClusterIP')} Service would allocate cluster IPs: delete it"
        )
    return None


def service_action(
    desired: Mapping[str, Any],
    live: Mapping[str, Any] | None,
    live_deployment: Mapping[str, Any] | None,
    owner_uid: str,
) -> Action:
    """The Service: the latched selector, the clusterIP guard, then apply."""
    key = ok.SERVICE
    wanted = copy.deepcopy(dict(desired))
    spec = wanted.setdefault("spec", {})
    spec["selector"] = ls.service_selector(spec.get("selector") or {}, live, live_deployment)
    problem = None
    if live is not None and not ls.controlled_by_other(live, owner_uid):
        problem = cluster_ip_problem(wanted, live)
    if problem is not None:
        name, namespace = _name_ns(wanted)
        return _action(key, NONE, CLUSTER_IP_IMMUTABLE, name, namespace, error=problem)
    return ssa_action(key, wanted, live, owner_uid)


def pod_spec_hash_of(job: Mapping[str, Any] | None) -> str:
    """The ``cobaltcore.c5c3.io/pod-spec-hash`` annotation of a Job (``""`` when absent)."""
    return str((ls.meta(job).get("annotations") or {}).get(POD_SPEC_HASH_ANNOTATION, ""))


def job_action(
    desired: Mapping[str, Any],
    live: Mapping[str, Any] | None,
    owner_uid: str,
    key: str = ok.DB_SYNC_JOB,
) -> Action:
    """A database Job (``DB_JOBS``) under the rerun-key rule (see the module docstring)."""
    name, namespace = _name_ns(desired)
    if live is None:
        return _action(key, CREATE, ABSENT, name, namespace, desired)
    if ls.is_deleting(live):
        return _action(key, NONE, DELETING, name, namespace)
    if not ls.controlled_by(live, owner_uid):
        return _action(key, NONE, CONFLICT, name, namespace, error=conflict_message("Job", live))
    state = ls.job_state(live)
    if state == ls.JOB_RUNNING:
        return _action(key, NONE, JOB_RUNNING, name, namespace)
    if pod_spec_hash_of(live) != pod_spec_hash_of(desired):
        return _action(key, DELETE, RERUN, name, namespace, propagation_policy=BACKGROUND)
    if state == ls.JOB_FAILED:
        return _action(key, NONE, JOB_FAILED, name, namespace)
    return _action(key, NONE, JOB_COMPLETE, name, namespace)


def delete_action(key: str, live: Mapping[str, Any] | None, owner_uid: str) -> Action:
    """Delete the live object of ``key`` (background propagation), if it is ours.

    Absent, already being deleted or someone else's: nothing to do (``none``).
    """
    return _delete_if_ours(key, live, owner_uid, propagation_policy=BACKGROUND)


def _delete_if_ours(
    key: str, live: Mapping[str, Any] | None, owner_uid: str, **extra: Any
) -> Action:
    """DELETE (with ``extra``) when ``live`` exists, is not being deleted and is ours."""
    name, namespace = _name_ns(live)
    if live is None:
        return _action(key, NONE, NOT_WANTED, name, namespace)
    if ls.is_deleting(live):
        return _action(key, NONE, DELETING, name, namespace)
    if not ls.controlled_by(live, owner_uid):
        return _action(key, NONE, FOREIGN, name, namespace)
    return _action(key, DELETE, NOT_WANTED, name, namespace, **extra)


SWEPT = "swept"  # a child on a target cluster of a Glance being deleted


def sweep_action(obj: Mapping[str, Any], owner_uid: str) -> Action:
    """Delete ``obj`` (background propagation), a child listed on a target cluster for the
    deletion sweep, if it is ours and not already being deleted."""
    name, namespace = _name_ns(obj)
    ours = ls.controlled_by(obj, owner_uid) and not ls.is_deleting(obj)
    return Action(
        kind=str(obj.get("kind") or ""),
        api_version=str(obj.get("apiVersion") or ""),
        name=name,
        verb=DELETE if ours else NONE,
        reason=SWEPT if ours else FOREIGN,
        namespace=namespace,
        propagation_policy=BACKGROUND if ours else None,
    )


def prune_actions(
    key: str,
    current: str,
    listed: Sequence[Mapping[str, Any]],
    keep_names: Iterable[str],
    owner_uid: str,
) -> list[Action]:
    """Delete the copies of ``key`` beyond the three newest of ours (never ``keep_names``)."""
    if not current:
        return []
    keep = set(keep_names) | {current}
    candidates = [
        {
            "name": ls.meta(obj).get("name", ""),
            "creationTimestamp": ls.meta(obj).get("creationTimestamp"),
            "owned": ls.controlled_by(obj, owner_uid),
        }
        for obj in listed
        if not ls.is_deleting(obj)
    ]
    _, deleted = retained_copies(candidates, current)
    namespaces = {ls.meta(obj).get("name"): ls.meta(obj).get("namespace", "") for obj in listed}
    return [
        _action(key, DELETE, PRUNED, name, str(namespaces.get(name, "")))
        for name in deleted
        if name not in keep
    ]


# ---------------------------------------------------------------------------------------
# the whole decision


@dataclass(frozen=True)
class _Context:
    live: ls.LiveObjects
    owner_uid: str
    mounted: tuple[str, str] = field(default=("", ""))


def _key_actions(key: str, want: Mapping[str, Any] | None, ctx: _Context) -> list[Action]:
    live = ctx.live
    if key in CREATE_ONLY:
        if want is None:
            return [_action(key, NONE, NOT_YET, "", "")]
        return [
            create_only_action(key, want, live.copy_named(key, _name_ns(want)[0]), ctx.owner_uid)
        ]
    if key == ok.HTTP_ROUTE and not live.gateway_api:
        name, namespace = _name_ns(want)
        return [_action(key, NONE, NO_GATEWAY_API, name, namespace)]
    current = live.get(key)
    if want is None:
        return [absent_action(key, current, ctx.owner_uid)]
    if key == ok.DEPLOYMENT:
        return deployment_actions(want, current, ctx.owner_uid)
    if key == ok.SERVICE:
        return [service_action(want, current, live.deployment, ctx.owner_uid)]
    if key in ok.DB_JOBS:
        return [job_action(want, current, ctx.owner_uid, key)]
    return [ssa_action(key, want, current, ctx.owner_uid)]


def apply_actions(
    desired: Mapping[str, Mapping[str, Any] | None], live: ls.LiveObjects, owner_uid: str
) -> list[Action]:
    """Every action of a pass over ``desired`` (see the module docstring), in write order.

    The pruning of old content-addressed copies comes last, after the Deployment has been
    pointed at the current ones.
    """
    ctx = _Context(live, owner_uid, ls.mounted_artifacts(live.deployment))
    actions: list[Action] = []
    for key in APPLY_ORDER:
        if key in desired:
            actions.extend(_key_actions(key, desired[key], ctx))
    for index, key in enumerate(CREATE_ONLY):
        if key not in desired:
            continue
        want = desired[key]
        current = _name_ns(want)[0] if want is not None else ctx.mounted[index]
        actions.extend(prune_actions(key, current, live.listed(key), ctx.mounted, owner_uid))
    return actions


def writes(actions: Iterable[Action]) -> list[Action]:
    """The actions that are API writes."""
    return [a for a in actions if a.writes]


def for_key(actions: Iterable[Action], key: str) -> list[Action]:
    """The actions of one desired_objects key, in order."""
    return [a for a in actions if a.key == key]


def errors(actions: Iterable[Action]) -> list[Action]:
    """The actions carrying an error the pass must report."""
    return [a for a in actions if a.error]
