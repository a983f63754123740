"""Cedar's JSON policy format (EST): shapes, errors, and a differential test against cedarpy.

The differential property: for every policy set the differential generators produce, the JSON
cedarlite writes is identical (as parsed JSON) to what the Rust engine writes for the same text,
and reading it back (``from_json``) decides every generated request like the original, in
cedarlite and, through Rust's JSON -> text translation, as cedarlite parses Rust's text.
"""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import HealthCheck, given, settings

import cedarlite
from cedarlite import ParseError, PolicySet, testing
from cedarlite.lang.parse import MAX_NESTING

cedarpy = pytest.importorskip("cedarpy")

THOROUGH = os.environ.get("HYPOTHESIS_PROFILE") == "thorough"
EXAMPLES = int(os.environ.get("CEDARLITE_EST_EXAMPLES", 3_000 if THOROUGH else 300))


def test_shapes_match_the_documented_format() -> None:
    ps = PolicySet.from_str(
        '@id("p") permit (principal == User::"a", action in [Action::"r", Action::"w"],\n'
        "resource is Doc)\n"
        'when { context.n >= 18 && resource.name like "*.pem" } unless { principal has a.b };\n'
        "forbid (principal in ?principal, action, resource);"
    ).link("policy1", "l1", {"?principal": 'Group::"g"'})
    doc = ps.to_json()
    assert set(doc) == {"templates", "staticPolicies", "templateLinks"}
    p = doc["staticPolicies"]["policy0"]
    assert p["principal"] == {"op": "==", "entity": {"type": "User", "id": "a"}}
    assert p["action"] == {
        "op": "in",
        "entities": [{"type": "Action", "id": "r"}, {"type": "Action", "id": "w"}],
    }
    assert p["resource"] == {"op": "is", "entity_type": "Doc"}
    assert p["annotations"] == {"id": "p"}
    when = p["conditions"][0]["body"]["&&"]
    assert when["left"] == {
        ">=": {"left": {".": {"left": {"Var": "context"}, "attr": "n"}}, "right": {"Value": 18}}
    }
    assert when["right"]["like"]["pattern"] == [
        "Wildcard",
        {"Literal": "."},
        {"Literal": "p"},
        {"Literal": "e"},
        {"Literal": "m"},
    ]
    assert doc["templates"]["policy1"]["principal"] == {"op": "in", "slot": "?principal"}
    assert doc["templateLinks"] == [
        {
            "templateId": "policy1",
            "newId": "l1",
            "values": {"?principal": {"type": "Group", "id": "g"}},
        }
    ]
    back = PolicySet.from_json(json.dumps(doc))
    assert back.to_json() == doc
    assert back["l1"].links == ps["l1"].links


def test_single_policy_objects_and_missing_keys() -> None:
    one = {
        "effect": "forbid",
        "principal": {"op": "All"},
        "action": {"op": "==", "entity": {"__entity": {"type": "Action", "id": "x"}}},
        "resource": {"op": "All"},
    }
    ps = PolicySet.from_json(one)
    assert [p.id for p in ps] == ["policy0"]
    assert ps.to_cedar().startswith("forbid (")
    assert len(PolicySet.from_json({"staticPolicies": {}})) == 0


def test_extended_has_and_values() -> None:
    body = {
        "&&": {
            "left": {"has": {"left": {"Var": "principal"}, "attr": ["a", "b"]}},
            "right": {
                "==": {
                    "left": {"Value": {"k": [1, {"__entity": {"type": "A", "id": "b"}}]}},
                    "right": {"Value": {"__extn": {"fn": "ip", "arg": "10.0.0.1"}}},
                }
            },
        }
    }
    doc = {"staticPolicies": {"p": _policy(body)}, "templates": {}, "templateLinks": []}
    text = PolicySet.from_json(doc).to_cedar()
    assert 'principal has a.b && {k: [1, A::"b"]} == ip("10.0.0.1")' in text
    odd = _policy({"has": {"left": {"Var": "context"}, "attr": ["a b", "c"]}})
    assert 'context has "a b" && context["a b"] has c' in PolicySet.from_json(odd).to_cedar()


def _policy(body: object) -> dict[str, object]:
    return {
        "effect": "permit",
        "principal": {"op": "All"},
        "action": {"op": "All"},
        "resource": {"op": "All"},
        "conditions": [{"kind": "when", "body": body}],
    }


@pytest.mark.parametrize(
    ("doc", "message", "line"),
    [
        (
            '{"staticPolicies": {"p": {"effect": "allow", "principal": {"op": "All"},\n'
            ' "action": {"op": "All"}, "resource": {"op": "All"}}}}',
            "`staticPolicies.p.effect`: expected `permit` or `forbid`, got `allow`",
            1,
        ),
        (
            '{"staticPolicies": {"p": {"effect": "permit", "principal": {"op": "All"},\n'
            ' "action": {"op": "All"},\n "resource": {"op": "All"},\n'
            ' "conditions": [{"kind": "when", "body": {"Vr": "context"}}]}}}',
            "unknown operator or function `Vr`",
            4,
        ),
        (
            '{"staticPolicies": {}, "templatez": {}}',
            "unknown key `templatez` in policy set",
            1,
        ),
        (
            '{"staticPolicies": {"p": {"effect": "permit", "principal": {"op": "==", '
            '"slot": "?principal"}, "action": {"op": "All"}, "resource": {"op": "All"}}}}',
            "a template has slots; put it under `templates`",
            1,
        ),
        (
            '{"effect": "permit", "principal": {"op": "All"}, "action": {"op": "==", '
            '"entity": {"type": "User", "id": "x"}}, "resource": {"op": "All"}}',
            "expected an action (type `Action` or `NS::Action`)",
            1,
        ),
        (
            '{"effect": "permit", "principal": {"op": "All"}, "action": {"op": "All"},'
            ' "resource": {"op": "All"}, "conditions": [{"kind": "when", "body": '
            '{"Value": 9223372036854775808}}]}',
            "does not fit in 64 bits",
            1,
        ),
        (
            '{"effect": "permit", "principal": {"op": "All"}, "action": {"op": "All"},'
            ' "resource": {"op": "All"}, "conditions": [{"kind": "when", "body": '
            '{"Slot": "?principal"}}]}',
            "template slots are only allowed in the principal and resource scope",
            1,
        ),
        (
            '{"templateLinks": [{"templateId": "t", "newId": "x", "values": {}}]}',
            "no template with id `t`",
            1,
        ),
    ],
)
def test_errors_name_the_json_path_line_and_column(doc: str, message: str, line: int) -> None:
    with pytest.raises(ParseError) as info:
        PolicySet.from_json(doc, "p.cedar.json")
    err = info.value
    assert message in err.message
    assert err.source == "p.cedar.json" and err.line == line
    assert "^" in str(err)


def test_did_you_mean_and_dialect_methods() -> None:
    with pytest.raises(ParseError) as info:
        PolicySet.from_json(_policy({"containsAl": [{"Set": []}, {"Set": []}]}))
    assert info.value.help == "did you mean `containsAll`?"
    dialect = _policy({"startsWith": [{"Value": "git status"}, {"Value": "git"}]})
    assert "startsWith" in PolicySet.from_json(dialect).to_cedar()
    with pytest.raises(ParseError, match="unknown operator or function `startsWith`"):
        PolicySet.from_json(dialect, strict=True)


def test_hostile_input_is_refused_cleanly() -> None:
    deep: dict[str, object] = {"Value": True}
    for _ in range(MAX_NESTING + 100):
        deep = {"!": {"arg": deep}}
    with pytest.raises(ParseError, match="nested too deeply"):
        PolicySet.from_json(_policy(deep))
    text = "[" * 100_000 + "]" * 100_000
    with pytest.raises(ParseError, match=r"nested too deeply|expected a policy set"):
        PolicySet.from_json(text)
    for junk in ("", "null", "[]", "{}", '{"effect": []}', '{"staticPolicies": []}', b"\xff"):
        with pytest.raises(ParseError):
            PolicySet.from_json(junk)
    with pytest.raises(ParseError, match="duplicate key"):
        PolicySet.from_json('{"staticPolicies": {}, "staticPolicies": {}}')


# ---------------------------------------------------------------------------------------------
# Differential


def _decisions(ps: PolicySet, sc: testing.Scenario) -> tuple[str, frozenset[str], frozenset[str]]:
    resp = cedarlite.is_authorized(sc.request, ps, sc.entities, engine="reference")
    return resp.decision.value, frozenset(resp.reasons), frozenset(e.policy_id for e in resp.errors)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(testing.scenarios())
def test_json_matches_cedarpy_and_round_trips(sc: testing.Scenario) -> None:
    text = sc.text
    parsed = PolicySet.from_str(text, strict=True)
    mine = parsed.to_json()
    assert mine == json.loads(cedarpy.policies_to_json_str(text))
    # Reading our JSON back decides like the original, links included.
    original = sc.policy_set
    back = PolicySet.from_json(json.dumps(original.to_json()), strict=True)
    assert back.to_json() == original.to_json()
    assert _decisions(back, sc) == _decisions(original, sc)
    # Rust reads our JSON, and its Cedar text decides like ours (Rust orders the policies its
    # own way, so the positional ids of its text differ: compare decisions and counts).
    rust_text = cedarpy.policies_from_json_str(json.dumps(mine))
    rust = _decisions(PolicySet.from_str(rust_text, strict=True), sc)
    ours = _decisions(parsed, sc)
    assert (rust[0], len(rust[1]), len(rust[2])) == (ours[0], len(ours[1]), len(ours[2]))
