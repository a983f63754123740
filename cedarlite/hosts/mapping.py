"""Host tools → OpenClaw tools: the names and arguments of an agent host's calls, as data.

A host (Claude Code, and the hosts that copy its hook JSON) calls its own tools (``Bash``,
``Read``, ``mcp__github__create_issue``); cedarlite's policies speak of OpenClaw tools (``exec``,
``read``, ``github__create_issue``) and their arguments (``command``, ``path``). A
:class:`HostMapping` turns one into the other:

* a built-in tool with an entry in :data:`CLAUDE_CODE_TOOLS` becomes its ``tool``, its
  arguments renamed by ``arguments`` (``file_path`` → ``path``; a rename to ``null`` drops the
  argument; arguments not listed pass unchanged), its ``paths`` normalised (:func:`clean_path`)
  and made relative to the call's working directory when they lie inside it (OpenClaw paths
  are workspace-relative), each with its absolute form beside it when that differs
  (``absolutePath``: :func:`absolute_path`, so that rules on absolute locations are not beaten
  by the working directory or by ``..``), and, with ``each``, one call per element of that
  array argument (``MultiEdit``: one ``edit`` per edit);
* ``mcp__<server>__<tool>`` becomes the MCP tool ``<server>__<tool>`` (plugin ``bundle-mcp``),
  named as docs/tool-policy.md §6.4 names MCP tools (:func:`cedarlite.tools.catalog.mcp_tools`);
* any other tool becomes its lower-cased name (``TodoWrite`` → ``todowrite``). No profile lists
  these: a configuration allows them by name (``alsoAllow``).

The arguments of the last two pass unchanged but for the path-like ones
(:data:`CLEANED_ARGUMENTS`), normalised by :func:`clean_path`.

The table is data: a configuration overrides entries by host tool name (``null`` removes one)
with :meth:`HostMapping.claude_code`. :meth:`HostMapping.catalog` is the tool list of a run of
the host (every built-in's OpenClaw tool, with parameter schemas for ``glob`` and ``grep``), to
which a call's tool is added when it is not in it (MCP tools are known only when called).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from ..errors import CedarliteError
from ..tools.arguments import PATH_ARGUMENTS
from ..tools.catalog import BUNDLE_MCP, mcp_tools

#: The built-in tools of Claude Code with an OpenClaw counterpart docs/hosts.md; the
#: contract rows, and ``glob``/``grep`` typed so that path rules see their ``path``).
CLAUDE_CODE_TOOLS: Mapping[str, Mapping[str, Any]] = {
    # Bash's `timeout` is in milliseconds; exec's is in seconds: never the one as the other.
    "Bash": {
        "tool": "exec",
        "arguments": {"run_in_background": "background", "timeout": "timeoutMs"},
    },
    "Read": {"tool": "read", "arguments": {"file_path": "path"}, "paths": ["path"]},
    "Write": {"tool": "write", "arguments": {"file_path": "path"}, "paths": ["path"]},
    "Edit": {
        "tool": "edit",
        "arguments": {"file_path": "path", "old_string": "oldText", "new_string": "newText"},
        "paths": ["path"],
    },
    # Removed in Claude Code 2.0; old sessions still send it: one `edit` decision per edit.
    "MultiEdit": {
        "tool": "edit",
        "arguments": {"file_path": "path", "old_string": "oldText", "new_string": "newText"},
        "paths": ["path"],
        "each": "edits",
    },
    "WebFetch": {"tool": "web_fetch"},
    "WebSearch": {"tool": "web_search"},
    "Glob": {"tool": "glob", "paths": ["path"]},
    "Grep": {"tool": "grep", "paths": ["path"]},
}

#: Claude Code's other built-in tools (``BUILTIN_TOOL_NAMES``, 2.1.x; ``Task`` and ``KillShell``
#: are the older names of ``Agent`` and ``TaskStop``). Each is a tool of the run's catalog under
#: its lower-cased name, so that a configuration can allow or deny it by that name.
CLAUDE_CODE_BUILTINS: tuple[str, ...] = (
    "Agent", "Task", "NotebookEdit", "TodoWrite", "PowerShell", "AskUserQuestion",
    "ExitPlanMode", "EnterPlanMode", "TaskStop", "KillShell", "BashOutput", "TaskOutput",
    "TaskCreate", "TaskGet", "TaskUpdate", "TaskList", "CronCreate", "CronDelete", "CronList",
    "Skill", "SlashCommand", "LSP", "ToolSearch", "Monitor", "SendMessage", "EnterWorktree",
    "ExitWorktree", "ListMcpResourcesTool", "ReadMcpResourceTool",
)  # fmt: skip

#: Parameter schemas of the OpenClaw tools of the table that are not core tools (the core
#: tools' schemas are :data:`cedarlite.tools.params.CORE_PARAMETERS`).
TOOL_PARAMETERS: Mapping[str, Mapping[str, Any]] = {
    "glob": {
        "type": "object",
        "properties": {"pattern": {"type": "string"}, "path": {"type": "string"}},
        "required": ["pattern"],
    },
    "grep": {
        "type": "object",
        "properties": {
            "pattern": {"type": "string"},
            "path": {"type": "string"},
            "glob": {"type": "string"},
        },
        "required": ["pattern"],
    },
}

#: At most this many calls are made of one host call (``MultiEdit``'s edits).
MAX_EACH = 256

#: Longer tool names are refused (MCP names are at most 64 characters after cleaning).
MAX_NAME = 256

_ENTRY_KEYS = ("tool", "arguments", "paths", "each")


class MappingError(CedarliteError):
    """A host call that cannot be mapped (a malformed argument), or a malformed mapping
    override in a configuration (``path`` names where)."""

    code = "E0920"


# Named tuples, not dataclasses: this module loads in every hook process (one per tool call),
# where a dataclass costs ~1 ms to create and a named tuple a tenth of that.
class ToolMapping(NamedTuple):
    """One entry of the table: the host tool ``host`` is the OpenClaw tool ``tool``.

    ``arguments`` renames host arguments (``None`` drops one; others pass unchanged);
    ``paths`` are OpenClaw arguments holding file paths, made relative to the working
    directory when inside it; ``each`` names an array argument whose elements are decided as
    separate calls (their keys join the call's other arguments before the renaming).
    """

    host: str
    tool: str
    arguments: Mapping[str, str | None]
    paths: tuple[str, ...] = ()
    each: str | None = None

    @classmethod
    def from_json(cls, host: str, data: Any, path: str = "") -> ToolMapping:
        """Read one entry (``{"tool", "arguments"?, "paths"?, "each"?}``); raises
        :class:`MappingError` naming ``path`` and the bad value."""
        where = path or host
        if not isinstance(data, Mapping):
            raise MappingError(f"`{where}`: a tool mapping must be an object")
        for key in data:
            if key not in _ENTRY_KEYS:
                raise MappingError(
                    f"`{where}`: unknown key `{key}`",
                    help="the keys are " + ", ".join(f"`{k}`" for k in _ENTRY_KEYS),
                )
        tool = data.get("tool")
        if not isinstance(tool, str) or not tool.strip():
            raise MappingError(f"`{where}.tool`: expected the OpenClaw tool name, a string")
        renames = data.get("arguments") or {}
        if not isinstance(renames, Mapping) or not all(
            isinstance(v, str | None) for v in renames.values()
        ):
            raise MappingError(
                f"`{where}.arguments`: expected an object of argument names (or null to drop)"
            )
        paths = data.get("paths") or []
        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
            raise MappingError(f"`{where}.paths`: expected an array of argument names")
        each = data.get("each")
        if each is not None and not isinstance(each, str):
            raise MappingError(f"`{where}.each`: expected an argument name")
        return cls(host, tool.strip(), dict(renames), tuple(paths), each)


class MappedCall(NamedTuple):
    """A host call as OpenClaw calls: the tool (``plugin_id`` ``"bundle-mcp"`` for an MCP
    tool) and the params of each call to decide (several for ``each``)."""

    host_tool: str
    tool: str
    plugin_id: str | None
    params: tuple[Any, ...]

    def tool_entry(self) -> dict[str, Any]:
        """The tool object of docs/tool-policy.md §4.2 for a catalog that lacks this tool."""
        entry: dict[str, Any] = {"name": self.tool}
        if self.plugin_id is not None:
            entry["pluginId"] = self.plugin_id
        parameters = TOOL_PARAMETERS.get(self.tool)
        if parameters is not None and self.plugin_id is None:
            entry["parameters"] = dict(parameters)
        return entry


class HostMapping:
    """The tool mapping of a host: :meth:`claude_code` for Claude Code's."""

    def __init__(self, entries: Mapping[str, ToolMapping], builtins: Sequence[str] = ()) -> None:
        self.entries: Mapping[str, ToolMapping] = dict(entries)
        self.builtins: tuple[str, ...] = tuple(builtins)

    @classmethod
    def claude_code(cls, overrides: Any = None, path: str = "claudeCode.tools") -> HostMapping:
        """Claude Code's table with a configuration's ``overrides`` (host tool name → entry,
        or ``null`` to fall back to the lower-cased name); raises :class:`MappingError`."""
        entries = {
            host: ToolMapping.from_json(host, data) for host, data in CLAUDE_CODE_TOOLS.items()
        }
        if overrides is not None:
            if not isinstance(overrides, Mapping):
                raise MappingError(f"`{path}`: expected an object of host tool names")
            for host, data in overrides.items():
                if data is None:
                    entries.pop(host, None)
                else:
                    entries[host] = ToolMapping.from_json(host, data, f"{path}.{host}")
        return cls(entries, CLAUDE_CODE_BUILTINS)

    def catalog(self) -> list[dict[str, Any]]:
        """The run's tool list: the OpenClaw tool of every built-in, in table order."""
        names = [m.tool for m in self.entries.values()]
        names += [b.lower() for b in self.builtins if b not in self.entries]
        out = []
        for name in dict.fromkeys(names):
            entry: dict[str, Any] = {"name": name}
            if name in TOOL_PARAMETERS:
                entry["parameters"] = dict(TOOL_PARAMETERS[name])
            out.append(entry)
        return out

    def map_call(
        self, tool_name: Any, tool_input: Any, *, cwd: Any = None, mcp_server: Any = None
    ) -> MappedCall:
        """The OpenClaw calls of one host call; raises :class:`MappingError` for a name that
        is not a string (or is too long), a malformed ``each`` array, or arguments that
        collide once renamed."""
        if not isinstance(tool_name, str) or not tool_name.strip():
            raise MappingError("`tool_name` must be a non-empty string")
        if len(tool_name) > MAX_NAME:
            raise MappingError(f"`tool_name` is longer than {MAX_NAME} characters")
        entry = self.entries.get(tool_name)
        if entry is not None:
            params = [_rename(entry, p, cwd) for p in _split(entry, tool_input)]
            return MappedCall(tool_name, entry.tool, None, tuple(params))
        params = _clean_paths(tool_input)
        mcp = mcp_name(tool_name, mcp_server)
        if mcp is not None:
            return MappedCall(tool_name, mcp, BUNDLE_MCP, (params,))
        return MappedCall(tool_name, tool_name.strip().lower(), None, (params,))


def mcp_name(tool_name: str, server: Any = None) -> str | None:
    """``mcp__<server>__<tool>`` as the MCP tool name ``<server>__<tool>`` of docs/tool-policy.md
    §6.4 (``None`` for other names). The server part is the one in the host's tool name; the hook
    input's ``mcp_server.name``, when it has one, says where it ends (a server name may hold
    ``__``)."""
    if not tool_name.startswith("mcp__"):
        return None
    rest = tool_name[5:]
    server_part = None
    if isinstance(server, Mapping) and isinstance(server.get("name"), str):
        known = _host_clean(server["name"])
        if known and rest.startswith(known + "__"):
            server_part = known
    if server_part is None:
        server_part, sep, _ = rest.partition("__")
        if not sep:
            return None
    tool_part = rest[len(server_part) + 2 :]
    if not server_part or not tool_part:
        return None
    named, _ = mcp_tools({server_part: [tool_part]})
    return named[0].name if named else None


def _host_clean(name: str) -> str:
    """A server name as Claude Code writes it in tool names (``[^A-Za-z0-9_-]`` → ``_``)."""
    return "".join(c if c.isascii() and (c.isalnum() or c in "_-") else "_" for c in name)


def _split(entry: ToolMapping, tool_input: Any) -> list[Any]:
    """The params of each call: one, or one per element of the ``each`` array."""
    if entry.each is None or not isinstance(tool_input, Mapping):
        return [tool_input]
    items = tool_input.get(entry.each)
    if not isinstance(items, list) or not items:
        raise MappingError(f"{entry.host}: `{entry.each}` must be a non-empty array")
    if len(items) > MAX_EACH:
        raise MappingError(f"{entry.host}: more than {MAX_EACH} elements in `{entry.each}`")
    common = {k: v for k, v in tool_input.items() if k != entry.each}
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise MappingError(f"{entry.host}: `{entry.each}[{i}]` must be an object")
        clash = next((k for k in item if k in common), None)
        if clash is not None:
            raise MappingError(f"{entry.host}: `{entry.each}[{i}].{clash}` repeats `{clash}`")
        out.append({**common, **item})
    return out


def _rename(entry: ToolMapping, params: Any, cwd: Any) -> Any:
    """Rename the arguments of one call and make its paths workspace-relative."""
    if not isinstance(params, Mapping):
        return params  # the guard refuses arguments that are not an object, with its message
    out: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for key, value in params.items():
        target = entry.arguments.get(key, key)  # a rename to None drops it
        if target is None:
            continue
        if target in out:
            raise MappingError(
                f"{entry.host}: arguments `{sources[target]}` and `{key}` are both `{target}`"
            )
        out[target] = value
        sources[target] = key
    for name in entry.paths:
        value = out.get(name)
        if isinstance(value, str):
            out[name] = relative_path(value, cwd)
            absolute = absolute_path(value, cwd)
            if absolute is not None and absolute != out[name]:
                key = absolute_name(name)
                if key in sources:
                    raise MappingError(
                        f"{entry.host}: argument `{sources[key]}` is `{key}`, which the hook "
                        f"sets (the absolute form of `{name}`)"
                    )
                out[key] = absolute
    return out


#: The arguments of tools outside the table that :func:`clean_path` cleans (not ``url``: a
#: URL's ``//`` is no path's).
CLEANED_ARGUMENTS = tuple(n for n in PATH_ARGUMENTS if n != "url")


def _clean_paths(params: Any) -> Any:
    """The arguments of a tool outside the table, their path-like ones cleaned."""
    if not isinstance(params, Mapping):
        return params
    found = [n for n in CLEANED_ARGUMENTS if isinstance(params.get(n), str)]
    if not found:
        return params
    out = dict(params)
    for name in found:
        out[name] = clean_path(out[name])
    return out


def absolute_name(name: str) -> str:
    """The argument holding the absolute form of the path argument ``name`` (``path`` →
    ``absolutePath``, ``notebook_path`` → ``absoluteNotebook_path``)."""
    return "absolute" + name[:1].upper() + name[1:]


def clean_path(path: str) -> str:
    """``path`` without empty and ``.`` segments (``//etc/./shadow`` is ``/etc/shadow``,
    ``./a//b/`` is ``a/b``, ``.`` stays ``.``); ``..`` segments stay, for the rules that refuse
    them. Textual, linear in the length of ``path``."""
    if "/" not in path:
        return path
    absolute = path.startswith("/")
    parts = [p for p in path.split("/") if p and p != "."]
    text = "/".join(parts)
    if absolute:
        return "/" + text
    return text or "."


def resolve_path(path: str) -> str:
    """An absolute ``path`` cleaned and with ``..`` resolved textually (``/usr/../etc`` is
    ``/etc``; never above ``/``). Symbolic links are not followed: the file system may
    resolve ``link/..`` elsewhere, which is why :func:`relative_path` keeps ``..``."""
    parts: list[str] = []
    for p in path.split("/"):
        if p == "..":
            if parts:
                parts.pop()
        elif p and p != ".":
            parts.append(p)
    return "/" + "/".join(parts)


def absolute_path(path: str, cwd: Any) -> str | None:
    """The absolute form of ``path`` (resolved against the directory ``cwd`` when relative):
    cleaned, ``..`` resolved (:func:`resolve_path`); ``None`` when it has none (a relative
    path without an absolute ``cwd``, a ``~`` path, an empty one)."""
    if path.startswith("/"):
        return resolve_path(path)
    if not path or path.startswith("~") or not isinstance(cwd, str) or not cwd.startswith("/"):
        return None
    return resolve_path(cwd + "/" + path)


def relative_path(path: str, cwd: Any) -> str:
    """``path`` cleaned (:func:`clean_path`) and relative to the directory ``cwd`` when it
    lies inside it (``/w/app/src/a.py`` in ``/w/app`` is ``src/a.py``, ``/w/app`` itself is
    ``.``); otherwise as cleaned, and always when ``cwd`` is ``/`` (the whole file system is no
    workspace). Purely textual: ``..`` segments stay, for the rules that refuse them."""
    path = clean_path(path)
    if not isinstance(cwd, str) or not cwd.startswith("/") or not path.startswith("/"):
        return path
    base = resolve_path(cwd).rstrip("/")
    if not base:
        return path
    if path == base:
        return "."
    if path.startswith(base + "/"):
        return path[len(base) + 1 :]
    return path
