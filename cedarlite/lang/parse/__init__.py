"""Cedar policy text -> AST: :func:`parse_policies` and :func:`parse_expression`.

Two parsers read the same grammar (``grammar/cedar.lark``) into the same AST, spans included,
with the same parse-time rules (reserved identifiers, method/function names and arities,
integer range with minus folding, one relational operator without parentheses, duplicate
record keys and annotations, string escapes, slots only in scopes, action-typed action
scopes). The fast one (:mod:`cedarlite.lang.parse.fast`) reads valid text and gives up on anything
else; the LALR one (:mod:`cedarlite.lang.parse.lalr`, which imports Lark) then reads the text and
accepts it or raises the precise error. Every failure is a
:class:`~cedarlite.errors.ParseError` with a span; Lark's exceptions never escape.
"""

from __future__ import annotations

from _thread import allocate_lock  # threading.Lock, without importing threading

from ...errors import ParseError
from ...source import Span
from ..ast import Expr, Policy
from .fast import parse_valid
from .rules import BUILTIN_METHODS, DIALECT_METHODS, MAX_NESTING, MAX_PARSE_STACK

__all__ = [
    "BUILTIN_METHODS",
    "DIALECT_METHODS",
    "MAX_NESTING",
    "MAX_PARSE_STACK",
    "PARSE_CACHE_CHARS",
    "clear_parse_cache",
    "parse_expression",
    "parse_policies",
]

PARSE_CACHE_CHARS = 1_000_000
"""How much policy text (in characters) :func:`parse_policies` keeps the parsed policies of,
least recently used out first (about 14 bytes of syntax tree per character: 14 MB at most). A
process that loads the same text again (a hook or server rebuilding its policy set, tests
sharing policy files) gets the same immutable policies back without parsing; texts over a
sixteenth of this are never kept. Errors are never kept."""

_cache: dict[tuple[str, bool], tuple[Policy, ...]] = {}  # insertion order = recency
_cache_chars = 0
_cache_lock = allocate_lock()


def parse_policies(text: str, source: str | None = None, *, strict: bool = False) -> list[Policy]:
    """Parse a policy set text into policies numbered ``policy0``, ``policy1``, ... by position.

    ``strict`` rejects cedarlite's dialect extras (``startsWith``/``endsWith``).
    Raises :class:`ParseError` for anything that is not valid Cedar.
    """
    if not isinstance(text, str):
        raise ParseError(f"policy text must be a string, not {type(text).__name__}", source=source)
    global _cache_chars
    key = (text, strict)
    keep = len(text) <= PARSE_CACHE_CHARS // 16
    if keep:
        with _cache_lock:
            kept = _cache.pop(key, None)
            if kept is not None:
                _cache[key] = kept  # the most recently used now
                return list(kept)
    try:
        policies = parse_valid(text, strict)
    except Exception:  # a bug of the fast parser (tests call it directly): LALR decides
        policies = None
    if policies is None:  # not plainly valid: the LALR parser accepts it or says what is wrong
        # lazy on purpose: Lark loads only for text the fast parser gives up on (test_layering)
        from .lalr import parse_lalr

        policies = parse_lalr(text, source, strict)
    if keep:
        with _cache_lock:
            if key not in _cache:
                _cache[key] = tuple(policies)
                _cache_chars += len(text)
                while _cache_chars > PARSE_CACHE_CHARS:
                    oldest = next(iter(_cache))
                    del _cache[oldest]
                    _cache_chars -= len(oldest[0])
    return policies


def clear_parse_cache() -> None:
    """Forget the policies kept by :func:`parse_policies` (benchmarks timing cold parses call
    it; nothing else needs to: kept policies are immutable and keyed by the exact text)."""
    global _cache_chars
    with _cache_lock:
        _cache.clear()
        _cache_chars = 0


_EXPR_PREFIX = "permit(principal, action, resource) when {\n"


def parse_expression(text: str, source: str | None = None, *, strict: bool = False) -> Expr:
    """Parse one Cedar expression (``context.n > 3 && principal in Group::"g"``).

    Parsed as the condition of a policy, so every parse-time rule applies; errors point into
    ``text`` itself. Slots are not allowed. Raises :class:`ParseError`.
    """
    if not isinstance(text, str):
        raise ParseError(f"expression must be a string, not {type(text).__name__}", source=source)
    if not text.strip():
        raise ParseError("expected an expression, got nothing", source=source)
    wrapped = _EXPR_PREFIX + text + "\n};"
    try:
        policies = parse_policies(wrapped, source, strict=strict)
    except ParseError as err:
        raise _unwrapped(err, text, source) from None
    body = policies[0].conditions[0].body if len(policies) == 1 else None
    if body is None or len(policies[0].conditions) != 1:
        raise ParseError(
            "expected one expression", span=Span.at(text, 0, len(text)), text=text, source=source
        )
    return body


def _unwrapped(err: ParseError, text: str, source: str | None) -> ParseError:
    """``err`` (raised on the wrapped text) located in the expression's own text."""
    span, message = err.span, err.message
    if span is not None:
        if span.start >= len(_EXPR_PREFIX) + len(text):  # at the wrapper's closing `}`
            closing = "unexpected token `}`"
            if message.startswith(closing):
                message = "unexpected end of input" + message[len(closing) :]
        start = min(max(span.start - len(_EXPR_PREFIX), 0), len(text))
        end = min(max(span.end - len(_EXPR_PREFIX), start), len(text))
        span = Span.at(text, start, end)
    return ParseError(message, span=span, text=text, source=source, help=err.help)
