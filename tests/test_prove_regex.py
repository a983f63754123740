"""The string tests as regular expressions (cedarlite.analysis._regex): the merged formula is
equivalent to the original, the lazy one answers as the whole one does, and proofs over long
`like` lists agree with an enumeration of short strings."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from cedarlite import is_authorized
from cedarlite.analysis import prove
from cedarlite.analysis._regex import LazyPatterns, one_regex

z3 = pytest.importorskip("z3")

ALPHABET = "ab."
# A `like` pattern as its pieces: text over a small alphabet, or None for `*`.
pieces = st.lists(st.one_of(st.none(), st.text(ALPHABET, min_size=1, max_size=2)), max_size=4)


def regex(pattern: list[str | None]) -> object:
    anything = z3.Full(z3.ReSort(z3.StringSort()))
    parts = [anything if p is None else z3.Re(p) for p in pattern]
    if not parts:
        return z3.Re("")
    return parts[0] if len(parts) == 1 else z3.Concat(*parts)


def formulas(s: object, t: object) -> st.SearchStrategy[object]:
    """Boolean combinations of string tests on two terms, as ``simplify`` leaves them."""
    atoms = st.one_of(
        pieces.map(lambda p: z3.InRe(s, regex(p))),
        pieces.map(lambda p: z3.InRe(t, regex(p))),
        st.text(ALPHABET, max_size=3).map(lambda w: s == z3.StringVal(w)),
        st.text(ALPHABET, min_size=1, max_size=3).map(lambda w: z3.PrefixOf(z3.StringVal(w), s)),
        st.text(ALPHABET, min_size=1, max_size=3).map(lambda w: z3.SuffixOf(z3.StringVal(w), t)),
        st.text(ALPHABET, min_size=1, max_size=3).map(lambda w: z3.Contains(s, z3.StringVal(w))),
        st.just(z3.Length(s) > 2),
        # What a forbid's list becomes: a long union to avoid.
        st.lists(pieces, min_size=4, max_size=8).map(
            lambda ps: z3.Not(z3.Or(*[z3.InRe(s, regex(p)) for p in ps]))
        ),
    )
    return st.recursive(
        atoms,
        lambda inner: st.one_of(
            inner.map(z3.Not),
            st.lists(inner, min_size=2, max_size=6).map(lambda xs: z3.And(*xs)),
            st.lists(inner, min_size=2, max_size=6).map(lambda xs: z3.Or(*xs)),
        ),
        max_leaves=14,
    )


S, T = z3.String("s"), z3.String("t")
# Every assignment of short strings: the oracle (the solver itself may answer unknown on the
# very mixes of `contains` and regular expressions that one_regex removes).
WORDS = ["".join(c) for n in range(4) for c in itertools.product(ALPHABET, repeat=n)]
VALUES = [(z3.StringVal(a), z3.StringVal(b)) for a in WORDS for b in WORDS[:13]]


def truth_table(f: object) -> list[bool]:
    out = []
    for a, b in VALUES:
        value = z3.simplify(z3.substitute(f, (S, a), (T, b)))
        assert z3.is_true(value) or z3.is_false(value), value
        out.append(z3.is_true(value))
    return out


def solve(f: object) -> tuple[object, object]:
    solver = z3.Solver()
    solver.set("timeout", 5_000)
    solver.add(f)
    return solver.check(), solver


@settings(max_examples=settings.default.max_examples)
@given(formulas(S, T))
def test_merging_is_an_equivalence(f: object) -> None:
    assert truth_table(one_regex(z3, f)) == truth_table(f)


@settings(max_examples=settings.default.max_examples)
@given(formulas(S, T))
def test_the_lazy_formula_answers_as_the_whole_one(f: object) -> None:
    merged = one_regex(z3, f)
    lazy = LazyPatterns(z3, merged)
    event("patterns left out" if lazy.tests else "nothing to leave out")
    for _ in range(100):
        answer, solver = solve(lazy.formula())
        if answer != z3.sat or not lazy.refine(solver.model()):
            break
    if answer == z3.sat:  # a model of the lazy formula that needs no more is the whole's
        assert z3.is_true(solver.model().eval(merged, model_completion=True))
    elif answer == z3.unsat:  # and a proof on it is a proof of the whole
        assert not any(truth_table(f))


def test_only_unions_to_avoid_are_left_out() -> None:
    union = z3.Union(*[regex([None, w, None]) for w in ("a", "b", "ab", "ba", "..")])
    assert not LazyPatterns(z3, z3.InRe(S, union)).tests  # to match: kept whole
    avoided = LazyPatterns(z3, z3.Not(z3.InRe(S, union)))
    assert len(avoided.tests) == 1
    assert avoided.formula().eq(z3.Not(z3.InRe(S, z3.Empty(union.sort()))))
    complement = LazyPatterns(
        z3, z3.InRe(S, z3.Intersect(regex(["a", None]), z3.Complement(union)))
    )
    assert len(complement.tests) == 1
    # An intersection to match is the same list, negated member by member.
    each = z3.Intersect(*[z3.Complement(regex([None, w, None])) for w in ("a", "b", "ab", "..")])
    lazy = LazyPatterns(z3, z3.InRe(S, each))
    assert len(lazy.tests) == 1
    assert lazy.formula().eq(z3.InRe(S, z3.Full(each.sort())))
    # A test that occurs both ways, or under another operator, is kept whole.
    both = z3.And(z3.InRe(S, union), z3.Or(z3.Not(z3.InRe(S, union)), T == "a"))
    assert not LazyPatterns(z3, both).tests
    assert not LazyPatterns(z3, z3.If(z3.InRe(S, union), T == "a", T == "b")).tests
    # Short unions are kept whole: a round of the solver costs more than they do.
    assert not LazyPatterns(z3, z3.Not(z3.InRe(S, z3.Union(regex(["a"]), regex(["b"]))))).tests


SCHEMA = """
entity U;
entity D = { s: String };
action a appliesTo { principal: U, resource: D };
"""


def like(pattern: list[str | None]) -> str:
    return '"' + "".join("*" if p is None else p for p in pattern) + '"'


@settings(max_examples=settings.default.max_examples // 2)
@given(pieces, st.lists(pieces, min_size=4, max_size=10))
def test_proofs_over_like_lists_meet_no_short_string(allow: list, deny: list[list]) -> None:
    # The shape of the shipped rules: a permit, and a forbid with a long `like` list. A proof
    # that nothing is allowed must hold for every string; these have up to 4 characters.
    policies = (
        f"permit (principal, action, resource) when {{ resource.s like {like(allow)} }};\n"
        "forbid (principal, action, resource) when { "
        + " || ".join(f"resource.s like {like(p)}" for p in deny)
        + " };"
    )
    r = prove("always-denies", policies, schema=SCHEMA, timeout=60)
    assert r.holds is not None, r.reason
    event("proved" if r.holds else "refuted")
    if r.holds:
        for n in range(5):
            for chars in itertools.product(ALPHABET, repeat=n):
                entities = [{"uid": {"type": "D", "id": "d"}, "attrs": {"s": "".join(chars)},
                             "parents": []}]  # fmt: skip
                request = {"principal": {"type": "U", "id": "u"},
                           "action": {"type": "Action", "id": "a"},
                           "resource": {"type": "D", "id": "d"}, "context": {}}  # fmt: skip
                assert not is_authorized(request, policies, entities).allowed, chars
