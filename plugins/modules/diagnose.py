#!/usr/bin/python
# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""Module: say what is wrong with a Glance, in words, from what the cluster shows."""

from __future__ import annotations

DOCUMENTATION = r"""
module: diagnose
author: C5C3 Glance operator authors
version_added: 0.1.0
short_description: Say what is wrong with a Glance, with the fix beside each finding
description:
  - Reads the Glance, its GlanceBackends, its API pods, its Jobs and their pods, the events
    about them, and the last lines of the containers that failed; says each cause it
    finds in words with its fix, the first cause first (the one that explains the most).
  - What it knows (each cause, what shows it, the fix) is
    C(plugins/module_utils/diagnose/causes.py); C(docs/operations.md) has it as a table.
  - Then, from inside one running API pod (C(pods/exec)), checks with Glance's own
    configuration what Glance depends on - its C(/healthcheck), the database, a Keystone
    token for the service user, an image list with it, each S3 store's bucket - and says
    each failure as its cause.
  - Reads only (GET and LIST, and the exec of a program that writes nothing); it never
    writes to the cluster. A read the API server forbids ends the step, naming the
    permission that is missing; without C(create pods/exec) the checks from inside a pod
    are left out, with a note saying so.
options:
  name:
    description: The Glance's name.
    type: str
    required: true
  namespace:
    description: Its namespace.
    type: str
    required: true
  clusters_namespace:
    description:
      - Where the kubeconfig Secrets of target clusters are (a Glance naming one in
        C(spec.targetClusterRef) has its pods and Jobs read there).
    type: str
    default: c5c3-clusters
  in_pod_checks:
    description: Make the checks from inside an API pod.
    type: bool
    default: true
  check_timeout:
    description: Seconds the checks from inside an API pod may take together.
    type: float
    default: 60
extends_documentation_fragment:
  - c5c3.glance.kube
"""

EXAMPLES = r"""
- name: Diagnose a Glance
  c5c3.glance.diagnose:
    name: glance
    namespace: openstack
  register: diagnosis
"""

RETURN = r"""
report:
  description:
    - C(glance) (namespace/name), C(state) (healthy, progressing or faulty), C(healthy),
      C(first_cause), C(summary) and C(findings), first cause first; each finding has
      C(cause), C(severity) (fault, progress or note), C(rank), C(title), C(subject),
      C(detail), C(fix) and C(evidence) (a failed container's last log lines); C(checks),
      the checks from inside an API pod (C(check), C(subject), C(ok), C(kind), C(error)).
  type: dict
  returned: success
lines:
  description: The report for people, one line per finding with its fix.
  type: list
  elements: str
  returned: success
text:
  description: The same lines as one text, each ending in a newline.
  type: str
  returned: success
permission:
  description: The permission a forbidden read needed.
  type: str
  returned: when a read is forbidden
api_requests:
  description: How many API requests the step made.
  type: int
  returned: always
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.c5c3.glance.plugins.module_utils.diagnose import step


def main() -> None:
    # The action plugin of the same name runs the step in the playbook's process; this
    # module is the path for a connection that is not local.
    module = AnsibleModule(argument_spec=step.DIAGNOSE_SPEC, supports_check_mode=True)
    result = step.diagnose(module.params)
    if result.get("failed"):
        module.fail_json(**result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
