"""The policy AST: frozen dataclasses and enums. Imports nothing from later stages.

Every node carries an optional :class:`~cedarlite.source.Span` that equality ignores, so two
trees parsed from differently formatted text compare equal. Surface sugar that changes how a
policy reads (``!=``, ``>``, ``>=``, ``is ... in``, dotted ``has``, ``unless``) is kept in the
tree so the formatter can print it back; the evaluator gives each its Cedar meaning.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from enum import Enum
from operator import attrgetter
from types import MappingProxyType
from typing import Any, ClassVar

from ..data.values import EntityUID

# RESERVED ... is_valid_type_name live in cedarlite.lexical now; still importable from here.
from ..lexical import (  # noqa: F401  (re-exports for code written against cedarlite.lang.ast)
    RESERVED,
    WILDCARD,
    PatternElem,
    is_action_type,
    is_valid_ident,
    is_valid_type_name,
)
from ..source import Span


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


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Expr:
    """Base of all expression nodes.

    Equality, hashing, ``repr`` and pickling work on the whole tree without recursion (any
    depth is fine); equality and hashing ignore spans, and compare literal values with Cedar's
    equality (``true`` is not ``1``).
    """

    span: Span | None = field(default=None, kw_only=True, compare=False, repr=False)
    # The hash, computed on first use (0: not yet); nodes are immutable.
    _hash: int = field(default=0, init=False, compare=False, repr=False)

    def __eq__(self, other: object) -> bool:
        return same_tree(self, other)

    def __ne__(self, other: object) -> bool:
        return not same_tree(self, other)

    def __hash__(self) -> int:
        return self._hash or _hash_tree(self)

    def __repr__(self) -> str:
        return _repr_tree(self)

    def __reduce__(self) -> tuple[Any, ...]:
        return _unflatten, (_flatten(self),)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Lit(Expr):
    """A literal: ``true``, ``42``, ``"s"`` or an entity reference ``User::"alice"``."""

    value: bool | int | str | EntityUID


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Variable(Expr):
    """``principal``, ``action``, ``resource`` or ``context``."""

    var: Var


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Slot(Expr):
    """A template slot, only allowed in scopes."""

    slot: SlotId


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Unary(Expr):
    """``!e`` or ``-e``."""

    op: UnaryOp
    arg: Expr


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Binary(Expr):
    """``left op right`` for a relation (``==``, ``!=``, ``<``, ``<=``, ``>``, ``>=``, ``in``).

    Arithmetic is :class:`Arith`, ``&&``/``||`` are :class:`And`/:class:`Or`.
    """

    op: BinOp
    left: Expr
    right: Expr

    def __post_init__(self) -> None:
        if self.op not in RELATIONS:
            raise ValueError(f"`{self.op.value}` is arithmetic: build an `Arith` node")


def _flatten_left(node: Expr, operands: tuple[Expr, ...]) -> tuple[Expr, ...]:
    """``operands`` with a first operand of ``node``'s own kind spliced in (``(a && b) && c``
    is the chain ``a && b && c``, which is how the parser reads it), checked non-trivial."""
    if len(operands) < 2:
        raise ValueError(f"`{type(node).__name__}` needs at least two operands")
    first = operands[0]
    if first.__class__ is node.__class__:
        return (*first.operands, *operands[1:])  # type: ignore[attr-defined]
    return operands


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class And(Expr):
    """``a && b && ...``: evaluated left to right, stopping at the first ``false``.

    A chain is one node however long (it is never nested by its length); ``a && (b && c)``
    keeps its parenthesized operand as a nested node.
    """

    operands: tuple[Expr, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "operands", _flatten_left(self, tuple(self.operands)))


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Or(Expr):
    """``a || b || ...``: evaluated left to right, stopping at the first ``true``."""

    operands: tuple[Expr, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "operands", _flatten_left(self, tuple(self.operands)))


ADDITIVE = frozenset({BinOp.ADD, BinOp.SUB})
"""The operators of an additive :class:`Arith` chain (``*`` chains are multiplicative)."""


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Arith(Expr):
    """``e0 op1 e1 op2 e2 ...``, left-associative checked arithmetic: ``ops[i]`` combines the
    result so far with ``operands[i + 1]``.

    A chain holds ``+``/``-`` only or ``*`` only (``a + b * c`` nests the ``*`` chain), so
    that it prints back as written.
    """

    operands: tuple[Expr, ...]
    ops: tuple[BinOp, ...]

    def __post_init__(self) -> None:
        operands, ops = tuple(self.operands), tuple(self.ops)
        additive = bool(ops) and ops[0] in ADDITIVE
        if len(ops) != len(operands) - 1 or any(
            op not in ADDITIVE if additive else op is not BinOp.MUL for op in ops
        ):
            raise ValueError("an `Arith` chain needs one `+`/`-` or `*` between its operands")
        first = operands[0]
        if first.__class__ is Arith and (first.ops[0] in ADDITIVE) == additive:
            operands = (*first.operands, *operands[1:])
            ops = (*first.ops, *ops)
        object.__setattr__(self, "operands", operands)
        object.__setattr__(self, "ops", ops)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class If(Expr):
    """``if cond then then_ else else_``."""

    cond: Expr
    then_: Expr
    else_: Expr


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class GetAttr(Expr):
    """``e.attr`` or ``e["attr"]``."""

    expr: Expr
    attr: str


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Has(Expr):
    """``e has a`` or the extended form ``e has a.b.c`` (``path`` has one or more names)."""

    expr: Expr
    path: tuple[str, ...]


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Like(Expr):
    """``e like "pat*tern"``: ``pattern`` is a tuple of literal strings and :data:`WILDCARD`."""

    expr: Expr
    pattern: tuple[PatternElem, ...]


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Is(Expr):
    """``e is T`` or ``e is T in x``."""

    expr: Expr
    entity_type: str
    in_expr: Expr | None = None


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class MethodCall(Expr):
    """``receiver.name(args)``: built-in set/tag/string methods and extension methods."""

    receiver: Expr
    name: str
    args: tuple[Expr, ...]


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Call(Expr):
    """``name(args)``: an extension function (``decimal``, ``ip``, ``datetime``, ``duration``)."""

    name: str
    args: tuple[Expr, ...]


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class SetLit(Expr):
    """``[e1, e2, ...]``."""

    elements: tuple[Expr, ...]


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class RecordLit(Expr):
    """``{k1: e1, k2: e2, ...}`` (keys are unique)."""

    entries: tuple[tuple[str, Expr], ...]


# ---------------------------------------------------------------------------------------------
# Whole-tree operations without recursion: equality, hashing, repr, pickling.


_FIELDS: dict[type, tuple[str, ...]] = {}


def _fields(cls: type) -> tuple[str, ...]:
    """The fields of a node class, span excluded."""
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(f.name for f in fields(cls) if f.init and f.name != "span")
    return names


class _Hole:
    """Stands for a sub-expression in a node's flattened fields (see :func:`_flatten`)."""

    def __repr__(self) -> str:
        return "HOLE"

    def __reduce__(self) -> str:
        return "_HOLE"


_HOLE = _Hole()


def _holes(value: Any) -> Any:
    """A field value with every sub-expression replaced by ``_HOLE``."""
    if isinstance(value, Expr):
        return _HOLE
    if value.__class__ is tuple:
        return tuple(_holes(item) for item in value)  # field tuples nest at most twice
    return value


def _fill(value: Any, results: Iterator[Any]) -> Any:
    """The inverse of :func:`_holes`: each ``_HOLE`` replaced by the next of ``results``."""
    if value is _HOLE:
        return next(results)
    if value.__class__ is tuple:
        return tuple(_fill(item, results) for item in value)
    return value


def postorder(root: Expr) -> Iterator[Expr]:
    """Every node of the tree, children before their parent, left to right (iterative: any
    depth is fine)."""
    stack: list[tuple[Expr, tuple[Expr, ...] | None]] = [(root, None)]
    while stack:
        node, kids = stack.pop()
        if kids is None:
            kids = children(node)
            if kids:
                stack.append((node, kids))
                stack.extend((kid, None) for kid in reversed(kids))
                continue
        yield node


def _pop(stack: list[Any], count: int) -> Iterator[Any]:
    """The last ``count`` items of ``stack``, removed from it, in order."""
    items = stack[len(stack) - count :]
    del stack[len(stack) - count :]
    return iter(items)


def _hash_tree(root: Expr) -> int:
    """Hash every node of the tree not hashed yet, children first (each once: hashes are
    cached on the nodes). Linear in the nodes not hashed yet, a subtree shared by several
    parents included."""
    if root._hash:
        return root._hash
    # Top-down, breadth first: reversed, every node comes after all the nodes inside it.
    order = [root]
    expanded: set[int] = set()
    table = CHILDREN_OF
    i = 0
    while i < len(order):
        node = order[i]
        i += 1
        if not node._hash:
            kids = table.get(node.__class__, generic_children)(node)
            if kids and id(node) not in expanded:
                expanded.add(id(node))
                order += kids
    keys = _HASH_KEYS
    setattr_ = object.__setattr__
    for node in reversed(order):
        if not node._hash:
            key = keys.get(node.__class__)
            own = key(node) if key is not None else _generic_hash_key(node)
            setattr_(node, "_hash", hash(own) or 1)
    return root._hash


def _generic_hash_key(node: Expr) -> tuple[Any, ...]:
    """The hash key of a node of a class of another module (read from its fields)."""
    own = tuple(_holes(getattr(node, n)) for n in _fields(node.__class__))
    return node.__class__, own, tuple(kid._hash for kid in children(node))


class _Out(str):
    """Text written as is by :func:`_repr_tree` (other values are written by their repr)."""


def _repr_tree(root: Expr) -> str:
    """The dataclass-style repr of a tree, written top-down on an explicit stack: any depth,
    in time linear in the text."""
    out: list[str] = []
    stack: list[Any] = [root]
    while stack:
        item = stack.pop()
        if item.__class__ is _Out:
            out.append(item)
        elif isinstance(item, Expr):
            pieces: list[Any] = [_Out(f"{type(item).__name__}(")]
            for i, name in enumerate(_fields(item.__class__)):
                pieces += [_Out(f"{', ' if i else ''}{name}="), getattr(item, name)]
            stack.append(_Out(")"))
            stack.extend(reversed(pieces))
        elif item.__class__ is tuple:
            pieces = [_Out("(")]
            for i, value in enumerate(item):
                pieces += [_Out(", ") if i else _Out(""), value]
            stack.append(_Out(",)" if len(item) == 1 else ")"))
            stack.extend(reversed(pieces))
        else:
            out.append(repr(item))
    return "".join(out)


def _flatten(root: Expr) -> tuple[tuple[Any, ...], ...]:
    """The tree as a flat post-order list of ``(class, fields with holes, span)``."""
    return tuple(
        (
            node.__class__,
            tuple(_holes(getattr(node, n)) for n in _fields(node.__class__)),
            node.span,
        )
        for node in postorder(root)
    )


def _unflatten(entries: tuple[tuple[Any, ...], ...]) -> Expr:
    """Rebuild a tree from :func:`_flatten`'s list, without recursion."""
    built: list[Expr] = []
    for cls, values, span in entries:
        kids = _pop(built, _count_holes(values))
        built.append(cls(*(_fill(v, kids) for v in values), span=span))
    return built[0]


def _count_holes(value: Any) -> int:
    if value is _HOLE:
        return 1
    if value.__class__ is tuple:
        return sum(_count_holes(v) for v in value)
    return 0


def same_tree(a: Any, b: Any) -> bool:
    """Structural equality of two expressions, spans ignored, without recursion."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if x is y:
            continue
        cls = x.__class__
        if cls is not y.__class__:
            return False
        if isinstance(x, Expr):
            if x._hash and y._hash and x._hash != y._hash:
                return False
            stack.extend((getattr(x, n), getattr(y, n)) for n in _fields(cls))
        elif cls is tuple:
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y, strict=True))
        elif x != y:
            return False
    return True


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
    direct = CHILDREN_OF.get(node.__class__)
    return direct(node) if direct is not None else generic_children(node)


_NO_CHILDREN: tuple[Expr, ...] = ()
CHILDREN_OF: dict[type, Callable[[Any], tuple[Expr, ...]]] = {
    Lit: lambda e: _NO_CHILDREN,
    Variable: lambda e: _NO_CHILDREN,
    Slot: lambda e: _NO_CHILDREN,
    Unary: lambda e: (e.arg,),
    Binary: lambda e: (e.left, e.right),
    And: lambda e: e.operands,
    Or: lambda e: e.operands,
    Arith: lambda e: e.operands,
    If: lambda e: (e.cond, e.then_, e.else_),
    GetAttr: lambda e: (e.expr,),
    Has: lambda e: (e.expr,),
    Like: lambda e: (e.expr,),
    Is: lambda e: (e.expr,) if e.in_expr is None else (e.expr, e.in_expr),
    MethodCall: lambda e: (e.receiver, *e.args),
    Call: lambda e: e.args,
    SetLit: lambda e: e.elements,
    RecordLit: lambda e: tuple(value for _, value in e.entries),
}


_HASH = attrgetter("_hash")
# What a node's hash is made of: its class, its own fields (spans aside) and its children's
# hashes (set before it is hashed). Equal trees give equal keys (a literal's `true` and `1`
# collide, and `same_tree` tells them apart); enum members by their value (an enum's own
# `__hash__` is Python code).
_HASH_KEYS: dict[type, Callable[[Any], tuple[Any, ...]]] = {
    Lit: lambda e: (Lit, e.value),
    Variable: lambda e: (Variable, e.var._value_),
    Slot: lambda e: (Slot, e.slot._value_),
    Unary: lambda e: (Unary, e.op._value_, e.arg._hash),
    Binary: lambda e: (Binary, e.op._value_, e.left._hash, e.right._hash),
    And: lambda e: (And, *map(_HASH, e.operands)),
    Or: lambda e: (Or, *map(_HASH, e.operands)),
    Arith: lambda e: (Arith, *map(_HASH, e.operands), *[op._value_ for op in e.ops]),
    If: lambda e: (If, e.cond._hash, e.then_._hash, e.else_._hash),
    GetAttr: lambda e: (GetAttr, e.attr, e.expr._hash),
    Has: lambda e: (Has, e.path, e.expr._hash),
    Like: lambda e: (Like, e.pattern, e.expr._hash),
    Is: lambda e: (Is, e.entity_type, e.expr._hash, e.in_expr and e.in_expr._hash),
    MethodCall: lambda e: (MethodCall, e.name, e.receiver._hash, *map(_HASH, e.args)),
    Call: lambda e: (Call, e.name, *map(_HASH, e.args)),
    SetLit: lambda e: (SetLit, *map(_HASH, e.elements)),
    RecordLit: lambda e: (RecordLit, *[(key, value._hash) for key, value in e.entries]),
}


def generic_children(node: Expr) -> tuple[Expr, ...]:
    """:func:`children` for a node class of another module (read from its fields); with
    :data:`CHILDREN_OF`, for walks that inline :func:`children` (one call less per node)."""
    out: list[Expr] = []
    for name in _fields(node.__class__):
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


def depth(expr: Expr) -> int:
    """How deeply ``expr`` nests: 1 for a leaf, one more than its deepest operand otherwise
    (a chain is one level however long). Iterative: any depth is fine."""
    deepest = 0
    stack = [(expr, 1)]
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children(node))
    return deepest


# ---------------------------------------------------------------------------------------------
# Passes over expressions, one method per node class

#: Every expression node class.
EXPR_CLASSES: tuple[type[Expr], ...] = (
    Lit, Variable, Slot, Unary, Binary, And, Or, Arith, If, GetAttr, Has, Like, Is, MethodCall,
    Call, SetLit, RecordLit,
)  # fmt: skip


def visit_name(cls: type[Expr]) -> str:
    """The method that handles ``cls`` in an :class:`ExprVisitor`: ``visit_get_attr`` for
    :class:`GetAttr`, ``visit_set_lit`` for :class:`SetLit`..."""
    return "visit_" + re.sub(r"(?<!^)(?=[A-Z])", "_", cls.__name__).lower()


class ExprVisitor:
    """The base of the passes that handle each expression node class with a method of their
    own (the code generator, the type checker): ``VISIT`` maps every node class to its
    ``visit_...`` method (:func:`visit_name`), made when the subclass is defined. A node class
    the subclass handles before dispatching is listed in ``ELSEWHERE``; any other node class
    without a method is a ``TypeError`` at import, so no pass can forget a node class.

    (The printer and the EST read nodes with ``match``, where the shape of a node, not only its
    class, chooses the output.)
    """

    ELSEWHERE: ClassVar[tuple[type[Expr], ...]] = ()
    VISIT: ClassVar[dict[type[Expr], Callable[..., Any]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        table: dict[type[Expr], Callable[..., Any]] = {}
        for node in EXPR_CLASSES:
            method = getattr(cls, visit_name(node), None)
            if method is not None:
                table[node] = method
            elif node not in cls.ELSEWHERE:
                raise TypeError(f"{cls.__name__} has no {visit_name(node)} for {node.__name__}")
        cls.VISIT = table
