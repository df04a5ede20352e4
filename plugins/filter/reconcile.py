# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""Filter plugins: the compute half of a reconcile pass, on what the gather module read.

``glance_plan``, ``glance_pass`` and ``glancebackend_pass``; their documentation is in the
adjacent ``<name>.yml`` files (one file, several filters). They read the pass's facts
without templating them again (``plugin_utils/untemplated.py``).
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.c5c3.glance.plugins.module_utils.passes import pass_inputs
from ansible_collections.c5c3.glance.plugins.module_utils.passes.glance.deletion import (
    ABANDON_AFTER,
)
from ansible_collections.c5c3.glance.plugins.plugin_utils.untemplated import untemplated


def _gathered(value, kind):
    if not isinstance(value, dict) or not value.get("found") or not value.get("object"):
        raise AnsibleFilterError(f"expected the gather result of an existing {kind}")
    return untemplated(value)


def glance_plan(gathered):
    return pass_inputs.glance_plan(_gathered(gathered, "Glance"))


def glance_pass(gathered, manifests=None, abandon_after=ABANDON_AFTER):
    try:
        return pass_inputs.glance_decision(
            _gathered(gathered, "Glance"), untemplated(manifests), int(abandon_after)
        )
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def glancebackend_pass(gathered):
    return pass_inputs.backend_decision(_gathered(gathered, "GlanceBackend"))


class FilterModule:
    def filters(self):
        return {
            "glance_plan": glance_plan,
            "glance_pass": glance_pass,
            "glancebackend_pass": glancebackend_pass,
        }
