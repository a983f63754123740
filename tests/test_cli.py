"""The command line: outputs, exit codes, and bad input reported with file, line and column."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cedarlite.cli import main

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture()
def files(tmp_path: Path) -> Path:
    (tmp_path / "p.cedar").write_text(
        'permit (principal == User::"alice", action == Action::"read", resource)\n'
        "when { context.ok };\n"
        "forbid (principal, action, resource) when { resource.secret };\n"
    )
    (tmp_path / "e.json").write_text(
        json.dumps([{"uid": {"type": "Doc", "id": "d"}, "attrs": {"secret": False}, "parents": []}])
    )
    (tmp_path / "ctx.json").write_text('{"ok": true}')
    return tmp_path


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_authorize_allow_and_deny(files, capsys):
    base = [
        "authorize",
        "-p",
        str(files / "p.cedar"),
        "--entities",
        str(files / "e.json"),
        "-a",
        'Action::"read"',
        "-r",
        'Doc::"d"',
        "-c",
        str(files / "ctx.json"),
    ]
    code, out, _ = run(capsys, *base, "-l", 'User::"alice"', "-v")
    assert code == 0
    assert out.splitlines()[0] == "ALLOW"
    assert "  policy0" in out
    code, out, _ = run(capsys, *base, "-l", 'User::"bob"')
    assert (code, out.strip()) == (2, "DENY")


def test_authorize_reports_evaluation_errors_and_json(files, capsys):
    code, out, _ = run(
        capsys,
        "authorize",
        "-p",
        str(files / "p.cedar"),
        "--json",
        "-l",
        'User::"alice"',
        "-a",
        'Action::"read"',
        "-r",
        'Doc::"missing"',
        "-c",
        str(files / "ctx.json"),
    )
    assert code == 0
    resp = json.loads(out)
    assert resp["decision"] == "Allow"
    assert resp["diagnostics"]["errors"] == [
        {"policyId": "policy1", "error": 'entity `Doc::"missing"` does not exist'}
    ]


def test_authorize_request_json(files, capsys):
    (files / "req.json").write_text(
        json.dumps(
            {
                "principal": 'User::"alice"',
                "action": {"type": "Action", "id": "read"},
                "resource": 'Doc::"d"',
                "context": {"ok": True},
            }
        )
    )
    code, out, _ = run(
        capsys,
        "authorize",
        "-p",
        str(files / "p.cedar"),
        "--entities",
        str(files / "e.json"),
        "--request-json",
        str(files / "req.json"),
    )
    assert (code, out.strip()) == (0, "ALLOW")


@pytest.mark.parametrize(
    ("policy", "where", "message"),
    [
        ("permit(principal, action, resource) when { 1 + };", ":1:48:", "unexpected token `}`"),
        ("permit(principal, action, resource) when { 6 / 2 };", ":1:46:", "division is not"),
    ],
)
def test_bad_policy_text_names_file_line_and_column(tmp_path, capsys, policy, where, message):
    path = tmp_path / "bad.cedar"
    path.write_text(policy)
    code, out, err = run(capsys, "check-parse", "-p", str(path))
    assert code == 1 and out == ""
    assert f"{path}{where}" in err and message in err
    assert "^" in err  # the caret snippet
    assert "Traceback" not in err


def test_bad_entities_and_missing_files_fail_cleanly(files, capsys):
    (files / "bad.json").write_text('[{"uid": {"type": "User", "id": "a"}, "attrs": {}}')
    code, _, err = run(
        capsys,
        "authorize",
        "-p",
        str(files / "p.cedar"),
        "--entities",
        str(files / "bad.json"),
        "-l",
        'U::"a"',
        "-a",
        'A::"b"',
        "-r",
        'R::"c"',
    )
    assert code == 1 and "bad.json:1:" in err and "invalid JSON" in err
    code, _, err = run(
        capsys,
        "authorize",
        "-p",
        str(files / "nope.cedar"),
        "-l",
        'U::"a"',
        "-a",
        'A::"b"',
        "-r",
        'R::"c"',
    )
    assert code == 1 and "cannot read policies" in err
    code, _, err = run(capsys, "authorize", "-p", str(files / "p.cedar"), "-l", 'U::"a"')
    assert code == 1 and "--action" in err


def test_validate(tmp_path, capsys):
    (tmp_path / "s.cedarschema").write_text(
        "entity User = {name: String};\n"
        "action view appliesTo { principal: User, resource: User };\n"
    )
    (tmp_path / "good.cedar").write_text(
        'permit (principal, action == Action::"view", resource) when { principal.name == "a" };'
    )
    (tmp_path / "bad.cedar").write_text(
        'permit (principal, action == Action::"view", resource)\nwhen { principal.nmae == "a" };'
    )
    schema = str(tmp_path / "s.cedarschema")
    code, out, _ = run(capsys, "validate", "-p", str(tmp_path / "good.cedar"), "-s", schema)
    assert code == 0 and "validation passed" in out
    code, out, _ = run(capsys, "validate", "-p", str(tmp_path / "bad.cedar"), "-s", schema)
    assert code == 3
    assert "bad.cedar:2:8: error[unknown-attribute]" in out
    assert "did you mean `name`?" in out


def test_template_links(tmp_path, capsys):
    (tmp_path / "t.cedar").write_text("permit (principal == ?principal, action, resource);")
    (tmp_path / "links.json").write_text(
        json.dumps(
            [{"template_id": "policy0", "link_id": "alice", "args": {"?principal": 'User::"a"'}}]
        )
    )
    args = [
        "authorize",
        "-p",
        str(tmp_path / "t.cedar"),
        "--template-linked",
        str(tmp_path / "links.json"),
        "-a",
        'A::"x"',
        "-r",
        'R::"r"',
        "-v",
    ]
    code, out, _ = run(capsys, *args, "-l", 'User::"a"')
    assert code == 0 and "  alice" in out
    (tmp_path / "links.json").write_text('[{"template_id": "policy0"}]')
    code, _, err = run(capsys, *args, "-l", 'User::"a"')
    assert code == 1 and "entry 0 must be" in err


def test_tools_commands_on_the_shipped_example(capsys):
    scenario = str(ROOT / "examples" / "coding-agent.json")
    rules = [
        "--rules",
        str(ROOT / "policies" / "exec-commands.cedar"),
        "--rules",
        str(ROOT / "policies" / "paths.cedar"),
    ]
    code, out, _ = run(capsys, "tools", "check", scenario, *rules)
    assert code == 0
    assert "13/13 calls decided as expected" in out
    assert 'DENY   exec {"command": "rm -rf /"}' in out
    code, out, _ = run(capsys, "tools", "resolve", scenario, "--json")
    resolved = json.loads(out)
    assert code == 0 and "exec" in resolved["allowed"] and resolved["removed"]["cron"]
    code, out, _ = run(capsys, "tools", "explain", scenario, "--tool", "cron")
    assert code == 0 and out.startswith("cron: removed by agents.coder.tools.deny")


def test_tools_check_fails_on_unmet_expectations(tmp_path, capsys):
    scenario = json.loads((ROOT / "examples" / "coding-agent.json").read_text())
    scenario["calls"] = [{"tool": "exec", "params": {"command": "rm -rf /"}, "expect": "allow"}]
    path = tmp_path / "s.json"
    path.write_text(json.dumps(scenario))
    code, out, _ = run(
        capsys,
        "tools",
        "check",
        str(path),
        "--rules",
        str(ROOT / "policies" / "exec-commands.cedar"),
    )
    assert code == 3 and "expected ALLOW" in out and "0/1 call decided" in out


def test_python_dash_m_entry_point():
    proc = subprocess.run(
        [sys.executable, "-m", "cedarlite", "--version"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0 and proc.stdout.startswith("cedarlite ")
