"""Parse large policy sets fast: once per policy *shape*, not once per policy.

Large policy sets are generated, so most of their policies share a shape: the same text once
string and integer literals are abstracted. This module splits a policy text into policies
with one regex pass, keys each by its shape, parses every new shape once with the real parser
(with sentinel literals standing in for the real ones) and builds every other policy of that
shape by substituting its literals into the template AST. Literal checks that the grammar
leaves to the parser (escapes, integer range, duplicate record keys) are re-applied on
substitution; anything unexpected falls back to the full parser, which then produces the
answer or the precise error. A property test checks ``parse_fast(t) == parse_policies(t)``.

Policies built here carry a policy-level span but no spans on inner nodes (the full parser
gives those, see :func:`cedarlite.lang.parse.parse_policies`).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import fields
from types import MappingProxyType
from typing import Any

from ...data.values import EntityUID
from ...errors import ParseError
from ...source import Span
from .. import ast
from ..ast import Policy
from . import parse_policies
from .rules import LITERAL_LIMIT, WILDCARD, BadEscape, decode_literal

MIN_POLICIES = 32
"""Texts with fewer policies go straight to the full parser (which also gives inner spans), and
so do texts whose policies turn out to be mostly of distinct shapes (more than one in four new
past the first ``MIN_POLICIES``): a shape's first parse and its template cost about twice a
plain parse of the fast parser (:mod:`cedarlite.lang.parse.fast`), a repeated shape half of one."""

# These run on whole policy files: possessive repeats and disjoint alternatives keep each one
# linear (a string literal is runs of plain characters between escapes, not an alternation
# per character), and `_split` matches where the previous match ended, never from every
# position.
_LEADING = re.compile(r"(?:\s++|//[^\n\r]*+)*+")
# One policy: anything up to a `;` that is not inside a string or a comment.
_POLICY = re.compile(r'(?:[^;"/]++|"[^"\\]*+(?:\\.[^"\\]*+)*+"|//[^\n\r]*+|/)*+;')
_LITERAL = re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+"|\b[0-9]++\b')
_LITERAL_OR_COMMENT = re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+"|//[^\n\r]*+|\b[0-9]++\b')
_STRING = re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+"')
_INT = re.compile(r"\b[0-9]++\b")
_PLACEHOLDER = re.compile('"\x00"|\x01')
_SENTINEL = "\ue000"
_INT_BASE = 10**17
_MAX_HOLES = 10**6


class _Fallback(Exception):
    """The fast path cannot build this text; the full parser must."""


def _string_sentinel(k: int) -> str:
    return f"{_SENTINEL}{k}{_SENTINEL}"


def _hole_of_str(s: str) -> int | None:
    if len(s) > 2 and s[0] == _SENTINEL and s[-1] == _SENTINEL and s[1:-1].isdigit():
        return int(s[1:-1])
    return None


def _hole_of_int(v: int) -> tuple[int, bool] | None:
    a = -v if v < 0 else v
    if _INT_BASE <= a < _INT_BASE + _MAX_HOLES:
        return a - _INT_BASE, v < 0
    return None


# ---------------------------------------------------------------------------------------------
# Splitting


def _split(text: str) -> list[tuple[int, int]] | None:
    """``(start, end)`` of each policy, or None when the text is odd."""
    out = []
    pos = 0
    # Each policy is matched where the previous one ended (a search from every position would
    # rescan the rest of the text from each one: quadratic on an unterminated literal).
    while (m := _POLICY.match(text, pos)) is not None:
        out.append(m.span())
        pos = m.end()
    if _LEADING.match(text, pos).end() != len(text):  # type: ignore[union-attr]
        return None  # something the policy regex cannot read: let the full parser say what
    return out


def _shape(chunk: str) -> tuple[str, list[str]]:
    """The shape of one policy's text and its literal tokens.

    The shape is the policy text with comments dropped, each string literal replaced by
    ``"\\x00"``, each integer literal by ``\\x01``, and whitespace runs collapsed.
    """
    if "//" in chunk:
        lits: list[str] = []

        def keep(lit: re.Match[str]) -> str:
            tok = lit.group()
            if tok[0] == "/":
                return " "
            lits.append(tok)
            return '"\x00"' if tok[0] == '"' else "\x01"

        shape = _LITERAL_OR_COMMENT.sub(keep, chunk)
    else:
        lits = _LITERAL.findall(chunk)
        shape = _INT.sub("\x01", _STRING.sub('"\x00"', chunk))
    return " ".join(shape.split()), lits


def _canonical(shape: str) -> str:
    """The shape with numbered sentinel literals, ready for the full parser."""
    counter = iter(range(_MAX_HOLES))

    def sentinel(m: re.Match[str]) -> str:
        k = next(counter)
        return f'"{_string_sentinel(k)}"' if m.group() != "\x01" else str(_INT_BASE + k)

    return _PLACEHOLDER.sub(sentinel, shape)


# ---------------------------------------------------------------------------------------------
# Templates: a builder per AST node, sharing every subtree that holds no literal


Builder = Callable[[list[str]], Any]


def _decode_str(raw: str) -> str:
    try:
        parts = decode_literal(raw[1:-1])
    except BadEscape:
        raise _Fallback from None
    return parts[0] if parts else ""


def _decode_pattern(raw: str) -> tuple[Any, ...]:
    try:
        return tuple(decode_literal(raw[1:-1], WILDCARD))
    except BadEscape:
        raise _Fallback from None


def _decode_int(raw: str, negated: bool) -> int:
    if len(raw.lstrip("0")) > 19:
        raise _Fallback  # too large: the full parser says so (never int() a huge digit string)
    value = int(raw)
    if value > LITERAL_LIMIT - (0 if negated else 1):
        raise _Fallback
    return -value if negated else value


def _const(value: Any) -> Builder:
    return lambda lits: value


def _template(node: Any) -> tuple[bool, Any]:
    """``(has_holes, builder_or_value)``: values without holes are returned span-free."""
    cls = node.__class__
    if cls is str:
        k = _hole_of_str(node)
        if k is None:
            return False, node
        return True, lambda lits: _decode_str(lits[k])
    if cls is int:
        hole = _hole_of_int(node)
        if hole is None:
            return False, node
        k, negated = hole
        return True, lambda lits: _decode_int(lits[k], negated)
    if cls is EntityUID:
        holed, build_id = _template(node.id)
        if not holed:
            return False, node
        type_name = node.type
        return True, lambda lits: EntityUID(type_name, build_id(lits))
    if cls is ast.Like:
        return _like_template(node)
    if cls is ast.RecordLit:
        return _record_template(node)
    if cls is tuple:
        return _seq_template(node, tuple)
    if cls is MappingProxyType:
        holed, build = _seq_template(tuple(node.items()), tuple)
        if not holed:
            return False, MappingProxyType(dict(node))
        return True, lambda lits: MappingProxyType(dict(build(lits)))
    if hasattr(cls, "__dataclass_fields__"):
        return _node_template(node)
    return False, node  # enums, None, WILDCARD


def _seq_template(items: tuple[Any, ...], make: type) -> tuple[bool, Any]:
    parts = [_template(x) for x in items]
    if not any(h for h, _ in parts):
        return False, make(v for _, v in parts)
    builders = [b if h else _const(b) for h, b in parts]
    return True, lambda lits: make(b(lits) for b in builders)


def _node_template(node: Any) -> tuple[bool, Any]:
    cls = node.__class__
    values, holes = _field_parts(node)
    if not holes:
        return False, cls(*values)
    if len(holes) == 1:
        ((index, build),) = holes
        before, after = values[:index], values[index + 1 :]
        return True, lambda lits: cls(*before, build(lits), *after)

    def make(lits: list[str]) -> Any:
        args = values.copy()
        for i, b in holes:
            args[i] = b(lits)
        return cls(*args)

    return True, make


def _field_parts(node: Any) -> tuple[list[Any], list[tuple[int, Builder]]]:
    """The span-free field values of a node, and a builder for each field that has holes."""
    values: list[Any] = []
    holes: list[tuple[int, Builder]] = []
    for f in fields(node):
        if f.name == "span" or not f.init:
            continue  # kw-only or computed, so the other fields can be passed positionally
        holed, value = _template(getattr(node, f.name))
        if holed:
            holes.append((len(values), value))
        values.append(None if holed else value)
    return values, holes


def _like_template(node: ast.Like) -> tuple[bool, Any]:
    holed, build_expr = _template(node.expr)
    pattern = node.pattern
    k = _hole_of_str(pattern[0]) if len(pattern) == 1 and isinstance(pattern[0], str) else None
    if k is not None:
        expr_b = build_expr if holed else _const(build_expr)
        return True, lambda lits: ast.Like(expr_b(lits), _decode_pattern(lits[k]))
    if not holed:
        return False, ast.Like(build_expr, pattern)
    return True, lambda lits: ast.Like(build_expr(lits), pattern)


def _record_template(node: ast.RecordLit) -> tuple[bool, Any]:
    holed, build = _seq_template(node.entries, tuple)
    if not holed:
        return False, ast.RecordLit(build)

    def make(lits: list[str]) -> ast.RecordLit:
        entries = build(lits)
        if len({k for k, _ in entries}) != len(entries):
            raise _Fallback  # duplicate keys: the full parser reports them
        return ast.RecordLit(entries)

    return True, make


def _policy_template(policy: Policy) -> Builder:
    """``build(lits, id, span) -> Policy`` for a parsed canonical policy."""
    values, holes = _field_parts(policy)

    # INVARIANT: fields(Policy) starts with `id`, which is assigned per instance.
    def build(lits: list[str], policy_id: str, span: Span) -> Policy:
        args = values.copy()
        for i, b in holes:
            args[i] = b(lits)
        args[0] = policy_id
        return Policy(*args, span=span)

    return build  # type: ignore[return-value]


# ---------------------------------------------------------------------------------------------
# Entry point

_lock = threading.Lock()
_templates: dict[tuple[str, bool], Builder | None] = {}
_MAX_TEMPLATES = 20000


MAX_TEMPLATE_DEPTH = 40
"""Policies nested deeper than this are left to the full parser (templates recurse)."""


def _templatable(parsed: list[Policy]) -> bool:
    """One policy, shallow enough for the (recursive) template builders."""
    return len(parsed) == 1 and all(
        ast.depth(c.body) <= MAX_TEMPLATE_DEPTH for c in parsed[0].conditions
    )


def _template_for(shape: str, strict: bool) -> Builder | None:
    key = (shape, strict)
    found = _templates.get(key, _templates)
    if found is not _templates:
        return found  # type: ignore[return-value]
    try:
        parsed = parse_policies(_canonical(shape), strict=strict)
    except ParseError:
        builder = None
    else:
        builder = _policy_template(parsed[0]) if _templatable(parsed) else None
    with _lock:
        if len(_templates) >= _MAX_TEMPLATES:
            _templates.clear()
        _templates[key] = builder
    return builder


def parse_fast(text: str, source: str | None = None, *, strict: bool = False) -> list[Policy]:
    """Same result as :func:`cedarlite.lang.parse.parse_policies` (spans aside), faster on large
    generated sets. Errors always come from the full parser, with their exact positions."""
    # Every policy ends with a `;`: fewer of them than MIN_POLICIES needs no split at all.
    if not isinstance(text, str) or text.count(";") < MIN_POLICIES:
        return parse_policies(text, source, strict=strict)
    chunks = _split(text)
    if chunks is None or len(chunks) < MIN_POLICIES:
        return parse_policies(text, source, strict=strict)
    out: list[Policy] = []
    line, line_pos = 1, 0
    try:
        new = 0
        for i, (start, end) in enumerate(chunks):
            shape, lits = _shape(text[start:end])
            if (shape, strict) not in _templates:
                new += 1
                if i >= MIN_POLICIES and new * 4 > i:
                    raise _Fallback  # mostly distinct shapes: the full parser is faster
            builder = _template_for(shape, strict)
            if builder is None:
                raise _Fallback
            first = _LEADING.match(text, start).end()  # type: ignore[union-attr]
            line += text.count("\n", line_pos, first)
            line_pos = first
            column = first - (text.rfind("\n", 0, first) + 1) + 1
            out.append(builder(lits, f"policy{i}", Span(first, end, line, column)))  # type: ignore[call-arg]
    except _Fallback:
        return parse_policies(text, source, strict=strict)
    return out
