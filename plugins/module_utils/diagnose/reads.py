# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""What ``diagnose`` reads: the Glance, its GlanceBackends, its pods, Jobs and their events,
the last lines of the containers that failed and, when its route is not accepted, the
HTTPRoute and the Gateways it names. Reads only (GET and LIST).

A read the API server forbids ends the diagnosis with ``Forbidden``, which names the
permission that is missing: a diagnosis from half the picture would name the wrong cause.
Where the Glance names a target cluster, its pods, Jobs and events are read there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.api import API_CONTAINER
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.metadata import (
    COMPONENT_API,
    COMPONENT_LABEL,
    JOB_NAME_LABEL,
    selector_labels,
)
from ansible_collections.c5c3.glance.plugins.module_utils.kube.kube_client import (
    ApiError,
    KubeClient,
)

GROUP_VERSION = "glance.openstack.c5c3.io/v1alpha1"
GATEWAY_GROUP_VERSION = "gateway.networking.k8s.io/v1"
LOG_LINES = 20
LOG_BYTES = 16384
MAX_LOGS = 8
"""At most this many container logs are read (the failed containers of the newest pods)."""


class Forbidden(Exception):
    """A read the API server refused (403): ``permission`` is what is missing."""

    def __init__(self, permission: str, namespace: str, said: str):
        self.permission = permission
        self.namespace = namespace
        super().__init__(
            f'diagnose needs "{permission}" in the namespace {namespace} and may not '
            f"(the API server said: {said})"
        )


def _guarded(permission: str, namespace: str, read, *args: Any, **kwargs: Any) -> Any:
    try:
        return read(*args, **kwargs)
    except ApiError as exc:
        if exc.code == 403:
            raise Forbidden(permission, namespace, exc.message or str(exc)) from exc
        raise


def read_glance(client: KubeClient, name: str, namespace: str) -> dict[str, Any] | None:
    return _guarded(
        "get glances.glance.openstack.c5c3.io",
        namespace,
        client.get,
        GROUP_VERSION,
        "Glance",
        name,
        namespace,
    )


def read_backends(client: KubeClient, name: str, namespace: str) -> list[dict[str, Any]]:
    items = _guarded(
        "list glancebackends.glance.openstack.c5c3.io",
        namespace,
        client.list,
        GROUP_VERSION,
        "GlanceBackend",
        namespace,
    )
    return [b for b in items if ((b.get("spec") or {}).get("glanceRef") or {}).get("name") == name]


def read_workloads(client: KubeClient, name: str, namespace: str) -> dict[str, list[dict]]:
    """The Glance's API pods and Jobs (by its labels), the Jobs' pods (by the label the Job
    controller gives them: the operator's Job pods carry none of the Glance's, so that
    neither its Service nor its PDB counts them) and the events about all of them."""
    labels = selector_labels(name)
    pods = _guarded("list pods", namespace, client.list, "v1", "Pod", namespace, labels)
    jobs = _guarded("list jobs.batch", namespace, client.list, "batch/v1", "Job", namespace, labels)
    if jobs:
        names = ",".join(sorted(j["metadata"]["name"] for j in jobs))
        selector = f"{JOB_NAME_LABEL} in ({names})"
        pods += _guarded("list pods", namespace, client.list, "v1", "Pod", namespace, selector)
    involved = {(o["kind"], o["metadata"]["name"]) for o in pods + jobs}
    events = [
        e
        for e in _guarded("list events", namespace, client.list, "v1", "Event", namespace)
        if _involved(e) in involved
    ]
    return {"pods": pods, "jobs": jobs, "events": events}


def _involved(event: Mapping[str, Any]) -> tuple[Any, Any]:
    obj = event.get("involvedObject") or {}
    return obj.get("kind"), obj.get("name")


def wanted_logs(pods: list[Mapping[str, Any]]) -> list[tuple[str, str, bool]]:
    """(pod, container, previous) of the containers whose log explains a failure: one that
    failed and waits to start again (its previous run's log), one that ended in error, and
    every container of a failed pod; newest pods first, at most ``MAX_LOGS``."""
    wanted: list[tuple[str, str, bool]] = []
    newest = sorted(pods, key=lambda p: p["metadata"].get("creationTimestamp") or "", reverse=True)
    for pod in newest:
        status = pod.get("status") or {}
        failed_pod = status.get("phase") == "Failed" and status.get("reason") != "Evicted"
        for cs in status.get("containerStatuses") or []:
            state = cs.get("state") or {}
            last = (cs.get("lastState") or {}).get("terminated")
            ended = state.get("terminated")
            if state.get("waiting") and last and last.get("exitCode"):
                wanted.append((pod["metadata"]["name"], cs["name"], True))
            elif (ended and ended.get("exitCode")) or (failed_pod and ended):
                wanted.append((pod["metadata"]["name"], cs["name"], False))
    return wanted[:MAX_LOGS]


def read_log(
    client: KubeClient, namespace: str, pod: str, container: str, previous: bool
) -> dict[str, Any]:
    """The last ``LOG_LINES`` lines of a container's log, or why they cannot be read (a
    log the node no longer has is no reason to stop; a forbidden one is)."""
    path = f"/api/v1/namespaces/{namespace}/pods/{pod}/log"
    query = {
        "container": container,
        "tailLines": LOG_LINES,
        "limitBytes": LOG_BYTES,
        "previous": "true" if previous else None,
    }
    answer = client.raw("GET", path, query=query, accept="*/*")
    if answer.status == 403:
        raise Forbidden("get pods/log", namespace, answer.body.decode(errors="replace")[:300])
    if answer.status not in (200, 204):  # 204: no log (a pod no node has run)
        said = answer.json().get("message") if answer.body.startswith(b"{") else answer.body
        return {"error": f"HTTP {answer.status}: {str(said)[:300]}"}
    text = answer.body.decode(errors="replace")
    return {"lines": [line for line in text.splitlines() if line.strip()][-LOG_LINES:]}


def running_api_pod(pods: list[Mapping[str, Any]]) -> str | None:
    """The API pod to check from: one whose ``glance-api`` container runs, a Ready one
    first, the newest first; None when none runs."""
    running = []
    for pod in pods:
        labels = pod["metadata"].get("labels") or {}
        status = pod.get("status") or {}
        if labels.get(COMPONENT_LABEL) != COMPONENT_API or pod["metadata"].get("deletionTimestamp"):
            continue
        for cs in status.get("containerStatuses") or []:
            if cs.get("name") == API_CONTAINER and "running" in (cs.get("state") or {}):
                ready = bool(cs.get("ready"))
                running.append((ready, pod["metadata"].get("creationTimestamp") or "", pod))
    if not running:
        return None
    running.sort(key=lambda r: (r[0], r[1]), reverse=True)
    return running[0][2]["metadata"]["name"]


def read_route(client: KubeClient, name: str, namespace: str) -> dict[str, Any]:
    """The Glance's HTTPRoute (``route``, None when there is none) and each Gateway its
    ``parentRefs`` name, by ``<namespace>/<name>`` (``gateways``): the Gateway, None when it
    does not exist, or why it could not be read. A Gateway may live in a namespace the
    diagnosis has no right to read: that is said in its place, not a reason to stop."""
    route = _guarded(
        "get httproutes.gateway.networking.k8s.io",
        namespace,
        client.get,
        GATEWAY_GROUP_VERSION,
        "HTTPRoute",
        name,
        namespace,
    )
    gateways: dict[str, Any] = {}
    for ref in ((route or {}).get("spec") or {}).get("parentRefs") or []:
        if ref.get("kind", "Gateway") != "Gateway":
            continue
        where = ref.get("namespace") or namespace
        key = f"{where}/{ref.get('name')}"
        try:
            gateways[key] = client.get(GATEWAY_GROUP_VERSION, "Gateway", ref.get("name"), where)
        except ApiError as exc:
            gateways[key] = (
                f'it could not be read: diagnose needs "get gateways.gateway.networking.k8s.io"'
                f" in the namespace {where}"
                if exc.code == 403
                else f"it could not be read: {exc.message or exc}"
            )
    return {"route": route, "gateways": gateways}
