"""The decision log (the format #14 reads): every key, redaction, the policy hash across
processes, concurrent writers (real processes), and a log that cannot be written."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cedarlite.guard import _json as guard_json
from cedarlite.guard.decision_log import LOG_DEPTH
from cedarlite.guard.redact import scrub
from cedarlite.hooks import DecisionLog, Guard, MemorySessionStore

ROOT = Path(__file__).resolve().parents[1]
TOOLS = [
    {"name": "exec"},
    {"name": "read"},
    {"name": "github__create_issue", "pluginId": "bundle-mcp"},
]
CONFIG = {"tools": {"profile": "coding"}}
RULES = """
@id("exec.no-rm") @reason("no deleting")
forbid (principal, action == Action::"exec", resource) when { resource.command like "rm *" };
"""
CONTEXT = {"agentId": "main", "provider": "openai", "model": "gpt-5", "senderIsOwner": True}
KEYS = [
    "v",
    "ts",
    "session",
    "run",
    "call_id",
    "agent",
    "tool",
    "plugin",
    "params",
    "redacted",
    "context",
    "decision",
    "denied_reason",
    "reason",
    "policies",
    "errors",
    "params_rewritten",
    "latency_us",
    "policy_hash",
    "approvals",
    "error",
]


def make(path, context=CONTEXT, **kw):
    return Guard(
        CONFIG,
        TOOLS,
        context,
        rules=RULES,
        decision_log=path,
        session_store=MemorySessionStore(),
        **kw,
    )


def lines(path):
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines()]


def test_one_line_per_decision_with_every_key(tmp_path):
    log = tmp_path / "decisions.jsonl"
    guard = make(log)
    guard.before_tool_call("exec", {"command": "ls"}, {"sessionKey": "s", "toolCallId": "c1"})
    guard.before_tool_call(
        "exec", {"command": "rm x"}, {"sessionKey": "s", "toolCallId": "c2", "runId": "r"}
    )
    guard.before_tool_call("github__create_issue", {"title": "x"}, None)
    guard.before_tool_call("browser", {}, None)
    allow, block, mcp, unknown = lines(log)
    assert list(allow) == KEYS
    assert allow["v"] == 1
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", allow["ts"])
    assert (allow["session"], allow["run"], allow["call_id"]) == ("s", None, "c1")
    assert (allow["agent"], allow["tool"], allow["plugin"]) == ("main", "exec", None)
    assert allow["params"] == {"command": "ls"} and allow["redacted"] == []
    assert allow["context"] == CONTEXT
    assert (allow["decision"], allow["denied_reason"], allow["reason"]) == ("allow", None, None)
    assert allow["policies"] == ["tools.permit"] and allow["errors"] == []
    assert allow["params_rewritten"] is False
    assert isinstance(allow["latency_us"], int) and allow["latency_us"] >= 0
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", allow["policy_hash"])
    assert (allow["approvals"], allow["error"]) == ([], None)
    assert (block["decision"], block["denied_reason"], block["reason"]) == (
        "block",
        "policy",
        "no deleting",
    )
    assert block["policies"] == ["exec.no-rm"] and block["run"] == "r"
    assert mcp["plugin"] == "bundle-mcp" and mcp["session"] is None
    assert unknown["plugin"] is None and unknown["denied_reason"] == "not-offered"
    guard = Guard({"tools": {"deny": ["bundle-mcp"]}}, TOOLS, {}, decision_log=log)
    guard.before_tool_call("github__create_issue", {}, None)  # known, but removed
    assert lines(log)[-1]["plugin"] == "bundle-mcp"


def test_params_are_logged_as_sent_and_rewrites_flagged(tmp_path):
    log = tmp_path / "log.jsonl"
    guard = make(log)
    guard.register_hook(lambda e, c: {"params": {"command": "ls -la"}}, plugin_id="p")
    guard.before_tool_call("exec", {"command": "ls", "timeout": 5.0}, None)
    guard.before_tool_call("exec", {"command": "ls -la"}, None)  # rewritten to the same
    first, second = lines(log)
    assert first["params"] == {"command": "ls", "timeout": 5.0}
    assert first["params_rewritten"] is True and second["params_rewritten"] is False


def test_failures_record_their_cause(tmp_path):
    log = tmp_path / "log.jsonl"
    guard = make(log)
    guard.register_hook(lambda e, c: 1 / 0, plugin_id="divider")
    guard.before_tool_call("exec", {"command": "ls"}, None)
    (line,) = lines(log)
    assert line["decision"] == "block" and line["denied_reason"] == "plugin-before-tool-call"
    assert "divider failed: division by zero" in line["error"]


def test_policy_errors_are_logged_by_label(tmp_path):
    rules = """@id("overflow") forbid (principal, action == Action::"exec", resource)
        when { resource has timeout && resource.timeout * 9223372036854775807 < 0 };"""
    log = tmp_path / "log.jsonl"
    guard = Guard(CONFIG, TOOLS, {}, rules=rules, decision_log=log)
    guard.before_tool_call("exec", {"command": "ls", "timeout": 3}, None)
    (line,) = lines(log)
    assert line["errors"][0]["policy"] == "overflow" and "overflow" in line["errors"][0]["message"]


# ---------------------------------------------------------------------------------------------
# Redaction


def test_redaction_of_keys_tokens_and_context(tmp_path):
    log = tmp_path / "log.jsonl"
    guard = make(log, context={**CONTEXT, "model": "sk-proj-abcdefghijklmnop"})
    token = "ghp_" + "a" * 36
    params = {
        "command": f"git clone https://{token}@github.com/acme/app",
        "env": {
            "API_KEY": "123",
            "x-auth-token": {"nested": "everything under it"},
            "Password": 5,
            "a/b~c": "Bearer abcdefghijklmnop",
            "note": "plain",
        },
        "list": ["eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl", "AKIAIOSFODNN7EXAMPLE"],
        "key": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n-----END OPENSSH PRIVATE KEY-----",
    }
    guard.before_tool_call("exec", params, None)
    (line,) = lines(log)
    p = line["params"]
    assert p["command"] == "git clone https://[REDACTED]@github.com/acme/app"
    assert p["env"] == {
        "API_KEY": "[REDACTED]",
        "x-auth-token": "[REDACTED]",
        "Password": "[REDACTED]",
        "a/b~c": "Bearer [REDACTED]",
        "note": "plain",
    }
    assert p["list"] == ["[REDACTED]", "[REDACTED]"] and p["key"] == "[REDACTED]"
    assert line["redacted"] == [
        "/params/command",
        "/params/env/API_KEY",
        "/params/env/x-auth-token",
        "/params/env/Password",
        "/params/env/a~1b~0c",
        "/params/list/0",
        "/params/list/1",
        "/params/key",
        "/context/model",
    ]
    assert line["context"]["model"] == "[REDACTED]"
    assert token not in Path(log).read_text()


@pytest.mark.parametrize(
    "text, expected",
    [
        ("sk-live-abcdefgh", "[REDACTED]"),
        ("key sk_live_0123456789abcdef end", "key [REDACTED] end"),
        ("xoxb-1234567890-abc", "[REDACTED]"),
        ("gho_abcdefghijkl", "[REDACTED]"),
        ("github_pat_11ABCDEFG0123456789", "[REDACTED]"),
        ("ASIAY34FZKBOKMUTVV7A", "[REDACTED]"),
        ("authorization: bearer abc.def.ghi-jkl", "authorization: bearer [REDACTED]"),
        ("-----BEGIN RSA PRIVATE KEY-----\ncut off", "[REDACTED]"),
        ("a -----BEGIN PRIVATE KEY-----x-----END PRIVATE KEY----- b", "a [REDACTED] b"),
        ("risk-assessment-2026", None),
        ("task-abcdefghijkl", None),
        ("sk-short", None),
        ("eyJnotajwt", None),
        ("plain text", None),
    ],
)
def test_credential_patterns(text, expected):
    assert scrub(text) == expected


def test_redaction_is_linear_on_adversarial_strings():
    # Each would take quadratic time with a naive pattern; here they finish at once.
    for s in ("eyJ" * 200_000, "sk-" * 200_000, "bearer " * 100_000, "-----BEGIN " * 50_000):
        scrub(s)
    text, redacted = guard_json.encode({"k": ["x" * 10] * 100_000}, redact=True, prefix="/params")
    assert redacted == [] and len(text) > 1_000_000


def test_deep_params_are_logged_without_recursion(tmp_path):
    log = tmp_path / "log.jsonl"
    deep: dict = {}
    node = deep
    for _ in range(100_000):
        node["a"] = {}
        node = node["a"]
    node["password"] = "hunter2"
    out = make(log).before_tool_call("exec", {"command": "ls", "env": deep}, None)
    assert out.denied_reason == "invalid-arguments"
    (line,) = lines(log)  # readable by a recursive JSON parser: cut at LOG_DEPTH levels
    node, depth = line["params"]["env"], 2
    while isinstance(node, dict):
        node, depth = node["a"], depth + 1
    assert node == "[TRUNCATED]" and depth == LOG_DEPTH + 1
    assert line["redacted"] == ["/params/env" + "/a" * (LOG_DEPTH - 1)]
    assert "hunter2" not in Path(log).read_text()


def test_redaction_never_fails_the_decision(tmp_path):
    log = tmp_path / "log.jsonl"
    guard = make(log)
    guard.before_tool_call("exec", {"command": "ls", "x": object()}, None)  # not JSON
    guard.before_tool_call("exec", {"command": "ls\ud800"}, None)  # a lone surrogate
    first, second = lines(log)
    assert first["params"]["x"] == "<object>" and first["denied_reason"] == "invalid-arguments"
    assert second["decision"] == "allow" and second["params"]["command"] == "ls\ud800"


# ---------------------------------------------------------------------------------------------
# The policy hash

HASH_SCRIPT = textwrap.dedent(
    """
    import json, sys
    from cedarlite.hooks import Guard
    config, tools, rules = json.loads(sys.stdin.read())
    print(Guard(config, tools, {}, rules=rules).policy_hash)
    """
)


def test_policy_hash_is_the_same_in_any_process():
    inputs = [CONFIG, TOOLS, RULES]
    here = Guard(CONFIG, TOOLS, {}, rules=RULES).policy_hash
    proc = subprocess.run(
        [sys.executable, "-c", HASH_SCRIPT],
        input=json.dumps(inputs),
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONHASHSEED": "12345"},
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == here
    # Key order and the form of the rules do not matter; their content does.
    reordered = {"tools": dict(reversed(list({"profile": "coding"}.items())))}
    from cedarlite import PolicySet

    assert Guard(reordered, TOOLS, {}, rules=PolicySet.from_str(RULES)).policy_hash == here
    assert Guard(json.dumps(CONFIG), TOOLS, {}, rules=RULES).policy_hash == here
    assert Guard(CONFIG, TOOLS, {}, rules=RULES + RULES).policy_hash != here
    assert Guard({"tools": {"profile": "full"}}, TOOLS, {}, rules=RULES).policy_hash != here


# ---------------------------------------------------------------------------------------------
# Concurrent writers and failures

WRITER = textwrap.dedent(
    """
    import sys
    from cedarlite.hooks import Guard
    path, worker, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    guard = Guard({"tools": {"profile": "coding"}}, [{"name": "exec"}], {}, decision_log=path)
    big = "x" * 20000  # lines far above PIPE_BUF
    for i in range(count):
        command = f"ls {worker}-{i} {big if i % 3 == 0 else ''}"
        out = guard.before_tool_call("exec", {"command": command}, {"toolCallId": f"{worker}-{i}"})
        assert out.action == "allow", out
    """
)


def test_concurrent_writers_never_interleave(tmp_path):
    log = tmp_path / "shared.jsonl"
    workers, count = 4, 150
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(log), f"w{w}", str(count)],
            cwd=ROOT,
            stderr=subprocess.PIPE,
        )
        for w in range(workers)
    ]
    try:
        for p in procs:
            assert p.wait(timeout=120) == 0, p.stderr.read().decode()
    finally:
        for p in procs:
            if p.poll() is None:
                os.kill(p.pid, signal.SIGKILL)
                p.wait()
            p.stderr.close()
    records = lines(log)
    assert len(records) == workers * count
    ids = {r["call_id"] for r in records}
    assert ids == {f"w{w}-{i}" for w in range(workers) for i in range(count)}
    assert oct(os.stat(log).st_mode & 0o777) == "0o600"


def test_full_disk_blocks_allows_and_keeps_denies(caplog):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    guard = make("/dev/full")
    out = guard.before_tool_call("exec", {"command": "ls"}, None)
    assert (out.action, out.denied_reason, out.failure) == (
        "block",
        "plugin-before-tool-call",
        True,
    )
    assert out.reason == "Tool call blocked because before_tool_call hook failed"
    out = guard.before_tool_call("exec", {"command": "rm x"}, None)
    assert out.blocked and out.denied_reason == "policy"
    assert "No space left on device" in caplog.text


def test_closed_log_blocks_allows_and_keeps_denies(tmp_path):
    guard = make(tmp_path / "log.jsonl")
    guard.close()
    assert guard.before_tool_call("exec", {"command": "ls"}, None).failure
    assert guard.before_tool_call("exec", {"command": "rm x"}, None).denied_reason == "policy"
    asked = Guard(
        CONFIG,
        TOOLS,
        {},
        rules='@ask("ok?") forbid (principal, action == Action::"exec", resource);',
        decision_log=tmp_path / "log2.jsonl",
    )
    asked.close()
    assert asked.before_tool_call("exec", {"command": "ls"}, None).blocked


PARTIAL = textwrap.dedent(
    """
    import resource, signal, sys
    from cedarlite.hooks import DecisionLog
    path = sys.argv[1]
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    log = DecisionLog(path)
    log.append('{"v":1,"n":1}')
    limit = len('{"v":1,"n":1}') + 1 + 10  # room for 10 more bytes only
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    try:
        log.append('{"v":1,"n":2,"pad":"' + "y" * 100 + '"}')
    except OSError as err:
        print("failed", err.errno)
    """
)


def test_a_write_that_fails_half_way_leaves_no_partial_line(tmp_path):
    log = tmp_path / "log.jsonl"
    proc = subprocess.run(
        [sys.executable, "-c", PARTIAL, str(log)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("failed")
    assert log.read_text() == '{"v":1,"n":1}\n'


def test_unwritable_log_path_is_a_clear_error(tmp_path):
    from cedarlite.hooks import GuardError

    with pytest.raises(GuardError, match="cannot open the decision log"):
        make(tmp_path / "missing-dir" / "log.jsonl")
    log = DecisionLog(tmp_path / "ok.jsonl")
    assert "ok.jsonl" in repr(log) and not log.closed
    log.close()
    log.close()
    assert log.closed


def test_params_that_cannot_be_read_are_still_logged(tmp_path):
    class Hostile(dict):
        def items(self):
            raise RuntimeError("gotcha")

    log = tmp_path / "log.jsonl"
    out = make(log).before_tool_call("exec", Hostile(command="ls"), {"toolCallId": "h"})
    assert out.failure
    (line,) = lines(log)
    assert line["params"] == "<unreadable: RuntimeError>" and line["call_id"] == "h"
    assert line["decision"] == "block" and "gotcha" in line["error"]


def test_a_dropped_guard_closes_its_log(tmp_path):
    import gc

    guard = make(tmp_path / "log.jsonl")
    fd = guard._record.log._fd
    os.fstat(fd)
    del guard
    gc.collect()
    with pytest.raises(OSError):
        os.fstat(fd)
