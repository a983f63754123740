"""The JSON schema format, both directions.

:func:`load_json_schema` checks a decoded (or textual) JSON schema field by field, naming the
JSON path of every problem (``at entityTypes.User.shape: ...``), and returns the same
:class:`~.model.RawNamespace` declarations as the ``.cedarschema`` parser.
:func:`schema_to_json` writes a :class:`~.model.Schema` back with fully qualified names.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ..data.jsonvalue import json_kind
from ..lang.ast import is_valid_ident
from ..source import Span
from .defs import (
    ActionDef,
    EntityTypeDef,
    ErrorSite,
    RawAction,
    RawActionRef,
    RawAppliesTo,
    RawAttr,
    RawCommon,
    RawEntity,
    RawNamespace,
    RawRecord,
    RawRef,
    RawSet,
    RawType,
    SchemaModel,
    did_you_mean,
    namespace_of,
)
from .types import (
    BOOL,
    EXTENSION_TYPE_NAMES,
    LONG,
    STRING,
    BoolType,
    CedarType,
    EntityType,
    ExtensionType,
    LongType,
    RecordType,
    SetType,
    StringType,
    frozen_map,
)

Path = tuple[str | int, ...]

# A single run of identifier characters: one linear pass, nothing to backtrack.
_IDENT = re.compile(r"[_a-zA-Z][_a-zA-Z0-9]*+")
_PRIMITIVES: Mapping[str, CedarType] = {"Long": LONG, "String": STRING, "Boolean": BOOL}
_TYPE_FIELDS = ("type", "element", "attributes", "additionalAttributes", "name")
# The fields each built-in type takes besides `type`; other `type` values name common types.
_FIELDS_OF = {
    "Set": ("element",),
    "Record": ("attributes", "additionalAttributes"),
    "Entity": ("name",),
    "EntityOrCommon": ("name",),
    "Extension": ("name",),
}
#: Extra did-you-mean candidates for type names written in JSON.
JSON_TYPE_NAMES = ("Long", "String", "Boolean", *_FIELDS_OF)


# ---------------------------------------------------------------------------------------------
# Reading


class _JsonObject(dict[str, Any]):
    """A decoded JSON object that remembers the keys it saw more than once."""

    __slots__ = ("duplicates",)
    duplicates: list[str]


def _object_pairs(pairs: list[tuple[str, Any]]) -> _JsonObject:
    obj = _JsonObject()
    duplicates = []
    for key, value in pairs:
        if key in obj:
            duplicates.append(key)
        obj[key] = value
    obj.duplicates = duplicates
    return obj


def load_json_schema(obj: Any, site: ErrorSite) -> list[RawNamespace]:
    """The declarations of a JSON schema (text or decoded); problems become SchemaErrors."""
    if isinstance(obj, str):
        try:
            obj = json.loads(obj, object_pairs_hook=_object_pairs)
        except json.JSONDecodeError as error:
            message = error.msg[:1].lower() + error.msg[1:]
            raise site.error(f"invalid JSON: {message}", Span.at(obj, error.pos)) from None
    return _Loader(site).schema(obj)


class _Loader:
    """Walks the JSON, carrying the path of the value at hand for error messages."""

    def __init__(self, site: ErrorSite) -> None:
        self.site = site

    def fail(self, message: str, path: Path, help: str | None = None) -> Exception:
        return self.site.error(message, path, help)

    # -- JSON shapes ------------------------------------------------------------------------

    def object(self, value: Any, path: Path, what: str) -> Mapping[str, Any]:
        if type(value) is not dict and not isinstance(value, Mapping):  # (fast path first)
            raise self.fail(f"expected {what} (an object), found {json_kind(value)}", path)
        for key in getattr(value, "duplicates", ()):
            raise self.fail(f"duplicate key `{key}`", path)
        return value

    def fields(
        self,
        obj: Mapping[str, Any],
        path: Path,
        allowed: Iterable[str],
        required: Iterable[str] = (),
    ) -> None:
        allowed = tuple(allowed)
        for key in obj:
            if key not in allowed:
                expected = ", ".join(f"`{name}`" for name in allowed)
                help = did_you_mean(key, allowed) or f"expected one of {expected}"
                raise self.fail(f"unknown field `{key}`", path, help)
        for key in required:
            if key not in obj:
                raise self.fail(f"missing field `{key}`", path)

    def array(self, value: Any, path: Path) -> list[Any]:
        if not isinstance(value, list):
            raise self.fail(f"expected an array, found {json_kind(value)}", path)
        return value

    def string(self, value: Any, path: Path) -> str:
        if not isinstance(value, str):
            raise self.fail(f"expected a string, found {json_kind(value)}", path)
        return value

    def boolean(self, value: Any, path: Path) -> bool:
        if not isinstance(value, bool):
            raise self.fail(f"expected a boolean, found {json_kind(value)}", path)
        return value

    def name(self, value: Any, path: Path, what: str, *, qualified: bool = True) -> str:
        """A (possibly qualified) name: identifiers that are not reserved words."""
        text = self.string(value, path)
        segments = text.split("::") if qualified else [text]
        for segment in segments:
            if not is_valid_ident(segment):
                raise self.fail(f"invalid {what} `{text}`", path)
        return text

    def annotations(self, value: Any, path: Path) -> Mapping[str, str]:
        obj = self.object(value, path, "annotations")
        out: dict[str, str] = {}
        for key, note in obj.items():
            if not _IDENT.fullmatch(key):
                raise self.fail(f"invalid annotation key `{key}`", path)
            out[key] = "" if note is None else self.string(note, (*path, key))
        return frozen_map(out)

    # -- schema structure -------------------------------------------------------------------

    def schema(self, value: Any) -> list[RawNamespace]:
        root = self.object(value, (), "a schema")
        return [self.namespace(name, body) for name, body in root.items()]

    def namespace(self, name: str, value: Any) -> RawNamespace:
        path: Path = (name,) if name else ()
        if name:
            self.name(name, path, "namespace name")
        obj = self.object(value, path, "a namespace")
        self.fields(
            obj,
            path,
            ("commonTypes", "entityTypes", "actions", "annotations"),
            required=("entityTypes", "actions"),
        )
        commons_path = (*path, "commonTypes")
        commons = [
            RawCommon(
                self.name(key, (*commons_path, key), "common type name", qualified=False),
                self.type(body, (*commons_path, key), extra=("annotations",)),
                (*commons_path, key),
            )
            for key, body in self.object(obj.get("commonTypes", {}), commons_path, "a map").items()
        ]
        entities_path = (*path, "entityTypes")
        entities = [
            self.entity(key, body, (*entities_path, key))
            for key, body in self.object(obj["entityTypes"], entities_path, "a map").items()
        ]
        actions_path = (*path, "actions")
        actions = [
            self.action(key, body, (*actions_path, key))
            for key, body in self.object(obj["actions"], actions_path, "a map").items()
        ]
        annotations = self.annotations(obj.get("annotations", {}), (*path, "annotations"))
        if annotations and not name:
            raise self.fail("the empty namespace cannot have annotations", ("annotations",))
        return RawNamespace(
            name, path, annotations, tuple(commons), tuple(entities), tuple(actions)
        )

    def entity(self, name: str, value: Any, path: Path) -> RawEntity:
        self.name(name, path, "entity type name", qualified=False)
        obj = self.object(value, path, "an entity type")
        self.fields(obj, path, ("memberOfTypes", "shape", "tags", "enum", "annotations"))
        annotations = self.annotations(obj.get("annotations", {}), (*path, "annotations"))
        if "enum" in obj:
            for key in ("memberOfTypes", "shape", "tags"):
                if key in obj:
                    raise self.fail(f"unexpected field `{key}` in an enumerated entity type", path)
            choices = self.array(obj["enum"], (*path, "enum"))
            if not choices:
                raise self.fail("`enum` must list at least one id", (*path, "enum"))
            enum = tuple(self.string(c, (*path, "enum", i)) for i, c in enumerate(choices))
            return RawEntity(name, path, enum=enum, annotations=annotations)
        parents_path = (*path, "memberOfTypes")
        parents = tuple(
            RawRef(
                self.name(p, (*parents_path, i), "entity type name"), "entity", (*parents_path, i)
            )
            for i, p in enumerate(self.array(obj.get("memberOfTypes", []), parents_path))
        )
        shape = self.type(obj["shape"], (*path, "shape")) if "shape" in obj else None
        tags = self.type(obj["tags"], (*path, "tags")) if "tags" in obj else None
        return RawEntity(name, path, parents, shape, (*path, "shape"), tags, None, annotations)

    def action(self, name: str, value: Any, path: Path) -> RawAction:
        obj = self.object(value, path, "an action")
        self.fields(obj, path, ("attributes", "appliesTo", "memberOf", "annotations"))
        if "attributes" in obj:
            raise self.fail("action attributes are not supported", (*path, "attributes"))
        annotations = self.annotations(obj.get("annotations", {}), (*path, "annotations"))
        parents_path = (*path, "memberOf")
        parents = tuple(
            self.action_ref(ref, (*parents_path, i))
            for i, ref in enumerate(self.array(obj.get("memberOf") or [], parents_path))
        )
        applies = obj.get("appliesTo")
        applies_to = None if applies is None else self.applies_to(applies, (*path, "appliesTo"))
        return RawAction(name, path, parents, applies_to, annotations)

    def action_ref(self, value: Any, path: Path) -> RawActionRef:
        obj = self.object(value, path, "an action reference")
        self.fields(obj, path, ("id", "type"), required=("id",))
        type_ = self.name(obj["type"], (*path, "type"), "action type") if "type" in obj else None
        return RawActionRef(type_, self.string(obj["id"], (*path, "id")), path)

    def applies_to(self, value: Any, path: Path) -> RawAppliesTo:
        obj = self.object(value, path, "an `appliesTo`")
        self.fields(
            obj,
            path,
            ("principalTypes", "resourceTypes", "context"),
            required=("principalTypes", "resourceTypes"),
        )
        lists = []
        for key in ("principalTypes", "resourceTypes"):
            items = self.array(obj[key], (*path, key))
            lists.append(
                tuple(
                    RawRef(
                        self.name(n, (*path, key, i), "entity type name"), "entity", (*path, key, i)
                    )
                    for i, n in enumerate(items)
                )
            )
        context = self.type(obj["context"], (*path, "context")) if "context" in obj else None
        return RawAppliesTo(lists[0], lists[1], context, (*path, "context"))

    # -- types ------------------------------------------------------------------------------

    def type(self, value: Any, path: Path, extra: tuple[str, ...] = ()) -> RawType:
        """A type object; ``extra`` are the other fields its position allows (``required``...)."""
        obj = self.object(value, path, "a type")
        self.fields(obj, path, (*_TYPE_FIELDS, *extra), required=("type",))
        kind = self.string(obj["type"], (*path, "type"))
        allowed = _FIELDS_OF.get(kind, ())
        for key in _TYPE_FIELDS[1:]:
            if key in obj and key not in allowed:
                raise self.fail(f"unexpected field `{key}` for a `{kind}` type", path)
        if kind in _PRIMITIVES:
            return _PRIMITIVES[kind]
        if kind == "Set":
            if "element" not in obj:
                raise self.fail("missing field `element`", path)
            return RawSet(self.type(obj["element"], (*path, "element")))
        if kind == "Record":
            return self.record(obj, path)
        if kind in ("Entity", "EntityOrCommon"):
            if "name" not in obj:
                raise self.fail("missing field `name`", path)
            name = self.name(obj["name"], (*path, "name"), "type name")
            return RawRef(name, "entity" if kind == "Entity" else "either", path)
        if kind == "Extension":
            if "name" not in obj:
                raise self.fail("missing field `name`", path)
            name = self.string(obj["name"], (*path, "name"))
            if name not in EXTENSION_TYPE_NAMES:
                raise self.fail(
                    f"unknown extension type `{name}`",
                    (*path, "name"),
                    did_you_mean(name, EXTENSION_TYPE_NAMES),
                )
            return ExtensionType(name)
        return RawRef(self.name(kind, (*path, "type"), "type name"), "common", path)

    def record(self, obj: Mapping[str, Any], path: Path) -> RawRecord:
        if "attributes" not in obj:
            raise self.fail("missing field `attributes`", path)
        if obj.get("additionalAttributes") is not None and self.boolean(
            obj["additionalAttributes"], (*path, "additionalAttributes")
        ):
            raise self.fail(
                "open records (`additionalAttributes: true`) are not supported",
                (*path, "additionalAttributes"),
            )
        attrs_path = (*path, "attributes")
        attributes = []
        for key, body in self.object(obj["attributes"], attrs_path, "a map").items():
            attr_path = (*attrs_path, key)
            type_ = self.type(body, attr_path, extra=("required", "annotations"))
            required = self.boolean(body.get("required", True), (*attr_path, "required"))
            annotations = self.annotations(body.get("annotations", {}), (*attr_path, "annotations"))
            attributes.append(RawAttr(key, type_, required, annotations))
        return RawRecord(tuple(attributes))


# ---------------------------------------------------------------------------------------------
# Writing


def schema_to_json(schema: SchemaModel) -> dict[str, Any]:
    """The JSON schema of ``schema``, grouped by namespace, every name fully qualified."""
    out: dict[str, Any] = {}
    for namespace in schema.namespaces():
        body: dict[str, Any] = {
            "entityTypes": {
                name.rpartition("::")[2]: _entity_json(definition)
                for name, definition in schema.entity_types.items()
                if namespace_of(name) == namespace
            },
            "actions": {
                uid.id: _action_json(definition)
                for uid, definition in schema.actions.items()
                if namespace_of(uid.type) == namespace
            },
        }
        annotations = schema.namespace_annotations.get(namespace)
        if annotations:
            body["annotations"] = dict(annotations)
        out[namespace] = body
    return out


def type_json(t: CedarType) -> dict[str, Any]:
    """The JSON form of a type (``{"type": "Set", "element": {"type": "Long"}}``...)."""
    match t:
        case BoolType():
            return {"type": "Boolean"}
        case LongType():
            return {"type": "Long"}
        case StringType():
            return {"type": "String"}
        case EntityType(name=name):
            return {"type": "Entity", "name": name}
        case ExtensionType(name=name):
            return {"type": "Extension", "name": name}
        case SetType(element=element):
            return {"type": "Set", "element": type_json(element)}
        case RecordType():
            attributes = {}
            for name, attr in t.attributes.items():
                entry = type_json(attr.type)
                if not attr.required:
                    entry["required"] = False
                if attr.annotations:
                    entry["annotations"] = dict(attr.annotations)
                attributes[name] = entry
            record: dict[str, Any] = {"type": "Record", "attributes": attributes}
            if t.open:
                record["additionalAttributes"] = True
            return record
    raise TypeError(f"not a schema type: {t!r}")


def _entity_json(definition: EntityTypeDef) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if definition.enum is not None:
        out["enum"] = list(definition.enum)
    else:
        if definition.member_of_types:
            out["memberOfTypes"] = sorted(definition.member_of_types)
        if definition.shape.attributes:
            out["shape"] = type_json(definition.shape)
        if definition.tags is not None:
            out["tags"] = type_json(definition.tags)
    if definition.annotations:
        out["annotations"] = dict(definition.annotations)
    return out


def _action_json(definition: ActionDef) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if definition.member_of:
        out["memberOf"] = [{"id": uid.id, "type": uid.type} for uid in definition.member_of]
    applies = definition.applies_to
    if applies is not None:
        out["appliesTo"] = {
            "principalTypes": list(applies.principal_types),
            "resourceTypes": list(applies.resource_types),
            "context": type_json(applies.context),
        }
    if definition.annotations:
        out["annotations"] = dict(definition.annotations)
    return out
