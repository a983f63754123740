"""Issue 23, items 6-8: what the decision log redacts (keys and every text field), strict
reading of ``loopDetection``, tool lists and Claude Code argument maps, and the replay of a
Claude Code hook's own log. Findings that came through the hook run the hook as a subprocess,
with payloads shaped as Claude Code sends them (docs/strictness-and-logs.md)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hook_support import pre_tool_use

from cedarlite.hooks import Guard, MemorySessionStore

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "claude-code"
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
TOKEN = "ghp_" + "Z" * 36
RULES = ("cedarlite:exec-commands", "cedarlite:paths")


def cedarlite(
    *args: str, stdin: str = "", cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """One cedarlite process (stopped by its id if it outlives the timeout)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "cedarlite", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
        cwd=cwd,
    )
    try:
        out, err = proc.communicate(stdin, timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project with the shipped example's .claude/ files."""
    root = tmp_path / "app"
    (root / ".claude").mkdir(parents=True)
    for name in ("cedarlite.json", "rules.cedar"):
        shutil.copy(EXAMPLE / name, root / ".claude" / name)
    return root


def hook_args(root: Path, *extra: str) -> list[str]:
    rules = [*RULES, str(root / ".claude" / "rules.cedar")]
    return [
        "hook",
        "claude-code",
        "--config",
        str(root / ".claude" / "cedarlite.json"),
        *(a for r in rules for a in ("--rules", r)),
        "--state-dir",
        str(root.parent / "state"),
        *extra,
    ]


def hook(root: Path, tool: str, tool_input: Any, *extra: str) -> dict[str, Any]:
    """A PreToolUse event through the hook process; its hookSpecificOutput."""
    event = pre_tool_use(str(root), tool, tool_input)
    done = cedarlite(*hook_args(root, *extra), stdin=json.dumps(event))
    assert done.returncode == 0, done.stderr
    out: dict[str, Any] = json.loads(done.stdout)["hookSpecificOutput"]
    return out


# ---------------------------------------------------------------------------------------------
# The decision log: keys and every text field are redacted


def test_hook_log_redacts_keys_and_reasons_that_quote_a_value(project: Path) -> None:
    log = project.parent / "decisions.jsonl"
    # A token as an object key (an MCP tool's free-form arguments).
    hook(project, "mcp__github__create_issue",
         {"repo": "acme/app", "title": "t", "labels": {TOKEN: "x"}},
         "--decision-log", str(log))  # fmt: skip
    # A token that an error message quotes: `host` is an enum, the message says the value.
    answer = hook(project, "Bash", {"command": "ls", "host": TOKEN}, "--decision-log", str(log))
    assert answer["permissionDecision"] == "deny"
    text = log.read_text()
    assert TOKEN not in text
    first, second = (json.loads(line) for line in text.splitlines())
    assert first["params"]["labels"] == {"[REDACTED]": "x"}
    assert "/params/labels/[REDACTED]" in first["redacted"]
    assert "[REDACTED]" in second["reason"] or any(
        "[REDACTED]" in e["message"] for e in second["errors"]
    )


def test_every_text_field_of_a_log_line_is_scrubbed(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    rules = """
    @id("no-tokens") @reason("commands may not hold ghp_ZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZ")
    forbid (principal, action == Action::"exec", resource) when { resource.command like "*ghp_*" };
    """
    guard = Guard(
        {"tools": {"profile": "coding"}},
        [{"name": "exec"}],
        {"senderIsOwner": True},
        rules=rules,
        decision_log=log,
        session_store=MemorySessionStore(),
    )
    guard.before_tool_call("exec", {"command": "ls", "host": TOKEN}, None)
    guard.before_tool_call("exec", {TOKEN: "x", "command": "ls", "n": [1]}, None)  # the walk
    guard.before_tool_call("exec", {TOKEN: "x", "command": "ls"}, None)  # the flat path
    guard.before_tool_call("exec", {"command": "echo ghp_" + "Y" * 36}, None)
    guard.close()
    text = log.read_text()
    assert TOKEN not in text and "ghp_" + "Y" * 36 not in text
    lines = [json.loads(line) for line in text.splitlines()]
    assert "[REDACTED]" in lines[0]["reason"]
    assert lines[1]["params"]["[REDACTED]"] == "x" and lines[2]["params"]["[REDACTED]"] == "x"
    assert lines[1]["redacted"] == lines[2]["redacted"] == ["/params/[REDACTED]"]
    assert lines[3]["reason"] == "commands may not hold [REDACTED]"


# ---------------------------------------------------------------------------------------------
# Strict reading: loopDetection, tool lists, Claude Code argument maps

LOOP_MISTAKES = [
    ({"enable": True}, "tools.loopDetection.enable", "did you mean `enabled`?"),
    ({"enabeld": True}, "tools.loopDetection.enabeld", "did you mean `enabled`?"),
    ({"enabled": "yes"}, "tools.loopDetection.enabled", "write `true`"),
    ({"enabled": 1}, "tools.loopDetection.enabled", "write `true`"),
    ({"enabled": "true"}, "tools.loopDetection.enabled", "write `true` without quotes"),
    (
        {"enabled": True, "detectors": {"pingpong": False}},
        "tools.loopDetection.detectors.pingpong",
        "did you mean `pingPong`?",
    ),
    (
        {"enabled": True, "detectors": {"genericRepeat": "off"}},
        "tools.loopDetection.detectors.genericRepeat",
        "write `false`",
    ),
    (
        {"warningThreshold": "10"},
        "tools.loopDetection.warningThreshold",
        "write `10` without quotes",
    ),
    ({"historySize": 2.5}, "tools.loopDetection.historySize", None),
    ({"criticalThreshold": 0}, "tools.loopDetection.criticalThreshold", None),
]


@pytest.mark.parametrize(("loops", "path", "hint"), LOOP_MISTAKES)
def test_loop_detection_mistakes_are_errors(loops: dict[str, Any], path: str, hint: str) -> None:
    from cedarlite.tools import ConfigError, lint_config

    config = {"tools": {"profile": "coding", "loopDetection": loops}}
    (finding,) = lint_config(config)
    assert (finding.path, finding.severity, finding.help) == (path, "error", hint)
    with pytest.raises(ConfigError, match=path.replace(".", r"\.")):
        Guard(config, [{"name": "exec"}], {})
    agent = {"agents": {"list": [{"id": "main", "tools": {"loopDetection": loops}}]}}
    (finding,) = lint_config(agent)
    assert finding.path == "agents.list[0]." + path


def test_good_loop_detection_settings_have_no_findings() -> None:
    from cedarlite.tools import lint_config

    loops = {
        "enabled": False,
        "historySize": 40,
        "warningThreshold": 5.0,
        "criticalThreshold": 8,
        "globalCircuitBreakerThreshold": 12,
        "detectors": {"genericRepeat": False, "knownPollNoProgress": True, "pingPong": True},
    }
    assert lint_config({"tools": {"loopDetection": loops}}) == ()


def test_tools_lint_cli_reports_loop_detection_and_tool_list_mistakes(tmp_path: Path) -> None:
    scenario = tmp_path / "scenario.json"
    scenario.write_text(
        '{"config": {"tools": {"profile": "coding",\n'
        '                      "loopDetection": {"enable": true}}},\n'
        ' "tools": [{"name": "exec"},\n'
        '           {"nam": "read"}]}\n'
    )
    done = cedarlite("tools", "lint", str(scenario))
    assert done.returncode == 3, done.stdout + done.stderr
    out = done.stdout
    assert "scenario.json:2:41: error[unknown-key]: `tools.loopDetection.enable`" in out
    assert "did you mean `enabled`?" in out
    assert "scenario.json:4:13: error[unknown-key]: `tools[1].nam`" in out
    assert "did you mean `name`?" in out
    assert "a tool needs a `name`" in out


def test_a_tool_without_a_name_never_makes_a_guard_with_no_tools() -> None:
    from cedarlite.tools import ConfigError

    with pytest.raises(ConfigError, match=r"tools\[0\]"):
        Guard({"tools": {"profile": "coding"}}, [{"nam": "read"}], {})
    with pytest.raises(ConfigError, match=r"did you mean `pluginId`\?"):
        Guard({}, [{"name": "x__y", "pluginid": "bundle-mcp"}], {})
    with pytest.raises(ConfigError, match=r"tools\[0\]\.optional"):
        Guard({}, [{"name": "x", "pluginId": "p", "optional": "true"}], {})


def _hook_config(project: Path, edit: Any) -> Path:
    data = json.loads((project / ".claude" / "cedarlite.json").read_text())
    edit(data)
    path = project / ".claude" / "edited.json"
    path.write_text(json.dumps(data, indent=2))
    return path


def _notebook(data: dict[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = data["claudeCode"]["tools"]["NotebookEdit"]
    return entry


MAP_MISTAKES = [
    # a path argument the path rules would never see
    (lambda d: _notebook(d).update(paths=["pth"]), "paths[0]", "did you mean `path`?"),
    (lambda d: _notebook(d).update(paths=["notebook_path"]), "renamed to `path`", "name `path`"),
    # a rename to a near miss: every call denied
    (
        lambda d: _notebook(d)["arguments"].update(new_source="contnet"),
        "`contnet` is not a parameter of `write`",
        "did you mean `content`?",
    ),
    (
        lambda d: d["claudeCode"]["tools"].update(
            NotebokEdit=d["claudeCode"]["tools"]["NotebookEdit"]
        ),
        "`NotebokEdit` is not a Claude Code tool",
        "did you mean `NotebookEdit`?",
    ),
    (
        lambda d: _notebook(d).update(argumnets=_notebook(d).pop("arguments")),
        "unknown key `argumnets`",
        "did you mean `arguments`?",
    ),
    (
        lambda d: d["config"]["tools"].update(loopDetection={"enabeld": True}),
        "tools.loopDetection.enabeld",
        "did you mean `enabled`?",
    ),
    (
        lambda d: d["tools"][0].update(pluginid=d["tools"][0].pop("pluginId")),
        "`tools[0].pluginid`",
        "did you mean `pluginId`?",
    ),
]


@pytest.mark.parametrize(("edit", "text", "hint"), MAP_MISTAKES)
def test_print_settings_refuses_hook_config_mistakes(
    project: Path, edit: Any, text: str, hint: str
) -> None:
    config = _hook_config(project, edit)
    args = hook_args(project, "--print-settings")
    args[args.index("--config") + 1] = str(config)
    done = cedarlite(*args)
    assert done.returncode in (1, 3), done.stdout
    assert text in done.stderr and hint in done.stderr, done.stderr
    assert "edited.json:" in done.stderr  # located in the file
    assert done.stdout == ""


def test_the_shipped_hook_config_is_accepted(project: Path) -> None:
    done = cedarlite(*hook_args(project, "--print-settings"))
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(("edit", "text", "hint"), MAP_MISTAKES)
def test_tools_lint_reports_hook_config_mistakes(
    project: Path, edit: Any, text: str, hint: str
) -> None:
    done = cedarlite("tools", "lint", str(_hook_config(project, edit)))
    assert done.returncode == 3, done.stdout
    assert text in done.stdout and hint in done.stdout, done.stdout
    assert "edited.json:" in done.stdout and "1 error" in done.stdout


def test_tools_lint_reads_a_hook_config_with_the_hooks_catalog(project: Path) -> None:
    """The extra `tools` are additions to Claude Code's built-ins: `glob`, `grep` and
    `todowrite` in `alsoAllow` match tools of the run."""
    done = cedarlite("tools", "lint", str(project / ".claude" / "cedarlite.json"))
    assert done.returncode == 0, done.stdout
    assert "`glob` matches no tool" not in done.stdout
    assert done.stdout.strip().endswith("0 errors, 1 warning")  # github__delete_*: none yet


# ---------------------------------------------------------------------------------------------
# Replaying a Claude Code hook's log with the hook's own files


def test_a_hook_log_replays_with_the_hooks_own_files(project: Path) -> None:
    log = project.parent / "hook.jsonl"
    calls = [
        ("Bash", {"command": "git status"}),
        ("Bash", {"command": "rm -rf /"}),
        ("Read", {"file_path": str(project / "README.md")}),
        ("TodoWrite", {"todos": []}),
        ("mcp__github__create_issue", {"repo": "acme/app", "title": "t"}),
        ("mcp__github__merge_pull_request", {"pr": 1}),  # named by the rules: `ask`
        ("mcp__fs__read_file", {"path": "/etc/passwd"}),  # added when called
    ]
    for tool, tool_input in calls:
        hook(project, tool, tool_input, "--decision-log", str(log))
    config = str(project / ".claude" / "cedarlite.json")
    rules = [*RULES, str(project / ".claude" / "rules.cedar")]
    args = ["replay", "--log", str(log), "--config", config, "--scheduler", "sync", "--json"]
    done = cedarlite(*args, *(a for r in rules for a in ("--rules", r)))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["lines"] == len(calls)
    assert report["transitions"] == {}, report
    assert report["compared"] == len(calls)
    # A changed rule shows as a change of that call alone.
    stricter = project / ".claude" / "stricter.cedar"
    stricter.write_text('forbid (principal, action == Action::"todowrite", resource);\n')
    done = cedarlite(*args, *(a for r in [*rules, str(stricter)] for a in ("--rules", r)))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["transitions"] == {"allow->block": 1}


def test_a_hook_config_mistake_refuses_the_replay(project: Path) -> None:
    log = project.parent / "hook.jsonl"
    log.write_text("")
    config = _hook_config(project, lambda d: _notebook(d).update(paths=["pth"]))
    done = cedarlite("replay", "--log", str(log), "--config", str(config), "--scheduler", "sync")
    assert done.returncode == 3 and "did you mean `path`?" in done.stderr, done.stderr


# ---------------------------------------------------------------------------------------------
# docs/strictness-and-logs.md: its code blocks run (COORDINATION.md's rules for doc blocks)

DOC = ROOT / "docs" / "strictness-and-logs.md"


def _blocks(kind: str) -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    out, current = [], None
    for line in text.splitlines():
        if current is None and line.strip() == "```" + kind:
            current = []
        elif current is not None and line.strip() == "```":
            out.append("\n".join(current))
            current = None
        elif current is not None:
            current.append(line)
    return out


def test_the_docs_recipes_run(tmp_path: Path) -> None:
    (block,) = _blocks("bash")
    env = {**ENV, "HOME": str(tmp_path), "PATH": f"{Path(sys.executable).parent}:{ENV['PATH']}"}
    proc = subprocess.Popen(
        ["bash", "-euo", "pipefail", "-c", block],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert "4 calls compared: 4 unchanged, 0 changed" in out, out
    namespace: dict[str, Any] = {}
    for code in _blocks("python"):
        exec(compile(code, str(DOC), "exec"), namespace)  # the page's own example
    from cedarlite import PolicySet

    for code in _blocks("cedar"):
        assert PolicySet.from_str(code).policies
