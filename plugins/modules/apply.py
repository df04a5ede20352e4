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
    field manager), create, delete (with its propagation policy) - and the finalizer
    change of the custom resource, an addition before the first write, a removal after
    the last.
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
  finalizer_names:
    description:
      - The finalizers O(finalizer) adds or removes, in one patch (a Glance naming a target
        cluster also holds C(openstack.c5c3.io/remote-children)).
    type: list
    elements: str
    default: [glance.openstack.c5c3.io/finalizer]
  annotations:
    description:
      - The finished Jobs' record the pass decided - C(cobaltcore.c5c3.io/last-<kind>-job-uid)
        to the UID of the last finished db-purge, db-sync or upgrade phase Job, as the
        reference writes it - merge-patched onto the custom resource after the writes, at
        the resourceVersion read (or the finalizer patch's).
      - Best effort, as the reference's - a refused or failed patch fails nothing; it comes back
        in RV(deferred) and the next pass writes it.
    type: dict
    default: {}
  target_cluster:
    description:
      - The registered cluster the O(actions) are written to (the custom resource's
        C(spec.targetClusterRef.name)); its kubeconfig is read from the Secret of that name
        in O(clusters_namespace). The finalizers stay where the custom resource is. Unset
        - the same cluster.
    type: str
  clusters_namespace:
    description: Where the target clusters' kubeconfig Secrets are.
    type: str
    default: c5c3-clusters
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
deferred:
  description:
    - The Warning events (type, reason, message) for the report step when the finished Jobs'
      record could not be written - C(DBPurgeMetricEmissionDeferred) for db-purge,
      C(DBSyncMetricEmissionDeferred) for the others, as the reference emits them.
  type: list
  elements: dict
  returned: always
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.c5c3.glance.plugins.module_utils.passes import pass_steps as ps


def main() -> None:
    # The action plugin of the same name runs the step in the playbook's process; this
    # module is the path for a connection that is not local.
    module = AnsibleModule(argument_spec=ps.APPLY_SPEC, supports_check_mode=True)
    result = ps.apply(module.params, module.check_mode)
    if result.get("failed"):
        module.fail_json(**result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
