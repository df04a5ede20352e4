"""Where the seconds from ``kubectl apply`` to a Glance's ``Ready`` go, read after the fact.

Every step is dated by what the cluster and the operator wrote down, so reading it takes
nothing from the run it describes: the Glance's ``creationTimestamp`` (admission) and its
conditions' ``lastTransitionTime``; the operator's ``pass started`` and ``pass finished``
log lines for the Glance (milliseconds, with what woke each pass); the creation of the
first object it owns (the configuration); the db-sync Job (created, started, complete) and
its pod (scheduled, container started and finished: glance-manage); the Deployment
(created) and each API pod (created, scheduled, containers started, Ready), with the
kubelet's ``Unhealthy`` events (the probes that failed before a pod answered). The API
server's timestamps have whole seconds, the operator's milliseconds: a step is at most a
second early. ``steps`` returns them as seconds after ``applied`` (``time.time()`` at the
``kubectl apply``), in order.
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass
from typing import Any

from cluster.objects import json_lines


@dataclass(frozen=True, order=True)
class Step:
    at: float  # seconds since the epoch
    what: str


def epoch(stamp: str) -> float:
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def _json(node, *args: str) -> Any:
    return json.loads(node.kubectl(*args, "-o", "json").stdout)


def _owned_by(obj: dict[str, Any], uid: str) -> bool:
    return any(ref.get("uid") == uid for ref in obj["metadata"].get("ownerReferences") or [])


def _condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next(
        (c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == kind), None
    )


def _pod_steps(pod: dict[str, Any], label: str) -> list[Step]:
    meta, status = pod["metadata"], pod.get("status") or {}
    steps = [Step(epoch(meta["creationTimestamp"]), f"{label} created")]
    scheduled = _condition(pod, "PodScheduled")
    if scheduled and scheduled["status"] == "True":
        steps.append(Step(epoch(scheduled["lastTransitionTime"]), f"{label} scheduled"))
    for container in (status.get("initContainerStatuses") or []) + (
        status.get("containerStatuses") or []
    ):
        state = container.get("state") or {}
        ran = state.get("running") or state.get("terminated") or {}
        if ran.get("startedAt"):
            steps.append(
                Step(epoch(ran["startedAt"]), f"{label}: container {container['name']} started")
            )
        if (state.get("terminated") or {}).get("finishedAt"):
            ended = state["terminated"]
            steps.append(
                Step(
                    epoch(ended["finishedAt"]),
                    f"{label}: container {container['name']} finished ({ended.get('reason')})",
                )
            )
    ready = _condition(pod, "Ready")
    if ready and ready["status"] == "True":
        steps.append(Step(epoch(ready["lastTransitionTime"]), f"{label} Ready"))
    return steps


def _operator_steps(node, operator_namespace: str, key: str) -> list[Step]:
    logs = node.kubectl(
        "logs", "-n", operator_namespace, "-l", "control-plane=controller-manager", "--tail=-1"
    ).stdout
    steps = []
    for record in json_lines(logs):
        if record.get("key") != key or record.get("msg") not in ("pass started", "pass finished"):
            continue
        if record["msg"] == "pass started":
            woken = ", ".join(record.get("woken_by") or []) or "its first pass"
            what = f"operator: pass started (woken by {woken})"
        else:
            what = (
                f"operator: pass finished in {record.get('seconds')} s, "
                f"requeue after {record.get('requeue_after')}"
            )
        steps.append(Step(epoch(record["ts"]), what))
    return steps


def _probe_failures(node, namespace: str) -> list[Step]:
    """The kubelet's ``Unhealthy`` events (a probe that failed): the first and the last of
    each pod's, with how many there were; they say how long a pod took to answer."""
    steps = []
    for event in _json(node, "get", "events", "-n", namespace)["items"]:
        first = event.get("firstTimestamp") or event.get("eventTime")
        if event.get("reason") != "Unhealthy" or not first:
            continue
        pod = event["involvedObject"].get("name", "?")
        probe = (event.get("message") or "").split(" probe")[0].lower() or "a"
        count = event.get("count") or (event.get("series") or {}).get("count") or 1
        label = f"pod {pod[-5:]}: {probe} probe failed"
        steps.append(Step(epoch(first), f"{label} (the first of {count})"))
        if count > 1 and event.get("lastTimestamp"):
            steps.append(Step(epoch(event["lastTimestamp"]), f"{label} (the last of {count})"))
    return steps


def steps(node, namespace: str, name: str, operator_namespace: str) -> list[Step]:
    """Every dated step of the Glance ``namespace/name`` on its way to Ready, in order."""
    glance = _json(node, "get", "glance", name, "-n", namespace)
    uid = glance["metadata"]["uid"]
    out = [Step(epoch(glance["metadata"]["creationTimestamp"]), "the Glance admitted")]
    out += _operator_steps(node, operator_namespace, f"{namespace}/{name}")
    for kind in ("DatabaseReady", "DeploymentReady", "GlanceAPIReady", "Ready"):
        condition = _condition(glance, kind)
        if condition and condition["status"] == "True":
            out.append(Step(epoch(condition["lastTransitionTime"]), f"the Glance {kind}"))
    config = [
        obj
        for kind in ("configmaps", "secrets")
        for obj in _json(node, "get", kind, "-n", namespace)["items"]
        if _owned_by(obj, uid)
    ]
    if config:
        first = min(epoch(obj["metadata"]["creationTimestamp"]) for obj in config)
        out.append(Step(first, f"the configuration written ({len(config)} ConfigMaps/Secrets)"))
    for job in _json(node, "get", "jobs", "-n", namespace)["items"]:
        if not _owned_by(job, uid):
            continue
        label, status = f"Job {job['metadata']['name']}", job.get("status") or {}
        out.append(Step(epoch(job["metadata"]["creationTimestamp"]), f"{label} created"))
        if status.get("completionTime"):
            out.append(Step(epoch(status["completionTime"]), f"{label} Complete"))
        pods = _json(
            node, "get", "pods", "-n", namespace, "-l", f"job-name={job['metadata']['name']}"
        )
        for pod in pods["items"]:
            out += _pod_steps(pod, f"{label}'s pod")
    out += _probe_failures(node, namespace)
    for deployment in _json(node, "get", "deployments", "-n", namespace)["items"]:
        if not _owned_by(deployment, uid):
            continue
        meta = deployment["metadata"]
        out.append(Step(epoch(meta["creationTimestamp"]), f"Deployment {meta['name']} created"))
        selector = ",".join(
            f"{k}={v}" for k, v in deployment["spec"]["selector"]["matchLabels"].items()
        )
        for pod in _json(node, "get", "pods", "-n", namespace, "-l", selector)["items"]:
            out += _pod_steps(pod, f"API pod {pod['metadata']['name'][-5:]}")
    return sorted(out)


def table(found: list[Step], applied: float) -> str:
    """``found`` as lines: seconds after ``applied``, the step."""
    return "\n".join(f"{step.at - applied:6.1f} s  {step.what}" for step in found)


def first(found: list[Step], *words: str) -> float:
    """When the first step whose text has all of ``words`` happened."""
    return min(step.at for step in found if all(word in step.what for word in words))


def last(found: list[Step], *words: str) -> float:
    """When the last step whose text has all of ``words`` happened."""
    return max(step.at for step in found if all(word in step.what for word in words))
