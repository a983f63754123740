"""The ``datetime`` and ``duration`` extensions (stable since Cedar language 4.3).

A ``datetime`` is an i64 count of milliseconds since 1970-01-01T00:00:00Z (no leap seconds), a
``duration`` an i64 count of milliseconds. ``<``, ``<=``, ``>``, ``>=`` apply to both (the
evaluator compares ``.ms``; the classes also support Python's ``<`` and ``<=`` within a class).

``datetime(s)`` accepts exactly ``YYYY-MM-DD``, ``YYYY-MM-DDThh:mm:ssZ``,
``YYYY-MM-DDThh:mm:ss.SSSZ``, ``YYYY-MM-DDThh:mm:ss(+|-)hhmm`` and
``YYYY-MM-DDThh:mm:ss.SSS(+|-)hhmm``. Like Rust, it checks the syntax of the date, then of the
time, then of the milliseconds and offset, and only then the date, time and offset ranges; each
check has its own message.

``duration(s)`` accepts an optional ``-`` and then ``<digits><unit>`` groups with units ``d h m s
ms`` in this order, each at most once, at least one group; ``-`` negates the whole.
"""

from __future__ import annotations

import re
from typing import Any

from ..values import I64_MAX, I64_MIN
from ._base import ExtensionValue, ExtFunction, expect, expect_string, extension_error, extn_json

MS_PER_SECOND = 1000
MS_PER_MINUTE = 60 * MS_PER_SECOND
MS_PER_HOUR = 60 * MS_PER_MINUTE
MS_PER_DAY = 24 * MS_PER_HOUR

_UNIX_EPOCH = "1970-01-01"


def _in_i64(value: int) -> bool:
    return I64_MIN <= value <= I64_MAX


def _check_ms(value: int) -> int:
    if value.__class__ is not int or not _in_i64(value):
        raise ValueError(f"millisecond count out of the i64 range: {value!r}")
    return value


class Duration(ExtensionValue):
    """A Cedar ``duration``: ``ms`` milliseconds (an i64)."""

    __slots__ = ("ms",)
    cedar_type = "duration"
    ms: int

    def __init__(self, ms: int) -> None:
        self._init(ms=_check_ms(ms))

    @classmethod
    def parse(cls, text: str) -> Duration:
        """The value of ``duration(text)``; raises ``EvaluationError`` with Rust's message."""
        return cls(_parse_duration(text))

    def _key(self) -> int:
        return self.ms

    def __reduce__(self) -> tuple[Any, ...]:
        return (Duration, (self.ms,))

    def __lt__(self, other: object) -> bool:
        if other.__class__ is not Duration:
            return NotImplemented
        return self.ms < other.ms

    def __le__(self, other: object) -> bool:
        if other.__class__ is not Duration:
            return NotImplemented
        return self.ms <= other.ms

    def __str__(self) -> str:
        """Compact text that ``duration()`` parses back, e.g. ``-1d2h30m`` or ``0ms``."""
        rest, parts = abs(self.ms), []
        for unit, size in (
            ("d", MS_PER_DAY),
            ("h", MS_PER_HOUR),
            ("m", MS_PER_MINUTE),
            ("s", MS_PER_SECOND),
            ("ms", 1),
        ):
            count, rest = divmod(rest, size)
            if count:
                parts.append(f"{count}{unit}")
        return ("-" if self.ms < 0 else "") + ("".join(parts) or "0ms")

    def to_cedar(self) -> str:
        """``duration("<n>ms")``, as the Rust engine prints durations."""
        return f'duration("{self.ms}ms")'

    def to_json(self) -> dict[str, Any]:
        """``{"__extn": {"fn": "duration", "arg": "<n>ms"}}``."""
        return extn_json("duration", f"{self.ms}ms")


class Datetime(ExtensionValue):
    """A Cedar ``datetime``: ``ms`` milliseconds since the Unix epoch, UTC (an i64)."""

    __slots__ = ("ms",)
    cedar_type = "datetime"
    ms: int

    def __init__(self, ms: int) -> None:
        self._init(ms=_check_ms(ms))

    @classmethod
    def parse(cls, text: str) -> Datetime:
        """The value of ``datetime(text)``; raises ``EvaluationError`` with Rust's message."""
        return cls(_parse_datetime(text))

    def _key(self) -> int:
        return self.ms

    def __reduce__(self) -> tuple[Any, ...]:
        return (Datetime, (self.ms,))

    def __lt__(self, other: object) -> bool:
        if other.__class__ is not Datetime:
            return NotImplemented
        return self.ms < other.ms

    def __le__(self, other: object) -> bool:
        if other.__class__ is not Datetime:
            return NotImplemented
        return self.ms <= other.ms

    def isoformat(self) -> str | None:
        """``YYYY-MM-DDThh:mm:ss.SSSZ``, or ``None`` outside years 0000-9999."""
        days, ms_of_day = divmod(self.ms, MS_PER_DAY)
        year, month, day = _civil_from_days(days)
        if not 0 <= year <= 9999:
            return None
        hours, rest = divmod(ms_of_day, MS_PER_HOUR)
        minutes, rest = divmod(rest, MS_PER_MINUTE)
        seconds, millis = divmod(rest, MS_PER_SECOND)
        return (
            f"{year:04d}-{month:02d}-{day:02d}"
            f"T{hours:02d}:{minutes:02d}:{seconds:02d}.{millis:03d}Z"
        )

    def __str__(self) -> str:
        """The ISO form when there is one, else the Cedar form."""
        return self.isoformat() or self.to_cedar()

    def to_cedar(self) -> str:
        """The Rust engine's canonical form: ``(datetime("1970-01-01")).offset(duration("<n>ms"))``.

        Rust's messages (e.g. offset overflow) print datetimes this way.
        """
        return f'(datetime("{_UNIX_EPOCH}")).offset({Duration(self.ms).to_cedar()})'

    def to_json(self) -> dict[str, Any]:
        """Rust's serialization: ``offset`` applied to the epoch and a duration (``args`` form)."""
        args = [extn_json("datetime", _UNIX_EPOCH), Duration(self.ms).to_json()]
        return {"__extn": {"fn": "offset", "args": args}}


# ---------------------------------------------------------------------------------------------
# Calendar arithmetic (proleptic Gregorian, valid for any year; Howard Hinnant's algorithms)


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days from 1970-01-01 to the given date."""
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146097 + day_of_era - 719468


def _civil_from_days(days: int) -> tuple[int, int, int]:
    """The (year, month, day) that is ``days`` days after 1970-01-01."""
    days += 719468
    era = days // 146097
    day_of_era = days - era * 146097
    year_of_era = (
        day_of_era - day_of_era // 1460 + day_of_era // 36524 - day_of_era // 146096
    ) // 365
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    shifted_month = (5 * day_of_year + 2) // 153
    day = day_of_year - (153 * shifted_month + 2) // 5 + 1
    month = shifted_month + (3 if shifted_month < 10 else -9)
    return year_of_era + era * 400 + (month <= 2), month, day


# ---------------------------------------------------------------------------------------------
# Parsing

# Fixed-width fields, and digit runs ended by a unit letter (possessive): each linear.
_DATE_RE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_HMS_RE = re.compile(r"T([0-9]{2}):([0-9]{2}):([0-9]{2})")
_MS_OFFSET_RE = re.compile(r"(?:\.([0-9]{3}))?(?:Z|([+-])([0-9]{2})([0-9]{2}))")
_DURATION_RE = re.compile(
    r"(-?)(?:([0-9]++)d)?(?:([0-9]++)h)?(?:([0-9]++)m)?(?:([0-9]++)s)?(?:([0-9]++)ms)?"
)
_DURATION_UNITS = (MS_PER_DAY, MS_PER_HOUR, MS_PER_MINUTE, MS_PER_SECOND, 1)


def _datetime_error(message: str) -> Exception:
    return extension_error("datetime", message)


def _days_in_month(year: int, month: int) -> int:
    """Days in ``month`` of ``year`` (proleptic Gregorian; ``calendar.monthrange``'s count,
    without importing ``calendar``, which costs a hook process more than this module)."""
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _check_date(text: str, year: int, month: int, day: int) -> int:
    """Days since the epoch of a calendar-valid date, else ``invalid date: <text>``."""
    if not 1 <= month <= 12 or not 1 <= day <= _days_in_month(year, month):
        raise _datetime_error(f"invalid date: {text}")
    return _days_from_civil(year, month, day)


def _parse_datetime(text: str) -> int:
    """Milliseconds since the epoch of ``datetime(text)``."""
    date = _DATE_RE.match(text)
    if date is None:
        raise _datetime_error("invalid date pattern")
    date_text = date.group()
    year, month, day = (int(g) for g in date.groups())
    if date.end() == len(text):
        return _check_date(date_text, year, month, day) * MS_PER_DAY
    hms = _HMS_RE.match(text, date.end())
    if hms is None:
        raise _datetime_error("invalid hour/minute/second pattern")
    tail = _MS_OFFSET_RE.fullmatch(text, hms.end())
    if tail is None:
        raise _datetime_error("invalid millisecond and/or offset pattern")
    days = _check_date(date_text, year, month, day)
    hour, minute, second = (int(g) for g in hms.groups())
    if hour >= 24 or minute >= 60 or second >= 60:
        raise _datetime_error(f"invalid hour/minute/second: {hms.group()[1:]}")
    millis, sign, offset_hours, offset_minutes = tail.groups()
    offset_ms = 0
    if sign is not None:
        oh, om = int(offset_hours), int(offset_minutes)
        if oh >= 24 or om >= 60:
            raise _datetime_error(f"invalid offset range: {oh}{om}")
        offset_ms = (oh * MS_PER_HOUR + om * MS_PER_MINUTE) * (1 if sign == "+" else -1)
    time_ms = hour * MS_PER_HOUR + minute * MS_PER_MINUTE + second * MS_PER_SECOND
    return days * MS_PER_DAY + time_ms + int(millis or 0) - offset_ms


def _parse_duration(text: str) -> int:
    """Milliseconds of ``duration(text)``.

    Rust parses each count as a u64 and adds the components one by one with overflow checks; as
    they all have the same sign, a count or an intermediate sum overflows exactly when the total
    does (all with the same message), so only the total is checked.
    """
    match = _DURATION_RE.fullmatch(text)
    if text in ("", "-") or match is None:
        raise extension_error("duration", "invalid duration pattern")
    sign, *counts = match.groups()
    if any(c and len(c.lstrip("0")) > 19 for c in counts):  # past u64: never int() it
        raise extension_error("duration", "Duration overflows internal representation")
    numbers = [int(c.lstrip("0") or "0") if c else 0 for c in counts]
    total = sum(n * unit for n, unit in zip(numbers, _DURATION_UNITS, strict=True))
    if sign:
        total = -total
    if not _in_i64(total):
        raise extension_error("duration", "Duration overflows internal representation")
    return total


# ---------------------------------------------------------------------------------------------
# Functions


def datetime(text: Any) -> Datetime:
    """``datetime(String) -> datetime``."""
    return Datetime.parse(expect_string(text))


def duration(text: Any) -> Duration:
    """``duration(String) -> duration``."""
    return Duration.parse(expect_string(text))


def offset(value: Any, delta: Any) -> Datetime:
    """``datetime.offset(duration) -> datetime``: the sum, or an overflow error."""
    start = expect(Datetime, value)
    step = expect(Duration, delta)
    result = start.ms + step.ms
    if not _in_i64(result):
        raise extension_error(
            "offset", f"overflows when adding an offset: {start.to_cedar()}+({step.ms}ms)"
        )
    return Datetime(result)


def duration_since(value: Any, other: Any) -> Duration:
    """``datetime.durationSince(datetime) -> duration``: ``value - other``, or an overflow error."""
    end = expect(Datetime, value)
    start = expect(Datetime, other)
    result = end.ms - start.ms
    if not _in_i64(result):
        raise extension_error(
            "durationSince",
            "overflows when computing the duration between "
            f"{end.to_cedar()} and {start.to_cedar()}",
        )
    return Duration(result)


def to_date(value: Any) -> Datetime:
    """``datetime.toDate() -> datetime``: UTC midnight at or before the instant."""
    instant = expect(Datetime, value)
    result = instant.ms // MS_PER_DAY * MS_PER_DAY
    if not _in_i64(result):
        raise extension_error(
            "toDate", f"overflows when computing the date of {instant.to_cedar()}"
        )
    return Datetime(result)


def to_time(value: Any) -> Duration:
    """``datetime.toTime() -> duration``: time since UTC midnight, in [0, 86400000)."""
    return Duration(expect(Datetime, value).ms % MS_PER_DAY)


def _truncating_div(value: int, divisor: int) -> int:
    """Integer division rounding toward zero (Rust's ``/``)."""
    quotient = abs(value) // divisor
    return -quotient if value < 0 else quotient


def _duration_to(name: str, unit_ms: int) -> ExtFunction:
    """A ``duration -> Long`` method: whole ``unit_ms`` units, truncated toward zero."""

    def impl(value: Any) -> int:
        return _truncating_div(expect(Duration, value).ms, unit_ms)

    impl.__name__ = name
    impl.__doc__ = f"``duration.{name}() -> Long``, truncated toward zero."
    return ExtFunction(name, True, ("duration",), "Long", impl)


DATETIME_FUNCTIONS: tuple[ExtFunction, ...] = (
    ExtFunction("datetime", False, ("String",), "datetime", datetime),
    ExtFunction("duration", False, ("String",), "duration", duration),
    ExtFunction("offset", True, ("datetime", "duration"), "datetime", offset),
    ExtFunction("durationSince", True, ("datetime", "datetime"), "duration", duration_since),
    ExtFunction("toDate", True, ("datetime",), "datetime", to_date),
    ExtFunction("toTime", True, ("datetime",), "duration", to_time),
    _duration_to("toMilliseconds", 1),
    _duration_to("toSeconds", MS_PER_SECOND),
    _duration_to("toMinutes", MS_PER_MINUTE),
    _duration_to("toHours", MS_PER_HOUR),
    _duration_to("toDays", MS_PER_DAY),
)
"""The ``datetime`` and ``duration`` constructors and their methods."""
