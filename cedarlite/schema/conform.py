"""Schema-based parsing: entity JSON and request contexts read by their declared types.

With a schema, a JSON value is interpreted by the type its attribute is declared with: a bare
``{"type", "id"}`` object is an entity reference where an entity is expected, and a plain
string (or a bare ``{"fn", "arg"}``) is an extension value where ``ipaddr``, ``decimal``,
``datetime`` or ``duration`` is expected. Entities are checked against their declarations
(declared type, attributes, parents' types, enum ids, tags), the schema's action entities are
added to the store, and requests are checked against the action's ``appliesTo``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..data.entities import Entity
from ..data.ext import CONSTRUCTORS
from ..data.jsonvalue import JSONValueError, json_kind, uid_from_json, value_from_json
from ..data.request import Request
from ..data.values import EMPTY_RECORD, I64_MAX, I64_MIN, CedarSet, EntityUID, Record
from ..errors import EntitiesError, EvaluationError, RequestError
from .defs import SchemaModel, did_you_mean
from .types import (
    BoolType,
    CedarType,
    EntityType,
    ExtensionType,
    LongType,
    RecordType,
    SetType,
    StringType,
)


class ConformError(Exception):
    """A value or entity that does not conform to the schema (wrapped by the caller)."""

    def __init__(self, message: str, help: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.help = help


def _mismatch(where: str, expected: CedarType, obj: Any) -> ConformError:
    return ConformError(f"{where}: expected a value of type `{expected}`, got {json_kind(obj)}")


def check_enum(uid: EntityUID, schema: SchemaModel, where: str) -> None:
    """An entity of an enumerated type must have one of the declared ids."""
    definition = schema.entity_types.get(uid.type)
    if definition is not None and definition.enum is not None and uid.id not in definition.enum:
        choices = ", ".join(f"`{e}`" for e in definition.enum)
        raise ConformError(
            f"{where}: `{uid}` is not a valid `{uid.type}`; the enumerated ids are {choices}"
        )


def enumerated_types(schema: SchemaModel) -> frozenset[str]:
    """The entity types of ``schema`` whose ids are enumerated (see :func:`check_enum`)."""
    return frozenset(name for name, d in schema.entity_types.items() if d.enum is not None)


def decode(obj: Any, t: CedarType, where: str, schema: SchemaModel) -> Any:
    """The Cedar value of JSON ``obj`` read as type ``t``; raises :class:`ConformError`."""
    kind = t.__class__  # (the type classes are final: compared by identity, the fastest way)
    if kind is StringType or kind is BoolType:
        if obj.__class__ is not (str if kind is StringType else bool):
            raise _mismatch(where, t, obj)
        return obj
    if kind is LongType:
        if obj.__class__ is not int:
            raise _mismatch(where, t, obj)
        if not I64_MIN <= obj <= I64_MAX:
            raise ConformError(f"{where}: integer `{obj}` does not fit in 64 bits")
        return obj
    if kind is RecordType:
        return decode_record(obj, t, where, schema)  # type: ignore[arg-type]
    if kind is EntityType:
        name = t.name  # type: ignore[attr-defined]
        try:
            uid = uid_from_json(obj, where, JSONValueError)
        except JSONValueError:
            raise _mismatch(where, t, obj) from None
        if uid.type != name:
            raise ConformError(f"{where}: expected an entity of type `{name}`, got `{uid}`")
        check_enum(uid, schema, where)
        return uid
    if kind is SetType:
        if obj.__class__ is not list:
            raise _mismatch(where, t, obj)
        element = t.element  # type: ignore[attr-defined]
        return CedarSet(decode(x, element, f"{where}[{i}]", schema) for i, x in enumerate(obj))
    if kind is ExtensionType:
        return _decode_extension(obj, t.name, where)  # type: ignore[attr-defined]
    raise ConformError(f"{where}: unsupported schema type `{t}`")  # pragma: no cover


def decode_record(obj: Any, t: RecordType, where: str, schema: SchemaModel) -> Record:
    """A record read attribute by attribute; undeclared or missing attributes are errors."""
    if obj.__class__ is not dict:
        if isinstance(obj, Mapping):
            obj = dict(obj)
        else:
            raise _mismatch(where, t, obj)
    attrs = t.attributes
    out: dict[str, Any] = {}
    for key, value in obj.items():
        attr = attrs.get(key)
        if attr is None:
            if not t.open:
                raise ConformError(
                    f"{where}: attribute `{key}` is not declared in the schema",
                    help=did_you_mean(key, attrs),
                )
            try:
                out[key] = value_from_json(value, f"{where}.{key}")
            except JSONValueError as err:
                raise ConformError(err.message) from None
            continue
        kind, cls = attr.type.__class__, value.__class__
        if (
            (cls is str and kind is StringType)
            or (cls is bool and kind is BoolType)
            or (cls is int and kind is LongType and I64_MIN <= value <= I64_MAX)
        ):
            out[key] = value  # what `decode` returns for a primitive of the declared type
        else:
            out[key] = decode(value, attr.type, f"{where}.{key}", schema)
    if t.open or len(out) != len(attrs):  # (else every declared attribute is there)
        for key, attr in attrs.items():
            if attr.required and key not in out:
                raise ConformError(f"{where}: required attribute `{key}` is missing")
    return Record(out)


def _decode_extension(obj: Any, name: str, where: str) -> Any:
    try:
        if obj.__class__ is str:
            value = CONSTRUCTORS[name].call([obj])
        elif obj.__class__ is dict and set(obj) == {"__extn"}:
            value = value_from_json(obj, where)
        elif obj.__class__ is dict and "fn" in obj and ("arg" in obj or "args" in obj):
            value = value_from_json({"__extn": obj}, where)
        else:
            raise ConformError(f"{where}: expected a value of type `{name}`, got {json_kind(obj)}")
    except EvaluationError as err:
        raise ConformError(f"{where}: {err.message}") from None
    except JSONValueError as err:
        raise ConformError(err.message) from None
    if getattr(value, "cedar_type", None) != name:
        raise ConformError(f"{where}: expected a value of type `{name}`")
    return value


# ---------------------------------------------------------------------------------------------
# Entities


def action_entities(schema: SchemaModel) -> tuple[Entity, ...]:
    """The schema's actions as entities, parents being their action groups (ancestors: the
    closure of the action hierarchy)."""
    return tuple(
        Entity(uid, EMPTY_RECORD, frozenset(a.member_of), ancestors=schema.action_ancestors(uid))
        for uid, a in schema.actions.items()
    )


def conform_entity(
    uid: EntityUID, item: Mapping[str, Any], parents: frozenset[EntityUID], schema: SchemaModel
) -> Entity:
    """The entity of JSON ``item`` read by its declaration (raises :class:`EntitiesError`)."""
    try:
        return _conform_entity(uid, item, parents, schema)
    except ConformError as err:
        raise EntitiesError(err.message, help=err.help) from None


def _conform_entity(
    uid: EntityUID, item: Mapping[str, Any], parents: frozenset[EntityUID], schema: SchemaModel
) -> Entity:
    label = f"`{uid}`"
    if uid.type in schema.action_entity_types:
        action = schema.actions.get(uid)
        if action is None:
            raise ConformError(
                f"action {label} is not declared in the schema",
                help=did_you_mean(uid.id, [a.id for a in schema.actions if a.type == uid.type]),
            )
        # The JSON may list direct parents or the whole closure; the hierarchies must agree.
        closure = set(parents)
        for parent in parents:
            closure |= schema.action_ancestors(parent)
        has_data = item.get("attrs") != {} or item.get("tags", {}) != {}
        if closure != schema.action_ancestors(uid) or has_data:
            raise ConformError(
                f"definition of action {label} does not match its schema declaration"
            )
        return Entity(uid, EMPTY_RECORD, frozenset(action.member_of))
    definition = schema.entity_types.get(uid.type)
    if definition is None:
        raise ConformError(
            f"entity {label} has type `{uid.type}`, which is not declared in the schema",
            help=did_you_mean(uid.type, schema.entity_types),
        )
    if definition.enum is not None:
        check_enum(uid, schema, label)
    attrs = decode_record(item.get("attrs"), definition.shape, f"{label}.attrs", schema)
    for parent in parents:
        if parent.type not in definition.member_of_types:
            allowed = ", ".join(f"`{t}`" for t in sorted(definition.member_of_types)) or "none"
            raise ConformError(
                f"{label}.parents: `{uid.type}` entities cannot be members of `{parent.type}` "
                f"entities (allowed parent types: {allowed})"
            )
        if parent.type in schema.derived(enumerated_types):
            check_enum(parent, schema, f"{label}.parents")
    tags = EMPTY_RECORD
    if "tags" in item:
        tags_json = item["tags"]
        if not isinstance(tags_json, dict):
            raise ConformError(f"{label}.tags: expected a JSON object")
        tag_type = definition.tags
        if tags_json and tag_type is None:
            raise ConformError(f"{label}.tags: entities of type `{uid.type}` have no tags")
        if tag_type is not None:
            tags = Record(
                {k: decode(v, tag_type, f"{label}.tags.{k}", schema) for k, v in tags_json.items()}
            )
    return Entity(uid, attrs, parents, tags)


# ---------------------------------------------------------------------------------------------
# Requests


def conform_request(
    req: Request, context_json: Any, schema: SchemaModel, *, validate: bool = True
) -> Request:
    """Read the context by the action's context type and, if ``validate``, check ``appliesTo``."""
    action = schema.actions.get(req.action)
    try:
        if validate:
            _validate_request(req, schema)
        if context_json is None:
            return req
        if action is not None and action.applies_to is not None:
            context = decode_record(context_json, action.applies_to.context, "context", schema)
        else:
            context = value_from_json(dict(context_json), "context")
    except ConformError as err:
        raise RequestError(f"request {err.message}", help=err.help) from None
    except JSONValueError as err:
        raise RequestError(f"request {err.message}") from None
    return req._replace(context=context)


def _validate_request(req: Request, schema: SchemaModel) -> None:
    action = schema.actions.get(req.action)
    if action is None:
        raise ConformError(
            f"action `{req.action}` is not declared in the schema",
            help=did_you_mean(req.action.id, [a.id for a in schema.actions]),
        )
    applies = action.applies_to
    for var, uid, allowed in (
        ("principal", req.principal, applies.principal_types if applies else ()),
        ("resource", req.resource, applies.resource_types if applies else ()),
    ):
        if uid.type not in allowed:
            names = ", ".join(f"`{t}`" for t in allowed) or "no type"
            raise ConformError(
                f"{var} type `{uid.type}` is not valid for action `{req.action}` "
                f"(it applies to {names})"
            )
        check_enum(uid, schema, var)
