"""Session state: what the guard remembers between calls of one session, and where.

A session (one ``sessionKey``) has a loop history, warning buckets and the calls a person has
approved with ``allow-always``. The guard never keeps them itself: it asks a
:class:`SessionStore` to run a pure update function on a session's state, so that a store
backed by a database can load, change and save the state in one transaction (several hook
processes of one session may run at once). :class:`MemorySessionStore` is the in-process
default.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, Protocol, TypeVar

from .loops import HistoryEntry, LoopState

#: Remembered ``allow-always`` approvals per session; the oldest is forgotten first.
MAX_APPROVALS = 256

T = TypeVar("T")


class SessionState(NamedTuple):
    """Everything the guard keeps for one session (immutable; updates return new states).

    ``loop`` is the loop-detection history and warning buckets; ``approvals`` the keys of
    ``allow-always`` approvals, oldest first (at most :data:`MAX_APPROVALS`).
    """

    loop: LoopState = LoopState()
    approvals: tuple[str, ...] = ()

    def with_approval(self, key: str) -> SessionState:
        """This state with one more remembered approval (moved to newest if known)."""
        kept = tuple(k for k in self.approvals if k != key)
        return SessionState(self.loop, (*kept, key)[-MAX_APPROVALS:])

    def to_json(self) -> dict[str, Any]:
        """A JSON object for stores that serialize states (:meth:`from_json` reads it back)."""
        return {
            "history": [e.to_json() for e in self.loop.history],
            "buckets": [[k, b] for k, b in self.loop.buckets],
            "approvals": list(self.approvals),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SessionState:
        """Read :meth:`to_json`'s output; raises ``ValueError`` on malformed data (the guard
        then blocks the call: a corrupt state must not reset loop detection silently)."""
        try:
            history = tuple(HistoryEntry.from_json(e) for e in data.get("history") or ())
            buckets = tuple((str(k), int(b)) for k, b in data.get("buckets") or ())
            approvals = tuple(str(k) for k in data.get("approvals") or ())
        except (TypeError, KeyError, ValueError, AttributeError) as err:
            raise ValueError(f"malformed session state: {err}") from None
        return cls(LoopState(history, buckets), approvals)


EMPTY = SessionState()


class SessionStore(Protocol):
    """Where session states live. Implementations must make :meth:`update` atomic per
    session: the load, the call of ``change`` and the save happen as one unit."""

    def load(self, session_key: str) -> SessionState:
        """The state of a session (an empty state when it has none)."""
        ...

    def update(
        self, session_key: str, change: Callable[[SessionState], tuple[SessionState, T]]
    ) -> T:
        """Replace a session's state by ``change(state)[0]`` and return ``change(state)[1]``,
        atomically. ``change`` is pure and fast; it may be retried by stores that retry
        transactions."""
        ...


class MemorySessionStore:
    """Session states in this process, the ``max_sessions`` most recently used kept."""

    def __init__(self, max_sessions: int = 1024) -> None:
        self.max_sessions = max_sessions
        self._states: OrderedDict[str, SessionState] = OrderedDict()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<MemorySessionStore: {len(self._states)} sessions>"

    def load(self, session_key: str) -> SessionState:
        """The state of a session (an empty state when it has none)."""
        with self._lock:
            return self._states.get(session_key, EMPTY)

    def update(
        self, session_key: str, change: Callable[[SessionState], tuple[SessionState, T]]
    ) -> T:
        """Apply ``change`` to a session's state under the store's lock."""
        with self._lock:
            state, result = change(self._states.get(session_key, EMPTY))
            self._states[session_key] = state
            self._states.move_to_end(session_key)
            while len(self._states) > self.max_sessions:
                self._states.popitem(last=False)
            return result

    def clear(self) -> None:
        """Forget every session."""
        with self._lock:
            self._states.clear()


#: The store guards use unless given one: sessions outlive a run (one guard), as in OpenClaw.
DEFAULT_STORE = MemorySessionStore()
