"""Differential test against the Rust Cedar engine (cedarpy): same decision, reasons, errors.

Scenarios (policy set with templates and links, entity JSON, request) come from
:func:`cedarlite.testing.scenarios`. Each is printed to Cedar text and given to both engines;
cedarlite parses the printed text itself (and the parse must give back the generated AST).

Measured per scenario:

* **agreement**: decision, the set of reasons and the set of erroring policy ids are identical.
  The acceptance bar is 99.9%, and every disagreement must be in :data:`KNOWN_DIFFERENCES` (a
  documented cedarpy-side difference); anything else fails the test with a shrunk
  counterexample.
* **message agreement**: the error message of each erroring policy is identical, e.g.
  ``error while evaluating policy `policy0`: type error: expected long, got string``. Reported,
  and held above :data:`MESSAGE_FLOOR` so that a regression is noticed (it is 100% today; the
  exact wording of the common messages is pinned by ``tests/test_evaluator.py``).

``pytest -s tests/test_differential.py`` prints the counts. ``HYPOTHESIS_PROFILE=thorough``
runs many more scenarios with random seeds; ``CEDARLITE_DIFF_EXAMPLES=N`` sets the count.
"""

from __future__ import annotations

import os
import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cedarlite
from cedarlite import PolicySet, testing
from cedarlite.errors import CedarliteError

cedarpy = pytest.importorskip("cedarpy")

THOROUGH = os.environ.get("HYPOTHESIS_PROFILE") == "thorough"
EXAMPLES = int(os.environ.get("CEDARLITE_DIFF_EXAMPLES", 40_000 if THOROUGH else 2_000))
# `CEDARLITE_DIFF_ENGINES=reference` leaves the compiled engine out (e.g. while it is changing).
CHECK_COMPILED = "compiled" in os.environ.get("CEDARLITE_DIFF_ENGINES", "reference,compiled")
AGREEMENT_BAR = 0.999
MESSAGE_FLOOR = 0.98

_POLICY_ERROR = re.compile(r"error while evaluating policy `([^`]*)`: (.*)", re.S)


# ---------------------------------------------------------------------------------------------
# Running both engines


@dataclass(frozen=True)
class Outcome:
    """What an engine answered: decision, reasons, per-policy errors, other errors."""

    decision: str  # "Allow", "Deny" or "NoDecision" (input rejected)
    reasons: frozenset[str] = frozenset()
    errors: dict[str, str] = field(default_factory=dict)  # policy id -> message
    other: tuple[str, ...] = ()  # errors not about a policy (bad entities, parse errors)

    def key(self) -> tuple[str, frozenset[str], frozenset[str]]:
        """What must agree: decision, reasons, erroring policy ids."""
        return self.decision, self.reasons, frozenset(self.errors)


def run_cedarpy(sc: testing.Scenario) -> Outcome:
    """The Rust engine's answer."""
    try:
        ps = cedarpy.PolicySet.from_str(sc.text)
        for template_id, new_id, values in sc.links:
            ps = ps.with_linked(template_id, new_id, values)
    except ValueError as err:
        return Outcome("NoDecision", other=(f"parse: {err}",))
    resp = cedarpy.is_authorized(sc.request, ps, sc.entities)._authz_resp
    diag = resp.get("diagnostics", {})
    errors: dict[str, str] = {}
    other: list[str] = []
    for message in diag.get("errors", []):
        m = _POLICY_ERROR.fullmatch(message)
        if m and resp["decision"] != "NoDecision":
            errors[m.group(1)] = message
        else:
            other.append(message)
    return Outcome(resp["decision"], frozenset(diag.get("reason", [])), errors, tuple(other))


def cedarlite_policy_set(sc: testing.Scenario) -> PolicySet:
    """Parse the printed text (checking the round trip) and apply the links."""
    ps = PolicySet.from_str(sc.text, strict=True)
    generated = tuple(p for p in sc.policy_set if p.template_id is None)
    assert ps.policies == generated, "parse(print(ast)) != ast"
    for template_id, new_id, values in sc.links:
        ps = ps.link(template_id, new_id, values)
    return ps


def run_cedarlite(sc: testing.Scenario, ps: PolicySet, engine: str) -> Outcome:
    """cedarlite's answer with the given engine."""
    try:
        resp = cedarlite.is_authorized(sc.request, ps, sc.entities, engine=engine)
    except CedarliteError as err:
        return Outcome("NoDecision", other=(err.message,))
    return Outcome(
        resp.decision.value,
        frozenset(resp.reasons),
        {e.policy_id: str(e) for e in resp.errors},
    )


def compiled_engine_error() -> str | None:
    """Why the compiled engine cannot be used yet (``None`` when it can)."""
    try:
        cedarlite.is_authorized(
            {"principal": 'User::"a"', "action": 'Action::"a"', "resource": 'R::"r"'},
            PolicySet.from_str("permit(principal, action, resource);"),
            engine="compiled",
        )
    except (ImportError, ModuleNotFoundError, AttributeError, NotImplementedError) as err:
        return f"{type(err).__name__}: {err}"
    return None


# ---------------------------------------------------------------------------------------------
# Known differences on the cedarpy side


@dataclass(frozen=True)
class KnownDifference:
    """A documented disagreement where cedarlite follows the Cedar spec and cedarpy does not."""

    name: str
    reason: str
    applies: Callable[[testing.Scenario, Outcome, Outcome], bool]


KNOWN_DIFFERENCES: tuple[KnownDifference, ...] = ()
"""Each entry says why the Rust engine (as wrapped by cedarpy) is the one that is off. Empty:
every mismatch found so far was a cedarlite bug and has been fixed."""


def known_difference(sc: testing.Scenario, rust: Outcome, ours: Outcome) -> KnownDifference | None:
    for known in KNOWN_DIFFERENCES:
        if known.applies(sc, rust, ours):
            return known
    return None


# ---------------------------------------------------------------------------------------------
# The measurement


@dataclass
class Tally:
    """Counts printed at the end of the run."""

    scenarios: int = 0
    agree: int = 0
    known: Counter[str] = field(default_factory=Counter)
    messages_agree: int = 0
    with_errors: int = 0
    policies: int = 0
    policy_errors: int = 0
    error_messages: int = 0
    error_messages_agree: int = 0
    decisions: Counter[str] = field(default_factory=Counter)
    error_kinds: Counter[str] = field(default_factory=Counter)
    message_diffs: list[tuple[str, str]] = field(default_factory=list)
    compiled: int = 0


def _kind(message: str) -> str:
    m = _POLICY_ERROR.fullmatch(message)
    text = m.group(2) if m else message
    return re.sub(r"`[^`]*`|\d+", "_", text)[:70]


def _describe(sc: testing.Scenario, rust: Outcome, ours: Outcome, label: str) -> str:
    return (
        f"cedarlite ({label}) disagrees with cedarpy\n"
        f"--- policies ---\n{sc.text}\n--- links ---\n{sc.links}\n"
        f"--- request ---\n{sc.request}\n--- entities ---\n{sc.entities}\n"
        f"--- cedarpy ---\n{rust}\n--- cedarlite ---\n{ours}"
    )


def _compare(sc: testing.Scenario, rust: Outcome, ours: Outcome, label: str, tally: Tally) -> bool:
    """True when the outcomes agree; a known difference is counted; anything else fails."""
    if rust.key() == ours.key():
        return True
    known = known_difference(sc, rust, ours)
    if known is None:
        raise AssertionError(_describe(sc, rust, ours, label))
    tally.known[known.name] += 1
    return False


def test_differential_against_cedarpy() -> None:
    """Decision, reasons and error ids agree with cedarpy on >= 99.9% of scenarios."""
    compiled_reason = compiled_engine_error()
    if not CHECK_COMPILED:
        compiled_reason = "left out by CEDARLITE_DIFF_ENGINES"
    tally = Tally()
    started = time.perf_counter()

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(testing.scenarios())
    def check(sc: testing.Scenario) -> None:
        rust = run_cedarpy(sc)
        ps = cedarlite_policy_set(sc)
        ours = run_cedarlite(sc, ps, "reference")
        agreed = _compare(sc, rust, ours, "reference", tally)
        if compiled_reason is None:
            compiled = run_cedarlite(sc, ps, "compiled")
            assert compiled == ours, "compiled engine differs from the reference\n" + _describe(
                sc, rust, compiled, "compiled"
            )
            tally.compiled += 1
        tally.scenarios += 1
        tally.agree += agreed
        tally.decisions[rust.decision] += 1
        tally.policies += len(ps.active)
        tally.policy_errors += len(rust.errors)
        tally.with_errors += bool(rust.errors)
        for pid, message in rust.errors.items():
            tally.error_kinds[_kind(message)] += 1
            tally.error_messages += 1
            if ours.errors.get(pid) == message:
                tally.error_messages_agree += 1
            elif len(tally.message_diffs) < 20:
                tally.message_diffs.append((message, ours.errors.get(pid, "<none>")))
        tally.messages_agree += rust.errors == ours.errors
        for message in rust.other:
            tally.error_kinds["input rejected: " + _kind(message.split(": ")[-1])] += 1

    check()
    elapsed = time.perf_counter() - started
    n = max(tally.scenarios, 1)
    print(
        f"\ndifferential vs cedarpy: {tally.scenarios} scenarios in {elapsed:.1f}s "
        f"({tally.policies} policies evaluated)\n"
        f"  decisions: {dict(tally.decisions)}; scenarios with errors: {tally.with_errors}; "
        f"policy error rate: {tally.policy_errors / max(tally.policies, 1):.1%}\n"
        f"  decision+reasons+error ids agree: {tally.agree}/{tally.scenarios} "
        f"({tally.agree / n:.3%}); known differences: {dict(tally.known)}\n"
        f"  error messages agree: {tally.error_messages_agree}/{tally.error_messages} "
        f"({tally.error_messages_agree / max(tally.error_messages, 1):.2%}); "
        f"scenarios with all error messages identical: {tally.messages_agree}/{tally.scenarios}\n"
        f"  compiled engine: "
        + (
            f"checked on {tally.compiled} scenarios"
            if compiled_reason is None
            else f"not checked ({compiled_reason})"
        )
    )
    for kind, count in tally.error_kinds.most_common(12):
        print(f"    {count:6d}  {kind}")
    for rust_msg, our_msg in tally.message_diffs:
        print(f"  message differs:\n    cedarpy:   {rust_msg}\n    cedarlite: {our_msg}")
    assert tally.agree / n >= AGREEMENT_BAR
    assert tally.error_messages_agree >= MESSAGE_FLOOR * tally.error_messages


def test_compiled_engine_is_checked() -> None:
    """The differential test also covers ``engine="compiled"`` once the compiler exists."""
    reason = compiled_engine_error()
    if not CHECK_COMPILED:
        pytest.skip("compiled engine left out by CEDARLITE_DIFF_ENGINES")
    if reason is not None:
        pytest.skip(f"compiled engine not available yet, only the reference was compared: {reason}")


# ---------------------------------------------------------------------------------------------
# Malformed and unusual entity / context JSON: both engines reject or accept it alike


_U = {"type": "User", "id": "a"}

ODD_JSON_VALUES: tuple[object, ...] = (
    None,
    1.5,
    2**63,
    -(2**63),
    -(2**63) - 1,
    [],
    {},
    "",
    True,
    [None],
    {"a": None},
    {"__expr": "1"},
    {"__expr": 1},
    {"__entity": _U},
    {"__entity": {"type": "User"}},
    {"__entity": {"type": "User ", "id": "a"}},
    {"__entity": {"type": "if", "id": "a"}},
    {"__entity": {"type": "User", "id": 1}},
    {"__entity": _U, "x": 1},
    {"type": "User", "id": "a"},
    {"__extn": {"fn": "ip", "arg": "10.0.0.1"}},
    {"__extn": {"fn": "ip", "arg": "bad"}},
    {"__extn": {"fn": "ip"}},
    {"__extn": 1},
    {"__extn": {"fn": "nope", "arg": "1"}},
    {"__extn": {"fn": "ipaddr", "arg": "1.2.3.4"}},
    {"__extn": {"fn": "ip", "args": []}},
    {"__extn": {"fn": "decimal", "arg": 5}},
    {"__extn": {"fn": "ip", "args": "x"}},
    {"__extn": {"fn": "offset", "args": [{"__extn": {"fn": "datetime", "arg": "2024-01-01"}}]}},
    {"__extn": {"fn": "isIpv4", "arg": {"__extn": {"fn": "ip", "arg": "::1"}}}},
)


def _paths(doc: object, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _paths(v, (*prefix, i))
    return out


@st.composite
def _mutated_json(draw: st.DrawFn, doc: object) -> object:
    """``doc`` with one node replaced, removed or duplicated."""
    import copy

    doc = copy.deepcopy(doc)
    paths = _paths(doc)[1:]
    if not paths:
        return doc
    path = draw(st.sampled_from(paths))
    parent = doc
    for key in path[:-1]:
        parent = parent[key]  # type: ignore[index]
    key = path[-1]
    action = draw(st.integers(0, 3))
    if action == 0 and isinstance(parent, dict):
        del parent[key]
    elif action == 1 and isinstance(parent, list):
        parent.append(copy.deepcopy(parent[key]))
    else:
        parent[key] = draw(st.sampled_from(ODD_JSON_VALUES))  # type: ignore[index]
    return doc


@st.composite
def _malformed_scenarios(draw: st.DrawFn) -> testing.Scenario:
    sc = draw(testing.scenarios(max_policies=3, depth=2))
    if draw(st.booleans()):
        return testing.Scenario(sc.policy_set, draw(_mutated_json(sc.entities)), sc.request)
    context = draw(_mutated_json(sc.request["context"]))
    return testing.Scenario(sc.policy_set, sc.entities, {**sc.request, "context": context})


@settings(
    max_examples=max(EXAMPLES // 5, 50),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(_malformed_scenarios())
def test_malformed_json_agrees(sc: testing.Scenario) -> None:
    """Rejecting or accepting odd entity/context JSON, and then the decision, agree."""
    rust = run_cedarpy(sc)
    ps = cedarlite_policy_set(sc)
    for engine in ("reference",):
        ours = run_cedarlite(sc, ps, engine)
        assert (rust.decision == "NoDecision") == (ours.decision == "NoDecision"), _describe(
            sc, rust, ours, engine
        )
        if rust.decision != "NoDecision":
            assert rust.key() == ours.key(), _describe(sc, rust, ours, engine)


_ACTION = {"type": "Action", "id": "read"}
EDGE_ENTITY_DOCS: dict[str, list[dict[str, object]]] = {
    "action with a non-action parent": [
        {"uid": _ACTION, "attrs": {}, "parents": [{"type": "Group", "id": "g"}]}
    ],
    "action with an action parent": [
        {"uid": _ACTION, "attrs": {}, "parents": [{"type": "NS::Action", "id": "g"}]}
    ],
    "cycle": [{"uid": _U, "attrs": {}, "parents": [_U]}],
    "duplicate uid, same contents": [{"uid": _U, "attrs": {}, "parents": []}] * 2,
    "duplicate uid, other contents": [
        {"uid": _U, "attrs": {}, "parents": []},
        {"uid": _U, "attrs": {"x": 1}, "parents": []},
    ],
    "tags null": [{"uid": _U, "attrs": {}, "parents": [], "tags": None}],
    "tags list": [{"uid": _U, "attrs": {}, "parents": [], "tags": []}],
    "uid escape with extra keys": [{"uid": {"__entity": _U, "x": 1}, "attrs": {}, "parents": []}],
    "uid type not normalized": [{"uid": {"type": "User ", "id": "a"}, "attrs": {}, "parents": []}],
    "uid type reserved": [{"uid": {"type": "if", "id": "a"}, "attrs": {}, "parents": []}],
    "missing attrs": [{"uid": _U, "parents": []}],
    "missing parents": [{"uid": _U, "attrs": {}}],
    "extra field": [{"uid": _U, "attrs": {}, "parents": [], "foo": 1}],
    **{
        f"attribute {v!r}": [{"uid": _U, "attrs": {"x": v}, "parents": []}] for v in ODD_JSON_VALUES
    },
}


@pytest.mark.parametrize("doc", EDGE_ENTITY_DOCS.values(), ids=list(EDGE_ENTITY_DOCS))
def test_edge_entity_json_agrees(doc: list[dict[str, object]]) -> None:
    """Hand-picked entity JSON corner cases load (or fail to load) alike."""
    ps = PolicySet.from_str("permit(principal, action, resource) when { principal.x == 1 };")
    request = {"principal": _U, "action": _ACTION, "resource": _U, "context": {}}
    sc = testing.Scenario(ps, doc, request)  # type: ignore[arg-type]
    rust, ours = run_cedarpy(sc), run_cedarlite(sc, ps, "reference")
    assert rust.key() == ours.key(), _describe(sc, rust, ours, "reference")
