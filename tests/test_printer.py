"""The formatter: round trips, wrapping, comments, idempotence, the shipped files."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cedarlite import ParseError, PolicySet, testing
from cedarlite.cli import main
from cedarlite.data.values import escape_chars, quote_string
from cedarlite.lang.printer import format_text, print_policies

POLICIES = Path(__file__).resolve().parents[1] / "policies"


@settings(max_examples=2 * settings.default.max_examples)
@given(testing.policy_sets(max_policies=4))
def test_printed_text_parses_back_to_the_same_policies(ps):
    text = print_policies([p for p in ps if p.template_id is None], width=40)
    again = PolicySet.from_str(text)
    assert again.policies == tuple(p for p in ps if p.template_id is None)


@settings(max_examples=settings.default.max_examples)
@given(testing.policy_sets(max_policies=4))
def test_formatting_is_idempotent(ps):
    text = print_policies([p for p in ps if p.template_id is None])
    assert format_text(text) == text


def test_long_conditions_and_action_lists_wrap():
    text = (
        'permit (principal, action in [Action::"read", Action::"write", Action::"edit", '
        'Action::"apply_patch", Action::"exec"], resource) when { context.command like "git *" '
        '|| context.command like "ls *" || (context.trusted && context.command like "make *") };'
    )
    out = format_text(text)
    assert max(len(line) for line in out.splitlines()) <= 80
    assert out == (
        "permit (\n"
        "  principal,\n"
        "  action in [\n"
        '    Action::"read", Action::"write", Action::"edit", Action::"apply_patch",\n'
        '    Action::"exec"\n'
        "  ],\n"
        "  resource\n"
        ")\n"
        "when {\n"
        '  context.command like "git *" ||\n'
        '  context.command like "ls *" ||\n'
        '  context.trusted && context.command like "make *"\n'
        "};\n"
    )
    assert PolicySet.from_str(out) == PolicySet.from_str(text)


def test_comments_between_policies_are_kept():
    text = (
        "// header\n\n// first\npermit(principal, action, resource);  // after the first\n"
        "forbid(principal, action, resource);\n// the end\n"
    )
    assert format_text(text) == (
        "// header\n\n// first\npermit (\n  principal,\n  action,\n  resource\n);\n\n"
        "// after the first\nforbid (\n  principal,\n  action,\n  resource\n);\n\n// the end\n"
    )


def test_a_comment_inside_a_policy_is_an_error_not_a_loss():
    text = "permit (principal, action, resource)\nwhen { // why\n  true };"
    with pytest.raises(ParseError) as err:
        format_text(text, "p.cedar")
    assert (err.value.line, err.value.column) == (2, 8)
    assert "inside a policy" in err.value.message


def test_comment_markers_inside_strings_are_not_comments():
    text = 'permit (principal, action, resource) when { context.url == "http://x" };\n'
    assert "http://x" in format_text(text)


@pytest.mark.parametrize("path", sorted(POLICIES.glob("*.cedar")), ids=lambda p: p.name)
def test_shipped_policies_are_formatted(path):
    assert main(["format", "--check", "--policies", str(path)]) == 0


def test_format_write_and_check(tmp_path, capsys):
    path = tmp_path / "p.cedar"
    path.write_text("permit(principal,action,resource);")
    assert main(["format", "--check", "--policies", str(path)]) == 1
    assert main(["format", "--write", "--policies", str(path)]) == 0
    assert main(["format", "--check", "--policies", str(path)]) == 0
    assert path.read_text() == "permit (\n  principal,\n  action,\n  resource\n);\n"


@given(st.text())
def test_quote_string_shortcut_agrees_with_escaping_every_character(text: str) -> None:
    """Strings with nothing to escape are quoted as they are; the result is always the
    character-by-character escaping."""
    assert quote_string(text) == f'"{escape_chars(text)}"'
