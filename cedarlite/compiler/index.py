"""The scope index: which policies' scopes a request satisfies, as a bitset, in a few lookups.

Policy ``i`` is bit ``i``. For each scope variable (principal, action, resource) the index keeps
one mask per constraint key; a request's mask for that variable ORs the masks of the keys the
request entity satisfies — itself (``==``), itself and each ancestor (``in``), its type
(``is``), both (``is ... in``) — plus the policies with no constraint. The AND of the three
masks is exactly the set of policies whose scope holds: scope constraints never error, so the
index proves every bit it sets and clears.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from ..values import EntityUID

if TYPE_CHECKING:
    from ..ast import Policy, Scope


def make_mask(indices: Iterable[int], size: int) -> int:
    """An int with the given bits set."""
    buf = bytearray((size + 7) // 8)
    for i in indices:
        buf[i >> 3] |= 1 << (i & 7)
    return int.from_bytes(buf, "little")


def compact(mask: int) -> tuple[int, int]:
    """``(shift, mask >> shift)`` with ``shift`` the lowest set bit: a one-policy key then costs
    a few bytes instead of ``n/8`` (stored masks would otherwise grow with the whole set)."""
    shift = (mask & -mask).bit_length() - 1 if mask else 0
    return shift, mask >> shift


def iter_bits(mask: int) -> list[int]:
    """The indices of the set bits of ``mask``, ascending."""
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


class VarIndex:
    """The masks for one scope variable (keyed masks stored :func:`compact`)."""

    __slots__ = ("any", "eq", "in_", "is_", "is_in")

    def __init__(self, policies: Sequence[Policy], var: str) -> None:
        """Index the ``var`` scopes of ``policies`` (loading from a cache skips this)."""
        from ..ast import ScopeOp, SlotId  # building only: deciding needs no AST

        size = len(policies)
        any_: list[int] = []
        eq: dict[EntityUID, list[int]] = defaultdict(list)
        in_: dict[EntityUID, list[int]] = defaultdict(list)
        is_: dict[str, list[int]] = defaultdict(list)
        is_in: dict[tuple[str, EntityUID], list[int]] = defaultdict(list)
        for i, policy in enumerate(policies):
            scope: Scope = getattr(policy, var)
            entity = scope.entity
            # INVARIANT: only static and linked policies are indexed (no slots remain).
            assert not isinstance(entity, SlotId), "templates must be linked before indexing"
            match scope.op:
                case ScopeOp.ANY:
                    any_.append(i)
                case ScopeOp.EQ:
                    eq[entity].append(i)  # type: ignore[index]
                case ScopeOp.IN:
                    in_[entity].append(i)  # type: ignore[index]
                case ScopeOp.IN_SET:
                    for target in dict.fromkeys(scope.entities):
                        in_[target].append(i)
                case ScopeOp.IS:
                    is_[scope.entity_type].append(i)  # type: ignore[index]
                case ScopeOp.IS_IN:
                    is_in[(scope.entity_type, entity)].append(i)  # type: ignore[index]
        self.any = make_mask(any_, size)
        self.eq = {k: compact(make_mask(v, size)) for k, v in eq.items()}
        self.in_ = {k: compact(make_mask(v, size)) for k, v in in_.items()}
        self.is_ = {k: compact(make_mask(v, size)) for k, v in is_.items()}
        self.is_in = {k: compact(make_mask(v, size)) for k, v in is_in.items()}

    def mask(self, uid: EntityUID, ancestors: frozenset[EntityUID]) -> int:
        """The policies whose constraint on this variable holds for ``uid``."""
        m = self.any
        hit = self.eq.get(uid)
        if hit:
            m |= hit[1] << hit[0]
        in_ = self.in_
        if in_:
            hit = in_.get(uid)
            if hit:
                m |= hit[1] << hit[0]
            for anc in ancestors:
                hit = in_.get(anc)
                if hit:
                    m |= hit[1] << hit[0]
        if self.is_:
            hit = self.is_.get(uid.type)
            if hit:
                m |= hit[1] << hit[0]
        if self.is_in:
            is_in, t = self.is_in, uid.type
            hit = is_in.get((t, uid))
            if hit:
                m |= hit[1] << hit[0]
            for anc in ancestors:
                hit = is_in.get((t, anc))
                if hit:
                    m |= hit[1] << hit[0]
        return m
