"""How two policy sets read their inputs: atoms, inputs, and hints for representatives.

A condition is split into *atoms*: the maximal sub-expressions that are not ``&&``, ``||``,
``!`` or ``if`` (whose outcome, true, false or an error, decides the condition's). Each atom
reads *inputs*, the things a request can vary:

* ``("var", "principal"|"action"|"resource")``: a request variable (its uid and ancestors);
* ``("ctx", (name, ...))``: a context attribute path;
* ``("attr", "principal"|"resource", (name, ...))``: an attribute path of a request entity
  (when the search builds the entity store itself);
* ``("tag", "principal"|"resource", (key, ...))``: a tag, then a path inside it.

:class:`Analysis` records the atoms, their inputs and, per input, *hints*: the kinds of value
the conditions expect and the literals they compare it with. An atom of a *supported* form
(a comparison with literals, a Bool, a presence test, set membership of literals, entity
identity and membership) leaves its inputs' hints *complete*: a few representatives then
stand for every value. Anything else still yields hints, for a sampled search only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..data.entities import Entities
from ..data.ext import Datetime, Decimal, Duration, IPAddr
from ..data.request import Request
from ..data.values import EMPTY_RECORD, I64_MAX, I64_MIN, CedarSet, EntityUID, type_name
from ..engine.evaluator import Evaluator
from ..errors import EvaluationError
from ..lang.ast import (
    And,
    Arith,
    Binary,
    BinOp,
    Expr,
    GetAttr,
    Has,
    If,
    Is,
    Like,
    Lit,
    MethodCall,
    Or,
    Policy,
    Scope,
    ScopeOp,
    Unary,
    UnaryOp,
    Var,
    Variable,
    children,
    walk,
)

Input = tuple[Any, ...]


_REQUEST_VARS = (Var.PRINCIPAL, Var.ACTION, Var.RESOURCE)
_DECIMAL_METHODS = ("lessThan", "lessThanOrEqual", "greaterThan", "greaterThanOrEqual")
_ORDER_OPS = (BinOp.LT, BinOp.LE, BinOp.GT, BinOp.GE)
_RECEIVER_KINDS = {
    **dict.fromkeys(("contains", "containsAll", "containsAny", "isEmpty"), "set"),
    **dict.fromkeys(("getTag", "hasTag"), "entity"),
    **dict.fromkeys(_DECIMAL_METHODS, "decimal"),
}


@dataclass
class Hints:
    """What the conditions say about one input: kinds of values and notable values."""

    kinds: set[str] = field(default_factory=set)
    values: list[Any] = field(default_factory=list)  # Cedar values, in order of discovery
    record: bool = False  # read as a record (a `has` on it, or a path below it)
    complete: bool = True  # every use is an atom whose representatives are complete


@dataclass
class Atom:
    """A condition's atom: a boolean-position expression that is not `&&`/`||`/`!`/`if`."""

    run: Callable[[Evaluator], Any]
    inputs: frozenset[Input]


def kind_of(value: Any) -> str:
    """The kind of a Cedar value: ``bool``, ``long``, ``string``, ``entity``, ``set``,
    ``record`` or an extension type's name."""
    return "entity" if value.__class__ is EntityUID else type_name(value)


def _neighbours(value: Any) -> list[Any]:
    """``value`` and the values just below and above it (for comparisons)."""
    cls = value.__class__
    if cls is int:
        return [v for v in (value, value - 1, value + 1) if I64_MIN <= v <= I64_MAX]
    if cls in (Datetime, Duration):
        return [
            cls(ms) for ms in (value.ms, value.ms - 1, value.ms + 1) if I64_MIN <= ms <= I64_MAX
        ]
    if cls is Decimal:
        return [
            Decimal(v)
            for v in (value.value, value.value - 1, value.value + 1)
            if I64_MIN <= v <= I64_MAX
        ]
    return [value]


def _like_strings(pattern: Sequence[Any]) -> list[str]:
    """Strings that match a ``like`` pattern, and near misses: the wildcards filled with
    nothing and with ``x`` (``"git *"``: ``"git "``, ``"git x"``), each with one of its first
    literal characters dropped, and shortened by one and two characters (``"git"``, ``"gi"``)."""
    out: list[str] = []
    for fill in ("", "x"):
        text = ""
        literal: list[int] = []  # positions of characters that come from the pattern's text
        for el in pattern:
            piece = el if isinstance(el, str) else fill
            if isinstance(el, str):
                literal.extend(range(len(text), len(text) + len(piece)))
            text += piece
        out += [text, text[:-1], text[:-2]]
        out += [text[:i] + text[i + 1 :] for i in literal[:12]]
    return list(dict.fromkeys(out))


class Analysis:
    """Splits the policies into atoms, finds each atom's inputs and collects hints."""

    def __init__(self, policies: Iterable[Policy], given_store: bool) -> None:
        self.generated = not given_store
        self.atoms: list[Atom] = []
        self.hints: dict[Input, Hints] = {}
        self.uids: dict[EntityUID, None] = {}
        self.types: dict[str, None] = {}
        self.targets: dict[EntityUID, None] = {}  # entities some `in` tests membership of
        self.constants: list[Any] = []
        self.why_not: list[str] = []
        for p in policies:
            self.policy(p)

    def policy(self, p: Policy) -> None:
        for scope in (p.principal, p.action, p.resource):
            self.scope(scope)
        for cond in p.conditions:
            for node in walk(cond.body):
                if isinstance(node, Lit) and isinstance(node.value, EntityUID):
                    self.uids[node.value] = None
                elif isinstance(node, Is):
                    self.types[node.entity_type] = None
            try:
                for atom in _atoms(cond.body):
                    self.atom(atom)
            except RecursionError:  # only hand-built trees get this deep (the parser stops at 200)
                self.why_not.append("a condition is nested too deeply to analyse")

    def scope(self, scope: Scope) -> None:
        targets = [scope.entity] if isinstance(scope.entity, EntityUID) else []
        targets += scope.entities
        for uid in targets:
            self.uids[uid] = None
        if scope.op in (ScopeOp.IN, ScopeOp.IS_IN, ScopeOp.IN_SET):
            self.targets.update(dict.fromkeys(targets))
        if scope.entity_type:
            self.types[scope.entity_type] = None
        if scope.op is not ScopeOp.ANY:
            self.atoms.append(Atom(_scope_runner(scope), frozenset({("var", scope.var.value)})))

    # -- terms ------------------------------------------------------------------------------

    def term(self, e: Expr) -> tuple[Input, ...] | None:
        """The inputs of a path term (``context.a.b``, ``principal.a`` in a generated store,
        ``principal.getTag("k")``), outermost last; ``None`` if ``e`` is not one."""
        names: list[str] = []
        while isinstance(e, GetAttr):
            names.append(e.attr)
            e = e.expr
        names.reverse()
        if isinstance(e, Variable) and e.var is Var.CONTEXT and names:
            return tuple(("ctx", tuple(names[: i + 1])) for i in range(len(names)))
        if not self.generated:
            return None
        if isinstance(e, Variable) and e.var in (Var.PRINCIPAL, Var.RESOURCE) and names:
            v = e.var.value
            return tuple(("attr", v, tuple(names[: i + 1])) for i in range(len(names)))
        if (
            isinstance(e, MethodCall)
            and e.name == "getTag"
            and isinstance(e.receiver, Variable)
            and e.receiver.var in (Var.PRINCIPAL, Var.RESOURCE)
            and isinstance(e.args[0], Lit)
            and isinstance(e.args[0].value, str)
        ):
            path = (e.args[0].value, *names)
            v = e.receiver.var.value
            return tuple(("tag", v, path[: i + 1]) for i in range(len(path)))
        return None

    def inputs(self, e: Expr) -> tuple[frozenset[Input], bool]:
        """Everything ``e`` reads, and whether it reads only inputs (never the whole context or,
        in a generated store, entities other than the request's)."""
        found: set[Input] = set()
        ok = True
        stack = [e]
        while stack:
            node = stack.pop()
            term = self.term(node)
            if term is not None:
                found.update(term)
                continue
            if isinstance(node, Has):
                keys = self.has_inputs(node)
                if keys is not None:
                    found.update(keys)
                    continue
            if isinstance(node, MethodCall) and node.name == "hasTag" and self.generated:
                recv, arg = node.receiver, node.args[0]
                if (
                    isinstance(recv, Variable)
                    and recv.var in (Var.PRINCIPAL, Var.RESOURCE)
                    and isinstance(arg, Lit)
                    and isinstance(arg.value, str)
                ):
                    found.add(("tag", recv.var.value, (arg.value,)))
                    self.hint(("tag", recv.var.value, (arg.value,)))
                    continue
            if isinstance(node, Variable):
                if node.var is Var.CONTEXT:
                    ok = False  # the whole context record
                else:
                    found.add(("var", node.var.value))
                continue
            if self.generated and _reads_store(node):
                ok = False  # attributes, tags or ancestors of an entity we do not model
            stack.extend(children(node))
        return frozenset(found), ok

    def bare(self, e: Expr) -> tuple[Input, ...] | None:
        """``()`` standing for the root of a `has` on ``context`` (or a request entity in a
        generated store): the `has` path itself is the input."""
        if isinstance(e, Variable) and (
            e.var is Var.CONTEXT or (self.generated and e.var in (Var.PRINCIPAL, Var.RESOURCE))
        ):
            return ()
        return None

    # -- atoms ------------------------------------------------------------------------------

    def atom(self, e: Expr) -> None:
        inputs, reads_only_inputs = self.inputs(e)
        self.atoms.append(Atom(_expr_runner(e), inputs))
        if reads_only_inputs and self.recognise(e, inputs):
            return
        self.generic(e)
        if not reads_only_inputs:
            self.note(f"`{_short(e)}` reads data other than the inputs")
        else:
            self.note(f"`{_short(e)}` is not a comparison with literals")
        for inp in inputs:
            if inp[0] != "var":
                self.hint(inp).complete = False

    def has_inputs(self, e: Has) -> list[Input] | None:
        base = self.term(e.expr)
        if base is None:
            base = self.bare(e.expr)
        if base is None:
            return None
        if not base:
            root = e.expr.var  # type: ignore[attr-defined]
            head: Input = ("ctx", ()) if root is Var.CONTEXT else ("attr", root.value, ())
            return list(_extend(head, e.path))
        return [*base, *_extend(base[-1], e.path)]

    def recognise(self, e: Expr, inputs: frozenset[Input]) -> bool:
        """Record hints for an atom of a supported form; false for any other form."""
        if not inputs:
            return True  # a constant
        if not self.generated and all(i[0] == "var" for i in inputs) and len(inputs) == 1:
            return True  # reads one request entity through the given store
        term = self.term(e)
        if term is not None:
            self.hint(term[-1], "bool")
            self.records(term)
            return True
        match e:
            case Has():
                keys = self.has_inputs(e) or []
                for i, key in enumerate(keys):
                    h = self.hint(key)
                    if i + 1 < len(keys):
                        h.record = True
                return True
            case Binary(op=op, left=left, right=right) if op is not BinOp.IN:
                return self.comparison(op, left, right) or self.comparison(op, right, left)
            case Binary(op=BinOp.IN, left=Variable(var=var), right=right) if var in _REQUEST_VARS:
                targets = self.entity_constants(right)
                if targets is None:
                    return False
                self.targets.update(dict.fromkeys(targets))
                return True
            case Is(expr=Variable(var=var), in_expr=in_expr) if var in _REQUEST_VARS:
                if in_expr is None:
                    return True
                targets = self.entity_constants(in_expr)
                if targets is None:
                    return False
                self.targets.update(dict.fromkeys(targets))
                return True
            case Is(expr=inner, entity_type=t, in_expr=None):
                term = self.term(inner)
                if term is None:
                    return False
                self.hint(term[-1], "entity")
                self.records(term)
                self.types[t] = None
                return True
            case MethodCall(name=name, receiver=recv, args=args):
                return self.method(name, recv, args)
        return False

    def comparison(self, op: BinOp, left: Expr, right: Expr) -> bool:
        """``term op constant`` (``==``, ``!=``; ordering with longs, datetimes, durations)."""
        term = self.term(left)
        if term is None:
            if (
                isinstance(left, Variable)
                and left.var in _REQUEST_VARS
                and op in (BinOp.EQ, BinOp.NEQ)
            ):
                return self.constant(right) is not None
            return False
        value = self.constant(right)
        if value is None:
            return False
        kind = kind_of(value[0])
        if op in _ORDER_OPS and kind not in ("long", "datetime", "duration"):
            return False
        self.hint(term[-1], kind, *(_neighbours(value[0]) if op in _ORDER_OPS else value))
        self.records(term)
        return True

    def method(self, name: str, recv: Expr, args: tuple[Expr, ...]) -> bool:
        if name == "isEmpty":
            term = self.term(recv)
            if term is None:
                return False
            self.hint(term[-1], "set")
            self.records(term)
            return True
        if name in ("contains", "containsAll", "containsAny") or name in _DECIMAL_METHODS:
            for this, other, mine in ((recv, args[0], True), (args[0], recv, False)):
                term = self.term(this)
                value = self.constant(other)
                if term is None or value is None:
                    continue
                v = value[0]
                if name in _DECIMAL_METHODS:
                    if v.__class__ is not Decimal:
                        return False
                    self.hint(term[-1], "decimal", *_neighbours(v))
                elif name == "contains" and not mine:  # [c1, c2].contains(term): term == ci
                    if v.__class__ is not CedarSet:
                        return False
                    for el in v:
                        self.hint(term[-1], kind_of(el), el)
                elif name == "contains":
                    self.hint(term[-1], "set")
                    self.hint(term[-1]).values.append(Element(v))
                else:
                    if v.__class__ is not CedarSet:
                        return False
                    self.hint(term[-1], "set")
                    self.hint(term[-1]).values.extend(Element(el) for el in v)
                self.records(term)
                return True
            return False
        if name == "hasTag":
            return isinstance(recv, Variable)
        return False

    def entity_constants(self, e: Expr) -> list[EntityUID] | None:
        value = self.constant(e)
        if value is None:
            return None
        v = value[0]
        if v.__class__ is EntityUID:
            return [v]
        if v.__class__ is CedarSet and all(x.__class__ is EntityUID for x in v):
            return list(v)
        return None

    def constant(self, e: Expr) -> tuple[Any] | None:
        """The value of an expression that reads no input (``None`` if it reads one or errors)."""
        if any(isinstance(n, Variable) for n in walk(e)):
            return None
        try:
            value = Evaluator(_NOBODY_REQUEST, Entities()).evaluate(e)
        except EvaluationError:
            return None
        self.constants.append(value)
        return (value,)

    def hint(self, inp: Input, kind: str | None = None, *values: Any) -> Hints:
        key = shared_key(inp)
        h = self.hints.get(key)
        if h is None:
            h = self.hints[key] = Hints()
        if kind is not None:
            h.kinds.add(kind)
            h.values.extend(values)
        return h

    def records(self, term: tuple[Input, ...]) -> None:
        for inp in term[:-1]:
            self.hint(inp).record = True

    def generic(self, e: Expr) -> None:
        """Hints from an atom of any other form (for the sampled search only)."""
        stack: list[tuple[Expr, str | None]] = [(e, "bool")]
        while stack:
            node, want = stack.pop()
            term = self.term(node)
            if term is not None:
                self.hint(term[-1], want or "any")
                self.records(term)
                continue
            match node:
                case Like(expr=inner, pattern=pattern):
                    stack.append((inner, "string"))
                    term = self.term(inner)
                    if term is not None:
                        self.hint(term[-1], "string", *_like_strings(pattern))
                    continue
                case Binary(op=op, left=left, right=right):
                    if op in (BinOp.EQ, BinOp.NEQ):
                        for side, other in ((left, right), (right, left)):
                            term, value = self.term(side), self.constant(other)
                            if term is not None and value is not None:
                                self.hint(term[-1], kind_of(value[0]), value[0])
                            elif (
                                term is not None
                                and isinstance(other, Variable)
                                and other.var in _REQUEST_VARS
                            ):  # `resource.owner == principal`: the request's entities
                                self.hint(term[-1], "entity")
                                self.records(term)
                                stack.append((other, None))
                        if any(isinstance(x, Variable) for x in (left, right)):
                            continue
                    elif op is not BinOp.IN:
                        for side, other in ((left, right), (right, left)):
                            term, value = self.term(side), self.constant(other)
                            if term is not None and value is not None:
                                self.hint(term[-1], kind_of(value[0]), *_neighbours(value[0]))
                    sub = {BinOp.IN: "entity", BinOp.EQ: None, BinOp.NEQ: None}.get(op, "long")
                    stack += [(left, sub), (right, None if op is BinOp.IN else sub)]
                    continue
                case Has(expr=inner):
                    for key in self.has_inputs(node) or []:
                        self.hint(key)
                    stack.append((inner, "record"))
                    continue
                case MethodCall(name="isInRange", receiver=recv, args=(arg,)):
                    # Both ends of each literal range, and the addresses just outside it.
                    for this, other in ((recv, arg), (arg, recv)):
                        term, value = self.term(this), self.constant(other)
                        if term is not None and value is not None:
                            self.hint(term[-1], "ipaddr", *_range_ends(value[0]))
                    stack += [(recv, "ipaddr"), (arg, "ipaddr")]
                    continue
                case MethodCall(name=name, receiver=recv, args=args):
                    want_recv = _RECEIVER_KINDS.get(name)
                    stack.append((recv, want_recv))
                    stack.extend((a, None) for a in args)
                    continue
                case And() | Or() | Unary(op=UnaryOp.NOT):
                    stack.extend((c, "bool") for c in children(node))
                    continue
                case Unary(op=UnaryOp.NEG, arg=arg):
                    stack.append((arg, "long"))
                    continue
                case Arith(operands=operands):
                    for c in operands:  # where checked arithmetic overflows
                        term = self.term(c)
                        if term is not None:
                            self.hint(term[-1], "long", *_LONG_BOUNDARIES)
                    stack.extend((c, "long") for c in operands)
                    continue
                case If(cond=c, then_=t, else_=f):
                    stack += [(c, "bool"), (t, want), (f, want)]
                    continue
                case Is(expr=inner):
                    stack.append((inner, "entity"))
                    if node.in_expr is not None:
                        stack.append((node.in_expr, "entity"))
                    continue
            stack.extend((c, None) for c in children(node))

    def note(self, why: str) -> None:
        if len(self.why_not) < 3 and why not in self.why_not:
            self.why_not.append(why)


_LONG_BOUNDARIES = (I64_MAX, I64_MIN, -1, 0, 1, 2)


def _range_ends(value: Any) -> list[Any]:
    """An ipaddr range's first and last addresses and the ones just outside it."""
    if value.__class__ is not IPAddr:
        return []
    low, high = value.range()
    top = (1 << value.width) - 1
    return [IPAddr(value.version, a) for a in (low, high, low - 1, high + 1) if 0 <= a <= top]


class Element:
    """A set element named by a condition (``contains``): representatives are subsets."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def _extend(head: Input, path: Sequence[str]) -> Iterator[Input]:
    prefix: tuple[str, ...] = head[-1]
    for name in path:
        prefix = (*prefix, name)
        yield (*head[:-1], prefix)


def shared_key(inp: Input) -> Input:
    """The key hints are kept under: a path's representatives are the same for principal and
    resource (without a schema an attribute name means one thing)."""
    if inp[0] in ("attr", "tag"):
        return (inp[0], "*", inp[2])
    return inp


def _reads_store(node: Expr) -> bool:
    match node:
        case GetAttr() | Has():
            return True
        case MethodCall(name="getTag" | "hasTag"):
            return True
        case Binary(op=BinOp.IN):
            return not isinstance(node.left, Variable)
        case Is(in_expr=Expr()):
            return not isinstance(node.expr, Variable)
    return False


def _scope_runner(scope: Scope) -> Callable[[Evaluator], Any]:
    return lambda ev: ev.scope_matches(scope)


def _expr_runner(e: Expr) -> Callable[[Evaluator], Any]:
    return lambda ev: ev.evaluate(e)


def _atoms(e: Expr) -> Iterator[Expr]:
    """The atoms of a boolean expression (iterative)."""
    stack = [e]
    while stack:
        node = stack.pop()
        if isinstance(node, And | Or | If) or (isinstance(node, Unary) and node.op is UnaryOp.NOT):
            stack.extend(reversed(children(node)))
        elif not (isinstance(node, Lit) and node.value.__class__ is bool):
            yield node


def _short(e: Expr) -> str:
    from ..lang.printer import print_expr

    text = print_expr(e)
    return text if len(text) <= 50 else text[:47] + "..."


_NOBODY = EntityUID("__cedarlite", "nobody")
_NOBODY_REQUEST = Request(_NOBODY, _NOBODY, _NOBODY, EMPTY_RECORD)
