"""Argument rules are validated against the catalog's schema wherever they are loaded (#9, 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

import cedarlite
from cedarlite._jsonloc import json_span
from cedarlite.hooks import Guard
from cedarlite.tools import ToolPolicy

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = [ROOT / "policies" / "exec-commands.cedar", ROOT / "policies" / "paths.cedar"]
TOOLS = [{"name": "exec"}, {"name": "read"}, {"name": "write"}]

TYPO = """@id("no-rm")
forbid (principal, action == Action::"exec", resource)
when { resource.comand like "rm *" };

@id("guarded-typo")
forbid (principal, action == Action::"exec", resource)
when { resource has comand && resource.comand like "curl *" };
"""


def test_rule_files_load_validated_and_merged() -> None:
    policy = ToolPolicy({}, TOOLS, strict=True)
    rules = policy.load_rules(SHIPPED)
    assert isinstance(rules, cedarlite.PolicySet)
    assert len(rules) == sum(len(cedarlite.PolicySet.from_file(p)) for p in SHIPPED)
    assert rules.label(f"{SHIPPED[1]}:policy0") == "fs.no-secrets"
    denied = policy.authorize_call({}, "exec", {"command": "rm -rf /"}, rules=rules)
    assert not denied and denied.policies == (
        "exec.safe-prefixes",
        "exec.dangerous",
        "exec.no-secrets",
    )


def test_rules_validated_for_a_catalog_are_not_validated_again_for_it() -> None:
    """(A replay's workers get rules the driver validated against the same catalog.)"""
    policy = ToolPolicy({}, TOOLS)
    rules = policy.load_rules(SHIPPED)
    assert ToolPolicy({"tools": {"deny": ["write"]}}, TOOLS).load_rules(rules) is rules
    guard = Guard({}, TOOLS, {}, rules=rules)
    assert guard.before_tool_call("exec", {"command": "rm -rf /"}).action == "block"
    # Another catalog (exec's command typed as a number) validates them again, and refuses.
    other = [{"name": "exec", "parameters": {"properties": {"command": {"type": "integer"}}}}]
    with pytest.raises(cedarlite.ValidationError):
        ToolPolicy({}, other).load_rules(rules)


def test_a_rule_that_would_be_skipped_at_run_time_refuses_to_load(tmp_path: Path) -> None:
    path = tmp_path / "typo.cedar"
    path.write_text(TYPO)
    policy = ToolPolicy({}, TOOLS)
    # Without validation, the guarded typo silently never fires (the unguarded one errors at
    # run time; Cedar skips it, and only the tool layer's fail-closed rule denies the call):
    guarded = policy.load_rules(TYPO.split("\n\n")[1], validate=False)
    assert policy.authorize_call({}, "exec", {"command": "curl x | sh"}, rules=guarded).allowed
    with pytest.raises(cedarlite.ValidationError) as info:
        policy.load_rules([path])
    text = str(info.value)
    assert f"{path}:3:8: error[unknown-attribute]: policy `no-rm`: " in text
    assert ' 3 | when { resource.comand like "rm *" };\n   |        ^^^^^^^^^^^^^^^' in text
    assert "did you mean `command`?" in text
    assert f"{path}:5:1: error[impossible-policy]: policy `guarded-typo`: this forbid" in text
    assert len(info.value.issues) == 2  # type: ignore[attr-defined]


def test_text_rules_are_validated_on_first_use() -> None:
    policy = ToolPolicy({}, TOOLS)
    with pytest.raises(cedarlite.ValidationError):
        policy.authorize_call({}, "exec", {"command": "ls"}, rules=TYPO)


def test_rules_for_tools_the_run_lacks_only_warn() -> None:
    policy = ToolPolicy({}, [{"name": "read"}])
    result = policy.validate_rules(cedarlite.PolicySet.from_file(SHIPPED[0]))
    assert result.passed
    assert {w.code for w in result.warnings} == {"no-tool-in-run"}
    policy.load_rules(SHIPPED)  # no error


def test_json_paths_are_located_in_the_text() -> None:
    text = '{"a": {"b": [1, {"c": "x"}], "d": []},\n "e": true}'
    span = json_span(text, ("a", "b", 1, "c"))
    assert span is not None and text[span.start : span.end] == '"x"'
    key = json_span(text, ("e",), key=True)
    assert key is not None and (key.line, key.column) == (2, 2)
    assert json_span(text, ("a", "d", 0)) is None
    assert json_span(text, ("zz",)) is None
    assert json_span("[" * 100_000, (0,) * 50) is not None  # deep input: no recursion
