"""What a new user tripped over (#28): each friction, as the newcomer met it."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cedarlite import CedarliteError, is_authorized
from cedarlite.cli import main
from cedarlite.cli.main import _parser
from cedarlite.errors import RequestError
from cedarlite.hooks import Guard, MemorySessionStore

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = """
entity User { age: Long };
entity Doc { confidential: Bool };
action read appliesTo { principal: User, resource: Doc };
"""


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def app(tmp_path: Path) -> Path:
    (tmp_path / "app.cedar").write_text(
        '@id("adults") permit (principal, action, resource) when { principal.age >= 18 };\n'
    )
    (tmp_path / "s.cedarschema").write_text(SCHEMA)
    return tmp_path


# --- 1. no abbreviations; Cedar's spellings ------------------------------------------------


def test_an_abbreviation_is_refused_and_cedars_spelling_suggested(app, capsys):
    p, s = str(app / "app.cedar"), str(app / "s.cedarschema")
    code, _, err = run(capsys, "validate", "--policy", p, "--schema", s)
    assert code == 1 and "invalid choice" not in err
    assert "unknown option `--policy` (did you mean `--policies`?)" in err
    assert run(capsys, "validate", "-p", p, "--schema", s)[0] == 0
    assert run(capsys, "validate", "--policies", p, "--schema", s)[0] == 0
    code, _, err = run(capsys, "validate", "--policies", p, "--sch", s)
    assert code == 1 and "unknown option `--sch` (did you mean `--schema`?)" in err


def parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found += parsers(sub)
    return found


def test_no_parser_accepts_abbreviations():
    every = parsers(_parser())
    assert len(every) > 20
    assert [p.prog for p in every if p.allow_abbrev] == []


# --- 2. rules="/path/x.cedar" -----------------------------------------------------------------


def test_a_rules_path_given_as_text_is_refused_with_the_fix(tmp_path):
    path = tmp_path / "paths.cedar"
    path.write_text("forbid (principal, action, resource) when { context has input };\n")
    for given in (str(path), str(tmp_path / "missing.cedar"), "cedarlite:paths"):
        with pytest.raises(CedarliteError) as caught:
            Guard({}, [{"name": "read"}], None, rules=given, session_store=MemorySessionStore())
        text = str(caught.value)
        assert f"`{given}`" in text and "division" not in text
        assert 'did you mean `rules=["' in text or "shipped.policy_path" in text
    # Cedar text and a list of paths still work.
    Guard({}, [{"name": "read"}], None, rules=[str(path)], session_store=MemorySessionStore())
    Guard({}, [{"name": "read"}], None, rules=path.read_text(), session_store=MemorySessionStore())


# --- 3. tools check speaks the guard's words ------------------------------------------------


def test_tools_check_takes_allow_block_ask_and_prints_every_decision(tmp_path, capsys):
    rules = tmp_path / "r.cedar"
    rules.write_text(
        '@id("exec.no-rm") forbid (principal, action == Action::"exec", resource)\n'
        '  when { resource.command like "rm *" };\n'
        '@id("exec.push") @ask("Pushes to a remote")\n'
        'forbid (principal, action == Action::"exec", resource)\n'
        '  when { resource.command like "git push*" };\n'
    )
    calls = [
        {"tool": "exec", "params": {"command": "ls"}, "expect": "allow"},
        {"tool": "exec", "params": {"command": "rm -rf /"}, "expect": "block"},
        {"tool": "exec", "params": {"command": "rm -rf /"}, "expect": "deny"},
        {"tool": "exec", "params": {"command": "git push"}, "expect": "ask"},
        {"tool": "exec", "params": {"command": "ls"}, "expect": "maybe"},
    ]
    scenario = tmp_path / "s.json"
    scenario.write_text(json.dumps({"tools": [{"name": "exec"}], "calls": calls}))
    code, out, err = run(capsys, "tools", "check", str(scenario), "--rules", str(rules))
    lines = out.splitlines()[1:]
    assert lines[0].startswith("ALLOW  exec")
    assert lines[1].startswith("DENY   exec") and "<<" not in lines[1]
    assert lines[2].startswith("DENY   exec") and "<<" not in lines[2]
    assert lines[3].startswith("ASK    exec") and "exec.push" in lines[3] and "<<" not in lines[3]
    assert lines[4].startswith("ALLOW  exec") and "calls[4]: `expect`" in lines[4]
    assert lines[5] == "4/4 calls decided as expected"
    assert code == 1 and "`expect` must be" in err


# --- 4. run-tests names policies by @id -------------------------------------------------------


def test_run_tests_names_erring_policies_by_id(tmp_path, capsys):
    (tmp_path / "p.cedar").write_text(
        '@id("adults") permit (principal, action, resource) when { principal.age >= 18 };\n'
    )
    case = {
        "name": "no age",
        "request": {"principal": 'User::"a"', "action": 'Action::"read"', "resource": 'Doc::"d"'},
        "entities": [{"uid": {"type": "User", "id": "a"}, "attrs": {}, "parents": []}],
        "decision": "deny",
        "reason": [],
        "num_errors": 0,
    }
    (tmp_path / "t.json").write_text(json.dumps([case]))
    code, out, _ = run(
        capsys, "run-tests", "--policies", str(tmp_path / "p.cedar"), "--tests",
        str(tmp_path / "t.json"),
    )  # fmt: skip
    assert code == 1
    assert "policy `adults`" in out and "policy0" not in out


# --- 5. one reason per deciding policy; one @id in two files ---------------------------------


def test_one_reason_per_deciding_policy():
    rules = (
        '@id("fs.no-traversal") @reason("Paths with `..` are not allowed.")\n'
        'forbid (principal, action, resource) when { resource.path like "*..*" };\n'
        '@id("fs.no-traversal")\n'
        'forbid (principal, action, resource) when { resource.path like "../*" };\n'
    )
    guard = Guard({}, [{"name": "read"}], None, rules=rules, session_store=MemorySessionStore())
    out = guard.before_tool_call("read", {"path": "../x"})
    assert out.blocked
    assert out.reason == "Paths with `..` are not allowed."
    assert out.policies == ("fs.no-traversal",)


def test_one_id_in_two_rule_files_is_an_error_naming_both(tmp_path):
    a, b = tmp_path / "a.cedar", tmp_path / "b.cedar"
    a.write_text('@id("fs.no-traversal") forbid (principal, action, resource) when { false };\n')
    b.write_text(
        "// the second\n"
        '@id("fs.no-traversal") forbid (principal, action, resource) when { false };\n'
    )
    with pytest.raises(CedarliteError) as caught:
        Guard({}, [{"name": "read"}], None, rules=[str(a), str(b)])
    text = str(caught.value)
    assert f"{b}:2:1" in text and f"{a}:1:1" in text and "`fs.no-traversal`" in text


# --- 6. evaluate without a request; inline context ----------------------------------------------


def test_evaluate_an_expression_that_reads_no_request(capsys):
    code, out, err = run(capsys, "evaluate", "[3,1,2].contains(2)")
    assert (code, out, err) == (0, "true\n", "")
    code, out, _ = run(capsys, "evaluate", "context.hour < 6", "--context", '{"hour": 3}')
    assert (code, out) == (0, "true\n")
    code, _, err = run(capsys, "evaluate", "principal == resource")
    assert code == 1 and "--principal" in err and "--resource" in err and "--action" not in err


def test_an_inline_context_for_authorize(app, capsys):
    (app / "ctx.cedar").write_text("permit (principal, action, resource) when { context.ok };")
    code, out, _ = run(
        capsys, "authorize", "-p", str(app / "ctx.cedar"), "-l", 'User::"a"', "-a",
        'Action::"read"', "-r", 'Doc::"d"', "--context", '{"ok": true}',
    )  # fmt: skip
    assert (code, out) == (0, "ALLOW\n")


# --- 7. did-you-mean for the API's names ------------------------------------------------------


def test_a_misspelled_engine_or_request_key_says_what_was_meant():
    request = {"principal": 'User::"a"', "action": 'Action::"read"', "resource": 'Doc::"d"'}
    with pytest.raises(CedarliteError) as caught:
        is_authorized(request, "permit (principal, action, resource);", [], engine="refrence")
    assert isinstance(caught.value, ValueError)  # as before
    assert caught.value.help == "did you mean `reference`?"
    typo: dict[str, Any] = {**request, "principle": request["principal"]}
    del typo["principal"]
    with pytest.raises(RequestError) as missing:
        is_authorized(typo, "permit (principal, action, resource);", [])
    assert "`principle`" in str(missing.value) and "did you mean `principal`?" in str(missing.value)


# --- 11. --deny-warnings ----------------------------------------------------------------------


def test_validate_deny_warnings_fails_on_an_impossible_forbid(app, capsys):
    (app / "typo.cedar").write_text(
        "permit (principal, action, resource);\n"
        "forbid (principal, action, resource) when { resource has confidental };\n"
    )
    args = ["validate", "-p", str(app / "typo.cedar"), "-s", str(app / "s.cedarschema")]
    code, out, _ = run(capsys, *args)
    assert code == 0 and "1 warning" in out
    code, out, _ = run(capsys, *args, "--deny-warnings")
    assert code == 3 and "impossible-policy" in out
    assert "validation failed: 0 errors, 1 warning denied by --deny-warnings" in out


# --- 12. the library does not print through logging's last resort ------------------------------


def test_the_library_logs_nothing_to_stderr_unless_configured():
    code = (
        "import cedarlite, logging\n"
        "from cedarlite._log import get_logger\n"
        "get_logger('cedarlite.hooks').warning('loop warning %s', 1)\n"
        "assert any(isinstance(h, logging.NullHandler) "
        "for h in logging.getLogger('cedarlite').handlers)\n"
        "logging.basicConfig(format='%(levelname)s %(message)s')\n"
        "get_logger('cedarlite.hooks').warning('seen %s', 2)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "WARNING seen 2\n"


# --- 8 and 10: the hook's reasons name the file and what to do ---------------------------------


def hook(tmp_path: Path, *rules: str) -> subprocess.CompletedProcess[str]:
    config = tmp_path / "hook.json"
    if not config.exists():
        tools = {"profile": "coding", "loopDetection": {"enabled": True}}
        config.write_text(json.dumps({"config": {"tools": tools}}))
    event = {
        "session_id": "s1",
        "cwd": str(tmp_path),
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "ls"},
        "tool_use_id": "toolu_1",
    }
    args = ["--config", str(config), "--state-dir", str(tmp_path / "state")]
    for r in rules:
        args += ["--rules", r]
    return subprocess.run(
        [sys.executable, "-m", "cedarlite", "hook", "claude-code", *args],
        input=json.dumps(event), capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def denial(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"
    return str(out["permissionDecisionReason"])


def test_a_corrupt_state_file_is_named_with_what_to_do(tmp_path):
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / "sessions.sqlite3").write_bytes(b"this is not a database" * 100)
    reason = denial(hook(tmp_path))
    assert str(state / "sessions.sqlite3") in reason
    assert "not a SQLite database" in reason and "delete it" in reason


def test_rules_that_do_not_validate_are_named_with_line_and_error(tmp_path):
    rules = tmp_path / "r.cedar"
    rules.write_text(
        "// typo\n"
        '@id("no-curl") forbid (principal, action == Action::"exec", resource)\n'
        '  when { resource.comand like "curl *" };\n'
    )
    reason = denial(hook(tmp_path, str(rules)))
    assert "<input>" not in reason
    assert f"{rules}:3:10: policy `no-curl`:" in reason and "did you mean `command`?" in reason
