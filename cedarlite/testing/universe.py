"""The shared *universe* the Hypothesis strategies draw from, and its small type algebra.

No Hypothesis here: :class:`Universe`, :data:`DEFAULT_UNIVERSE` and :func:`universe_for` are
plain data (a few entity types and ids, action groups, typed attributes, tags and context keys,
and pools of literals that stress the engines), shared by :mod:`.strategies`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..data.values import I64_MAX, I64_MIN, EntityUID
from ..lang.ast import (
    Expr,
    GetAttr,
    Has,
    Is,
    Lit,
    MethodCall,
    Policy,
    Var,
    Variable,
    is_action_type,
    walk,
)
from ..policyset import PolicySet

# ---------------------------------------------------------------------------------------------
# A tiny type algebra used to steer generation (not Cedar's validator types).
#
# A type is a tuple: ("Bool",), ("Long",), ("String",), ("Entity",), ("Set", elem),
# ("Record", ((name, type), ...)), ("decimal",), ("ipaddr",), ("datetime",), ("duration",),
# or ("Any",) for an attribute whose type is unknown (values of any type are generated).

Type = tuple[Any, ...]

BOOL: Type = ("Bool",)
LONG: Type = ("Long",)
STRING: Type = ("String",)
ENTITY: Type = ("Entity",)
DECIMAL: Type = ("decimal",)
IPADDR: Type = ("ipaddr",)
DATETIME: Type = ("datetime",)
DURATION: Type = ("duration",)
ANY: Type = ("Any",)
EXTENSIONS: tuple[Type, ...] = (DECIMAL, IPADDR, DATETIME, DURATION)


def set_of(elem: Type) -> Type:
    """The type of sets of ``elem``."""
    return ("Set", elem)


def record_of(**fields: Type) -> Type:
    """The type of records with exactly these (optional-at-runtime) fields."""
    return ("Record", tuple(fields.items()))


def _fields(ty: Type) -> dict[str, Type]:
    return dict(ty[1]) if ty[0] == "Record" else {}


SIMPLE_TYPES: tuple[Type, ...] = (BOOL, LONG, STRING, ENTITY, *EXTENSIONS)

# ---------------------------------------------------------------------------------------------
# Extension strings: valid ones, near misses, and small generators of both.

DECIMAL_STRINGS = (
    "0.0",
    "1.5",
    "-2.25",
    "12.3456",
    "1.0000",
    "-0.5",
    "922337203685477.5807",
    "-922337203685477.5808",
    "3.1",
    "100.01",
)
BAD_DECIMAL_STRINGS = (
    "1.",
    ".5",
    "1",
    "1.23456",
    "abc",
    "",
    "922337203685477.5808",
    "1.-5",
    "+1.0",
    "1..0",
    "-",
    "1e3",
    " 1.0",
    "١.٠",  # noqa: RUF001 - non-ASCII digits must be rejected
)
IP_STRINGS = (
    "10.0.0.1",
    "192.168.0.0/16",
    "192.168.1.7/24",
    "127.0.0.1",
    "127.0.0.0/8",
    "::1",
    "ff02::1",
    "2001:db8::/32",
    "224.0.0.1",
    "0.0.0.0/0",
    "10.1.2.3/8",
    "::",
    "ffff::/8",
    "1:2:3:4:5:6:7:8",
    "fe80::1/64",
    "239.255.255.255",
)
BAD_IP_STRINGS = (
    "256.0.0.1",
    "01.2.3.4",
    "1.2.3",
    "::ffff:1.2.3.4",
    "10.0.0.1/33",
    "1.2.3.4/08",
    "",
    "::1::",
    "a.b.c.d",
    "fe80::1%eth0",
    "1:2:3:4:5:6:7:8:9",
    "::1/129",
    "1.2.3.4/",
    "12345::",
)
DATETIME_STRINGS = (
    "2024-01-01",
    "2024-02-29T12:00:00Z",
    "1969-12-31T23:59:59.999Z",
    "2024-06-01T11:35:00-0100",
    "2000-01-01T00:00:00.123+0530",
    "1970-01-01",
    "0000-01-01",
    "9999-12-31T23:59:59Z",
    "2024-06-01T12:35:00Z",
)
BAD_DATETIME_STRINGS = (
    "2023-02-29",
    "2024-1-01",
    "2024-01-01T24:00:00Z",
    "2024-01-01T12:00:00",
    "2024-01-01 12:00:00Z",
    "20240101",
    "2024-01-01T12:00:60Z",
    "2024-01-01T12:00:00+2400",
    "",
    "2024-13-01",
    "2024-01-01T12:00:00.12Z",
    "2024-01-01T12:00:00+01:00",
    "+2024-01-01",
)
DURATION_STRINGS = (
    "1d",
    "2h30m",
    "-1h30m",
    "0ms",
    "90m",
    "1d2h3m4s5ms",
    "500ms",
    "-5s",
    "24h",
    "1ms",
    "106751991167d",
    "-9223372036854775808ms",
)
BAD_DURATION_STRINGS = (
    "",
    "-",
    "1",
    "1h1d",
    "1h1h",
    "1.5h",
    "h",
    "1 h",
    "9223372036854775808ms",
    "106751991168d",
    "1msm",
    "--1s",
    "1s-",
    "1D",
)

EXT_CTOR = {DECIMAL: "decimal", IPADDR: "ip", DATETIME: "datetime", DURATION: "duration"}
EXT_POOLS = {
    DECIMAL: (DECIMAL_STRINGS, BAD_DECIMAL_STRINGS),
    IPADDR: (IP_STRINGS, BAD_IP_STRINGS),
    DATETIME: (DATETIME_STRINGS, BAD_DATETIME_STRINGS),
    DURATION: (DURATION_STRINGS, BAD_DURATION_STRINGS),
}

# ---------------------------------------------------------------------------------------------
# The universe


LONG_POOL = (
    0,
    1,
    2,
    3,
    7,
    10,
    42,
    100,
    -1,
    -5,
    255,
    1000,
    2**31,
    2**32,
    2**62,
    I64_MAX,
    I64_MIN,
    I64_MAX - 1,
    I64_MIN + 1,
    3037000500,
    -3037000500,
)
"""Integers that stress overflow checks (``2**62 * 2``, ``3037000500**2``...)."""

STRING_POOL = (
    "",
    "alice",
    "bob",
    "a*b",
    "*",
    "ab",
    "abc",
    "report.pdf",
    "ALICE",
    "ü",
    "x\ny",
    "tab\there",
    'quo"te',
    "back\\slash",
    "a b",
    "\u0000",
    "日本",
    "admin",
    "10.0.0.1",
    "\x7f",
    "zero\u200bwidth",
    "\U0001f600",
    "e\u0301",
)
"""Strings shared by literals and data, so that ``==`` and ``like`` are sometimes true."""


@dataclass(frozen=True)
class Universe:
    """The small shared world the scenario strategies draw from.

    Principals are usually members of ``groups``, resources of ``containers`` and actions of
    ``action_groups`` (these are their natural parents); :attr:`hierarchy` orders every storable
    uid so that parents always come later, so any parent relation drawn from it is a DAG.
    ``extra_uids`` are referenced by policies but never stored (``entity does not exist``).
    ``attributes`` (of every non-action entity), ``tags`` and ``context`` give the type of each
    name, in the small type algebra of this module (``ANY`` when unknown); ``strings`` are the
    string literals and data values, shared so that ``==`` and ``like`` are sometimes true.
    """

    principals: tuple[EntityUID, ...]
    resources: tuple[EntityUID, ...]
    actions: tuple[EntityUID, ...]
    groups: tuple[EntityUID, ...]
    containers: tuple[EntityUID, ...]
    action_groups: tuple[EntityUID, ...]
    extra_uids: tuple[EntityUID, ...] = ()
    attributes: Mapping[str, Type] = field(default_factory=dict)
    tags: Mapping[str, Type] = field(default_factory=dict)
    context: Mapping[str, Type] = field(default_factory=dict)
    strings: tuple[str, ...] = STRING_POOL

    @property
    def hierarchy(self) -> tuple[EntityUID, ...]:
        """Every storable uid, children before parents."""
        return tuple(
            dict.fromkeys(
                self.principals
                + self.resources
                + self.actions
                + self.groups
                + self.containers
                + self.action_groups
            )
        )

    @property
    def all_uids(self) -> tuple[EntityUID, ...]:
        """Every uid, stored or not."""
        return self.hierarchy + tuple(u for u in self.extra_uids if u not in self.hierarchy)

    @property
    def entity_types(self) -> tuple[str, ...]:
        """Every entity type name, in a stable order."""
        return tuple(dict.fromkeys(u.type for u in self.all_uids))

    @property
    def action_uids(self) -> tuple[EntityUID, ...]:
        """Actions and action groups."""
        return self.actions + self.action_groups

    @property
    def context_type(self) -> Type:
        """The record type of ``context``."""
        return ("Record", tuple(self.context.items()))


def _uids(type_name: str, *ids: str) -> tuple[EntityUID, ...]:
    return tuple(EntityUID(type_name, i) for i in ids)


META = record_of(level=LONG, label=STRING, inner=record_of(ok=BOOL, n=LONG))

DEFAULT_UNIVERSE = Universe(
    principals=_uids("User", "alice", "bob", "") + _uids("NS::Bot", "b1"),
    resources=_uids("NS::Doc", "d1", "d2", 'we"ird'),
    actions=_uids("Action", "read", "write", "delete") + _uids("NS::Action", "sync"),
    groups=_uids("Group", "staff", "admins"),
    containers=_uids("NS::Folder", "pub", "root"),
    action_groups=_uids("Action", "readOnly", "all"),
    extra_uids=_uids("User", "ghost", "tab\tü\n")
    + _uids("NS::Doc", "missing")
    + _uids("Other", "x"),
    attributes={
        "name": STRING,
        "age": LONG,
        "active": BOOL,
        "owner": ENTITY,
        "friends": set_of(ENTITY),
        "labels": set_of(STRING),
        "meta": META,
        "addr": IPADDR,
        "amount": DECIMAL,
        "created": DATETIME,
        "ttl": DURATION,
        "a b": LONG,  # not an identifier: printed as `["a b"]`
        "if": BOOL,  # a reserved word: only reachable as `["if"]` / `has "if"`
    },
    tags={"env": STRING, "level": LONG, "peer": ENTITY},
    context={
        "flag": BOOL,
        "n": LONG,
        "s": STRING,
        "who": ENTITY,
        "nums": set_of(LONG),
        "rec": record_of(level=LONG, label=STRING),
        "src": IPADDR,
        "amt": DECIMAL,
        "now": DATETIME,
        "dur": DURATION,
        "principal": BOOL,  # not reserved: `context.principal` is fine
    },
)
"""The universe used when a strategy is not given one."""


def universe_for(
    *policy_sets: PolicySet | Sequence[Policy], base: Universe = DEFAULT_UNIVERSE
) -> Universe:
    """A universe covering everything the given policies mention, merged into ``base``.

    Entity uids in scopes and literals become storable entities (``Action`` types as actions);
    every entity type gets an id; attribute names, ``getTag``/``hasTag`` keys and ``context``
    keys the policies use are added with type ``ANY`` (values of every type are generated).
    """
    uids: dict[EntityUID, None] = {}
    types: dict[str, None] = {}
    attrs: dict[str, Type] = dict(base.attributes)
    tags: dict[str, Type] = dict(base.tags)
    ctx: dict[str, Type] = dict(base.context)
    strings: dict[str, None] = dict.fromkeys(base.strings)

    def visit(e: Expr) -> None:
        match e:
            case Lit(value=EntityUID() as uid):
                uids[uid] = None
            case Lit(value=str() as s):
                strings[s] = None
            case GetAttr(expr=Variable(var=Var.CONTEXT), attr=a):
                ctx.setdefault(a, ANY)
            case GetAttr(attr=a):
                attrs.setdefault(a, ANY)
            case Has(expr=Variable(var=Var.CONTEXT), path=path):
                ctx.setdefault(path[0], ANY)
                for a in path[1:]:
                    attrs.setdefault(a, ANY)
            case Has(path=path):
                for a in path:
                    attrs.setdefault(a, ANY)
            case Is(entity_type=t):
                types[t] = None
            case MethodCall(name="getTag" | "hasTag", args=(Lit(value=str() as k),)):
                tags.setdefault(k, ANY)

    for ps in policy_sets:
        for p in ps:
            for scope in (p.principal, p.action, p.resource):
                if isinstance(scope.entity, EntityUID):
                    uids[scope.entity] = None
                uids.update(dict.fromkeys(scope.entities))
                if scope.entity_type:
                    types[scope.entity_type] = None
            for c in p.conditions:
                for node in walk(c.body):
                    visit(node)
    known = set(base.all_uids)
    new = [u for u in uids if u not in known]
    for t in types:
        if not any(u.type == t for u in (*known, *new)):
            new.append(EntityUID(t, "x"))
    new_actions = tuple(u for u in new if is_action_type(u.type))
    new_others = tuple(u for u in new if not is_action_type(u.type))
    return Universe(
        principals=base.principals + new_others,
        resources=base.resources + new_others,
        actions=base.actions + new_actions,
        groups=base.groups,
        containers=base.containers,
        action_groups=base.action_groups,
        extra_uids=base.extra_uids,
        attributes=attrs,
        tags=tags,
        context=ctx,
        strings=tuple(strings),
    )
