# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""Action plugin: the gather step in the playbook's own process (plugin_utils.in_process_step);
the module c5c3.glance.gather holds its documentation and argument spec."""

from __future__ import annotations

from ansible_collections.c5c3.glance.plugins.module_utils.passes import pass_steps
from ansible_collections.c5c3.glance.plugins.plugin_utils.in_process_step import InProcessStep


class ActionModule(InProcessStep):
    SPEC = pass_steps.GATHER_SPEC
    STEP = staticmethod(pass_steps.gather)
    CHECK_MODE = False
