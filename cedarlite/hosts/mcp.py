"""MCP servers built with the official Python SDK (``mcp`` 2.x), under the tool policy.

```python
from mcp.server.mcpserver import MCPServer
from cedarlite.hosts.mcp import guard_server

server = MCPServer("files")
# ... @server.tool() functions ...
guard_server(server, {"tools": {"deny": ["files__delete_*"]}}, rules=["rules.cedar"])
server.run()
```

:class:`PolicyMiddleware` is a context-tier ``ServerMiddleware`` (``Server.middleware``, the SDK's
provisional middleware API, tested with ``mcp`` 2.3; ``pip install 'cedarlite[mcp]'`` pins that
range). It filters every ``tools/list`` page through the tool policy and decides every
``tools/call`` with the guard before the tool runs (an :class:`~cedarlite.hosts.mcp_gate.McpGate`
over the server's own tools, named ``<server>__<tool>``):

* a denied call is answered with the tool result ``isError: true`` and the reason as text (what
  the model reads and replans on), never a JSON-RPC error, and the tool does not run;
* an ``@ask`` approval is put to the person with MCP elicitation (a form with *allow once*,
  *always allow this exact call*, *deny*) when the client offers form elicitation in the
  handshake era; otherwise the call is denied, naming the approval it needed;
* a call of a tool the server has not listed yet makes the middleware list the server's tools
  (through the rest of the chain) before deciding;
* any error of cedarlite's denies the call (fail closed). Malformed ``tools/call`` params (a
  name that is not a string, arguments that are not an object) are a JSON-RPC invalid-params
  error, as the SDK itself answers them.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from dataclasses import replace
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

try:
    from mcp.shared.exceptions import MCPError
    from mcp_types import INVALID_PARAMS
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS
except ImportError:  # pragma: no cover - exercised without the extra installed
    raise ImportError(
        "cedarlite.hosts.mcp needs the MCP Python SDK (mcp 2.3): pip install 'cedarlite[mcp]'"
    ) from None

from .._log import get_logger
from ..guard.approvals import ApprovalRequest
from .mcp_gate import APPROVAL_SCHEMA, McpGate, Rules, approval_answer, approval_message, denial
from .mcp_gate import form_elicitation as _form_elicitation

if TYPE_CHECKING:
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

log = get_logger("cedarlite.hosts")

#: The ``mcp`` releases this middleware was tested with (the middleware API is provisional).
TESTED_MCP = (2, 3)

try:
    _MCP_VERSION = version("mcp")
except PackageNotFoundError:  # pragma: no cover - a source checkout of the SDK
    _MCP_VERSION = "unknown"
if tuple(int(p) for p in _MCP_VERSION.split(".")[:2] if p.isdigit()) != TESTED_MCP:
    log.warning(
        "cedarlite.hosts.mcp was tested with mcp %s.x, not %s: the SDK's middleware API is "
        "provisional",
        ".".join(map(str, TESTED_MCP)),
        _MCP_VERSION,
    )

_PAGES = 100


class PolicyMiddleware:
    """A ``ServerMiddleware`` putting one server's tools under cedarlite's tool policy.

    ``config``, ``rules``, ``context`` and ``decision_log`` as for
    :class:`~cedarlite.hosts.mcp_gate.McpGate`; ``server`` is the server's name in tool names
    (``files`` makes ``files__read``). Register it with ``MCPServer(..., middleware=[...])``,
    ``server.middleware.append(...)``, or :func:`guard_server`. ``gate`` is the
    :class:`McpGate` it decides with.
    """

    def __init__(
        self,
        config: Mapping[str, Any] | None,
        *,
        server: str,
        rules: Rules = None,
        context: Mapping[str, Any] | None = None,
        decision_log: str | None = None,
    ) -> None:
        self.gate = McpGate(
            config, rules=rules, context=context, server=server, decision_log=decision_log
        )
        self._sessions: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """Filter ``tools/list``, decide ``tools/call``, pass everything else on."""
        if ctx.request_id is None:
            return await call_next(ctx)
        if ctx.method == "tools/list":
            return await self._list(ctx, call_next)
        if ctx.method == "tools/call":
            return await self._call(ctx, call_next)
        return await call_next(ctx)

    async def _list(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> Any:
        result = _wire(await call_next(ctx))
        cursor = ctx.params.get("cursor") if isinstance(ctx.params, Mapping) else None
        try:
            last = not isinstance(result.get("nextCursor"), str) or not result["nextCursor"]
            self.gate.observe(result.get("tools"), first_page=not cursor, last_page=last)
            kept = self.gate.filter(result.get("tools"))
        except Exception as err:  # an error of ours: show no tool
            log.error("cedarlite: filtering tools/list failed: %r", err)
            kept = []
        return {**result, "tools": kept}

    async def _call(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> Any:
        params = ctx.params if isinstance(ctx.params, Mapping) else {}
        name, arguments = params.get("name"), params.get("arguments")
        if not isinstance(name, str) or not (arguments is None or isinstance(arguments, dict)):
            raise MCPError(
                INVALID_PARAMS,
                "Invalid params: `tools/call` needs a string `name` and object `arguments`",
            )
        session = self._session(ctx)
        call_id = str(ctx.request_id)
        try:
            if not self.gate.knows(name):
                await self._refresh(ctx, call_next)
            ask = self._asker(ctx, name) if _can_elicit(ctx) else None
            verdict = await self.gate.decide(
                name, arguments, call_id=call_id, session=session, ask=ask
            )
        except Exception as err:  # an error of ours: deny, never run the tool
            log.error("cedarlite: deciding `%s` failed: %r", name, err)
            reason = f"Tool call blocked: cedarlite failed to decide it ({type(err).__name__})."
            return denial(reason, ctx.protocol_version)
        if not verdict.allowed:
            return denial(verdict.reason or "Tool call blocked", ctx.protocol_version)
        try:
            result = await call_next(ctx)
        except MCPError as err:
            self.gate.record(name, arguments, call_id=call_id, session=session, error=str(err))
            raise
        self.gate.record(name, arguments, call_id=call_id, session=session, result=_wire(result))
        return result

    async def _refresh(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> None:
        """List the server's tools (every page) through the rest of the chain."""
        cursor: Any = None
        for page in range(_PAGES):
            listing = replace(
                ctx, method="tools/list", params={"cursor": cursor} if cursor else None
            )
            result = _wire(await call_next(listing))
            cursor = result.get("nextCursor")
            last = not isinstance(cursor, str) or not cursor
            self.gate.observe(result.get("tools"), first_page=page == 0, last_page=last)
            if last:
                return

    def _asker(self, ctx: ServerRequestContext[Any, Any], name: str) -> Any:
        async def ask(request: ApprovalRequest) -> str | None:
            """Put the approval to the person with a form elicitation."""
            message = approval_message(request, f"{name} (server {self.gate.server})")
            answer = await ctx.session.elicit_form(
                message, APPROVAL_SCHEMA, related_request_id=ctx.request_id
            )
            return approval_answer(answer.model_dump(by_alias=True, mode="json"))

        return ask

    def _session(self, ctx: ServerRequestContext[Any, Any]) -> str:
        """One session key per client connection (loop history, ``allow-always``)."""
        connection = getattr(ctx.session, "_connection", None)
        if connection is None:
            return self.gate.session
        try:
            found = self._sessions.get(connection)
            if found is None:
                found = self._sessions[connection] = f"{self.gate.session}:{len(self._sessions)}"
            return found
        except TypeError:  # not weakly referenceable
            return self.gate.session


def guard_server(
    server: Any,
    config: Mapping[str, Any] | None,
    *,
    rules: Rules = None,
    context: Mapping[str, Any] | None = None,
    decision_log: str | None = None,
    name: str | None = None,
) -> PolicyMiddleware:
    """Append a :class:`PolicyMiddleware` to ``server.middleware`` (an ``MCPServer`` or a
    low-level ``Server``) and return it; tools are named ``<name>__<tool>``, ``name`` defaulting
    to the server's own name."""
    server_name = name or getattr(server, "name", None)
    if not isinstance(server_name, str) or not server_name.strip():
        raise ValueError("the server has no name: give guard_server(..., name=...)")
    middleware = PolicyMiddleware(
        config, server=server_name, rules=rules, context=context, decision_log=decision_log
    )
    server.middleware.append(middleware)
    return middleware


def _can_elicit(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Form elicitation is possible: the client offers it and the connection can send
    requests (a handshake-era connection; 2026-07-28 sessions ask differently)."""
    session = ctx.session
    if session.protocol_version in MODERN_PROTOCOL_VERSIONS or not session.can_send_request:
        return False
    caps = session.client_capabilities
    wire = caps.model_dump(by_alias=True, mode="json", exclude_none=True) if caps else None
    return _form_elicitation(wire)


def _wire(result: Any) -> dict[str, Any]:
    """A handler result as its wire dict."""
    if result is None:
        return {}
    if isinstance(result, dict):
        return result
    dump = getattr(result, "model_dump", None)
    return dump(by_alias=True, mode="json", exclude_none=True) if dump is not None else {}
