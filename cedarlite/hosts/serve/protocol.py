"""The decision service's protocol: its operations, the JSON shapes of their requests and
answers, and :class:`Service`, which answers one request from the current guard set.

Every transport carries the same objects. Over the line transports (stdio, the Unix socket)
a request is one line ``{"id": N, "op": OPERATION, ...its fields}`` and its answer one line
``{"id": N, ...answer}``; over HTTP the operation is the path (``POST /v1/OPERATION``), the
body holds the fields and the answer is the body. The operations:

* ``before_tool_call`` ``{"tool", "params", "call": {"sessionKey", "toolCallId", "runId"?,
  "sessionId"?}, "context"?}`` -> ``{"action": "allow"|"block"|"ask", "params", "reason",
  "deniedReason", "policies", "approval"?}``;
* ``after_tool_call`` ``{"tool", "params", "call", "result"?, "error"?, "context"?}`` ->
  ``{"ok": true}`` (loop detection);
* ``is_authorized`` ``{"principal", "action", "resource", "context"?, "entities"?}`` ->
  ``{"decision": "Allow"|"Deny", "reasons", "errors"}`` against ``--policies``;
* ``health`` -> ``{"ok": true, "status": "ok"|"degraded", "broken"?, ...}``; ``reload`` ->
  ``{"ok": true, "generation", ...}`` once the new set serves;
* ``claude_code_hook`` ``{"input"}`` (a Claude Code hook event, as the hook read it from
  its stdin) -> ``{"exit", "stdout", "stderr"}``: what the hook process prints (the
  ``cedarlite hook claude-code`` client; ``serve --claude-code`` only).

An error answer carries ``"error": {"code", "message", ...}``; an error answer to
``before_tool_call`` also says ``"action": "block"`` with the reason (fail closed: a host that
reads only ``action`` blocks). Answers are ASCII JSON.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from ... import _log
from ...data.jsonvalue import load_json
from ...errors import CedarliteError

if TYPE_CHECKING:
    from ...guard import Outcome
    from .guards import GuardSet

#: The longest request accepted: a line of the line transports, an HTTP body (bytes). A
#: ``Write`` of a large file travels in one; anything longer is refused with an error answer.
MAX_REQUEST_BYTES = 16 * 1024 * 1024


class Operation(NamedTuple):
    """An operation's fields: those it requires and those it also accepts."""

    required: frozenset[str]
    optional: frozenset[str] = frozenset()


OPERATIONS: Mapping[str, Operation] = {
    "before_tool_call": Operation(frozenset({"tool", "params", "call"}), frozenset({"context"})),
    "after_tool_call": Operation(
        frozenset({"tool", "params", "call"}), frozenset({"result", "error", "context"})
    ),
    "is_authorized": Operation(
        frozenset({"principal", "action", "resource"}), frozenset({"context", "entities"})
    ),
    "health": Operation(frozenset()),
    "reload": Operation(frozenset()),
    "claude_code_hook": Operation(frozenset({"input"})),
    # The OpenClaw plugin's hook events, as OpenClaw gives them (cedarlite.hosts.openclaw).
    "openclaw_before_tool_call": Operation(frozenset({"event", "ctx"})),
    "openclaw_after_tool_call": Operation(frozenset({"event", "ctx"})),
}

#: The operations whose error answer also blocks the call (over HTTP: with status 200).
DECISIONS = ("before_tool_call", "openclaw_before_tool_call")

#: The keys of a ``call`` object.
CALL_KEYS = ("sessionKey", "toolCallId", "runId", "sessionId")

#: What an error answer's code means over HTTP (every other code: 400).
HTTP_STATUS: Mapping[str, int] = {
    "E0961": 413,  # the request is too large
    "E0963": 404,  # unknown operation
    "E0965": 422,  # a reload failed: the files do not load
    "E0966": 409,  # the operation needs what this service was not started with
    "E0967": 500,  # an error of ours (never for before_tool_call: that answers block)
}


class ProtocolError(CedarliteError):
    """A request the service cannot answer: not JSON, too large, an unknown operation or
    field, a missing or mistyped field (the answer is an error answer)."""

    code = "E0960"

    def __init__(self, message: str, *, code: str = "E0960", **extra: Any) -> None:
        super().__init__(message, code=code)
        self.extra = extra

    def answer(self) -> dict[str, Any]:
        """``{"error": {"code", "message", ...}}``."""
        return {"error": {"code": self.code, "message": self.message, **self.extra}}


def too_large(limit: int) -> ProtocolError:
    """The error of a request over ``limit`` bytes."""
    return ProtocolError(
        f"the request is larger than the limit of {limit} bytes", code="E0961", limit=limit
    )


def parse_line(line: bytes | str) -> tuple[Any, str, dict[str, Any]]:
    """``(id, op, fields)`` of a line request; raises :class:`ProtocolError` (with the id
    when it was read: :attr:`ProtocolError.extra` never holds it, :func:`request_id` does)."""
    data = decode(line)
    if not isinstance(data, dict):
        raise ProtocolError("a request must be a JSON object")
    fields = dict(data)
    rid = fields.pop("id", None)
    if rid is not None and not _is_id(rid):
        raise ProtocolError("`id` must be a number or a string")
    op = fields.pop("op", None)
    if not isinstance(op, str):
        raise _Identified(rid, ProtocolError("`op` must name an operation: " + _ops()))
    return rid, op, fields


class _Identified(Exception):
    """A protocol error of a request whose id is known."""

    def __init__(self, rid: Any, error: ProtocolError) -> None:
        super().__init__(error.message)
        self.rid = rid
        self.error = error


def _is_id(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, int | str) and (not isinstance(value, str) or len(value) <= 256)


def _ops() -> str:
    return ", ".join(f"`{o}`" for o in OPERATIONS)


def decode(data: bytes | str) -> Any:
    """JSON text (UTF-8, no duplicate keys) as a value; raises :class:`ProtocolError`."""
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as err:
            raise ProtocolError(f"the request is not UTF-8 (byte {err.start})") from None
    if not data.strip():
        raise ProtocolError("empty request: expected one JSON object")
    try:
        return load_json(data, "<request>", ProtocolError)
    except ProtocolError as err:
        where = f" at line {err.span.line}, column {err.span.column}" if err.span else ""
        raise ProtocolError(f"{err.message}{where}") from None


def encode(answer: Mapping[str, Any]) -> bytes:
    """An answer as one line of ASCII JSON (with its newline)."""
    return (
        json.dumps(answer, ensure_ascii=True, separators=(",", ":"), default=str) + "\n"
    ).encode()


def check_fields(op: str, fields: Mapping[str, Any]) -> None:
    """Raise :class:`ProtocolError` for an unknown operation, an unknown field or a missing
    one."""
    spec = OPERATIONS.get(op)
    if spec is None:
        shown = json.dumps(op)[:80]
        raise ProtocolError(f"unknown operation {shown}: expected one of {_ops()}", code="E0963")
    unknown = [k for k in fields if k not in spec.required and k not in spec.optional]
    if unknown:
        known = sorted(spec.required | spec.optional)
        raise ProtocolError(
            f"unknown field `{unknown[0]}` for `{op}`"
            + (f" (fields: {', '.join(known)})" if known else " (it takes no fields)")
        )
    missing = sorted(spec.required - fields.keys())
    if missing:
        raise ProtocolError(f"`{op}` requires the field `{missing[0]}`")


def _check_call(call: Any) -> dict[str, Any]:
    if not isinstance(call, dict):
        raise ProtocolError('`call` must be an object: {"sessionKey", "toolCallId", "runId"?}')
    for key, value in call.items():
        if key not in CALL_KEYS:
            raise ProtocolError(f"unknown field `call.{key}` (fields: {', '.join(CALL_KEYS)})")
        if value is not None and not isinstance(value, str):
            raise ProtocolError(f"`call.{key}` must be a string")
    return call


def _check_context(fields: Mapping[str, Any]) -> Mapping[str, Any] | None:
    context = fields.get("context")
    if context is not None and not isinstance(context, dict):
        raise ProtocolError("`context` must be an object (the run context)")
    return context


def outcome_json(outcome: Outcome) -> dict[str, Any]:
    """The guard's outcome as the answer to ``before_tool_call``."""
    out: dict[str, Any] = {
        "action": outcome.action,
        "params": outcome.params,
        "reason": outcome.reason,
        "deniedReason": outcome.denied_reason,
        "policies": list(outcome.policies),
    }
    if outcome.action == "ask" and outcome.approval is not None:
        approval = outcome.approval.to_json()
        approval["policies"] = list(outcome.approval.policies)
        out["approval"] = approval
    return out


def blocked(error: ProtocolError, params: Any = None) -> dict[str, Any]:
    """The error answer of a ``before_tool_call``: the error, and a block with its reason."""
    return {
        **error.answer(),
        "action": "block",
        "params": params,
        "reason": f"cedarlite: blocked: {error.message}",
        "deniedReason": "plugin-before-tool-call",
        "policies": [],
    }


class Service:
    """Answers requests from a :class:`~cedarlite.hosts.serve.guards.GuardSet` (shared by
    every transport and thread of the process)."""

    def __init__(self, guards: GuardSet) -> None:
        self.guards = guards
        self._answered = itertools.count()
        self.answered = 0  # requests answered so far (``health`` says it)

    def answer(self, op: str, fields: dict[str, Any]) -> dict[str, Any]:
        """The answer to one request (an error answer for a bad one); never raises."""
        self.answered = next(self._answered) + 1
        try:
            check_fields(op, fields)
            return self._dispatch(op, fields)
        except ProtocolError as err:
            if op in DECISIONS:
                params = fields.get("params") if isinstance(fields, dict) else None
                return blocked(err, params)
            return err.answer()
        except Exception as err:  # an error of ours: fail closed
            _log.get_logger("cedarlite.serve").error("`%s` failed: %r", op, err)
            error = ProtocolError(f"internal error: {type(err).__name__}: {err}", code="E0967")
            if op in DECISIONS:
                return blocked(error, fields.get("params"))
            return error.answer()

    def answer_line(self, line: bytes) -> bytes:
        """The answer line to one request line (see the module)."""
        rid: Any = None
        try:
            rid, op, fields = parse_line(line)
        except _Identified as err:
            return encode({"id": err.rid, **err.error.answer()})
        except ProtocolError as err:
            return encode(err.answer())
        answer = self.answer(op, fields)
        return encode({"id": rid, **answer} if rid is not None else answer)

    def _dispatch(self, op: str, fields: dict[str, Any]) -> dict[str, Any]:
        gen = self.guards.current  # INVARIANT: one generation per request (never half a reload)
        if op == "before_tool_call":
            call = _check_call(fields["call"])
            guard = gen.guard_for(_check_context(fields))
            return outcome_json(guard.before_tool_call(fields["tool"], fields["params"], call))
        if op == "after_tool_call":
            call = _check_call(fields["call"])
            guard = gen.guard_for(_check_context(fields))
            guard.after_tool_call(
                fields["tool"],
                fields["params"],
                call,
                result=fields.get("result"),
                error=fields.get("error"),
            )
            return {"ok": True}
        if op == "is_authorized":
            return gen.is_authorized(fields)
        if op == "health":
            return {**self.guards.health(), "requests": self.answered}
        if op == "reload":
            return self.guards.reload_answer()
        if op.startswith("openclaw_"):
            from ..openclaw import service_answer

            return service_answer(gen, op, fields)
        # claude_code_hook: never with rules older than the files (the hook reads them each call)
        text = fields["input"]
        if not isinstance(text, str):
            raise ProtocolError("`input` must be a string: the hook event's JSON text")
        return (self.guards.fresh() if self.guards.options.claude_code else gen).claude_code_hook(
            text
        )
