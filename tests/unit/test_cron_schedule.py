"""robfig/cron v3 ParseStandard and Next, pinned to the Go library's behaviour."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from ansible_collections.c5c3.glance.plugins.module_utils.gosemantics.cron_schedule import (
    TZ_IN_SCHEDULE_MESSAGE,
    CronSchedule,
    cron_error,
    cronjob_schedule_errors,
    next_after,
    parse_standard,
)

ALL_MINUTES = frozenset(range(60))
ALL_HOURS = frozenset(range(24))
ALL_DOM = frozenset(range(1, 32))
ALL_MONTHS = frozenset(range(1, 13))
ALL_DOW = frozenset(range(7))

FIELD_CASES = [
    # spec, minutes, hours, days of month, months, days of week
    ("1 0 * * *", {1}, {0}, ALL_DOM, ALL_MONTHS, ALL_DOW),
    ("* * * * *", ALL_MINUTES, ALL_HOURS, ALL_DOM, ALL_MONTHS, ALL_DOW),
    ("*/5 * * * *", set(range(0, 60, 5)), ALL_HOURS, ALL_DOM, ALL_MONTHS, ALL_DOW),
    ("5/10 * * * *", {5, 15, 25, 35, 45, 55}, ALL_HOURS, ALL_DOM, ALL_MONTHS, ALL_DOW),
    ("1-10/2 * * * *", {1, 3, 5, 7, 9}, ALL_HOURS, ALL_DOM, ALL_MONTHS, ALL_DOW),
    ("0,30 9-17 * * *", {0, 30}, set(range(9, 18)), ALL_DOM, ALL_MONTHS, ALL_DOW),
    ("0 0 1,15 * *", {0}, {0}, {1, 15}, ALL_MONTHS, ALL_DOW),
    ("0 0 * * MON-FRI", {0}, {0}, ALL_DOM, ALL_MONTHS, {1, 2, 3, 4, 5}),
    ("0 0 * * sun,Sat", {0}, {0}, ALL_DOM, ALL_MONTHS, {0, 6}),
    ("0 0 * * 0,6", {0}, {0}, ALL_DOM, ALL_MONTHS, {0, 6}),
    ("0 0 1 JAN,jul *", {0}, {0}, {1}, {1, 7}, ALL_DOW),
    ("0 0 1 jan-MAR/2 *", {0}, {0}, {1}, {1, 3}, ALL_DOW),
    ("0 0 ? * sun", {0}, {0}, ALL_DOM, ALL_MONTHS, {0}),
    ("? ? ? ? ?", ALL_MINUTES, ALL_HOURS, ALL_DOM, ALL_MONTHS, ALL_DOW),
    ("*-5 * * * *", ALL_MINUTES, ALL_HOURS, ALL_DOM, ALL_MONTHS, ALL_DOW),
    ("0 0 */2 * *", {0}, {0}, set(range(1, 32, 2)), ALL_MONTHS, ALL_DOW),
    ("+5 +1 +1 +1 +1", {5}, {1}, {1}, {1}, {1}),
    ("05 01 * * *", {5}, {1}, ALL_DOM, ALL_MONTHS, ALL_DOW),
    ("1,,2 * * * *", {1, 2}, ALL_HOURS, ALL_DOM, ALL_MONTHS, ALL_DOW),
    (", * * * *", set(), ALL_HOURS, ALL_DOM, ALL_MONTHS, ALL_DOW),
    ("59 23 31 12 6", {59}, {23}, {31}, {12}, {6}),
    ("0 0 31 2 *", {0}, {0}, {31}, {2}, ALL_DOW),
    ("  0\t0 *  * *\n", {0}, {0}, ALL_DOM, ALL_MONTHS, ALL_DOW),
    ("0\u30000 * * *", {0}, {0}, ALL_DOM, ALL_MONTHS, ALL_DOW),
]


@pytest.mark.parametrize(
    ("spec", "minutes", "hours", "dom", "months", "dow"),
    FIELD_CASES,
    ids=[repr(c[0]) for c in FIELD_CASES],
)
def test_parse_standard_expands_each_field(
    spec: str, minutes: set[int], hours: set[int], dom: set[int], months: set[int], dow: set[int]
) -> None:
    schedule = parse_standard(spec)
    assert schedule.minutes == frozenset(minutes)
    assert schedule.hours == frozenset(hours)
    assert schedule.days_of_month == frozenset(dom)
    assert schedule.months == frozenset(months)
    assert schedule.days_of_week == frozenset(dow)
    assert schedule.interval is None
    assert schedule.location is None


STAR_CASES = [
    ("0 0 * * *", True, True),
    ("0 0 ? * ?", True, True),
    ("0 0 */1 * *", True, True),
    ("0 0 */2 * *", False, True),
    ("0 0 1 * MON", False, False),
    ("0 0 1,* * 1", True, False),
    ("0 0 1-31 * 0-6", False, False),
]


@pytest.mark.parametrize(("spec", "dom_star", "dow_star"), STAR_CASES)
def test_star_bits_follow_robfig(spec: str, dom_star: bool, dow_star: bool) -> None:
    schedule = parse_standard(spec)
    assert (schedule.dom_star, schedule.dow_star) == (dom_star, dow_star)


DESCRIPTOR_CASES = [
    ("@yearly", CronSchedule({0}, {0}, {1}, {1}, ALL_DOW, dow_star=True)),
    ("@annually", CronSchedule({0}, {0}, {1}, {1}, ALL_DOW, dow_star=True)),
    ("@monthly", CronSchedule({0}, {0}, {1}, ALL_MONTHS, ALL_DOW, dow_star=True)),
    ("@weekly", CronSchedule({0}, {0}, ALL_DOM, ALL_MONTHS, {0}, dom_star=True)),
    (
        "@daily",
        CronSchedule({0}, {0}, ALL_DOM, ALL_MONTHS, ALL_DOW, dom_star=True, dow_star=True),
    ),
    (
        "@midnight",
        CronSchedule({0}, {0}, ALL_DOM, ALL_MONTHS, ALL_DOW, dom_star=True, dow_star=True),
    ),
    (
        "@hourly",
        CronSchedule({0}, ALL_HOURS, ALL_DOM, ALL_MONTHS, ALL_DOW, dom_star=True, dow_star=True),
    ),
]


@pytest.mark.parametrize(
    ("spec", "expected"), DESCRIPTOR_CASES, ids=[c[0] for c in DESCRIPTOR_CASES]
)
def test_descriptors_expand_like_robfig(spec: str, expected: CronSchedule) -> None:
    assert parse_standard(spec) == expected


EVERY_CASES = [
    ("@every 1h30m", timedelta(minutes=90)),
    ("@every 90s", timedelta(seconds=90)),
    ("@every 1.5s", timedelta(seconds=1)),
    ("@every 500ms", timedelta(seconds=1)),
    ("@every 0s", timedelta(seconds=1)),
    ("@every -5m", timedelta(seconds=1)),
    ("@every 24h", timedelta(days=1)),
]


@pytest.mark.parametrize(("spec", "interval"), EVERY_CASES, ids=[c[0] for c in EVERY_CASES])
def test_every_rounds_like_cron_every(spec: str, interval: timedelta) -> None:
    schedule = parse_standard(spec)
    assert schedule.interval == interval
    assert schedule.minutes == frozenset()


LOCATION_CASES = [
    ("TZ=UTC 0 1 * * *", "UTC"),
    ("CRON_TZ=UTC 0 1 * * *", "UTC"),
    ("CRON_TZ=Europe/Berlin 0 1 * * *", "Europe/Berlin"),
    ("TZ=America/Argentina/Buenos_Aires 0 1 * * *", "America/Argentina/Buenos_Aires"),
    ("TZ=Etc/GMT+5 0 1 * * *", "Etc/GMT+5"),
    ("TZ= 0 1 * * *", ""),
    ("TZ=Local 0 1 * * *", "Local"),
    ("CRON_TZ=UTC @daily", "UTC"),
    ("TZ=UTC   @every 1m", "UTC"),
]


@pytest.mark.parametrize(("spec", "location"), LOCATION_CASES, ids=[c[0] for c in LOCATION_CASES])
def test_timezone_prefix_is_taken_off_and_kept(spec: str, location: str) -> None:
    assert parse_standard(spec).location == location


ERROR_CASES = [
    ("", "empty spec string"),
    (" ", "expected exactly 5 fields, found 0: []"),
    ("0 1 * *", "expected exactly 5 fields, found 4: [0 1 * *]"),
    ("0 1 * * * *", "expected exactly 5 fields, found 6: [0 1 * * * *]"),
    (" @daily", "expected exactly 5 fields, found 1: [@daily]"),
    ("60 * * * *", "end of range (60) above maximum (59): 60"),
    ("* 24 * * *", "end of range (24) above maximum (23): 24"),
    ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
    ("* * 32 * *", "end of range (32) above maximum (31): 32"),
    ("* * * 0 *", "beginning of range (0) below minimum (1): 0"),
    ("* * * 13 *", "end of range (13) above maximum (12): 13"),
    ("* * * * 7", "end of range (7) above maximum (6): 7"),
    ("* * * * mon-7", "end of range (7) above maximum (6): mon-7"),
    ("* * * * 0-7", "end of range (7) above maximum (6): 0-7"),
    ("5-1 * * * *", "beginning of range (5) beyond end of range (1): 5-1"),
    ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
    ("*/2/3 * * * *", "too many slashes: */2/3"),
    ("1/2/3 * * * *", "too many slashes: 1/2/3"),
    ("*/0 * * * *", "step of range should be a positive number: */0"),
    ("*/-1 * * * *", "negative number (-1) not allowed: -1"),
    ("x * * * *", 'failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax'),
    ("-1 * * * *", 'failed to parse int from : strconv.Atoi: parsing "": invalid syntax'),
    ("*/ * * * *", 'failed to parse int from : strconv.Atoi: parsing "": invalid syntax'),
    ("+ * * * *", 'failed to parse int from +: strconv.Atoi: parsing "+": invalid syntax'),
    ("1.5 * * * *", 'failed to parse int from 1.5: strconv.Atoi: parsing "1.5": invalid syntax'),
    ("jan * * * *", 'failed to parse int from jan: strconv.Atoi: parsing "jan": invalid syntax'),
    (
        "* * * * monday",
        'failed to parse int from monday: strconv.Atoi: parsing "monday": invalid syntax',
    ),
    (
        "99999999999999999999 * * * *",
        "failed to parse int from 99999999999999999999: "
        'strconv.Atoi: parsing "99999999999999999999": value out of range',
    ),
    (
        "9223372036854775807 * * * *",
        "end of range (9223372036854775807) above maximum (59): 9223372036854775807",
    ),
    ("@x", "unrecognized descriptor: @x"),
    ("@DAILY", "unrecognized descriptor: @DAILY"),
    ("@daily ", "unrecognized descriptor: @daily "),
    ("@every", "unrecognized descriptor: @every"),
    ("@reboot", "unrecognized descriptor: @reboot"),
    (
        "@every 1x",
        'failed to parse duration @every 1x: time: unknown unit "x" in duration "1x"',
    ),
    (
        "@every  1h",
        'failed to parse duration @every  1h: time: invalid duration " 1h"',
    ),
    ("TZ=UTC", "runtime error: slice bounds out of range [:-1]"),
    ("TZ=../etc 0 1 * * *", "provided bad location ../etc: time: invalid location name"),
    ("CRON_TZ=/etc/x * * * * *", "provided bad location /etc/x: time: invalid location name"),
    (
        "TZ=Not:A/Zone 0 1 * * *",
        "provided bad location Not:A/Zone: unknown time zone Not:A/Zone",
    ),
    (
        "TZ=Europe/Far_Too_Long_Component 0 1 * * *",
        "provided bad location Europe/Far_Too_Long_Component: "
        "unknown time zone Europe/Far_Too_Long_Component",
    ),
    ("TZ=UTC 0 1 * *", "expected exactly 5 fields, found 4: [0 1 * *]"),
]


@pytest.mark.parametrize(("spec", "message"), ERROR_CASES, ids=[repr(c[0]) for c in ERROR_CASES])
def test_parse_standard_rejects_with_robfig_message(spec: str, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_standard(spec)
    assert str(caught.value) == message
    assert cron_error(spec) == message


def test_cron_error_is_none_for_a_valid_spec() -> None:
    assert cron_error("1 0 * * *") is None


def test_known_zones_make_the_zone_check_exact() -> None:
    zones = {"UTC", "Europe/Berlin"}
    assert parse_standard("TZ=Europe/Berlin 0 1 * * *", known_zones=zones).location == (
        "Europe/Berlin"
    )
    with pytest.raises(ValueError, match="unknown time zone Mars/Olympus"):
        parse_standard("TZ=Mars/Olympus 0 1 * * *", known_zones=zones)
    assert parse_standard("TZ=UTC 0 1 * * *", known_zones=set()).location == "UTC"


def test_parse_standard_needs_a_string() -> None:
    with pytest.raises(TypeError):
        parse_standard(None)  # type: ignore[arg-type]


CRONJOB_CASES = [
    ("1 0 * * *", []),
    ("@daily", []),
    ("CRON_TZ=UTC 0 1 * * *", [TZ_IN_SCHEDULE_MESSAGE]),
    ("TZ=UTC", ["runtime error: slice bounds out of range [:-1]", TZ_IN_SCHEDULE_MESSAGE]),
    ("61 * * * *", ["end of range (61) above maximum (59): 61"]),
]


@pytest.mark.parametrize(("spec", "errors"), CRONJOB_CASES, ids=[c[0] for c in CRONJOB_CASES])
def test_cronjob_schedule_errors_add_the_kubernetes_tz_rule(spec: str, errors: list[str]) -> None:
    assert cronjob_schedule_errors(spec) == errors


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text)


NEXT_CASES = [
    ("1 0 * * *", "2024-01-01T00:00:00", "2024-01-01T00:01:00"),
    ("1 0 * * *", "2024-01-01T00:01:00", "2024-01-02T00:01:00"),
    ("1 0 * * *", "2024-01-01T00:00:59.999999", "2024-01-01T00:01:00"),
    ("*/15 * * * *", "2024-03-10T10:07:30", "2024-03-10T10:15:00"),
    ("* * * * *", "2024-12-31T23:59:00", "2025-01-01T00:00:00"),
    ("0 0 29 2 *", "2024-03-01T00:00:00", "2028-02-29T00:00:00"),
    ("0 0 1 * MON", "2024-01-02T00:00:00", "2024-01-08T00:00:00"),
    ("0 0 */2 * MON", "2024-01-02T00:00:00", "2024-01-03T00:00:00"),
    ("0 0 * * MON", "2024-01-02T00:00:00", "2024-01-08T00:00:00"),
    ("0 0 ? * MON", "2024-01-02T00:00:00", "2024-01-08T00:00:00"),
    ("0 0 13 * FRI", "2024-09-01T00:00:00", "2024-09-06T00:00:00"),
    ("0 12 * * SAT,SUN", "2024-01-01T00:00:00", "2024-01-06T12:00:00"),
    ("30 9-17/4 * * 1-5", "2024-01-05T17:31:00", "2024-01-08T09:30:00"),
    ("59 23 31 12 *", "2024-12-31T23:59:00", "2025-12-31T23:59:00"),
    ("@weekly", "2024-01-01T00:00:00", "2024-01-07T00:00:00"),
    ("@monthly", "2024-01-15T08:00:00", "2024-02-01T00:00:00"),
    ("@yearly", "2024-06-01T00:00:00", "2025-01-01T00:00:00"),
    ("@hourly", "2024-01-01T10:30:00", "2024-01-01T11:00:00"),
    ("@daily", "2024-12-31T23:59:59", "2025-01-01T00:00:00"),
    ("TZ=UTC 0 1 * * *", "2024-01-01T00:00:00", "2024-01-01T01:00:00"),
    ("@every 1h30m", "2024-01-01T10:00:00.500000", "2024-01-01T11:30:00"),
    ("CRON_TZ=Asia/Tokyo @every 10s", "2024-01-01T10:00:00", "2024-01-01T10:00:10"),
]


@pytest.mark.parametrize(
    ("spec", "after", "expected"), NEXT_CASES, ids=[f"{c[0]} after {c[1]}" for c in NEXT_CASES]
)
def test_next_after_matches_robfig_next(spec: str, after: str, expected: str) -> None:
    assert next_after(parse_standard(spec), _at(after)) == _at(expected)


@pytest.mark.parametrize(
    ("spec", "after"),
    [
        ("0 0 30 2 *", "2024-01-01T00:00:00"),
        ("0 0 31 4,6,9,11 *", "2024-01-01T00:00:00"),
        (", * * * *", "2024-01-01T00:00:00"),
        ("0 0 29 2 *", "2097-03-01T00:00:00"),  # 2100 is no leap year; 2104 is past robfig's limit
    ],
)
def test_next_after_gives_none_when_robfig_gives_the_zero_time(spec: str, after: str) -> None:
    assert next_after(parse_standard(spec), _at(after)) is None


def test_next_after_searches_through_the_fifth_year() -> None:
    # From 2099 robfig looks up to the end of 2104, and 2100 is no leap year.
    schedule = parse_standard("0 0 29 2 *")
    assert next_after(schedule, _at("2099-03-01T00:00:00")) == _at("2104-02-29T00:00:00")


def test_next_after_converts_aware_times_to_utc() -> None:
    plus_one = timezone(timedelta(hours=1))
    result = next_after(parse_standard("1 0 * * *"), datetime(2024, 1, 1, 1, 0, tzinfo=plus_one))
    assert result == datetime(2024, 1, 1, 0, 1, tzinfo=UTC)
    assert result is not None and result.tzinfo is UTC


def test_next_after_refuses_a_non_utc_zone() -> None:
    with pytest.raises(ValueError, match="UTC only"):
        next_after(parse_standard("CRON_TZ=Europe/Berlin 0 1 * * *"), _at("2024-01-01T00:00:00"))
