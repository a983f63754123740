"""The rules of Cedar's policy language that the parsers check, in one place.

Both parsers of :mod:`cedarlite.lang.parse` (the fast one for valid text, the LALR one for the
answer and the error's wording) and the shape cache read these tables and functions, so that
a rule changes in one place: reserved words, built-in methods and their arities, the range of
integer literals, the escapes of string literals and ``like`` patterns, and the nesting limits.
``tests/test_fastparse.py`` and ``tests/test_parse_differential.py`` keep the parsers equal.
"""

from __future__ import annotations

from ...data.values import I64_MAX
from ...lexical import RESERVED, WILDCARD
from ...source import BadEscape, decode_literal

__all__ = [
    "BUILTIN_METHODS",
    "DIALECT_METHODS",
    "LITERAL_LIMIT",
    "MAX_NESTING",
    "MAX_PARSE_STACK",
    "RESERVED",
    "WILDCARD",
    "BadEscape",
    "decode_literal",
]

BUILTIN_METHODS: dict[str, int] = {
    "contains": 1,
    "containsAll": 1,
    "containsAny": 1,
    "isEmpty": 0,
    "getTag": 1,
    "hasTag": 1,
}
"""Cedar's built-in methods and their arity (checked at parse time, unlike extension calls)."""

DIALECT_METHODS: dict[str, int] = {"startsWith": 1, "endsWith": 1}
"""cedarlite's string methods for agent policies; rejected by ``strict=True``."""

MAX_NESTING = 1000
"""Deepest expression nesting accepted: a leaf is one level, and each node holding it one more
(an operator, ``if``, member access, call, set or record literal); a chain such as
``a || b || c`` or ``a + b - c`` is one level however long. Deeper input is a
:class:`~cedarlite.errors.ParseError` pointing at it. Every stage handles this depth without
recursion (Cedar's own engine crashes near 1,000 nested parentheses)."""

MAX_PARSE_STACK = 8 * MAX_NESTING + 64
"""Unfinished symbols the LALR parser may hold at once. Each nesting level holds at most a handful
(``if c then`` holds four), so this only stops input that nests deeper than
:data:`MAX_NESTING` (redundant parentheses, which add no level to the tree, included) before
it has been read to the end."""

LITERAL_LIMIT = I64_MAX + 1
"""The largest integer a literal may spell: only as ``-9223372036854775808``, where the minus is
folded into the literal (``I64_MIN``); without a minus, a literal is at most ``I64_MAX``."""
