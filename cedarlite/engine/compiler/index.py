"""The scope index: a decision tree from a request's entities to the policies whose scopes hold.

The tree has three levels, the action first, then the principal, then the resource. At each
level a :class:`Node` keeps its children by the constraint of that scope variable: no
constraint (``any``), ``==`` an entity, ``in`` an entity (``action in [...]`` is an ``in`` per
listed entity), ``is`` a type, ``is`` a type ``in`` an entity. A request entity reaches the
children whose constraint it satisfies: itself (``==``), itself and each of its ancestors
(``in``), its type (``is``), both (``is ... in``), and ``any``. The third level's children are
:class:`Leaf` groups: policies with the same three constraints, whose conditions are compiled
into one function (:mod:`.codegen`).

So a request visits only the nodes of constraints it satisfies, and every policy of every leaf
it reaches has a scope that holds (scope constraints never error): the index proves what it
selects and what it leaves out. A policy sits in one leaf, or one per entity of its
``action in [...]`` list, so the tree is linear in the policy text.

Cost per request: at each node visited, one lookup per kind of constraint the node has, times
the entity and its ancestors for ``in`` (or once per child, when the node has fewer ``in``
children than the entity has ancestors).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ...data.values import EntityUID

if TYPE_CHECKING:
    from ...lang.ast import Policy, Scope

LEAF_SIZE = 64
"""Conditional policies per leaf function at most: a larger group of policies with the same
scope constraints is split, so that generated functions and their bitmasks stay small."""

_NO_ANCESTORS: frozenset[Any] = frozenset()


def iter_bits(mask: int) -> list[int]:
    """The indices of the set bits of ``mask``, ascending."""
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


class Leaf:
    """Policies with the same scope constraints: their positions in the policy set, which of
    them are forbids and which hold unconditionally (bitmasks over the leaf's own positions),
    and the generated function that evaluates the conditions of the others.

    ``fn(P, A, R, C, E, errors)`` returns the bitmask of the conditional policies satisfied
    and appends ``(position, message)`` to ``errors`` for each one that fails to evaluate.
    """

    __slots__ = ("base", "fn", "forbids", "index", "source")

    def __init__(
        self, index: tuple[int, ...], base: int, forbids: int, source: tuple[str, Any] | None
    ) -> None:
        self.index = index
        self.base = base
        self.forbids = forbids
        self.source = source
        self.fn: Callable[..., int] | None = None  # built by the compiled set (see __init__)

    def __getstate__(self) -> tuple[Any, ...]:
        return self.index, self.base, self.forbids, self.source

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        self.index, self.base, self.forbids, self.source = state
        self.fn = None


class Node:
    """One level of the tree: children by constraint (``None`` where the node has none).

    ``flat`` is the leaf group that every request reaching this node reaches, when the node
    and every node below it have no constraint but ``any`` (policies whose principal and
    resource are unconstrained, as most agent tool policies are): set by :func:`link_flat`,
    it lets a decision skip the levels below (``None`` otherwise; derived, not pickled).
    """

    __slots__ = ("any", "eq", "flat", "in_", "is_", "is_in")

    def __init__(self) -> None:
        self.any: Any = None
        self.eq: dict[EntityUID, Any] | None = None
        self.in_: dict[EntityUID, Any] | None = None
        self.is_: dict[str, Any] | None = None
        self.is_in: dict[str, dict[EntityUID, Any]] | None = None
        self.flat: tuple[Leaf, ...] | None = None

    def __getstate__(self) -> tuple[Any, ...]:
        return self.any, self.eq, self.in_, self.is_, self.is_in

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        self.any, self.eq, self.in_, self.is_, self.is_in = state
        self.flat = None

    def match(self, uid: EntityUID, ancestors: frozenset[EntityUID], out: list[Any]) -> None:
        """Append to ``out`` the children whose constraint ``uid`` (with ``ancestors``)
        satisfies (a child reached twice, as by an entity in a cycle of parents, is decided
        twice: deny-overrides counts each policy once)."""
        if self.any is not None:
            out.append(self.any)
        d: Any = self.eq
        if d is not None:
            hit = d.get(uid)
            if hit is not None:
                out.append(hit)
        d = self.in_
        if d is not None:
            _match_in(d, uid, ancestors, out)
        d = self.is_
        if d is not None:
            hit = d.get(uid.type)
            if hit is not None:
                out.append(hit)
        d = self.is_in
        if d is not None:
            d = d.get(uid.type)
            if d is not None:
                _match_in(d, uid, ancestors, out)


def _match_in(
    children: dict[EntityUID, Any], uid: EntityUID, ancestors: frozenset[EntityUID], out: list
) -> None:
    """The ``in`` children that ``uid`` reaches: itself and its ancestors, looked up from the
    smaller side."""
    hit = children.get(uid)
    if hit is not None:
        out.append(hit)
    if not ancestors:
        return
    if len(ancestors) <= len(children):
        for anc in ancestors:
            hit = children.get(anc)
            if hit is not None:
                out.append(hit)
    else:
        for target, hit in children.items():
            if target in ancestors:
                out.append(hit)


# ---------------------------------------------------------------------------------------------
# Building


def _keys(scope: Scope, ops: Any) -> list[tuple[str, Any]]:
    """The constraint keys of one scope (several for ``action in [...]``); ``ops`` is
    :class:`~cedarlite.lang.ast.ScopeOp` (building only: deciding needs no AST)."""
    op, entity = scope.op, scope.entity
    if op is ops.ANY:
        return [("any", None)]
    # INVARIANT: only static and linked policies are indexed (no slots remain).
    assert entity is None or entity.__class__ is EntityUID, "templates must be linked first"
    if op is ops.EQ:
        return [("eq", entity)]
    if op is ops.IN:
        return [("in", entity)]
    if op is ops.IN_SET:
        return [("in", target) for target in dict.fromkeys(scope.entities)]
    if op is ops.IS:
        return [("is", scope.entity_type)]
    return [("is_in", (scope.entity_type, entity))]


def _node(children: dict[tuple[str, Any], Any]) -> Node:
    node = Node()
    for (kind, key), child in children.items():
        if kind == "any":
            node.any = child
        elif kind == "eq":
            node.eq = node.eq or {}
            node.eq[key] = child
        elif kind == "in":
            node.in_ = node.in_ or {}
            node.in_[key] = child
        elif kind == "is":
            node.is_ = node.is_ or {}
            node.is_[key] = child
        else:
            type_name, target = key
            node.is_in = node.is_in or {}
            node.is_in.setdefault(type_name, {})[target] = child
    return node


def build_tree(
    policies: Sequence[Policy], make_leaves: Callable[[list[int]], tuple[Leaf, ...]]
) -> Node:
    """The tree of ``policies`` (static or linked; templates must be left out).

    ``make_leaves(positions)`` builds the leaves of one group of policies with the same scope
    constraints (positions ascending).
    """
    from ...lang.ast import ScopeOp  # building only: deciding needs no AST

    groups: dict[Any, dict[Any, dict[Any, list[int]]]] = {}
    for i, policy in enumerate(policies):
        principal = _keys(policy.principal, ScopeOp)[0]
        resource = _keys(policy.resource, ScopeOp)[0]
        for action in _keys(policy.action, ScopeOp):
            by_principal = groups.setdefault(action, {}).setdefault(principal, {})
            by_principal.setdefault(resource, []).append(i)
    return _node(
        {
            action: _node(
                {
                    principal: _node(
                        {resource: make_leaves(group) for resource, group in by_res.items()}
                    )
                    for principal, by_res in by_principal.items()
                }
            )
            for action, by_principal in groups.items()
        }
    )


def walk_leaves(root: Node) -> list[Leaf]:
    """Every leaf of the tree, each once, in a stable order."""
    out: dict[int, Leaf] = {}
    level: list[Any] = [root]
    for _ in range(3):
        below: list[Any] = []
        for node in level:
            below += _children(node)
        level = below
    for group in level:
        for leaf in group:
            out.setdefault(id(leaf), leaf)
    return list(out.values())


def link_flat(root: Node) -> None:
    """Set :attr:`Node.flat` on every node of the tree whose subtree is a chain of ``any``."""
    levels: list[list[Node]] = [[root]]
    for _ in range(2):
        levels.append([child for node in levels[-1] for child in _children(node)])
    below_is_group = True
    for level in reversed(levels):  # bottom-up: a node's child is done before the node
        for node in level:
            if node.any is not None and (
                node.eq is None and node.in_ is None and node.is_ is None and node.is_in is None
            ):
                node.flat = node.any if below_is_group else node.any.flat
        below_is_group = False


def _children(node: Node) -> list[Any]:
    out = [node.any] if node.any is not None else []
    for d in (node.eq, node.in_, node.is_):
        if d is not None:
            out += d.values()
    if node.is_in is not None:
        for d in node.is_in.values():
            out += d.values()
    return out
