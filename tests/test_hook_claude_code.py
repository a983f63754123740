"""``cedarlite hook claude-code`` end to end: one hook process per event, as Claude Code runs it.

Every test starts the hook as a subprocess with a payload shaped exactly like Claude Code's
(agent-hosts.md §1.2, the tools of §1.5), reads its stdout and exit code, and stops what it
started by process id. The shipped example (examples/claude-code) is the configuration.
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hook_support import SESSION, pre_tool_use
from hypothesis import given
from hypothesis import strategies as st

from cedarlite.cli.main import _hook_parser, _top_parser
from cedarlite.guard.sqlite_store import SQLiteSessionStore
from cedarlite.hooks import Outcome
from cedarlite.hosts.claude_code import (
    DEFAULT_DEADLINE,
    HookConfig,
    HookError,
    HookOptions,
    _pre_answer,
)
from cedarlite.hosts.claude_code import run as hook_run
from cedarlite.hosts.mapping import CLAUDE_CODE_BUILTINS, CLAUDE_CODE_TOOLS

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "claude-code"
# Bytecode caches on, as for an installed package (some shells set PYTHONDONTWRITEBYTECODE,
# which would make every hook process compile every module again).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


@dataclass
class Answer:
    """One hook process: exit code, stdout (parsed when it is JSON), stderr."""

    code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> dict[str, Any]:
        assert self.code == 0, self.stderr
        value = json.loads(self.stdout)
        assert isinstance(value, dict) and set(value) == {"hookSpecificOutput"}
        return value["hookSpecificOutput"]

    @property
    def decision(self) -> str:
        out = self.output
        assert out["hookEventName"] == "PreToolUse"
        return str(out["permissionDecision"])

    @property
    def reason(self) -> str:
        return str(self.output["permissionDecisionReason"])


def start(args: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "cedarlite", "hook", "claude-code", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env or ENV,
    )


def finish(proc: subprocess.Popen[bytes], stdin: bytes | None, timeout: float = 60) -> Answer:
    try:
        out, err = proc.communicate(stdin, timeout=timeout)
    finally:
        if proc.poll() is None:  # stopped by its id, whatever happened
            proc.kill()
            proc.wait()
    return Answer(proc.returncode, out.decode(), err.decode())


def run(args: list[str], stdin: bytes | str, env: dict[str, str] | None = None) -> Answer:
    data = stdin.encode() if isinstance(stdin, str) else stdin
    return finish(start(args, env), data)


@dataclass
class Project:
    """A project with the example's .claude/ files and a private state directory."""

    root: Path
    state: Path

    @property
    def config(self) -> Path:
        return self.root / ".claude" / "cedarlite.json"

    @property
    def rules(self) -> tuple[str, ...]:
        return (
            "cedarlite:exec-commands",
            "cedarlite:paths",
            str(self.root / ".claude/rules.cedar"),
        )

    def args(self, *extra: str, config: Path | None = None) -> list[str]:
        rules = [arg for r in self.rules for arg in ("--rules", r)]
        return [
            "--config",
            str(config or self.config),
            *rules,
            "--state-dir",
            str(self.state),
            *extra,
        ]

    def event(self, tool: str, tool_input: Any, **fields: Any) -> str:
        """A PreToolUse payload as Claude Code writes it."""
        return json.dumps(pre_tool_use(str(self.root), tool, tool_input, **fields))

    def hook(self, tool: str, tool_input: Any, *extra: str, **fields: Any) -> Answer:
        return run(self.args(*extra), self.event(tool, tool_input, **fields))


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    root = tmp_path_factory.mktemp("app")
    (root / ".claude").mkdir()
    for name in ("cedarlite.json", "rules.cedar"):
        shutil.copy(EXAMPLE / name, root / ".claude" / name)
    p = Project(root, root.parent / (root.name + "-state"))
    # Installing checks the configuration and builds the guard the first calls use.
    installed = run([*p.args(), "--print-settings"], b"")
    assert installed.code == 0, installed.stderr
    yield p


def parallel(jobs: list[Any], work: Any) -> list[Any]:
    with ThreadPoolExecutor(max_workers=3) as pool:
        return list(pool.map(work, jobs))


# ---------------------------------------------------------------------------------------------
# Every built-in tool, as Claude Code sends it

A = "/app"  # replaced by the project's root


def builtin_calls(root: str) -> list[tuple[str, dict[str, Any], str, str]]:
    """(tool, tool_input, decision, text the reason contains)."""
    calls = [
        ("Bash", {"command": "git status", "description": "Show status"}, "allow", ""),
        ("Bash", {"command": "rm -rf /", "timeout": 120000}, "deny", "exec.dangerous"),
        ("Bash", {"command": "python -m pytest -q", "run_in_background": True}, "allow", ""),
        ("Read", {"file_path": f"{A}/src/app.py", "offset": 1, "limit": 50}, "allow", ""),
        ("Read", {"file_path": "/home/u/.ssh/id_rsa"}, "deny", "fs.no-secrets"),
        ("Write", {"file_path": f"{A}/notes.md", "content": "# notes\n"}, "allow", ""),
        ("Write", {"file_path": "/etc/hosts", "content": "x"}, "deny", "fs.writes-in-workspace"),
        (
            "Edit",
            {"file_path": f"{A}/src/app.py", "old_string": "a", "new_string": "b"},
            "allow",
            "",
        ),
        (
            "MultiEdit",
            {
                "file_path": f"{A}/src/app.py",
                "edits": [
                    {"old_string": "a", "new_string": "b"},
                    {"old_string": "c", "new_string": "d", "replace_all": True},
                ],
            },
            "allow",
            "",
        ),
        (
            "MultiEdit",
            {
                "file_path": f"{A}/../../etc/passwd",
                "edits": [{"old_string": "a", "new_string": "b"}],
            },
            "deny",
            "Tool call blocked by policy fs.no-traversal",
        ),
        ("Glob", {"pattern": "**/*.py"}, "allow", ""),
        ("Glob", {"pattern": "*", "path": "/home/u/.ssh"}, "deny", "fs.no-secrets"),
        (
            "Grep",
            {"pattern": "TODO", "path": f"{A}/src", "output_mode": "content", "-n": True},
            "allow",
            "",
        ),
        ("WebFetch", {"url": "https://docs.python.org/3/", "prompt": "Summarize"}, "allow", ""),
        ("WebFetch", {"url": "http://example.com/", "prompt": "x"}, "deny", "web.https-only"),
        (
            "WebSearch",
            {"query": "cedar policy language", "allowed_domains": ["x.dev"]},
            "allow",
            "",
        ),
        (
            "Agent",
            {"description": "Explore", "prompt": "Find the tests", "subagent_type": "Explore"},
            "allow",
            "",
        ),
        ("Task", {"description": "Explore", "prompt": "Find the tests"}, "allow", ""),
        (
            "NotebookEdit",
            {"notebook_path": f"{A}/nb.ipynb", "new_source": "print(1)", "cell_id": "c1"},
            "allow",
            "",
        ),
        (
            "TodoWrite",
            {"todos": [{"content": "Write tests", "status": "pending", "activeForm": "Writing"}]},
            "allow",
            "",
        ),
        ("PowerShell", {"command": "Get-ChildItem"}, "deny", "removed by tools.profile"),
        (
            "AskUserQuestion",
            {"questions": [{"question": "Which?", "header": "Pick", "options": []}]},
            "allow",
            "",
        ),
        ("ExitPlanMode", {"plan": "1. Write tests"}, "allow", ""),
        ("EnterPlanMode", {}, "allow", ""),
        ("TaskStop", {"task_id": "t1"}, "allow", ""),
        ("KillShell", {"shell_id": "s1"}, "allow", ""),
        ("BashOutput", {"bash_id": "b1"}, "allow", ""),
        ("TaskOutput", {"task_id": "t1", "block": False}, "allow", ""),
        ("TaskCreate", {"subject": "Tests", "description": "Write them"}, "allow", ""),
        ("TaskGet", {"taskId": "1"}, "allow", ""),
        ("TaskUpdate", {"taskId": "1", "status": "completed"}, "allow", ""),
        ("TaskList", {}, "allow", ""),
        ("CronCreate", {"cron": "0 9 * * *", "prompt": "standup"}, "deny", "tools.profile"),
        ("CronDelete", {"id": "c1"}, "deny", "tools.profile"),
        ("CronList", {}, "deny", "tools.profile"),
        ("Skill", {"skill": "pdf"}, "deny", "tools.profile"),
        ("SlashCommand", {"command": "/review"}, "deny", "tools.profile"),
        ("LSP", {"operation": "hover", "filePath": f"{A}/a.py", "line": 1}, "allow", ""),
        ("ToolSearch", {"query": "github"}, "allow", ""),
        ("Monitor", {"command": "tail -f log"}, "deny", "tools.profile"),
        ("SendMessage", {"to": "agent-2", "message": "hi"}, "deny", "tools.profile"),
        ("EnterWorktree", {"name": "feature"}, "deny", "tools.profile"),
        ("ExitWorktree", {}, "deny", "tools.profile"),
        ("ListMcpResourcesTool", {}, "deny", "tools.profile"),
        ("ReadMcpResourceTool", {"server": "docs", "uri": "docs://x"}, "deny", "tools.profile"),
    ]
    as_text = json.dumps(calls).replace(f'"{A}/', json.dumps(root + "/")[:-1])
    return [tuple(c) for c in json.loads(as_text)]  # type: ignore[misc]


def check_builtins(calls: list[tuple[str, Any, str, str]], answers: list[Answer]) -> None:
    for (tool, tool_input, decision, text), answer in zip(calls, answers, strict=True):
        assert (tool, answer.decision) == (tool, decision), (tool_input, answer.reason)
        assert answer.reason.startswith("cedarlite: ")
        assert text in answer.reason, (tool, answer.reason)
        if decision == "allow":
            assert answer.reason.startswith("cedarlite: allowed by ")


# One hook process per call of a tool of each kind the mapping knows: the contract tools, each
# with an allowed and a refused call, and one tool of each other kind (lower-cased and
# allowed, lower-cased and not offered, remapped by the configuration).
IN_SUBPROCESSES = {
    "Bash", "Read", "Write", "Edit", "MultiEdit", "Glob", "Grep", "WebFetch", "WebSearch",
    "Agent", "TodoWrite", "NotebookEdit", "PowerShell", "CronCreate",
}  # fmt: skip


def test_every_kind_of_built_in_tool_in_hook_processes(project: Project) -> None:
    calls = [c for c in builtin_calls(str(project.root)) if c[0] in IN_SUBPROCESSES]
    check_builtins(calls, parallel(calls, lambda c: project.hook(c[0], c[1])))


def test_every_built_in_tool(project: Project) -> None:
    """Every built-in tool of Claude Code 2.1, through the hook's own entry point in this
    process (the same code; the process boundary is what the other tests cross)."""
    calls = builtin_calls(str(project.root))
    assert {c[0] for c in calls} >= {*CLAUDE_CODE_TOOLS, *CLAUDE_CODE_BUILTINS}
    check_builtins(calls, [in_process(project, project.event(c[0], c[1])) for c in calls])


def in_process(project: Project, event: str) -> Answer:
    """The hook's entry point, in this process (same code as the command, no process)."""
    options = HookOptions(
        str(project.config),
        project.rules,
        str(project.state),
        deadline=600,  # in this process: its watchdog must never fire
    )
    out, err = io.StringIO(), io.StringIO()
    code = hook_run(options, io.BytesIO(event.encode()), out, err)
    return Answer(code, out.getvalue(), err.getvalue())


def test_mcp_tools_and_unknown_tools(project: Project) -> None:
    cases = [
        ("mcp__github__create_issue", {"repo": "acme/app", "title": "Bug"}, "allow", ""),
        (
            "mcp__github__create_issue",
            {"repo": "evil/app", "title": "Bug"},
            "deny",
            "Issues may only be filed in acme/* repositories. (policy github.issues-in-acme)",
        ),
        # Its schema types `repo`: a number is refused before any rule sees it.
        ("mcp__github__create_issue", {"repo": 5, "title": "t"}, "deny", "expected a string"),
        (
            "mcp__github__delete_repo",
            {"repo": "acme/app"},
            "deny",
            "removed by tools.deny: github__delete_*",
        ),
        # Known only when called; a rule names it: it asks.
        (
            "mcp__github__merge_pull_request",
            {"number": 7},
            "ask",
            "Claude wants to merge a pull request. (policy github.merge-asks)",
        ),
        ("mcp__brave-search__brave_web_search", {"query": "x"}, "allow", ""),
        ("FancyNewTool", {"x": 1}, "deny", "Tool fancynewtool is not available in this run"),
    ]
    answers = parallel(cases, lambda c: project.hook(c[0], c[1], mcp_server={"name": "github"}))
    for (tool, _, decision, text), answer in zip(cases, answers, strict=True):
        assert (tool, answer.decision) == (tool, decision), answer.reason
        assert text in answer.reason, answer.reason


def test_path_spellings_and_working_directories_hide_no_secret(project: Project) -> None:
    """`//`, `/./` and `..` spell the same file; the working directory does not make `/etc/shadow`
    a harmless `shadow` (finding 5). Every tool with a path refuses `..`."""
    cases = [
        # An MCP tool without schema: its string arguments are what the path rules read.
        ("mcp__filesystem__read_text_file", {"path": "/home/u/.ssh/id_rsa"}, None, "fs.no-secrets"),
        ("mcp__filesystem__read_text_file", {"path": "/home/u/app/.env"}, None, "fs.no-secrets"),
        ("Read", {"file_path": "//etc/shadow"}, None, "fs.no-secrets"),
        ("Read", {"file_path": "/./etc/shadow"}, None, "fs.no-secrets"),
        ("Read", {"file_path": "//proc/self/root/etc/shadow"}, None, "fs.no-secrets"),
        ("Grep", {"pattern": "root", "path": "//etc/shadow"}, None, "fs.no-secrets"),
        ("Grep", {"pattern": "root", "path": "/usr/../etc"}, None, "fs.no-secrets"),
        ("Glob", {"pattern": "*", "path": "src/../.."}, None, "fs.no-traversal"),
        ("Read", {"file_path": "/etc/shadow"}, "/etc", "fs.no-secrets"),
        ("Read", {"file_path": "shadow"}, "/etc", "fs.no-secrets"),
        ("Read", {"file_path": "/proc/self/environ"}, "/proc/self", "fs.no-secrets"),
        ("Read", {"file_path": "/home/u/.aws/credentials"}, "/home/u/.aws", "fs.no-secrets"),
        ("LS", {"path": "../.."}, None, "fs.no-traversal"),
        ("mcp__fs__read_file", {"path": "//etc//shadow"}, None, "fs.no-secrets"),
        ("mcp__fs__list_directory", {"path": "/srv/../etc"}, None, "fs.no-traversal"),
    ]
    config = project.root / ".claude" / "ls.json"
    data = json.loads(project.config.read_text())
    data["config"]["tools"]["alsoAllow"].append("ls")
    config.write_text(json.dumps(data))
    options = HookOptions(str(config), project.rules, str(project.state), deadline=600)
    for tool, tool_input, cwd, policy in cases:
        event = project.event(tool, tool_input, cwd=cwd or str(project.root))
        out, err = io.StringIO(), io.StringIO()
        hook_run(options, io.BytesIO(event.encode()), out, err)
        answer = Answer(0, out.getvalue(), err.getvalue())
        assert (tool, tool_input, answer.decision) == (tool, tool_input, "deny"), answer.reason
        assert policy in answer.reason, (tool, tool_input, answer.reason)
    # Ordinary files, however spelled: allowed (one in a hook process).
    ok = project.hook("Read", {"file_path": f"{project.root}/./src//app.py"})
    assert ok.decision == "allow", ok.reason
    event = project.event("mcp__filesystem__read_text_file", {"path": "/home/u/app/src/a.py"})
    out = io.StringIO()
    hook_run(options, io.BytesIO(event.encode()), out, io.StringIO())
    assert Answer(0, out.getvalue(), "").decision == "allow", out.getvalue()


def test_the_agent_cannot_rewrite_what_guards_it(project: Project, tmp_path: Path) -> None:
    """Writes to the hook's configuration, rules, state and to Claude Code's settings files
    are denied, whatever the rules say, with a reason that says a person must make them
    (finding 4)."""
    root = project.root
    link = tmp_path / "innocent.json"
    link.symlink_to(project.config)
    edit = {"old_string": '"deny"', "new_string": '"nodeny"'}
    cases = [
        ("Edit", {"file_path": str(project.config), **edit}, "`--config`"),
        ("Edit", {"file_path": ".claude/cedarlite.json", **edit}, "`--config`"),
        ("MultiEdit", {"file_path": str(project.config), "edits": [edit]}, "`--config`"),
        ("Write", {"file_path": f"{root}/.claude/rules.cedar", "content": ""}, "`--rules`"),
        ("Write", {"file_path": f"{root}//.claude/./rules.cedar", "content": ""}, "`--rules`"),
        ("Write", {"file_path": str(link), "content": "{}"}, "`--config`"),
        (
            "Write",
            {"file_path": f"{root}/.claude/settings.local.json", "content": "{}"},
            "settings",
        ),
        ("Edit", {"file_path": f"{root}/.claude/settings.json", **edit}, "settings"),
        ("Write", {"file_path": "/home/u/.claude/settings.json", "content": "{}"}, "settings"),
        ("Write", {"file_path": f"{root}/.CLAUDE/Settings.JSON", "content": "{}"}, "settings"),
        (
            "NotebookEdit",
            {"notebook_path": f"{root}/.claude/settings.json", "new_source": "x"},
            "settings",
        ),
        (
            "Write",
            {"file_path": f"{project.state}/guards/x.pickle", "content": "x"},
            "state directory",
        ),
        (
            "mcp__filesystem__write_file",
            {"path": str(project.config), "content": "{}"},
            "`--config`",
        ),
        (
            "mcp__filesystem__move_file",
            {"source": "/tmp/x.json", "destination": f"{root}/.claude/settings.json"},
            "settings",
        ),
    ]
    log = project.root / "decisions.jsonl"
    options = HookOptions(
        str(project.config), project.rules, str(project.state), str(log), deadline=600
    )
    for tool, tool_input, what in cases:
        out = io.StringIO()
        event = project.event(tool, tool_input)
        hook_run(options, io.BytesIO(event.encode()), out, io.StringIO())
        answer = Answer(0, out.getvalue(), "")
        assert (tool, answer.decision) == (tool, "deny"), (tool_input, answer.reason)
        assert what in answer.reason and "a person must edit it" in answer.reason, answer.reason
    # Each refusal is in the decision log, and a replay does not compare it with a policy.
    from cedarlite.impact.logline import read_line
    from cedarlite.impact.worker import old_decision

    logged = [read_line(line) for line in log.read_text().splitlines()]
    assert len(logged) == len(cases)
    for line, (_, _, what) in zip(logged, cases, strict=True):
        assert (line.decision, line.denied_reason) == ("block", "host"), line
        assert what in line.reason and "a person must edit it" in line.reason
        assert old_decision(line) == (None, "hook")
    # Reading them, and writing other files of .claude/, is ordinary work.
    for tool, tool_input in [
        ("Read", {"file_path": str(project.config)}),
        ("Write", {"file_path": f"{root}/.claude/notes.md", "content": "x"}),
        ("mcp__filesystem__read_text_file", {"path": "/home/u/app/src/a.py"}),
    ]:
        out = io.StringIO()
        hook_run(options, io.BytesIO(project.event(tool, tool_input).encode()), out, io.StringIO())
        assert Answer(0, out.getvalue(), "").decision == "allow", (tool, out.getvalue())
    # And in a hook process, as Claude Code runs it.
    answer = project.hook("Edit", {"file_path": str(project.config), **edit})
    assert answer.decision == "deny" and "the hook's configuration" in answer.reason


def test_bad_input_is_a_blocking_error(project: Project) -> None:
    good = json.loads(project.event("Bash", {"command": "ls"}))
    cases: list[tuple[bytes, str]] = [
        (b"", "empty: expected one JSON object"),
        (b"   \n", "empty: expected one JSON object"),
        (b"not json", "<hook input>:1:1: invalid JSON"),
        (b'{"hook_event_name": "PreToolUse", "tool_name": ', "invalid JSON"),
        (b"[1, 2]", "expected one JSON object"),
        (b'"PreToolUse"', "expected one JSON object"),
        (b"\xff\xfe{}", "not UTF-8"),
        (b'{"a": 1, "a": 2}', "duplicate key `a`"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (json.dumps({**good, "hook_event_name": "Stop"}).encode(), 'unsupported hook event "Stop"'),
        (json.dumps({k: v for k, v in good.items() if k != "hook_event_name"}).encode(), "none"),
    ]
    answers = parallel(cases, lambda c: run(project.args(), c[0]))
    for (_, text), answer in zip(cases, answers, strict=True):
        assert answer.code == 2 and answer.stdout == "", answer
        assert answer.stderr.startswith("cedarlite: blocked: ") and text in answer.stderr
        assert "Traceback" not in answer.stderr


def test_input_too_large_is_refused(project: Project) -> None:
    answer = run(project.args(), b" " * (32 * 1024 * 1024 + 1))
    assert answer.code == 2 and "larger than 32 MiB" in answer.stderr


def test_malformed_calls_are_denied(project: Project) -> None:
    cases = [
        ("Bash", "git status", "arguments of tool `exec` must be a JSON object"),
        ("Bash", ["git", "status"], "must be a JSON object"),
        ("Bash", None, "argument `command` of tool `exec` is required"),
        ("Read", 5, "must be a JSON object"),
        ("Bash", {"command": 7}, "expected a string"),
        ("Read", {"file_path": "a", "path": "b"}, "`file_path` and `path` are both `path`"),
        ("MultiEdit", {"file_path": "a", "edits": []}, "`edits` must be a non-empty array"),
        (12, {}, "`tool_name` must be a non-empty string"),
        ("", {}, "`tool_name` must be a non-empty string"),
        ("x" * 1000, {}, "longer than 256 characters"),
    ]
    # Two in hook processes (arguments that are not an object, a name that is not a string),
    # all of them through the hook's entry point.
    answers = parallel([cases[0], cases[7]], lambda c: project.hook(c[0], c[1]))
    answers += [
        in_process(project, project.event(tool, tool_input)) for tool, tool_input, _ in cases
    ]
    for (_, _, text), answer in zip([cases[0], cases[7], *cases], answers, strict=True):
        assert answer.decision == "deny" and text in answer.reason, answer.reason


def test_200_kb_commands_are_decided(project: Project) -> None:
    long_ls = "ls " + "a" * 200_000
    cases = [(long_ls, "allow", ""), (long_ls + " ; rm -rf /", "deny", "exec.no-chaining")]
    started = time.monotonic()
    answers = parallel(cases, lambda c: project.hook("Bash", {"command": c[0]}))
    assert time.monotonic() - started < 30
    for (_, decision, text), answer in zip(cases, answers, strict=True):
        assert answer.decision == decision and text in answer.reason


def test_post_tool_use_records_and_prints_nothing(project: Project) -> None:
    post = project.event(
        "Bash",
        {"command": "git status"},
        hook_event_name="PostToolUse",
        tool_response={"stdout": "clean", "stderr": "", "interrupted": False},
        duration_ms=12,
    )
    failure = project.event(
        "Bash",
        {"command": "git status"},
        hook_event_name="PostToolUseFailure",
        error="exit 128",
        is_interrupt=False,
    )
    for answer in parallel([post, failure], lambda e: run(project.args(), e)):
        assert (answer.code, answer.stdout) == (0, ""), answer.stderr


def loop_config(tmp_path: Path) -> Path:
    path = tmp_path / "loops.json"
    config = json.loads((EXAMPLE / "cedarlite.json").read_text())
    config["config"]["tools"]["loopDetection"] = {
        "enabled": True,
        "warningThreshold": 1,
        "criticalThreshold": 2,
        "globalCircuitBreakerThreshold": 3,
    }
    path.write_text(json.dumps(config))
    return path


def test_loop_detection_across_hook_processes(project: Project, tmp_path: Path) -> None:
    """Each call is its own process; the session's history lives in the state directory."""
    args = project.args(config=loop_config(tmp_path))
    session = {"session_id": "loop-session"}
    response = {"stdout": "On branch main\nnothing to commit", "stderr": "", "interrupted": False}
    decisions = []
    for i in range(5):
        call = {**session, "tool_use_id": f"toolu_{i}"}
        pre = run(args, project.event("Bash", {"command": "git status"}, **call))
        decisions.append(pre.decision)
        if pre.decision != "allow":
            blocked = pre
            break
        post = project.event(
            "Bash",
            {"command": "git status"},
            hook_event_name="PostToolUse",
            tool_response=response,
            **call,
        )
        assert run(args, post).code == 0
    assert decisions == ["allow", "allow", "allow", "deny"]
    assert "no-progress outcomes 3 times" in blocked.reason and "circuit breaker" in blocked.reason
    # Another session is not affected.
    other = run(args, project.event("Bash", {"command": "git status"}, session_id="other"))
    assert other.decision == "allow"


def test_concurrent_hook_processes_share_one_state_dir(project: Project) -> None:
    events = [
        project.event(
            "Bash", {"command": f"ls dir{i}"}, session_id="busy", tool_use_id=f"toolu_c{i}"
        )
        for i in range(6)
    ]
    procs = [start(project.args()) for _ in events]  # all running at once
    answers = [finish(p, e.encode()) for p, e in zip(procs, events, strict=True)]
    assert [a.decision for a in answers] == ["allow"] * 6
    history = SQLiteSessionStore(project.state / "sessions.sqlite3").load("busy").loop.history
    assert sorted(e.call_id for e in history) == sorted(f"toolu_c{i}" for i in range(6))


def test_a_locked_state_database_denies_before_the_deadline(project: Project) -> None:
    holder = sqlite3.connect(project.state / "sessions.sqlite3", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        started = time.monotonic()
        answer = project.hook("Bash", {"command": "ls"}, "--deadline", "2")
        assert time.monotonic() - started < 30
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert answer.decision == "deny"
    assert "hook failed: OperationalError: database is locked" in answer.reason


def test_a_hung_input_is_denied_at_the_deadline(project: Project) -> None:
    proc = start(project.args("--deadline", "1"))
    try:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        proc.stdin.write(b'{"hook_event_name": "PreToolUse", ')  # and never more
        proc.stdin.flush()
        code = proc.wait(timeout=30)  # ends on its own, its stdin still open
        out, err = proc.stdout.read(), proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    assert code == 2 and out == b""
    assert b"no decision within the hook's deadline of 1 s" in err


def test_answers_carry_loop_warnings_for_claude() -> None:
    warned = Outcome("allow", "exec", {}, policies=("tools.permit",), warnings=("w1",))
    out = json.loads(_pre_answer([warned, warned]))["hookSpecificOutput"]
    assert out["permissionDecision"] == "allow" and out["additionalContext"] == "w1"
    blocked = Outcome("block", "edit", {}, "No.", "policy", ("p1",))
    out = json.loads(_pre_answer([warned, blocked]))["hookSpecificOutput"]
    assert out["permissionDecisionReason"] == "cedarlite: blocked: call 2 of 2: No. (policy p1)"
    asked = Outcome("ask", "edit", {}, "Sure?", None, ("a1",))
    out = json.loads(_pre_answer([asked, warned]))["hookSpecificOutput"]
    assert out["permissionDecision"] == "ask"
    assert out["permissionDecisionReason"] == "cedarlite: approval required: Sure? (policy a1)"


def test_decision_log(project: Project, tmp_path: Path) -> None:
    log = tmp_path / "decisions.jsonl"
    project.hook("Bash", {"command": "git status"}, "--decision-log", str(log))
    project.hook("Bash", {"command": "rm -rf /"}, "--decision-log", str(log))
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(e["tool"], e["decision"]) for e in lines] == [("exec", "allow"), ("exec", "block")]
    assert {e["session"] for e in lines} == {SESSION}
    assert {e["call_id"] for e in lines} == {"toolu_01ABCDEF"}
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    assert "exec.dangerous" in lines[1]["policies"]


def test_unsafe_state_directories_are_refused(project: Project, tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    link = tmp_path / "link"
    link.symlink_to(project.state)
    for directory, text in ((shared, "writable by others"), (link, "symbolic link")):
        args = [*project.args()[:-2], "--state-dir", str(directory)]
        answer = run(args, project.event("Bash", {"command": "ls"}))
        assert answer.decision == "deny" and text in answer.reason, answer.reason


def test_a_damaged_guard_entry_is_rebuilt(project: Project, tmp_path: Path) -> None:
    state = tmp_path / "state"
    args = [*project.args()[:-2], "--state-dir", str(state)]
    assert run(args, project.event("Bash", {"command": "ls"})).decision == "allow"
    entries = list((state / "guards").iterdir())
    assert len(entries) == 1 and stat.S_IMODE(entries[0].stat().st_mode) == 0o600
    entries[0].write_bytes(b"\x80\x05not a pickle")
    answer = run(args, project.event("Bash", {"command": "rm -rf /"}))
    assert answer.decision == "deny" and "exec.dangerous" in answer.reason


def test_configuration_mistakes_deny_with_their_place(project: Project, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"config": {"tools": {"profile": "coding",\n  "denny": ["exec"]}}}')
    answer = run(project.args(config=bad), project.event("Bash", {"command": "ls"}))
    assert answer.decision == "deny"
    assert f"{bad}:2:3: `tools.denny`" in answer.reason and "did you mean `deny`" in answer.reason
    missing = run(project.args(config=tmp_path / "none.json"), project.event("Read", {}))
    assert missing.decision == "deny" and "cannot read the configuration file" in missing.reason
    # --print-settings refuses it, on the spot (exit 3, with the caret snippet).
    installed = run([*project.args(config=bad), "--print-settings"], b"")
    assert installed.code == 3 and installed.stdout == ""
    assert f"{bad}:2:3" in installed.stderr and "^" in installed.stderr


def test_usage_errors_block(project: Project) -> None:
    answer = run(["--rules", "x.cedar"], project.event("Bash", {"command": "ls"}))
    assert answer.code == 2 and "--config" in answer.stderr
    # A missing or unknown host is a mistake of the hook's command line too (exit 1 would let
    # the call through).
    for words in ([], ["claude"]):
        proc = subprocess.run(
            [sys.executable, "-m", "cedarlite", "hook", *words],
            input=project.event("Bash", {"command": "ls"}).encode(),
            capture_output=True,
            env=ENV,
            timeout=60,
        )
        assert proc.returncode == 2 and b"HOST" in proc.stderr + proc.stdout, proc.stderr
    # Through the full parser too: a global option first, an abbreviated option.
    for words in (["--error-format", "json", "hook", "claude-code"], ["hook", "claude-code",
                  "--conf", str(project.root / "missing.json")]):  # fmt: skip
        proc = subprocess.run(
            [sys.executable, "-m", "cedarlite", *words],
            input=project.event("Bash", {"command": "ls"}).encode(),
            capture_output=True,
            env=ENV,
            timeout=60,
        )
        assert proc.returncode in (0, 2), proc.stderr
        assert proc.returncode == 2 or b'"deny"' in proc.stdout, proc.stdout


def test_print_settings_is_the_shipped_snippet(project: Project) -> None:
    env = {**ENV, "CLAUDE_PROJECT_DIR": str(project.root)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cedarlite",
            "hook",
            "claude-code",
            "--config",
            ".claude/cedarlite.json",
            "--rules",
            "cedarlite:exec-commands",
            "--rules",
            "cedarlite:paths",
            "--rules",
            ".claude/rules.cedar",
            "--print-settings",
        ],
        cwd=project.root,
        env={**env, "XDG_CACHE_HOME": str(project.state.parent / "xdg")},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    answer = finish(proc, None)
    assert answer.code == 0, answer.stderr
    printed = json.loads(answer.stdout)
    shipped = json.loads((EXAMPLE / "settings.json").read_text())
    python = printed["hooks"]["PreToolUse"][0]["hooks"][0]["command"].split(" -m ")[0]
    assert python == sys.executable
    assert json.loads(json.dumps(shipped).replace('"python3 -m', f'"{python} -m')) == printed
    pre = printed["hooks"]["PreToolUse"][0]
    assert pre["matcher"] == "*"
    assert pre["hooks"][0]["timeout"] == 10 and pre["hooks"][0]["onFailure"] == "block"


def test_the_shipped_settings_command_runs_through_a_shell(project: Project) -> None:
    """The snippet's command, as Claude Code runs it: through bash, $CLAUDE_PROJECT_DIR set."""
    command = json.loads((EXAMPLE / "settings.json").read_text())["hooks"]["PreToolUse"][0]
    command = command["hooks"][0]["command"]
    venv = str(Path(sys.executable).parent)
    env = {
        **ENV,
        "CLAUDE_PROJECT_DIR": str(project.root),
        "XDG_CACHE_HOME": str(project.state.parent / "xdg"),
        "PATH": venv + os.pathsep + ENV.get("PATH", ""),
    }
    if shutil.which("python3", path=env["PATH"]) is None:  # pragma: no cover
        pytest.skip("no python3 on PATH")
    results = []
    for tool_input in ({"command": "git status"}, {"command": "rm -rf /"}):
        proc = subprocess.Popen(
            ["bash", "-c", command],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=project.root,
        )
        results.append(finish(proc, project.event("Bash", tool_input).encode()).decision)
    assert results == ["allow", "deny"]


def test_the_readme_recipe(tmp_path: Path) -> None:
    """docs/hosts.md "Use with Claude Code": the recipe runs in a fresh project and prints what
    the page shows."""
    page = (ROOT / "docs" / "hosts.md").read_text(encoding="utf-8")
    section = page[page.index("## Use with Claude Code") :]
    recipe, after = section.split("```bash no-run\n", 1)[1].split("```\n", 1)
    shown = after.split("```text\n", 1)[1].split("```\n", 1)[0]
    project = tmp_path / "project"
    project.mkdir()
    env = {
        **ENV,
        "PATH": str(Path(sys.executable).parent) + os.pathsep + ENV.get("PATH", ""),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }
    proc = subprocess.Popen(
        ["bash", "-e", "-c", recipe.replace("path/to/cedarlite", str(ROOT))],
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    answer = finish(proc, None, timeout=120)
    assert answer.code == 0, answer.stderr
    assert answer.stdout == shown
    settings = json.loads((project / ".claude" / "settings.local.json").read_text())
    assert settings["hooks"]["PreToolUse"][0]["hooks"][0]["onFailure"] == "block"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"config": {}, "tool": []}', "1:16: error[E0912]: unknown key `tool`"),
        ('{"config": {}, "tools": {}}', "`tools` must be an array of tools"),
        ('{"config": {}, "tools": [{"pluginId": "x"}]}', "`tools[0]` must be a tool object"),
        ('{"config": {}, "context": []}', "`context` must be an object"),
        ('{"config": {}, "claudeCode": {"tool": {}}}', "unknown key `claudeCode.tool`"),
        ('{"config": {}, "claudeCode": {"tools": {"Bash": {}}}}', "Bash.tool`: expected"),
        ("[]", "a hook configuration must be a JSON object"),
        ('{"config": ', "invalid JSON"),
    ],
)
def test_configuration_files_are_checked(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "hook.json"
    path.write_text(text)
    with pytest.raises(HookError) as info:
        HookConfig.read(str(path))
    assert message in info.value.render() and str(path) in info.value.render()


def test_run_context_from_the_event(tmp_path: Path) -> None:
    path = tmp_path / "hook.json"
    path.write_text(
        json.dumps(
            {
                "config": {
                    "tools": {"profile": "coding"},
                    "agents": {
                        "list": [
                            {"id": "main", "default": True},
                            {"id": "reviewer", "tools": {"loopDetection": {"enabled": True}}},
                        ]
                    },
                }
            }
        )
    )
    config = HookConfig.read(str(path))
    assert config.run_context({}) == {"senderIsOwner": True}
    assert config.run_context({"agent_id": "a1", "agent_type": "reviewer"}) == {
        "senderIsOwner": True,
        "subagentDepth": 1,
        "agentId": "reviewer",
    }
    # An agent type the configuration does not list is the default agent.
    assert config.run_context({"agent_type": "Explore"}) == {"senderIsOwner": True}
    assert config.loops_for_some_agent()
    explicit = tmp_path / "explicit.json"
    explicit.write_text(json.dumps({"config": {}, "context": {"senderIsOwner": False}}))
    assert HookConfig.read(str(explicit)).run_context({}) == {"senderIsOwner": False}
    assert not HookConfig.read(str(explicit)).loops_for_some_agent()


# --- the command line -------------------------------------------------------------------------
# `python -m cedarlite hook claude-code ...` reads a plain command line itself (no argparse, a
# hook process per tool call) and leaves any other to the CLI's parser: where it reads one, it
# must read what the CLI's parser reads.


def parsed_by_the_cli(words: list[str]) -> HookOptions | str | None:
    """The options the CLI's argparse parser reads (``None``: it refuses the command line)."""
    parser, sub = _top_parser()
    _hook_parser(sub)
    try:
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            args = parser.parse_args(["hook", *words])
    except (SystemExit, Exception):  # a usage error (exit 2, or the CLI's own error), --help
        return None
    if args.print_settings:
        return "--print-settings"
    deadline = DEFAULT_DEADLINE if args.deadline is None else args.deadline
    return HookOptions(args.config, tuple(args.rules), args.state_dir, args.decision_log, deadline)


FLAGS = ["--config", "--rules", "--state-dir", "--decision-log", "--deadline"]
VALUES = st.sampled_from(
    ["c.json", "r.cedar", "cedarlite:paths", "", "x y", "2", "0", "-1", "1e9", "3600", "nan",
     "inf", " 7", "-x", "--config", "a=b"]
)  # fmt: skip
ODD = st.sampled_from(
    ["--print-settings", "--conf", "--rule", "-h", "--help", "--", "-", "--error-format",
     "json", "c.json", "claude-code", "--config=", "--deadline="]
)  # fmt: skip


@st.composite
def option(draw: st.DrawFn) -> list[str]:
    """One option as a command line may give it: ``--flag value``, ``--flag=value``, or an
    odd word."""
    if draw(st.integers(0, 9)) == 0:
        return [draw(ODD)]
    flag, value = draw(st.sampled_from(FLAGS)), draw(VALUES)
    return [f"{flag}={value}"] if draw(st.booleans()) else [flag, value]


COMMAND_LINES = st.lists(option(), max_size=7).map(
    lambda options: ["claude-code", *(word for o in options for word in o)]
)


@given(st.one_of(COMMAND_LINES, st.lists(ODD, max_size=4)))
def test_the_fast_command_line_reads_what_argparse_reads(words: list[str]) -> None:
    fast = HookOptions.from_argv(words)
    if fast is not None:
        assert parsed_by_the_cli(words) == fast


def test_the_installed_command_lines_take_the_fast_path() -> None:
    settings = json.loads((EXAMPLE / "settings.json").read_text())
    command = settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    words = command.replace('"$CLAUDE_PROJECT_DIR"', "/p").split()[4:]  # after `-m cedarlite hook`
    assert words[0] == "claude-code"
    fast = HookOptions.from_argv(words)
    assert fast is not None and fast == parsed_by_the_cli(words)
    assert fast.rules == ("cedarlite:exec-commands", "cedarlite:paths", "/p/.claude/rules.cedar")
    every = ["claude-code", "--config=c.json", "--rules", "a", "--state-dir", "s",
             "--decision-log", "l", "--deadline", "2.5", "--rules=b"]  # fmt: skip
    assert HookOptions.from_argv(every) == HookOptions("c.json", ("a", "b"), "s", "l", 2.5)
    # Anything else goes to the CLI's parser, which explains (or prints the help).
    for other in (["claude-code", "--help"], ["claude-code", "--conf", "c"], ["claude-code"]):
        assert HookOptions.from_argv(other) is None


def test_an_error_escaping_the_hook_process_blocks(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from cedarlite.hosts import claude_code

    class Exited(Exception):
        pass

    def broken(options: HookOptions) -> int:
        raise RuntimeError("can't start new thread")

    def exit_now(code: int) -> None:
        codes.append(code)
        raise Exited

    codes: list[int] = []
    monkeypatch.setattr(claude_code, "run", broken)
    monkeypatch.setattr(claude_code.os, "_exit", exit_now)
    try:
        with pytest.raises(Exited):
            claude_code.run_process(HookOptions("c.json"))
    finally:
        gc.enable()  # run_process turns it off for the rest of its (one-event) process
    assert codes == [2]
    assert (
        "cedarlite: blocked: internal error: RuntimeError: can't start" in capsys.readouterr().err
    )
