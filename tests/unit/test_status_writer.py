"""The status a pass writes: condition merging, the Ready aggregate, the no-change gate."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta, timezone

import pytest

from ansible_collections.c5c3.glance.plugins.module_utils.desired import conditions as c
from ansible_collections.c5c3.glance.plugins.module_utils.passes.status_writer import (
    backend_status,
    format_time,
    glance_status,
    merge_conditions,
    status_patch,
)

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
T1 = T0 + timedelta(minutes=5)
STAMP0 = "2026-03-01T12:00:00Z"
STAMP1 = "2026-03-01T12:05:00Z"


def stored(type_, status, reason, message, time=STAMP0, generation=1):
    return {
        "type": type_,
        "status": status,
        "observedGeneration": generation,
        "lastTransitionTime": time,
        "reason": reason,
        "message": message,
    }


DB_WAITING = c.condition(c.DATABASE_READY, False, c.DB_SYNC_IN_PROGRESS, "Running the db-sync Job")
DB_OLD = stored(c.DATABASE_READY, "False", c.DB_SYNC_IN_PROGRESS, "Waiting", STAMP0)


@pytest.mark.parametrize(
    "existing, computed, expected_time",
    [
        ([], DB_WAITING, STAMP1),
        ([DB_OLD], DB_WAITING, STAMP0),  # same status, new message: the old time stays
        (
            [DB_OLD],
            c.condition(c.DATABASE_READY, False, c.DB_SYNC_FAILED, "failed"),
            STAMP0,
        ),  # a new reason alone is no transition either
        ([DB_OLD], c.condition(c.DATABASE_READY, True, c.DATABASE_SYNCED, "ok"), STAMP1),
        ([{**DB_OLD, "lastTransitionTime": ""}], DB_WAITING, STAMP1),  # a broken stored time
    ],
    ids=["new", "message-change", "reason-change", "status-change", "no-stored-time"],
)
def test_last_transition_time_changes_only_with_the_status(existing, computed, expected_time):
    (merged,) = merge_conditions(existing, [computed], 7, T1)
    assert merged["lastTransitionTime"] == expected_time
    assert merged["observedGeneration"] == 7
    assert (merged["status"], merged["reason"], merged["message"]) == (
        computed["status"],
        computed["reason"],
        computed["message"],
    )


def test_last_transition_time_survives_a_message_change():
    first = merge_conditions([], [DB_WAITING], 1, T0)
    again = merge_conditions(first, [{**DB_WAITING, "message": "Still waiting"}], 2, T1)
    assert again[0]["lastTransitionTime"] == STAMP0
    assert again[0]["message"] == "Still waiting"
    assert again[0]["observedGeneration"] == 2


def test_conditions_not_computed_are_kept_as_they_were_unless_cleared():
    hpa = stored(c.HPA_READY, "True", c.HPA_READY_REASON, "configured", STAMP0, generation=3)
    route = stored(c.HTTPROUTE_READY, "True", c.HTTPROUTE_NOT_REQUIRED, "n/a", STAMP0, 3)
    merged = merge_conditions([hpa, route], [DB_WAITING], 4, T1, cleared=[c.HTTPROUTE_READY])
    assert [m["type"] for m in merged] == [c.DATABASE_READY, c.HPA_READY]
    assert merged[1] == hpa  # untouched, its old observedGeneration included


def test_clearing_a_type_the_pass_computes_keeps_the_computed_one():
    merged = merge_conditions([DB_OLD], [DB_WAITING], 1, T1, cleared=[c.DATABASE_READY])
    assert [m["type"] for m in merged] == [c.DATABASE_READY]


def test_merged_conditions_are_sorted_by_type_with_fields_in_api_order():
    computed = [
        c.condition(c.SECRETS_READY, True, c.SECRETS_AVAILABLE, "ok"),
        c.condition(c.BACKENDS_READY, True, c.ALL_BACKENDS_PROJECTED, "ok"),
    ]
    merged = merge_conditions([], computed, 1, T0)
    assert [m["type"] for m in merged] == [c.BACKENDS_READY, c.SECRETS_READY]
    assert list(merged[0]) == [
        "type",
        "status",
        "observedGeneration",
        "lastTransitionTime",
        "reason",
        "message",
    ]


@pytest.mark.parametrize(
    "now, expected",
    [
        (datetime(2026, 3, 1, 12, 0, 0, 999, tzinfo=UTC), STAMP0),
        (datetime(2026, 3, 1, 12, 0, 0), STAMP0),  # naive: taken as UTC
        (datetime(2026, 3, 1, 13, 0, 0, tzinfo=timezone(timedelta(hours=1))), STAMP0),
        ("2026-03-01T12:00:00Z", STAMP0),
    ],
    ids=["microseconds-dropped", "naive", "other-zone", "text"],
)
def test_times_are_rfc3339_utc_whole_seconds(now, expected):
    assert format_time(now) == expected


def all_true() -> list[dict]:
    return [c.condition(t, True, "Fine", "fine") for t in c.READY_PARTS]


def test_ready_is_true_exactly_when_all_nine_are_true_and_extra_config_does_not_count():
    computed = [*all_true(), c.condition(c.EXTRA_CONFIG_HEALTHY, False, "X", "x")]
    status = glance_status({}, computed, 2, T0)
    ready = c.by_type(status["conditions"])[c.READY]
    assert (ready["status"], ready["reason"]) == ("True", c.ALL_READY)
    assert status["observedGeneration"] == 2


def test_ready_is_re_aggregated_over_kept_conditions_too():
    kept = [merge_conditions([], [cond], 1, T0)[0] for cond in all_true()]
    computed = [c.condition(c.GLANCE_API_READY, False, c.API_UNHEALTHY, "HTTP 500")]
    status = glance_status({"conditions": kept}, computed, 2, T1)
    ready = c.by_type(status["conditions"])[c.READY]
    assert (ready["status"], ready["message"]) == (
        "False",
        "One or more sub-conditions are not ready (not ready: GlanceAPIReady)",
    )
    assert ready["lastTransitionTime"] == STAMP1


def test_a_computed_ready_is_ignored_in_favour_of_the_aggregate():
    computed = [c.condition(c.READY, True, c.ALL_READY, "lies")]
    status = glance_status({}, computed, 1, T0)
    (ready,) = status["conditions"]
    assert ready["status"] == "False"
    assert ready["message"].startswith(
        "One or more sub-conditions are not ready (not yet reported: SecretsReady"
    )


@pytest.mark.parametrize(
    "kw, expected",
    [
        ({}, {"endpoint": "http://old/", "installedRelease": "2026.1", "custom": 1}),
        ({"endpoint": "https://new/"}, {"endpoint": "https://new/", "installedRelease": "2026.1"}),
        (
            {"installed_release": "2026.2"},
            {"endpoint": "http://old/", "installedRelease": "2026.2"},
        ),
        ({"endpoint": ""}, {"installedRelease": "2026.1"}),
        ({"target_release": "2026.2", "upgrade_phase": "Expanding"}, {"targetRelease": "2026.2"}),
    ],
    ids=["kept", "endpoint", "installed", "emptied", "upgrade-fields"],
)
def test_status_fields_are_kept_unless_given_and_empty_means_absent(kw, expected):
    existing = {"endpoint": "http://old/", "installedRelease": "2026.1", "custom": 1}
    status = glance_status(existing, [], 3, T0, **kw)
    for key, value in expected.items():
        assert status[key] == value
    if kw.get("endpoint") == "":
        assert "endpoint" not in status
    assert status["custom"] == 1  # fields of others survive


def test_the_stored_status_is_not_modified():
    existing = {"conditions": [DB_OLD], "endpoint": "x"}
    before = copy.deepcopy(existing)
    glance_status(existing, [DB_WAITING], 2, T1, endpoint="y")
    assert existing == before


def test_the_backend_ready_aggregates_credentials_and_projection_only():
    computed = [
        c.condition(c.CREDENTIALS_READY, True, c.CREDENTIALS_AVAILABLE, "ok"),
        c.condition(c.CONFIG_PROJECTED, True, c.CONFIG_PROJECTED_REASON, "ok"),
    ]
    status = backend_status({}, computed, 4, T0)
    assert c.by_type(status["conditions"])[c.READY]["status"] == "True"
    assert status["observedGeneration"] == 4
    status = backend_status({}, computed[:1], 4, T0)
    ready = c.by_type(status["conditions"])[c.READY]
    assert (ready["status"], ready["message"]) == (
        "False",
        "One or more sub-conditions are not ready (not yet reported: ConfigProjected)",
    )


def test_an_unchanged_status_needs_no_patch_whatever_the_order_and_empty_fields():
    status = glance_status({}, all_true(), 1, T0, endpoint="http://x/")
    shuffled = {
        "targetRelease": "",
        "endpoint": "http://x/",
        "observedGeneration": 1,
        "conditions": list(reversed(status["conditions"])),
    }
    assert status_patch(shuffled, status) is None
    again = glance_status(status, all_true(), 1, T1, endpoint="http://x/")
    assert status_patch(status, again) is None


@pytest.mark.parametrize(
    "change, expected_keys",
    [
        (lambda s: s.update(endpoint="https://new/"), {"endpoint"}),
        (lambda s: s.pop("endpoint"), {"endpoint"}),
        (lambda s: s.update(observedGeneration=2), {"observedGeneration"}),
        (lambda s: s["conditions"][0].update(message="new"), {"conditions"}),
        (lambda s: s["conditions"][0].update(observedGeneration=5), {"conditions"}),
    ],
    ids=["field-changed", "field-removed", "generation", "message", "condition-generation"],
)
def test_a_patch_carries_only_what_changed(change, expected_keys):
    old = glance_status({}, all_true(), 1, T0, endpoint="http://x/")
    new = copy.deepcopy(old)
    change(new)
    patch = status_patch(old, new)
    assert set(patch["status"]) == expected_keys
    if "conditions" in expected_keys:
        assert patch["status"]["conditions"] == new["conditions"]  # lists go whole
    if "endpoint" not in new and "endpoint" in expected_keys:
        assert patch["status"]["endpoint"] is None


def test_a_first_status_is_patched_whole():
    new = glance_status(None, [DB_WAITING], 1, T0)
    assert status_patch(None, new) == {"status": new}


def test_the_keep_default_shows_itself():
    from ansible_collections.c5c3.glance.plugins.module_utils.passes.status_writer import KEEP

    assert repr(KEEP) == "KEEP"
