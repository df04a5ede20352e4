"""Release strings (reference-spec §4.13): parsing, the upgrade detection, the image check."""

from __future__ import annotations

import pytest

from ansible_collections.c5c3.glance.plugins.module_utils.desired.release import (
    Release,
    image_release_mismatch,
    is_upgrade,
    parse_release,
)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("2026.2", Release(2026, 2, "", "2026.2")),
        ("2025.1", Release(2025, 1, "", "2025.1")),
        ("2026.2-p1", Release(2026, 2, "p1", "2026.2-p1")),
        ("2026.1-rc-1", Release(2026, 1, "rc-1", "2026.1-rc-1")),
        ("+2026.2", Release(2026, 2, "", "+2026.2")),
        ("", None),
        ("latest", None),
        ("2026", None),
        ("2026.2.1", None),
        ("2026.3", None),
        ("2026.0", None),
        ("2009.2", None),
        ("2026. 2", None),
        ("2_026.2", None),
        ("v2026.2", None),
    ],
)
def test_a_release_is_year_dot_one_or_two_with_an_optional_suffix(text, expected):
    assert parse_release(text) == expected


def test_a_release_prints_as_year_dot_minor_without_its_suffix():
    assert str(parse_release("2026.2-p3")) == "2026.2"


@pytest.mark.parametrize(
    "spec, installed, expected",
    [
        ("2026.2", "", False),  # nothing installed yet: a fresh install syncs
        ("", "2026.1", False),
        ("2026.2", "2026.2", False),
        ("2026.2-p1", "2026.2", False),  # a patch build keeps the schema
        ("2026.2", "2026.1", True),
        ("2026.1", "2025.2", True),
        ("2025.2", "2026.1", True),  # a downgrade is a change too; the upgrade path refuses it
        ("2026.2", "latest", True),  # unparseable: the upgrade path names it
        ("banana", "2026.2", True),
    ],
)
def test_is_upgrade_compares_year_and_minor_only(spec, installed, expected):
    assert is_upgrade(spec, installed) is expected


@pytest.mark.parametrize(
    "tag, release, expected",
    [
        ("2026.2", "2026.2", None),
        ("2026.2-p1", "2026.2", None),
        ("2026.1", "2026.2", "2026.1"),
        ("2025.2-p4", "2026.1", "2025.2"),
        ("latest", "2026.2", None),
        ("sha-1234", "2026.2", None),
        (None, "2026.2", None),  # a digest-pinned image has no tag
        ("", "2026.2", None),
    ],
)
def test_only_a_tag_that_names_another_release_is_a_mismatch(tag, release, expected):
    assert image_release_mismatch(tag, release) == expected
