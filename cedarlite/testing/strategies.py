"""Hypothesis strategies for Cedar policies, entities and requests.

Use them in your own property tests (``hypothesis`` must be installed; it is a test dependency,
not a runtime one):

```python
from hypothesis import given
import cedarlite
from cedarlite import testing

@given(testing.scenarios())
def test_my_rewrite_keeps_decisions(sc):
    text = sc.text                      # Cedar text (cedarlite.lang.printer.print_policies)
    mine = my_rewrite(sc.policy_set)    # ... whatever is under test
    want = cedarlite.is_authorized(sc.request, sc.policy_set, sc.entities)
    assert cedarlite.is_authorized(sc.request, mine, sc.entities).decision is want.decision
```

The strategies build AST values (:mod:`cedarlite.lang.ast`) directly, not text, over one small
shared *universe* (:class:`Universe`): a few entity types (namespaced ones and ``Action``
included), a few ids, action groups, and a fixed vocabulary of typed entity attributes, tags and
context keys. Because policies, entities and requests are drawn from the same universe, scopes
often match, attributes usually exist, ``in`` is sometimes true, and evaluation errors (missing
attributes or entities, type errors, overflow, malformed extension strings) occur in a minority
of policies rather than in all of them.

| strategy               | draws                                                             |
|------------------------|-------------------------------------------------------------------|
| :func:`entity_uids`    | an :class:`~cedarlite.EntityUID` of the universe                  |
| :func:`expressions`    | an expression AST (any type; mostly well typed)                   |
| :func:`policies`       | a :class:`~cedarlite.lang.ast.Policy` (static, or a template)          |
| :func:`policy_sets`    | a :class:`~cedarlite.PolicySet` with templates and links          |
| :func:`entities`       | Cedar entity JSON (a list): attrs, tags, a DAG of parents         |
| :func:`contexts`       | a request context as Cedar JSON (a dict)                          |
| :func:`requests`       | a request dict ``{"principal": {"type", "id"}, ..., "context"}``  |
| :func:`scenarios`      | a :class:`Scenario`: (policy set, entities, request) together     |

Every construct of the language is generated: all scope forms (``==``, ``in``, ``is``,
``is ... in``, ``action in [...]``, slots and their links), ``when``/``unless``, ``&& || !``,
``if``, every relation, checked arithmetic (overflow included), negative literals, ``in`` on
sets, ``has`` (dotted too), ``like`` with wildcards and literal ``*``, ``is``/``is ... in``,
nested sets and records, every built-in method and every extension function and method (with
valid and malformed strings). Expression depth is bounded (``depth``), far below the nesting
that crashes engines.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from hypothesis import strategies as st

from ..data.values import EntityUID
from ..lang import ast
from ..lang.ast import (
    WILDCARD,
    And,
    Arith,
    Binary,
    BinOp,
    Call,
    Condition,
    ConditionKind,
    Effect,
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
    RecordLit,
    Scope,
    ScopeOp,
    SetLit,
    SlotId,
    Unary,
    UnaryOp,
    Var,
    Variable,
    is_action_type,
    is_valid_ident,
)
from ..policyset import PolicySet
from .universe import (
    ANY,
    BOOL,
    DATETIME,
    DECIMAL,
    DEFAULT_UNIVERSE,
    DURATION,
    ENTITY,
    EXT_CTOR,
    EXT_POOLS,
    EXTENSIONS,
    IPADDR,
    LONG,
    LONG_POOL,
    META,
    SIMPLE_TYPES,
    STRING,
    Type,
    Universe,
    _fields,
    record_of,
    set_of,
)

__all__ = [
    "Scenario",
    "contexts",
    "entities",
    "entity_uids",
    "expressions",
    "extension_strings",
    "policies",
    "policy_sets",
    "requests",
    "scenarios",
]


@st.composite
def _decimal_text(draw: Any) -> str:
    sign = draw(st.sampled_from(("", "", "-")))
    whole = draw(st.text("0123456789", min_size=0, max_size=16))
    frac = draw(st.text("0123456789", min_size=0, max_size=5))
    dot = draw(st.sampled_from((".", ".", ".", "")))
    return f"{sign}{whole}{dot}{frac}"


@st.composite
def _ip_text(draw: Any) -> str:
    if draw(st.booleans()):
        parts = draw(st.lists(st.integers(0, 300), min_size=3, max_size=5))
        text = ".".join(("0" if draw(st.integers(0, 15)) == 0 else "") + str(p) for p in parts)
        limit = 40
    else:
        groups = draw(st.lists(st.integers(0, 0xFFFF), min_size=1, max_size=9))
        hexes = [f"{g:x}" for g in groups]
        if len(hexes) < 8 or draw(st.integers(0, 4)) == 0:
            at = draw(st.integers(0, len(hexes)))
            hexes.insert(at, "")
            if at in (0, len(hexes) - 1):
                hexes.insert(at, "")
        text = ":".join(hexes)
        limit = 140
    if draw(st.booleans()):
        text += "/" + str(draw(st.integers(0, limit)))
    return text


@st.composite
def _datetime_text(draw: Any) -> str:
    y = draw(st.integers(0, 9999))
    mo = draw(st.integers(0, 13))
    d = draw(st.integers(0, 32))
    text = f"{y:04d}-{mo:02d}-{d:02d}"
    form = draw(st.integers(0, 4))
    if form == 0:
        return text
    h, mi, s = draw(st.integers(0, 25)), draw(st.integers(0, 61)), draw(st.integers(0, 61))
    text += f"T{h:02d}:{mi:02d}:{s:02d}"
    if form in (2, 4):
        text += f".{draw(st.integers(0, 999)):03d}"
    if form <= 2:
        return text + "Z"
    oh, om = draw(st.integers(0, 25)), draw(st.integers(0, 61))
    return text + draw(st.sampled_from("+-")) + f"{oh:02d}{om:02d}"


@st.composite
def _duration_text(draw: Any) -> str:
    units = draw(st.lists(st.sampled_from(("d", "h", "m", "s", "ms")), min_size=0, max_size=4))
    if draw(st.integers(0, 3)):
        order = {"d": 0, "h": 1, "m": 2, "s": 3, "ms": 4}
        units = sorted(set(units), key=order.__getitem__)
    sign = draw(st.sampled_from(("", "", "-")))
    return sign + "".join(f"{draw(st.integers(0, 10**6))}{u}" for u in units)


_EXT_TEXT = {
    DECIMAL: _decimal_text(),
    IPADDR: _ip_text(),
    DATETIME: _datetime_text(),
    DURATION: _duration_text(),
}


def extension_strings(ty: Type, *, valid_only: bool = False) -> st.SearchStrategy[str]:
    """Constructor strings for an extension type: valid ones, near misses, random ones."""
    good, bad = EXT_POOLS[ty]
    if valid_only:
        return st.sampled_from(good)
    return st.one_of(st.sampled_from(good), st.sampled_from(bad), _EXT_TEXT[ty])


# ---------------------------------------------------------------------------------------------
# Drawing helpers


@cache
def _ints(lo: int, hi: int) -> st.SearchStrategy[int]:
    return st.integers(lo, hi)


class _Draw:
    """Small conveniences over Hypothesis's ``draw`` (shrinking goes towards the first option)."""

    __slots__ = ("draw",)

    def __init__(self, draw: Callable[[st.SearchStrategy[Any]], Any]) -> None:
        self.draw = draw

    def integer(self, lo: int, hi: int) -> int:
        return self.draw(_ints(lo, hi))

    def chance(self, percent: int) -> bool:
        """True with probability ``percent``/100 (shrinks to False)."""
        return self.integer(0, 99) >= 100 - percent

    def pick(self, options: Sequence[Any]) -> Any:
        return options[self.integer(0, len(options) - 1)]

    def weighted(self, options: Sequence[tuple[int, Any]]) -> Any:
        total = sum(w for w, _ in options)
        n = self.integer(0, total - 1)
        for w, value in options:
            if n < w:
                return value
            n -= w
        raise AssertionError("unreachable")  # pragma: no cover

    def subset(self, options: Sequence[Any], percent: int) -> list[Any]:
        return [o for o in options if self.chance(percent)]

    def hot(self, options: Sequence[Any], percent: int = 65) -> Any:
        """The first option with probability ``percent``/100, else any (so scopes match)."""
        return options[0] if self.chance(percent) else self.pick(options)


class _RandomDraw(_Draw):
    """The same conveniences over a seeded :class:`random.Random`, for bulk data.

    A Hypothesis draw costs tens of microseconds; entity stores need hundreds of small choices,
    so each entity's contents come from one drawn seed (Hypothesis still decides which
    entities exist, so shrinking removes entities).
    """

    __slots__ = ("rng",)

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def integer(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)


_SEEDS = st.integers(0, 2**32 - 1)


# ---------------------------------------------------------------------------------------------
# JSON values (entity attributes, tags, context)


def _random_type(d: _Draw, depth: int = 2) -> Type:
    n = d.integer(0, 9 if depth > 0 else 7)
    if n < 8:
        return SIMPLE_TYPES[n]
    if n == 8:
        return set_of(_random_type(d, depth - 1))
    keys = d.subset(("k", "level", "x", "if", "a b", "__cedar"), 40)
    return record_of(**{k: _random_type(d, depth - 1) for k in keys})


def _json_value(d: _Draw, u: Universe, ty: Type, depth: int = 2) -> Any:
    """Cedar JSON for a value of type ``ty`` (sometimes of another type: data can be wrong)."""
    if ty == ANY or (depth > 0 and d.chance(3)):
        ty = _random_type(d, depth)
    match ty[0]:
        case "Bool":
            return d.chance(50)
        case "Long":
            return d.pick(LONG_POOL) if d.chance(80) else d.integer(-20, 20)
        case "String":
            return d.pick(u.strings)
        case "Entity":
            return {"__entity": d.pick(u.all_uids).to_json()}
        case "Set":
            return [_json_value(d, u, ty[1], depth - 1) for _ in range(d.integer(0, 3))]
        case "Record":
            return {k: _json_value(d, u, t, depth - 1) for k, t in ty[1] if d.chance(85)}
        case _:
            text = d.pick(EXT_POOLS[ty][0])
            if ty == DATETIME and d.chance(20):
                # Rust's canonical serialization: offset(datetime("1970-01-01"), duration(..))
                from ..data.ext import Datetime

                ms = Datetime.parse(text).ms
                return Datetime(ms).to_json()
            return {"__extn": {"fn": EXT_CTOR[ty], "arg": text}}


def entity_uids(universe: Universe | None = None) -> st.SearchStrategy[EntityUID]:
    """An entity uid of the universe (stored ones, actions and a few that are never stored)."""
    return st.sampled_from((universe or DEFAULT_UNIVERSE).all_uids)


@st.composite
def entities(draw: Any, universe: Universe | None = None) -> list[dict[str, Any]]:
    """Cedar entity JSON: most uids of the universe, with attributes, tags and parents (a DAG).

    Some entities are left out (``entity does not exist``), some attributes are missing or of an
    unexpected type, parents sometimes name entities that are not stored. The JSON is always
    loadable (actions only have action parents; there are no cycles).
    """
    u = universe or DEFAULT_UNIVERSE
    d = _Draw(draw)
    order = u.hierarchy
    out: list[dict[str, Any]] = []
    for i, uid in enumerate(order):
        if not d.chance(88):
            continue
        r = _RandomDraw(draw(_SEEDS))
        later = order[i + 1 :]
        natural = [p for p in later if _natural_parent(u, uid, p)]
        if is_action_type(uid.type):
            later = tuple(p for p in later if is_action_type(p.type))  # Cedar requires it
        parents = r.subset(natural, 60) + ([r.pick(later)] if later and r.chance(25) else [])
        entity: dict[str, Any] = {"uid": uid.to_json(), "parents": []}
        entity["parents"] = [p.to_json() for p in dict.fromkeys(parents)]
        if not is_action_type(uid.type):
            entity["attrs"] = {
                k: _json_value(r, u, t) for k, t in u.attributes.items() if r.chance(80)
            }
            if r.chance(60):
                entity["tags"] = {
                    k: _json_value(r, u, t) for k, t in u.tags.items() if r.chance(70)
                }
        else:
            entity["attrs"] = {}
        out.append(entity)
    return out


def _natural_parent(u: Universe, child: EntityUID, parent: EntityUID) -> bool:
    if child in u.principals or child in u.groups:
        return parent in u.groups
    if child in u.resources or child in u.containers:
        return parent in u.containers
    if child in u.action_uids:
        return parent in u.action_groups
    return False


@st.composite
def contexts(draw: Any, universe: Universe | None = None) -> dict[str, Any]:
    """A request context (Cedar JSON object) over the universe's context keys."""
    u = universe or DEFAULT_UNIVERSE
    r = _RandomDraw(draw(_SEEDS))
    return {k: _json_value(r, u, t) for k, t in u.context.items() if r.chance(85)}


@st.composite
def requests(draw: Any, universe: Universe | None = None) -> dict[str, Any]:
    """A request dict in cedarpy's form: uid dicts for principal/action/resource, a context."""
    u = universe or DEFAULT_UNIVERSE
    d = _Draw(draw)
    principal = d.hot(u.principals) if d.chance(92) else d.pick(u.all_uids)
    action = d.hot(u.actions) if d.chance(92) else d.pick(u.action_uids)
    resource = d.hot(u.resources) if d.chance(90) else d.pick(u.all_uids)
    return {
        "principal": principal.to_json(),
        "action": action.to_json(),
        "resource": resource.to_json(),
        "context": draw(contexts(u)),
    }


# ---------------------------------------------------------------------------------------------
# Expressions


_CMP = (BinOp.LT, BinOp.LE, BinOp.GT, BinOp.GE)


class _ExprGen:
    """Typed expression generation: ``expr(ty, depth)`` draws an expression of type ``ty``.

    With a small probability a subexpression of another type is produced instead, so type
    errors occur without dominating. Attribute accesses are often guarded by ``has``.
    """

    ILL_TYPED_PERCENT = 3

    def __init__(self, d: _Draw, u: Universe) -> None:
        self.d = d
        self.u = u
        # (base type, attribute name) pairs giving each type, for attribute access
        self.record_types: list[Type] = [u.context_type]
        for t in (*u.attributes.values(), *u.context.values()):
            self._collect_records(t)

    def _collect_records(self, t: Type) -> None:
        if t[0] == "Record":
            self.record_types.append(t)
            for _, ft in t[1]:
                self._collect_records(ft)
        elif t[0] == "Set":
            self._collect_records(t[1])

    # -- leaves -------------------------------------------------------------------------

    def leaf(self, ty: Type) -> Expr:
        d, u = self.d, self.u
        match ty[0]:
            case "Bool":
                return Lit(d.chance(50))
            case "Long":
                return Lit(d.pick(LONG_POOL) if d.chance(40) else d.integer(-3, 12))
            case "String":
                return Lit(d.pick(u.strings))
            case "Entity":
                if d.chance(60):
                    return Variable(d.pick((Var.PRINCIPAL, Var.RESOURCE, Var.ACTION)))
                return Lit(d.pick(u.all_uids))
            case "Set":
                return SetLit(tuple(self.leaf(ty[1]) for _ in range(d.integer(0, 3))))
            case "Record":
                if ty == u.context_type:
                    return Variable(Var.CONTEXT)
                return RecordLit(tuple((k, self.leaf(t)) for k, t in ty[1] if d.chance(85)))
            case "Any":
                return self.leaf(_random_type(d, 1))
            case _:
                return self.ext_ctor(ty, 0)

    def ext_ctor(self, ty: Type, depth: int) -> Expr:
        d = self.d
        if depth > 0 and d.chance(10):
            arg = self.expr(STRING, depth - 1)
        else:
            arg = Lit(d.draw(extension_strings(ty)) if d.chance(40) else d.pick(EXT_POOLS[ty][0]))
        return Call(EXT_CTOR[ty], (arg,))

    # -- producers of each type ----------------------------------------------------------

    def expr(self, ty: Type, depth: int) -> Expr:
        d = self.d
        if ty == ANY:
            ty = _random_type(d, 1)
        if depth > 0 and d.chance(self.ILL_TYPED_PERCENT):
            ty = _random_type(d, 1)
        if depth <= 0 or d.chance(25):
            return self.leaf(ty)
        if ty == BOOL:
            return self.boolean(depth)
        options: list[tuple[int, Callable[[], Expr]]] = [
            (3, lambda: self.leaf(ty)),
            (3, lambda: self.access(ty, depth)),
            (
                1,
                lambda: If(
                    self.boolean(depth - 1), self.expr(ty, depth - 1), self.expr(ty, depth - 1)
                ),
            ),
        ]
        match ty[0]:
            case "Long":
                options += [
                    (2, lambda: self.arith(depth)),
                    (1, lambda: Unary(UnaryOp.NEG, self.expr(LONG, depth - 1))),
                    (1, lambda: self.get_tag(LONG, depth)),
                    (
                        1,
                        lambda: MethodCall(
                            self.expr(DURATION, depth - 1),
                            d.pick(
                                ("toMilliseconds", "toSeconds", "toMinutes", "toHours", "toDays")
                            ),
                            (),
                        ),
                    ),
                ]
            case "String":
                options += [(1, lambda: self.get_tag(STRING, depth))]
            case "Entity":
                options += [(1, lambda: self.get_tag(ENTITY, depth))]
            case "Set":
                options += [
                    (
                        2,
                        lambda: SetLit(
                            tuple(self.expr(ty[1], depth - 1) for _ in range(d.integer(0, 3)))
                        ),
                    )
                ]
            case "Record":
                options += [
                    (
                        2,
                        lambda: RecordLit(
                            tuple((k, self.expr(t, depth - 1)) for k, t in ty[1] if d.chance(85))
                        ),
                    )
                ]
            case "datetime":
                options += [
                    (2, lambda: self.ext_ctor(DATETIME, depth)),
                    (
                        1,
                        lambda: MethodCall(
                            self.expr(DATETIME, depth - 1),
                            "offset",
                            (self.expr(DURATION, depth - 1),),
                        ),
                    ),
                    (1, lambda: MethodCall(self.expr(DATETIME, depth - 1), "toDate", ())),
                ]
            case "duration":
                options += [
                    (2, lambda: self.ext_ctor(DURATION, depth)),
                    (1, lambda: MethodCall(self.expr(DATETIME, depth - 1), "toTime", ())),
                    (
                        1,
                        lambda: MethodCall(
                            self.expr(DATETIME, depth - 1),
                            "durationSince",
                            (self.expr(DATETIME, depth - 1),),
                        ),
                    ),
                ]
            case "decimal" | "ipaddr":
                options += [(2, lambda: self.ext_ctor(ty, depth))]
        return d.weighted(options)()

    def chain(self, operand: Callable[[int], Expr], depth: int) -> tuple[Expr, ...]:
        """Two to four operands for an ``&&``, ``||`` or arithmetic chain."""
        return tuple(operand(depth) for _ in range(self.d.weighted([(6, 2), (3, 3), (1, 4)])))

    def arith(self, depth: int) -> Expr:
        """``a + b - c ...`` or ``a * b * ...`` (overflow included)."""
        operands = self.chain(lambda sub: self.expr(LONG, sub), depth - 1)
        if self.d.chance(30):
            return Arith(operands, (BinOp.MUL,) * (len(operands) - 1))
        return Arith(operands, tuple(self.d.pick((BinOp.ADD, BinOp.SUB)) for _ in operands[1:]))

    def bases_with(self, ty: Type) -> list[tuple[Type, str]]:
        """(base type, attribute) pairs whose attribute has type ``ty``."""
        out = [(ENTITY, a) for a, t in self.u.attributes.items() if t in (ty, ANY)]
        for rt in self.record_types:
            out += [(rt, k) for k, t in rt[1] if t in (ty, ANY)]
        return out

    def access(self, ty: Type, depth: int) -> Expr:
        """``base.attr`` (or ``base["attr"]``) of type ``ty``."""
        options = self.bases_with(ty)
        if not options:
            return self.leaf(ty)
        base_ty, attr = self.d.pick(options)
        return GetAttr(self.base(base_ty, depth - 1), attr)

    def base(self, ty: Type, depth: int) -> Expr:
        if ty == ENTITY and self.d.chance(70):
            return Variable(self.d.pick((Var.PRINCIPAL, Var.RESOURCE, Var.PRINCIPAL)))
        return self.expr(ty, depth)

    def get_tag(self, ty: Type, depth: int) -> Expr:
        keys = [k for k, t in self.u.tags.items() if t in (ty, ANY)] or list(self.u.tags)
        key = Lit(self.d.pick(keys)) if keys and self.d.chance(85) else self.expr(STRING, depth - 1)
        return MethodCall(self.base(ENTITY, depth - 1), "getTag", (key,))

    # -- Bool ---------------------------------------------------------------------------

    def boolean(self, depth: int) -> Expr:
        d = self.d
        if depth <= 0:
            return self.leaf(BOOL)
        sub = depth - 1
        options: list[tuple[int, Callable[[], Expr]]] = [
            (1, lambda: self.leaf(BOOL)),
            (2, lambda: self.access(BOOL, depth)),
            (3, lambda: And(self.chain(self.boolean, sub))),
            (3, lambda: Or(self.chain(self.boolean, sub))),
            (2, lambda: Unary(UnaryOp.NOT, self.boolean(sub))),
            (1, lambda: If(self.boolean(sub), self.boolean(sub), self.boolean(sub))),
            (10, lambda: self.test(d.pick(_TESTABLE), sub)),
            (4, lambda: self.guarded(depth)),
            (2, lambda: self.equality(sub)),
            (2, lambda: self.hierarchy(sub)),
            (
                1,
                lambda: MethodCall(
                    self.base(ENTITY, sub),
                    "hasTag",
                    (
                        Lit(d.pick([*self.u.tags, "nope"]))
                        if d.chance(85)
                        else self.expr(STRING, sub),
                    ),
                ),
            ),
            (2, lambda: self.has(sub)),
        ]
        return d.weighted(options)()

    def equality(self, depth: int) -> Expr:
        d = self.d
        ty = _random_type(d, 2)
        left = self.expr(ty, depth)
        right = self.expr(ty if d.chance(85) else _random_type(d, 1), depth)
        return Binary(BinOp.EQ if d.chance(70) else BinOp.NEQ, left, right)

    def hierarchy(self, depth: int) -> Expr:
        """``in``, ``is`` and ``is ... in`` over entities."""
        d = self.d
        left = self.base(ENTITY, depth)
        kind = d.integer(0, 3)
        if kind == 0:
            return Is(left, d.pick(self.u.entity_types))
        target = self.in_target(depth)
        if kind == 1:
            return Is(left, d.pick(self.u.entity_types), target)
        return Binary(BinOp.IN, left, target)

    def in_target(self, depth: int) -> Expr:
        d = self.d
        u = self.u
        if d.chance(30):
            return self.expr(set_of(ENTITY), depth)
        if d.chance(70):
            return Lit(d.pick(u.groups + u.containers + u.action_groups + u.all_uids))
        return self.expr(ENTITY, depth)

    def has(self, depth: int) -> Expr:
        """``e has a`` (entity or record) or the dotted form over nested records."""
        d = self.d
        if d.chance(50):
            base_ty: Type = ENTITY
            names = [*self.u.attributes, "missing"]
        else:
            base_ty = d.pick(self.record_types)
            names = [k for k, _ in base_ty[1]] + ["missing"]
        base = self.base(base_ty, depth)
        first = d.pick(names)
        path = [first]
        ty = (
            self.u.attributes.get(first, ANY)
            if base_ty == ENTITY
            else _fields(base_ty).get(first, ANY)
        )
        while ty[0] == "Record" and d.chance(40) and _dottable(path[-1]):
            nxt = d.pick([k for k, _ in ty[1]] + ["nope"])
            path.append(nxt)
            ty = _fields(ty).get(nxt, ANY)
        if len(path) > 1 and not all(_dottable(p) for p in path):
            path = path[:1]
        return Has(base, tuple(path))

    def guarded(self, depth: int) -> Expr:
        """``base has a && <test of base.a>``: attribute access that rarely errors."""
        d = self.d
        ty = d.pick(_TESTABLE)
        options = self.bases_with(ty)
        if not options:
            return self.test(ty, depth - 1)
        base_ty, attr = d.pick(options)
        base = self.base(base_ty, depth - 1)
        value = GetAttr(base, attr)
        return And((Has(base, (attr,)), self.consume(value, ty, depth - 1)))

    def test(self, ty: Type, depth: int) -> Expr:
        """A Bool built from an expression of type ``ty``."""
        return self.consume(self.expr(ty, depth), ty, depth)

    def consume(self, e: Expr, ty: Type, depth: int) -> Expr:
        """A Bool that uses the value of ``e`` (of type ``ty``)."""
        d = self.d
        other = lambda t=ty: self.expr(t, depth)  # noqa: E731
        match ty[0]:
            case "Bool":
                return d.pick(
                    (lambda: e, lambda: Unary(UnaryOp.NOT, e), lambda: Binary(BinOp.EQ, e, other()))
                )()
            case "Long":
                return Binary(d.pick((*_CMP, BinOp.EQ, BinOp.NEQ)), e, other())
            case "String":
                if d.chance(60):
                    return Like(e, self.pattern())
                return Binary(d.pick((BinOp.EQ, BinOp.NEQ)), e, other())
            case "Entity":
                if d.chance(50):
                    return Binary(BinOp.IN, e, self.in_target(depth))
                if d.chance(50):
                    return Is(
                        e,
                        d.pick(self.u.entity_types),
                        self.in_target(depth) if d.chance(30) else None,
                    )
                return Binary(BinOp.EQ, e, other())
            case "Set":
                name = d.pick(("contains", "containsAll", "containsAny", "isEmpty"))
                if name == "isEmpty":
                    return MethodCall(e, name, ())
                arg = other(ty[1]) if name == "contains" else other()
                return MethodCall(e, name, (arg,))
            case "Record":
                keys = [k for k, _ in ty[1]] + ["zz"]
                return Has(e, (d.pick(keys),))
            case "decimal":
                name = d.pick(
                    ("lessThan", "lessThanOrEqual", "greaterThan", "greaterThanOrEqual", "==")
                )
                if name == "==":
                    return Binary(BinOp.EQ, e, other())
                return MethodCall(e, name, (other(),))
            case "ipaddr":
                name = d.pick(("isIpv4", "isIpv6", "isLoopback", "isMulticast", "isInRange", "=="))
                if name == "==":
                    return Binary(BinOp.EQ, e, other())
                return MethodCall(e, name, (other(),) if name == "isInRange" else ())
            case "datetime" | "duration":
                return Binary(d.pick((*_CMP, BinOp.EQ, BinOp.NEQ)), e, other())
        return Binary(BinOp.EQ, e, other())

    def pattern(self) -> tuple[ast.PatternElem, ...]:
        """A ``like`` pattern, often derived from a pool string so that it sometimes matches."""
        d = self.d
        text = d.pick(self.u.strings)
        elems: list[Any] = []
        for ch in text:
            n = d.integer(0, 9)
            if n == 0:
                elems.append(WILDCARD)  # replace the character by a wildcard
            elif n == 1:
                continue  # drop it
            else:
                elems.append(ch)
        if d.chance(30):
            elems.insert(d.integer(0, len(elems)), WILDCARD)
        return _normalize_pattern(elems)


def _dottable(name: str) -> bool:
    """``name`` may appear in a dotted ``has`` path (an identifier, not reserved)."""
    return is_valid_ident(name) and name != "__cedar"


_TESTABLE: tuple[Type, ...] = (
    BOOL,
    LONG,
    LONG,
    STRING,
    STRING,
    ENTITY,
    ENTITY,
    set_of(STRING),
    set_of(ENTITY),
    set_of(LONG),
    META,
    *EXTENSIONS,
)


def _normalize_pattern(elems: Sequence[Any]) -> tuple[ast.PatternElem, ...]:
    """Merge adjacent literal characters (the parser's shape for a pattern)."""
    out: list[Any] = []
    for group_is_wild, group in itertools.groupby(elems, key=lambda e: e is WILDCARD):
        if group_is_wild:
            out.extend(group)
        else:
            out.append("".join(group))
    return tuple(out)


@st.composite
def expressions(
    draw: Any, depth: int = 3, *, universe: Universe | None = None, boolean: bool = False
) -> Expr:
    """An expression AST over the universe, at most ``depth`` generator levels deep.

    ``boolean=True`` draws a (mostly) Bool-typed expression, as in a condition; otherwise the
    type is drawn too. Never contains a slot.
    """
    d = _Draw(draw)
    gen = _ExprGen(d, universe or DEFAULT_UNIVERSE)
    if boolean:
        return gen.boolean(depth)
    return gen.expr(_random_type(d, 2), depth)


# ---------------------------------------------------------------------------------------------
# Policies


def _entity_scope(d: _Draw, u: Universe, var: Var, template_ok: bool) -> Scope:
    slot = SlotId.PRINCIPAL if var is Var.PRINCIPAL else SlotId.RESOURCE
    own = u.principals if var is Var.PRINCIPAL else u.resources
    parents = u.groups if var is Var.PRINCIPAL else u.containers

    def target(pool: Sequence[EntityUID]) -> EntityUID | SlotId:
        if template_ok and d.chance(25):
            return slot
        return d.hot(pool) if d.chance(90) else d.pick(u.all_uids)

    op = d.weighted(
        ((7, ScopeOp.ANY), (2, ScopeOp.EQ), (2, ScopeOp.IN), (1, ScopeOp.IS), (1, ScopeOp.IS_IN))
    )
    types = tuple(dict.fromkeys(t.type for t in own)) + u.entity_types
    match op:
        case ScopeOp.ANY:
            return Scope(var)
        case ScopeOp.EQ:
            return Scope(var, op, entity=target(own))
        case ScopeOp.IN:
            return Scope(var, op, entity=target(parents + own))
        case ScopeOp.IS:
            return Scope(var, op, entity_type=d.hot(types, 60))
        case _:
            return Scope(var, op, entity=target(parents + own), entity_type=d.hot(types, 60))


def _action_scope(d: _Draw, u: Universe) -> Scope:
    op = d.weighted(((5, ScopeOp.ANY), (3, ScopeOp.EQ), (2, ScopeOp.IN), (2, ScopeOp.IN_SET)))
    match op:
        case ScopeOp.ANY:
            return Scope(Var.ACTION)
        case ScopeOp.EQ:
            return Scope(Var.ACTION, op, entity=d.hot(u.action_uids))
        case ScopeOp.IN:
            return Scope(Var.ACTION, op, entity=d.hot(u.action_groups + u.action_uids))
        case _:
            items = [d.hot(u.action_uids, 30) for _ in range(d.integer(0, 3))]
            return Scope(Var.ACTION, op, entities=tuple(items))


_ANNOTATION_KEYS = ("id", "advice", "if", "permit", "reason")


@st.composite
def policies(
    draw: Any,
    *,
    universe: Universe | None = None,
    depth: int = 3,
    policy_id: str = "policy0",
    templates: bool = True,
) -> Policy:
    """A policy (or, with ``templates``, sometimes a template with slots) over the universe.

    ``id`` is ``policy_id``; the conditions are 0 to 3 ``when``/``unless`` clauses.
    """
    u = universe or DEFAULT_UNIVERSE
    d = _Draw(draw)
    gen = _ExprGen(d, u)
    annotations = {
        k: d.pick(("", "a", "policy one", 'q"uote')) for k in _ANNOTATION_KEYS if d.chance(8)
    }
    conditions = tuple(
        Condition(
            ConditionKind.WHEN if d.chance(75) else ConditionKind.UNLESS,
            gen.boolean(d.integer(1, depth)),
        )
        for _ in range(d.weighted(((2, 0), (5, 1), (2, 2), (1, 3))))
    )
    return Policy(
        policy_id,
        Effect.PERMIT if d.chance(80) else Effect.FORBID,
        _entity_scope(d, u, Var.PRINCIPAL, templates),
        _action_scope(d, u),
        _entity_scope(d, u, Var.RESOURCE, templates),
        conditions,
        annotations,
    )


@st.composite
def policy_sets(
    draw: Any,
    *,
    universe: Universe | None = None,
    depth: int = 3,
    max_policies: int = 6,
    templates: bool = True,
) -> PolicySet:
    """A :class:`PolicySet` of 0..``max_policies`` policies ``policy0``... and template links.

    Each template is linked 0 to 2 times as ``link0``, ``link1``, ... with slot values from the
    universe (so linked scopes sometimes match).
    """
    u = universe or DEFAULT_UNIVERSE
    d = _Draw(draw)
    count = d.integer(0, max_policies) if d.chance(10) else d.integer(1, max_policies)
    ps = PolicySet(
        draw(policies(universe=u, depth=depth, policy_id=f"policy{i}", templates=templates))
        for i in range(count)
    )
    n = 0
    for template in ps.templates:
        for _ in range(d.weighted(((1, 0), (3, 1), (1, 2)))):
            values = {}
            for slot in template.slots:
                pool = (
                    u.principals + u.groups
                    if slot is SlotId.PRINCIPAL
                    else (u.resources + u.containers)
                )
                values[slot.value] = d.pick(pool) if d.chance(90) else d.pick(u.all_uids)
            ps = ps.link(template.id, f"link{n}", values)
            n += 1
    return ps


# ---------------------------------------------------------------------------------------------
# Scenarios


@dataclass(frozen=True)
class Scenario:
    """A policy set, entity JSON and a request drawn over one universe.

    ``request`` is a dict in cedarpy's form (uid dicts, JSON context); ``entities`` is Cedar
    entity JSON (a list). :attr:`text` is the policy text (templates included, links not) and
    :attr:`links` the ``(template_id, new_id, values)`` of each link, values as uid dicts.
    """

    policy_set: PolicySet
    entities: list[dict[str, Any]]
    request: dict[str, Any]

    @property
    def text(self) -> str:
        """Cedar text of the static policies and templates (what a policy file would hold)."""
        return self.policy_set.to_cedar()

    @property
    def links(self) -> list[tuple[str, str, dict[str, dict[str, str]]]]:
        """The template links, in order: ``(template_id, new_id, {slot: {"type", "id"}})``."""
        return [
            (p.template_id, p.id, {k: v.to_json() for k, v in p.links.items()})
            for p in self.policy_set
            if p.template_id is not None
        ]


@st.composite
def scenarios(
    draw: Any, *, universe: Universe | None = None, depth: int = 3, max_policies: int = 6
) -> Scenario:
    """A (policy set, entities, request) triple over one universe (see the module docs)."""
    u = universe or DEFAULT_UNIVERSE
    ps = draw(policy_sets(universe=u, depth=depth, max_policies=max_policies))
    return Scenario(ps, draw(entities(u)), draw(requests(u)))
