"""Property: ``resolve_tools`` (compiled Cedar) equals the step-by-step oracle of the spec.

Random configurations exercise every section of spec §4.1 (profiles with odd values,
allow/alsoAllow/deny with globs, groups, aliases, case and whitespace variants, unknown and
non-string entries, byProvider with model keys, agents with defaults, channel groups with ``*``,
sandbox and sub-agent settings) against random tool lists (core, plugin, MCP, optional and
owner-only tools, colliding names and plugin ids) and run contexts. The default profile runs
Hypothesis's usual example count; ``HYPOTHESIS_PROFILE=thorough`` runs ten times more.
"""

from __future__ import annotations

from typing import Any

import tools_oracle
from hypothesis import given
from hypothesis import strategies as st

from cedarlite import PolicySet
from cedarlite.tools import EmptyAllowlistError, resolve_tools
from cedarlite.tools.catalog import CORE_TOOL_IDS
from cedarlite.tools.resolve import RunContext, ToolPolicy, tool_policy

# --- names and entries ------------------------------------------------------------------------

CORE_ENTRIES = [*CORE_TOOL_IDS, "whatsapp_login"]
ODD_NAMES = [
    "bash",
    "BASH",
    " Bash ",
    "apply-patch",
    " Apply-Patch ",
    "READ",
    " read ",
    "Web_Search",
    "\u00a0exec\u3000",
    "write",
    "apply_patch",
    "group:fs",
    "GROUP:WEB",
    "group:openclaw",
    "group:plugins",
    "group:unknown",
    "group:owner-only",
    "plugin:lobster",
    "tool:x",
    "lobster",
    "LOBSTER",
    " Lobster",
    "lobster_flow",
    "optional_tool",
    "Optional_Tool",
    "admin_reset",
    "ops",
    "bundle-mcp",
    "fs-extra",
    "github__create_issue",
    "github__search",
    "linear__list_issues",
    "gh__list_prs",
    "query_db",
    "nonexistent",
    "discord",
    "message",
    "",
    " ",
    "cron",
    "p1",
    "p2",
    "x_tool",
]
GLOBS = [
    "*",
    "web_*",
    " WEB_* ",
    "sessions_*",
    "*__*",
    "github__*",
    "w*",
    "*_get",
    "web_?earch",
    "sessions_[a-z]*",
    "*patch",
    "apply_*",
    "mem*",
    "*a*",
    "lob*",
]

entry = st.one_of(
    st.sampled_from(CORE_ENTRIES),
    st.sampled_from(ODD_NAMES),
    st.sampled_from(GLOBS),
    st.sampled_from([1, None, True, {"x": 1}]),
)
entry_list = st.lists(entry, max_size=5)
odd_list = st.sampled_from([None, "exec", 5, {}, True])
maybe_list = st.one_of(entry_list, entry_list, odd_list)


def lists_dict(**extra: Any) -> st.SearchStrategy[dict[str, Any]]:
    """``{allow?, alsoAllow?, deny?}``: mostly with one non-empty list, sometimes anything."""
    some = st.lists(entry, min_size=1, max_size=4)
    fields = {"allow": maybe_list, "alsoAllow": maybe_list, "deny": maybe_list, **extra}
    return st.one_of(
        *(
            st.fixed_dictionaries(
                {key: some}, optional={k: v for k, v in fields.items() if k != key}
            )
            for key in ("allow", "alsoAllow", "deny")
        ),
        st.fixed_dictionaries({}, optional=fields),
    )


profile = st.sampled_from(
    ["minimal", "coding", "messaging", "full", "", "Coding", " coding", "unknown", None, 5]
)
provider_key = st.sampled_from(
    [
        "openai",
        "OpenAI",
        " openai ",
        "openai/gpt-5",
        "OPENAI/GPT-5",
        "anthropic",
        "google",
        "openrouter",
        "anthropic/claude-opus-4",
        "openai/o3",
        "",
    ]
)
provider_entry = st.one_of(
    lists_dict(profile=profile),
    lists_dict(profile=profile),
    st.fixed_dictionaries({"profile": profile}, optional={"alsoAllow": maybe_list}),
    st.sampled_from([{}, None, 5, "x", []]),
)
by_provider = st.dictionaries(provider_key, provider_entry, max_size=3)
sandbox = st.one_of(st.fixed_dictionaries({"tools": lists_dict()}), st.sampled_from([{}, 5]))

tools_section = st.fixed_dictionaries(
    {},
    optional={
        "profile": profile,
        "allow": maybe_list,
        "alsoAllow": maybe_list,
        "deny": maybe_list,
        "byProvider": st.one_of(by_provider, st.just([])),
        "sandbox": sandbox,
        "subagents": st.fixed_dictionaries({}, optional={"tools": lists_dict()}),
    },
)
agent_tools = st.fixed_dictionaries(
    {},
    optional={
        "profile": profile,
        "allow": maybe_list,
        "alsoAllow": maybe_list,
        "deny": maybe_list,
        "byProvider": by_provider,
        "sandbox": sandbox,
    },
)
agent_id = st.sampled_from(["main", "coder", "Coder", " Ops Team ", "ops-team", "", "db", None, 5])
agent_entry = st.one_of(
    st.fixed_dictionaries(
        {"id": agent_id, "tools": agent_tools},
        optional={"default": st.sampled_from([True, 1, 0, "", "yes", None, False])},
    ),
    st.fixed_dictionaries(
        {},
        optional={
            "id": agent_id,
            "default": st.sampled_from([True, 1, 0, "", "yes", None, False]),
            "tools": st.one_of(agent_tools, st.just(3)),
        },
    ),
    st.just("not an agent"),
)
group_value = st.one_of(
    st.fixed_dictionaries({"tools": lists_dict()}),
    st.fixed_dictionaries({"tools": lists_dict()}),
    st.sampled_from([{}, {"tools": {}}, {"tools": 5}, None]),
)
channels = st.dictionaries(
    st.sampled_from(["discord", "slack", "discord", "slack", "Discord", " slack"]),
    st.one_of(
        st.fixed_dictionaries(
            {
                "groups": st.dictionaries(
                    st.sampled_from(["g1", "g2", "*", " g1", "G1"]), group_value, max_size=3
                )
            }
        ),
        st.sampled_from([{}, None]),
    ),
    max_size=2,
)
config = st.fixed_dictionaries(
    {},
    optional={
        "tools": tools_section,
        "agents": st.fixed_dictionaries(
            {},
            optional={
                "defaults": st.fixed_dictionaries(
                    {
                        "subagents": st.fixed_dictionaries(
                            {
                                "maxSpawnDepth": st.sampled_from(
                                    [1, 2, 3, 2.7, "2", True, None, 0, -1]
                                )
                            }
                        )
                    }
                ),
                "list": st.lists(agent_entry, max_size=3),
            },
        ),
        "channels": channels,
    },
)

# --- tools ------------------------------------------------------------------------------------

plugin_id = st.sampled_from(
    [
        "lobster",
        "Lobster",
        "ops",
        "bundle-mcp",
        " ",
        "message",
        "bash",
        "discord",
        "p1",
        "p2",
        "group:fs",
        "fs-extra",
    ]
)
plugin_tool = st.fixed_dictionaries(
    {
        "name": st.one_of(
            st.sampled_from(ODD_NAMES), st.sampled_from(CORE_ENTRIES), st.sampled_from(GLOBS[1:4])
        ),
        "pluginId": plugin_id,
    },
    optional={
        "optional": st.sampled_from([True, True, False, "true"]),
        "ownerOnly": st.sampled_from([True, False, 1]),
    },
)


@st.composite
def tool_lists(draw: st.DrawFn) -> list[dict[str, Any]]:
    core_names = draw(
        st.lists(
            st.one_of(
                st.sampled_from(CORE_ENTRIES), st.sampled_from(["x_tool", "Read", "group:web", ""])
            ),
            unique=True,
            max_size=10,
        )
    )
    tools: list[dict[str, Any]] = [{"name": n} for n in core_names]
    tools += draw(st.lists(plugin_tool, max_size=6))
    return draw(st.permutations(tools))


context = st.fixed_dictionaries(
    {},
    optional={
        "agentId": agent_id,
        "provider": st.sampled_from(
            ["openai", " OpenAI ", "anthropic", "google", "openrouter", "", None, 5]
        ),
        "model": st.sampled_from(["gpt-5", "GPT-5", "o3", "anthropic/claude-opus-4", "", None]),
        "channel": st.sampled_from(["discord", " Discord ", "slack", "", None]),
        "groupId": st.sampled_from(["g1", " g1", "g2", "*", "", None]),
        "sandboxed": st.sampled_from([True, False, "true", None]),
        "senderIsOwner": st.sampled_from([True, False, 1, None]),
        "subagentDepth": st.sampled_from([0, 1, 2, 3, 1.0, 1.5, "1", True, None]),
        "toolsEnabled": st.sampled_from([True, False, None, "false"]),
    },
)


def _config_keys(cfg: dict[str, Any]) -> tuple[list[Any], list[str], list[tuple[Any, Any]]]:
    """Agent ids, byProvider keys and (channel, group) pairs that a configuration mentions."""
    agents_list = (cfg.get("agents") or {}).get("list") or []
    entries = [e for e in agents_list if isinstance(e, dict)]
    ids = [e.get("id") for e in entries]
    keys: list[str] = []
    sections = [cfg.get("tools")] + [e.get("tools") for e in entries]
    for section in sections:
        if isinstance(section, dict) and isinstance(section.get("byProvider"), dict):
            keys += list(section["byProvider"])
    pairs = [
        (channel, group)
        for channel, value in (cfg.get("channels") or {}).items()
        for group in ((value or {}).get("groups") or {})
    ]
    return ids, keys, pairs


@st.composite
def context_for(draw: st.DrawFn, cfg: dict[str, Any]) -> dict[str, Any]:
    """A run context that often names an agent, provider/model and group of ``cfg``."""
    ctx = dict(draw(context))
    ids, keys, pairs = _config_keys(cfg)
    if ids and draw(st.booleans()):
        ctx["agentId"] = draw(st.sampled_from(ids))
    if keys and draw(st.booleans()):
        key = draw(st.sampled_from(keys)).strip()
        provider, _, model = key.partition("/")
        if model and draw(st.booleans()):
            ctx["provider"], ctx["model"] = "openrouter", key  # a model id with a slash
        else:
            ctx["provider"] = draw(st.sampled_from([provider, provider.upper(), f" {provider} "]))
            ctx["model"] = model or draw(st.sampled_from(["gpt-5", "o3", None]))
    if pairs and draw(st.booleans()):
        ctx["channel"], ctx["groupId"] = draw(st.sampled_from(pairs))
    return ctx


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    """A configuration, a tool list and a run context that exercises the configuration."""
    cfg = draw(config)
    return cfg, draw(tool_lists()), draw(context_for(cfg))


def _library(cfg: Any, tools: list[dict[str, Any]], ctx: dict[str, Any]) -> dict[str, Any]:
    try:
        res = resolve_tools(cfg, tools, ctx)
        out: dict[str, Any] = {"allowed": res.allowed}
    except EmptyAllowlistError as err:
        assert err.resolution is not None
        res = err.resolution
        out = {"error": str(err)}
    out["removed"] = res.removed
    out["warnings"] = res.warnings
    return out


@given(scenarios())
def test_resolve_tools_equals_the_oracle(
    scenario: tuple[Any, list[dict[str, Any]], dict[str, Any]],
) -> None:
    cfg, tools, ctx = scenario
    assert _library(cfg, tools, ctx) == tools_oracle.resolve(cfg, tools, ctx)


@given(scenarios())
def test_the_compiled_engine_and_the_interpreter_agree(
    scenario: tuple[Any, list[dict[str, Any]], dict[str, Any]],
) -> None:
    cfg, tools, ctx = scenario
    compiled, reference = ToolPolicy(cfg, tools), ToolPolicy(cfg, tools, engine="reference")
    ours, theirs = (
        compiled.decide(RunContext.of(ctx, compiled.config)),
        reference.decide(RunContext.of(ctx, reference.config)),
    )
    assert [(d.response, d.removed_by) for d in ours] == [
        (d.response, d.removed_by) for d in theirs
    ]


@given(scenarios(), entry)
def test_adding_a_deny_entry_never_adds_a_tool(
    scenario: tuple[Any, list[dict[str, Any]], dict[str, Any]], extra: Any
) -> None:
    cfg, tools, ctx = scenario
    section = cfg.get("tools", {})
    if not isinstance(section, dict):
        return
    deny = section.get("deny")
    stricter = {
        **cfg,
        "tools": {**section, "deny": [*(deny if isinstance(deny, list) else []), extra]},
    }
    before = _library(cfg, tools, ctx).get("allowed", [])
    after = _library(stricter, tools, ctx).get("allowed", [])
    assert all(name in before for name in after)


@given(config, tool_lists())
def test_compiled_policies_round_trip_through_cedar_text(
    cfg: Any, tools: list[dict[str, Any]]
) -> None:
    compiled = tool_policy(cfg, tools).policies
    assert PolicySet.from_str(compiled.to_cedar()) == PolicySet(compiled.policies)


# --- a focused property: agents x byProvider (steps 1, 2, 4, 5, 6 interact) --------------------

few = st.lists(
    st.sampled_from(
        [
            "read",
            "exec",
            "write",
            "web_*",
            "group:fs",
            "browser",
            "session_status",
            "lobster",
            "*",
            "BASH",
            "message",
            "bundle-mcp",
        ]
    ),
    min_size=1,
    max_size=3,
)
focused_lists = st.fixed_dictionaries(
    {},
    optional={
        "allow": few,
        "alsoAllow": few,
        "deny": few,
        "profile": st.sampled_from(["minimal", "coding", "messaging", "full"]),
    },
)
focused_by_provider = st.dictionaries(
    st.sampled_from(
        ["openai", "openai/gpt-5", "anthropic", "OpenAI/o3", "anthropic/claude-opus-4"]
    ),
    st.one_of(focused_lists, st.just({})),
    min_size=1,
    max_size=3,
)
focused_config = st.fixed_dictionaries(
    {
        "tools": st.fixed_dictionaries(
            {},
            optional={
                "profile": focused_lists.map(lambda d: d.get("profile")),
                "alsoAllow": few,
                "deny": few,
                "byProvider": focused_by_provider,
            },
        ),
        "agents": st.fixed_dictionaries(
            {
                "list": st.lists(
                    st.fixed_dictionaries(
                        {
                            "id": st.sampled_from(["a", "b", "main"]),
                            "tools": st.fixed_dictionaries(
                                {"byProvider": focused_by_provider},
                                optional={
                                    "profile": st.sampled_from(["minimal", "coding", "full"]),
                                    "allow": few,
                                    "alsoAllow": few,
                                    "deny": few,
                                },
                            ),
                        },
                        optional={"default": st.booleans()},
                    ),
                    max_size=3,
                )
            }
        ),
    }
)
focused_tools = st.lists(
    st.sampled_from(
        [
            {"name": n}
            for n in [
                "read",
                "write",
                "exec",
                "apply_patch",
                "web_search",
                "browser",
                "session_status",
                "message",
            ]
        ]
        + [
            {"name": "lobster", "pluginId": "lobster"},
            {"name": "lobster_opt", "pluginId": "lobster", "optional": True},
            {"name": "gh__search", "pluginId": "bundle-mcp"},
        ]
    ),
    unique_by=lambda t: t["name"],
    min_size=1,
)
focused_context = st.fixed_dictionaries(
    {
        "agentId": st.sampled_from(["a", "b", "main", None, " A "]),
        "provider": st.sampled_from(["openai", "anthropic", " OpenAI ", "openrouter"]),
        "model": st.sampled_from(["gpt-5", "o3", None, "openai/gpt-5", "anthropic/claude-opus-4"]),
    }
)


@given(focused_config, focused_tools, focused_context)
def test_agent_and_provider_layers_equal_the_oracle(
    cfg: Any, tools: list[dict[str, Any]], ctx: dict[str, Any]
) -> None:
    assert _library(cfg, tools, ctx) == tools_oracle.resolve(cfg, tools, ctx)
