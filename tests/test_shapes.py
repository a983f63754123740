"""The shape-cached parser (large sets) always equals the full parser, errors included."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cedarlite import ParseError, testing
from cedarlite.lang.parse import parse_policies
from cedarlite.lang.parse.shapes import MIN_POLICIES, parse_fast
from cedarlite.lang.printer import print_policies

N = settings.default.max_examples

_LITERAL = re.compile(r'"(?:[^"\\]|\\.)*"|\b[0-9]+\b')

# Replacement literals: ordinary, escaped, wildcard-bearing, invalid escapes, limits.
string_bodies = st.one_of(
    st.text(
        alphabet=st.characters(blacklist_characters='"\\', blacklist_categories=("Cs",)), max_size=6
    ),
    st.sampled_from([r"\n", r"\*", "*", "a*b", r"\u{1F600}", r"\x41", r"\q", r"\x80", "", "k"]),
)
ints = st.one_of(
    st.integers(0, 10**6),
    st.sampled_from([0, 9223372036854775807, 9223372036854775808, 10**20]),
)


def outcome(parse, text):
    try:
        return ("ok", parse(text))
    except ParseError as err:
        return ("error", err.message, err.line, err.column)


@settings(max_examples=N)
@given(testing.policy_sets(max_policies=3), st.data())
def test_fast_path_equals_full_parser(ps, data):
    base = print_policies(list(ps))
    copies = []
    for _ in range(MIN_POLICIES // max(1, len(ps)) + 2):

        def swap(m: re.Match[str]) -> str:
            if m.group()[0] == '"':
                return '"' + data.draw(string_bodies) + '"'
            return str(data.draw(ints))

        copies.append(_LITERAL.sub(swap, base))
    text = '\n// a comment; with "quotes"\r// and a carriage return\n'.join(copies)
    fast, full = outcome(parse_fast, text), outcome(parse_policies, text)
    assert fast == full


def test_large_sets_take_the_fast_path_and_keep_policy_spans():
    text = "\n".join(
        f'@id("p{i}")\npermit (principal == User::"u{i}", action, resource) '
        f'when {{ context.n == {i} && context.s like "a*{i}" }};'
        for i in range(100)
    )
    fast = parse_fast(text)
    full = parse_policies(text)
    assert fast == full
    assert [p.span for p in fast] == [p.span for p in full]
    assert fast[5].conditions[0].body.span is None  # inner spans: PolicySet.spanned


def test_sets_of_mostly_distinct_shapes_go_to_the_full_parser():
    """Past the first MIN_POLICIES policies, more than one new shape in four means a
    hand-written set: the full parser reads it (faster there), inner spans included."""
    ops = ["==", "!=", "<", "<=", ">", ">="]
    text = "\n".join(
        f"permit (principal, action, resource) when {{ context.a{i % 7} {ops[i % 6]} 1 && "
        + " && ".join(["context.n > 1"] * (i + 1))
        + " };"
        for i in range(3 * MIN_POLICIES)
    )
    fast = parse_fast(text)
    assert fast == parse_policies(text)
    assert fast[-1].conditions[0].body.span is not None


@pytest.mark.parametrize(
    "bad, message",
    [
        ('when { "\\q" }', "the input `\\q` is not a valid escape"),
        ("when { 9223372036854775808 }", "integer literal `9223372036854775808` is too large"),
        ('when { {"a": 1, "a": 2} }', "duplicate key `a` in record literal"),
    ],
)
def test_errors_in_large_sets_come_from_the_full_parser(bad, message):
    good = [
        f'permit (principal == User::"u{i}", action, resource) when {{ {i} == {i} }};'
        for i in range(60)
    ]
    good[40] = f"permit (principal, action, resource) {bad};"
    with pytest.raises(ParseError) as err:
        parse_fast("\n".join(good))
    assert err.value.message == message
    assert err.value.line == 41
