"""Policy-set equivalence: planted differences are found, real refactorings are not reported.

Every planted difference is searched twice: as ``check_equivalence`` does by default (the
exhaustive enumeration when the space is finite and small) and with the enumeration turned off
(``exhaustive_limit=0``: Hypothesis alone over the same representatives). ``pytest -s`` prints
how many requests each needed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import cedarlite
from cedarlite import ParseError, PolicySet, Schema
from cedarlite.testing import Equivalence, assert_equivalent, check_equivalence, find_difference

ROOT = Path(__file__).resolve().parents[1]
P = PolicySet.from_str
PERMIT_ALL = "permit (principal, action, resource);\n"

SCHEMA = Schema.from_str(
    """
    entity User = {age: Long, tags: Set<String>, level: Long};
    entity Team;
    entity Doc = {path: String, owner: User, secret: Bool};
    action read, write, delete appliesTo {
      principal: User, resource: Doc,
      context: {a: Bool, b: Bool, n: Long, ok: Bool, blocked: Bool, suspended: Bool}
    };
    """
)


def _template(target: str) -> PolicySet:
    return P("permit (principal == ?principal, action, resource);").link(
        "policy0", "link0", {"?principal": target}
    )


PLANTED: dict[str, tuple[PolicySet, PolicySet]] = {
    "dropped forbid": (
        P(PERMIT_ALL + 'forbid (principal, action == Action::"delete", resource);'),
        P(PERMIT_ALL),
    ),
    "widened like": (
        P(PERMIT_ALL + 'forbid (principal, action, resource) when { resource.path like "*.pem" };'),
        P(PERMIT_ALL + 'forbid (principal, action, resource) when { resource.path like "*pem" };'),
    ),
    "changed action list": (
        P('permit (principal, action in [Action::"read", Action::"list"], resource);'),
        P('permit (principal, action in [Action::"read", Action::"write"], resource);'),
    ),
    "< vs <= at the literal": (
        P("permit (principal, action, resource) when { context.n < 5 };"),
        P("permit (principal, action, resource) when { context.n <= 5 };"),
    ),
    ">= 18 vs > 18": (
        P("permit (principal, action, resource) when { principal.age >= 18 };"),
        P("permit (principal, action, resource) when { principal.age > 18 };"),
    ),
    "changed unless": (
        P("permit (principal, action, resource) unless { context.blocked };"),
        P("permit (principal, action, resource) unless { context.suspended };"),
    ),
    "template linked to another entity": (_template('User::"alice"'), _template('User::"bob"')),
    "added is constraint": (
        P(PERMIT_ALL),
        P("permit (principal, action, resource is Doc);"),
    ),
    "containsAny vs containsAll": (
        P('permit (principal, action, resource) when { principal.tags.containsAny(["a", "b"]) };'),
        P('permit (principal, action, resource) when { principal.tags.containsAll(["a", "b"]) };'),
    ),
    'in Team::"red" vs in Team::"blue"': (
        P('permit (principal in Team::"red", action, resource);'),
        P('permit (principal in Team::"blue", action, resource);'),
    ),
    "a forbid that can error": (
        P(PERMIT_ALL + "forbid (principal, action, resource) when { context.risky };"),
        P(
            PERMIT_ALL
            + "forbid (principal, action, resource) unless { context has risky && !context.risky };"
        ),
    ),
    "|| split while the left side can error": (
        P("permit (principal, action, resource) when { context.a || context.b };"),
        P(
            "permit (principal, action, resource) when { context.a };\n"
            "permit (principal, action, resource) when { context.b };"
        ),
    ),
}

NEEDED: dict[str, tuple[int, int]] = {}


@pytest.mark.parametrize("name", list(PLANTED))
def test_planted_differences_are_found(name: str) -> None:
    a, b = PLANTED[name]
    default = check_equivalence(a, b)
    sampled = check_equivalence(a, b, exhaustive_limit=0)
    for result in (default, sampled):
        ce = result.counterexample
        assert ce is not None, f"{name}: {result.summary()}"
        # The counterexample is ready to run: it reproduces both decisions.
        assert cedarlite.is_authorized(ce.request, a, ce.entities).decision is ce.first.decision
        assert cedarlite.is_authorized(ce.request, b, ce.entities).decision is ce.second.decision
        assert ce.first.decision is not ce.second.decision
    assert not sampled.exhaustive
    NEEDED[name] = (default.checked, sampled.checked)


def test_report_examples_needed(capsys: pytest.CaptureFixture[str]) -> None:
    if len(NEEDED) < len(PLANTED):
        pytest.skip("run with the planted-difference tests")
    with capsys.disabled():
        print("\nrequests needed to find each planted difference (default, Hypothesis only):")
        for name, (default, sampled) in NEEDED.items():
            print(f"  {name:<40} {default:>5} {sampled:>5}")
        slowest = max(NEEDED.items(), key=lambda kv: kv[1][1])
        print(f"  slowest with Hypothesis alone: {slowest[0]} ({slowest[1][1]} requests)")


def test_counterexample_is_minimal_and_readable() -> None:
    a, b = PLANTED[">= 18 vs > 18"]
    ce = find_difference(a, b)
    assert ce is not None
    assert ce.entities == [{"uid": ce.request["principal"], "attrs": {"age": 18}, "parents": []}]
    assert ce.request["context"] == {}
    text = ce.render(("old", "new"))
    assert '{"age": 18}' in text
    assert "old: ALLOW by policy0" in text
    assert "new: DENY (no permit applies)" in text


def test_errors_are_part_of_the_decision() -> None:
    ce = find_difference(*PLANTED["|| split while the left side can error"])
    assert ce is not None
    assert [e.policy_id for e in ce.first.errors] == ["policy0"]
    assert "errors: policy0: record does not have the attribute `a`" in ce.render()


# ---------------------------------------------------------------------------------------------
# Refactorings that keep every decision


def _exact(result: Equivalence) -> None:
    assert result.equivalent and result.exhaustive, result.summary()
    assert (
        result.proved
        or result.summary() == f"equivalent (exhaustive over {result.checked} requests)"
    )


def test_reordering_is_equivalent() -> None:
    a = P(
        'permit (principal in Team::"red", action, resource) when { context.ok };\n'
        "forbid (principal, action, resource) when { context.n > 3 };"
    )
    b = P(
        "forbid (principal, action, resource) when { context.n > 3 };\n"
        'permit (principal in Team::"red", action, resource) when { context.ok };'
    )
    _exact(check_equivalence(a, b))


def test_splitting_an_or_under_a_schema_that_makes_both_sides_total() -> None:
    a = P("permit (principal, action, resource) when { context.a || principal.age >= 18 };")
    b = P(
        "permit (principal, action, resource) when { context.a };\n"
        "permit (principal, action, resource) when { principal.age >= 18 };"
    )
    _exact(check_equivalence(a, b, schema=SCHEMA))
    assert find_difference(a, b) is not None  # without the schema the left side can error


def test_action_list_vs_two_policies() -> None:
    a = P('permit (principal, action in [Action::"read", Action::"write"], resource);')
    b = P(
        'permit (principal, action in Action::"read", resource);\n'
        'permit (principal, action in Action::"write", resource);'
    )
    _exact(check_equivalence(a, b))
    # With `==` the two differ on actions that are members of `read` (action groups), unless a
    # schema says there are none.
    c = P(
        'permit (principal, action == Action::"read", resource);\n'
        'permit (principal, action == Action::"write", resource);'
    )
    assert find_difference(a, c) is not None
    _exact(check_equivalence(a, c, schema=SCHEMA))


def test_de_morgan_on_unless() -> None:
    a = P("permit (principal, action, resource) unless { context.blocked || context.suspended };")
    b = P("permit (principal, action, resource) when { !context.blocked && !context.suspended };")
    _exact(check_equivalence(a, b))


def test_schema_restricts_the_search_to_well_typed_inputs() -> None:
    a = P("permit (principal, action, resource) when { context.n > 3 || context.ok };")
    b = P("permit (principal, action, resource) when { context.ok || context.n > 3 };")
    ce = find_difference(a, b)  # without a schema `context.n` may be a string
    assert ce is not None and ce.first.errors
    _exact(check_equivalence(a, b, schema=SCHEMA))


def test_compiled_openclaw_config_vs_the_shipped_policies() -> None:
    from cedarlite.tools.catalog import BUNDLE_MCP, ToolCatalog
    from cedarlite.tools.compile import compile_config

    catalog = ToolCatalog.core({"name": "server__tool", "pluginId": BUNDLE_MCP})
    compiled = compile_config({"tools": {"profile": "coding"}}, catalog)
    names = ["tools-base", "owner-only", "profile-coding", "sandbox-defaults", "subagent-defaults"]
    files = [ROOT / "policies" / f"{n}.cedar" for n in names]
    store = catalog.entities
    _exact(check_equivalence(compiled, PolicySet.from_files(files), entities=store))
    # Leaving out the sandbox defaults is a difference, over the same store.
    fewer = PolicySet.from_files([f for f in files if "sandbox" not in f.name])
    result = check_equivalence(compiled, fewer, entities=store)
    ce = result.counterexample
    assert ce is not None and ce.request["context"]["sandboxed"] is True
    assert "other entities of the store" in ce.render()


def test_inexact_searches_say_how_much_they_checked() -> None:
    a = P(
        PERMIT_ALL + 'forbid (principal, action, resource) when { resource.path like "*.pem" || '
        'resource.path like "*.key" };'
    )
    b = P(
        PERMIT_ALL + 'forbid (principal, action, resource) when { resource.path like "*.pem" };\n'
        'forbid (principal, action, resource) when { resource.path like "*.key" };'
    )
    result = check_equivalence(a, b, max_examples=200)
    assert result.equivalent and not result.exhaustive
    assert 0 < result.checked <= 200
    assert result.summary().startswith(f"no difference found in {result.checked} requests searched")
    assert "like" in result.why_not
    assert assert_equivalent(a, b, max_examples=50).equivalent


def test_assert_equivalent_raises_with_the_counterexample() -> None:
    with pytest.raises(AssertionError, match="the policy sets decide differently"):
        assert_equivalent(*PLANTED["dropped forbid"])


def test_bad_input_is_a_cedarlite_error() -> None:
    with pytest.raises(ParseError):
        check_equivalence("permit (principal, action, resource) when { 1 + };", PERMIT_ALL)


def test_testing_without_hypothesis_says_how_to_install_it() -> None:
    code = "import sys; sys.modules['hypothesis'] = None; import cedarlite.testing"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 1
    assert "cedarlite.testing needs Hypothesis" in proc.stderr
    assert "pip install 'cedarlite[test]'" in proc.stderr


# ---------------------------------------------------------------------------------------------
# Soundness of "exhaustive": an independent random search never contradicts it

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from cedarlite import testing  # noqa: E402

_ATOMS = (
    "context.n {op} {k}",
    "principal.age {op} {k}",
    "context.flag",
    "principal has age",
    'principal in Group::"g{k}"',
    "resource is Doc",
    'context.tags.contains("t{k}")',
    'context.tags.containsAny(["t{k}", "t2"])',
    'resource.label == "l{k}"',
    'action in [Action::"read", Action::"a{k}"]',
)
_OPS = ("<", "<=", ">", ">=", "==", "!=")


@st.composite
def _conditions(draw: st.DrawFn, depth: int = 2) -> str:
    if depth == 0 or draw(st.booleans()):
        atom = draw(st.sampled_from(_ATOMS))
        return atom.format(op=draw(st.sampled_from(_OPS)), k=draw(st.integers(0, 3)))
    left, right = draw(_conditions(depth - 1)), draw(_conditions(depth - 1))
    return draw(st.sampled_from((f"({left} && {right})", f"({left} || {right})", f"!({left})")))


@st.composite
def _simple_sets(draw: st.DrawFn) -> str:
    out = []
    for _ in range(draw(st.integers(1, 3))):
        effect = draw(st.sampled_from(("permit", "permit", "forbid")))
        scope = draw(
            st.sampled_from(("principal", 'principal in Group::"g1"', "principal is User"))
        )
        kind = draw(st.sampled_from(("when", "unless")))
        out.append(f"{effect} ({scope}, action, resource) {kind} {{ {draw(_conditions())} }};")
    return "\n".join(out)


@st.composite
def _variants(draw: st.DrawFn) -> tuple[str, str]:
    """A policy set and a variant: reordered, with a policy repeated, or a digit changed (the
    last is a difference more often than not)."""
    a = draw(_simple_sets())
    lines = a.split("\n")
    how = draw(st.sampled_from(("reorder", "repeat", "digit", "digit")))
    if how == "reorder":
        b = "\n".join(draw(st.permutations(lines)))
    elif how == "repeat":
        b = a + "\n" + draw(st.sampled_from(lines))
    else:
        digits = [i for i, ch in enumerate(a) if ch in "0123"]
        if not digits:
            return a, a
        i = draw(st.sampled_from(digits))
        b = a[:i] + draw(st.sampled_from("0123")) + a[i + 1 :]
    return a, b


EXHAUSTIVE_CHECKS: list[bool] = []
SOUNDNESS_EXAMPLES = 400 if os.environ.get("HYPOTHESIS_PROFILE") == "thorough" else 50


@settings(max_examples=SOUNDNESS_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(_variants(), st.data())
def test_exhaustive_equivalence_is_never_contradicted(
    pair: tuple[str, str], data: st.DataObject
) -> None:
    a, b = P(pair[0]), P(pair[1])
    result = check_equivalence(a, b, exhaustive_limit=2_000, max_examples=20)
    if result.counterexample is not None or not result.exhaustive:
        return
    EXHAUSTIVE_CHECKS.append(True)
    universe = testing.universe_for(a, b)
    store = cedarlite.Entities.from_json(data.draw(testing.entities(universe)))
    for _ in range(20):
        request = data.draw(testing.requests(universe))
        ra = cedarlite.is_authorized(request, a, store)
        rb = cedarlite.is_authorized(request, b, store)
        assert ra.decision is rb.decision, (pair, request, store.to_json())


def test_the_soundness_check_ran() -> None:
    if not EXHAUSTIVE_CHECKS:
        pytest.skip("run with test_exhaustive_equivalence_is_never_contradicted")
    assert len(EXHAUSTIVE_CHECKS) >= 5
