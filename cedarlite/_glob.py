"""Wildcard matching in time linear in the input: Cedar's ``like`` and the tool-name globs.

A pattern whose only special character is ``*`` is a list of literal *segments* separated by
wildcards: ``"*curl *|*sh*"`` is ``("", "curl ", "|", "sh", "")``. A string matches when it
starts with the first segment, ends with the last, and holds the middle ones in order, without
overlap, in between. Taking each middle segment at its leftmost occurrence is optimal (a later
occurrence only leaves less room for the segments after it), so one ``str.find`` per segment
decides the match: O(n·m) at worst for a string of length n and a pattern of length m, linear in
practice, and never the exponential backtracking of a regex with several ``.*``.

Patterns are compiled once into :data:`Segments` (the AST keeps ``like`` patterns as tuples
of literal strings and :data:`~cedarlite.lang.ast.WILDCARD`; tool globs are plain text).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

Segments = tuple[str, ...]
"""The literal parts of a pattern, split at its wildcards (one element: no wildcard)."""

LINE_TERMINATORS = "\n\r\u2028\u2029"
"""What a tool glob's ``*`` does not match (JavaScript's line terminators)."""

# A single character class, split on: linear, no backtracking possible.
_LINE_BREAK = re.compile(f"([{LINE_TERMINATORS}])")


@lru_cache(maxsize=4096)
def like_segments(pattern: tuple[Any, ...]) -> Segments:
    """The segments of a ``like`` pattern (a tuple of strings and ``WILDCARD``).

    Adjacent literal elements are joined and runs of wildcards count as one; every
    non-string element is a wildcard.
    """
    segments = [""]
    for element in pattern:
        if element.__class__ is str:
            segments[-1] += element
        elif len(segments) == 1 or segments[-1]:
            segments.append("")
    return tuple(segments)


def match(segments: Segments, s: str) -> bool:
    """Whether ``s`` matches the pattern whose segments are ``segments`` (``*`` matches any
    run of characters, newlines included)."""
    if len(segments) == 1:
        return s == segments[0]
    first, last = segments[0], segments[-1]
    pos, end = len(first), len(s) - len(last)
    if end < pos or not s.startswith(first) or not s.endswith(last):
        return False
    for middle in segments[1:-1]:
        if middle:
            found = s.find(middle, pos, end)
            if found < 0:
                return False
            pos = found + len(middle)
    return True


# Characters from the most to the least frequent in commands, paths and prose (letters by their
# English frequency, then path punctuation, digits, capitals; any other character is rarer).
_FREQUENT = " etaoinsrhldcumfpgwybvkxjqz/.-0123456789_ETAOINSRHLDCUMFPGWYBVKXJQZ"


def rarity(char: str) -> int:
    """How rare ``char`` is in commands, paths and prose (higher: rarer). Indexes of many
    literals key each by its rarest character, so that a string that holds none of the rare
    characters skips most of them."""
    rank = _FREQUENT.find(char)
    return len(_FREQUENT) if rank < 0 else rank


GlobLines = tuple[tuple[str, ...], tuple[Segments, ...]]
"""A tool glob split at its line terminators: the terminators, and each line's segments."""


@lru_cache(maxsize=4096)
def compile_glob(glob: str) -> GlobLines:
    """A tool glob (``*`` is the only special character, docs/tool-policy.md §3.3) ready for
    :func:`match_glob`."""
    parts = _LINE_BREAK.split(glob)
    return tuple(parts[1::2]), tuple(tuple(line.split("*")) for line in parts[0::2])


def match_glob(compiled: GlobLines, name: str) -> bool:
    """Whether ``name`` matches a compiled tool glob, whose ``*`` matches any run of characters
    other than line terminators.

    A ``*`` cannot cross a line terminator, so each terminator of ``name`` is matched by one of
    the glob's literal text, in order: the two have the same terminators, and each line of
    ``name`` matches the corresponding line of the glob.
    """
    terminators, lines = compiled
    if len(lines) == 1 and _LINE_BREAK.search(name) is None:  # the usual case: one line
        return match(lines[0], name)
    parts = _LINE_BREAK.split(name)
    if tuple(parts[1::2]) != terminators:
        return False
    return all(match(segs, line) for segs, line in zip(lines, parts[0::2], strict=True))
