"""Approvals (docs/guard.md §11.4): asking a person before a call runs.

An approval is required by a satisfied ``@ask`` policy or by a plugin hook's
``requireApproval``. Either way it becomes an :class:`ApprovalRequest`; the guard's
``approver`` (an async callable) answers ``"allow-once"``, ``"allow-always"``, ``"deny"`` or
``None``, and :func:`request_approval` turns the answer, a timeout, a cancellation or an error
into a :class:`Resolution` with the spec's exact failure messages.

``@ask`` policies are read once, when the guard is built (:func:`ask_spec`): ``@ask("why")``
is the description, ``@title``, ``@severity`` (``info``, ``warning``, ``critical``),
``@timeout`` (a Cedar duration such as ``"60s"`` or ``"2m"``) and ``@timeoutBehavior``
(``allow`` or ``deny``) are optional.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from .._log import get_logger
from ..data.ext.datetime import Duration
from ..errors import CedarliteError

if TYPE_CHECKING:
    from ..lang.ast import Policy

log = get_logger("cedarlite.hooks")

SEVERITIES = ("info", "warning", "critical")
DEFAULT_SEVERITY = "warning"
DEFAULT_TIMEOUT = 120.0
RESOLUTIONS = ("allow-once", "allow-always", "deny", "timeout", "cancelled")

# The failure reasons of docs/guard.md §11.4, word for word.
UNAVAILABLE = "Plugin approval unavailable (no approval route)"
DENIED = "Denied by user"
TIMED_OUT = "Approval timed out"
CANCELLED = "Approval cancelled (run aborted)"
GATEWAY = "Plugin approval required (gateway unavailable)"

Approver = Callable[["ApprovalRequest"], Awaitable[str | None] | str | None]


class GuardError(CedarliteError):
    """A guard that cannot be built: a malformed ``@ask`` policy annotation, a decision log
    that cannot be opened, rules that cannot be read."""

    code = "E0850"


@dataclass(frozen=True)
class ApprovalRequest:
    """What a person is asked to approve.

    ``title``, ``description``, ``severity`` (``info``/``warning``/``critical``), ``tool`` (the
    normalized name), ``call`` (``sessionKey``, ``toolCallId``, ``runId``), ``timeout`` in seconds
    and ``timeout_behavior`` (``allow``/``deny``: what a timeout means) as in docs/guard.md
    §11.4; ``plugin_id`` is the plugin that asked (``None`` for an ``@ask`` policy,
    whose labels are in ``policies``); ``agent`` the run's agent; ``params`` the arguments the call
    would run with.
    """

    title: str
    description: str
    severity: str
    tool: str
    call: Mapping[str, Any]
    timeout: float = DEFAULT_TIMEOUT
    timeout_behavior: str = "deny"
    plugin_id: str | None = None
    agent: str = "main"
    params: Any = None
    policies: tuple[str, ...] = ()
    on_resolution: Callable[[str], Any] | None = field(default=None, compare=False, repr=False)
    key: str = field(default="", compare=False, repr=False)

    def to_json(self) -> dict[str, Any]:
        """The gateway's ``plugin.approval.request`` payload (docs/guard.md §11.4.1)."""
        return {
            "pluginId": self.plugin_id,
            "title": self.title,
            "description": self.description,
            "severity": self.severity,
            "toolName": self.tool,
            "toolCallId": self.call.get("toolCallId"),
            "agentId": self.agent,
            "sessionKey": self.call.get("sessionKey"),
            "timeoutMs": round(self.timeout * 1000),
            "twoPhase": True,
        }


# Named tuples, not dataclasses: this module loads in every hook process (one per tool call),
# where a dataclass costs ~1 ms to create and a named tuple a tenth of that. (ApprovalRequest
# stays a dataclass: two of its fields are left out of its comparisons.)
class Resolution(NamedTuple):
    """How an approval ended: ``resolution`` (one of :data:`RESOLUTIONS`, or
    ``unavailable``/``error``), whether the call may ``proceed``, the failure ``reason``, and
    the seconds spent waiting."""

    resolution: str
    proceed: bool
    reason: str | None = None
    waited: float = 0.0


# ---------------------------------------------------------------------------------------------
# @ask policies


class AskSpec(NamedTuple):
    """The approval an ``@ask`` policy requires, read from its annotations."""

    label: str
    description: str
    title: str | None = None
    severity: str = DEFAULT_SEVERITY
    timeout: float = DEFAULT_TIMEOUT
    timeout_behavior: str = "deny"


def ask_spec(policy: Policy, label: str, source: str | None = None) -> AskSpec:
    """Read an ``@ask`` policy's annotations; :class:`GuardError` names the policy and the
    bad annotation."""
    notes = policy.annotations

    def fail(message: str) -> GuardError:
        return GuardError(f"policy `{label}`: {message}", span=policy.span, source=source)

    severity = notes.get("severity", DEFAULT_SEVERITY)
    if severity not in SEVERITIES:
        raise fail(f"@severity(`{severity}`) must be one of `info`, `warning`, `critical`")
    behavior = notes.get("timeoutBehavior", "deny")
    if behavior not in ("allow", "deny"):
        raise fail(f"@timeoutBehavior(`{behavior}`) must be `allow` or `deny`")
    timeout = DEFAULT_TIMEOUT
    if "timeout" in notes:
        try:
            ms = Duration.parse(notes["timeout"]).ms
        except CedarliteError:
            ms = -1
        if ms <= 0:
            raise fail(f"@timeout(`{notes['timeout']}`) must be a positive duration like `60s`")
        timeout = ms / 1000
    return AskSpec(label, notes["ask"], notes.get("title"), severity, timeout, behavior)


def hook_request_problem(value: Any) -> str | None:
    """What is wrong with a hook result's ``requireApproval`` (``None``: nothing). Absent,
    ``None`` and ``False`` ask nothing; otherwise it must be an object whose ``title`` and
    ``description``, when given, are strings (the other fields have defaults for bad values)."""
    if value is None or value is False:
        return None
    if not isinstance(value, Mapping):
        return f"returned `requireApproval` of type `{type(value).__name__}`; expected an object"
    for key in ("title", "description"):
        if key in value and not isinstance(value[key], str):
            kind = type(value[key]).__name__
            return f"returned `requireApproval.{key}` of type `{kind}`; expected a string"
    return None


def hook_request_fields(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of a hook's ``requireApproval`` object, with the spec's defaults."""
    timeout_ms = spec.get("timeoutMs")
    if (
        isinstance(timeout_ms, bool)
        or not isinstance(timeout_ms, int | float)
        or not math.isfinite(timeout_ms)
        or timeout_ms <= 0
    ):
        timeout_ms = DEFAULT_TIMEOUT * 1000
    severity = spec.get("severity")
    on_resolution = spec.get("onResolution")
    return {
        "title": _text(spec.get("title")),
        "description": _text(spec.get("description")),
        "severity": severity if severity in SEVERITIES else DEFAULT_SEVERITY,
        "timeout": timeout_ms / 1000,
        "timeout_behavior": "allow" if spec.get("timeoutBehavior") == "allow" else "deny",
        "on_resolution": on_resolution if callable(on_resolution) else None,
    }


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


# ---------------------------------------------------------------------------------------------
# The flow


async def request_approval(request: ApprovalRequest, approver: Approver | None) -> Resolution:
    """Ask ``approver`` and read its answer as docs/guard.md §11.4 does.

    No approver, or an answer of ``None``: unavailable. ``allow-once``/``allow-always``:
    proceed. ``deny``: denied. No answer within ``request.timeout`` or any other answer:
    ``timeout_behavior`` decides. The approver cancelled: cancelled. The approver failed:
    gateway unavailable. If the task awaiting the approval is itself cancelled, the
    cancellation propagates (after ``on_resolution("cancelled")``).
    """
    import asyncio  # loaded already: an event loop is running this

    loop = asyncio.get_running_loop()
    started = loop.time()
    if approver is None:
        return Resolution("unavailable", False, UNAVAILABLE)
    try:
        answer = approver(request)
        if inspect.isawaitable(answer):
            answer = await asyncio.wait_for(answer, request.timeout)
    except TimeoutError:
        answer = "timeout"
    except asyncio.CancelledError:
        task = asyncio.current_task()
        await _notify(request, "cancelled")
        if task is not None and task.cancelling():
            raise
        return Resolution("cancelled", False, CANCELLED, loop.time() - started)
    except Exception as err:
        log.warning("plugin approval failed: tool=%s error=%s", request.tool, err)
        return Resolution("error", False, GATEWAY, loop.time() - started)
    waited = loop.time() - started
    if answer is None:
        return Resolution("unavailable", False, UNAVAILABLE, waited)
    if answer in ("allow-once", "allow-always"):
        resolution = Resolution(answer, True, None, waited)
    elif answer == "deny":
        resolution = Resolution("deny", False, DENIED, waited)
    elif request.timeout_behavior == "allow":
        resolution = Resolution("timeout", True, None, waited)
    else:
        resolution = Resolution("timeout", False, TIMED_OUT, waited)
    await _notify(request, resolution.resolution)
    return resolution


async def _notify(request: ApprovalRequest, resolution: str) -> None:
    """``onResolution(resolution)``; its failures are only logged (docs/guard.md §11.4.8)."""
    if request.on_resolution is None:
        return
    try:
        result = request.on_resolution(resolution)
        if inspect.isawaitable(result):
            await result
    except Exception as err:
        log.warning("approval onResolution failed: tool=%s error=%s", request.tool, err)
