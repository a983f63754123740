"""``cedarlite hook claude-code``: the command hook of Claude Code (and of the hosts that copy
its hook JSON), one process per tool call.

Claude Code runs the command for every ``PreToolUse`` event with the event as one JSON object
on stdin and reads the answer from stdout (docs/hosts.md). The hook:

1. reads the event (at most :data:`MAX_INPUT` bytes) and maps the host's tool and arguments to
   OpenClaw's (:mod:`cedarlite.hosts.mapping`; MCP tools join the run's catalog when called);
2. loads the guard built for this configuration, these rules and this catalog from the private
   state directory, or builds it (parsing, compiling and validating) and stores it there;
3. decides each call with the guard (loop history and ``allow-always`` approvals in the
   state directory's SQLite database, keyed by ``session_id``);
4. prints ``{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision":
   "allow" | "deny" | "ask", "permissionDecisionReason": ...}}`` and exits 0.

``PostToolUse`` and ``PostToolUseFailure`` record what the call returned (loop detection) and
print nothing. Everything fails closed: unreadable input, an unknown event, a configuration or
rule that does not load, any error of ours, and a decision that is not made before the
deadline (:data:`DEFAULT_DEADLINE`, measured from the start of the command) deny with a
reason, never exit 1: Claude Code lets the call proceed when a hook crashes or times out
unless the hook is registered with ``"onFailure": "block"`` (:func:`settings`).
"""

from __future__ import annotations

import contextlib
import gc
import json
import math
import os
import pickle
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn, TextIO

from .. import _cache_dir, _log
from .._sha import sha256
from .._version import __version__
from ..data.jsonvalue import load_json
from ..errors import CacheError, CedarliteError
from ..guard import Guard, Outcome
from ..guard.sqlite_store import SQLiteSessionStore
from ..tools.catalog import BUNDLE_MCP
from ..tools.names import norm_agent_id
from .mapping import (
    HostMapping,
    MappedCall,
    MappingError,
    absolute_path,
    clean_path,
    find_paths,
)

if TYPE_CHECKING:
    from ..policyset import PolicySet

#: Seconds the hook has to answer, from its start; well under the ``timeout`` of
#: :func:`settings`, which leaves room for the interpreter to start.
DEFAULT_DEADLINE = 5.0

#: The longest deadline ``--deadline`` accepts (seconds).
MAX_DEADLINE = 3600.0

#: Larger hook input is refused (a ``Write`` of a whole file is in it).
MAX_INPUT = 32 * 1024 * 1024

#: Claude Code's tools that write the file one argument names (tool → argument).
WRITE_TOOLS: Mapping[str, str] = {
    "Write": "file_path",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
}

#: Longer strings are no path the hook protects (the system's ``PATH_MAX``).
_PATH_MAX = 4096

#: The events the hook answers.
PRE, POST, POST_FAILURE = "PreToolUse", "PostToolUse", "PostToolUseFailure"

#: The keys of a hook configuration file (or a bare tools configuration: no ``config`` key).
CONFIG_KEYS = ("config", "tools", "context", "claudeCode", "description")

_STDIN = "<hook input>"
_MCP_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
# 4: guards share per-tool call entities across run contexts; 5: every tool's input type holds
# absolutePath and inWorkspace; 6: the guard and the classes it holds moved to cedarlite.guard,
# .data and .engine (a pickle names classes by module)
_SNAPSHOT_FORMAT = 6
_KEEP_GUARDS = 64
_SESSIONS = "sessions.sqlite3"
_GUARDS = "guards"

log = _log.get_logger("cedarlite.hosts")


class HookError(CedarliteError):
    """A hook input, configuration or state directory that cannot be used (the call is
    denied with this message)."""

    code = "E0912"


# ---------------------------------------------------------------------------------------------
# The configuration


# Named tuples, not dataclasses: this module loads in every hook process (one per tool call),
# where a dataclass costs ~1 ms to create and a named tuple a tenth of that.
class HookConfig(NamedTuple):
    """A hook configuration file, read: the tools ``config`` (docs/tool-policy.md §4.1), extra
    ``tools`` of the run (docs/tool-policy.md §4.2: MCP tools with parameter schemas, say), the run
    ``context``     (docs/tool-policy.md §4.3) and the tool ``mapping``, with the rule files'
    paths and     texts."""

    path: str
    text: str
    config: Any
    tools: tuple[Mapping[str, Any], ...]
    context: Mapping[str, Any]
    mapping: HostMapping
    rules: tuple[tuple[str, str], ...]
    at: tuple[str, ...]  # where the tools configuration is in the file

    @classmethod
    def read(
        cls, path: str, rules: Sequence[str] = (), *, ignore: Sequence[str] = ()
    ) -> HookConfig:
        """Read the configuration file and the rule files (``cedarlite:NAME``: shipped).

        The file is ``{"config", "tools"?, "context"?, "claudeCode"?: {"tools": {...}}}`` or a
        bare tools configuration; keys in ``ignore`` are allowed and ignored (a scenario's
        ``calls``). Raises :class:`HookError` (file, line and column).
        """
        text = _read(path, "configuration")
        data = load_json(text, path, HookError)
        if not isinstance(data, dict):
            raise HookError("a hook configuration must be a JSON object", source=path)
        wrapped = "config" in data
        if not wrapped and not data.keys() <= {"tools", "agents", "channels"}:
            from . import openclaw_config  # OpenClaw's own openclaw.json: its tool layer's keys

            if openclaw_config.is_openclaw_config(data):
                data = openclaw_config.tools_section(data)

        def fail(loc: tuple[str | int, ...], message: str, help: str | None = None) -> HookError:
            # lazy on purpose: only a mistake needs it (the JSON locator, suggestions)
            from .._jsonloc import json_span

            span = json_span(text, loc, key=True)
            return HookError(message, span=span, text=text, source=path, help=help)

        tools: Any = []
        context: Any = {}
        host: Any = {}
        if wrapped:
            for key in data:
                if key not in CONFIG_KEYS and key not in ignore:
                    # lazy on purpose: only a mistake needs it (the JSON locator, suggestions)
                    from ..tools.lint import did_you_mean

                    raise fail((key,), f"unknown key `{key}`", did_you_mean(key, CONFIG_KEYS))
            tools = data["tools"] if data.get("tools") is not None else []
            context = data["context"] if data.get("context") is not None else {}
            host = data["claudeCode"] if data.get("claudeCode") is not None else {}
            for key, value, kind, name in (
                ("tools", tools, list, "an array of tools"),
                ("context", context, dict, "an object (the run context)"),
                ("claudeCode", host, dict, 'an object: {"tools": {...}}'),
            ):
                if not isinstance(value, kind):
                    raise fail((key,), f"`{key}` must be {name}")
            for key in host:
                if key != "tools":
                    raise fail(("claudeCode", key), f"unknown key `claudeCode.{key}`")
            for i, tool in enumerate(tools):
                if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
                    raise fail(("tools", i), f"`tools[{i}]` must be a tool object with a name")
        try:
            mapping = HostMapping.claude_code(host.get("tools"))
        except MappingError as err:
            raise fail(("claudeCode", "tools", *err.loc), err.message, err.help) from None
        texts = tuple((p, _read(p, "rules")) for p in (_shipped(r) for r in rules))
        return cls(
            path,
            text,
            data.get("config") if wrapped else data,
            tuple(tools),
            dict(context),
            mapping,
            texts,
            ("config",) if wrapped else (),
        )

    def catalog(
        self, call: MappedCall | None, named: Sequence[str] = (), calls: Sequence[MappedCall] = ()
    ) -> list[Mapping[str, Any]]:
        """The run's tools: the host's built-ins, the configuration's ``tools`` (which replace
        built-ins of the same name), the MCP tools ``named`` by the rules, and the called tool
        (and the other ``calls``' tools: a replay's) when it is none of these."""
        tools: dict[str, Mapping[str, Any]] = {t["name"]: t for t in self.mapping.catalog()}
        for t in self.tools:
            tools.pop(t["name"], None)
        out = [*tools.values(), *self.tools]
        names = {t.get("name") for t in out}
        for name in named:
            if name not in names:
                out.append({"name": name, "pluginId": BUNDLE_MCP})
                names.add(name)
        for c in (call, *calls) if call is not None else calls:
            if c.tool not in names:
                out.append(c.tool_entry())
                names.add(c.tool)
        return out

    def run_tools(
        self, host: str = "openclaw", rule_sets: Sequence[PolicySet] | None = None
    ) -> list[Mapping[str, Any]]:
        """The run's tools before any call, for a guard of this file at ``host``: Claude
        Code's (:meth:`catalog`: its built-ins as OpenClaw tools, the file's ``tools``, the MCP
        tools the rules name) or OpenClaw's (the file's ``tools``, OpenClaw's core tools when
        it lists none, and the MCP tools the rules name). ``rule_sets``: the rules, parsed
        (:meth:`rule_sets`, by default)."""
        named = named_mcp_tools(self.rule_sets() if rule_sets is None else rule_sets)
        if host == "claude-code":
            return self.catalog(None, named)
        if self.tools:
            tools = list(self.tools)
        else:
            # lazy on purpose: only a configuration without tools needs the core list
            from ..tools.catalog import CORE_TOOL_IDS

            tools = [{"name": name} for name in CORE_TOOL_IDS]
        names = {t.get("name") for t in tools}
        return tools + [{"name": n, "pluginId": BUNDLE_MCP} for n in named if n not in names]

    def check(self) -> None:
        """Raise for the mistakes reading leaves to the build of a guard (not paid on every
        call): in the argument maps (:meth:`HostMapping.check`) and in the ``tools`` entries
        (a ``pluginid``: :func:`~cedarlite.tools.lint.tool_issues`)."""
        # lazy on purpose: only building a guard needs it; a warm hook process loads a built one
        from ..tools import ToolCatalog
        from ..tools.lint import raise_errors, tool_issues

        self.mapping.check()
        raise_errors(tool_issues(ToolCatalog.from_tools(self.tools)), "tool list")

    def rule_sets(self) -> list[PolicySet]:
        """The rule files, parsed (one set per file; errors name the file)."""
        # lazy on purpose: only building a guard needs it; a warm hook process loads a built one
        from ..policyset import PolicySet

        return [PolicySet.from_str(text, path) for path, text in self.rules]

    def run_context(self, event: Mapping[str, Any]) -> dict[str, Any]:
        """The run context of a call: the file's, then what the event says (the local user
        is the owner; a call inside a sub-agent has ``subagentDepth`` 1; ``agent_type``
        names the agent when the configuration lists it)."""
        context = dict(self.context)
        context.setdefault("senderIsOwner", True)
        if isinstance(event.get("agent_id"), str):
            context.setdefault("subagentDepth", 1)
        agent = event.get("agent_type")
        listed = {norm_agent_id(a.get("id")) for a in self._agents()}
        if isinstance(agent, str) and "agentId" not in context and norm_agent_id(agent) in listed:
            context["agentId"] = agent
        return context

    def loops_for_some_agent(self) -> bool:
        """Whether an agent of the configuration turns loop detection on for itself."""
        for agent in self._agents():
            tools = agent.get("tools")
            loops = tools.get("loopDetection") if isinstance(tools, Mapping) else None
            if isinstance(loops, Mapping) and loops.get("enabled") is True:
                return True
        return False

    def _agents(self) -> list[Mapping[str, Any]]:
        """The agent entries of the configuration (``agents.list``)."""
        config = self.config if isinstance(self.config, Mapping) else {}
        agents = config.get("agents")
        listed = agents.get("list") if isinstance(agents, Mapping) else None
        return [a for a in listed if isinstance(a, Mapping)] if isinstance(listed, list) else []

    def located(self, err: CedarliteError) -> CedarliteError:
        """An error of the tools layer, located: a configuration or context finding in this
        file (rule errors are located in theirs already)."""
        # lazy on purpose: only a mistake needs it (the JSON locator, suggestions)
        from .._jsonloc import json_span
        from ..tools import ConfigError

        if isinstance(err, ConfigError) and err.issues:
            issue = next((i for i in err.issues if i.severity == "error"), err.issues[0])
            loc = tuple(issue.loc)
            top = loc[:1] == ("context",) or issue.in_tool_list  # beside `config`, not in it
            loc = loc if top and self.at else (*self.at, *loc)
            return issue.to_error(self.text, self.path, json_span(self.text, loc, key=issue.on_key))
        if isinstance(err, MappingError) and err.loc:
            loc = ("claudeCode", "tools", *err.loc)
            span = json_span(self.text, loc, key=not isinstance(loc[-1], int))
            return HookError(
                err.message, span=span, text=self.text, source=self.path, help=err.help
            )
        return err


def named_mcp_tools(rules: Sequence[PolicySet]) -> list[str]:
    """The MCP tools (``<server>__<tool>``) that the rules name as actions: tools known only
    when Claude calls them, which rules may guard before the first call."""
    # lazy on purpose: only building a guard needs it; a warm hook process loads a built one
    from ..data.values import EntityUID
    from ..lang.ast import Lit, walk

    found: dict[str, None] = {}
    for ps in rules:
        for p in ps.policies:
            uids: list[Any] = [p.action.entity, *p.action.entities]
            uids += [e.value for c in p.conditions for e in walk(c.body) if isinstance(e, Lit)]
            for uid in uids:
                if isinstance(uid, EntityUID) and uid.type == "Action" and _mcp(uid.id):
                    found[uid.id] = None
    return list(found)


def _mcp(name: str) -> bool:
    """``<server>__<tool>`` in the characters of docs/tool-policy.md §6.4."""
    return "__" in name.strip("_") and all(c in _MCP_CHARS for c in name)


def _shipped(reference: str) -> str:
    """A rules file reference: ``cedarlite:NAME`` is a shipped policy file."""
    if not reference.startswith("cedarlite:"):
        return reference
    # lazy on purpose: only building a guard needs it; a warm hook process loads a built one
    from ..shipped import resolve

    return resolve(reference)


def _read(path: str, what: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise HookError(f"cannot read the {what} file: {reason}", source=path) from None


def _first_issue(err: CedarliteError) -> CedarliteError:
    """Rules that do not validate, as their first issue (file, line, column and what is
    wrong, as ``--print-settings`` shows them all); any other error as it is."""
    issues = getattr(err, "issues", None)
    if not issues or not hasattr(issues[0], "to_error"):
        return err
    first = issues[0].to_error()
    if len(issues) > 1:
        more = (
            f"and {len(issues) - 1} more validation error{'s' * (len(issues) > 2)}: see "
            "`--print-settings`"
        )
        first.help = f"{first.help}; {more}" if first.help else more
    return first


def _one_line(err: CedarliteError) -> str:
    """``source:line:column: message (help)`` on one line."""
    return err.one_line()


# ---------------------------------------------------------------------------------------------
# Built guards, kept in the state directory


def state_dir(path: str | None) -> str:
    """The private state directory (``--state-dir``, default a per-user cache directory),
    created 0700 and checked; raises :class:`~cedarlite.errors.CacheError`."""
    if path is None:
        return _cache_dir.private_dir("hook")
    return _cache_dir.ensure_private(path)


def guard_key(config: HookConfig, tools: Sequence[Any], context: Mapping[str, Any]) -> str:
    """The key of the guard built from these inputs by this cedarlite: the tools
    configuration, the catalog, the run context and the rules' texts (not their paths: a
    guard decides alike whichever path named them)."""
    data = [
        _SNAPSHOT_FORMAT,
        __version__,
        config.config,
        list(tools),
        dict(context),
        [text for _, text in config.rules],
    ]
    text = json.dumps(data, sort_keys=True, ensure_ascii=True, separators=(",", ":"), default=repr)
    return sha256(text.encode()).hexdigest()


def load_guard(
    config: HookConfig, call: MappedCall | None, context: Mapping[str, Any], directory: str
) -> Guard:
    """The guard of this configuration, catalog (with the called tool) and context: from the
    state directory's ``guards/`` when it was built before, else built (strictly: a
    configuration, context or rule mistake raises) and stored there."""
    tools = config.catalog(call)
    key = guard_key(config, tools, context)
    guards = _cache_dir.ensure_private(os.path.join(directory, _GUARDS))
    entry = key + ".pickle"
    data = _cache_dir.load(guards, entry)
    if data is not None:
        try:
            stored, guard = pickle.loads(data)
            if stored == key and isinstance(guard, Guard):
                return guard
        except Exception:  # a damaged or foreign entry (any failure to load): build again
            log.info("rebuilding the damaged guard entry %s", entry)
    # Built from the rule texts of the key (each file read and parsed once).
    config.check()
    sets = config.rule_sets()
    tools = config.catalog(call, named_mcp_tools(sets))
    guard = Guard(config.config, tools, context, rules=sets or None, strict=True)
    snapshot = pickle.dumps((key, guard), protocol=pickle.HIGHEST_PROTOCOL)
    _cache_dir.store(guards, entry, snapshot, keep=_KEEP_GUARDS)
    return guard


# ---------------------------------------------------------------------------------------------
# One hook process


class _Answer:
    """The process's one answer: the main thread's or, past the deadline, the watchdog's
    (which then ends the process); whichever comes first."""

    def __init__(self, stdout: TextIO, stderr: TextIO) -> None:
        self._lock = threading.Lock()
        self.stdout = stdout
        self.stderr = stderr
        self.event: str | None = None

    def give(self, text: str, note: str = "") -> bool:
        """Print ``text`` (stdout) and ``note`` (stderr) unless an answer was given."""
        if not self._lock.acquire(blocking=False):
            return False
        for stream, value in ((self.stdout, text), (self.stderr, note)):
            if value:
                try:
                    stream.write(value if value.endswith("\n") else value + "\n")
                    stream.flush()
                except (OSError, ValueError):  # the host closed the pipe: nothing to tell
                    pass
        return True


def _deny_json(reason: str) -> str:
    return _pre_json("deny", reason)


def _pre_json(decision: str, reason: str, context: str | None = None) -> str:
    out: dict[str, Any] = {
        "hookEventName": PRE,
        "permissionDecision": decision,
        "permissionDecisionReason": reason,
    }
    if context:
        out["additionalContext"] = context
    # ASCII: a stdout that cannot encode the answer must not turn a denial into no answer.
    return json.dumps({"hookSpecificOutput": out}, ensure_ascii=True)


def _watchdog(answer: _Answer, seconds: float) -> threading.Timer:
    """Deny (or, after the call, say nothing) when the deadline passes, and end the process."""

    def fire() -> None:
        reason = f"cedarlite: no decision within the hook's deadline of {seconds:g} s"
        if answer.event == PRE:
            given, code = answer.give(_deny_json(reason), reason), 0
        elif answer.event in (POST, POST_FAILURE):
            given, code = answer.give("", reason), 0
        else:  # the event is not known yet: a blocking error blocks whatever it was
            given, code = answer.give("", reason), 2
        if given:
            os._exit(code)

    timer = threading.Timer(max(0.0, seconds), fire)
    timer.daemon = True
    timer.start()
    return timer


def read_event(stdin: Any) -> dict[str, Any]:
    """The hook input: one JSON object of at most :data:`MAX_INPUT` bytes (UTF-8, no
    duplicate keys); raises :class:`HookError`."""
    data = stdin.read(MAX_INPUT + 1)
    if len(data) > MAX_INPUT:
        raise HookError(f"larger than {MAX_INPUT // (1024 * 1024)} MiB", source=_STDIN)
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as err:
            raise HookError(f"not UTF-8 (byte {err.start})", source=_STDIN) from None
    if not data.strip():
        raise HookError("empty: expected one JSON object", source=_STDIN)
    event = load_json(data, _STDIN, HookError)
    if not isinstance(event, dict):
        raise HookError("expected one JSON object", source=_STDIN)
    return event


class HookOptions(NamedTuple):
    """The command line of ``cedarlite hook claude-code``."""

    config: str
    rules: tuple[str, ...] = ()
    state_dir: str | None = None
    decision_log: str | None = None
    deadline: float = DEFAULT_DEADLINE

    @classmethod
    def from_argv(cls, words: Sequence[str]) -> HookOptions | None:
        """The options of a plain command line, ``claude-code --config FILE [--rules
        FILE]... [--state-dir DIR] [--decision-log FILE] [--deadline S]`` (``--flag value``
        or ``--flag=value``, in any order), read without :mod:`argparse`: the host starts a
        hook process for every tool call. ``None`` for any other command line (``--help``,
        ``--print-settings``, an abbreviation, a mistake): the full parser of
        :mod:`cedarlite.cli` reads it and says what is wrong. Where both read a command line,
        they read the same options (a property test holds them equal)."""
        if not words or words[0] != "claude-code":
            return None
        values: dict[str, str] = {}
        rules: list[str] = []
        deadline = DEFAULT_DEADLINE
        i = 1
        while i < len(words):
            flag, eq, value = words[i].partition("=")
            if flag not in _FLAGS:
                return None
            if not eq:
                if i + 1 == len(words):
                    return None
                value = words[i + 1]
            i += 1 if eq else 2
            if value.startswith("-"):  # argparse reads such words as options: let it
                return None
            if flag == "--rules":
                rules.append(value)
            elif flag == "--deadline":  # every one is checked, as argparse does
                try:
                    deadline = float(value)
                except ValueError:
                    return None
                if not 0 < deadline <= MAX_DEADLINE:
                    return None
            else:
                values[flag] = value  # the last one, as argparse
        if "--config" not in values:
            return None
        return cls(
            values["--config"],
            tuple(rules),
            values.get("--state-dir"),
            values.get("--decision-log"),
            deadline,
        )


_FLAGS = frozenset({"--config", "--rules", "--state-dir", "--decision-log", "--deadline"})


def run(options: HookOptions, stdin: Any = None, stdout: TextIO | None = None,
        stderr: TextIO | None = None) -> int:  # fmt: skip
    """Answer one hook event (stdin → stdout); returns the exit code: 0, or 2 (a blocking
    error, stderr says why) when the input is unreadable or its event is not one the hook
    answers. Never raises, never returns 1; past the deadline the process ends with a
    denial."""
    started = time.monotonic()
    answer = _Answer(stdout or sys.stdout, stderr or sys.stderr)
    timer = _watchdog(answer, options.deadline)
    logged: list[str] = []  # cedarlite's warnings and errors during the run, for stderr
    try:
        with _log.capture(logged.append):
            text, note, code = _answer(options, stdin, answer, started)
        notes = [*(f"cedarlite: {line}" for line in logged), note]
        if not answer.give(text, "\n".join(n for n in notes if n)):
            threading.Event().wait()  # the watchdog is answering: it ends the process
        return code
    finally:
        timer.cancel()


def run_blocking(options: HookOptions) -> int:
    """:func:`run` on the process's streams; anything that escapes it (it answers every event:
    what escapes is ours) blocks with exit 2, stderr saying why. Never returns 1."""
    try:
        return run(options)
    except BaseException as err:
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(f"cedarlite: blocked: internal error: {type(err).__name__}: {err}\n")
        return 2


def run_process(options: HookOptions) -> NoReturn:
    """The hook process: :func:`run` on the process's stdin, stdout and stderr, then the
    process ends with its exit code.

    The process lives for one event, so the cyclic garbage collector stays off (reference
    counting frees what it drops; a collection would only scan the objects it keeps) and the
    interpreter is not torn down at the end (the answer is flushed, the state database and the
    decision log closed: nothing is left to finalize but its modules, ~10 ms of every call).
    Anything that escapes :func:`run` (it answers every event) blocks: exit 2, stderr says
    why.
    """
    gc.disable()  # (``python -m cedarlite hook`` turned it off before importing this module)
    code = run_blocking(options)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # the host closed the pipe
            stream.flush()
    os._exit(code)


def _answer(
    options: HookOptions, stdin: Any, answer: _Answer, started: float, warm: Any = None
) -> tuple[str, str, int]:
    """(stdout, stderr, exit code) for the event on ``stdin`` (``warm``: see :func:`_handle`)."""
    try:
        event = read_event(stdin if stdin is not None else sys.stdin.buffer)
    except HookError as err:
        return "", f"cedarlite: blocked: {_one_line(err)}", 2
    except Exception as err:  # reading stdin failed
        return "", f"cedarlite: blocked: cannot read the hook input: {err}", 2
    name = event.get("hook_event_name")
    if name not in (PRE, POST, POST_FAILURE):
        shown = json.dumps(name)[:80] if name is not None else "none"
        message = (
            f"cedarlite: blocked: unsupported hook event {shown} (the hook answers "
            f"{PRE}, {POST} and {POST_FAILURE})"
        )
        return "", message, 2
    answer.event = name
    try:
        return _handle(options, event, name, started, warm), "", 0
    except HookError as err:
        reason = _one_line(err)
    except CedarliteError as err:  # tools layer and guard construction: located messages
        reason = _one_line(err)
    except Exception as err:  # an error of ours: fail closed
        reason = f"internal error: {type(err).__name__}: {err}"
        log.error("hook failed: %s", reason)
    if name == PRE:
        return _deny_json(f"cedarlite: blocked: {reason}"), "", 0
    return "", f"cedarlite: {name} not recorded: {reason}", 0


def answer_event(options: HookOptions, data: bytes, warm: Any) -> tuple[str, str, int]:
    """What the hook process prints for the event ``data`` and its exit code, decided with a
    decision service's loaded set ``warm`` (see :func:`_handle`); the service keeps the
    deadline. Never raises."""
    import io  # lazy on purpose: only a decision service answers events this way

    answer = _Answer(io.StringIO(), io.StringIO())
    return _answer(options, io.BytesIO(data), answer, time.monotonic(), warm)


def _handle(
    options: HookOptions, event: Mapping[str, Any], name: str, started: float, warm: Any = None
) -> str:
    """Decide (PreToolUse) or record (PostToolUse*) one event; the text for stdout.

    ``warm`` is a decision service's loaded set (:mod:`cedarlite.hosts.serve.guards`): its
    ``config`` and state ``directory``, and its ``hook_guard(call, context)``, a guard whose
    session store and decision log stay open; ``None`` reads and builds everything here."""
    config = HookConfig.read(options.config, options.rules) if warm is None else warm.config
    try:
        call = config.mapping.map_call(
            event.get("tool_name"),
            event.get("tool_input"),
            cwd=event.get("cwd"),
            mcp_server=event.get("mcp_server"),
            workspace=os.environ.get("CLAUDE_PROJECT_DIR") or event.get("cwd"),
        )
    except MappingError as err:
        raise HookError(err.message) from None
    context = config.run_context(event)
    directory = state_dir(options.state_dir) if warm is None else warm.directory
    refused = protected_write(options, event, directory) if name == PRE else None
    try:
        if warm is not None:
            return _decide(warm.hook_guard(call, context), event, name, call, refused)
        guard = load_guard(config, call, context, directory)
    except (HookError, CacheError):
        raise
    except CedarliteError as err:  # the configuration, context or rules do not load
        raise _first_issue(config.located(err)) from None
    remaining = options.deadline - (time.monotonic() - started)
    store = SQLiteSessionStore(
        os.path.join(directory, _SESSIONS), timeout=max(0.0, remaining - 0.5)
    )
    guard.session_store = store
    try:
        if options.decision_log is not None:
            guard.open_decision_log(options.decision_log)
        return _decide(guard, event, name, call, refused)
    finally:
        guard.close()
        store.close()


def _decide(
    guard: Guard, event: Mapping[str, Any], name: str, call: MappedCall, refused: str | None
) -> str:
    """The guard's answer to one event (``refused``: why a protected write is refused)."""
    if refused is not None:  # logged once, like any decision; the reason names the file
        guard.refuse(call.tool, call.params[0], _calls(event, 1)[0], reason=refused)
        return _pre_json("deny", f"cedarlite: blocked: {refused}")
    calls = _calls(event, len(call.params))
    if name == PRE:
        outcomes = [
            guard.before_tool_call(call.tool, params, c)
            for params, c in zip(call.params, calls, strict=True)
        ]
        return _pre_answer(outcomes)
    result, error = _post_result(event, name)
    for params, c in zip(call.params, calls, strict=True):
        guard.after_tool_call(call.tool, params, c, result=result, error=error)
    return ""


def protected_write(options: HookOptions, event: Mapping[str, Any], directory: str) -> str | None:
    """Why the call may not run because it would change what guards the agent (``None``: it
    would not): a write (:data:`WRITE_TOOLS`; an MCP tool, whatever it does, with any string
    argument naming the file) to the hook's configuration, rules or decision log, into its
    state directory or cedarlite's cache (which hold built guards, pickles), or to a Claude
    Code settings file (``.claude/settings*.json``: where hooks are registered). Every path the
    call names counts, at any depth of its arguments (:func:`~.mapping.find_paths`; for an MCP
    tool every string). Paths are compared cleaned, absolute (relative ones in the call's
    ``cwd``) and case-folded, both with ``..`` resolved as text and as the file system
    resolves them (symbolic links first, then ``..``)."""
    tool, tool_input = event.get("tool_name"), event.get("tool_input")
    if not isinstance(tool_input, Mapping) or not isinstance(tool, str):
        return None
    follow = tool in WRITE_TOOLS
    if not follow and not tool.startswith("mcp__"):
        return None
    try:
        found = find_paths(tool_input, every_string=not follow)
    except MappingError:
        return None  # the mapping refuses the call with its own message
    targets = [t for _, t in found if len(t) <= _PATH_MAX]
    if not targets:
        return None
    files, dirs = _protected(options, directory)
    cwd = event.get("cwd")
    if not follow and not _inside(cwd, dirs):
        # A protected path names its file or directory (or holds the name of the link to
        # it, or `..` after one): skip the arguments that cannot, cheaply.
        names = {"settings", *(k.rpartition("/")[2] for k in (*files, *dirs))}
        targets = [t for t in targets if ".." in t or any(n in t.casefold() for n in names)]
    for target in targets:
        what = _protected_by(target, cwd, files, dirs)
        if what is not None:
            shown = target if len(target) <= 200 else target[:200] + "..."
            return (
                f"`{shown}` is {what}: the agent may not change what guards it; "
                "a person must edit it"
            )
    return None


def _protected(options: HookOptions, directory: str) -> tuple[dict[str, str], dict[str, str]]:
    """The hook's own files and directories (case-folded absolute path → what it is), each
    both as named and with symbolic links resolved."""
    files: dict[str, str] = {}
    dirs: dict[str, str] = {}
    named = [(options.config, "the hook's configuration (`--config`)")]
    named += [(_shipped(r), "a rules file of the hook (`--rules`)") for r in options.rules]
    if options.decision_log is not None:
        named.append((options.decision_log, "the hook's decision log"))
    places = [(directory, "in the hook's state directory")]
    with contextlib.suppress(CedarliteError, OSError, ValueError):
        places.append((_cache_dir.cache_root(), "in cedarlite's cache directory"))
    for table, entries in ((files, named), (dirs, places)):
        for path, what in entries:
            with contextlib.suppress(OSError, ValueError):
                for form in (os.path.abspath(path), os.path.realpath(path)):
                    table.setdefault(clean_path(form).casefold(), what)
    return files, dirs


def _inside(cwd: Any, dirs: Mapping[str, str]) -> bool:
    """Whether the working directory ``cwd`` is in one of the protected directories."""
    if not isinstance(cwd, str):
        return False
    return _under(clean_path(cwd).casefold(), dirs) is not None


def _under(key: str, dirs: Mapping[str, str]) -> str | None:
    """What protected directory the case-folded path ``key`` is (in), if any."""
    for directory, what in dirs.items():
        if key == directory or key.startswith(directory.rstrip("/") + "/"):
            return what
    return None


def _protected_by(
    target: str, cwd: Any, files: Mapping[str, str], dirs: Mapping[str, str]
) -> str | None:
    """What protected file ``target`` is, if any (see :func:`protected_write`)."""
    if target.startswith("~"):
        with contextlib.suppress(OSError, ValueError, KeyError):
            target = os.path.expanduser(target)
    path = absolute_path(target, cwd) or clean_path(target)
    if len(path) > _PATH_MAX or "\x00" in path:
        return None  # no file has this name
    forms = [path]
    # As the OS opens it: `link/../x` is `x` beside the link's target, not beside the link.
    raw = target if target.startswith("/") or not isinstance(cwd, str) else f"{cwd}/{target}"
    if raw.startswith("/"):
        with contextlib.suppress(OSError, ValueError):
            forms.append(os.path.realpath(raw))
    for form in forms:
        key = form.casefold()
        if key in files:
            return files[key]
        what = _under(key, dirs)
        if what is not None:
            return what
        parent, _, name = key.rpartition("/")
        in_claude = parent.rpartition("/")[2] == ".claude"
        if in_claude and name.startswith("settings") and name.endswith(".json"):
            return "a Claude Code settings file"
    return None


def _calls(event: Mapping[str, Any], count: int) -> list[dict[str, Any]]:
    """The guard's call records: ``session_id`` is the session, ``tool_use_id`` the call
    (``#1``, ``#2``... for the several calls of one host call), ``prompt_id`` the run."""
    session = _text(event.get("session_id"))
    call_id = _text(event.get("tool_use_id"))
    run_id = _text(event.get("prompt_id"))
    out = []
    for i in range(count):
        cid = call_id if count == 1 or call_id is None else f"{call_id}#{i + 1}"
        out.append(
            {"sessionKey": session, "sessionId": session, "toolCallId": cid, "runId": run_id}
        )
    return out


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _post_result(event: Mapping[str, Any], name: str) -> tuple[Any, Any]:
    """What the call returned, for loop detection: the tool's response as the ``details``
    of a result (so that different outputs hash differently), or the failure's error."""
    if name == POST_FAILURE:
        error = event.get("error")
        return None, error if isinstance(error, str) and error else "the tool failed"
    response = event.get("tool_response")
    if response is None:
        return None, None
    return ({"details": response} if isinstance(response, Mapping) else response), None


def _pre_answer(outcomes: Sequence[Outcome]) -> str:
    """The hook's JSON for the outcomes of a host call's calls: deny if any blocks (with the
    first block's reason), else ask if any asks, else allow."""
    several = len(outcomes) > 1
    warnings = list(dict.fromkeys(w for o in outcomes for w in o.warnings))
    extra = "\n".join(warnings) or None
    for i, o in enumerate(outcomes):
        if o.action == "block":
            prefix = f"call {i + 1} of {len(outcomes)}: " if several else ""
            return _pre_json("deny", f"cedarlite: blocked: {prefix}{_reason(o)}", extra)
    asks = [o for o in outcomes if o.action == "ask"]
    if asks:
        text = "; ".join(dict.fromkeys(_reason(o) for o in asks))
        return _pre_json("ask", f"cedarlite: approval required: {text}", extra)
    policies = ", ".join(dict.fromkeys(p for o in outcomes for p in o.policies))
    return _pre_json("allow", f"cedarlite: allowed by {policies or 'policy'}", extra)


def _reason(o: Outcome) -> str:
    """The outcome's reason, naming the policies that decided when it does not already."""
    text = o.reason or "blocked"
    if o.error:
        text += f": {o.error}"
    return o.citing_policies(text)


# ---------------------------------------------------------------------------------------------
# Installing it


def settings(
    options: HookOptions, *, post: bool = True, project: str | None = None
) -> dict[str, Any]:
    """The ``settings.json`` snippet that installs the hook: every tool (matcher ``*``),
    ``PreToolUse`` with a small ``timeout`` and ``"onFailure": "block"``, and, when ``post``
    (loop detection needs what calls return), ``PostToolUse`` and ``PostToolUseFailure``.

    Files are named by absolute paths, or, inside the directory ``project``, relative to
    ``"$CLAUDE_PROJECT_DIR"`` (which Claude Code sets for its hooks).
    """
    # lazy on purpose: only --print-settings quotes commands
    import shlex

    def where(path: str) -> str:
        full = os.path.abspath(path)
        if project is not None:
            relative = os.path.relpath(full, os.path.abspath(project))
            if relative != ".." and not relative.startswith(".." + os.sep):
                return '"$CLAUDE_PROJECT_DIR"/' + shlex.quote(relative)
        return shlex.quote(full)

    words = [shlex.quote(sys.executable), "-m", "cedarlite", "hook", "claude-code"]
    words += ["--config", where(options.config)]
    for rules in options.rules:
        words += ["--rules", shlex.quote(rules) if rules.startswith("cedarlite:") else where(rules)]
    if options.state_dir is not None:
        words += ["--state-dir", where(options.state_dir)]
    if options.decision_log is not None:
        words += ["--decision-log", where(options.decision_log)]
    if options.deadline != DEFAULT_DEADLINE:
        words += ["--deadline", f"{options.deadline:g}"]
    command = " ".join(words)
    timeout = math.ceil(options.deadline) + 5
    pre = {"type": "command", "command": command, "timeout": timeout, "onFailure": "block"}
    hooks: dict[str, Any] = {"PreToolUse": [{"matcher": "*", "hooks": [pre]}]}
    if post:
        after = {"type": "command", "command": command, "timeout": timeout}
        hooks[POST] = [{"matcher": "*", "hooks": [after]}]
        hooks[POST_FAILURE] = [{"matcher": "*", "hooks": [dict(after)]}]
    return {"hooks": hooks}


def print_settings(options: HookOptions, stdout: TextIO, stderr: TextIO) -> int:
    """``--print-settings``: build the guard of the configuration and rules (a mistake in
    them is reported here, exit 3, rather than denying every call later), keep it in the
    state directory for the first calls, and print the settings snippet (exit 0). With
    ``CLAUDE_PROJECT_DIR`` set, files inside that directory are named relative to it."""
    try:
        config = HookConfig.read(options.config, options.rules)
        context = config.run_context({})
        try:
            guard = load_guard(config, None, context, state_dir(options.state_dir))
        except (HookError, CacheError):
            raise
        except CedarliteError as err:  # the configuration, context or rules do not load
            print(config.located(err).render(), file=stderr)
            return 3
    except CedarliteError as err:
        print(err.render(), file=stderr)
        return 1
    project = os.environ.get("CLAUDE_PROJECT_DIR") or None
    post = guard.loop_settings.enabled or config.loops_for_some_agent()
    snippet = settings(options, post=post, project=project)
    print(json.dumps(snippet, indent=2), file=stdout)
    return 0
