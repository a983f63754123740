"""The MCP gate (cedarlite.hosts.mcp_gate): an MCP server's listed tools under the tool policy,
without processes (the adapters' end-to-end tests are test_mcp_middleware / test_mcp_proxy)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from cedarlite.hooks import ApprovalRequest
from cedarlite.hosts.mcp_gate import (
    MAX_TOOLS,
    McpGate,
    approval_answer,
    approval_message,
    denial,
    form_elicitation,
)
from cedarlite.tools import ConfigError

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "mcp-proxy"
PATH = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
WRITE = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
    "required": ["path", "content"],
}
TOOLS = [
    {"name": "read_text_file", "inputSchema": PATH, "description": "Read."},
    {"name": "write_file", "inputSchema": WRITE},
    {"name": "edit_file", "inputSchema": PATH},
    {"name": "create_directory", "inputSchema": PATH},
    {"name": "move_file", "inputSchema": {"type": "object"}},
]


def example_gate(**kwargs: Any) -> McpGate:
    config = json.loads((EXAMPLE / "tools.json").read_text())
    rules = [EXAMPLE / "rules.cedar"]
    return McpGate(config, rules=rules, server="fs", **kwargs)


def decide(gate: McpGate, name: str, arguments: Any, **kwargs: Any) -> Any:
    return asyncio.run(gate.decide(name, arguments, call_id="1", **kwargs))


def test_filter_and_decide_over_listed_tools() -> None:
    gate = example_gate()
    gate.observe(TOOLS)
    assert gate.error is None
    kept = gate.filter(TOOLS)
    assert [t["name"] for t in kept] == [
        "read_text_file", "write_file", "edit_file", "create_directory"
    ]  # fmt: skip
    assert kept[0] is TOOLS[0]  # the upstream's own objects, unchanged

    assert decide(gate, "read_text_file", {"path": "/srv/a.txt"}).allowed
    no = decide(gate, "write_file", {"path": "/srv/a.txt", "content": "x"})
    assert not no.allowed and no.tool == "fs__write_file"
    assert no.reason.endswith("(policy fs.writes-in-drafts)")
    assert decide(gate, "write_file", {"path": "/srv/drafts/a.txt", "content": "x"}).allowed
    traversal = decide(gate, "read_text_file", {"path": "/srv/../etc/passwd"})
    assert traversal.reason == "Paths with `..` are not allowed. (policy fs.no-dotdot)"
    moved = decide(gate, "move_file", {})
    assert (
        moved.reason == "Tool fs__move_file is not available in this run (removed by tools.allow)."
    )
    unknown = decide(gate, "nope", {})
    assert unknown.reason == "Tool fs__nope is not available in this run."
    bad = decide(gate, "read_text_file", {"path": 3})
    assert not bad.allowed and "expected a string" in bad.reason


def test_ask_goes_to_the_asker_and_is_named_when_no_one_can_answer() -> None:
    gate = example_gate()
    gate.observe(TOOLS)
    edit = {"path": "/srv/notes.txt"}
    nobody = decide(gate, "edit_file", edit)
    assert nobody.reason == (
        "Plugin approval unavailable (no approval route): The agent wants to edit a file in "
        "place. (policy fs.edit-asks)"
    )
    seen: list[ApprovalRequest] = []

    async def ask(request: ApprovalRequest) -> str:
        seen.append(request)
        return "allow-once" if len(seen) == 1 else "deny"

    assert decide(gate, "edit_file", edit, ask=ask).allowed
    denied = decide(gate, "edit_file", edit, ask=ask)
    assert denied.reason.startswith("Denied by user: The agent wants to edit")
    assert seen[0].policies == ("fs.edit-asks",) and seen[0].timeout == 60


def test_nothing_is_offered_or_allowed_until_the_tools_are_known() -> None:
    gate = McpGate({"tools": {"profile": "coding"}})
    assert gate.filter(TOOLS) == []
    early = decide(gate, "read_text_file", {"path": "x"})
    assert early.reason == "Tool call blocked: the server has not listed its tools yet."
    gate.observe(TOOLS)  # still no name: nothing offered
    assert gate.filter(TOOLS) == []
    assert "--server" in decide(gate, "read_text_file", {"path": "x"}).reason
    gate.learn_server({"name": "files"})
    assert len(gate.filter(TOOLS)) == 5
    gate.learn_server({"name": "other"})  # a server cannot rename itself
    assert gate.server == "files"
    gate.forget()
    assert gate.filter(TOOLS) == []
    assert "changed" in decide(gate, "read_text_file", {"path": "x"}).reason


def test_pages_add_up_and_a_first_page_starts_over() -> None:
    gate = McpGate({"tools": {"profile": "coding"}}, server="s")
    gate.observe(TOOLS[:2], last_page=False)
    assert gate.knows("write_file") and not gate.knows("edit_file")
    gate.observe(TOOLS[2:], first_page=False)
    assert all(gate.knows(t["name"]) for t in TOOLS)
    guard = gate.guard
    gate.observe(TOOLS[:2], last_page=False)  # listing again: nothing is forgotten meanwhile
    assert gate.knows("edit_file")
    gate.observe(TOOLS[2:], first_page=False)
    assert gate.guard is guard  # the same tools: no rebuild
    gate.observe(TOOLS[:1])  # a complete listing without the others
    assert not gate.knows("write_file") and gate.guard is not guard


def test_hostile_tool_lists_fail_closed() -> None:
    gate = McpGate({"tools": {"profile": "coding"}}, server="s")
    deep: Any = {"type": "string"}
    for _ in range(5000):
        deep = {"type": "object", "properties": {"x": deep}}
    listing = [{"name": "deep", "inputSchema": deep}, "junk", {"name": 5}, {"nope": 1}]
    gate.observe(listing)
    assert gate.filter(listing) == [listing[0]]
    arguments: Any = "v"
    for _ in range(300):
        arguments = {"x": arguments}
    too_deep = decide(gate, "deep", arguments)
    assert not too_deep.allowed and "nested" in too_deep.reason
    gate.observe("not a list")
    assert gate.filter("not a list") == []
    many = [{"name": f"t{i}"} for i in range(MAX_TOOLS + 1)]
    gate.observe(many)
    assert gate.filter(many[:3]) == [] and "more than" in (gate.error or "")


def test_rules_are_checked_for_syntax_at_once_and_against_the_tools_when_listed() -> None:
    with pytest.raises(ConfigError):
        McpGate({"tools": {"profle": "coding"}})
    from cedarlite import ParseError

    with pytest.raises(ParseError):
        McpGate({}, rules="forbid (principal, action, resource) when {")
    typo = 'forbid (principal, action == Action::"s__read", resource) when { resource.pth == "" };'
    gate = McpGate({"tools": {"profile": "coding"}}, rules=typo, server="s")
    gate.observe([{"name": "read", "inputSchema": PATH}])
    assert gate.guard is None and "pth" in (gate.error or "")
    assert "cannot be applied" in decide(gate, "read", {"path": "a"}).reason


def test_approvals_as_elicitation_forms() -> None:
    request = ApprovalRequest(
        title="Edit a file", description="Why.", severity="warning", tool="fs__edit_file",
        call={}, params={"path": "/a", "key": "sk-" + "a" * 40},
    )  # fmt: skip
    message = approval_message(request, "edit_file (server fs)")
    assert message == (
        "Edit a file\n\nWhy.\n\nTool: edit_file (server fs)\n\n"
        'Arguments: {"key":"[REDACTED]","path":"/a"}'
    )
    long = approval_message(replace(request, params={"big": "x" * 5000}), "edit_file")
    assert long.endswith("... (3010 more characters)") and len(long) < 2100
    assert approval_answer({"action": "accept", "content": {"decision": "allow-always"}}) == (
        "allow-always"
    )
    assert approval_answer({"action": "accept", "content": {"decision": "deny"}}) == "deny"
    assert approval_answer({"action": "accept", "content": {"decision": "yes!"}}) == "deny"
    assert approval_answer({"action": "decline"}) == "deny"
    assert approval_answer({"action": "cancel"}) == "deny"
    assert approval_answer(None) is None
    assert form_elicitation({"elicitation": {}})
    assert form_elicitation({"elicitation": {"form": {}, "url": {}}})
    assert not form_elicitation({"elicitation": {"url": {}}})
    assert not form_elicitation({"roots": {}})
    assert not form_elicitation(None)


def test_denial_shape() -> None:
    assert denial("no") == {"content": [{"type": "text", "text": "no"}], "isError": True}
    assert denial("no", "2025-11-25") == denial("no")
    assert denial("no", "2026-07-28")["resultType"] == "complete"


def test_run_context_is_checked_and_used() -> None:
    config = {
        "tools": {"profile": "coding"},
        "agents": {"list": [{"id": "main", "default": True}, {"id": "reader",
                            "tools": {"allow": ["s__read_text_file"]}}]},
    }  # fmt: skip
    with pytest.raises(ConfigError):
        McpGate(config, context={"agentID": "reader"})  # a misspelled key is an error
    with pytest.raises(ConfigError):
        McpGate(config, context={"agentId": "writer"})  # an agent the configuration lacks
    gate = McpGate(config, context={"agentId": "reader"}, server="s")
    gate.observe(TOOLS)
    assert [t["name"] for t in gate.filter(TOOLS)] == ["read_text_file"]
    assert "agents.reader.tools.allow" in decide(gate, "write_file", {}).reason


NOTES = [
    {"name": "read_note", "inputSchema": PATH},
    {"name": "delete_note", "inputSchema": PATH},
    {"name": "Delete_Note", "inputSchema": PATH},
]
NOTES_RULES = (
    '@id("notes.no-delete") forbid (principal, action == Action::"notes__delete_note", '
    'resource) when { resource.path like "keep/*" };'
)


def test_strict_gate_refuses_tools_whose_names_collide() -> None:
    """``delete_note`` and ``Delete_Note`` are one name to a policy: neither is offered or run,
    the reason names both; the other tools and rules naming the colliding ones still work."""
    gate = McpGate({"tools": {"deny": ["notes__delete_note"]}}, rules=NOTES_RULES, server="notes")
    gate.observe(NOTES)
    assert gate.error is None
    assert [t["name"] for t in gate.filter(NOTES)] == ["read_note"]
    for name, other in (("delete_note", "Delete_Note"), ("Delete_Note", "delete_note")):
        verdict = decide(gate, name, {"path": "todo.md"})
        assert not verdict.allowed and verdict.outcome is None
        assert verdict.reason == (
            f"Tool call blocked: tool `{name}` of server `notes` cannot be told apart from "
            f"`{other}` by a policy (tool names are compared ignoring case, with characters "
            "outside [A-Za-z0-9_-] read as `-`); rename them on the server."
        )
    assert decide(gate, "read_note", {"path": "todo.md"}).allowed


def test_lenient_gate_names_colliding_tools_as_the_spec_does() -> None:
    """``strict=False``: spec §6.4 numbers the later name, so the deny entry names
    ``Delete_Note`` (sorted first) and ``delete_note`` runs as ``notes__delete_note-2``."""
    gate = McpGate({"tools": {"deny": ["notes__delete_note"]}}, server="notes", strict=False)
    gate.observe(NOTES)
    assert [t["name"] for t in gate.filter(NOTES)] == ["read_note", "delete_note"]
    renamed = decide(gate, "delete_note", {"path": "todo.md"})
    assert renamed.allowed and renamed.tool == "notes__delete_note-2"
    assert not decide(gate, "Delete_Note", {"path": "todo.md"}).allowed


def test_loop_detection_sees_the_arguments_it_decided() -> None:
    # A call naming a path is decided with the path's absolute form beside it; what it returned
    # must be recorded under the same arguments, or repeated no-progress reads never add up.
    loops = {"enabled": True, "warningThreshold": 3, "criticalThreshold": 5,
             "globalCircuitBreakerThreshold": 8}  # fmt: skip
    gate = McpGate({"tools": {"profile": "coding", "loopDetection": loops}}, server="fs")
    gate.observe(TOOLS)
    answers = []
    for i in range(10):
        answers.append(decide(gate, "read_text_file", {"path": "/srv/a.txt"}).allowed)
        result = {"content": [{"type": "text", "text": "same"}]}
        gate.record("read_text_file", {"path": "/srv/a.txt"}, call_id=f"c{i}", result=result)
    assert answers == [True] * 8 + [False] * 2
