"""Do two policy sets decide alike? A proof with a schema, else a search for a difference.

With a schema the solver is asked first (:func:`cedarlite.analysis.prove`, when ``z3-solver``
is installed): "proved equivalent", or a counterexample it found (re-evaluated before it is
reported). Only when it answers ``None`` (a construct it does not encode, a timeout) does the
search below run, and the result says so ("not proved: ...; no difference found in N
requests").

Equivalence means equal *decisions* under Cedar's semantics, errors included: a policy whose
condition errors is skipped, so ``when { a || b }`` split into two permits differs as soon as
``a`` can error, and so does a forbid that can error. With a schema only well-typed inputs
count (the request's principal and resource are then taken to be in the entity store, as a
deployment that checks its inputs against the schema provides them).

The search space is built from the two policy sets themselves:

* **inputs** are the request variables and every attribute path the conditions read
  (``context.n``, ``principal.age``, ``resource.meta.level``, tags); with a given entity
  store (``entities=``), entity data is that store's, and only the request varies;
* **representatives** for each input come from the literals it is compared with and their
  neighbours (``>= 18``: 17, 18, 19; ``like "git *"``: ``"git "``, ``"git x"``, ``"gi"``...;
  ``containsAny(["a", "b"])``: every subset of ``a``, ``b`` and one other element), plus a
  missing value and a value of the wrong type (without a schema), every entity uid the
  policies or the store mention and a fresh one per type, and every set of the ``in`` targets
  as ancestors;
* representatives that no condition can tell apart are merged (each condition is split into
  its *atoms*; two values with the same outcome on every atom that reads only that input are
  interchangeable).

When every atom is of a form whose representatives are provably complete (comparisons with
literals, booleans, presence, set membership of literals, entity identity and membership; any
condition over a given entity store that reads one request variable) and the product of the
inputs is at most ``exhaustive_limit``, the space is **enumerated completely** and the result
says "equivalent (exhaustive over N requests)". Otherwise (``like``, arithmetic between
inputs, attributes of other entities, ...) Hypothesis searches the same representatives
(``max_examples`` requests) and shrinks a difference to a small one; the result then says how
many distinct requests were searched, never more.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..data.entities import Entities
from ..errors import CedarliteError
from ..policyset import PolicySet
from .results import Counterexample, Equivalence
from .search import DEFAULT_EXHAUSTIVE_LIMIT, DEFAULT_MAX_EXAMPLES, Space

if TYPE_CHECKING:
    from hypothesis import settings as hsettings

    from ..schema.model import Schema

__all__ = [
    "Counterexample",
    "Equivalence",
    "assert_equivalent",
    "check_equivalence",
    "find_difference",
]


def check_equivalence(
    a: PolicySet | str,
    b: PolicySet | str,
    *,
    schema: Schema | None = None,
    entities: Entities | list[Any] | str | None = None,
    max_examples: int = DEFAULT_MAX_EXAMPLES,
    exhaustive_limit: int = DEFAULT_EXHAUSTIVE_LIMIT,
    settings: hsettings | None = None,
    prove_timeout: float | None = 30.0,
) -> Equivalence:
    """Do ``a`` and ``b`` decide every request alike? (See the module docs.)

    With a ``schema`` (and ``prove_timeout`` not ``None``) the solver is asked first; a proof
    or (without a fixed store) a counterexample is the answer. Otherwise the search runs:
    ``schema`` restricts it to well-typed requests and entities; ``entities`` fixes the entity
    store (JSON or :class:`~cedarlite.Entities`) and varies only the requests. The space is
    enumerated when it is finite and has at most ``exhaustive_limit`` requests; otherwise
    Hypothesis draws ``max_examples`` requests (``settings``, a ``hypothesis.settings``,
    overrides that) and shrinks a difference it finds. Bad input raises a
    :class:`~cedarlite.CedarliteError`.
    """
    first, second = _as_set(a), _as_set(b)
    proof = ""
    if schema is not None and prove_timeout is not None:
        proved = _prove(first, second, schema, entities is None, prove_timeout)
        if isinstance(proved, Equivalence):
            return proved
        proof = proved
    space = Space(first, second, schema, entities)
    if space.exact and space.size() <= exhaustive_limit:
        result = space.enumerate()
    else:
        why = f"more than {exhaustive_limit} requests" if space.exact else space.why_not
        why = why or "a condition is outside the forms searched exhaustively"
        result = space.sample(max_examples, settings, why)
    if proof:
        result = Equivalence(
            result.counterexample, result.checked, result.exhaustive, result.why_not, proof=proof
        )
    return result


def _prove(
    a: PolicySet, b: PolicySet, schema: Schema, free_store: bool, timeout: float
) -> Equivalence | str:
    """The solver's answer as a result, or the note the search's result carries."""
    try:
        from .prove import prove

        r = prove("equivalent", a, b, schema=schema, timeout=timeout)
    except CedarliteError as err:  # z3 is not installed
        return f"not proved: {err.message}"
    if r.holds is True:
        return Equivalence(None, 0, True, proved=True, proof=r.reason)
    if r.holds is False and r.counterexample is not None:
        ce = r.counterexample
        if not free_store:
            return "not proved: the solver's counterexample needs its own entity store"
        assert ce.second is not None
        found = Counterexample(ce.request, ce.entities, ce.first, ce.second, (a.labels, b.labels))
        return Equivalence(found, 1, True, proof=r.reason)
    return r.reason


def find_difference(
    a: PolicySet | str,
    b: PolicySet | str,
    *,
    schema: Schema | None = None,
    entities: Entities | list[Any] | str | None = None,
    max_examples: int = DEFAULT_MAX_EXAMPLES,
    exhaustive_limit: int = DEFAULT_EXHAUSTIVE_LIMIT,
    settings: hsettings | None = None,
) -> Counterexample | None:
    """A request on which ``a`` and ``b`` decide differently, or ``None`` if none was found
    (:func:`check_equivalence` also says whether the answer is a proof)."""
    return check_equivalence(
        a,
        b,
        schema=schema,
        entities=entities,
        max_examples=max_examples,
        exhaustive_limit=exhaustive_limit,
        settings=settings,
    ).counterexample


def assert_equivalent(
    a: PolicySet | str,
    b: PolicySet | str,
    *,
    schema: Schema | None = None,
    entities: Entities | list[Any] | str | None = None,
    max_examples: int = DEFAULT_MAX_EXAMPLES,
    exhaustive_limit: int = DEFAULT_EXHAUSTIVE_LIMIT,
    settings: hsettings | None = None,
) -> Equivalence:
    """Raise ``AssertionError`` with a readable counterexample if ``a`` and ``b`` can decide
    differently; returns the :class:`Equivalence` report otherwise (use it in tests)."""
    result = check_equivalence(
        a,
        b,
        schema=schema,
        entities=entities,
        max_examples=max_examples,
        exhaustive_limit=exhaustive_limit,
        settings=settings,
    )
    if result.counterexample is not None:
        raise AssertionError(result.counterexample.render())
    return result


def _as_set(ps: PolicySet | str) -> PolicySet:
    return ps if isinstance(ps, PolicySet) else PolicySet.from_str(ps)
