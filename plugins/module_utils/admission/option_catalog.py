# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""``spec.extraConfig`` checked against the option registry of the real Glance release.

A catalog (``catalogs/glance-<release>.json``, generated from that release's glance package
by ``hack/gen_option_catalog.py``) lists every section and option ``glance-api`` registers.
The caller loads the catalogs and passes them in; this module does no I/O.

An unknown section or option is refused; a deprecated option earns a warning that names
its replacement. Sections a loaded plugin registers are declared through ``spec.plugins``
and exempt, as are the reserved stores and the keys the operator owns. When no catalog
matches the release the check fails open with exactly one warning.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.admission import field_errors as fe
from ansible_collections.c5c3.glance.plugins.module_utils.admission.owned_keys import (
    normalize_option,
    normalize_section,
    owned_key,
)

RELEASE_PATTERN = re.compile(r"^\d{4}\.[12]$")
# The reference's release.ParseRelease refuses a year before this one.
MIN_RELEASE_YEAR = 2010
RESERVED_STORE_SECTIONS = frozenset({"os_glance_staging_store", "os_glance_tasks_store"})


def lookup(catalog: Mapping[str, Any], section: str, option: str) -> Mapping[str, Any] | None:
    """The catalog entry of ``[section] option``, or None when glance does not register it."""
    sections = catalog.get("sections") or {}
    options = sections.get(normalize_section(section))
    if options is None:
        return None
    return options.get(normalize_option(option))


def has_section(catalog: Mapping[str, Any], section: str) -> bool:
    return normalize_section(section) in (catalog.get("sections") or {})


def deprecation_warning(
    section: str, option: str, release: str, entry: Mapping[str, Any]
) -> str | None:
    """The warning a deprecated option earns, in the reference's words, naming its
    replacement when it has one (and, ours, why it goes when glance says so)."""
    head = f"spec.extraConfig [{section}] {option}: deprecated option in glance {release}"
    alias = entry.get("deprecated_alias_of")
    if alias:
        return f"{head}, replaced by [{alias['section']}] {alias['option']}"
    if entry.get("deprecated_for_removal"):
        reason = entry.get("deprecated_reason")
        tail = f": {' '.join(str(reason).split())}" if reason else ""
        return f"{head} with no replacement{tail}"
    return None


NOT_VALIDATED = "spec.extraConfig was not validated against an option catalog: "


def check_extra_config(
    extra_config: Mapping[str, Mapping[str, Any]],
    release: str,
    catalogs: Mapping[str, Mapping[str, Any]],
    exempt_sections: Iterable[str] = (),
) -> tuple[list[fe.FieldError], list[str]]:
    """Errors for unknown sections/options of ``extra_config`` and deprecation warnings."""
    if not extra_config:
        return [], []
    if not RELEASE_PATTERN.match(release or "") or int(release[:4]) < MIN_RELEASE_YEAR:
        return [], [NOT_VALIDATED + "spec.openStackRelease does not name an OpenStack release"]
    catalog = catalogs.get(release)
    if catalog is None:
        return [], [
            NOT_VALIDATED + f'no catalog for release "{release}" is embedded in this operator build'
        ]
    exempt = {normalize_section(s) for s in exempt_sections if s} | RESERVED_STORE_SECTIONS
    errors: list[fe.FieldError] = []
    warnings: list[str] = []
    for section in sorted(extra_config):
        if normalize_section(section) in exempt:
            continue
        section_path = fe.key("spec.extraConfig", section)
        options = extra_config[section] or {}
        unowned = [o for o in sorted(options) if owned_key(section, o) is None]
        if not unowned:
            continue
        if not has_section(catalog, section):
            # As the reference reports it: once per option, on the option's path.
            errors.extend(
                fe.invalid(
                    fe.key(section_path, option),
                    fe.truncate(option),
                    f"no such section in the glance {release} option catalog (sections "
                    "registered by a loaded plugin must be declared via spec.plugins)",
                )
                for option in unowned
            )
            continue
        for option in unowned:
            path = fe.key(section_path, option)
            entry = lookup(catalog, section, option)
            if entry is None:
                errors.append(
                    fe.invalid(
                        path,
                        fe.truncate(option),
                        f"no such option in the glance {release} option catalog",
                    )
                )
                continue
            warning = deprecation_warning(section, option, release, entry)
            if warning:
                warnings.append(warning)
    return errors, warnings
