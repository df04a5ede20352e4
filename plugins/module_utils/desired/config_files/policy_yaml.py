# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""``policy.yaml`` (reference-spec §3.4): the rules of ``spec.policyOverrides``, from its
ConfigMap and inline, merged and checked.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

import yaml

from ansible_collections.c5c3.glance.plugins.module_utils.desired.config_files.ini import (
    ConfigError,
    _spec,
    _text,
)

#: The ConfigMap key a ``policyOverrides.configMapRef`` ConfigMap must carry.
POLICY_CONFIGMAP_KEY = "policy.yaml"


# The reference's words (buildPolicyYAML, policy.LoadPolicyFromConfigMap), then the field.
LOADING = "loading policy from ConfigMap: "
WHERE = " (spec.policyOverrides.configMapRef)"


def _configmap_rules(glance: Mapping[str, Any], data: Mapping[str, str] | None) -> dict[str, str]:
    ref = _spec(glance)["policyOverrides"]["configMapRef"]
    namespace = (glance.get("metadata") or {}).get("namespace") or ""
    name = ref.get("name") or ""
    key = f"{namespace}/{name}"
    if data is None:
        raise ConfigError(f'{LOADING}getting ConfigMap {key}: configmaps "{name}" not found{WHERE}')
    if POLICY_CONFIGMAP_KEY not in data:
        raise ConfigError(
            f'{LOADING}ConfigMap {key} does not contain key "{POLICY_CONFIGMAP_KEY}"{WHERE}'
        )
    parsing = f"{LOADING}parsing {POLICY_CONFIGMAP_KEY} from ConfigMap {key}: "
    try:
        parsed = yaml.safe_load(data[POLICY_CONFIGMAP_KEY] or "")
    except yaml.YAMLError as exc:
        detail = " ".join(str(exc).split())
        raise ConfigError(f"{parsing}not valid YAML: {detail}{WHERE}") from exc
    if parsed is None:
        raise ConfigError(
            f'{LOADING}ConfigMap {key} key "{POLICY_CONFIGMAP_KEY}" is empty or parsed to nil'
            f"{WHERE}"
        )
    if not isinstance(parsed, Mapping):
        raise ConfigError(f"{parsing}must be a map of rule name to rule expression{WHERE}")
    if not parsed:
        # Ours: the reference renders an empty policy from an empty map.
        raise ConfigError(f"{parsing}{POLICY_CONFIGMAP_KEY} holds no rules{WHERE}")
    rules = {}
    for rule, value in parsed.items():
        if not isinstance(rule, str) or not isinstance(value, str):
            raise ConfigError(
                f"{parsing}rule {rule!r} must map a rule name to a rule expression string, "
                f"not {type(value).__name__}{WHERE}"
            )
        rules[rule] = value
    return rules


def policy_rules(
    glance: Mapping[str, Any], policy_configmap_data: Mapping[str, str] | None
) -> dict[str, str] | None:
    """The merged policy rules (ConfigMap, then inline rules over them), None when unset."""
    overrides = _spec(glance).get("policyOverrides")
    if overrides is None:
        return None
    rules: dict[str, str] = {}
    if overrides.get("configMapRef") is not None:
        rules.update(_configmap_rules(glance, policy_configmap_data))
    inline = overrides.get("rules") or {}
    for name in sorted(inline):
        rules[name] = _text(inline[name])
    for name in sorted(rules):
        if not name or not rules[name]:
            raise ConfigError(
                f"spec.policyOverrides: rule {name!r}: rule names and expressions must not "
                "be empty (an empty expression allows everyone)"
            )
    return rules or None


def render_policy_yaml(
    glance: Mapping[str, Any], policy_configmap_data: Mapping[str, str] | None
) -> str | None:
    """``policy.yaml`` (reference-spec §3.4), None when ``spec.policyOverrides`` is unset.

    ``policy_configmap_data`` is the ``data`` of the ConfigMap named by
    ``policyOverrides.configMapRef`` (None when it does not exist). One YAML line per rule,
    names sorted, each rule emitted on its own; the whole is one YAML map.
    """
    rules = policy_rules(glance, policy_configmap_data)
    if rules is None:
        return None
    return "".join(
        yaml.safe_dump(
            {name: rules[name]}, default_flow_style=False, allow_unicode=True, width=sys.maxsize
        )
        for name in sorted(rules)
    )
