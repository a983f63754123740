"""Tool parameters: the schema provider of calls, and provider schema normalization
(docs/tool-policy.md §12).

A tool's parameter JSON schema describes the **resource of a call**: the call's arguments become
typed attributes of an entity ``Call::<tool>::"<call id>"`` (``resource.command``,
``resource.path``), a child of the tool instance ``Tool::"<name>"``, and are also given as
``context.input`` (the cedar-for-agents convention). :func:`call_arguments` checks arguments
against the schema (a wrong type is a :class:`ToolArgumentError` naming the argument: a guard
built on it fails closed), and :func:`cedar_schema` writes the Cedar schema of a catalog, against
which policies on arguments can be validated (an attribute a tool does not have is an error).

JSON schema → Cedar: ``string`` → ``String``, ``integer`` → ``Long``, ``number`` → ``decimal``,
``boolean`` → ``Bool``, ``array`` → ``Set<T>``, ``object`` with ``properties`` → a record;
``required`` properties are required attributes. A parameter whose schema has no Cedar type
but allows a string (``{}``, ``{"type": ["string", "array"]}``, a union with a string
variant) is an optional ``String`` attribute, present when the call gives a string; others
(free-form objects, ``null``) are not attributes.

A schema that allows arguments it does not declare (no ``additionalProperties: false``; no
schema at all, as for MCP tools known only by name) hides nothing from rules: the call's other
top-level string arguments are ``String`` attributes too. The Cedar type of a plugin or MCP
tool with such a schema declares the path-like names of the shipped rules
(:data:`PATH_ARGUMENTS`) as optional strings, so that ``resource has path && resource.path
like "..."`` validates for it (:func:`input_type`).

The second half is the normalization of docs/tool-policy.md §12, plain Python on JSON schemas:
:func:`normalize_tool_parameters` (top-level shapes, flattening ``anyOf``/``oneOf``),
:func:`clean_for_gemini` and :func:`strip_unsupported_schema_keywords`.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from cachetools import LRUCache

from ..data.entities import Entity
from ..data.values import EntityUID, Record
from ..lang.ast import RESERVED
from ..schema.defs import ActionDef, AppliesTo, EntityTypeDef
from ..schema.model import Schema
from ..schema.types import (
    BOOL,
    LONG,
    STRING,
    Attribute,
    CedarType,
    ExtensionType,
    RecordType,
    SetType,
)
from . import arguments
from .arguments import PATH_ARGUMENTS as PATH_ARGUMENTS  # re-exported
from .arguments import ArgumentPlan, Check, RecordCheck
from .arguments import ToolArgumentError as ToolArgumentError  # re-exported
from .catalog import (
    AGENT_TYPE,
    CORE_GROUPS,
    CORE_TOOL_IDS,
    GROUP_OWNER_ONLY,
    GROUP_PLUGINS,
    OWNER_ONLY_TOOLS,
    TOOL_TYPE,
    ToolCatalog,
    ToolInfo,
    action_uid,
    group_uid,
    guard_depth,
    plugin_uid,
)
from .names import js_truthy

#: Namespace of the per-tool call resource types (``Call::exec``).
CALL_NAMESPACE = "Call"

#: Parameter schemas of the core tools whose arguments policies commonly inspect; used for a
#: core tool given without ``parameters``.
CORE_PARAMETERS: dict[str, dict[str, Any]] = {
    "exec": {
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "Shell command to run"},
            "workdir": {"type": "string"},
            "env": {"type": "object", "additionalProperties": {"type": "string"}},
            "yieldMs": {"type": "integer"},
            "background": {"type": "boolean"},
            "timeout": {"type": "integer"},
            "pty": {"type": "boolean"},
            "elevated": {"type": "boolean"},
            "host": {"type": "string", "enum": ["sandbox", "gateway", "node"]},
        },
        "required": ["command"],
    },
    "read": {
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "offset": {"type": "integer"},
            "limit": {"type": "integer"},
        },
        "required": ["path"],
    },
    "write": {
        "type": "object",
        "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
        "required": ["path", "content"],
    },
    "edit": {
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "oldText": {"type": "string"},
            "newText": {"type": "string"},
        },
        "required": ["path", "oldText", "newText"],
    },
    "apply_patch": {
        "type": "object",
        "properties": {"input": {"type": "string"}},
        "required": ["input"],
    },
    "process": {
        "type": "object",
        "properties": {
            "action": {
                "type": "string",
                "enum": ["list", "poll", "log", "write", "kill", "clear", "remove"],
            },
            "sessionId": {"type": "string"},
        },
        "required": ["action"],
    },
    "web_fetch": {
        "type": "object",
        "properties": {"url": {"type": "string"}, "maxChars": {"type": "integer"}},
        "required": ["url"],
    },
    "web_search": {
        "type": "object",
        "properties": {"query": {"type": "string"}, "count": {"type": "integer"}},
        "required": ["query"],
    },
}


def parameters_of(tool: ToolInfo) -> Mapping[str, Any] | None:
    """The parameter schema of a tool: its own, else the core default for its name."""
    if tool.parameters is not None:
        return tool.parameters
    return None if tool.is_plugin else CORE_PARAMETERS.get(tool.normalized)


# ---------------------------------------------------------------------------------------------
# JSON schema -> Cedar types

_JSON_TYPES = {"string": STRING, "integer": LONG, "boolean": BOOL}
DECIMAL = ExtensionType("decimal")


def cedar_type(schema: Any) -> CedarType | None:
    """The Cedar type of values of a JSON schema (``None``: no Cedar type)."""
    if not isinstance(schema, Mapping):
        return None
    t = schema.get("type")
    if isinstance(t, list):
        kinds = [k for k in t if k != "null"]
        t = kinds[0] if len(kinds) == 1 else None
    if t is None:
        return _untyped(schema)
    if t in _JSON_TYPES:
        return _JSON_TYPES[t]
    if t == "number":
        return DECIMAL
    if t == "array":
        element = cedar_type(schema.get("items"))
        return SetType(element) if element is not None else None
    if t == "object":
        return _record(schema)
    return None


def _untyped(schema: Mapping[str, Any]) -> CedarType | None:
    """A schema without ``type``: an enum/const of strings, a union of one type, an object."""
    values = schema.get("enum", [schema["const"]] if "const" in schema else None)
    if isinstance(values, list) and values and all(isinstance(v, str) for v in values):
        return STRING
    for key in ("anyOf", "oneOf"):
        variants = schema.get(key)
        if isinstance(variants, list):
            types = {cedar_type(v) for v in variants if not _is_null(v)}
            return types.pop() if len(types) == 1 else None
    if isinstance(schema.get("properties"), Mapping):
        return _record(schema)
    return None


def _is_null(schema: Any) -> bool:
    return isinstance(schema, Mapping) and schema.get("type") == "null"


def _record(schema: Mapping[str, Any]) -> RecordType | None:
    props = schema.get("properties")
    if not isinstance(props, Mapping) or not props:
        return None
    required = schema.get("required")
    required = set(required) if isinstance(required, list) else set()
    attrs = {}
    for name, sub in props.items():
        t = cedar_type(sub)
        if t is not None:
            attrs[name] = Attribute(t, required=name in required)
        elif _may_be_string(sub):
            attrs[name] = Attribute(STRING, required=False)
    return RecordType(attrs)


def _may_be_string(schema: Any) -> bool:
    """Whether a schema without Cedar type allows a string (``{}``, ``true``, a list of types
    with ``string``, an enum with a string, a union with such a variant)."""
    if not isinstance(schema, Mapping):
        return schema is not False
    t = schema.get("type")
    if isinstance(t, str):
        return t == "string"
    if isinstance(t, list):
        return "string" in t
    values = schema.get("enum", [schema["const"]] if "const" in schema else None)
    if isinstance(values, list):
        return any(isinstance(v, str) for v in values)
    for key in ("anyOf", "oneOf"):
        variants = schema.get(key)
        if isinstance(variants, list):
            return any(_may_be_string(v) for v in variants)
    return "properties" not in schema


def allows_other_arguments(schema: Any) -> bool:
    """Whether a parameter schema allows arguments it does not declare (no schema does)."""
    return not isinstance(schema, Mapping) or schema.get("additionalProperties") is not False


def input_type(
    schema: Mapping[str, Any] | None, plugin: bool = False, command: bool = False
) -> RecordType:
    """The record type of a tool's arguments: its parameters with a Cedar type and, when the
    schema allows other arguments (whose string values are attributes too), optional strings
    for the names rules commonly read: :data:`PATH_ARGUMENTS` for a ``plugin`` tool (MCP
    servers and plugins, whose schemas often say little); and on every tool the attributes the
    host adapters add for the path they judge, ``absolutePath`` and ``inWorkspace``
    (:data:`cedarlite.tools.arguments.PATH_ATTRIBUTES`). A ``command`` tool
    (:func:`runs_commands`) has the optional set :data:`~cedarlite.tools.arguments.SHORT_OPTIONS`
    too."""
    record = (_record(schema) if schema is not None else None) or RecordType()
    attrs = dict(record.attributes)
    if command:
        attrs[arguments.SHORT_OPTIONS] = Attribute(SetType(STRING), required=False)
    # The adapters' attributes for the path judged (PATH_ATTRIBUTES), on every tool.
    attrs.setdefault("absolutePath", Attribute(STRING, required=False))
    attrs.setdefault("inWorkspace", Attribute(BOOL, required=False))
    if allows_other_arguments(schema) and plugin:
        for name in PATH_ARGUMENTS:
            attrs.setdefault(name, Attribute(STRING, required=False))
    return RecordType(attrs)


# ---------------------------------------------------------------------------------------------
# Arguments -> Cedar values


@guard_depth
def argument_plan(tool: ToolInfo) -> ArgumentPlan:
    """The tool's parameter schema compiled for checking arguments (see
    :mod:`cedarlite.tools.arguments`): plain data, no schema model needed to use it."""
    schema = parameters_of(tool)
    record = None if schema is None else _record_check(schema)
    command = runs_commands(tool)
    if not allows_other_arguments(schema):
        return ArgumentPlan(str(tool.name), record, None, command)
    declared = frozenset(name for name, _ in record[0]) if record is not None else frozenset()
    return ArgumentPlan(str(tool.name), record, declared, command)


def runs_commands(tool: ToolInfo) -> bool:
    """Whether the tool's ``command`` is a shell command (core ``exec``): its calls have the
    attribute :data:`~cedarlite.tools.arguments.SHORT_OPTIONS`
    (:func:`~cedarlite.tools.arguments.short_options`)."""
    return not tool.is_plugin and tool.normalized == "exec"


def _record_check(schema: Any, t: RecordType | None = None) -> RecordCheck:
    """The record check of an object schema (its properties, each with its Cedar type).

    ``t``, the schema's type when already known, gives the properties' types without walking
    their schemas again (each level once: nested objects would otherwise cost the square of
    their depth)."""
    if not isinstance(schema, Mapping):
        return ((), (), None)
    props = schema.get("properties")
    props = props if isinstance(props, Mapping) else {}
    required = schema.get("required")
    required = [r for r in required if isinstance(r, str)] if isinstance(required, list) else []
    closed = schema.get("additionalProperties") is False
    known = t.attributes if t is not None else None

    def type_of(name: str, sub: Any) -> CedarType | None:
        attr = known.get(name) if known is not None else None
        if known is not None and attr is None:
            return None  # (`_record` leaves out exactly the properties without a type)
        if attr is not None and attr.type is not STRING:
            return attr.type  # cedar_type(sub) itself; a STRING may stand for an untyped one
        return cedar_type(sub)

    return (
        tuple((name, _check(sub, type_of(name, sub))) for name, sub in props.items()),
        tuple(required),
        frozenset(props) if closed else None,
    )


def _check(schema: Any, t: CedarType | None) -> Check:
    """The check of a value of ``schema`` typed by ``t``."""
    allowed = schema.get("enum") if isinstance(schema, Mapping) else None
    enum = tuple(allowed) if isinstance(allowed, list) else None
    if t is None:
        kind = arguments.TEXT if _may_be_string(schema) else arguments.UNTYPED
        return (kind, enum, None)
    if t is STRING:
        return (arguments.STRING, enum, None)
    if t is BOOL:
        return (arguments.BOOL, enum, None)
    if t is LONG:
        return (arguments.LONG, enum, None)
    if t == DECIMAL:
        return (arguments.DECIMAL, enum, None)
    if isinstance(t, SetType):
        items = schema.get("items") if isinstance(schema, Mapping) else None
        return (arguments.SET, enum, _check(items, t.element))
    if isinstance(t, RecordType):
        return (arguments.RECORD, enum, _record_check(schema, t))
    raise AssertionError(t)  # pragma: no cover


def call_arguments(tool: ToolInfo, params: Any) -> Record:
    """The typed record of a call's arguments (docs/tool-policy.md §4.2 parameters); raises
    :class:`ToolArgumentError` naming the argument when they do not conform."""
    return argument_plan(tool).convert(params)


# ---------------------------------------------------------------------------------------------
# Resource types and the Cedar schema of a catalog

_IDENT_BAD = re.compile(r"[^A-Za-z0-9_]")  # one character class: linear, no backtracking


def _ident(name: str) -> str:
    text = _IDENT_BAD.sub("_", name) or "_"
    if text[0].isdigit():
        text = "_" + text
    if text in RESERVED or text in ("__cedar",):
        text += "_"
    return text.replace("__cedar", "__cedar_")


@dataclass(frozen=True)
class CallTypes:
    """The call resource type of every tool of a catalog (``Call::exec``), unique per tool."""

    catalog: ToolCatalog

    @cached_property
    def by_key(self) -> dict[str, str]:
        """Tool key → fully qualified entity type name."""
        out: dict[str, str] = {}
        used: set[str] = set()
        for t in self.catalog.registered:
            base = _ident(t.normalized or (t.name if isinstance(t.name, str) else "tool"))
            name, n = base, 2
            while name in used:
                name, n = f"{base}_{n}", n + 1
            used.add(name)
            out[t.key] = f"{CALL_NAMESPACE}::{name}"
        return out

    def of(self, tool: ToolInfo) -> str:
        """The call resource type of a tool."""
        return self.by_key[tool.key]


def call_entity(catalog: ToolCatalog, tool: ToolInfo, arguments: Record, call_id: str) -> Entity:
    """The resource entity of a call: the arguments as attributes, a child of the tool."""
    uid = EntityUID(call_types(catalog).of(tool), call_id)
    return Entity(uid, arguments, frozenset({tool.resource}))


_CALL_TYPES: LRUCache[str, CallTypes] = LRUCache(maxsize=256)
_CALL_TYPES_LOCK = threading.Lock()


def call_types(catalog: ToolCatalog) -> CallTypes:
    """The (cached, thread-safe) call resource types of a catalog."""
    with _CALL_TYPES_LOCK:
        found = _CALL_TYPES.get(catalog.fingerprint)
        if found is None or found.catalog is not catalog:
            found = _CALL_TYPES[catalog.fingerprint] = CallTypes(catalog)
    return found


#: The context of every tool request (``input`` is added per action).
CONTEXT_ATTRIBUTES: dict[str, CedarType] = {
    "agent": STRING,
    "provider": STRING,
    "providerModel": STRING,
    "channel": STRING,
    "groupId": STRING,
    "sandboxed": BOOL,
    "senderIsOwner": BOOL,
    "subagentDepth": LONG,
    "toolsEnabled": BOOL,
}


@guard_depth
def cedar_schema(catalog: ToolCatalog) -> Schema:
    """The Cedar schema of the calls of a catalog.

    ``Agent`` principals; ``Tool`` entities (the tools); one ``Call::<tool>`` resource type per
    tool whose attributes are its typed parameters (a child of ``Tool``); one action per tool
    name, in its groups, applying to its call types with the run context plus ``input`` (core
    tools absent from the catalog are declared too, applying to nothing). Policies on arguments
    validate against it (a misspelled ``resource.comand`` is an error with a did-you-mean).
    Resolution requests (resource ``Tool::"<name>"``, no ``input``) are outside this schema.
    """
    types = call_types(catalog)
    entity_types: dict[str, EntityTypeDef] = {
        AGENT_TYPE: EntityTypeDef(AGENT_TYPE),
        TOOL_TYPE: EntityTypeDef(
            TOOL_TYPE,
            shape=RecordType({"name": Attribute(STRING), "pluginId": Attribute(STRING, False)}),
        ),
    }
    by_action: dict[EntityUID, list[ToolInfo]] = {}
    for t in catalog.registered:
        entity_types[types.of(t)] = EntityTypeDef(
            types.of(t),
            frozenset({TOOL_TYPE}),
            input_type(parameters_of(t), t.is_plugin, runs_commands(t)),
        )
        by_action.setdefault(t.action, []).append(t)
    groups = [*CORE_GROUPS, GROUP_PLUGINS, GROUP_OWNER_ONLY]
    actions: dict[EntityUID, ActionDef] = {group_uid(g): ActionDef(group_uid(g)) for g in groups}
    for key in catalog.plugin_groups:
        actions[plugin_uid(key)] = ActionDef(plugin_uid(key))
    for name in (*CORE_TOOL_IDS, *OWNER_ONLY_TOOLS):  # known tools, absent from this run
        if name not in catalog.names:
            uid = action_uid(name)
            actions[uid] = ActionDef(uid, tuple(sorted(catalog.action_parents(name))))
    for name in catalog.names:
        uid = action_uid(name)
        tools = by_action[uid]
        inputs = {input_type(parameters_of(t), t.is_plugin, runs_commands(t)) for t in tools}
        context = dict(CONTEXT_ATTRIBUTES)
        ctx_attrs = {k: Attribute(v) for k, v in context.items()}
        if len(inputs) == 1:
            ctx_attrs["input"] = Attribute(inputs.pop())
        actions[uid] = ActionDef(
            uid,
            tuple(sorted(catalog.action_parents(name))),
            AppliesTo((AGENT_TYPE,), tuple(types.of(t) for t in tools), RecordType(ctx_attrs)),
        )
    return Schema(entity_types, actions)


def validate_rules(rules: Any, catalog: ToolCatalog) -> Any:
    """Validate argument rules against :func:`cedar_schema` with cedarlite's strict validator.

    Returns its ``ValidationResult`` (an unknown attribute is an error with a did-you-mean).
    """
    # lazy on purpose: only rules checked against the catalog need the validator
    from ..schema.validator import validate

    return validate(rules, cedar_schema(catalog))


# ---------------------------------------------------------------------------------------------
# docs/tool-policy.md §12: parameter-schema normalization


def _js_typeof(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "object"  # null, objects and arrays


def _enum_values(schema: Any) -> list[Any] | None:
    """The enum values of a schema: ``enum``, ``[const]``, or those of its union variants."""
    if not isinstance(schema, Mapping):
        return None
    if isinstance(schema.get("enum"), list):
        return list(schema["enum"])
    if "const" in schema:
        return [schema["const"]]
    variants = schema.get("anyOf") if isinstance(schema.get("anyOf"), list) else schema.get("oneOf")
    if isinstance(variants, list):
        values = [v for variant in variants for v in (_enum_values(variant) or [])]
        if values:
            return values
    return None


def _same_value(a: Any, b: Any) -> bool:
    """Equality of enum values: equal primitives (booleans are not numbers); objects by identity."""
    if isinstance(a, dict | list) or isinstance(b, dict | list) or a is None or b is None:
        return a is b
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


def merge_property(a: Any, b: Any) -> Any:
    """``mergeProperty`` of docs/tool-policy.md §12.1: two definitions of one property of a
    flattened union."""
    if not js_truthy(a):
        return b
    if not js_truthy(b):
        return a
    va, vb = _enum_values(a), _enum_values(b)
    if va is None and vb is None:
        return a
    out: dict[str, Any] = {}
    for key in ("title", "description", "default"):
        for s in (a, b):
            if isinstance(s, Mapping) and key in s:
                out[key] = s[key]
                break
    values: list[Any] = []
    for v in [*(va or []), *(vb or [])]:
        if not any(_same_value(v, w) for w in values):
            values.append(v)
    kinds = {_js_typeof(v) for v in values}
    if len(kinds) == 1:
        out["type"] = kinds.pop()
    out["enum"] = values
    return out


@guard_depth
def normalize_tool_parameters(
    schema: Any,
    *,
    provider: str | None = None,
    unsupported_keywords: Sequence[Any] = (),
) -> Any:
    """docs/tool-policy.md §12: the parameter schema a provider receives for a tool.

    ``provider`` is the run's provider id; ``unsupported_keywords`` the model's
    ``unsupportedToolSchemaKeywords`` (strings, trimmed, blanks dropped).
    """
    if not isinstance(schema, Mapping):
        return schema
    keywords = {k.strip() for k in unsupported_keywords if isinstance(k, str) and k.strip()}

    def clean(s: Any) -> Any:
        return clean_schema(s, provider=provider, unsupported_keywords=keywords)

    conditional = next(
        (k for k in ("anyOf", "oneOf", "allOf") if isinstance(schema.get(k), list)), None
    )
    flattenable = (
        "anyOf"
        if isinstance(schema.get("anyOf"), list)
        else ("oneOf" if isinstance(schema.get("oneOf"), list) else None)
    )
    has_type, has_props = "type" in schema, "properties" in schema
    if has_type and has_props and conditional is None:
        return clean(dict(schema))
    props = schema.get("properties")
    object_like = isinstance(props, Mapping | list) or (has_props and props is None)
    if (
        not has_type
        and conditional is None
        and (object_like or isinstance(schema.get("required"), list))
    ):
        return clean({**schema, "type": "object"})
    if has_type and not has_props and conditional is None:
        return clean({**schema, "properties": {}})
    if flattenable is None:
        if not schema:
            return clean({"type": "object", "properties": {}})
        return schema
    return clean(_flatten(schema, schema[flattenable]))


def _flatten(root: Mapping[str, Any], variants: list[Any]) -> dict[str, Any]:
    objects = [
        v for v in variants if isinstance(v, Mapping) and isinstance(v.get("properties"), Mapping)
    ]
    merged: dict[str, Any] = {}
    for v in objects:
        for key, sub in v["properties"].items():
            merged[key] = merge_property(merged[key], sub) if key in merged else sub
    root_required = (
        [r for r in root.get("required") or [] if isinstance(r, str)]
        if isinstance(root.get("required"), list)
        else []
    )
    if root_required:
        required = root_required
    else:
        counts: dict[str, int] = {}
        for v in objects:
            for r in v.get("required") or [] if isinstance(v.get("required"), list) else []:
                if isinstance(r, str):
                    counts[r] = counts.get(r, 0) + 1
        required = [k for k, n in counts.items() if objects and n == len(objects)]
    out: dict[str, Any] = {"type": "object"}
    if isinstance(root.get("title"), str):
        out["title"] = root["title"]
    if isinstance(root.get("description"), str):
        out["description"] = root["description"]
    out["properties"] = merged or root.get("properties", {})
    if required:
        out["required"] = required
    out["additionalProperties"] = root.get("additionalProperties", True)
    return out


def clean_schema(
    schema: Any, *, provider: str | None = None, unsupported_keywords: Any = ()
) -> Any:
    """``clean`` of docs/tool-policy.md §12.2: Gemini cleaning for Google/Gemini providers, else
    stripping the model's unsupported keywords, else the schema as is."""
    p = provider.strip().lower() if isinstance(provider, str) else ""
    if ("google" in p or "gemini" in p) and "anthropic" not in p:
        return clean_for_gemini(schema)
    keywords = set(unsupported_keywords)
    if keywords:
        return strip_unsupported_schema_keywords(schema, keywords)
    return schema


def strip_unsupported_schema_keywords(schema: Any, keywords: set[str] | frozenset[str]) -> Any:
    """Drop ``keywords`` from a schema and its properties, items and union variants
    (docs/tool-policy.md §12.2)."""
    if isinstance(schema, list):
        return [strip_unsupported_schema_keywords(s, keywords) for s in schema]
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in keywords:
            continue
        if key == "properties" and isinstance(value, Mapping):
            out[key] = {k: strip_unsupported_schema_keywords(v, keywords) for k, v in value.items()}
        elif key == "items" and isinstance(value, Mapping | list):
            out[key] = strip_unsupported_schema_keywords(value, keywords)
        elif key in ("anyOf", "oneOf", "allOf") and isinstance(value, list):
            out[key] = [strip_unsupported_schema_keywords(v, keywords) for v in value]
        else:
            out[key] = value
    return out


#: Keywords Gemini does not accept (docs/tool-policy.md §12.2).
GEMINI_UNSUPPORTED = frozenset({
    "patternProperties", "additionalProperties", "$schema", "$id", "$ref", "$defs", "definitions",
    "examples", "minLength", "maxLength", "minimum", "maximum", "multipleOf", "pattern", "format",
    "minItems", "maxItems", "uniqueItems", "minProperties", "maxProperties", "not",
})  # fmt: skip

_META = ("description", "title", "default")


def _meta(node: Mapping[str, Any]) -> dict[str, Any]:
    return {k: node[k] for k in _META if k in node}


def _is_null_variant(v: Any) -> bool:
    if not isinstance(v, Mapping):
        return False
    if "const" in v and v["const"] is None:
        return True
    enum = v.get("enum")
    if isinstance(enum, list) and len(enum) == 1 and enum[0] is None:
        return True
    t = v.get("type")
    return t == "null" or (isinstance(t, list) and t == ["null"])


def _literal(v: Any) -> tuple[bool, Any]:
    if not isinstance(v, Mapping):
        return False, None
    if "const" in v:
        return True, v["const"]
    enum = v.get("enum")
    if isinstance(enum, list) and len(enum) == 1:
        return True, enum[0]
    return False, None


def clean_for_gemini(schema: Any) -> Any:
    """``cleanForGemini`` of docs/tool-policy.md §12.2: the schema Gemini accepts."""
    return _gemini(schema, {}, frozenset())


def _ref_name(ref: str) -> str | None:
    for prefix in ("#/$defs/", "#/definitions/"):
        if ref.startswith(prefix):
            return ref[len(prefix) :].replace("~1", "/").replace("~0", "~")
    return None


def _gemini(node: Any, defs: Mapping[str, Any], expanding: frozenset[str]) -> Any:
    if isinstance(node, list):
        return [_gemini(x, defs, expanding) for x in node]
    if not isinstance(node, Mapping):
        return node
    scope = dict(defs)
    for key in ("$defs", "definitions"):
        if isinstance(node.get(key), Mapping):
            scope.update(node[key])
    ref = node.get("$ref")
    if isinstance(ref, str):
        name = _ref_name(ref)
        meta = _meta(node)
        if ref in expanding:
            return {}
        if name is not None and name in scope:
            target = _gemini(scope[name], scope, expanding | {ref})
            if isinstance(target, Mapping):
                return {**target, **meta}
            return target
        return meta
    out: dict[str, Any] = {}
    unions: dict[str, list[Any]] = {}
    for key in ("anyOf", "oneOf"):
        if isinstance(node.get(key), list):
            variants = [_gemini(v, scope, expanding) for v in node[key]]
            kept = [v for v in variants if not _is_null_variant(v)]
            removed_null = len(kept) != len(variants)
            literals = [_literal(v) for v in kept]
            types = {v.get("type") for v in kept if isinstance(v, Mapping)}
            if kept and all(ok for ok, _ in literals) and len(types) == 1:
                t = next(iter(types))
                if isinstance(t, str):
                    return {"type": t, "enum": [v for _, v in literals], **_meta(node)}
            if removed_null and len(kept) == 1:
                only = kept[0]
                return {**only, **_meta(node)} if isinstance(only, Mapping) else only
            unions[key] = kept
    for key, value in node.items():
        if key in GEMINI_UNSUPPORTED:
            continue
        if key in unions:
            out[key] = unions[key]
        elif key == "const":
            out["enum"] = [value]
        elif (key == "required" and isinstance(value, list) and not value) or (
            key == "type" and unions
        ):
            continue
        elif key == "type" and isinstance(value, list) and all(isinstance(x, str) for x in value):
            kinds = [x for x in value if x != "null"]
            out[key] = kinds[0] if len(kinds) == 1 else kinds
        elif key == "properties":
            out[key] = (
                {k: _gemini(v, scope, expanding) for k, v in value.items()}
                if isinstance(value, Mapping) else {}
            )  # fmt: skip
        elif key == "items" and isinstance(value, Mapping | list):
            out[key] = _gemini(value, scope, expanding)
        elif key == "allOf" and isinstance(value, list):
            out[key] = [_gemini(v, scope, expanding) for v in value]
        else:
            out[key] = value
    for key in ("anyOf", "oneOf"):
        if key in out:
            collapsed = _collapse(out, out[key])
            if collapsed is not None:
                return _sanitize_required(collapsed)
    return _sanitize_required(out)


def _collapse(node: dict[str, Any], variants: list[Any]) -> dict[str, Any] | None:
    """Collapse a union with object variants (docs/tool-policy.md §12.2); ``None`` when it has
    none."""
    objects = [v for v in variants if isinstance(v, Mapping | list)]
    if not objects:
        return None
    meta = _meta(node)
    if len(objects) == 1:
        only = objects[0]
        return {**only, **meta} if isinstance(only, Mapping) else meta
    types = list(dict.fromkeys(
        v.get("type") for v in objects if isinstance(v, Mapping) and js_truthy(v.get("type"))
    ))  # fmt: skip
    if len(types) == 1:
        return {"type": types[0], **meta}
    first = objects[0].get("type") if isinstance(objects[0], Mapping) else None
    return {"type": first, **meta} if js_truthy(first) else meta


def _sanitize_required(out: dict[str, Any]) -> dict[str, Any]:
    """``required`` keeps the strings naming a property (docs/tool-policy.md §12.2, last rule)."""
    required = out.get("required")
    if not isinstance(required, list):
        return out
    props = out.get("properties")
    if isinstance(props, Mapping):
        kept = [r for r in required if isinstance(r, str) and r in props]
        if kept:
            out["required"] = kept
        else:
            del out["required"]
    elif out.get("type") == "object":
        del out["required"]
    return out
