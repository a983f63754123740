"""Authorization: one entry point over both engines, above both.

:func:`is_authorized` and :func:`is_authorized_batch` read the inputs (policy text, entity JSON,
request dicts), then decide with the compiled decision index (:mod:`cedarlite.engine.compiler`,
the default) or with the reference interpreter
(:func:`cedarlite.engine.evaluator.evaluate_policies`, which the compiled engine is checked
against). Either way the answer is a :class:`~cedarlite.data.response.Response` made by
deny-overrides.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .data.entities import Entities
from .data.request import Request, make_request

# Decision and PolicyError are re-exported: they lived here before cedarlite.data.response.
from .data.response import Decision, PolicyError, Response  # noqa: F401
from .engine.compiler import compiled
from .errors import ArgumentError, did_you_mean
from .policyset import PolicySet

if TYPE_CHECKING:
    from .schema.model import Schema


ENGINES = ("compiled", "reference")
"""The engines :func:`is_authorized` can decide with (they always agree)."""


def coerce_inputs(
    policies: PolicySet | str,
    entities: Entities | list[Any] | str | None,
    schema: Schema | None = None,
) -> tuple[PolicySet, Entities]:
    """A ``PolicySet`` and an ``Entities`` from any of the accepted input forms."""
    ps = policies if isinstance(policies, PolicySet) else PolicySet.from_str(policies)
    if isinstance(entities, Entities):
        return ps, entities
    if entities is None:
        return ps, Entities()
    return ps, Entities.from_json(entities, schema=schema)


def _check_engine(engine: str) -> None:
    if engine not in ENGINES:
        raise ArgumentError(
            f"unknown engine `{engine}`; expected `compiled` or `reference`",
            help=did_you_mean(str(engine), ENGINES),
        )


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
    :meth:`cedarlite.engine.compiler.CompiledPolicySet.authorize`; it never returns a stale answer).
    ``engine="reference"`` uses the interpreter instead of the compiled decision index (the
    two always agree; the reference exists to check that).
    Bad input raises a :class:`~cedarlite.CedarliteError`; evaluation errors never do (they
    are reported in :attr:`Response.errors`).
    """
    if (
        engine == "compiled"
        and schema is None
        and policies.__class__ is PolicySet
        and entities.__class__ is Entities
    ):  # the usual call, straight to the compiled set (one decision is a few microseconds)
        index = compiled(policies)
        if request.__class__ is dict and not cache:  # (CompiledPolicySet.decide, inlined)
            response = index.decide_plain(request, entities)
            if response is not None:
                return response
        return index.decide(request, entities, cache=cache)
    _check_engine(engine)
    ps, ents = coerce_inputs(policies, entities, schema)
    if engine == "reference":
        # the AST and the interpreter, only when asked
        from .engine.evaluator import evaluate_policies

        req = make_request(request, schema=schema, validate=validate)
        return evaluate_policies(ps.active, req, ents)
    if schema is None:
        return compiled(ps).decide(request, ents, cache=cache)
    req = make_request(request, schema=schema, validate=validate)
    return compiled(ps).authorize(req, ents, cache=cache)


def is_authorized_batch(
    requests: Iterable[Request | Mapping[str, Any]],
    policies: PolicySet | str,
    entities: Entities | list[Any] | str | None = None,
    *,
    schema: Schema | None = None,
    cache: bool = False,
    engine: str = "compiled",
) -> list[Response]:
    """Decide many requests against one policy set and entity store (each parsed once).

    ``cache`` and ``engine`` as in :func:`is_authorized`.
    """
    _check_engine(engine)  # (raised for an empty batch too)
    ps, ents = coerce_inputs(policies, entities, schema)
    return [is_authorized(r, ps, ents, schema=schema, cache=cache, engine=engine) for r in requests]
