"""The compiler: a policy set as a scope index plus generated condition functions.

A request first goes through the scope index (:mod:`.index`), which yields exactly the
policies whose scopes hold; only their conditions (:mod:`.codegen`) are evaluated. Answers are
identical to the reference interpreter's — decision, reasons and errors — which a property test
checks on random policy sets.

The compiled form is built once per :class:`~cedarlite.PolicySet` (immutable) and cached on it;
it does not depend on the entity store, which is consulted per request for ancestors.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from cachetools import LRUCache

from ..ast import Effect, Policy
from ..authorizer import Decision, PolicyError, Response, decide, make_request
from ..entities import Entities
from ..errors import EvaluationError
from ..evaluator import Request
from .codegen import CondFn, compile_condition
from .index import VarIndex, iter_bits, make_mask

if TYPE_CHECKING:
    from ..policyset import PolicySet
    from ..schema.model import Schema

_NO_ANCESTORS: frozenset[Any] = frozenset()
_DENY = Response(Decision.DENY)

DECISION_CACHE_SIZE = 4096
"""Entries of each compiled policy set's decision cache (LRU)."""


class CompiledPolicySet:
    """The decision index of one policy set. Thread-safe; build it with :func:`compiled`."""

    __slots__ = (
        "_cache",
        "_lock",
        "action",
        "conditions",
        "forbid_mask",
        "permit_mask",
        "policies",
        "principal",
        "resource",
        "unconditional_mask",
    )

    def __init__(self, policies: Sequence[Policy], *, cache_size: int = DECISION_CACHE_SIZE) -> None:
        self.policies: tuple[Policy, ...] = tuple(policies)
        self.principal = VarIndex(self.policies, "principal")
        self.action = VarIndex(self.policies, "action")
        self.resource = VarIndex(self.policies, "resource")
        self.conditions: tuple[CondFn | None, ...] = tuple(
            compile_condition(p) for p in self.policies
        )
        size = len(self.policies)
        self.permit_mask = make_mask(
            (i for i, p in enumerate(self.policies) if p.effect is Effect.PERMIT), size
        )
        self.forbid_mask = make_mask(
            (i for i, p in enumerate(self.policies) if p.effect is Effect.FORBID), size
        )
        self.unconditional_mask = make_mask(
            (i for i, c in enumerate(self.conditions) if c is None), size
        )
        self._cache: LRUCache[Any, Response] | None = (
            LRUCache(maxsize=cache_size) if cache_size else None
        )
        self._lock = threading.Lock()

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

    def authorize(self, request: Request, entities: Entities) -> Response:
        """Deny-overrides over the applicable policies (same answer as the reference)."""
        cache = self._cache
        if cache is not None:
            key = (entities.serial, request)
            with self._lock:
                hit = cache.get(key)
            if hit is not None:
                return hit
        response = self._authorize(request, entities)
        if cache is not None:
            with self._lock:
                cache[key] = response
        return response

    def _authorize(self, request: Request, entities: Entities) -> Response:
        mask = self.candidates(request, entities)
        if not mask:
            return _DENY
        policies, conditions = self.policies, self.conditions
        # Fast path: every candidate is unconditional, so no evaluation is needed.
        if mask & self.unconditional_mask == mask:
            return decide(policies[i] for i in iter_bits(mask))
        satisfied: list[Policy] = []
        errors: list[PolicyError] = []
        P, A, R, C = request.principal, request.action, request.resource, request.context
        for i in iter_bits(mask):
            cond = conditions[i]
            if cond is None:
                satisfied.append(policies[i])
                continue
            try:
                if cond(P, A, R, C, entities):
                    satisfied.append(policies[i])
            except EvaluationError as err:
                errors.append(PolicyError(policies[i].id, err.message))
            except RecursionError:
                errors.append(PolicyError(policies[i].id, "expression is nested too deeply to evaluate"))
        return decide(satisfied, errors)


def compiled(policies: PolicySet) -> CompiledPolicySet:
    """The compiled form of a policy set, built on first use and cached on the set."""
    cached = policies._cache.get("compiled")
    if cached is None:
        cached = CompiledPolicySet(policies.active)
        policies._cache["compiled"] = cached
    return cached  # type: ignore[no-any-return]


def is_authorized_batch(
    requests: Iterable[Request | Mapping[str, Any]],
    policies: PolicySet | str,
    entities: Entities | list[Any] | str | None = None,
    *,
    schema: Schema | None = None,
) -> list[Response]:
    """Decide many requests against one policy set and entity store (parsed once)."""
    from ..authorizer import coerce_inputs

    ps, ents = coerce_inputs(policies, entities, schema)
    index = compiled(ps)
    return [index.authorize(make_request(r, schema=schema), ents) for r in requests]
