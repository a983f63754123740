"""The compiler: a policy set as a decision tree whose leaves are generated functions.

A request goes down the scope index (:mod:`.index`), a tree keyed by the action, then the
principal, then the resource, to the leaves of the policies whose scopes hold; each leaf is one
generated function (:mod:`.codegen`) that evaluates the conditions of its policies, reading
each shared attribute once. Answers are identical to the reference interpreter's — decision,
reasons and errors — which property tests check on random policy sets.

The compiled form is built once per :class:`~cedarlite.PolicySet` (immutable) and cached on it;
it does not depend on the entity store, which is consulted per request for ancestors. It holds
no AST, only ids, the tree and the leaves' sources, so it pickles compactly: see :mod:`.cache`
for reusing it across processes.
"""

from __future__ import annotations

import marshal
import sys
from _thread import allocate_lock  # threading.Lock, without importing threading
from collections.abc import Callable, Mapping, Sequence
from types import CodeType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ...data.entities import Entities
from ...data.jsonvalue import plain_record
from ...data.request import SEEN_UIDS, Request, make_request, uid_of
from ...data.response import Decision, PolicyError, Response
from ...data.values import EMPTY_RECORD, EntityUID, Record
from .index import LEAF_SIZE, Leaf, Node, build_tree, iter_bits, link_flat, walk_leaves
from .runtime import build_leaf, make_leaf_factory

if TYPE_CHECKING:
    from cachetools import LRUCache

    from ...lang.ast import Policy

_NO_ANCESTORS: frozenset[Any] = frozenset()
_DENY = Response(Decision.DENY)

DECISION_CACHE_SIZE = 4096
"""Entries of each compiled policy set's decision cache (LRU)."""

OUTCOMES = 4096
"""Responses each compiled policy set keeps by outcome (which policies of which leaves were
satisfied, without errors): a decision whose outcome was seen before returns the same
immutable :class:`~cedarlite.Response` instead of building one."""

FORMAT_VERSION = 9
"""Version of the pickled state; bumped whenever the compiled representation changes (9: its
classes moved to ``cedarlite.engine`` and ``cedarlite.data``, and a pickle names them by module)."""


def _make_leaves(policies: Sequence[Policy]) -> Any:
    """The ``make_leaves`` of :func:`~.index.build_tree` for ``policies``: a group of
    policies with the same scope constraints, as leaves of at most
    :data:`~.index.LEAF_SIZE` conditional policies each."""
    # lazy on purpose: only compiling needs the syntax tree and the code generator; a set loaded
    # from the compile cache needs neither
    from ...lang.ast import Effect
    from .codegen import leaf_source

    forbid = Effect.FORBID
    # Generated sets repeat conditions (the same `when` on a thousand scopes): equal lists
    # of conditions (by value, spans aside) give the same source, made once. Looking one up
    # hashes every node of the conditions, which only pays once there is a second leaf: the
    # first leaf's conditions wait in `first` until then.
    sources: dict[tuple[Any, ...], Any] = {}
    first: list[tuple[tuple[Any, ...], Any]] = []

    def source_of(members: list[Policy]) -> Any:
        key = tuple(p.conditions for p in members)
        if not first:
            first.append((key, leaf_source(members)))
            return first[0][1]
        if not sources:
            sources[first[0][0]] = first[0][1]
        source = sources.get(key)
        if source is None:
            source = sources[key] = leaf_source(members)
        return source

    def leaf(positions: list[int]) -> Leaf:
        members = [policies[i] for i in positions]
        base = forbids = 0
        for j, p in enumerate(members):
            if not p.conditions:
                base |= 1 << j
            if p.effect is forbid:
                forbids |= 1 << j
        if base == (1 << len(members)) - 1:
            return Leaf(tuple(positions), base, forbids, None)
        return Leaf(tuple(positions), base, forbids, source_of(members))

    def make(positions: list[int]) -> tuple[Leaf, ...]:
        conditional = [i for i in positions if policies[i].conditions]
        if len(conditional) <= LEAF_SIZE:
            return (leaf(positions),)
        # Cut after every LEAF_SIZE-th conditional policy (unconditional ones go along).
        at = {i: k for k, i in enumerate(positions)}
        cuts = [at[i] + 1 for i in conditional[LEAF_SIZE - 1 :: LEAF_SIZE]]
        bounds = [0, *cuts[: len(conditional) // LEAF_SIZE - (len(conditional) % LEAF_SIZE == 0)]]
        return tuple(
            leaf(positions[start:end])
            for start, end in zip(bounds, [*bounds[1:], len(positions)], strict=True)
        )

    return make


class CompiledPolicySet:
    """The decision tree of one policy set. Thread-safe; build it with :func:`compiled`."""

    __slots__ = ("_cache", "_lock", "_outcomes", "ids", "leaves", "root")

    def __init__(self, policies: Sequence[Policy]) -> None:
        """Index ``policies`` (static or linked; templates must be left out)."""
        # Building needs the AST and the code generator; deciding (and loading a compiled set
        # from the compile cache) does not, so they are imported in `_make_leaves` only.
        root = build_tree(policies, _make_leaves(policies))
        self.__setstate__(
            {"ids": tuple(p.id for p in policies), "root": root, "leaves": walk_leaves(root)}
        )

    # -- pickling: the state is plain data; leaf functions are rebuilt from their source, or,
    # by the same Python, from their compiled code (marshal), which skips compile() ----------

    def __getstate__(self) -> dict[str, Any]:
        bodies = {leaf.source[0] for leaf in self.leaves if leaf.source is not None}
        return {
            "version": FORMAT_VERSION,
            "ids": self.ids,
            "root": self.root,
            "leaves": self.leaves,
            "python": sys.version,
            "code": marshal.dumps({body: make_leaf_factory(body).__code__ for body in bodies}),
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        if state.get("version", FORMAT_VERSION) != FORMAT_VERSION:
            raise ValueError("compiled policy set from another cedarlite version")
        self.ids: tuple[str, ...] = state["ids"]
        self.root: Node = state["root"]
        self.leaves: list[Leaf] = state["leaves"]
        link_flat(self.root)
        code: dict[str, CodeType] = {}
        if state.get("python") == sys.version:  # marshal's format is the interpreter's own
            code = marshal.loads(state["code"])
        for leaf in self.leaves:
            if leaf.source is not None:
                leaf.fn = build_leaf(leaf.source, leaf.index, code.get(leaf.source[0]))
        self._outcomes: dict[tuple[Any, ...], Response] = {}
        self._cache: LRUCache[Any, Response] | None = None  # made on first use
        self._lock = allocate_lock()

    # -- deciding ------------------------------------------------------------------------------

    def groups(self, request: Request, entities: Entities) -> list[tuple[Leaf, ...]]:
        """The leaf groups of the policies whose scope holds for ``request``: the walk that
        :meth:`authorize` makes (inlined there), node by node with :meth:`Node.match`."""
        find = entities.lookup
        level: list[Any] = [self.root]
        for uid in (request.action, request.principal, request.resource):
            ent = find(uid)
            ancestors = ent.ancestors if ent is not None else _NO_ANCESTORS
            below: list[Any] = []
            for node in level:
                node.match(uid, ancestors, below)
            level = below
        return level

    def candidates(self, request: Request, entities: Entities) -> int:
        """The bitset of policies whose scope holds for ``request`` (bit ``i``: the ``i``-th
        policy of the set)."""
        mask = 0
        for group in self.groups(request, entities):
            for leaf in group:
                for i in leaf.index:
                    mask |= 1 << i
        return mask

    def authorize(self, request: Request, entities: Entities, *, cache: bool = False) -> Response:
        """Deny-overrides over the applicable policies (same answer as the reference).

        With ``cache``, answers are kept per (entity store, request) in an LRU of
        :data:`DECISION_CACHE_SIZE`; both are immutable, so a cached answer is never stale. A
        hit costs about a tenth of a decision and a miss adds about half of one (hashing the
        request), so turn it on where identical requests repeat (tool lists resolved per run,
        an agent retrying a call).
        """
        if not cache:
            return self._authorize(request, entities)
        key = (entities.serial, request)
        with self._lock:
            lru = self._cache
            if lru is None:
                from cachetools import LRUCache  # only sets that cache load it

                lru = self._cache = LRUCache(maxsize=DECISION_CACHE_SIZE)
            hit = lru.get(key)
        if hit is not None:
            return hit
        response = self._authorize(request, entities)
        with self._lock:
            lru[key] = response
        return response

    def decide(
        self, request: Request | Mapping[str, Any], entities: Entities, *, cache: bool = False
    ) -> Response:
        """:meth:`authorize` for a :class:`~cedarlite.Request` or a request dict, read as
        :func:`~cedarlite.data.request.make_request` reads it (the same answer, the same errors).

        A dict of the usual JSON shape (entity uids as ``{"type", "id"}`` objects, a context
        of plain values) is decided without building a ``Request``: each uid is looked up in
        the store once, for its ancestors and for the store's own uid object.
        """
        if request.__class__ is dict and not cache:
            response = self.decide_plain(request, entities)
            if response is not None:
                return response
        return self.authorize(make_request(request), entities, cache=cache)

    def decide_plain(self, request: dict[str, Any], entities: Entities) -> Response | None:
        """The answer to a request dict of the usual shape (the fast path of :meth:`decide`,
        without its decision cache), or ``None`` for any other shape."""
        # A cold decision's cost is mostly how much code and memory it touches, so the usual
        # shape is read with subscripts into locals, with as few tests as prove it.
        # A uid found in the store needs no test of its fields: a plain tuple equals (and
        # hashes as) the EntityUID of the same fields, and with `valid_types` stored uids
        # have str fields (no other value equals a str) and valid type names.
        try:
            p, a, r = request["principal"], request["action"], request["resource"]
            if (
                p.__class__ is not dict
                or a.__class__ is not dict
                or r.__class__ is not dict
                or len(p) != 2
                or len(a) != 2
                or len(r) != 2
            ):
                return None  # another shape, or `{"type", "id", "__entity"}` (its own rules)
            find = entities.lookup
            pt, pi, at, ai, rt, ri = p["type"], p["id"], a["type"], a["id"], r["type"], r["id"]
            ep, ea, er = find((pt, pi)), find((at, ai)), find((rt, ri))  # type: ignore[arg-type]
        except (KeyError, TypeError):  # a field missing, or unhashable: make_request says which
            return None
        if not entities.valid_types:
            return None  # (a store built in Python with malformed uids: make_request checks)
        # A uid not in the store: one read before (the resource of most hook calls), else
        # checked and made by uid_of (None: not a uid, make_request says why).
        pu: EntityUID | None
        au: EntityUID | None
        ru: EntityUID | None
        if ep is not None:
            pu, pa = ep.uid, ep.ancestors
        else:
            pu, pa = SEEN_UIDS.get((pt, pi)) or uid_of(pt, pi), _NO_ANCESTORS
        if ea is not None:
            au, aa = ea.uid, ea.ancestors
        else:
            au, aa = SEEN_UIDS.get((at, ai)) or uid_of(at, ai), _NO_ANCESTORS
        if er is not None:
            ru, ra = er.uid, er.ancestors
        else:
            ru, ra = SEEN_UIDS.get((rt, ri)) or uid_of(rt, ri), _NO_ANCESTORS
        if pu is None or au is None or ru is None:
            return None
        context: Any = request.get("context")
        if context.__class__ is dict:
            context = plain_record(context) if context else EMPTY_RECORD
            if context is None:
                return None
        elif context is None:
            context = EMPTY_RECORD
        else:
            return None  # a string of JSON, `[]`, `0`...: make_request reads or refuses it
        reached = self._walk(pu, pa, au, aa, ru, ra)
        return self.authorize_reached(reached, pu, au, ru, context, entities) if reached else _DENY

    def _authorize(self, request: Request, entities: Entities) -> Response:
        find = entities.lookup
        p, a, r, context = request
        ep, ea, er = find(p), find(a), find(r)
        reached = self._walk(
            p,
            ep.ancestors if ep is not None else _NO_ANCESTORS,
            a,
            ea.ancestors if ea is not None else _NO_ANCESTORS,
            r,
            er.ancestors if er is not None else _NO_ANCESTORS,
        )
        return self.authorize_reached(reached, p, a, r, context, entities) if reached else _DENY

    def reach(
        self,
        principal: EntityUID,
        action: EntityUID,
        resource: EntityUID,
        entities: Entities,
    ) -> tuple[tuple[Leaf, ...], ...]:
        """The leaf groups that a request of these entities reaches (the scope walk of
        :meth:`authorize`, ancestors looked up in ``entities``): what :meth:`authorize_reached`
        decides any context with.

        For requests whose principal, action and resource (uids and ancestors) are fixed while
        the context and attributes change, as the calls of one tool in one agent run are: the
        walk is done once, not per request.
        """
        find = entities.lookup
        ep, ea, er = find(principal), find(action), find(resource)
        reached = self._walk(
            principal,
            ep.ancestors if ep is not None else _NO_ANCESTORS,
            action,
            ea.ancestors if ea is not None else _NO_ANCESTORS,
            resource,
            er.ancestors if er is not None else _NO_ANCESTORS,
        )
        return tuple(reached)

    def authorize_reached(
        self,
        reached: Sequence[tuple[Leaf, ...]],
        principal: EntityUID,
        action: EntityUID,
        resource: EntityUID,
        context: Record,
        entities: Entities,
    ) -> Response:
        """The answer to a request whose scope walk reached ``reached`` (:meth:`reach` of the
        same principal, action and resource, with their ancestors as in ``entities``): the
        same answer as :meth:`authorize`.

        The leaves of the groups reached, then deny-overrides (by outcome, remembered).
        """
        # INVARIANT: `reached` is self.reach(principal, action, resource, entities) (the
        # caller's promise: the uids, and their ancestors in `entities`, are those it walked).
        errors: list[tuple[int, str]] = []
        outcome: list[Any] = []
        for group in reached:
            for leaf in group:
                fn = leaf.fn
                outcome.append(leaf)
                outcome.append(
                    leaf.base
                    if fn is None
                    else leaf.base | fn(principal, action, resource, context, entities, errors)
                )
        if errors:
            return self._respond(outcome, errors)
        key = tuple(outcome)
        response = self._outcomes.get(key)
        if response is None:
            response = self._respond(outcome, errors)
            if len(self._outcomes) < OUTCOMES:
                self._outcomes[key] = response
        return response

    def _walk(
        self,
        p: EntityUID,
        p_ancestors: frozenset[EntityUID],
        a: EntityUID,
        a_ancestors: frozenset[EntityUID],
        r: EntityUID,
        r_ancestors: frozenset[EntityUID],
    ) -> list[tuple[Leaf, ...]]:
        """The leaf groups of the policies whose scope holds, down the tree (Node.match
        inlined for each node: a decision's cost is mostly how much code and memory it
        touches; Node.match is the reference, and the rare cases go through it). A node with
        a `flat` group (nothing but `any` below it) ends its path at once."""
        level: list[Any] = [self.root]
        reached: list[Any] = []  # leaf groups reached through `flat`
        for uid, ancestors in ((a, a_ancestors), (p, p_ancestors), (r, r_ancestors)):
            below: list[Any] = []
            for node in level:
                if (flat := node.flat) is not None:
                    reached.append(flat)
                    continue
                if node.is_in is not None or len(ancestors) > 8:
                    node.match(uid, ancestors, below)
                    continue
                if node.any is not None:
                    below.append(node.any)
                d = node.eq
                if d is not None and (hit := d.get(uid)) is not None:
                    below.append(hit)
                d = node.in_
                if d is not None:
                    if (hit := d.get(uid)) is not None:
                        below.append(hit)
                    for anc in ancestors:
                        if (hit := d.get(anc)) is not None:
                            below.append(hit)
                d = node.is_
                if d is not None and (hit := d.get(uid.type)) is not None:
                    below.append(hit)
            if not below:
                break
            level = below
        else:
            reached += level
        return reached

    def _respond(self, outcome: list[Any], errors: list[tuple[int, str]]) -> Response:
        """Deny-overrides on an outcome: ``[leaf, satisfied bits, leaf, bits, ...]``."""
        # INVARIANT: this is evaluator.decide (deny-overrides) on the leaves' bitmasks; reasons
        # and errors come out in policy order either way, and the property tests hold the two
        # equal. A policy of an `action in [...]` list may sit in two leaves that a request
        # reaches: each position counts once.
        forbids: set[int] = set()
        permits: set[int] = set()
        for k in range(0, len(outcome), 2):
            leaf, satisfied = outcome[k], outcome[k + 1]
            if satisfied:
                index, forbid = leaf.index, leaf.forbids
                for j in iter_bits(satisfied):
                    (forbids if forbid >> j & 1 else permits).add(index[j])
        errs: tuple[PolicyError, ...] = ()
        if errors:
            first: dict[int, str] = {}
            for i, message in errors:
                first.setdefault(i, message)
            ids = self.ids
            errs = tuple(PolicyError(ids[i], first[i]) for i in sorted(first))
        if forbids:
            return Response(Decision.DENY, self._ids(forbids), errs)
        if permits:
            return Response(Decision.ALLOW, self._ids(permits), errs)
        return Response(Decision.DENY, (), errs) if errs else _DENY

    def _ids(self, positions: set[int]) -> tuple[str, ...]:
        ids = self.ids
        return tuple(ids[i] for i in sorted(positions))


T = TypeVar("T")


class Compilable(Protocol):
    """What :func:`compiled` needs of a policy set (:class:`cedarlite.PolicySet`, which sits
    above this stage): its active policies, and a place to keep what is derived from them."""

    @property
    def active(self) -> tuple[Policy, ...]: ...

    def derived(self, key: str, make: Callable[[Any], T]) -> T: ...


def compiled(policies: Compilable) -> CompiledPolicySet:
    """The compiled form of a policy set, built on first use and kept with the set."""
    return policies.derived("compiled", _compile)


def _compile(policies: Compilable) -> CompiledPolicySet:
    return CompiledPolicySet(policies.active)
