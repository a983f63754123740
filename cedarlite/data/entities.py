"""The entity store: entities with attributes, tags and transitively closed ancestors.

Entities come from Cedar's entity JSON (:meth:`Entities.from_json`), from Python objects, or
from :class:`EntityProvider` objects (the tool catalog, tool parameter schemas). A store is
immutable; :meth:`Entities.overlay` layers per-request entities over a shared base without
copying it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache, partial
from operator import itemgetter
from typing import Any, Protocol, runtime_checkable

from ..errors import EntitiesError
from ..lexical import is_action_type, is_valid_type_name
from .jsonvalue import (
    JSONValueError,
    check_json_limits,
    load_json,
    plain_uid,
    preview,
    record_from_json,
    uid_from_json,
)
from .values import EMPTY_RECORD, EntityUID, Record, to_json_value


@dataclass(frozen=True, slots=True)
class Entity:
    """One entity: its uid, attributes, direct parents, tags and (computed) ancestors."""

    uid: EntityUID
    attrs: Record = EMPTY_RECORD
    parents: frozenset[EntityUID] = frozenset()
    tags: Record = EMPTY_RECORD
    ancestors: frozenset[EntityUID] = field(default=frozenset(), compare=False)

    def to_json(self) -> dict[str, Any]:
        """Cedar's entity JSON for this entity."""
        out: dict[str, Any] = {
            "uid": self.uid.to_json(),
            "attrs": {k: to_json_value(v) for k, v in self.attrs.items()},
            "parents": [p.to_json() for p in sorted(self.parents)],
        }
        if self.tags:
            out["tags"] = {k: to_json_value(v) for k, v in self.tags.items()}
        return out


@runtime_checkable
class EntityProvider(Protocol):
    """Anything that contributes entities to a store (the tool catalog, a directory...)."""

    def provide_entities(self) -> Iterable[Entity]:
        """The entities this provider contributes (ancestors need not be computed)."""
        ...


class EntitySchema(Protocol):
    """What :meth:`Entities.from_json` needs from a schema (:class:`cedarlite.Schema` has it)."""

    def conform_entity(
        self, uid: EntityUID, item: Mapping[str, Any], parents: frozenset[EntityUID]
    ) -> Entity:
        """The entity of JSON ``item`` checked against its declaration, values read by their
        declared types; raises :class:`EntitiesError`."""
        ...

    def action_entities(self) -> Iterable[Entity]:
        """The schema's actions as entities (added to every store read with the schema)."""
        ...


_SERIALS = itertools.count()
_UID_TYPE = itemgetter(0)
_UID_ID = itemgetter(1)


class Entities(Mapping[EntityUID, Entity]):
    """An immutable entity store keyed by :class:`EntityUID`.

    ``get(uid)`` returns the :class:`Entity` (with transitively closed ``ancestors``) or
    ``None``; so does ``lookup(uid)``, the fastest way (for a store that is not an overlay,
    the dictionary's own ``get``). Parents may name entities that are not in the store.
    """

    __slots__ = ("_base", "_by_uid", "lookup", "serial", "valid_types")

    def __init__(self, entities: Iterable[Entity] = (), *, _base: Entities | None = None) -> None:
        by_uid: dict[EntityUID, Entity] = {}
        for ent in entities:
            prev = by_uid.get(ent.uid)
            if prev is not None and prev != ent:
                # Rust's message; like Rust, an identical repeat of an entity is accepted.
                raise EntitiesError(f"duplicate entity entry `{ent.uid}`")
            by_uid[ent.uid] = ent
        self._init(_close_ancestors(by_uid, _base), _base)

    def _init(
        self, by_uid: dict[EntityUID, Entity], base: Entities | None, valid: bool | None = None
    ) -> None:
        """Set the fields of a store of ``by_uid`` (ancestors closed) on top of ``base``
        (``valid``: whether the uids of ``by_uid`` are well formed, if the caller knows)."""
        self._base = base
        self._by_uid = by_uid
        self.lookup: Callable[[EntityUID], Entity | None] = (
            by_uid.get if base is None else _lookup_over(by_uid, base)
        )
        # Whether every stored uid is well formed, str fields and a valid type name (always,
        # for stores read from JSON): a request naming a stored entity then needs no check of
        # the uid's fields (the compiled engine's reading of request dicts).
        if valid is None:
            types = set(map(_UID_TYPE, by_uid))  # (maps and set checks: at C speed)
            valid = (
                _STRINGS.issuperset(map(type, types))
                and _STRINGS.issuperset(map(type, map(_UID_ID, by_uid)))
                and all(map(is_valid_type_name, types))
            )
        self.valid_types: bool = valid and (base is None or base.valid_types)
        # A process-unique number (never reused, unlike id()): keys the decision caches.
        self.serial = next(_SERIALS)

    # -- construction ----------------------------------------------------------------------

    @classmethod
    def from_json(
        cls,
        data: str | bytes | list[Any] | None,
        *,
        schema: EntitySchema | None = None,
        source: str | None = None,
    ) -> Entities:
        """Parse Cedar's entity JSON (a JSON text or an already-decoded list).

        With a ``schema``, attribute values are interpreted by their declared types, entities
        are checked against their declarations and the schema's action entities are added.
        Raises :class:`EntitiesError`.
        """
        text = None
        if isinstance(data, str | bytes):
            text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
            items = load_json(text, source, EntitiesError)
        else:
            items = data
        if items is None:
            items = []
        if not isinstance(items, list):
            raise EntitiesError("entities must be a JSON array of entity objects", source=source)
        entities = []
        for i, item in enumerate(items):
            try:
                entities.append(_entity_from_json(item, i, source, schema))
            except EntitiesError as err:
                if text is not None and err.span is None:  # point at the entity in the file
                    # lazy on purpose: only a mistake needs it (the JSON locator, suggestions)
                    from .._jsonloc import json_span

                    err.span, err.text = json_span(text, (i,)), text
                raise
        if schema is not None:
            declared = {e.uid for e in entities}
            entities += [e for e in schema.action_entities() if e.uid not in declared]
        try:
            return cls(entities)
        except EntitiesError as err:
            err.source = source
            raise

    @classmethod
    def from_providers(cls, *providers: EntityProvider | Iterable[Entity]) -> Entities:
        """A store holding the entities of every provider (or iterable of entities)."""
        ents: list[Entity] = []
        for p in providers:
            ents.extend(p.provide_entities() if isinstance(p, EntityProvider) else p)
        return cls(ents)

    def overlay(self, entities: Iterable[Entity]) -> Entities:
        """A store with ``entities`` added on top of this one (which is not copied).

        The added entities win over same-uid entities of this store; their ancestors are
        computed through this store's hierarchy.
        """
        return Entities(entities, _base=self)

    def to_json(self) -> list[dict[str, Any]]:
        """Cedar's entity JSON for the whole store."""
        return [e.to_json() for e in self.values()]

    # -- Mapping protocol ------------------------------------------------------------------

    def get(self, uid: EntityUID, default: Any = None) -> Any:
        """The entity with this uid, or ``default``."""
        ent = self._by_uid.get(uid)
        if ent is None and (self._base is None or (ent := self._base.lookup(uid)) is None):
            return default
        return ent

    def __getitem__(self, uid: EntityUID) -> Entity:
        ent = self.get(uid)
        if ent is None:
            raise KeyError(uid)
        return ent

    def __iter__(self) -> Iterator[EntityUID]:
        yield from self._by_uid
        if self._base is not None:
            for uid in self._base:
                if uid not in self._by_uid:
                    yield uid

    def __len__(self) -> int:
        if self._base is None:
            return len(self._by_uid)
        return sum(1 for _ in self)

    def __contains__(self, uid: object) -> bool:
        return uid in self._by_uid or (self._base is not None and uid in self._base)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Entities):
            return NotImplemented
        return dict(self.items()) == dict(other.items())

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return f"<Entities: {len(self)} entities>"


def _lookup_over(
    by_uid: dict[EntityUID, Entity], base: Entities
) -> Callable[[EntityUID], Entity | None]:
    """``lookup`` of an overlay of ``by_uid`` on ``base``: its own entities, else the base's.
    (A closure, not a bound method kept on the store: that would make every overlay a cycle,
    left to the garbage collector instead of freed when its last reference goes.)"""
    own, below = by_uid.get, base.lookup

    def lookup(uid: EntityUID) -> Entity | None:
        return own(uid) or below(uid)  # (an Entity is never false)

    return lookup


def _close_ancestors(
    by_uid: dict[EntityUID, Entity], base: Entities | None
) -> dict[EntityUID, Entity]:
    """Fill in ``ancestors`` (transitive parents) for every entity; a cycle is an error.

    An entity whose ``ancestors`` are right already (no parents and none; or computed before,
    as the schema's action entities are) is kept as it is.
    """
    done: dict[EntityUID, frozenset[EntityUID]] = {}
    closed: dict[EntityUID, Entity] = {}
    for uid, ent in by_uid.items():
        ancestors = _ancestors(uid, by_uid, base, done) if ent.parents else _NONE
        if ancestors != ent.ancestors:
            ent = Entity(ent.uid, ent.attrs, ent.parents, ent.tags, ancestors)
        closed[uid] = ent
    return closed


_NONE: frozenset[EntityUID] = frozenset()


_ON_PATH: Any = object()  # a unique marker (the empty frozenset is a shared singleton)


def _ancestors(
    root: EntityUID,
    by_uid: dict[EntityUID, Entity],
    base: Entities | None,
    done: dict[EntityUID, frozenset[EntityUID]],
) -> frozenset[EntityUID]:
    """Ancestors of ``root`` by an explicit-stack depth-first search (deep hierarchies are fine).

    ``done`` memoizes results across calls; while a uid is being explored it maps to the
    sentinel ``_ON_PATH`` (compared by identity), so meeting it again means a cycle.
    """
    on_path = _ON_PATH
    if root in done:
        return done[root]
    stack: list[tuple[EntityUID, Iterator[EntityUID]]] = []
    done[root] = on_path
    stack.append((root, iter(by_uid[root].parents)))
    while stack:
        uid, parents = stack[-1]
        advanced = False
        for parent in parents:
            state = done.get(parent)
            if state is on_path:
                raise EntitiesError(
                    f"entity hierarchy has a cycle containing `{parent}`",
                    help="parents must form a directed acyclic graph",
                )
            if state is None and parent in by_uid:
                done[parent] = on_path
                stack.append((parent, iter(by_uid[parent].parents)))
                advanced = True
                break
        if advanced:
            continue
        stack.pop()
        acc: set[EntityUID] = set()
        for parent in by_uid[uid].parents:
            acc.add(parent)
            if parent in by_uid:
                acc |= done[parent]
            elif base is not None:
                base_ent = base.get(parent)
                if base_ent is not None:
                    acc |= base_ent.ancestors
        done[uid] = frozenset(acc)
    return done[root]


def _entity_from_json(
    item: Any, index: int, source: str | None, schema: EntitySchema | None = None
) -> Entity:
    """Entity ``index`` of a JSON array, from its object; with a schema, values are read by
    their types. (Where-texts for messages are only built on the way to an error.)"""
    try:
        if not isinstance(item, dict):
            raise JSONValueError(
                f"entity[{index}]: expected an entity object, got `{preview(item)}`"
            )
        for key in ("uid", "attrs", "parents"):
            if key not in item:
                raise JSONValueError(f"entity[{index}]: missing field `{key}`")
        uid = plain_uid(item["uid"]) or uid_from_json(
            item["uid"], f"entity[{index}].uid", JSONValueError
        )
        parents_json = item["parents"]
        if not isinstance(parents_json, list):
            raise JSONValueError(f"`{uid}`.parents: expected a JSON array")
        parents = (
            frozenset(
                plain_uid(p) or uid_from_json(p, f"`{uid}`.parents[{i}]", JSONValueError)
                for i, p in enumerate(parents_json)
            )
            if parents_json
            else _NONE
        )
        if is_action_type(uid.type):
            # Rust's entity JSON parser: actions may only be members of action groups.
            for p in sorted(parents):
                if not is_action_type(p.type):
                    raise JSONValueError(f"action `{uid}` has a non-action parent `{p}`")
        if schema is not None:
            for key in ("attrs", "tags"):  # read recursively by the schema's types
                if key in item:
                    where = partial("`{}`.{}".format, uid, key)  # (made only for a message)
                    check_json_limits(item[key], where, JSONValueError)
            return schema.conform_entity(uid, item, parents)
        attrs = record_from_json(item["attrs"], f"`{uid}`.attrs")
        # `tags` is optional, but when present it must be an object (`null` and `[]` are errors).
        tags = record_from_json(item["tags"], f"`{uid}`.tags") if "tags" in item else EMPTY_RECORD
    except EntitiesError as err:
        err.source = source
        raise
    return Entity(uid, attrs, parents, tags)


_STRINGS: frozenset[type] = frozenset({str})


# Entity's slots, set directly (a frozen dataclass's __init__ makes five object.__setattr__
# calls; the slots' own setters are what they end in).
_SET_FIELDS = tuple(
    Entity.__dict__[name].__set__ for name in ("uid", "parents", "tags", "ancestors")
)
_SET_ATTRS = Entity.__dict__["attrs"].__set__


def with_attrs(entity: Entity, attrs: Record) -> Entity:
    """``Entity(entity.uid, attrs, entity.parents, entity.tags, entity.ancestors)``: an
    entity's copy with other attributes (the guard's call entity, once per call), built
    without the dataclass's ``__init__``."""
    copy = object.__new__(Entity)
    set_uid, set_parents, set_tags, set_ancestors = _SET_FIELDS
    set_uid(copy, entity.uid)
    _SET_ATTRS(copy, attrs)
    set_parents(copy, entity.parents)
    set_tags(copy, entity.tags)
    set_ancestors(copy, entity.ancestors)
    return copy


# Whether an entity type name is valid, for the names of entities laid over a store one at a
# time (the same few types, the guard's call entities, again and again).
_valid_type_name = lru_cache(maxsize=1024)(is_valid_type_name)


def overlay_closed(base: Entities, entity: Entity) -> Entities:
    """``base.overlay([entity])`` for an ``entity`` whose ``ancestors`` are already its
    ancestors through ``base``: one small dict on top of ``base``, nothing copied or closed.

    For a per-call entity of a fixed shape (the guard's call resource: the tool's child, only
    its attributes change), whose ancestors are computed once with :meth:`Entities.overlay`.
    """
    # INVARIANT: entity.ancestors == base.overlay([entity])[entity.uid].ancestors (the caller's
    # promise); everything else is an Entities built as overlay() builds one.
    store = object.__new__(Entities)
    uid = entity.uid
    valid = uid.type.__class__ is str and uid.id.__class__ is str and _valid_type_name(uid.type)
    store._init({uid: entity}, base, valid)
    return store
