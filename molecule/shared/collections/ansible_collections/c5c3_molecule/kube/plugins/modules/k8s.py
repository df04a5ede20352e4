#!/usr/bin/python
# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""Module (molecule scenarios only): read and write any Kubernetes object with the
collection's own client, c5c3.glance's ``kube_client``.

The scenarios need what kubernetes.core's k8s/k8s_info would give them (create the samples,
read the owned objects, play the controllers of a cluster without nodes, delete), but the
pinned stack is ansible-core alone and nothing is downloaded at test time; the reconcile
passes themselves never use this module.
"""

from __future__ import annotations

DOCUMENTATION = r"""
module: k8s
author: C5C3 Glance operator authors
short_description: Read and write Kubernetes objects (molecule scenarios only)
description:
  - C(served) answers whether the cluster serves O(api_version) O(kind) (discovery).
  - C(get) returns one object (null when absent); C(list) the items of a kind in
    O(namespace) (all namespaces when omitted), filtered by O(label_selector).
  - C(present) creates O(definition) when it does not exist (changed), and leaves an
    existing object alone (not changed).
  - C(applied) server-side applies O(definition) (field manager C(c5c3-molecule), forced);
    changed when it was created or its resourceVersion moved.
  - C(patch) merge-patches O(patch) into the object, or into its O(subresource) (C(status));
    changed when the resourceVersion moved.
  - C(absent) deletes the object (changed when it existed) and, with O(wait), waits until
    it is gone.
  - C(wait_absent) waits, without deleting, until no object of O(names) exists.
options:
  state:
    type: str
    choices: [served, get, list, present, applied, patch, absent, wait_absent]
    default: get
  api_version:
    type: str
  kind:
    type: str
  name:
    type: str
  names:
    type: list
    elements: str
    default: []
  namespace:
    type: str
  label_selector:
    type: str
  definition:
    type: dict
  patch:
    type: dict
  subresource:
    type: str
  propagation_policy:
    type: str
    choices: [Background, Foreground, Orphan]
  wait:
    type: bool
    default: false
  timeout:
    type: float
    default: 60
  kubeconfig:
    type: path
  context:
    type: str
  request_timeout:
    type: float
    default: 30
"""

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.c5c3.glance.plugins.module_utils.kube.kube_client import (
    ApiError,
    KubeClient,
    KubeConfigError,
)

FIELD_MANAGER = "c5c3-molecule"


def _wait_gone(client: KubeClient, params: dict, names: list[str]) -> list[str]:
    """Poll until none of ``names`` exists or the timeout passes; the ones left."""
    deadline = time.monotonic() + params["timeout"]
    left = list(names)
    while True:
        left = [
            n
            for n in left
            if client.get(params["api_version"], params["kind"], n, params["namespace"]) is not None
        ]
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.5)


def run(module: AnsibleModule, client: KubeClient) -> dict:
    p = module.params
    state, api_version, kind = p["state"], p["api_version"], p["kind"]
    if state == "served":
        return {"changed": False, "served": client.serves(api_version, kind)}
    if state == "get":
        obj = client.get(api_version, kind, p["name"], p["namespace"])
        return {"changed": False, "object": obj}
    if state == "list":
        items = client.list(api_version, kind, p["namespace"], label_selector=p["label_selector"])
        return {"changed": False, "items": items}
    if state == "present":
        definition = p["definition"]
        meta = definition.get("metadata") or {}
        existing = client.get(
            definition["apiVersion"], definition["kind"], meta["name"], meta.get("namespace")
        )
        if existing is not None:
            return {"changed": False, "object": existing}
        return {"changed": True, "object": client.create(definition)}
    if state == "applied":
        definition = p["definition"]
        meta = definition.get("metadata") or {}
        before = client.get(
            definition["apiVersion"], definition["kind"], meta["name"], meta.get("namespace")
        )
        after = client.apply(definition, FIELD_MANAGER)
        moved = before is None or (
            after["metadata"]["resourceVersion"] != before["metadata"]["resourceVersion"]
        )
        return {"changed": moved, "object": after}
    if state == "patch":
        before = client.get(api_version, kind, p["name"], p["namespace"])
        if before is None:
            module.fail_json(msg=f"{kind} {p['namespace']}/{p['name']} does not exist")
        after = client.patch(
            api_version, kind, p["name"], p["namespace"], p["patch"], subresource=p["subresource"]
        )
        moved = after["metadata"]["resourceVersion"] != before["metadata"]["resourceVersion"]
        return {"changed": moved, "object": after}
    if state == "absent":
        gone = client.delete(
            api_version, kind, p["name"], p["namespace"], propagation_policy=p["propagation_policy"]
        )
        left = _wait_gone(client, p, [p["name"]]) if p["wait"] else []
        if left:
            module.fail_json(msg=f"{kind} {p['namespace']}/{p['name']} still exists")
        return {"changed": gone is not None}
    left = _wait_gone(client, p, p["names"])
    if left:
        module.fail_json(msg=f"still present after {p['timeout']} s: {kind} {left}", left=left)
    return {"changed": False, "left": []}


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "state": {
                "type": "str",
                "default": "get",
                "choices": [
                    "served",
                    "get",
                    "list",
                    "present",
                    "applied",
                    "patch",
                    "absent",
                    "wait_absent",
                ],
            },
            "api_version": {"type": "str"},
            "kind": {"type": "str"},
            "name": {"type": "str"},
            "names": {"type": "list", "elements": "str", "default": []},
            "namespace": {"type": "str"},
            "label_selector": {"type": "str"},
            "definition": {"type": "dict"},
            "patch": {"type": "dict"},
            "subresource": {"type": "str"},
            "propagation_policy": {
                "type": "str",
                "choices": ["Background", "Foreground", "Orphan"],
            },
            "wait": {"type": "bool", "default": False},
            "timeout": {"type": "float", "default": 60.0},
            "kubeconfig": {"type": "path"},
            "context": {"type": "str"},
            "request_timeout": {"type": "float", "default": 30.0},
        },
        required_if=[
            ("state", "present", ["definition"]),
            ("state", "applied", ["definition"]),
            ("state", "get", ["api_version", "kind", "name"]),
            ("state", "patch", ["api_version", "kind", "name", "patch"]),
            ("state", "absent", ["api_version", "kind", "name"]),
            ("state", "list", ["api_version", "kind"]),
            ("state", "served", ["api_version", "kind"]),
            ("state", "wait_absent", ["api_version", "kind"]),
        ],
    )
    try:
        client = KubeClient.from_environment(
            kubeconfig=module.params["kubeconfig"],
            context=module.params["context"],
            timeout=module.params["request_timeout"],
        )
        module.exit_json(**run(module, client))
    except (ApiError, KubeConfigError) as exc:
        module.fail_json(msg=str(exc))


if __name__ == "__main__":
    main()
