# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""Filter plugin: judge an offline input as the API server and the webhook would."""

from __future__ import annotations

DOCUMENTATION = r"""
name: judge_input
author: C5C3 Glance operator authors
version_added: 0.1.0
short_description: Judge a Glance input file as the API server and the admission webhook would
description:
  - Takes the text of a multi-document YAML file holding exactly one C(Glance), any number of
    C(GlanceBackend)s and the C(Secret)s they reference.
  - Judges each custom resource on create against the CRD schemas and CEL rules shipped in
    this collection, then against the webhook rules, exactly as a cluster running this
    operator would, and reports every error with its field path and rule.
  - Objects without a namespace take the Glance's. The GlanceBackends of the file are the
    siblings of the single-default check.
options:
  _input:
    description: The YAML text of the input file.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Judge an input file
  ansible.builtin.set_fact:
    report: "{{ lookup('ansible.builtin.file', 'glance.yaml') | c5c3.glance.judge_input }}"
"""

RETURN = r"""
_value:
  description: The verdict on the input.
  type: dict
  contains:
    allowed:
      description: True when every custom resource would be admitted.
      type: bool
    errors:
      description: One line per error, naming the object, the field path and the rule.
      type: list
      elements: str
    warnings:
      description: The admission warnings the input earns.
      type: list
      elements: str
    summary:
      description: A short description of what the input describes.
      type: list
      elements: str
    verdicts:
      description: Per custom resource, the stored object (defaults applied) or its errors.
      type: list
      elements: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.c5c3.glance.plugins.module_utils.admission.collection_files import (
    load_catalogs,
    load_crds,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.input_documents import (
    describe,
    error_lines,
    judge_documents,
    read_input,
    warning_lines,
)


def judge_input(text):
    try:
        found = read_input(str(text))
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from exc
    verdicts = judge_documents(found, load_crds(), load_catalogs())
    errors = error_lines(found, verdicts)
    return {
        "allowed": not errors,
        "errors": errors,
        "warnings": warning_lines(verdicts),
        "summary": describe(found, verdicts),
        "verdicts": [v.as_dict() for v in verdicts],
    }


class FilterModule:
    def filters(self):
        return {"judge_input": judge_input}
