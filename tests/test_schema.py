"""Tests for :mod:`cedarlite.schema`: the model, both formats, and their errors.

* unit tests for every construct of the ``.cedarschema`` and JSON formats, and the derived
  relations of the model;
* golden error messages (exact message, line and column, help);
* the conformance data: every corpus and sample-data schema parses, and round-trips through
  both formats;
* properties: generated schemas round-trip through both formats; arbitrary text and JSON give
  a schema or a :class:`SchemaError`, never another exception; mutated schema texts are
  accepted or rejected exactly as cedarpy (the Rust engine) does.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from corpus import DATA_ROOT, corpus_files
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cedarlite.data.values import EntityUID
from cedarlite.errors import SchemaError
from cedarlite.lang.parse.lalr_driver import grammar_text
from cedarlite.schema import (
    BOOL,
    LONG,
    STRING,
    ActionDef,
    AppliesTo,
    Attribute,
    CedarType,
    EntityType,
    EntityTypeDef,
    ExtensionType,
    RecordType,
    RequestEnv,
    Schema,
    SetType,
)

needs_data = pytest.mark.skipif(DATA_ROOT is None, reason="Cedar conformance data not found")


def rec(**attributes: CedarType | Attribute) -> RecordType:
    """A record type; plain types are required attributes."""
    return RecordType(
        {k: v if isinstance(v, Attribute) else Attribute(v) for k, v in attributes.items()}
    )


def uid(id_: str, namespace: str = "") -> EntityUID:
    return EntityUID(f"{namespace}::Action" if namespace else "Action", id_)


def fails(text: str, **kwargs: Any) -> SchemaError:
    with pytest.raises(SchemaError) as info:
        Schema.from_str(text, **kwargs)
    return info.value


def fails_json(obj: Any) -> SchemaError:
    with pytest.raises(SchemaError) as info:
        Schema.from_json(obj)
    return info.value


# ---------------------------------------------------------------------------------------------
# Types


def test_type_spellings() -> None:
    assert str(BOOL) == "Bool" and str(LONG) == "Long" and str(STRING) == "String"
    assert str(SetType(LONG)) == "Set<Long>"
    assert str(EntityType("NS::User")) == "NS::User"
    assert str(ExtensionType("ipaddr")) == "ipaddr"
    record = rec(a=LONG, b=Attribute(STRING, required=False), **{"c d": SetType(BOOL)})
    assert str(record) == '{ a: Long, b?: String, "c d": Set<Bool> }'
    assert str(RecordType()) == "{}"
    assert str(RecordType({"a": Attribute(LONG)}, open=True)) == "{ a: Long, ... }"


def test_types_are_immutable_hashable_and_structural() -> None:
    a = rec(x=LONG, y=Attribute(STRING, False, {"doc": "why"}))
    b = rec(y=Attribute(STRING, False), x=LONG)
    assert a == b and hash(a) == hash(b)  # order and annotations do not matter
    assert rec(x=LONG) != rec(x=Attribute(LONG, required=False))
    assert len({BOOL, LONG, STRING, SetType(LONG), SetType(LONG)}) == 4
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.open = True  # type: ignore[misc]
    with pytest.raises(TypeError):
        a.attributes["z"] = Attribute(LONG)  # type: ignore[index]


# ---------------------------------------------------------------------------------------------
# The .cedarschema format: constructs

PHOTOS = """
// Photo sharing.
@doc("the app")
namespace PhotoApp {
  type Context = { authenticated: Bool, ip?: ipaddr };
  entity User in [Group] = {
    name: String,
    "job level"?: Long,
    @doc("managers") managers: Set<User>,
  };
  entity Group;
  entity Album in Album { owner: User };
  entity Photo in [Album] tags String;
  entity Color enum ["red", "green"];
  action view, "edit photo" in [manage] appliesTo {
    principal: [User, Group],
    resource: Photo,
    context: Context,
  };
  @doc("group") action manage;
  action share in [PhotoApp::Action::"manage", "view"] appliesTo {
    principal: User, resource: [Photo, Album]
  };
  action noop;
}
"""


def test_entity_types() -> None:
    schema = Schema.from_str(PHOTOS)
    user = schema.entity_types["PhotoApp::User"]
    assert user.member_of_types == frozenset({"PhotoApp::Group"})
    assert user.shape == rec(
        name=STRING,
        **{"job level": Attribute(LONG, required=False)},
        managers=SetType(EntityType("PhotoApp::User")),
    )
    assert user.shape.attributes["managers"].annotations == {"doc": "managers"}
    assert user.tags is None and user.enum is None
    album = schema.entity_types["PhotoApp::Album"]  # `in` without brackets, shape without `=`
    assert album.member_of_types == {"PhotoApp::Album"}
    assert album.shape == rec(owner=EntityType("PhotoApp::User"))
    assert schema.entity_types["PhotoApp::Photo"].tags == STRING
    assert schema.entity_types["PhotoApp::Group"] == EntityTypeDef("PhotoApp::Group")
    assert schema.entity_types["PhotoApp::Color"].enum == ("red", "green")
    assert schema.namespace_annotations == {"PhotoApp": {"doc": "the app"}}


def test_actions() -> None:
    schema = Schema.from_str(PHOTOS)
    view, edit = uid("view", "PhotoApp"), uid("edit photo", "PhotoApp")
    manage, share = uid("manage", "PhotoApp"), uid("share", "PhotoApp")
    context = rec(authenticated=BOOL, ip=Attribute(ExtensionType("ipaddr"), required=False))
    expected = AppliesTo(("PhotoApp::User", "PhotoApp::Group"), ("PhotoApp::Photo",), context)
    assert schema.actions[view] == ActionDef(view, (manage,), expected)
    assert schema.actions[edit].applies_to == expected  # one declaration, two actions
    assert schema.actions[manage].annotations == {"doc": "group"}
    assert schema.actions[manage].applies_to is None  # no appliesTo: applies to nothing
    assert schema.actions[share].member_of == (manage, view)
    assert schema.actions[share].applies_to == AppliesTo(
        ("PhotoApp::User",), ("PhotoApp::Photo", "PhotoApp::Album")
    )


def test_derived_relations() -> None:
    schema = Schema.from_str(PHOTOS)
    view, edit = uid("view", "PhotoApp"), uid("edit photo", "PhotoApp")
    manage, share = uid("manage", "PhotoApp"), uid("share", "PhotoApp")
    assert schema.action_ancestors(share) == {manage, view}
    assert schema.action_ancestors(manage) == frozenset()
    assert schema.action_descendants(manage) == {view, edit, share}
    assert schema.action_descendants(view) == {share}
    assert schema.entity_type_ancestors("PhotoApp::User") == {"PhotoApp::Group"}
    assert schema.entity_type_descendants("PhotoApp::Album") == {
        "PhotoApp::Album",
        "PhotoApp::Photo",
    }
    assert schema.entity_type_ancestors("Nope") == frozenset()
    assert schema.principal_types_of(share) == ("PhotoApp::User",)
    assert schema.resource_types_of(view) == ("PhotoApp::Photo",)
    assert schema.principal_types_of(manage) == () == schema.principal_types_of(uid("x"))
    assert schema.action_entity_types == {"PhotoApp::Action"}
    assert schema.request_environments() == (
        RequestEnv("PhotoApp::User", view, "PhotoApp::Photo"),
        RequestEnv("PhotoApp::Group", view, "PhotoApp::Photo"),
        RequestEnv("PhotoApp::User", edit, "PhotoApp::Photo"),
        RequestEnv("PhotoApp::Group", edit, "PhotoApp::Photo"),
        RequestEnv("PhotoApp::User", share, "PhotoApp::Photo"),
        RequestEnv("PhotoApp::User", share, "PhotoApp::Album"),
    )


def test_name_resolution() -> None:
    schema = Schema.from_str(
        """
        type Shared = { n: Long };
        entity Root;
        namespace A::B {
          type T = Set<U>;                       // common types may refer to later ones
          type U = { s: Shared, r: Root };       // names of the empty namespace are visible
          entity E = { t: T, other: C::D, a: Action, i: __cedar::ipaddr, l: __cedar::Long };
          action act;
        }
        namespace C { entity D; }
        namespace N {
          entity Long;                           // shadows the primitive in this namespace
          entity X = { l: Long, p: __cedar::Long, s: String };
        }
        """
    )
    e = schema.entity_types["A::B::E"].shape.attributes
    inner = rec(s=rec(n=LONG), r=EntityType("Root"))
    assert e["t"].type == SetType(inner)
    assert e["other"].type == EntityType("C::D")
    assert e["a"].type == EntityType("A::B::Action")  # the action type of the namespace
    assert e["i"].type == ExtensionType("ipaddr") and e["l"].type == LONG
    x = schema.entity_types["N::X"].shape
    assert x == rec(l=EntityType("N::Long"), p=LONG, s=STRING)


def test_common_type_over_entity_type() -> None:
    schema = Schema.from_str("namespace N { type A = Long; entity A; entity E = { a: A }; }")
    assert schema.entity_types["N::E"].shape == rec(a=LONG)


def test_builtin_names_can_be_redefined_in_the_empty_namespace() -> None:
    schema = Schema.from_str(
        "type ipaddr = String; entity Bool; entity E = { i: ipaddr, b: Bool, c: __cedar::Bool };"
    )
    assert schema.entity_types["E"].shape == rec(i=STRING, b=EntityType("Bool"), c=BOOL)


def test_extension_types() -> None:
    schema = Schema.from_str("entity E = { a: decimal, b: ipaddr, c: datetime, d: duration };")
    assert schema.entity_types["E"].shape == rec(
        a=ExtensionType("decimal"),
        b=ExtensionType("ipaddr"),
        c=ExtensionType("datetime"),
        d=ExtensionType("duration"),
    )


def test_keywords_are_names_where_they_cannot_be_keywords() -> None:
    schema = Schema.from_str(
        """
        entity entity, namespace, type, principal, context, tags, enum, appliesTo, Set;
        entity E in [entity, Set] = { in_: Long, entity: entity, context: Set, s: Set<Set> };
        namespace Set { entity X; }
        action action;
        action attributes in [action];
        """
    )
    shape = schema.entity_types["E"].shape
    assert shape == rec(
        in_=LONG,
        entity=EntityType("entity"),
        context=EntityType("Set"),
        s=SetType(EntityType("Set")),
    )
    assert schema.entity_types["E"].member_of_types == {"entity", "Set"}
    assert "Set::X" in schema.entity_types
    assert schema.actions[uid("attributes")].member_of == (uid("action"),)


def test_annotations() -> None:
    schema = Schema.from_str(
        """
        @doc("both") @flag
        entity A, B = { @doc("attr") @x a: Long };
        @in @if("reserved words are fine as keys")
        action "a";
        """
    )
    for name in ("A", "B"):
        assert schema.entity_types[name].annotations == {"doc": "both", "flag": ""}
    assert schema.entity_types["A"].shape.attributes["a"].annotations == {"doc": "attr", "x": ""}
    assert dict(schema.actions[uid("a")].annotations) == {
        "in": "",
        "if": "reserved words are fine as keys",
    }


def test_strings_and_escapes() -> None:
    schema = Schema.from_str(r'entity E = { "a\"b\\c\n\u{1F600}\x41\0\'": Long };')
    assert list(schema.entity_types["E"].shape.attributes) == ["a\"b\\c\n\U0001f600A\0'"]


def test_trailing_commas_comments_and_action_attributes() -> None:
    schema = Schema.from_str(
        """
        entity A = { a: Long, };        // trailing comma in a record
        action x appliesTo { principal: A, resource: [A], context: {}, } attributes {};
        """
    )
    assert schema.actions[uid("x")].applies_to == AppliesTo(("A",), ("A",))


def test_empty_lists_in_json_apply_to_nothing() -> None:
    schema = Schema.from_json(
        {
            "": {
                "entityTypes": {"A": {}},
                "actions": {"a": {"appliesTo": {"principalTypes": [], "resourceTypes": ["A"]}}},
            }
        }
    )
    assert schema.actions[uid("a")].applies_to is None
    assert schema.request_environments() == ()


def test_cross_namespace_action_groups() -> None:
    schema = Schema.from_str(
        """
        action top;
        namespace X { action mid in [Action::"top"]; }
        namespace Y { action leaf in [X::Action::"mid", top]; }
        """
    )
    leaf = uid("leaf", "Y")
    assert schema.actions[leaf].member_of == (uid("mid", "X"), uid("top"))
    assert schema.action_ancestors(leaf) == {uid("mid", "X"), uid("top")}


def test_equality_is_about_the_model() -> None:
    one = Schema.from_str("entity A; entity B in A = { x: Long };")
    two = Schema.from_str("entity B in [A] { x: __cedar::Long }; // same\nentity A = {};")
    assert one == two and hash(one) == hash(two)
    assert one != Schema.from_str("entity A; entity B in A = { x: String };")
    assert Schema.from_str("") == Schema({}, {})
    with pytest.raises(dataclasses.FrozenInstanceError):
        one.entity_types = {}  # type: ignore[misc]
    with pytest.raises(TypeError):
        one.entity_types["C"] = EntityTypeDef("C")  # type: ignore[index]


def test_deep_nesting() -> None:
    assert Schema.from_str("type T = " + "Set<" * 100 + "Long" + ">" * 100 + ";") == Schema({}, {})
    error = fails("entity E = { a: " + "Set<" * 20_000 + "Long" + ">" * 20_000 + " };")
    assert error.message == "schema is nested too deeply"
    deep = '{"type": "Set", "element": ' * 20_000 + '{"type": "Long"}' + "}" * 20_000
    shape = '{"type": "Record", "attributes": {"a": ' + deep + "}}"
    document = '{"": {"entityTypes": {"E": {"shape": ' + shape + '}}, "actions": {}}}'
    assert fails_json(document).message == "schema is nested too deeply"


@pytest.mark.parametrize("name", ["cedarschema.lark", "cedar.lark"])
def test_grammars_are_documented_and_found(name: str) -> None:
    """Every rule of both grammars has a comment above it (terminals are grouped)."""
    lines = grammar_text(name).splitlines()
    for i, line in enumerate(lines):
        if re.match(r"[!?]?[a-z_]+\s*:", line):
            assert lines[i - 1].startswith("//"), f"{name}: no comment above `{line}`"


# ---------------------------------------------------------------------------------------------
# The JSON format

PHOTOS_JSON: dict[str, Any] = {
    "PhotoApp": {
        "annotations": {"doc": "the app"},
        "commonTypes": {
            "Context": {
                "type": "Record",
                "attributes": {
                    "authenticated": {"type": "Boolean"},
                    "ip": {"type": "Extension", "name": "ipaddr", "required": False},
                },
            }
        },
        "entityTypes": {
            "User": {
                "memberOfTypes": ["Group"],
                "shape": {
                    "type": "Record",
                    "attributes": {
                        "name": {"type": "String"},
                        "job level": {"type": "Long", "required": False},
                        "managers": {
                            "type": "Set",
                            "element": {"type": "Entity", "name": "User"},
                            "annotations": {"doc": "managers"},
                        },
                    },
                },
            },
            "Group": {},
            "Album": {
                "memberOfTypes": ["Album"],
                "shape": {
                    "type": "Record",
                    "attributes": {"owner": {"type": "EntityOrCommon", "name": "User"}},
                },
            },
            "Photo": {"memberOfTypes": ["Album"], "tags": {"type": "String"}},
            "Color": {"enum": ["red", "green"]},
        },
        "actions": {
            "view": {
                "memberOf": [{"id": "manage"}],
                "appliesTo": {
                    "principalTypes": ["User", "Group"],
                    "resourceTypes": ["Photo"],
                    "context": {"type": "Context"},
                },
            },
            "edit photo": {
                "memberOf": [{"id": "manage", "type": "Action"}],
                "appliesTo": {
                    "principalTypes": ["User", "PhotoApp::Group"],
                    "resourceTypes": ["Photo"],
                    "context": {"type": "EntityOrCommon", "name": "Context"},
                },
            },
            "manage": {"annotations": {"doc": "group"}},
            "share": {
                "memberOf": [{"id": "manage", "type": "PhotoApp::Action"}, {"id": "view"}],
                "appliesTo": {"principalTypes": ["User"], "resourceTypes": ["Photo", "Album"]},
            },
            "noop": {"appliesTo": None, "memberOf": None},
        },
    }
}


def test_json_format_reads_the_same_model() -> None:
    assert Schema.from_json(PHOTOS_JSON) == Schema.from_str(PHOTOS)
    assert Schema.from_json(json.dumps(PHOTOS_JSON)) == Schema.from_str(PHOTOS)


def test_to_json_is_fully_qualified() -> None:
    schema = Schema.from_str(
        """
        entity Root;
        namespace NS {
          @doc("u") entity User in [Root] = { a?: Set<Long>, b: Root, c: ipaddr };
          entity Color enum ["red"];
          action g;
          action view in g appliesTo { principal: User, resource: Color, context: { x: Bool } };
        }
        """
    )
    assert schema.to_json() == {
        "": {"entityTypes": {"Root": {}}, "actions": {}},
        "NS": {
            "entityTypes": {
                "User": {
                    "memberOfTypes": ["Root"],
                    "shape": {
                        "type": "Record",
                        "attributes": {
                            "a": {"type": "Set", "element": {"type": "Long"}, "required": False},
                            "b": {"type": "Entity", "name": "Root"},
                            "c": {"type": "Extension", "name": "ipaddr"},
                        },
                    },
                    "annotations": {"doc": "u"},
                },
                "Color": {"enum": ["red"]},
            },
            "actions": {
                "g": {},
                "view": {
                    "memberOf": [{"id": "g", "type": "NS::Action"}],
                    "appliesTo": {
                        "principalTypes": ["NS::User"],
                        "resourceTypes": ["NS::Color"],
                        "context": {"type": "Record", "attributes": {"x": {"type": "Boolean"}}},
                    },
                },
            },
        },
    }


def test_to_cedarschema_text() -> None:
    schema = Schema.from_str(
        """
        entity Long;
        @doc("ns") namespace NS {
          entity U in [V] = { @d("x") "a b": Long, c?: __cedar::Long, v: V } tags Set<String>;
          entity V;
          action "g";
          action v in ["g"] appliesTo { principal: U, resource: V };
        }
        """
    )
    assert schema.to_cedarschema() == (
        "entity Long;\n"
        "\n"
        '@doc("ns")\n'
        "namespace NS {\n"
        "  entity U in [V] = {\n"
        '    @d("x")\n'
        '    "a b": Long,\n'
        "    c?: __cedar::Long,\n"
        "    v: V\n"
        "  } tags Set<String>;\n"
        "\n"
        "  entity V;\n"
        "\n"
        '  action "g";\n'
        "\n"
        '  action "v" in ["g"] appliesTo {\n'
        "    principal: [U],\n"
        "    resource: [V],\n"
        "    context: {}\n"
        "  };\n"
        "}\n"
    )


def test_open_records_cannot_be_written_as_cedarschema() -> None:
    schema = Schema({"E": EntityTypeDef("E", shape=RecordType({"a": Attribute(LONG)}, True))}, {})
    assert schema.to_json()[""]["entityTypes"]["E"]["shape"]["additionalAttributes"] is True
    with pytest.raises(SchemaError, match="open record types cannot be written"):
        schema.to_cedarschema()


# ---------------------------------------------------------------------------------------------
# Golden errors: the .cedarschema format

ERRORS = [
    # (text, message, line, column, help)
    ("entity A = { age: Lng };", "unknown type `Lng`", 1, 19, "did you mean `Long`?"),
    (
        "entity A in [Grup];\nentity Group;",
        "unknown entity type `Grup`",
        1,
        14,
        "did you mean `Group`?",
    ),
    (
        "namespace NS { entity A = { b: NS::Bb }; entity B; }",
        "unknown type `NS::Bb`",
        1,
        32,
        "did you mean `NS::B`?",
    ),
    (
        "entity A; action a appliesTo { principal: A, resource: B };",
        "unknown entity type `B`",
        1,
        56,
        None,
    ),
    ("entity A in [Action]; action a;", "unknown entity type `Action`", 1, 14, None),
    ("entity A = { a: Action };", "unknown type `Action`", 1, 17, None),
    (
        "entity A; action a appliesTo { principal: A, resource: A, context: C };",
        "unknown type `C`",
        1,
        68,
        None,
    ),
    (
        "type C = Long;\nentity A;\naction a appliesTo { principal: A, resource: A, context: C };",
        'the context of `Action::"a"` must be a record type, not `Long`',
        3,
        58,
        None,
    ),
    (
        "action a in [b];\naction c;",
        'unknown action `Action::"b"`',
        1,
        14,
        'did you mean `Action::"c"`?',
    ),
    (
        "action a in b;\naction b in a;",
        'action `Action::"a"` is a member of itself',
        1,
        8,
        "the action hierarchy may not contain a cycle",
    ),
    (
        "type A = B;\ntype B = A;",
        "common type `A` is defined in terms of itself",
        1,
        6,
        "common types may refer to each other, but not in a cycle",
    ),
    (
        "type T = Set<T>;",
        "common type `T` is defined in terms of itself",
        1,
        6,
        "common types may refer to each other, but not in a cycle",
    ),
    (
        "type Long = String;",
        "`Long` is reserved and cannot be the name of a common type",
        1,
        6,
        None,
    ),
    (
        "namespace NS { type Set = Long; }",
        "`Set` is reserved and cannot be the name of a common type",
        1,
        21,
        None,
    ),
    (
        "entity __cedar;",
        "`__cedar` cannot be declared: names with a `__cedar` part are reserved",
        1,
        8,
        None,
    ),
    (
        "namespace A::__cedar {}",
        "`A::__cedar` cannot be declared: names with a `__cedar` part are reserved",
        1,
        11,
        None,
    ),
    ("entity in;", "`in` is a reserved identifier", 1, 8, None),
    ("entity A = { if: Long };", "`if` is a reserved identifier", 1, 14, None),
    ("entity A = { a: B::true };", "`true` is a reserved identifier", 1, 20, None),
    ("namespace A {}\nnamespace A {}", "duplicate namespace `A`", 2, 11, None),
    ("entity X;\nentity X;", "entity type `X` is declared twice", 2, 8, None),
    ("entity X, X;", "entity type `X` is declared twice", 1, 11, None),
    (
        'namespace N { action a; action "a"; }',
        'action `N::Action::"a"` is declared twice',
        1,
        32,
        None,
    ),
    ("type T = Long;\ntype T = String;", "common type `T` is declared twice", 2, 6, None),
    (
        "entity Action;",
        "entity type `Action` cannot be declared: it is the type of actions",
        1,
        8,
        None,
    ),
    (
        "entity User;\nnamespace NS { entity User; }",
        "`NS::User` shadows `User` of the empty namespace",
        2,
        23,
        "rename one of them: names of the empty namespace are visible in every namespace",
    ),
    (
        "type User = Long;\nnamespace A::B { type User = String; }",
        "`A::B::User` shadows `User` of the empty namespace",
        2,
        23,
        "rename one of them: names of the empty namespace are visible in every namespace",
    ),
    (
        "action view;\nnamespace NS { action view; }",
        'action `NS::Action::"view"` shadows `Action::"view"` of the empty namespace',
        2,
        23,
        None,
    ),
    (
        "entity A; action a appliesTo { context: {} };",
        "missing `principal` in the `appliesTo` of action `a`",
        1,
        18,
        None,
    ),
    (
        "entity A; action a appliesTo { principal: A };",
        "missing `resource` in the `appliesTo` of action `a`",
        1,
        18,
        None,
    ),
    (
        "entity A; action a appliesTo { principal: [], resource: A };",
        "empty `principal` list in action `a`",
        1,
        32,
        "an action that applies to nothing can leave out `appliesTo`",
    ),
    (
        "entity A; action a appliesTo { principal: A, principal: A, resource: A };",
        "duplicate `principal` in the `appliesTo` of action `a`",
        1,
        46,
        None,
    ),
    ('@doc("a")\n@doc("b") entity A;', "duplicate annotation `@doc`", 2, 2, None),
    ('entity A = {"x\\q": Long};', "invalid escape `\\q` in string literal", 1, 15, None),
    ('entity A = {"\\x80": Long};', "invalid escape `\\x80` in string literal", 1, 14, None),
    (
        'entity A = {"\\u{D800}": Long};',
        "invalid escape `\\u{D800}` in string literal",
        1,
        14,
        None,
    ),
    ("entity A = {a: Long", "unexpected end of input", 1, 20, "expected `,`, `::`, `}`"),
    ("entity A = {a: Long};\nentity B #", "unexpected character `#`", 2, 10, None),
    ('entity "x', "unterminated string literal", 1, 8, None),
    ("entity A, B,;", "unexpected `;`", 1, 13, "expected identifier"),
    ("entity A = { a: Long } foo", "unexpected `foo`", 1, 24, "expected `;`, `tags`"),
    ("namespace A { namespace B {} }", "unexpected `namespace`", 1, 15, None),
    (
        "entity A; action a in [A::B];",
        "`A::B` is not an action",
        1,
        24,
        'an action in another namespace is written `A::B::"id"`',
    ),
]


@pytest.mark.parametrize(("text", "message", "line", "column", "help"), ERRORS)
def test_golden_errors(text: str, message: str, line: int, column: int, help: str | None) -> None:
    error = fails(text, source="s.cedarschema")
    assert (error.message, error.line, error.column) == (message, line, column)
    if help is not None or message.startswith("unexpected `"):
        assert error.help == help or help is None
    else:
        assert error.help == help


def test_error_rendering() -> None:
    error = fails("entity A;\nentity B = { a: Strin };", source="app.cedarschema")
    assert str(error) == (
        "app.cedarschema:2:17: error[E0400]: unknown type `Strin`\n"
        " 2 | entity B = { a: Strin };\n"
        "   |                 ^^^^^\n"
        "  = help: did you mean `String`?"
    )
    assert error.text is not None and error.source == "app.cedarschema"


# ---------------------------------------------------------------------------------------------
# Golden errors: the JSON format


def ns(entity_types: Any = None, actions: Any = None, **more: Any) -> dict[str, Any]:
    """A namespace object of the JSON format."""
    return {"entityTypes": entity_types or {}, "actions": actions or {}, **more}


def record(**attributes: Any) -> dict[str, Any]:
    return {"type": "Record", "attributes": attributes}


JSON_ERRORS = [
    (
        {"": ns({"User": {"shape": record(age={"type": "Lng"})}})},
        "at entityTypes.User.shape.attributes.age: unknown type `Lng`",
        "did you mean `Long`?",
    ),
    (
        {"NS": ns({"U": {"shape": record(g={"type": "Entity", "name": "Grp"})}, "Group": {}})},
        "at NS.entityTypes.U.shape.attributes.g: unknown entity type `Grp`",
        "did you mean `Group`?",
    ),
    (
        {"": ns({"A": {"shape": record(**{"a b": {"type": "Bolean"}})}})},
        'at entityTypes.A.shape.attributes["a b"]: unknown type `Bolean`',
        "did you mean `Boolean`?",
    ),
    (
        {"": ns({"A": {"shape": record(x={"type": "Set"})}})},
        "at entityTypes.A.shape.attributes.x: missing field `element`",
        None,
    ),
    (
        {"": ns({"A": {"shape": record(x={"type": "Long", "required": "yes"})}})},
        "at entityTypes.A.shape.attributes.x.required: expected a boolean, found a string",
        None,
    ),
    (
        {
            "": ns(
                {
                    "A": {
                        "shape": record(
                            x={"type": "Set", "element": {"type": "Long", "required": False}}
                        )
                    }
                }
            )
        },
        "at entityTypes.A.shape.attributes.x.element: unknown field `required`",
        "expected one of `type`, `element`, `attributes`, `additionalAttributes`, `name`",
    ),
    (
        {"": ns({"A": {"shape": record(x={"type": "Long", "name": "x"})}})},
        "at entityTypes.A.shape.attributes.x: unexpected field `name` for a `Long` type",
        None,
    ),
    (
        {"": ns({"A": {"shape": record(x={"type": "Extension", "name": "ipadr"})}})},
        "at entityTypes.A.shape.attributes.x.name: unknown extension type `ipadr`",
        "did you mean `ipaddr`?",
    ),
    (
        {"": ns({"A": {"shape": {"type": "Long"}}})},
        "at entityTypes.A.shape: the shape of `A` must be a record type, not `Long`",
        None,
    ),
    (
        {
            "": ns(
                {"A": {"shape": {"type": "Record", "attributes": {}, "additionalAttributes": True}}}
            )
        },
        "at entityTypes.A.shape.additionalAttributes: open records (`additionalAttributes: true`) "
        "are not supported",
        None,
    ),
    ({"": ns({"A::B": {}})}, "at entityTypes.A::B: invalid entity type name `A::B`", None),
    ({"": ns({"in": {}})}, "at entityTypes.in: invalid entity type name `in`", None),
    ({"if": ns()}, "at if: invalid namespace name `if`", None),
    (
        {"__cedar": ns()},
        "at __cedar: `__cedar` cannot be declared: names with a `__cedar` part are reserved",
        None,
    ),
    (
        {"": ns(annotations={"doc": "x"})},
        "at annotations: the empty namespace cannot have annotations",
        None,
    ),
    (
        {"": ns({"A": {"enum": []}})},
        "at entityTypes.A.enum: `enum` must list at least one id",
        None,
    ),
    (
        {"": ns({"A": {"enum": ["a"], "tags": {"type": "Long"}}})},
        "at entityTypes.A: unexpected field `tags` in an enumerated entity type",
        None,
    ),
    (
        {"": ns({"A": {"memberOfTypes": None}})},
        "at entityTypes.A.memberOfTypes: expected an array, found null",
        None,
    ),
    (
        {"": {**ns(), "commonTypes": {"Long": {"type": "Long"}}}},
        "at commonTypes.Long: `Long` is reserved and cannot be the name of a common type",
        None,
    ),
    (
        {"": ns({}, {"a": {"attributes": {}}})},
        "at actions.a.attributes: action attributes are not supported",
        None,
    ),
    (
        {"": ns({}, {"a": {"memberOf": [{"id": "b"}]}})},
        'at actions.a.memberOf[0]: unknown action `Action::"b"`',
        'did you mean `Action::"a"`?',
    ),
    (
        {"": ns({"A": {}}, {"a": {"appliesTo": {"principalTypes": ["A"]}}})},
        "at actions.a.appliesTo: missing field `resourceTypes`",
        None,
    ),
    ({"": {**ns(), "entityType": {}}}, "unknown field `entityType`", "did you mean `entityTypes`?"),
    ({"": {"entityTypes": {}}}, "missing field `actions`", None),
    ([], "expected a schema (an object), found an array", None),
    (
        {"": ns({"A": {"annotations": {"doc": 1}}})},
        "at entityTypes.A.annotations.doc: expected a string, found a number",
        None,
    ),
    (
        '{"": {"entityTypes": {"A": {}, "A": {}}, "actions": {}}}',
        "at entityTypes: duplicate key `A`",
        None,
    ),
]


@pytest.mark.parametrize(("document", "message", "help"), JSON_ERRORS)
def test_golden_json_errors(document: Any, message: str, help: str | None) -> None:
    error = fails_json(document)
    assert (error.message, error.help) == (message, help)


def test_invalid_json_text_is_located() -> None:
    error = fails_json('{"": {\n  "entityTypes": {},\n  "actions": {},\n}')
    assert error.message == "invalid JSON: expecting property name enclosed in double quotes"
    assert (error.line, error.column) == (4, 1)


# ---------------------------------------------------------------------------------------------
# The conformance data


@pytest.fixture(scope="session")
def corpus_schemas() -> dict[str, str]:
    """Every ``.cedarschema`` of the generated corpus, by file name (read from the tarball)."""
    if DATA_ROOT is None:
        pytest.skip("Cedar conformance data not found")
    return {
        Path(name).name: data.decode("utf-8")
        for name, data in corpus_files().items()
        if name.endswith(".cedarschema")
    }


def sample_schemas() -> list[Path]:
    return sorted((DATA_ROOT / "sample-data").rglob("*.cedarschema")) if DATA_ROOT else []


def check_round_trips(schema: Schema) -> None:
    """``from_json(to_json(s)) == s`` (as JSON text) and ``from_str(to_cedarschema(s)) == s``."""
    assert Schema.from_json(json.dumps(schema.to_json())) == schema
    assert Schema.from_str(schema.to_cedarschema()) == schema


@needs_data
def test_corpus_schemas_parse_and_round_trip(corpus_schemas: dict[str, str]) -> None:
    assert len(corpus_schemas) == 7809
    # Identical texts give identical schemas: parse each distinct text once.
    texts = {text: name for name, text in sorted(corpus_schemas.items())}
    failures = []
    for text, name in texts.items():
        try:
            check_round_trips(Schema.from_str(text, source=name))
        except SchemaError as error:
            failures.append(str(error))
    assert not failures, failures[:3]


@needs_data
@pytest.mark.parametrize("path", sample_schemas(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_sample_data_schemas(path: Path) -> None:
    schema = Schema.from_str(path.read_text(encoding="utf-8"), source=str(path))
    assert schema.entity_types and schema.actions
    check_round_trips(schema)
    assert Schema.from_json(schema.to_json()) == schema  # the decoded object, not text


# ---------------------------------------------------------------------------------------------
# Properties: generated schemas round-trip

_NAMES = st.sampled_from(
    [
        *"ABCDEFGH",
        "User",
        "Long",
        "String",
        "Bool",
        "Set",
        "ipaddr",
        "decimal",
        "entity",
        "namespace",
        "context",
        "tags",
        "Record",
        "Boolean",
        "_x9",
    ]
)
_NAMESPACES = st.sampled_from(["", "NS", "A::B", "Long", "entity::Set"])
_TEXT = st.text(max_size=6)
_ANNOTATIONS = st.dictionaries(st.sampled_from(["doc", "in", "x_1"]), _TEXT, max_size=2)


def _records(children: st.SearchStrategy[CedarType]) -> st.SearchStrategy[RecordType]:
    attribute = st.builds(Attribute, children, st.booleans(), _ANNOTATIONS)
    keys = st.one_of(_NAMES, _TEXT, st.sampled_from(["in", "true", "__cedar", ""]))
    return st.dictionaries(keys, attribute, max_size=3).map(RecordType)


# Entity types are drawn as placeholders `#i`, renamed to the i-th declared name afterwards.
_LEAVES = st.sampled_from(
    [BOOL, LONG, STRING, *(ExtensionType(e) for e in ("ipaddr", "decimal", "datetime"))]
    + [EntityType(f"#{i}") for i in range(6)]
)
_TYPES = st.recursive(
    _LEAVES, lambda c: st.one_of(st.builds(SetType, c), _records(c)), max_leaves=6
)
_RECORDS = _records(_TYPES)


def _rename(t: CedarType, names: list[str]) -> Any:
    """``t`` with the placeholder entity types replaced by declared names."""
    match t:
        case EntityType(name=name):
            return EntityType(names[int(name[1:]) % len(names)])
        case SetType(element=element):
            return SetType(_rename(element, names))
        case RecordType():
            return RecordType(
                {
                    key: Attribute(_rename(a.type, names), a.required, a.annotations)
                    for key, a in t.attributes.items()
                }
            )
    return t


@st.composite
def schemas(draw: st.DrawFn) -> Schema:
    """Schemas in the model: any names, types and hierarchies a parsed schema can have."""
    # A basename lives in one namespace only (RFC 70 forbids reusing empty-namespace names).
    placed = draw(st.dictionaries(_NAMES, _NAMESPACES, min_size=1, max_size=6))
    names = [f"{n}::{b}" if n else b for b, n in placed.items()]
    enums = {name for name in names if draw(st.integers(0, 3)) == 0}
    standard = [n for n in names if n not in enums]
    entity_types = {}
    for name in names:
        if name in enums:
            enum = tuple(draw(st.lists(_TEXT, min_size=1, max_size=3)))
            entity_types[name] = EntityTypeDef(name, enum=enum, annotations=draw(_ANNOTATIONS))
        else:
            entity_types[name] = EntityTypeDef(
                name,
                frozenset(draw(st.lists(st.sampled_from(names), max_size=2))),
                _rename(draw(_RECORDS), names),
                None if draw(st.booleans()) else _rename(draw(_TYPES), names),
                None,
                draw(_ANNOTATIONS),
            )
    actions: dict[EntityUID, ActionDef] = {}
    for id_ in draw(st.lists(_TEXT, unique=True, max_size=5)):  # ids unique across namespaces
        action = uid(id_, draw(_NAMESPACES))
        parents = (
            draw(st.lists(st.sampled_from(list(actions)), unique=True, max_size=2))
            if actions
            else []
        )
        applies_to = None
        if standard and draw(st.booleans()):
            some = st.lists(st.sampled_from(standard), min_size=1, max_size=2, unique=True)
            context = _rename(draw(_RECORDS), names)
            applies_to = AppliesTo(tuple(draw(some)), tuple(draw(some)), context)
        actions[action] = ActionDef(action, tuple(parents), applies_to, draw(_ANNOTATIONS))
    used = {n.rpartition("::")[0] for n in names} | {a.type.rpartition("::")[0] for a in actions}
    annotations = {n: draw(_ANNOTATIONS) for n in sorted(used) if n}
    return Schema(entity_types, actions, {k: v for k, v in annotations.items() if v})


@given(schemas())
@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
def test_generated_schemas_round_trip(schema: Schema) -> None:
    check_round_trips(schema)
    assert Schema.from_json(schema.to_json()) == schema
    # Equality ignores attribute annotations; the JSON form shows that they survive too.
    assert Schema.from_str(schema.to_cedarschema()).to_json() == schema.to_json()


# ---------------------------------------------------------------------------------------------
# Properties: only SchemaError escapes

_VOCABULARY = [
    "entity", "action", "namespace", "type", "in", "appliesTo", "principal", "resource",
    "context", "tags", "enum", "attributes", "Set", "<", ">", "{", "}", "[", "]", ",", ";", ":",
    "::", "=", "?", "@", "(", ")", '"s"', '"\\q"', "Long", "String", "Bool", "ipaddr",
    "__cedar", "A", "B", "Action", "if", "//", "\n", "#", '"',
]  # fmt: skip


@given(st.lists(st.sampled_from(_VOCABULARY), max_size=30).map(" ".join) | st.text())
def test_any_text_gives_a_schema_or_a_schema_error(text: str) -> None:
    with contextlib.suppress(SchemaError):
        Schema.from_str(text)


_JSON_KEYS = st.sampled_from(
    ["", "A", "entityTypes", "actions", "type", "element", "attributes", "name", "shape",
     "memberOf", "appliesTo", "principalTypes", "resourceTypes", "id", "enum"]
)  # fmt: skip
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.sampled_from(["Long", "Set", "A", "Record"]),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(_JSON_KEYS, c, max_size=4),
    max_leaves=20,
)


@given(_JSON)
def test_any_json_gives_a_schema_or_a_schema_error(document: Any) -> None:
    for form in (document, json.dumps(document)):
        with contextlib.suppress(SchemaError):
            Schema.from_json(form)


# ---------------------------------------------------------------------------------------------
# Differential: accept/reject agreement with cedarpy on mutated schema texts

_SEEDS = [
    PHOTOS,
    "entity A; entity B in [A] = { a: Long, b?: Set<A> } tags String;",
    'type T = { x: Long }; entity E enum ["a", "b"];\n'
    "action a appliesTo { principal: E, resource: E, context: T };",
    "namespace N { entity U; action g;\n"
    'action v in [g, Action::"g"] appliesTo { principal: U, resource: U }; }',
    "entity Long; namespace M { entity X = { l: Long, p: __cedar::Long, i: ipaddr }; }",
]
_TOKEN = re.compile(r'"(?:\\.|[^"\\])*"|::|//[^\n]*|[A-Za-z_][A-Za-z0-9_]*|\S')


@st.composite
def mutants(draw: st.DrawFn, pool: list[str]) -> str:
    tokens = _TOKEN.findall(draw(st.sampled_from(pool)))
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, max(0, len(tokens) - 1)))
        match draw(st.sampled_from(["delete", "insert", "replace", "swap"])):
            case "delete":
                del tokens[i : i + draw(st.integers(1, 3))]
            case "insert":
                tokens.insert(i, draw(st.sampled_from(_VOCABULARY)))
            case "replace" if tokens:
                tokens[i] = draw(st.sampled_from(_VOCABULARY))
            case _ if len(tokens) > 1:
                j = draw(st.integers(0, len(tokens) - 1))
                tokens[i], tokens[j] = tokens[j], tokens[i]
    return " ".join(tokens).replace("//", "\n//")


@needs_data
def test_differential_acceptance_with_cedarpy(corpus_schemas: dict[str, str]) -> None:
    cedarpy = pytest.importorskip("cedarpy")
    small = sorted(text for text in corpus_schemas.values() if len(text) < 600)[::40]
    pool = _SEEDS + [p.read_text(encoding="utf-8") for p in sample_schemas()] + small
    disagreements = []

    @given(mutants(pool))
    @settings(max_examples=1000, suppress_health_check=[HealthCheck.too_slow])
    def agree(text: str) -> None:
        try:
            cedarpy.Schema.from_str(text)
            theirs = None
        except ValueError as error:
            theirs = str(error)
        try:
            Schema.from_str(text)
            ours = None
        except SchemaError as error:
            ours = error.message
        if (theirs is None) != (ours is None):
            disagreements.append((text, theirs, ours))

    agree()
    assert not disagreements, disagreements[:3]


def test_attribute_annotations_are_kept_but_not_compared() -> None:
    schema = Schema.from_str('entity E = { @doc("x") a: Long };')
    plain = Schema.from_str("entity E = { a: Long };")
    assert schema == plain
    attributes: Mapping[str, Attribute] = schema.entity_types["E"].shape.attributes
    assert attributes["a"].annotations == {"doc": "x"}
    assert '@doc("x")' in schema.to_cedarschema()


def test_schema_text_must_be_text() -> None:
    with pytest.raises(SchemaError, match="must be a string"):
        Schema.from_str(b"entity User;")  # type: ignore[arg-type]
