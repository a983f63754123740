"""One call in flight: the working record each stage of the guard reads and fills in, and the
two outcomes most calls end with."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..data.response import PolicyError
from ..tools.names import norm
from . import _json
from .outcome import Outcome, make_outcome

if TYPE_CHECKING:
    from ..tools.catalog import ToolInfo
    from .approvals import ApprovalRequest


class Call:
    """The working record of one call (never escapes the guard)."""

    __slots__ = (
        "approvals_log",
        "approving",
        "args",
        "asks",
        "call_id",
        "canonical",
        "digest",
        "error",
        "errors",
        "info",
        "log_params",
        "name",
        "original",
        "params",
        "policies",
        "policy_ask",
        "rewritten",
        "run",
        "session",
        "session_id",
        "started",
        "tool",
        "waited",
        "warnings",
    )

    def __init__(self, name: Any, params: Any, call: Any) -> None:
        # (Built for every call: each field is set once, the call's fields read only when
        # there is a call.)
        self.started = time.perf_counter_ns()
        self.name = name
        self.tool = norm(name) or "tool"
        self.original = self.params = params
        self.session: str | None = None
        self.call_id: str | None = None
        self.run: str | None = None
        self.session_id: str | None = None
        self.error: str | None = None
        if call is not None:
            self._read_call(call)
        self.info: ToolInfo | None = None
        self.canonical: str | None = None
        self.digest: str | None = None
        self.args: str | None = None
        self.policies: tuple[str, ...] = ()
        self.errors: tuple[PolicyError, ...] = ()
        self.policy_ask: ApprovalRequest | None = None
        self.asks: tuple[ApprovalRequest, ...] = ()
        self.rewritten = False
        self.approvals_log: tuple[dict[str, Any], ...] = ()
        self.warnings: tuple[str, ...] = ()
        self.waited = 0.0
        self.approving = False
        self.log_params: tuple[str, list[str]] | None = None

    def _read_call(self, call: Any) -> None:
        """The session key, call id, run id and session id of the call dict."""
        try:
            if not isinstance(call, Mapping):
                self.error = f"the call must be a dict, not `{type(call).__name__}`"
                return
            get = call.get
            self.session = _text(get("sessionKey"))
            self.call_id = _text(get("toolCallId"))
            self.run = _text(get("runId"))
            self.session_id = _text(get("sessionId"))
        except Exception as err:  # a hostile Mapping: treated as a malformed call
            self.error = f"the call cannot be read: {err}"

    @property
    def call(self) -> dict[str, str | None]:
        """The call as approval requests carry it: ``sessionKey``, ``toolCallId``, ``runId``."""
        return {"sessionKey": self.session, "toolCallId": self.call_id, "runId": self.run}

    def canonical_params(self) -> str:
        """The canonical JSON of the params the model sent (computed once, when asked: the
        guard has checked them to be JSON before anything asks)."""
        if self.canonical is None:
            self.canonical = _json.canonical(self.original)
        return self.canonical

    def params_digest(self) -> str:
        """The SHA-256 of :meth:`canonical_params` (loop detection, approval keys)."""
        if self.digest is None:
            self.digest = _json.sha256(self.canonical_params())
        return self.digest


def _text(value: Any) -> str | None:
    """A call field: a non-empty string, else ``None``."""
    return value if isinstance(value, str) and value else None


# The two outcomes of most calls, built as tuples (Outcome's own __new__ is a Python function
# with defaults): the fields in Outcome's order, action to error.


def allow(c: Call) -> Outcome:
    """The call runs, with its (possibly rewritten) params."""
    return make_outcome(
        ("allow", c.tool, c.params, None, None, c.policies, c.errors, None, (), False,
         c.warnings, None)
    )  # fmt: skip


def block(c: Call, denied: str, reason: str, *, failure: bool = False) -> Outcome:
    """The call is blocked: ``denied`` is the ``denied_reason``, ``reason`` what the model reads;
    a ``failure`` carries the call's error."""
    return make_outcome(
        ("block", c.tool, c.params, reason, denied, c.policies, c.errors, None, (), failure,
         c.warnings, c.error if failure else None)
    )  # fmt: skip
