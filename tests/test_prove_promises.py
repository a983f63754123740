"""The shipped rules' promises (policies/promises.cedar), proved by `tools prove` or broken by a
bypass that the guard itself confirms."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from cedarlite import PolicySet
from cedarlite.analysis.promises import prove_promises
from cedarlite.tools import ToolPolicy

ROOT = Path(__file__).resolve().parent.parent
PROMISES = ROOT / "policies" / "promises.cedar"
EXAMPLE = json.loads((ROOT / "examples" / "coding-agent.json").read_text(encoding="utf-8"))
CODING_AGENT = ToolPolicy(EXAMPLE["config"], EXAMPLE["tools"])


def cedarlite(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cedarlite", *argv], capture_output=True, text=True, timeout=600
    )


SHIPPED = ("tools", "prove", "cedarlite:coding-agent", "--rules", "cedarlite:paths",
           "--rules", "cedarlite:exec-commands")  # fmt: skip


def test_the_shipped_promises() -> None:
    # The command of docs/proofs.md: every promise is proved (about a second each, against a
    # 30 s budget). A broken one prints its bypass, a call the guard itself allows.
    proc = cedarlite(*SHIPPED, "--never", "cedarlite:promises")
    lines = {
        line.split()[1].rstrip(":"): line for line in proc.stdout.splitlines() if line[:1] != " "
    }
    assert set(lines) == {p.annotations["id"] for p in PolicySet.from_file(PROMISES)}
    assert all(line.startswith("proved") for line in lines.values()), proc.stdout
    assert proc.returncode == 0, proc.stderr


def test_the_command_promise_finds_the_bypass_the_rules_had() -> None:
    # exec-commands.cedar before #27 let `tail x.env` through (dotenv files not named `.env*`);
    # the solver finds such a call, and the guard confirms it before it is printed.
    old = (ROOT / "policies" / "exec-commands.cedar").read_text(encoding="utf-8")
    fixed = '  resource.command like "*.env" ||\n'
    assert fixed in old
    never = PolicySet.from_str(
        '@id("no-dotenv") permit (principal, action == Action::"exec", resource) '
        'when { resource.command like "*.env" };'
    )
    with tempfile.TemporaryDirectory() as tmp:
        rules = Path(tmp) / "exec-commands.cedar"
        rules.write_text(old.replace(fixed, ""), encoding="utf-8")
        [promise] = prove_promises(CODING_AGENT, [str(rules)], never)
    assert promise.result.holds is False and promise.call is not None
    assert promise.call["params"]["command"].endswith(".env")


def test_a_bypass_is_a_call_the_guard_allows(tmp_path: Path) -> None:
    # Rules that forget `.pem` files: the solver finds a read the guard lets through.
    rules = tmp_path / "weak.cedar"
    rules.write_text(
        '@id("no-ssh") forbid (principal, action, resource) when {\n'
        '  context has input && context.input has path && context.input.path like "*.ssh/*" };'
    )
    never = PolicySet.from_str(
        '@id("no-pem") permit (principal, action == Action::"read", resource) '
        'when { resource.path like "*.pem" };\n'
        '@id("no-ssh-read") permit (principal, action == Action::"read", resource) '
        'when { resource.path like "*.ssh/*" };'
    )
    found = {p.name: p for p in prove_promises(CODING_AGENT, [str(rules)], never)}
    pem = found["no-pem"]
    assert pem.result.holds is False and pem.call is not None
    assert pem.call["tool"] == "read" and pem.call["params"]["path"].endswith(".pem")
    assert found["no-ssh-read"].result.holds is True


def no_key_query(tmp_path: Path) -> tuple[str, str]:
    """Rules that forbid nothing, and the promise that no path names a `.key` file."""
    rules = tmp_path / "weak.cedar"
    rules.write_text('@id("none") forbid (principal, action, resource) when { false };')
    never = tmp_path / "never.cedar"
    never.write_text(
        '@id("no-key") permit (principal, action, resource) '
        'when { resource has path && resource.path like "*.key" };'
    )
    return str(rules), str(never)


def test_the_cli(tmp_path: Path) -> None:
    rules, never = no_key_query(tmp_path)
    proc = cedarlite("tools", "prove", "cedarlite:coding-agent", "--rules", rules, "--never", never)
    assert proc.returncode == 1, proc.stderr
    assert "BYPASS   no-key: the guard allows" in proc.stdout
    assert "tool read" in proc.stdout and ".key" in proc.stdout


CLAUDE_CODE = ("tools", "prove", str(ROOT / "examples" / "claude-code" / "cedarlite.json"),
               "--host", "claude-code")  # fmt: skip


def test_the_shipped_promises_hold_for_claude_code() -> None:
    # The Claude Code example's guard: Claude Code's built-ins (Bash, Read, PowerShell...) as
    # its hook maps them, the file's tools and the MCP tools its rules name.
    proc = cedarlite(*CLAUDE_CODE, "--rules", "cedarlite:paths", "--rules",
                     "cedarlite:exec-commands", "--rules",
                     str(ROOT / "examples" / "claude-code" / "rules.cedar"),
                     "--never", "cedarlite:promises")  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("proved ") == len(PolicySet.from_file(PROMISES).active)


def test_a_claude_code_bypass_names_the_host_tool(tmp_path: Path) -> None:
    rules, never = no_key_query(tmp_path)
    proc = cedarlite(*CLAUDE_CODE, "--rules", rules, "--never", never)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "BYPASS   no-key: the guard allows" in proc.stdout
    assert 'as Claude Code calls it: Read {"file_path": "' in proc.stdout, proc.stdout


def test_a_configuration_mistake_is_located(tmp_path: Path) -> None:
    config = tmp_path / "cedarlite.json"
    config.write_text('{"config": {"tools": {"profile": "codng"}}}')
    proc = cedarlite("tools", "prove", str(config), "--never", "cedarlite:promises")
    assert proc.returncode == 3
    assert "cedarlite.json:1:" in proc.stderr and "Traceback" not in proc.stderr
