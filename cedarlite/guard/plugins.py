"""The plugin stage: trusted tool policies, then ``before_tool_call`` hooks (descending
priority, a block is sticky, the last params win, the first approval is asked), as OpenClaw
runs them (docs/guard.md).

:meth:`Plugins.plan` is a generator that yields each handler with its arguments and receives
its result, so that one plan serves the plain and the async entry points
(:meth:`Plugins.drive`, :meth:`Plugins.adrive`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Generator, Mapping
from typing import Any

from .._log import get_logger
from ..tools.names import js_truthy
from .approvals import GuardError, hook_request_problem
from .approving import hook_request
from .call import Call, block
from .outcome import HOOK_BLOCKED, TRUSTED_BLOCKED, Outcome

log = get_logger("cedarlite.hooks")

HookHandler = Callable[[dict[str, Any], dict[str, Any]], Any]
Plan = Generator[tuple[HookHandler, tuple[Any, ...]], Any, "Outcome | None"]


class Raised:
    """A handler's exception, handed to the hook plan."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


class HookFailure(Exception):
    """A trusted policy or (fail-closed) hook failed: the call fails."""


class Plugins:
    """The trusted policies and hooks registered with one guard (bound to its process: a
    pickled guard carries none)."""

    __slots__ = ("hooks", "registered", "trusted")

    def __init__(self) -> None:
        self.hooks: tuple[tuple[float, int, str, HookHandler], ...] = ()
        self.trusted: tuple[tuple[str, HookHandler], ...] = ()
        self.registered = 0

    def __bool__(self) -> bool:
        return bool(self.hooks or self.trusted)

    def copy(self) -> Plugins:
        """The same registrations, in a store of their own (later ones are not shared)."""
        other = Plugins()
        other.hooks, other.trusted, other.registered = self.hooks, self.trusted, self.registered
        return other

    def add_hook(self, handler: HookHandler, priority: float, plugin_id: str | None) -> None:
        """Register a hook (higher ``priority`` first, then registration order)."""
        plugin = plugin_name(handler, plugin_id)
        if isinstance(priority, bool) or not isinstance(priority, int | float):
            raise GuardError(f"hook priority must be a number, not `{priority!r}`")
        self.registered += 1
        hooks = [*self.hooks, (-float(priority), self.registered, plugin, handler)]
        self.hooks = tuple(sorted(hooks, key=lambda h: (h[0], h[1])))

    def add_trusted(self, handler: HookHandler, plugin_id: str | None) -> None:
        """Register a trusted policy (run before hooks, in registration order)."""
        self.trusted = (*self.trusted, (plugin_name(handler, plugin_id), handler))

    def plan(self, c: Call, agent: str, fail_closed: bool) -> Plan:
        """Trusted policies, then hooks merged: yields each handler with its arguments and
        receives its result (or :class:`Raised`)."""
        for plugin, handler in self.trusted:
            result = yield handler, hook_args(c, agent)
            spec = _result(plugin, result, trusted=True, fail_closed=fail_closed)
            if spec is None:
                continue
            if js_truthy(spec.get("block")):
                why = spec.get("blockReason")
                why = why if isinstance(why, str) and why else TRUSTED_BLOCKED
                return block(c, "plugin-before-tool-call", why)
            if isinstance(spec.get("requireApproval"), Mapping):
                c.asks += (hook_request(c, spec["requireApproval"], plugin, agent),)
            if isinstance(spec.get("params"), Mapping):
                c.params = dict(spec["params"])
        blocked = False
        reason: Any = None
        params: Any = None
        approval: Mapping[str, Any] | None = None
        approving: str | None = None
        for _, _, plugin, handler in self.hooks:
            result = yield handler, hook_args(c, agent)
            spec = _result(plugin, result, trusted=False, fail_closed=fail_closed)
            if spec is None:
                continue
            if spec.get("blockReason") is not None:
                reason = spec["blockReason"]
            asked = spec.get("requireApproval")
            if approval is None and isinstance(asked, Mapping):
                approval, approving = asked, plugin
            if spec.get("params") is not None and approving in (None, plugin):
                params = spec["params"]
            if js_truthy(spec.get("block")):
                blocked = True
                break
        if blocked:
            text = reason if isinstance(reason, str) and reason else HOOK_BLOCKED
            return block(c, "plugin-before-tool-call", text)
        if approval is not None and approving is not None:
            c.asks += (hook_request(c, approval, approving, agent),)
        if isinstance(params, Mapping):
            c.params = {**c.params, **params} if isinstance(c.params, Mapping) else dict(params)
        return None

    @staticmethod
    def drive(plan: Plan) -> Outcome | None:
        """Run a hook plan with plain calls (an awaitable result is a handler error)."""
        try:
            step = next(plan)
            while True:
                handler, args = step
                try:
                    result = handler(*args)
                    if inspect.isawaitable(result):
                        if inspect.iscoroutine(result):
                            result.close()
                        result = Raised(TypeError("async handlers need abefore_tool_call"))
                except Exception as err:
                    result = Raised(err)
                step = plan.send(result)
        except StopIteration as stop:
            return stop.value

    @staticmethod
    async def adrive(plan: Plan) -> Outcome | None:
        """Run a hook plan, awaiting handlers that return awaitables."""
        try:
            step = next(plan)
            while True:
                handler, args = step
                try:
                    result = handler(*args)
                    if inspect.isawaitable(result):
                        result = await result
                except Exception as err:
                    result = Raised(err)
                step = plan.send(result)
        except StopIteration as stop:
            return stop.value


def plugin_name(handler: Any, plugin_id: str | None) -> str:
    """The plugin id a handler is registered under (its qualified name by default)."""
    if not callable(handler):
        raise GuardError(f"a hook handler must be callable, not `{type(handler).__name__}`")
    if plugin_id is None:
        module = getattr(handler, "__module__", None) or "?"
        return f"{module}.{getattr(handler, '__qualname__', type(handler).__name__)}"
    if not isinstance(plugin_id, str) or not plugin_id:
        raise GuardError("a hook's plugin_id must be a non-empty string")
    return plugin_id


def _result(
    plugin: str, result: Any, *, trusted: bool, fail_closed: bool
) -> Mapping[str, Any] | None:
    """A handler's result as a dict (``None``: no opinion). A result whose
    ``requireApproval`` is neither absent, ``None``, ``False`` nor a well-formed approval
    object fails as a raising handler would: read as no approval, it would let the call
    through unasked."""
    if result is None:
        return None
    error: BaseException
    if isinstance(result, Mapping):
        problem = hook_request_problem(result.get("requireApproval"))
        if problem is None:
            return result
        error = TypeError(problem)
    elif isinstance(result, Raised):
        error = result.error
    else:
        error = TypeError(f"returned `{type(result).__name__}`; expected a dict or None")
    kind = "trusted tool policy" if trusted else "before_tool_call handler"
    log.warning("[hooks] %s from %s failed: %s", kind, plugin, error)
    if trusted or fail_closed:
        raise HookFailure(f"{kind} from {plugin} failed: {error}")
    return None


def hook_args(c: Call, agent: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The hook event and context; each handler gets its own copy."""
    event: dict[str, Any] = {
        "toolName": c.tool,
        "params": dict(c.params) if isinstance(c.params, Mapping) else {},
    }
    ctx: dict[str, Any] = {"toolName": c.tool, "agentId": agent}
    for key, value in (
        ("sessionKey", c.session),
        ("sessionId", c.session_id),
        ("runId", c.run),
        ("toolCallId", c.call_id),
    ):
        if value is not None:
            ctx[key] = value
            if key in ("runId", "toolCallId"):
                event[key] = value
    return event, ctx
