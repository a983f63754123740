"""Resolution details: removal labels, the run context, diagnostics (§10) and explain."""

from __future__ import annotations

import logging
import uuid
from typing import Any

import pytest

from cedarlite.tools import ToolsError, explain, load_config, resolve_tools
from cedarlite.tools.resolve import RunContext, ToolPolicy, tool_policy


def names(*items: str) -> list[dict[str, Any]]:
    return [{"name": n} for n in items]


# --- removal labels ---------------------------------------------------------------------------


def test_every_layer_labels_what_it_removes() -> None:
    tools = [
        *names("read", "exec", "cron", "browser", "message"),
        {"name": "x", "pluginId": "exec"},  # plugin id conflicts with a core tool
        {"name": "read", "pluginId": "p"},  # name taken by a core tool
        {"name": "opt", "pluginId": "p", "optional": True},  # not explicitly allowlisted
        {"name": "adm", "pluginId": "p", "ownerOnly": True},
    ]
    config = {"tools": {"profile": "coding", "deny": ["exec"]}}
    res = resolve_tools(config, tools, {"toolsEnabled": True})
    assert res.allowed == ["read"]
    assert res.removed == {
        "exec": "tools.deny",
        "cron": "owner-only",
        "browser": "tools.profile",
        "message": "tools.profile",
        "x": "plugins.id-conflict",
        "opt": "plugins.optional",
        "adm": "owner-only",
    }
    assert res.warnings[:2] == [
        "plugin id conflicts with core tool name (exec)",
        "plugin tool name conflict (p): read",
    ]


def test_the_earliest_layer_wins_and_tools_disabled_is_last() -> None:
    res = resolve_tools({}, names("read", "cron"), {"toolsEnabled": False})
    assert res.allowed == [] and res.removed == {"read": "toolsEnabled", "cron": "owner-only"}


def test_a_name_taken_only_when_an_optional_tool_loads() -> None:
    tools = [{"name": "t", "pluginId": "a", "optional": True}, {"name": "t", "pluginId": "b"}]
    loaded = resolve_tools({"tools": {"alsoAllow": ["a"]}}, tools, {})
    assert loaded.allowed == ["t"] and [
        d.tool.plugin_id for d in loaded.decisions if d.allowed
    ] == ["a"]
    assert "plugin tool name conflict (b): t" in loaded.warnings
    unloaded = resolve_tools({}, tools, {})
    assert [d.tool.plugin_id for d in unloaded.decisions if d.allowed] == ["b"]


def test_to_json_is_the_spec_output() -> None:
    assert resolve_tools({}, names("read"), {}).to_json() == {"allowed": ["read"]}


# --- the run context --------------------------------------------------------------------------


def test_run_context_normalization() -> None:
    config, _ = load_config({"agents": {"list": [{"id": "x"}, {"id": " Beta ", "default": "yes"}]}})
    run = RunContext.of(
        {
            "provider": " OpenAI ",
            "model": "GPT-5",
            "channel": " Discord ",
            "groupId": " g1 ",
            "sandboxed": "true",
            "senderIsOwner": True,
            "subagentDepth": 2.0,
            "toolsEnabled": 0,
        },
        config,
    )
    assert run == RunContext(
        "beta", "openai", "openai/gpt-5", "discord", "g1", False, True, 2, True
    )
    assert RunContext.of(
        {"provider": "openrouter", "model": "anthropic/claude"}, config
    ).provider_model == ("anthropic/claude")
    assert RunContext.of({"model": "gpt-5"}, config).provider_model == ""  # no provider, no match
    assert (
        RunContext.of({"agentId": " Ops Team ", "subagentDepth": 1.5}, config).agent == "ops-team"
    )
    assert RunContext.of({"subagentDepth": 1.5}, config).subagent_depth == 0
    assert RunContext.of({"subagentDepth": True}, config).subagent_depth == 0
    assert RunContext.of({"subagentDepth": 1e300}, config).subagent_depth == 2**63 - 1


def test_context_must_be_an_object() -> None:
    with pytest.raises(ToolsError):
        resolve_tools({}, names("read"), ["not", "a", "context"])  # type: ignore[arg-type]


# --- diagnostics (§10) ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("allow", "warning"),
    [
        (
            ["read", "browser"],
            "tools: tools.allow allowlist contains unknown entries (browser). These "
            "entries are shipped core tools but unavailable in the current "
            "runtime/provider/model/config.",
        ),
        (
            ["read", "query_db"],
            "tools: tools.allow allowlist contains unknown entries (query_db). These "
            "entries won't match any tool unless the plugin is enabled.",
        ),
        (
            ["query_db", "browser", "*", "group:fs"],
            "tools: tools.allow allowlist contains unknown entries "
            "(browser, query_db). Some entries are shipped core tools but unavailable in the "
            "current runtime/provider/model/config; other entries won't match any tool unless "
            "the plugin is enabled.",
        ),
    ],
)
def test_unknown_allowlist_entries(allow: list[str], warning: str) -> None:
    res = resolve_tools({"tools": {"allow": allow}}, names("read"), {})
    assert res.warnings == [warning]


def test_profile_entries_are_not_reported_but_also_allow_entries_are() -> None:
    res = resolve_tools(
        {"tools": {"profile": "coding", "alsoAllow": ["lobster"]}}, names("read"), {}
    )
    assert res.warnings == [
        "tools: tools.profile (coding) allowlist contains unknown entries (lobster). These entries "
        "won't match any tool unless the plugin is enabled.",
        "tools: tools.allow allowlist contains unknown entries (lobster). These entries "
        "won't match "
        "any tool unless the plugin is enabled.",
    ]


def test_plugin_entries_are_known() -> None:
    tools = [*names("read"), {"name": "lob", "pluginId": "Lobster"}]
    res = resolve_tools(
        {"tools": {"allow": ["read", "lobster", "LOB", "group:plugins"]}}, tools, {}
    )
    assert res.warnings == []


def test_warnings_are_logged_once_per_process(caplog: pytest.LogCaptureFixture) -> None:
    entry = f"missing_{uuid.uuid4().hex}"
    with caplog.at_level(logging.WARNING, logger="cedarlite.tools"):
        for _ in range(3):
            resolve_tools({"tools": {"allow": ["read", entry]}}, names("read"), {})
    assert sum(entry in r.getMessage() for r in caplog.records) == 1


# --- explain ----------------------------------------------------------------------------------

CONFIG = {
    "tools": {
        "profile": "coding",
        "deny": ["group:web"],
        "byProvider": {"openai": {"allow": ["web_*", "read"]}},
    },
    "agents": {"list": [{"id": "coder", "tools": {"deny": ["exec"]}}]},
}
CONTEXT = {"agentId": "coder", "provider": "openai", "sandboxed": True}
TOOLS = names("read", "exec", "web_search", "browser")


def test_explain_traces_every_layer() -> None:
    trace = explain(CONFIG, "exec", CONTEXT, TOOLS)
    assert not trace.allowed and trace.removed_by == "tools.byProvider.openai.allow"
    steps = {s.label: s for s in trace.steps}
    assert steps["tools.profile (coding)"].verdict == "kept"
    assert steps["tools.profile (coding)"].allow_matches == ("exec",)
    assert steps["tools.byProvider.allow"].verdict == "removed"
    assert steps["tools.byProvider.allow"].fired == ("tools.byProvider.openai.allow",)
    assert steps["agents.coder.tools.allow"].deny_matches == ("exec",)
    assert steps["agents.coder.tools.allow"].fired == ("agents.coder.tools.deny",)
    assert steps["agents.coder.tools.allow"].removed_as == "agents.coder.tools.deny"
    assert steps["group tools.allow"].verdict == "skipped"
    assert steps["sandbox tools.allow"].verdict == "kept"
    assert steps["sandbox tools.allow"].allow_matches == ("exec",)
    assert steps["toolsEnabled"].verdict == "kept"
    assert [s.label for s in trace.steps][:3] == [
        "plugins.optional",
        "plugins.name-conflict",
        "owner-only",
    ]


def test_explain_names_the_matching_entries() -> None:
    trace = explain(CONFIG, "web_search", CONTEXT, TOOLS)
    steps = {s.label: s for s in trace.steps}
    assert steps["tools.allow"].deny_matches == ("group:web",)
    assert steps["tools.byProvider.allow"].allow_matches == ("web_*",)
    assert str(trace).splitlines()[0] == "web_search: removed by tools.deny"
    assert "  tools.allow: removed by tools.deny; deny entry `group:web` matches\n" in str(trace)
    assert "  tools.profile (coding): kept; allow entry `web_search` matches\n" in str(trace)


def test_removal_entries_are_every_entry_of_the_layer_that_removed_the_tool() -> None:
    config = {
        "tools": {"deny": ["group:web", "web_*", "exec"]},
        "agents": {"list": [{"id": "coder", "tools": {"deny": ["web_search", "read"]}}]},
    }
    policy = ToolPolicy(config, TOOLS)
    resolution = policy.resolve({"agentId": "coder"})
    entries = {
        d.tool.name: policy.removal_entries(d, resolution.context) for d in resolution.decisions
    }
    # web_search: both global entries (the agent's deny, a later step, is not the remover);
    # read: the agent's deny alone; browser: kept.
    assert entries == {
        "read": ("read",),
        "exec": ("exec",),
        "web_search": ("group:web", "web_*"),
        "browser": (),
    }


def test_explain_a_single_tool_and_an_allowed_one() -> None:
    trace = explain({"tools": {"allow": ["read"]}}, {"name": "read"}, {})
    assert trace.allowed and trace.removed_by is None
    assert str(trace).startswith("read: allowed")


def test_explain_a_tool_rejected_at_registration() -> None:
    policy = ToolPolicy({}, [{"name": "message"}, {"name": "m", "pluginId": "message"}])
    trace = policy.explain("m", {})
    assert trace.removed_by == "plugins.id-conflict" and trace.steps[0].verdict == "removed"


def test_explain_an_unknown_tool() -> None:
    with pytest.raises(ToolsError, match="no tool `nope`"):
        tool_policy({}, names("read")).explain("nope", {})


# ---------------------------------------------------------------------------------------------
# Bad input is a clear error (found in review)


@pytest.mark.parametrize("tools", [None, 5, {"name": "read"}, "read", [3]])
def test_a_bad_tool_list_is_a_tools_error(tools):
    with pytest.raises(ToolsError):
        resolve_tools({}, tools, {})


def test_pathologically_nested_parameter_schemas_are_a_tools_error():
    deep: dict = {"type": "object"}
    for _ in range(3000):
        deep = {"type": "object", "properties": {"a": deep}}
    tools = [{"name": "x__y", "pluginId": "bundle-mcp", "parameters": deep}]
    with pytest.raises(ToolsError, match="nested too deeply"):
        resolve_tools({}, tools, {})


def test_explain_matches_names_exactly():
    with pytest.raises(ToolsError, match="no tool"):
        ToolPolicy({}, [{"name": "1"}]).explain(1, {})


def test_rules_given_as_text_are_compiled_once():
    policy = ToolPolicy({}, [{"name": "exec"}])
    rules = (
        'forbid (principal, action == Action::"exec", resource) '
        'when { resource.command like "rm *" };'
    )
    first, _ = policy._with_rules(rules)
    assert policy._with_rules("".join(rules))[0] is first  # an equal string hits the cache
