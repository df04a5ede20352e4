"""Go ``time.ParseDuration`` and ``time.Duration.String`` in Python.

Why a port and not a library: no Python library parses Go durations with Go's
grammar, its float64 truncation and its error texts, and the webhook's messages must be the
reference's, byte for byte.

``metav1.Duration`` fields are decoded with ``time.ParseDuration`` and printed
with ``Duration.String()``; this module reproduces both exactly, including the
error texts (``time: invalid duration "…"``, ``time: missing unit in duration
"…"``, ``time: unknown unit "…" in duration "…"``) and Go's quirks:

* the grammar is ``[-+]?([0-9]*(\\.[0-9]*)?[a-z]+)+`` plus the bare ``"0"``;
  units are ``ns``, ``us``, ``µs`` (U+00B5), ``μs`` (U+03BC), ``ms``, ``s``,
  ``m`` and ``h``; there are no days;
* a duration is a whole number of nanoseconds in the int64 range; fractions
  are converted with float64 arithmetic and truncated, exactly as Go does;
* Go's error quoting escapes non-ASCII and control bytes as ``\\xNN``.

Values are returned as exact :class:`fractions.Fraction` seconds, or as integer
nanoseconds by the ``*_ns`` variants.

The module also carries :func:`go_quote`, Go's ``strconv.Quote``, which the
sibling emulations (cron's ``strconv.Atoi`` errors, ``url.Error``) share.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from fractions import Fraction

NANOSECOND = 1
MICROSECOND = 1000 * NANOSECOND
MILLISECOND = 1000 * MICROSECOND
SECOND = 1000 * MILLISECOND
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE

MIN_DURATION_NS = -(2**63)
MAX_DURATION_NS = 2**63 - 1

_UNITS: dict[bytes, int] = {
    b"ns": NANOSECOND,
    b"us": MICROSECOND,
    "µ".encode() + b"s": MICROSECOND,  # U+00B5 micro sign
    "μ".encode() + b"s": MICROSECOND,  # U+03BC Greek small letter mu
    b"ms": MILLISECOND,
    b"s": SECOND,
    b"m": MINUTE,
    b"h": HOUR,
}
_DIGITS = b"0123456789"
_UINT64 = 2**64


def _rune_width(data: bytes, index: int) -> int:
    """How many bytes Go's UTF-8 decoding consumes at ``index`` (1 for an invalid byte)."""
    lead = data[index]
    if lead < 0x80:
        return 1
    if 0xC2 <= lead <= 0xDF:
        width = 2
    elif 0xE0 <= lead <= 0xEF:
        width = 3
    elif 0xF0 <= lead <= 0xF4:
        width = 4
    else:
        return 1
    try:
        data[index : index + width].decode("utf-8")
    except UnicodeDecodeError:
        return 1
    return width


def go_time_quote(value: str | bytes) -> str:
    """The ``quote`` helper of Go's time package (used in its error messages).

    Printable ASCII is kept (with ``"`` and ``\\`` escaped); every byte of a
    control or non-ASCII character, and every invalid UTF-8 byte, is written as
    ``\\xNN``.
    """
    data = value if isinstance(value, bytes) else value.encode("utf-8", "surrogatepass")
    out = ['"']
    index = 0
    while index < len(data):
        width = _rune_width(data, index)
        byte = data[index]
        if byte >= 0x80 or byte < 0x20:
            out.extend(f"\\x{data[index + offset]:02x}" for offset in range(width))
        else:
            if byte in (0x22, 0x5C):
                out.append("\\")
            out.append(chr(byte))
        index += width
    out.append('"')
    return "".join(out)


_SHORT_ESCAPES = {
    0x07: "\\a",
    0x08: "\\b",
    0x0C: "\\f",
    0x0A: "\\n",
    0x0D: "\\r",
    0x09: "\\t",
    0x0B: "\\v",
}


def go_quote(value: str | bytes) -> str:
    """Go's ``strconv.Quote`` (also what ``fmt`` prints for ``%q``).

    Shared by the sibling Go emulations (``strconv.NumError``, ``url.Error``).
    Printable characters are kept, ``"`` and ``\\`` are escaped, the usual
    control characters use their short escapes, other non-printable runes use
    ``\\xNN``, ``\\uNNNN`` or ``\\UNNNNNNNN``, and invalid UTF-8 bytes ``\\xNN``.
    """
    data = value if isinstance(value, bytes) else value.encode("utf-8", "surrogatepass")
    out = ['"']
    index = 0
    while index < len(data):
        width = _rune_width(data, index)
        if width == 1 and data[index] >= 0x80:
            out.append(f"\\x{data[index]:02x}")
            index += 1
            continue
        char = data[index : index + width].decode("utf-8")
        code = ord(char)
        index += width
        if char in ('"', "\\"):
            out.append("\\" + char)
        elif char.isprintable():  # Go's IsPrint: letters, marks, numbers, punctuation, symbols, " "
            out.append(char)
        elif code in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[code])
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def _leading_int(data: bytes) -> tuple[int, bytes] | None:
    """Go's ``leadingInt``: the leading digits as a uint64; ``None`` on overflow."""
    number = 0
    index = 0
    while index < len(data) and data[index] in _DIGITS:
        if number > 2**63 // 10:
            return None
        number = number * 10 + data[index] - 0x30
        if number > 2**63:
            return None
        index += 1
    return number, data[index:]


def _leading_fraction(data: bytes) -> tuple[int, float, bytes]:
    """Go's ``leadingFraction``: digits, their float64 scale, and the rest."""
    number = 0
    scale = 1.0
    overflow = False
    index = 0
    while index < len(data) and data[index] in _DIGITS:
        if not overflow:
            if number > (2**63 - 1) // 10:
                overflow = True
            else:
                candidate = number * 10 + data[index] - 0x30
                if candidate > 2**63:
                    overflow = True
                else:
                    number = candidate
                    scale *= 10
        index += 1
    return number, scale, data[index:]


def parse_duration_ns(value: str) -> int:
    """Go's ``time.ParseDuration``: the duration in whole nanoseconds.

    Raises ``ValueError`` with Go's exact message on bad input.
    """
    if not isinstance(value, str):
        raise TypeError(f"a duration must be a string, not {type(value).__name__}")
    original = value.encode("utf-8", "surrogatepass")
    invalid = ValueError("time: invalid duration " + go_time_quote(original))
    data = original
    negative = False
    if data and data[:1] in (b"-", b"+"):
        negative = data[:1] == b"-"
        data = data[1:]
    if data == b"0":
        return 0
    if not data:
        raise invalid
    total = 0
    while data:
        if not (data[0] == 0x2E or data[0] in _DIGITS):
            raise invalid
        before = len(data)
        leading = _leading_int(data)
        if leading is None:
            raise invalid
        whole, data = leading
        had_int = before != len(data)
        fraction, scale, had_fraction = 0, 1.0, False
        if data[:1] == b".":
            data = data[1:]
            before = len(data)
            fraction, scale, data = _leading_fraction(data)
            had_fraction = before != len(data)
        if not had_int and not had_fraction:
            raise invalid
        end = 0
        while end < len(data) and not (data[end] == 0x2E or data[end] in _DIGITS):
            end += 1
        if end == 0:
            raise ValueError("time: missing unit in duration " + go_time_quote(original))
        unit_text, data = data[:end], data[end:]
        unit = _UNITS.get(unit_text)
        if unit is None:
            raise ValueError(
                "time: unknown unit "
                + go_time_quote(unit_text)
                + " in duration "
                + go_time_quote(original)
            )
        if whole > 2**63 // unit:
            raise invalid
        whole *= unit
        if fraction > 0:
            # Go converts with float64 and truncates; Python floats are IEEE doubles too.
            whole += int(float(fraction) * (float(unit) / scale))
            if whole > 2**63:
                raise invalid
        total = (total + whole) % _UINT64  # uint64 arithmetic, as in Go
        if total > 2**63:
            raise invalid
    if negative:
        return -total
    if total > MAX_DURATION_NS:
        raise invalid
    return total


def parse_duration(value: str) -> Fraction:
    """Go's ``time.ParseDuration``, as exact seconds (``"1m30s"`` gives ``Fraction(90)``).

    Raises ``ValueError`` with Go's exact message on bad input.
    """
    return Fraction(parse_duration_ns(value), SECOND)


def _fmt_frac(value: int, precision: int) -> tuple[str, int]:
    digits = []
    printing = False
    for _ in range(precision):
        digit = value % 10
        printing = printing or digit != 0
        if printing:
            digits.append(str(digit))
        value //= 10
    text = "." + "".join(reversed(digits)) if printing else ""
    return text, value


def format_duration_ns(nanoseconds: int) -> str:
    """Go's ``time.Duration.String()`` for a whole number of nanoseconds."""
    if isinstance(nanoseconds, bool) or not isinstance(nanoseconds, int):
        raise TypeError("nanoseconds must be an int")
    if not MIN_DURATION_NS <= nanoseconds <= MAX_DURATION_NS:
        raise ValueError(f"{nanoseconds}ns is outside the range of a Go time.Duration")
    magnitude = abs(nanoseconds)
    sign = "-" if nanoseconds < 0 else ""
    if magnitude < SECOND:
        if magnitude == 0:
            return "0s"
        if magnitude < MICROSECOND:
            return f"{sign}{magnitude}ns"
        if magnitude < MILLISECOND:
            fraction, whole = _fmt_frac(magnitude, 3)
            return f"{sign}{whole}{fraction}µs"
        fraction, whole = _fmt_frac(magnitude, 6)
        return f"{sign}{whole}{fraction}ms"
    fraction, seconds = _fmt_frac(magnitude, 9)
    minutes, seconds = divmod(seconds, 60)
    text = f"{seconds}{fraction}s"
    if minutes:
        hours, minutes = divmod(minutes, 60)
        text = f"{minutes}m{text}"
        if hours:
            text = f"{hours}h{text}"
    return sign + text


def to_nanoseconds(seconds: Fraction | Decimal | int | float | timedelta) -> int:
    """Seconds (or a ``timedelta``) as whole nanoseconds; a finer value is an error.

    A float is taken at its shortest decimal form (``0.1`` is exactly 100ms).
    """
    if isinstance(seconds, bool):
        raise TypeError("seconds must be a number")
    if isinstance(seconds, timedelta):
        exact = Fraction(seconds.days * 86400 + seconds.seconds) + Fraction(
            seconds.microseconds, 10**6
        )
    elif isinstance(seconds, float):
        exact = Fraction(Decimal(repr(seconds)))
    elif isinstance(seconds, Fraction | Decimal | int):
        exact = Fraction(seconds)
    else:
        raise TypeError(f"seconds must be a number, not {type(seconds).__name__}")
    nanoseconds = exact * SECOND
    if nanoseconds.denominator != 1:
        raise ValueError(f"{seconds} seconds is not a whole number of nanoseconds")
    return nanoseconds.numerator


def format_duration(seconds: Fraction | Decimal | int | float | timedelta) -> str:
    """Go's ``time.Duration.String()`` for a number of seconds.

    ``300`` gives ``"5m0s"``, ``5400`` gives ``"1h30m0s"``, ``1.5`` gives ``"1.5s"``,
    ``0`` gives ``"0s"`` and ``Fraction(1, 10)`` gives ``"100ms"``.
    """
    return format_duration_ns(to_nanoseconds(seconds))
