# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""OpenStack release strings: ``YYYY.N`` with an optional ``-<suffix>`` (reference-spec §4.13).

A release parses when it is ``<year>.<minor>[-<suffix>]`` with a year of at least 2010 and
a minor of 1 or 2 (OpenStack releases twice a year). The suffix (``-p1``) marks a patch
build of the same release: it never changes which schema the release needs.

* ``is_upgrade(spec, installed)``: whether moving the database from ``installed`` to
  ``spec`` is a release change rather than a re-sync (the reference's ``IsUpgrade``).
* ``image_release_mismatch(tag, release)``: whether an image tag names another release
  than ``spec.openStackRelease`` (§2.3 step 5); a tag that is not a release is no opinion.

Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ansible_collections.c5c3.glance.plugins.module_utils.gosemantics.go_duration import go_quote

MIN_YEAR = 2010
# Go's strconv.Atoi: an optional sign and ASCII digits, nothing else (no spaces, no "_").
_ATOI = re.compile(r"[+-]?[0-9]+")


@dataclass(frozen=True)
class Release:
    """A parsed release: ``year``, ``minor`` (1 or 2), the ``patch`` suffix and the text."""

    year: int
    minor: int
    patch: str
    raw: str

    @property
    def series(self) -> tuple[int, int]:
        """``(year, minor)``: what decides the schema, the suffix left out."""
        return (self.year, self.minor)

    def __str__(self) -> str:
        return f"{self.year}.{self.minor}"


def parse_release(text: str) -> Release | None:
    """``text`` as a release, or None when it is not ``YYYY.N[-suffix]``."""
    if not text:
        return None
    base, _, patch = text.partition("-")
    parts = base.split(".")
    if len(parts) != 2 or not all(_ATOI.fullmatch(p) for p in parts):
        return None
    year, minor = int(parts[0]), int(parts[1])
    if year < MIN_YEAR or minor not in (1, 2):
        return None
    return Release(year=year, minor=minor, patch=patch, raw=text)


def release_parse_error(text: str) -> str | None:
    """Why ``text`` is not a release, in the reference's words (``release.ParseRelease``),
    or None when it parses."""
    if not text:
        return "empty release tag"
    base, _, _ = text.partition("-")
    parts = base.split(".")
    if len(parts) != 2:
        return f"invalid release format {go_quote(text)}: expected YYYY.N"
    for part, what in ((parts[0], "year"), (parts[1], "minor version")):
        if not _ATOI.fullmatch(part):
            return (
                f"invalid release {what} in {go_quote(text)}: strconv.Atoi: parsing "
                f"{go_quote(part)}: invalid syntax"
            )
        if what == "year" and int(part) < MIN_YEAR:
            return f"invalid release year {int(part)} in {go_quote(text)}: must be >= {MIN_YEAR}"
    if int(parts[1]) not in (1, 2):
        return f"invalid release minor version {int(parts[1])} in {go_quote(text)}: must be 1 or 2"
    return None


def is_upgrade(spec_release: str, installed_release: str) -> bool:
    """Whether the schema must move from ``installed_release`` to ``spec_release``.

    False when either is empty (nothing installed yet: a fresh install syncs) or they are
    equal; True when either does not parse (the upgrade path then refuses it by name);
    otherwise True exactly when the two name different ``YYYY.N``: a patch suffix alone
    stays on the db-sync path.
    """
    if not spec_release or not installed_release or spec_release == installed_release:
        return False
    spec, installed = parse_release(spec_release), parse_release(installed_release)
    if spec is None or installed is None:
        return True
    return spec.series != installed.series


def image_release_mismatch(tag: str | None, release: str) -> str | None:
    """The release an image ``tag`` names when it is not ``release``'s ``YYYY.N``, else None.

    None as well when there is no tag (a digest-pinned image) or the tag does not parse
    as a release (``latest``, a build id): only a tag that names a release can disagree.
    """
    if not tag:
        return None
    named = parse_release(tag)
    wanted = parse_release(release)
    if named is None or wanted is None or named.series == wanted.series:
        return None
    return str(named)
