"""Names, aliases, patterns and agent ids (spec §3, §5.1)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cedarlite.tools.catalog import CORE_GROUPS
from cedarlite.tools.names import (
    JS_WHITESPACE,
    dedupe,
    expand,
    norm,
    norm_agent_id,
    pattern_of,
    trim_lower,
)


@pytest.mark.parametrize(
    ("raw", "normalized"),
    [
        ("read", "read"),
        (" WEB_* ", "web_*"),
        ("BASH", "exec"),
        (" bash\t", "exec"),
        ("Apply-Patch", "apply_patch"),
        ("bash*", "bash*"),  # aliases apply to whole names only
        ("constructor", "constructor"),
        ("\u00a0\u3000exec\ufeff", "exec"),  # JavaScript whitespace
        (5, ""),
        (None, ""),
        ("   ", ""),
    ],
)
def test_norm(raw: object, normalized: str) -> None:
    assert norm(raw) == normalized


def test_python_only_whitespace_is_not_trimmed() -> None:
    # U+0085 and U+001F are whitespace for Python's str.strip() but not for JavaScript's trim().
    assert norm("\x85read\x1f") == "\x85read\x1f"
    assert "\x85" not in JS_WHITESPACE


@given(st.text())
def test_norm_is_idempotent(text: str) -> None:
    assert norm(norm(text)) == norm(text)


def test_only_star_is_special_in_patterns() -> None:
    q = pattern_of("web_?earch")
    assert q is not None and q.kind == "exact"
    brackets = pattern_of("sessions_[a-z]*")
    assert brackets is not None and not brackets.matches("sessions_list")
    assert brackets.matches("sessions_[a-z]list")
    assert pattern_of("a.c*") is not None and not pattern_of("a.c*").matches("abc")  # type: ignore[union-attr]


def test_star_does_not_span_line_terminators() -> None:
    glob = pattern_of("a*b")
    assert glob is not None and glob.matches("a-x-b") and glob.matches("ab")
    for terminator in "\n\r\u2028\u2029":
        assert not glob.matches(f"a{terminator}b")
    everything = pattern_of("*")
    assert everything is not None and everything.matches("a\nb") and everything.matches("")


def test_blank_entries_have_no_pattern() -> None:
    assert pattern_of("  ") is None and pattern_of(3) is None


def test_expand_groups_normalizes_and_dedupes() -> None:
    assert expand(["group:fs", "READ", "group:xyz", "", 3, "Group:Web"], CORE_GROUPS) == [
        "read",
        "write",
        "edit",
        "apply_patch",
        "ls",  # OpenClaw 2026.9's file listing joins group:fs
        "group:xyz",
        "web_search",
        "web_fetch",
        "x_search",
    ]


def test_dedupe_compares_like_javascript() -> None:
    assert dedupe(["a", "a", 1, True, "1", 1.0]) == ["a", 1, True, "1"]


@pytest.mark.parametrize(
    ("raw", "agent"),
    [
        (" Ops Team ", "ops-team"),
        ("Coder", "coder"),
        ("", "main"),
        ("   ", "main"),
        ("!!!", "main"),
        ("a" * 70, "a" * 64),
        ("--x--", "x"),
        ("já ok", "j-ok"),
        ("\u212aelvin", "kelvin"),  # not ASCII, so lower-cased first: the Kelvin sign is "k"
        (None, "main"),
    ],
)
def test_norm_agent_id(raw: object, agent: str) -> None:
    assert norm_agent_id(raw) == agent


def test_trim_lower_has_no_aliases() -> None:
    assert trim_lower(" BASH ") == "bash" and trim_lower(None) == ""
