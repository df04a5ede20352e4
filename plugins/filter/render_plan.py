# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""Filter plugin: the compute half of a reconcile pass, from an input file's text."""

from __future__ import annotations

DOCUMENTATION = r"""
name: render_plan
author: C5C3 Glance operator authors
version_added: 0.1.0
short_description: Decide everything a reconcile pass would do for an offline Glance input
description:
  - Takes the text of a multi-document YAML file holding exactly one C(Glance), any number of
    C(GlanceBackend)s, the C(Secret)s they reference and, for C(spec.policyOverrides.configMapRef),
    its C(ConfigMap).
  - Judges the custom resources as the API server and the admission webhook would; when they
    are admissible, gates the Secrets, projects the backends, renders and content-addresses the
    configuration, and decides every owned object for the roles to emit.
  - Returns the status the pass would write from this input alone; conditions that need the
    cluster are absent.
options:
  _input:
    description: The YAML text of the input file.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Plan a Glance
  ansible.builtin.set_fact:
    glance_plan: "{{ lookup('ansible.builtin.file', 'glance.yaml') | c5c3.glance.render_plan }}"
"""

RETURN = r"""
_value:
  description: The plan.
  type: dict
  contains:
    valid:
      description: False when the input is refused; C(errors) then says why.
      type: bool
    errors:
      description: One line per error, naming the object, the field path and the rule.
      type: list
      elements: str
    warnings:
      description: Admission warnings.
      type: list
      elements: str
    config_map:
      description: The content-addressed config ConfigMap name, empty without a valid projection.
      type: str
    backends_secret:
      description: The content-addressed backends Secret name, empty without a valid projection.
      type: str
    default_backend:
      description: The store id of the default backend, or null.
      type: str
    enabled_backends:
      description: The store ids rendered into the configuration.
      type: list
      elements: str
    desired:
      description: Per owned object, the data its template renders, or null when not wanted.
      type: dict
    status:
      description: The status documents of the Glance and each GlanceBackend.
      type: list
      elements: dict
    events:
      description: The events the pass would emit on the Glance.
      type: list
      elements: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.c5c3.glance.plugins.module_utils.admission.collection_files import (
    load_catalogs,
    load_crds,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.input_documents import (
    read_input,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.render_plan import build_plan


def render_plan(text):
    try:
        found = read_input(str(text))
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from exc
    configmaps = {
        cm["metadata"]["name"]: {k: str(v) for k, v in (cm.get("data") or {}).items()}
        for cm in found.configmaps
    }
    return build_plan(found, load_crds(), load_catalogs(), configmaps).as_dict()


class FilterModule:
    def filters(self):
        return {"render_plan": render_plan}
