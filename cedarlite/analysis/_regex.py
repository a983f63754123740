"""String tests as regular expressions for z3: what makes the rules' ``like`` lists provable.

The shipped rules test one argument against hundreds of ``like`` patterns. Two steps turn
that from a timeout at any budget into a proof in a second or so:

* :func:`one_regex` merges the tests on one string term under each ``and``/``or``/``not``
  into one membership in a regular expression (intersection, union, complement). As separate
  atoms they leave z3's string solver to case-split over them; one regular expression is one
  automaton that its derivatives explore.
* :class:`LazyPatterns` leaves out, at first, the patterns a request must *avoid* (a forbid's
  list, negated: a union to stay out of, or an intersection of complements), and adds back
  those a candidate model matches. With fewer patterns to avoid the formula is weaker: its
  ``unsat`` is a proof of the whole, and a model that matches none of the left-out patterns
  is a model of the whole.

Both are exact: the merged formula is equivalent to the original, test for test, and the
lazy one reaches the original at worst (every pattern added back).
"""

from __future__ import annotations

from typing import Any

__all__ = ["LazyPatterns", "one_regex"]


def one_regex(z3: Any, formula: Any) -> Any:
    """``formula`` with the string tests on each term under each ``and``/``or``/``not``
    merged into one membership: ``t == "s"``, ``prefixof``, ``suffixof`` and ``contains``
    (what ``simplify`` makes of simple patterns) count as memberships too."""
    done: dict[int, Any] = {}
    stack = [(formula, False)]
    while stack:  # post-order, without recursion in the formula's depth
        e, ready = stack.pop()
        key = e.get_id()
        if key in done:
            continue
        kids = e.children() if z3.is_and(e) or z3.is_or(e) or z3.is_not(e) else []
        if not ready and kids:
            stack.append((e, True))
            stack.extend((k, False) for k in kids if k.get_id() not in done)
            continue
        if not kids:
            done[key] = e
        elif z3.is_not(e):
            inner = done[kids[0].get_id()]
            m = _membership(z3, inner)
            done[key] = z3.InRe(m[0], z3.Complement(m[1])) if m else z3.Not(inner)
        else:
            done[key] = _merged(z3, e, [done[k.get_id()] for k in kids])
    return done[formula.get_id()]


def _merged(z3: Any, e: Any, kids: list[Any]) -> Any:
    """The ``and``/``or`` ``e`` of ``kids``, with the memberships of each term made one."""
    groups: dict[int, tuple[Any, list[Any]]] = {}
    rest = []
    for k in kids:
        m = _membership(z3, k)
        if m is None:
            rest.append(k)
        else:
            groups.setdefault(m[0].get_id(), (m[0], []))[1].append(m[1])
    combine = z3.Intersect if z3.is_and(e) else z3.Union
    out = [z3.InRe(t, rs[0] if len(rs) == 1 else combine(*rs)) for t, rs in groups.values()]
    out += rest
    if len(out) == 1:
        return out[0]
    return z3.And(*out) if z3.is_and(e) else z3.Or(*out)


def _membership(z3: Any, e: Any) -> tuple[Any, Any] | None:
    """``(term, regex)`` when ``e`` tests one string term against a regular language."""
    if not z3.is_app(e) or e.num_args() != 2:
        return None
    a, b = e.arg(0), e.arg(1)
    anything = z3.Full(z3.ReSort(z3.StringSort()))
    if z3.is_app_of(e, z3.Z3_OP_SEQ_IN_RE):
        return a, b
    if z3.is_eq(e) and z3.is_string(a):
        if z3.is_string_value(b):
            return a, z3.Re(b)
        if z3.is_string_value(a):
            return b, z3.Re(a)
    elif z3.is_app_of(e, z3.Z3_OP_SEQ_PREFIX) and z3.is_string_value(a):
        return b, z3.Concat(z3.Re(a), anything)
    elif z3.is_app_of(e, z3.Z3_OP_SEQ_SUFFIX) and z3.is_string_value(a):
        return b, z3.Concat(anything, z3.Re(a))
    elif z3.is_app_of(e, z3.Z3_OP_SEQ_CONTAINS) and z3.is_string_value(b):
        return a, z3.Concat(anything, z3.Re(b), anything)
    return None


class LazyPatterns:
    """``formula`` (from :func:`one_regex`) with the members of its long intersections and
    unions left out at first, and added back from candidate models (:meth:`refine`) until a
    model needs none of the rest.

    Leaving a member out makes the formula weaker where the membership test is positive and
    the regex an intersection (a forbid's list of patterns, negated and merged: the request
    must avoid each), or the test negative and the regex a union (polarities counted through
    ``not`` and ``re.complement``). Only tests that occur with one polarity are relaxed, and
    only groups of :data:`SMALL` members or more (a round of the solver costs more than a
    short group saves); a member added back is relaxed in turn.
    """

    SMALL = 4

    def __init__(self, z3: Any, formula: Any) -> None:
        self.z3 = z3
        self.whole = formula
        #: The relaxed membership tests: (test, term, positive).
        self.tests: list[tuple[Any, Any, bool]] = []
        #: Per (test, regex node) z3 ids: the node's members, those added back, and whether
        #: it is a union (else an intersection).
        self.groups: dict[tuple[int, int], tuple[list[Any], set[int], bool]] = {}
        for test, positive in _polar_tests(z3, formula):
            nodes: dict[int, tuple[Any, list[Any], set[bool]]] = {}
            self._polarities(test.arg(1), positive, nodes)
            found = False
            for key, (node, members, polarities) in nodes.items():
                union = z3.is_app_of(node, z3.Z3_OP_RE_UNION)
                if polarities == {not union} and len(members) >= self.SMALL:
                    self.groups[test.get_id(), key] = (members, set(), union)
                    found = True
            if found:
                self.tests.append((test, test.arg(0), positive))

    def _polarities(
        self, r: Any, positive: bool, out: dict[int, tuple[Any, list[Any], set[bool]]]
    ) -> None:
        """Each intersection and union in the regex ``r`` (z3 nests them two by two: a chain
        of one operator is one, with its members), with the polarities it occurs in."""
        z3 = self.z3
        if z3.is_app_of(r, z3.Z3_OP_RE_COMPLEMENT):
            self._polarities(r.arg(0), not positive, out)
        elif _is_group(z3, r):
            entry = out.get(r.get_id())
            if entry is None:
                entry = out[r.get_id()] = (r, _members(z3, r), set())
            entry[2].add(positive)
            for k in entry[1]:
                self._polarities(k, positive, out)

    def formula(self) -> Any:
        """The formula with only the members added back so far in each group."""
        if not self.tests:
            return self.whole
        z3 = self.z3
        pairs = [
            (test, z3.InRe(term, self._rebuild(test.get_id(), test.arg(1))))
            for test, term, _ in self.tests
        ]
        return z3.substitute(self.whole, *pairs)

    def _rebuild(self, test: int, r: Any) -> Any:
        z3 = self.z3
        group = self.groups.get((test, r.get_id()))
        if group is not None:
            members, kept, union = group
            chosen = [self._rebuild(test, m) for i, m in enumerate(members) if i in kept]
            if not chosen:
                return z3.Empty(r.sort()) if union else z3.Full(r.sort())
            return chosen[0] if len(chosen) == 1 else (z3.Union if union else z3.Intersect)(*chosen)
        for op, make in (
            (z3.Z3_OP_RE_COMPLEMENT, z3.Complement),
            (z3.Z3_OP_RE_INTERSECT, z3.Intersect),
            (z3.Z3_OP_RE_UNION, z3.Union),
        ):
            if z3.is_app_of(r, op):
                return make(*[self._rebuild(test, k) for k in r.children()])
        return r

    def refine(self, model: Any) -> bool:
        """Add back the members that ``model``'s strings need (in a union: those they match;
        in an intersection: those they do not); ``False`` when none is left out that matters
        (``model`` is then a model of the whole formula)."""
        z3 = self.z3
        grew = False
        for test, term, positive in self.tests:
            value = model.eval(term, model_completion=True)
            grew |= self._refine(test.get_id(), test.arg(1), value, positive)
        if not grew and not z3.is_true(model.eval(self.whole, model_completion=True)):
            # Not expected (each difference is a member left out); the whole formula then.
            for members, kept, _ in self.groups.values():
                if len(kept) < len(members):
                    kept.update(range(len(members)))
                    grew = True
        return grew

    def _refine(self, test: int, r: Any, value: Any, positive: bool) -> bool:
        z3 = self.z3
        group = self.groups.get((test, r.get_id()))
        if group is not None:
            members, kept, union = group
            grew = False
            for i, m in enumerate(members):
                if i not in kept:
                    inside = z3.simplify(z3.InRe(value, m))
                    # Not decided counts as needed: adding back is always sound.
                    if z3.is_false(inside) if union else z3.is_true(inside):
                        continue
                    kept.add(i)
                    grew = True
                grew |= self._refine(test, m, value, positive)
            return grew
        if z3.is_app_of(r, z3.Z3_OP_RE_COMPLEMENT):
            return self._refine(test, r.arg(0), value, not positive)
        grew = False
        if _is_group(z3, r):
            for k in _members(z3, r):
                grew |= self._refine(test, k, value, positive)
        return grew


def _is_group(z3: Any, r: Any) -> bool:
    return z3.is_app_of(r, z3.Z3_OP_RE_INTERSECT) or z3.is_app_of(r, z3.Z3_OP_RE_UNION)


def _members(z3: Any, r: Any) -> list[Any]:
    """The members of the chain of ``r``'s operator (intersection or union) that ``r`` heads."""
    kind = r.decl().kind()
    out, stack = [], [r]
    while stack:
        x = stack.pop()
        if z3.is_app_of(x, kind):
            stack.extend(reversed(x.children()))
        else:
            out.append(x)
    return out


def _polar_tests(z3: Any, formula: Any) -> list[tuple[Any, bool]]:
    """The ``str.in_re`` tests of ``formula`` that occur with one polarity only (``True``:
    positive), through ``and``, ``or``, ``not`` and ``=>``; anywhere else, both."""
    seen: set[tuple[int, int]] = set()
    polarity: dict[int, set[int]] = {}
    tests: dict[int, Any] = {}
    stack = [(formula, 1)]
    while stack:
        e, pol = stack.pop()
        if (e.get_id(), pol) in seen or not z3.is_app(e):
            continue
        seen.add((e.get_id(), pol))
        if z3.is_app_of(e, z3.Z3_OP_SEQ_IN_RE):
            polarity.setdefault(e.get_id(), set()).add(pol)
            tests[e.get_id()] = e
        elif z3.is_and(e) or z3.is_or(e):
            stack.extend((k, pol) for k in e.children())
        elif z3.is_not(e):
            stack.append((e.arg(0), -pol))
        elif z3.is_implies(e):
            stack += [(e.arg(0), -pol), (e.arg(1), pol)]
        else:
            stack.extend((k, 0) for k in e.children())
    return [
        (tests[k], 1 in pols) for k, pols in polarity.items() if len(pols) == 1 and 0 not in pols
    ]
