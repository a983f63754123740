"""The policy of one MCP server's tools: what ``tools/list`` shows and which ``tools/call`` runs.

Both MCP adapters (the SDK middleware of :mod:`cedarlite.hosts.mcp` and the stdio proxy of
:mod:`cedarlite.hosts.mcp_proxy`) put a server's tools under a :class:`McpGate`. The gate knows the
server's tools only from its ``tools/list`` answers: each tool enters the run's catalog as the MCP
tool ``<server>__<tool>`` (plugin ``bundle-mcp``, names cleaned as in docs/tool-policy.md §6.4 by
:func:`cedarlite.tools.catalog.mcp_tools`) with its ``inputSchema`` as parameter schema, so argument
rules (``resource.path``) apply to it. When the tools change, the gate builds a new
:class:`~cedarlite.hooks.Guard` over them (session state, ``allow-always`` approvals and the
decision log carry over); every call is then decided by the guard, ``ask`` answers going to an
approver the adapter supplies (MCP elicitation).

The gate fails closed: before the server's name and tools are known, or when the policy cannot
be built over them (rules that do not validate against the tools' schemas, an allowlist that
leaves nothing), it offers no tool and denies every call, saying why. A denial is the MCP tool
result ``{"content": [{"type": "text", "text": reason}], "isError": true}``, never a protocol
error. No MCP SDK is needed here.
"""

from __future__ import annotations

import contextvars
import os
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .._log import get_logger
from ..errors import CedarliteError
from ..guard import _json
from ..guard.approvals import ApprovalRequest
from ..guard.decision_log import DecisionLog
from ..guard.outcome import Outcome
from ..guard.pipeline import Guard
from ..guard.state import MemorySessionStore, SessionStore
from ..policyset import PolicySet
from ..tools.catalog import mcp_tools
from ..tools.resolve import EmptyAllowlistError, ToolPolicy
from .mapping import MappingError, path_calls

log = get_logger("cedarlite.hosts")

#: A server offering more tools than this is refused (every call denied): building the policy
#: over them would take too long.
MAX_TOOLS = 10_000

_LOGGED_CLASHES = 8

#: ``ask(request)``: put an approval to a person; answers ``"allow-once"``, ``"allow-always"``,
#: ``"deny"`` or ``None`` (no one can be asked).
Ask = Callable[[ApprovalRequest], Awaitable[str | None]]

_ASKING: contextvars.ContextVar[tuple[Ask | None, list[ApprovalRequest]] | None] = (
    contextvars.ContextVar("cedarlite_mcp_ask", default=None)
)

Rules = PolicySet | str | os.PathLike[str] | Iterable[str | os.PathLike[str]] | None


#: The first MCP revision whose results carry ``resultType`` (sessionless, 2026-07-28).
MODERN_SINCE = "2026-07-28"


def denial(reason: str, protocol_version: Any = None) -> dict[str, Any]:
    """The ``tools/call`` result of a denied call: the reason as text, ``isError: true``
    (with ``resultType: "complete"`` when the call's protocol version requires it)."""
    result: dict[str, Any] = {"content": [{"type": "text", "text": reason}], "isError": True}
    if isinstance(protocol_version, str) and protocol_version >= MODERN_SINCE:
        result["resultType"] = "complete"
    return result


@dataclass(frozen=True, slots=True)
class Verdict:
    """The gate's answer for one ``tools/call``.

    ``allowed`` says whether to run the call; ``tool`` is the call's catalog name
    (``<server>__<tool>``); ``reason`` is set for a denial (answer with :func:`denial`);
    ``outcome`` is the guard's (``None`` when no guard could decide).
    """

    allowed: bool
    tool: str
    reason: str | None = None
    outcome: Outcome | None = None


class McpGate:
    """The tool policy of one MCP server, for an adapter that sees its messages.

    ``config`` is an OpenClaw-style tools configuration (a dict), ``rules`` extra Cedar (a
    :class:`~cedarlite.PolicySet`, Cedar text or ``.cedar`` paths), ``context`` the run context
    (docs/tool-policy.md §4.3), ``server`` the server name used in tool names (``None``: learnt from
    the handshake with :meth:`learn_server`), ``decision_log`` a path for the guard's decision log.

    The configuration, context, rules and decision log are checked here, so mistakes surface
    before any message flows: :class:`~cedarlite.tools.ConfigError`,
    :class:`~cedarlite.tools.RulesError`, :class:`~cedarlite.ValidationError` or
    :class:`~cedarlite.hooks.GuardError` (rules about tools the server has not listed yet are
    checked when it lists them).
    """

    def __init__(
        self,
        config: Mapping[str, Any] | None,
        *,
        rules: Rules = None,
        context: Mapping[str, Any] | None = None,
        server: str | None = None,
        decision_log: str | os.PathLike[str] | None = None,
        strict: bool = True,
        session_store: SessionStore | None = None,
    ) -> None:
        self._config = config
        # A one-shot iterable of paths is read once here, for every guard built later.
        self._rules: Rules = list(rules) if _is_path_list(rules) else rules  # type: ignore[arg-type]
        self._context = dict(context or {})
        self._decision_log = decision_log
        self._strict = strict
        self._store = session_store if session_store is not None else MemorySessionStore()
        self._server = server if isinstance(server, str) and server.strip() else None
        self.session = f"mcp:{uuid.uuid4().hex[:16]}"
        #: The directory relative paths are judged in, and the workspace (the process's).
        self.cwd: str | None = _cwd()
        self._tools: dict[str, tuple[str, Mapping[str, Any]]] = {}
        self._listing: dict[str, tuple[str, Mapping[str, Any]]] = {}  # a listing in progress
        self._built: dict[str, str] | None = None  # the tools the current state was built for
        self._names: dict[str, str] = {}
        self._clashes: dict[str, tuple[str, ...]] = {}  # server-side name -> names it collides with
        self._offered: frozenset[str] = frozenset()
        self._guard: Guard | None = None
        self._error: str | None = "the server has not listed its tools yet"
        self._check()

    # -- construction --------------------------------------------------------------------

    def _check(self) -> None:
        """Check what can be checked before the server lists its tools: the configuration and
        the context (strictly, against no tools), the rules' syntax, and the decision log. The
        rules are validated against the tools' schemas when the tools are known (they name
        tools such as ``fs__write_file``)."""
        ToolPolicy(self._config, [], strict=self._strict).check_context(self._context)
        rules = self._rules
        if isinstance(rules, str):
            PolicySet.from_str(rules, "<rules>")
        elif isinstance(rules, os.PathLike):
            PolicySet.from_file(rules)
        elif isinstance(rules, list):
            for path in rules:
                PolicySet.from_file(path)
        if self._decision_log is not None:
            DecisionLog(self._decision_log).close()

    def _clash(self, tool: str, others: tuple[str, ...]) -> str:
        """Why a tool's name cannot be told apart from others' (:meth:`_build`)."""
        named = ", ".join(f"`{n}`" for n in others)
        return (
            f"tool `{tool}` of server `{self._server}` cannot be told apart from {named} by a "
            "policy (tool names are compared ignoring case, with characters outside "
            "[A-Za-z0-9_-] read as `-`)"
        )

    def _build(self) -> None:
        """A new guard over the tools known now (or the reason there is none).

        Tools whose names collide (:attr:`~cedarlite.tools.catalog.McpTool.collides_with`) stay in
        the guard's catalog under their docs/tool-policy.md §6.4 names, so rules naming them still
        validate; a strict gate neither offers nor runs them, a lenient one uses those names
        (``delete_note`` becomes ``notes__delete_note-2`` beside ``Delete_Note``)."""
        self._guard, self._offered, self._names, self._clashes = None, frozenset(), {}, {}
        self._built = _keys(self._tools)
        if self._server is None:
            self._error = (
                "the MCP server's name is not known (it did not answer `initialize` or "
                "`server/discover` with its `serverInfo`); give it with --server"
            )
            return
        if len(self._tools) > MAX_TOOLS:
            self._error = f"the server lists more than {MAX_TOOLS} tools"
            return
        described = [{**tool, "name": name} for name, (_, tool) in self._tools.items()]
        named, renames = mcp_tools([(self._server, described)])
        for line in renames:
            log.info("%s", line)
        self._names = {t.tool: t.name for t in named}
        self._clashes = {t.tool: t.collides_with for t in named if t.collides_with}
        for tool, others in list(self._clashes.items())[:_LOGGED_CLASHES]:
            then = "not offered" if self._strict else f"named `{self._names[tool]}`"
            log.warning("cedarlite: %s: %s", self._clash(tool, others), then)
        if len(self._clashes) > _LOGGED_CLASHES:
            log.warning("cedarlite: and %d more", len(self._clashes) - _LOGGED_CLASHES)
        try:
            guard = Guard(
                self._config,
                [t.to_tool() for t in named],
                self._context,
                rules=self._rules,
                decision_log=self._decision_log,
                strict=self._strict,
                approver=_approve,
                session_store=self._store,
            )
        except EmptyAllowlistError as err:
            self._error = f"no tool of server `{self._server}` is allowed: {err}"
            log.warning("cedarlite: %s", self._error)
            return
        except Exception as err:  # rules that do not validate, or an error of ours: fail closed
            rendered = err.render() if isinstance(err, CedarliteError) else repr(err)
            first = rendered.splitlines()[0] if rendered else type(err).__name__
            self._error = f"the policy cannot be applied to the tools of `{self._server}`: {first}"
            log.error(
                "cedarlite: the policy cannot be applied to the tools of `%s`:\n%s",
                self._server,
                rendered,
            )
            return
        self._guard, self._error = guard, None
        self._offered = frozenset(guard.tools)

    # -- what the adapter tells the gate -------------------------------------------------

    @property
    def server(self) -> str | None:
        """The server name in tool names (``<server>__<tool>``), once known."""
        return self._server

    @property
    def guard(self) -> Guard | None:
        """The guard deciding calls now (``None`` until the tools are known)."""
        return self._guard

    @property
    def error(self) -> str | None:
        """Why no guard decides calls now (``None`` when one does)."""
        return self._error

    def learn_server(self, info: Any) -> None:
        """Read the server's name from an ``Implementation`` object (``serverInfo``) unless a
        name was given or learnt already (a server cannot rename itself mid-session)."""
        if self._server is not None or not isinstance(info, Mapping):
            return
        name = info.get("name")
        if isinstance(name, str) and name.strip():
            self._server = name
            if self._tools:
                self._build()

    def observe(self, tools: Any, *, first_page: bool = True, last_page: bool = True) -> None:
        """Learn the tools of one ``tools/list`` page. Pages add tools as they arrive; the last
        page (no ``nextCursor``) completes the listing, which then replaces the known tools.
        The policy is rebuilt only when the tools (names or input schemas) change."""
        page: dict[str, tuple[str, Mapping[str, Any]]] = {}
        for tool in tools if isinstance(tools, list) else ():
            if not isinstance(tool, Mapping) or not isinstance(tool.get("name"), str):
                continue
            schema = tool.get("inputSchema")
            try:
                key = _json.canonical(schema)
            except _json.NotJSON:  # never from parsed JSON; refuse the schema all the same
                key, schema = "", None
            page[tool["name"]] = (key, {"inputSchema": schema} if schema is not None else {})
        if first_page:
            self._listing = {}
        self._listing.update(page)
        known = dict(self._listing) if last_page else {**self._tools, **page}
        self._tools = known
        if _keys(known) != self._built:
            self._build()

    def forget(self) -> None:
        """``notifications/tools/list_changed``: the next listing rebuilds the policy."""
        self._tools, self._built = {}, None
        self._guard, self._offered, self._names, self._clashes = None, frozenset(), {}, {}
        self._error = "the server's tools changed and have not been listed again yet"

    def knows(self, name: Any) -> bool:
        """Whether the server has listed a tool of this name."""
        return isinstance(name, str) and name in self._tools

    def offered(self, name: Any) -> bool:
        """Whether the tool of this (server-side) name is offered to the client (a strict gate
        offers no tool whose name collides with another's)."""
        if not isinstance(name, str) or (self._strict and name in self._clashes):
            return False
        return self._names.get(name) in self._offered

    def filter(self, tools: Any) -> list[Any]:
        """The tools of a ``tools/list`` page the client may see, unchanged and in order."""
        if not isinstance(tools, list):
            return []
        return [t for t in tools if isinstance(t, Mapping) and self.offered(t.get("name"))]

    def catalog_name(self, name: str) -> str:
        """The catalog name (``<server>__<tool>``) of a server-side tool name."""
        known = self._names.get(name)
        if known is not None:
            return known
        named, _ = mcp_tools([(self._server or "mcp", [name])], self._names.values())
        return named[0].name if named else f"{self._server or 'mcp'}__tool"

    # -- deciding ------------------------------------------------------------------------

    async def decide(
        self,
        name: str,
        arguments: Any,
        *,
        call_id: str | None = None,
        session: str | None = None,
        ask: Ask | None = None,
    ) -> Verdict:
        """Decide one ``tools/call`` of the server-side tool ``name``.

        ``ask`` puts ``@ask`` approvals to a person (``None``: the call is denied, naming the
        approval it needed). Never raises, except that a cancelled caller's cancellation
        propagates (the guard logs it as a block first).
        """
        tool = self.catalog_name(name)
        guard = self._guard
        if guard is None:
            reason = f"Tool call blocked: {self._error}."
            return Verdict(False, tool, reason)
        clash = self._clashes.get(name) if self._strict else None
        if clash is not None:
            reason = f"Tool call blocked: {self._clash(name, clash)}; rename them on the server."
            return Verdict(False, tool, reason)
        try:  # one decision per file or directory the arguments name, at any depth
            calls = path_calls({} if arguments is None else arguments, self.cwd)
        except MappingError as err:
            return Verdict(False, tool, f"Tool call blocked: {err.message}.")
        asked: list[ApprovalRequest] = []
        token = _ASKING.set((ask, asked))
        try:
            call = {"sessionKey": session or self.session, "toolCallId": call_id}
            for params in calls:
                outcome = await guard.abefore_tool_call(tool, params, call)
                if not outcome.allowed:
                    break
        finally:
            _ASKING.reset(token)
        if outcome.allowed:
            return Verdict(True, tool, outcome=outcome)
        reason = _reason(outcome, asked)
        return Verdict(False, tool, reason, outcome)

    def record(
        self,
        name: str,
        arguments: Any,
        *,
        call_id: str | None = None,
        session: str | None = None,
        result: Any = None,
        error: str | None = None,
    ) -> None:
        """Tell the guard what an allowed call returned (loop detection): its ``tools/call``
        result (wire form; an ``isError`` result counts as an error with its text) or the
        JSON-RPC ``error`` text. Never raises."""
        guard = self._guard
        if guard is None:
            return
        if error is None and isinstance(result, Mapping) and result.get("isError") is True:
            error, result = _text_of(result) or "error", None
        call = {"sessionKey": session or self.session, "toolCallId": call_id}
        try:  # the calls :meth:`decide` judged, so that loop detection sees the same arguments
            calls = path_calls({} if arguments is None else arguments, self.cwd)
        except MappingError:  # never allowed: nothing ran
            return
        tool = self.catalog_name(name)
        for params in calls:
            guard.after_tool_call(tool, params, call, result=result, error=error)


def _text_of(result: Mapping[str, Any]) -> str:
    """The text blocks of a tool result, joined."""
    content = result.get("content")
    blocks = content if isinstance(content, list) else []
    texts = [b.get("text") for b in blocks if isinstance(b, Mapping)]
    return " ".join(t for t in texts if isinstance(t, str))


async def _approve(request: ApprovalRequest) -> str | None:
    """The guard's approver: the ``ask`` of the call being decided (see :meth:`decide`)."""
    asking = _ASKING.get()
    if asking is None:
        return None
    ask, asked = asking
    asked.append(request)
    return None if ask is None else await ask(request)


def _reason(outcome: Outcome, asked: list[ApprovalRequest]) -> str:
    """The model-visible reason of a block: the guard's text, what an approval asked, and the
    deciding policies' ``@id`` when the text does not name them."""
    text = outcome.reason or "Tool call blocked"
    if outcome.denied_reason == "plugin-approval" and asked:
        request = asked[-1]
        text = f"{text}: {request.description or request.title}"
    if outcome.denied_reason in ("policy", "plugin-approval"):
        text = outcome.citing_policies(text)
    return text


# ---------------------------------------------------------------------------------------------
# Approvals as MCP elicitation (form mode)

#: The answers a person can give, as the form's one field.
APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "decision": {
            "type": "string",
            "title": "Decision",
            "oneOf": [
                {"const": "allow-once", "title": "Allow this call"},
                {"const": "allow-always", "title": "Always allow this exact call in this session"},
                {"const": "deny", "title": "Deny"},
            ],
        }
    },
    "required": ["decision"],
}

_PREVIEW = 2000


def approval_message(request: ApprovalRequest, server_tool: str) -> str:
    """The text of the elicitation that asks a person to approve a call: the approval's title
    and description, the tool and its arguments (cut at 2,000 characters)."""
    try:
        args = _json.encode(request.params, sort_keys=True, redact=True)[0]
    except Exception:  # params that cannot be shown must not stop the question
        args = "<unreadable>"
    if len(args) > _PREVIEW:
        args = args[:_PREVIEW] + f"... ({len(args) - _PREVIEW} more characters)"
    parts = [request.title, request.description, f"Tool: {server_tool}", f"Arguments: {args}"]
    return "\n\n".join(p for p in parts if p)


def approval_answer(result: Any) -> str | None:
    """Read an ``elicitation/create`` result: ``allow-once`` or ``allow-always`` only when the
    person accepted with that choice, ``deny`` for anything else they answered."""
    if not isinstance(result, Mapping):
        return None
    content = result.get("content")
    choice = content.get("decision") if isinstance(content, Mapping) else None
    if result.get("action") == "accept" and choice in ("allow-once", "allow-always"):
        return str(choice)
    return "deny"


def form_elicitation(capabilities: Any) -> bool:
    """Whether client capabilities (wire form) include form-mode elicitation (an empty
    ``elicitation`` object means form mode, as before modes existed)."""
    if not isinstance(capabilities, Mapping):
        return False
    elicitation = capabilities.get("elicitation")
    if not isinstance(elicitation, Mapping):
        return False
    return "form" in elicitation or "url" not in elicitation


def _cwd() -> str | None:
    try:
        return os.getcwd()
    except OSError:  # removed meanwhile: relative paths are judged as they are
        return None


def _keys(tools: Mapping[str, tuple[str, Any]]) -> dict[str, str]:
    return {name: key for name, (key, _) in tools.items()}


def _is_path_list(rules: Any) -> bool:
    return (
        rules is not None
        and not isinstance(rules, PolicySet | str | bytes | os.PathLike)
        and isinstance(rules, Iterable)
    )
