"""Authorization: deny-overrides over the policies that apply, with reasons and errors.

A decision is a :class:`Response` record, never a bare bool. It fails closed: no satisfied
permit (an empty policy set included) means Deny; a policy that errors is skipped and
reported, whatever its effect.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

from .ast import Effect, Policy
from .entities import Entities
from .errors import EvaluationError
from .evaluator import Evaluator
from .request import Request, make_request

if TYPE_CHECKING:
    from .policyset import PolicySet
    from .schema.model import Schema


class Decision(Enum):
    """The answer to a request."""

    ALLOW = "Allow"
    DENY = "Deny"


@dataclass(frozen=True, slots=True)
class PolicyError:
    """A policy that failed to evaluate for a request (and was therefore skipped)."""

    policy_id: str
    message: str

    def __str__(self) -> str:
        return f"error while evaluating policy `{self.policy_id}`: {self.message}"


@dataclass(frozen=True, slots=True)
class Response:
    """The decision with the determining policies (``reasons``) and the policies that errored.

    On Allow, ``reasons`` are the satisfied permits; on Deny, the satisfied forbids (empty when
    the deny is only due to no permit applying).
    """

    decision: Decision
    reasons: tuple[str, ...] = ()
    errors: tuple[PolicyError, ...] = ()

    @property
    def allowed(self) -> bool:
        """``decision is Decision.ALLOW``."""
        return self.decision is Decision.ALLOW

    def to_json(self) -> dict[str, Any]:
        """``{"decision", "diagnostics": {"reason", "errors"}}`` as Cedar's CLI prints it."""
        return {
            "decision": self.decision.value,
            "diagnostics": {
                "reason": list(self.reasons),
                "errors": [{"policyId": e.policy_id, "error": e.message} for e in self.errors],
            },
        }


def decide(satisfied: Iterable[Policy], errors: Iterable[PolicyError] = ()) -> Response:
    """Deny-overrides: Allow iff some permit is satisfied and no forbid is."""
    permits: list[str] = []
    forbids: list[str] = []
    for p in satisfied:
        (permits if p.effect is Effect.PERMIT else forbids).append(p.id)
    if forbids:
        return Response(Decision.DENY, tuple(forbids), tuple(errors))
    if permits:
        return Response(Decision.ALLOW, tuple(permits), tuple(errors))
    return Response(Decision.DENY, (), tuple(errors))


def evaluate_policies(policies: Iterable[Policy], request: Request, entities: Entities) -> Response:
    """The reference authorizer: evaluate every policy with the interpreter, then decide."""
    ev = Evaluator(request, entities)
    satisfied: list[Policy] = []
    errors: list[PolicyError] = []
    for p in policies:
        try:
            if ev.policy_satisfied(p):
                satisfied.append(p)
        except EvaluationError as err:
            errors.append(PolicyError(p.id, err.message))
    return decide(satisfied, errors)


def coerce_inputs(
    policies: PolicySet | str,
    entities: Entities | list[Any] | str | None,
    schema: Schema | None = None,
) -> tuple[PolicySet, Entities]:
    """A ``PolicySet`` and an ``Entities`` from any of the accepted input forms."""
    from .policyset import PolicySet

    ps = policies if isinstance(policies, PolicySet) else PolicySet.from_str(policies)
    if isinstance(entities, Entities):
        return ps, entities
    if entities is None:
        return ps, Entities()
    return ps, Entities.from_json(entities, schema=schema)


def is_authorized(
    request: Request | Mapping[str, Any],
    policies: PolicySet | str,
    entities: Entities | list[Any] | str | None = None,
    *,
    schema: Schema | None = None,
    validate: bool = True,
    engine: str = "compiled",
    cache: bool = False,
) -> Response:
    """Decide a request against a policy set and an entity store.

    ``policies`` may be a :class:`~cedarlite.PolicySet` or Cedar text; ``entities`` an
    :class:`~cedarlite.Entities`, entity JSON (text or list) or ``None`` (no entities).
    With a ``schema``, entity JSON and the context are read by their declared types and, when
    ``validate``, the request is checked against the action's ``appliesTo``.
    ``cache=True`` keeps answers for repeated identical requests (see
    :meth:`cedarlite.compiler.CompiledPolicySet.authorize`; it never returns a stale answer).
    ``engine="reference"`` uses the interpreter instead of the compiled decision index (the
    two always agree; the reference exists to check that).
    Bad input raises a :class:`~cedarlite.CedarliteError`; evaluation errors never do (they
    are reported in :attr:`Response.errors`).
    """
    ps, ents = coerce_inputs(policies, entities, schema)
    req = make_request(request, schema=schema, validate=validate)
    if engine == "reference":
        return evaluate_policies(ps.active, req, ents)
    if engine == "compiled":
        from .compiler import compiled

        return compiled(ps).authorize(req, ents, cache=cache)
    raise ValueError(f"unknown engine `{engine}`; expected `compiled` or `reference`")
