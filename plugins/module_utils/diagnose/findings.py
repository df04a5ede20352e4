# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""From what ``diagnose`` read to what it says: findings, each a cause in words with its
fix, and a summary naming the first cause (``causes.py`` holds the words and the order).

Pure functions of the objects read; nothing here talks to the cluster.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.desired import conditions as c
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.metadata import (
    COMPONENT_API,
    COMPONENT_LABEL,
    JOB_NAME_LABEL,
)
from ansible_collections.c5c3.glance.plugins.module_utils.diagnose import causes as k

DETAIL_CHARS = 300
_CREDENTIAL_URL = re.compile(r"(://[^:/@\s]+:)[^@\s]+@")
_CREDENTIAL_OPTION = re.compile(
    r"(?i)\b(password|secret_key|access_key|secret|token)(\s*[=:]\s*)(['\"]?)"
    r"(?!(?:YES|NO)\b)[^\s'\",)]+"
)
# MySQL's own "(using password: YES)" says whether one was sent, not what it was: kept.


def redact(text: str) -> str:
    """``text`` with what looks like a credential (a URL's password, ``password=...``)
    masked: logs and messages are shown as they are, less these."""
    text = _CREDENTIAL_URL.sub(r"\1***@", text)
    return _CREDENTIAL_OPTION.sub(r"\1\2\3***", text)


def finding(cause_id: str, subject: str, detail: str, evidence: Iterable[str] = ()) -> dict:
    cause = k.BY_ID[cause_id]
    return {
        "cause": cause.id,
        "severity": cause.severity,
        "rank": cause.rank,
        "title": cause.title,
        "subject": subject,
        "detail": redact(detail)[:DETAIL_CHARS],
        "fix": cause.fix,
        "evidence": [redact(line) for line in evidence],
    }


# --- the custom resources ---------------------------------------------------------------


def _not_true(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [
        cond
        for cond in (obj.get("status") or {}).get("conditions") or []
        if cond.get("status") != c.TRUE and cond.get("type") not in k.AGGREGATES
    ]


def glance_findings(glance: Mapping[str, Any]) -> list[dict]:
    subject = f"Glance {glance['metadata']['namespace']}/{glance['metadata']['name']}"
    status = glance.get("status") or {}
    conditions = status.get("conditions") or []
    generation = glance["metadata"].get("generation")
    if not conditions:
        return [finding("not-reconciled", subject, "it has no status conditions at all")]
    out = []
    ready = c.by_type(conditions).get(c.READY) or {}
    seen = ready.get("observedGeneration", status.get("observedGeneration"))
    if generation is not None and seen is not None and int(seen) < int(generation):
        out.append(
            finding(
                "not-reconciled",
                subject,
                f"its status is of generation {seen}, the spec is at {generation}",
            )
        )
    upgrade = _upgrade(status)
    for cond in _not_true(glance):
        key = (cond.get("type", ""), cond.get("reason", ""))
        cause = k.CONDITION_CAUSES.get(key) or k.REASON_CAUSES.get(key[1]) or "not-ready"
        detail = _said(cond)
        if upgrade and cause in ("upgrade-running", "upgrade-failed"):
            detail = f"{detail}; {upgrade}"
        out.append(finding(cause, subject, detail))
    return out


# The upgrade's phases in order (status.upgradePhase), and what each does to the database.
UPGRADE_PHASES = {
    "Expanding": "1 of 4, expand: new columns and tables beside the old",
    "Migrating": "2 of 4, migrate: the data moved to them",
    "RollingUpdate": "3 of 4, the API pods rolled to the new release",
    "Contracting": "4 of 4, contract: what only the old release used removed",
}


def _upgrade(status: Mapping[str, Any]) -> str:
    """The release upgrade under way, in words ("" when none is)."""
    phase = status.get("upgradePhase") or ""
    if not phase:
        return ""
    said = UPGRADE_PHASES.get(phase, phase)
    source = status.get("installedRelease") or "?"
    target = status.get("targetRelease") or "?"
    return f"upgrade {source} -> {target} in phase {phase} ({said})"


def backend_findings(backend: Mapping[str, Any]) -> list[dict]:
    subject = f"GlanceBackend {backend['metadata']['name']}"
    if not (backend.get("status") or {}).get("conditions"):
        return [finding("not-reconciled", subject, "it has no status conditions at all")]
    out = []
    for cond in _not_true(backend):
        key = (cond.get("type", ""), cond.get("reason", ""))
        cause = k.BACKEND_CONDITION_CAUSES.get(key) or k.REASON_CAUSES.get(key[1]) or "not-ready"
        out.append(finding(cause, subject, _said(cond)))
    return out


def _said(cond: Mapping[str, Any]) -> str:
    said = f"{cond.get('type')} is {cond.get('status')}, {cond.get('reason')}"
    return f"{said}: {cond.get('message', '')}"


# --- pods, Jobs, events -----------------------------------------------------------------


def _log_of(logs: Mapping[str, Mapping[str, Any]], pod: str, container: str) -> Mapping[str, Any]:
    return logs.get(f"{pod}/{container}") or {}


# The line a Python traceback ends with (``requests.exceptions.ConnectionError: ...``),
# whatever the logger put before it.
ERROR_LINE = re.compile(r"\b[A-Za-z_][\w.]*(?:Error|Exception|Failure): ")


def _last_error(lines: Sequence[str]) -> str:
    """The last line that states an exception, else the last line: a server's log goes on
    after the traceback (a request log line) and the frames before it say less."""
    return next((line for line in reversed(lines) if ERROR_LINE.search(line)), lines[-1])


def _with_log(cause_id: str, subject: str, detail: str, log: Mapping[str, Any]) -> dict:
    """A failure whose log may say more: the log's cause where a line names one, else
    ``cause_id``; the log's last lines as evidence."""
    lines = list(log.get("lines") or [])
    named = k.log_cause(lines)
    if named is not None:
        cause_id, line = named
        detail = f"{detail}; its log says: {line.strip()}"
    elif log.get("error"):
        detail = f"{detail}; its log could not be read ({log['error']})"
    elif lines:
        detail = f"{detail}; its log ends: {_last_error(lines).strip()}"
    elif log:
        detail = f"{detail}; its log is empty"
    return finding(cause_id, subject, detail, lines)


def pod_findings(
    pods: list[Mapping[str, Any]],
    events: list[Mapping[str, Any]],
    logs: Mapping[str, Mapping[str, Any]],
) -> list[dict]:
    out: list[dict] = []
    for pod in pods:
        meta = pod["metadata"]
        if meta.get("deletionTimestamp"):
            continue
        name = meta["name"]
        subject = f"Pod {name}"
        status = pod.get("status") or {}
        if status.get("reason") == "Evicted":
            message = status.get("message") or ""
            bound = k.EVICTED_VOLUME.search(message)
            cause = k.VOLUME_CAUSES.get(bound.group("volume"), "evicted") if bound else "evicted"
            out.append(finding(cause, subject, f"evicted: {message}"))
            continue
        conds = c.by_type(status.get("conditions") or [])
        scheduled = conds.get("PodScheduled") or {}
        if scheduled.get("status") == c.FALSE and scheduled.get("reason") == "Unschedulable":
            out.append(
                finding("unschedulable", subject, f"Pending: {scheduled.get('message', '')}")
            )
            continue
        job_pod = (meta.get("labels") or {}).get(COMPONENT_LABEL) != COMPONENT_API
        if job_pod and status.get("phase") in ("Failed", "Succeeded"):
            continue  # a Job's pod that ran: its Job says how
        for cs in status.get("containerStatuses") or []:
            out.extend(_container_findings(subject, name, cs, logs))
        ready = conds.get("Ready") or {}
        if ready.get("status") != c.TRUE:
            out.extend(_probe_findings(subject, name, events))
    return out


def _container_findings(
    subject: str, pod: str, cs: Mapping[str, Any], logs: Mapping[str, Mapping[str, Any]]
) -> list[dict]:
    container = cs["name"]
    where = f"{subject} container {container}"
    state = cs.get("state") or {}
    waiting = state.get("waiting") or {}
    last = (cs.get("lastState") or {}).get("terminated") or {}
    ended = state.get("terminated") or {}
    restarts = cs.get("restartCount", 0)
    reason = waiting.get("reason")
    if reason in ("CrashLoopBackOff", "RunContainerError") or ended.get("exitCode"):
        term = last if reason else ended
        cause = k.TERMINATED_CAUSES.get(term.get("reason", ""), "crashing")
        ended_as = f"ended {term.get('reason', '')} (exit code {term.get('exitCode')})"
        detail = f"{reason or 'terminated'}: {ended_as}"
        if restarts:
            detail += f", restarted {restarts} times"
        if cause == "oom-killed":
            return [finding(cause, where, detail)]
        return [_with_log(cause, where, detail, _log_of(logs, pod, container))]
    if reason in k.WAITING_CAUSES:
        message = waiting.get("message") or ""
        if reason in ("ErrImagePull", "ImagePullBackOff", "InvalidImageName"):
            message = f"{cs.get('image', '')}: {message}"
        return [finding(k.WAITING_CAUSES[reason], where, f"{reason}: {message}")]
    if last.get("reason") == "OOMKilled":
        return [
            finding(
                "oom-killed", where, f"its last run ended OOMKilled, restarted {restarts} times"
            )
        ]
    return []


_PROBE = re.compile(r"^(Liveness|Readiness|Startup) probe failed")


def _probe_findings(subject: str, pod: str, events: list[Mapping[str, Any]]) -> list[dict]:
    counts: dict[str, tuple[int, str]] = {}
    for event in events:
        involved = event.get("involvedObject") or {}
        if involved.get("kind") != "Pod" or involved.get("name") != pod:
            continue
        if event.get("reason") != "Unhealthy":
            continue
        message = event.get("message") or ""
        probe = _PROBE.match(message)
        if probe is None:
            continue
        count = int(event.get("count") or (event.get("series") or {}).get("count") or 1)
        seen, _ = counts.get(probe.group(1), (0, ""))
        counts[probe.group(1)] = (seen + count, message)
    return [
        finding("probe-failing", subject, f"{kind} probe failed {n} times: {message}")
        for kind, (n, message) in sorted(counts.items())
    ]


def job_findings(
    jobs: list[Mapping[str, Any]],
    pods: list[Mapping[str, Any]],
    logs: Mapping[str, Mapping[str, Any]],
) -> list[dict]:
    out = []
    for job in jobs:
        conds = c.by_type((job.get("status") or {}).get("conditions") or [])
        failed = conds.get("Failed") or {}
        name = job["metadata"]["name"]
        component = (job["metadata"].get("labels") or {}).get(COMPONENT_LABEL, "")
        phase = next((p for p in k.JOB_CAUSES if name.endswith(f"-{p}")), component)
        if failed.get("status") != c.TRUE:
            if (job.get("status") or {}).get("active"):
                out.extend(_running_job(name, phase, pods, logs))
            continue
        cause = k.JOB_CAUSES.get(phase, "job-failed")
        detail = f"failed: {failed.get('reason', '')}: {failed.get('message', '')}"
        log = _job_log(name, pods, logs)
        out.append(_with_log(cause, f"Job {name}", detail, log))
    return out


def _job_pods(job: str, pods: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    mine = [p for p in pods if (p["metadata"].get("labels") or {}).get(JOB_NAME_LABEL) == job]
    return sorted(mine, key=lambda p: p["metadata"].get("creationTimestamp") or "", reverse=True)


def _job_log(
    job: str, pods: list[Mapping[str, Any]], logs: Mapping[str, Mapping[str, Any]]
) -> Mapping[str, Any]:
    for pod in _job_pods(job, pods):
        for cs in (pod.get("status") or {}).get("containerStatuses") or []:
            log = _log_of(logs, pod["metadata"]["name"], cs["name"])
            if log:
                return log
    return {}


def _running_job(
    name: str, phase: str, pods: list[Mapping[str, Any]], logs: Mapping[str, Mapping[str, Any]]
) -> list[dict]:
    """A Job still running whose pods keep failing: say so before its back-off limit does."""
    failed = [p for p in _job_pods(name, pods) if (p.get("status") or {}).get("phase") == "Failed"]
    if not failed:
        return []
    cause = k.JOB_CAUSES.get(phase, "job-failed")
    log = _job_log(name, pods, logs)
    return [_with_log(cause, f"Job {name}", f"running; {len(failed)} of its pods failed", log)]


# --- the checks from inside an API pod ------------------------------------------------------


def check_findings(
    pod: str, checks: list[Mapping[str, Any]], api_log: Mapping[str, Any]
) -> list[dict]:
    """A finding for each check that failed; a server error of the API is named by the API
    container's log where a line of it names a cause."""
    out = []
    for check in checks:
        if check.get("ok"):
            continue
        key = (str(check.get("check")), str(check.get("kind")))
        cause = k.CHECK_CAUSES.get(key, "check-failed")
        subject = f"Pod {pod} check {key[0]}"
        detail = f"{check.get('subject')}: {check.get('kind')}: {check.get('error')}"
        if cause == "api-errors":
            out.append(_with_log(cause, subject, detail, api_log))
        else:
            out.append(finding(cause, subject, detail))
    return out


def route_not_accepted(glance: Mapping[str, Any]) -> bool:
    """The Glance says its HTTPRoute is not accepted: worth reading the route's parents."""
    conditions = c.by_type((glance.get("status") or {}).get("conditions") or [])
    route = conditions.get(c.HTTPROUTE_READY) or {}
    return route.get("status") == c.FALSE and route.get("reason") == c.HTTPROUTE_NOT_ACCEPTED


def route_findings(read: Mapping[str, Any]) -> list[dict]:
    """What the HTTPRoute and its parents say of a route not accepted (``reads.read_route``):
    a parent Gateway that does not exist, one that refuses the route (its condition for
    it), or one that has said nothing (no controller serves its class)."""
    route = read.get("route")
    if not route:
        return []  # the Glance's own HTTPRouteReady finding says it
    meta = route["metadata"]
    subject = f"HTTPRoute {meta['namespace']}/{meta['name']}"
    parents = (route.get("status") or {}).get("parents") or []
    out = []
    for key, gateway in (read.get("gateways") or {}).items():
        if gateway is None:
            missing = f"the Gateway {key} does not exist"
            out.append(finding("route-parent-missing", subject, missing))
            continue
        if isinstance(gateway, str):
            out.append(finding("route-not-accepted", subject, f"the Gateway {key}: {gateway}"))
            continue
        said = [
            p for p in parents if _parent_key(p.get("parentRef") or {}, meta["namespace"]) == key
        ]
        refused = [
            (p, cond)
            for p in said
            for cond in p.get("conditions") or []
            if cond.get("type") in ("Accepted", "ResolvedRefs") and cond.get("status") != "True"
        ]
        for parent, cond in refused:
            out.append(
                finding(
                    "route-not-accepted",
                    subject,
                    f"the Gateway {key} ({parent.get('controllerName')}) says {_said(cond)}",
                )
            )
        if not said:
            klass = (gateway.get("spec") or {}).get("gatewayClassName")
            out.append(
                finding(
                    "route-not-accepted",
                    subject,
                    f"the Gateway {key} has said nothing of the route: no controller serves "
                    f"its GatewayClass {klass}, or it has not seen the route yet",
                )
            )
    return out


def _parent_key(ref: Mapping[str, Any], namespace: str) -> str:
    return f"{ref.get('namespace') or namespace}/{ref.get('name')}"


def not_checked(glance: Mapping[str, Any], why: str) -> dict:
    subject = f"Glance {glance['metadata']['namespace']}/{glance['metadata']['name']}"
    return finding("checks-not-made", subject, why)


# --- the report ---------------------------------------------------------------------------


def diagnosis(
    glance: Mapping[str, Any],
    backends: list[Mapping[str, Any]],
    pods: list[Mapping[str, Any]],
    jobs: list[Mapping[str, Any]],
    events: list[Mapping[str, Any]],
    logs: Mapping[str, Mapping[str, Any]],
    inside: Sequence[dict] = (),
    route: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Every finding, first cause first, and the summary; ``inside``: the findings of the
    checks from inside an API pod (``check_findings``, ``not_checked``); ``route``: what
    ``reads.read_route`` read of a route not accepted."""
    found = glance_findings(glance) + list(inside) + route_findings(route or {})
    for backend in backends:
        found.extend(backend_findings(backend))
    found.extend(job_findings(jobs, pods, logs))
    found.extend(pod_findings(pods, events, logs))
    found.sort(key=lambda f: (f["rank"], f["subject"]))
    faults = [f for f in found if f["severity"] == k.FAULT]
    under_way = [f for f in found if f["severity"] == k.PROGRESS]
    first = (faults or under_way or [None])[0]
    name = f"{glance['metadata']['namespace']}/{glance['metadata']['name']}"
    where = (
        "" if first is None or first["subject"] == f"Glance {name}" else f" ({first['subject']})"
    )
    if faults:
        state = "faulty"
        summary = f"Glance {name} is not healthy: {first['title']}{where}"
    elif under_way:
        state = "progressing"
        summary = f"Glance {name} is on its way: {first['title']}{where}"
    else:
        state = "healthy"
        summary = f"Glance {name} is healthy"
        if any(f["cause"] == "checks-not-made" for f in found):
            # Say what the verdict rests on: the conditions and pods only.
            summary += " as far as its conditions and pods show (no check from inside a pod)"
    return {
        "glance": name,
        "state": state,
        "healthy": state == "healthy",
        "first_cause": first["cause"] if first else None,
        "summary": summary,
        "findings": found,
    }


def text_lines(report: Mapping[str, Any]) -> list[str]:
    """The report for people: the summary, then one line per finding with its fix."""
    lines = [report["summary"]]
    for f in report["findings"]:
        lines.append(
            f"{f['severity'].upper()} {f['subject']}: {f['title']} [{f['cause']}]"
            f" - {f['detail']} - fix: {f['fix']}"
        )
    return lines
