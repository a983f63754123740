"""The compiler: a policy set as a scope index plus generated condition functions.

A request first goes through the scope index (:mod:`.index`), which yields exactly the
policies whose scopes hold; only their conditions (:mod:`.codegen`) are evaluated. Answers are
identical to the reference interpreter's — decision, reasons and errors — which a property test
checks on random policy sets.

The compiled form is built once per :class:`~cedarlite.PolicySet` (immutable) and cached on it;
it does not depend on the entity store, which is consulted per request for ancestors. It holds
no AST, only ids, masks and condition sources, so it pickles compactly: see :mod:`.cache` for
reusing it across processes.
"""

from __future__ import annotations

import marshal
import sys
from _thread import allocate_lock  # threading.Lock, without importing threading
from collections.abc import Sequence
from types import CodeType
from typing import TYPE_CHECKING, Any

from ..entities import Entities
from ..errors import EvaluationError
from ..request import Request
from ..response import Decision, PolicyError, Response
from .index import VarIndex, iter_bits, make_mask
from .runtime import CondFn, build_condition, make_factory

if TYPE_CHECKING:
    from cachetools import LRUCache

    from ..ast import Policy
    from ..policyset import PolicySet

_NO_ANCESTORS: frozenset[Any] = frozenset()
_DENY = Response(Decision.DENY)

DECISION_CACHE_SIZE = 4096
"""Entries of each compiled policy set's decision cache (LRU)."""

FORMAT_VERSION = 3
"""Version of the pickled state; bumped whenever the compiled representation changes."""


class CompiledPolicySet:
    """The decision index of one policy set. Thread-safe; build it with :func:`compiled`."""

    __slots__ = (
        "_cache",
        "_lock",
        "action",
        "conditions",
        "forbid_mask",
        "ids",
        "principal",
        "resource",
        "sources",
        "unconditional_mask",
    )

    def __init__(self, policies: Sequence[Policy]) -> None:
        """Index ``policies`` (static or linked; templates must be left out)."""
        # Building needs the AST and the code generator; deciding (and loading a compiled set
        # from the compile cache) does not, so they are imported here only.
        from ..ast import Effect
        from .codegen import condition_source

        state = {
            "ids": tuple(p.id for p in policies),
            "principal": VarIndex(policies, "principal"),
            "action": VarIndex(policies, "action"),
            "resource": VarIndex(policies, "resource"),
            "forbid_mask": make_mask(
                (i for i, p in enumerate(policies) if p.effect is Effect.FORBID), len(policies)
            ),
            "sources": tuple(condition_source(p) for p in policies),
        }
        self.__setstate__(state)

    # -- pickling: the state is plain data; condition functions are rebuilt from their source,
    # or, by the same Python, from their compiled code (marshal), which skips compile() --------

    def __getstate__(self) -> dict[str, Any]:
        bodies = {src[0] for src in self.sources if src is not None}
        return {
            "version": FORMAT_VERSION,
            "ids": self.ids,
            "principal": self.principal,
            "action": self.action,
            "resource": self.resource,
            "forbid_mask": self.forbid_mask,
            "sources": self.sources,
            "python": sys.version,
            "code": marshal.dumps({body: make_factory(body).__code__ for body in bodies}),
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        if state.get("version", FORMAT_VERSION) != FORMAT_VERSION:
            raise ValueError("compiled policy set from another cedarlite version")
        self.ids: tuple[str, ...] = state["ids"]
        self.principal: VarIndex = state["principal"]
        self.action: VarIndex = state["action"]
        self.resource: VarIndex = state["resource"]
        self.forbid_mask: int = state["forbid_mask"]
        self.sources = state["sources"]
        code: dict[str, CodeType] = {}
        if state.get("python") == sys.version:  # marshal's format is the interpreter's own
            code = marshal.loads(state["code"])
        self.conditions: tuple[CondFn | None, ...] = tuple(
            build_condition(src, code.get(src[0]) if src is not None else None)
            for src in self.sources
        )
        self.unconditional_mask = make_mask(
            (i for i, c in enumerate(self.conditions) if c is None), len(self.ids)
        )
        self._cache: LRUCache[Any, Response] | None = None  # made on first use
        self._lock = allocate_lock()

    # -- deciding ------------------------------------------------------------------------------

    def candidates(self, request: Request, entities: Entities) -> int:
        """The bitset of policies whose scope holds for ``request``."""
        get = entities.get
        p, a, r = request.principal, request.action, request.resource
        ent = get(p)
        mask = self.principal.mask(p, ent.ancestors if ent is not None else _NO_ANCESTORS)
        if not mask:
            return 0
        ent = get(a)
        mask &= self.action.mask(a, ent.ancestors if ent is not None else _NO_ANCESTORS)
        if not mask:
            return 0
        ent = get(r)
        return mask & self.resource.mask(r, ent.ancestors if ent is not None else _NO_ANCESTORS)

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

    def _authorize(self, request: Request, entities: Entities) -> Response:
        mask = self.candidates(request, entities)
        if not mask:
            return _DENY
        satisfied = mask & self.unconditional_mask
        errors: list[PolicyError] = []
        rest = mask ^ satisfied
        if rest:
            conditions, ids = self.conditions, self.ids
            P, A, R, C = request.principal, request.action, request.resource, request.context
            for i in iter_bits(rest):
                try:
                    if conditions[i](P, A, R, C, entities):  # type: ignore[misc]
                        satisfied |= 1 << i
                except EvaluationError as err:
                    errors.append(PolicyError(ids[i], err.message))
                except RecursionError:
                    errors.append(
                        PolicyError(ids[i], "expression is nested too deeply to evaluate")
                    )
        # INVARIANT: this is evaluator.decide (deny-overrides) on bitsets; reasons come out
        # in policy order either way, and the property tests hold the two equal.
        forbids = satisfied & self.forbid_mask
        if forbids:
            return Response(Decision.DENY, self._ids(forbids), tuple(errors))
        if satisfied:
            return Response(Decision.ALLOW, self._ids(satisfied), tuple(errors))
        return Response(Decision.DENY, (), tuple(errors)) if errors else _DENY

    def _ids(self, mask: int) -> tuple[str, ...]:
        ids = self.ids
        return tuple(ids[i] for i in iter_bits(mask))


def compiled(policies: PolicySet) -> CompiledPolicySet:
    """The compiled form of a policy set, built on first use and cached on the set."""
    cached = policies._cache.get("compiled")
    if cached is None:
        cached = CompiledPolicySet(policies.active)
        policies._cache["compiled"] = cached
    return cached
