# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""Filter plugin: a short human summary of a render."""

from __future__ import annotations

DOCUMENTATION = r"""
name: render_summary
author: C5C3 Glance operator authors
version_added: 0.1.0
short_description: Summarise a render in a few lines
description:
  - Counts the rendered objects by kind and names the config ConfigMap (its content hash), the
    backends Secret, the default store and every condition of the status.
options:
  _input:
    description: The plan returned by the c5c3.glance.render_plan filter.
    type: dict
    required: true
  manifests:
    description: The rendered objects.
    type: list
    elements: dict
    required: true
"""

EXAMPLES = r"""
- name: Summarise
  ansible.builtin.debug:
    msg: "{{ glance_plan | c5c3.glance.render_summary(glance_manifests) }}"
"""

RETURN = r"""
_value:
  description: The summary, a line per item.
  type: list
  elements: str
"""

from ansible_collections.c5c3.glance.plugins.module_utils.desired.manifest_yaml import plain
from ansible_collections.c5c3.glance.plugins.module_utils.desired.render_plan import summarize


def render_summary(plan, manifests):
    return summarize(plain(plan), plain(list(manifests or [])))


class FilterModule:
    def filters(self):
        return {"render_summary": render_summary}
