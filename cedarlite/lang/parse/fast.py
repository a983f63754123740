"""A fast parser for *valid* Cedar policy text; anything else is left to the LALR parser.

Most policy texts a process loads are valid, and most of the LALR parser's time goes to
chains of one-child reductions through every precedence level, once per token. This module
reads the same language with one regular expression for the tokens and an operator-precedence
loop whose state lives in an explicit stack of frames (nothing recurses in the nesting depth or
in the length of a chain). It builds exactly the AST that :mod:`cedarlite.lang.parse` builds,
spans included, and applies the same parse-time rules; it returns ``None`` the moment anything
is not plainly valid (an unexpected token, a reserved word, a bad escape, an integer out of
range, a chained relation, a duplicate key, input nested near the limits...). The caller
then runs the LALR parser, which accepts the text or produces the precise error: errors never
come from here.

The danger is the other way round: accepting a text the LALR parser rejects, or building a
different tree. ``tests/test_fastparse.py`` checks both parsers agree (trees, spans, ids) on
the Cedar corpus, the repository's policies and generated and mutated texts.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from itertools import accumulate, chain, count
from operator import add
from typing import Any

from ...data.ext import FUNCTIONS as EXT_FUNCTIONS
from ...data.ext import METHODS as EXT_METHODS
from ...data.values import EntityUID
from ...source import Span
from .. import ast
from ..ast import (
    BinOp,
    Condition,
    ConditionKind,
    Effect,
    Policy,
    Scope,
    ScopeOp,
    SlotId,
    UnaryOp,
    Var,
    is_action_type,
)
from .rules import (
    BUILTIN_METHODS,
    DIALECT_METHODS,
    LITERAL_LIMIT,
    MAX_NESTING,
    RESERVED,
    WILDCARD,
    BadEscape,
    decode_literal,
)

# The tokens of grammar/cedar.lark (same whitespace set, comments, strings, punctuation), with
# two more alternatives so that a match exists wherever the previous one ended: any other
# character (never valid: the parser gives up on it) and the end of the text. `finditer` thus
# never skips text, and every repeat is possessive: one linear pass.
_WS = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_TOKEN = re.compile(
    f"((?:[{_WS}]++|//[^\\n\\r]*+)*+)("
    r"[_a-zA-Z][_a-zA-Z0-9]*+"
    r"|[0-9]++"
    r'|"[^"\\]*+(?:\\.[^"\\]*+)*+"'
    r"|\?[_a-zA-Z][_a-zA-Z0-9]*+"
    r"|::|==|!=|<=|>=|&&|\|\||[-+*!<>(){}\[\],;:.@]"
    r"|[\s\S]|\Z)"
)

_VARS = {v.value: v for v in Var}
_RELOPS = {
    "==": BinOp.EQ,
    "!=": BinOp.NEQ,
    "<": BinOp.LT,
    "<=": BinOp.LE,
    ">": BinOp.GT,
    ">=": BinOp.GE,
    "in": BinOp.IN,
}
_ADDITIVE = {"+": BinOp.ADD, "-": BinOp.SUB}
_UNARY = {"!": UnaryOp.NOT, "-": UnaryOp.NEG}
_IDENT_START = frozenset("_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_DIGITS = frozenset("0123456789")

# What an expression is for (the construct its frame belongs to).
_COND, _PAREN, _CALL, _METHOD, _SET, _RECORD, _IF = range(7)
# `_Frame.relop` after a postfix relation (`has`, `like`, `is T`): only `&&`, `||` may follow.
_DONE = object()


class _GiveUp(Exception):
    """Not plainly valid: the LALR parser must read this text."""


class _Frame:
    """One expression being read, and the construct it belongs to.

    The expression is kept as the levels of the precedence climb: the open ``*`` chain, the
    open ``+``/``-`` chain, the relation's left side and operator, the ``&&`` and ``||``
    operands. A construct (parentheses, arguments, a record, an ``if``) pushes a frame for
    each expression inside it, so nesting costs a frame, never a Python call.
    """

    __slots__ = (
        "add",
        "addops",
        "ands",
        "args",
        "ctx",
        "info",
        "key",
        "mul",
        "open",
        "ors",
        "prefix",
        "rel",
        "relop",
    )

    def __init__(self, ctx: int, open_: int, info: Any = None) -> None:
        self.ctx = ctx
        self.open = open_  # token index of the construct's first token
        self.info = info  # construct data: callee, receiver and name, if parts, record keys
        self.args: list[Any] = []  # elements read so far (arguments, entries, if parts)
        self.key = ""  # the key of the record entry being read
        self.reset()

    def reset(self) -> None:
        self.prefix: list[int] | None = None  # `!`/`-` tokens before the operand being read
        self.mul: list[Any] = []
        self.add: list[Any] | None = None
        self.addops: list[BinOp] | None = None
        self.rel: Any = None
        self.relop: Any = None
        self.ands: list[Any] | None = None
        self.ors: list[Any] | None = None


_new = object.__new__
_set = object.__setattr__


def _make_span(start: int, end: int, line: int, column: int) -> Span:
    """``Span(start, end, line, column)``, twice as fast: most of a parse is building spans.

    INVARIANT: :class:`~cedarlite.source.Span` is a frozen slotted dataclass of these four
    fields and nothing else (no ``__post_init__``); the differential tests compare every
    span built here with the LALR parser's.
    """
    span = _new(Span)
    _set(span, "start", start)
    _set(span, "end", end)
    _set(span, "line", line)
    _set(span, "column", column)
    return span


# INVARIANT: these node classes are frozen slotted dataclasses whose fields are the ones set
# here, `span` and `_hash` (0: not computed yet), with no `__post_init__` to run for the values
# passed (tests/test_fastparse.py checks the field lists; the differential tests the trees).
_GetAttr, _Binary = ast.GetAttr, ast.Binary


def _leaf(cls: type, name: str) -> Any:
    """A builder of ``cls(value, span=span)`` for a node class of one field ``name``."""

    def build(value: Any, span: Span) -> Any:
        node: Any = _new(cls)
        _set(node, name, value)
        _set(node, "span", span)
        _set(node, "_hash", 0)
        return node

    return build


_lit = _leaf(ast.Lit, "value")
_variable = _leaf(ast.Variable, "var")


def _getattr(expr: Any, attr: str, span: Span) -> ast.GetAttr:
    node = _new(_GetAttr)
    _set(node, "expr", expr)
    _set(node, "attr", attr)
    _set(node, "span", span)
    _set(node, "_hash", 0)
    return node


def _binary(op: BinOp, left: Any, right: Any, span: Span) -> ast.Binary:
    """(``op`` is a relation: the check of ``Binary.__post_init__`` holds.)"""
    node = _new(_Binary)
    _set(node, "op", op)
    _set(node, "left", left)
    _set(node, "right", right)
    _set(node, "span", span)
    _set(node, "_hash", 0)
    return node


def _upto(a: Span, end: int) -> Span:
    """The span from the start of ``a`` to offset ``end``."""
    return _make_span(a.start, end, a.line, a.column)


# A string literal's body made only of valid escapes (Rust's rules, as in
# cedarlite.source.decode_literal; code points are checked on decoding), and one escape.
_ESCAPED_BODY = re.compile(
    r"(?:[^\\]++|\\(?:u\{[0-9a-fA-F]{1,6}\}|x[0-7][0-9a-fA-F]|[nrt\\0'\"]))*+"
)
_ESCAPE = re.compile(r"\\(?:u\{([0-9a-fA-F]{1,6})\}|x([0-7][0-9a-fA-F])|(.))")
_SIMPLE_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\", "0": "\0", "'": "'", '"': '"'}


def _unescape(m: re.Match[str]) -> str:
    code = m[1] or m[2]
    if code is None:
        return _SIMPLE_ESCAPES[m[3]]
    value = int(code, 16)
    if value > 0x10FFFF or 0xD800 <= value <= 0xDFFF:
        raise _GiveUp
    return chr(value)


def _body(raw: str) -> str:
    """The body of string literal token ``raw``. A lone ``"`` (an unterminated literal, which
    the tokenizer returns as one character) is not one."""
    if len(raw) < 2 or raw[0] != '"':
        raise _GiveUp
    return raw[1:-1]


def _string(raw: str) -> str:
    """The value of a string literal token (quotes included)."""
    body = _body(raw)
    if "\\" not in body:
        return body
    if _ESCAPED_BODY.fullmatch(body) is None:
        raise _GiveUp
    return _ESCAPE.sub(_unescape, body)


def _name(name: str) -> str:
    """An attribute name, record key or ``has`` path element."""
    if name in RESERVED or name == "__cedar" or name[:1] not in _IDENT_START:
        raise _GiveUp
    return name


class _Parser:
    """One parse of one text (see :func:`parse_valid`)."""

    def __init__(self, text: str, strict: bool) -> None:
        self.text = text
        self.strict = strict
        found = _TOKEN.findall(text)  # (skipped text, token) pairs; the last token is ""
        # A second end marker, so that looking one token ahead never runs off the list.
        self.vals = [token for _, token in found]
        self.vals.append("")
        # bounds[2k] and bounds[2k + 1]: where token k starts and ends.
        self.bounds = list(accumulate(map(len, chain.from_iterable(found))))
        self.bounds += (len(text), len(text))
        # Where each newline is: line k + 1 starts after the k-th (for the spans' lines).
        self.newlines: list[int] | None = None
        if "\n" in text:
            lines = text.split("\n")
            lines.pop()
            self.newlines = list(map(add, accumulate(map(len, lines)), count()))
        self.big = 0  # integer literals equal to 2**63 not (yet) folded under a minus
        self.depth_bound = 0  # how deep the last expression read can nest, at most
        self.deepest = 0  # the most frames open at once in the expression being read

    # -- tokens ----------------------------------------------------------------------------

    def tspan(self, i: int) -> Span:
        """The span of token ``i``."""
        return self.tokens_to(i, self.bounds[2 * i + 1])

    def tokens(self, i: int, j: int) -> Span:
        """The span from the start of token ``i`` to the end of token ``j``."""
        return self.tokens_to(i, self.bounds[2 * j + 1])

    def tokens_to(self, i: int, end: int) -> Span:
        """The span from the start of token ``i`` to offset ``end``."""
        start = self.bounds[2 * i]
        newlines = self.newlines
        if newlines is None:
            return _make_span(start, end, 1, start + 1)
        n = bisect_left(newlines, start)
        return _make_span(start, end, n + 1, start - (newlines[n - 1] + 1 if n else 0) + 1)

    def end(self, i: int) -> int:
        """Where token ``i`` ends."""
        return self.bounds[2 * i + 1]

    def expect(self, i: int, value: str) -> int:
        if self.vals[i] != value:
            raise _GiveUp
        return i + 1

    def ident(self, i: int) -> str:
        """Token ``i`` as a path segment (an identifier, not a reserved word)."""
        v = self.vals[i]
        if not v or v[0] not in _IDENT_START or v in RESERVED:
            raise _GiveUp
        return v

    def path(self, i: int) -> tuple[str, int]:
        """``A::B::C`` from token ``i``: the joined name and the index of its last token."""
        segments = [self.ident(i)]
        vals = self.vals
        while vals[i + 1] == "::" and vals[i + 2][:1] in _IDENT_START:
            i += 2
            segments.append(self.ident(i))
        return "::".join(segments), i

    def type_name(self, i: int) -> tuple[str, int]:
        name, last = self.path(i)
        if "__cedar" in name.split("::"):
            raise _GiveUp
        return name, last

    def entity_ref(self, i: int) -> tuple[EntityUID, int]:
        """``Path::"id"`` from token ``i``: the uid and the index of the string token."""
        type_name, last = self.type_name(i)
        raw = self.vals[last + 2]
        if self.vals[last + 1] != "::" or raw[:1] != '"':
            raise _GiveUp
        return EntityUID(type_name, _string(raw)), last + 2

    # -- policies --------------------------------------------------------------------------

    def policies(self) -> list[Policy]:
        out: list[Policy] = []
        vals = self.vals
        i = 0
        while vals[i]:
            i = self.policy(i, out)
        return out

    def policy(self, i: int, out: list[Policy]) -> int:
        vals = self.vals
        annotations: dict[str, str] = {}
        first: Span | None = None
        while vals[i] == "@":
            at = i
            key = vals[i + 1]
            if key[:1] not in _IDENT_START or key in annotations:
                raise _GiveUp
            i += 2
            value = ""
            if vals[i] == "(":
                if vals[i + 1][:1] != '"' or vals[i + 2] != ")":
                    raise _GiveUp
                value = _string(vals[i + 1])
                i += 3
            annotations[key] = value
            if first is None:
                first = self.tokens(at, i - 1)
        effect = vals[i]
        if effect != "permit" and effect != "forbid":
            raise _GiveUp
        if first is None:
            first = self.tspan(i)
        i = self.expect(i + 1, "(")
        principal, i = self.entity_scope(i, Var.PRINCIPAL, SlotId.PRINCIPAL)
        i = self.expect(i, ",")
        action, i = self.action_scope(i)
        i = self.expect(i, ",")
        resource, i = self.entity_scope(i, Var.RESOURCE, SlotId.RESOURCE)
        if vals[i] == ",":
            i += 1
        i = self.expect(i, ")")
        conditions: list[Condition] = []
        while vals[i] == "when" or vals[i] == "unless":
            condition, i = self.condition(i)
            conditions.append(condition)
        if vals[i] != ";":
            raise _GiveUp
        end = self.end(i)
        out.append(
            Policy(
                f"policy{len(out)}",
                Effect(effect),
                principal,
                action,
                resource,
                tuple(conditions),
                annotations,
                span=_upto(first, end),
            )
        )
        return i + 1

    def entity_scope(self, i: int, var: Var, slot: SlotId) -> tuple[Scope, int]:
        vals = self.vals
        if vals[i] != var.value:
            raise _GiveUp
        head = self.tspan(i)
        op = vals[i + 1]
        if op == "==" or op == "in":
            target, last = self.scope_target(i + 2, slot)
            kind = ScopeOp.EQ if op == "==" else ScopeOp.IN
            return Scope(var, kind, entity=target, span=_upto(head, self.end(last))), last + 1
        if op == "is":
            type_name, last = self.type_name(i + 2)
            if vals[last + 1] != "in":
                return (
                    Scope(var, ScopeOp.IS, entity_type=type_name, span=_upto(head, self.end(last))),
                    last + 1,
                )
            target, last = self.scope_target(last + 2, slot)
            scope = Scope(
                var,
                ScopeOp.IS_IN,
                entity=target,
                entity_type=type_name,
                span=_upto(head, self.end(last)),
            )
            return scope, last + 1
        return Scope(var, span=head), i + 1

    def scope_target(self, i: int, slot: SlotId) -> tuple[EntityUID | SlotId, int]:
        if self.vals[i] == slot.value:
            return slot, i
        return self.entity_ref(i)

    def action_scope(self, i: int) -> tuple[Scope, int]:
        vals = self.vals
        if vals[i] != "action":
            raise _GiveUp
        head = self.tspan(i)
        op = vals[i + 1]
        if op == "in" and vals[i + 2] == "[":
            i += 3
            uids: list[EntityUID] = []
            while vals[i] != "]":
                uid, i = self.entity_ref(i)
                if not is_action_type(uid.type):
                    raise _GiveUp
                uids.append(uid)
                i += 1
                if vals[i] == ",":
                    i += 1
                elif vals[i] != "]":
                    raise _GiveUp
            scope = Scope(
                Var.ACTION, ScopeOp.IN_SET, entities=tuple(uids), span=_upto(head, self.end(i))
            )
            return scope, i + 1
        if op == "==" or op == "in":
            uid, last = self.entity_ref(i + 2)
            if not is_action_type(uid.type):
                raise _GiveUp
            kind = ScopeOp.EQ if op == "==" else ScopeOp.IN
            return Scope(Var.ACTION, kind, entity=uid, span=_upto(head, self.end(last))), last + 1
        return Scope(Var.ACTION, span=head), i + 1

    def condition(self, i: int) -> tuple[Condition, int]:
        if self.vals[i + 1] != "{":
            raise _GiveUp
        body, end = self.expression(i + 2)
        # A node takes at least one token: a body of fewer tokens cannot nest too deeply.
        too_deep = end - i > MAX_NESTING and self.depth_bound > MAX_NESTING
        if too_deep and ast.depth(body) > MAX_NESTING:
            raise _GiveUp
        span = self.tokens(i, end)
        return Condition(ConditionKind(self.vals[i]), body, span=span), end + 1

    # -- expressions -----------------------------------------------------------------------

    def expression(self, i: int) -> tuple[Any, int]:
        """The expression from token ``i`` up to the ``}`` closing a condition: ``(body,
        index of the "}")``."""
        vals = self.vals
        tspan = self.tspan
        stack: list[_Frame] = []
        f = _Frame(_COND, i - 1)
        value: Any = None  # the primary just read (None: an operand is expected)
        paren = False  # `value` is a parenthesized expression (`-(5)` is not a literal)
        # For a bound on the depth of the tree: the most frames open at once (self.deepest),
        # and the longest run of `.name`/`[...]` after a primary.
        self.deepest = longest = 0
        while True:
            if value is None:
                # -- an operand: `!`/`-` prefixes, then a primary or the start of a construct
                v = vals[i]
                if v == "!" or v == "-":
                    prefix = [i]
                    i += 1
                    while vals[i] == v:
                        prefix.append(i)
                        i += 1
                        if len(prefix) > 4:
                            raise _GiveUp  # (at once: not after a million of them)
                    if vals[i] == "!" or vals[i] == "-":
                        raise _GiveUp
                    f.prefix = prefix
                    v = vals[i]
                c = v[:1]
                if c in _IDENT_START:
                    if v == "true" or v == "false":
                        value = _lit(v == "true", tspan(i))
                        i += 1
                    elif v == "if":
                        if f.prefix or f.mul or f.add or f.relop is not None or f.ands or f.ors:
                            raise _GiveUp  # `if` only starts an expression
                        self.push(stack, f)
                        f = _Frame(_IF, i)
                        i += 1
                        continue
                    else:
                        if vals[i + 1] != "::":  # (most names are one identifier)
                            if v in RESERVED:
                                raise _GiveUp
                            name, last = v, i
                        else:
                            name, last = self.path(i)
                        after = vals[last + 1]
                        if after == "::" and vals[last + 2][:1] == '"':
                            if "__cedar" in name.split("::"):
                                raise _GiveUp
                            uid = EntityUID(name, _string(vals[last + 2]))
                            value = _lit(uid, self.tokens(i, last + 2))
                            i = last + 3
                        elif after == "(":
                            if name not in EXT_FUNCTIONS:
                                raise _GiveUp
                            self.push(stack, f)
                            f = _Frame(_CALL, i, name)
                            i = last + 2
                            if vals[i] != ")":
                                continue
                            value = ast.Call(name, (), span=self.tokens(f.open, i))
                            f = stack.pop()
                            i += 1
                        elif last == i and v in _VARS:
                            value = _variable(_VARS[v], tspan(i))
                            i += 1
                        else:
                            raise _GiveUp
                elif c in _DIGITS:
                    digits = v.lstrip("0") or "0"
                    if len(digits) > 19:  # never int() a huge digit string
                        raise _GiveUp
                    number = int(digits)
                    if number >= LITERAL_LIMIT:
                        if number > LITERAL_LIMIT:
                            raise _GiveUp
                        self.big += 1
                    value = _lit(number, tspan(i))
                    i += 1
                elif c == '"':
                    value = _lit(_string(v), tspan(i))
                    i += 1
                elif v == "(" or v == "[" or v == "{":
                    self.push(stack, f)
                    f = _Frame(_PAREN if v == "(" else _SET if v == "[" else _RECORD, i)
                    i += 1
                    if v == "(":
                        continue
                    if v == "[":
                        if vals[i] != "]":
                            continue
                        value = ast.SetLit((), span=self.tokens(i - 1, i))
                    else:
                        f.info = set()  # the keys so far
                        if vals[i] != "}":
                            i = self.record_key(f, i)
                            continue
                        value = ast.RecordLit((), span=self.tokens(i - 1, i))
                    f = stack.pop()
                    i += 1
                else:
                    raise _GiveUp
                paren = False

            # -- after a primary: `.name`, `.name(args)`, `["key"]`
            v = vals[i]
            run = 0
            while v == "." or v == "[":
                run += 1
                if run >= MAX_NESTING:
                    raise _GiveUp  # too deep already: no need to read the rest of the run
                if v == ".":
                    name = vals[i + 1]
                    if vals[i + 2] == "(":
                        if name[:1] not in _IDENT_START:
                            raise _GiveUp
                        self.push(stack, f)
                        f = _Frame(_METHOD, i, (value, name))
                        i += 3
                        if vals[i] != ")":
                            value = None
                            break
                        value = self.method_call(f, i)
                        f = stack.pop()
                        i += 1
                    else:
                        span = _upto(value.span, self.end(i + 1))
                        value = _getattr(value, _name(name), span)
                        i += 2
                else:
                    key = vals[i + 1]
                    if key[:1] != '"' or vals[i + 2] != "]":
                        raise _GiveUp
                    span = _upto(value.span, self.end(i + 2))
                    value = _getattr(value, _string(key), span)
                    i += 3
                paren = False
                v = vals[i]
            if run > longest:
                longest = run
            if value is None:
                continue  # the first argument of a method call
            if f.prefix is not None:
                value = self.unary(f.prefix, value, paren)
                f.prefix = None
            f.mul.append(value)
            value = None

            # -- operators, until one expects an operand or the expression ends
            while True:
                v = vals[i]
                if v == "&&" or v == "||":
                    r = self.close_rel(f)
                    if f.ands is None:
                        f.ands = [r]
                    else:
                        f.ands.append(r)
                    if v == "||":
                        r = self.close_and(f)
                        if f.ors is None:
                            f.ors = [r]
                        else:
                            f.ors.append(r)
                    i += 1
                    break
                if v == "*":
                    if f.relop is _DONE:
                        raise _GiveUp
                    i += 1
                    break
                if v == "+" or v == "-":
                    if f.relop is _DONE:
                        raise _GiveUp
                    m = self.close_mul(f)
                    if f.add is None:
                        f.add = [m]
                        f.addops = [_ADDITIVE[v]]
                    else:
                        f.add.append(m)
                        f.addops.append(_ADDITIVE[v])  # type: ignore[union-attr]
                    i += 1
                    break
                if v in _RELOPS:
                    if f.relop is not None:
                        raise _GiveUp  # a chained relation
                    mul = f.mul
                    if f.add is None and len(mul) == 1:
                        f.rel = mul[0]
                        f.mul = []
                    else:
                        f.rel = self.close_add(f)
                    f.relop = _RELOPS[v]
                    i += 1
                    break
                if v == "has" or v == "like" or v == "is":
                    if f.relop is not None:
                        raise _GiveUp
                    node, last, pending = self.postfix(v, self.close_add(f), i + 1)
                    i = last + 1
                    f.rel = node
                    if pending:  # `e is T in x`: `x` is still to be read
                        f.relop = node
                        i += 1
                        break
                    f.relop = _DONE
                    continue
                # -- the end of the expression: what its construct does with the token `v`
                result = self.finish(f)
                while True:
                    ctx = f.ctx
                    if ctx == _COND:
                        if v != "}" or self.big:  # (2**63 not under a minus: out of range)
                            raise _GiveUp
                        # Each frame adds at most: its construct's node, `.name` accesses,
                        # four prefixes, `*`, `+`, a relation, `&&` and `||`.
                        self.depth_bound = (self.deepest + 1) * (longest + 11)
                        return result, i
                    if ctx == _PAREN:
                        if v != ")":
                            raise _GiveUp
                        f = stack.pop()
                        value = result
                        paren = True
                        i += 1
                        break
                    if ctx == _IF:
                        parts = f.args
                        parts.append(result)
                        if len(parts) < 3:
                            if v != ("then" if len(parts) == 1 else "else"):
                                raise _GiveUp
                            f.reset()
                            i += 1
                            break
                        result = ast.If(*parts, span=self.tokens_to(f.open, result.span.end))
                        f = stack.pop()  # the `if` was the whole expression: it ends here too
                        continue
                    if ctx == _RECORD:
                        f.args.append((f.key, result))
                        if v == ",":
                            i += 1
                            v = vals[i]
                            if v != "}":
                                f.reset()
                                i = self.record_key(f, i)
                                break
                        if v != "}":
                            raise _GiveUp
                        span = self.tokens(f.open, i)
                        value = ast.RecordLit(tuple(f.args), span=span)
                    else:  # arguments of a call or a method call, elements of a set
                        f.args.append(result)
                        closer = "]" if ctx == _SET else ")"
                        if v == ",":
                            i += 1
                            v = vals[i]
                            if v != closer:
                                f.reset()
                                break
                        if v != closer:
                            raise _GiveUp
                        if ctx == _SET:
                            span = self.tokens(f.open, i)
                            value = ast.SetLit(tuple(f.args), span=span)
                        elif ctx == _CALL:
                            span = self.tokens(f.open, i)
                            value = ast.Call(f.info, tuple(f.args), span=span)
                        else:
                            value = self.method_call(f, i)
                    f = stack.pop()
                    paren = False
                    i += 1
                    break
                break

    def push(self, stack: list[_Frame], f: _Frame) -> None:
        """Open a construct: ``f`` waits on ``stack`` (no deeper than :data:`MAX_NESTING`;
        deeper input is the LALR parser's to refuse)."""
        stack.append(f)
        if len(stack) > self.deepest:
            self.deepest = len(stack)
            if self.deepest > MAX_NESTING:
                raise _GiveUp

    def record_key(self, f: _Frame, i: int) -> int:
        """Read ``key:`` at token ``i`` into ``f``; the index after the colon."""
        raw = self.vals[i]
        key = _string(raw) if raw[:1] == '"' else _name(raw)
        if self.vals[i + 1] != ":" or key in f.info:
            raise _GiveUp
        f.info.add(key)
        f.key = key
        return i + 2

    def method_call(self, f: _Frame, rpar: int) -> Any:
        """The call of ``f`` (a method-arguments frame) closed by token ``rpar``."""
        receiver, name = f.info
        args = f.args
        arity = BUILTIN_METHODS.get(name)
        if arity is None and not self.strict:
            arity = DIALECT_METHODS.get(name)
        if arity is not None:
            if len(args) != arity:
                raise _GiveUp
        elif name in EXT_FUNCTIONS or name not in EXT_METHODS:
            raise _GiveUp
        span = _upto(receiver.span, self.end(rpar))
        return ast.MethodCall(receiver, name, tuple(args), span=span)

    def postfix(self, word: str, left: Any, i: int) -> tuple[Any, int, bool]:
        """``left has path``, ``left like "pattern"`` or ``left is T [in ...]``, the word's
        operand at token ``i``: ``(node, index of the last token read, pending)``. For
        ``is T in``, ``pending`` is true and ``node`` is ``(left, T)``: the right operand is
        still to be read."""
        vals = self.vals
        raw = vals[i]
        if word == "has":
            if raw[:1] == '"':
                path: tuple[str, ...] = (_string(raw),)
            else:
                names = [_name(raw)]
                while vals[i + 1] == "." and vals[i + 2][:1] in _IDENT_START:
                    i += 2
                    names.append(_name(vals[i]))
                path = tuple(names)
            return ast.Has(left, path, span=_upto(left.span, self.end(i))), i, False
        if word == "like":
            try:
                pattern = tuple(decode_literal(_body(raw), WILDCARD))
            except BadEscape:
                raise _GiveUp from None
            return ast.Like(left, pattern, span=_upto(left.span, self.end(i))), i, False
        type_name, last = self.type_name(i)
        if vals[last + 1] == "in":
            return (left, type_name), last, True
        return ast.Is(left, type_name, span=_upto(left.span, self.end(last))), last, False

    # -- closing the levels of an expression ---------------------------------------------

    @staticmethod
    def close_mul(f: _Frame) -> Any:
        """The ``*`` chain read so far (one operand: itself)."""
        mul = f.mul
        f.mul = []
        if len(mul) == 1:
            return mul[0]
        span = _upto(mul[0].span, mul[-1].span.end)
        return ast.Arith(tuple(mul), (BinOp.MUL,) * (len(mul) - 1), span=span)

    def close_add(self, f: _Frame) -> Any:
        """The ``+``/``-`` chain read so far."""
        m = self.close_mul(f)
        add = f.add
        if add is None:
            return m
        add.append(m)
        span = _upto(add[0].span, m.span.end)
        node = ast.Arith(tuple(add), tuple(f.addops), span=span)  # type: ignore[arg-type]
        f.add = f.addops = None
        return node

    def close_rel(self, f: _Frame) -> Any:
        """The relation read so far (or its left side when it has no operator)."""
        relop = f.relop
        mul = f.mul
        if relop is _DONE:
            node = f.rel
        else:
            if f.add is None and len(mul) == 1:  # (one operand: no chain to build)
                right = mul[0]
                f.mul = []
            else:
                right = self.close_add(f)
            if relop is None:
                return right
            if relop.__class__ is tuple:  # `is T in`
                left, type_name = relop
                node = ast.Is(left, type_name, right, span=_upto(left.span, right.span.end))
            else:
                left = f.rel
                node = _binary(relop, left, right, _upto(left.span, right.span.end))
        f.rel = f.relop = None
        return node

    @staticmethod
    def close_and(f: _Frame) -> Any:
        """The ``&&`` chain read so far."""
        ands: list[Any] = f.ands  # type: ignore[assignment]
        f.ands = None
        if len(ands) == 1:
            return ands[0]
        return ast.And(tuple(ands), span=_upto(ands[0].span, ands[-1].span.end))

    def finish(self, f: _Frame) -> Any:
        """The whole expression of ``f``, its operators applied by precedence."""
        r = self.close_rel(f)
        if f.ands is not None:
            f.ands.append(r)
            r = self.close_and(f)
        if f.ors is not None:
            ors = f.ors
            ors.append(r)
            f.ors = None
            r = ast.Or(tuple(ors), span=_upto(ors[0].span, r.span.end))
        return r

    def unary(self, prefix: list[int], value: Any, paren: bool) -> Any:
        """``value`` under its ``!``/``-`` prefix tokens (``-5`` is a negative literal)."""
        op = _UNARY[self.vals[prefix[0]]]
        count = len(prefix)
        if (
            op is UnaryOp.NEG
            and value.__class__ is ast.Lit
            and value.value.__class__ is int
            and value.value >= 0
            and not paren
        ):
            if value.value == LITERAL_LIMIT:
                self.big -= 1
            value = _lit(-value.value, self.tokens_to(prefix[-1], value.span.end))  # type: ignore[union-attr]
            count -= 1
        for k in range(count - 1, -1, -1):
            value = ast.Unary(op, value, span=self.tokens_to(prefix[k], value.span.end))
        return value


def parse_valid(text: str, strict: bool = False) -> list[Policy] | None:
    """The policies of ``text`` exactly as :func:`cedarlite.lang.parse.parse_policies` builds
    them (ids and spans included), or ``None`` when the text is not plainly valid and the
    LALR parser must decide. Linear in the text; nothing recurses."""
    try:
        return _Parser(text, strict).policies()
    except _GiveUp:
        return None
