"""A make-believe API server for the decision layer: objects as the API returns them.

``FakeCluster`` keeps live objects as plain dicts with what the API server adds (uid,
resourceVersion, generation, creationTimestamp, managedFields, a few defaulted fields)
and performs ``apply_plan.Action``s the way the apply step would: server-side apply with
field ownership (a field our manager stops applying is removed unless another manager
owns it), create, delete. ``settle`` plays the controllers: Deployments become ready, Jobs
complete, routes are accepted. ``run_pass`` runs one ``decide_pass`` and performs it, the
way gather, apply and report will.
"""

from __future__ import annotations

import base64
import copy
import itertools
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.admission.collection_files import (
    load_catalogs,
    load_crds,
)
from ansible_collections.c5c3.glance.plugins.module_utils.kube import apply_plan as ap
from ansible_collections.c5c3.glance.plugins.module_utils.kube import live_state as ls
from ansible_collections.c5c3.glance.plugins.module_utils.passes.glance.decide import (
    decide_pass,
)
from ansible_collections.c5c3.glance.plugins.module_utils.passes.glance.pass_state import (
    ADD,
    FINALIZER,
    PassResult,
    PlanInputs,
)

NAMESPACE = "openstack"
GLANCE_UID = "0b7c4a8e-1111-4c3d-9e2f-5a6b7c8d9e0f"
START = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def secret(name: str, namespace: str = NAMESPACE, **data: str) -> dict[str, Any]:
    """A Secret as the API returns it (``data`` base64)."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
        "type": "Opaque",
        "data": {k: b64(v) for k, v in data.items()},
    }


def default_secrets(**s3: str) -> list[dict[str, Any]]:
    """The DB, service-user and S3 credentials Secrets of ``support.builders``."""
    s3_data = {"access-key-id": "AKIA", "secret-access-key": "s3cr3t"}
    s3_data.update(s3)
    return [
        secret("glance-db", username="glance", password="db-pass"),
        secret("glance-service-user", password="service-pass"),
        secret("glance-s3", **s3_data),
    ]


def stored(obj: dict[str, Any], uid: str, generation: int = 1, **meta: Any) -> dict[str, Any]:
    """``obj`` as stored: uid, generation, resourceVersion, creationTimestamp added."""
    out = copy.deepcopy(obj)
    out["metadata"].setdefault("namespace", NAMESPACE)
    out["metadata"].update(
        uid=uid,
        generation=generation,
        resourceVersion="1",
        creationTimestamp="2026-03-01T00:00:00Z",
        **meta,
    )
    return out


def owner_ref(uid: str = GLANCE_UID, kind: str = "Glance", name: str = "glance") -> dict:
    api = "glance.openstack.c5c3.io/v1alpha1" if kind == "Glance" else "batch/v1"
    return {
        "apiVersion": api,
        "kind": kind,
        "name": name,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def fields_v1(obj: Any) -> dict[str, Any]:
    """A ``fieldsV1`` tree for the fields ``obj`` sets (lists as single fields)."""
    if not isinstance(obj, dict):
        return {}
    out: dict[str, Any] = {}
    for key, value in obj.items():
        if key in ("apiVersion", "kind"):
            continue
        if isinstance(value, dict) and value:
            out[f"f:{key}"] = {".": {}, **fields_v1(value)}
        else:
            out[f"f:{key}"] = {}
    return out


def _paths(obj: Any, prefix: tuple = ()) -> set[tuple]:
    if not isinstance(obj, dict) or not obj:
        return {prefix} if prefix else set()
    out: set[tuple] = set()
    for key, value in obj.items():
        if key in ("apiVersion", "kind") and not prefix:
            continue
        out |= _paths(value, (*prefix, key))
    return out


def _get(obj: Any, path: tuple) -> Any:
    for part in path:
        obj = obj[part]
    return obj


def _has(obj: Any, path: tuple) -> bool:
    for part in path:
        if not isinstance(obj, dict) or part not in obj:
            return False
        obj = obj[part]
    return True


def _put(obj: dict, path: tuple, value: Any) -> None:
    for part in path[:-1]:
        obj = obj.setdefault(part, {})
    obj[path[-1]] = copy.deepcopy(value)


def _remove(obj: dict, path: tuple) -> None:
    for part in path[:-1]:
        obj = obj.get(part)
        if not isinstance(obj, dict):
            return
    obj.pop(path[-1], None)


def _defaults(obj: dict[str, Any]) -> None:
    """Fields the API server defaults, so a no-op check must ignore what it did not set."""
    kind, spec = obj["kind"], obj.setdefault("spec", {}) if "spec" in obj else None
    if kind == "Deployment":
        spec.setdefault("replicas", 1)
        spec.setdefault("revisionHistoryLimit", 10)
        spec.setdefault("progressDeadlineSeconds", 600)
        pod = spec["template"]["spec"]
        pod.setdefault("dnsPolicy", "ClusterFirst")
        for container in pod["containers"]:
            container.setdefault("imagePullPolicy", "IfNotPresent")
            container.setdefault("terminationMessagePath", "/dev/termination-log")
        for volume in pod["volumes"]:
            if "configMap" in volume:
                volume["configMap"].setdefault("defaultMode", 420)
            if "secret" in volume:
                volume["secret"].setdefault("defaultMode", 420)
    elif kind == "Service":
        spec.setdefault("clusterIP", "10.96.0.42")
        spec.setdefault("clusterIPs", ["10.96.0.42"])
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("sessionAffinity", "None")
    elif kind == "CronJob":
        spec.setdefault("successfulJobsHistoryLimit", 3)
        spec.setdefault("failedJobsHistoryLimit", 1)


class FakeCluster:
    """Live objects of one namespace, by (kind, name); performs actions, plays controllers."""

    def __init__(self, objects: Iterable[dict[str, Any]] = (), gateway_api: bool = True) -> None:
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}
        self.gateway_api = gateway_api
        self._uids = itertools.count(1)
        self._clock = itertools.count(1)
        self.writes: list[ap.Action] = []
        for obj in objects:
            self.objects[(obj["kind"], obj["metadata"]["name"])] = copy.deepcopy(obj)

    # -- reading ----------------------------------------------------------------------
    def get(self, kind: str, name: str) -> dict[str, Any] | None:
        return self.objects.get((kind, name))

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [o for (k, _), o in sorted(self.objects.items()) if k == kind]

    def live(self, glance_name: str = "glance") -> ls.LiveObjects:
        return ls.live_objects(
            glance_name, copy.deepcopy(list(self.objects.values())), gateway_api=self.gateway_api
        )

    # -- writing ----------------------------------------------------------------------
    def _stamp(self) -> str:
        return (START + timedelta(minutes=next(self._clock))).strftime("%Y-%m-%dT%H:%M:%SZ")

    def create(self, obj: dict[str, Any], manager: str = ap.FIELD_MANAGER) -> dict[str, Any]:
        key = (obj["kind"], obj["metadata"]["name"])
        assert key not in self.objects, f"AlreadyExists: {key}"
        new = copy.deepcopy(obj)
        new["metadata"].update(
            uid=f"uid-{next(self._uids)}",
            resourceVersion="1",
            generation=1,
            creationTimestamp=self._stamp(),
            managedFields=[{"manager": manager, "operation": "Apply", "fieldsV1": fields_v1(obj)}],
        )
        _defaults(new)
        self.objects[key] = new
        return new

    def _apply(self, obj: dict[str, Any], manager: str) -> None:
        key = (obj["kind"], obj["metadata"]["name"])
        live = self.objects.get(key)
        if live is None:
            self.create(obj, manager)
            return
        entries = live["metadata"].setdefault("managedFields", [])
        mine = next((e for e in entries if e["manager"] == manager), None)
        others = set()
        for entry in entries:
            if entry is not mine:
                others |= _field_paths(entry["fieldsV1"])
        before = copy.deepcopy(live)
        owned = _field_paths(mine["fieldsV1"]) if mine else set()
        wanted = _paths(obj)
        for path in owned - {p for p in wanted} - others:
            if path[0] != "metadata" or path[1] in ("labels", "annotations"):
                _remove(live, path)
        for path in wanted:
            _put(live, path, _get(obj, path))
        if manager == ap.FIELD_MANAGER or mine is None:
            entries[:] = [e for e in entries if e["manager"] != manager]
            entries.append({"manager": manager, "operation": "Apply", "fieldsV1": fields_v1(obj)})
        _defaults(live)
        if live.get("spec") != before.get("spec"):
            live["metadata"]["generation"] += 1
        if live != before:
            live["metadata"]["resourceVersion"] = str(int(live["metadata"]["resourceVersion"]) + 1)

    def perform(self, actions: Iterable[ap.Action]) -> None:
        for action in actions:
            if not action.writes:
                continue
            self.writes.append(action)
            key = (action.kind, action.name)
            if action.verb == ap.APPLY:
                self._apply(action.object, action.field_manager)
            elif action.verb == ap.CREATE:
                self.create(action.object, action.field_manager)
            elif action.verb == ap.DELETE:
                assert key in self.objects, f"NotFound: {key}"
                del self.objects[key]

    # -- controllers ------------------------------------------------------------------
    def settle(self, deployments: bool = True, jobs: str | None = "Complete", routes: bool = True):
        """Make Deployments ready, Jobs finish (``Complete``/``Failed``), routes accepted."""
        for obj in self.objects.values():
            meta = obj["metadata"]
            if obj["kind"] == "Deployment" and deployments:
                replicas = obj["spec"].get("replicas", 1)
                obj["status"] = ready_deployment_status(meta["generation"], replicas)
            elif obj["kind"] == "Job" and jobs and not (obj.get("status") or {}).get("conditions"):
                obj["status"] = job_status(jobs)
            elif obj["kind"] == "HTTPRoute" and routes:
                obj["status"] = route_status(True, meta["generation"])


def _field_paths(fields: dict) -> set[tuple]:
    return set(ap._field_paths(fields))


def ready_deployment_status(generation: int, replicas: int) -> dict[str, Any]:
    return {
        "observedGeneration": generation,
        "replicas": replicas,
        "updatedReplicas": replicas,
        "readyReplicas": replicas,
        "availableReplicas": replicas,
        "conditions": [
            {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
            {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"},
        ],
    }


def job_status(state: str, message: str = "") -> dict[str, Any]:
    reason = {"Complete": "Completed", "Failed": "BackoffLimitExceeded"}.get(state, "")
    cond = {"type": state, "status": "True", "reason": reason}
    if message:
        cond["message"] = message
    return {"conditions": [cond]}


def purge_run(name: str, state: str, created: str, cronjob_uid: str) -> dict:
    """A finished (or running) run ``name`` of the Glance's db-purge CronJob."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "namespace": "openstack",
            "creationTimestamp": created,
            "labels": {"app.kubernetes.io/name": "glance", "app.kubernetes.io/instance": "glance"},
            "ownerReferences": [owner_ref(cronjob_uid, kind="CronJob", name="glance-db-purge")],
        },
        "status": job_status(state),
    }


def route_status(accepted: bool, generation: int = 1) -> dict[str, Any]:
    return {
        "parents": [
            {
                "parentRef": {"name": "public"},
                "controllerName": "example.io/gateway",
                "conditions": [
                    {
                        "type": "Accepted",
                        "status": "True" if accepted else "False",
                        "reason": "Accepted" if accepted else "NotAllowedByListeners",
                        "observedGeneration": generation,
                    }
                ],
            }
        ]
    }


def glance_object(glance: dict[str, Any], *, finalizer: bool = True, **meta: Any) -> dict:
    """A Glance as stored, with uid and (by default) the finalizer."""
    out = stored(glance, GLANCE_UID, **meta)
    if finalizer:
        out["metadata"]["finalizers"] = [FINALIZER]
    return out


def plan_inputs(backends: list[dict], secrets: list[dict] | None = None, **kw: Any):
    return PlanInputs(
        crds=load_crds(),
        backends=backends,
        secrets=default_secrets() if secrets is None else secrets,
        catalogs=load_catalogs(),
        **kw,
    )


HEALTHY = {"url": "http://glance.openstack.svc.cluster.local:9292/healthcheck", "status_code": 200}


class Reconciler:
    """Runs passes of one Glance against a ``FakeCluster`` as gather/apply/report would."""

    def __init__(self, glance: dict, inputs: PlanInputs, cluster: FakeCluster) -> None:
        self.glance = glance
        self.inputs = inputs
        self.cluster = cluster
        self.now = START
        self.results: list[PassResult] = []

    def run_pass(self, health: dict | None = None, settle: bool = True, **settle_kw: Any):
        self.now += timedelta(seconds=30)
        result = decide_pass(self.glance, self.inputs, self.cluster.live(), self.now, health)
        self.cluster.perform(result.actions)
        if result.finalizer == ADD:
            self.glance["metadata"].setdefault("finalizers", []).append(FINALIZER)
        if result.annotations:
            self.glance["metadata"].setdefault("annotations", {}).update(result.annotations)
        if result.status_patch is not None:
            self.glance["status"] = copy.deepcopy(result.status)
        if settle:
            self.cluster.settle(**settle_kw)
        self.results.append(result)
        return result

    def converge(self, health: dict | None = HEALTHY, passes: int = 12, **settle_kw: Any):
        """Run passes until one writes nothing and patches no status; that pass is returned."""
        for _ in range(passes):
            result = self.run_pass(health, **settle_kw)
            written = result.writes or result.finalizer or result.annotations
            if not written and result.status_patch is None:
                return result
        raise AssertionError(f"no steady state after {passes} passes")

    def condition(self, type_: str) -> dict[str, Any]:
        for cond in (self.glance.get("status") or {}).get("conditions") or []:
            if cond["type"] == type_:
                return cond
        raise KeyError(type_)


def desired_manifests(
    glance: dict, backends: list[dict], secrets: list[dict] | None = None, **kw: Any
) -> dict[str, dict | None]:
    """The objects a pass would apply for this input (``build_plan`` + the role templates)."""
    from ansible_collections.c5c3.glance.plugins.module_utils.desired.input_documents import (
        InputSet,
    )
    from ansible_collections.c5c3.glance.plugins.module_utils.desired.render_plan import build_plan
    from ansible_collections.c5c3.glance.plugins.module_utils.desired.role_templates import (
        render_objects,
    )

    found = InputSet(
        glance=copy.deepcopy(glance),
        backends=copy.deepcopy(backends),
        secrets=default_secrets() if secrets is None else secrets,
    )
    plan = build_plan(found, load_crds(), load_catalogs(), stored=True, **kw)
    assert not plan.errors, plan.errors
    return render_objects(plan.desired)
