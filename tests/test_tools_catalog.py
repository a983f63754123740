"""The core catalog (spec §2), registration (§6.2), the catalog as entities, MCP naming (§6.4)."""

from __future__ import annotations

import pytest

from cedarlite import Entities, EntityProvider, EntityUID
from cedarlite.tools import ToolCatalog, ToolsError, mcp_tools
from cedarlite.tools.catalog import (
    ADDED_TOOLS,
    CORE_GROUPS,
    CORE_TOOL_IDS,
    PROFILES,
    SECTIONS,
    action_uid,
    plugin_uid,
)

#: The 32 tools of spec §2.2 (OpenClaw 2026.4); 2026.9's additions follow them.
SPEC_TOOLS = CORE_TOOL_IDS[:32]


def spec(members: tuple[str, ...]) -> tuple[str, ...]:
    """The members that are tools of spec §2.2 (2026.9's additions left out)."""
    return tuple(m for m in members if m in SPEC_TOOLS or m == "bundle-mcp")


def test_the_core_catalog_has_32_tools_in_11_sections() -> None:
    assert SPEC_TOOLS[0] == "read" and SPEC_TOOLS[-1] == "tts"
    assert CORE_TOOL_IDS[32:] == tuple(t.id for t in ADDED_TOOLS)
    assert len(set(CORE_TOOL_IDS)) == len(CORE_TOOL_IDS) == 32 + len(ADDED_TOOLS)
    assert list(SECTIONS) == [
        "fs",
        "runtime",
        "web",
        "memory",
        "sessions",
        "ui",
        "messaging",
        "automation",
        "nodes",
        "agents",
        "media",
    ]


def test_group_map_of_the_spec() -> None:
    assert spec(CORE_GROUPS["group:fs"]) == ("read", "write", "edit", "apply_patch")
    assert spec(CORE_GROUPS["group:runtime"]) == ("exec", "process", "code_execution")
    assert spec(CORE_GROUPS["group:sessions"]) == (
        "sessions_list",
        "sessions_history",
        "sessions_send",
        "sessions_spawn",
        "sessions_yield",
        "subagents",
        "session_status",
    )
    openclaw = spec(CORE_GROUPS["group:openclaw"])
    assert len(openclaw) == 26 and openclaw[0] == "code_execution" and openclaw[-1] == "tts"
    assert not {"read", "write", "edit", "apply_patch", "exec", "process"} & set(openclaw)
    assert len(CORE_GROUPS) == 12


def test_profiles_of_the_spec() -> None:
    assert spec(PROFILES["minimal"]) == ("session_status",)
    assert spec(PROFILES["messaging"]) == (
        "sessions_list",
        "sessions_history",
        "sessions_send",
        "session_status",
        "message",
        "bundle-mcp",
    )
    coding = spec(PROFILES["coding"])
    assert len(coding) == 26 and coding[-1] == "bundle-mcp"
    for absent in ("browser", "canvas", "gateway", "nodes", "agents_list", "message", "tts"):
        assert absent not in coding
    assert "full" not in PROFILES


def test_openclaw_2026_9_additions() -> None:
    # Rows of 2026.9.6's tool catalog: sections, profiles, group:openclaw, owner-only.
    assert CORE_GROUPS["group:fs"] == ("read", "write", "edit", "apply_patch", "ls")
    assert "ls" in PROFILES["coding"] and "ls" not in CORE_GROUPS["group:openclaw"]
    assert {"automations", "view_image", "pdf"} <= set(CORE_GROUPS["group:openclaw"])
    assert "theme" in PROFILES["messaging"] and "pdf" not in PROFILES["coding"]
    search = {"tool_search", "tool_describe", "tool_call"}
    assert search <= set(PROFILES["coding"]) and search <= set(PROFILES["messaging"])
    assert not any(search & set(members) for members in CORE_GROUPS.values())
    ents = ToolCatalog.core().entities
    assert EntityUID("Action", "group:owner-only") in ents[action_uid("terminal")].ancestors


def test_the_catalog_is_an_entity_provider_with_groups_as_parents() -> None:
    catalog = ToolCatalog.from_tools(
        [
            {"name": "read"},
            {"name": "Lobster", "pluginId": " Lobster "},
            {"name": "gh__search", "pluginId": "bundle-mcp"},
        ]
    )
    assert isinstance(catalog, EntityProvider)
    ents = catalog.entities
    assert isinstance(ents, Entities)
    read = ents[action_uid("read")]
    assert EntityUID("Action", "group:fs") in read.ancestors
    lobster = ents[action_uid("lobster")]
    assert {plugin_uid("lobster"), EntityUID("Action", "group:plugins")} <= lobster.ancestors
    assert plugin_uid("bundle-mcp") in ents[action_uid("gh__search")].ancestors
    assert EntityUID("Action", "group:owner-only") in ents[action_uid("cron")].ancestors
    assert ents[EntityUID("Tool", "Lobster")].attrs["pluginId"] == " Lobster "


def test_a_tool_named_like_a_group_is_escaped() -> None:
    assert action_uid("group:fs") == EntityUID("Action", "tool:group:fs")
    assert action_uid("tool:x") == EntityUID("Action", "tool:tool:x")
    assert action_uid("exec") == EntityUID("Action", "exec")


def test_static_registration() -> None:
    catalog = ToolCatalog.from_tools(
        [
            {"name": "message"},
            {"name": "a", "pluginId": "Message "},  # plugin id conflicts with a core tool
            {"name": "message", "pluginId": "p"},  # name taken by a core tool
            {"name": "Message", "pluginId": "p"},  # exact names: no conflict
            {"name": "x", "pluginId": "p"},
            {"name": "x", "pluginId": "q"},  # taken by an earlier plugin tool
            {"name": "y", "pluginId": "p", "optional": True},
            {"name": "y", "pluginId": "q"},  # taken only if the optional tool loads
        ]
    )
    dropped = [t.dropped for t in catalog.tools]
    assert dropped == [
        None,
        "plugin-id-conflict",
        "name-conflict",
        None,
        None,
        "name-conflict",
        None,
        None,
    ]
    assert catalog.tools[7].collides_with == (6,)
    assert [t.key for t in catalog.tools] == [
        "message",
        "a",
        "message#2",
        "Message",
        "x",
        "x#2",
        "y",
        "y#2",
    ]


def test_tools_must_be_objects() -> None:
    with pytest.raises(ToolsError, match=r"tools\[1\]"):
        ToolCatalog.from_tools([{"name": "read"}, "exec"])  # type: ignore[list-item]
    with pytest.raises(ToolsError):
        ToolCatalog.from_tools({"name": "read"})  # type: ignore[arg-type]


def test_fingerprint_identifies_the_tools() -> None:
    a = ToolCatalog.from_tools([{"name": "read"}])
    assert a.fingerprint == ToolCatalog.from_tools([{"name": "read"}]).fingerprint
    assert a.fingerprint != ToolCatalog.from_tools([{"name": "read", "optional": True}]).fingerprint


# --- MCP naming (§6.4) ------------------------------------------------------------------------


def test_mcp_names_are_server__tool_sorted_by_name() -> None:
    tools, log = mcp_tools(
        {"github": ["create_issue", "search"], "linear": [{"name": "list_issues"}]}
    )
    assert [t.name for t in tools] == [
        "github__create_issue",
        "github__search",
        "linear__list_issues",
    ]
    assert all(t.to_tool()["pluginId"] == "bundle-mcp" for t in tools)
    assert log == []


def test_mcp_names_are_made_provider_safe_and_logged() -> None:
    tools, log = mcp_tools({" My Server! ": ["do it", "  ", "ok"], "": ["x"]})
    assert [t.name for t in tools] == ["My-Server-__do-it", "My-Server-__ok", "mcp__x"]
    assert log[0] == (
        'bundle-mcp: tool "do it" from server " My Server! " registered as "My-Server-__do-it" '
        "to keep the tool name provider-safe."
    )
    assert len(log) == 3


def test_mcp_server_parts_are_deduplicated_case_insensitively() -> None:
    tools, _ = mcp_tools([("Docs", ["a"]), ("docs", ["a"]), ("DOCS", ["a"])])
    assert [t.name for t in tools] == ["DOCS-3__a", "Docs__a", "docs-2__a"]
    assert [t.server for t in tools] == ["DOCS", "Docs", "docs"]


def test_mcp_long_names_are_cut_and_collisions_numbered() -> None:
    server = "s" * 40
    tools, _ = mcp_tools({server: ["t" * 80]}, reserved=[])
    (tool,) = tools
    assert tool.name == "s" * 30 + "__" + "t" * 32 and len(tool.name) == 64
    tools, _ = mcp_tools({"gh": ["search"]}, reserved=["GH__search"])
    assert [t.name for t in tools] == ["gh__search-2"]


def test_mcp_astral_characters_count_as_two_code_units() -> None:
    tools, _ = mcp_tools({"a\U0001f600b": ["t"]})
    assert tools[0].name == "a--b__t"


def test_mcp_collisions_name_each_other() -> None:
    """Names equal ignoring case or cleaning are numbered (§6.4) and say whom they collide with:
    the tool holding the name, the ones numbered for it, and a reserved name."""
    tools, _ = mcp_tools({"s": ["a", "A", "a-2", "b.c", "b-c", "b_c", "ok"]}, reserved=["S__B-C"])
    clashes = {t.tool: (t.name, t.collides_with) for t in tools}
    assert clashes == {
        "A": ("s__A", ("a",)),
        "a": ("s__a-2", ("A", "a-2")),  # numbered, and so holding the name a-2 wants
        "a-2": ("s__a-2-2", ("a",)),
        "b-c": ("s__b-c-2", ("S__B-C", "b.c")),
        "b.c": ("s__b-c-3", ("S__B-C", "b-c")),
        "b_c": ("s__b_c", ()),
        "ok": ("s__ok", ()),
    }


def test_mcp_many_collisions_stay_linear_and_short() -> None:
    """Thousands of tools cut to one name: numbered in one pass, each naming a few others."""
    tools, _ = mcp_tools({"s": ["x" * 70 + str(i) for i in range(3000)]})
    assert len({t.name for t in tools}) == 3000
    assert all(0 < len(t.collides_with) <= 8 for t in tools)
