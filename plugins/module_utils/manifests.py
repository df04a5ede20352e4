# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""The Kubernetes object each ``desired_objects`` entry describes, built in Python.

The roles' templates lay these objects out for playbooks (offline render, the apply step);
the decision layer needs the same objects to compare them with live ones (``apply_plan``)
without running a template engine. ``manifest(key, data)`` returns exactly what the
key's template renders from ``data``: the same fields, the same order, the same optional
fields left out. ``tests/unit/test_manifests.py`` renders every template with Jinja2 and
holds the two equal, so they cannot drift apart.

Pure: the result shares no mutable object with ``data``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils import desired_objects as do

# The apiVersion and kind of each key's object.
KINDS: dict[str, tuple[str, str]] = {
    do.CONFIG_MAP: ("v1", "ConfigMap"),
    do.BACKENDS_SECRET: ("v1", "Secret"),
    do.DB_CONNECTION_SECRET: ("v1", "Secret"),
    do.DEPLOYMENT: ("apps/v1", "Deployment"),
    do.SERVICE: ("v1", "Service"),
    do.PDB: ("policy/v1", "PodDisruptionBudget"),
    do.HPA: ("autoscaling/v2", "HorizontalPodAutoscaler"),
    do.NETWORK_POLICY: ("networking.k8s.io/v1", "NetworkPolicy"),
    do.HTTP_ROUTE: ("gateway.networking.k8s.io/v1", "HTTPRoute"),
    do.DB_SYNC_JOB: ("batch/v1", "Job"),
    do.DB_PURGE_CRONJOB: ("batch/v1", "CronJob"),
}


def _metadata(d: Mapping[str, Any], annotations: Mapping[str, str] | None = None) -> dict:
    metadata: dict[str, Any] = {
        "name": d["name"],
        "namespace": d["namespace"],
        "labels": d["labels"],
    }
    if annotations:
        metadata["annotations"] = annotations
    metadata["ownerReferences"] = d["owner_references"]
    return metadata


def _head(key: str, metadata: dict[str, Any]) -> dict[str, Any]:
    api_version, kind = KINDS[key]
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata}


def _spec(key: str, d: Mapping[str, Any]) -> dict[str, Any]:
    """The top-level fields after ``metadata`` of ``key``'s object."""
    if key == do.CONFIG_MAP:
        return {"immutable": True, "data": d["data"]}
    if key == do.BACKENDS_SECRET:
        return {"type": "Opaque", "immutable": True, "data": d["data"]}
    if key == do.DB_CONNECTION_SECRET:
        return {"type": "Opaque", "data": d["data"]}
    if key == do.DEPLOYMENT:
        spec: dict[str, Any] = {}
        if d["replicas"] is not None:
            spec["replicas"] = d["replicas"]
        spec["selector"] = d["selector"]
        spec["strategy"] = d["strategy"]
        spec["template"] = do.pod_template_object(d["pod"])
        return {"spec": spec}
    if key == do.SERVICE:
        return {"spec": {"type": d["type"], "selector": d["selector"], "ports": d["ports"]}}
    if key == do.PDB:
        spec = {"selector": d["selector"]}
        if d["min_available"] is not None:
            spec["minAvailable"] = d["min_available"]
        if d["max_unavailable"] is not None:
            spec["maxUnavailable"] = d["max_unavailable"]
        return {"spec": spec}
    if key == do.HPA:
        return {
            "spec": {
                "scaleTargetRef": d["scale_target_ref"],
                "minReplicas": d["min_replicas"],
                "maxReplicas": d["max_replicas"],
                "metrics": d["metrics"],
            }
        }
    if key == do.NETWORK_POLICY:
        return {
            "spec": {
                "podSelector": d["pod_selector"],
                "policyTypes": d["policy_types"],
                "ingress": d["ingress"],
                "egress": d["egress"],
            }
        }
    if key == do.HTTP_ROUTE:
        rule = {
            "matches": [{"path": d["path"]}],
            "backendRefs": d["backend_refs"],
            "timeouts": d["timeouts"],
        }
        return {
            "spec": {"parentRefs": d["parent_refs"], "hostnames": d["hostnames"], "rules": [rule]}
        }
    if key == do.DB_SYNC_JOB:
        return {
            "spec": {
                "backoffLimit": d["backoff_limit"],
                "template": do.pod_template_object(d["pod"]),
            }
        }
    if key == do.DB_PURGE_CRONJOB:
        job = {
            "metadata": {"labels": d["job_labels"]},
            "spec": {
                "activeDeadlineSeconds": d["active_deadline_seconds"],
                "template": do.pod_template_object(d["pod"]),
            },
        }
        return {
            "spec": {
                "schedule": d["schedule"],
                "suspend": d["suspend"],
                "concurrencyPolicy": d["concurrency_policy"],
                "jobTemplate": job,
            }
        }
    raise KeyError(f"no object is described by the key {key!r}")


def manifest(key: str, data: Mapping[str, Any]) -> dict[str, Any]:
    """The object the template of ``key`` renders from ``data`` (a desired_objects entry)."""
    annotations = None
    if key in (do.HTTP_ROUTE, do.DB_SYNC_JOB):
        annotations = data.get("annotations")
    out = _head(key, _metadata(data, annotations))
    out.update(_spec(key, data))
    return copy.deepcopy(out)


def manifests(desired: Mapping[str, Mapping[str, Any] | None]) -> dict[str, dict | None]:
    """``manifest`` of every entry of ``desired``; a None entry stays None."""
    return {key: (manifest(key, d) if d is not None else None) for key, d in desired.items()}
