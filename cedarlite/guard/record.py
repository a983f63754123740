"""The record of each decision: the decision log's line (when there is a log) and the
``tool.*`` events (when there is an ``on_event``), docs/guard.md."""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .._log import get_logger
from . import _json
from .approvals import GuardError
from .call import Call
from .outcome import Outcome

if TYPE_CHECKING:
    from .decision_log import DecisionLog
    from .loops import LoopResult

log = get_logger("cedarlite.hooks")

EventSink = Callable[[dict[str, Any]], Any]

#: The run-context keys the decision log records (docs/tool-policy.md).
CONTEXT_KEYS = (
    "agentId",
    "provider",
    "model",
    "channel",
    "groupId",
    "sandboxed",
    "senderIsOwner",
    "subagentDepth",
    "toolsEnabled",
)

#: Calls whose start time is kept for their completion event; beyond it the oldest goes.
STARTED_CAP = 4096


class DecisionRecord:
    """One line per decision in the decision log: what the guard decided and why, with the
    params and run context redacted. ``log`` is ``None`` without a log (a pickled guard
    carries none: it is bound to the process that opened it)."""

    __slots__ = ("context_json", "context_redacted", "log", "policy_hash")

    def __init__(self, policy_hash: str, context: Mapping[str, Any]) -> None:
        # lazy on purpose: the log's module loads only when a guard is built or logs
        from .decision_log import redacted_json

        self.policy_hash = policy_hash
        self.log: DecisionLog | None = None
        self.context_json, self.context_redacted = redacted_json(
            {k: context[k] for k in CONTEXT_KEYS if k in context}, "/context"
        )

    def __getstate__(self) -> tuple[str, str, list[str]]:
        return self.policy_hash, self.context_json, self.context_redacted

    def __setstate__(self, state: tuple[str, str, list[str]]) -> None:
        self.policy_hash, self.context_json, self.context_redacted = state
        self.log = None

    def open(self, path: str | os.PathLike[str]) -> None:
        """Append later decisions to ``path`` (a log already open is closed)."""
        from .decision_log import DecisionLog  # lazy on purpose: loaded with a log

        try:
            log_file = DecisionLog(path)
        except OSError as err:
            raise GuardError(
                f"cannot open the decision log `{os.fspath(path)}`: {err.strerror}"
            ) from None
        if self.log is not None:
            self.log.close()
        self.log = log_file

    def close(self) -> None:
        """Close the log (later decisions are blocked: they cannot be logged)."""
        if self.log is not None:
            self.log.close()

    def read_params(self, c: Call) -> None:
        """The call's params as the log writes them, read before any stage may rewrite them."""
        from .decision_log import redacted_json  # lazy on purpose: loaded with the log

        c.log_params = redacted_json(c.original, "/params")

    def write(self, c: Call, outcome: Outcome, agent: str) -> None:
        """Append the decision's line (raises if it cannot be written)."""
        from .decision_log import log_line, redacted_json  # lazy on purpose: loaded with the log

        assert self.log is not None
        try:
            params_json, redacted = c.log_params or redacted_json(c.original, "/params")
        except Exception as err:  # params that cannot even be read: say so, keep the line
            params_json, redacted = _json.encode(f"<unreadable: {type(err).__name__}>")[0], []
        elapsed = time.perf_counter_ns() - c.started - int(c.waited * 1e9)
        info = c.info
        self.log.append(
            log_line(
                ts=time.time(),
                session=c.session,
                run=c.run,
                call_id=c.call_id,
                agent=agent,
                tool=c.tool,
                plugin=info.plugin_id if info is not None else None,
                params_json=params_json,
                redacted=[*redacted, *self.context_redacted],
                context_json=self.context_json,
                decision=outcome.action,
                denied_reason=outcome.denied_reason if outcome.action == "block" else None,
                reason=outcome.reason,
                policies=outcome.policies,
                errors=[(e.policy_id, e.message) for e in outcome.errors],
                params_rewritten=c.rewritten and outcome.action != "block",
                latency_us=max(0, elapsed // 1000),
                policy_hash=self.policy_hash,
                approvals=c.approvals_log,
                error=c.error,
            )
        )


class Events:
    """The ``tool.loop`` and ``tool.execution.*`` events of one run, delivered to ``sink``
    (a failing sink is logged, never fails the call); the start time of each allowed call
    that has an id, for its completion event's ``durationMs``."""

    __slots__ = ("lock", "sink", "started")

    def __init__(self, sink: EventSink | None) -> None:
        self.sink = sink
        self.started: OrderedDict[tuple[str | None, str], float] = OrderedDict()
        self.lock = threading.Lock()

    def decided(self, c: Call, outcome: Outcome) -> None:
        """``tool.execution.blocked`` or ``tool.execution.started`` (nothing for ``ask``)."""
        if outcome.action == "block":
            event = self.event(c, "tool.execution.blocked")
            event["deniedReason"] = outcome.denied_reason
            event["reason"] = outcome.reason
            self.emit(event)
        elif outcome.action == "allow":
            if c.call_id is not None:
                with self.lock:
                    self.started[(c.session, c.call_id)] = time.perf_counter()
                    if len(self.started) > STARTED_CAP:
                        self.started.popitem(last=False)
            self.emit(self.event(c, "tool.execution.started"))

    def finished(self, c: Call, error: Any) -> None:
        """``tool.execution.completed`` or ``tool.execution.error`` of a call that ran."""
        try:
            with self.lock:
                started = self.started.pop((c.session, c.call_id), None) if c.call_id else None
            event = self.event(
                c, "tool.execution.error" if error is not None else "tool.execution.completed"
            )
            if started is not None:
                event["durationMs"] = round((time.perf_counter() - started) * 1000, 3)
            if error is not None:
                event["errorCategory"] = (
                    type(error).__name__ if isinstance(error, BaseException) else "error"
                )
                event["error"] = error if isinstance(error, str) else str(error)
        except Exception as err:
            log.warning("after_tool_call event failed: tool=%s error=%s", c.tool, err)
            return
        self.emit(event)

    def loop(self, c: Call, result: LoopResult) -> None:
        """``tool.loop``: a loop detector fired for this call."""
        event: dict[str, Any] = {"type": "tool.loop", "sessionKey": c.session}
        if c.session_id is not None:
            event["sessionId"] = c.session_id
        event.update(
            toolName=c.tool,
            level=result.level,
            action="block" if result.critical else "warn",
            detector=result.detector,
            count=result.count,
            message=result.message,
        )
        if result.paired_tool is not None:
            event["pairedToolName"] = result.paired_tool
        self.emit(event)

    @staticmethod
    def event(c: Call, kind: str) -> dict[str, Any]:
        event: dict[str, Any] = {"type": kind, "sessionKey": c.session}
        if c.session_id is not None:
            event["sessionId"] = c.session_id
        event.update(runId=c.run, toolCallId=c.call_id, toolName=c.tool)
        return event

    def emit(self, event: dict[str, Any]) -> None:
        """Deliver an event; a failing sink is logged, never fails the call."""
        if self.sink is None:
            return
        try:
            self.sink(event)
        except Exception as err:
            log.warning("on_event failed for %s: %s", event.get("type"), err)
