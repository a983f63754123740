"""Strings the policies cannot tell apart: a replay decides one of them for all.

A policy that reads a string argument only through ``like`` patterns and equality with
string literals (the shipped argument rules read ``command`` and ``path`` no other way) sees
of the string only which of those tests it passes. :class:`StringTests` computes that as one
number, a bit per test: two strings with the same number are the same to every such policy, so
a replay decides one call and reuses the answer for the calls that differ only there
(``git diff src/a.py`` and ``git diff src/b.py`` pass the same tests of ``exec``'s rules).
Which arguments are read only this way is :class:`~cedarlite.impact.reads.ArgumentReads`'s
analysis.

The number is exact (a test's bit is set exactly when :func:`cedarlite._glob.match` holds) and
costs time linear in the string for a fixed set of tests: one dictionary lookup for the
equalities, one C call to rule out every prefix and one every suffix, and one scan per rare
character of the infix literals; a test is matched in full only when its literal is there.
"""

from __future__ import annotations

from collections.abc import Iterable

from .._glob import Segments, match, rarity

#: Tests that share an anchor: ``(segments or None, bit)``; ``None`` when the anchor alone is
#: the test (``like "git *"`` once the string starts with ``git ``).
_Tests = tuple[tuple[Segments | None, int], ...]


class StringTests:
    """The ``like`` and equality tests of one string (``tests``: their segments, an equality
    with ``"s"`` is ``("s",)``); :meth:`key` is the set of tests a string passes."""

    __slots__ = ("_exact", "_groups", "_keys", "_prefix", "_prefixes", "_suffix", "_suffixes")

    def __init__(self, tests: Iterable[Segments]) -> None:
        exact: dict[str, int] = {}
        prefix: dict[int, dict[str, list[tuple[Segments | None, int]]]] = {}
        suffix: dict[int, dict[str, list[tuple[Segments | None, int]]]] = {}
        inner: dict[str, dict[str, list[tuple[Segments | None, int]]]] = {}
        for number, segments in enumerate(sorted(set(tests))):
            bit = 1 << number
            first, last = segments[0], segments[-1]
            if len(segments) == 1:
                exact[first] = exact.get(first, 0) | bit
            elif first:  # anchored at the start: `git *`, `git * --output*`
                whole = len(segments) == 2 and not last
                table = prefix.setdefault(len(first), {})
                table.setdefault(first, []).append((None if whole else segments, bit))
            elif last:  # anchored at the end: `*.env`, `*/proc/*/environ`
                whole = len(segments) == 2
                table = suffix.setdefault(len(last), {})
                table.setdefault(last, []).append((None if whole else segments, bit))
            else:  # `*.ssh/*`, `*a*b*`: keyed by the longest literal's rarest character
                literal = max(segments, key=len)
                if not literal:
                    continue  # `like "*"`: every string passes, no bit needed
                whole = len(segments) == 3
                table = inner.setdefault(max(literal, key=rarity), {})
                table.setdefault(literal, []).append((None if whole else segments, bit))
        self._exact = exact
        self._prefix = _frozen(prefix)
        self._prefixes = tuple(s for _, table in self._prefix for s in table)
        self._suffix = _frozen(suffix)
        self._suffixes = tuple(s for _, table in self._suffix for s in table)
        self._keys = tuple(inner)
        self._groups = {
            key: tuple((literal, tuple(tests)) for literal, tests in table.items())
            for key, table in inner.items()
        }

    def key(self, text: str) -> int:
        """The tests ``text`` passes, one bit each."""
        bits = self._exact.get(text, 0)
        if text.startswith(self._prefixes):
            for length, table in self._prefix:
                found = table.get(text[:length])
                if found is not None:
                    bits |= _passed(found, text)
        if text.endswith(self._suffixes):
            for length, table in self._suffix:
                found = table.get(text[-length:])  # (a shorter text is no key: too short)
                if found is not None:
                    bits |= _passed(found, text)
        groups = self._groups
        for char in self._keys:  # (loops, as in `contains_any`: `in` is the fast test)
            if char in text:
                for literal, found in groups[char]:
                    if literal in text:
                        bits |= _passed(found, text)
        return bits


def _frozen(
    tables: dict[int, dict[str, list[tuple[Segments | None, int]]]],
) -> tuple[tuple[int, dict[str, _Tests]], ...]:
    return tuple(
        (length, {anchor: tuple(tests) for anchor, tests in table.items()})
        for length, table in sorted(tables.items())
    )


def _passed(tests: _Tests, text: str) -> int:
    bits = 0
    for segments, bit in tests:
        if segments is None or match(segments, text):
            bits |= bit
    return bits
