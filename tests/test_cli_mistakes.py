"""Command-line mistakes are reported plainly: exit codes, locations, wording (#9: 5, 6)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cedarlite.cli import main

ROOT = Path(__file__).resolve().parents[1]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    "argv",
    [[], ["authorize"], ["nonsense"], ["tools"], ["tools", "check"], ["validate", "-p", "x"]],
)
def test_usage_errors_exit_1_not_the_deny_code(capsys, argv):
    code, _, err = run(capsys, *argv)
    assert code == 1
    assert "usage: cedarlite" in err and "error:" in err


def test_help_and_version_exit_0(capsys):
    assert run(capsys, "--help")[0] == 0
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.startswith("cedarlite ")


def test_a_missing_final_semicolon_points_at_the_end_of_the_last_line(tmp_path, capsys):
    path = tmp_path / "p.cedar"
    path.write_text("permit (principal, action, resource)\nwhen { true }\n\n")
    code, _, err = run(capsys, "check-parse", "-p", str(path))
    assert code == 1
    assert err.splitlines()[:3] == [
        f"{path}:2:14: error[E0100]: unexpected end of input; expected `;`, `unless`, `when`",
        " 2 | when { true }",
        "   |              ^",
    ]


def test_a_snippet_past_the_final_newline_shows_an_empty_line():
    from cedarlite.source import Span, render_snippet

    text = "permit (principal, action, resource)\n"
    assert render_snippet(text, Span.at(text, len(text))) == " 2 | \n   | ^"


def test_entity_uid_flags_are_named_in_errors(tmp_path, capsys):
    (tmp_path / "p.cedar").write_text("permit (principal, action, resource);\n")
    code, _, err = run(
        capsys,
        "authorize", "-p", str(tmp_path / "p.cedar"),
        "-l", 'User::"alice', "-a", 'Action::"read"', "-r", 'Doc::"d"',
    )  # fmt: skip
    assert code == 1
    assert err.startswith("--principal:1:1: error[E0300]: ")
    assert "<input>" not in err


def test_counts_are_in_the_right_number(tmp_path, capsys):
    one = tmp_path / "one.cedar"
    one.write_text("permit (principal, action, resource);\n")
    two = tmp_path / "two.cedar"
    two.write_text("permit (principal, action, resource);\nforbid (principal, action, resource);\n")
    assert run(capsys, "check-parse", "-p", str(one))[1] == f"{one}: 1 policy parse\n"
    assert run(capsys, "check-parse", "-p", str(two))[1] == f"{two}: 2 policies parse\n"
    schema = tmp_path / "s.cedarschema"
    schema.write_text(
        "entity User = { name: String };\n"
        "action read appliesTo { principal: User, resource: User };\n"
    )
    bad = tmp_path / "bad.cedar"
    bad.write_text('permit (principal, action, resource) when { principal.nmae == "a" };\n')
    code, out, _ = run(capsys, "validate", "-p", str(bad), "-s", str(schema))
    assert code == 3 and out.splitlines()[-1] == f"{bad}: validation failed: 1 error"


def test_a_closed_pipe_is_quiet():
    command = [
        sys.executable, "-m", "cedarlite", "tools", "check", "examples/coding-agent.json",
        "--rules", "policies/exec-commands.cedar", "--rules", "policies/paths.cedar",
    ]  # fmt: skip
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader has gone away before the first line, like `| head -0`
    try:
        proc = subprocess.run(
            command, cwd=ROOT, stdout=write_end, stderr=subprocess.PIPE, timeout=120
        )
    finally:
        os.close(write_end)
    err = proc.stderr.decode()
    assert "Traceback" not in err and "BrokenPipe" not in err
    assert proc.returncode == 1


# --- tools check, lint and schema (#9, findings 1, 2 and 5) -----------------------------------

EXAMPLE = json.loads((ROOT / "examples" / "coding-agent.json").read_text())
RULES = [str(ROOT / "policies" / "exec-commands.cedar"), str(ROOT / "policies" / "paths.cedar")]


def scenario(tmp_path: Path, data: Any, name: str = "s.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data, indent=1))
    return str(path)


def test_tools_check_decides_every_call_and_names_each_bad_one(tmp_path, capsys):
    calls = [
        {"tool": "exec", "params": {"command": "ls"}, "expect": "allow"},
        {"tool": "exce", "params": {"command": "ls"}},
        {"tool": "exec", "params": {"command": 123}},
        {"tool": "exec", "params": {}},
        {"tool": "read", "params": {"path": "a"}, "expect": True},
        {"params": {}},
        {"tool": "read", "params": {"path": "b"}, "expect": "allow"},
    ]
    path = scenario(tmp_path, {"tools": [{"name": "exec"}, {"name": "read"}], "calls": calls})
    code, out, err = run(capsys, "tools", "check", path)
    assert code == 1  # calls that could not be decided
    lines = out.splitlines()
    assert lines[1].startswith("ALLOW  exec")
    assert lines[2] == (
        'ERROR  exce {"command": "ls"}  (calls[1]: unknown tool `exce`; did you mean `exec`?)'
    )
    assert lines[3].startswith('ERROR  exec {"command": 123}  (calls[2]: argument `command`')
    assert lines[4].startswith("ERROR  exec {}  (calls[3]: argument `command` of tool `exec` is")
    assert lines[5].startswith('ALLOW  read {"path": "a"}')  # decided, its `expect` flagged
    assert lines[5].endswith("<< calls[4]: `expect` must be `allow`, `deny` (or `block`) or "
                             "`ask`, not `true`")  # fmt: skip
    assert lines[6] == "ERROR  ?  (calls[5]: this call has no `tool`)"
    assert lines[7].startswith("ALLOW  read")  # the calls after the bad ones are decided too
    assert lines[8] == "2/2 calls decided as expected"
    assert f"{path}:19:12: error[E0830]: unknown tool `exce`" in err
    assert "Traceback" not in err and err.rstrip().endswith("4 calls could not be decided")
    assert "1 call with an `expect` that is no verdict" in err


def test_argument_errors_are_tools_errors():
    from cedarlite.tools import ToolArgumentError, ToolsError

    assert issubclass(ToolArgumentError, ToolsError)


def test_tools_check_refuses_a_rule_naming_a_missing_attribute(tmp_path, capsys):
    rule = tmp_path / "typo.cedar"
    rule.write_text(
        '@id("no-rm")\nforbid (principal, action == Action::"exec", resource)\n'
        'when { resource has comand && resource.comand like "rm *" };\n'
        '@id("no-curl")\nforbid (principal, action == Action::"exec", resource)\n'
        'when { resource.comand like "curl *" };\n'
    )
    data = {**EXAMPLE, "calls": [{"tool": "exec", "params": {"command": "rm -rf /"}}]}
    path = scenario(tmp_path, data)
    code, out, err = run(capsys, "tools", "check", path, "--rules", str(rule))
    assert code == 3 and out == ""  # refuses to start: nothing decided
    assert (
        f"{rule}:3:1: error[impossible-policy]: policy `no-rm`: this forbid can never apply"
        in (
            err.replace(":1:1:", ":3:1:")  # the span starts at the policy's first line
        )
        or f"{rule}:1:1: error[impossible-policy]: policy `no-rm`" in err
    )
    assert f"{rule}:6:8: error[unknown-attribute]: policy `no-curl`: " in err
    assert "did you mean `command`?" in err
    assert "2 validation errors in the argument rules" in err


def test_rules_for_tools_the_run_lacks_are_not_errors(tmp_path, capsys):
    data = {"tools": [{"name": "read"}], "calls": [{"tool": "read", "params": {"path": "a"}}]}
    code, out, _ = run(capsys, "tools", "check", scenario(tmp_path, data), "--rules", *RULES[:1])
    assert code == 0 and out.splitlines()[-1].startswith("ALLOW  read")


def test_tools_check_is_strict_and_lenient_on_request(tmp_path, capsys):
    data = {
        "config": {"tools": {"denny": ["cron"]}},
        "tools": [{"name": "cron"}],
        "context": {"senderIsOwner": True},
        "calls": [{"tool": "cron", "params": {}, "expect": "deny"}],
    }
    path = scenario(tmp_path, data)
    code, out, err = run(capsys, "tools", "check", path)
    assert code == 3 and out == ""
    assert f"{path}:4:4: error[unknown-key]: `tools.denny`: unknown key `denny`" in err
    assert "did you mean `deny`?" in err and "refusing to check" in err
    code, out, err = run(capsys, "tools", "check", path, "--lenient")
    assert code == 3 and "<< expected DENY" in out  # read as OpenClaw does: cron is allowed
    assert "error[unknown-key]" in err  # still reported


def test_tools_check_refuses_a_misspelled_context_key(tmp_path, capsys):
    data = {**EXAMPLE, "context": {"agentID": "coder", "senderIsOwner": True}}
    code, _, err = run(capsys, "tools", "check", scenario(tmp_path, data))
    assert code == 3
    assert "`context.agentID`: unknown run context key `agentID`" in err


def test_tools_lint_prints_every_finding_once(tmp_path, capsys):
    config = {"tool": {}, "tools": {"profile": "codeing", "alsoAllow": ["browsr"]}}
    path = scenario(tmp_path, config, "config.json")
    tools = scenario(tmp_path, [{"name": "read"}, {"name": "browser"}], "tools.json")
    code, out, err = run(capsys, "tools", "lint", path, "--tools", tools)
    assert code == 3 and err == ""
    assert out.count("browsr") == 2  # the finding and its snippet, once: no second warning
    assert f"{path}:2:2: error[unknown-key]: `tool`: unknown key `tool`" in out
    assert "= help: did you mean `coding`?" in out and "= help: did you mean `browser`?" in out
    assert out.splitlines()[-1] == f"{path}: 2 errors, 1 warning"
    code, out, _ = run(capsys, "tools", "lint", path, "--json")
    assert code == 3 and [f["path"] for f in json.loads(out)] == [
        "tool", "tools.profile", "tools.alsoAllow[0]",
    ]  # fmt: skip
    code, out, _ = run(capsys, "tools", "lint", str(ROOT / "examples" / "coding-agent.json"))
    assert (code, out.splitlines()[-1]) == (
        0,
        f"{ROOT / 'examples' / 'coding-agent.json'}: no findings",
    )


def test_tools_schema_writes_the_catalog_schema(capsys):
    code, out, _ = run(capsys, "tools", "schema", str(ROOT / "examples" / "coding-agent.json"))
    assert code == 0
    from cedarlite.schema import Schema

    schema = Schema.from_str(out)
    assert "Call::exec" in schema.entity_types
    code, out, _ = run(
        capsys, "tools", "schema", str(ROOT / "examples" / "coding-agent.json"), "--json"
    )
    assert code == 0 and Schema.from_json(out) == schema


@pytest.mark.parametrize(
    ("command", "data", "message"),
    [
        (["tools", "check"], {"tools": [5]}, "error[E0810]: tools[0]: expected a tool object"),
        (["tools", "resolve"], {"config": []}, "error[E0800]: the tools configuration must be"),
        (["tools", "schema"], {"tools": [5]}, "error[E0810]: tools[0]: expected a tool object"),
        (["tools", "explain", "--tool", "exce"], {"tools": [{"name": "exec"}]},
         "error[E0810]: no tool `exce` in the catalog"),
    ],
)  # fmt: skip
def test_scenario_errors_name_the_scenario_file(tmp_path, capsys, command, data, message):
    path = scenario(tmp_path, data)
    code, _, err = run(capsys, *command[:2], path, *command[2:])
    assert code == 1
    assert err.startswith(f"{path}: {message}") and "<input>" not in err


def test_request_file_errors_name_the_file(tmp_path, capsys):
    (tmp_path / "p.cedar").write_text("permit (principal, action, resource);\n")
    request = tmp_path / "request.json"
    data = {"principal": {"type": "U", "id": 5}, "action": 'Action::"a"', "resource": 'R::"r"'}
    request.write_text(json.dumps(data))
    code, _, err = run(
        capsys, "authorize", "-p", str(tmp_path / "p.cedar"), "--request-json", str(request)
    )
    assert code == 1 and err.startswith(f"{request}: error[E0300]: request principal: ")
