# ruff: noqa: E501 - the golden table keeps each policy text and its message on one line
"""Unit tests of the policy parser: the AST it builds, and golden parse errors.

Golden errors assert the exact message and the 1-based ``line:column`` the error points at.
Messages follow the Rust parser's wording where it has one (checked by
``test_golden_errors_are_rejected_by_cedarpy`` only for acceptance: Rust's spans differ).
"""

from __future__ import annotations

import pytest

from cedarlite import ParseError, PolicySet
from cedarlite.data.request import parse_entity_uid
from cedarlite.data.values import EntityUID
from cedarlite.lang.ast import (
    WILDCARD,
    And,
    Arith,
    Binary,
    BinOp,
    Call,
    ConditionKind,
    Effect,
    GetAttr,
    Has,
    If,
    Is,
    Like,
    Lit,
    MethodCall,
    Or,
    RecordLit,
    ScopeOp,
    SetLit,
    SlotId,
    Unary,
    UnaryOp,
    Var,
    Variable,
)
from cedarlite.lang.parse import parse_policies
from cedarlite.lang.printer import print_policies


def cond(text: str):  # type: ignore[no-untyped-def]
    """The body of the single `when` clause of a policy around ``text``."""
    (policy,) = parse_policies(f"permit(principal, action, resource) when {{ {text} }};")
    return policy.conditions[0].body


P = Variable(Var.PRINCIPAL)
CTX = Variable(Var.CONTEXT)


# ---------------------------------------------------------------------------------------------
# What the parser builds


def test_policy_ids_are_positional_and_id_annotations_are_inert() -> None:
    ps = PolicySet.from_str(
        '@id("first") permit(principal, action, resource);\n'
        "forbid(principal == ?principal, action, resource);\n"
        "permit(principal, action, resource);"
    )
    assert [p.id for p in ps] == ["policy0", "policy1", "policy2"]
    assert ps["policy0"].annotations == {"id": "first"}
    assert [p.id for p in ps.templates] == ["policy1"]
    assert [p.id for p in ps.active] == ["policy0", "policy2"]


def test_annotations_without_value_and_reserved_keys() -> None:
    (p,) = parse_policies('@advice @if("x") permit(principal, action, resource);')
    assert dict(p.annotations) == {"advice": "", "if": "x"}


def test_scopes() -> None:
    (p,) = parse_policies(
        'forbid(principal is User in Group::"g", action in [Action::"a", NS::Action::"b",], '
        "resource is NS::Doc,);"
    )
    assert p.effect is Effect.FORBID
    assert (p.principal.op, p.principal.entity_type, p.principal.entity) == (
        ScopeOp.IS_IN,
        "User",
        EntityUID("Group", "g"),
    )
    assert p.action.op is ScopeOp.IN_SET
    assert p.action.entities == (EntityUID("Action", "a"), EntityUID("NS::Action", "b"))
    assert (p.resource.op, p.resource.entity_type) == (ScopeOp.IS, "NS::Doc")
    (t,) = parse_policies(
        'permit(principal in ?principal, action == Action::"x", resource is R in ?resource);'
    )
    assert t.slots == (SlotId.PRINCIPAL, SlotId.RESOURCE)
    assert (t.action.op, t.action.entity) == (ScopeOp.EQ, EntityUID("Action", "x"))
    (e,) = parse_policies("permit(principal, action in [], resource);")
    assert (e.action.op, e.action.entities) == (ScopeOp.IN_SET, ())


def test_conditions_keep_their_kind_and_order() -> None:
    (p,) = parse_policies(
        "permit(principal, action, resource) when { true } unless { false } when { 1 == 1 };"
    )
    assert [c.kind for c in p.conditions] == [
        ConditionKind.WHEN,
        ConditionKind.UNLESS,
        ConditionKind.WHEN,
    ]
    assert p.conditions[1].body == Lit(False)


def test_minus_folding() -> None:
    assert cond("-9223372036854775808") == Lit(-(2**63))
    assert cond("-5") == Lit(-5)
    assert cond("--5") == Unary(UnaryOp.NEG, Lit(-5))
    assert cond("- - 9223372036854775808") == Unary(UnaryOp.NEG, Lit(-(2**63)))
    assert cond("-(5)") == Unary(UnaryOp.NEG, Lit(5))
    assert cond("-context.n") == Unary(UnaryOp.NEG, GetAttr(CTX, "n"))
    assert cond("!!!!true") == Unary(
        UnaryOp.NOT, Unary(UnaryOp.NOT, Unary(UnaryOp.NOT, Unary(UnaryOp.NOT, Lit(True))))
    )


def test_precedence() -> None:
    assert cond("true || false && true") == Or((Lit(True), And((Lit(False), Lit(True)))))
    assert cond("1 + 2 * 3 == 7") == Binary(
        BinOp.EQ, Arith((Lit(1), Arith((Lit(2), Lit(3)), (BinOp.MUL,))), (BinOp.ADD,)), Lit(7)
    )
    assert cond("1 - 2 - 3 < 0") == Binary(
        BinOp.LT, Arith((Lit(1), Lit(2), Lit(3)), (BinOp.SUB, BinOp.SUB)), Lit(0)
    )
    assert cond("if true then 1 else 2") == If(Lit(True), Lit(1), Lit(2))
    assert cond("(1 < 2) == true") == Binary(BinOp.EQ, Binary(BinOp.LT, Lit(1), Lit(2)), Lit(True))
    assert cond("-context.n.x") == Unary(UnaryOp.NEG, GetAttr(GetAttr(CTX, "n"), "x"))


def test_sugar_is_kept_for_the_printer() -> None:
    assert cond("1 != 2") == Binary(BinOp.NEQ, Lit(1), Lit(2))
    assert cond("1 >= 2") == Binary(BinOp.GE, Lit(1), Lit(2))
    assert cond('principal is User in Group::"g"') == Is(P, "User", Lit(EntityUID("Group", "g")))
    assert cond("context has a.b.c") == Has(CTX, ("a", "b", "c"))
    assert cond('context has "a b"') == Has(CTX, ("a b",))


def test_member_access_calls_and_literals() -> None:
    assert cond('principal["a b"].c') == GetAttr(GetAttr(P, "a b"), "c")
    assert cond("context.principal") == GetAttr(CTX, "principal")
    assert cond('[1, [2], {a: 1, "b c": 2,},]') == SetLit(
        (Lit(1), SetLit((Lit(2),)), RecordLit((("a", Lit(1)), ("b c", Lit(2)))))
    )
    assert cond('ip("10.0.0.1").isInRange(ip("10.0.0.0/8",),)') == MethodCall(
        Call("ip", (Lit("10.0.0.1"),)), "isInRange", (Call("ip", (Lit("10.0.0.0/8"),)),)
    )
    assert cond("[].isEmpty()") == MethodCall(SetLit(()), "isEmpty", ())


def test_string_escapes_and_patterns() -> None:
    assert cond(r'"\n\r\t\\\0\'\"\x41\u{1F600}\u{e9}"') == Lit("\n\r\t\\\0'\"A\U0001f600é")
    assert cond('"raw\nnewline"') == Lit("raw\nnewline")
    assert cond(r'"a" like "a\*b*\n"') == Like(Lit("a"), ("a*b", WILDCARD, "\n"))
    assert cond(r'"a" like "**"') == Like(Lit("a"), (WILDCARD, WILDCARD))
    assert cond('"a" like ""') == Like(Lit("a"), ())


def test_comments_and_whitespace() -> None:
    ps = PolicySet.from_str("// leading\npermit( // here\n principal ,action,resource ) // x\n;")
    assert len(ps) == 1


def test_only_the_segment_cedar_is_reserved() -> None:
    assert cond('__cedarX::"a" == x__cedar::"b"') == Binary(
        BinOp.EQ, Lit(EntityUID("__cedarX", "a")), Lit(EntityUID("x__cedar", "b"))
    )
    assert cond('principal["__cedar"]') == GetAttr(P, "__cedar")
    assert cond('{"__cedar": 1} has "__cedar"') == Has(
        RecordLit((("__cedar", Lit(1)),)), ("__cedar",)
    )


def test_whitespace_is_unicode_white_space_and_comments_end_at_cr() -> None:
    for ws in ("\x0b", "\xa0", "\u2003", "\u3000", "\x85", "\u2028"):
        assert len(PolicySet.from_str(f"permit(principal,{ws}action, resource);")) == 1
    for not_ws in ("\x1c", "\u200b", "\ufeff"):
        with pytest.raises(ParseError, match="unexpected character"):
            PolicySet.from_str(f"permit(principal,{not_ws}action, resource);")
    assert cond("1 // comment\r == 1") == Binary(BinOp.EQ, Lit(1), Lit(1))


def test_dialect_methods_need_non_strict() -> None:
    text = 'permit(principal, action, resource) when { context.s.startsWith("a") };'
    assert PolicySet.from_str(text)["policy0"].conditions[0].body == MethodCall(
        GetAttr(CTX, "s"), "startsWith", (Lit("a"),)
    )
    with pytest.raises(ParseError, match="not a valid method") as info:
        PolicySet.from_str(text, strict=True)
    assert info.value.help == "`startsWith` is a cedarlite extension, rejected in strict mode"


def test_entity_uid_parsing() -> None:
    assert parse_entity_uid(' NS::User::"a\\"b" ') == EntityUID("NS::User", 'a"b')
    for bad in ("User", "User::a", 'if::"a"', '__cedar::"a"', 'User::"\\q"'):
        with pytest.raises(ParseError):
            parse_entity_uid(bad)


def test_printer_round_trip() -> None:
    text = (
        '@id("x") permit(principal in ?principal, action in [Action::"a"], resource is R) '
        'when { -(5) == --5 && !!(1 < 2) && context has a.b && "x" like "\\**" } '
        'unless { if principal is U in [G::"g"] then {"k l": [1, -9223372036854775808]} '
        "else 1 + 2 * (3 - 4) };"
    )
    ps = PolicySet.from_str(text)
    again = PolicySet.from_str(print_policies(ps))
    assert again.policies == ps.policies


def test_spans_locate_nodes() -> None:
    (p,) = parse_policies("permit(principal, action, resource)\nwhen { context.a\n  == 1 };")
    body = p.conditions[0].body
    assert (body.span.line, body.span.column) == (2, 8)
    assert (body.right.span.line, body.right.span.column) == (3, 6)


# ---------------------------------------------------------------------------------------------
# Golden parse errors: (text, line, column, message)

GOLDEN_ERRORS: list[tuple[str, int, int, str]] = [
    ("permit(principal, action, resource) when { 1 / 2 };", 1, 46, "division is not supported"),
    (
        "permit(principal, action, resource) when { 1 % 2 };",
        1,
        46,
        "remainder/modulo is not supported",
    ),
    (
        'permit(principal, action, resource) when { principal = User::"a" };',
        1,
        54,
        "`=` is not a valid operator in Cedar; use `==` to compare",
    ),
    (
        "permit(principal, action, resource) when { 1 < 2 < 3 };",
        1,
        44,
        "multiple relational operators (>, ==, in, etc.) must be used with parentheses to make ordering explicit",
    ),
    (
        'permit(principal, action, resource) when { principal in Group::"a" == true };',
        1,
        44,
        "multiple relational operators (>, ==, in, etc.) must be used with parentheses to make ordering explicit",
    ),
    (
        "permit(principal, action, resource) when { !!!!!true };",
        1,
        44,
        "too many occurrences of `!`",
    ),
    ("permit(principal, action, resource) when { -----1 };", 1, 44, "too many occurrences of `-`"),
    (
        "permit(principal, action, resource) when { 9223372036854775808 };",
        1,
        44,
        "integer literal `9223372036854775808` is too large",
    ),
    (
        "permit(principal, action, resource) when { - 9223372036854775809 };",
        1,
        46,
        "integer literal `9223372036854775809` is too large",
    ),
    (
        "permit(principal, action, resource) when { (9223372036854775808) };",
        1,
        45,
        "integer literal `9223372036854775808` is too large",
    ),
    (
        "permit(principal, action, resource) when { principal == ?principal };",
        1,
        57,
        "found template slot `?principal` in a condition; slots are only allowed in the principal and resource scope",
    ),
    (
        "permit(principal, action, resource) when { ?foo };",
        1,
        44,
        "found template slot `?foo` in a condition; slots are only allowed in the principal and resource scope",
    ),
    (
        'permit(principal, action == User::"read", resource);',
        1,
        29,
        'expected an entity uid with type `Action` but got `User::"read"`',
    ),
    (
        'permit(principal, action in [Action::"a", User::"b"], resource);',
        1,
        43,
        'expected an entity uid with type `Action` but got `User::"b"`',
    ),
    (
        'permit(principal, action in NS::Actions::"a", resource);',
        1,
        29,
        'expected an entity uid with type `Action` but got `NS::Actions::"a"`',
    ),
    ('@a("x")\n@a("y") permit(principal, action, resource);', 2, 1, "duplicate annotation: `@a`"),
    (
        "permit(principal, action, resource) when { {a: 1, a: 2} };",
        1,
        51,
        "duplicate key `a` in record literal",
    ),
    (
        'permit(principal, action, resource) when { {"a": 1, a: 2} };',
        1,
        53,
        "duplicate key `a` in record literal",
    ),
    (
        'permit(principal, action, resource) when { "\\a" };',
        1,
        45,
        "the input `\\a` is not a valid escape",
    ),
    (
        'permit(principal, action, resource) when { "\\x80" };',
        1,
        45,
        "the input `\\x80` is not a valid escape",
    ),
    (
        'permit(principal, action, resource) when { "\\u{D800}" };',
        1,
        45,
        "the input `\\u{D800}` is not a valid escape",
    ),
    (
        'permit(principal, action, resource) when { "\\u{110000}" };',
        1,
        45,
        "the input `\\u{110000}` is not a valid escape",
    ),
    (
        'permit(principal, action, resource) when { "\\u{}" };',
        1,
        45,
        "the input `\\u{}` is not a valid escape",
    ),
    (
        'permit(principal, action, resource) when { "\\u{1234567}" };',
        1,
        45,
        "the input `\\u{1234567}` is not a valid escape",
    ),
    (
        'permit(principal, action, resource) when { "a" like "\\q" };',
        1,
        54,
        "the input `\\q` is not a valid escape",
    ),
    (
        "permit(principal, action, resource) when { principal.if };",
        1,
        54,
        "this identifier is reserved and cannot be used: `if`",
    ),
    (
        "permit(principal, action, resource) when { principal.true };",
        1,
        54,
        "this identifier is reserved and cannot be used: `true`",
    ),
    ("permit(principal, action, resource) when { foo };", 1, 44, "invalid variable: `foo`"),
    ("permit(principal, action, resource) when { User };", 1, 44, "invalid variable: `User`"),
    (
        "permit(principal, action, resource) when { foo(1) };",
        1,
        44,
        "`foo` is not a valid function",
    ),
    (
        "permit(principal, action, resource) when { [].contains() };",
        1,
        44,
        "call to `contains` requires exactly 1 argument, but got 0 arguments",
    ),
    (
        "permit(principal, action, resource) when { [].isEmpty(1) };",
        1,
        44,
        "call to `isEmpty` requires exactly 0 arguments, but got 1 argument",
    ),
    (
        'permit(principal, action, resource) when { principal.decimal("1.0") };',
        1,
        54,
        "`decimal` is a function, not a method",
    ),
    (
        "permit(principal, action, resource) when { lessThan(1) };",
        1,
        44,
        "`lessThan` is a method, not a function",
    ),
    (
        "permit(principal, action, resource) when { principal.foo() };",
        1,
        54,
        "`foo` is not a valid method",
    ),
    (
        "permit(principal, action, resource) when { };",
        1,
        37,
        "`when` condition clause cannot be empty",
    ),
    (
        "permit(principal, action, resource) unless {};",
        1,
        37,
        "`unless` condition clause cannot be empty",
    ),
    (
        'permit(principal, action, resource) when { __cedar::x::"a" };',
        1,
        44,
        "the name `__cedar::x` contains `__cedar`, which is reserved",
    ),
    (
        "permit(principal, action, resource) when { principal is __cedar };",
        1,
        57,
        "the name `__cedar` contains `__cedar`, which is reserved",
    ),
    (
        "permit(principal, action, resource) when { principal has if };",
        1,
        58,
        "this identifier is reserved and cannot be used: `if`",
    ),
    (
        "permit(principal, action, resource) when { context.a.b.c has x.if };",
        1,
        64,
        "this identifier is reserved and cannot be used: `if`",
    ),
    (
        "permit(principal, action, resource) when { {if: 1} };",
        1,
        45,
        "this identifier is reserved and cannot be used: `if`",
    ),
    (
        "permit(principal, action, resource)",
        1,
        36,
        "unexpected end of input; expected `;`, `unless`, `when`",
    ),
    (
        "permit(principal, action, resource);\nforbid(principal, action, resource)\n  when { 1 +  };",
        3,
        15,
        "unexpected token `}`; expected `!`, `(`, `-`, `[`, `false`, `true`, `{`, identifier, integer literal, string literal",
    ),
    (
        "permit(principal == ?resource, action, resource);",
        1,
        21,
        "expected an entity uid or matching template slot, found `?resource` instead of `?principal`",
    ),
    (
        "permit(principal, action, resource == ?principal);",
        1,
        39,
        "expected an entity uid or matching template slot, found `?principal` instead of `?resource`",
    ),
    (
        "permit(principal in ?foo, action, resource);",
        1,
        21,
        "expected an entity uid or matching template slot, found `?foo` instead of `?principal`",
    ),
    ('permit(principal, action, resource) when { "abc };', 1, 44, "unterminated string literal"),
    (
        "permit(principal, action, resource) when { # };",
        1,
        44,
        "unexpected character `#`; expected `!`, `(`, `-`, `[`, `false`, `if`, `true`, `{`, `}`, identifier, integer literal, string literal",
    ),
    (
        'permit(principal > User::"a", action, resource);',
        1,
        18,
        "`>` is not allowed in the principal scope; expected `==`, `in` or `is`",
    ),
    (
        "permit(principal, actionin [], resource);",
        1,
        19,
        "unexpected token `actionin`; expected `action`",
    ),
    (
        "allow(principal, action, resource);",
        1,
        1,
        "unexpected token `allow`; expected `@`, `forbid`, `permit`, end of input",
    ),
    (
        'permit(principal, action, resource) when { principal.startsWith("a") };',
        1,
        54,
        "`startsWith` is not a valid method",
    ),
    (
        "permit(principal, action, resource) when { principal.__cedar };",
        1,
        54,
        "the name `__cedar` contains `__cedar`, which is reserved",
    ),
    (
        "permit(principal, action, resource) when { {__cedar: 1} };",
        1,
        45,
        "the name `__cedar` contains `__cedar`, which is reserved",
    ),
    (
        "permit(principal, action, resource) when { context has a.__cedar };",
        1,
        58,
        "the name `__cedar` contains `__cedar`, which is reserved",
    ),
    (
        "permit(principal is A::__cedar::B, action, resource);",
        1,
        21,
        "the name `A::__cedar::B` contains `__cedar`, which is reserved",
    ),
]


@pytest.mark.parametrize(("text", "line", "column", "message"), GOLDEN_ERRORS)
def test_golden_errors(text: str, line: int, column: int, message: str) -> None:
    with pytest.raises(ParseError) as info:
        PolicySet.from_str(text, strict=True)
    err = info.value
    assert (err.line, err.column, err.message) == (line, column, message)


@pytest.mark.parametrize(("text", "line", "column", "message"), GOLDEN_ERRORS)
def test_golden_errors_are_rejected_by_cedarpy(
    text: str, line: int, column: int, message: str
) -> None:
    cedarpy = pytest.importorskip("cedarpy")
    with pytest.raises(ValueError):
        cedarpy.PolicySet.from_str(text)


def test_rendered_error_has_location_and_caret() -> None:
    with pytest.raises(ParseError) as info:
        PolicySet.from_str(
            "permit(principal, action, resource)\n  when { 1 / 2 };", source="p.cedar"
        )
    assert str(info.value) == (
        "p.cedar:2:12: error[E0100]: division is not supported\n"
        " 2 |   when { 1 / 2 };\n"
        "   |            ^"
    )


@pytest.mark.parametrize("text", [None, 5, b"permit(principal, action, resource);"])
def test_non_text_input_is_a_parse_error(text: object) -> None:
    with pytest.raises(ParseError):
        PolicySet.from_str(text)  # type: ignore[arg-type]


def test_deep_nesting_is_a_parse_error_not_a_crash() -> None:
    parens = "(" * 5000 + "1" + ")" * 5000  # parentheses add no nodes
    assert cond(f"{parens} == 1") == Binary(BinOp.EQ, Lit(1), Lit(1))
    chain = cond(" + ".join(["1"] * 3000) + " == 3000")  # a chain is flat, however long
    assert chain == Binary(BinOp.EQ, Arith((Lit(1),) * 3000, (BinOp.ADD,) * 2999), Lit(3000))
    nots = "!(" * 3000 + "true" + ")" * 3000
    for deep in ("[" * 3000 + "]" * 3000, nots):
        with pytest.raises(ParseError, match="nested too deeply"):
            PolicySet.from_str(f"permit(principal, action, resource) when {{ {deep} == 1 }};")
