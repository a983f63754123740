"""Reading the tools configuration (spec §4.1): lenient like the spec, issues named by path."""

from __future__ import annotations

import pytest

from cedarlite import CedarliteError
from cedarlite.tools import ConfigError, check_config, load_config, resolve_tools

ODD = {
    "tools": {
        "allow": "exec",
        "alsoAllow": [1, "read"],
        "profile": 5,
        "byProvider": {"openai": {"deny": 3}, "anthropic": 7, "google": None},
        "sandbox": 4,
    },
    "agents": {
        "list": ["x", {"id": "ops", "tools": {"byProvider": []}}],
        "defaults": {"subagents": {"maxSpawnDepth": "2"}},
    },
    "channels": {"discord": {"groups": {"*": {"tools": 5}, "g": 3}}},
}


def test_the_lenient_reading_follows_the_spec() -> None:
    model, _ = load_config(ODD)
    assert model.tools is not None
    assert model.tools.allow is None  # not an array: not set
    assert model.tools.also_allow == [1, "read"]  # entries kept; 1 will match nothing
    assert model.tools.profile == 5  # set, but names no profile
    assert model.tools.by_provider is not None
    assert model.tools.by_provider["openai"].deny is None  # type: ignore[union-attr]
    assert model.tools.by_provider["anthropic"] is not None  # still matches, sets nothing
    assert model.tools.by_provider["google"] is None  # null: absent
    assert model.tools.sandbox is None
    assert model.agents is not None and model.agents.entries is not None
    assert model.agents.entries[0] is None
    assert model.max_spawn_depth == 1  # a string is not a number


def test_every_issue_names_its_json_path() -> None:
    paths = [issue.path for issue in check_config(ODD)]
    assert paths == [  # in document order
        "tools.allow",
        "tools.alsoAllow[0]",
        "tools.profile",
        "tools.byProvider.openai.deny",
        "tools.byProvider.anthropic",
        "tools.sandbox",
        "agents.list[0]",
        "agents.list[1].tools.byProvider",
        "agents.defaults.subagents.maxSpawnDepth",
        'channels.discord.groups["*"].tools',
        "channels.discord.groups.g",
    ]


def test_strict_mode_raises_a_cedarlite_error_naming_the_path() -> None:
    with pytest.raises(ConfigError) as info:
        load_config({"tools": {"byProvider": {"openai/gpt-5": {"allow": "exec"}}}}, strict=True)
    err = info.value
    assert isinstance(err, CedarliteError)
    assert err.message == (
        'invalid tools configuration at `tools.byProvider["openai/gpt-5"].allow`: expected an '
        'array of tool names, not a string; the spec reads this list as not set; write `["exec"]`'
    )
    assert [i.path for i in err.issues] == ['tools.byProvider["openai/gpt-5"].allow']


def test_a_well_formed_configuration_has_no_issues() -> None:
    config = {
        "tools": {
            "profile": "coding",
            "allow": ["read"],
            "deny": [],
            "byProvider": {"openai": {}},
            "sandbox": {"tools": {"alsoAllow": ["x"]}},
            "subagents": {"tools": {}},
            "loopDetection": {"enabled": True},
        },
        "agents": {
            "defaults": {"subagents": {"maxSpawnDepth": 2.5}},
            "list": [{"id": "a", "default": True, "tools": {"profile": "minimal"}}],
        },
        "channels": {
            "discord": {"groups": {"*": {"tools": {"deny": ["exec"]}}, "requireMention": 1}}
        },
        "gateway": {"port": 1},
    }
    with pytest.raises(ConfigError):  # a group that is not an object is an issue...
        load_config(config, strict=True)
    del config["channels"]["discord"]["groups"]["requireMention"]  # type: ignore[index]
    model, issues = load_config(config, strict=True)
    assert issues == () and model.max_spawn_depth == 2


def test_json_text_and_null() -> None:
    assert load_config('{"tools": {"allow": ["read"]}}')[0].tools.allow == ["read"]  # type: ignore[union-attr]
    assert load_config(None)[0].tools is None
    with pytest.raises(ConfigError, match="invalid JSON"):
        load_config("{")


def test_a_configuration_that_is_not_an_object_is_an_error() -> None:
    with pytest.raises(ConfigError, match="must be a JSON object, not an array"):
        resolve_tools([], [{"name": "read"}], {})  # type: ignore[arg-type]


def test_odd_values_never_fail_resolution() -> None:
    res = resolve_tools(ODD, [{"name": "read"}, {"name": "exec"}], {"provider": "anthropic"})
    assert res.allowed == ["read", "exec"]
