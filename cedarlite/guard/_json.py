"""JSON text of hostile values, at any depth, in one linear pass.

The guard hashes tool-call parameters and results (loop detection, remembered approvals) and
writes them to the decision log. Both may be huge and nested 100,000 levels deep, so
:func:`encode` walks values with an explicit stack (never Python recursion) and does everything
in that one walk: canonical form for hashing (sorted keys, numbers by value), checking that
parameters are JSON, and redaction of secrets for the log.

Strings are escaped by the ``json`` module's C escaper; a flat object of scalars (most tool
arguments) takes a shorter path that produces exactly the same text as the walk.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from .._sha import sha256 as _sha256
from . import redact as _redact

escape = json.encoder.encode_basestring_ascii
_END: Any = object()
_REDACTED_TEXT = escape(_redact.REDACTED)
_TRUNCATED_TEXT = escape(_redact.TRUNCATED)

#: Parameters nested deeper than this are refused (a tool's arguments never come close; the
#: cap keeps every later stage, hooks included, far from Python's recursion limit).
MAX_PARAM_DEPTH = 256


class NotJSON(ValueError):
    """A value that is not JSON where JSON is required; ``path`` is its JSON pointer."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.message = message
        self.path = path


# Modes for values that are not JSON: raise NotJSON, write a JSON string, write a bare token
# (never valid JSON, so it cannot collide with a string; used only for hashing).
STRICT = "strict"
STRING = "string"
TOKEN = "token"


def encode(
    value: Any,
    *,
    sort_keys: bool = False,
    normalize: bool = False,
    other: str = STRING,
    redact: bool = False,
    prefix: str = "",
    max_depth: int = 0,
    cut_depth: int = 0,
) -> tuple[str, list[str]]:
    """JSON text of ``value`` and the JSON pointers of the values redacted in it.

    ``sort_keys`` orders object keys; ``normalize`` writes numbers by value (``5.0`` as ``5``);
    ``other`` says what becomes of non-JSON values (:data:`STRICT`, :data:`STRING`,
    :data:`TOKEN`; tuples are arrays unless strict); ``redact`` replaces secrets
    (:mod:`cedarlite.guard.redact`) and lists their pointers, each prefixed by ``prefix``;
    ``max_depth`` (with :data:`STRICT`) refuses deeper nesting; ``cut_depth`` writes containers
    nested deeper as :data:`~cedarlite.guard.redact.TRUNCATED` and lists them with the
    redacted values (so that common JSON parsers can read the text). ASCII output, linear
    time.
    """
    if value.__class__ is dict:
        flat = _flat(value, sort_keys, redact, prefix)
        if flat is not None:
            return flat
    out: list[str] = []
    emit = out.append
    text: str
    key: Any
    redacted: list[str] = []
    # A frame: [items iterator, closing bracket, is object, items emitted, current key/index].
    stack: list[list[Any]] = []
    item = value
    while True:
        cls = item.__class__
        if cls is str:
            if redact:
                scrubbed = _redact.scrub(item)
                if scrubbed is not None:
                    item = scrubbed
                    redacted.append(_pointer(prefix, stack))
            emit(escape(item))
        elif item is None:
            emit("null")
        elif item is True:
            emit("true")
        elif item is False:
            emit("false")
        elif cls is int:
            emit(_int(item, other, stack))
        elif cls is float:
            emit(_float(item, normalize, other, stack))
        elif (
            cls is dict
            or cls is list
            or isinstance(item, Mapping | list)
            or (cls is tuple and other != STRICT)
        ):
            if cut_depth and len(stack) >= cut_depth:
                emit(_TRUNCATED_TEXT)
                redacted.append(_pointer(prefix, stack))
            elif max_depth and len(stack) >= max_depth:
                raise NotJSON(f"nested deeper than {max_depth} levels", _pointer("", stack))
            elif not item:
                emit("{}" if isinstance(item, Mapping) else "[]")
            elif isinstance(item, Mapping):
                pairs = [(_key(k, other, stack), k, v) for k, v in item.items()]
                if redact:
                    pairs = _scrub_keys(pairs, prefix, stack, redacted)
                if sort_keys:
                    pairs.sort(key=_sort_key)
                emit("{")
                stack.append([iter(pairs), "}", True, 0, None])
            else:
                emit("[")
                stack.append([iter(item), "]", False, 0, None])
        elif isinstance(item, str):  # subclasses of the JSON types
            item = str(item)
            continue
        elif isinstance(item, int) and not isinstance(item, bool):
            emit(_int(int(item), other, stack))
        elif isinstance(item, float):
            emit(_float(float(item), normalize, other, stack))
        else:
            emit(_other(item, other, stack))
        # Advance to the next value to write, closing finished containers.
        while stack:
            frame = stack[-1]
            nxt = next(frame[0], _END)
            if nxt is _END:
                emit(frame[1])
                stack.pop()
                continue
            if frame[3]:
                emit(",")
            frame[3] += 1
            if frame[2]:
                text, key, item = nxt
                frame[4] = key
                emit(text)
                emit(":")
                if redact and _redact.secret_key(key if key.__class__ is str else str(key)):
                    emit(_REDACTED_TEXT)
                    redacted.append(_pointer(prefix, stack))
                    continue
            else:
                frame[4] = frame[3] - 1
                item = nxt
            break
        else:
            return "".join(out), redacted


def canonical(value: Any) -> str:
    """The canonical JSON of call parameters: sorted keys, numbers by value, ASCII.

    Raises :class:`NotJSON` for anything that is not a JSON value (non-string keys,
    non-finite numbers, other Python objects) or nests deeper than :data:`MAX_PARAM_DEPTH`.
    """
    return encode(value, sort_keys=True, normalize=True, other=STRICT, max_depth=MAX_PARAM_DEPTH)[0]


def plain(value: Any) -> bool:
    """Whether ``value`` is certainly JSON that :func:`canonical` accepts without walking it: a
    ``dict`` of strings, booleans, nulls and integers of :func:`canonical`'s range under
    string keys (most tool arguments). ``False`` says nothing: :func:`canonical` decides."""
    if value.__class__ is not dict:
        return False
    for k, v in value.items():
        cls = v.__class__
        if k.__class__ is not str:
            return False
        if cls is int:
            if not -_BIG < v < _BIG:
                return False
        elif not (cls is str or cls is bool or v is None):
            return False
    return True


def _flat(
    value: dict[Any, Any], sort_keys: bool, redact: bool, prefix: str
) -> tuple[str, list[str]] | None:
    """What the walk writes for the common case, an object of strings, integers, booleans and
    nulls under string keys; ``None`` for anything else (the walk then does it)."""
    if sort_keys and redact:
        return None  # never needed; the walk lists pointers in the sorted order
    items = []
    redacted: list[str] = []
    for k, v in value.items():
        cls = v.__class__
        if k.__class__ is not str or not (cls is str or cls is int or cls is bool or v is None):
            return None
        if redact and _redact.scrub_key(k) is not None:
            return None  # a credential in a key: the walk writes it scrubbed
        if redact and _redact.secret_key(k):
            text = _REDACTED_TEXT
            redacted.append(prefix + "/" + k.replace("~", "~0").replace("/", "~1"))
        elif cls is str:
            if redact and (scrubbed := _redact.scrub(v)) is not None:
                v = scrubbed
                redacted.append(prefix + "/" + k.replace("~", "~0").replace("/", "~1"))
            text = escape(v)
        elif cls is int:
            if not -_BIG < v < _BIG:
                return None  # the walk says what to do with it
            text = int.__repr__(v)
        else:
            text = "null" if v is None else ("true" if v else "false")
        items.append((k, text))
    if sort_keys:
        items.sort()  # keys are unique: the texts are never compared
    return "{" + ",".join([escape(k) + ":" + text for k, text in items]) + "}", redacted


def stable(value: Any) -> str:
    """Canonical JSON of any value (results included): non-JSON parts become bare tokens."""
    return encode(value, sort_keys=True, normalize=True, other=TOKEN)[0]


def sha256(text: str) -> str:
    """Hex SHA-256 of text (surrogates passed through, so any ``str`` hashes)."""
    return _sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _scrub_keys(
    pairs: list[tuple[str, Any, Any]], prefix: str, stack: list[list[Any]], redacted: list[str]
) -> list[tuple[str, Any, Any]]:
    """An object's members with every credential in their keys replaced; the pointers of the
    members whose key changed (as written, so that no pointer repeats the secret) go to
    ``redacted``."""
    out = []
    for pair in pairs:
        key = pair[1]
        scrubbed = _redact.scrub_key(key) if key.__class__ is str else None
        if scrubbed is not None:
            pair = (escape(scrubbed), scrubbed, pair[2])
            redacted.append(_pointer(prefix, [*stack, [None, None, True, 0, scrubbed]]))
        out.append(pair)
    return out


def _sort_key(pair: tuple[str, Any, Any]) -> tuple[int, str]:
    key = pair[1]
    return (0, key) if key.__class__ is str else (1, pair[0])


def _key(key: Any, other: str, stack: list[list[Any]]) -> str:
    if key.__class__ is str:
        return escape(key)
    if isinstance(key, str):
        return escape(str(key))
    if other == STRICT:
        shown = (
            repr(key) if key is None or isinstance(key, bool | int | float) else type(key).__name__
        )
        raise NotJSON(f"object key `{shown}` is not a string", _pointer("", stack))
    if key is None or isinstance(key, bool | int | float):
        return escape(json.dumps(key))  # as json.dumps writes such keys
    return escape(f"<{type(key).__name__}>")


_BIG = 10**4000


def _int(x: int, other: str, stack: list[list[Any]]) -> str:
    """An integer's digits; one of thousands of digits is not a JSON number anyone sends
    (and Python refuses to print one beyond 4,300 digits)."""
    if -_BIG < x < _BIG:
        return int.__repr__(x)
    if other == STRICT:
        raise NotJSON(
            "an integer of more than 4000 digits is not a JSON number", _pointer("", stack)
        )
    return "<int>" if other == TOKEN else escape("<int>")


def _float(x: float, normalize: bool, other: str, stack: list[list[Any]]) -> str:
    if math.isfinite(x):
        if normalize and x.is_integer():
            return int.__repr__(int(x))
        return float.__repr__(x)
    if other == STRICT:
        raise NotJSON(f"`{x}` is not a JSON number", _pointer("", stack))
    text = "NaN" if x != x else ("Infinity" if x > 0 else "-Infinity")
    return text if other == TOKEN else escape(text)


def _other(item: Any, other: str, stack: list[list[Any]]) -> str:
    kind = type(item).__name__
    if other == STRICT:
        raise NotJSON(f"a `{kind}` is not a JSON value", _pointer("", stack))
    return f"<{kind}>" if other == TOKEN else escape(f"<{kind}>")


def _pointer(prefix: str, stack: list[list[Any]]) -> str:
    """RFC 6901 pointer of the value being written (``prefix`` + one token per level)."""
    parts = [prefix]
    for frame in stack:
        token = frame[4]
        text = token if token.__class__ is str else str(token)
        parts.append("/" + text.replace("~", "~0").replace("/", "~1"))
    return "".join(parts)
