"""Go time.ParseDuration and Duration.String, pinned to Go's own outputs."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from fractions import Fraction

import pytest

from ansible_collections.c5c3.glance.plugins.module_utils.gosemantics.go_duration import (
    HOUR,
    MAX_DURATION_NS,
    MICROSECOND,
    MILLISECOND,
    MIN_DURATION_NS,
    MINUTE,
    SECOND,
    format_duration,
    format_duration_ns,
    go_quote,
    go_time_quote,
    parse_duration,
    parse_duration_ns,
)

PARSE_CASES = [
    ("0", 0),
    ("-0", 0),
    ("+0", 0),
    ("0s", 0),
    ("5m", 5 * MINUTE),
    ("1h30m", 90 * MINUTE),
    ("1.5h", 90 * MINUTE),
    ("-1.5h", -90 * MINUTE),
    ("+5s", 5 * SECOND),
    ("2h45m", 165 * MINUTE),
    ("300ms", 300 * MILLISECOND),
    ("1h2m3s4ms5us6ns", HOUR + 2 * MINUTE + 3 * SECOND + 4 * MILLISECOND + 5 * MICROSECOND + 6),
    ("1\u00b5s", MICROSECOND),
    ("1\u03bcs", MICROSECOND),
    ("1us", MICROSECOND),
    ("1ns", 1),
    (".5s", SECOND // 2),
    ("5.s", 5 * SECOND),
    ("0.1s", 100 * MILLISECOND),
    ("0.3h", 18 * MINUTE),
    ("1.000000001s", SECOND + 1),
    ("1.0000000005s", SECOND),
    ("1m1m", 2 * MINUTE),
    ("10s5m", 5 * MINUTE + 10 * SECOND),
    ("9223372036854775807ns", MAX_DURATION_NS),
    ("2562047h47m16.854775807s", MAX_DURATION_NS),
    ("-9223372036854775808ns", MIN_DURATION_NS),
    ("-2562047h47m16.854775808s", MIN_DURATION_NS),
    # Go adds in uint64: two halves of 2**64 wrap around to zero.
    ("9223372036854775808ns9223372036854775808ns", 0),
]


@pytest.mark.parametrize(("text", "nanoseconds"), PARSE_CASES, ids=[c[0] for c in PARSE_CASES])
def test_parse_duration_ns_matches_go(text: str, nanoseconds: int) -> None:
    assert parse_duration_ns(text) == nanoseconds


@pytest.mark.parametrize(("text", "nanoseconds"), PARSE_CASES, ids=[c[0] for c in PARSE_CASES])
def test_parse_duration_gives_exact_seconds(text: str, nanoseconds: int) -> None:
    assert parse_duration(text) == Fraction(nanoseconds, 10**9)


ERROR_CASES = [
    ("", 'time: invalid duration ""'),
    ("-", 'time: invalid duration "-"'),
    ("+-1s", 'time: invalid duration "+-1s"'),
    (".", 'time: invalid duration "."'),
    (".s", 'time: invalid duration ".s"'),
    ("-.s", 'time: invalid duration "-.s"'),
    (" 1s", 'time: invalid duration " 1s"'),
    ("s", 'time: invalid duration "s"'),
    ("1", 'time: missing unit in duration "1"'),
    ("00", 'time: missing unit in duration "00"'),
    ("1.5", 'time: missing unit in duration "1.5"'),
    ("1h30", 'time: missing unit in duration "1h30"'),
    ("1x", 'time: unknown unit "x" in duration "1x"'),
    ("1d", 'time: unknown unit "d" in duration "1d"'),
    ("1H", 'time: unknown unit "H" in duration "1H"'),
    ("1sec", 'time: unknown unit "sec" in duration "1sec"'),
    ("1s ", 'time: unknown unit "s " in duration "1s "'),
    ("1e3s", 'time: unknown unit "e" in duration "1e3s"'),
    ('1"s', 'time: unknown unit "\\"s" in duration "1\\"s"'),
    ("1h\n", 'time: unknown unit "h\\x0a" in duration "1h\\x0a"'),
    ("1\u00b5", 'time: unknown unit "\\xc2\\xb5" in duration "1\\xc2\\xb5"'),
    ("9223372036854775808ns", 'time: invalid duration "9223372036854775808ns"'),
    ("2562047h47m16.854775808s", 'time: invalid duration "2562047h47m16.854775808s"'),
    ("99999999999999999999h", 'time: invalid duration "99999999999999999999h"'),
    ("2562048h", 'time: invalid duration "2562048h"'),
]


@pytest.mark.parametrize(("text", "message"), ERROR_CASES, ids=[repr(c[0]) for c in ERROR_CASES])
def test_parse_duration_rejects_with_go_message(text: str, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_duration_ns(text)
    assert str(caught.value) == message


@pytest.mark.parametrize("value", [None, 5, 1.5, b"1s"])
def test_parse_duration_needs_a_string(value: object) -> None:
    with pytest.raises(TypeError):
        parse_duration_ns(value)  # type: ignore[arg-type]


FORMAT_NS_CASES = [
    (0, "0s"),
    (1, "1ns"),
    (999, "999ns"),
    (MICROSECOND, "1\u00b5s"),
    (1500, "1.5\u00b5s"),
    (MILLISECOND, "1ms"),
    (1500 * MICROSECOND, "1.5ms"),
    (100 * MILLISECOND, "100ms"),
    (SECOND, "1s"),
    (SECOND + 1, "1.000000001s"),
    (1500 * MILLISECOND, "1.5s"),
    (MINUTE, "1m0s"),
    (5 * MINUTE, "5m0s"),
    (90 * MINUTE, "1h30m0s"),
    (HOUR, "1h0m0s"),
    (24 * HOUR, "24h0m0s"),
    (HOUR + 2 * MINUTE + 3 * SECOND + 4 * MILLISECOND + 5 * MICROSECOND + 6, "1h2m3.004005006s"),
    (-1, "-1ns"),
    (-1500 * MILLISECOND, "-1.5s"),
    (-5 * MINUTE, "-5m0s"),
    (MAX_DURATION_NS, "2562047h47m16.854775807s"),
    (MIN_DURATION_NS, "-2562047h47m16.854775808s"),
]


@pytest.mark.parametrize(
    ("nanoseconds", "text"), FORMAT_NS_CASES, ids=[c[1] for c in FORMAT_NS_CASES]
)
def test_format_duration_ns_matches_go_string(nanoseconds: int, text: str) -> None:
    assert format_duration_ns(nanoseconds) == text


@pytest.mark.parametrize(
    ("nanoseconds", "text"), FORMAT_NS_CASES, ids=[c[1] for c in FORMAT_NS_CASES]
)
def test_go_string_parses_back(nanoseconds: int, text: str) -> None:
    assert parse_duration_ns(text) == nanoseconds


FORMAT_SECONDS_CASES = [
    (300, "5m0s"),
    (5400, "1h30m0s"),
    (1.5, "1.5s"),
    (0, "0s"),
    (0.1, "100ms"),
    (Fraction(1, 10), "100ms"),
    (Decimal("0.001"), "1ms"),
    (Fraction(1, 10**9), "1ns"),
    (-60, "-1m0s"),
    (timedelta(minutes=5), "5m0s"),
    (timedelta(microseconds=1), "1\u00b5s"),
]


@pytest.mark.parametrize(
    ("seconds", "text"), FORMAT_SECONDS_CASES, ids=[c[1] for c in FORMAT_SECONDS_CASES]
)
def test_format_duration_takes_seconds(seconds: object, text: str) -> None:
    assert format_duration(seconds) == text  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("seconds", "error"),
    [
        (Fraction(1, 3), ValueError),
        (1e-10, ValueError),
        (2**63, ValueError),
        (-(2**63), ValueError),
        (True, TypeError),
        ("5m", TypeError),
        (None, TypeError),
    ],
)
def test_format_duration_rejects_what_a_go_duration_cannot_hold(
    seconds: object, error: type[Exception]
) -> None:
    with pytest.raises(error):
        format_duration(seconds)  # type: ignore[arg-type]


@pytest.mark.parametrize("nanoseconds", [MAX_DURATION_NS + 1, MIN_DURATION_NS - 1])
def test_format_duration_ns_rejects_out_of_range(nanoseconds: int) -> None:
    with pytest.raises(ValueError):
        format_duration_ns(nanoseconds)


QUOTE_CASES = [
    ("abc", '"abc"'),
    ("", '""'),
    ('a"b', '"a\\"b"'),
    ("a\\b", '"a\\\\b"'),
    ("\n\t\r", '"\\n\\t\\r"'),
    ("\x07\x08\x0c\x0b", '"\\a\\b\\f\\v"'),
    ("\x01", '"\\x01"'),
    ("\x7f", '"\\x7f"'),
    ("caf\u00e9", '"caf\u00e9"'),
    ("\u00a0", '"\\u00a0"'),
    ("\u200b", '"\\u200b"'),
    ("\U000e0001", '"\\U000e0001"'),
    ("\U0001f600", '"\U0001f600"'),
    (b"\xff", '"\\xff"'),
    (b"a\xc3", '"a\\xc3"'),
]


@pytest.mark.parametrize(("value", "quoted"), QUOTE_CASES, ids=[repr(c[0]) for c in QUOTE_CASES])
def test_go_quote_is_strconv_quote(value: str | bytes, quoted: str) -> None:
    assert go_quote(value) == quoted


TIME_QUOTE_CASES = [
    ("1x", '"1x"'),
    ('"', '"\\""'),
    ("\\", '"\\\\"'),
    ("\n", '"\\x0a"'),
    ("\x7f", '"\x7f"'),
    ("\u00e9", '"\\xc3\\xa9"'),
    ("\ufffd", '"\\xef\\xbf\\xbd"'),
    (b"\xff1", '"\\xff1"'),
]


@pytest.mark.parametrize(
    ("value", "quoted"), TIME_QUOTE_CASES, ids=[repr(c[0]) for c in TIME_QUOTE_CASES]
)
def test_go_time_quote_escapes_bytes(value: str | bytes, quoted: str) -> None:
    assert go_time_quote(value) == quoted
