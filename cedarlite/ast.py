"""The policy AST: frozen dataclasses and enums. Imports nothing from later stages.

Every node carries an optional :class:`~cedarlite.source.Span` that equality ignores, so two
trees parsed from differently formatted text compare equal. Surface sugar that changes how a
policy reads (``!=``, ``>``, ``>=``, ``is ... in``, dotted ``has``, ``unless``) is kept in the
tree so the formatter can print it back; the evaluator gives each its Cedar meaning.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum
from types import MappingProxyType

# RESERVED ... is_valid_type_name live in cedarlite.lexical now; still importable from here.
from .lexical import (  # noqa: F401  (re-exports for code written against cedarlite.ast)
    RESERVED,
    WILDCARD,
    PatternElem,
    _Wildcard,
    is_action_type,
    is_valid_ident,
    is_valid_type_name,
)
from .source import Span
from .values import EntityUID


class Effect(Enum):
    """What a satisfied policy does."""

    PERMIT = "permit"
    FORBID = "forbid"


class Var(Enum):
    """The four request variables."""

    PRINCIPAL = "principal"
    ACTION = "action"
    RESOURCE = "resource"
    CONTEXT = "context"


class SlotId(Enum):
    """Template slots."""

    PRINCIPAL = "?principal"
    RESOURCE = "?resource"


class BinOp(Enum):
    """Binary operators (relations and arithmetic). ``&&``/``||`` are :class:`And`/:class:`Or`."""

    EQ = "=="
    NEQ = "!="
    LT = "<"
    LE = "<="
    GT = ">"
    GE = ">="
    IN = "in"
    ADD = "+"
    SUB = "-"
    MUL = "*"


RELATIONS = frozenset({BinOp.EQ, BinOp.NEQ, BinOp.LT, BinOp.LE, BinOp.GT, BinOp.GE, BinOp.IN})


class UnaryOp(Enum):
    """Unary operators."""

    NOT = "!"
    NEG = "-"


@dataclass(frozen=True, slots=True)
class Expr:
    """Base of all expression nodes."""

    span: Span | None = field(default=None, kw_only=True, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Lit(Expr):
    """A literal: ``true``, ``42``, ``"s"`` or an entity reference ``User::"alice"``."""

    value: bool | int | str | EntityUID


@dataclass(frozen=True, slots=True)
class Variable(Expr):
    """``principal``, ``action``, ``resource`` or ``context``."""

    var: Var


@dataclass(frozen=True, slots=True)
class Slot(Expr):
    """A template slot, only allowed in scopes."""

    slot: SlotId


@dataclass(frozen=True, slots=True)
class Unary(Expr):
    """``!e`` or ``-e``."""

    op: UnaryOp
    arg: Expr


@dataclass(frozen=True, slots=True)
class Binary(Expr):
    """``left op right`` for relations and arithmetic."""

    op: BinOp
    left: Expr
    right: Expr


@dataclass(frozen=True, slots=True)
class And(Expr):
    """``left && right`` (short-circuit)."""

    left: Expr
    right: Expr


@dataclass(frozen=True, slots=True)
class Or(Expr):
    """``left || right`` (short-circuit)."""

    left: Expr
    right: Expr


@dataclass(frozen=True, slots=True)
class If(Expr):
    """``if cond then then_ else else_``."""

    cond: Expr
    then_: Expr
    else_: Expr


@dataclass(frozen=True, slots=True)
class GetAttr(Expr):
    """``e.attr`` or ``e["attr"]``."""

    expr: Expr
    attr: str


@dataclass(frozen=True, slots=True)
class Has(Expr):
    """``e has a`` or the extended form ``e has a.b.c`` (``path`` has one or more names)."""

    expr: Expr
    path: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Like(Expr):
    """``e like "pat*tern"``: ``pattern`` is a tuple of literal strings and :data:`WILDCARD`."""

    expr: Expr
    pattern: tuple[PatternElem, ...]


@dataclass(frozen=True, slots=True)
class Is(Expr):
    """``e is T`` or ``e is T in x``."""

    expr: Expr
    entity_type: str
    in_expr: Expr | None = None


@dataclass(frozen=True, slots=True)
class MethodCall(Expr):
    """``receiver.name(args)``: built-in set/tag/string methods and extension methods."""

    receiver: Expr
    name: str
    args: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Call(Expr):
    """``name(args)``: an extension function (``decimal``, ``ip``, ``datetime``, ``duration``)."""

    name: str
    args: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class SetLit(Expr):
    """``[e1, e2, ...]``."""

    elements: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class RecordLit(Expr):
    """``{k1: e1, k2: e2, ...}`` (keys are unique)."""

    entries: tuple[tuple[str, Expr], ...]


# ---------------------------------------------------------------------------------------------
# Scopes and policies


class ScopeOp(Enum):
    """The shape of a principal/resource/action scope constraint."""

    ANY = "any"  # principal
    EQ = "=="  # principal == E
    IN = "in"  # principal in E
    IS = "is"  # principal is T
    IS_IN = "is in"  # principal is T in E
    IN_SET = "in [...]"  # action in [E1, ...] (action scope only)


@dataclass(frozen=True, slots=True)
class Scope:
    """One scope constraint.

    ``entity`` holds the entity (or slot) for ``==``/``in``/``is in``; ``entities`` the list of
    ``action in [...]``; ``entity_type`` the type of ``is``/``is in``.
    """

    var: Var
    op: ScopeOp = ScopeOp.ANY
    entity: EntityUID | SlotId | None = None
    entity_type: str | None = None
    entities: tuple[EntityUID, ...] = ()
    span: Span | None = field(default=None, kw_only=True, compare=False, repr=False)

    @property
    def slot(self) -> SlotId | None:
        """The template slot this constraint uses, if any."""
        return self.entity if isinstance(self.entity, SlotId) else None


class ConditionKind(Enum):
    """``when`` or ``unless``."""

    WHEN = "when"
    UNLESS = "unless"


@dataclass(frozen=True, slots=True)
class Condition:
    """A ``when { ... }`` or ``unless { ... }`` clause."""

    kind: ConditionKind
    body: Expr
    span: Span | None = field(default=None, kw_only=True, compare=False, repr=False)


def _freeze_annotations(value: Mapping[str, str] | None) -> Mapping[str, str]:
    return MappingProxyType(dict(value or {}))


@dataclass(frozen=True, slots=True)
class Policy:
    """A policy or a template (one with slots), or a template-linked policy.

    ``id`` is positional (``policy0``, ...) for parsed text unless set otherwise; ``@id``
    annotations do not change it. A linked policy has its slots replaced by entities and records
    ``template_id`` and ``links``.
    """

    id: str
    effect: Effect
    principal: Scope
    action: Scope
    resource: Scope
    conditions: tuple[Condition, ...] = ()
    annotations: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}), hash=False)
    template_id: str | None = None
    links: Mapping[str, EntityUID] = field(default_factory=lambda: MappingProxyType({}), hash=False)
    span: Span | None = field(default=None, kw_only=True, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.annotations, MappingProxyType):
            object.__setattr__(self, "annotations", _freeze_annotations(self.annotations))
        if not isinstance(self.links, MappingProxyType):
            object.__setattr__(self, "links", MappingProxyType(dict(self.links)))

    @property
    def slots(self) -> tuple[SlotId, ...]:
        """The slots of a template (empty for a static or linked policy)."""
        return tuple(s for s in (self.principal.slot, self.resource.slot) if s is not None)

    @property
    def is_template(self) -> bool:
        """True when the policy has slots and is only evaluated once linked."""
        return bool(self.slots)


def condition_expr(cond: Condition) -> Expr:
    """The boolean expression a condition contributes: the body, negated for ``unless``."""
    if cond.kind is ConditionKind.WHEN:
        return cond.body
    return Unary(UnaryOp.NOT, cond.body, span=cond.body.span)


def children(node: Expr) -> tuple[Expr, ...]:
    """The direct sub-expressions of an expression node, in source order."""
    out: list[Expr] = []
    for name in node.__dataclass_fields__:
        value = getattr(node, name)
        if isinstance(value, Expr):
            out.append(value)
        elif isinstance(value, tuple):
            for item in value:
                if isinstance(item, Expr):
                    out.append(item)
                elif isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], Expr):
                    out.append(item[1])  # a record literal's (key, value)
    return tuple(out)


def walk(expr: Expr) -> Iterator[Expr]:
    """``expr`` and every expression inside it, pre-order (iterative: any depth is fine)."""
    stack = [expr]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(children(node)))
