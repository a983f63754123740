"""The 58 OpenClaw conformance cases and the worked examples of spec §14, through
``cedarlite.tools.resolve_tools`` (every decision made by compiled Cedar policies)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cedarlite import CedarliteError
from cedarlite.tools import EmptyAllowlistError, ToolPolicy, resolve_tools

# The spec's 58 conformance cases (vendored from the project's spec material).
CASES_FILE = Path(__file__).resolve().parent / "data" / "openclaw-cases.json"
CASES = json.loads(CASES_FILE.read_text(encoding="utf-8"))["cases"]


def run(config: Any, tools: list[dict[str, Any]], context: dict[str, Any]) -> dict[str, Any]:
    """The output of spec §4.4."""
    try:
        return {"allowed": resolve_tools(config, tools, context).allowed}
    except EmptyAllowlistError as err:
        return {"error": str(err)}


def test_there_are_58_cases() -> None:
    assert len(CASES) == 58
    assert len({c["name"] for c in CASES}) == 58


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_conformance_case(case: dict[str, Any]) -> None:
    assert run(case["config"], case["tools"], case["context"]) == case["expect"]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_removal_entries_are_those_of_the_full_trace(case: dict[str, Any]) -> None:
    """`removal_entries` (what the guard's "removed by tools.deny: ..." names) traces only the
    step that removed a tool: the same entries as the full trace of `explain`."""
    policy = ToolPolicy(case["config"], case["tools"], strict=False)
    resolution = policy.resolve(case["context"])
    run = resolution.context
    named = 0
    for decision in resolution.decisions:
        expected: tuple[Any, ...] = ()
        if not decision.allowed and decision.tool.registered:
            steps = policy._trace(decision.tool, run, decision)
            matched = (s.deny_matches for s in steps if s.removed_as == decision.removed_by)
            expected = next((m for m in matched if m), ())
        assert policy.removal_entries(decision, run) == expected
        named += bool(expected)
    if any("deny" in str(d.removed_by) for d in resolution.decisions):
        assert named


def test_the_guard_error_is_a_cedarlite_error_whose_str_is_the_message() -> None:
    with pytest.raises(EmptyAllowlistError) as info:
        resolve_tools({"tools": {"allow": ["nothing"]}}, [{"name": "read"}], {})
    assert isinstance(info.value, CedarliteError)
    assert str(info.value) == (
        "No callable tools remain after resolving explicit tool allowlist (tools.allow: nothing); "
        "no registered tools matched. Fix the allowlist or enable the plugin that registers the "
        "requested tool."
    )
    assert info.value.resolution is not None and info.value.resolution.allowed == []
    assert info.value.resolution.removed == {"read": "tools.allow"}


# --- spec §14 ---------------------------------------------------------------------------------


def test_worked_example_1_also_allow_widens_the_profile() -> None:
    tools = [
        {"name": "read"},
        {"name": "browser"},
        {"name": "canvas"},
        {"name": "lobster", "pluginId": "lobster"},
    ]
    res = resolve_tools(
        {"tools": {"profile": "coding", "alsoAllow": ["browser", "lobster"]}}, tools, {}
    )
    assert res.allowed == ["read", "browser", "lobster"]
    assert res.removed == {"canvas": "tools.profile"}


def test_worked_example_2_an_agent_cannot_regrant_a_global_deny() -> None:
    config = {
        "tools": {"deny": ["exec"]},
        "agents": {"list": [{"id": "main", "tools": {"allow": ["exec", "read"]}}]},
    }
    res = resolve_tools(config, [{"name": "exec"}, {"name": "read"}, {"name": "write"}], {})
    assert res.allowed == ["read"]
    assert res.removed == {"exec": "tools.deny", "write": "agents.main.tools.allow"}


def test_worked_example_3_sandbox_defaults() -> None:
    names = [
        "read",
        "write",
        "exec",
        "apply_patch",
        "image",
        "web_search",
        "browser",
        "canvas",
        "cron",
        "gateway",
        "nodes",
        "sessions_spawn",
        "session_status",
        "message",
    ]
    res = resolve_tools(
        {}, [{"name": n} for n in names], {"sandboxed": True, "senderIsOwner": True}
    )
    assert res.allowed == [
        "read",
        "write",
        "exec",
        "apply_patch",
        "image",
        "sessions_spawn",
        "session_status",
    ]
    assert res.removed == {  # removal labels name the configuration that decided
        "web_search": "tools.sandbox.tools.allow (default)",
        "browser": "tools.sandbox.tools.deny (default)",
        "canvas": "tools.sandbox.tools.deny (default)",
        "cron": "tools.sandbox.tools.deny (default)",
        "gateway": "tools.sandbox.tools.deny (default)",
        "nodes": "tools.sandbox.tools.deny (default)",
        "message": "tools.sandbox.tools.allow (default)",
    }


def test_worked_example_4_leaf_sub_agent() -> None:
    names = [
        "read",
        "memory_search",
        "sessions_spawn",
        "subagents",
        "sessions_list",
        "sessions_history",
        "sessions_send",
        "session_status",
        "gateway",
        "agents_list",
        "cron",
        "sessions_yield",
        "whatsapp_login",
    ]
    res = resolve_tools(
        {}, [{"name": n} for n in names], {"subagentDepth": 1, "senderIsOwner": True}
    )
    assert res.allowed == ["read", "memory_search", "sessions_yield", "whatsapp_login"]


def test_worked_example_5_guard_with_the_implicit_star() -> None:
    assert run(
        {"tools": {"profile": "minimal", "alsoAllow": ["query_db"]}}, [{"name": "read"}], {}
    ) == {
        "error": "No callable tools remain after resolving explicit tool allowlist "
        "(tools.allow: *, "
        "query_db); no registered tools matched. Fix the allowlist or enable the plugin that "
        "registers the requested tool."
    }
