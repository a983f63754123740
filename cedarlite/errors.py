"""The error hierarchy. Errors are data: a stable code, a one-line message, a span, optional help.

Every exception cedarlite raises on bad input is a :class:`CedarliteError`; foreign exceptions
(Lark's, ``json``'s, ``RecursionError``) are converted at the boundary where they occur.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from .source import Located, Span, render_snippet


class CedarliteError(Located, Exception):
    """Root of every error cedarlite raises on bad input.

    ``message`` is one lowercase line with user input in backticks; ``span`` (when known) locates
    it in ``text`` (the source it came from, named ``source``); ``help`` is an optional hint.
    ``str(err)`` renders ``source:line:column: message`` followed by a caret snippet.
    """

    code: str = "E0000"

    def __init__(
        self,
        message: str,
        *,
        span: Span | None = None,
        text: str | None = None,
        source: str | None = None,
        help: str | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.span = span
        self.text = text
        self.source = source
        self.help = help
        if code is not None:
            self.code = code

    def location(self) -> str:
        """``source:line:column`` (parts that are unknown are left out)."""
        parts = [self.source or "<input>"]
        if self.span is not None:
            parts += [str(self.span.line), str(self.span.column)]
        return ":".join(parts)

    def one_line(self) -> str:
        """``source:line:column: message (help)`` on one line (for logs and hook answers)."""
        help = f" ({self.help})" if self.help else ""
        return f"{self.location()}: {self.message}{help}"

    def render(self) -> str:
        """The full diagnostic: location, message, caret snippet and help."""
        out = f"{self.location()}: error[{self.code}]: {self.message}"
        if self.span is not None and self.text is not None:
            out += "\n" + render_snippet(self.text, self.span)
        if self.help:
            out += f"\n  = help: {self.help}"
        return out

    def to_json(self) -> dict[str, object]:
        """The diagnostic as a JSON object (the CLI's ``--error-format json``): ``severity``,
        ``code``, ``message``, ``source``, ``line``, ``column`` (1-based; ``null`` when
        unknown) and ``help``."""
        return {
            "severity": "error",
            "code": self.code,
            "message": self.message,
            "source": self.source,
            "line": self.line,
            "column": self.column,
            "help": self.help,
        }

    def __str__(self) -> str:
        return self.render()

    def __reduce__(self):  # pragma: no cover - pickling support for multiprocessing users
        return (
            _rebuild,
            (type(self), self.message, self.span, self.text, self.source, self.help, self.code),
        )


def did_you_mean(name: str, candidates: Iterable[str]) -> str | None:
    """``did you mean `x`?`` for the closest candidate, if one is close (an error's help)."""
    match = difflib.get_close_matches(name, sorted(set(candidates)), n=1)
    return f"did you mean `{match[0]}`?" if match else None


def _rebuild(cls, message, span, text, source, help, code):  # pragma: no cover
    return cls(message, span=span, text=text, source=source, help=help, code=code)


class ArgumentError(CedarliteError, ValueError):
    """A Python argument that is none of the values it may take (``engine="refrence"``); a
    :class:`ValueError` too, as Python's own argument errors are."""

    code = "E0020"


class ParseError(CedarliteError):
    """Policy text that is not valid Cedar (syntax, or a parse-time rule of the language)."""

    code = "E0100"


class EntitiesError(CedarliteError):
    """Entity JSON that is malformed or does not conform to the schema."""

    code = "E0200"


class RequestError(CedarliteError):
    """A request whose principal, action, resource or context is malformed or invalid."""

    code = "E0300"


class SchemaError(CedarliteError):
    """A schema (human-readable or JSON) that is malformed or inconsistent."""

    code = "E0400"


class ValidationError(CedarliteError):
    """A policy that does not typecheck against a schema (see :func:`cedarlite.validate`)."""

    code = "E0500"


class PolicySetError(CedarliteError):
    """Misuse of a policy set: duplicate ids, unknown templates, bad links."""

    code = "E0600"


class EvaluationError(CedarliteError):
    """An expression that failed at evaluation time (missing attribute, type error, overflow...).

    During authorization these never escape: the policy is skipped and the error is reported in
    :attr:`cedarlite.Response.errors`. ``message`` follows the Rust engine's wording.
    """

    code = "E0700"

    def __init__(self, message: str, **kwargs) -> None:
        super().__init__(message, **kwargs)

    def render(self) -> str:
        if self.span is None:
            return self.message
        return super().render()


class CacheError(CedarliteError):
    """A cache directory that cannot be trusted with code: not owned by the current user,
    writable by others, a symbolic link, or impossible to create (``source`` names it)."""

    code = "E0750"
