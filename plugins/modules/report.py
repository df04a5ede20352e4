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

import datetime
import os
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.c5c3.glance.plugins.module_utils.kube_client import (
    ApiError,
    KubeConfigError,
)
from ansible_collections.c5c3.glance.plugins.module_utils.kube_module import (
    CONNECTION_OPTIONS,
    client_from_params,
)

EVENT_MESSAGE_LIMIT = 1024


def event_object(ref: dict, event: dict, component: str, now: datetime.datetime) -> dict:
    """A core/v1 Event about ``ref`` (named ``<name>.<hex nanoseconds>``, as client-go does)."""
    stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": f"{ref['name']}.{time.time_ns():x}",
            "namespace": ref["namespace"],
        },
        "involvedObject": {
            "apiVersion": ref["api_version"],
            "kind": ref["kind"],
            "name": ref["name"],
            "namespace": ref["namespace"],
            "uid": ref.get("uid"),
        },
        "type": event.get("type") or "Normal",
        "reason": event["reason"],
        "message": str(event.get("message") or "")[:EVENT_MESSAGE_LIMIT],
        "source": {"component": component},
        "reportingComponent": component,
        "reportingInstance": os.environ.get("POD_NAME") or os.uname().nodename,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "object": {"type": "dict", "required": True},
            "status_patch": {"type": "dict"},
            "events": {"type": "list", "elements": "dict", "default": []},
            "component": {"type": "str", "default": "c5c3-glance-operator"},
            **CONNECTION_OPTIONS,
        },
        supports_check_mode=True,
    )
    p = module.params
    ref = p["object"]
    if module.check_mode or (not p["status_patch"] and not p["events"]):
        module.exit_json(
            changed=bool(p["status_patch"] or p["events"]),
            status_written=False,
            events_written=0,
            api_requests=0,
        )
    client = None
    status_written, events_written = False, 0
    try:
        client = client_from_params(p)
        if p["status_patch"]:
            try:
                client.patch(
                    ref["api_version"],
                    ref["kind"],
                    ref["name"],
                    ref["namespace"],
                    p["status_patch"],
                    subresource="status",
                )
                status_written = True
            except ApiError as exc:
                if not exc.not_found:
                    raise
        now = datetime.datetime.now(datetime.UTC)
        for event in p["events"]:
            client.create(event_object(ref, event, p["component"], now))
            events_written += 1
    except (ApiError, KubeConfigError, OSError) as exc:
        module.fail_json(
            msg=f"report {ref.get('kind')} {ref.get('namespace')}/{ref.get('name')}: {exc}",
            status_written=status_written,
            events_written=events_written,
            api_requests=client.requests if client else 0,
        )
    module.exit_json(
        changed=status_written or events_written > 0,
        status_written=status_written,
        events_written=events_written,
        api_requests=client.requests,
    )


if __name__ == "__main__":
    main()
