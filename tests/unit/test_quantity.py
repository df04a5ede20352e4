"""Kubernetes resource.Quantity parsing and printing, pinned to apimachinery's outputs.

Every expected value below is what k8s.io/apimachinery's ParseQuantity, Cmp and
String/CanonicalizeBytes produce for the same input.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from ansible_collections.c5c3.glance.plugins.module_utils.gosemantics.quantity import (
    BINARY_SI,
    DECIMAL_EXPONENT,
    DECIMAL_SI,
    ERR_FORMAT_WRONG,
    ERR_NUMERIC,
    ERR_SUFFIX,
    canonical_quantity,
    compare_quantities,
    go_quantity_string,
    matches_crd_pattern,
    parse_quantity,
    quantity_format,
)

GI = 2**30
MAX_INT64 = 2**63 - 1

PARSE_CASES = [
    ("0", 0),
    ("1", 1),
    ("1Ki", 1024),
    ("1Mi", 2**20),
    ("1Gi", GI),
    ("10Gi", 10 * GI),
    ("1Ti", 2**40),
    ("1Pi", 2**50),
    ("1Ei", 2**60),
    ("1024Mi", GI),
    ("512Mi", 512 * 2**20),
    ("1.5Gi", 3 * GI // 2),
    ("0.5Gi", GI // 2),
    ("100m", Fraction(1, 10)),
    ("1.5", Fraction(3, 2)),
    ("1k", 1000),
    ("1M", 10**6),
    ("12E", 12 * 10**18),
    ("5n", Fraction(5, 10**9)),
    ("4u", Fraction(4, 10**6)),
    ("1e3", 1000),
    ("1E6", 10**6),
    ("1e+3", 1000),
    ("1e-3", Fraction(1, 1000)),
    ("1.2e3", 1200),
    ("100.035k", 100035),
    ("+1Gi", GI),
    ("-1Gi", -GI),
    ("00012", 12),
    (".5", Fraction(1, 2)),
    ("1.", 1),
    ("1.G", 10**9),
    (".", 0),
    ("-", 0),
    ("+", 0),
    ("-0", 0),
    ("0Gi", 0),
    ("0.9n", Fraction(1, 10**9)),
    ("3.001n", Fraction(4, 10**9)),
    ("-0.5n", Fraction(-1, 10**9)),
    ("1e-20", Fraction(1, 10**9)),
    ("0.000000000001Ki", Fraction(2, 10**9)),
    ("8Ei", MAX_INT64),
    ("-8Ei", -MAX_INT64),
    ("9223372036854775807Ki", MAX_INT64),
    ("18446744073709551616", 2**64),
    ("1e400", 10**400),
    ("0e2000000000", 0),
    ("0.0Ki", 0),
    (3, 3),
    (-1, -1),
    (0.5, Fraction(1, 2)),
    (1e16, 10**16),
    (2.5e-10, Fraction(1, 10**9)),
]


@pytest.mark.parametrize(("value", "expected"), PARSE_CASES, ids=[repr(c[0]) for c in PARSE_CASES])
def test_parse_quantity_gives_the_exact_value(value: str | int | float, expected: Fraction) -> None:
    assert parse_quantity(value) == expected
    assert isinstance(parse_quantity(value), Fraction)


ERROR_CASES = [
    ("", ERR_FORMAT_WRONG),
    (" 1", ERR_FORMAT_WRONG),
    ("1 ", ERR_FORMAT_WRONG),
    ("1.1.M", ERR_FORMAT_WRONG),
    ("aoeu", ERR_FORMAT_WRONG),
    ("1e1e1", ERR_FORMAT_WRONG),
    ("1e3Ki", ERR_FORMAT_WRONG),
    ("1_000", ERR_FORMAT_WRONG),
    ("1,5", ERR_FORMAT_WRONG),
    ("0x10", ERR_FORMAT_WRONG),
    ("1Gi\n", ERR_FORMAT_WRONG),
    ("\u0661", ERR_FORMAT_WRONG),
    ("1K", ERR_SUFFIX),
    ("1ki", ERR_SUFFIX),
    ("1KiB", ERR_FORMAT_WRONG),
    ("0.1mi", ERR_SUFFIX),
    ("1i", ERR_SUFFIX),
    (".5i", ERR_SUFFIX),
    ("1e", ERR_SUFFIX),
    ("1E+", ERR_SUFFIX),
    ("-3.01e-", ERR_SUFFIX),
    ("1Ki5", ERR_SUFFIX),
    ("1Kii", ERR_SUFFIX),
    ("1e99999999999999999999", ERR_SUFFIX),
    (".Ei", ERR_NUMERIC),
    ("-.Ei", ERR_NUMERIC),
    (True, ERR_FORMAT_WRONG),
    (float("nan"), ERR_FORMAT_WRONG),
    (float("inf"), ERR_FORMAT_WRONG),
]


@pytest.mark.parametrize(("value", "message"), ERROR_CASES, ids=[repr(c[0]) for c in ERROR_CASES])
def test_parse_quantity_rejects_with_apimachinery_message(value: object, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_quantity(value)  # type: ignore[arg-type]
    assert str(caught.value) == message


def test_format_error_names_the_kubernetes_regular_expression() -> None:
    assert ERR_FORMAT_WRONG == (
        "quantities must match the regular expression "
        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )


@pytest.mark.parametrize("value", [None, [], {"a": 1}, b"1Gi"])
def test_non_scalar_values_are_type_errors(value: object) -> None:
    with pytest.raises(TypeError):
        parse_quantity(value)  # type: ignore[arg-type]


def test_exponents_too_large_to_evaluate_are_refused() -> None:
    with pytest.raises(ValueError, match="too large"):
        parse_quantity("1e1000001")


CANONICAL_CASES = [
    ("1Gi", "1Gi"),
    ("1024Mi", "1Gi"),
    ("0.5Gi", "512Mi"),
    ("1000m", "1"),
    ("1.5", "1500m"),
    ("1536Mi", "1536Mi"),
    ("1.5Gi", "1536Mi"),
    ("2048Ki", "2Mi"),
    ("1024Ki", "1Mi"),
    ("1025Ki", "1025Ki"),
    ("1000Ki", "1000Ki"),
    ("10Gi", "10Gi"),
    ("1023", "1023"),
    ("1024", "1024"),
    ("1000", "1k"),
    ("1000000", "1M"),
    ("1000M", "1G"),
    ("1500000", "1500k"),
    ("0.001", "1m"),
    ("0.0001", "100u"),
    ("1000n", "1u"),
    ("1n", "1n"),
    ("0.9n", "1n"),
    ("3.001n", "4n"),
    ("10000000000000000", "10P"),
    ("10000000000000000000", "10E"),
    ("12E", "12E"),
    ("1e3", "1e3"),
    ("1000e0", "1e3"),
    ("1e-3", "1e-3"),
    ("1e0", "1"),
    ("1.5e3", "1500"),
    ("15e-1", "1500e-3"),
    ("5E-1", "500e-3"),
    ("1e+16", "10e15"),
    ("1e21", "1e21"),
    ("1e-20", "1e-9"),
    ("0", "0"),
    ("0Gi", "0"),
    ("-0", "0"),
    ("+0.0", "0"),
    ("0.5Ki", "512"),
    ("0.1Ki", "102400m"),
    ("1.0001Ki", "1024102400u"),
    ("1.5Ki", "1536"),
    ("-1.5Ki", "-1536"),
    ("-1Gi", "-1Gi"),
    ("-1000m", "-1"),
    ("100.035k", "100035"),
    ("+1Gi", "1Gi"),
    ("01Gi", "1Gi"),
    ("1.500", "1500m"),
    ("8Ei", "9223372036854775807"),
    ("9999999999999999999.1", "9999999999999999999100m"),
    ("1000E", "1"),  # apimachinery drops a decimal-SI exponent above E
    (1024, "1024"),
    (0.5, "500m"),
    (1e16, "10P"),
    (1e21, "1e21"),
]


@pytest.mark.parametrize(
    ("value", "expected"), CANONICAL_CASES, ids=[repr(c[0]) for c in CANONICAL_CASES]
)
def test_canonical_quantity_matches_kubernetes(value: str | int | float, expected: str) -> None:
    assert canonical_quantity(value) == expected


# apimachinery prints 10**21 in decimal SI without its exponent, so that one cannot round-trip.
ROUND_TRIP_CASES = [case for case in CANONICAL_CASES if case[0] != "1000E"]


@pytest.mark.parametrize(
    ("value", "expected"), ROUND_TRIP_CASES, ids=[repr(c[0]) for c in ROUND_TRIP_CASES]
)
def test_canonical_form_parses_back_to_the_same_value(
    value: str | int | float, expected: str
) -> None:
    assert parse_quantity(expected) == parse_quantity(value)


GO_STRING_CASES = [
    ("+1Gi", "+1Gi"),
    ("01Gi", "01Gi"),
    ("1.500", "1.500"),
    ("100.035k", "100.035k"),
    ("1.e3", "1.e3"),
    ("1e0", "1e0"),
    ("+1", "+1"),
    ("1Gi", "1Gi"),
    ("8Ki", "8Ki"),
    ("1024Mi", "1Gi"),
    ("1000m", "1"),
    ("1.5", "1500m"),
    ("0.5", "500m"),
    ("1.5Gi", "1536Mi"),
    ("0", "0"),
]


@pytest.mark.parametrize(
    ("value", "expected"), GO_STRING_CASES, ids=[repr(c[0]) for c in GO_STRING_CASES]
)
def test_go_quantity_string_keeps_text_go_already_judged_canonical(
    value: str, expected: str
) -> None:
    assert go_quantity_string(value) == expected


COMPARE_CASES = [
    ("1Gi", "1024Mi", 0),
    ("1Gi", "1G", 1),
    ("1G", "1Gi", -1),
    ("1Mi", "1M", 1),
    ("999Mi", "1Gi", -1),
    ("10Gi", "1Mi", 1),
    ("100m", "0.1", 0),
    ("1e3", "1k", 0),
    ("-1", "0", -1),
    ("1n", "0.9n", 0),
    ("8Ei", "9Ei", 0),
    ("1Mi", 1048576, 0),
    ("0", "-0", 0),
    ("256Mi", "1Mi", 1),
]


@pytest.mark.parametrize(
    ("a", "b", "expected"), COMPARE_CASES, ids=[f"{c[0]}~{c[1]}" for c in COMPARE_CASES]
)
def test_compare_quantities_is_exact(a: str, b: str | int, expected: int) -> None:
    assert compare_quantities(a, b) == expected
    assert compare_quantities(b, a) == -expected


FORMAT_CASES = [
    ("1Gi", BINARY_SI),
    ("0.5Ki", BINARY_SI),
    ("0.000000000001Ki", DECIMAL_SI),
    ("1k", DECIMAL_SI),
    ("1", DECIMAL_SI),
    ("0", DECIMAL_SI),
    ("0.0Ki", BINARY_SI),
    ("0e2000000000", DECIMAL_EXPONENT),
    ("1e3", DECIMAL_EXPONENT),
    ("1E-3", DECIMAL_EXPONENT),
]


@pytest.mark.parametrize(("value", "expected"), FORMAT_CASES)
def test_quantity_format_is_the_suffix_family(value: str, expected: str) -> None:
    assert quantity_format(value) == expected


CRD_PATTERN_CASES = [
    ("1Gi", True),
    ("100m", True),
    ("+.5", True),
    ("1.e3", True),
    ("1e3.5", True),
    ("-1", True),
    (".", False),
    ("-", False),
    (" 1", False),
    ("1Gi\n", False),
    ("1K", False),
    ("1Ki5", False),
]


@pytest.mark.parametrize(("value", "expected"), CRD_PATTERN_CASES)
def test_crd_pattern_is_stricter_than_the_parser(value: str, expected: bool) -> None:
    assert matches_crd_pattern(value) is expected
