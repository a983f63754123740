"""OpenClaw as a host: the shipped plugin's Python side.

OpenClaw (2026.9) runs plugins inside its gateway. cedarlite ships one
(``cedarlite/hosts/openclaw_plugin``; installed by :mod:`cedarlite.hosts.openclaw_settings`)
that starts one
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
  tool layer's keys are read (:mod:`cedarlite.hosts.openclaw_config`; 2026.9 writes the agent
  list as the object ``agents.entries``, which is read as ``agents.list``).

The service (:mod:`cedarlite.hosts.serve`) answers the plugin with :func:`service_answer`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from .mapping import MappingError, path_calls, without_path_attributes
from .openclaw_config import OpenClawError

if TYPE_CHECKING:
    from ..guard import Guard, Outcome

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
    # lazy on purpose: the service imports this module for its first OpenClaw request only
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


def is_tool_call(tool: Any) -> bool:
    """Whether ``tool`` names ``tool_call`` as the guard reads tool names (``TOOL_CALL`` and
    `` tool_call`` are that tool to it too)."""
    # lazy on purpose: the service imports this module for its first OpenClaw request only
    from ..tools.names import norm

    return norm(tool) == TOOL_CALL


def unwrap(tool: Any, params: Any) -> tuple[Any, Any, list[Any]]:
    """The tool a call runs in the end and its arguments, through any number of
    ``tool_call`` s calling one another, and the params of those ``tool_call`` s (outermost
    first). One level of the parsed event per turn: linear, no recursion."""
    outers = []
    while is_tool_call(tool):
        outers.append(params)
        tool, params = inner_call(params)
    return tool, params, outers


def decided_call(event: Any, ctx: Any, agents: frozenset[str] = frozenset()) -> Call:
    """The call the guard decides for a ``before_tool_call`` event: the event's tool and
    params, or, for a ``tool_call``, the tool it calls (:func:`unwrap`) with its arguments
    (and no session: OpenClaw decides the inner call again, with the session, when it runs
    it)."""
    if not isinstance(event, Mapping):
        raise OpenClawError('the event must be an object: {"toolName", "params", ...}')
    record = call_record(event, ctx)
    tool, params, outers = unwrap(event.get("toolName"), event.get("params"))
    if outers:
        record = {**record, "sessionKey": None, "sessionId": None}
    return Call(tool, params, record, run_context(ctx, agents))


def judged_params(params: Any) -> tuple[Any, ...]:
    """The arguments the guard decides for one call's ``params``: one set per file or directory
    they name, at any depth, as every adapter judges paths (:func:`~.mapping.path_calls`: the
    path cleaned, its ``absolutePath`` beside it, a control character refused). OpenClaw does
    not tell the plugin the agent's workspace, so no ``inWorkspace`` is given: the shipped
    rules then judge writes by the path's text; what the model itself sent under those names
    is dropped. Raises :class:`OpenClawError` for garbage."""
    try:
        calls = path_calls(without_path_attributes(params))
    except MappingError as err:
        raise OpenClawError(err.message) from None
    return tuple(
        {k: v for k, v in p.items() if k != "inWorkspace"} if isinstance(p, Mapping) else p
        for p in calls
    )


def decide(guard_for: Callable[[Mapping[str, Any]], Guard], event: Any, ctx: Any,
           agents: frozenset[str] = frozenset()) -> tuple[Outcome, Any]:  # fmt: skip
    """The guard's outcome for one ``before_tool_call`` (``guard_for``: the guard of a run
    context; one decision per path the arguments name, :func:`judged_params`, the first that
    does not allow deciding), and the params the event's tool runs with: the outcome's, or
    for a ``tool_call``, its own with the inner tool's arguments as the outcome says."""
    c = decided_call(event, ctx, agents)
    guard = guard_for(c.context)
    for judged in judged_params(c.params):
        outcome = guard.before_tool_call(c.tool, judged, c.call)
        if not outcome.allowed:
            break
    params = outcome.params
    _, _, outers = unwrap(event.get("toolName"), event.get("params"))
    if params == judged:  # the call runs as the model sent it
        params = event.get("params")
    else:
        params = without_path_attributes(params)
        for outer in reversed(outers):
            params = {**outer, "args": params}
    return outcome, params


def record(guard_for: Callable[[Mapping[str, Any]], Guard], event: Any, ctx: Any,
           agents: frozenset[str] = frozenset()) -> bool:  # fmt: skip
    """Feed one ``after_tool_call`` to loop detection; ``False`` when there is nothing to
    record: a ``tool_call`` (its inner call is recorded) or a call that did not run (the
    plugin sends only calls it let through; a blocked result is never recorded)."""
    if not isinstance(event, Mapping) or is_tool_call(event.get("toolName")):
        return False
    result = event.get("result")
    details = result.get("details") if isinstance(result, Mapping) else None
    if isinstance(details, Mapping) and details.get("status") == "blocked":
        return False
    c = decided_call(event, ctx, agents)
    error = event.get("error")
    try:  # recorded under the arguments it was decided with, so that loop detection adds up
        judged = judged_params(c.params)
    except OpenClawError:  # never allowed: nothing ran
        return False
    guard = guard_for(c.context)
    for params in judged:
        guard.after_tool_call(
            c.tool, params, c.call, result=result, error=error if isinstance(error, str) else None
        )
    return True


# ---------------------------------------------------------------------------------------------
# The service's OpenClaw operations


def answer_json(outcome: Outcome, params: Any) -> dict[str, Any]:
    """The answer to ``openclaw_before_tool_call``: the guard's outcome (the call runs with
    ``params``), its ``reason`` as the model or the person asked reads it (naming the deciding
    policies' ``@id`` s, or the configuration layer that removed the tool)."""
    out: dict[str, Any] = {
        "action": outcome.action,
        "params": params,
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


def _reason(outcome: Outcome) -> str:
    """The outcome's reason and the failure behind it, naming the policies that decided."""
    text = outcome.reason or "blocked"
    return outcome.citing_policies(f"{text}: {outcome.error}" if outcome.error else text)


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
    # lazy on purpose: the service imports this module for its first OpenClaw request only
    from ..tools.lint import configured_agents

    agents = configured_agents(gen.config.config)
    event, ctx = fields.get("event"), fields.get("ctx")
    if op == AFTER:
        return {"ok": True, "recorded": record(gen.guard_for, event, ctx, agents)}
    try:
        return answer_json(*decide(gen.guard_for, event, ctx, agents))
    except OpenClawError as err:
        params = event.get("params") if isinstance(event, Mapping) else None
        return {"action": "block", "params": params, "reason": f"cedarlite: blocked: {err.message}",
                "deniedReason": "plugin-before-tool-call", "policies": []}  # fmt: skip
