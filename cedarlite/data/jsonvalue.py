"""Cedar's JSON forms of values, read with limits: entity references, values (records, sets,
extension calls), the decoder that rejects duplicate keys, and short previews for messages.

Both the entity store (:mod:`.entities`) and requests (:mod:`.request`) read their JSON here, so
a request's walk from a dict to a :class:`~cedarlite.Response` never passes through the entity
store's module.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from ..errors import CedarliteError, EntitiesError, EvaluationError
from ..lexical import is_valid_type_name
from ..source import Span
from ..source import clip as _clip
from .ext import from_extn_json
from .values import I64_MAX, I64_MIN, MAX_VALUE_DEPTH, MAX_VALUE_SIZE, CedarSet, EntityUID, Record


def load_json(data: str | bytes, source: str | None, error: type[Exception]) -> Any:
    """Decode JSON text, rejecting duplicate object keys; errors carry line and column."""
    text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates)
    except json.JSONDecodeError as err:
        raise error(  # type: ignore[call-arg]
            f"invalid JSON: {err.msg.lower()}",
            span=Span.at(text, err.pos, err.pos + 1),
            text=text,
            source=source,
        ) from None
    except _DuplicateKey as err:
        # lazy on purpose: only a mistake needs it (the JSON locator, suggestions)
        from .._jsonloc import duplicate_key_span

        raise error(  # type: ignore[call-arg]
            f"invalid JSON: duplicate key `{err.key}`",
            span=duplicate_key_span(text),
            text=text,
            source=source,
        ) from None
    except RecursionError:
        raise error("invalid JSON: nested too deeply", source=source) from None  # type: ignore[call-arg]
    except ValueError:  # an integer with more digits than Python converts (4,300 by default)
        raise error("invalid JSON: a number is too long", source=source) from None  # type: ignore[call-arg]


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKey(k)
        out[k] = v
    return out


def uid_from_json(obj: Any, where: str, error: type[Exception] = EntitiesError) -> EntityUID:
    """An entity uid from ``{"type", "id"}`` or ``{"__entity": {"type", "id"}}``."""
    plain = plain_uid(obj)
    if plain is not None:
        return plain
    if isinstance(obj, dict) and _has_shape(obj.get("__entity"), type=str, id=str):
        # Rust's `EntityUidJson`: an explicit `__entity` escape wins, other keys are ignored.
        obj = obj["__entity"]
    if not isinstance(obj, dict) or "type" not in obj or "id" not in obj:
        raise error(
            f'{where}: expected an entity reference `{{"type": ..., "id": ...}}`, '
            f"got `{preview(obj)}`"
        )
    type_name, id_ = obj["type"], obj["id"]
    if not isinstance(type_name, str) or not is_valid_type_name(type_name):
        raise error(f"{where}: `{preview(type_name)}` is not a valid entity type name")
    if not isinstance(id_, str):
        raise error(f"{where}: entity id must be a string, got `{preview(id_)}`")
    return EntityUID(type_name, id_)


def plain_uid(obj: Any) -> EntityUID | None:
    """The uid of a plain, valid ``{"type", "id"}`` object (the usual form, read fast), else
    ``None`` (:func:`uid_from_json` reads the other forms, or says what is wrong)."""
    if obj.__class__ is dict and len(obj) == 2:
        type_name, id_ = obj.get("type"), obj.get("id")
        if type_name.__class__ is str and id_.__class__ is str and is_valid_type_name(type_name):
            return EntityUID(type_name, id_)
    return None


def value_from_json(obj: Any, where: str, limits: _Limits | None = None, depth: int = 1) -> Any:
    """A Cedar value from its JSON form, without a schema (``__entity``/``__extn`` escapes).

    Raises :class:`JSONValueError` (callers re-word it with their own error class), also for
    input nested deeper than :data:`~cedarlite.data.values.MAX_VALUE_DEPTH` or holding more than
    :data:`~cedarlite.data.values.MAX_VALUE_SIZE` elements: ``limits`` carries what is left of the
    size for one whole input value (its first container starts it), ``depth`` is the nesting of
    ``obj`` in it.
    """
    cls = obj.__class__
    if cls is bool or cls is str:
        return obj
    if cls is int:
        if not I64_MIN <= obj <= I64_MAX:
            raise JSONValueError(f"{where}: integer `{preview(obj)}` does not fit in 64 bits")
        return obj
    if cls is list:
        limits = _Limits.enter(limits, where, obj, depth)
        kinds = set(map(type, obj))  # a set of strings or of longs is built at C speed
        if kinds == _STRINGS or (kinds == _INTS and min(obj) >= I64_MIN and max(obj) <= I64_MAX):
            return CedarSet.of_keys(frozenset(obj))
        return CedarSet(
            v if _is_scalar(v) else value_from_json(v, f"{where}[{i}]", limits, depth + 1)
            for i, v in enumerate(obj)
        )
    if cls is dict:
        limits = _Limits.enter(limits, where, obj, depth)
        if len(obj) == 1:
            ((key, inner),) = obj.items()
            # Like Rust's untagged `CedarValueJson`: an escape whose payload does not have the
            # escape's shape is not an error, the object is then an ordinary record.
            if key == "__entity" and _has_shape(inner, type=str, id=str):
                return uid_from_json(obj, where, JSONValueError)
            if (
                key == "__extn"
                and _has_shape(inner, fn=str)
                and ("arg" in inner or isinstance(inner.get("args"), list))
            ):
                return _extn_from_json(inner, where, limits, depth)
            if key == "__expr" and inner.__class__ is str:
                raise JSONValueError(f"{where}: the `__expr` escape is no longer supported")
        return Record(
            {
                k: v
                if (c := v.__class__) is str or c is bool or (c is int and I64_MIN <= v <= I64_MAX)
                else value_from_json(v, f"{where}.{_clip(k)}", limits, depth + 1)
                for k, v in obj.items()
            }
        )
    if obj is None:
        raise JSONValueError(f"{where}: JSON `null` is not a Cedar value")
    if cls is float:
        raise JSONValueError(f"{where}: `{obj}` is not an integer; Cedar has no floating point")
    if cls is EntityUID or cls is CedarSet or cls is Record or hasattr(obj, "cedar_type"):
        return obj  # already a Cedar value (Python callers)
    if isinstance(obj, tuple | set | frozenset):
        return value_from_json(list(obj), where, limits, depth)
    if isinstance(obj, Mapping):
        return value_from_json(dict(obj), where, limits, depth)
    raise JSONValueError(f"{where}: `{preview(obj)}` is not a Cedar value")


_ESCAPES = frozenset({"__entity", "__extn", "__expr"})


PLAIN_SIZE = 999
"""Entries a context (and each object or array in it) may have for :func:`plain_record` to
read it: then it holds fewer than :data:`~cedarlite.data.values.MAX_VALUE_SIZE` elements in all
(999 + 999 x 999), with no count kept."""


def plain_record(obj: dict[str, Any]) -> Record | None:
    """What :func:`value_from_json` makes of a JSON object, quickly, when it has the plain
    shape of most request contexts: strings, booleans, 64-bit integers, arrays of strings, and
    objects of those (one level), at most :data:`PLAIN_SIZE` entries each; ``None`` when it
    has any other shape (read it with :func:`value_from_json`, which also reports what is
    wrong)."""
    # Written for a cold decision, where most of the time goes to code and data brought back
    # into the caches: `type(v)` rather than `v.__class__` (one code path whatever the type;
    # an attribute read is specialized for one type, and a context mixes them), no count of
    # elements (PLAIN_SIZE), and one Record made, at the end.
    if len(obj) > PLAIN_SIZE or (len(obj) == 1 and not _ESCAPES.isdisjoint(obj)):
        return None  # large, or maybe an escape (`{"__entity": ...}`), not a record
    converted: dict[str, Any] | None = None
    for key, value in obj.items():
        cls = type(value)
        if cls is str or cls is bool:
            continue
        if cls is int:
            if I64_MIN <= value <= I64_MAX:
                continue
            return None
        if cls is dict:
            if len(value) > PLAIN_SIZE or (len(value) == 1 and not _ESCAPES.isdisjoint(value)):
                return None
            for inner in value.values():
                c = type(inner)
                if not (c is str or c is bool or (c is int and I64_MIN <= inner <= I64_MAX)):
                    return None
            if converted is None:
                converted = obj.copy()
            converted[key] = Record(value)
        elif cls is list and len(value) <= PLAIN_SIZE and _STRINGS.issuperset(map(type, value)):
            if converted is None:
                converted = obj.copy()
            converted[key] = CedarSet.of_keys(frozenset(value))
        else:
            return None
    return Record(obj if converted is None else converted)


class _Limits:
    """What is left of :data:`~cedarlite.data.values.MAX_VALUE_SIZE` while one input value is
    read, and the name of that value for the errors."""

    __slots__ = ("left", "root")

    def __init__(self, root: str) -> None:
        self.root, self.left = root, MAX_VALUE_SIZE

    @classmethod
    def enter(cls, limits: _Limits | None, where: str, container: Any, depth: int) -> _Limits:
        """Account for one container at ``depth`` (the first one starts the budget)."""
        if limits is None:
            limits = cls(where)
        if depth > MAX_VALUE_DEPTH:
            raise JSONValueError(
                f"{limits.root}: nested too deeply (more than {MAX_VALUE_DEPTH} levels)"
            )
        limits.left -= len(container)
        if limits.left < 0:
            raise JSONValueError(
                f"{limits.root}: too large (more than {MAX_VALUE_SIZE:,} elements)"
            )
        return limits


_STRINGS: frozenset[type] = frozenset({str})
_INTS: frozenset[type] = frozenset({int})


def _is_scalar(v: Any) -> bool:
    """A JSON value that is its own Cedar value (the common case, decoded without a call)."""
    cls = v.__class__
    return cls is str or cls is bool or (cls is int and I64_MIN <= v <= I64_MAX)


def _has_shape(obj: Any, **fields: type) -> bool:
    """``obj`` is a JSON object whose ``fields`` are present with these types (others allowed)."""
    return obj.__class__ is dict and all(
        isinstance(obj.get(name), cls) for name, cls in fields.items()
    )


class JSONValueError(EntitiesError):
    """A JSON value that does not denote a Cedar value."""


def _extn_from_json(inner: Any, where: str, limits: _Limits | None = None, depth: int = 1) -> Any:
    if not isinstance(inner, dict) or "fn" not in inner or not isinstance(inner["fn"], str):
        raise JSONValueError(f'{where}: `__extn` must be `{{"fn": ..., "arg": ...}}`')
    if "args" in inner and isinstance(inner["args"], list):
        args = [
            value_from_json(a, f"{where}.__extn.args[{i}]", limits, depth + 2)
            for i, a in enumerate(inner["args"])
        ]
    elif "arg" in inner:
        args = [value_from_json(inner["arg"], f"{where}.__extn.arg", limits, depth + 1)]
    else:
        raise JSONValueError(f"{where}: `__extn` needs an `arg` or `args`")
    try:
        return from_extn_json(inner["fn"], args)
    except EvaluationError as err:
        raise JSONValueError(f"{where}: {err.message}") from None


def record_from_json(obj: Any, where: str) -> Record:
    if not isinstance(obj, dict):
        raise JSONValueError(f"{where}: expected a JSON object, got `{preview(obj)}`")
    limits = _Limits.enter(None, where, obj, 1)
    return Record({k: value_from_json(v, f"{where}.{_clip(k)}", limits, 2) for k, v in obj.items()})


def preview(obj: Any, limit: int = 60) -> str:
    """A short JSON rendering of a value for error messages.

    The work is bounded by ``limit`` whatever ``obj`` is (a huge, deeply nested or
    self-referencing structure, an integer too long to print): rendering stops as soon as the
    text is long enough.
    """
    out: list[str] = []
    length = 0
    stack: list[Any] = [obj]
    while stack and length <= limit:
        top = stack.pop()
        if top.__class__ is _Open:
            piece = top.next_piece(stack)
        else:
            scalar = _scalar_text(top, limit)
            piece = _Open.start(top, stack) if scalar is None else scalar
        out.append(piece)
        length += len(piece)
    text = "".join(out)
    return text if not stack and len(text) <= limit else text[: limit - 3] + "..."


class _Open:
    """An array or object being rendered by :func:`preview` (its items are pulled lazily)."""

    __slots__ = ("close", "first", "items", "mapping")

    def __init__(self, items: Iterator[Any], close: str, mapping: bool) -> None:
        self.items, self.close, self.mapping, self.first = items, close, mapping, True

    @classmethod
    def start(cls, value: Any, stack: list[Any]) -> str:
        if isinstance(value, Mapping):
            stack.append(cls(iter(value.items()), "}", True))
            return "{"
        stack.append(cls(iter(value), "]", False))
        return "["

    def next_piece(self, stack: list[Any]) -> str:
        try:
            item = next(self.items)
        except StopIteration:
            return self.close
        stack.append(self)
        sep = "" if self.first else ", "
        self.first = False
        if self.mapping:
            key, item = item
            stack.append(item)
            return f"{sep}{_scalar_text(key, 60) or '<key>'}: "
        stack.append(item)
        return sep


def _scalar_text(value: Any, limit: int) -> str | None:
    """JSON text of a scalar (``None`` for an array or object); strings are cut near ``limit``
    and integers too long to print are described."""
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value[: limit + 1], ensure_ascii=False)
    if isinstance(value, int):
        return str(value) if value.bit_length() <= 256 else f"<{value.bit_length()}-bit integer>"
    if isinstance(value, float):
        return json.dumps(value)
    if isinstance(value, Mapping | list | tuple | set | frozenset) and not hasattr(
        value, "cedar_type"
    ):
        return None
    try:
        text = repr(value)
    except Exception:  # a foreign object's repr may fail any way: the message still renders
        text = f"<{type(value).__name__}>"
    return json.dumps(text[: limit + 1], ensure_ascii=False)


def is_flat(value: Any) -> bool:
    """``value`` is a JSON object of scalars within the size limit: one that
    :func:`check_json_limits` passes at once (most attributes and contexts)."""
    return (
        value.__class__ is dict
        and len(value) <= MAX_VALUE_SIZE
        and _JSON_SCALARS.issuperset(map(type, value.values()))
    )


def check_json_limits(
    value: Any, where: str | Callable[[], str], error: type[CedarliteError]
) -> None:
    """Refuse a JSON-like input (dicts, lists...) nested deeper than
    :data:`~cedarlite.data.values.MAX_VALUE_DEPTH` or holding more than
    :data:`~cedarlite.data.values.MAX_VALUE_SIZE` elements, before anything reads it: iterative,
    level by level, linear, and it stops at the first level or element too many. ``where``
    names the input in the message, or makes that name (called only to raise: callers on a
    hot path pass a function rather than format a name for every input)."""
    if is_flat(value):
        return
    size = 0
    level = [value]
    for depth in range(1, MAX_VALUE_DEPTH + 2):
        below: list[Any] = []
        for node in level:
            cls = node.__class__
            if cls is dict or (cls is not Record and isinstance(node, Mapping)):
                items: Iterable[Any] = node.values()
            elif cls is list or cls is tuple or cls is set or cls is frozenset:
                items = node
            else:
                continue  # a scalar, or a Cedar value built by the caller
            if depth > MAX_VALUE_DEPTH:
                deep = f"nested too deeply (more than {MAX_VALUE_DEPTH} levels)"
                raise error(f"{_name(where)}: {deep}")
            size += len(node)
            if size > MAX_VALUE_SIZE:
                raise error(f"{_name(where)}: too large (more than {MAX_VALUE_SIZE:,} elements)")
            if not _JSON_SCALARS.issuperset(map(type, items)):  # (at C speed when all scalars)
                below.extend(item for item in items if item.__class__ not in _JSON_SCALARS)
        if not below:
            return
        level = below


def _name(where: str | Callable[[], str]) -> str:
    return where if isinstance(where, str) else where()


_JSON_SCALARS = frozenset({str, int, bool, float, type(None)})


def json_kind(value: Any) -> str:
    """What kind of JSON value this is, for messages: ``a string``, ``an array``, ``null``..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "an array"
    return "an object" if isinstance(value, Mapping) else type(value).__name__
