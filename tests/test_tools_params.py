"""Tool parameters: arguments as the call's resource, the Cedar schema of a catalog, and the
provider schema normalization of spec §12 (one test per rule)."""

from __future__ import annotations

import json
import pickle
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from cedarlite import ValidationError
from cedarlite.data.ext.decimal import Decimal
from cedarlite.data.values import CedarSet, Record
from cedarlite.schema import Schema
from cedarlite.tools import ToolCatalog
from cedarlite.tools.params import (
    ToolArgumentError,
    argument_plan,
    call_arguments,
    cedar_schema,
    clean_for_gemini,
    clean_schema,
    merge_property,
    normalize_tool_parameters,
    strip_unsupported_schema_keywords,
    validate_rules,
)
from cedarlite.tools.resolve import ToolPolicy

PLUGIN = {
    "name": "deploy",
    "pluginId": "ops",
    "parameters": {
        "type": "object",
        "properties": {
            "target": {"type": "string", "enum": ["staging", "prod"]},
            "replicas": {"type": "integer"},
            "ratio": {"type": "number"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "opts": {
                "type": "object",
                "properties": {"force": {"type": "boolean"}},
                "required": ["force"],
            },
            "free": {"type": "object"},
        },
        "required": ["target"],
        "additionalProperties": False,
    },
}
CATALOG = ToolCatalog.from_tools([{"name": "exec"}, {"name": "read"}, {"name": "process"}, PLUGIN])


def tool(name: str) -> Any:
    found = CATALOG.find(name)
    assert found is not None
    return found


# --- arguments --------------------------------------------------------------------------------


def test_arguments_become_typed_cedar_values() -> None:
    args = call_arguments(
        tool("deploy"),
        {
            "target": "prod",
            "replicas": 3.0,
            "ratio": 0.25,
            "tags": ["a", "b"],
            "opts": {"force": True},
            "free": {"any": [1, None]},
        },
    )
    assert args == Record(
        {
            "target": "prod",
            "replicas": 3,
            "ratio": Decimal.parse("0.25"),
            "tags": CedarSet(["a", "b"]),
            "opts": Record({"force": True}),
        }
    )


@pytest.mark.parametrize(
    ("params", "message", "argument"),
    [
        (
            {"target": 1},
            "argument `target` of tool `deploy`: expected a string, got an integer",
            "target",
        ),
        ({}, "argument `target` of tool `deploy` is required", "target"),
        (
            {"target": "dev"},
            "argument `target` of tool `deploy`: `dev` is not one of `staging`, `prod`",
            "target",
        ),
        (
            {"target": "prod", "replicas": True},
            "argument `replicas` of tool `deploy`: expected an integer, got a boolean",
            "replicas",
        ),
        (
            {"target": "prod", "tags": ["a", 2]},
            "argument `tags[1]` of tool `deploy`: expected a string, got an integer",
            "tags[1]",
        ),
        (
            {"target": "prod", "opts": {}},
            "argument `opts.force` of tool `deploy` is required",
            "opts.force",
        ),
        (
            {"target": "prod", "ratio": 0.123456},
            "argument `ratio` of tool `deploy`: `0.123456` has more than 4 decimal places",
            "ratio",
        ),
        (
            {"target": "prod", "extra": 1},
            "argument `extra` of tool `deploy` is not a parameter of the tool",
            "extra",
        ),
    ],
)
def test_arguments_that_do_not_conform_name_the_argument(
    params: Any, message: str, argument: str
) -> None:
    with pytest.raises(ToolArgumentError) as info:
        call_arguments(tool("deploy"), params)
    assert info.value.message == message and info.value.argument == argument


def test_core_tools_have_default_parameter_schemas() -> None:
    assert call_arguments(tool("exec"), {"command": "ls", "env": {"A": "1"}}) == Record(
        {"command": "ls", "shortOptions": CedarSet()}
    )
    with pytest.raises(ToolArgumentError, match="`action` of tool `process`"):
        call_arguments(tool("process"), {"action": "explode"})
    with pytest.raises(ToolArgumentError, match="must be a JSON object"):
        call_arguments(tool("exec"), ["ls"])


def test_argument_plans_are_plain_data_that_decide_alike_after_pickling() -> None:
    """A built guard stores each tool's compiled plan; a hook process checks arguments with it,
    without the schema model."""
    plan = pickle.loads(pickle.dumps(argument_plan(tool("deploy"))))
    good = {"target": "prod", "replicas": 2, "tags": ["a"], "opts": {"force": False}}
    assert plan.convert(good) == call_arguments(tool("deploy"), good)
    with pytest.raises(ToolArgumentError) as info:
        plan.convert({"target": "prod", "tags": ["a", 2]})
    assert info.value.argument == "tags[1]"

    def plain(value: Any) -> bool:
        if isinstance(value, tuple | frozenset):
            return all(plain(v) for v in value)
        return value is None or isinstance(value, str | int | float)

    assert plain(plan.record)
    # No schema: any object, its strings as attributes; not an object: refused, as before.
    free = argument_plan(ToolCatalog.from_tools([{"name": "x", "pluginId": "p"}]).registered[0])
    assert free.convert({"anything": [1], "path": "a"}) == Record({"path": "a"})
    assert plain(free.declared)
    with pytest.raises(ToolArgumentError, match="must be a JSON object"):
        free.convert("text")


LOOSE_SCHEMAS = [
    None,
    {"type": "object"},
    {"type": "object", "additionalProperties": True},
    {"type": "object", "properties": {"path": {}}},
    {"type": "object", "properties": {"path": {"description": "a file"}}},
    {"type": "object", "properties": {"path": {"type": ["string", "array"]}}},
    {"type": "object", "properties": {"path": {"anyOf": [{"type": "string"}, {"type": "array"}]}}},
    {"type": "object", "properties": {"path": {"type": "string"}}},
    {"type": "object", "properties": {"query": {"type": "string"}}},
]


def loose_tool(parameters: Any) -> Any:
    entry: dict[str, Any] = {"name": "srv__read", "pluginId": "bundle-mcp"}
    if parameters is not None:
        entry["parameters"] = parameters
    return ToolCatalog.from_tools([entry]).registered[0]


@pytest.mark.parametrize("parameters", LOOSE_SCHEMAS)
def test_string_arguments_of_loose_schemas_are_attributes(parameters: Any) -> None:
    """Whatever a tool's schema leaves open, its string arguments reach the rules: a rule on
    `path` sees the path of an MCP tool without schema, or with `path` typed loosely."""
    t = loose_tool(parameters)
    args = call_arguments(t, {"path": "/home/u/.ssh/id_rsa", "depth": 2, "tags": ["x"]})
    assert args["path"] == "/home/u/.ssh/id_rsa"
    assert "depth" not in args and "tags" not in args  # not strings: no Cedar type to give them
    if parameters is not LOOSE_SCHEMAS[-2]:  # (typed `string`: an array is refused)
        # Other types are not attributes (a rule on `path` does not apply), never errors.
        assert "path" not in call_arguments(t, {"path": ["a", "b"]})


def test_declared_types_are_kept_and_closed_schemas_expose_nothing_else() -> None:
    typed = loose_tool({"type": "object", "properties": {"path": {"type": "string"}}})
    with pytest.raises(ToolArgumentError, match="expected a string, got an array"):
        call_arguments(typed, {"path": ["a"]})
    closed = loose_tool(
        {"type": "object", "properties": {"q": {"type": "string"}}, "additionalProperties": False}
    )
    with pytest.raises(ToolArgumentError, match="`path` of tool `srv__read` is not a parameter"):
        call_arguments(closed, {"q": "x", "path": "/etc/shadow"})
    # Typed tools with an open schema show their other string arguments too.
    assert call_arguments(tool("exec"), {"command": "ls", "path": "/etc"}) == Record(
        {"command": "ls", "path": "/etc", "shortOptions": CedarSet()}
    )
    assert call_arguments(tool("deploy"), {"target": "prod", "free": "text"}) == Record(
        {"target": "prod"}  # `free` is an object: a string there is not its value
    )


def test_integers_beyond_64_bits_are_errors_where_rules_can_see_them() -> None:
    """The README's claim (*Hostile input*): a typed integer that does not fit is an error; a
    number no rule can see is not converted, so it is none."""
    with pytest.raises(ToolArgumentError, match="does not fit in 64 bits"):
        call_arguments(tool("exec"), {"command": "ls", "timeout": 2**64})
    assert call_arguments(tool("exec"), {"command": "ls", "foo": 2**64}) == Record(
        {"command": "ls", "shortOptions": CedarSet()}
    )
    assert "path" not in call_arguments(loose_tool({"properties": {"path": {}}}), {"path": 2**70})


def test_rules_on_loose_tools_validate_and_apply() -> None:
    """The schema declares the path-like names as optional strings of every open tool: a rule
    written as the README shows validates, and a rule that forgets `has` does not."""
    catalog = ToolCatalog.from_tools(
        [{"name": "srv__read", "pluginId": "bundle-mcp"}, {"name": "exec"}]
    )
    rule = (
        'forbid (principal, action == Action::"srv__read", resource) '
        'when { resource has path && resource.path like "/secret/*" };'
    )
    assert validate_rules(rule, catalog).passed
    unguarded = validate_rules(rule.replace("resource has path && ", ""), catalog)
    assert [e.code for e in unguarded.errors] == ["unsafe-optional-attribute"]
    # Other names are not declared (give the tool's schema to declare them): the validator
    # warns that the rule never applies.
    other = validate_rules(rule.replace("path", "query"), catalog)
    assert [w.code for w in other.warnings] == ["impossible-policy"]
    policy = ToolPolicy({"tools": {"alsoAllow": ["srv__read"]}}, catalog)
    rules = policy.load_rules(rule)
    assert not policy.authorize_call({}, "srv__read", {"path": "/secret/k"}, rules=rules).allowed
    assert policy.authorize_call({}, "srv__read", {"path": "/public/k"}, rules=rules).allowed
    text = cedar_schema(catalog).to_cedarschema()
    assert "path?: String" in text and "file_path?: String" in text


def test_a_union_of_arrays_of_objects_is_checked_not_crashed() -> None:
    """``anyOf`` with one array-of-objects variant: its Cedar type comes from the variant while
    the schema at hand has no ``items`` (the elements are empty records, as the schema says)."""
    element = {"type": "object", "properties": {"a": {"type": "string"}}}
    schema = {
        "type": "object",
        "properties": {"xs": {"anyOf": [{"type": "array", "items": element}]}},
    }
    info = ToolCatalog.from_tools([{"name": "u", "pluginId": "p", "parameters": schema}])
    assert call_arguments(info.registered[0], {"xs": [{"a": "1"}]}) == Record(
        {"xs": CedarSet([Record()])}
    )


# --- calls through the engine -----------------------------------------------------------------

RULES = """
@id("deploy.prod-needs-force")
forbid (principal, action == Action::"deploy", resource)
when { resource.target == "prod" } unless { resource has opts && resource.opts.force };

@id("deploy.no-canary-tags")
forbid (principal, action == Action::"deploy", resource)
when { resource has tags && resource.tags.contains("canary") };

@id("deploy.ratio")
forbid (principal, action == Action::"deploy", resource)
when { context.input has ratio && context.input.ratio.greaterThan(decimal("0.5")) };
"""

#: An unguarded optional attribute: the validator refuses it, the engine skips it when absent.
UNSAFE = """
@id("exec.timeout")
forbid (principal, action == Action::"exec", resource) when { resource.timeout > 10 };
"""


@pytest.fixture(scope="module")
def policy() -> ToolPolicy:
    return ToolPolicy({}, CATALOG)


def test_rules_see_the_arguments_as_resource_attributes_and_context_input(
    policy: ToolPolicy,
) -> None:
    assert policy.authorize_call({}, "deploy", {"target": "staging"}, rules=RULES).allowed
    denied = policy.authorize_call({}, "deploy", {"target": "prod"}, rules=RULES)
    assert not denied and denied.policies == ("deploy.prod-needs-force",)
    assert policy.authorize_call(
        {}, "deploy", {"target": "prod", "opts": {"force": True}}, rules=RULES
    )
    tags = policy.authorize_call(
        {}, "deploy", {"target": "staging", "tags": ["canary"]}, rules=RULES
    )
    assert tags.policies == ("deploy.no-canary-tags",)
    ratio = policy.authorize_call({}, "deploy", {"target": "staging", "ratio": 0.75}, rules=RULES)
    assert ratio.policies == ("deploy.ratio",)


def test_a_rule_that_cannot_be_evaluated_fails_closed(policy: ToolPolicy) -> None:
    with pytest.raises(ValidationError, match="attribute `timeout` of entity type `Call::exec`"):
        policy.authorize_call({}, "exec", {"command": "ls"}, rules=UNSAFE)
    unchecked = policy.load_rules(UNSAFE, validate=False)
    decision = policy.authorize_call({}, "exec", {"command": "ls"}, rules=unchecked)
    assert not decision.allowed
    assert decision.response.errors and "timeout" in decision.response.errors[0].message


def test_owner_only_and_visibility_apply_to_calls() -> None:
    policy = ToolPolicy({"tools": {"deny": ["read"]}}, [{"name": "read"}, {"name": "cron"}])
    assert policy.authorize_call({}, "read", {"path": "a"}).policies == ("tools.deny",)
    assert policy.authorize_call({}, "cron", {}).policies == ("owner-only",)
    assert policy.authorize_call({"senderIsOwner": True}, "cron", {}).allowed


def test_an_unknown_tool_is_an_error(policy: ToolPolicy) -> None:
    with pytest.raises(ToolArgumentError, match="unknown tool `nope`"):
        policy.authorize_call({}, "nope", {})


# --- the Cedar schema of a catalog ------------------------------------------------------------


def test_the_schema_round_trips_through_both_formats() -> None:
    schema = cedar_schema(CATALOG)
    assert Schema.from_str(schema.to_cedarschema()) == schema
    assert Schema.from_json(schema.to_json()) == schema
    text = schema.to_cedarschema()
    assert "entity exec in [Tool] = {" in text and "command: String," in text
    assert "free" not in text  # a free-form object has no Cedar type


def test_rules_validate_against_the_schema() -> None:
    assert validate_rules(
        RULES.replace("resource.timeout > 10", "resource has timeout && resource.timeout > 10"),
        CATALOG,
    ).passed
    result = validate_rules(
        'forbid (principal, action == Action::"exec", resource) '
        'unless { resource.comand like "git *" };',
        CATALOG,
    )
    assert not result.passed
    (issue,) = result.errors
    assert issue.code == "unknown-attribute" and issue.help == "did you mean `command`?"
    wrong_tool = validate_rules(
        'forbid (principal, action == Action::"read", resource) when { resource.command == "x" };',
        CATALOG,
    )
    assert not wrong_tool.passed


def test_cedar_agrees_on_the_schema() -> None:
    cedarpy = pytest.importorskip("cedarpy")
    schema = json.dumps(cedar_schema(CATALOG).to_json())
    good = (
        'forbid (principal, action == Action::"exec", resource) '
        'unless { resource.command like "git *" };'
    )
    assert cedarpy.validate_policies(good, schema).validation_passed
    assert not cedarpy.validate_policies(
        good.replace("command", "comand"), schema
    ).validation_passed


# --- spec §12.1: top-level shapes -------------------------------------------------------------


def test_an_object_schema_is_cleaned_as_is() -> None:
    s = {"type": "object", "properties": {"a": {"type": "string", "minLength": 1}}}
    assert normalize_tool_parameters(s) == s
    assert normalize_tool_parameters(s, unsupported_keywords=[" minLength ", "", 3]) == {
        "type": "object",
        "properties": {"a": {"type": "string"}},
    }


@pytest.mark.parametrize(
    "schema",
    [{"properties": {"a": {}}}, {"properties": None}, {"properties": []}, {"required": ["a"]}],
)
def test_a_schema_without_type_becomes_an_object(schema: dict[str, Any]) -> None:
    assert normalize_tool_parameters(schema) == {**schema, "type": "object"}


def test_a_typed_schema_without_properties_gets_empty_properties() -> None:
    assert normalize_tool_parameters({"type": "string"}) == {"type": "string", "properties": {}}


def test_empty_and_unflattenable_schemas() -> None:
    assert normalize_tool_parameters({}) == {"type": "object", "properties": {}}
    all_of = {"allOf": [{"type": "object"}], "format": "x"}
    assert normalize_tool_parameters(all_of, provider="google") is all_of  # unchanged, uncleaned
    described = {"description": "x", "format": "y"}
    assert normalize_tool_parameters(described, provider="gemini") is described
    assert normalize_tool_parameters("not a schema") == "not a schema"


def test_flattening_a_union() -> None:
    schema = {
        "title": "T",
        "description": "D",
        "additionalProperties": False,
        "anyOf": [
            {
                "type": "object",
                "properties": {"mode": {"const": "a"}, "x": {"type": "string"}},
                "required": ["mode", "x"],
            },
            {
                "type": "object",
                "properties": {"mode": {"const": "b"}, "y": {"type": "number"}},
                "required": ["mode"],
            },
            {"type": "string"},
        ],
        "oneOf": [{"type": "object", "properties": {"ignored": {}}}],
    }
    assert normalize_tool_parameters(schema) == {
        "type": "object",
        "title": "T",
        "description": "D",
        "properties": {
            "mode": {"type": "string", "enum": ["a", "b"]},
            "x": {"type": "string"},
            "y": {"type": "number"},
        },
        "required": ["mode"],
        "additionalProperties": False,
    }


def test_flattening_uses_root_required_and_root_properties() -> None:
    schema = {
        "oneOf": [{"type": "object", "properties": {}}],
        "required": ["a", 1],
        "properties": {"a": {}},
    }
    assert normalize_tool_parameters(schema) == {
        "type": "object",
        "properties": {"a": {}},
        "required": ["a"],
        "additionalProperties": True,
    }
    no_objects = {"anyOf": [{"type": "string"}]}
    assert normalize_tool_parameters(no_objects) == {
        "type": "object",
        "properties": {},
        "additionalProperties": True,
    }


def test_merge_property() -> None:
    assert merge_property(None, {"type": "string"}) == {"type": "string"}
    assert merge_property({"type": "string"}, 0) == {"type": "string"}
    assert merge_property({"type": "string"}, {"type": "number"}) == {
        "type": "string"
    }  # first wins
    assert merge_property(
        {"description": "first", "enum": ["a", 1]},
        {"title": "t", "description": "second", "const": True},
    ) == {"title": "t", "description": "first", "enum": ["a", 1, True]}  # mixed: no type
    assert merge_property(
        {"anyOf": [{"const": 1}, {"const": 1.0}]}, {"enum": [True, None, None]}
    ) == {"enum": [1, True, None]}
    assert merge_property({"enum": []}, {"type": "string"}) == {"enum": []}
    obj = {"k": 1}
    assert merge_property({"enum": [obj]}, {"enum": [obj, {"k": 1}]}) == {
        "type": "object",
        "enum": [obj, {"k": 1}],
    }


# --- spec §12.2: provider cleaning ------------------------------------------------------------


def test_which_cleaning_applies() -> None:
    s = {"type": "object", "properties": {"a": {"type": "string", "format": "uri", "maxLength": 3}}}
    assert clean_schema(s, provider=" Google-Vertex ") == {
        "type": "object",
        "properties": {"a": {"type": "string"}},
    }
    assert clean_schema(s, provider="anthropic-via-google", unsupported_keywords={"maxLength"}) == {
        "type": "object",
        "properties": {"a": {"type": "string", "format": "uri"}},
    }
    assert clean_schema(s, provider="gemini", unsupported_keywords={"type"})["type"] == "object"
    assert clean_schema(s, provider="openai") is s


def test_strip_unsupported_keywords_descends_only_into_schemas() -> None:
    k = {"minLength", "maxItems"}
    s = {
        "minLength": 1,
        "properties": {"a": {"minLength": 2, "items": [{"maxItems": 1}]}},
        "items": {"maxItems": 3},
        "anyOf": [{"minLength": 4}, 5],
        "additionalProperties": {"minLength": 5},
    }
    assert strip_unsupported_schema_keywords(s, k) == {
        "properties": {"a": {"items": [{}]}},
        "items": {},
        "anyOf": [{}, 5],
        "additionalProperties": {"minLength": 5},
    }
    assert strip_unsupported_schema_keywords([{"minLength": 1}, "x"], k) == [{}, "x"]


def test_gemini_removes_keywords_and_resolves_local_refs() -> None:
    s = {
        "$schema": "x",
        "$defs": {
            "Name": {"type": "string", "pattern": "^a", "description": "inner"},
            "a/b": {"type": "integer", "minimum": 0},
        },
        "type": "object",
        "properties": {
            "name": {"$ref": "#/$defs/Name", "description": "outer", "default": "n"},
            "slash": {"$ref": "#/definitions/a~1b"},
            "missing": {"$ref": "#/$defs/Nope", "title": "T", "type": "string"},
            "scoped": {"definitions": {"Name": {"type": "boolean"}}, "$ref": "#/definitions/Name"},
        },
    }
    assert clean_for_gemini(s) == {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "outer", "default": "n"},
            "slash": {"type": "integer"},
            "missing": {"title": "T"},
            "scoped": {"type": "boolean"},
        },
    }


def test_gemini_breaks_reference_cycles() -> None:
    s = {
        "$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}},
        "$ref": "#/$defs/Node",
    }
    assert clean_for_gemini(s) == {"type": "object", "properties": {"next": {}}}


def test_gemini_unions() -> None:
    literal = {
        "description": "d",
        "anyOf": [
            {"const": "a", "type": "string"},
            {"enum": ["b"], "type": "string"},
            {"type": "null"},
        ],
    }
    assert clean_for_gemini(literal) == {"type": "string", "enum": ["a", "b"], "description": "d"}
    nullable = {"title": "t", "oneOf": [{"type": "integer"}, {"const": None}]}
    assert clean_for_gemini(nullable) == {"type": "integer", "title": "t"}
    objects = {
        "type": ["object", "null"],
        "anyOf": [{"type": "object", "properties": {"a": {}}, "required": ["a", "b"]}],
    }
    assert clean_for_gemini(objects) == {
        "type": "object",
        "properties": {"a": {}},
        "required": ["a"],
    }
    mixed = {"description": "m", "anyOf": [{"type": "string"}, {"type": "number"}]}
    assert clean_for_gemini(mixed) == {"type": "string", "description": "m"}
    same = {"anyOf": [{"type": "string", "minLength": 1}, {"type": "string", "enum": ["x", "y"]}]}
    assert clean_for_gemini(same) == {"type": "string"}
    untyped = {"default": 1, "anyOf": [{"description": "a"}, {"description": "b"}]}
    assert clean_for_gemini(untyped) == {"default": 1}
    left = {"anyOf": [True, False]}
    assert clean_for_gemini(left) == {"anyOf": [True, False]}


def test_gemini_other_keys() -> None:
    s = {
        "type": ["string", "null"],
        "const": "x",
        "required": [],
        "properties": "bad",
        "items": [{"format": "f"}],
        "allOf": [{"pattern": "p", "type": "string"}],
        "x-custom": {"format": "kept"},
    }
    assert clean_for_gemini(s) == {
        "type": "string",
        "enum": ["x"],
        "properties": {},
        "items": [{}],
        "allOf": [{"type": "string"}],
        "x-custom": {"format": "kept"},
    }
    assert clean_for_gemini({"type": "object", "required": ["a"]}) == {"type": "object"}
    assert clean_for_gemini({"type": "array", "required": ["a"]}) == {
        "type": "array",
        "required": ["a"],
    }
    assert clean_for_gemini({"properties": {"a": {}}, "required": ["a", "b", 3]}) == {
        "properties": {"a": {}},
        "required": ["a"],
    }
    assert clean_for_gemini({"properties": {"a": {}}, "required": "a"}) == {
        "properties": {"a": {}},
        "required": "a",
    }


# The conversion as first written (one path for every argument, each property read with `in`
# and `[]`): the oracle of the plan's fast paths (string arguments of string-typed properties,
# arguments all declared).
def _oracle_record(value: Any, check: Any, path: str, tool: str) -> Record:
    from cedarlite.tools.arguments import _value

    properties, required, names = check
    for name in required:
        if value.get(name) is None:
            sub = f"{path}.{name}" if path else name
            raise ToolArgumentError(f"argument `{sub}` of tool `{tool}` is required", sub)
    if names is not None:
        for name in value:
            if name not in names:
                sub = f"{path}.{name}" if path else name
                message = f"argument `{sub}` of tool `{tool}` is not a parameter of the tool"
                raise ToolArgumentError(message, sub)
    out = {}
    for name, prop in properties:
        if name not in value or value[name] is None:
            continue
        converted = _value(value[name], prop, f"{path}.{name}" if path else name, tool)
        if converted is not None:
            out[name] = converted
    return Record(out)


def _oracle_convert(plan: Any, params: Any) -> Record:
    from cedarlite.data.jsonvalue import check_json_limits

    check_json_limits(params, f"arguments of tool `{plan.tool}`", ToolArgumentError)
    record = Record() if plan.record is None else _oracle_record(params, plan.record, "", plan.tool)
    if plan.declared is None:
        return record
    other = {
        k: v
        for k, v in params.items()
        if v.__class__ is str and k.__class__ is str and k not in plan.declared
    }
    return Record({**record, **other}) if other else record


_PROPERTY_SCHEMAS = [
    {"type": "string"},
    {"type": "string", "enum": ["a", "b"]},
    {"description": "untyped"},
    {"type": ["string", "array"]},
    {"type": "integer"},
    {"type": "boolean"},
    {"type": "number"},
    {"type": "array", "items": {"type": "string"}},
    {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]},
]
_NAMES = ["a", "b", "c", "path"]
_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(["a", "b", "zz"])),
    lambda inner: st.one_of(
        st.lists(inner, max_size=2), st.dictionaries(st.sampled_from(["x", "y"]), inner)
    ),
    max_leaves=4,
)


@settings(max_examples=300)
@example({"a": _PROPERTY_SCHEMAS[1]}, [], False, {"a": "zz"})  # a string not in the enum
@example({"a": _PROPERTY_SCHEMAS[1], "b": _PROPERTY_SCHEMAS[3]}, ["a"], False, {"b": "x", "a": "a"})
@example({"a": _PROPERTY_SCHEMAS[2]}, [], False, {"a": "x", "path": "p", "c": 1})
@example({"a": _PROPERTY_SCHEMAS[0]}, [], True, {"a": "x", "b": None})
@example({"a": _PROPERTY_SCHEMAS[8]}, [], False, {"a": {"x": "s"}, "b": "t"})
@given(
    st.dictionaries(st.sampled_from(_NAMES[:3]), st.sampled_from(_PROPERTY_SCHEMAS), max_size=3),
    st.lists(st.sampled_from(_NAMES[:3]), max_size=2),
    st.booleans(),
    st.dictionaries(st.sampled_from(_NAMES), _VALUES, max_size=4),
)
def test_argument_plans_convert_as_the_plain_reading_does(
    properties: dict[str, Any], required: list[str], closed: bool, params: dict[str, Any]
) -> None:
    """The same record (its attributes in the same order) or the same error message."""
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = [r for r in required if r in properties]
    if closed:
        schema["additionalProperties"] = False
    t = ToolCatalog.from_tools([{"name": "t", "pluginId": "p", "parameters": schema}]).registered[0]
    plan = argument_plan(t)
    try:
        expected: Any = _oracle_convert(plan, params)
    except ToolArgumentError as err:
        with pytest.raises(ToolArgumentError) as info:
            plan.convert(params)
        assert (str(info.value), info.value.argument) == (str(err), err.argument)
    else:
        got = plan.convert(params)
        assert got == expected and list(got.items()) == list(expected.items())
