"""The compiled Cedar: readable, round-tripping, bound to its catalog, decided by the engine."""

from __future__ import annotations

from typing import Any

import pytest

import cedarlite
from cedarlite import Decision, PolicySet
from cedarlite.lang.printer import print_policy
from cedarlite.tools import ToolCatalog, ToolPolicySet, compile_config
from cedarlite.tools.resolve import ENGINE, RunContext, tool_policy

CONFIG: dict[str, Any] = {
    "tools": {
        "allow": ["group:fs", "BASH", "lobster"],
        "deny": ["write"],
        "byProvider": {"openai": {"deny": ["web_*"]}, "openai/gpt-5": {}},
    },
    "agents": {"list": [{"id": "coder", "tools": {"profile": "coding", "alsoAllow": ["opt"]}}]},
}
TOOLS: list[dict[str, Any]] = [
    *({"name": n} for n in ["read", "write", "apply_patch", "exec", "web_search", "web_fetch"]),
    {"name": "lobster", "pluginId": "lobster"},
    {"name": "lobster_admin", "pluginId": "lobster", "ownerOnly": True},
    {"name": "opt", "pluginId": "extras", "optional": True},
]


def policy_text(compiled: PolicySet, policy_id: str) -> str:
    """The policy's Cedar text, conditions on one line (the formatter wraps long ones)."""
    (policy,) = [p for p in compiled if p.annotations.get("id") == policy_id]
    return print_policy(policy, width=10_000)


@pytest.fixture(scope="module")
def compiled() -> ToolPolicySet:
    return compile_config(CONFIG, ToolCatalog.from_tools(TOOLS))


def test_a_deny_is_a_forbid_on_its_actions_with_the_write_link(compiled: ToolPolicySet) -> None:
    assert policy_text(compiled, "tools.deny") == (
        '@id("tools.deny")\n@layer("tools.allow")\n@entries("write")\n'
        "forbid (\n  principal,\n"
        '  action in [Action::"write", Action::"apply_patch"],\n  resource\n);'
    )


def test_an_allowlist_is_a_forbid_unless_and_groups_stay_groups(compiled: ToolPolicySet) -> None:
    # group:fs is the group action; BASH is exec; the plugin id "lobster" is its tools, one of
    # which is owner-only and so enters the pipeline only for owners.
    assert policy_text(compiled, "tools.allow").endswith(
        'unless { action in [Action::"group:fs", Action::"exec", Action::"lobster"] || '
        'context.senderIsOwner && action == Action::"lobster_admin" };'
    )


def test_by_provider_keys_become_context_conditions(compiled: ToolPolicySet) -> None:
    text = policy_text(compiled, "tools.byProvider.openai.deny")
    assert 'action in [Action::"web_search", Action::"web_fetch"]' in text  # the glob, expanded
    assert text.endswith(
        'when { context.provider == "openai" && '
        '!["openai/gpt-5"].contains(context.providerModel) };'
    )


def test_agent_steps_are_scoped_to_the_principal(compiled: ToolPolicySet) -> None:
    text = policy_text(compiled, "agents.coder.tools.profile")
    assert 'principal == Agent::"coder"' in text and '@profile("coding")' in text
    assert "when" not in text  # the principal is in the scope, nothing left to test


def test_optional_tools_load_where_an_explicit_allowlist_names_them(
    compiled: ToolPolicySet,
) -> None:
    assert policy_text(compiled, "plugins.optional/opt").endswith(
        'resource in Tool::"opt"\n)\nunless { principal == Agent::"coder" };'
    )


def test_to_cedar_round_trips(compiled: ToolPolicySet) -> None:
    assert PolicySet.from_str(compiled.to_cedar()) == PolicySet(compiled.policies)


def test_the_compiled_set_records_its_catalog(compiled: ToolPolicySet) -> None:
    assert isinstance(compiled, PolicySet)
    assert compiled.catalog_fingerprint == ToolCatalog.from_tools(TOOLS).fingerprint
    assert compiled.plan.catalog.fingerprint == compiled.catalog_fingerprint


def test_a_new_catalog_means_a_new_compilation() -> None:
    cfg = {"tools": {"deny": ["web_*"]}}
    small = tool_policy(cfg, [{"name": "web_search"}])
    assert tool_policy(cfg, [{"name": "web_search"}]) is small  # cached
    bigger = tool_policy(cfg, [{"name": "web_search"}, {"name": "web_fetch"}])
    assert bigger.policies.catalog_fingerprint != small.policies.catalog_fingerprint
    assert (
        'Action::"web_fetch"' in bigger.to_cedar() and 'Action::"web_fetch"' not in small.to_cedar()
    )


def test_the_public_engine_api_decides_with_the_compiled_set(compiled: ToolPolicySet) -> None:
    catalog = compiled.plan.catalog
    run = RunContext.of({"provider": "OpenAI", "model": "gpt-4.1"}, compiled.plan.config)

    def decide(tool: str) -> Decision:
        request = {
            "principal": 'Agent::"main"',
            "action": f'Action::"{tool}"',
            "resource": f'Tool::"{tool}"',
            "context": dict(run.record()),
        }
        return cedarlite.is_authorized(request, compiled, catalog.entities, engine=ENGINE).decision

    assert decide("read") is Decision.ALLOW
    assert decide("write") is Decision.DENY  # tools.deny
    assert decide("apply_patch") is Decision.DENY  # denying write denies apply_patch
    assert decide("web_search") is Decision.DENY  # byProvider openai, model gpt-4.1


def test_policy_ids_and_layers(compiled: ToolPolicySet) -> None:
    ids = [p.id for p in compiled]
    assert ids == [f"policy{i}" for i in range(len(ids))]  # positional: the text round-trips
    layers = {compiled.plan.layer_of(p.id) for p in compiled if p.effect is cedarlite.Effect.FORBID}
    assert (30, "tools.deny") in layers and (35, "tools.allow") in layers
    assert (2, "plugins.optional") in layers
    assert compiled.plan.layer_of("policy0") is None  # the permit


def test_long_allowlists_stay_within_the_parser_nesting_limit() -> None:
    tools = [{"name": f"t{i}", "pluginId": "p", "ownerOnly": True} for i in range(300)]
    compiled = compile_config({"tools": {"allow": ["p"]}}, ToolCatalog.from_tools(tools))
    assert PolicySet.from_str(compiled.to_cedar()) == PolicySet(compiled.policies)


def test_duplicate_entries_give_one_target() -> None:
    compiled = compile_config(
        {"tools": {"deny": ["read", " READ ", "group:fs", "Group:FS"]}}, ToolCatalog.core()
    )
    assert policy_text(compiled, "tools.deny").count('Action::"read"') == 1
    assert policy_text(compiled, "tools.deny").count('Action::"group:fs"') == 1
