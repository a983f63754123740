"""Command-line mistakes are reported plainly: exit codes, locations, wording (#9: 5, 6)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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
