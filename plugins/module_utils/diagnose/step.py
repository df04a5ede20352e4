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

from ansible_collections.c5c3.glance.plugins.module_utils.diagnose import findings as fd
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
from ansible_collections.c5c3.glance.plugins.module_utils.passes.pass_steps import children_of

DIAGNOSE_SPEC: dict[str, dict[str, Any]] = {
    "name": {"type": "str", "required": True},
    "namespace": {"type": "str", "required": True},
    "clusters_namespace": {"type": "str", "default": tc.DEFAULT_CLUSTERS_NAMESPACE},
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
        if children is not None:
            workloads = rd.read_workloads(children, name, namespace)
            for pod, container, previous in rd.wanted_logs(workloads["pods"]):
                logs[f"{pod}/{container}"] = rd.read_log(
                    children, namespace, pod, container, previous
                )
        report = fd.diagnosis(glance, backends, logs=logs, **workloads)
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
