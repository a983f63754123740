"""The language's lexical facts that both the parser and the runtime need: reserved
identifiers, the rules for identifiers and entity type names, and the wildcard element of
``like`` patterns. (Kept out of :mod:`cedarlite.lang.ast` so that deciding from a compiled policy
set never builds the syntax tree classes.)
"""

from __future__ import annotations

import re
from functools import lru_cache

RESERVED = frozenset({"true", "false", "if", "then", "else", "in", "like", "has", "is"})
"""Identifiers that cannot name attributes, record keys, entity types or variables."""

# A single run of identifier characters: one linear pass, nothing to backtrack.
_IDENT = re.compile(r"[_a-zA-Z][_a-zA-Z0-9]*+")


def is_valid_ident(name: str) -> bool:
    """``name`` is an identifier that may be used as an attribute name or path segment."""
    return _IDENT.fullmatch(name) is not None and name not in RESERVED


@lru_cache(maxsize=4096)
def is_valid_type_name(name: str) -> bool:
    """``name`` is a normalized entity type path (``A::B``, no spaces, nothing reserved)."""
    return all(is_valid_ident(seg) and seg != "__cedar" for seg in name.split("::"))


def is_action_type(type_name: str) -> bool:
    """``Action`` or ``NS::Action``: the entity types of actions and action groups."""
    return type_name == "Action" or type_name.endswith("::Action")


class _Wildcard:
    """The ``*`` element of a ``like`` pattern."""

    _instance: _Wildcard | None = None

    def __new__(cls) -> _Wildcard:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "WILDCARD"

    def __reduce__(self) -> str:
        return "WILDCARD"


WILDCARD = _Wildcard()
"""The wildcard element of a :class:`Like` pattern; other elements are literal strings."""

PatternElem = str | _Wildcard
