"""The LALR policy parser: the answer for any text, and every parse error's wording.

The only module that knows the policy grammar's rule names. The grammar
(``grammar/cedar.lark``) is LALR(1); the AST is built during the parse by an embedded
transformer (no intermediate tree), which also enforces Cedar's parse-time rules: reserved
identifiers, method/function names and built-in arities, integer literal range with minus
folding, one relational operator without parentheses, duplicate record keys and annotations,
string escapes, slots only in scopes, action-typed action scopes.

:func:`cedarlite.lang.parse.parse_policies` runs it only on the texts the fast parser
(:mod:`cedarlite.lang.parse.fast`) gives up on, so Lark is imported only then. Every failure is a
:class:`~cedarlite.errors.ParseError` with a span; Lark's exceptions never escape.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, NoReturn, cast

from lark import Transformer

from ...data.ext import FUNCTIONS as EXT_FUNCTIONS
from ...data.ext import METHODS as EXT_METHODS
from ...data.values import EntityUID
from ...errors import ParseError
from ...source import Span
from ...source import clip as _clip
from .. import ast
from ..ast import (
    BinOp,
    Condition,
    ConditionKind,
    Effect,
    Expr,
    PatternElem,
    Policy,
    Scope,
    ScopeOp,
    SlotId,
    UnaryOp,
    Var,
    is_action_type,
)
from .lalr_driver import END, Automaton, LexError, TooDeep, UnexpectedToken, build_lark
from .lalr_driver import Tok as Token
from .rules import (
    BUILTIN_METHODS,
    DIALECT_METHODS,
    LITERAL_LIMIT,
    MAX_NESTING,
    MAX_PARSE_STACK,
    RESERVED,
    WILDCARD,
    BadEscape,
    decode_literal,
)

_VARS = {v.value: v for v in Var}
_RELOPS = {op.value: op for op in (BinOp.EQ, BinOp.NEQ, BinOp.LT, BinOp.LE, BinOp.GT, BinOp.GE)}
_ARITH = {"+": BinOp.ADD, "-": BinOp.SUB, "*": BinOp.MUL}


@dataclass(slots=True)
class _Path:
    """A parsed ``A::B::C`` before it becomes a type name, a variable or a function name."""

    segments: tuple[str, ...]
    span: Span

    @property
    def name(self) -> str:
        return "::".join(self.segments)


@dataclass(slots=True)
class _ActionList:
    """The bracketed list of ``action in [...]``."""

    items: list[ast.Lit]
    span: Span | None


@dataclass(slots=True)
class _SlotRef:
    """A ``?slot`` written in a scope."""

    name: str
    span: Span


class _State(threading.local):
    """Per-parse state of the embedded transformer (the Lark object is shared by all threads)."""

    text: str = ""
    source: str | None = None
    strict: bool = False
    # ids of relation nodes not wrapped in parentheses (to reject `a < b < c`)
    bare_relations: set[int]
    # ids of integer literals equal to 2**63, legal only directly under a minus
    pending_big: dict[int, Span]
    # ids of parenthesized literals: `-(5)` is a negation, `-5` a negative literal
    parenthesized: set[int]

    # policies built so far (their positional ids)
    count: int

    def reset(self, text: str, source: str | None, strict: bool) -> None:
        self.count = 0
        self.text = text
        self.source = source
        self.strict = strict
        self.bare_relations = set()
        self.pending_big = {}
        self.parenthesized = set()


_state = _State()


def _fail(message: str, span: Span | None, help: str | None = None) -> NoReturn:
    raise ParseError(message, span=span, text=_state.text, source=_state.source, help=help)


def _tok_span(tok: Token) -> Span:
    return Span(tok.start_pos, tok.end_pos, tok.line, tok.column)


def _span(first: Any, last: Any) -> Span | None:
    """The span from the start of ``first`` to the end of ``last`` (tokens or nodes)."""
    a = _tok_span(first) if isinstance(first, Token) else first.span
    b = _tok_span(last) if isinstance(last, Token) else last.span
    if a is None or b is None:
        return a or b
    return Span(a.start, b.end, a.line, a.column)


# ---------------------------------------------------------------------------------------------
# String literals


def _unescape(tok: Token, pattern: bool = False) -> list[PatternElem]:
    """Decode a string token, failing with the span of the bad escape."""
    raw = tok.value[1:-1]
    try:
        return decode_literal(raw, WILDCARD if pattern else None)
    except BadEscape as bad:
        start: int = tok.start_pos + 1 + bad.start
        _fail(
            f"the input `{raw[bad.start : bad.end]}` is not a valid escape",
            Span.at(_state.text, start, start + (bad.end - bad.start)),
        )


def _string(tok: Token) -> str:
    """The value of a plain string literal (``\\*`` is not a valid escape here)."""
    parts = _unescape(tok)
    return parts[0] if parts else ""  # type: ignore[return-value]


def _pattern(tok: Token) -> tuple[PatternElem, ...]:
    return tuple(_unescape(tok, pattern=True))


def _ident(tok: Token) -> str:
    """An identifier used as an attribute name, record key or path segment."""
    name = tok.value
    if name in RESERVED:
        _fail(f"this identifier is reserved and cannot be used: `{name}`", _tok_span(tok))
    return name


def _name(tok: Token) -> str:
    """An identifier used as an attribute name, record key or ``has`` path element.

    Besides the reserved words, the identifier ``__cedar`` itself is rejected there (Rust's
    rule; the string forms ``e["__cedar"]`` and ``{"__cedar": 1}`` are fine).
    """
    name = _ident(tok)
    if name == "__cedar":
        _fail("the name `__cedar` contains `__cedar`, which is reserved", _tok_span(tok))
    return name


def _check_type_name(path: _Path) -> str:
    # A path segment that *is* `__cedar` is reserved; `__cedarX` or `X__cedar` are not.
    if "__cedar" in path.segments:
        _fail(f"the name `{path.name}` contains `__cedar`, which is reserved", path.span)
    return path.name


# ---------------------------------------------------------------------------------------------
# The embedded transformer: one method per grammar rule (or alias).


class _Builder(Transformer):
    """Builds AST nodes while the LALR parser reduces rules."""

    # -- policy structure --------------------------------------------------------------------

    def start(self, children: list[Any]) -> list[Policy]:
        return children

    def policy(self, c: list[Any]) -> Policy:
        annotations: dict[str, str] = {}
        i = 0
        while isinstance(c[i], tuple):
            key, value, span = c[i]
            if key in annotations:
                _fail(f"duplicate annotation: `@{key}`", span)
            annotations[key] = value
            i += 1
        effect_tok: Token = c[i]
        principal, action, resource = c[i + 1]
        conditions = tuple(c[i + 2 : -1])
        first = c[0][2] if i else _tok_span(effect_tok)
        last = _tok_span(c[-1])
        policy_id = f"policy{_state.count}"
        _state.count += 1
        return Policy(
            policy_id,
            Effect(effect_tok.value),
            principal,
            action,
            resource,
            conditions,
            annotations,
            span=Span(first.start, last.end, first.line, first.column),
        )

    def annotation(self, c: list[Any]) -> tuple[str, str, Span | None]:
        key: Token = c[1]
        value = _string(c[3]) if len(c) > 2 else ""
        return key.value, value, _span(c[0], c[-1])

    def effect(self, c: list[Token]) -> Token:
        return c[0]

    def scope(self, c: list[Scope]) -> tuple[Scope, Scope, Scope]:
        return c[0], c[1], c[2]

    def principal_scope(self, c: list[Any]) -> Scope:
        return self._entity_scope(Var.PRINCIPAL, SlotId.PRINCIPAL, c)

    def resource_scope(self, c: list[Any]) -> Scope:
        return self._entity_scope(Var.RESOURCE, SlotId.RESOURCE, c)

    def _entity_scope(self, var: Var, slot: SlotId, c: list[Any]) -> Scope:
        span = _span(c[0], c[-1] if len(c) > 1 else c[0])
        if len(c) == 1:
            return Scope(var, span=span)
        op: Token = c[1]
        if op.type == "IS":
            type_name = _check_type_name(c[2])
            if len(c) == 3:
                return Scope(var, ScopeOp.IS, entity_type=type_name, span=span)
            target = self._scope_target(var, slot, c[4])
            return Scope(var, ScopeOp.IS_IN, entity=target, entity_type=type_name, span=span)
        if op.type == "RELOP" and op.value != "==":
            _fail(
                f"`{op.value}` is not allowed in the {var.value} scope; "
                "expected `==`, `in` or `is`",
                _tok_span(op),
            )
        target = self._scope_target(var, slot, c[2])
        op_kind = ScopeOp.EQ if op.type == "RELOP" else ScopeOp.IN
        return Scope(var, op_kind, entity=target, span=span)

    def _scope_target(self, var: Var, slot: SlotId, target: Any) -> EntityUID | SlotId:
        if isinstance(target, _SlotRef):
            if target.name != slot.value:
                _fail(
                    f"expected an entity uid or matching template slot, found `{target.name}` "
                    f"instead of `{slot.value}`",
                    target.span,
                )
            return slot
        return target.value  # an entity_ref Lit

    def action_scope(self, c: list[Any]) -> Scope:
        span = _span(c[0], c[-1] if len(c) > 1 else c[0])
        if len(c) == 1:
            return Scope(Var.ACTION, span=span)
        op: Token = c[1]
        if op.type == "RELOP" and op.value != "==":
            _fail(
                f"`{op.value}` is not allowed in the action scope; expected `==` or `in`",
                _tok_span(op),
            )
        target = c[2]
        if isinstance(target, _ActionList):
            for lit in target.items:
                self._check_action_uid(lit)
            uids = tuple(cast(EntityUID, lit.value) for lit in target.items)
            return Scope(Var.ACTION, ScopeOp.IN_SET, entities=uids, span=span)
        self._check_action_uid(target)
        return Scope(
            Var.ACTION,
            ScopeOp.EQ if op.type == "RELOP" else ScopeOp.IN,
            entity=target.value,
            span=span,
        )

    @staticmethod
    def _check_action_uid(lit: ast.Lit) -> None:
        uid: EntityUID = lit.value  # type: ignore[assignment]
        if not is_action_type(uid.type):
            _fail(f"expected an entity uid with type `Action` but got `{uid}`", lit.span)

    def action_list(self, c: list[Any]) -> _ActionList:
        return _ActionList(c[1:-1], _span(c[0], c[-1]))

    def scope_slot(self, c: list[Token]) -> _SlotRef:
        return _SlotRef(c[0].value, _tok_span(c[0]))

    def condition(self, c: list[Any]) -> Condition:
        kind_tok: Token = c[0]
        span = _span(kind_tok, c[-1])
        if len(c) == 2:
            _fail(f"`{kind_tok.value}` condition clause cannot be empty", span)
        body: Expr = c[1]
        self._check_literals()
        _check_depth(body)
        return Condition(ConditionKind(kind_tok.value), body, span=span)

    def _check_literals(self) -> None:
        if _state.pending_big:
            span = next(iter(_state.pending_big.values()))
            _state.pending_big.clear()
            _fail(f"integer literal `{LITERAL_LIMIT}` is too large", span)

    # -- expressions ---------------------------------------------------------------------------

    def if_(self, c: list[Any]) -> Expr:
        return ast.If(c[1], c[2], c[3], span=_span(c[0], c[3]))

    def or_(self, c: list[Any]) -> Expr:
        return ast.Or(tuple(c), span=_span(c[0], c[-1]))

    def and_(self, c: list[Any]) -> Expr:
        return ast.And(tuple(c), span=_span(c[0], c[-1]))

    def add(self, c: list[Any]) -> Expr:
        return ast.Arith(
            tuple(c[0::2]), tuple(_ARITH[t.value] for t in c[1::2]), span=_span(c[0], c[-1])
        )

    mult = add

    def _relation(self, node: Expr, left: Any) -> Expr:
        if id(left) in _state.bare_relations:
            _fail(
                "multiple relational operators (>, ==, in, etc.) must be used with parentheses "
                "to make ordering explicit",
                node.span,
            )
        _state.bare_relations.add(id(node))
        return node

    def binary(self, c: list[Any]) -> Expr:
        left, op, right = c
        binop = BinOp.IN if op.type == "IN" else _RELOPS[op.value]
        return self._relation(ast.Binary(binop, left, right, span=_span(left, right)), left)

    def has(self, c: list[Any]) -> Expr:
        path, last = c[1]
        return self._relation(ast.Has(c[0], path, span=_span(c[0], last)), c[0])

    def has_path(self, c: list[Token]) -> tuple[tuple[str, ...], Token]:
        if c[0].type == "STRING":
            return (_string(c[0]),), c[0]
        return tuple(_name(t) for t in c), c[-1]

    def like(self, c: list[Any]) -> Expr:
        return self._relation(ast.Like(c[0], _pattern(c[1]), span=_span(c[0], c[1])), c[0])

    def is_(self, c: list[Any]) -> Expr:
        type_name = _check_type_name(c[2])
        return self._relation(ast.Is(c[0], type_name, span=_span(c[0], c[2])), c[0])

    def is_in(self, c: list[Any]) -> Expr:
        type_name = _check_type_name(c[2])
        return self._relation(ast.Is(c[0], type_name, c[4], span=_span(c[0], c[4])), c[0])

    def not_(self, c: list[Any]) -> Expr:
        return self._unary(UnaryOp.NOT, c)

    def neg(self, c: list[Any]) -> Expr:
        return self._unary(UnaryOp.NEG, c)

    def _unary(self, op: UnaryOp, c: list[Any]) -> Expr:
        *ops, arg = c
        if len(ops) > 4:
            _fail(f"too many occurrences of `{op.value}`", _span(ops[0], ops[-1]))
        count = len(ops)
        if (
            op is UnaryOp.NEG
            and isinstance(arg, ast.Lit)
            and arg.value.__class__ is int
            and arg.value >= 0
            and id(arg) not in _state.parenthesized
        ):
            # `-N` is a negative literal (this is how i64::MIN is written); `- - N` = -(-N).
            _state.pending_big.pop(id(arg), None)
            arg = ast.Lit(-arg.value, span=_span(ops[-1], arg))
            count -= 1
        for tok in reversed(ops[:count]):
            arg = ast.Unary(op, arg, span=_span(tok, arg))
        return arg

    def get_attr(self, c: list[Any]) -> Expr:
        return ast.GetAttr(c[0], _name(c[1]), span=_span(c[0], c[1]))

    def index(self, c: list[Any]) -> Expr:
        return ast.GetAttr(c[0], _string(c[1]), span=_span(c[0], c[2]))

    def method_call(self, c: list[Any]) -> Expr:
        receiver, name_tok, args, rpar = c
        name = name_tok.value
        span = _span(receiver, rpar)
        arity = BUILTIN_METHODS.get(name)
        if arity is None and not _state.strict:
            arity = DIALECT_METHODS.get(name)
        if arity is not None:
            if len(args) != arity:
                _fail(
                    f"call to `{name}` requires exactly {arity} argument{'s' * (arity != 1)}, "
                    f"but got {len(args)} argument{'s' * (len(args) != 1)}",
                    span,
                )
        elif name in EXT_FUNCTIONS:
            _fail(f"`{name}` is a function, not a method", _tok_span(name_tok))
        elif name not in EXT_METHODS:
            help = None
            if name in DIALECT_METHODS:
                help = f"`{name}` is a cedarlite extension, rejected in strict mode"
            _fail(f"`{name}` is not a valid method", _tok_span(name_tok), help=help)
        return ast.MethodCall(receiver, name, tuple(args), span=span)

    def call(self, c: list[Any]) -> Expr:
        path, args, rpar = c
        name = path.name
        if name not in EXT_FUNCTIONS:
            if name in EXT_METHODS or name in BUILTIN_METHODS or name in DIALECT_METHODS:
                _fail(f"`{name}` is a method, not a function", path.span)
            _fail(f"`{name}` is not a valid function", path.span)
        return ast.Call(name, tuple(args), span=_span(path, rpar))

    def args(self, c: list[Expr]) -> list[Expr]:
        return c

    def paren(self, c: list[Any]) -> Expr:
        inner = c[1]
        _state.bare_relations.discard(id(inner))
        if isinstance(inner, ast.Lit):
            _state.parenthesized.add(id(inner))
        span = _state.pending_big.pop(id(inner), None)
        if span is not None:
            _fail(f"integer literal `{LITERAL_LIMIT}` is too large", span)
        return inner

    def set_lit(self, c: list[Any]) -> Expr:
        return ast.SetLit(tuple(c[1]), span=_span(c[0], c[2]))

    def record_lit(self, c: list[Any]) -> Expr:
        entries: list[tuple[str, Expr]] = []
        seen: set[str] = set()
        for key, key_span, value in c[1:-1]:
            if key in seen:
                _fail(f"duplicate key `{key}` in record literal", key_span)
            seen.add(key)
            entries.append((key, value))
        return ast.RecordLit(tuple(entries), span=_span(c[0], c[-1]))

    def rec_entry(self, c: list[Any]) -> tuple[str, Span, Expr]:
        tok: Token = c[0]
        key = _string(tok) if tok.type == "STRING" else _name(tok)
        return key, _tok_span(tok), c[1]

    def literal(self, c: list[Token]) -> Expr:
        tok = c[0]
        span = _tok_span(tok)
        if tok.type == "TRUE":
            return ast.Lit(True, span=span)
        if tok.type == "FALSE":
            return ast.Lit(False, span=span)
        if tok.type == "STRING":
            return ast.Lit(_string(tok), span=span)
        digits = tok.value.lstrip("0") or "0"
        if len(digits) > 19 or int(digits) > LITERAL_LIMIT:  # never int() a huge digit string
            _fail(f"integer literal `{_clip(tok.value)}` is too large", span)
        value = int(digits)
        node = ast.Lit(value, span=span)
        if value == LITERAL_LIMIT:
            _state.pending_big[id(node)] = span
        return node

    def name(self, c: list[_Path]) -> Expr:
        path = c[0]
        if len(path.segments) == 1 and path.segments[0] in _VARS:
            return ast.Variable(_VARS[path.segments[0]], span=path.span)
        _fail(
            f"invalid variable: `{path.name}`",
            path.span,
            help="the variables are `principal`, `action`, `resource` and `context`",
        )

    def entity_ref(self, c: list[Any]) -> ast.Lit:
        path, tok = c
        uid = EntityUID(_check_type_name(path), _string(tok))
        return ast.Lit(uid, span=_span(path, tok))

    def path(self, c: list[Any]) -> _Path:
        if len(c) == 1:
            return _Path((_ident(c[0]),), _tok_span(c[0]))
        prev: _Path = c[0]
        return _Path((*prev.segments, _ident(c[1])), _span(prev, c[1]))  # type: ignore[arg-type]

    def slot(self, c: list[Token]) -> NoReturn:
        _fail(
            f"found template slot `{c[0].value}` in a condition; slots are only allowed in the "
            "principal and resource scope",
            _tok_span(c[0]),
        )


def _check_depth(expr: Expr) -> None:
    """Reject expressions nested deeper than :data:`MAX_NESTING` (iteratively: no recursion)."""
    stack: list[tuple[Expr, int]] = [(expr, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_NESTING:
            _fail(f"expression is nested too deeply (more than {MAX_NESTING} levels)", node.span)
        stack.extend((child, depth + 1) for child in ast.children(node))


# ---------------------------------------------------------------------------------------------
# Entry points

_lock = threading.Lock()
_automaton: Automaton | None = None


def _parser() -> Automaton:
    """The policy grammar's automaton (built once per process; tables cached, see
    :func:`~cedarlite.lang.parse.lalr_driver.build_lark`)."""
    global _automaton
    if _automaton is None:
        with _lock:
            if _automaton is None:
                lark = build_lark("cedar.lark", _Builder(), maybe_placeholders=False)
                _automaton = Automaton(lark)
    return _automaton


_TOKEN_NAMES = {
    "IDENT": "identifier",
    "STRING": "string literal",
    "INT": "integer literal",
    "SLOT": "template slot",
    "RELOP": "comparison operator",
    "$END": "end of input",
}


def _describe_expected(expected: frozenset[str]) -> str:
    names = {
        _TOKEN_NAMES.get(term) or _parser().terminal_text(term).lower()
        for term in expected
        if term != "SLOT"  # slots are only valid in scopes, where they are named explicitly
    }
    return ", ".join(sorted(names))


_OPERATOR_ERRORS = {
    "/": "division is not supported",
    "%": "remainder/modulo is not supported",
    "=": "`=` is not a valid operator in Cedar; use `==` to compare",
}


def _syntax_error(text: str, source: str | None, err: LexError | UnexpectedToken) -> ParseError:
    def error(message: str, start: int, end: int | None = None) -> ParseError:
        return ParseError(message, span=Span.at(text, start, end), text=text, source=source)

    if isinstance(err, LexError):
        ch = text[err.pos]
        if ch in _OPERATOR_ERRORS:
            return error(_OPERATOR_ERRORS[ch], err.pos, err.pos + 1)
        if ch == '"':
            return error("unterminated string literal", err.pos, len(text))
        expected = _describe_expected(err.expected)
        return error(f"unexpected character `{ch}`; expected {expected}", err.pos, err.pos + 1)
    tok = err.token
    expected = _describe_expected(err.expected)
    if tok.type == END:
        # Point just after the last token, where the missing text belongs (not at the line
        # after a final newline).
        return error(f"unexpected end of input; expected {expected}", len(text.rstrip()))
    return error(f"unexpected token `{tok.value}`; expected {expected}", tok.start_pos, tok.end_pos)


def parse_lalr(text: str, source: str | None = None, strict: bool = False) -> list[Policy]:
    """:func:`~cedarlite.lang.parse.parse_policies` by the LALR parser alone: the answer for any
    text (the differential tests compare :func:`~cedarlite.lang.parse.fast.parse_valid` with it)."""
    _state.reset(text, source, strict)
    try:
        policies: list[Policy] = _parser().parse(text, MAX_PARSE_STACK)
    except (LexError, UnexpectedToken) as err:
        raise _syntax_error(text, source, err) from None
    except TooDeep as err:
        tok = err.token
        raise ParseError(
            f"expression is nested too deeply (more than {MAX_NESTING} levels)",
            span=Span.at(text, tok.start_pos, tok.end_pos),
            text=text,
            source=source,
        ) from None
    finally:
        _state.reset("", None, False)
    return policies
