"""The search for a request on which two policy sets differ (see :mod:`.equivalence`)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..authorizer import is_authorized
from ..data.entities import Entities
from ..data.ext import Datetime, Decimal, Duration, IPAddr
from ..data.request import Request
from ..data.values import EMPTY_RECORD, CedarSet, EntityUID, Record, to_json_value
from ..engine.evaluator import Evaluator
from ..errors import CedarliteError
from ..lang.ast import Var, is_action_type
from ..policyset import PolicySet
from ._atoms import Analysis, Atom, Element, Hints, Input, kind_of, shared_key
from .results import Counterexample, Equivalence

if TYPE_CHECKING:
    from hypothesis import settings as hsettings

    from ..schema.model import Schema
    from ..schema.types import CedarType


# The space


DEFAULT_MAX_EXAMPLES = 1000
DEFAULT_EXHAUSTIVE_LIMIT = 20_000
_SUBSET_CAP = 6  # at most 2**6 subsets of set elements or `in` targets per input


class _Marker:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


MISSING = _Marker("<missing>")
RECORD = _Marker("<record>")


@dataclass(frozen=True)
class _Dim:
    """One input of a case: its representatives (the first is the simplest)."""

    input: Input
    options: tuple[Any, ...]


_Rep = tuple[EntityUID, frozenset[EntityUID] | None]  # a uid, and its ancestors (generated store)


@dataclass(frozen=True)
class _Case:
    """The request entities of a part of the space, and the inputs that vary within it."""

    action: _Rep
    principal: _Rep
    resource: _Rep
    dims: tuple[_Dim, ...]
    # Where each record's paths are among the dims: head -> dim indices, shortest path first.
    layout: Mapping[tuple[str, ...], tuple[int, ...]] = field(default_factory=dict)

    @classmethod
    def of(cls, action: _Rep, principal: _Rep, resource: _Rep, dims: tuple[_Dim, ...]) -> _Case:
        heads: dict[tuple[str, ...], list[int]] = {}
        for i, d in enumerate(dims):
            heads.setdefault(d.input[:-1], []).append(i)
        layout = {
            h: tuple(sorted(ix, key=lambda i: len(dims[i].input[-1]))) for h, ix in heads.items()
        }
        return cls(action, principal, resource, dims, layout)

    def entity_key(self, choice: Sequence[int]) -> tuple[int, ...]:
        """The part of a choice that decides the entities (everything but the context)."""
        return tuple(c for c, d in zip(choice, self.dims, strict=True) if d.input[0] != "ctx")


class Space:
    def __init__(
        self,
        a: PolicySet,
        b: PolicySet,
        schema: Schema | None,
        entities: Entities | list[Any] | str | None,
    ) -> None:
        self.a, self.b, self.schema = a, b, schema
        self.store: Entities | None = None
        if entities is not None:
            self.store = (
                entities
                if isinstance(entities, Entities)
                else Entities.from_json(entities, schema=schema)
            )
        self.an = Analysis([*a.active, *b.active], self.store is not None)
        self.why_not = "; ".join(self.an.why_not)
        self.exact = not self.an.why_not
        self.invalid: list[str] = []  # generated inputs the engine refused (a bug of ours)
        self._fresh: dict[tuple[str, bool], EntityUID] = {}
        self._options: dict[Any, tuple[Any, ...]] = {}
        self._last_store: tuple[Any, Any, Any] = (None, None, None)
        self.known = self._known_uids()
        self.cases = self._cases()

    # -- entity representatives --------------------------------------------------------------

    def _known_uids(self) -> list[EntityUID]:
        """Every uid the policies, the given store and the schema's actions mention."""
        uids = dict(self.an.uids)
        if self.store is not None:
            for uid in self.store:
                uids[uid] = None
                ent = self.store[uid]
                uids.update(dict.fromkeys(ent.parents))
                for value in (*ent.attrs.values(), *ent.tags.values()):
                    uids.update(dict.fromkeys(_uids_in(value)))
        if self.schema is not None:
            uids.update(dict.fromkeys(self.schema.actions))
        return list(uids)

    def fresh(self, type_name: str, *, second: bool = False) -> EntityUID:
        """An entity of ``type_name`` that nothing mentions (``second``: another one, for
        attributes that may or may not be the same entity as a request variable)."""
        key = (type_name, second)
        uid = self._fresh.get(key)
        if uid is None:
            taken = {u.id for u in self.known if u.type == type_name}
            if second:
                taken.add(self.fresh(type_name).id)
            uid = self._fresh[key] = EntityUID(type_name, _unused("x", taken))
        return uid

    def candidates(self, var: Var, action: EntityUID | None) -> list[EntityUID]:
        """Every uid that may stand for ``var`` (a request's principal, action or resource)."""
        known = self.known
        if self.schema is not None:
            if var is Var.ACTION:
                return [u for u, d in self.schema.actions.items() if d.applies_to is not None]
            assert action is not None
            types = (
                self.schema.principal_types_of(action)
                if var is Var.PRINCIPAL
                else self.schema.resource_types_of(action)
            )
            out = []
            for t in types:
                enum = self.schema.entity_types[t].enum if t in self.schema.entity_types else None
                if enum is not None:
                    out += [EntityUID(t, i) for i in enum]
                else:
                    out += [u for u in known if u.type == t] + [self.fresh(t)]
            return list(dict.fromkeys(out))
        actions = [u for u in known if is_action_type(u.type)]
        if var is Var.ACTION:
            return [*actions, self.fresh("Action")]
        seen: dict[str, None] = dict.fromkeys(u.type for u in known)
        seen.update(self.an.types)
        others = [u for u in known if not is_action_type(u.type)]
        fresh = [self.fresh(t) for t in seen if not is_action_type(t)]
        # Plain entities first (what a counterexample shrinks to), actions as entities last.
        other = _unused("Other", seen)
        return [
            *others,
            *fresh,
            self.fresh(other),
            self.fresh(other, second=True),
            *actions,
            self.fresh("Action"),
        ]

    def ancestor_options(self, uid: EntityUID) -> list[frozenset[EntityUID] | None]:
        """The sets of ``in`` targets ``uid`` may be a member of (``None``: the given store)."""
        if self.store is not None:
            return [None]
        targets = [
            t
            for t in self.an.targets
            if t != uid and is_action_type(t.type) == is_action_type(uid.type)
        ]
        if self.schema is not None:
            if is_action_type(uid.type):
                return [frozenset(self.schema.action_ancestors(uid))]
            allowed = self._direct_parent_types(uid.type)
            indirect = [
                t
                for t in targets
                if t.type not in allowed and t.type in self.schema.entity_type_ancestors(uid.type)
            ]
            if indirect:
                self._inexact(f"`{uid.type}` is in `{indirect[0]}` only through other entities")
            targets = [t for t in targets if t.type in allowed]
        if len(targets) > _SUBSET_CAP:
            self._inexact(f"{len(targets)} `in` targets (exhaustive up to {_SUBSET_CAP})")
            return [frozenset(), *(frozenset({t}) for t in targets), frozenset(targets)]
        return [
            frozenset(c)
            for r in range(len(targets) + 1)
            for c in itertools.combinations(targets, r)
        ]

    def _direct_parent_types(self, type_name: str) -> frozenset[str]:
        assert self.schema is not None
        definition = self.schema.entity_types.get(type_name)
        return definition.member_of_types if definition else frozenset()

    def _inexact(self, why: str | None = None) -> None:
        self.exact = False
        if why is not None and why not in self.why_not:
            self.why_not = f"{self.why_not}; {why}" if self.why_not else why

    def var_classes(self, var: Var, action: EntityUID | None) -> list[list[_Rep]]:
        """Representatives of a request variable, grouped by their outcomes on the atoms that
        read only it (each group is interchangeable; members in order of simplicity)."""
        options = [
            (u, anc) for u in self.candidates(var, action) for anc in self.ancestor_options(u)
        ]
        mine = [at for at in self.an.atoms if ("var", var.value) in at.inputs]
        if any(len(at.inputs) > 1 for at in mine):
            return [[o] for o in options]  # its outcomes depend on other inputs too
        groups: dict[Any, list[_Rep]] = {}
        for uid, anc in options:
            store = self.store
            if store is None:
                parents = [p.to_json() for p in anc or ()]
                store = Entities.from_json(
                    [{"uid": uid.to_json(), "attrs": {}, "parents": parents}]
                )
            ev = Evaluator(Request(uid, uid, uid, EMPTY_RECORD), store)
            typed = uid.type if self.schema is not None else None
            signature = (typed, *(_outcome(at, ev) for at in mine))
            groups.setdefault(signature, []).append((uid, anc))
        return list(groups.values())

    # -- cases and dims ----------------------------------------------------------------------

    def _cases(self) -> list[_Case]:
        cases: list[_Case] = []
        for action, *_ in self.var_classes(Var.ACTION, None):
            principals = self.var_classes(Var.PRINCIPAL, action[0])
            resources = self.var_classes(Var.RESOURCE, action[0])
            for principal, *_ in principals:
                for group in resources:
                    resource = self._apart(principal, group)
                    dims = self.dims(action[0], principal[0], resource[0])
                    cases.append(_Case.of(action, principal, resource, dims))
        if not cases:
            self._inexact("the schema allows no request")
        return cases

    def _apart(self, principal: _Rep, group: list[_Rep]) -> _Rep:
        """A member of ``group`` that is not the principal's entity, where it matters: in a
        generated store one entity cannot hold the principal's and the resource's data."""
        if self.store is not None:
            return group[0]
        for member in group:
            if member[0] != principal[0]:
                return member
        if group[0][1] != principal[1]:
            self._inexact("the principal and the resource could not be kept apart")
        return group[0]

    def dims(
        self, action: EntityUID, principal: EntityUID, resource: EntityUID
    ) -> tuple[_Dim, ...]:
        out: list[_Dim] = []
        if self.store is None:
            for var, uid in (("principal", principal), ("resource", resource)):
                if var == "resource" and resource == principal:
                    continue
                # One entity for both: it carries what either variable reads.
                both = ("principal", "resource") if resource == principal else (var,)
                out += self.entity_dims(var, uid, both)
        out += self.record_dims(("ctx",), self.context_type(action), self._reads("ctx", ()))
        return tuple(out)

    def _reads(self, kind: str, variables: Sequence[str]) -> set[tuple[str, ...]]:
        """The paths of one kind the conditions read (on any of ``variables``)."""
        return {
            inp[-1]
            for at in self.an.atoms
            for inp in at.inputs
            if inp[0] == kind and (kind == "ctx" or inp[1] in variables)
        }

    def context_type(self, action: EntityUID) -> CedarType | None:
        if self.schema is None:
            return None
        definition = self.schema.actions.get(action)
        applies = definition.applies_to if definition else None
        return applies.context if applies else None

    def entity_dims(self, var: str, uid: EntityUID, readers: Sequence[str]) -> list[_Dim]:
        shape = tags = None
        if self.schema is not None:
            definition = self.schema.entity_types.get(uid.type)
            if definition is None:  # an action, or an entity type the schema does not declare
                return []
            shape, tags = definition.shape, definition.tags
        dims = self.record_dims(("attr", var), shape, self._reads("attr", readers))
        if self.schema is None or tags is not None:
            dims += self.record_dims(("tag", var), None, self._reads("tag", readers), tags)
        return dims

    def record_dims(
        self,
        head: tuple[str, ...],
        rtype: CedarType | None,
        reads: set[tuple[str, ...]],
        tag_type: CedarType | None = None,
    ) -> list[_Dim]:
        """The dims of every path under ``head`` in ``reads`` (and, with a schema, the
        required attributes, fixed to one well-typed value)."""
        kind = head[0]
        used = sorted(reads, key=lambda path: (len(path), path))
        dims: list[_Dim] = []
        if self.schema is None:
            for path in used:
                dims.append(
                    _Dim(
                        (*head, path),
                        self.options(
                            (kind, "*", path) if kind != "ctx" else (kind, path),
                            None,
                            required=False,
                        ),
                    )
                )
            return dims
        from ..schema.types import RecordType

        if kind == "tag":
            for path in used:
                if tag_type is not None and len(path) == 1:
                    dims.append(
                        _Dim(
                            (*head, path), self.options((kind, "*", path), tag_type, required=False)
                        )
                    )
                elif tag_type is not None:
                    self._inexact("paths inside tags")
            return dims
        if not isinstance(rtype, RecordType):
            return dims
        self._record(rtype, (), head, dims, kind, set(used))
        return dims

    def _record(
        self,
        rtype: Any,
        prefix: tuple[str, ...],
        head: tuple[str, ...],
        dims: list[_Dim],
        kind: str,
        used: set[tuple[str, ...]],
    ) -> None:
        from ..schema.types import EntityType, RecordType

        for name, attr in rtype.attributes.items():
            path = (*prefix, name)
            read = any(u[: len(path)] == path for u in used)
            key = (kind, "*", path) if kind != "ctx" else (kind, path)
            if (
                read
                and isinstance(attr.type, EntityType)
                and any(len(u) > len(path) and u[: len(path)] == path for u in used)
            ):
                self._inexact(f"`{_path_text(key)}` is an entity whose attributes are read")
            if read:
                opts = self.options(key, attr.type, required=attr.required)
            else:
                opts = (_default(attr.type, self),) if attr.required else (MISSING,)
            dims.append(_Dim((*head, path), opts))
            if read and isinstance(attr.type, RecordType):
                self._record(attr.type, path, head, dims, kind, used)

    def options(self, key: Input, ty: CedarType | None, *, required: bool) -> tuple[Any, ...]:
        """The representatives of one path (typed by ``ty`` with a schema)."""
        cached = self._options.get((key, ty, required))
        if cached is None:
            cached = self._options[(key, ty, required)] = self._compute_options(key, ty, required)
        return cached

    def _compute_options(self, key: Input, ty: CedarType | None, required: bool) -> tuple[Any, ...]:
        hints = self.an.hints.get(key) or Hints()
        if not hints.complete:
            self._inexact()  # the analysis said why
        if hints.record and "entity" in hints.kinds:
            # `context.who.name` may read an entity's attribute: tied to other inputs.
            self._inexact(f"`{_path_text(key)}` may be an entity whose attributes are read")
        reps: list[Any] = [] if required else [MISSING]
        if ty is None:
            reps += self._untyped(hints)
        else:
            reps += self._typed(hints, ty)
        reps = _unique(reps)
        if hints.complete:
            reps = self._merge(key, reps)
        return tuple(reps)

    def _untyped(self, hints: Hints) -> list[Any]:
        kinds = set(hints.kinds)
        reps: list[Any] = []
        plain = [v for v in hints.values if not isinstance(v, Element)]
        elements = [v.value for v in hints.values if isinstance(v, Element)]
        reps += plain
        if "bool" in kinds:
            reps += [True, False]
        if "string" in kinds:
            reps.append(_other_string(plain))
        if "entity" in kinds:
            reps += self.candidates(Var.PRINCIPAL, None)
            reps += [self.fresh(t, second=True) for t in dict.fromkeys(u.type for u in reps)]
        if "set" in kinds:
            reps += _subsets(elements, self)
        for ext in ("decimal", "datetime", "duration", "ipaddr"):
            if ext in kinds and not any(kind_of(v) == ext for v in plain):
                reps.append(_EXT_DEFAULT[ext]())
        if hints.record:
            reps.append(RECORD)
        if "any" in kinds or (not kinds and not hints.record):
            reps += [True, 0, "", CedarSet(), Record()]
            reps += self.an.constants[:20]
        wrong = next(
            (
                v
                for v in (0, "", False, CedarSet())
                if kind_of(v) not in kinds and not (hints.record and kind_of(v) == "record")
            ),
            None,
        )
        if wrong is not None:
            reps.append(wrong)
        return reps

    def _typed(self, hints: Hints, ty: CedarType) -> list[Any]:
        from ..schema.types import (
            BoolType,
            EntityType,
            ExtensionType,
            LongType,
            RecordType,
            SetType,
            StringType,
        )

        plain = [v for v in hints.values if not isinstance(v, Element)]
        elements = [v.value for v in hints.values if isinstance(v, Element)]
        if isinstance(ty, BoolType):
            return [True, False]
        if isinstance(ty, LongType):
            return [v for v in plain if v.__class__ is int] or [0]
        if isinstance(ty, StringType):
            strings = [v for v in plain if v.__class__ is str]
            return [*strings, _other_string(strings)]
        if isinstance(ty, EntityType):
            return self.candidates_of_type(ty.name)
        if isinstance(ty, ExtensionType):
            same = [v for v in plain if kind_of(v) == ty.name]
            return same or [_EXT_DEFAULT[ty.name]()]
        if isinstance(ty, SetType):
            element_type = ty.element
            good = [e for e in elements if _fits(e, element_type)]
            if not good and not isinstance(element_type, RecordType | SetType):
                good = [_default(element_type, self)]
            return _subsets(good, self, element_type)
        if isinstance(ty, RecordType):
            return [RECORD]
        return [_default(ty, self)]

    def candidates_of_type(self, type_name: str) -> list[EntityUID]:
        assert self.schema is not None
        definition = self.schema.entity_types.get(type_name)
        if definition is not None and definition.enum is not None:
            return [EntityUID(type_name, i) for i in definition.enum]
        known = [u for u in self.known if u.type == type_name]
        return [*known, self.fresh(type_name), self.fresh(type_name, second=True)]

    def _merge(self, key: Input, reps: list[Any]) -> list[Any]:
        """Representatives merged by their outcomes on the atoms that read only this path."""
        mine = [at for at in self.an.atoms if any(shared_key(i) == key for i in at.inputs)]
        if not mine or any(len(at.inputs) > 1 for at in mine):
            return reps
        seen: dict[Any, Any] = {}
        for rep in reps:
            if rep is RECORD:
                seen[("record",)] = rep
                continue
            ev = _probe(key, rep)
            seen.setdefault(tuple(_outcome(at, ev) for at in mine), rep)
        return list(seen.values())

    # -- concrete requests -------------------------------------------------------------------

    def size(self) -> int:
        total = 0
        for case in self.cases:
            n = 1
            for d in case.dims:
                n *= len(d.options)
            total += n
        return total

    def request(self, case: _Case, choice: Sequence[int]) -> dict[str, Any]:
        """The request dict of one point of the space."""
        return {
            "principal": case.principal[0].to_json(),
            "action": case.action[0].to_json(),
            "resource": case.resource[0].to_json(),
            "context": _assemble(case, choice, ("ctx",)),
        }

    def entities(self, case: _Case, choice: Sequence[int]) -> list[dict[str, Any]]:
        """The entity JSON of one point of the space (generated store)."""
        ents: list[dict[str, Any]] = []
        for var, (uid, anc) in (("principal", case.principal), ("resource", case.resource)):
            if var == "resource" and uid == case.principal[0]:
                continue
            attrs = _assemble(case, choice, ("attr", var))
            tags = _assemble(case, choice, ("tag", var))
            if self.schema is None and not attrs and not tags and not anc:
                continue  # the same as not being in the store
            parents = [p.to_json() for p in sorted(anc or ())]
            ent: dict[str, Any] = {"uid": uid.to_json(), "attrs": attrs, "parents": parents}
            if tags:
                ent["tags"] = tags
            ents.append(ent)
        act_uid, act_anc = case.action
        if self.schema is None and act_anc:
            parents = [p.to_json() for p in sorted(act_anc)]
            same = next((e for e in ents if e["uid"] == act_uid.to_json()), None)
            if same is None:
                ents.append({"uid": act_uid.to_json(), "attrs": {}, "parents": parents})
            else:  # the principal (or resource) is the action: one entity, all its parents
                known = {json.dumps(p, sort_keys=True) for p in same["parents"]}
                same["parents"] += [
                    p for p in parents if json.dumps(p, sort_keys=True) not in known
                ]
        return ents

    def decide(self, case: _Case, choice: Sequence[int]) -> Counterexample | None:
        """Both sets' answers at one point; a counterexample if they differ."""
        request = self.request(case, choice)
        try:
            if self.store is not None:
                store, ents = self.store, []
            else:
                key = (id(case), case.entity_key(choice))
                if self._last_store[0] != key:  # the context varies fastest: reuse the store
                    ents = self.entities(case, choice)
                    self._last_store = (key, Entities.from_json(ents, schema=self.schema), ents)
                store, ents = self._last_store[1], self._last_store[2]
            first = is_authorized(request, self.a, store, schema=self.schema)
            second = is_authorized(request, self.b, store, schema=self.schema)
        except CedarliteError as err:  # an input we built is not well-typed: never hide it
            self.invalid.append(err.message)
            return None
        if first.decision is second.decision:
            return None
        if self.store is not None:
            ents = self.store.to_json()
        return Counterexample(request, ents, first, second, (self.a.labels, self.b.labels))

    # -- search --------------------------------------------------------------------------------

    def enumerate(self) -> Equivalence:
        checked = 0
        for ci, case in enumerate(self.cases):
            for choice in itertools.product(*(range(len(d.options)) for d in case.dims)):
                checked += 1
                found = self.decide(case, choice)
                if found is not None:
                    return Equivalence(self.shrink(ci, list(choice)), checked, True)
        return self.result(None, checked, True, "")

    def result(
        self, found: Counterexample | None, checked: int, exhaustive: bool, why: str
    ) -> Equivalence:
        """The report, honest about inputs the engine refused (they were not checked)."""
        if self.invalid:
            note = (
                f"{len(self.invalid)} generated requests were not checked (the engine refused "
                f"them: {self.invalid[0]}); the result covers the others"
            )
            return Equivalence(
                found, checked - len(self.invalid), False, f"{why}; {note}" if why else note
            )
        return Equivalence(found, checked, exhaustive, why)

    def shrink(self, ci: int, choice: list[int]) -> Counterexample:
        """Lower each choice to the simplest representative that keeps the difference (and the
        case to an earlier one with the same inputs, if the difference survives there)."""
        shape = [(d.input, len(d.options)) for d in self.cases[ci].dims]
        for earlier in range(ci):
            same = [(d.input, len(d.options)) for d in self.cases[earlier].dims] == shape
            if same and self.decide(self.cases[earlier], choice) is not None:
                ci = earlier
                break
        case = self.cases[ci]
        for i in range(len(choice)):
            for j in range(choice[i]):
                trial = [*choice[:i], j, *choice[i + 1 :]]
                if self.decide(case, trial) is not None:
                    choice = trial
                    break
        found = self.decide(case, choice)
        assert found is not None
        return found

    def sample(self, max_examples: int, settings: hsettings | None, why: str) -> Equivalence:
        from hypothesis import HealthCheck, Phase, Verbosity, given
        from hypothesis import settings as hsettings
        from hypothesis import strategies as st

        if not self.cases:
            return Equivalence(None, 0, False, why)
        cases = self.cases
        seen: set[tuple[int, tuple[int, ...]]] = set()

        @st.composite
        def points(draw: Any) -> tuple[int, tuple[int, ...]]:
            ci = draw(st.integers(0, len(cases) - 1))
            return ci, tuple(draw(st.integers(0, len(d.options) - 1)) for d in cases[ci].dims)

        first_hit = 0  # requests tried when the first difference turned up (before shrinking)

        def check(point: tuple[int, tuple[int, ...]]) -> None:
            nonlocal first_hit
            seen.add(point)
            found = self.decide(cases[point[0]], point[1])
            if found is not None:
                first_hit = first_hit or len(seen)
                raise _Found(found)

        config = settings or hsettings(
            max_examples=max_examples,
            deadline=None,
            database=None,
            derandomize=True,
            suppress_health_check=list(HealthCheck),
            verbosity=Verbosity.quiet,
            report_multiple_bugs=False,
            phases=(Phase.generate, Phase.shrink),
        )
        try:
            config(given(points())(check))()
        except _Found as found:
            return self.result(found.counterexample, first_hit, False, why)
        return self.result(None, len(seen), False, why)


class _Found(Exception):
    def __init__(self, counterexample: Counterexample) -> None:
        super().__init__("policy sets decide differently")
        self.counterexample = counterexample


# ---------------------------------------------------------------------------------------------
# Helpers


def _outcome(atom: Atom, ev: Evaluator) -> bool | None:
    """An atom's outcome: true, false, or ``None`` for an error. Atoms stand where a Bool is
    required (a condition, an operand of ``&&``/``||``/``!``, a branch of ``if``), so any
    other value is an error there, as a failed evaluation is."""
    try:
        value = atom.run(ev)
    except CedarliteError:
        return None
    return value if value.__class__ is bool else None


def _probe(key: Input, rep: Any) -> Evaluator:
    """An evaluator in which the path ``key`` holds ``rep`` (for merging representatives)."""
    kind, path = key[0], key[-1]
    value: Any = {} if rep is MISSING else _json(rep)
    nested: dict[str, Any] = {}
    if rep is not MISSING:
        cursor = nested
        for name in path[:-1]:
            cursor = cursor.setdefault(name, {})
        cursor[path[-1]] = value
    else:
        cursor = nested
        for name in path[:-1]:
            cursor = cursor.setdefault(name, {})
    uid = EntityUID("__cedarlite", "probe")
    if kind == "ctx":
        from ..data.jsonvalue import value_from_json

        return Evaluator(Request(uid, uid, uid, value_from_json(nested, "context")), Entities())
    ent: dict[str, Any] = {"uid": uid.to_json(), "attrs": {}, "parents": []}
    ent["attrs" if kind == "attr" else "tags"] = nested
    return Evaluator(Request(uid, uid, uid, EMPTY_RECORD), Entities.from_json([ent]))


def _json(value: Any) -> Any:
    if value is RECORD:
        return {}
    return to_json_value(value)


def _assemble(case: _Case, choice: Sequence[int], head: tuple[str, ...]) -> dict[str, Any]:
    """The JSON record of the paths under ``head``: a path is placed only if each of its
    prefixes was chosen to be a record (prefixes come first: they are shorter)."""
    out: dict[str, Any] = {}
    chosen: dict[tuple[str, ...], Any] = {}
    for i in case.layout.get(head, ()):
        path, rep = case.dims[i].input[-1], case.dims[i].options[choice[i]]
        chosen[path] = rep
        cursor: Any = out
        for k in range(1, len(path)):
            if chosen.get(path[:k]) is not RECORD:
                cursor = None
                break
            cursor = cursor.get(path[k - 1])
        if rep is not MISSING and isinstance(cursor, dict):
            cursor[path[-1]] = _json(rep)
    return out


def _unique(reps: list[Any]) -> list[Any]:
    out: list[Any] = []
    keys: set[Any] = set()
    for r in reps:
        k = (kind_of(r), r) if not isinstance(r, _Marker) else r
        if k not in keys:
            keys.add(k)
            out.append(r)
    return out


def _unused(base: str, taken: Iterable[Any]) -> str:
    """``base``, or ``base1``, ``base2``... the first not in ``taken``."""
    used = set(taken)
    return next(
        n
        for n in itertools.chain((base,), (f"{base}{i}" for i in itertools.count(1)))
        if n not in used
    )


def _other_string(strings: Sequence[Any]) -> str:
    return _unused("other", strings)


def _subsets(elements: Sequence[Any], space: Space, element_type: Any = None) -> list[CedarSet]:
    """Every subset of ``elements`` plus one other element (capped)."""
    els = _unique(list(elements))
    other = _other_element(els, space, element_type)
    if other is not None:
        els.append(other)
    if len(els) > _SUBSET_CAP:
        space._inexact(
            f"a set compared with {len(els) - 1} literals (exhaustive up to {_SUBSET_CAP - 1})"
        )
        return [CedarSet(), *(CedarSet([e]) for e in els), CedarSet(els)]
    return [CedarSet(c) for r in range(len(els) + 1) for c in itertools.combinations(els, r)]


def _other_element(els: Sequence[Any], space: Space, element_type: Any) -> Any:
    if element_type is not None:
        from ..schema.types import EntityType, LongType, StringType

        if isinstance(element_type, StringType):
            return _other_string(els)
        if isinstance(element_type, LongType):
            return max((e for e in els if e.__class__ is int), default=0) + 1
        if isinstance(element_type, EntityType):
            return space.fresh(element_type.name)
        return None
    if not els:
        return "other"
    kind = kind_of(els[0])
    if kind == "string":
        return _other_string(els)
    if kind == "long":
        return (
            max(e for e in els if e.__class__ is int) + 1
            if all(e.__class__ is int for e in els)
            else "other"
        )
    if kind == "entity":
        return space.fresh(els[0].type)
    return "other"


_EXT_DEFAULT: dict[str, Callable[[], Any]] = {
    "decimal": lambda: Decimal.parse("0.0"),
    "ipaddr": lambda: IPAddr.parse("0.0.0.0"),
    "datetime": lambda: Datetime.parse("1970-01-01"),
    "duration": lambda: Duration.parse("0ms"),
}


def _default(ty: Any, space: Space) -> Any:
    """One well-typed value of a schema type."""
    from ..schema.types import (
        BoolType,
        EntityType,
        ExtensionType,
        LongType,
        RecordType,
        SetType,
        StringType,
    )

    if isinstance(ty, BoolType):
        return False
    if isinstance(ty, LongType):
        return 0
    if isinstance(ty, StringType):
        return ""
    if isinstance(ty, EntityType):
        return space.candidates_of_type(ty.name)[0]
    if isinstance(ty, ExtensionType):
        return _EXT_DEFAULT[ty.name]()
    if isinstance(ty, SetType):
        return CedarSet()
    if isinstance(ty, RecordType):
        return Record({k: _default(a.type, space) for k, a in ty.attributes.items() if a.required})
    raise TypeError(ty)  # pragma: no cover


def _fits(value: Any, ty: Any) -> bool:
    from ..schema.types import BoolType, EntityType, ExtensionType, LongType, StringType

    kind = kind_of(value)
    return (
        (isinstance(ty, BoolType) and kind == "bool")
        or (isinstance(ty, LongType) and kind == "long")
        or (isinstance(ty, StringType) and kind == "string")
        or (isinstance(ty, EntityType) and kind == "entity" and value.type == ty.name)
        or (isinstance(ty, ExtensionType) and kind == ty.name)
    )


def _uids_in(value: Any) -> Iterator[EntityUID]:
    stack = [value]
    while stack:
        v = stack.pop()
        if v.__class__ is EntityUID:
            yield v
        elif v.__class__ is CedarSet:
            stack.extend(v)
        elif v.__class__ is Record:
            stack.extend(v.values())


def _path_text(key: Input) -> str:
    root = {"ctx": "context", "attr": "<entity>", "tag": "<tag>"}[key[0]]
    return ".".join((root, *key[-1]))
