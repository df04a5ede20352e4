# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""``ExtraConfigHealthy``: the extraConfig options that override a key the operator owns,
matched as oslo.config matches names, and the informational condition that reports them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.admission.option_catalog import (
    normalize_option,
    normalize_section,
)
from ansible_collections.c5c3.glance.plugins.module_utils.admission.owned_keys import (
    OwnedKey,
    owned_key,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired import conditions as cond
from ansible_collections.c5c3.glance.plugins.module_utils.desired.config_files.ini import (
    _spec,
    _text,
)


@dataclass(frozen=True)
class OwnedOverride:
    """An extraConfig option that overrides a key the operator owns (as the user spelled it)."""

    section: str
    key: str
    value: str
    owned: OwnedKey

    @property
    def rejected(self) -> bool:
        return self.owned.rejected

    @property
    def impact(self) -> str:
        return self.owned.impact

    def describe(self) -> str:
        return f"[{self.section}] {self.key} ({self.owned.impact})"


def owned_key_overrides(glance: Mapping[str, Any]) -> list[OwnedOverride]:
    """extraConfig options that set an owned key (reported and rejected kinds), sorted.

    Names are matched as oslo.config matches them (group case-insensitively except
    ``DEFAULT``, ``-`` for ``_``), so ``[Keystone_Authtoken] auth-url`` counts.
    """
    extra = _spec(glance).get("extraConfig") or {}
    found = []
    for section in sorted(extra):
        options = extra[section] or {}
        for key in sorted(options):
            entry = owned_key(normalize_section(section), normalize_option(key))
            if entry is not None:
                found.append(OwnedOverride(section, key, _text(options[key]), entry))
    return found


NO_OVERRIDES_MESSAGE = "spec.extraConfig overrides no operator-owned keys"
OVERRIDES_MESSAGE = "spec.extraConfig overrides operator-owned keys: "


def extra_config_condition(glance: Mapping[str, Any]) -> dict[str, str]:
    """The informational ``ExtraConfigHealthy`` condition, worded as the reference's."""
    overrides = owned_key_overrides(glance)
    if not overrides:
        return cond.condition(
            cond.EXTRA_CONFIG_HEALTHY, True, cond.NO_OWNED_KEYS_OVERRIDDEN, NO_OVERRIDES_MESSAGE
        )
    return cond.condition(
        cond.EXTRA_CONFIG_HEALTHY,
        False,
        cond.OWNED_KEYS_OVERRIDDEN,
        OVERRIDES_MESSAGE + "; ".join(o.describe() for o in overrides),
    )
