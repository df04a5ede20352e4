# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""The ``diagnose`` step: read a Glance and what runs for it, say what is wrong.

Reads only, with the connection rules of a pass (``kubeconfig``, ``context``, else
``KUBECONFIG`` or the pod's service account). ``plugins/modules/diagnose.py`` documents
the result; ``docs/operations.md`` ("Diagnose a Glance") how to use it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.api import API_CONTAINER
from ansible_collections.c5c3.glance.plugins.module_utils.diagnose import findings as fd
from ansible_collections.c5c3.glance.plugins.module_utils.diagnose import in_pod
from ansible_collections.c5c3.glance.plugins.module_utils.diagnose import reads as rd
from ansible_collections.c5c3.glance.plugins.module_utils.kube import target_cluster as tc
from ansible_collections.c5c3.glance.plugins.module_utils.kube.kube_client import (
    ApiError,
    KubeConfigError,
)
from ansible_collections.c5c3.glance.plugins.module_utils.kube.kube_module import (
    CONNECTION_OPTIONS,
    client_from_params,
)
from ansible_collections.c5c3.glance.plugins.module_utils.kube.pod_exec import (
    ExecError,
    exec_in_pod,
)
from ansible_collections.c5c3.glance.plugins.module_utils.passes.pass_steps import children_of

DIAGNOSE_SPEC: dict[str, dict[str, Any]] = {
    "name": {"type": "str", "required": True},
    "namespace": {"type": "str", "required": True},
    "clusters_namespace": {"type": "str", "default": tc.DEFAULT_CLUSTERS_NAMESPACE},
    "in_pod_checks": {"type": "bool", "default": True},
    "check_timeout": {"type": "float", "default": 60.0},
    **CONNECTION_OPTIONS,
}

UNNAMED = (
    "name the Glance to diagnose: ansible-playbook playbooks/diagnose.yml "
    "-e glance_name=<name> -e glance_namespace=<namespace> "
    "(make diagnose GLANCE=<namespace>/<name>)"
)


def diagnose(p: Mapping[str, Any]) -> dict[str, Any]:
    """The report of ``findings.diagnosis``, its lines for people, and ``api_requests``;
    ``failed`` with ``msg`` when the Glance cannot be read (absent, forbidden, no
    connection)."""
    name, namespace = p["name"], p["namespace"]
    if not (name and namespace):
        return {"failed": True, "msg": UNNAMED}
    client = None
    try:
        client = client_from_params(p)
        glance = rd.read_glance(client, name, namespace)
        if glance is None:
            return {
                "failed": True,
                "msg": f"there is no Glance {namespace}/{name} (kubectl -n {namespace} get glance)",
                "api_requests": client.requests,
            }
        backends = rd.read_backends(client, name, namespace)
        children, target = children_of(client, glance, p)
        workloads: dict[str, list] = {"pods": [], "jobs": [], "events": []}
        logs: dict[str, dict] = {}
        inside: list[dict] = []
        checks: list[dict] = []
        if children is not None:
            workloads = rd.read_workloads(children, name, namespace)
            for pod, container, previous in rd.wanted_logs(workloads["pods"]):
                logs[f"{pod}/{container}"] = rd.read_log(
                    children, namespace, pod, container, previous
                )
            if p["in_pod_checks"]:
                checks, inside = _inside(children, glance, workloads["pods"], p["check_timeout"])
        route = None
        if children is not None and fd.route_not_accepted(glance):
            route = rd.read_route(children, name, namespace)
        report = fd.diagnosis(glance, backends, logs=logs, inside=inside, route=route, **workloads)
        report["checks"] = checks
    except rd.Forbidden as exc:
        return {"failed": True, "msg": str(exc), "permission": exc.permission}
    except (ApiError, KubeConfigError, OSError) as exc:
        return {"failed": True, "msg": f"diagnose Glance {namespace}/{name}: {exc}"}
    requests = client.requests
    if children is not None and children is not client:
        requests += children.requests
    if target is not None:
        report["target_cluster"] = target
    lines = fd.text_lines(report)
    return {
        "changed": False,
        "report": report,
        "lines": lines,
        "text": "\n".join(lines) + "\n",
        "api_requests": requests,
    }


def _inside(
    client, glance: Mapping[str, Any], pods: list[dict], timeout: float
) -> tuple[list[dict], list[dict]]:
    """The checks from inside one running API pod (``in_pod``) and their findings; where
    none runs, or exec is refused, a note that says why."""
    namespace = glance["metadata"]["namespace"]
    pod = rd.running_api_pod(pods)
    if pod is None:
        return [], [fd.not_checked(glance, "no API pod runs its glance-api container")]
    try:
        spec = next(p for p in pods if p["metadata"]["name"] == pod)
        argv = in_pod.command(volumes=in_pod.bounds(spec, API_CONTAINER))
        ran = exec_in_pod(client, namespace, pod, API_CONTAINER, argv, timeout)
    except ApiError as exc:
        why = exc.message or str(exc)
        if exc.code == 403:
            why = f'diagnose needs "create pods/exec" in the namespace {namespace}: {why}'
        return [], [fd.not_checked(glance, f"exec in pod {pod}: {why}")]
    except ExecError as exc:
        return [], [fd.not_checked(glance, str(exc))]
    checks = in_pod.parse(ran.stdout)
    if not checks:
        said = (ran.stderr or ran.stdout).decode(errors="replace").strip()[-300:]
        return [], [fd.not_checked(glance, f"the checks in pod {pod} printed nothing: {said}")]
    api_log: dict = {}
    if any(c.get("kind") == "server-error" for c in checks):
        api_log = rd.read_log(client, namespace, pod, API_CONTAINER, False)
    return checks, fd.check_findings(pod, checks, api_log)
