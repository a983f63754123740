"""What the adapters need from the guard: guards that pickle (hook processes load a built guard),
removal reasons that name the deny entry, failures that say why, and session state in SQLite
shared by processes."""

from __future__ import annotations

import json
import os
import pickle
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cedarlite.guard.sqlite_store import SQLiteSessionStore
from cedarlite.guard.state import DEFAULT_STORE, MemorySessionStore
from cedarlite.hooks import Guard, SessionState

CONFIG = {
    "tools": {
        "profile": "coding",
        "deny": ["github__delete_*", "web_*"],
        "loopDetection": {"enabled": True},
    },
    "agents": {"list": [{"id": "coder", "default": True, "tools": {"deny": ["cron"]}}]},
}
TOOLS = [
    {"name": "read"},
    {"name": "exec"},
    {"name": "web_fetch"},
    {"name": "cron"},
    {"name": "browser"},
    {"name": "github__delete_repo", "pluginId": "bundle-mcp"},
    {"name": "github__create_issue", "pluginId": "bundle-mcp"},
]
RULES = """
@id("exec.no-rm") @reason("No deleting.")
forbid (principal, action == Action::"exec", resource) when { resource.command like "*rm -rf*" };
@id("exec.push") @ask("Pushing needs a person.")
forbid (principal, action == Action::"exec", resource) when { resource.command like "git push*" };
"""
CALLS = [
    ("exec", {"command": "git status"}),
    ("exec", {"command": "rm -rf /"}),
    ("exec", {"command": "git push origin main"}),
    ("exec", {"command": 5}),
    ("read", {"path": "a.py"}),
    ("web_fetch", {"url": "https://x"}),
    ("cron", {}),
    ("browser", {}),
    ("github__delete_repo", {"repo": "a/b"}),
    ("github__create_issue", {"repo": "a/b"}),
    ("nope", {}),
]


def guard(**kw: object) -> Guard:
    return Guard(CONFIG, TOOLS, {"senderIsOwner": True}, rules=RULES, **kw)  # type: ignore[arg-type]


def answers(g: Guard) -> list[tuple]:
    out = []
    for i, (tool, params) in enumerate(CALLS):
        o = g.before_tool_call(tool, params, {"sessionKey": f"s{i}", "toolCallId": f"c{i}"})
        out.append((o.action, o.reason, o.denied_reason, o.policies, o.params))
    return out


def test_removal_reasons_name_the_deny_entry() -> None:
    g = guard()
    reasons = {tool: g.before_tool_call(tool, {}, {}).reason for tool in ("web_fetch", "cron")}
    assert reasons == {
        "web_fetch": "Tool web_fetch is not available in this run (removed by tools.deny: web_*).",
        "cron": "Tool cron is not available in this run (removed by agents.coder.tools.deny: "
        "cron).",
    }
    o = g.before_tool_call("github__delete_repo", {}, {})
    assert o.reason.endswith("(removed by tools.deny: github__delete_*).")
    assert o.policies == ("tools.deny",)
    # A profile names no entry: the tool is simply not in it.
    assert g.before_tool_call("browser", {}, {}).reason.endswith("(removed by tools.profile).")


def test_a_pickled_guard_decides_alike() -> None:
    g = guard()
    restored = pickle.loads(pickle.dumps(g))
    assert answers(restored) == answers(guard())
    assert restored.tools == g.tools and restored.policy_hash == g.policy_hash
    assert repr(restored) == repr(g)
    # What is bound to a process is not pickled: defaults in the loading process.
    assert restored.session_store is DEFAULT_STORE and restored.on_event is None
    # The tool policy and the policy set are rebuilt when asked for.
    assert restored.policies.labels == g.policies.labels
    assert restored.policy.to_cedar() == g.policy.to_cedar()


# A fresh interpreter loads a pickled guard and decides CALLS: no schema model, syntax tree or
# parameter-schema module is needed (arguments are checked by the compiled plans).
RESTORE = """
import json, pickle, sys
guard = pickle.loads(open(sys.argv[1], "rb").read())
calls = json.loads(sys.argv[2])
out = []
for i, (tool, params) in enumerate(calls):
    o = guard.before_tool_call(tool, params, {"sessionKey": f"s{i}", "toolCallId": f"c{i}"})
    out.append([o.action, o.reason, o.denied_reason, list(o.policies), o.params])
print(json.dumps([out, sorted(sys.modules)]))
"""


def test_a_guard_restored_in_a_fresh_process_decides_without_the_schema(tmp_path: Path) -> None:
    path = tmp_path / "guard.pickle"
    path.write_bytes(pickle.dumps(guard()))
    proc = subprocess.run(
        [sys.executable, "-c", RESTORE, str(path), json.dumps(CALLS)],
        capture_output=True,
        text=True,
        timeout=120,
        env=ENV,
    )
    assert proc.returncode == 0, proc.stderr
    decided, modules = json.loads(proc.stdout)
    expected = [[a, r, d, list(p), params] for a, r, d, p, params in answers(guard())]
    assert decided == expected
    assert any(d[2] == "invalid-arguments" for d in decided)  # the compiled checks ran
    unneeded = (
        "cedarlite.schema",
        "cedarlite.lang.ast",
        "cedarlite.tools.params",
        "pydantic",
        "lark",
    )
    assert not [m for m in modules if m.startswith(unneeded)]


def test_a_restored_guard_gets_the_process_parts(tmp_path: Path) -> None:
    g = guard()
    g.register_hook(lambda event, ctx: {"block": True}, plugin_id="p")
    restored = pickle.loads(pickle.dumps(g))
    # Hooks are code of the process that registered them: not carried.
    assert restored.before_tool_call("read", {"path": "a"}, {}).action == "allow"
    restored.session_store = store = MemorySessionStore()
    restored.open_decision_log(tmp_path / "log.jsonl")
    restored.before_tool_call("read", {"path": "a"}, {"sessionKey": "s", "toolCallId": "c"})
    line = json.loads((tmp_path / "log.jsonl").read_text())
    assert (line["decision"], line["session"], line["tool"]) == ("allow", "s", "read")
    assert len(store.load("s").loop.history) == 1
    restored.close()
    with pytest.raises(Exception, match="cannot open the decision log"):
        restored.open_decision_log(tmp_path / "missing" / "log.jsonl")


def test_a_failure_says_why() -> None:
    class Broken(MemorySessionStore):
        def update(self, key, change):  # type: ignore[no-untyped-def]
            raise sqlite3.OperationalError("database is locked")

    o = guard(session_store=Broken()).before_tool_call("read", {"path": "a"}, {"sessionKey": "s"})
    assert (o.action, o.failure) == ("block", True)
    assert o.error == "OperationalError: database is locked"
    assert guard().before_tool_call("read", {"path": "a"}, {}).error is None


# ---------------------------------------------------------------------------------------------
# SQLite session state


def push(key: str) -> object:
    def change(state: SessionState) -> tuple[SessionState, int]:
        new = state.with_approval(key)
        return new, len(new.approvals)

    return change


def test_sqlite_store_keeps_states_across_connections(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite3"
    store = SQLiteSessionStore(db)
    assert store.load("a") == SessionState()
    assert store.update("a", push("k1")) == 1
    assert store.update("a", push("k2")) == 2
    store.close()
    again = SQLiteSessionStore(db)
    assert again.load("a").approvals == ("k1", "k2")
    assert again.load("b") == SessionState()
    assert again.sessions() == 1
    # A guard's loop history round-trips through it.
    g = guard(session_store=again)
    g.before_tool_call("read", {"path": "a"}, {"sessionKey": "s", "toolCallId": "c"})
    assert len(SQLiteSessionStore(db).load("s").loop.history) == 1


def test_sqlite_store_prunes_old_and_surplus_sessions(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite3"
    store = SQLiteSessionStore(db)
    for i in range(5):
        store.update(f"s{i}", push("k"))
    store.close()
    conn = sqlite3.connect(db)
    conn.execute("UPDATE sessions SET updated = ? WHERE key = 's0'", (time.time() - 10 * 86400,))
    conn.commit()
    conn.close()
    pruning = SQLiteSessionStore(db, max_sessions=3)
    pruning.update("s9", push("k"))  # its first write prunes: s0 is too old, then the oldest
    assert pruning.sessions() == 3
    assert pruning.load("s9").approvals == ("k",) and pruning.load("s0") == SessionState()


def test_sqlite_store_refuses_a_corrupt_state(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite3"
    SQLiteSessionStore(db).update("s", push("k"))
    conn = sqlite3.connect(db)
    conn.execute("UPDATE sessions SET state = '[1' WHERE key = 's'")
    conn.commit()
    conn.close()
    store = SQLiteSessionStore(db)
    with pytest.raises(ValueError, match="malformed session state"):
        store.load("s")
    # The guard fails closed rather than forgetting the session's loop history.
    o = guard(session_store=store).before_tool_call("read", {"path": "a"}, {"sessionKey": "s"})
    assert o.failure and "malformed session state" in (o.error or "")


def test_sqlite_store_waits_then_fails_when_locked(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite3"
    SQLiteSessionStore(db).update("s", push("k"))
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        store = SQLiteSessionStore(db, timeout=0.2)
        started = time.monotonic()
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            store.update("s", push("k2"))
        assert 0.15 < time.monotonic() - started < 5
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert store.update("s", push("k2")) == 2  # nothing half-done was left behind


WRITER = """
import sys
from cedarlite.guard.sqlite_store import SQLiteSessionStore
store = SQLiteSessionStore(sys.argv[1], timeout=30)
for i in range(int(sys.argv[3])):
    store.update("shared", lambda s, k=f"{sys.argv[2]}-{i}": (s.with_approval(k), None))
"""


# Bytecode caches on, as for an installed package (some shells set PYTHONDONTWRITEBYTECODE).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def test_sqlite_store_loses_no_update_between_processes(tmp_path: Path) -> None:
    db = str(tmp_path / "s.sqlite3")
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, db, f"w{n}", "25"], env=ENV)
        for n in range(3)
    ]
    try:
        codes = [p.wait(timeout=120) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert codes == [0, 0, 0]
    approvals = SQLiteSessionStore(db).load("shared").approvals
    assert len(approvals) == 75 and len(set(approvals)) == 75


def test_sqlite_stores_opening_a_new_file_together_wait_for_each_other(tmp_path: Path) -> None:
    # Switching a new file to WAL, SQLite answers "database is locked" at once to the second
    # connection (its busy handler is not called there): several hooks starting together
    # failed, about one round in eight of six. Each round: a new file, six stores at once.
    import threading

    for n in range(40):
        db = str(tmp_path / f"s{n}.sqlite3")
        barrier = threading.Barrier(6)
        errors: list[BaseException] = []

        def first_update(
            key: str, db: str, barrier: threading.Barrier, errors: list[BaseException]
        ) -> None:
            store = SQLiteSessionStore(db, timeout=30)
            barrier.wait()
            try:
                store.update("s", lambda s: (s.with_approval(key), None))
            except BaseException as err:  # collected for the assertion below
                errors.append(err)

        threads = [
            threading.Thread(target=first_update, args=(f"k{i}", db, barrier, errors))
            for i in range(6)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        assert len(SQLiteSessionStore(db).load("s").approvals) == 6
