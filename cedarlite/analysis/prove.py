"""Proofs about policy sets on an SMT solver (z3), in the manner of Cedar's SymCC.

```python
from cedarlite.analysis import prove
r = prove("implies", "permit(principal, action, resource) when { context.n > 2 };",
          "permit(principal, action, resource) when { context.n > 1 };",
          schema='entity U; action a appliesTo { principal: U, resource: U, context: {n: Long} };')
assert r.holds is True
```

A property ranges over every request the schema allows (each principal type, action and
resource type of an ``appliesTo``, every context of the action's type) and every entity store
that conforms to the schema, in which every entity a policy reaches exists (as the strict
validator and SymCC assume). ``holds`` is ``True`` only when the solver proved it, ``False``
with a counterexample that cedarlite's reference interpreter has re-evaluated and found to
refute it, and ``None`` otherwise: a construct that is not encoded (named in ``reason``), a
policy that does not validate, the solver giving up or timing out, or a counterexample that
failed that self-check (an encoding bug never becomes a wrong answer).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..authorizer import Decision, Response, is_authorized
from ..data.entities import Entities
from ..data.ext import Datetime, Decimal, Duration, IPAddr
from ..data.values import CedarSet, EntityUID, Record, to_json_value
from ..errors import CedarliteError
from ..lang.ast import Effect, Lit, Policy, is_action_type, walk
from ..policyset import PolicySet
from ..schema.model import Schema
from ..schema.types import (
    BoolType,
    CedarType,
    EntityType,
    ExtensionType,
    LongType,
    RecordType,
    SetType,
    StringType,
)
from ..schema.validator import Validator, as_schema, policy_condition
from ._regex import LazyPatterns, one_regex
from ._smt import Encoder, Sorts, Sym, Unsupported, conj, neg, z3mod

__all__ = ["PROPERTIES", "ProofCounterexample", "ProofResult", "prove"]

#: The properties :func:`prove` checks, and whether each compares two policy sets.
PROPERTIES: Mapping[str, bool] = {
    "equivalent": True,
    "implies": True,
    "disjoint": True,
    "always-allows": False,
    "always-denies": False,
    "never-errors": False,
}
#: For the agent rules: nothing the guard allows (allowed, no policy erroring) does B allow.
GUARD_DISJOINT = "guard-disjoint"

DEFAULT_TIMEOUT = 30.0


@dataclass(frozen=True)
class ProofCounterexample:
    """A request and an entity store on which the property fails (checked by re-evaluation).

    ``request``: principal, action and resource as ``{"type", "id"}``, ``context`` as Cedar
    JSON; ``entities``: Cedar entities JSON. ``first``/``second``: the two sets' responses
    (``second`` is ``None`` for a one-set property).
    """

    request: dict[str, Any]
    entities: list[dict[str, Any]]
    first: Response
    second: Response | None = None


@dataclass(frozen=True)
class ProofResult:
    """The answer of :func:`prove`: ``holds`` is ``True`` (proved), ``False`` (refuted: see
    ``counterexample``) or ``None`` (unknown: ``reason`` says why)."""

    prop: str
    holds: bool | None
    reason: str
    counterexample: ProofCounterexample | None = None

    def __bool__(self) -> bool:
        return self.holds is True


def prove(
    prop: str,
    a: PolicySet | str,
    b: PolicySet | str | None = None,
    *,
    schema: Schema | str | Mapping[str, Any],
    timeout: float = DEFAULT_TIMEOUT,
    assume: Callable[[Encoder], list[Any]] | None = None,
) -> ProofResult:
    """Prove or refute ``prop`` of ``a`` (and ``b``) for every request and entity store valid
    for ``schema``: ``"equivalent"`` (same decisions), ``"implies"`` (whatever ``a`` allows,
    ``b`` allows), ``"disjoint"`` (nothing both allow), ``"always-allows"``,
    ``"always-denies"``, ``"never-errors"`` (no policy of ``a`` errors).

    ``a``/``b``: Cedar text or a :class:`~cedarlite.PolicySet`; ``schema``: ``.cedarschema``
    text, JSON schema or a :class:`~cedarlite.schema.Schema`. ``timeout`` (seconds) bounds the
    solver's work; running out answers ``None``. ``assume`` (for callers that know more
    about their requests than the schema says) gives extra constraints per environment.
    Needs ``z3-solver`` (``cedarlite[prove]``). Input that does not parse raises
    :class:`~cedarlite.CedarliteError`.
    """
    two = PROPERTIES.get(prop) if prop != GUARD_DISJOINT else True
    if two is None:
        raise CedarliteError(
            f"unknown property `{prop}`",
            help="one of: " + ", ".join(PROPERTIES),
            code="unknown-property",
        )
    if two and b is None:
        raise CedarliteError(f"`{prop}` compares two policy sets: give `b`", code="usage")
    if not two and b is not None:
        raise CedarliteError(f"`{prop}` is a property of one policy set: drop `b`", code="usage")
    z3 = z3mod()
    schema = as_schema(schema)
    first = _as_set(a)
    second = _as_set(b) if b is not None else None
    try:
        return _Prover(prop, first, second, schema, timeout, assume).run()
    except z3.Z3Exception as err:  # an encoding the solver rejects: a bug, never an answer
        return ProofResult(
            prop, None, f"not proved: the solver rejected the encoding ({err}); please report it"
        )


def _as_set(ps: PolicySet | str) -> PolicySet:
    return ps if isinstance(ps, PolicySet) else PolicySet.from_str(ps)


class _Prover:
    def __init__(
        self,
        prop: str,
        a: PolicySet,
        b: PolicySet | None,
        schema: Schema,
        timeout: float,
        assume: Callable[[Encoder], list[Any]] | None = None,
    ) -> None:
        self.prop, self.a, self.b, self.schema = prop, a, b, schema
        self.assume = assume
        self.deadline = time.monotonic() + timeout
        self.timeout = timeout
        self.z3 = z3mod()

    def result(
        self, holds: bool | None, reason: str, ce: ProofCounterexample | None = None
    ) -> ProofResult:
        return ProofResult(self.prop, holds, reason, ce)

    def run(self) -> ProofResult:
        for name, ps in (("a", self.a), ("b", self.b)):
            if ps is None:
                continue
            checked = Validator(self.schema).validate(ps)
            errors = checked.errors
            if self.prop == GUARD_DISJOINT and ps is self.a:
                # The tool layer names every tool of its lists, present in the run or not: an
                # action the schema does not declare is never a request's (encoded as such).
                errors = tuple(i for i in errors if i.code not in _OTHER_TOOLS)
            if errors:
                issue = errors[0]
                return self.result(
                    None,
                    f"not proved: policy `{issue.label or issue.policy_id}` of {name} does not "
                    f"validate against the schema ({issue.message}); proofs cover the policies "
                    "the strict validator accepts",
                )
        sorts = Sorts(self.schema, [*_action_literals(self.a), *_action_literals(self.b)])
        envs = self.schema.request_environments()
        for env in envs:
            context = self.schema.actions[env.action].applies_to.context  # type: ignore[union-attr]
            enc = Encoder(sorts, env.principal, env.action, env.resource, context)
            try:
                policies = [self.encode(enc, ps) for ps in (self.a, self.b) if ps is not None]
            except Unsupported as err:
                return self.result(None, f"not proved: {err} is not encoded")
            found = self.solve(enc, sorts, policies)
            if found is not None:
                return found
        return self.result(
            True,
            f"proved: {_STATEMENT[self.prop]} for every request and entity store the schema "
            f"allows ({len(envs)} request environment{'s' if len(envs) != 1 else ''})",
        )

    def solve(
        self, enc: Encoder, sorts: Sorts, policies: list[list[_Encoded]]
    ) -> ProofResult | None:
        """``None`` when the property holds in this environment, else the answer.

        Where the property only asks for requests that are allowed (``disjoint``,
        ``always-denies``, the guard's), forbids are added lazily: without some of them more
        is allowed, so a proof without them is a proof; a counterexample is re-evaluated with
        every policy, and the forbids that stop it (or that error on it) join the next round.
        """
        z3 = self.z3
        lazy = self.prop in _MONOTONE
        included = {
            p.policy.id
            for encoded in policies
            for p in encoded
            if not lazy or p.policy.effect is Effect.PERMIT
        }
        background = [*enc.assumptions, *sorts.distinctness(), *enc.hierarchy_axioms()]
        background += self.assume(enc) if self.assume is not None else []
        while True:
            query = self.query(policies, included)
            if query is None:
                return None
            left = self.deadline - time.monotonic()
            if left <= 0:
                return self.result(None, f"not proved: timed out after {self.timeout:g} s")
            answer, solver = self.check(background, query, left)
            if answer == z3.unsat:
                return None
            if answer != z3.sat:
                why = solver.reason_unknown()
                if "timeout" in why or "canceled" in why or time.monotonic() >= self.deadline:
                    return self.result(None, f"not proved: timed out after {self.timeout:g} s")
                return self.result(None, f"not proved: the solver gave up ({why})")
            result = self.refuted(enc, sorts, solver.model())
            if result.holds is not None or not lazy or result.counterexample is None:
                return result
            ce = result.counterexample
            stopped = {*ce.first.reasons, *(e.policy_id for e in ce.first.errors)}
            if ce.second is not None:
                stopped |= {*ce.second.reasons, *(e.policy_id for e in ce.second.errors)}
            added = sorted(stopped - included)
            if not added:
                return result
            if len(added) > 1 and self.one_suffices(policies, included, added, background):
                return None
            included |= set(added)

    def one_suffices(
        self,
        policies: list[list[_Encoded]],
        included: set[str],
        added: list[str],
        background: list[Any],
    ) -> bool:
        """Whether one of the forbids ``added`` alone proves the property (each tried briefly:
        one small forbid often settles what all of them together make hard)."""
        z3 = self.z3
        for policy_id in added:
            left = self.deadline - time.monotonic()
            query = self.query(policies, included | {policy_id})
            if query is None:
                return True
            if self.check(background, query, left / 2)[0] == z3.unsat:
                return True
        return False

    def check(self, background: list[Any], query: Any, seconds: float) -> tuple[Any, Any]:
        """The solver's answer on ``query``, and the solver (its model, or why it gave up),
        the rules' long pattern lists added back lazily (:class:`LazyPatterns`)."""
        z3 = self.z3
        lazy = LazyPatterns(z3, query)
        end = time.monotonic() + seconds
        while True:
            solver = z3.Solver()
            solver.set("timeout", max(1, int((end - time.monotonic()) * 1000)))
            solver.add(*background, lazy.formula())
            answer = solver.check()
            if answer != z3.sat or not lazy.refine(solver.model()):
                return answer, solver

    # -- the query -------------------------------------------------------------------------

    def encode(self, enc: Encoder, ps: PolicySet) -> list[_Encoded]:
        """Each policy's condition in this environment (those that cannot apply left out)."""
        z3 = self.z3
        out = []
        for policy in ps.active:
            try:
                sym: Sym = enc.condition(policy_condition(policy))
            except Unsupported as err:
                raise Unsupported(f"{err} (in policy `{ps.label(policy.id)}`)") from None
            if not (z3.is_false(sym.v) and z3.is_false(sym.err)):
                out.append(_Encoded(policy, sym))
        return out

    def decisions(self, encoded: list[_Encoded], included: set[str]) -> tuple[Any, Any]:
        """``(allowed, some policy errors)`` as formulas, of the ``included`` policies."""
        z3 = self.z3
        permits: list[Any] = []
        forbids: list[Any] = []
        errors: list[Any] = []
        for p in encoded:
            if p.policy.id not in included:
                continue
            satisfied = conj(z3, p.sym.v, neg(z3, p.sym.err))
            (permits if p.policy.effect is Effect.PERMIT else forbids).append(satisfied)
            errors.append(p.sym.err)
        allowed = z3.And(z3.Or(False, *permits), z3.Not(z3.Or(False, *forbids)))
        return allowed, z3.Or(False, *errors)

    def query(self, policies: list[list[_Encoded]], included: set[str]) -> Any:
        """A formula true exactly for the requests of this environment that refute ``prop``
        (with only the ``included`` policies)."""
        z3 = self.z3
        allow_a, err_a = self.decisions(policies[0], included)
        if len(policies) > 1:
            allow_b, _ = self.decisions(policies[1], included)
        match self.prop:
            case "equivalent":
                q = allow_a != allow_b
            case "implies":
                q = z3.And(allow_a, z3.Not(allow_b))
            case "disjoint":
                q = z3.And(allow_a, allow_b)
            case "always-allows":
                q = z3.Not(allow_a)
            case "always-denies":
                q = allow_a
            case "never-errors":
                q = err_a
            case _:  # GUARD_DISJOINT
                q = z3.And(allow_a, z3.Not(err_a), allow_b)
        # The simplifier finds the queries that are false outright; its output is not what the
        # solver gets: it distributes the rules' `!(has && like...)` (a path promise's query:
        # 1.1 MB against 88 KB as encoded), where one_regex works on the formula as encoded.
        return None if z3.is_false(z3.simplify(q)) else one_regex(z3, q)

    # -- counterexamples -------------------------------------------------------------------

    def refuted(self, enc: Encoder, sorts: Sorts, model: Any) -> ProofResult:
        try:
            request, entities = _Extractor(enc, sorts, model).run()
        except (Unsupported, CedarliteError, ValueError, TypeError, AttributeError) as err:
            return self.result(
                None, f"not proved: the solver's counterexample could not be read back ({err})"
            )
        try:
            store = Entities.from_json(entities, schema=self.schema)
            first = is_authorized(request, self.a, store, schema=self.schema, engine="reference")
            second = None
            if self.b is not None:
                second = is_authorized(
                    request, self.b, store, schema=self.schema, engine="reference"
                )
        except CedarliteError as err:
            return self.result(
                None, f"not proved: the solver's counterexample is not valid input ({err.message})"
            )
        ce = ProofCounterexample(request, entities, first, second)
        if not refutes(self.prop, first, second):
            return self.result(
                None,
                "not proved: the solver's counterexample did not refute the property when "
                "re-evaluated (an encoding limit; please report it)",
                ce,
            )
        return self.result(False, f"refuted: {_REFUTATION[self.prop]}", ce)


_OTHER_TOOLS = ("unknown-action", "invalid-action-application")
#: Properties that only ask for allowed requests: leaving a forbid out only allows more.
_MONOTONE = ("disjoint", "always-denies", GUARD_DISJOINT)


@dataclass(frozen=True)
class _Encoded:
    policy: Policy
    sym: Sym


def _action_literals(ps: PolicySet | None) -> list[EntityUID]:
    out: list[EntityUID] = []
    for p in ps.active if ps is not None else ():
        out += [u for u in p.action.entities if isinstance(u, EntityUID)]
        if isinstance(p.action.entity, EntityUID):
            out.append(p.action.entity)
        for cond in p.conditions:
            for node in walk(cond.body):
                value = node.value if isinstance(node, Lit) else None
                if isinstance(value, EntityUID) and is_action_type(value.type):
                    out.append(value)
    return out


def refutes(prop: str, first: Response, second: Response | None) -> bool:
    """Whether the responses of a request refute ``prop``."""
    a = first.decision is Decision.ALLOW
    b = second is not None and second.decision is Decision.ALLOW
    return {
        "equivalent": a != b,
        "implies": a and not b,
        "disjoint": a and b,
        "always-allows": not a,
        "always-denies": a,
        "never-errors": bool(first.errors),
        GUARD_DISJOINT: a and not first.errors and b,
    }[prop]


_STATEMENT = {
    "equivalent": "the two policy sets decide alike",
    "implies": "every request the first allows, the second allows",
    "disjoint": "no request is allowed by both",
    "always-allows": "every request is allowed",
    "always-denies": "every request is denied",
    "never-errors": "no policy errors",
    GUARD_DISJOINT: "no call the guard allows matches the query",
}
_REFUTATION = {
    "equivalent": "a request on which the two policy sets decide differently",
    "implies": "a request the first allows and the second denies",
    "disjoint": "a request both allow",
    "always-allows": "a request that is denied",
    "always-denies": "a request that is allowed",
    "never-errors": "a request on which a policy errors",
    GUARD_DISJOINT: "a call the guard allows that matches the query",
}


class _Extractor:
    """Reads a request and an entity store off a model."""

    def __init__(self, enc: Encoder, sorts: Sorts, model: Any) -> None:
        self.enc, self.sorts, self.model, self.z3 = enc, sorts, model, sorts.z3
        self.names: dict[str, dict[str, str]] = {}
        for uid, const in sorts.literals().items():
            self.names.setdefault(uid.type, {})[str(self.eval(const))] = uid.id

    def eval(self, term: Any) -> Any:
        return self.model.eval(term, model_completion=True)

    def universe(self, type_name: str) -> list[Any]:
        values = self.sorts.enum_values(type_name)
        if values:
            return list(values.values())
        found = {str(x): x for x in self.model.get_universe(self.sorts.entity(type_name)) or []}
        for term in self.enc.entity_terms.get(type_name, {}).values():
            x = self.eval(term)
            found.setdefault(str(x), x)
        return list(found.values())

    def uid(self, type_name: str, value: Any) -> EntityUID:
        values = self.sorts.enum_values(type_name)
        for i, v in values.items():
            if self.z3.eq(v, value) or str(v) == str(value):
                return EntityUID(type_name, i)
        names = self.names.setdefault(type_name, {})
        key = str(value)
        if key not in names:
            base = type_name.rpartition("::")[2].lower()
            taken = set(names.values())
            names[key] = next(f"{base}{n}" for n in itertools.count() if f"{base}{n}" not in taken)
        return EntityUID(type_name, names[key])

    def value(self, ty: CedarType, term: Any) -> Any:
        z3 = self.z3
        v = self.eval(term)
        match ty:
            case BoolType():
                return z3.is_true(v)
            case LongType():
                return v.as_signed_long()
            case StringType():
                return self.string(v)
            case EntityType(name=name):
                return self.uid(name, v)
            case ExtensionType(name="decimal"):
                return Decimal(v.as_signed_long())
            case ExtensionType(name="datetime"):
                return Datetime(v.as_signed_long())
            case ExtensionType(name="duration"):
                return Duration(v.as_signed_long())
            case ExtensionType(name="ipaddr"):
                ip = self.sorts.ip
                v6 = z3.is_true(self.eval(ip.v6(v)))
                return IPAddr(
                    6 if v6 else 4,
                    self.eval(ip.addr(v)).as_long(),
                    self.eval(ip.prefix(v)).as_long(),
                )
            case SetType(element=element):
                return CedarSet(self.value(element, x) for x in self.members(element, v))
            case RecordType():
                return self.record_value(self.enc.unpack(v, ty))
        raise Unsupported(f"a value of type `{ty}`")

    def record_value(self, sym: Sym) -> Record:
        """A record (its attributes as a dict of ``(present, Sym)``) as a Cedar value."""
        out = {}
        for name, (present, field) in sym.v.items():
            if self.z3.is_true(self.eval(present)):
                if isinstance(field.ty, RecordType):
                    out[name] = self.record_value(field)
                else:
                    out[name] = self.value(field.ty, field.v)
        return Record(out)

    def string(self, v: Any) -> str:
        z3 = self.z3
        n = self.eval(z3.Length(v)).as_long()
        return "".join(
            chr(self.eval(z3.StrToCode(z3.SubString(v, i, 1))).as_long()) for i in range(n)
        )

    def members(self, element: CedarType, v: Any) -> list[Any]:
        z3 = self.z3
        if isinstance(element, (EntityType, BoolType)):
            pool = (
                self.universe(element.name)
                if isinstance(element, EntityType)
                else [z3.BoolVal(True), z3.BoolVal(False)]
            )
            return [x for x in pool if z3.is_true(self.eval(z3.IsMember(x, v)))]
        full, out = v, []
        while z3.is_store(v):
            out.append(v.arg(1))
            v = v.arg(0)
        if not (z3.is_const_array(v) and z3.is_false(v.arg(0))):
            # The model's set is not finite: keep the members among the terms the policies
            # test, and the sort's first value (the same for every such set, so that sets
            # the model makes equal stay equal); the re-evaluation says whether that is enough.
            domain = full.sort().domain()
            out = [self.eval(t) for t in self.enc.set_terms.get(str(domain), [])]
            out.append(self.eval(z3.FreshConst(domain)))
        return [x for x in out if z3.is_true(self.eval(z3.IsMember(x, full)))]

    def record(self, sym: Sym) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, (present, field) in sym.v.items():
            if not self.z3.is_true(self.eval(present)):
                continue
            out[name] = self.json(field)
        return out

    def json(self, sym: Sym) -> Any:
        if isinstance(sym.ty, RecordType):
            return self.record(sym if isinstance(sym.v, dict) else self.enc.unpack(sym.v, sym.ty))
        return to_json_value(self.value(sym.ty, sym.v))

    def run(self) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        enc = self.enc
        principal = self.uid(enc.principal.ty.name, self.eval(enc.principal.v))  # type: ignore[attr-defined]
        resource = self.uid(enc.resource.ty.name, self.eval(enc.resource.v))  # type: ignore[attr-defined]
        request = {
            "principal": principal.to_json(),
            "action": enc.action.to_json(),
            "resource": resource.to_json(),
            "context": self.record(enc.context),
        }
        return request, self.entities()

    def entities(self) -> list[dict[str, Any]]:
        out = []
        for type_name, definition in self.sorts.schema.entity_types.items():
            for x in self.universe(type_name):
                uid = self.uid(type_name, x)
                owner = Sym(EntityType(type_name), x, self.z3.BoolVal(False))
                attrs = {}
                for name, attr in definition.shape.attributes.items():
                    present, field = self.enc.attribute(owner, attr.type, (name,), attr.required)
                    if self.z3.is_true(self.eval(present)):
                        attrs[name] = self.json(field)
                parents = []
                for anc in sorted(self.sorts.schema.entity_type_ancestors(type_name)):
                    key = ("ancestors", type_name, anc)
                    if key not in self.sorts.functions():
                        continue
                    ancestors = self.eval(self.enc.ancestors(x, type_name, anc))
                    for y in self.universe(anc):
                        if self.z3.is_true(self.eval(self.z3.IsMember(y, ancestors))):
                            parents.append(self.uid(anc, y).to_json())
                ent: dict[str, Any] = {"uid": uid.to_json(), "attrs": attrs, "parents": parents}
                tags = self.tags(type_name, definition.tags, x)
                if tags:
                    ent["tags"] = tags
                out.append(ent)
        return out

    def tags(self, type_name: str, tag_type: CedarType | None, x: Any) -> dict[str, Any]:
        z3, sorts = self.z3, self.sorts
        if tag_type is None or ("tags", type_name) not in sorts.functions():
            return {}
        keys = sorts.functions()[("tags", type_name)](x)
        values = sorts.functions().get(("tag-values", type_name))
        out: dict[str, Any] = {}
        for term in self.enc.tag_keys.get(type_name, ()):
            key = self.eval(term)
            if z3.is_true(self.eval(z3.IsMember(key, keys))):
                name = self.string(key)
                if values is None:
                    value = self._default(tag_type)
                else:
                    value = self.json(Sym(tag_type, z3.Select(values(x), key), z3.BoolVal(False)))
                out[name] = value
        return out

    def _default(self, ty: CedarType) -> Any:
        z3 = self.z3
        return self.json(Sym(ty, z3.FreshConst(self.sorts.sort_of(ty)), z3.BoolVal(False)))
