"""The guard's answer for one call (:class:`Outcome`), and the reasons it gives in the words of
the tool policy (docs/guard.md)."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any, NamedTuple

from ..data.response import PolicyError

if TYPE_CHECKING:
    from .approvals import ApprovalRequest

#: The reason of a failure of the guard itself or of a hook (docs/guard.md).
HOOK_FAILED = "Tool call blocked because before_tool_call hook failed"
TRUSTED_BLOCKED = "Tool call blocked by trusted plugin policy"
HOOK_BLOCKED = "Tool call blocked by plugin hook"


class Outcome(NamedTuple):
    """The guard's answer for one call.

    ``action`` is ``"allow"``, ``"block"`` or ``"ask"``; ``tool`` the normalized tool name;
    ``params`` the arguments the tool runs with (hooks may have rewritten them); ``reason`` the text
    the model (or the person asked) reads; ``denied_reason`` one of ``tool-loop``,
    ``plugin-before-tool-call``, ``plugin-approval``, ``policy``, ``not-offered``,
    ``invalid-arguments``, ``host`` (:meth:`Guard.refuse`) (``None`` unless blocked); ``policies``
    the labels of the determining Cedar policies; ``errors`` the policies that failed to evaluate;
    ``approval`` the first pending approval request of an ``"ask"`` (all of them in ``approvals``);
    ``failure`` whether a block is a failure (an error result) rather than a veto (docs/guard.md
    §11.5); ``warnings`` the loop warnings emitted for this call; ``error`` the cause
    of a failure of the guard or of a hook (what the decision log's ``error`` says), else ``None``.
    (An immutable record; a named tuple because one is built per call.)
    """

    action: str
    tool: str
    params: Any = None
    reason: str | None = None
    denied_reason: str | None = None
    policies: tuple[str, ...] = ()
    errors: tuple[PolicyError, ...] = ()
    approval: ApprovalRequest | None = None
    approvals: tuple[ApprovalRequest, ...] = ()
    failure: bool = False
    warnings: tuple[str, ...] = ()
    error: str | None = None

    @property
    def allowed(self) -> bool:
        """``action == "allow"``."""
        return self.action == "allow"

    @property
    def blocked(self) -> bool:
        """``action == "block"``."""
        return self.action == "block"

    def citing_policies(self, text: str) -> str:
        """``text`` followed by the determining policies (``@id`` labels) it does not already
        name: ``"... (policy exec.dangerous)"``, for reasons shown outside the guard."""
        named = [p for p in self.policies if p not in text]
        return f"{text} (policy {', '.join(named)})" if named else text

    def to_tool_result(self) -> dict[str, Any] | None:
        """The tool result the model receives for a block (docs/guard.md §11.5); ``None`` otherwise.

        A veto is ``{"content": [text], "details": {"status": "blocked", "deniedReason",
        "reason"}}``; a failure ``{"content": [payload as 2-space JSON], "details": payload}``
        with payload ``{"status": "error", "tool", "error"}``.
        """
        if self.action != "block":
            return None
        reason = self.reason or ""
        if self.failure:
            payload = {"status": "error", "tool": self.tool, "error": reason}
            text = _pretty(payload)
            return {"content": [{"type": "text", "text": text}], "details": payload}
        return {
            "content": [{"type": "text", "text": reason}],
            "details": {
                "status": "blocked",
                "deniedReason": self.denied_reason or "plugin-before-tool-call",
                "reason": reason,
            },
        }


make_outcome: Callable[[tuple[Any, ...]], Outcome] = partial(tuple.__new__, Outcome)
"""An :class:`Outcome` of all twelve fields, in order (``Outcome._make`` without its checks)."""


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)
