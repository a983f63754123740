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

from .ast import Effect, Policy, is_valid_type_name
from .entities import (
    Entities,
    JSONValueError,
    check_json_limits,
    uid_from_json,
    value_from_json,
)
from .errors import CedarliteError, EvaluationError, RequestError
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


# ---------------------------------------------------------------------------------------------
# Requests


def _uid(value: Any, field: str) -> EntityUID:
    cls = value.__class__
    if cls is EntityUID:
        return value
    if cls is dict and len(value) == 2:  # the common `{"type", "id"}`, checked inline
        type_name, id_ = value.get("type"), value.get("id")
        if type_name.__class__ is str and id_.__class__ is str and is_valid_type_name(type_name):
            return EntityUID(type_name, id_)
    if isinstance(value, str):
        try:
            return parse_entity_uid(value)
        except CedarliteError as err:
            raise RequestError(f"request {field}: {err.message}") from None
    return uid_from_json(value, f"request {field}", RequestError)


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
    if request.__class__ is Request:
        req: Request = request
        if (
            req.context.__class__ is Record
            and req.principal.__class__ is EntityUID
            and req.action.__class__ is EntityUID
            and req.resource.__class__ is EntityUID
        ):
            if schema is None:
                return req
            from .schema.conform import conform_request

            return conform_request(req, None, schema, validate=validate)
        # A hand-built Request with plain Python fields: read it like a request dict.
        request = req._asdict()
    if request.__class__ is not dict:
        if not isinstance(request, Mapping):
            raise RequestError(f"request must be a mapping, not {type(request).__name__}")
        request = dict(request)
    get = request.get
    principal, action, resource = get("principal"), get("action"), get("resource")
    if principal is None or action is None or resource is None:
        missing = [k for k in ("principal", "action", "resource") if get(k) is None]
        raise RequestError(f"request is missing `{'`, `'.join(missing)}`")
    uids = (_uid(principal, "principal"), _uid(action, "action"), _uid(resource, "resource"))
    context_json = get("context")
    if context_json is not None and context_json.__class__ is not dict:
        if isinstance(context_json, str):
            from .entities import load_json

            context_json = load_json(context_json, "request context", RequestError)
        if not isinstance(context_json, Mapping):
            raise RequestError("request context must be a JSON object")
        context_json = dict(context_json)
    if schema is not None:
        from .schema.conform import conform_request

        if context_json:  # (the schema-less reading below checks the limits as it goes)
            check_json_limits(context_json, "request context", RequestError)
        req = Request(*uids, EMPTY_RECORD)
        return conform_request(req, context_json or {}, schema, validate=validate)
    if not context_json:
        return Request(*uids, EMPTY_RECORD)
    try:
        context = value_from_json(context_json, "context")
    except JSONValueError as err:
        raise RequestError(f"request {err.message}") from None
    return Request(*uids, context)


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
