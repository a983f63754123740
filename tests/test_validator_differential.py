"""Differential test of the strict validator against cedarpy (the Rust engine).

Small JSON schemas are drawn over :data:`cedarlite.testing.DEFAULT_UNIVERSE` (its entity types,
actions, attribute, tag and context vocabulary) with random shapes: attributes present or not,
required or optional, sometimes of another type; tags or none; random ``appliesTo`` and
hierarchies. Policies come from :func:`cedarlite.testing.policies` over the same universe, so
they mostly fit the schema and the validator's verdict depends on the details. Both engines
must agree on pass/fail.

Skipped when cedarpy is not installed. ``HYPOTHESIS_PROFILE=thorough`` runs ten times as many
examples.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cedarlite import testing
from cedarlite.data.values import EntityUID
from cedarlite.lang.ast import ScopeOp, SlotId
from cedarlite.lang.printer import print_policy
from cedarlite.schema import Schema
from cedarlite.schema._lattice import FALSE
from cedarlite.schema._typecheck import EnvTypechecker
from cedarlite.schema.validator import Validator, policy_condition, validate

cedarpy = pytest.importorskip("cedarpy")

THOROUGH = os.environ.get("HYPOTHESIS_PROFILE") == "thorough"
EXAMPLES = 3000 if THOROUGH else 300

UNIVERSE = testing.DEFAULT_UNIVERSE
PRINCIPAL_TYPES = ("User", "NS::Bot")
RESOURCE_TYPES = ("NS::Doc", "User")
CONTAINER_TYPES = ("Group", "NS::Folder")
ENTITY_TYPES = (*PRINCIPAL_TYPES, "NS::Doc", *CONTAINER_TYPES)
PARENTS = {
    "User": ("Group",),
    "NS::Bot": ("Group",),
    "NS::Doc": ("NS::Folder",),
    "Group": ("Group",),
    "NS::Folder": ("NS::Folder",),
}
ACTION_GROUPS = {
    "read": ("readOnly", "all"),
    "write": ("all",),
    "delete": (),
    "readOnly": ("all",),
    "all": (),
}
EXTENSION_NAMES = {"decimal", "ipaddr", "datetime", "duration"}


def json_type(draw: Any, ty: tuple[Any, ...]) -> dict[str, Any]:
    """The JSON schema type for a :mod:`cedarlite.testing` type (``Any`` becomes a simple one)."""
    kind = ty[0]
    if kind == "Any":
        return json_type(draw, draw(st.sampled_from(testing.SIMPLE_TYPES)))
    if kind in ("Bool", "Long", "String"):
        return {"type": "Boolean" if kind == "Bool" else kind}
    if kind == "Entity":
        return {"type": "Entity", "name": draw(st.sampled_from(ENTITY_TYPES))}
    if kind == "Set":
        return {"type": "Set", "element": json_type(draw, ty[1])}
    if kind == "Record":
        return record(draw, dict(ty[1]))
    assert kind in EXTENSION_NAMES
    return {"type": "Extension", "name": kind}


def record(draw: Any, fields: dict[str, tuple[Any, ...]]) -> dict[str, Any]:
    """A record type with a random subset of ``fields``, some optional, a few mistyped."""
    attributes = {}
    for name, ty in fields.items():
        if draw(st.integers(0, 9)) < 3:
            continue  # left out
        if draw(st.integers(0, 19)) == 0:
            ty = draw(st.sampled_from(testing.SIMPLE_TYPES))  # another type than policies expect
        attributes[name] = {**json_type(draw, ty), "required": draw(st.integers(0, 3)) > 0}
    return {"type": "Record", "attributes": attributes}


def split(name: str) -> tuple[str, str]:
    """``("NS", "Doc")`` for ``"NS::Doc"``, ``("", "User")`` for ``"User"``."""
    namespace, _, base = name.rpartition("::")
    return namespace, base


@st.composite
def schemas(draw: Any) -> dict[str, Any]:
    """A JSON schema over the universe's entity types and actions."""
    out: dict[str, Any] = {ns: {"entityTypes": {}, "actions": {}} for ns in ("", "NS")}
    for name in ENTITY_TYPES:
        namespace, base = split(name)
        definition: dict[str, Any] = {
            "memberOfTypes": [p for p in PARENTS[name] if draw(st.integers(0, 3)) > 0],
            "shape": record(draw, dict(UNIVERSE.attributes)),
        }
        if draw(st.booleans()):
            tag_type = draw(st.sampled_from(list(UNIVERSE.tags.values())))
            definition["tags"] = json_type(draw, tag_type)
        out[namespace]["entityTypes"][base] = definition
    actions = out[""]["actions"]
    for name, groups in ACTION_GROUPS.items():
        actions[name] = {"memberOf": [{"id": g} for g in groups if draw(st.integers(0, 3)) > 0]}
        if name not in ("readOnly", "all") or draw(st.integers(0, 4)) == 0:
            actions[name]["appliesTo"] = applies_to(draw)
    out["NS"]["actions"]["sync"] = {
        "memberOf": [{"id": "all", "type": "Action"}] if draw(st.booleans()) else [],
        "appliesTo": applies_to(draw),
    }
    return out


def applies_to(draw: Any) -> dict[str, Any]:
    """A random ``appliesTo``: usually to most of the universe's types, sometimes to nothing."""
    return {
        "principalTypes": types_subset(draw, PRINCIPAL_TYPES),
        "resourceTypes": types_subset(draw, RESOURCE_TYPES),
        "context": record(draw, dict(UNIVERSE.context)),
    }


def types_subset(draw: Any, types: tuple[str, ...]) -> list[str]:
    """All of ``types`` half of the time, else a random subset (possibly empty)."""
    if draw(st.booleans()):
        return list(types)
    return draw(st.lists(st.sampled_from(types), max_size=len(types), unique=True))


def rust_verdict(text: str, schema: dict[str, Any]) -> tuple[bool, list[str]]:
    """cedarpy's ``validation_passed`` and its error messages."""
    result = cedarpy.validate_policies(text, schema)
    return result.validation_passed, [str(e) for e in result.errors]


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(schema=schemas(), policy=testing.policies(universe=UNIVERSE, depth=3))
def test_pass_fail_agrees_with_cedarpy(schema: dict[str, Any], policy: Any) -> None:
    """cedarlite's ``passed`` equals Rust's ``validation_passed`` on every drawn pair."""
    text = print_policy(policy)
    expected, rust_errors = rust_verdict(text, schema)
    ours = validate(text, Schema.from_json(schema))
    assert ours.passed == expected, (
        f"cedarpy passed={expected} {rust_errors}\ncedarlite errors: {ours.errors}\n{text}"
    )


# ---------------------------------------------------------------------------------------------
# Singleton Bool typing, observed through short-circuits.
#
# Whether a condition types as `True`, `False` or `Bool` decides what the typechecker skips, so
# it is probed the only way the Rust engine exposes it: `(c) && BAD` validates iff `c` is
# `False`, `(c) || BAD` iff `c` is `True`, where `BAD` is ill-typed. Conditions come from a
# small grammar rich in the constructs whose typing is subtle (`has`, `in`, `is`, `==`, tags,
# `if`, capabilities), over a schema with several request environments.

KIND_SCHEMA = """
entity Group in [Group] { gname: String, level?: Long };
entity User in [Group] {
  name: String, flag: Bool, age?: Long, tags: Set<String>,
  rec: { x?: Long, y: String, inner?: { z: Bool } }, boss?: User, grp: Group,
} tags String;
entity Doc { owner: User, secret?: Bool, labels: Set<Long> };
entity Color enum ["red", "blue"];
action view appliesTo {
  principal: [User], resource: [Doc],
  context: { n?: Long, who: User, flags: { a: Bool, b?: Bool } }
};
action edit in [view] appliesTo { principal: [User, Group], resource: [Doc], context: {} };
"""
BAD = '(1 + "a" == 2)'

ENTITY_EXPRS = st.sampled_from(
    [
        "principal",
        "resource",
        "action",
        'User::"a"',
        'Group::"g"',
        'Doc::"d"',
        'Action::"view"',
        'Action::"edit"',
        "context.who",
        "resource.owner",
        "principal.boss",
        "principal.grp",
        'Color::"red"',
    ]
)
RECORD_EXPRS = st.sampled_from(
    [
        "context",
        "principal.rec",
        "context.flags",
        "{a: 1}",
        '{a: true, b: "x"}',
        "principal.rec.inner",
    ]
)
ATTRIBUTES = st.sampled_from(
    [
        "name",
        "flag",
        "age",
        "rec",
        "boss",
        "owner",
        "secret",
        "gname",
        "level",
        "x",
        "y",
        "z",
        "a",
        "b",
        "n",
        "who",
        "flags",
        "inner",
        "zz",
        "labels",
        "grp",
    ]
)
VALUES = st.sampled_from(
    [
        "1",
        '"s"',
        "true",
        "principal",
        "context.n",
        "principal.name",
        "[1, 2]",
        "{a: 1}",
        'decimal("1.0")',
        'ip("1.2.3.4")',
        "principal.age",
        "resource.labels",
        "principal.tags",
    ]
)
TYPE_NAMES = st.sampled_from(["User", "Group", "Doc", "Action", "Color"])
BOOL_LEAVES = st.sampled_from(
    [
        "true",
        "false",
        "principal.flag",
        "context.flags.a",
        "resource.secret",
        "(1 == 1)",
        "(1 == 2)",
    ]
)


def _fmt(template: str, *parts: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.builds(template.format, *parts)


def _compound(bools: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    entity = st.one_of(
        ENTITY_EXPRS, _fmt("(if {} then {} else {})", bools, ENTITY_EXPRS, ENTITY_EXPRS)
    )
    owner = st.one_of(RECORD_EXPRS, entity)
    value = st.one_of(
        VALUES,
        entity,
        _fmt("{}.{}", RECORD_EXPRS, ATTRIBUTES),
        _fmt("[{}, {}]", VALUES, entity),
        _fmt("(if {} then {} else {})", bools, VALUES, VALUES),
    )
    return st.one_of(
        _fmt("({} && {})", bools, bools),
        _fmt("({} || {})", bools, bools),
        _fmt("!{}", bools),
        _fmt("(if {} then {} else {})", bools, bools, bools),
        _fmt("({} has {})", owner, ATTRIBUTES),
        _fmt("({} has {}.{})", owner, ATTRIBUTES, ATTRIBUTES),
        _fmt("({0} has {1} && {0}.{1} == 1)", owner, ATTRIBUTES),
        _fmt("({} in {})", entity, entity),
        _fmt("({} in [{}, {}])", entity, entity, entity),
        _fmt("({} is {})", entity, TYPE_NAMES),
        _fmt("({} is {} in {})", entity, TYPE_NAMES, entity),
        _fmt("({} == {})", value, value),
        _fmt("({} != {})", value, value),
        _fmt("({} < {})", value, value),
        _fmt("{}.contains({})", value, value),
        _fmt("{}.containsAny({})", value, value),
        _fmt('{}.hasTag("t")', entity),
        _fmt('({0}.hasTag("t") && {0}.getTag("t") == "v")', entity),
        _fmt('({} like "a*")', value),
        _fmt("{}.isEmpty()", value),
    )


CONDITIONS = st.recursive(BOOL_LEAVES, _compound, max_leaves=6)


def singleton_kind(passes: Any, condition: str) -> str:
    """``error``, ``True``, ``False`` or ``Bool``, from three validations of probes."""
    if not passes(f"({condition}) || true"):
        return "error"
    return {(True, False): "False", (False, True): "True", (False, False): "Bool"}.get(
        (passes(f"({condition}) && {BAD}"), passes(f"({condition}) || {BAD}")), "??"
    )


def _policy(condition: str) -> str:
    return f"permit(principal, action, resource) when {{ {condition} }};"


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(condition=CONDITIONS)
def test_singleton_typing_agrees_with_cedarpy(condition: str) -> None:
    """The same ``True``/``False``/``Bool`` (or error) as the Rust typechecker."""
    schema = Schema.from_str(KIND_SCHEMA)
    ours = singleton_kind(lambda c: validate(_policy(c), schema).passed, condition)
    rust = singleton_kind(
        lambda c: cedarpy.validate_policies(_policy(c), KIND_SCHEMA).validation_passed, condition
    )
    assert ours == rust, condition


# ---------------------------------------------------------------------------------------------
# Typing each distinct environment once (`typing_key`) against typing every environment.


def _every_environment(validator: Validator, policy: Any) -> tuple[list[Any], bool]:
    """The reference: the policy typed in every request environment, findings deduplicated."""
    sink: list[Any] = []
    condition = policy_condition(policy)
    types = [
        EnvTypechecker(validator.schema, env, sink).policy_type(condition)
        for env in validator.environments(policy)
    ]
    return list(dict.fromkeys(sink)), all(t is FALSE for t in types)


@settings(
    max_examples=EXAMPLES // 3,  # each example is typed in every environment, templates too
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(schema=schemas(), policy=testing.policies(universe=UNIVERSE, depth=3))
def test_typing_each_distinct_environment_once_changes_nothing(
    schema: dict[str, Any], policy: Any
) -> None:
    """The validator types a policy once per :func:`typing_key`; typing it in every
    environment finds the same problems, in the same order, and the same impossibility."""
    validator = Validator(Schema.from_json(schema))
    for candidate in (policy, *_as_templates(policy)):
        sink: list[Any] = []
        impossible = validator.check_types(candidate, sink)
        assert (list(dict.fromkeys(sink)), impossible) == _every_environment(validator, candidate)


def _as_templates(policy: Any) -> list[Any]:
    """``policy`` with its principal or its resource scope turned into a slot (templates)."""
    out = []
    for field in ("principal", "resource"):
        scope = getattr(policy, field)
        if scope.op in (ScopeOp.EQ, ScopeOp.IN) and isinstance(scope.entity, EntityUID):
            slot = SlotId.PRINCIPAL if field == "principal" else SlotId.RESOURCE
            out.append(replace(policy, **{field: replace(scope, entity=slot)}))
    return out
