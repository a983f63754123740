"""The before-tool-call guard: where cedarlite meets a running agent (docs/guard.md §11).

```python
from cedarlite.hooks import Guard
guard = Guard({"tools": {"profile": "coding"}}, [{"name": "read"}, {"name": "exec"}], {})
outcome = guard.before_tool_call("exec", {"command": "ls"}, {"sessionKey": "s1"})
assert outcome.action == "allow"
```

* :class:`Guard` decides every call of a run: allow (possibly with rewritten params), block
  (with a reason the model reads) or ask (a person approves); :class:`Outcome` is its answer;
* :class:`ApprovalRequest` is what an ``approver`` is asked;
* loop detection (:mod:`cedarlite.guard.loops`) is a pure function of a session's state,
  kept by a :class:`SessionStore` (:class:`MemorySessionStore` by default);
* the decision log (:mod:`cedarlite.guard.decision_log`) appends one JSON line per decision.
"""

from typing import TYPE_CHECKING, Any

from .approvals import ApprovalRequest, GuardError
from .loops import HistoryEntry, LoopResult, LoopSettings, LoopState
from .outcome import Outcome
from .pipeline import Guard
from .state import MemorySessionStore, SessionState, SessionStore

if TYPE_CHECKING:
    from .decision_log import DecisionLog


def __getattr__(name: str) -> Any:
    """``DecisionLog``, loaded on first use: a hook process without a decision log (one per
    tool call) does without it."""
    if name == "DecisionLog":
        # lazy on purpose: a hook process without a decision log does without the module
        from .decision_log import DecisionLog

        return DecisionLog
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ApprovalRequest",
    "DecisionLog",
    "Guard",
    "GuardError",
    "HistoryEntry",
    "LoopResult",
    "LoopSettings",
    "LoopState",
    "MemorySessionStore",
    "Outcome",
    "SessionState",
    "SessionStore",
]


def __dir__() -> list[str]:
    """The public names, loaded or not."""
    return sorted({*globals(), *__all__})
