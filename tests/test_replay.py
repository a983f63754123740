"""Impact of a policy change (#14): decision logs replayed against a changed policy.

The logs are written by the real guard (``Guard(..., decision_log=...)``), never by hand,
except for the malformed lines. Most tests replay on Dask's synchronous scheduler (in this
process); the local multiprocessing scheduler and a ``dask.distributed.LocalCluster`` with
two worker processes must give the same report, and every process a test starts is stopped
by its id.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("dask.bag", reason="the replay needs the cedarlite[replay] extra")

import cedarlite
from cedarlite.cli import main
from cedarlite.hooks import Guard, MemorySessionStore
from cedarlite.impact import ReplayError, ReplayReport, replay

ISSUE = {
    "type": "object",
    "properties": {
        "repo": {"type": "string"},
        "title": {"type": "string"},
        "token": {"type": "string"},
    },
    "required": ["repo", "title"],
}
TOOLS = [
    {"name": "read"},
    {"name": "write"},
    {"name": "exec"},
    {"name": "process"},
    {"name": "browser"},
    {"name": "github__create_issue", "pluginId": "bundle-mcp", "parameters": ISSUE},
    {"name": "deploy", "pluginId": "ops"},
]
CONFIG = {
    "tools": {"profile": "coding", "alsoAllow": ["deploy"]},
    "agents": {
        "list": [
            {"id": "main", "default": True},
            {"id": "reviewer", "tools": {"allow": ["read", "github__*"]}},
        ]
    },
}
RULES = """
@id("exec.no-rm") @reason("Deleting files is not allowed here.")
forbid (principal, action == Action::"exec", resource) when { resource.command like "rm *" };

@id("exec.push") @ask("Pushes to a remote repository")
forbid (principal, action == Action::"exec", resource) when { resource.command like "git push*" };
"""
NO_CURL = """
@id("exec.no-curl")
forbid (principal, action == Action::"exec", resource) when { resource.command like "curl *" };
"""
BEARER = 'curl -H "Authorization: Bearer abcdefghijklmnop" https://api.example.com'

# (call id, agent, tool, params): every call of the main log, decided by the real guard.
CALLS = [
    ("ls", "main", "exec", {"command": "ls"}),
    ("rm", "main", "exec", {"command": "rm -rf build"}),
    ("curl", "main", "exec", {"command": "curl https://example.com"}),
    ("push", "main", "exec", {"command": "git push origin main"}),
    ("read", "main", "read", {"path": "src/app.py"}),
    ("write", "main", "write", {"path": "notes.md", "content": "hello"}),
    ("browser", "main", "browser", {}),
    ("issue", "main", "github__create_issue", {"repo": "a/b", "title": "t", "token": "s3"}),
    ("bearer", "main", "exec", {"command": BEARER}),
    ("env", "main", "exec", {"command": "ls", "env": {"GITHUB_TOKEN": "ghp_x"}}),
    ("unknown", "main", "frobnicate", {}),
    ("badargs", "main", "exec", {"command": 5}),
    ("deploy", "main", "deploy", {"target": "prod"}),
    ("r-read", "reviewer", "read", {"path": "README.md"}),
    ("r-exec", "reviewer", "exec", {"command": "ls"}),
    ("r-issue", "reviewer", "github__create_issue", {"repo": "a/b", "title": "x"}),
]


def write_log(path: Path) -> None:
    """The main log: the calls above, an approved ask, a hook's block and a loop."""
    guards = {
        agent: Guard(
            CONFIG,
            TOOLS,
            {"agentId": agent, "provider": "anthropic"},
            rules=RULES,
            decision_log=path,
            session_store=MemorySessionStore(),
        )
        for agent in ("main", "reviewer")
    }
    for call_id, agent, tool, params in CALLS:
        guards[agent].before_tool_call(tool, params, {"sessionKey": "s1", "toolCallId": call_id})

    async def approve(request):
        return "allow-once"

    main_guard = guards["main"]
    main_guard.approver = approve
    push = {"command": "git push origin feature"}
    outcome = asyncio.run(
        main_guard.abefore_tool_call("exec", push, {"sessionKey": "s1", "toolCallId": "approved"})
    )
    assert outcome.action == "allow"  # logged allow, with the policy's approval
    main_guard.register_hook(
        lambda event, ctx: {"block": True} if event["toolName"] == "write" else None,
        plugin_id="no-writes",
    )
    main_guard.before_tool_call("write", {"path": "x", "content": "y"}, {"toolCallId": "hooked"})
    looping = Guard(
        {**CONFIG, "tools": {**CONFIG["tools"], "loopDetection": {"enabled": True}}},
        TOOLS,
        {"agentId": "main", "provider": "anthropic"},
        rules=RULES,
        decision_log=path,
        session_store=MemorySessionStore(),
    )
    poll = {"action": "poll", "sessionId": "p1"}
    for i in range(21):
        call = {"sessionKey": "s2", "toolCallId": f"poll-{i}"}
        looping.before_tool_call("process", poll, call)
        looping.after_tool_call("process", poll, call, result="still running")
    for guard in (*guards.values(), looping):
        guard.close()


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("logs") / "decisions.jsonl"
    write_log(path)
    return path


def lines_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def changed(out: Path, name: str = "changes.jsonl") -> dict[str, tuple[str, str]]:
    return {
        row["call_id"]: (row["old"], row["new"])
        for row in map(json.loads, (out / name).read_text().splitlines())
    }


def sync(log, config=CONFIG, rules=RULES, **kw) -> ReplayReport:
    kw.setdefault("tools", TOOLS)
    return replay(log, config, rules, scheduler="sync", **kw)


def accounted(report: ReplayReport) -> int:
    """Every line is counted exactly once, somewhere."""
    return (
        report.compared
        + report.undecidable
        + sum(report.not_compared.values())
        + report.unreadable_lines
        + report.internal_errors
    )


# ---------------------------------------------------------------------------------------------
# Acceptance: same, stricter, looser


def test_the_log_is_the_guards(log: Path) -> None:
    rows = lines_of(log)
    assert len(rows) == len(CALLS) + 2 + 21
    by_id = {r["call_id"]: r for r in rows}
    assert by_id["bearer"]["redacted"] == ["/params/command"]
    assert by_id["issue"]["redacted"] == ["/params/token"]
    assert by_id["env"]["redacted"] == ["/params/env/GITHUB_TOKEN"]
    assert by_id["approved"]["approvals"][0]["resolution"] == "allow-once"
    assert by_id["hooked"]["denied_reason"] == "plugin-before-tool-call"
    assert by_id["poll-20"]["denied_reason"] == "tool-loop"


def test_the_same_policy_changes_nothing(log: Path, tmp_path: Path) -> None:
    report = sync(log, out=tmp_path)
    assert report.changed == 0 and report.transitions == {}
    assert report.compared == report.unchanged == len(CALLS) + 1 + 20 - 1  # - bearer
    assert report.undecidable == 1  # the command with a bearer token: exec rules read it
    assert report.not_compared == {"loop-detection": 1, "hook": 1, "guard-failure": 0}
    assert report.lines == accounted(report) == len(lines_of(log))
    assert report.complete
    assert changed(tmp_path) == {}
    assert changed(tmp_path, "undecidable.jsonl") == {"bearer": ("allow", "allow")}
    assert report.examples["undecidable"][0]["why"] == "read by exec.no-rm, exec.push"
    # The new policy is the logged one: the replay computes the hash a guard logs (the
    # looping guard's configuration, with loop detection on, has another).
    assert len(report.logged_policies) == 2
    assert report.logged_policies[report.policy_hash] == len(CALLS) + 2


def test_a_stricter_policy_blocks_exactly_the_expected_calls(log: Path, tmp_path: Path) -> None:
    stricter = {**CONFIG, "tools": {"profile": "coding"}}  # deploy no longer allowed
    report = sync(log, stricter, RULES + NO_CURL, out=tmp_path)
    assert report.transitions == {"allow->block": 2}
    assert changed(tmp_path) == {"curl": ("allow", "block"), "deploy": ("allow", "block")}
    assert report.responsible == {
        "allow->block": {"deploy": {"tools.profile": 1}, "exec": {"exec.no-curl": 1}}
    }
    assert report.tools["exec"]["allow->block"] == 1
    assert report.tools["exec"]["undecidable"] == 1  # the bearer curl: not a guess
    assert report.lines == accounted(report)


def test_a_looser_policy_allows_exactly_the_expected_calls(log: Path, tmp_path: Path) -> None:
    looser = {**CONFIG, "tools": {**CONFIG["tools"], "alsoAllow": ["deploy", "browser"]}}
    rules = RULES.split('@id("exec.push")')[0].replace("rm *", "never *") + (
        '@id("exec.push") @ask("Pushes to a remote repository")\n'
        'forbid (principal, action == Action::"exec", resource) '
        'when { resource.command like "git push*" };'
    )
    report = sync(log, looser, rules, out=tmp_path)
    assert report.transitions == {"block->allow": 2}
    assert changed(tmp_path) == {"rm": ("block", "allow"), "browser": ("block", "allow")}
    example = report.examples["block->allow"][0]
    assert example["file"] == str(log) and example["call_id"] == "rm"
    assert lines_of(log)[example["line"] - 1]["call_id"] == "rm"  # 1-based line numbers
    assert example["params"] == {"command": "rm -rf build"}


def test_asks_stay_asks_and_approved_calls_compare_as_asks(log: Path, tmp_path: Path) -> None:
    no_ask = RULES.split('@id("exec.push")')[0]
    report = sync(log, CONFIG, no_ask, out=tmp_path)
    # `push` was answered ask; `approved` was logged allow after a person approved the ask.
    assert changed(tmp_path) == {"push": ("ask", "allow"), "approved": ("ask", "allow")}
    assert report.transitions == {"ask->allow": 2}
    assert report.responsible["ask->allow"] == {"exec": {"tools.permit": 2}}


def test_runs_the_new_configuration_refuses_count_as_blocked(log: Path) -> None:
    config = {**CONFIG, "agents": {"list": [{"id": "main", "default": True}]}}
    report = sync(log, config)
    ((message, count),) = report.rejected_runs.items()
    assert count == 3 and "reviewer" in message
    assert report.transitions == {"allow->block": 2}  # r-read, r-issue (r-exec was blocked)
    assert report.responsible["allow->block"] == {
        "github__create_issue": {"(run-rejected)": 1},
        "read": {"(run-rejected)": 1},
    }


# ---------------------------------------------------------------------------------------------
# Undecidable from the log


def test_only_redacted_values_a_policy_reads_make_a_call_undecidable(log: Path) -> None:
    reads_token = """
@id("issue.token")
forbid (principal, action == Action::"github__create_issue", resource)
when { resource has token && resource.token like "sk-*" };
"""
    report = sync(log, CONFIG, RULES + reads_token)
    assert report.undecidable == 2  # the bearer command, and now the issue's token
    rows = {e["call_id"]: e for e in report.examples["undecidable"]}
    assert rows["issue"]["redacted"] == "/params/token"
    assert rows["issue"]["why"] == "read by issue.token"
    # Without argument rules nothing reads the arguments: every call is decided.
    assert sync(log, CONFIG, None).undecidable == 0


def test_a_redacted_run_context_makes_its_calls_undecidable(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    context = {"agentId": "main", "model": "sk-abcdefghijklmnopqrstuvwx"}
    with Guard(CONFIG, TOOLS, context, decision_log=path) as guard:
        guard.before_tool_call("read", {"path": "a"})
    assert lines_of(path)[0]["redacted"] == ["/context/model"]
    report = sync(path)
    assert report.undecidable == 1
    assert report.examples["undecidable"][0]["why"] == "a value of the run context is redacted"
    # Even when the new configuration removes the tool: which tools a run has depends on it.
    assert sync(path, {"tools": {"deny": ["read"]}}).undecidable == 1


def test_redacted_arguments_that_fail_the_schema_are_undecidable(tmp_path: Path) -> None:
    tools = [{"name": "llm", "pluginId": "ai", "parameters": {
        "type": "object", "properties": {"max_tokens": {"type": "integer"}}}}]  # fmt: skip
    path = tmp_path / "log.jsonl"
    with Guard({}, tools, {}, decision_log=path) as guard:
        assert guard.before_tool_call("llm", {"max_tokens": 100}).allowed
    assert lines_of(path)[0]["params"] == {"max_tokens": "[REDACTED]"}
    report = sync(path, {}, None, tools=tools)
    assert report.undecidable == 1 and report.changed == 0
    assert "schema" in report.examples["undecidable"][0]["why"]


# ---------------------------------------------------------------------------------------------
# Bad lines: counted per kind, located, never fatal, never dropped


def test_bad_lines_are_counted_located_and_never_fatal(log: Path, tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    good = log.read_bytes().splitlines(keepends=True)
    big = json.dumps({"v": 1, "tool": "exec", "pad": "x" * 5000})
    bad = [
        b"{not json\n",
        b'{"v": 2, "tool": "exec", "whatever": []}\n',
        b'{"v": 1, "tool": "exec", "params": {}, "decision": "maybe", "context": {}}\n',
        b'{"v": "1"}\n',
        b"[1, 2]\n",
        b"\n",
        b'{"v": 1, "tool": "caf\xe9"}\n',
        big.encode() + b"\n",
        b"[" * 3000 + b"\n",  # deeper than the decoder goes, shorter than the limit
        b'{"v": 1, "tool": "exec", "params": {"n": NaN}, "decision": "allow", "context": {}}\n',
    ]
    path.write_bytes(b"".join(good[:3] + bad + good[3:]) + b'{"v":1,"ts":"2026-')
    report = sync(path, max_line=4000)
    assert report.unreadable == {
        "truncated": 1,
        "not-json": 3,
        "not-utf8": 1,
        "too-large": 1,
        "too-deep": 1,
        "future-version": 1,
        "bad-fields": 2,
        "empty": 1,
    }
    samples = {(s["kind"], s["line"]): s for s in report.unreadable_samples}
    assert samples["not-json", 4]["column"] == 2
    assert samples["bad-fields", 6]["message"] == (
        '`decision` must be "allow", "block" or "ask", not `"maybe"`'
    )
    assert samples["not-utf8", 10]["column"] == 22
    assert samples["truncated", len(good) + len(bad) + 1]["file"] == str(path)
    # The good lines around them are replayed exactly as without the bad ones.
    clean = sync(log)
    assert (report.compared, report.undecidable, report.not_compared) == (
        clean.compared,
        clean.undecidable,
        clean.not_compared,
    )
    assert report.lines == accounted(report) == len(good) + len(bad) + 1
    assert not report.complete
    assert "unreadable lines: 11" in report.render()


def test_hostile_lines_are_decided_without_recursion_or_unbounded_output(
    log: Path, tmp_path: Path
) -> None:
    deep: object = "x"
    for _ in range(900):  # decodable, far deeper than the guard accepts (256)
        deep = [deep]
    huge = "y" * 100_000
    hostile = [
        {"v": 1, "tool": "exec", "params": {"command": deep}, "decision": "allow",
         "context": {}, "session": huge, "call_id": "deep"},
        {"v": 1, "tool": "exec", "params": {"command": "curl x"}, "decision": "allow",
         "context": {"agentId": "main", "model": huge}, "call_id": "big-context"},
        {"v": 1, "tool": "t" * 50_000, "params": {}, "decision": "allow", "context": {},
         "call_id": "long-tool", "policy_hash": huge, "redacted": ["/params/" + "z" * 5000]},
    ]  # fmt: skip
    path = tmp_path / "hostile.jsonl"
    encoder = json.JSONEncoder()
    path.write_text("".join(encoder.encode(line) + "\n" for line in hostile))
    report = sync(path, CONFIG, RULES + NO_CURL, out=tmp_path / "out")
    assert report.internal_errors == 0 and report.unreadable_lines == 0
    assert report.transitions == {"allow->block": 3}
    examples = {e["call_id"]: e for e in report.examples["allow->block"]}
    assert examples["deep"]["new"]["denied_reason"] == "invalid-arguments"
    assert isinstance(examples["deep"]["params"], str)  # shown as cut text, not nested
    assert len(examples["deep"]["session"]) == 300
    assert sorted(len(tool) for tool in report.tools) == [4, 100]  # long names are cut
    assert report.logged_policies == {}  # not a hash
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["transitions"] == {"allow->block": 3}
    rows = lines_of(tmp_path / "out" / "changes.jsonl")
    assert [r["call_id"] for r in rows] == ["deep", "big-context", "long-tool"]


def test_lines_with_fields_of_the_wrong_type_name_the_field() -> None:
    from cedarlite.impact.logline import read_line

    base = {"v": 1, "tool": "exec", "params": {}, "decision": "block", "context": {},
            "denied_reason": "policy"}  # fmt: skip
    assert read_line(json.dumps(base) + "\n").tool == "exec"
    cases = {
        "session": (5, "`session` must be a string or null, not `5`"),
        "redacted": (["/elsewhere"], "`redacted` must be pointers into /params or /context"),
        "policies": ("p", '`policies` must be an array of strings, not `"p"`'),
        "denied_reason": (None, "`denied_reason` must be the reason of a block"),
        "approvals": ([{"plugin": 3}], "`approvals` must be objects with a `plugin`"),
        "params_rewritten": ("yes", "`params_rewritten` must be true or false"),
        "context": ([], "`context` must be an object, not an array"),
    }
    for key, (value, message) in cases.items():
        bad = read_line(json.dumps({**base, key: value}) + "\n")
        assert bad.kind == "bad-fields" and bad.message.startswith(message), (key, bad)
    assert read_line(json.dumps({**base, "tool": "x" * 10**6})).tool  # long but fine


# ---------------------------------------------------------------------------------------------
# Partitions, compression, schedulers


def test_partitions_and_gzip_give_the_same_report(log: Path, tmp_path: Path) -> None:
    whole = sync(log)
    gz = tmp_path / "decisions.jsonl.gz"
    with gzip.open(gz, "wb") as f:
        f.write(log.read_bytes())
    compressed = sync(gz)
    many = sync(log, blocksize=1500)  # a dozen partitions, lines split at block ends
    for other in (compressed, many):
        assert other.compared == whole.compared and other.unchanged == whole.unchanged
        assert other.tools == whole.tools and other.undecidable == whole.undecidable
    assert [e["line"] for e in many.examples["undecidable"]] == [
        e["line"] for e in whole.examples["undecidable"]
    ]
    # Several files: each file's lines are numbered from 1.
    both = sync([log, gz], out=tmp_path / "out")
    assert both.lines == 2 * whole.lines and both.files == (str(log), str(gz))
    rows = lines_of(tmp_path / "out" / "undecidable.jsonl")
    assert [(Path(r["file"]).name, r["line"]) for r in rows] == [
        ("decisions.jsonl", 9),
        ("decisions.jsonl.gz", 9),
    ]


def test_block_lines_are_the_lines_dask_reads() -> None:
    import io

    from hypothesis import given
    from hypothesis import strategies as st

    from cedarlite.impact.driver import _BlockLines

    @given(st.binary(max_size=60) | st.text("a\n\r\u2028", max_size=20).map(str.encode))
    def check(block: bytes) -> None:
        text = block.decode("utf-8", "surrogateescape")
        assert list(_BlockLines(block)) == list(io.StringIO(text, newline="\n"))

    check()


def test_a_corrupt_compressed_file_is_reported_not_fatal(log: Path, tmp_path: Path) -> None:
    gz = tmp_path / "cut.jsonl.gz"
    data = gzip.compress(log.read_bytes())
    gz.write_bytes(data[: len(data) // 2])
    report = sync([gz, log])
    assert report.read_errors and report.read_errors[0]["file"] == str(gz)
    assert report.lines > len(lines_of(log))  # the readable part of the cut file counts too
    assert not report.complete


def test_local_processes_and_a_distributed_cluster_agree(log: Path, tmp_path: Path) -> None:
    from distributed import Client, LocalCluster

    stricter = RULES + NO_CURL
    local = replay(log, CONFIG, stricter, tools=TOOLS, workers=2, blocksize=2000,
                   out=tmp_path / "local")  # fmt: skip
    assert multiprocessing.active_children() == []  # the local pool is shut down
    cluster = LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    try:
        with Client(cluster) as client:
            pids = list(client.run(os.getpid).values())
            assert len(set(pids)) == 2 and os.getpid() not in pids
            remote = replay(log, CONFIG, stricter, tools=TOOLS, scheduler=client,
                            blocksize=2000, out=tmp_path / "cluster")  # fmt: skip
            by_address = replay(log, CONFIG, stricter, tools=TOOLS,
                                scheduler=cluster.scheduler_address, blocksize=2000)  # fmt: skip
    finally:
        cluster.close()
        stop(pids)
    assert local == remote == by_address
    assert local.transitions == {"allow->block": 1}
    assert local.workers == 2 and remote.workers == 2
    for name in ("changes.jsonl", "undecidable.jsonl"):
        assert (tmp_path / "local" / name).read_text() == (tmp_path / "cluster" / name).read_text()
    local_summary = json.loads((tmp_path / "local" / "summary.json").read_text())
    cluster_summary = json.loads((tmp_path / "cluster" / "summary.json").read_text())
    for key in ("elapsed_s", "workers", "scheduler"):
        del local_summary[key], cluster_summary[key]
    assert local_summary == cluster_summary


def stop(pids: list[int]) -> None:
    """Wait for processes to exit; kill by process id those that do not."""
    deadline = time.monotonic() + 10
    for pid in pids:
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if alive(pid):
            os.kill(pid, signal.SIGKILL)
    assert not any(alive(pid) for pid in pids)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


# ---------------------------------------------------------------------------------------------
# Output files, the catalog, inputs


def test_output_files(log: Path, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    out = tmp_path / "out"
    report = sync(log, CONFIG, RULES + NO_CURL, out=out)
    assert {p.name for p in out.iterdir()} == {
        "changes.jsonl", "changes.parquet", "summary.json", "undecidable.jsonl"
    }  # fmt: skip
    for p in out.iterdir():
        assert p.stat().st_mode & 0o777 == 0o600  # they hold call arguments
    (row,) = map(json.loads, (out / "changes.jsonl").read_text().splitlines())
    assert row["params"] == {"command": "curl https://example.com"}
    assert {k: row[k] for k in ("call_id", "session", "tool", "old", "new", "policies")} == {
        "call_id": "curl", "session": "s1", "tool": "exec", "old": "allow", "new": "block",
        "policies": ["exec.no-curl"],
    }  # fmt: skip
    table = pq.read_table(out / "changes.parquet").to_pylist()
    assert [(r["call_id"], r["line"], json.loads(r["params"])) for r in table] == [
        ("curl", row["line"], row["params"])
    ]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["transitions"] == {"allow->block": 1}
    assert summary["tools"]["exec"]["allow->block"] == 1
    assert summary["unreadable"]["truncated"] == 0
    assert summary == json.loads(json.dumps(report.to_json()))


def test_without_a_tool_list_the_catalog_is_what_the_log_shows(log: Path) -> None:
    report = replay(log, CONFIG, RULES, scheduler="sync")
    assert report.catalog == "the tools the log shows, 7 tools"
    # `frobnicate` was never a tool of the run: it stays unknown, and blocked.
    assert report.changed == 0 and report.compared == sync(log).compared


def test_the_report_hash_is_the_guards(log: Path) -> None:
    report = sync(log, CONFIG, RULES + NO_CURL)
    guard = Guard(CONFIG, TOOLS, {}, rules=RULES + NO_CURL)
    assert report.policy_hash == guard.policy_hash


def test_bad_inputs_raise_before_any_result(log: Path, tmp_path: Path) -> None:
    from cedarlite.tools import ConfigError, RulesError

    with pytest.raises(ReplayError, match="no decision log matches"):
        sync(str(tmp_path / "*.jsonl"))
    with pytest.raises(ReplayError, match="is a directory"):
        sync(tmp_path)
    with pytest.raises(ConfigError):
        sync(log, {"tools": {"profil": "coding"}})
    with pytest.raises(RulesError):
        sync(log, CONFIG, 'forbid (principal, action == Action::"exec", resource) '
                          'when { resource.comand == "x" };')  # fmt: skip
    with pytest.raises(ReplayError, match="workers"):
        replay(log, CONFIG, workers=0)
    # The rules are validated while the local processes start on the log: nothing is written.
    with pytest.raises(RulesError):
        replay(log, CONFIG, 'forbid (principal, action, resource) when { context.nope };',
               tools=TOOLS, workers=1, out=tmp_path / "out")  # fmt: skip
    assert not (tmp_path / "out").exists()


@pytest.mark.skipif(
    "forkserver" not in multiprocessing.get_all_start_methods(), reason="no fork server here"
)
def test_local_workers_are_forked_from_a_server_that_imported_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import concurrent.futures
    from multiprocessing import forkserver

    import dask

    from cedarlite.impact.driver import WORKER_MODULES, _process_context

    # The program's own preload list is kept (and `__main__`, Python's default, with it).
    monkeypatch.setattr(forkserver._forkserver, "_preload_modules", ["__main__", "json"])
    context = _process_context()
    assert context.get_start_method() == "forkserver"
    assert forkserver._forkserver._preload_modules == ["__main__", "json", *WORKER_MODULES]
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=context) as pool:
        assert pool.submit(os.getppid).result() != os.getpid()  # forked by the server
    # A start method chosen in Dask's configuration is Dask's to use.
    with dask.config.set({"multiprocessing.context": "fork"}):
        assert _process_context().get_start_method() == "fork"


def test_a_worker_process_that_dies_stops_the_replay_with_a_clear_error() -> None:
    from dask import delayed

    from cedarlite.impact.driver import _Runner

    with _Runner.start(None, 1) as runner:
        results = runner.run([delayed(os._exit)(3)], ["log.jsonl"])
        with pytest.raises(ReplayError, match="worker processes stopped"):
            next(results)
    assert multiprocessing.active_children() == []


def test_without_dask_a_clear_message(monkeypatch: pytest.MonkeyPatch, log: Path) -> None:
    monkeypatch.setitem(sys.modules, "dask.bag", None)
    with pytest.raises(ReplayError, match=r"pip install 'cedarlite\[replay\]'"):
        sync(log)


def test_importing_cedarlite_does_not_import_dask() -> None:
    code = (
        "import sys, cedarlite\n"
        "assert 'dask' not in sys.modules and 'cedarlite.impact' not in sys.modules\n"
        "assert cedarlite.replay is cedarlite.impact.replay\n"
        "assert 'dask' not in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert cedarlite.ReplayReport is ReplayReport


# ---------------------------------------------------------------------------------------------
# The command line


def test_cli_replay(log: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"config": CONFIG, "tools": TOOLS}))  # a scenario file
    rules = tmp_path / "rules.cedar"
    rules.write_text(RULES + NO_CURL)
    out = tmp_path / "out"
    argv = ["replay", "--log", str(log), "--config", str(config), "--rules", str(rules),
            "--scheduler", "sync", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    captured = capsys.readouterr()
    text = captured.out
    assert "allow->block  (all tools)      1" in text
    assert "exec.no-curl (1)" in text
    assert "undecidable from the log" in text
    assert "\r" not in captured.err  # no progress bar without a terminal
    assert changed(out) == {"curl": ("allow", "block")}
    assert main([*argv, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["transitions"] == {"allow->block": 1}


def test_cli_errors(log: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "config.json"
    config.write_text('{"tools": {"profil": "coding"}}')
    assert main(["replay", "--log", str(log), "--config", str(config)]) == 3
    err = capsys.readouterr().err
    assert f"{config}:1:12: error[unknown-key]" in err and "did you mean `profile`?" in err
    config.write_text(json.dumps(CONFIG))
    rules = tmp_path / "typo.cedar"
    rules.write_text('forbid (principal, action == Action::"exec", resource) '
                     'when { resource.comand == "x" };')  # fmt: skip
    argv = ["replay", "--log", str(log), "--config", str(config), "--scheduler", "sync"]
    assert main([*argv, "--rules", str(rules), "--tools", str(write_tools(tmp_path))]) == 3
    assert f"{rules}:1:63: error[unknown-attribute]" in capsys.readouterr().err
    assert main(["replay", "--log", str(tmp_path / "none.jsonl"), "--config", str(config)]) == 1
    assert "no such file" in capsys.readouterr().err
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(gzip.compress(log.read_bytes())[:200])
    assert main(["replay", "--log", str(cut), "--config", str(config), "--scheduler", "sync"]) == 1
    assert "the replay is incomplete" in capsys.readouterr().err


def write_tools(tmp_path: Path) -> Path:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(TOOLS))
    return path


def test_cli_as_a_subprocess_with_local_processes(log: Path, tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps(CONFIG))
    rules = tmp_path / "rules.cedar"
    rules.write_text(RULES)
    cedarlite_bin = shutil.which("cedarlite", path=os.path.dirname(sys.executable))
    assert cedarlite_bin is not None
    done = subprocess.run(
        [cedarlite_bin, "replay", "--log", str(log), "--config", str(config), "--rules",
         str(rules), "--tools", str(write_tools(tmp_path)), "--workers", "2"],
        capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "0 changed" in done.stdout and "on dask local scheduler (2 processes)" in done.stdout


# ---------------------------------------------------------------------------------------------
# What a policy reads (the analysis behind "undecidable")


@pytest.mark.parametrize(
    ("condition", "paths", "everything"),
    [
        ('resource.command like "rm *"', {("command",)}, False),
        ('context.input.env.HOME == "/"', {("env", "HOME")}, False),
        ("resource has a.b", {("a", "b")}, False),
        ("context has input.a", {("a",)}, False),
        ("context has input", set(), False),  # every call's context has its input
        ('context.input == {"a": 1}', {()}, False),
        ("context == {}", {()}, False),
        ('context.agentId == "x" && principal.name == "y"', set(), False),
        ('resource == Tool::"exec" && resource in Tool::"exec"', set(), False),
        ('resource.getTag("k") == 1', set(), False),
        ("resource.items.contains(1)", {("items",)}, False),
        ('(if context.sandboxed then resource else principal).command == "x"', set(), True),
        ('Call::exec::"call".command == "x"', set(), True),
        ('{a: resource.x}.a == "y"', {("x",)}, True),
        ('if resource.flag then "a" else resource.other', {("flag",), ("other",)}, False),
    ],
)
def test_argument_reads(condition: str, paths: set, everything: bool) -> None:
    from cedarlite.impact.reads import argument_reads

    (policy,) = cedarlite.PolicySet.from_str(
        f"forbid (principal, action, resource) when {{ {condition} }};"
    )
    reads = argument_reads(policy)
    assert (set(reads.paths), reads.everything) == (paths, everything)


@pytest.mark.parametrize(
    ("condition", "tests"),
    [
        ('resource.command like "git *"', {"command": {("git ", "")}}),
        ('context.input.path == ".." || resource.path != "x"', {"path": {("..",), ("x",)}}),
        ('".." == context.input.path && resource has path', {"path": {("..",)}}),
        ('context has input.path && context.input.path like "*.env"', {"path": {("", ".env")}}),
        ('resource.a like "x*" && resource.b == 1', {"a": {("x", "")}}),  # b: not a string test
        ('resource.a like "x*" && [resource.a].contains("y")', {}),  # a used as a value
        ('resource.a like "x*" && resource.a == context.other', {}),  # compared to a non-literal
        ('resource.a like "x*" && resource has a.b', {}),  # a read as a record
        ('resource.a.b like "x*"', {}),
        ('principal.name like "x*" && resource.a == "y"', {"a": {("y",)}}),
    ],
)
def test_arguments_read_only_by_string_tests(condition: str, tests: dict) -> None:
    from cedarlite.impact.reads import argument_reads

    (policy,) = cedarlite.PolicySet.from_str(
        f"forbid (principal, action, resource) when {{ {condition} }};"
    )
    assert {k: set(v) for k, v in argument_reads(policy).tests.items()} == tests


def test_string_tests_tell_apart_exactly_the_strings_that_pass_different_tests() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from cedarlite._glob import like_segments, match
    from cedarlite.impact.strings import StringTests
    from cedarlite.lang.ast import WILDCARD

    text = st.text("ab./", max_size=6)
    pattern = st.lists(st.one_of(st.text("ab./", min_size=1, max_size=2), st.just(WILDCARD)),
                       max_size=5).map(lambda p: like_segments(tuple(p)))  # fmt: skip

    @settings(max_examples=300, deadline=None)
    @given(st.lists(pattern, min_size=1, max_size=12), st.lists(text, min_size=2, max_size=8))
    def check(patterns: list, strings: list) -> None:
        tests = StringTests(patterns)
        for a in strings:
            for b in strings:
                same = [match(p, a) for p in patterns] == [match(p, b) for p in patterns]
                assert (tests.key(a) == tests.key(b)) == same, (patterns, a, b)

    check()


def test_a_redacted_value_is_visible_only_where_the_schema_types_it() -> None:
    from cedarlite.impact.reads import cedar_path, pointer_tokens

    schema = {
        "type": "object",
        "properties": {
            "command": {"type": "string"},
            "env": {"type": "object", "additionalProperties": {"type": "string"}},
            "headers": {"type": "object", "properties": {"a/b": {"type": "string"}}},
            "args": {"type": "array", "items": {"type": "string"}},
        },
    }
    cases = {
        "/params/command": ("command",),
        "/params/env/GITHUB_TOKEN": None,  # a free-form object is not an attribute
        "/params/headers/a~1b": ("headers", "a/b"),
        "/params/args/3": ("args",),  # a set is read whole
        "/params/undeclared": None,
    }
    for pointer, path in cases.items():
        assert cedar_path(schema, pointer_tokens(pointer)[1:]) == path, pointer
    assert cedar_path({"type": "object"}, ["x"]) is None  # no typed parameter at all
    assert cedar_path(None, ["x"]) is None


def test_cli_progress_bar_on_a_terminal_only(log: Path, tmp_path: Path) -> None:
    import pty
    import select

    config = tmp_path / "config.json"
    config.write_text(json.dumps(CONFIG))
    cedarlite_bin = shutil.which("cedarlite", path=os.path.dirname(sys.executable))
    assert cedarlite_bin is not None
    master, terminal = pty.openpty()
    proc = subprocess.Popen(
        [cedarlite_bin, "replay", "--log", str(log), "--config", str(config), "--tools",
         str(write_tools(tmp_path)), "--scheduler", "sync"],
        stdout=subprocess.PIPE, stderr=terminal, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    os.close(terminal)
    shown = b""
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # the terminal closed: the command is done
                    break
                if not chunk:
                    break
                shown += chunk
            elif proc.poll() is not None:
                break
        out, _ = proc.communicate(timeout=60)
    finally:
        os.close(master)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0
    assert b"replaying [" in shown and b"\x1b[K" in shown  # drawn, then erased
    assert b"replaying [" not in out


# ---------------------------------------------------------------------------------------------
# Properties


@pytest.mark.parametrize("kind", ["text", "bytes"])
def test_reading_any_line_gives_a_line_or_a_kind(kind: str) -> None:
    from hypothesis import given
    from hypothesis import strategies as st

    from cedarlite.impact import logline
    from cedarlite.impact.logline import BAD_KINDS, LogLine, read_line

    scalars = st.none() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5)
    fields = st.fixed_dictionaries(
        {"v": st.sampled_from([1, 2, 0, "1", True, 1.0]), "tool": st.text(max_size=5),
         "params": st.recursive(scalars, lambda c: st.lists(c, max_size=3)
                                | st.dictionaries(st.text(max_size=3), c, max_size=3)),
         "decision": st.sampled_from(["allow", "block", "ask", "x"]),
         "context": st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)},
        optional={"denied_reason": st.none() | st.text(max_size=3),
                  "redacted": st.lists(st.sampled_from(["/params/a", "x", 3]), max_size=2),
                  "approvals": st.lists(st.none() | st.dictionaries(
                      st.just("plugin"), st.none() | st.integers() | st.just("p"))),
                  "policies": st.lists(st.sampled_from(["p", 1])),
                  "params_rewritten": st.sampled_from([True, False, None, 1]),
                  "latency_us": st.integers(-(10**30), 10**30),
                  "session": st.none() | st.integers() | st.text(max_size=3)},
    )  # fmt: skip
    lines = (
        st.text(max_size=200)
        if kind == "text"
        else st.binary(max_size=200).map(lambda b: b.decode("utf-8", "surrogateescape"))
    )
    candidates = st.one_of(
        lines,
        fields.map(json.dumps),
        fields.map(lambda f: json.dumps(f)[:-3]),
        # A key given twice (the last one counts), a text with escapes of lone surrogates.
        st.tuples(fields, fields).map(
            lambda ff: json.dumps(ff[0])[:-1] + ", " + json.dumps(ff[1])[1:]
        ),
        fields.map(lambda f: json.dumps({**f, "tool": "\ud800" + str(f["tool"])})),
    )

    def standard(text: str) -> LogLine | logline.BadLine:
        fast, logline._fast = logline._fast, None
        try:
            return read_line(text)
        finally:
            logline._fast = fast

    @given(candidates, st.booleans())
    def check(text: str, ended: bool) -> None:
        text += "\n" if ended else ""
        got = read_line(text)
        assert isinstance(got, LogLine) or got.kind in BAD_KINDS
        # The fast path (msgspec, when installed) reads every line as the standard one does,
        # and keeps the texts of params and context as written (they decode to the values).
        if isinstance(got, LogLine) and got.params_text is not None:
            assert got.context_text is not None
            assert json.loads(got.params_text) == got.params
            assert json.loads(got.context_text) == got.context
            got = got._replace(params_text=None, context_text=None)
        assert repr(got) == repr(standard(text))

    check()
    assert logline._fast is not None  # the test extra installs msgspec


class _Recorder:
    """One guard of the old policy for the whole test, appending to one log; each example
    replays the lines it added."""

    def __init__(self, folder: Path) -> None:
        self.log = folder / "all.jsonl"
        self.folder = folder
        self.guard = Guard(CONFIG, TOOLS, {"agentId": "main"}, rules=RULES, decision_log=self.log)
        self.count = 0

    def replay(self, calls: list[tuple[str, dict]]) -> ReplayReport:
        start = self.log.stat().st_size if self.log.exists() else 0
        for tool, params in calls:
            self.guard.before_tool_call(tool, params, {"toolCallId": "x"})
        self.count += 1
        path = self.folder / f"example-{self.count}.jsonl"
        with open(self.log, "rb") as f:
            f.seek(start)
            path.write_bytes(f.read())
        return sync(path)


def test_replaying_a_log_against_the_policy_that_wrote_it_changes_nothing(
    tmp_path: Path,
) -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    recorder = _Recorder(tmp_path)
    words = st.sampled_from(["rm", "-rf", "git", "push", "ls", "curl", "sk-abcdefghijkl", "Bearer",
                             "abcdefghijklmnop", "ghp_0123456789ab", "x", "|", "*"])  # fmt: skip
    command = st.lists(words, min_size=1, max_size=5).map(" ".join)
    value = st.one_of(command, st.integers(-5, 5), st.booleans(), st.none())
    params = st.dictionaries(
        st.sampled_from(["command", "path", "token", "api_key", "env", "repo", "title"]),
        value | st.dictionaries(st.sampled_from(["HOME", "GITHUB_TOKEN"]), command, max_size=2),
        max_size=4,
    )
    tool = st.sampled_from(["exec", "read", "write", "browser", "github__create_issue",
                            "deploy", "frobnicate"])  # fmt: skip

    @settings(max_examples=25)
    @given(st.lists(st.tuples(tool, params), min_size=1, max_size=6))
    def check(calls: list[tuple[str, dict]]) -> None:
        report = recorder.replay(calls)
        assert report.changed == 0, report.examples
        assert report.lines == len(calls) == report.compared + report.undecidable

    check()
    recorder.guard.close()


# ---------------------------------------------------------------------------------------------
# The worker's memo keys


def _json_values():
    from hypothesis import strategies as st

    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-3, 3),
        st.sampled_from([0.0, -0.0, 1.0, 1.5]),
        st.sampled_from(["", "1", "true", "a"]),
    )
    return st.recursive(
        scalars,
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3)
        ),
        max_leaves=8,
    )


def test_memo_keys_are_the_json_texts() -> None:
    from cedarlite.impact.logline import read_line
    from cedarlite.impact.worker import MEMO_TEXT, memo_text

    # As logged (the fast reader's bytes), else written again; never a Python equality
    # (True == 1 == 1.0 and 0.0 == -0.0 in Python, not in JSON or Cedar).
    line = read_line('{"v":1,"tool":"t","params":{"a" : true},"decision":"allow","context":{}}')
    assert memo_text(line.params_text, line.params) == b'{"a" : true}'
    keys = [memo_text(None, {"a": v}) for v in (True, 1, 1.0, 0.0, -0.0)]
    assert len(set(keys)) == len(keys)
    assert memo_text(None, "x" * MEMO_TEXT) is None  # longer than MEMO_TEXT: not a key
    assert memo_text(b"[" + b"0," * MEMO_TEXT + b"0]", None) is None
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    assert memo_text(None, deep) is None  # nested deeper than the encoder goes


def test_run_contexts_equal_in_python_but_not_in_json_get_their_own_guards(
    log: Path, tmp_path: Path
) -> None:
    # `"sandboxed": 1` is not `"sandboxed": true` (the strict guard refuses a number): the
    # guard and memo keys keep them apart, in either order.
    (line,) = [r for r in lines_of(log) if r["call_id"] == "ls"]
    lines = []
    for sandboxed in (True, 1, True, 1):
        lines.append({**line, "context": {**line["context"], "sandboxed": sandboxed}})
    path = tmp_path / "contexts.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    report = sync(path)
    ((message, count),) = report.rejected_runs.items()
    assert count == 2 and "sandboxed" in message
    assert report.transitions == {"allow->block": 2}
    assert report.unchanged == 2


def test_memoized_decisions_are_the_guards(tmp_path: Path) -> None:
    # The memo keys an offered call with valid arguments by the values of the arguments its
    # policies read (absent ones included), a call of a tool the run does not offer by its
    # name, anything else by its params: every answer must be the one a guard gives that call.
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from cedarlite import shipped
    from cedarlite.impact.worker import New, Replayer, ReplaySpec, memo_text

    rules = RULES + shipped.policy_text("exec-commands") + shipped.policy_text("paths")
    spec = ReplaySpec(CONFIG, TOOLS, rules)
    context = {"agentId": "main", "provider": "anthropic"}
    reference = Guard(CONFIG, TOOLS, context, rules=rules, session_store=MemorySessionStore())
    words = st.sampled_from(["rm", "-rf", "git", "push", "ls", "cat", "../x", "~/.ssh/id_rsa",
                             ".env", "a b", "|", "*", "diff", "src/a.py", "src/b.py", "--output",
                             "notes.md", "/etc/passwd"])  # fmt: skip
    text = st.lists(words, min_size=1, max_size=3).map(" ".join)
    value = st.one_of(text, st.integers(0, 1), st.booleans(), st.none(), st.lists(text, max_size=2))
    params = st.dictionaries(
        st.sampled_from(["command", "path", "content", "workdir", "repo", "title", "token"]),
        value,
        max_size=4,
    )
    tool = st.sampled_from(["exec", "read", "write", "github__create_issue", "deploy", "Exec",
                            "frobnicate"])  # fmt: skip

    @settings(max_examples=60, deadline=None)
    @given(st.lists(st.tuples(tool, params), min_size=1, max_size=12), st.randoms())
    def check(calls: list[tuple[str, dict]], rng) -> None:
        calls = calls + [(t, {**p, "title": "other"}) for t, p in calls]  # unread: memo hits
        rng.shuffle(calls)
        replayer = Replayer(spec)
        guard, number = replayer.guard(memo_text(None, context), context)
        assert isinstance(guard, Guard)
        for name, p in calls:
            # Keys as the fast reader makes them (texts as logged) or as the standard one.
            text = json.dumps(p).encode() if rng.random() < 0.5 else None
            got = replayer.decide(guard, number, name, p, memo_text(text, p))
            out = reference.before_tool_call(name, p)
            assert got == New(out.action, out.denied_reason, out.policies, out.reason), (name, p)

    check()
    replayer = Replayer(spec)
    guard, number = replayer.guard(memo_text(None, context), context)
    assert isinstance(guard, Guard)
    decided = []
    decide = guard.decide_arguments
    guard.decide_arguments = lambda *call: decided.append(call) or decide(*call)
    calls = [("exec", {"command": "ls", "title": t}) for t in ("a", "b", "c", "a")]
    calls += [("exec", {"command": "ls", "workdir": "/srv"}), ("frobnicate", {"x": 1})]
    calls += [("frobnicate", {"x": 2})]  # not offered: by its name
    for name, p in calls:  # the exec rules read the command alone
        replayer.decide(guard, number, name, p, memo_text(None, p))
    assert [c[0] for c in decided] == ["exec", "exec", "frobnicate"]  # `workdir` is read
    # The arguments converted for the memo key are the ones decided: not converted again.
    assert decided[0][2][1]["command"] == "ls" and decided[2][2] is None
    # The rules read the command only through `like` and `==` tests: commands that pass the
    # same tests are decided once (the first), one that passes others again.
    decided.clear()
    for command in ("git diff a.py", "git diff b.py", "git diff --output=x", "git diff c.py"):
        replayer.decide(guard, number, "exec", {"command": command}, None)
    assert [c[2][1]["command"] for c in decided] == ["git diff a.py", "git diff --output=x"]


def test_tools_whose_calls_never_repeat_stop_getting_exact_entries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cedarlite.impact import worker
    from cedarlite.impact.worker import New, Replayer, ReplaySpec, memo_text

    monkeypatch.setattr(worker, "EXACT_TRIAL", 40)
    replayer = Replayer(ReplaySpec(CONFIG, TOOLS, RULES))
    context = {"agentId": "main"}
    guard, number = replayer.guard(memo_text(None, context), context)
    assert isinstance(guard, Guard)
    calls = [("exec", {"command": "ls", "extra": str(i)}) for i in range(100)]  # never again
    calls += [("Exec", {"command": "ls"})] * 100  # the same call over and over
    for name, params in calls:
        out = guard.before_tool_call(name, params)
        got = replayer.decide(guard, number, name, params, memo_text(None, params))
        assert got == New(out.action, out.denied_reason, out.policies, out.reason)
    exact = [key for key in replayer._memo if len(key) == 3]
    assert sum(1 for key in exact if key[1] == "exec") == 40
    assert sum(1 for key in exact if key[1] == "Exec") == 1
    assert replayer._exact_use == {"exec": [40, 0], "Exec": [1, 99]}


def test_guard_cedar_arguments() -> None:
    guard = Guard(CONFIG, TOOLS, {"agentId": "main"}, rules=RULES)
    assert guard.cedar_arguments("frobnicate", {}) is None  # not offered
    info, arguments = guard.cedar_arguments("Exec", {"command": "ls", "extra": "x"})
    assert info.name == "exec" and arguments["command"] == "ls"
    assert guard.cedar_arguments("exec", {"command": 5})[1] is None  # not the schema
    assert guard.cedar_arguments("exec", {"command": float("nan")})[1] is None  # not JSON
    assert guard.before_tool_call("exec", {"command": 5}).denied_reason == "invalid-arguments"


def test_guard_decide_arguments_is_before_tool_call(tmp_path: Path) -> None:
    from cedarlite import shipped

    rules = RULES + shipped.policy_text("exec-commands")
    plain = Guard(CONFIG, TOOLS, {"agentId": "main"}, rules=rules)
    logged = Guard(CONFIG, TOOLS, {"agentId": "main"}, rules=rules,
                   decision_log=tmp_path / "log.jsonl")  # fmt: skip
    calls = [("exec", {"command": "ls"}), ("exec", {"command": "rm -rf /"}),
             ("exec", {"command": 5}), ("Exec", {"command": "git status"}),
             ("frobnicate", {}), ("read", {"path": "~/.ssh/id_rsa"})]  # fmt: skip
    for guard in (plain, logged):
        for tool, params in calls:
            found = guard.cedar_arguments(tool, params)
            got = guard.decide_arguments(tool, params, found)
            want = guard.before_tool_call(tool, params)
            assert got == want, (tool, params)
    # With a decision log the call goes through before_tool_call: it is logged.
    assert len((tmp_path / "log.jsonl").read_text().splitlines()) == 2 * len(calls)
    logged.close()


def test_block_spans_read_every_line_once(tmp_path: Path) -> None:
    import io

    from hypothesis import given
    from hypothesis import strategies as st

    from cedarlite.impact.driver import _BlockLines, _read_block, block_spans

    path = tmp_path / "log.jsonl"

    @given(
        st.lists(st.binary(max_size=12).map(lambda b: b.replace(b"\n", b"")), max_size=30),
        st.booleans(),
        st.integers(1, 40),
        st.integers(1, 4),
    )
    def check(lines: list[bytes], ended: bool, blocksize: int, workers: int) -> None:
        data = b"\n".join(lines) + (b"\n" if ended and lines else b"")
        path.write_bytes(data)
        spans = block_spans(len(data), blocksize, workers * blocksize)
        assert [o for o, _ in spans] == sorted({o for o, _ in spans})
        assert sum(n for _, n in spans) == len(data)
        assert all(n <= blocksize for _, n in spans)
        read = [line for s in spans for line in _BlockLines(_read_block(str(path), *s))]
        text = data.decode("utf-8", "surrogateescape")
        assert read == list(io.StringIO(text, newline="\n"))

    check()
    # The last `workers * blocksize` bytes in quarter blocks.
    mib = 1024 * 1024
    spans = block_spans(100 * mib, 16 * mib, 32 * mib)
    assert [n // mib for _, n in spans] == [16] * 4 + [4] * 9


def test_the_default_block_size_balances_the_workers(tmp_path: Path) -> None:
    from cedarlite.impact.driver import BLOCKSIZE, MIN_BLOCKSIZE, auto_blocksize

    big = tmp_path / "big.jsonl"
    with open(big, "wb") as f:
        f.truncate(64 * 1024 * 1024)
    small = tmp_path / "small.jsonl.gz"
    small.write_bytes(b"x" * 1000)  # compressed: one streamed partition, not counted
    assert auto_blocksize([str(big)], 1) == 4 * 1024 * 1024  # 16 partitions
    assert auto_blocksize([str(big)], 2) == 2 * 1024 * 1024
    assert auto_blocksize([str(big), str(small)], 64) == MIN_BLOCKSIZE
    with open(big, "wb") as f:
        f.truncate(1024 * 1024 * 1024)
    assert auto_blocksize([str(big), str(tmp_path / "gone.jsonl")], 2) == BLOCKSIZE


def test_own_worker_processes_freeze_what_a_partition_leaves(log: Path) -> None:
    import gc

    from cedarlite.impact import worker
    from cedarlite.impact.worker import ReplaySpec, forget_replayers, replay_partition

    lines = [(line, str(log)) for line in log.read_text().splitlines(keepends=True)]
    spec = ReplaySpec(CONFIG, TOOLS, RULES)
    gc.unfreeze()
    replay_partition(lines, spec)
    assert gc.get_freeze_count() == 0  # not a process of ours: the collector is left alone
    try:
        worker.own_process()
        replay_partition(lines, spec)
        assert gc.get_freeze_count() > 0  # the guards and memo: out of the collector's way
        forget_replayers()  # dropped: their cycles, if any, collectable again
        assert gc.get_freeze_count() == 0
        # A run context more than GUARDS drops the oldest guard: the partition collects
        # before it freezes again (a dropped guard's cycles are never frozen).
        replay_partition(lines, spec)
        collections = gc.get_stats()[2]["collections"]
        rep = worker.replayer(spec)
        for n in range(worker.GUARDS + 1):
            rep.guard(f"context {n}".encode(), {"agentId": f"a{n}"})
        assert gc.get_freeze_count() == 0 and worker._thawed
        replay_partition(lines[:1], spec)
        assert gc.get_stats()[2]["collections"] > collections and gc.get_freeze_count() > 0
    finally:
        worker._OWN_PROCESS = worker._thawed = False
        gc.unfreeze()
        forget_replayers()
