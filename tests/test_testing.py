"""Tests of the public Hypothesis helpers in :mod:`cedarlite.testing`."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from cedarlite import Entities, EntityUID, PolicySet, testing
from cedarlite.lang.ast import Expr, Policy
from cedarlite.lang.printer import print_expr, print_policies

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(testing.policies())
def test_policies_print_and_parse_back(policy: Policy) -> None:
    assert PolicySet.from_str(print_policies([policy]), strict=True).policies == (policy,)


@FAST
@given(testing.expressions(depth=3))
def test_expressions_print_and_parse_back(expr: Expr) -> None:
    text = f"permit(principal, action, resource) when {{ {print_expr(expr)} }};"
    assert PolicySet.from_str(text, strict=True)["policy0"].conditions[0].body == expr


@FAST
@given(testing.policy_sets())
def test_policy_sets_link_every_template_slot(ps: PolicySet) -> None:
    ids = [p.id for p in ps]
    assert len(ids) == len(set(ids))
    for p in ps:
        if p.template_id is not None:
            assert not p.is_template and ps[p.template_id].is_template


@FAST
@given(testing.entities())
def test_entities_load(doc: list) -> None:  # type: ignore[type-arg]
    assert len(Entities.from_json(doc)) == len(doc)


@FAST
@given(testing.requests())
def test_requests_use_universe_uids(request: dict) -> None:  # type: ignore[type-arg]
    uids = set(testing.DEFAULT_UNIVERSE.all_uids)
    for key in ("principal", "action", "resource"):
        assert EntityUID(**request[key]) in uids


def test_universe_for_collects_what_policies_mention() -> None:
    ps = PolicySet.from_str(
        'permit(principal == Acme::Emp::"e1", action == Acme::Action::"go", resource is Acme::Box)'
        ' when { resource.size > 3 && context.tier == "gold" && principal.hasTag("vip") };'
    )
    u = testing.universe_for(ps)
    assert EntityUID("Acme::Emp", "e1") in u.principals
    assert EntityUID("Acme::Action", "go") in u.actions
    assert "Acme::Box" in u.entity_types
    assert u.attributes["size"] == testing.ANY
    assert u.context["tier"] == testing.ANY
    assert u.tags["vip"] == testing.ANY


def test_assert_equivalent_accepts_rewrites() -> None:
    a = PolicySet.from_str(
        "permit(principal, action, resource) when { principal has age && principal.age > 17 } "
        "unless { context has n && context.n == 0 };"
    )
    b = PolicySet.from_str(
        "permit(principal, action, resource) when { principal has age } "
        "when { !(principal.age <= 17) && !(context has n && context.n == 0) };"
    )
    testing.assert_equivalent(a, b, settings=settings(max_examples=150, deadline=None))


def test_assert_equivalent_finds_a_counterexample() -> None:
    a = PolicySet.from_str('permit(principal in Group::"staff", action, resource);')
    b = PolicySet.from_str('permit(principal == User::"alice", action, resource);')
    with pytest.raises(AssertionError, match="decide differently"):
        testing.assert_equivalent(a, b, settings=settings(max_examples=300, deadline=None))
