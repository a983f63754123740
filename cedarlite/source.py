"""Source positions and the one function that renders a caret snippet."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Span:
    """A region of source text: 0-based character offsets and 1-based line/column of its start.

    Spans are carried by AST nodes and errors; AST equality ignores them.
    """

    start: int
    end: int
    line: int
    column: int

    @staticmethod
    def at(text: str, start: int, end: int | None = None) -> Span:
        """The span of ``text[start:end]`` with its line and column computed from ``text``."""
        start = max(0, min(start, len(text)))
        end = start if end is None else max(start, min(end, len(text)))
        line = text.count("\n", 0, start) + 1
        column = start - (text.rfind("\n", 0, start) + 1) + 1
        return Span(start, end, line, column)


class Located:
    """Mixin for things with an optional ``span``: their 1-based ``line`` and ``column``."""

    __slots__ = ()
    span: Span | None

    @property
    def line(self) -> int | None:
        """1-based line, when known."""
        return self.span.line if self.span else None

    @property
    def column(self) -> int | None:
        """1-based column, when known."""
        return self.span.column if self.span else None


def render_snippet(text: str, span: Span, *, width: int = 1) -> str:
    """The source line holding ``span`` with a caret line under the spanned characters.

    ```
      3 | permit(principal, action, resource) when { 1 + };
        |                                                ^
    ```
    """
    lines = text.splitlines()
    # A span just past a final newline is on an empty last line: show that line, not the one
    # before it under the wrong number.
    line = lines[span.line - 1].expandtabs(1) if 0 < span.line <= len(lines) else ""
    start_col = span.column - 1
    if span.end > span.start:
        # Underline up to the end of the span or of the line, whichever comes first.
        width = max(1, min(span.end - span.start, len(line) - start_col))
    if len(line) > SNIPPET_WIDTH:  # a long line (a huge literal, deep nesting): a window on it
        first = max(0, min(start_col - SNIPPET_WIDTH // 4, len(line) - SNIPPET_WIDTH))
        shown = line[first : first + SNIPPET_WIDTH]
        head = "..." if first else ""
        tail = "..." if first + SNIPPET_WIDTH < len(line) else ""
        line = head + shown + tail
        start_col += len(head) - first
        width = max(1, min(width, len(head) + len(shown) - start_col))
    gutter = str(span.line)
    pad = " " * len(gutter)
    caret = " " * start_col + "^" * max(1, width)
    return f" {gutter} | {line}\n {pad} | {caret}"


SNIPPET_WIDTH = 120
"""Characters of a source line shown in an error snippet (longer lines show a window)."""


# ---------------------------------------------------------------------------------------------
# String literals (policies and schemas share Rust's escape rules)


_SIMPLE_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\", "0": "\0", "'": "'", '"': '"'}


def clip(text: str, limit: int = 40) -> str:
    """``text`` shortened to ``limit`` characters for a message (names, keys and literals come
    from callers and can be huge)."""
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


class BadEscape(ValueError):
    """An invalid escape at ``raw[start:end]`` of a string literal's body."""

    def __init__(self, start: int, end: int) -> None:
        super().__init__(start, end)
        self.start, self.end = start, end


def decode_literal(raw: str, wildcard: Any = None) -> list[Any]:
    """Decode the body of a string literal (Rust escape rules; raises :class:`BadEscape`).

    With a ``wildcard`` marker (decoding a ``like`` pattern), an unescaped ``*`` becomes that
    marker and ``\\*`` a literal star; the result alternates literal strings and markers.
    """
    pattern = wildcard is not None
    if "\\" not in raw and not (pattern and "*" in raw):
        return [raw] if raw else []
    out: list[Any] = []
    buf: list[str] = []
    i, n = 0, len(raw)
    while i < n:
        ch = raw[i]
        if ch == "*" and pattern:
            if buf:
                out.append("".join(buf))
                buf = []
            out.append(wildcard)
            i += 1
            continue
        if ch != "\\":
            buf.append(ch)
            i += 1
            continue
        esc, end = _escape_at(raw, i, pattern)
        if esc is None:
            raise BadEscape(i, end)
        buf.append(esc)
        i = end
    if buf:
        out.append("".join(buf))
    return out


def _escape_at(raw: str, i: int, pattern: bool) -> tuple[str | None, int]:
    """Decode the escape starting at ``raw[i] == '\\'``: (text or None if invalid, end index)."""
    if i + 1 >= len(raw):
        return None, i + 1
    c = raw[i + 1]
    if c in _SIMPLE_ESCAPES:
        return _SIMPLE_ESCAPES[c], i + 2
    if c == "*" and pattern:
        return "*", i + 2
    if c == "x":
        digits = raw[i + 2 : i + 4]
        if len(digits) == 2 and all(d in "0123456789abcdefABCDEF" for d in digits):
            value = int(digits, 16)
            return (chr(value) if value <= 0x7F else None), i + 4
        return None, min(len(raw), i + 2 + len(digits))
    if c == "u" and raw[i + 2 : i + 3] == "{":
        close = raw.find("}", i + 3)
        if close == -1:
            return None, len(raw)
        digits = raw[i + 3 : close]
        if 1 <= len(digits) <= 6 and all(d in "0123456789abcdefABCDEF" for d in digits):
            value = int(digits, 16)
            if value <= 0x10FFFF and not 0xD800 <= value <= 0xDFFF:
                return chr(value), close + 1
        return None, close + 1
    return None, i + 2
