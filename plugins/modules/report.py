#!/usr/bin/python
# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""Module: write a pass's status and events, in one process."""

from __future__ import annotations

DOCUMENTATION = r"""
module: report
author: C5C3 Glance operator authors
version_added: 0.1.0
short_description: Write the status and the events a reconcile pass decided
description:
  - The report step of a pass. Writes O(status_patch) to the custom resource's status
    subresource as a JSON merge patch (the decision already left out every field that did
    not change, and is null when nothing changed - then nothing is written) and records
    each of O(events) as a core/v1 Event on the custom resource.
  - One module process; one API request per write; none when there is nothing to report.
  - A custom resource deleted since the gather step is not an error (there is nothing left
    to report on).
options:
  object:
    description: The custom resource's reference (the decision's C(object)).
    type: dict
    required: true
  status_patch:
    description: The status merge patch (C(status) with its changed fields), or null.
    type: dict
  events:
    description: Events - type (Normal or Warning), reason, message.
    type: list
    elements: dict
    default: []
  component:
    description: The reporting component named in each Event.
    type: str
    default: c5c3-glance-operator
extends_documentation_fragment:
  - c5c3.glance.kube
"""

EXAMPLES = r"""
- name: Report the status and the events
  c5c3.glance.report:
    object: "{{ glance_decision.object }}"
    status_patch: "{{ glance_decision.status_patch }}"
    events: "{{ glance_decision.events }}"
"""

RETURN = r"""
status_written:
  description: The status was patched.
  type: bool
  returned: always
events_written:
  description: How many Events were recorded.
  type: int
  returned: always
api_requests:
  description: How many API requests the module made.
  type: int
  returned: always
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.c5c3.glance.plugins.module_utils.passes import pass_steps as ps


def main() -> None:
    # The action plugin of the same name runs the step in the playbook's process; this
    # module is the path for a connection that is not local.
    module = AnsibleModule(argument_spec=ps.REPORT_SPEC, supports_check_mode=True)
    result = ps.report(module.params, module.check_mode)
    if result.get("failed"):
        module.fail_json(**result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
