"""Cedar's operators on evaluated values, shared by the reference evaluator and the compiler.

Each function implements one operator exactly as the Rust engine does, including the order
of its type checks and the wording of its errors, so that both evaluation paths agree by
construction. ``entities`` is anything with ``get(uid) -> Entity | None``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from .._glob import Segments, like_segments, match
from ..data.ext import Datetime, Duration
from ..data.values import I64_MAX, I64_MIN, CedarSet, EntityUID, Record, check_i64, type_error
from ..errors import EvaluationError
from ..lexical import PatternElem

ANY_ENTITY = "(entity of type `any_entity_type`)"


class EntityLike(Protocol):
    """What evaluation needs of a stored entity."""

    attrs: Record
    ancestors: frozenset[EntityUID]
    tags: Record


class EntityStore(Protocol):
    """What evaluation needs of an entity store."""

    def get(self, uid: EntityUID) -> EntityLike | None: ...


def expect_bool(value: Any) -> bool:
    """``value`` if it is a Bool, else a type error."""
    if value.__class__ is not bool:
        raise type_error("bool", value)
    return value


def expect_long(value: Any) -> int:
    """``value`` if it is a Long, else a type error."""
    if value.__class__ is not int:
        raise type_error("long", value)
    return value


def expect_set(value: Any) -> CedarSet:
    """``value`` if it is a Set, else a type error."""
    if value.__class__ is not CedarSet:
        raise type_error("set", value)
    return value


def expect_entity(value: Any) -> EntityUID:
    """``value`` if it is an entity, else a type error."""
    if value.__class__ is not EntityUID:
        raise type_error(ANY_ENTITY, value)
    return value


def expect_string(value: Any) -> str:
    """``value`` if it is a String, else a type error."""
    if value.__class__ is not str:
        raise type_error("string", value)
    return value


# --------------------------------------------------------------------------------------------
# Arithmetic


def add(a: Any, b: Any) -> int:
    """Checked ``a + b``."""
    r = expect_long(a) + expect_long(b)
    return r if I64_MIN <= r <= I64_MAX else check_i64(r, "add", a, b)


def sub(a: Any, b: Any) -> int:
    """Checked ``a - b``."""
    r = expect_long(a) - expect_long(b)
    return r if I64_MIN <= r <= I64_MAX else check_i64(r, "subtract", a, b)


def mul(a: Any, b: Any) -> int:
    """Checked ``a * b``."""
    r = expect_long(a) * expect_long(b)
    return r if I64_MIN <= r <= I64_MAX else check_i64(r, "multiply", a, b)


def neg(a: Any) -> int:
    """Checked ``-a``."""
    return check_i64(-expect_long(a), "neg", a)


def not_(a: Any) -> bool:
    """``!a``."""
    return not expect_bool(a)


# --------------------------------------------------------------------------------------------
# Comparison


_ORDERED_NAMES = {int: "long", Datetime: "datetime", Duration: "duration"}


def _order_key(a: Any, b: Any) -> tuple[int, int]:
    cls = a.__class__
    if cls is b.__class__ and cls in _ORDERED_NAMES:
        return (a, b) if cls is int else (a.ms, b.ms)
    # Rust's order of type errors: a Long on either side (left first) names `long`, then an
    # orderable extension value on either side names its type, else the left operand is wrong.
    other = b.__class__
    if cls is int:
        raise type_error("long", b)
    if other is int:
        raise type_error("long", a)
    if cls in _ORDERED_NAMES:
        raise type_error(_ORDERED_NAMES[cls], b)
    if other in _ORDERED_NAMES:
        raise type_error(_ORDERED_NAMES[other], a)
    raise type_error("one of [long, datetime, duration]", a)


def less(a: Any, b: Any) -> bool:
    """``a < b`` on Long, datetime or duration."""
    x, y = _order_key(a, b)
    return x < y


def less_eq(a: Any, b: Any) -> bool:
    """``a <= b`` on Long, datetime or duration."""
    x, y = _order_key(a, b)
    return x <= y


def greater(a: Any, b: Any) -> bool:
    """``a > b``, i.e. ``!(a <= b)`` with ``a`` evaluated first."""
    x, y = _order_key(a, b)
    return x > y


def greater_eq(a: Any, b: Any) -> bool:
    """``a >= b``, i.e. ``!(a < b)``."""
    x, y = _order_key(a, b)
    return x >= y


def eq(a: Any, b: Any) -> bool:
    """Total equality: values of different types are unequal."""
    return a.__class__ is b.__class__ and a == b


def neq(a: Any, b: Any) -> bool:
    """``a != b``."""
    return not (a.__class__ is b.__class__ and a == b)


# --------------------------------------------------------------------------------------------
# Hierarchy, attributes, tags


def ancestors_of(uid: EntityUID, entities: EntityStore) -> frozenset[EntityUID]:
    """The transitive ancestors of an entity (empty if it is not in the store)."""
    ent = entities.get(uid)
    return ent.ancestors if ent is not None else frozenset()


def in_(a: Any, b: Any, entities: EntityStore) -> bool:
    """``a in b``: ``b`` an entity or a set of entities; ancestry is transitive."""
    uid = expect_entity(a)
    if b.__class__ is EntityUID:
        return uid == b or b in ancestors_of(uid, entities)
    if b.__class__ is not CedarSet:
        raise type_error(f"one of [set, {ANY_ENTITY}]", b)
    targets = [expect_entity(t) for t in b]
    if uid in b:
        return True
    ancestors = ancestors_of(uid, entities)
    return any(t in ancestors for t in targets)


def in_uid(a: Any, target: EntityUID, entities: EntityStore) -> bool:
    """``a in target`` for an entity ``target`` (the common case of :func:`in_`)."""
    if a.__class__ is not EntityUID:
        raise type_error(ANY_ENTITY, a)
    if a == target:
        return True
    ent = entities.get(a)
    return ent is not None and target in ent.ancestors


def in_uids(a: Any, targets: frozenset[EntityUID], entities: EntityStore) -> bool:
    """``a in [E1, ...]`` for a set known to hold only entities (``action in [...]``)."""
    if a.__class__ is not EntityUID:
        raise type_error(ANY_ENTITY, a)
    if a in targets:
        return True
    ent = entities.get(a)
    return ent is not None and not targets.isdisjoint(ent.ancestors)


def _missing_entity(uid: EntityUID) -> EvaluationError:
    return EvaluationError(f"entity `{uid}` does not exist")


def has_attr(value: Any, attr: str, entities: EntityStore) -> bool:
    """``value has attr``: false (not an error) for an entity missing from the store."""
    cls = value.__class__
    if cls is Record:
        return attr in value
    if cls is EntityUID:
        ent = entities.get(value)
        return ent is not None and attr in ent.attrs
    raise type_error(f"one of [record, {ANY_ENTITY}]", value)


def get_attr(value: Any, attr: str, entities: EntityStore) -> Any:
    """``value.attr`` on a record or an entity."""
    cls = value.__class__
    if cls is Record:
        try:
            return value[attr]
        except KeyError:
            raise EvaluationError(f"record does not have the attribute `{attr}`") from None
    if cls is EntityUID:
        ent = entities.get(value)
        if ent is None:
            raise _missing_entity(value)
        try:
            return ent.attrs[attr]
        except KeyError:
            raise EvaluationError(f"`{value}` does not have the attribute `{attr}`") from None
    raise type_error(f"one of [record, {ANY_ENTITY}]", value)


def has_tag(value: Any, tag: Any, entities: EntityStore) -> bool:
    """``value.hasTag(tag)``: false for an entity missing from the store."""
    uid = expect_entity(value)
    key = expect_string(tag)
    ent = entities.get(uid)
    return ent is not None and key in ent.tags


def get_tag(value: Any, tag: Any, entities: EntityStore) -> Any:
    """``value.getTag(tag)``."""
    uid = expect_entity(value)
    key = expect_string(tag)
    ent = entities.get(uid)
    if ent is None:
        raise _missing_entity(uid)
    try:
        return ent.tags[key]
    except KeyError:
        raise EvaluationError(f"`{uid}` does not have the tag `{key}`") from None


def is_(value: Any, entity_type: str) -> bool:
    """``value is T``."""
    return expect_entity(value).type == entity_type


# --------------------------------------------------------------------------------------------
# Strings and sets


def like(value: Any, pattern: tuple[PatternElem, ...]) -> bool:
    """``value like pattern``, in time linear in ``value`` (see :mod:`cedarlite._glob`)."""
    return match(like_segments(pattern), expect_string(value))


def like_segments_match(value: Any, segments: Segments) -> bool:
    """``value like pattern`` for a pattern already split into segments (compiled code)."""
    return match(segments, expect_string(value))


def contains(s: Any, v: Any) -> bool:
    """``s.contains(v)``."""
    return expect_set(s).contains(v)


def contains_all(s: Any, t: Any) -> bool:
    """``s.containsAll(t)``: every element of ``t`` is in ``s``."""
    return expect_set(s).contains_all(expect_set(t))


def contains_any(s: Any, t: Any) -> bool:
    """``s.containsAny(t)``: ``s`` and ``t`` share an element."""
    return expect_set(s).contains_any(expect_set(t))


def is_empty(s: Any) -> bool:
    """``s.isEmpty()``."""
    return len(expect_set(s)) == 0


def starts_with(s: Any, prefix: Any) -> bool:
    """``s.startsWith(prefix)`` (cedarlite dialect)."""
    return expect_string(s).startswith(expect_string(prefix))


def ends_with(s: Any, suffix: Any) -> bool:
    """``s.endsWith(suffix)`` (cedarlite dialect)."""
    return expect_string(s).endswith(expect_string(suffix))


PURE_METHODS: dict[str, Callable[..., bool]] = {
    "contains": contains,
    "containsAll": contains_all,
    "containsAny": contains_any,
    "isEmpty": is_empty,
    "startsWith": starts_with,
    "endsWith": ends_with,
}
"""Built-in methods that do not read the entity store, by name (receiver first)."""

ENTITY_METHODS: dict[str, Callable[[Any, Any, EntityStore], Any]] = {
    "getTag": get_tag,
    "hasTag": has_tag,
}
"""Built-in methods that read the entity store: ``f(receiver, arg, entities)``."""
