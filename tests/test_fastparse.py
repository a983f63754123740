"""The fast parser for valid text (:mod:`cedarlite.lang.parse.fast`) against the LALR parser.

:func:`cedarlite.lang.parse.parse_policies` tries the fast parser first and runs the LALR parser
only when it gives up, so the fast parser must never accept a text the LALR parser rejects,
nor build a different tree. Every check here runs both on the same text and asserts that
either the fast parser gave up, or both accept and build the same policies: ids, annotations,
scopes, conditions, trees, and the span of every policy, scope, condition and node (AST
equality ignores spans, so they are compared apart). Texts: the whole Cedar corpus, the
repository's policies, the parse-differential seeds, generated policy sets (which the fast
parser must accept), mutated, truncated and garbage texts, and nesting around the limits.
"""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path
from typing import Any

import pytest
from corpus import corpus_files
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_parse_differential import FRAGMENTS, SNIPPETS, mutations

from cedarlite import testing
from cedarlite.errors import ParseError
from cedarlite.lang import ast
from cedarlite.lang.parse import MAX_NESTING, parse_policies
from cedarlite.lang.parse.fast import parse_valid
from cedarlite.lang.parse.lalr import parse_lalr

ROOT = Path(__file__).resolve().parent.parent
THOROUGH = os.environ.get("HYPOTHESIS_PROFILE") == "thorough"
EXAMPLES = 3000 if THOROUGH else 200
_SUPPRESS = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]


def _layout(policies: list[ast.Policy]) -> list[Any]:
    """Everything AST equality leaves out: every span, with the node kinds in walk order."""
    out: list[Any] = []
    for p in policies:
        out.append((p.id, p.span, p.principal.span, p.action.span, p.resource.span))
        out.append(dict(p.annotations))
        for c in p.conditions:
            out.append(c.span)
            out.extend((type(n).__name__, n.span) for n in ast.walk(c.body))
    return out


def check(text: str, *, strict: bool = False, must_accept: bool = False) -> bool:
    """Both parsers agree on ``text``; returns whether the fast parser accepted it."""
    fast = parse_valid(text, strict)
    try:
        slow: list[ast.Policy] | ParseError = parse_lalr(text, None, strict)
    except ParseError as err:
        slow = err
    if fast is None:
        assert not must_accept, f"the fast parser gave up on a valid text:\n{text}"
        return False
    assert not isinstance(slow, ParseError), f"fast parser accepted an invalid text:\n{text}"
    assert fast == slow, f"different trees:\n{text}"
    assert _layout(fast) == _layout(slow), f"different spans:\n{text}"
    return True


# ---------------------------------------------------------------------------------------------
# Real texts


def _corpus_texts() -> list[str]:
    return [data.decode() for name, data in corpus_files().items() if name.endswith(".cedar")]


def test_whole_corpus() -> None:
    """Every policy text of the Cedar corpus: accepted by the fast parser, the same result."""
    texts = _corpus_texts()
    assert len(texts) > 7000
    for text in texts:
        check(text, must_accept=True)
        if "startsWith" in text or "endsWith" in text:
            check(text, strict=True)


def _repo_texts() -> list[tuple[str, str]]:
    files = [
        p
        for p in ROOT.rglob("*.cedar")
        if not any(part.startswith(".") or part == "node_modules" for part in p.parts)
    ]
    out = [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8")) for p in sorted(files)]
    for md in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        blocks = re.findall(r"```cedar\n(.*?)```", md.read_text(encoding="utf-8"), re.S)
        out += [(f"{md.name} block {i}", b) for i, b in enumerate(blocks)]
    return out


@pytest.mark.parametrize(("name", "text"), _repo_texts())
def test_repository_policies(name: str, text: str) -> None:
    """The shipped policies, the examples, the fixtures and the docs' Cedar blocks."""
    check(text)
    check(text, strict=True)


@pytest.mark.parametrize("text", SNIPPETS)
def test_seed_snippets(text: str) -> None:
    """The parse-differential seeds, valid and invalid ones, plus each one truncated."""
    check(text)
    check(text, strict=True)
    for cut in range(1, len(text), 7):
        check(text[:cut])


# ---------------------------------------------------------------------------------------------
# Generated texts

printed = testing.policy_sets(depth=3, max_policies=4).map(lambda ps: ps.to_cedar())


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=_SUPPRESS)
@given(printed)
def test_generated_policy_sets(text: str) -> None:
    """Printed random policy sets: valid, so the fast parser must accept them."""
    check(text, must_accept=True)
    check(text, strict=True)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=_SUPPRESS)
@given(st.one_of(st.sampled_from(SNIPPETS), printed).flatmap(mutations))
def test_mutated_texts(text: str) -> None:
    """One to three random edits (tokens, characters, escapes, brackets, slots...)."""
    check(text)
    check(text, strict=True)


@settings(max_examples=EXAMPLES // 3, deadline=None, suppress_health_check=_SUPPRESS)
@given(
    st.one_of(
        st.text(max_size=200),
        st.lists(st.sampled_from(FRAGMENTS), max_size=40).map("".join),
        printed.flatmap(lambda t: st.integers(0, len(t)).map(lambda n: t[:n])),
    )
)
def test_garbage_and_truncated_texts(text: str) -> None:
    """Arbitrary text, fragment soup and truncated policy sets."""
    check(text)


# ---------------------------------------------------------------------------------------------
# Hostile shapes: long chains, deep nesting around the limits, huge literals

_WHEN = "permit(principal, action, resource) when { %s };"

CHAINS = {
    "||": " || ".join(f"context.x == {i}" for i in range(1000)),
    "&&": " && ".join("context.x == 999" for _ in range(1000)),
    "+ -": " + ".join(["context.x", "2 - 1"] * 500) + " == 999000",
    "*": " * ".join(["context.x"] * 1000) + " == 0",
    ".contains ||": " || ".join(f'["c{i}", "d{i}"].contains(context.s)' for i in range(1000)),
    "if cascade": "if context.a then 1 else " * 300 + "0",
    ".a": "context" + ".a" * 1200,
    '["a"]': "context" + '["a"]' * 1200,
}


@pytest.mark.parametrize("name", CHAINS)
def test_long_chains(name: str) -> None:
    """Chains are one level however long: accepted (when under the depth limit)."""
    accepted = check(_WHEN % CHAINS[name])
    assert accepted == (name not in (".a", '["a"]'))  # 1,200 accesses nest 1,201 deep


@pytest.mark.parametrize("run", [998, 999, 1000, 1001])
@pytest.mark.parametrize("access", [".a", '["a"]', ".isEmpty()"])
def test_member_access_runs_at_the_limit(run: int, access: str) -> None:
    """A run of accesses nests one level each: 999 after a leaf is the deepest valid one."""
    assert check(_WHEN % ("[]" + access * run)) == (run < MAX_NESTING)


NESTINGS = {  # opening, leaf, closing, and the tree levels each repetition adds
    "redundant ( )": ("(", "1", ")", 1),
    "!( )": ("!(", "true", ")", 1),
    "-( )": ("-(", "1", ")", 1),
    "sets": ("[", "1", "]", 1),
    "records": ("{a: ", "1", "}", 1),
    "records after an entry": ("{b: 1, a: ", "1", "}", 1),
    "if in then": ("if true then ", "1", " else 0", 1),
    "if in condition": ("if ", "true", " then 1 else 2", 1),
    "calls": ("ip(", '"1.2.3.4"', ")", 1),
    "method args": ("[1].contains(", "1", ")", 1),
    "method receiver": ("(", "[1]", ").contains(1)", 1),
    "operators": ("context.a || context.b && 1 == 2 + 3 * -context.f.contains(", "1", ")", 7),
    "is in": ("context.a is T in (", "context", ")", 1),
    "prefixes and parentheses": ("!!(", "true", ")", 2),
}


@pytest.mark.parametrize("name", NESTINGS)
@pytest.mark.parametrize("depth", [250, 499, 998, 999, 1000, 1001, 2600, 9000])
def test_nesting_around_the_limits(name: str, depth: int) -> None:
    """Nesting at, under and over :data:`MAX_NESTING` (and the parser's stack limit): the
    fast parser accepts only what the LALR parser accepts, with the same tree."""
    opening, leaf, closing, levels = NESTINGS[name]
    reps = depth // levels
    accepted = check(_WHEN % (opening * reps + leaf + closing * reps))
    if reps * levels < MAX_NESTING - 2:
        assert accepted, "the fast parser gave up on a valid nesting"


@pytest.mark.parametrize(
    "body",
    [
        "-9223372036854775808",
        "- 9223372036854775808",
        "--9223372036854775808",
        "-(9223372036854775808)",
        "9223372036854775808",
        "-9223372036854775808.foo",
        "[-9223372036854775808, 9223372036854775807]",
        "-9223372036854775809",
        "0000000000000000000000009223372036854775807",
        "1" * 5000,
        "-(5) == -5 && - - 5 == 5 && -(-5) == 5",
        '"' + "a" * 100_000 + '"',
        '"\\u{10FFFF}\\u{D7FF}\\x7f\\*"',
        '"a" like "\\*\\u{2a}**"',
        '" - - 9223372036854775807 == 1',  # an unterminated string (found by `thorough`)
        '"a" like "',
        '{"a": 1} has "',
        'context["',
        "!!!!true",
        "!!!!!true",
        "----5",
        "-----5",
        "!-5",
        "-!true",
    ],
)
def test_literals_and_prefixes(body: str) -> None:
    """Integer range with minus folding, huge literals, escapes, prefix limits."""
    check(_WHEN % body)


@pytest.mark.parametrize(
    "text",
    [
        '@a(") permit(principal, action, resource);',
        'permit(principal == User::", action, resource);',
        'permit(principal, action in [Action::"],, resource);',
        'permit(principal, action, resource) when { {": 1} };',
        'permit(principal, action, resource) when { "a" like "\\" };',
    ],
)
def test_unterminated_strings_anywhere(text: str) -> None:
    """A lone `"` (an unterminated literal) is never read as a string."""
    assert not check(text)


def test_whitespace_comments_and_lines() -> None:
    """Spans across lines, comments, Unicode whitespace and carriage returns."""
    text = (
        '// head\r\n@id("a")\u2028@b\n  permit (\n principal\tis\xa0User in Group::"g",\n'
        '  action in [Action::"r", NS::Action::"w",],\n  resource == ?resource,\n) // c\n'
        'when { context.x\n  // inner\n  < 3 &&\n "multi\nline" like "m*" }\n'
        "unless { principal has a.b.c };\n"
    )
    assert check(text)


def test_fast_constructors_match_the_node_classes() -> None:
    """The fields the fast parser sets without ``__init__`` are all the fields there are."""
    expected = {
        ast.Lit: {"value"},
        ast.Variable: {"var"},
        ast.GetAttr: {"expr", "attr"},
        ast.Binary: {"op", "left", "right"},
    }
    for cls, names in expected.items():
        assert {f.name for f in dataclasses.fields(cls)} == names | {"span", "_hash"}, cls
    from cedarlite.source import Span

    assert [f.name for f in dataclasses.fields(Span)] == ["start", "end", "line", "column"]


def test_parse_policies_uses_the_fast_parser_and_keeps_lalr_errors() -> None:
    """A valid text never reaches the LALR parser; an invalid one gets the LALR's error."""
    ok = "permit(principal, action, resource) when { context.a < 3 };"
    assert parse_policies(ok) == parse_valid(ok)
    with pytest.raises(ParseError) as err:
        parse_policies("permit(principal, action, resource) when { 1 < 2 < 3 };")
    assert "multiple relational operators" in err.value.message
    deep = _WHEN % ("[" * (MAX_NESTING + 1) + "1" + "]" * (MAX_NESTING + 1))
    assert parse_valid(deep) is None
    with pytest.raises(ParseError, match="nested too deeply"):
        parse_policies(deep)


_ESCAPE_PIECES = ("a", "ü", "*", "\n", "\\", "\\n", "\\r", "\\t", "\\\\", "\\0", "\\'", '\\"')
_ESCAPE_PIECES += ("\\x41", "\\x7f", "\\x80", "\\xg", "\\u{41}", "\\u{1F600}", "\\u{D800}")
_ESCAPE_PIECES += ("\\u{10FFFF}", "\\u{110000}", "\\u{}", "\\u{0000041}", "\\u{41", "\\q", "\\*")


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.lists(st.sampled_from(_ESCAPE_PIECES), max_size=8).map("".join))
def test_string_escapes_decode_as_the_lalr_parser_does(body: str) -> None:
    """String literals with every kind of escape, valid and invalid."""
    check(_WHEN % f'{{"{body}": "{body}"}} has "{body}"')


def test_parsed_texts_are_kept_within_a_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """Parsing a text again returns equal policies from the cache (a new list each time);
    strictness is part of the key, errors are not kept, and the budget evicts oldest first."""
    from cedarlite.lang import parse as parser

    monkeypatch.setattr(parser, "_cache", {})
    monkeypatch.setattr(parser, "_cache_chars", 0)
    monkeypatch.setattr(parser, "PARSE_CACHE_CHARS", 1600)
    texts = [_WHEN % f"context.n == {i}" for i in range(40)]  # 48 or 49 characters each
    first = parse_policies(texts[0])
    again = parse_policies(texts[0])
    assert again == first and again is not first and _layout(again) == _layout(first)
    assert parse_policies(texts[0], strict=True) == first
    assert set(parser._cache) == {(texts[0], False), (texts[0], True)}
    for text in texts:
        parse_policies(text)
    assert parser._cache_chars <= 1600
    assert (texts[-1], False) in parser._cache and (texts[0], False) not in parser._cache
    with pytest.raises(ParseError):
        parse_policies(_WHEN % "1 <")
    assert (_WHEN % "1 <", False) not in parser._cache
    big = _WHEN % ("context.n == 1 || " * 10 + "true")  # over a sixteenth of the budget
    parse_policies(big)
    assert (big, False) not in parser._cache
