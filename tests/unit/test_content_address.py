"""Content-addressed names (reference-spec §2.6), the prune decision and the db-purge name (§4.12)."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import pytest

from ansible_collections.c5c3.glance.plugins.module_utils.desired.content_address import (
    CONFIG_BASE_LABEL,
    backends_base,
    config_base,
    content_hash,
    content_name,
    db_purge_cronjob_name,
    retained_copies,
    sha256_hex,
)

BACKENDS_CONF = "[s3-default]\ns3_store_host = http://rgw.storage.svc:8080\n"


def test_the_hash_follows_the_definition_with_byte_lengths_for_a_two_key_map():
    # keys sorted; "<len(key)>:<key>=<len(value)>:<value>\n" with UTF-8 byte lengths:
    # "glance-api.conf" is 15 bytes, "zé" 3 bytes, "über" 5 bytes
    data = {"zé": "über", "glance-api.conf": "x"}
    by_hand = hashlib.sha256(b"15:glance-api.conf=1:x\n" + "3:zé=5:über\n".encode()).hexdigest()
    assert content_hash(data) == by_hand


def test_the_hash_of_a_fixed_backends_secret_is_a_known_answer():
    # printf '13:backends.conf=57:[s3-default]\ns3_store_host = http://rgw.storage.svc:8080\n\n' | sha256sum
    golden = "f940adfdb486d1e441513341b618c741970f4d4b76d84c58029f322e5833382e"
    assert content_hash({"backends.conf": BACKENDS_CONF}) == golden
    assert content_name("glance-backends", {"backends.conf": BACKENDS_CONF}) == (
        "glance-backends-f940adfd"
    )


def test_an_empty_map_hashes_to_the_empty_input():
    assert content_hash({}) == hashlib.sha256(b"").hexdigest()


def test_key_order_of_the_input_does_not_change_the_name():
    one = {"a": "1", "b": "2", "c": "3"}
    other = {"c": "3", "a": "1", "b": "2"}
    assert content_name("x", one) == content_name("x", other)


@pytest.mark.parametrize(
    "one, other",
    [
        ({"a": "b=1"}, {"a=b": "1"}),
        ({"a": "1\n1:b=1:2"}, {"a": "1", "b": "2"}),
        ({"ab": ""}, {"a": "b"}),
    ],
    ids=["an equals sign moves", "a value fakes a second entry", "a key absorbs its value"],
)
def test_an_entry_boundary_cannot_be_faked_by_the_content(one, other):
    assert content_hash(one) != content_hash(other)


def test_any_change_of_a_value_gives_a_new_name():
    assert content_name("b", {"k": "v1"}) != content_name("b", {"k": "v2"})


def test_names_bases_and_the_label():
    assert CONFIG_BASE_LABEL == "cobaltcore.c5c3.io/config-base"
    assert config_base("glance") == "glance-config"
    assert backends_base("glance") == "glance-backends"
    assert sha256_hex("glance") == hashlib.sha256(b"glance").hexdigest()


NAME_43 = "g" * 43
NAME_44 = "g" * 44
TRIMMED = "a" * 32 + "-." + "tail-of-a-long-name"  # name[:34] ends in "-."


@pytest.mark.parametrize(
    "name, expected",
    [
        ("glance", "glance-db-purge"),
        (NAME_43, NAME_43 + "-db-purge"),
        (
            NAME_44,
            "g" * 34 + "-" + hashlib.sha256(NAME_44.encode()).hexdigest()[:8] + "-db-purge",
        ),
        (
            TRIMMED,
            "a" * 32 + "-" + hashlib.sha256(TRIMMED.encode()).hexdigest()[:8] + "-db-purge",
        ),
    ],
    ids=[
        "a short name gets the plain suffix",
        "43 characters still get the plain suffix",
        "44 characters get the hashed form",
        "the cut prefix loses its trailing dash and dot",
    ],
)
def test_the_db_purge_cronjob_name(name, expected):
    assert db_purge_cronjob_name(name) == expected
    assert len(db_purge_cronjob_name(name)) <= 52


def test_two_long_names_with_the_same_prefix_get_different_cronjobs():
    assert db_purge_cronjob_name("x" * 40 + "-one") != db_purge_cronjob_name("x" * 40 + "-two")


def copy(name: str, stamp: str | None, owned: bool = True) -> dict:
    return {"name": name, "creationTimestamp": stamp, "owned": owned}


T1, T2, T3, T4, T5 = (f"2026-01-0{day}T00:00:00Z" for day in range(1, 6))


@pytest.mark.parametrize(
    "candidates, current, keep, kept, deleted",
    [
        (
            [
                copy("glance-config-00000001", T1),
                copy("glance-config-00000002", T2),
                copy("glance-config-00000003", T3),
                copy("glance-config-00000004", T4),
                copy("glance-config-00000005", T5),
            ],
            "glance-config-00000005",
            3,
            [
                "glance-config-00000005",
                "glance-config-00000004",
                "glance-config-00000003",
                "glance-config-00000002",
            ],
            ["glance-config-00000001"],
        ),
        (
            [
                copy("glance-config-aaaaaaaa", T1),
                copy("glance-config-cccccccc", T1),
                copy("glance-config-bbbbbbbb", T1),
            ],
            "glance-config-ffffffff",
            2,
            ["glance-config-ffffffff", "glance-config-cccccccc", "glance-config-bbbbbbbb"],
            ["glance-config-aaaaaaaa"],
        ),
        (
            [
                copy("glance-config-00000001", T1, owned=False),
                copy("glance-config-00000002", T2),
            ],
            "glance-config-00000009",
            0,
            ["glance-config-00000009"],
            ["glance-config-00000002"],
        ),
        (
            [
                copy("glance-configx-00000001", T1),
                copy("other-config-00000002", T2),
                copy("glance-config-00000003", T3),
            ],
            "glance-config-00000009",
            0,
            ["glance-config-00000009"],
            ["glance-config-00000003"],
        ),
        (
            [copy("glance-config-00000001", T1), copy("glance-config-00000002", T2)],
            "glance-config-00000003",
            3,
            ["glance-config-00000003", "glance-config-00000002", "glance-config-00000001"],
            [],
        ),
        (
            [
                copy("glance-config-00000001", None),
                copy("glance-config-00000002", T1),
            ],
            "glance-config-00000009",
            1,
            ["glance-config-00000009", "glance-config-00000002"],
            ["glance-config-00000001"],
        ),
        (
            [
                copy("glance-backends-00000001", datetime(2026, 1, 1, tzinfo=UTC)),
                copy("glance-backends-00000002", "2026-01-02T00:00:00+00:00"),
            ],
            "glance-backends-00000009",
            1,
            ["glance-backends-00000009", "glance-backends-00000002"],
            ["glance-backends-00000001"],
        ),
    ],
    ids=[
        "the current copy and the three newest others stay",
        "same-second copies break ties by name descending",
        "a copy this Glance does not own is never deleted",
        "a name outside the base is left alone",
        "nothing is deleted while there are at most three others",
        "a copy without a timestamp counts as the oldest",
        "timestamps may be datetimes or offsets",
    ],
)
def test_the_prune_decision(candidates, current, keep, kept, deleted):
    assert retained_copies(candidates, current, keep) == (kept, deleted)


def test_the_current_copy_in_the_listing_is_kept_once_and_never_deleted():
    listing = [copy("glance-config-00000001", T1), copy("glance-config-00000002", T2)]
    assert retained_copies(listing, "glance-config-00000001", 0) == (
        ["glance-config-00000001"],
        ["glance-config-00000002"],
    )


def test_an_empty_current_with_an_explicit_base_prunes_every_copy():
    listing = [copy("glance-config-00000001", T1), copy("glance-config-00000002", T2)]
    assert retained_copies(listing, "", 0, base="glance-config") == (
        [],
        ["glance-config-00000002", "glance-config-00000001"],
    )
    with pytest.raises(ValueError):
        retained_copies(listing, "", 0)
