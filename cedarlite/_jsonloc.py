"""Where a JSON path is in JSON text: line and column for findings on configuration files.

``json.loads`` keeps no positions, so a finding about ``agents.list[1].tools.deny`` (a path)
is located by scanning the text once more: one pass, one token at a time, no recursion (the
depth of the document costs a list entry per level, never a stack frame).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from typing import Any

from .data.values import quote_string
from .source import Span

# One token: a string, a number or literal, or punctuation. Each alternative matches without
# backtracking over the input (a string is a run of non-special characters and escapes).
_TOKEN = re.compile(
    r'[ \t\r\n]*(?:(?P<str>"(?:[^"\\]|\\.)*")|(?P<atom>[-+.0-9a-zA-Z]+)|(?P<punct>[{}\[\]:,]))'
)


def _tokens(text: str) -> Iterator[tuple[str, str, int, int]]:
    """The JSON tokens of ``text``: (kind, token, start, end); stops at the first character
    that starts no token (the end, or text that is not JSON)."""
    pos = 0
    while (m := _TOKEN.match(text, pos)) is not None:
        pos = m.end()
        kind = m.lastgroup or ""
        yield kind, m.group(kind), m.start(kind), pos


def _key(kind: str, token: str) -> str | None:
    """The name of an object key token (``None`` if it is not a JSON string)."""
    try:
        name = json.loads(token) if kind == "str" else None
    except ValueError:
        return None
    return name if isinstance(name, str) else None


def json_span(text: str, path: Sequence[str | int], *, key: bool = False) -> Span | None:
    """The span of the value at ``path`` in the JSON ``text`` (of its key when ``key``).

    Returns ``None`` when the text does not hold that path (or is not JSON). Scalars are
    spanned whole, objects and arrays by their opening bracket.
    """
    target = tuple(path)
    # One frame per open container: [is an object, its path, the current index, awaiting a key].
    frames: list[list[Any]] = []
    at: tuple[str | int, ...] = ()  # the path of the next value
    for kind, token, start, end in _tokens(text):
        frame = frames[-1] if frames else None
        if frame is not None and frame[0] and frame[3] and token != "}":  # a member's key
            name = _key(kind, token)
            if name is None:
                return None
            at, frame[3] = (*frame[1], name), False
            if key and at == target:
                return Span.at(text, start, end)
        elif token == ":":
            continue
        elif token == ",":
            if frame is None:
                return None
            if frame[0]:
                frame[3] = True
            else:
                frame[2] += 1
                at = (*frame[1], frame[2])
        elif token in "}]":
            if frame is None:
                return None
            frames.pop()
        else:  # a value starts here
            if not key and at == target:
                return Span.at(text, start, start + (1 if token in "{[" else len(token)))
            if token == "{":
                frames.append([True, at, 0, True])
            elif token == "[":
                frames.append([False, at, 0, False])
                at = (*at, 0)
            elif frame is None:
                return None  # a scalar document: nothing inside it
    return None


def duplicate_key_span(text: str) -> Span | None:
    """The span of the first object key in the JSON ``text`` that repeats an earlier key of
    the same object, or ``None`` (no duplicate, or not JSON). One pass, no recursion."""
    # One frame per open container: the keys seen so far (None for an array), awaiting a key.
    frames: list[list[Any]] = []
    for kind, token, start, end in _tokens(text):
        frame = frames[-1] if frames else None
        if frame is not None and frame[0] is not None and frame[1] and token != "}":
            name = _key(kind, token)
            if name is None:
                return None
            if name in frame[0]:
                return Span.at(text, start, end)
            frame[0].add(name)
            frame[1] = False
        elif token == ",":
            if frame is None:
                return None
            frame[1] = frame[0] is not None
        elif token in "}]":
            if not frames:
                return None
            frames.pop()
            if not frames:
                return None
        elif token == "{":
            frames.append([set(), True])
        elif token == "[":
            frames.append([None, False])
        elif frame is None and token != ":":
            return None  # a scalar document
    return None


# Identifiers joined by `::` (disjoint from identifier characters), possessive: linear.
_PLAIN_SEGMENT = re.compile(r"[_a-zA-Z][_a-zA-Z0-9]*+(?:::[_a-zA-Z][_a-zA-Z0-9]*+)*+")


def json_path_text(path: Sequence[str | int]) -> str:
    """``entityTypes.User.shape`` (keys that are not names are written ``["a b"]``)."""
    out = ""
    for segment in path:
        if isinstance(segment, int):
            out += f"[{segment}]"
        elif _PLAIN_SEGMENT.fullmatch(segment):
            out += f".{segment}" if out else segment
        else:
            out += f"[{quote_string(segment)}]"
    return out
