# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""Filter plugin: Kubernetes objects as one deterministic multi-document YAML text."""

from __future__ import annotations

DOCUMENTATION = r"""
name: manifest_documents
author: C5C3 Glance operator authors
version_added: 0.1.0
short_description: Kubernetes objects as one deterministic multi-document YAML text
description:
  - Orders the objects as a reader meets them (Secrets and ConfigMaps, then Service,
    Deployment, PodDisruptionBudget, HorizontalPodAutoscaler, NetworkPolicy, HTTPRoute, Jobs,
    CronJobs; by name within a kind) and writes each as a YAML document that starts with
    C(apiVersion), C(kind) and C(metadata), with every other mapping's keys sorted.
  - The same objects always give the same bytes.
options:
  _input:
    description: The objects.
    type: list
    elements: dict
    required: true
  sort:
    description: Order the objects by kind and name (false keeps the given order).
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: Write the manifests
  ansible.builtin.copy:
    content: "{{ glance_manifests | c5c3.glance.manifest_documents }}"
    dest: out/manifests.yaml
    mode: "0644"
"""

RETURN = r"""
_value:
  description: The YAML text.
  type: str
"""

from ansible_collections.c5c3.glance.plugins.module_utils.desired.manifest_yaml import (
    dump_documents,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.render_plan import (
    manifest_sort_key,
)


def manifest_documents(objects, sort=True):
    objects = list(objects or [])
    if sort:
        objects = sorted(objects, key=manifest_sort_key)
    return dump_documents(objects)


class FilterModule:
    def filters(self):
        return {"manifest_documents": manifest_documents}
