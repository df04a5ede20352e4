"""robfig/cron v3 ``ParseStandard`` in Python, plus a small next-run helper.

Why a port and not a library: croniter and its kind accept other languages (a seconds
field, ``L``, ``W``, ``#``) and word their errors their own way; a CronJob schedule must be
accepted exactly when Kubernetes and the reference accept it, with robfig's message.

Kubernetes CronJob validation and the reference webhook both accept exactly
what ``cron.ParseStandard`` accepts; :func:`parse_standard` reproduces it,
including robfig's error texts and its permissive corners:

* five whitespace-separated fields: minute (0-59), hour (0-23), day of month
  (1-31), month (1-12 or ``jan``-``dec``) and day of week (0-6 or
  ``sun``-``sat``; 7 is rejected), names case-insensitive;
* each field is a comma list (empty items are dropped, so ``","`` is a valid
  field that never matches) of ``*``, ``?``, ``N``, ``N-M``, each optionally
  followed by ``/step``; ``N/step`` means ``N-max/step``; ``*`` and ``?`` are
  accepted in every field and ignore a following ``-M``; numbers may carry a
  ``+`` sign (``strconv.Atoi``);
* descriptors ``@yearly``, ``@annually``, ``@monthly``, ``@weekly``, ``@daily``,
  ``@midnight``, ``@hourly`` and ``@every <Go duration>`` (an interval below one
  second becomes one second, sub-second parts are dropped);
* a ``TZ=<zone> `` or ``CRON_TZ=<zone> `` prefix. Go loads the zone from the
  time zone database; this module does no I/O, so it checks the name's syntax
  (Go's own checks plus the IANA naming rules) unless the caller passes the set
  of known zone names. A prefix without any space makes Go panic; that is
  reported as a ``ValueError`` carrying Go's panic text.

Kubernetes additionally refuses ``TZ`` anywhere in a new CronJob's schedule:
:func:`cronjob_schedule_errors` adds that rule.

:func:`next_after` gives the next activation after a time, in UTC, with
robfig's semantics: when both day fields are restricted a day matches if
either matches (Vixie cron); when either day field is written with ``*`` or
``?`` (without a step above 1) a day must match both.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from ansible_collections.c5c3.glance.plugins.module_utils.gosemantics.go_duration import (
    SECOND,
    go_quote,
    parse_duration_ns,
)

#: Kubernetes' CronJob validation message for a TZ prefix in a new schedule.
TZ_IN_SCHEDULE_MESSAGE = "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"

# unicode.IsSpace: what Go's strings.Fields and strings.TrimSpace split on.
_GO_SPACE = (
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
_DIGITS = "0123456789"

_MONTH_NAMES = {
    name: number
    for number, name in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"),
        start=1,
    )
}
_DOW_NAMES = {
    name: number for number, name in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))
}

# IANA naming rules, as Kubernetes checks a CronJob's timeZone field.
_ZONE_PART = re.compile(r"[A-Za-z.\-_0-9+]{1,14}")


@dataclass(frozen=True)
class _Bounds:
    low: int
    high: int
    names: dict[str, int] | None = None


_MINUTES = _Bounds(0, 59)
_HOURS = _Bounds(0, 23)
_DOM = _Bounds(1, 31)
_MONTHS = _Bounds(1, 12, _MONTH_NAMES)
_DOW = _Bounds(0, 6, _DOW_NAMES)


@dataclass(frozen=True)
class CronSchedule:
    """A parsed schedule: the matching values of each field, or an ``@every`` interval.

    ``dom_star`` and ``dow_star`` are robfig's "star bits": set when the field
    was written with ``*`` or ``?`` (without a step above 1). ``location`` is the
    ``TZ=``/``CRON_TZ=`` zone name, ``None`` without a prefix (Go's ``time.Local``).
    For ``@every`` schedules ``interval`` is set and the field sets are empty.
    """

    minutes: frozenset[int] = frozenset()
    hours: frozenset[int] = frozenset()
    days_of_month: frozenset[int] = frozenset()
    months: frozenset[int] = frozenset()
    days_of_week: frozenset[int] = frozenset()
    dom_star: bool = False
    dow_star: bool = False
    location: str | None = None
    interval: timedelta | None = None


def _go_fields(text: str) -> list[str]:
    """Go's ``strings.Fields``."""
    fields: list[str] = []
    current: list[str] = []
    for char in text:
        if char in _GO_SPACE:
            if current:
                fields.append("".join(current))
                current = []
        else:
            current.append(char)
    if current:
        fields.append("".join(current))
    return fields


def _go_atoi(text: str) -> int:
    """Go's ``strconv.Atoi``; raises ``ValueError`` with the ``strconv.NumError`` text."""

    def error(reason: str) -> ValueError:
        return ValueError(f"strconv.Atoi: parsing {go_quote(text)}: {reason}")

    digits = text[1:] if text[:1] in ("+", "-") else text
    if not digits:
        raise error("invalid syntax")
    number = 0
    for char in digits:
        if char not in _DIGITS:
            raise error("invalid syntax")
        number = number * 10 + ord(char) - 0x30
        if number > 2**64 - 1:
            raise error("value out of range")  # ParseUint stops at the overflow
    if text[:1] == "-":
        if number > 2**63:
            raise error("value out of range")
        return -number
    if number > 2**63 - 1:
        raise error("value out of range")
    return number


def _must_parse_int(expr: str) -> int:
    try:
        number = _go_atoi(expr)
    except ValueError as error:
        raise ValueError(f"failed to parse int from {expr}: {error}") from None
    if number < 0:
        raise ValueError(f"negative number ({number}) not allowed: {expr}")
    return number


def _parse_int_or_name(expr: str, names: dict[str, int] | None) -> int:
    if names is not None and expr.lower() in names:
        return names[expr.lower()]
    return _must_parse_int(expr)


def _get_range(expr: str, bounds: _Bounds) -> tuple[set[int], bool]:
    """robfig's ``getRange``: the values of one list item and its star bit."""
    range_and_step = expr.split("/")
    low_and_high = range_and_step[0].split("-")
    single = len(low_and_high) == 1
    star = False
    if low_and_high[0] in ("*", "?"):
        start, end = bounds.low, bounds.high
        star = True
    else:
        start = _parse_int_or_name(low_and_high[0], bounds.names)
        if len(low_and_high) == 1:
            end = start
        elif len(low_and_high) == 2:
            end = _parse_int_or_name(low_and_high[1], bounds.names)
        else:
            raise ValueError(f"too many hyphens: {expr}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _must_parse_int(range_and_step[1])
        if single:
            end = bounds.high
        if step > 1:
            star = False
    else:
        raise ValueError(f"too many slashes: {expr}")
    if start < bounds.low:
        raise ValueError(f"beginning of range ({start}) below minimum ({bounds.low}): {expr}")
    if end > bounds.high:
        raise ValueError(f"end of range ({end}) above maximum ({bounds.high}): {expr}")
    if start > end:
        raise ValueError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise ValueError(f"step of range should be a positive number: {expr}")
    return set(range(start, end + 1, step)), star


def _get_field(field: str, bounds: _Bounds) -> tuple[frozenset[int], bool]:
    """robfig's ``getField``: a comma list, empty items dropped."""
    values: set[int] = set()
    star = False
    for expr in field.split(","):
        if expr:
            item, item_star = _get_range(expr, bounds)
            values |= item
            star = star or item_star
    return frozenset(values), star


def _every(expr: str, descriptor: str) -> timedelta:
    try:
        nanoseconds = parse_duration_ns(expr)
    except ValueError as error:
        raise ValueError(f"failed to parse duration {descriptor}: {error}") from None
    nanoseconds = max(nanoseconds, SECOND)  # cron.Every: at least one second
    return timedelta(seconds=nanoseconds // SECOND)


def _all(bounds: _Bounds) -> frozenset[int]:
    return frozenset(range(bounds.low, bounds.high + 1))


def _parse_descriptor(descriptor: str, location: str | None) -> CronSchedule:
    """robfig's ``parseDescriptor``."""
    midnight = frozenset({0})
    first = frozenset({1})
    if descriptor in ("@yearly", "@annually"):
        return CronSchedule(
            midnight, midnight, first, first, _all(_DOW), dow_star=True, location=location
        )
    if descriptor == "@monthly":
        return CronSchedule(
            midnight, midnight, first, _all(_MONTHS), _all(_DOW), dow_star=True, location=location
        )
    if descriptor == "@weekly":
        return CronSchedule(
            midnight,
            midnight,
            _all(_DOM),
            _all(_MONTHS),
            frozenset({0}),
            dom_star=True,
            location=location,
        )
    if descriptor in ("@daily", "@midnight", "@hourly"):
        return CronSchedule(
            midnight,
            _all(_HOURS) if descriptor == "@hourly" else midnight,
            _all(_DOM),
            _all(_MONTHS),
            _all(_DOW),
            dom_star=True,
            dow_star=True,
            location=location,
        )
    if descriptor.startswith("@every "):
        return CronSchedule(location=location, interval=_every(descriptor[7:], descriptor))
    raise ValueError(f"unrecognized descriptor: {descriptor}")


def _location_error(name: str, known_zones: Collection[str] | None) -> str | None:
    """Why Go's ``time.LoadLocation`` would refuse ``name``, or ``None``."""
    if name in ("", "UTC", "Local"):
        return None
    if ".." in name or name[0] in "/\\":
        return "time: invalid location name"
    if known_zones is not None:
        return None if name in known_zones else f"unknown time zone {name}"
    parts = name.split("/")
    if all(part != "." and _ZONE_PART.fullmatch(part) for part in parts):
        return None
    return f"unknown time zone {name}"


def parse_standard(spec: str, *, known_zones: Collection[str] | None = None) -> CronSchedule:
    """robfig/cron v3 ``ParseStandard``: parse a 5-field spec or a descriptor.

    ``known_zones`` (for instance ``zoneinfo.available_timezones()``) makes the
    ``TZ=`` check exact; without it zone names are checked for syntax only.
    Raises ``ValueError`` with robfig's message, for example
    ``expected exactly 5 fields, found 6: [0 1 * * * *]`` or
    ``end of range (60) above maximum (59): 60``.
    """
    if not isinstance(spec, str):
        raise TypeError(f"a cron spec must be a string, not {type(spec).__name__}")
    if not spec:
        raise ValueError("empty spec string")
    location: str | None = None
    if spec.startswith(("TZ=", "CRON_TZ=")):
        space = spec.find(" ")
        equals = spec.find("=")
        if space < 0:
            # Go slices spec[eq+1:-1] and panics.
            raise ValueError("runtime error: slice bounds out of range [:-1]")
        location = spec[equals + 1 : space]
        problem = _location_error(location, known_zones)
        if problem is not None:
            raise ValueError(f"provided bad location {location}: {problem}")
        spec = spec[space:].strip(_GO_SPACE)
    if spec.startswith("@"):
        return _parse_descriptor(spec, location)
    fields = _go_fields(spec)
    if len(fields) != 5:
        raise ValueError(f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]")
    minutes, _ = _get_field(fields[0], _MINUTES)
    hours, _ = _get_field(fields[1], _HOURS)
    days_of_month, dom_star = _get_field(fields[2], _DOM)
    months, _ = _get_field(fields[3], _MONTHS)
    days_of_week, dow_star = _get_field(fields[4], _DOW)
    return CronSchedule(
        minutes=minutes,
        hours=hours,
        days_of_month=days_of_month,
        months=months,
        days_of_week=days_of_week,
        dom_star=dom_star,
        dow_star=dow_star,
        location=location,
    )


def cron_error(spec: str, *, known_zones: Collection[str] | None = None) -> str | None:
    """robfig's error text for ``spec``, or ``None`` when ``ParseStandard`` accepts it."""
    try:
        parse_standard(spec, known_zones=known_zones)
    except ValueError as error:
        return str(error)
    return None


def cronjob_schedule_errors(spec: str, *, known_zones: Collection[str] | None = None) -> list[str]:
    """The messages Kubernetes gives for a new CronJob's ``spec.schedule`` (empty when valid).

    Kubernetes runs ``ParseStandard`` and, separately, refuses any ``TZ`` in the
    schedule of a new object (the ``timeZone`` field replaces it).
    """
    errors = []
    problem = cron_error(spec, known_zones=known_zones)
    if problem is not None:
        errors.append(problem)
    if "TZ" in spec:
        errors.append(TZ_IN_SCHEDULE_MESSAGE)
    return errors


def _day_matches(schedule: CronSchedule, day: date) -> bool:
    dom_match = day.day in schedule.days_of_month
    dow_match = (day.weekday() + 1) % 7 in schedule.days_of_week
    if schedule.dom_star or schedule.dow_star:
        return dom_match and dow_match
    return dom_match or dow_match


def next_after(schedule: CronSchedule, when: datetime) -> datetime | None:
    """The first activation strictly after ``when``, evaluated in UTC.

    A naive ``when`` is taken as UTC and a naive result is returned; an aware one
    gives an aware UTC result. Like robfig, ``None`` (Go's zero time) is returned
    when nothing matches up to the end of the fifth year after ``when``.
    ``@every`` schedules add the interval to ``when`` without its sub-seconds.
    Only schedules without a zone, or in UTC, can be evaluated here.
    """
    aware = when.tzinfo is not None
    moment = when.astimezone(UTC).replace(tzinfo=None) if aware else when

    def finish(result: datetime) -> datetime:
        return result.replace(tzinfo=UTC) if aware else result

    if schedule.interval is not None:
        return finish(moment.replace(microsecond=0) + schedule.interval)
    if schedule.location not in (None, "", "UTC"):
        raise ValueError(f"next_after evaluates schedules in UTC only, not {schedule.location}")
    start = moment.replace(second=0, microsecond=0) + timedelta(minutes=1)
    year_limit = (moment.replace(microsecond=0) + timedelta(seconds=1)).year + 5
    hours = sorted(schedule.hours)
    minutes = sorted(schedule.minutes)
    day = start.date()
    while day.year <= year_limit:
        if day.month not in schedule.months:
            day = date(day.year + day.month // 12, day.month % 12 + 1, 1)
            continue
        if _day_matches(schedule, day):
            for hour in hours:
                for minute in minutes:
                    candidate = datetime(day.year, day.month, day.day, hour, minute)
                    if candidate >= start:
                        return finish(candidate)
        day += timedelta(days=1)
    return None
