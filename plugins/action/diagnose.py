# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""Action plugin: the diagnose step in the playbook's own process (plugin_utils.in_process_step);
the module c5c3.glance.diagnose holds its documentation and argument spec."""

from __future__ import annotations

from ansible_collections.c5c3.glance.plugins.module_utils.diagnose import step
from ansible_collections.c5c3.glance.plugins.plugin_utils.in_process_step import InProcessStep


class ActionModule(InProcessStep):
    SPEC = step.DIAGNOSE_SPEC
    STEP = staticmethod(step.diagnose)
    CHECK_MODE = False
