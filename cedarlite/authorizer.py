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
from .entities import Entities, JSONValueError, uid_from_json, value_from_json
from .errors import CedarliteError, EntitiesError, EvaluationError, RequestError
from .evaluator import Evaluator, Request
from .parser import parse_entity_uid
from .values import EMPTY_RECORD, EntityUID, Record

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


def decide(
    satisfied: Iterable[Policy], errors: Iterable[PolicyError] = ()
) -> Response:
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


def evaluate_policies(
    policies: Iterable[Policy], request: Request, entities: Entities
) -> Response:
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


# ---------------------------------------------------------------------------------------------
# Requests


def _uid(value: Any, field: str) -> EntityUID:
    if isinstance(value, EntityUID):
        return value
    if isinstance(value, str):
        try:
            return parse_entity_uid(value)
        except CedarliteError as err:
            raise RequestError(f"request {field}: {err.message}") from None
    try:
        return uid_from_json(value, f"request {field}", RequestError)
    except RequestError:
        raise


def make_request(
    request: Request | Mapping[str, Any],
    *,
    schema: Schema | None = None,
    validate: bool = True,
) -> Request:
    """A :class:`Request` from a ``Request`` or a cedarpy-style dict.

    ``principal``/``action``/``resource`` are ``EntityUID``s, ``{"type", "id"}`` dicts or
    ``'Type::"id"'`` strings; ``context`` is a dict of Cedar JSON values (or a ``Record``).
    With a ``schema``, the context is parsed by the action's context type and, when
    ``validate``, the request is checked against the action's ``appliesTo``.
    """
    if isinstance(request, Request):
        req = request
        context_json: Any = None
    else:
        if not isinstance(request, Mapping):
            raise RequestError(f"request must be a mapping, not {type(request).__name__}")
        missing = [k for k in ("principal", "action", "resource") if request.get(k) is None]
        if missing:
            raise RequestError(f"request is missing `{'`, `'.join(missing)}`")
        context_json = request.get("context")
        if context_json is None:
            context_json = {}
        if isinstance(context_json, str):
            from .entities import load_json

            context_json = load_json(context_json, "request context", RequestError)
        if not isinstance(context_json, Mapping):
            raise RequestError("request context must be a JSON object")
        req = Request(
            _uid(request["principal"], "principal"),
            _uid(request["action"], "action"),
            _uid(request["resource"], "resource"),
            EMPTY_RECORD,
        )
    if schema is not None:
        from .schema.conform import conform_request

        return conform_request(req, context_json, schema, validate=validate)
    if context_json is None:
        return req
    try:
        context = value_from_json(dict(context_json), "context")
    except JSONValueError as err:
        raise RequestError(f"request {err.message}") from None
    assert isinstance(context, Record)
    return Request(req.principal, req.action, req.resource, context)


def is_authorized(
    request: Request | Mapping[str, Any],
    policies: PolicySet | str,
    entities: Entities | list[Any] | str | None = None,
    *,
    schema: Schema | None = None,
    engine: str = "compiled",
) -> Response:
    """Decide a request against a policy set and an entity store.

    ``policies`` may be a :class:`~cedarlite.PolicySet` or Cedar text; ``entities`` an
    :class:`~cedarlite.Entities`, entity JSON (text or list) or ``None`` (no entities).
    ``engine="reference"`` uses the interpreter instead of the compiled decision index (the
    two always agree; the reference exists to check that).
    Bad input raises a :class:`~cedarlite.CedarliteError`; evaluation errors never do (they
    are reported in :attr:`Response.errors`).
    """
    from .policyset import PolicySet

    ps = policies if isinstance(policies, PolicySet) else PolicySet.from_str(policies)
    if entities is None:
        ents = Entities()
    elif isinstance(entities, Entities):
        ents = entities
    else:
        try:
            ents = Entities.from_json(entities, schema=schema)
        except EntitiesError:
            raise
    req = make_request(request, schema=schema)
    if engine == "reference":
        return evaluate_policies(ps.active, req, ents)
    if engine == "compiled":
        from .compiler import compiled

        return compiled(ps).authorize(req, ents)
    raise ValueError(f"unknown engine `{engine}`; expected `compiled` or `reference`")
