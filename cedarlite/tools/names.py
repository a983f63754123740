"""Tool names, allow/deny entries and patterns (docs/tool-policy.md §3, §5.1).

Every comparison in the tool-policy layer happens on *normalized* strings: :func:`norm` trims
JavaScript whitespace, lower-cases and maps the aliases (``bash`` → ``exec``). Entries of allow
and deny lists expand core groups (:func:`expand`) and become patterns (:func:`pattern_of`) in
which only ``*`` is special. Agent ids have their own normalization (:func:`norm_agent_id`).

These are pure functions on strings; :mod:`cedarlite.tools.compile` uses them to expand entries
against a catalog when it writes Cedar policies.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterable
from typing import Any, NamedTuple

from .._glob import compile_glob, match_glob

#: JavaScript's ``String.prototype.trim`` whitespace (docs/tool-policy.md §3.1).
JS_WHITESPACE = (
    "\t\n\x0b\x0c\r \u00a0\u1680"
    + "".join(chr(c) for c in range(0x2000, 0x200B))
    + "\u2028\u2029\u202f\u205f\u3000\ufeff"
)

#: Whole-name aliases (docs/tool-policy.md §3.1).
ALIASES: dict[str, str] = {"bash": "exec", "apply-patch": "apply_patch"}


def js_trim(value: str) -> str:
    """``value.trim()`` as JavaScript defines it."""
    return value.strip(JS_WHITESPACE)


def js_truthy(value: Any) -> bool:
    """JavaScript truthiness of a JSON value (``0``, ``""``, ``false``, ``null`` are falsy)."""
    if value is None or value is False:
        return False
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value != 0 and value == value
    if isinstance(value, str):
        return value != ""
    return True


def trim_lower(value: Any) -> str:
    """Trimmed and lower-cased (no aliases): plugin ids, byProvider keys, channel ids.

    Anything that is not a string gives ``""``.
    """
    return js_trim(value).lower() if isinstance(value, str) else ""


def norm(value: Any) -> str:
    """The normalized form of a tool name or list entry (docs/tool-policy.md §3.1).

    Not a string → ``""``; otherwise trimmed, lower-cased, then replaced through the alias table
    (whole names only: ``bash*`` stays ``bash*``).
    """
    if not isinstance(value, str):
        return ""
    lowered = js_trim(value).lower()
    return ALIASES.get(lowered, lowered)


# Agent ids come from the run context. Both patterns are single character classes with a
# bounded or final repetition: each is matched in one linear pass, with no backtracking.
_AGENT_ID_OK = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}", re.IGNORECASE | re.ASCII)
_AGENT_ID_BAD_RUN = re.compile(r"[^a-z0-9_-]+")


def norm_agent_id(value: Any) -> str:
    """``normAgentId`` (docs/tool-policy.md §5.1): a lower-case id of at most 64 ``[a-z0-9_-]``
    characters.

    ``" Ops Team "`` → ``ops-team``; empty, blank or unusable values → ``main``.
    """
    text = js_trim(value) if isinstance(value, str) else ""
    if not text:
        return "main"
    if _AGENT_ID_OK.fullmatch(text):
        return text.lower()
    cleaned = _AGENT_ID_BAD_RUN.sub("-", text.lower()).strip("-")[:64]
    return cleaned or "main"


def dedupe(items: Iterable[Any]) -> list[Any]:
    """``items`` without repetitions, first occurrence kept (exact JSON-value comparison).

    ``1`` and ``true`` and ``"1"`` are different entries, as in JavaScript's ``===``.
    """
    seen: set[Hashable] = set()
    out: list[Any] = []
    for item in items:
        key = identity(item)
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out


def identity(value: Any) -> Hashable:
    """A key equal for values JavaScript's ``===`` finds equal (``1`` and ``1.0`` are)."""
    if isinstance(value, bool | str) or value is None:
        return (type(value).__name__, value)
    if isinstance(value, int | float):
        return ("number", value)
    return ("object", id(value))  # objects and arrays are only equal to themselves


# ---------------------------------------------------------------------------------------------
# Patterns


# A named tuple, not a dataclass: this module loads in every hook process (one per tool call),
# where a dataclass costs ~1 ms to create and a named tuple a tenth of that.
class Pattern(NamedTuple):
    """One compiled entry: ``*`` (everything), an exact name, or a glob.

    ``kind`` is ``"all"``, ``"exact"`` or ``"glob"``; ``text`` the normalized entry.
    """

    kind: str
    text: str

    def matches(self, name: str) -> bool:
        """Whether a normalized name matches this pattern."""
        if self.kind == "all":
            return True
        if self.kind == "exact":
            return name == self.text
        return glob_match(self.text, name)


def pattern_of(entry: Any) -> Pattern | None:
    """The pattern of one entry (docs/tool-policy.md §3.3), or ``None`` for an entry that is
    blank."""
    text = norm(entry)
    if not text:
        return None
    if text == "*":
        return Pattern("all", text)
    if "*" not in text:
        return Pattern("exact", text)
    return Pattern("glob", text)


def glob_match(glob: str, name: str) -> bool:
    """Whether ``name`` matches ``glob``, anchored at both ends, each ``*`` matching any run of
    characters other than line terminators (docs/tool-policy.md §3.3); linear in ``name``."""
    return match_glob(compile_glob(glob), name)


def expand(entries: Iterable[Any], groups: dict[str, tuple[str, ...]]) -> list[str]:
    """Core group expansion (docs/tool-policy.md §3.2): normalize, drop blanks, replace group keys,
    dedupe."""
    out: list[str] = []
    for entry in entries:
        text = norm(entry)
        if not text:
            continue
        out.extend(groups.get(text, (text,)))
    return dedupe(out)
