# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""Filter plugins: the object roles' templates rendered with plain Jinja2 (``role_templates``).

``role_objects`` (one role's task: its own templates, named there) and ``owned_objects``
(a pass's render step: every object role's templates in one call); their documentation is
in the adjacent ``<name>.yml`` files (one file, two filters). The data is read without
templating it again (``plugin_utils/untemplated.py``).
"""

from __future__ import annotations

import os

from ansible.errors import AnsibleFilterError

from ansible_collections.c5c3.glance.plugins.module_utils.desired import role_templates
from ansible_collections.c5c3.glance.plugins.module_utils.passes.pass_inputs import plain
from ansible_collections.c5c3.glance.plugins.plugin_utils.untemplated import untemplated


def role_objects(desired, role_path, **templates):
    if not isinstance(desired, dict):
        raise AnsibleFilterError("role_objects: glance_desired must be a mapping")
    role = os.path.basename(os.path.normpath(str(role_path)))
    try:
        return role_templates.role_objects(
            os.path.join(str(role_path), "templates"), role, plain(untemplated(desired)), templates
        )
    except ValueError as exc:
        raise AnsibleFilterError(f"role_objects: {exc}") from exc


def owned_objects(desired):
    if not isinstance(desired, dict):
        raise AnsibleFilterError("owned_objects: the plan's desired must be a mapping")
    try:
        return role_templates.owned_objects(plain(untemplated(desired)))
    except ValueError as exc:
        raise AnsibleFilterError(f"owned_objects: {exc}") from exc


class FilterModule:
    def filters(self):
        return {"role_objects": role_objects, "owned_objects": owned_objects}
