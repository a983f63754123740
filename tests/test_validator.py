"""The strict validator: the conformance corpus, golden messages, typing rules and the API.

The expected verdicts in the rule tables were checked against cedarpy (the Rust engine);
:func:`test_rule_tables_agree_with_cedarpy` keeps checking them when cedarpy is installed.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

import cedarlite
from cedarlite import ParseError, PolicySet, SchemaError, ValidationError
from cedarlite.lang.ast import (
    And,
    Condition,
    ConditionKind,
    Effect,
    Expr,
    If,
    Lit,
    Policy,
    Scope,
    Unary,
    UnaryOp,
    Var,
)
from cedarlite.schema import Schema
from cedarlite.schema.validator import (
    ValidationIssue,
    ValidationResult,
    Validator,
    policy_condition,
    validate,
)

SCHEMA = """
entity Group in [Group] { gname: String, level?: Long };
entity User in [Group] {
  name: String,
  flag: Bool,
  age?: Long,
  tags: Set<String>,
  rec: { x?: Long, y: String, inner?: { z: Bool } },
  boss?: User,
} tags String;
entity Doc { owner: User, secret?: Bool, labels: Set<Long> };
entity Color enum ["red", "blue"];
action view appliesTo {
  principal: [User],
  resource: [Doc],
  context: { src: String, n?: Long, who: User, flags: { a: Bool, b?: Bool } }
};
action edit in [view] appliesTo { principal: [User], resource: [Doc], context: { n: Long } };
action admin;
namespace NS {
  entity Thing;
  action act appliesTo { principal: [Thing], resource: [Thing] };
}
"""

SCHEMA_MODEL = Schema.from_str(SCHEMA)


def when(condition: str, scope: str = 'principal, action == Action::"view", resource') -> str:
    """A one-policy text: ``permit(<scope>) when { <condition> };``."""
    return f"permit({scope}) when {{ {condition} }};"


# The conformance corpus's validation flags are checked, with its requests, in
# tests/test_conformance.py (one parse of each test serves both).


# ---------------------------------------------------------------------------------------------
# Golden messages for the common mistakes: code, message, line, column and help.

GOLDEN = [
    pytest.param(
        'permit(principal, action == Action::"view", resource)\nwhen { principal.nmae == "a" };',
        "unknown-attribute",
        "entity type `User` has no attribute `nmae`",
        (2, 8),
        "did you mean `name`?",
        id="unknown-attribute",
    ),
    pytest.param(
        'permit(principal, action == Action::"view", resource)\nwhen { context.sorc == "a" };',
        "unknown-attribute",
        'the context of `Action::"view"` has no attribute `sorc`',
        (2, 8),
        "did you mean `src`?",
        id="unknown-context-attribute",
    ),
    pytest.param(
        'permit(principal, action == Action::"view", resource)\nwhen { principal.name > 3 };',
        "unexpected-type",
        "unexpected type: expected `Long` but found `String`",
        (2, 8),
        None,
        id="wrong-operand-type",
    ),
    pytest.param(
        'permit(principal, action == Action::"view", resource)\nwhen {\n  principal.age > 18\n};',
        "unsafe-optional-attribute",
        "attribute `age` of entity type `User` is optional and may be missing",
        (3, 3),
        "guard the access with `principal has age && ...`",
        id="missing-has-guard",
    ),
    pytest.param(
        'permit(principal, action == Action::"view", resource)\nwhen { principal.rec.x > 1 };',
        "unsafe-optional-attribute",
        "attribute `rec.x` of entity type `User` is optional and may be missing",
        (2, 8),
        "guard the access with `principal.rec has x && ...`",
        id="missing-has-guard-nested",
    ),
    pytest.param(
        'permit(principal in Gruop::"admins", action == Action::"view", resource);',
        "unknown-entity-type",
        "unrecognized entity type `Gruop`",
        (1, 8),
        "did you mean `Group`?",
        id="unknown-entity-type",
    ),
    pytest.param(
        'permit(principal, action == Action::"view", resource)\nwhen { resource is Dco };',
        "unknown-entity-type",
        "unrecognized entity type `Dco`",
        (2, 8),
        "did you mean `Doc`?",
        id="unknown-entity-type-in-is",
    ),
    pytest.param(
        'permit(principal, action == Action::"veiw", resource);',
        "unknown-action",
        'unrecognized action `Action::"veiw"`',
        (1, 19),
        'did you mean `Action::"view"`?',
        id="unknown-action",
    ),
    pytest.param(
        'permit(principal, action == Action::"view", resource)\n'
        "when { ip(context.src).isLoopback() };",
        "non-literal-extension-argument",
        "`ip` must be called with a string literal",
        (2, 8),
        "the validator checks constructor arguments, so they cannot be computed",
        id="non-literal-constructor",
    ),
    pytest.param(
        'permit(principal, action == Action::"view", resource)\n'
        'when { decimal("1.23456").lessThan(decimal("2.0")) };',
        "invalid-extension-argument",
        '"1.23456" is not a valid `decimal` literal',
        (2, 16),
        None,
        id="bad-constructor-literal",
    ),
    pytest.param(
        'permit(principal, action == Action::"view", resource)\n'
        'when { resource.getTag("x") == "y" };',
        "unsafe-tag-access",
        'tag `"x"` of entity type `Doc` may be missing',
        (2, 8),
        'guard the access with `resource.hasTag("x") && ...`',
        id="missing-has-tag-guard",
    ),
    pytest.param(
        'permit(principal, action == Action::"view", resource)\nwhen { [1, "a"].isEmpty() };',
        "incompatible-types",
        "the types `Long`, `String` are not compatible",
        (2, 8),
        None,
        id="incompatible-set-elements",
    ),
    pytest.param(
        'permit(principal, action == Action::"view", resource)\nwhen { [].isEmpty() };',
        "empty-set",
        "empty set literals are not allowed",
        (2, 8),
        "the validator cannot tell the type of an empty set's elements",
        id="empty-set",
    ),
    pytest.param(
        'permit(principal == Doc::"d", action == Action::"view", resource);',
        "invalid-action-application",
        "no action the scope allows applies to the principal and resource types it allows",
        (1, 1),
        None,
        id="invalid-action-application",
    ),
    pytest.param(
        'permit(principal, action, resource)\nwhen { Color::"green" != principal.boss };',
        "invalid-enum-entity",
        '`Color::"green"` is not one of the ids of the enumerated entity type `Color`',
        (2, 8),
        None,
        id="invalid-enum-id",
    ),
]


@pytest.mark.parametrize(("text", "code", "message", "where", "help"), GOLDEN)
def test_golden_messages(
    text: str, code: str, message: str, where: tuple[int, int], help: str | None
) -> None:
    """The first error of each common mistake: its code, message, position and help."""
    result = validate(PolicySet.from_str(text, "policies.cedar"), SCHEMA_MODEL)
    assert not result.passed
    issue = result.errors[0]
    assert (issue.code, issue.message, (issue.line, issue.column), issue.help) == (
        code,
        message,
        where,
        help,
    )
    assert issue.policy_id == "policy0"
    assert issue.severity == "error"


def test_impossible_policy_is_a_warning() -> None:
    """A policy false in every environment passes, with an ``impossible-policy`` warning."""
    text = 'forbid(principal, action == Action::"view", resource)\nwhen { principal is Doc };'
    result = validate(PolicySet.from_str(text, "policies.cedar"), SCHEMA_MODEL)
    assert result.passed and result.errors == ()
    (warning,) = result.warnings
    assert (warning.code, warning.severity, warning.line, warning.column) == (
        "impossible-policy",
        "warning",
        1,
        1,
    )
    assert warning.message == (
        "policy is impossible: it is false for every request the schema allows"
    )
    assert str(warning).startswith(
        "policies.cedar:1:1: warning[impossible-policy]: policy `policy0`"
    )


def test_rendering_has_location_caret_and_help() -> None:
    """``str(issue)`` is ``source:line:column``, the message, a caret snippet and the help."""
    text = 'permit(principal, action == Action::"view", resource)\nwhen { principal.nmae == "a" };'
    (issue,) = validate(PolicySet.from_str(text, "p.cedar"), SCHEMA_MODEL).errors
    assert str(issue) == (
        "p.cedar:2:8: error[unknown-attribute]: policy `policy0`: "
        "entity type `User` has no attribute `nmae`\n"
        ' 2 | when { principal.nmae == "a" };\n'
        "   |        ^^^^^^^^^^^^^^\n"
        "  = help: did you mean `name`?"
    )
    error = issue.to_error()
    assert isinstance(error, ValidationError)
    assert (error.code, error.line, error.column) == ("unknown-attribute", 2, 8)


def test_large_policy_sets_are_located_too() -> None:
    """Large sets are parsed without inner spans; errors are located by re-parsing."""
    good = 'permit(principal, action == Action::"view", resource) when { principal.name == "a" };'
    bad = 'permit(principal, action == Action::"view", resource) when { principal.nmae == "a" };'
    lines = [good] * 40
    lines[35] = bad
    result = validate(PolicySet.from_str("\n".join(lines)), SCHEMA_MODEL)
    (issue,) = result.errors
    assert (issue.policy_id, issue.line, issue.column) == ("policy35", 36, 62)


# ---------------------------------------------------------------------------------------------
# Typing rules. Each row: a condition (in the `view` environment) and whether it validates.

PASSES = [
    # short-circuiting: the right operand of `false && ..`/`true || ..` is never typed
    'false && (1 + "a" == 2)',
    'true || (1 + "a" == 2)',
    'if true then principal.name like "a*" else 1',
    "principal is Doc && principal.nope",
    "(1 == 2) && principal.nope",
    "(principal in resource) && principal.nope",
    '(action in [Action::"admin"]) && principal.nope',
    "(context has zz) && principal.nope",
    # capabilities
    "principal has age && principal.age > 1",
    "if principal has age then principal.age > 1 else false",
    "(principal has age || principal has age) && principal.age > 1",
    "principal has rec.x && principal.rec.x > 0",
    "principal.rec has inner && principal.rec.inner.z",
    "context has n && context.n > 0",
    'principal.hasTag("t") && principal.getTag("t") == "v"',
    # equality: literals and different entity types compare without a common type
    '1 == "a"',
    "1 == true",
    "principal == resource",
    'principal == Action::"view"',
    "[1] == [2]",
    "{a: true} == {a: false}",
    "[{a: true}, {a: false}].isEmpty()",
    # relations, methods and extension functions
    'datetime("2020-01-01") < datetime("2020-01-02") && duration("1h") > duration("1m")',
    'ip("10.0.0.1").isInRange(ip("10.0.0.0/8")) && decimal("1.5").lessThan(decimal("2.0"))',
    'datetime("2020-01-01").offset(duration("1h")).toTime().toDays() > 1',
    "principal.tags.containsAny(principal.tags) && resource.labels.contains(3)",
    'principal in [Group::"a", Group::"b"] && resource.owner in principal',
    'Action::"edit" in Action::"view"',
    'principal.name.startsWith("a") && principal.name.endsWith("z")',
    "context has missing",
    "action has anything",
]

FAILS = [
    'principal has name || (1 + "a" == 2)',  # `has` on an entity is never `True`
    "if principal has age then true else principal.age > 1",
    "!(principal has age) || principal.age > 1",
    "principal.name == 1",
    '"a" == principal',
    "{a: 1} == {a: 1, b: 2}",
    "[1, true].contains(1)",
    "principal.tags.contains(1)",
    'principal in [User::"a", Group::"b"]',
    'decimal("1.0") < decimal("2.0")',
    'principal like "*"',
    "principal has rec.y.z",
    "-true == 1",
    "action.anything == 1",
    'Color::"green" == principal.boss',
    'principal.boss.name == "a"',
    "principal.name.startsWith(1)",
    "1",
]


@pytest.mark.parametrize("condition", PASSES)
def test_rule_passes(condition: str) -> None:
    """Well-typed conditions validate."""
    result = validate(when(condition), SCHEMA_MODEL)
    assert result.passed, result.render()


@pytest.mark.parametrize("condition", FAILS)
def test_rule_fails(condition: str) -> None:
    """Ill-typed conditions do not."""
    assert not validate(when(condition), SCHEMA_MODEL).passed


KINDS = [
    ("principal has name", "Bool"),  # the entity may be missing from the store
    ("context has src", "True"),
    ("context has n", "Bool"),
    ("context has zz", "False"),
    ("principal has zz", "False"),
    ('principal.hasTag("x")', "Bool"),
    ('resource.hasTag("x")', "False"),
    ("principal is User", "True"),
    ("principal is Group", "False"),
    ('principal in Group::"g"', "Bool"),
    ('resource in Group::"g"', "False"),
    ('action in Action::"view"', "True"),
    ('action == Action::"edit"', "False"),
    ('User::"a" == User::"a"', "True"),
    ("-1 == -1", "True"),
    ("principal == principal", "Bool"),
    ("!true", "False"),
    ("if false then 1 == 1 else false", "False"),
]


def kind(condition: str) -> str:
    """The singleton typing of a condition, observed as Rust's can be: through validation."""

    def passes(text: str) -> bool:
        return validate(when(text), SCHEMA_MODEL).passed

    assert passes(f"({condition}) || true")
    bad = '(1 + "a" == 2)'
    return {(True, False): "False", (False, True): "True", (False, False): "Bool"}[
        (passes(f"({condition}) && {bad}"), passes(f"({condition}) || {bad}"))
    ]


@pytest.mark.parametrize(("condition", "expected"), KINDS)
def test_singleton_bool_types(condition: str, expected: str) -> None:
    """``True``/``False``/``Bool`` as the strict typechecker infers them."""
    assert kind(condition) == expected


def test_rule_tables_agree_with_cedarpy() -> None:
    """The expectations above are the Rust engine's."""
    cedarpy = pytest.importorskip("cedarpy")
    rows = [(c, True) for c in PASSES] + [(c, False) for c in FAILS]
    for condition, expected in rows:
        if "startsWith" in condition:
            continue  # cedarlite's dialect: not Cedar
        rust = cedarpy.validate_policies(when(condition), SCHEMA).validation_passed
        assert rust == expected, condition


# ---------------------------------------------------------------------------------------------
# Scopes, templates and links

SCOPES = [
    ('principal in Group::"g", action == Action::"view", resource', True),
    ('principal is User in Group::"g", action, resource', True),
    ('principal == Group::"g", action == Action::"view", resource', False),  # `in` would do
    ("principal, action in [], resource", False),  # empty set
    ('principal, action in [Action::"view", NS::Action::"act"], resource', False),
    ('principal, action in [Action::"view", Action::"edit"], resource', True),
    ('principal == NS::Thing::"t", action, resource', True),
    ('principal, action == Action::"admin", resource', False),  # applies to nothing
    ("principal == ?principal, action, resource", True),
    ("principal in ?principal, action, resource is Doc in ?resource", True),
]


@pytest.mark.parametrize(("scope", "expected"), SCOPES)
def test_scopes(scope: str, expected: bool) -> None:
    """Action application and scope typing."""
    assert validate(f"permit({scope});", SCHEMA_MODEL).passed == expected


def test_templates_are_typed_with_their_slots() -> None:
    """A template's conditions are typed for every slot type the scope allows."""
    scope = 'principal {} ?principal, action == Action::"view", resource'
    ok = when('principal.name == "a"', scope.format("=="))
    assert validate(ok, SCHEMA_MODEL).passed
    bad = when("principal.age > 1", scope.format("in"))
    assert [i.code for i in validate(bad, SCHEMA_MODEL).errors] == ["unsafe-optional-attribute"]


def test_template_links_are_checked() -> None:
    """A link to an undeclared entity type is an error; a fitting one is not."""
    template = PolicySet.from_str(
        'permit(principal in ?principal, action == Action::"view", resource);'
    )
    good = template.link("policy0", "link0", {"?principal": 'Group::"g"'})
    assert validate(good, SCHEMA_MODEL).passed
    bad = template.link("policy0", "link1", {"?principal": 'Nope::"x"'})
    codes = [(i.policy_id, i.code) for i in validate(bad, SCHEMA_MODEL).errors]
    assert ("link1", "unknown-entity-type") in codes


# ---------------------------------------------------------------------------------------------
# The API


def test_accepts_text_json_and_models() -> None:
    """Policies as text or a set; schemas as a model, ``.cedarschema`` text or JSON."""
    text = when('principal.name == "a"')
    as_json = SCHEMA_MODEL.to_json()
    for schema in (SCHEMA_MODEL, SCHEMA, as_json, json.dumps(as_json)):
        for policies in (text, PolicySet.from_str(text)):
            result = validate(policies, schema)
            assert isinstance(result, ValidationResult) and result.passed


def test_bad_input_raises_cedarlite_errors() -> None:
    """Text that does not parse raises; validation problems never do."""
    with pytest.raises(ParseError):
        validate("permit(principal, action, resource) when { 1 + };", SCHEMA_MODEL)
    with pytest.raises(SchemaError):
        validate(when("true"), "entity User in [Nope];")


def test_result_shape() -> None:
    """``passed``, ``errors`` and ``warnings`` are plain data; rendering joins the issues."""
    result = validate(when('principal.nmae == "a"') + "\n" + when("1"), SCHEMA_MODEL)
    assert not result.passed
    assert all(isinstance(i, ValidationIssue) for i in result.errors)
    assert [i.policy_id for i in result.errors] == ["policy0", "policy1"]
    assert [i.code for i in result.errors] == ["unknown-attribute", "unexpected-type"]
    assert str(result).count("error[") == 2
    assert str(validate(when("true"), SCHEMA_MODEL)) == "validation passed"


def test_unspanned_policies_still_validate() -> None:
    """Policies built as ASTs (no text, no spans) give unlocated issues."""
    body = Unary(UnaryOp.NOT, Lit(1))
    policy = Policy(
        "p",
        Effect.PERMIT,
        Scope(Var.PRINCIPAL),
        Scope(Var.ACTION),
        Scope(Var.RESOURCE),
        (Condition(ConditionKind.WHEN, body),),
    )
    (issue,) = validate(PolicySet([policy]), SCHEMA_MODEL).errors
    assert (issue.policy_id, issue.code, issue.span) == ("p", "unexpected-type", None)
    assert str(issue).startswith("<input>: error[unexpected-type]: policy `p`: ")


def test_hand_built_deep_expressions_are_typed() -> None:
    """Nesting far beyond what the parser accepts is typed (on an explicit stack)."""
    body: Expr = Lit(True)
    for _ in range(5000):
        body = Unary(UnaryOp.NOT, body)
    bad = If(Lit(1), body, body)
    policy = Policy(
        "p",
        Effect.PERMIT,
        Scope(Var.PRINCIPAL),
        Scope(Var.ACTION),
        Scope(Var.RESOURCE),
        (Condition(ConditionKind.WHEN, body),),
    )
    assert validate(PolicySet([policy]), SCHEMA_MODEL).errors == ()
    condition = (Condition(ConditionKind.WHEN, bad),)
    policy = replace(policy, id="q", conditions=condition)
    errors = validate(PolicySet([policy]), SCHEMA_MODEL).errors
    assert [i.message for i in errors] == ["unexpected type: expected `Bool` but found `Long`"]


def test_policy_condition_is_scope_then_conditions() -> None:
    """The expression typed is the scope conjoined with the conditions, ``unless`` negated."""
    (policy,) = PolicySet.from_str(
        "permit(principal, action, resource) when { true } unless { false };"
    )
    expr = policy_condition(policy)  # right-nested, as Rust's: p && (a && (r && (c1 && c2)))
    for _ in range(4):
        assert isinstance(expr, And) and len(expr.operands) == 2
        expr = expr.operands[1]
    assert expr == Unary(UnaryOp.NOT, Lit(False))


def test_exported_from_the_package() -> None:
    """``cedarlite.validate`` and ``cedarlite.ValidationResult`` are the validator's."""
    if not hasattr(cedarlite, "validate"):
        pytest.skip("not exported from cedarlite/__init__.py yet")
    assert cedarlite.validate is validate
    assert cedarlite.ValidationResult is ValidationResult


def test_a_schema_keeps_its_request_environments() -> None:
    """A schema's request environments are built once per schema object (Schema.derived);
    an equal schema read again builds its own."""
    text = "entity User; action view appliesTo { principal: User, resource: User };"
    schema = Schema.from_str(text)
    envs = Validator(schema).envs
    assert Validator(schema).envs is envs
    again = Schema.from_str(text)
    assert again == schema and Validator(again).envs is not envs
    assert Validator(again).envs == envs
