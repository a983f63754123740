"""The entity store: entities with attributes, tags and transitively closed ancestors.

Entities come from Cedar's entity JSON (:meth:`Entities.from_json`), from Python objects, or
from :class:`EntityProvider` objects (the tool catalog, tool parameter schemas). A store is
immutable; :meth:`Entities.overlay` layers per-request entities over a shared base without
copying it.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache, partial
from operator import itemgetter
from typing import Any, Protocol, runtime_checkable

from .errors import CedarliteError, EntitiesError, EvaluationError
from .ext import from_extn_json
from .lexical import is_action_type, is_valid_type_name
from .source import clip as _clip
from .values import (
    EMPTY_RECORD,
    I64_MAX,
    I64_MIN,
    MAX_VALUE_DEPTH,
    MAX_VALUE_SIZE,
    CedarSet,
    EntityUID,
    Record,
)


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
        from .values import to_json_value

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
                    from ._jsonloc import json_span

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


# ---------------------------------------------------------------------------------------------
# JSON


def load_json(data: str | bytes, source: str | None, error: type[Exception]) -> Any:
    """Decode JSON text, rejecting duplicate object keys; errors carry line and column."""
    from .source import Span

    text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates)
    except json.JSONDecodeError as err:
        raise error(  # type: ignore[call-arg]
            f"invalid JSON: {err.msg.lower()}",
            span=Span.at(text, err.pos, err.pos + 1),
            text=text,
            source=source,
        ) from None
    except _DuplicateKey as err:
        from ._jsonloc import duplicate_key_span

        raise error(  # type: ignore[call-arg]
            f"invalid JSON: duplicate key `{err.key}`",
            span=duplicate_key_span(text),
            text=text,
            source=source,
        ) from None
    except RecursionError:
        raise error("invalid JSON: nested too deeply", source=source) from None  # type: ignore[call-arg]
    except ValueError:  # an integer with more digits than Python converts (4,300 by default)
        raise error("invalid JSON: a number is too long", source=source) from None  # type: ignore[call-arg]


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKey(k)
        out[k] = v
    return out


def uid_from_json(obj: Any, where: str, error: type[Exception] = EntitiesError) -> EntityUID:
    """An entity uid from ``{"type", "id"}`` or ``{"__entity": {"type", "id"}}``."""
    plain = _plain_uid(obj)
    if plain is not None:
        return plain
    if isinstance(obj, dict) and _has_shape(obj.get("__entity"), type=str, id=str):
        # Rust's `EntityUidJson`: an explicit `__entity` escape wins, other keys are ignored.
        obj = obj["__entity"]
    if not isinstance(obj, dict) or "type" not in obj or "id" not in obj:
        raise error(
            f'{where}: expected an entity reference `{{"type": ..., "id": ...}}`, '
            f"got `{preview(obj)}`"
        )
    type_name, id_ = obj["type"], obj["id"]
    if not isinstance(type_name, str) or not is_valid_type_name(type_name):
        raise error(f"{where}: `{preview(type_name)}` is not a valid entity type name")
    if not isinstance(id_, str):
        raise error(f"{where}: entity id must be a string, got `{preview(id_)}`")
    return EntityUID(type_name, id_)


def _plain_uid(obj: Any) -> EntityUID | None:
    """The uid of a plain, valid ``{"type", "id"}`` object (the usual form, read fast), else
    ``None`` (:func:`uid_from_json` reads the other forms, or says what is wrong)."""
    if obj.__class__ is dict and len(obj) == 2:
        type_name, id_ = obj.get("type"), obj.get("id")
        if type_name.__class__ is str and id_.__class__ is str and is_valid_type_name(type_name):
            return EntityUID(type_name, id_)
    return None


def value_from_json(obj: Any, where: str, limits: _Limits | None = None, depth: int = 1) -> Any:
    """A Cedar value from its JSON form, without a schema (``__entity``/``__extn`` escapes).

    Raises :class:`JSONValueError` (callers re-word it with their own error class), also for
    input nested deeper than :data:`~cedarlite.values.MAX_VALUE_DEPTH` or holding more than
    :data:`~cedarlite.values.MAX_VALUE_SIZE` elements: ``limits`` carries what is left of the
    size for one whole input value (its first container starts it), ``depth`` is the nesting of
    ``obj`` in it.
    """
    cls = obj.__class__
    if cls is bool or cls is str:
        return obj
    if cls is int:
        if not I64_MIN <= obj <= I64_MAX:
            raise JSONValueError(f"{where}: integer `{preview(obj)}` does not fit in 64 bits")
        return obj
    if cls is list:
        limits = _Limits.enter(limits, where, obj, depth)
        kinds = set(map(type, obj))  # a set of strings or of longs is built at C speed
        if kinds == _STRINGS or (kinds == _INTS and min(obj) >= I64_MIN and max(obj) <= I64_MAX):
            return CedarSet.of_keys(frozenset(obj))
        return CedarSet(
            v if _is_scalar(v) else value_from_json(v, f"{where}[{i}]", limits, depth + 1)
            for i, v in enumerate(obj)
        )
    if cls is dict:
        limits = _Limits.enter(limits, where, obj, depth)
        if len(obj) == 1:
            ((key, inner),) = obj.items()
            # Like Rust's untagged `CedarValueJson`: an escape whose payload does not have the
            # escape's shape is not an error, the object is then an ordinary record.
            if key == "__entity" and _has_shape(inner, type=str, id=str):
                return uid_from_json(obj, where, JSONValueError)
            if (
                key == "__extn"
                and _has_shape(inner, fn=str)
                and ("arg" in inner or isinstance(inner.get("args"), list))
            ):
                return _extn_from_json(inner, where, limits, depth)
            if key == "__expr" and inner.__class__ is str:
                raise JSONValueError(f"{where}: the `__expr` escape is no longer supported")
        return Record(
            {
                k: v
                if (c := v.__class__) is str or c is bool or (c is int and I64_MIN <= v <= I64_MAX)
                else value_from_json(v, f"{where}.{_clip(k)}", limits, depth + 1)
                for k, v in obj.items()
            }
        )
    if obj is None:
        raise JSONValueError(f"{where}: JSON `null` is not a Cedar value")
    if cls is float:
        raise JSONValueError(f"{where}: `{obj}` is not an integer; Cedar has no floating point")
    if cls is EntityUID or cls is CedarSet or cls is Record or hasattr(obj, "cedar_type"):
        return obj  # already a Cedar value (Python callers)
    if isinstance(obj, tuple | set | frozenset):
        return value_from_json(list(obj), where, limits, depth)
    if isinstance(obj, Mapping):
        return value_from_json(dict(obj), where, limits, depth)
    raise JSONValueError(f"{where}: `{preview(obj)}` is not a Cedar value")


_ESCAPES = frozenset({"__entity", "__extn", "__expr"})


PLAIN_SIZE = 999
"""Entries a context (and each object or array in it) may have for :func:`plain_record` to
read it: then it holds fewer than :data:`~cedarlite.values.MAX_VALUE_SIZE` elements in all
(999 + 999 x 999), with no count kept."""


def plain_record(obj: dict[str, Any]) -> Record | None:
    """What :func:`value_from_json` makes of a JSON object, quickly, when it has the plain
    shape of most request contexts: strings, booleans, 64-bit integers, arrays of strings, and
    objects of those (one level), at most :data:`PLAIN_SIZE` entries each; ``None`` when it
    has any other shape (read it with :func:`value_from_json`, which also reports what is
    wrong)."""
    # Written for a cold decision, where most of the time goes to code and data brought back
    # into the caches: `type(v)` rather than `v.__class__` (one code path whatever the type;
    # an attribute read is specialized for one type, and a context mixes them), no count of
    # elements (PLAIN_SIZE), and one Record made, at the end.
    if len(obj) > PLAIN_SIZE or (len(obj) == 1 and not _ESCAPES.isdisjoint(obj)):
        return None  # large, or maybe an escape (`{"__entity": ...}`), not a record
    converted: dict[str, Any] | None = None
    for key, value in obj.items():
        cls = type(value)
        if cls is str or cls is bool:
            continue
        if cls is int:
            if I64_MIN <= value <= I64_MAX:
                continue
            return None
        if cls is dict:
            if len(value) > PLAIN_SIZE or (len(value) == 1 and not _ESCAPES.isdisjoint(value)):
                return None
            for inner in value.values():
                c = type(inner)
                if not (c is str or c is bool or (c is int and I64_MIN <= inner <= I64_MAX)):
                    return None
            if converted is None:
                converted = obj.copy()
            converted[key] = Record(value)
        elif cls is list and len(value) <= PLAIN_SIZE and _STRINGS.issuperset(map(type, value)):
            if converted is None:
                converted = obj.copy()
            converted[key] = CedarSet.of_keys(frozenset(value))
        else:
            return None
    return Record(obj if converted is None else converted)


class _Limits:
    """What is left of :data:`~cedarlite.values.MAX_VALUE_SIZE` while one input value is
    read, and the name of that value for the errors."""

    __slots__ = ("left", "root")

    def __init__(self, root: str) -> None:
        self.root, self.left = root, MAX_VALUE_SIZE

    @classmethod
    def enter(cls, limits: _Limits | None, where: str, container: Any, depth: int) -> _Limits:
        """Account for one container at ``depth`` (the first one starts the budget)."""
        if limits is None:
            limits = cls(where)
        if depth > MAX_VALUE_DEPTH:
            raise JSONValueError(
                f"{limits.root}: nested too deeply (more than {MAX_VALUE_DEPTH} levels)"
            )
        limits.left -= len(container)
        if limits.left < 0:
            raise JSONValueError(
                f"{limits.root}: too large (more than {MAX_VALUE_SIZE:,} elements)"
            )
        return limits


_STRINGS: frozenset[type] = frozenset({str})
_INTS: frozenset[type] = frozenset({int})


def _is_scalar(v: Any) -> bool:
    """A JSON value that is its own Cedar value (the common case, decoded without a call)."""
    cls = v.__class__
    return cls is str or cls is bool or (cls is int and I64_MIN <= v <= I64_MAX)


def _has_shape(obj: Any, **fields: type) -> bool:
    """``obj`` is a JSON object whose ``fields`` are present with these types (others allowed)."""
    return obj.__class__ is dict and all(
        isinstance(obj.get(name), cls) for name, cls in fields.items()
    )


class JSONValueError(EntitiesError):
    """A JSON value that does not denote a Cedar value."""


def _extn_from_json(inner: Any, where: str, limits: _Limits | None = None, depth: int = 1) -> Any:
    if not isinstance(inner, dict) or "fn" not in inner or not isinstance(inner["fn"], str):
        raise JSONValueError(f'{where}: `__extn` must be `{{"fn": ..., "arg": ...}}`')
    if "args" in inner and isinstance(inner["args"], list):
        args = [
            value_from_json(a, f"{where}.__extn.args[{i}]", limits, depth + 2)
            for i, a in enumerate(inner["args"])
        ]
    elif "arg" in inner:
        args = [value_from_json(inner["arg"], f"{where}.__extn.arg", limits, depth + 1)]
    else:
        raise JSONValueError(f"{where}: `__extn` needs an `arg` or `args`")
    try:
        return from_extn_json(inner["fn"], args)
    except EvaluationError as err:
        raise JSONValueError(f"{where}: {err.message}") from None


def _record_from_json(obj: Any, where: str) -> Record:
    if not isinstance(obj, dict):
        raise JSONValueError(f"{where}: expected a JSON object, got `{preview(obj)}`")
    limits = _Limits.enter(None, where, obj, 1)
    return Record({k: value_from_json(v, f"{where}.{_clip(k)}", limits, 2) for k, v in obj.items()})


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
        uid = _plain_uid(item["uid"]) or uid_from_json(
            item["uid"], f"entity[{index}].uid", JSONValueError
        )
        parents_json = item["parents"]
        if not isinstance(parents_json, list):
            raise JSONValueError(f"`{uid}`.parents: expected a JSON array")
        parents = (
            frozenset(
                _plain_uid(p) or uid_from_json(p, f"`{uid}`.parents[{i}]", JSONValueError)
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
        attrs = _record_from_json(item["attrs"], f"`{uid}`.attrs")
        # `tags` is optional, but when present it must be an object (`null` and `[]` are errors).
        tags = _record_from_json(item["tags"], f"`{uid}`.tags") if "tags" in item else EMPTY_RECORD
    except EntitiesError as err:
        err.source = source
        raise
    return Entity(uid, attrs, parents, tags)


def preview(obj: Any, limit: int = 60) -> str:
    """A short JSON rendering of a value for error messages.

    The work is bounded by ``limit`` whatever ``obj`` is (a huge, deeply nested or
    self-referencing structure, an integer too long to print): rendering stops as soon as the
    text is long enough.
    """
    out: list[str] = []
    length = 0
    stack: list[Any] = [obj]
    while stack and length <= limit:
        top = stack.pop()
        if top.__class__ is _Open:
            piece = top.next_piece(stack)
        else:
            scalar = _scalar_text(top, limit)
            piece = _Open.start(top, stack) if scalar is None else scalar
        out.append(piece)
        length += len(piece)
    text = "".join(out)
    return text if not stack and len(text) <= limit else text[: limit - 3] + "..."


class _Open:
    """An array or object being rendered by :func:`preview` (its items are pulled lazily)."""

    __slots__ = ("close", "first", "items", "mapping")

    def __init__(self, items: Iterator[Any], close: str, mapping: bool) -> None:
        self.items, self.close, self.mapping, self.first = items, close, mapping, True

    @classmethod
    def start(cls, value: Any, stack: list[Any]) -> str:
        if isinstance(value, Mapping):
            stack.append(cls(iter(value.items()), "}", True))
            return "{"
        stack.append(cls(iter(value), "]", False))
        return "["

    def next_piece(self, stack: list[Any]) -> str:
        try:
            item = next(self.items)
        except StopIteration:
            return self.close
        stack.append(self)
        sep = "" if self.first else ", "
        self.first = False
        if self.mapping:
            key, item = item
            stack.append(item)
            return f"{sep}{_scalar_text(key, 60) or '<key>'}: "
        stack.append(item)
        return sep


def _scalar_text(value: Any, limit: int) -> str | None:
    """JSON text of a scalar (``None`` for an array or object); strings are cut near ``limit``
    and integers too long to print are described."""
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value[: limit + 1], ensure_ascii=False)
    if isinstance(value, int):
        return str(value) if value.bit_length() <= 256 else f"<{value.bit_length()}-bit integer>"
    if isinstance(value, float):
        return json.dumps(value)
    if isinstance(value, Mapping | list | tuple | set | frozenset) and not hasattr(
        value, "cedar_type"
    ):
        return None
    try:
        text = repr(value)
    except Exception:  # a foreign object's repr may fail any way: the message still renders
        text = f"<{type(value).__name__}>"
    return json.dumps(text[: limit + 1], ensure_ascii=False)


def is_flat(value: Any) -> bool:
    """``value`` is a JSON object of scalars within the size limit: one that
    :func:`check_json_limits` passes at once (most attributes and contexts)."""
    return (
        value.__class__ is dict
        and len(value) <= MAX_VALUE_SIZE
        and _JSON_SCALARS.issuperset(map(type, value.values()))
    )


def check_json_limits(
    value: Any, where: str | Callable[[], str], error: type[CedarliteError]
) -> None:
    """Refuse a JSON-like input (dicts, lists...) nested deeper than
    :data:`~cedarlite.values.MAX_VALUE_DEPTH` or holding more than
    :data:`~cedarlite.values.MAX_VALUE_SIZE` elements, before anything reads it: iterative,
    level by level, linear, and it stops at the first level or element too many. ``where``
    names the input in the message, or makes that name (called only to raise: callers on a
    hot path pass a function rather than format a name for every input)."""
    if is_flat(value):
        return
    size = 0
    level = [value]
    for depth in range(1, MAX_VALUE_DEPTH + 2):
        below: list[Any] = []
        for node in level:
            cls = node.__class__
            if cls is dict or (cls is not Record and isinstance(node, Mapping)):
                items: Iterable[Any] = node.values()
            elif cls is list or cls is tuple or cls is set or cls is frozenset:
                items = node
            else:
                continue  # a scalar, or a Cedar value built by the caller
            if depth > MAX_VALUE_DEPTH:
                deep = f"nested too deeply (more than {MAX_VALUE_DEPTH} levels)"
                raise error(f"{_name(where)}: {deep}")
            size += len(node)
            if size > MAX_VALUE_SIZE:
                raise error(f"{_name(where)}: too large (more than {MAX_VALUE_SIZE:,} elements)")
            if not _JSON_SCALARS.issuperset(map(type, items)):  # (at C speed when all scalars)
                below.extend(item for item in items if item.__class__ not in _JSON_SCALARS)
        if not below:
            return
        level = below


def _name(where: str | Callable[[], str]) -> str:
    return where if isinstance(where, str) else where()


_JSON_SCALARS = frozenset({str, int, bool, float, type(None)})


def json_kind(value: Any) -> str:
    """What kind of JSON value this is, for messages: ``a string``, ``an array``, ``null``..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "an array"
    return "an object" if isinstance(value, Mapping) else type(value).__name__


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
