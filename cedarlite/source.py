"""Source positions and the one function that renders a caret snippet."""

from __future__ import annotations

from dataclasses import dataclass


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


def render_snippet(text: str, span: Span, *, width: int = 1) -> str:
    """The source line holding ``span`` with a caret line under the spanned characters.

    ```
      3 | permit(principal, action, resource) when { 1 + };
        |                                                ^
    ```
    """
    lines = text.splitlines() or [""]
    index = min(span.line, len(lines)) - 1
    line = lines[index].expandtabs(1)
    start_col = span.column - 1
    if span.end > span.start and span.line == index + 1:
        # Underline up to the end of the span or of the line, whichever comes first.
        width = max(1, min(span.end - span.start, len(line) - start_col))
    gutter = str(span.line)
    pad = " " * len(gutter)
    caret = " " * start_col + "^" * max(1, width)
    return f" {gutter} | {line}\n {pad} | {caret}"
