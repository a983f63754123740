"""Runtime values of the Cedar language.

| Cedar     | Python                                  |
|-----------|-----------------------------------------|
| Bool      | ``bool``                                |
| Long      | ``int`` (always within signed 64 bits)  |
| String    | ``str``                                 |
| Entity    | :class:`EntityUID`                      |
| Set       | :class:`CedarSet`                       |
| Record    | :class:`Record` (a read-only ``dict``)  |
| extension | classes in :mod:`cedarlite.data.ext`         |

Python's ``True == 1`` does not hold in Cedar (``true == 1`` is false, ``[1, true]`` has two
elements), so equality goes through :func:`cedar_eq` and sets key their elements with
:func:`_key`. Every value is hashable.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, NamedTuple

from ..errors import EvaluationError

I64_MIN = -(2**63)
I64_MAX = 2**63 - 1

MAX_VALUE_DEPTH = 128
"""Input values (entity attributes and tags, request contexts, tool arguments, configurations)
nest sets/arrays and records/objects at most this deep, as Rust's JSON reader allows; deeper
input is refused with the boundary's own error."""

MAX_VALUE_SIZE = 1_000_000
"""Elements (array items and object entries, at every level) one input value may hold."""


class EntityUID(NamedTuple):
    """An entity reference: a type path (``"NS::User"``) and an id (``"alice"``)."""

    type: str
    id: str

    def __str__(self) -> str:
        return f"{self.type}::{quote_string(self.id)}"

    def __repr__(self) -> str:
        return f"EntityUID({self})"

    def to_json(self) -> dict[str, str]:
        """The ``{"type": ..., "id": ...}`` form."""
        return {"type": self.type, "id": self.id}


class _BoolKey:
    """Stands for a bool inside a set, so that ``true`` and ``1`` stay distinct."""

    __slots__ = ("value",)

    def __init__(self, value: bool) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "true" if self.value else "false"


_TRUE_KEY = _BoolKey(True)
_FALSE_KEY = _BoolKey(False)


def _key(value: Any) -> Any:
    """The hashable identity of a value under Cedar equality."""
    if value.__class__ is bool:
        return _TRUE_KEY if value else _FALSE_KEY
    return value


def _unkey(key: Any) -> Any:
    return key.value if key.__class__ is _BoolKey else key


def cedar_eq(a: Any, b: Any) -> bool:
    """Cedar's total equality: values of different types are unequal, never an error."""
    return a.__class__ is b.__class__ and a == b


class CedarSet:
    """An immutable, unordered Cedar set (duplicates collapse by Cedar equality)."""

    __slots__ = ("_hash", "_keys")

    def __init__(self, items: Iterable[Any] = ()) -> None:
        self._keys = frozenset(_key(v) for v in items)
        self._hash: int | None = None

    @classmethod
    def of_keys(cls, keys: frozenset[Any]) -> CedarSet:
        """A set from a frozenset of strings, longs and other non-bool values, taken as is."""
        s = cls.__new__(cls)
        s._keys = keys
        s._hash = None
        return s

    def __iter__(self) -> Iterator[Any]:
        return (_unkey(k) for k in self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, value: Any) -> bool:
        return _key(value) in self._keys

    def contains(self, value: Any) -> bool:
        """Membership by Cedar equality."""
        return _key(value) in self._keys

    def contains_all(self, other: CedarSet) -> bool:
        """Every element of ``other`` is in this set."""
        return other._keys <= self._keys

    def contains_any(self, other: CedarSet) -> bool:
        """The sets share an element."""
        return not self._keys.isdisjoint(other._keys)

    def __eq__(self, other: object) -> bool:
        return other.__class__ is CedarSet and _equal(self, other)

    def __hash__(self) -> int:
        if self._hash is None:
            # The elements' hashes were taken when the frozenset was built: no recursion here.
            self._hash = hash(self._keys)
        return self._hash

    def __repr__(self) -> str:
        return "[" + ", ".join(sorted(to_cedar(v) for v in self)) + "]"


class Record(dict):
    """An immutable Cedar record: string keys to values. Compares by Cedar equality."""

    # No __init__: dict's own (C) initializer builds records, the hash slot starts unset.
    __slots__ = ("_hash",)
    _hash: int

    def __eq__(self, other: object) -> bool:
        return other.__class__ is Record and _equal(self, other)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:  # type: ignore[override]
        try:
            return self._hash
        except AttributeError:
            if any(v.__class__ is Record for v in dict.values(self)):
                return _record_hash(self)  # nested records are hashed first, without recursion
            self._hash = hash(frozenset(dict.items(self)))
            return self._hash

    def _readonly(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("cedarlite.Record is immutable")

    __setitem__ = __delitem__ = _readonly
    clear = pop = popitem = setdefault = update = __ior__ = _readonly  # type: ignore[assignment]

    def __repr__(self) -> str:
        return to_cedar(self)

    def __reduce__(self):
        return (Record, (dict(self),))


EMPTY_RECORD = Record()
EMPTY_SET = CedarSet()


# ---------------------------------------------------------------------------------------------
# Equality and hashing of sets and records, at any depth. Python compares and hashes nested
# containers recursively, which stops at a few hundred levels, and set and record literals may
# nest as deep as a policy does (see cedarlite.lang.parse.MAX_NESTING). Here record hashes are
# built children first on an explicit stack (and cached), and equality walks pairs of values
# on an explicit stack, matching a set's nested elements through their (cached) hashes.

_CONTAINERS = (Record, CedarSet)
_SCALAR_KEYS = frozenset({str, int, EntityUID, _BoolKey})


def _containers(value: Any) -> Iterator[Any]:
    """The sets and records directly inside a set or record."""
    items = value._keys if value.__class__ is CedarSet else dict.values(value)
    return (v for v in items if v.__class__ is Record or v.__class__ is CedarSet)


def _bottom_up(root: Any, done: Callable[[Any], bool], finish: Callable[[Any], None]) -> None:
    """Call ``finish`` on every set or record in ``root`` not ``done`` yet, children first."""
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, ready = stack.pop()
        if ready:
            finish(node)
        elif not done(node):
            stack.append((node, True))
            stack.extend((c, False) for c in _containers(node) if not done(c))


def _record_hash(record: Record) -> int:
    """The hash of a record, its nested records hashed first (a set's elements are hashed when
    it is built); Cedar-equal values hash alike (``true`` and ``1`` collide, which is fine)."""

    def finish(node: Any) -> None:
        if node.__class__ is Record:
            node._hash = hash(frozenset(dict.items(node)))

    _bottom_up(record, lambda node: node.__class__ is CedarSet or hasattr(node, "_hash"), finish)
    return record._hash


def _equal(a: Any, b: Any) -> bool:
    """Cedar equality of two sets or two records (same class), without recursion. Each pair of
    nested values is compared once, so values sharing sub-values cost their distinct parts."""
    stack = [(a, b)]
    seen: set[tuple[int, int]] = set()
    while stack:
        x, y = stack.pop()
        if x is y or (id(x), id(y)) in seen:
            continue
        seen.add((id(x), id(y)))
        cls = x.__class__
        if cls is not y.__class__:
            return False
        if cls is Record:
            if len(x) != len(y):
                return False
            for key, v in dict.items(x):
                w = dict.get(y, key, _ABSENT)
                if v is w:
                    continue
                if v.__class__ is not w.__class__:
                    return False
                if v.__class__ is Record or v.__class__ is CedarSet:
                    stack.append((v, w))
                elif v != w:
                    return False
        elif cls is CedarSet:
            if not _pair_elements(x._keys, y._keys, stack):
                return False
        elif x != y:
            return False
    return True


_ABSENT: Any = object()


def _pair_elements(xs: frozenset[Any], ys: frozenset[Any], stack: list[Any]) -> bool:
    """Whether two sets' elements can be equal: scalars are compared at once, each nested set
    or record is paired (onto ``stack``) with the element of the other set of the same hash."""
    if len(xs) != len(ys) or hash(xs) != hash(ys):
        return False
    if _SCALAR_KEYS.issuperset(map(type, xs)):
        return xs == ys  # no set or record inside: no recursion
    by_hash: dict[int, list[Any]] = {}
    for e in ys:
        by_hash.setdefault(hash(e), []).append(e)
    for e in xs:
        bucket = by_hash.get(hash(e))
        if not bucket:
            return False
        if len(bucket) == 1:
            match = bucket.pop()
        else:  # distinct elements with one hash: settle it exactly (rare)
            match = next((c for c in bucket if _same_by_ids(e, c)), _ABSENT)
            if match is _ABSENT:
                return False
            bucket.remove(match)
        if e.__class__ is not match.__class__:
            return False
        if e.__class__ is Record or e.__class__ is CedarSet:
            stack.append((e, match))
        elif e != match:
            return False
    return True


def _same_by_ids(a: Any, b: Any) -> bool:
    """Cedar equality of any two values through canonical ids numbered bottom-up in one table
    (each distinct object once): exact and non-recursive, for hash collisions."""
    if not isinstance(a, _CONTAINERS) or not isinstance(b, _CONTAINERS):
        return a.__class__ is b.__class__ and a == b
    ids: dict[Any, int] = {}
    by_object: dict[int, int] = {}

    def item(value: Any) -> Any:
        cls = value.__class__
        if cls is Record or cls is CedarSet:
            return by_object[id(value)]
        return cls, value  # the class keeps `true` and `1` apart

    def finish(node: Any) -> None:
        if node.__class__ is CedarSet:
            key: Any = ("set", frozenset(item(_unkey(k)) for k in node._keys))
        else:
            key = ("record", frozenset((k, item(v)) for k, v in dict.items(node)))
        by_object[id(node)] = ids.setdefault(key, len(ids))

    for root in (a, b):
        _bottom_up(root, lambda node: id(node) in by_object, finish)
    return by_object[id(a)] == by_object[id(b)]


# ---------------------------------------------------------------------------------------------
# Type names, as the Rust engine spells them in "type error: expected long, got string".


def type_name(value: Any) -> str:
    """The Cedar type name of a runtime value, lowercase as in Rust's error messages."""
    cls = value.__class__
    if cls is bool:
        return "bool"
    if cls is int:
        return "long"
    if cls is str:
        return "string"
    if cls is EntityUID:
        return f"(entity of type `{value.type}`)"
    if cls is CedarSet:
        return "set"
    if cls is Record:
        return "record"
    return f"{getattr(value, 'cedar_type', cls.__name__)}"


def type_error(expected: str, value: Any) -> EvaluationError:
    """``type error: expected <expected>, got <actual>``."""
    return EvaluationError(f"type error: expected {expected}, got {type_name(value)}")


def check_i64(value: int, op: str, *operands: Any) -> int:
    """``value`` if it fits in signed 64 bits, else Cedar's overflow error."""
    if I64_MIN <= value <= I64_MAX:
        return value
    if op == "neg":
        raise EvaluationError(
            f"integer overflow while attempting to negate the value `{operands[0]}`"
        )
    shown = " and ".join(f"`{to_cedar(o)}`" for o in operands)
    raise EvaluationError(f"integer overflow while attempting to {op} the values {shown}")


# ---------------------------------------------------------------------------------------------
# Cedar text of values (used by messages, the printer and reprs).

_ESCAPES = {
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\\": "\\\\",
    "\0": "\\0",
    '"': '\\"',
}


def quote_string(s: str) -> str:
    """A Cedar string literal for ``s`` (Rust's ``escape_debug`` style)."""
    if s.isprintable() and '"' not in s and "\\" not in s:  # nothing to escape (most ids)
        return f'"{s}"'
    return '"' + escape_chars(s) + '"'


def escape_chars(s: str) -> str:
    """``s`` escaped character by character, as in a Cedar string literal."""
    out = []
    for ch in s:
        esc = _ESCAPES.get(ch)
        if esc is not None:
            out.append(esc)
        elif ch.isprintable() or ch == " ":
            out.append(ch)
        else:
            out.append(f"\\u{{{ord(ch):x}}}")
    return "".join(out)


def to_cedar(value: Any) -> str:
    """Cedar source text for a value (a restricted expression that evaluates to it)."""
    cls = value.__class__
    if cls is bool:
        return "true" if value else "false"
    if cls is int:
        return str(value)
    if cls is str:
        return quote_string(value)
    if cls is EntityUID:
        return str(value)
    if cls is CedarSet:
        return "[" + ", ".join(to_cedar(v) for v in value) + "]"
    if cls is Record:
        return "{" + ", ".join(f"{quote_string(k)}: {to_cedar(v)}" for k, v in value.items()) + "}"
    to = getattr(value, "to_cedar", None)
    if to is not None:
        return str(to())
    raise TypeError(f"not a Cedar value: {value!r}")


def display(value: Any) -> str:
    """A value as Cedar's CLI prints an evaluation result: Cedar syntax, with the elements of a
    set in Cedar's value order and record keys sorted (so the text is deterministic)."""
    cls = value.__class__
    if cls is CedarSet:
        return "[" + ", ".join(display(v) for v in sorted(value, key=_display_order)) + "]"
    if cls is Record:
        items = sorted(value.items())
        return "{" + ", ".join(f"{quote_string(k)}: {display(v)}" for k, v in items) + "}"
    return to_cedar(value)


def _display_order(value: Any) -> tuple[Any, ...]:
    """Rust's order of evaluation results: by kind (bool, long, string, entity, set, record,
    extension), then by value."""
    cls = value.__class__
    if cls is bool:
        return (0, value)
    if cls is int:
        return (1, value)
    if cls is str:
        return (2, value)
    if cls is EntityUID:
        return (3, value.type, value.id)
    if cls is CedarSet:
        return (4, sorted(_display_order(v) for v in value))
    if cls is Record:
        return (5, sorted((k, _display_order(v)) for k, v in value.items()))
    return (6, to_cedar(value))


def to_json_value(value: Any) -> Any:
    """The Cedar JSON form of a value (entities as ``__entity``, extensions as ``__extn``)."""
    cls = value.__class__
    if cls in (bool, int, str):
        return value
    if cls is EntityUID:
        return {"__entity": value.to_json()}
    if cls is CedarSet:
        return [to_json_value(v) for v in value]
    if cls is Record:
        return {k: to_json_value(v) for k, v in value.items()}
    return value.to_json()


def from_python(value: Any) -> Any:
    """Convert a plain Python value to a Cedar value (lists/tuples/sets -> Set, dicts -> Record).

    This is the *schema-less* interpretation: ``{"__entity": ...}`` and ``{"__extn": ...}`` are
    decoded by :mod:`cedarlite.data.entities`; here a dict is always a record.
    """
    cls = value.__class__
    if cls in (bool, str) or cls is EntityUID or cls is CedarSet or cls is Record:
        return value
    if cls is int:
        if not I64_MIN <= value <= I64_MAX:
            raise ValueError(f"integer `{value}` does not fit in 64 bits")
        return value
    if isinstance(value, Mapping):
        return Record({str(k): from_python(v) for k, v in value.items()})
    if isinstance(value, list | tuple | set | frozenset):
        return CedarSet(from_python(v) for v in value)
    if hasattr(value, "cedar_type"):
        return value
    raise TypeError(f"cannot convert {type(value).__name__} to a Cedar value")
