"""OpenClaw as a host: the shipped plugin's Python side.

OpenClaw (2026.9) runs plugins inside its gateway. cedarlite ships one
(:data:`PLUGIN_DIR`: ``openclaw.plugin.json``, ``package.json``, ``index.js``) that starts one
long-lived ``cedarlite serve --stdio`` child and sends it, for every tool call, the
``before_tool_call`` event and context OpenClaw gives the plugin
(``openclaw_before_tool_call``), and for every call that ran, the ``after_tool_call`` event
(``openclaw_after_tool_call``). This module turns those into the guard's calls:

* the run context of a call (spec §4.3) comes from OpenClaw's ``ctx``: ``agentId`` (when the
  configuration lists that agent, or lists none) and ``requester.senderIsOwner``; the loop
  history is keyed by ``ctx.sessionKey`` (:func:`run_context`, :func:`call_record`);
* a call through ``tool_call`` (2026.9's tool-search surface: ``{"id", "args"}``) is decided
  as the tool it names, with its arguments (:func:`inner_call`). OpenClaw 2026.9.6 also fires
  ``before_tool_call`` again for the inner tool: that second decision is the one loop
  detection records; the first is made without a session (no history) so that a call through
  ``tool_call`` is not counted twice;
* the configuration is OpenClaw's own when ``--config`` names its ``openclaw.json``: only the
  tool layer's keys are read (:func:`tools_section`; 2026.9 writes the agent list as the
  object ``agents.entries``, which is read as ``agents.list``).

``cedarlite hook openclaw --print-settings`` (:func:`print_settings`) validates the files
and prints the ``plugins`` settings that load the plugin with the service's command line.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TextIO

from ..errors import CedarliteError
from .openclaw_config import OpenClawError, default_config_path

if TYPE_CHECKING:
    from ..hooks import Guard, Outcome

#: The plugin's id (``plugins.entries.<id>``) and its folder inside the installed package.
PLUGIN_ID = "cedarlite"
PLUGIN_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "openclaw_plugin")

#: Seconds the plugin gives one decision, the service's start included (OpenClaw gives a
#: ``before_tool_call`` handler 15 s and fails the call closed after that).
DEFAULT_DEADLINE = 10.0
MAX_DEADLINE = 12.0

#: The tool of 2026.9's tool-search surface that calls another tool: ``{"id", "args"}``.
TOOL_CALL = "tool_call"

#: Longer tool ids in a ``tool_call`` are refused (no tool has such a name).
_MAX_ID = 512

# ---------------------------------------------------------------------------------------------
# One call


class Call(NamedTuple):
    """A call as the guard decides it: the tool, its arguments, the call record
    (``sessionKey``, ``toolCallId``, ``runId``, ``sessionId``) and the run context."""

    tool: Any
    params: Any
    call: dict[str, str | None]
    context: dict[str, Any]


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def run_context(ctx: Any, agents: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The run context of a call from OpenClaw's ``ctx``: ``senderIsOwner`` from
    ``ctx.requester`` (a boolean, else left out: owner-only tools then stay removed) and
    ``agentId`` when the configuration lists that agent or lists none (``agents``: the
    normalized ids it lists); an agent it does not list runs with the defaults."""
    from ..tools.names import norm_agent_id

    context: dict[str, Any] = {}
    if not isinstance(ctx, Mapping):
        return context
    requester = ctx.get("requester")
    owner = requester.get("senderIsOwner") if isinstance(requester, Mapping) else None
    if isinstance(owner, bool):
        context["senderIsOwner"] = owner
    agent = _text(ctx.get("agentId"))
    if agent is not None and (not agents or norm_agent_id(agent) in agents):
        context["agentId"] = agent
    return context


def call_record(event: Mapping[str, Any], ctx: Any) -> dict[str, str | None]:
    """The guard's call record: the session (``ctx.sessionKey``; loop history is kept per
    session key), the call and the run."""
    ctx = ctx if isinstance(ctx, Mapping) else {}
    return {
        "sessionKey": _text(ctx.get("sessionKey")),
        "sessionId": _text(ctx.get("sessionId")),
        "toolCallId": _text(event.get("toolCallId")) or _text(ctx.get("toolCallId")),
        "runId": _text(event.get("runId")) or _text(ctx.get("runId")),
    }


def inner_call(params: Any) -> tuple[str, Any]:
    """The tool a ``tool_call`` calls and its arguments: ``id`` is a tool's name or a tool
    search result id (``openclaw:core:exec``: its last segment is the name); ``args`` (default
    ``{}``) the arguments. Raises :class:`OpenClawError` when the call names no tool."""
    if not isinstance(params, Mapping):
        raise OpenClawError('a `tool_call` takes an object: {"id", "args"}')
    ident = params.get("id")
    if not isinstance(ident, str) or not ident.strip() or len(ident) > _MAX_ID:
        raise OpenClawError("a `tool_call` must name the tool it calls in `id`")
    name = ident.strip().rpartition(":")[2]
    if not name:
        shown = json.dumps(ident)[:80]
        raise OpenClawError(f"cannot tell which tool the `tool_call` id {shown} names")
    args = params.get("args")
    return name, ({} if args is None else args)


def decided_call(event: Any, ctx: Any, agents: frozenset[str] = frozenset()) -> Call:
    """The call the guard decides for a ``before_tool_call`` event: the event's tool and
    params, or, for a ``tool_call``, the tool it calls with its arguments (and no session:
    OpenClaw decides the inner call again, with the session, when it runs it)."""
    if not isinstance(event, Mapping):
        raise OpenClawError('the event must be an object: {"toolName", "params", ...}')
    tool = event.get("toolName")
    params = event.get("params")
    record = call_record(event, ctx)
    if tool == TOOL_CALL:
        tool, params = inner_call(params)
        record = {**record, "sessionKey": None, "sessionId": None}
    return Call(tool, params, record, run_context(ctx, agents))


def decide(guard_for: Callable[[Mapping[str, Any]], Guard], event: Any, ctx: Any,
           agents: frozenset[str] = frozenset()) -> Outcome:  # fmt: skip
    """The guard's outcome for one ``before_tool_call`` (``guard_for``: the guard of a run
    context)."""
    c = decided_call(event, ctx, agents)
    return guard_for(c.context).before_tool_call(c.tool, c.params, c.call)


def record(guard_for: Callable[[Mapping[str, Any]], Guard], event: Any, ctx: Any,
           agents: frozenset[str] = frozenset()) -> bool:  # fmt: skip
    """Feed one ``after_tool_call`` to loop detection; ``False`` when there is nothing to
    record: a ``tool_call`` (its inner call is recorded) or a call that did not run (the
    plugin sends only calls it let through; a blocked result is never recorded)."""
    if not isinstance(event, Mapping) or event.get("toolName") == TOOL_CALL:
        return False
    result = event.get("result")
    details = result.get("details") if isinstance(result, Mapping) else None
    if isinstance(details, Mapping) and details.get("status") == "blocked":
        return False
    c = decided_call(event, ctx, agents)
    error = event.get("error")
    guard_for(c.context).after_tool_call(
        c.tool, c.params, c.call, result=result, error=error if isinstance(error, str) else None
    )
    return True


# ---------------------------------------------------------------------------------------------
# Installing it


class Settings(NamedTuple):
    """The command line of ``cedarlite hook openclaw --print-settings``."""

    rules: tuple[str, ...]
    config: str | None = None
    state_dir: str | None = None
    decision_log: str | None = None
    deadline: float = DEFAULT_DEADLINE

    def config_path(self) -> str:
        """``--config``, else OpenClaw's own configuration file."""
        return os.path.abspath(self.config) if self.config else default_config_path()


def service_command(settings: Settings) -> list[str]:
    """The service's command line (interpreter by absolute path, files absolute)."""
    words = [os.path.abspath(sys.executable), "-m", "cedarlite", "serve", "--stdio"]
    words += ["--config", settings.config_path()]
    for rules in settings.rules:
        words += ["--rules", rules if rules.startswith("cedarlite:") else os.path.abspath(rules)]
    if settings.state_dir is not None:
        words += ["--state-dir", os.path.abspath(settings.state_dir)]
    if settings.decision_log is not None:
        words += ["--decision-log", os.path.abspath(settings.decision_log)]
    return words


def plugin_settings(settings: Settings, openclaw: Mapping[str, Any] | None = None) -> dict:
    """The ``plugins`` settings that load and enable the shipped plugin: to be deep-merged into
    ``openclaw.json`` (objects key by key, arrays concatenated). ``openclaw`` is the
    configuration it goes into: when it has a ``plugins.allow`` list, the plugin's id is added
    to it (a list that did not exist is not created: it would turn other plugins off)."""
    plugins: dict[str, Any] = {
        "load": {"paths": [PLUGIN_DIR]},
        "entries": {
            PLUGIN_ID: {
                "enabled": True,
                "config": {
                    "command": service_command(settings),
                    "deadlineMs": round(settings.deadline * 1000),
                },
            }
        },
    }
    present = openclaw.get("plugins") if isinstance(openclaw, Mapping) else None
    allow = present.get("allow") if isinstance(present, Mapping) else None
    if isinstance(allow, list) and PLUGIN_ID not in allow:
        plugins["allow"] = [PLUGIN_ID]
    return {"plugins": plugins}


def validate(settings: Settings) -> None:
    """Load the configuration and rules as the service will when it starts (strictly): raises
    a located :class:`~cedarlite.errors.CedarliteError`."""
    from .serve.guards import GuardSet, ServeOptions

    GuardSet(ServeOptions(settings.config_path(), settings.rules)).close()


def print_settings(settings: Settings, stdout: TextIO, stderr: TextIO) -> int:
    """``cedarlite hook openclaw --print-settings``: validate the files (a mistake is printed,
    located, exit 3: the service would refuse to start), then print the settings (exit 0)."""
    path = settings.config_path()
    if not 0 < settings.deadline <= MAX_DEADLINE:
        print(f"cedarlite: --deadline must be more than 0 and at most {MAX_DEADLINE:g} s "
              "(OpenClaw fails a handler closed after 15 s)", file=stderr)  # fmt: skip
        return 2
    try:
        validate(settings)
    except CedarliteError as err:
        print(err.render(), file=stderr)
        return 3
    openclaw: Any = None
    if settings.config is None:  # the settings go into the file the service reads
        from ..entities import load_json

        try:
            with open(path, encoding="utf-8") as f:
                openclaw = load_json(f.read(), path, OpenClawError)
        except (OSError, UnicodeDecodeError, CedarliteError):  # validated above: not expected
            openclaw = None
    snippet = plugin_settings(settings, openclaw)
    print(json.dumps(snippet, indent=2), file=stdout)
    words = snippet["plugins"]["entries"][PLUGIN_ID]["config"]["command"]
    import shlex

    print(f"cedarlite: the plugin will run: {shlex.join(words)}", file=stderr)
    return 0


# ---------------------------------------------------------------------------------------------
# The service's OpenClaw operations


def answer_json(outcome: Outcome) -> dict[str, Any]:
    """The answer to ``openclaw_before_tool_call``: the guard's outcome, its ``reason`` as the
    model or the person asked reads it (naming the deciding policies' ``@id`` s, or the
    configuration layer that removed the tool)."""
    from .claude_code import _reason

    out: dict[str, Any] = {
        "action": outcome.action,
        "params": outcome.params,
        "reason": None,
        "deniedReason": outcome.denied_reason,
        "policies": list(outcome.policies),
    }
    if outcome.action == "block":
        out["reason"] = f"cedarlite: blocked: {_reason(outcome)}"
    elif outcome.action == "ask":
        out["reason"] = f"cedarlite: approval required: {_reason(outcome)}"
        if outcome.approval is not None:
            out["approval"] = outcome.approval.to_json()
    return out


#: The service's operations for the plugin (each takes ``{"event", "ctx"}``).
BEFORE, AFTER = "openclaw_before_tool_call", "openclaw_after_tool_call"


class _Generation(Protocol):
    """What :func:`service_answer` needs of the service's guard set."""

    config: Any  # a HookConfig: its ``config`` is the tools configuration

    def guard_for(self, context: Mapping[str, Any] | None) -> Guard: ...


def service_answer(gen: _Generation, op: str, fields: Mapping[str, Any]) -> dict[str, Any]:
    """The service's answer to one of the plugin's operations (:data:`BEFORE`: the decision,
    :func:`answer_json`; :data:`AFTER`: ``{"ok": true}``). A call that cannot be read is
    blocked with the reason."""
    from ..tools.lint import configured_agents

    agents = configured_agents(gen.config.config)
    event, ctx = fields.get("event"), fields.get("ctx")
    if op == AFTER:
        return {"ok": True, "recorded": record(gen.guard_for, event, ctx, agents)}
    try:
        return answer_json(decide(gen.guard_for, event, ctx, agents))
    except OpenClawError as err:
        params = event.get("params") if isinstance(event, Mapping) else None
        return {"action": "block", "params": params, "reason": f"cedarlite: blocked: {err.message}",
                "deniedReason": "plugin-before-tool-call", "policies": []}  # fmt: skip


# ---------------------------------------------------------------------------------------------
# The command line


def add_parser(hosts: Any) -> None:
    """Add ``openclaw`` to the subcommands of ``cedarlite hook``."""
    op = hosts.add_parser(
        "openclaw",
        help="print the OpenClaw settings that load cedarlite's plugin (--print-settings)",
        description="Check the configuration and rules, then print the `plugins` settings to "
        "deep-merge into openclaw.json: they load cedarlite's OpenClaw plugin, which decides "
        "every tool call through `cedarlite serve --stdio`.",
    )
    op.add_argument(
        "--print-settings",
        action="store_true",
        required=True,
        help="check the files, then print the settings (required: the plugin itself runs "
        "`cedarlite serve --stdio`)",
    )
    op.add_argument(
        "--rules",
        action="append",
        default=[],
        metavar="FILE",
        help="argument rules (.cedar), e.g. cedarlite:exec-commands; repeatable",
    )
    op.add_argument(
        "--config",
        metavar="FILE",
        help="a tools configuration (default: the tools section of OpenClaw's own "
        "openclaw.json, $OPENCLAW_CONFIG_PATH or ~/.openclaw/openclaw.json)",
    )
    op.add_argument(
        "--state-dir", metavar="DIR", help="private directory for session state (SQLite)"
    )
    op.add_argument("--decision-log", metavar="FILE", help="append each decision (JSON Lines)")
    op.add_argument(
        "--deadline",
        type=float,
        default=DEFAULT_DEADLINE,
        metavar="S",
        help=f"block a call not decided within S seconds (default {DEFAULT_DEADLINE:g}, "
        f"at most {MAX_DEADLINE:g})",
    )
    op.set_defaults(run=run_command)


def run_command(args: Any) -> int:
    """``cedarlite hook openclaw --print-settings ...``."""
    settings = Settings(
        tuple(args.rules), args.config, args.state_dir, args.decision_log, args.deadline
    )
    return print_settings(settings, sys.stdout, sys.stderr)
