# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""The Glance configuration files, rendered from a stored Glance: pure and deterministic.

Input is always the *stored* Glance (``admission.judge(...).object``: schema and webhook
defaults applied). Nothing here reads a clock, a file or the cluster; the same input gives
the same bytes, whatever the order of the mappings it came in. Sections and keys are
sorted, ``DEFAULT`` first, one ``key = value`` line per option, a blank line between
sections and a trailing newline (reference-spec §3).

The ConfigMap (:func:`config_files`) holds ``glance-api.conf``, ``glance-api-paste.ini``,
``logging.conf`` and, when ``spec.policyOverrides`` yields rules, ``policy.yaml``. It is
mounted at ``paths.CONFIG_DIR``; the paste, policy and logging files are referenced by
their path under it.

Each file has its module: ``api_conf``, ``paste_ini``, ``policy_yaml`` and
``logging_conf``, on ``ini``'s rendering and checks; ``paths`` says where they are
mounted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.desired.config_files.api_conf import (
    render_glance_api_conf,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.config_files.logging_conf import (
    render_logging_conf,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.config_files.paste_ini import (
    render_paste_ini,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.config_files.paths import (
    GLANCE_API_CONF,
    LOGGING_CONF,
    PASTE_INI,
    POLICY_YAML,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.config_files.policy_yaml import (
    render_policy_yaml,
)


def config_files(
    glance: Mapping[str, Any],
    *,
    enabled_backends: Sequence[str],
    default_backend: str,
    policy_configmap_data: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The config ConfigMap's data: every file, keys in sorted order."""
    policy = render_policy_yaml(glance, policy_configmap_data)
    # logging.conf first: its errors name the spec field, the INI check's only the option
    logging_conf = render_logging_conf(glance)
    files = {
        GLANCE_API_CONF: render_glance_api_conf(
            glance,
            enabled_backends=enabled_backends,
            default_backend=default_backend,
            policy_rendered=policy is not None,
        ),
        PASTE_INI: render_paste_ini(glance),
        LOGGING_CONF: logging_conf,
    }
    if policy is not None:
        files[POLICY_YAML] = policy
    return dict(sorted(files.items()))
