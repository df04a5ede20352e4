#!/usr/bin/python
# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""Module: perform the API writes one reconcile pass decided, in one process."""

from __future__ import annotations

DOCUMENTATION = r"""
module: apply
author: C5C3 Glance operator authors
version_added: 0.1.0
short_description: Perform the writes a reconcile pass decided
description:
  - The apply step of a pass. Performs, in the order given, the O(actions) that
    P(c5c3.glance.glance_pass#filter) decided - server-side apply (force, with the action's
    field manager), create, delete (with its propagation policy) - and then the finalizer
    change of the custom resource.
  - Actions whose verb is C(none) are skipped; the decision already turned them into
    conditions.
  - A create that meets an existing object (a content-addressed copy the label listing did
    not show) is decided again - left alone when this custom resource controls it, refused
    when something else does, so nothing is ever overwritten.
  - The finalizer change is a merge patch carrying the resourceVersion the gather step read,
    so it never overwrites a newer edit (the API server answers Conflict; the next pass
    decides again).
  - Stops at the first refused write and fails naming the object and the API server's
    message; what was written before it stays (each write is whole and valid on its own,
    and the order puts what others reference first).
  - One module process, one API request per write.
options:
  actions:
    description:
      - The decision's C(actions) - verb, kind, api_version, name, namespace, object,
        field_manager, propagation_policy, key.
    type: list
    elements: dict
    default: []
  object:
    description: The custom resource's reference (the decision's C(object)).
    type: dict
    required: true
  finalizer:
    description: C(add) or C(remove) the finalizer of the custom resource; null for neither.
    type: str
    choices: [add, remove]
  finalizer_name:
    description: The finalizer.
    type: str
    default: glance.openstack.c5c3.io/finalizer
extends_documentation_fragment:
  - c5c3.glance.kube
"""

EXAMPLES = r"""
- name: Apply what the pass decided
  c5c3.glance.apply:
    actions: "{{ glance_decision.actions }}"
    object: "{{ glance_decision.object }}"
    finalizer: "{{ glance_decision.finalizer }}"
  no_log: true
"""

RETURN = r"""
written:
  description:
    - One entry per write performed (or, in check mode, that would be) - verb, kind, name,
      reason, resource_version.
  type: list
  elements: dict
  returned: always
api_requests:
  description: How many API requests the module made.
  type: int
  returned: always
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.c5c3.glance.plugins.module_utils import apply_plan as ap
from ansible_collections.c5c3.glance.plugins.module_utils.kube_client import (
    ApiError,
    KubeClient,
    KubeConfigError,
)
from ansible_collections.c5c3.glance.plugins.module_utils.kube_module import (
    CONNECTION_OPTIONS,
    client_from_params,
)


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


def finalizer_patch(reference: dict, change: str, name: str) -> dict | None:
    """The merge patch adding or removing ``name``; None when there is nothing to do."""
    current = list(reference.get("finalizers") or [])
    if change == "add" and name not in current:
        wanted = [*current, name]
    elif change == "remove" and name in current:
        wanted = [f for f in current if f != name]
    else:
        return None
    return {"metadata": {"finalizers": wanted, "resourceVersion": reference["resource_version"]}}


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "actions": {"type": "list", "elements": "dict", "default": []},
            "object": {"type": "dict", "required": True},
            "finalizer": {"type": "str", "choices": ["add", "remove"]},
            "finalizer_name": {"type": "str", "default": "glance.openstack.c5c3.io/finalizer"},
            **CONNECTION_OPTIONS,
        },
        supports_check_mode=True,
    )
    p = module.params
    ref = p["object"]
    writes = [a for a in p["actions"] if a.get("verb") != ap.NONE]
    patch = finalizer_patch(ref, p["finalizer"], p["finalizer_name"]) if p["finalizer"] else None
    written: list[dict] = []
    if module.check_mode or (not writes and patch is None):
        written = [{k: a.get(k) for k in ("verb", "kind", "name", "reason")} for a in writes]
        module.exit_json(changed=bool(written or patch), written=written, api_requests=0)
    client = None
    current = None
    try:
        client = client_from_params(p)
        for action in writes:
            current = action
            answer = perform(client, action, str(ref.get("uid") or ""))
            written.append(
                {
                    **{k: action.get(k) for k in ("verb", "kind", "name", "reason")},
                    "resource_version": (answer.get("metadata") or {}).get("resourceVersion"),
                }
            )
        if patch is not None:
            current = {"verb": "finalizer", "kind": ref["kind"], "name": ref["name"]}
            client.patch(ref["api_version"], ref["kind"], ref["name"], ref["namespace"], patch)
            written.append(
                {"verb": p["finalizer"] + "-finalizer", "kind": ref["kind"], "name": ref["name"]}
            )
    except (ApiError, Refused, KubeConfigError, OSError) as exc:
        what = (
            f"{current['verb']} {current['kind']} {ref.get('namespace')}/{current['name']}"
            if current
            else "connect"
        )
        module.fail_json(
            msg=f"{what}: {exc}",
            written=written,
            api_requests=client.requests if client else 0,
        )
    module.exit_json(changed=bool(written), written=written, api_requests=client.requests)


if __name__ == "__main__":
    main()
