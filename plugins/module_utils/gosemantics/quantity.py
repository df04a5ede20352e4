"""Kubernetes ``resource.Quantity`` parsing, comparison and printing.

Why a port and not a library: the Kubernetes Python client's ``parse_quantity`` has
neither the Go scanner's grammar nor its canonical printer, and the operator compares and
prints quantities as kube-apiserver does.

A pure-Python port of ``k8s.io/apimachinery/pkg/api/resource`` as far as the
operator needs it: the parser (``ParseQuantity``), exact comparison (``Cmp``)
and the canonical printer (``CanonicalizeBytes``, used by ``String``). Values
are exact :class:`fractions.Fraction` numbers; no floating point is involved.

Behaviour kept from Go on purpose, because the reference operator has it:

* The grammar is the scanner's, not the CRD pattern's: ``"."``, ``"+"`` and
  ``"-"`` parse as zero, ``"1."`` and ``"1.G"`` are accepted, surrounding
  whitespace is rejected (the CRD schema pattern, :data:`QUANTITY_PATTERN`,
  rejects more before the webhook ever runs).
* A value with digits finer than a nano is rounded away from zero to the next
  nano (``"0.9n"`` is ``1n``); a binary-SI value (``Ki``...``Ei``) is capped at
  2**63 - 1 (``"8Ei"`` parses as 9223372036854775807).
* Printing keeps the suffix family of the input (binary SI, decimal SI or
  decimal exponent) and picks the largest unit that keeps the mantissa whole;
  a binary value below 1024 or with a fractional part prints as decimal SI.
  Like apimachinery, a decimal-SI value of 1000E (10**21) or more prints its
  mantissa without any suffix (``"1000E"`` prints as ``"1"``), a known upstream
  bug that is reproduced, not fixed.
* ``Quantity.String()`` returns the input text unchanged when the input
  already looked canonical to Go's fast path (``"+1Gi"`` stays ``"+1Gi"``,
  ``"1.500"`` stays ``"1.500"``): :func:`go_quantity_string` reproduces that,
  :func:`canonical_quantity` always returns the computed canonical form.
* Exponents are int32 in Go; a larger ``e`` exponent wraps around as it does in
  Go. Positive exponents above 10**6 are refused here (Go spends unbounded time
  on them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

BINARY_SI = "BinarySI"
DECIMAL_SI = "DecimalSI"
DECIMAL_EXPONENT = "DecimalExponent"

_SPLIT_RE_STRING = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"

#: apimachinery's ``ErrFormatWrong``.
ERR_FORMAT_WRONG = "quantities must match the regular expression '" + _SPLIT_RE_STRING + "'"
#: apimachinery's ``ErrNumeric``.
ERR_NUMERIC = "unable to parse numeric part of quantity"
#: apimachinery's ``ErrSuffix``.
ERR_SUFFIX = "unable to parse quantity's suffix"

#: The pattern controller-gen puts on a ``resource.Quantity`` field of a CRD; the
#: API server checks it (for string values) before a validating webhook runs.
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
_QUANTITY_PATTERN_RE = re.compile(QUANTITY_PATTERN[1:-1])

_DIGITS = "0123456789"
_SUFFIX_CHARS = "eEinumkKMGTP"
_MAX_INT64 = 2**63 - 1
_MAX_INT64_FACTORS = 18  # maxInt64Factors: decimal digits that always fit in an int64
_NANO = Fraction(1, 10**9)
_MAX_POSITIVE_EXPONENT = 10**6

_DECIMAL_SUFFIXES: dict[str, int] = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
_DECIMAL_BY_EXPONENT = {exponent: suffix for suffix, exponent in _DECIMAL_SUFFIXES.items()}
_BINARY_SUFFIXES: dict[str, int] = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_BINARY_BY_POWER = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]

QuantityInput = str | int | float


@dataclass(frozen=True)
class ParsedQuantity:
    """A parsed quantity: its exact value, its suffix family and Go's cached text.

    ``cached`` is the input string when Go's parser kept it as the printed form
    (see :func:`go_quantity_string`), else ``None``.
    """

    value: Fraction
    format: str
    cached: str | None = None


def _int_from_digits(digits: str) -> int:
    # Decimal avoids Python's limit on converting very long digit strings.
    return int(Decimal(digits)) if len(digits) > 4000 else int(digits)


def _int_text(number: int) -> str:
    return format(Decimal(number), "f") if abs(number).bit_length() > 13000 else str(number)


def _wrap_int32(value: int) -> int:
    return (value + 2**31) % 2**32 - 2**31


def _scan(text: str) -> tuple[bool, str, str, str, str]:
    """apimachinery's ``parseQuantityString``: sign, value text, digits, fraction, suffix."""
    positive = True
    pos = 0
    end = len(text)
    if pos < end and text[0] in "+-":
        positive = text[0] == "+"
        pos += 1
    while True:  # strip leading zeros
        if pos >= end:
            return positive, "0", "0", "", ""
        if text[pos] != "0":
            break
        pos += 1
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    num = text[start:pos]
    if pos >= end:
        return positive, text, num, "", ""
    if not num:
        num = "0"
    denom = ""
    if text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        denom = text[start:pos]
        if pos >= end:
            return positive, text, num, denom, ""
    value = text[:pos]
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos >= end:
        return positive, value, num, denom, text[suffix_start:]
    if text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos >= end:
        return positive, value, num, denom, text[suffix_start:]
    raise ValueError(ERR_FORMAT_WRONG)


def _go_parse_int64(text: str) -> int | None:
    """``strconv.ParseInt(text, 10, 64)``; ``None`` where Go returns an error."""
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not digits or any(c not in _DIGITS for c in digits):
        return None
    if len(digits.lstrip("0")) > 19:
        return None
    number = int(digits)
    if text[:1] == "-":
        number = -number
    if not -(2**63) <= number <= _MAX_INT64:
        return None
    return number


def _interpret(suffix: str) -> tuple[int, int, str]:
    """apimachinery's suffixer: (base, exponent, format) of a suffix."""
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix], DECIMAL_SI
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix], BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE":
        parsed = _go_parse_int64(suffix[1:])
        if parsed is not None:
            return 10, _wrap_int32(parsed), DECIMAL_EXPONENT
    raise ValueError(ERR_SUFFIX)


def _round_up_to_nano(magnitude: Fraction) -> Fraction:
    """Round a non-negative value away from zero to a multiple of 1e-9 (``inf.RoundUp``)."""
    scaled = magnitude * 10**9
    whole = -(-scaled.numerator // scaled.denominator)
    return Fraction(whole, 10**9)


def _go_float_text(number: float) -> str:
    """The JSON text Go's encoding/json writes for a float64."""
    if number != number or number in (float("inf"), float("-inf")):
        raise ValueError(ERR_FORMAT_WRONG)
    magnitude = abs(number)
    if magnitude != 0 and (magnitude < 1e-6 or magnitude >= 1e21):
        text = repr(number)
        mantissa, _, exponent = text.partition("e")
        sign = exponent[0]
        exponent_digits = exponent[1:].lstrip("0") or "0"
        if sign == "-" and len(exponent_digits) == 1:
            return f"{mantissa}e-{exponent_digits}"
        return f"{mantissa}e{sign}{exponent[1:]}"
    text = format(Decimal(repr(number)), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def _to_text(value: QuantityInput) -> str:
    if isinstance(value, bool):
        # A JSON true/false reaches Go's UnmarshalJSON as the text "true"/"false".
        raise ValueError(ERR_FORMAT_WRONG)
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _go_float_text(value)
    raise TypeError(f"a quantity must be a string or a number, not {type(value).__name__}")


def parse(value: QuantityInput) -> ParsedQuantity:
    """Parse like apimachinery's ``ParseQuantity``, keeping the format and cached text.

    Numbers are first written as Go's JSON encoder would write them.
    Raises ``ValueError`` with apimachinery's message on bad input.
    """
    text = _to_text(value)
    if not text:
        raise ValueError(ERR_FORMAT_WRONG)
    if text == "0":
        return ParsedQuantity(Fraction(0), DECIMAL_SI, "0")

    positive, number_text, num, denom, suffix = _scan(text)
    base, exponent, quantity_format = _interpret(suffix)
    shifted = num + denom
    mantissa = _int_from_digits(shifted)
    sign = 1 if positive else -1

    # Go's fast path: the value fits an int64 at a scale no finer than nano.
    if quantity_format == BINARY_SI:
        fast = not denom and 15 - len(num) - (exponent * 3) // 10 - 1 >= 0
        scale = 0
    else:
        fast = _MAX_INT64_FACTORS - len(num) - len(denom) >= 0
        scale = exponent
    scale -= len(denom)
    fast = fast and scale >= -9
    # Go's slow path (inf.Dec) needs at least one digit in the number part.
    if not fast and not any(c in _DIGITS for c in number_text):
        raise ValueError(ERR_NUMERIC)
    if mantissa == 0:
        return ParsedQuantity(Fraction(0), quantity_format, None)
    if base == 10 and exponent - len(denom) > _MAX_POSITIVE_EXPONENT:
        raise ValueError(f"quantity exponent {exponent} is too large to evaluate here")
    if fast:
        if quantity_format == BINARY_SI:
            result = Fraction(sign * mantissa * 2**exponent)
            keeps_text = exponent % 10 == 0 and mantissa & 0x07 != 0
        else:
            result = sign * mantissa * Fraction(10) ** scale
            keeps_text = scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"
        return ParsedQuantity(result, quantity_format, text if keeps_text else None)

    if base == 10:
        exponent10 = exponent - len(denom)  # the value is mantissa * 10**exponent10
        if len(shifted.lstrip("0")) + exponent10 <= -9:
            magnitude = _NANO  # below one nano, which Go rounds up to
        else:
            magnitude = _round_up_to_nano(mantissa * Fraction(10) ** exponent10)
    else:
        magnitude = _round_up_to_nano(Fraction(mantissa * 2**exponent, 10 ** len(denom)))
    if quantity_format == BINARY_SI and magnitude > _MAX_INT64:
        magnitude = Fraction(_MAX_INT64)
    if quantity_format == BINARY_SI and 0 < magnitude < 1:
        quantity_format = DECIMAL_SI
    return ParsedQuantity(sign * magnitude, quantity_format, None)


def parse_quantity(value: QuantityInput) -> Fraction:
    """Return the exact value of a quantity, as apimachinery parses it.

    ``"1Gi"`` is ``Fraction(1073741824)``, ``"100m"`` is ``Fraction(1, 10)``.
    Raises ``ValueError`` with apimachinery's message on bad input.
    """
    return parse(value).value


def compare_quantities(a: QuantityInput, b: QuantityInput) -> int:
    """``Quantity.Cmp``: -1, 0 or 1 as ``a`` is less than, equal to or greater than ``b``."""
    left, right = parse_quantity(a), parse_quantity(b)
    return (left > right) - (left < right)


def _strip_factor(number: int, factor: int) -> tuple[int, int]:
    """Remove every factor ``factor`` from ``number``; return what is left and the count."""
    if number == 0:
        return 0, 0
    powers = [factor]  # factor**1, factor**2, factor**4, ...
    while number % powers[-1] == 0:
        powers.append(powers[-1] * powers[-1])
    count = 0
    for index in range(len(powers) - 1, -1, -1):
        if number % powers[index] == 0:
            number //= powers[index]
            count += 2**index
    return number, count


def _base10(value: Fraction) -> tuple[int, int]:
    """Mantissa and exponent (a multiple of 3) with no factor 10 left in the mantissa."""
    exponent = 0
    while value.denominator != 1:
        value *= 10
        exponent -= 1
    mantissa, tens = _strip_factor(value.numerator, 10)
    exponent += tens
    while exponent % 3:
        mantissa *= 10
        exponent -= 1
    return mantissa, exponent


def _canonicalize(quantity: ParsedQuantity) -> str:
    """apimachinery's ``CanonicalizeBytes``, joined."""
    value = quantity.value
    if value == 0:
        return "0"
    quantity_format = quantity.format
    if quantity_format == BINARY_SI and (-1024 < value < 1024 or value.denominator != 1):
        quantity_format = DECIMAL_SI
    if quantity_format == BINARY_SI:
        mantissa, power = _strip_factor(value.numerator, 1024)
        suffix = _BINARY_BY_POWER[power] if power < len(_BINARY_BY_POWER) else ""
        return _int_text(mantissa) + suffix
    mantissa, exponent = _base10(value)
    if quantity_format == DECIMAL_EXPONENT:
        return _int_text(mantissa) + (f"e{exponent}" if exponent else "")
    return _int_text(mantissa) + _DECIMAL_BY_EXPONENT.get(exponent, "")


def canonical_quantity(value: QuantityInput) -> str:
    """The canonical text of a quantity (apimachinery's ``CanonicalizeBytes``).

    ``"1024Mi"`` gives ``"1Gi"``, ``"0.5Gi"`` gives ``"512Mi"``, ``"1000m"``
    gives ``"1"``, ``"1.5"`` gives ``"1500m"``, ``"1e3"`` stays ``"1e3"``.
    """
    return _canonicalize(parse(value))


def go_quantity_string(value: QuantityInput) -> str:
    """What Go's ``Quantity.String()`` (and so JSON marshalling) prints after parsing.

    Like :func:`canonical_quantity`, except that Go keeps the input text when its
    fast parser judged it canonical: ``"+1Gi"`` stays ``"+1Gi"``, ``"01Gi"`` stays
    ``"01Gi"``, ``"100.035k"`` stays ``"100.035k"``.
    """
    parsed = parse(value)
    return parsed.cached if parsed.cached is not None else _canonicalize(parsed)


def quantity_format(value: QuantityInput) -> str:
    """The suffix family Go records: ``BinarySI``, ``DecimalSI`` or ``DecimalExponent``."""
    return parse(value).format


def matches_crd_pattern(value: str) -> bool:
    """Whether a string passes the CRD schema pattern of a ``resource.Quantity`` field."""
    return _QUANTITY_PATTERN_RE.fullmatch(value) is not None
