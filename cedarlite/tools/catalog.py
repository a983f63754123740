"""The tool catalog: core tools, groups, profiles, plugin and MCP tools, as Cedar entities.

The data of docs/tool-policy.md §2 (sections, the 32 core tools, groups, profiles) and the default
lists of docs/tool-policy.md §5.7, §5.8 and docs/tool-policy.md §7 live here. A
:class:`ToolCatalog` is built from the tools of a run (docs/tool-policy.md §4.2): it registers
plugin tools (the context-independent part of docs/tool-policy.md §6.2: plugin-id conflicts and name
collisions that cannot depend on optional tools) and provides the entity store the compiled policies
are evaluated against:

* every tool name is an action ``Action::"<normalized name>"`` whose parents are its groups:
  ``Action::"group:<section>"``, ``Action::"group:openclaw"``, ``Action::"group:owner-only"``,
  ``Action::"group:plugins"`` and ``Action::"plugin:<plugin id>"`` (``plugin:bundle-mcp`` holds
  every MCP tool), so a policy can say ``action in Action::"group:web"``;
* every tool of the run is a resource ``Tool::"<name>"`` (its *instance*: two tools may share a
  normalized name but differ in flags); the resource of a call is a child of it
  (:mod:`cedarlite.tools.params`);
* the principal of a request is the agent, ``Agent::"<agent id>"``.

A normalized name that starts with a reserved prefix (``group:``, ``plugin:``, ``tool:``) is
written ``Action::"tool:<name>"`` so that no tool can ever be mistaken for a group.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, NamedTuple, TypeVar

from .._sha import sha256
from ..data.entities import Entities, Entity
from ..data.jsonvalue import preview
from ..data.values import EntityUID, Record
from ..errors import CedarliteError
from .names import identity, js_trim, norm, trim_lower

# --------------------------------------------------------------------------------------------- Core
# data (docs/tool-policy.md §2, §5.7, docs/tool-policy.md §5.8,
# docs/tool-policy.md §7)

#: Sections in order: id → display label (docs/tool-policy.md §2.1).
SECTIONS: dict[str, str] = {
    "fs": "Files",
    "runtime": "Runtime",
    "web": "Web",
    "memory": "Memory",
    "sessions": "Sessions",
    "ui": "UI",
    "messaging": "Messaging",
    "automation": "Automation",
    "nodes": "Nodes",
    "agents": "Agents",
    "media": "Media",
}


# Named tuples, not dataclasses: this module loads in every hook process (one per tool call),
# where a dataclass costs ~1 ms to create and a named tuple a tenth of that. (ToolInfo stays a
# dataclass: its `raw` entry is left out of its comparisons.)
class CoreTool(NamedTuple):
    """One core tool of docs/tool-policy.md §2.2: its id, section, the profiles listing it,
    ``group:openclaw``."""

    id: str
    section: str
    profiles: frozenset[str] = frozenset()
    openclaw: bool = True


def _core(id: str, section: str, profiles: str = "", openclaw: bool = True) -> CoreTool:
    return CoreTool(id, section, frozenset(profiles.split()), openclaw)


#: OpenClaw 2026.9's tool-search tools (a compact surface over a large catalog).
TOOL_SEARCH_TOOLS: tuple[str, ...] = ("tool_search", "tool_describe", "tool_call")


#: The core tools OpenClaw 2026.9 adds to the 32 of docs/tool-policy.md §2.2 (2026.9.6).
#: ``tool_search``, ``tool_describe`` and ``tool_call`` (its tool-search surface) are in no
#: section: a call through ``tool_call`` reaches another tool, which the OpenClaw host decides
#: in its place.
ADDED_TOOLS: tuple[CoreTool, ...] = (
    _core("ls", "fs", "coding", openclaw=False),
    _core("secrets", "runtime", "coding messaging"),
    *(_core(t, "sessions", "coding messaging") for t in (
        "sessions", "sessions_search", "conversations_list", "conversations_send",
        "conversations_turn")),
    *(_core(t, "sessions", "coding") for t in (
        "github_identity_status", "github_publish", "agents_wait", "suggest_task",
        "dismiss_task")),
    _core("screen", "ui", "coding"),
    _core("theme", "ui", "coding messaging"),
    *(_core(t, "ui", "coding") for t in ("dashboard", "terminal", "portal")),
    _core("show_widget", "ui"),
    _core("heartbeat_respond", "automation"),
    _core("automations", "automation", "coding"),
    _core("plugins", "automation", "coding"),
    _core("openclaw", "automation"),
    _core("computer", "nodes"),
    _core("mobile_ui", "nodes"),
    *(_core(t, "agents", "coding") for t in (
        "get_goal", "create_goal", "update_goal", "progress_card")),
    _core("ask_user", "agents", "coding messaging"),
    _core("skill_workshop", "agents", "coding"),
    _core("view_image", "media", "coding"),
    _core("pdf", "media"),
    *(_core(t, "", "coding messaging", openclaw=False) for t in TOOL_SEARCH_TOOLS),
)  # fmt: skip

#: The core tools in catalog order: the 32 of docs/tool-policy.md §2.2, then OpenClaw 2026.9's.
CORE_TOOLS: tuple[CoreTool, ...] = (
    _core("read", "fs", "coding", openclaw=False),
    _core("write", "fs", "coding", openclaw=False),
    _core("edit", "fs", "coding", openclaw=False),
    _core("apply_patch", "fs", "coding", openclaw=False),
    _core("exec", "runtime", "coding", openclaw=False),
    _core("process", "runtime", "coding", openclaw=False),
    _core("code_execution", "runtime", "coding"),
    _core("web_search", "web", "coding"),
    _core("web_fetch", "web", "coding"),
    _core("x_search", "web", "coding"),
    _core("memory_search", "memory", "coding"),
    _core("memory_get", "memory", "coding"),
    _core("sessions_list", "sessions", "coding messaging"),
    _core("sessions_history", "sessions", "coding messaging"),
    _core("sessions_send", "sessions", "coding messaging"),
    _core("sessions_spawn", "sessions", "coding"),
    _core("sessions_yield", "sessions", "coding"),
    _core("subagents", "sessions", "coding"),
    _core("session_status", "sessions", "minimal coding messaging"),
    _core("browser", "ui"),
    _core("canvas", "ui"),
    _core("message", "messaging", "messaging"),
    _core("cron", "automation", "coding"),
    _core("gateway", "automation"),
    _core("nodes", "nodes"),
    _core("agents_list", "agents"),
    _core("update_plan", "agents", "coding"),
    _core("image", "media", "coding"),
    _core("image_generate", "media", "coding"),
    _core("music_generate", "media", "coding"),
    _core("video_generate", "media", "coding"),
    _core("tts", "media"),
    # OpenClaw 2026.9 (checked against 2026.9.6's catalog): its additions, in its sections,
    # profiles and group:openclaw membership. The April tools keep the spec's rows.
    *ADDED_TOOLS,
)

#: Ids of the core tools, in catalog order.
CORE_TOOL_IDS: tuple[str, ...] = tuple(t.id for t in CORE_TOOLS)

#: The core groups (docs/tool-policy.md §2.3): ``group:openclaw`` then one group per section,
#: members in order.
CORE_GROUPS: dict[str, tuple[str, ...]] = {
    "group:openclaw": tuple(t.id for t in CORE_TOOLS if t.openclaw),
    **{f"group:{s}": tuple(t.id for t in CORE_TOOLS if t.section == s) for s in SECTIONS},
}

#: The marker plugin id of every MCP tool; in profiles it stands for all MCP tools present.
BUNDLE_MCP = "bundle-mcp"

#: Profile allow lists (docs/tool-policy.md §2.4). ``full`` and any other value have no policy.
PROFILES: dict[str, tuple[str, ...]] = {
    "minimal": tuple(t.id for t in CORE_TOOLS if "minimal" in t.profiles),
    "coding": (*(t.id for t in CORE_TOOLS if "coding" in t.profiles), BUNDLE_MCP),
    "messaging": (*(t.id for t in CORE_TOOLS if "messaging" in t.profiles), BUNDLE_MCP),
}

#: ``loopDetection``'s thresholds and their defaults (docs/guard.md §11.2), and its detectors:
#: the keys the hooks read and the strict reading checks (here, not with the configuration
#: models: a hook process loads this module, never those).
LOOP_DEFAULTS: Mapping[str, int] = {
    "historySize": 30,
    "warningThreshold": 10,
    "criticalThreshold": 20,
    "globalCircuitBreakerThreshold": 30,
}
LOOP_DETECTORS = ("genericRepeat", "knownPollNoProgress", "pingPong")

#: Owner-only tool names (docs/tool-policy.md §7) and their approval class (used by
#: ``before_tool_call``).
OWNER_ONLY_TOOLS: dict[str, str] = {
    "whatsapp_login": "interactive",
    "cron": "control-plane",
    "gateway": "control-plane",
    "nodes": "exec-capable",
    # OpenClaw 2026.9.6's additions (its GATEWAY_OWNER_ONLY_CORE_TOOLS).
    **dict.fromkeys(("automations", "plugins", "openclaw"), "control-plane"),
    **dict.fromkeys(("screen", "terminal", "portal", "computer", "mobile_ui"), "exec-capable"),
    **dict.fromkeys(
        ("sessions", "conversations_list", "conversations_send", "conversations_turn"),
        "interactive",
    ),
}

#: Bundled chat-channel ids (part of the sandbox default deny list).
CHANNEL_IDS: tuple[str, ...] = (
    "bluebubbles", "discord", "feishu", "googlechat", "imessage", "irc", "line", "matrix",
    "mattermost", "msteams", "nextcloud-talk", "nostr", "qqbot", "signal", "slack",
    "synology-chat", "telegram", "tlon", "twitch", "whatsapp", "zalo", "zalouser",
)  # fmt: skip

#: Sandbox default allow list (docs/tool-policy.md §5.7).
SANDBOX_DEFAULT_ALLOW: tuple[str, ...] = (
    "exec", "process", "read", "write", "edit", "apply_patch", "image", "sessions_list",
    "sessions_history", "sessions_send", "sessions_spawn", "sessions_yield", "subagents",
    "session_status",
)  # fmt: skip

#: Sandbox default deny list (docs/tool-policy.md §5.7).
SANDBOX_DEFAULT_DENY: tuple[str, ...] = (
    "browser",
    "canvas",
    "nodes",
    "cron",
    "gateway",
    *CHANNEL_IDS,
)

#: Sub-agent default denies for every sub-agent (docs/tool-policy.md §5.8).
SUBAGENT_ALWAYS_DENY: tuple[str, ...] = (
    "gateway", "agents_list", "session_status", "cron", "sessions_send",
)  # fmt: skip

#: Sub-agent default denies added for leaf sub-agents (docs/tool-policy.md §5.8).
SUBAGENT_LEAF_DENY: tuple[str, ...] = (
    "subagents",
    "sessions_list",
    "sessions_history",
    "sessions_spawn",
)


# ---------------------------------------------------------------------------------------------
# Cedar names

AGENT_TYPE = "Agent"
TOOL_TYPE = "Tool"
ACTION_TYPE = "Action"

#: Prefixes of group action ids; a tool whose name starts with one is escaped with ``tool:``.
RESERVED_PREFIXES = ("group:", "plugin:", "tool:")

GROUP_PLUGINS = "group:plugins"
GROUP_OWNER_ONLY = "group:owner-only"


def action_uid(name: str) -> EntityUID:
    """``Action::"<name>"`` for a normalized tool name (reserved prefixes escaped)."""
    return EntityUID(ACTION_TYPE, "tool:" + name if name.startswith(RESERVED_PREFIXES) else name)


def group_uid(group: str) -> EntityUID:
    """The action group of a core group key (``group:fs``), ``group:plugins`` or owner-only."""
    return EntityUID(ACTION_TYPE, group)


def plugin_uid(plugin_key: str) -> EntityUID:
    """``Action::"plugin:<id>"``: the group of one plugin's tools (trimmed, lower-cased id)."""
    return EntityUID(ACTION_TYPE, f"plugin:{plugin_key}")


def agent_uid(agent_id: str) -> EntityUID:
    """``Agent::"<agent id>"``, the principal of a request."""
    return EntityUID(AGENT_TYPE, agent_id)


# ---------------------------------------------------------------------------------------------
# Tools of a run


class ToolsError(CedarliteError):
    """A tool list (docs/tool-policy.md §4.2) that is not a list of tool objects."""

    code = "E0810"


_F = TypeVar("_F", bound=Callable[..., Any])


def guard_depth(fn: _F) -> _F:
    """Turn a ``RecursionError`` from pathologically nested input (a tool list, configuration
    or parameter schema) into a :class:`ToolsError`: callers get a clear error, never a crash."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except RecursionError:
            raise ToolsError(
                "the tools, configuration or parameter schemas are nested too deeply"
            ) from None

    return wrapper  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class ToolInfo:
    """One tool of a run, as registered in a :class:`ToolCatalog`.

    ``name`` is the name exactly as given; ``normalized`` its :func:`norm`; ``key`` the id of
    its resource entity ``Tool::"<key>"`` (the name, made unique within the catalog).
    ``plugin_key`` is the plugin id trimmed and lower-cased (``None`` for core tools, ``""`` for
    a blank plugin id, which gets no plugin group). ``dropped`` says why registration rejected
    the tool (``None`` when it is registered); ``collides_with`` lists the earlier optional
    tools of the same name that take its name when they load (docs/tool-policy.md §6.2 step 3), and
    ``name_taken`` marks an optional tool whose name is certainly taken (it is removed whether
    or not it loads; which of the two removes it depends on the run).
    """

    index: int
    name: Any
    key: str
    normalized: str
    plugin_id: str | None = None
    plugin_key: str | None = None
    optional: bool = False
    owner_only: bool = False
    parameters: Mapping[str, Any] | None = None
    dropped: str | None = None
    collides_with: tuple[int, ...] = ()
    name_taken: bool = False
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def is_plugin(self) -> bool:
        """A plugin tool: one with a string ``pluginId``."""
        return self.plugin_id is not None

    @property
    def is_mcp(self) -> bool:
        """An MCP tool: a plugin tool of plugin ``bundle-mcp``."""
        return self.plugin_id == BUNDLE_MCP

    @property
    def registered(self) -> bool:
        """Not rejected by the static part of registration."""
        return self.dropped is None

    @property
    def owner_restricted(self) -> bool:
        """Removed for non-owner senders (docs/tool-policy.md §7): flagged, or one of the owner-only
        names."""
        return self.owner_only or self.normalized in OWNER_ONLY_TOOLS

    @property
    def action(self) -> EntityUID:
        """The tool's action, ``Action::"<normalized name>"``."""
        return action_uid(self.normalized)

    @property
    def resource(self) -> EntityUID:
        """The tool instance, ``Tool::"<key>"``."""
        return EntityUID(TOOL_TYPE, self.key)


class ToolCatalog:
    """The tools of a run, registered, with the entities the compiled policies need.

    Build one with :meth:`from_tools` (the spec's tool list) or :meth:`core` (the 32 core tools).
    It is immutable; :attr:`fingerprint` identifies it (a compiled policy set records the
    fingerprint of the catalog it was compiled against). It is an
    :class:`~cedarlite.EntityProvider`.
    """

    def __init__(self, tools: Sequence[ToolInfo]) -> None:
        self.tools: tuple[ToolInfo, ...] = tuple(tools)
        self.fingerprint: str = _fingerprint(self.tools)

    # -- construction ------------------------------------------------------------------------

    @classmethod
    def from_tools(cls, tools: Iterable[Mapping[str, Any]]) -> ToolCatalog:
        """Register the tools of a run (docs/tool-policy.md §4.2, the static part of
        docs/tool-policy.md §6.2).

        Core tools are always kept. A plugin tool is dropped when its plugin id normalizes to
        the name of a core tool, when its exact name is a core tool's, or when an earlier
        plugin tool of that name is certainly kept. A name taken by earlier *optional* tools
        depends on whether they load, which the compiled policies decide.
        Raises :class:`ToolsError` for a tool that is not an object.
        """
        items = tool_list(tools)
        keys = _unique_keys([item.get("name") for item in items])
        core_names = {norm(t.get("name")) for t in items if not isinstance(t.get("pluginId"), str)}
        core_exact = {
            identity(t.get("name")) for t in items if not isinstance(t.get("pluginId"), str)
        }
        certainly_taken: set[Any] = set()
        maybe_taken: dict[Any, list[int]] = {}
        infos: list[ToolInfo] = []
        for i, item in enumerate(items):
            name = item.get("name")
            plugin_id = item.get("pluginId")
            params = item.get("parameters")
            info = ToolInfo(
                index=i,
                name=name,
                key=keys[i],
                normalized=norm(name),
                plugin_id=plugin_id if isinstance(plugin_id, str) else None,
                plugin_key=trim_lower(plugin_id) if isinstance(plugin_id, str) else None,
                optional=item.get("optional") is True,
                owner_only=item.get("ownerOnly") is True,
                parameters=params if isinstance(params, Mapping) else None,
                raw=item,
            )
            if info.is_plugin:
                info = _register(info, core_names, core_exact, certainly_taken, maybe_taken)
            infos.append(info)
        return cls(infos)

    @classmethod
    def core(cls, *extra: Mapping[str, Any]) -> ToolCatalog:
        """The 32 core tools (and ``extra`` tools after them)."""
        return cls.from_tools([{"name": t} for t in CORE_TOOL_IDS] + list(extra))

    # -- queries -----------------------------------------------------------------------------

    def __iter__(self) -> Iterator[ToolInfo]:
        return iter(self.tools)

    def __len__(self) -> int:
        return len(self.tools)

    def __repr__(self) -> str:
        return f"<ToolCatalog {self.fingerprint}: {len(self.tools)} tools>"

    @cached_property
    def registered(self) -> tuple[ToolInfo, ...]:
        """The tools that static registration kept, in input order."""
        return tuple(t for t in self.tools if t.registered)

    @cached_property
    def names(self) -> tuple[str, ...]:
        """The distinct normalized names of the registered tools, in input order."""
        return tuple(dict.fromkeys(t.normalized for t in self.registered))

    @cached_property
    def plugin_groups(self) -> dict[str, tuple[ToolInfo, ...]]:
        """Registered plugin tools by plugin key (blank keys get no group), in input order.

        An optional tool whose name is certainly taken never enters the pipeline and is left out.
        """
        out: dict[str, list[ToolInfo]] = {}
        for t in self.plugin_tools:
            if t.plugin_key:
                out.setdefault(t.plugin_key, []).append(t)
        return {k: tuple(v) for k, v in out.items()}

    @cached_property
    def plugin_tools(self) -> tuple[ToolInfo, ...]:
        """Every registered plugin tool that can enter the pipeline, in input order."""
        return tuple(t for t in self.registered if t.is_plugin and not t.name_taken)

    def by_key(self, key: str) -> ToolInfo | None:
        """The tool whose resource is ``Tool::"<key>"``."""
        return self._by_key.get(key)

    def find(self, name: Any) -> ToolInfo | None:
        """The first registered tool with this exact name."""
        for t in self.registered:
            if t.name == name and type(t.name) is type(name):
                return t
        return None

    @cached_property
    def _by_key(self) -> dict[str, ToolInfo]:
        return {t.key: t for t in self.tools}

    # -- entities ----------------------------------------------------------------------------

    def action_parents(self, name: str) -> frozenset[EntityUID]:
        """The groups of the action of a normalized tool name in this catalog."""
        parents = {group_uid(g) for g, members in CORE_GROUPS.items() if name in members}
        if name in OWNER_ONLY_TOOLS:
            parents.add(group_uid(GROUP_OWNER_ONLY))
        for t in self.plugin_tools:
            if t.normalized == name:
                parents.add(group_uid(GROUP_PLUGINS))
                if t.plugin_key:
                    parents.add(plugin_uid(t.plugin_key))
        return frozenset(parents)

    def provide_entities(self) -> Iterator[Entity]:
        """Actions with their groups, the group actions, and one ``Tool`` entity per tool."""
        groups = [*CORE_GROUPS, GROUP_PLUGINS, GROUP_OWNER_ONLY]
        for g in groups:
            yield Entity(group_uid(g))
        for key in self.plugin_groups:
            yield Entity(plugin_uid(key))
        for name in dict.fromkeys((*CORE_TOOL_IDS, *self.names)):
            yield Entity(action_uid(name), parents=self.action_parents(name))
        for t in self.registered:
            attrs: dict[str, Any] = {"name": t.name if isinstance(t.name, str) else ""}
            if t.plugin_id is not None:
                attrs["pluginId"] = t.plugin_id
            yield Entity(t.resource, Record(attrs))

    @cached_property
    def entities(self) -> Entities:
        """The entity store of this catalog (built once)."""
        return Entities(self.provide_entities())


def _register(
    info: ToolInfo,
    core_names: set[str],
    core_exact: set[Any],
    certainly_taken: set[Any],
    maybe_taken: dict[Any, list[int]],
) -> ToolInfo:
    """The static part of docs/tool-policy.md §6.2 for one plugin tool (in input order)."""
    if norm(info.plugin_id) in core_names:
        return replace(info, dropped="plugin-id-conflict")
    exact = identity(info.name)
    taken = exact in core_exact or exact in certainly_taken
    if taken and not info.optional:
        return replace(info, dropped="name-conflict")
    earlier = tuple(maybe_taken.get(exact, ()))
    if not info.optional:
        certainly_taken.add(exact)
    elif not taken:
        maybe_taken.setdefault(exact, []).append(info.index)
    return replace(info, collides_with=earlier, name_taken=taken)


def tool_list(tools: Any) -> list[Mapping[str, Any]]:
    """The tools of a run as a list of tool objects; anything else is a :class:`ToolsError`."""
    if isinstance(tools, Mapping | str | bytes) or not isinstance(tools, Iterable):
        raise ToolsError("tools must be a JSON array of tool objects")
    items = list(tools)
    for i, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise ToolsError(f"tools[{i}]: expected a tool object, got `{preview(item)}`")
    return items


def _unique_keys(names: Sequence[Any]) -> list[str]:
    """Resource ids: the name itself when unique, else ``name#2``, ``name#3``, ... (unused)."""
    bases = [n if isinstance(n, str) else json.dumps(n, default=repr) for n in names]
    used = set(bases)
    seen: set[str] = set()
    keys: list[str] = []
    for base in bases:
        if base not in seen:
            seen.add(base)
            keys.append(base)
            continue
        n = 2
        while f"{base}#{n}" in used:
            n += 1
        key = f"{base}#{n}"
        used.add(key)
        keys.append(key)
    return keys


def _fingerprint(tools: Sequence[ToolInfo]) -> str:
    data = [dict(t.raw) if t.raw else {"name": t.name} for t in tools]
    text = json.dumps(data, sort_keys=True, default=repr, ensure_ascii=True)
    return sha256(text.encode()).hexdigest()[:16]


# ---------------------------------------------------------------------------------------------
# MCP tool naming (docs/tool-policy.md §6.4)

_SERVER_LIMIT = 30
_NAME_LIMIT = 64
_SHOWN_CLASHES = 8


def _provider_safe(text: str, fallback: str) -> str:
    """Trim, replace every UTF-16 code unit outside ``[A-Za-z0-9_-]`` by ``-``."""
    out = []
    for ch in js_trim(text):
        if ch.isascii() and (ch.isalnum() or ch in "_-"):
            out.append(ch)
        else:
            out.append("--" if ord(ch) > 0xFFFF else "-")
    return "".join(out) or fallback


class McpTool(NamedTuple):
    """One MCP tool of a configured server, named for the run (docs/tool-policy.md §6.4).

    ``collides_with`` lists the names that took, or wanted, the same ``<server>__<tool>`` name
    case-insensitively after cleaning and cutting (the other MCP tools' own names and the
    run's other tools' names; at most 8 per clash). docs/tool-policy.md §6.4 numbers the later ones
    (``-2``), so a policy naming ``notes__delete_note`` means ``Delete_Note`` and not
    ``delete_note``; a strict adapter refuses such tools instead
    (:class:`cedarlite.hosts.mcp_gate.McpGate`).
    """

    name: str
    server: str
    tool: str
    parameters: Mapping[str, Any] | None = None
    collides_with: tuple[str, ...] = ()

    def to_tool(self) -> dict[str, Any]:
        """The tool object of docs/tool-policy.md §4.2 (plugin id ``bundle-mcp``)."""
        out: dict[str, Any] = {"name": self.name, "pluginId": BUNDLE_MCP}
        if self.parameters is not None:
            out["parameters"] = dict(self.parameters)
        return out


def mcp_tools(
    servers: Mapping[str, Sequence[Any]] | Sequence[tuple[str, Sequence[Any]]],
    reserved: Iterable[str] = (),
) -> tuple[list[McpTool], list[str]]:
    """Name the tools of MCP servers ``<server>__<tool>`` (docs/tool-policy.md §6.4).

    ``servers`` maps each configured server name (in configuration order) to its tools: names,
    or MCP tool descriptions ``{"name", "inputSchema"?}``. ``reserved`` are the names of the
    run's other tools. Returns the MCP tools sorted by name and the rename log lines.
    Tools whose names collide are numbered as the spec says and name each other in
    :attr:`McpTool.collides_with`.
    """
    pairs = list(servers.items()) if isinstance(servers, Mapping) else list(servers)
    used_servers: set[str] = set()
    server_parts: list[str] = []
    for server, _ in pairs:
        part = _provider_safe(server if isinstance(server, str) else "", "mcp")[:_SERVER_LIMIT]
        n = 2
        base = part
        while part.lower() in used_servers:
            suffix = f"-{n}"
            part = base[: max(1, _SERVER_LIMIT - len(suffix))] + suffix
            n += 1
        used_servers.add(part.lower())
        server_parts.append(part)
    entries: list[tuple[str, str, str, Mapping[str, Any] | None]] = []
    for (server, tools), part in zip(pairs, server_parts, strict=True):
        for tool in tools:
            desc = tool if isinstance(tool, Mapping) else {"name": tool}
            tool_name = desc.get("name")
            if not isinstance(tool_name, str) or not js_trim(tool_name):
                continue
            schema = desc.get("inputSchema", desc.get("parameters"))
            entries.append(
                (part, tool_name, server, schema if isinstance(schema, Mapping) else None)
            )
    entries.sort(key=lambda e: (e[0], e[1], e[2]))
    # Lower-cased name -> who holds it: a reserved name, or the index of an MCP tool in `out`.
    holders: dict[str, str | int] = {r.lower(): r for r in reserved}
    # Lower-cased wanted name -> who wanted it (its holder first when it was taken already).
    claims: dict[str, list[str | int]] = {}
    next_number: dict[str, int] = {}
    out: list[McpTool] = []
    log: list[str] = []
    for part, tool_name, server, schema in entries:
        limit = max(1, _NAME_LIMIT - len(part) - 2)
        tool_part = _provider_safe(tool_name, "tool")[:limit]
        name = wanted = f"{part}__{tool_part}"
        claimants = claims.setdefault(wanted.lower(), [])
        if not claimants and wanted.lower() in holders:
            claimants.append(holders[wanted.lower()])
        claimants.append(len(out))
        # The numbers an earlier claimant of this name tried are taken still: go on from there
        # (linear time for a server listing thousands of tools cut to one name).
        n = next_number.get(wanted.lower(), 2)
        while name.lower() in holders:
            suffix = f"-{n}"
            name = f"{part}__{tool_part[: max(1, limit - len(suffix))]}{suffix}"
            n += 1
        next_number[wanted.lower()] = n
        holders[name.lower()] = len(out)
        if name != f"{server}__{tool_name}":
            log.append(
                f'bundle-mcp: tool "{tool_name}" from server "{server}" registered as "{name}" '
                "to keep the tool name provider-safe."
            )
        out.append(McpTool(name, server, tool_name, schema))
    clashes: dict[int, list[str]] = {}
    for claimants in claims.values():
        if len(claimants) > 1:
            names = [c if isinstance(c, str) else out[c].tool for c in claimants]
            for c in claimants:
                if isinstance(c, int):  # a few names say it (thousands could collide)
                    others = [n for n in names[: _SHOWN_CLASHES + 1] if n != out[c].tool]
                    clashes.setdefault(c, []).extend(others[:_SHOWN_CLASHES])
    for i, others in clashes.items():
        out[i] = out[i]._replace(collides_with=tuple(dict.fromkeys(others)))
    out.sort(key=lambda t: t.name)
    return out, log
