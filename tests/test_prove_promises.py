"""The shipped rules' promises (policies/promises.cedar), proved by `tools prove` or broken by a
bypass that the guard itself confirms."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from cedarlite import PolicySet
from cedarlite.analysis.promises import prove_promises

ROOT = Path(__file__).resolve().parent.parent
RULES = ["cedarlite:paths", "cedarlite:exec-commands"]
PROMISES = ROOT / "policies" / "promises.cedar"


def test_the_shipped_promises() -> None:
    # The command of docs/proofs.md: each promise is proved, or its bypass printed (a call the
    # guard itself allows), or it answers unknown for a stated reason.
    argv = ["tools", "prove", "cedarlite:coding-agent", "--rules", "cedarlite:paths",
            "--rules", "cedarlite:exec-commands", "--never", "cedarlite:promises",
            "--timeout", "60"]  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-m", "cedarlite", *argv], capture_output=True, text=True, timeout=600
    )
    print(proc.stdout)
    lines = {
        line.split()[1].rstrip(":"): line for line in proc.stdout.splitlines() if line[:1] != " "
    }
    assert set(lines) == {p.annotations["id"] for p in PolicySet.from_file(PROMISES)}
    assert lines["promise.writes-in-workspace"].startswith("proved")
    # The secret patterns are many `like`s on one argument: proved in about 20 s of solver time
    # here, or a timeout on a loaded machine; never a wrong answer (a bypass is re-decided by
    # the guard before it is printed).
    names = ("promise.no-secret-read", "promise.no-secret-read.resolved")
    for name in (*names, "promise.no-secret-in-command"):
        line = lines[name]
        assert line.startswith(("proved", "BYPASS", "unknown")), line
        if line.startswith("unknown"):
            assert "timed out" in line, line
    assert proc.returncode == (
        1 if "BYPASS" in proc.stdout else 3 if "unknown" in proc.stdout else 0
    )


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
    found = {p.name: p for p in prove_promises("cedarlite:coding-agent", [str(rules)], never)}
    pem = found["no-pem"]
    assert pem.result.holds is False and pem.call is not None
    assert pem.call["tool"] == "read" and pem.call["params"]["path"].endswith(".pem")
    assert found["no-ssh-read"].result.holds is True


def test_the_cli(tmp_path: Path) -> None:
    rules = tmp_path / "weak.cedar"
    rules.write_text('@id("none") forbid (principal, action, resource) when { false };')
    never = tmp_path / "never.cedar"
    never.write_text(
        '@id("no-key") permit (principal, action == Action::"read", resource) '
        'when { resource.path like "*.key" };'
    )
    argv = [
        "tools",
        "prove",
        "cedarlite:coding-agent",
        "--rules",
        str(rules),
        "--never",
        str(never),
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "cedarlite", *argv], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 1, proc.stderr
    assert "BYPASS   no-key: the guard allows" in proc.stdout
    assert "tool read" in proc.stdout and ".key" in proc.stdout
