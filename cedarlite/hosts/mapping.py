"""Host tools → OpenClaw tools: the names and arguments of an agent host's calls, as data.

A host (Claude Code, and the hosts that copy its hook JSON) calls its own tools (``Bash``,
``Read``, ``mcp__github__create_issue``); cedarlite's policies speak of OpenClaw tools (``exec``,
``read``, ``github__create_issue``) and their arguments (``command``, ``path``). A
:class:`HostMapping` turns one into the other:

* a built-in tool with an entry in :data:`CLAUDE_CODE_TOOLS` becomes its ``tool``, its
  arguments renamed by ``arguments`` (``file_path`` → ``path``; a rename to ``null`` drops the
  argument; arguments not listed pass unchanged) and, with ``each``, one call per element of
  that array argument (``MultiEdit``: one ``edit`` per edit); ``paths`` names arguments that
  are paths besides those :func:`find_paths` finds by name (``Glob``'s ``pattern``);
* ``mcp__<server>__<tool>`` becomes the MCP tool ``<server>__<tool>`` (plugin ``bundle-mcp``),
  named as docs/tool-policy.md §6.4 names MCP tools (:func:`cedarlite.tools.catalog.mcp_tools`);
* any other tool becomes its lower-cased name (``TodoWrite`` → ``todowrite``). No profile lists
  these: a configuration allows them by name (``alsoAllow``).

Then one principle holds for every tool, and for every adapter (the Claude Code hook here, the
MCP middleware and proxy through :class:`~cedarlite.hosts.mcp_gate.McpGate`): every argument
that names a file or directory, at any depth, is a path to the rules (:func:`path_calls`): the
call is decided once per path it names, with ``path`` as the host sent it (cleaned, never made
relative), ``absolutePath`` and ``inWorkspace`` beside it (docs/paths.md). The path finder lives
here, beside the table, because what a host's arguments mean is this module's one concern.

The table is data: a configuration overrides entries by host tool name (``null`` removes one)
with :meth:`HostMapping.claude_code`. :meth:`HostMapping.catalog` is the tool list of a run of
the host (every built-in's OpenClaw tool, with parameter schemas for ``glob`` and ``grep``), to
which a call's tool is added when it is not in it (MCP tools are known only when called).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from ..errors import CedarliteError
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
    # Glob's pattern is a path (`/home/u/**/*.pem`); Grep's `glob` is one by its name.
    "Glob": {"tool": "glob", "paths": ["path", "pattern"]},
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
    override in a configuration (``path`` names where; ``loc`` is that place as a JSON path
    below the overrides, ``()`` when unknown)."""

    code = "E0920"

    def __init__(self, message: str, *, loc: tuple[str | int, ...] = (), **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.loc = loc


# Named tuples, not dataclasses: this module loads in every hook process (one per tool call),
# where a dataclass costs ~1 ms to create and a named tuple a tenth of that.
class ToolMapping(NamedTuple):
    """One entry of the table: the host tool ``host`` is the OpenClaw tool ``tool``.

    ``arguments`` renames host arguments (``None`` drops one; others pass unchanged);
    ``paths`` are OpenClaw arguments holding file paths besides those named as paths
    (:func:`find_paths`); ``each`` names an array argument whose elements are decided as
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
            raise MappingError(f"`{where}`: a tool mapping must be an object", loc=(host,))
        for key in data:
            if key not in _ENTRY_KEYS:
                # lazy on purpose: only a mistake needs it (the JSON locator, suggestions)
                from ..tools.lint import did_you_mean

                raise MappingError(
                    f"`{where}`: unknown key `{key}`",
                    help=did_you_mean(key, _ENTRY_KEYS)
                    or "the keys are " + ", ".join(f"`{k}`" for k in _ENTRY_KEYS),
                    loc=(host, key),
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

    def check(self, path: str = "claudeCode.tools") -> None:
        """Raise :class:`MappingError` for a mistake that reading could not see: a misspelt
        built-in name (``NotebookEdti``), a rename to a near miss of a parameter the OpenClaw
        tool requires (``pth`` for ``write``'s ``path``: every call would be denied), a
        ``paths`` name that no argument has once renamed (the path rules would not see it).
        Done when a guard is built (``--print-settings``, a changed configuration), not on
        every call."""
        for host, entry in self.entries.items():
            _check_host_name(host, path)
            _check_argument_map(entry, f"{path}.{host}")

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
        self,
        tool_name: Any,
        tool_input: Any,
        *,
        cwd: Any = None,
        mcp_server: Any = None,
        workspace: Any = None,
    ) -> MappedCall:
        """The OpenClaw calls of one host call, one per file or directory it names
        (:func:`path_calls`; ``workspace`` defaults to ``cwd``); raises :class:`MappingError`
        for a name that is not a string (or is too long), a malformed ``each`` array,
        arguments that collide once renamed, or a path holding a control character."""
        if not isinstance(tool_name, str) or not tool_name.strip():
            raise MappingError("`tool_name` must be a non-empty string")
        if len(tool_name) > MAX_NAME:
            raise MappingError(f"`tool_name` is longer than {MAX_NAME} characters")
        entry = self.entries.get(tool_name)
        if entry is not None:
            renamed = [_rename(entry, p) for p in _split(entry, tool_input)]
            if entry.tool in SEARCH_TOOLS:  # a search without a root searches the cwd
                renamed = [_with_root(p, cwd) for p in renamed]
            params = _each_path(renamed, cwd, workspace, entry.paths)
            return MappedCall(tool_name, entry.tool, None, params)
        params = _each_path([tool_input], cwd, workspace, ())
        mcp = mcp_name(tool_name, mcp_server)
        if mcp is not None:
            return MappedCall(tool_name, mcp, BUNDLE_MCP, params)
        return MappedCall(tool_name, tool_name.strip().lower(), None, params)


def _check_host_name(host: Any, path: str) -> None:
    """An override's host tool name: a misspelt built-in (``NotebookEdti``) is an error; other
    names (MCP tools, tools newer than this table) are taken as they are."""
    # lazy on purpose: only a mistake needs it (the JSON locator, suggestions)
    from ..tools.lint import did_you_mean

    known = (*CLAUDE_CODE_TOOLS, *CLAUDE_CODE_BUILTINS)
    if host in known or not isinstance(host, str) or host.startswith("mcp__"):
        return
    hint = did_you_mean(host, known, cutoff=0.75)
    if hint is not None:
        raise MappingError(f"`{path}`: `{host}` is not a Claude Code tool", help=hint, loc=(host,))


def _check_argument_map(entry: ToolMapping, path: str) -> None:
    """An override's argument names: a rename to a near miss of a parameter the OpenClaw tool
    requires (``pth`` for ``write``'s ``path``), and a ``paths`` name that no argument of the
    call has once renamed (a host name renamed away, or a near miss), are errors: the first
    denies every call, the second leaves a path unchecked by the path rules."""
    # lazy on purpose: only checking a mapping needs the parameter schemas, which a hook process
    # never loads (test_layering)
    from ..tools.lint import did_you_mean
    from ..tools.params import CORE_PARAMETERS

    schema = CORE_PARAMETERS.get(entry.tool) or TOOL_PARAMETERS.get(entry.tool) or {}
    properties = list(schema.get("properties", ()))
    required = list(schema.get("required", ()))
    targets = [t for t in entry.arguments.values() if t is not None]
    for source, target in entry.arguments.items():
        if target is None or target in properties:
            continue
        hint = did_you_mean(target, required, cutoff=0.75)
        if hint is not None:
            raise MappingError(
                f"`{path}.arguments.{source}`: `{target}` is not a parameter of `{entry.tool}`",
                help=hint,
                loc=(entry.host, "arguments", source),
            )
    names = [*targets, *properties]
    for i, name in enumerate(entry.paths):
        if name in names:
            continue
        if name in entry.arguments:
            renamed = entry.arguments[name]
            message = f"`{name}` is renamed to `{renamed}`" if renamed else f"`{name}` is dropped"
            hint = f"name `{renamed}`" if renamed else None
        else:
            message, hint = "", did_you_mean(name, names, cutoff=0.75)
            if hint is None:
                continue  # an argument the host sends under that name
        raise MappingError(
            f"`{path}.paths[{i}]`: the call has no argument `{name}`"
            + (f" ({message})" if message else ""),
            help=hint,
            loc=(entry.host, "paths", i),
        )


def mcp_name(tool_name: str, server: Any = None) -> str | None:
    """``mcp__<server>__<tool>`` as the MCP tool name ``<server>__<tool>`` of docs/tool-policy.md
    §6.4 (``None`` for other names). The server part is the one in the host's
    tool name; the hook input's ``mcp_server.name``, when it has one, says where it ends (a server
    name may hold ``__``)."""
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


#: The OpenClaw tools of the table that search a directory: ``path`` is the root, and without
#: one they search the working directory (Claude Code's Grep and Glob).
SEARCH_TOOLS = frozenset({"grep", "glob"})


def _with_root(params: Any, cwd: Any) -> Any:
    """A search's arguments with its root: the ``path`` sent, or else the working directory
    (so that the rules judge what it searches; a search of a home is one of every secret)."""
    if not isinstance(params, Mapping) or "path" in params or not isinstance(cwd, str):
        return params
    return {**params, "path": cwd}


def _rename(entry: ToolMapping, params: Any) -> Any:
    """Rename the arguments of one call."""
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
    return out


# -- the one mapping principle: every argument that names a file is a path to the rules --------

#: Argument names that name a file or directory wherever they sit (compared lower-cased, without
#: ``_`` and ``-``), besides those whose last word is one of :data:`_PATH_WORDS`.
_PATH_NAMES = frozenset(
    {"cwd", "workdir", "source", "sources", "destination", "include", "exclude"}
)
#: Of those, the names other tools also give to text (`source`: a program's code): a value
#: spanning several lines there is text, not a path.
_TEXT_TOO = frozenset({"source", "sources", "destination", "include", "exclude"})
#: The last word of an argument name that names a file or directory (``file_path``,
#: ``notebookPath``, ``paths``, ``rootDir``, ``glob``), in camelCase or snake_case.
_PATH_WORDS = frozenset(
    {"path", "paths", "file", "files", "filename", "filenames", "dir", "dirs", "directory",
     "directories", "folder", "folders", "root", "roots", "glob", "globs"}
)  # fmt: skip

#: The attributes the adapters set beside a call's arguments, for the path they judge: its
#: absolute form and whether it lies in the workspace. What a caller sent under these names is
#: replaced (:func:`path_calls`).
PATH_ATTRIBUTES = ("absolutePath", "inWorkspace")


def without_path_attributes(params: Any) -> Any:
    """``params`` without what the caller sent under :data:`PATH_ATTRIBUTES`: only an adapter
    sets those, for the path it judged (a model's ``"inWorkspace": true`` is not one)."""
    if isinstance(params, Mapping) and any(k in params for k in PATH_ATTRIBUTES):
        return {k: v for k, v in params.items() if k not in PATH_ATTRIBUTES}
    return params


#: At most this many values of one call's arguments are visited looking for paths.
MAX_VALUES = 100_000


def is_path_name(name: str) -> bool:
    """Whether the argument ``name`` names files or directories (see :data:`_PATH_WORDS`)."""
    if len(name) > MAX_NAME:
        return False
    flat = name.replace("_", "").replace("-", "").lower()
    if flat in _PATH_NAMES:
        return True
    # The last word: after the last `_`/`-`, or from the last capital of a camelCase name.
    last = name.replace("-", "_").rpartition("_")[2]
    for i in range(len(last) - 1, 0, -1):
        if last[i].isupper() and last[i - 1].islower():
            last = last[i:]
            break
    return last.lower() in _PATH_WORDS


def find_paths(
    params: Any, names: Sequence[str] = (), *, every_string: bool = False
) -> list[tuple[str, str]]:
    """Every string of ``params`` that names a file or directory, as ``(where, text)`` in the
    order of the arguments (``where`` a JSON path: ``files[0].path``, cut short past
    :data:`_WHERE_MAX` characters): the value of an argument with a path name
    (:func:`is_path_name`, or one of ``names`` at the top level), or an element of such an
    array, at any depth of objects and arrays. Linear in the size of ``params``, iterative (no
    recursion in its depth), at most :data:`MAX_VALUES` values visited (more raise
    :class:`MappingError`). ``every_string``: every string counts, whatever its name (a write
    tool of unknown meaning: any of its strings may name a file)."""
    return [(where, text) for where, text, _, _ in _walk(params, names, every_string)]


#: A JSON path in a message is cut here (so that building it costs no more than this a value:
#: linear time however deep the arguments).
_WHERE_MAX = 120


def _walk(
    params: Any, names: Sequence[str], every_string: bool
) -> list[tuple[str, str, str, bool]]:
    """:func:`find_paths` with, for each path, the name of the argument holding it and whether
    that is a top-level argument."""
    if not isinstance(params, Mapping):
        return []
    found: list[tuple[str, str, str, bool]] = []
    # (value, where, name, whether it sits under a path name, top level); popped in order.
    stack: list[tuple[Any, str, str, bool, bool]] = []
    stack.extend(
        reversed(
            [
                (v, str(k), str(k), isinstance(k, str) and (k in names or is_path_name(k)), True)
                for k, v in params.items()
            ]
        )
    )
    seen = 0
    while stack:
        value, where, name, under_path, top = stack.pop()
        seen += 1
        if seen > MAX_VALUES:
            raise MappingError(f"the arguments hold more than {MAX_VALUES} values")
        if isinstance(value, str):
            if under_path or every_string:
                found.append((where, value, name, top))
            continue
        if isinstance(value, Mapping):
            items = [
                (v, _join(where, f".{k}"), str(k), isinstance(k, str) and is_path_name(k), False)
                for k, v in value.items()
            ]
        elif isinstance(value, list | tuple):
            items = [(v, _join(where, f"[{i}]"), name, under_path, False)
                     for i, v in enumerate(value)]  # fmt: skip
        else:
            continue
        stack.extend(reversed(items))
    return found


def _join(where: str, step: str) -> str:
    if len(where) >= _WHERE_MAX:
        return where if where.endswith("...") else where + "..."
    return where + step[:_WHERE_MAX]


def path_calls(
    params: Any, cwd: Any = None, workspace: Any = None, names: Sequence[str] = ()
) -> tuple[Any, ...]:
    """The calls to decide for one call's ``params``: one per distinct file or directory it
    names (:func:`find_paths`), each the call's arguments with its top-level paths cleaned
    (:func:`clean_path`: what the host sent, never made relative) and, for that path, its
    ``absolutePath`` (:func:`absolute_form`) and ``inWorkspace`` (:func:`in_workspace`;
    ``workspace`` defaults to ``cwd``). A call naming no path is decided as it is. Raises
    :class:`MappingError` for a path holding a NUL or another control character (no file is
    named so: garbage is denied) or more than :data:`MAX_EACH` paths."""
    if not isinstance(params, Mapping):
        return (params,)
    found = _walk(params, names, False)
    if not found:
        return (params,)
    if workspace is None:
        workspace = cwd
    base = {k: v for k, v in params.items() if k not in PATH_ATTRIBUTES}
    first: list[tuple[str, str]] = []
    rest: list[tuple[str, str]] = []
    for where, text, name, top in found:
        bad = next((c for c in text if c < " " or c == "\x7f"), None)
        if bad == "\n" and name.replace("_", "").replace("-", "").lower() in _TEXT_TOO:
            continue
        if bad is not None:
            raise MappingError(
                f"argument `{where}` holds the control character U+{ord(bad):04X}: "
                "no file is named so"
            )
        if top and name in base:
            base[name] = clean_path(text)
        (first if top and name == "path" else rest).append((where, text))
    calls: dict[tuple[str, bool], dict[str, Any]] = {}
    texts: set[str] = set()
    for _, text in first + rest:
        # Each distinct text once, and a bounded number of them: judging one costs the length
        # of `cwd` and of the workspace, so a repeated or aliased path (`a`, `./a`, `a/`...)
        # must not cost it again (linear in the arguments' size).
        if text in texts:
            continue
        texts.add(text)
        if len(texts) > _MAX_TEXTS:
            raise MappingError(f"the arguments hold more than {_MAX_TEXTS} different paths")
        absolute = absolute_form(text, cwd)
        inside = in_workspace(absolute, workspace)
        if (absolute, inside) not in calls:
            calls[(absolute, inside)] = {**base, "absolutePath": absolute, "inWorkspace": inside}
            if len(calls) > MAX_EACH:
                raise MappingError(f"the arguments name more than {MAX_EACH} paths")
    return tuple(calls.values()) or (base,)


#: At most this many different path texts are judged in one call (several texts may name the
#: same file: ``a``, ``./a``; more than :data:`MAX_EACH` files are refused anyway).
_MAX_TEXTS = 4 * MAX_EACH


def _each_path(
    params: Sequence[Any], cwd: Any, workspace: Any, names: Sequence[str]
) -> tuple[Any, ...]:
    """:func:`path_calls` of each of a host call's calls, at most :data:`MAX_EACH` in all."""
    out: list[Any] = []
    for p in params:
        out.extend(path_calls(p, cwd, workspace, names))
    if len(out) > MAX_EACH:
        raise MappingError(f"the arguments name more than {MAX_EACH} paths")
    return tuple(out)


def absolute_form(path: str, cwd: Any) -> str:
    """What the rules see as the file ``path`` names: its absolute form
    (:func:`absolute_path`) when it has one; otherwise (a relative path without an absolute
    ``cwd``, a ``~`` path) the path cleaned with the ``..`` segments it can resolve resolved
    (``a/../.env`` is ``.env``; ``../x`` stays)."""
    absolute = absolute_path(path, cwd)
    if absolute is not None:
        return absolute
    parts: list[str] = []
    for p in clean_path(path).split("/"):
        if p == ".." and parts and parts[-1] not in ("..", "~"):
            parts.pop()
        elif p != ".":
            parts.append(p)
    return "/".join(parts) or "."


def in_workspace(absolute: str, workspace: Any) -> bool:
    """Whether the path whose :func:`absolute_form` is ``absolute`` lies in ``workspace`` (a
    directory; ``/`` is no workspace). Without an absolute workspace, a relative path that
    does not climb out with ``..`` is inside, every other is outside."""
    if not absolute.startswith("/"):
        return not (absolute == ".." or absolute.startswith(("../", "~")))
    if not isinstance(workspace, str) or not workspace.startswith("/"):
        return False
    base = resolve_path(workspace).rstrip("/")
    return bool(base) and (absolute == base or absolute.startswith(base + "/"))


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
    resolve ``link/..`` elsewhere, which is why :func:`clean_path` keeps ``..``."""
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
