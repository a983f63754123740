"""Configuration mistakes never quietly widen access (#9, finding 1).

Each mistake below silently removes a rule under the spec's lenient reading (the first assert of
each test shows the wider allow); a strict policy refuses it with the JSON path and a
did-you-mean, and ``lint_config`` reports it.
"""

from __future__ import annotations

from typing import Any

import pytest

from cedarlite import CedarliteError
from cedarlite.tools import ConfigError, ToolPolicy, lint_config, resolve_tools

TOOLS = [{"name": n} for n in ("read", "exec", "browser", "cron", "web_search")]
OWNER = {"senderIsOwner": True}


def refused(config: Any, context: Any = None) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        policy = ToolPolicy(config, TOOLS, strict=True)
        policy.resolve(context)
    return info.value


def allowed(config: Any, context: Any = None) -> list[str]:
    return resolve_tools(config, TOOLS, {**OWNER, **(context or {})}).allowed


def test_a_misspelled_section_is_refused() -> None:
    config = {"tool": {"deny": ["cron"]}}
    assert "cron" in allowed(config)  # the lenient reading: no `tools` section at all
    err = refused(config)
    assert isinstance(err, CedarliteError)
    assert err.message.startswith("invalid tools configuration at `tool`: unknown key `tool`")
    assert "did you mean `tools`?" in err.message
    assert [i.path for i in err.issues] == ["tool"]


def test_a_misspelled_list_key_is_refused() -> None:
    config = {"tools": {"denny": ["cron"]}}
    assert "cron" in allowed(config)
    err = refused(config)
    assert err.message.startswith("invalid tools configuration at `tools.denny`: unknown key")
    assert "did you mean `deny`?" in err.message


def test_an_unknown_profile_is_refused() -> None:
    config = {"tools": {"profile": "codeing"}}
    assert "browser" in allowed(config)  # no profile step at all
    err = refused(config)
    assert "at `tools.profile`: unknown profile `codeing`" in err.message
    assert "did you mean `coding`?" in err.message


def test_a_string_where_a_list_belongs_is_refused() -> None:
    config = {"tools": {"deny": "cron"}}
    assert "cron" in allowed(config)
    err = refused(config)
    assert "at `tools.deny`: expected an array of tool names, not a string" in err.message
    assert 'write `["cron"]`' in err.message


def test_an_agent_list_given_as_an_object_is_refused_with_the_right_words() -> None:
    config = {"agents": {"list": {"id": "coder", "tools": {"deny": ["cron"]}}}}
    assert "cron" in allowed(config, {"agentId": "coder"})
    err = refused(config)
    assert "at `agents.list`: expected an array of agent objects, not an object" in err.message
    assert "array of strings" not in err.message


def test_a_misspelled_context_key_is_refused() -> None:
    config = {"agents": {"list": [{"id": "coder", "tools": {"deny": ["cron"]}}, {"id": "ops"}]}}
    context = {"agentID": "coder", "senderIsOwner": True}
    # The lenient reading: no agentId, so the default agent (the first one)... which happens to
    # be coder here; with ops first, the coder's deny disappears.
    swapped = {"agents": {"list": [{"id": "ops"}, config["agents"]["list"][0]]}}
    assert "cron" in resolve_tools(swapped, TOOLS, context).allowed
    policy = ToolPolicy(swapped, TOOLS, strict=True)
    with pytest.raises(ConfigError) as info:
        policy.resolve(context)
    assert "invalid run context at `context.agentID`: unknown run context key" in str(info.value)
    assert "did you mean `agentId`?" in str(info.value)
    with pytest.raises(ConfigError):
        policy.authorize_call(context, "read", {"path": "x"})
    with pytest.raises(ConfigError):
        policy.check_context(context)


def test_an_unknown_agent_id_is_refused() -> None:
    config = {"agents": {"list": [{"id": "coder", "tools": {"deny": ["cron"]}}]}}
    assert "cron" in allowed(config, {"agentId": "codr"})
    policy = ToolPolicy(config, TOOLS, strict=True)
    with pytest.raises(ConfigError) as info:
        policy.check_context({"agentId": "codr"})
    assert "unknown agent `codr`" in info.value.message
    assert "did you mean `coder`?" in info.value.message
    policy.check_context({"agentId": " Coder "})  # the same agent, normalized


def test_context_values_of_the_wrong_type_are_refused() -> None:
    config = {"tools": {"sandbox": {"tools": {"allow": ["read"]}}}}
    assert "exec" in allowed(config, {"sandboxed": "true"})  # "true" is not true: no sandbox
    with pytest.raises(ConfigError) as info:
        ToolPolicy(config, TOOLS, strict=True).check_context({"sandboxed": "true"})
    assert "`sandboxed` must be a boolean, not a string" in info.value.message


def test_a_typo_in_an_allow_entry_is_one_warning_with_a_suggestion() -> None:
    config = {"tools": {"profile": "coding", "alsoAllow": ["browsr"]}}
    policy = ToolPolicy(config, TOOLS, strict=True)  # warnings never refuse
    (warning,) = policy.warnings
    assert warning.path == "tools.alsoAllow[0]" and warning.help == "did you mean `browser`?"
    res = resolve_tools(config, TOOLS, OWNER)
    assert [f for f in res.findings if f.severity == "warning"] == [warning]


def test_all_findings_are_kept_and_rendered() -> None:
    config = {"tools": {"denny": ["cron"], "profile": "codeing", "allow": ["exce"]}}
    err = refused(config)
    assert [(i.path, i.severity) for i in err.issues] == [
        ("tools.denny", "error"),
        ("tools.profile", "error"),
        ("tools.allow[0]", "warning"),
    ]
    assert "(and 1 more)" in err.message
    assert "\n  `tools.profile`: unknown profile `codeing`" in str(err)
    lenient = ToolPolicy(config, TOOLS)
    assert [i.path for i in lenient.errors] == ["tools.denny", "tools.profile"]
    assert lenient.findings == lint_config(config, TOOLS)


def test_keys_of_the_wider_openclaw_configuration_are_left_alone() -> None:
    config = {
        "gateway": {"port": 18789},
        "tools": {"exec": {"security": "allowlist"}, "elevated": {"enabled": False}},
        "agents": {
            "defaults": {"workspace": "~/w", "subagents": {"maxConcurrent": 2}},
            "list": [{"id": "main", "name": "Main", "workspace": "~/w", "tools": {"deny": []}}],
        },
        "channels": {"discord": {"accounts": {}, "groups": {"g": {"requireMention": True}}}},
    }
    assert lint_config(config, TOOLS) == ()
    ToolPolicy(config, TOOLS, strict=True)


def test_closed_sections_take_no_other_key() -> None:
    (finding,) = lint_config({"tools": {"sandbox": {"tools": {"deny": [], "mode": "all"}}}})
    assert finding.path == "tools.sandbox.tools.mode" and finding.code == "unknown-key"


@pytest.mark.parametrize(
    ("config", "path", "code"),
    [
        ({"tools": {"deny": [" "]}}, "tools.deny[0]", "blank-entry"),
        ({"tools": {"deny": [5]}}, "tools.deny[0]", "wrong-type"),
        ({"tools": {"deny": ["group:webb"]}}, "tools.deny[0]", "unknown-group"),
        ({"tools": {"byProvider": {"OpenAI": {}, "openai": {}}}}, "tools.byProvider.openai",
         "duplicate-key"),
        ({"tools": {"byProvider": {" ": {}}}}, 'tools.byProvider[" "]', "never-matches"),
        ({"channels": {"Discord": {}}}, "channels.Discord", "never-matches"),
        ({"agents": {"list": [{"id": "a"}, {"id": "A"}]}}, "agents.list[1]", "duplicate-agent"),
        ({"agents": {"list": [{"tools": {}}]}}, "agents.list[0]", "missing-id"),
        ({"agents": {"defaults": {"subagents": {"maxSpawnDepth": "2"}}}},
         "agents.defaults.subagents.maxSpawnDepth", "wrong-type"),
    ],
)  # fmt: skip
def test_each_silent_reading_is_an_error(config: Any, path: str, code: str) -> None:
    findings = [f for f in lint_config(config) if f.severity == "error"]
    assert [(f.path, f.code) for f in findings] == [(path, code)]


def test_lint_without_tools_checks_against_the_core_catalog() -> None:
    (finding,) = lint_config({"tools": {"allow": ["read", "lobster"]}})
    assert finding.severity == "warning"
    assert finding.message == "`lobster` matches no tool, group or plugin in the core catalog"


def test_a_hostile_context_is_refused_after_twenty_findings() -> None:
    policy = ToolPolicy({"agents": {"list": [{"id": "a"}]}}, TOOLS, strict=True)
    context = {f"agentId{i}": i for i in range(200_000)}
    with pytest.raises(ConfigError) as info:
        policy.check_context(context)
    assert len(info.value.issues) == 21 and info.value.issues[-1].code == "too-many"


def test_an_empty_tool_list_is_this_run_not_the_core_catalog() -> None:
    (finding,) = lint_config({"tools": {"allow": ["read"]}}, [])
    assert finding.message == "core tool `read` is not in this run"


def test_long_user_text_is_cut_in_messages() -> None:
    (finding,) = lint_config({"tools": {"profile": "x" * 10_000}})
    assert len(finding.message) < 200
