"""The guard's public names under their first home: the package is :mod:`cedarlite.guard`.

``from cedarlite.hooks import Guard`` keeps working (the README's and users' imports); new code
imports from :mod:`cedarlite.guard`.
"""

from typing import Any

from ..guard import ApprovalRequest as ApprovalRequest
from ..guard import Guard as Guard
from ..guard import GuardError as GuardError
from ..guard import HistoryEntry as HistoryEntry
from ..guard import LoopResult as LoopResult
from ..guard import LoopSettings as LoopSettings
from ..guard import LoopState as LoopState
from ..guard import MemorySessionStore as MemorySessionStore
from ..guard import Outcome as Outcome
from ..guard import SessionState as SessionState
from ..guard import SessionStore as SessionStore
from ..guard import __all__ as __all__


def __getattr__(name: str) -> Any:
    """``DecisionLog``, loaded on first use, as :mod:`cedarlite.guard` does."""
    if name == "DecisionLog":
        # lazy on purpose: a hook process without a decision log does without the module
        from ..guard.decision_log import DecisionLog

        return DecisionLog
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """The public names, loaded or not."""
    return sorted({*globals(), *__all__})
