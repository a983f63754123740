"""The ``decimal`` extension: fixed point numbers with four fractional digits.

A value is the i64 ``value * 10**4``. ``decimal(s)`` follows the Rust engine step by step,
because each step has its own message:

1. ``s`` must match ``-?\\d+\\.\\d+`` where ``\\d`` is *any* Unicode decimal digit (Rust's regex
   is Unicode-aware), else `` `s` is not a well-formed decimal value``;
2. the integer part must be ASCII and fit, times 10^4, in an i64, else ``overflow when converting
   to decimal`` (so ``"٣.0"`` is an overflow, not a syntax error);
3. the fractional part must be at most 4 *bytes* of UTF-8, else ``too many digits after the
   decimal in `s```; it must be ASCII, else overflow;
4. the signed sum must fit in an i64, else overflow.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from typing import Any

from ..values import I64_MAX, I64_MIN
from ._base import ExtensionValue, ExtFunction, expect, expect_string, extension_error, extn_json

NUM_DIGITS = 4
_SCALE = 10**NUM_DIGITS

# Python 3.11's ``\d`` knows Unicode 14; Rust's regex crate knows Unicode 16, which added these
# decimal digits (found by probing the Rust engine).
_NEWER_DIGITS = (
    "\U00010d40-\U00010d49\U000116d0-\U000116e3\U00011bf0-\U00011bf9\U00011f50-\U00011f59"
    "\U00016130-\U00016139\U00016d70-\U00016d79\U0001ccf0-\U0001ccf9\U0001e4f0-\U0001e4f9"
    "\U0001e5f1-\U0001e5fa"
)
_DIGIT = rf"[\d{_NEWER_DIGITS}]"
# Two possessive digit runs around the point: linear, nothing to backtrack.
_DECIMAL_RE = re.compile(rf"(-?{_DIGIT}++)\.({_DIGIT}++)")


class Decimal(ExtensionValue):
    """A Cedar ``decimal``: ``value`` is the number times 10^4, an i64."""

    __slots__ = ("value",)
    cedar_type = "decimal"
    value: int

    def __init__(self, value: int) -> None:
        if not I64_MIN <= value <= I64_MAX:
            raise ValueError(f"decimal out of range: {value}")
        self._init(value=value)

    @classmethod
    def parse(cls, text: str) -> Decimal:
        """The value of ``decimal(text)``; raises ``EvaluationError`` with Rust's message."""
        return cls(_parse(text))

    def _key(self) -> int:
        return self.value

    def __reduce__(self) -> tuple[Any, ...]:
        return (Decimal, (self.value,))

    def __str__(self) -> str:
        """The shortest text that ``decimal()`` parses back to this value: ``-0.5``, ``3.0``."""
        whole, frac = divmod(abs(self.value), _SCALE)
        digits = f"{frac:0{NUM_DIGITS}d}".rstrip("0") or "0"
        return f"{'-' if self.value < 0 else ''}{whole}.{digits}"

    def to_cedar(self) -> str:
        """``decimal("<shortest text>")``."""
        return f'decimal("{self}")'

    def to_json(self) -> dict[str, Any]:
        """``{"__extn": {"fn": "decimal", "arg": "<shortest text>"}}``."""
        return extn_json("decimal", str(self))


def _overflow() -> Exception:
    return extension_error("decimal", "overflow when converting to decimal")


def _ascii_int(digits: str) -> int:
    """``int(digits)`` for ASCII digits (with an optional ``-``), like Rust's ``i64::from_str``.

    More than 19 significant digits overflow an i64 whatever they are, so a huge digit string
    is never converted (Python refuses, or takes quadratic time, past a few thousand digits).
    """
    sign = "-" if digits.startswith("-") else ""
    significant = digits[len(sign) :].lstrip("0")
    if not significant.isascii() or len(significant) > 19:
        raise _overflow()
    return int(sign + (significant or "0"))


def _parse(text: str) -> int:
    """The scaled i64 of ``decimal(text)``."""
    match = _DECIMAL_RE.fullmatch(text)
    if match is None:
        raise extension_error("decimal", f"`{text}` is not a well-formed decimal value")
    left, right = match.groups()
    whole = _ascii_int(left)
    if not I64_MIN <= whole * _SCALE <= I64_MAX:
        raise _overflow()
    width = len(right.encode("utf-8", "surrogatepass"))
    if width > NUM_DIGITS:
        raise extension_error("decimal", f"too many digits after the decimal in `{text}`")
    frac = _ascii_int(right) * 10 ** (NUM_DIGITS - width)
    value = whole * _SCALE - frac if left.startswith("-") else whole * _SCALE + frac
    if not I64_MIN <= value <= I64_MAX:
        raise _overflow()
    return value


# ---------------------------------------------------------------------------------------------
# Functions


def decimal(text: Any) -> Decimal:
    """``decimal(String) -> decimal``."""
    return Decimal.parse(expect_string(text))


def _comparison(name: str, test: Callable[[int, int], bool]) -> ExtFunction:
    """A ``(decimal, decimal) -> Bool`` method comparing the scaled integers with ``test``."""

    def impl(left: Any, right: Any) -> bool:
        a = expect(Decimal, left).value
        b = expect(Decimal, right).value
        return test(a, b)

    impl.__name__ = name
    impl.__doc__ = f"``decimal.{name}(decimal) -> Bool``."
    return ExtFunction(name, True, ("decimal", "decimal"), "Bool", impl)


DECIMAL_FUNCTIONS: tuple[ExtFunction, ...] = (
    ExtFunction("decimal", False, ("String",), "decimal", decimal),
    _comparison("lessThan", operator.lt),
    _comparison("lessThanOrEqual", operator.le),
    _comparison("greaterThan", operator.gt),
    _comparison("greaterThanOrEqual", operator.ge),
)
"""The ``decimal`` constructor and its four comparison methods."""
