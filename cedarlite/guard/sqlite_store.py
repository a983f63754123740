"""Session states in SQLite, shared by processes: the store of hooks that run once per call.

A command hook (Claude Code's) is a new process for every tool call, and the calls of one
session may run at once (Claude Code runs hooks in parallel). :class:`SQLiteSessionStore` keeps
each session's :class:`~cedarlite.hooks.SessionState` as one row, as JSON:

* the database is in WAL mode (readers never wait for the writer) with a busy timeout, and
  :meth:`~SQLiteSessionStore.update` is one ``BEGIN IMMEDIATE`` transaction (read, change,
  write), so concurrent processes never lose each other's updates;
* old sessions are pruned in the first write of each store object: sessions idle for longer
  than ``max_age`` seconds, then the least recently updated beyond ``max_sessions``.

A state that does not read back is an error (the guard blocks the call): a corrupt row must not
reset loop detection silently.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar

from .approvals import GuardError
from .state import EMPTY, SessionState

if TYPE_CHECKING:
    import sqlite3

T = TypeVar("T")

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS sessions ("
    " key TEXT PRIMARY KEY, state TEXT NOT NULL, updated REAL NOT NULL) WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS sessions_updated ON sessions (updated)",
)
_UPSERT = (
    "INSERT INTO sessions (key, state, updated) VALUES (?, ?, ?) "
    "ON CONFLICT (key) DO UPDATE SET state = excluded.state, updated = excluded.updated"
)
_PRUNE_AGE = "DELETE FROM sessions WHERE updated < ?"
_PRUNE_COUNT = (
    "DELETE FROM sessions WHERE key IN "
    "(SELECT key FROM sessions ORDER BY updated DESC LIMIT -1 OFFSET ?)"
)
# ASCII, so that any string (lone surrogates included) is stored as it was.
_encode = json.JSONEncoder(ensure_ascii=True, separators=(",", ":")).encode


class StateFileError(GuardError):
    """The session state file is not a SQLite database (damaged, or another file): the
    message names it and says what to do; the guard blocks every call until then."""

    code = "E0860"


class SQLiteSessionStore:
    """A :class:`~cedarlite.hooks.SessionStore` in the SQLite database ``path`` (created if
    missing; keep it in a directory only you can write to: it holds ``allow-always``
    approvals).

    ``timeout`` is how long (seconds) a call waits for another process's transaction before
    failing (the guard then blocks the call); ``max_age`` (seconds, default 7 days) and
    ``max_sessions`` (default 10,000) bound what is kept. The connection opens on first use.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        timeout: float = 5.0,
        max_age: float = 7 * 86400,
        max_sessions: int = 10_000,
    ) -> None:
        self.path = os.fspath(path)
        self.timeout = timeout
        self.max_age = max_age
        self.max_sessions = max_sessions
        self._conn: sqlite3.Connection | None = None
        self._pruned = False
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<SQLiteSessionStore {self.path!r}>"

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            import sqlite3  # here: a hook process that never needs its session state skips it

            conn = sqlite3.connect(
                self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False
            )
            try:
                self._wal(conn)
                conn.execute("PRAGMA synchronous=NORMAL")
                for statement in _SCHEMA:
                    conn.execute(statement)
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    def _wal(self, conn: sqlite3.Connection) -> None:
        """Switch to WAL, waiting up to ``timeout`` for other processes: on a new file,
        SQLite answers "database is locked" at once to a second process switching it at the
        same moment (its busy handler is not called there), which several hooks starting
        together hit."""
        import sqlite3  # lazy on purpose: as in _connection

        deadline = time.monotonic() + self.timeout
        while True:
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as err:
                if "locked" not in str(err) or time.monotonic() >= deadline:
                    raise
                time.sleep(0.005)

    @contextmanager
    def _readable(self) -> Iterator[None]:
        """A file that is not a database (SQLite's own ``DatabaseError``, not a lock or
        another operational failure) becomes a :class:`StateFileError` that names it."""
        import sqlite3  # lazy on purpose: as in _connection (a hook without state skips it)

        try:
            yield
        except sqlite3.DatabaseError as err:
            if type(err) is not sqlite3.DatabaseError:
                raise
            raise StateFileError(
                f"the session state file is not a SQLite database ({err}): delete it or move "
                "it away, and cedarlite starts a new one (the loop histories and allow-always "
                "approvals in it are lost); until then every call is blocked",
                source=self.path,
            ) from None

    def load(self, session_key: str) -> SessionState:
        """The state of a session (an empty state when it has none)."""
        with self._lock, self._readable():
            row = (
                self._connection()
                .execute("SELECT state FROM sessions WHERE key = ?", (session_key,))
                .fetchone()
            )
        return EMPTY if row is None else _decode(row[0])

    def update(
        self, session_key: str, change: Callable[[SessionState], tuple[SessionState, T]]
    ) -> T:
        """Apply ``change`` to a session's state in one transaction (the first update of
        this store also prunes old sessions in it)."""
        with self._lock, self._readable():
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
            try:
                row = conn.execute(
                    "SELECT state FROM sessions WHERE key = ?", (session_key,)
                ).fetchone()
                state, result = change(EMPTY if row is None else _decode(row[0]))
                now = time.time()
                conn.execute(_UPSERT, (session_key, _encode(state.to_json()), now))
                if not self._pruned:
                    conn.execute(_PRUNE_AGE, (now - self.max_age,))
                    conn.execute(_PRUNE_COUNT, (self.max_sessions,))
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            self._pruned = True
            return result

    def sessions(self) -> int:
        """How many sessions the database holds."""
        with self._lock, self._readable():
            return int(self._connection().execute("SELECT count(*) FROM sessions").fetchone()[0])

    def close(self) -> None:
        """Close the connection (a later call opens it again)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def _decode(text: str) -> SessionState:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as err:
        raise ValueError(f"malformed session state: {err}") from None
    if not isinstance(data, dict):
        raise ValueError("malformed session state: not an object")
    return SessionState.from_json(data)
