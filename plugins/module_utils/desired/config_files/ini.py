# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""INI rendering and its checks: ``ConfigError``, a spec value as INI text, the section
order, ``render_ini`` and the merge on oslo.config's normalized names.

Every file of the config ConfigMap is an INI file but ``policy.yaml``. The names with a
leading underscore (``_spec``, ``_text``, ``_listed``, ``_Merged`` and the checks) are
the package's own: the modules of ``desired/config_files/`` share them, nothing outside
it uses them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.admission.option_catalog import (
    normalize_option,
    normalize_section,
)


class ConfigError(ValueError):
    """The stored Glance cannot be rendered; the message becomes SecretsReady=False/ConfigError."""


# ---------------------------------------------------------------------------------------
# INI rendering

Sections = dict[str, dict[str, str]]


def oslo_literal(value: str) -> str:
    """``value`` as oslo.config must read it literally: ``$`` starts a substitution, ``$$`` not.

    The operator's own options come from typed fields (a role name, an injected property, a
    URL), which a user means literally; ``spec.plugins`` and ``spec.extraConfig`` values are
    oslo.config values and pass through as written.
    """
    return value.replace("$", "$$")


def _text(value: Any) -> str:
    """A spec value as INI text: booleans lowercase, numbers as written, None empty."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    return str(value)


def _has_line_break(text: str) -> bool:
    return "\n" in text or "\r" in text


def _check_section_name(section: str) -> None:
    if not section or _has_line_break(section) or "[" in section or "]" in section:
        raise ConfigError(
            f"section name {section!r} cannot be rendered: it must be non-empty and contain "
            "no bracket, newline or carriage return"
        )


def _check_option(section: str, key: str, value: str) -> None:
    if (
        not key
        or _has_line_break(key)
        or "=" in key
        or ":" in key
        or key != key.strip()
        or key[0] in "#;["
    ):
        raise ConfigError(
            f"[{section}] option name {key!r} cannot be rendered: it must be non-empty, must "
            "not start with '#', ';' or '[', and must contain no '=', ':', surrounding "
            "whitespace, newline or carriage return"
        )
    if _has_line_break(value):
        raise ConfigError(
            f"[{section}] {key}: the value must not contain a newline or carriage return"
        )


def section_order(sections: Iterable[str]) -> list[str]:
    """``DEFAULT`` first, then the other sections in byte order."""
    names = set(sections)
    rest = sorted(names - {"DEFAULT"})
    return ["DEFAULT", *rest] if "DEFAULT" in names else rest


def render_ini(
    sections: Mapping[str, Mapping[str, str]], order: Sequence[str] | None = None
) -> str:
    """Sections (``order``, else :func:`section_order`), keys sorted, ``key = value`` lines.

    Sections without keys are left out. An empty value renders as ``key =``. Raises
    :class:`ConfigError` for a name or value that would break the file's structure.
    """
    blocks = []
    for name in section_order(sections) if order is None else order:
        options = sections[name]
        if not options:
            continue
        _check_section_name(name)
        lines = [f"[{name}]"]
        for key in sorted(options):
            value = options[key]
            _check_option(name, key, value)
            lines.append(f"{key} = {value}" if value else f"{key} =")
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks)


class _Merged:
    """Options merged on oslo.config's normalized names; a later ``set`` wins."""

    def __init__(self) -> None:
        self.sections: Sections = {}

    def set(self, section: str, key: str, value: Any) -> None:
        options = self.sections.setdefault(normalize_section(section), {})
        options[normalize_option(key)] = _text(value)

    def update(self, section: str, options: Mapping[str, Any]) -> None:
        for key in sorted(options):
            self.set(section, key, options[key])


# ---------------------------------------------------------------------------------------
# small pieces every file's rendering shares


def _spec(glance: Mapping[str, Any]) -> Mapping[str, Any]:
    return glance.get("spec") or {}


def _listed(values: Iterable[Any]) -> str:
    """A bounded oslo ListOpt value: ``[a,b]``, ``[]`` when empty."""
    return "[" + ",".join(values) + "]"
