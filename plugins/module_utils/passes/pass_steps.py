# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""The three steps of a pass that talk to the cluster: gather, apply, report.

Each step is one function from its validated parameters to its result (a plain dict, with
``failed`` and ``msg`` when the cluster could not be read or refused a write), and one
argument spec. The modules ``plugins/modules/{gather,apply,report}.py`` wrap them for a
module process; the action plugins of the same names run them in the playbook's own
process (``docs/reconcile.md``, "Where a pass's time goes"). So both paths do exactly the
same requests and return exactly the same results.

* ``gather(params)``: the reads of one Glance or GlanceBackend pass (``pass_reads``), and
  the health probe once the Deployment is ready; for a Glance being deleted, only its
  MariaDB resources (managed mode) and, on a target cluster, the children to sweep.
  Reads only.
* ``apply(params, check_mode)``: the decided actions in order, and the finalizer change:
  an addition before the first write, a removal after the last.
* ``report(params, check_mode)``: the status merge patch and the events.

A Glance naming a target cluster (``spec.targetClusterRef``, ``kube/target_cluster.py``)
is read, patched (its finalizers) and reported on in the management cluster, the one the
connection options name; its children are read and written in the target cluster, whose
client gather and apply build from the registration Secret (``clusters_namespace``). A
target that cannot be resolved or does not answer is no failure of the step: gather says
so in ``target_cluster.error`` and the pass reports it (``TargetClusterUnavailable``). A
GlanceBackend follows its parent's target.
"""

from __future__ import annotations

import datetime
import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.desired import glance_secrets as gs
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.metadata import (
    target_cluster,
)
from ansible_collections.c5c3.glance.plugins.module_utils.kube import apply_plan as ap
from ansible_collections.c5c3.glance.plugins.module_utils.kube import live_state as ls
from ansible_collections.c5c3.glance.plugins.module_utils.kube import target_cluster as tc
from ansible_collections.c5c3.glance.plugins.module_utils.kube.kube_client import (
    ApiError,
    KubeClient,
    KubeConfigError,
)
from ansible_collections.c5c3.glance.plugins.module_utils.kube.kube_module import (
    CONNECTION_OPTIONS,
    client_from_params,
    operator_namespace,
)
from ansible_collections.c5c3.glance.plugins.module_utils.passes import pass_reads as pr
from ansible_collections.c5c3.glance.plugins.module_utils.passes.glance.decide import is_active
from ansible_collections.c5c3.glance.plugins.module_utils.passes.glance.pass_state import (
    FINALIZER,
    REMOTE_CHILDREN_FINALIZER,
    job_uid_suffix,
)
from ansible_collections.c5c3.glance.plugins.module_utils.passes.probe import probe_health

GATHER_SPEC: dict[str, dict[str, Any]] = {
    "kind": {"type": "str", "required": True, "choices": ["Glance", "GlanceBackend"]},
    "name": {"type": "str", "required": True},
    "namespace": {"type": "str", "required": True},
    "object": {"type": "dict"},
    "health_check": {"type": "bool", "default": True},
    "health_timeout": {"type": "float", "default": 10.0},
    "clusters_namespace": {"type": "str", "default": tc.DEFAULT_CLUSTERS_NAMESPACE},
    **CONNECTION_OPTIONS,
}

APPLY_SPEC: dict[str, dict[str, Any]] = {
    "actions": {"type": "list", "elements": "dict", "default": []},
    "object": {"type": "dict", "required": True},
    "finalizer": {"type": "str", "choices": ["add", "remove"]},
    "finalizer_names": {"type": "list", "elements": "str", "default": [FINALIZER]},
    "annotations": {"type": "dict", "default": {}},
    "target_cluster": {"type": "str"},
    "clusters_namespace": {"type": "str", "default": tc.DEFAULT_CLUSTERS_NAMESPACE},
    **CONNECTION_OPTIONS,
}

REPORT_SPEC: dict[str, dict[str, Any]] = {
    "object": {"type": "dict", "required": True},
    "status_patch": {"type": "dict"},
    "events": {"type": "list", "elements": "dict", "default": []},
    "component": {"type": "str", "default": "c5c3-glance-operator"},
    **CONNECTION_OPTIONS,
}

EVENT_MESSAGE_LIMIT = 1024

_ERRORS = (ApiError, KubeConfigError, OSError)


def _requests(client: KubeClient | None) -> int:
    return client.requests if client else 0


# -- gather ---------------------------------------------------------------------------------


def _read(client: KubeClient, read: pr.Read) -> list:
    """The objects one read returns (a GET: zero or one)."""
    if read.name is not None:
        obj = client.get(read.api_version, read.kind, read.name, read.namespace)
        if obj is None:
            return []
        obj.setdefault("apiVersion", read.api_version)
        obj.setdefault("kind", read.kind)
        return [obj]
    return client.list(
        read.api_version, read.kind, read.namespace, label_selector=read.label_selector
    )


def gather_glance(
    client: KubeClient, children: KubeClient, glance: dict, health_check: bool, timeout: float
) -> dict:
    """The reads of an active Glance: its namespace's GlanceBackends where the Glance is
    (``client``), everything else where its children are (``children``)."""
    namespace = glance["metadata"]["namespace"]
    backends = client.list(pr.GROUP_VERSION, "GlanceBackend", namespace)
    return {
        "backends": backends,
        **_gather_children(children, glance, backends, health_check, timeout),
    }


def _gather_children(
    client: KubeClient, glance: dict, backends: list, health_check: bool, timeout: float
) -> dict:
    gateway_api = client.serves(pr.HTTP_ROUTE_API, "HTTPRoute")
    eso_api = client.serves(gs.EXTERNAL_SECRETS_API, "ExternalSecret")
    secrets, configmaps, owned, external_secrets = [], [], [], []
    secret_store = cluster = None
    for read in pr.glance_reads(glance, backends, gateway_api, eso_api):
        found = _read(client, read)
        if read.owned:
            owned.extend(found)
        elif read.kind == "Secret":
            secrets.extend(found)
        elif read.kind == "MariaDB":
            cluster = found[0] if found else None
        elif read.kind == "ExternalSecret":
            external_secrets.extend(found)
        elif read.api_version == gs.EXTERNAL_SECRETS_API:
            secret_store = found[0] if found else None
        else:
            configmaps.extend(found)
    live = ls.live_objects(glance["metadata"]["name"], owned, gateway_api=gateway_api)
    health = None
    if health_check and ls.deployment_ready(live.deployment):
        health = probe_health(client, glance, timeout)
    return {
        "secrets": secrets,
        "configmaps": configmaps,
        "owned": owned,
        "gateway_api": gateway_api,
        "secret_store": secret_store,
        "external_secrets": external_secrets,
        "database_cluster": cluster,
        "health": health,
        "operator_namespace": operator_namespace(),
    }


def _sweep(client: KubeClient, glance: dict) -> list:
    """The children a target cluster holds of a Glance being deleted (``pr.sweep_reads``);
    a kind the cluster does not serve has none."""
    found: list = []
    for read in pr.sweep_reads(glance):
        try:
            listed = _read(client, read)
        except ApiError as exc:
            if not exc.not_found:
                raise
            continue
        for obj in listed:
            obj.setdefault("apiVersion", read.api_version)
            obj.setdefault("kind", read.kind)
        found.extend(listed)
    return found


def gather_deleting(children: KubeClient, glance: dict, remote: bool) -> dict:
    """A Glance being deleted: its MariaDB resources (managed mode) and, when its children
    are on a target cluster, every child to sweep there."""
    out: dict = {"owned": [o for read in pr.deletion_reads(glance) for o in _read(children, read)]}
    if remote:
        out["remote_children"] = _sweep(children, glance)
    return out


def gather_backend(
    client: KubeClient, children: KubeClient, backend: dict, parent: dict | None
) -> dict:
    """A GlanceBackend's reads: the parent (read by the caller, where the Glance is), its
    credentials Secret, the parent's Deployment and the backends Secret it mounts, where
    the parent's children are."""
    out: dict = {"parent": parent, "secrets": [], "parent_deployment": None, "mounted_secret": None}
    for read in pr.backend_reads(backend):
        if read.kind == "Glance":
            continue
        found = _read(children, read)
        if read.kind == "Secret":
            out["secrets"].extend(found)
        elif read.kind == "Deployment":
            out["parent_deployment"] = found[0] if found else None
    _, mounted = ls.mounted_artifacts(out["parent_deployment"])
    if mounted:
        out["mounted_secret"] = children.get(
            "v1", "Secret", mounted, backend["metadata"]["namespace"]
        )
    return out


def _parent_of(client: KubeClient, backend: dict) -> dict | None:
    for read in pr.backend_reads(backend):
        if read.kind == "Glance":
            found = _read(client, read)
            return found[0] if found else None
    return None


def children_of(
    client: KubeClient, owner: dict | None, p: Mapping[str, Any]
) -> tuple[KubeClient | None, dict | None]:
    """The client of the cluster ``owner``'s children live in: ``client`` itself, or the
    target cluster's (with what ``target_cluster`` reports: name, registration, server, and
    ``error`` when it cannot be resolved - then no client)."""
    name = target_cluster(owner) if owner else None
    if name is None:
        return client, None
    info: dict = {"name": name, "registration": tc.registration_name(name, p["clusters_namespace"])}
    try:
        target = tc.resolve(
            client, name, p["clusters_namespace"], float(p.get("request_timeout") or 30.0)
        )
    except tc.Unavailable as exc:
        return None, {**info, "error": str(exc)}
    return target.client, {**info, "server": target.client.connection.server, "error": None}


def _unanswered(info: dict, exc: Exception) -> dict:
    return {
        **info,
        "error": f'target cluster "{info["name"]}" ({info.get("server")}) does not answer: {exc}',
    }


def unnamed(kind: str) -> str:
    """What gather says when it is not told which object to read: the playbook's variables."""
    var = kind.lower()
    return (
        f"name the {kind}: its name and namespace are empty (ansible-playbook "
        f"playbooks/{var}.yml -e {var}_name=<name> -e {var}_namespace=<namespace>)"
    )


def gather(p: Mapping[str, Any]) -> dict[str, Any]:
    """The gather step (``plugins/modules/gather.py`` documents the result)."""
    if not (p["name"] and p["namespace"]):
        return {"failed": True, "msg": unnamed(p["kind"])}
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    client = children = None
    try:
        client = client_from_params(p)
        obj = p["object"]
        if not obj:
            obj = client.get(pr.GROUP_VERSION, p["kind"], p["name"], p["namespace"])
        result: dict = {"found": obj is not None, "object": obj, "now": now}
        if obj is not None:
            obj.setdefault("apiVersion", pr.GROUP_VERSION)
            obj.setdefault("kind", p["kind"])
            if p["kind"] == "Glance":
                result.update(_gather_glance_pass(client, obj, p))
                children = result.pop("_children", None)
            else:
                parent = _parent_of(client, obj)
                children, info = children_of(client, parent, p)
                if info is not None:
                    result["target_cluster"] = info
                if children is not None:
                    try:
                        result.update(gather_backend(client, children, obj, parent))
                    except _ERRORS as exc:
                        if children is client or info is None:
                            raise
                        result["target_cluster"] = _unanswered(info, exc)
                        children = None
                else:
                    result["parent"] = parent
    except _ERRORS as exc:
        return {
            "failed": True,
            "msg": f"gather {p['kind']} {p['namespace']}/{p['name']}: {exc}",
            "api_requests": _requests(client) + _remote_requests(client, children),
        }
    result["api_requests"] = client.requests + _remote_requests(client, children)
    result["changed"] = False
    return result


def _remote_requests(client: KubeClient | None, children: KubeClient | None) -> int:
    return children.requests if children is not None and children is not client else 0


def _gather_glance_pass(client: KubeClient, glance: dict, p: Mapping[str, Any]) -> dict:
    active = is_active(glance)
    out: dict = {"active": active}
    finalizers = (glance.get("metadata") or {}).get("finalizers") or []
    remote = target_cluster(glance) is not None
    if not active and remote and REMOTE_CHILDREN_FINALIZER not in finalizers:
        # Nothing was ever written to the target (the finalizer goes on before the first
        # write there): nothing to read, nothing to sweep.
        out["owned"] = []
        return out
    children, info = children_of(client, glance, p)
    if info is not None:
        out["target_cluster"] = info
    if children is None:
        return out
    try:
        if active:
            out.update(
                gather_glance(client, children, glance, p["health_check"], p["health_timeout"])
            )
        else:
            out.update(gather_deleting(children, glance, remote))
    except _ERRORS as exc:
        if info is None:
            raise
        out = {"active": active, "target_cluster": _unanswered(info, exc)}
    out["_children"] = children
    return out


# -- apply ----------------------------------------------------------------------------------


class Refused(Exception):
    """A write the operator will not make (someone else's object of an owned name)."""


def _create(client: KubeClient, action: dict, owner_uid: str) -> dict:
    obj = action["object"]
    try:
        return client.create(obj, field_manager=action.get("field_manager"))
    except ApiError as exc:
        if not exc.already_exists:
            raise
    existing = client.get(
        action["api_version"], action["kind"], action["name"], action["namespace"]
    )
    again = ap.create_only_action(action.get("key") or "", obj, existing, owner_uid)
    if again.error:
        raise Refused(again.error)
    return existing or {}


def perform(client: KubeClient, action: dict, owner_uid: str) -> dict:
    """One write; the object the API server answered with (or {} for a delete)."""
    verb = action["verb"]
    if verb == ap.APPLY:
        return client.apply(action["object"], action.get("field_manager") or ap.FIELD_MANAGER)
    if verb == ap.CREATE:
        return _create(client, action, owner_uid)
    if verb == ap.DELETE:
        return (
            client.delete(
                action["api_version"],
                action["kind"],
                action["name"],
                action["namespace"],
                propagation_policy=action.get("propagation_policy"),
            )
            or {}
        )
    raise ValueError(f"unknown verb {verb!r}")


def finalizer_patch(
    reference: Mapping[str, Any], change: str, names: str | Sequence[str]
) -> dict | None:
    """The merge patch adding or removing the finalizers ``names`` (one patch, carrying the
    resourceVersion read); None when there is nothing to do."""
    names = [names] if isinstance(names, str) else list(names)
    current = list(reference.get("finalizers") or [])
    if change == "add" and any(n not in current for n in names):
        wanted = [*current, *(n for n in names if n not in current)]
    elif change == "remove" and any(n in current for n in names):
        wanted = [f for f in current if f not in names]
    else:
        return None
    return {"metadata": {"finalizers": wanted, "resourceVersion": reference["resource_version"]}}


DEFERRED_REASONS = {"db-purge": "DBPurgeMetricEmissionDeferred"}
"""The Warning event's reason when a finished Job's record cannot be written, by Job kind
(the reference's); every other kind (db-sync, the upgrade phases) DBSyncMetricEmissionDeferred."""


def record_finished(
    client: Any, ref: Mapping[str, Any], annotations: Mapping[str, str], resource_version: str
) -> list[dict[str, str]]:
    """Patch the finished Jobs' UIDs onto the custom resource (``annotations``; at the
    resourceVersion read, so a newer edit is never overwritten); the Warning events when
    that failed. Best effort, as the reference's RecordJobTerminalState: a failure is no
    failure of the pass, the next pass records them (and the runner counts them) then."""
    patch = {"metadata": {"annotations": dict(annotations), "resourceVersion": resource_version}}
    try:
        client.patch(ref["api_version"], ref["kind"], ref["name"], ref["namespace"], patch)
    except (*_ERRORS, Refused) as exc:
        # The API server's words, as the reference's %v of the client's error gives them.
        detail = exc.message if isinstance(exc, ApiError) and exc.message else str(exc)
        suffixes = sorted({job_uid_suffix(key) or key for key in annotations})
        return [
            {
                "type": "Warning",
                "reason": DEFERRED_REASONS.get(suffix, "DBSyncMetricEmissionDeferred"),
                "message": f"Patching last-observed {suffix} Job UID failed; metric emission "
                f"deferred to the next reconcile: {detail}",
            }
            for suffix in suffixes
        ]
    return []


def apply(p: Mapping[str, Any], check_mode: bool = False) -> dict[str, Any]:
    """The apply step (``plugins/modules/apply.py`` documents the result). The finalizers
    are patched on the custom resource, the actions written where its children live (the
    target cluster ``target_cluster`` names, else the same cluster); the finished Jobs'
    record (``annotations``) is patched on the custom resource last."""
    ref = p["object"]
    writes = [a for a in p["actions"] if a.get("verb") != ap.NONE]
    patch = finalizer_patch(ref, p["finalizer"], p["finalizer_names"]) if p["finalizer"] else None
    annotations = dict(p.get("annotations") or {})
    written: list[dict] = []
    if check_mode or (not writes and patch is None and not annotations):
        written = [{k: a.get(k) for k in ("verb", "kind", "name", "reason")} for a in writes]
        changed = bool(written or patch or annotations)
        return {"changed": changed, "written": written, "api_requests": 0, "deferred": []}
    client = children = None
    current = None
    deferred: list[dict[str, str]] = []
    finalizer = {"verb": "finalizer", "kind": ref["kind"], "name": ref["name"]}
    done = {"verb": f"{p['finalizer']}-finalizer", "kind": ref["kind"], "name": ref["name"]}
    try:
        client = client_from_params(p)
        children = client
        if writes and p.get("target_cluster"):
            current = {"verb": "resolve", "kind": "target cluster", "name": p["target_cluster"]}
            children = tc.resolve(
                client,
                p["target_cluster"],
                p["clusters_namespace"],
                float(p.get("request_timeout") or 30.0),
            ).client
        resource_version = ref["resource_version"]
        if patch is not None and p["finalizer"] == "add":
            current = finalizer
            answer = client.patch(
                ref["api_version"], ref["kind"], ref["name"], ref["namespace"], patch
            )
            resource_version = ((answer or {}).get("metadata") or {}).get(
                "resourceVersion", resource_version
            )
            written.append(done)
        for action in writes:
            current = action
            answer = perform(children, action, str(ref.get("uid") or ""))
            written.append(
                {
                    **{k: action.get(k) for k in ("verb", "kind", "name", "reason")},
                    "resource_version": (answer.get("metadata") or {}).get("resourceVersion"),
                }
            )
        if patch is not None and p["finalizer"] == "remove":
            current = finalizer
            client.patch(ref["api_version"], ref["kind"], ref["name"], ref["namespace"], patch)
            written.append(done)
        if annotations:
            deferred = record_finished(client, ref, annotations, resource_version)
            if not deferred:
                written.append({"verb": "record", "kind": ref["kind"], "name": ref["name"]})
    except (*_ERRORS, Refused, tc.Unavailable) as exc:
        what = (
            f"{current['verb']} {current['kind']} {ref.get('namespace')}/{current['name']}"
            if current
            else "connect"
        )
        return {
            "failed": True,
            "msg": f"{what}: {exc}",
            "written": written,
            "api_requests": _requests(client) + _remote_requests(client, children),
        }
    return {
        "changed": bool(written),
        "written": written,
        "api_requests": client.requests + _remote_requests(client, children),
        "deferred": deferred,
    }


# -- report ---------------------------------------------------------------------------------


def event_object(
    ref: Mapping[str, Any], event: Mapping[str, Any], component: str, now: datetime.datetime
) -> dict:
    """A core/v1 Event about ``ref`` (named ``<name>.<hex nanoseconds>``, as client-go does)."""
    stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": f"{ref['name']}.{time.time_ns():x}",
            "namespace": ref["namespace"],
        },
        "involvedObject": {
            "apiVersion": ref["api_version"],
            "kind": ref["kind"],
            "name": ref["name"],
            "namespace": ref["namespace"],
            "uid": ref.get("uid"),
        },
        "type": event.get("type") or "Normal",
        "reason": event["reason"],
        "message": str(event.get("message") or "")[:EVENT_MESSAGE_LIMIT],
        "source": {"component": component},
        "reportingComponent": component,
        "reportingInstance": os.environ.get("POD_NAME") or os.uname().nodename,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }


def report(p: Mapping[str, Any], check_mode: bool = False) -> dict[str, Any]:
    """The report step (``plugins/modules/report.py`` documents the result)."""
    ref = p["object"]
    if check_mode or (not p["status_patch"] and not p["events"]):
        return {
            "changed": bool(p["status_patch"] or p["events"]),
            "status_written": False,
            "events_written": 0,
            "api_requests": 0,
        }
    client = None
    status_written, events_written = False, 0
    try:
        client = client_from_params(p)
        if p["status_patch"]:
            try:
                client.patch(
                    ref["api_version"],
                    ref["kind"],
                    ref["name"],
                    ref["namespace"],
                    p["status_patch"],
                    subresource="status",
                )
                status_written = True
            except ApiError as exc:
                if not exc.not_found:
                    raise
        now = datetime.datetime.now(datetime.UTC)
        for event in p["events"]:
            client.create(event_object(ref, event, p["component"], now))
            events_written += 1
    except _ERRORS as exc:
        return {
            "failed": True,
            "msg": f"report {ref.get('kind')} {ref.get('namespace')}/{ref.get('name')}: {exc}",
            "status_written": status_written,
            "events_written": events_written,
            "api_requests": _requests(client),
        }
    return {
        "changed": status_written or events_written > 0,
        "status_written": status_written,
        "events_written": events_written,
        "api_requests": client.requests,
    }


__all__ = [
    "APPLY_SPEC",
    "GATHER_SPEC",
    "REPORT_SPEC",
    "apply",
    "event_object",
    "finalizer_patch",
    "gather",
    "report",
]
