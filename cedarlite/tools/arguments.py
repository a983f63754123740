"""A call's arguments checked against its tool's parameter schema, with the schema compiled.

:func:`cedarlite.tools.params.argument_plan` compiles a tool's parameter JSON schema (with the
Cedar type of every property, from the schema model) into an :class:`ArgumentPlan`: nested
tuples of plain data, which pickle with a built guard. :meth:`ArgumentPlan.convert` checks
arguments with it and returns their Cedar record, exactly as
:func:`~cedarlite.tools.params.call_arguments` does (which is this, compiled on the spot). This
module imports no schema model, so a process that loads a built guard (a hook, one process
per tool call) checks arguments without it.

The plan of one value is a *check* ``(kind, enum, sub)``: ``kind`` is one of the constants
below (``UNTYPED``: a value with no Cedar type, checked against ``enum`` only and left out of
the record; ``TEXT``: a value whose schema gives no Cedar type but allows a string, in the
record as a ``String`` when it is one, left out otherwise), ``enum`` the schema's ``enum`` as a
tuple (``None``: any value), ``sub`` the element's check of a ``SET`` and the record check of a
``RECORD`` (``None`` otherwise). A *record check* is ``(properties, required, names)``: every
property of the schema as ``(name, check)`` in schema order, the names of required properties,
and, when other arguments are refused (``additionalProperties: false``), the frozenset of the
properties' names (``None`` otherwise). Arguments the top-level schema does not declare, when
it allows them (no ``additionalProperties: false``, or no schema at all), are in the record as
``String`` attributes when they are strings: a rule on ``resource.path`` sees the path of a
tool whose schema says nothing of it (:attr:`ArgumentPlan.declared`).

Time is linear in the arguments checked (each value is visited once, compared with at most
the ``enum`` of its schema); recursion follows the schema, never deeper than it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, NamedTuple

from ..data.ext.decimal import Decimal
from ..data.jsonvalue import check_json_limits, json_kind, preview
from ..data.values import I64_MAX, I64_MIN, CedarSet, Record
from ..errors import CedarliteError
from .catalog import ToolsError

#: Argument names that hold paths or locations in common tools, those the shipped ``paths``
#: rules guard (``absolutePath`` is the adapters' absolute form of the path judged): declared
#: optional ``String`` attributes of plugin and MCP tools whose schema allows arguments it does
#: not declare (:func:`cedarlite.tools.params.input_type`).
PATH_ARGUMENTS: tuple[str, ...] = (
    "path", "absolutePath", "file_path", "filePath", "file", "directory", "cwd", "workdir", "url",
)  # fmt: skip

#: The attributes the host adapters set beside a call's arguments for the path they judge
#: (:func:`cedarlite.hosts.mapping.path_calls`): the ``String`` absolute form and the
#: ``Bool`` "inside the workspace". They are no parameters of the tool: a schema that refuses
#: undeclared arguments does not refuse them, and they are in the record when well typed.
PATH_ATTRIBUTES: tuple[tuple[str, type], ...] = (("absolutePath", str), ("inWorkspace", bool))

#: The attribute of an ``exec`` call that lists its command's short options, one letter each
#: (:func:`short_options`).
SHORT_OPTIONS = "shortOptions"

# Characters the shell removes from a word before the program sees it (`"-q"o`, `\-qo`,
# `$'-qo'` are all `-qo`).
_QUOTES = str.maketrans("", "", "\"'\\$")

# The kinds of a check.
UNTYPED, STRING, BOOL, LONG, DECIMAL, SET, RECORD, TEXT = range(8)

Check = tuple[int, "tuple[Any, ...] | None", Any]
RecordCheck = tuple[tuple[tuple[str, Check], ...], tuple[str, ...], "frozenset[str] | None"]


class ToolArgumentError(ToolsError):
    """Call arguments that do not conform to the tool's parameter schema (or an unknown tool).

    ``argument`` is the JSON path of the offending argument (``None`` for the whole call).
    """

    code = "E0830"

    def __init__(self, message: str, argument: str | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.argument = argument


class ArgumentPlan(NamedTuple):
    """The compiled parameter schema of one tool: ``tool`` its name (for messages),
    ``record`` the record check of its schema (``None``: a tool without parameter schema),
    ``declared`` the names of its top-level parameters when it allows other arguments, whose
    string values are then ``String`` attributes too (``None``: the schema refuses them).
    """

    tool: str
    record: RecordCheck | None
    declared: frozenset[str] | None
    #: Whether the call's ``command`` is a shell command whose short options rules read
    #: (:data:`SHORT_OPTIONS`: ``exec``).
    command: bool = False

    def convert(self, params: Any) -> Record:
        """The typed record of a call's arguments (``None``: no arguments); raises
        :class:`ToolArgumentError` naming the argument when they do not conform."""
        if params is None:
            params = {}
        elif params.__class__ is not dict and not isinstance(params, Mapping):
            raise ToolArgumentError(f"arguments of tool `{self.tool}` must be a JSON object")
        check_json_limits(params, lambda: f"arguments of tool `{self.tool}`", ToolArgumentError)
        added = {}
        if "absolutePath" in params or "inWorkspace" in params:
            for name, kind in PATH_ATTRIBUTES:
                value = params.get(name)
                if isinstance(value, kind):
                    added[name] = value
            closed = self.record[2] if self.record is not None else None
            if closed is not None:  # a schema that refuses others: not these, unless declared
                params = {k: v for k, v in params.items() if k not in added or k in closed}
        record = Record() if self.record is None else _record(params, self.record, "", self.tool)
        if added:
            record = Record({**record, **added})
        declared = self.declared
        if declared is not None and not declared.issuperset(params):
            other = {
                k: v
                for k, v in params.items()
                if v.__class__ is str and k.__class__ is str and k not in declared
            }
            if other:
                record = Record({**record, **other})
        if self.command:
            command = record.get("command")
            if command.__class__ is str:  # derived from the command: never what a call says
                record = Record({**record, SHORT_OPTIONS: short_options(command)})
        return record


def short_options(command: str) -> CedarSet:
    """The short options of a shell command, each letter of every cluster as ``-x``:
    ``pytest -qo x`` holds ``-q`` and ``-o``, as the program reads it.

    A word counts after the shell's quotes are removed (``"-qo"``). Every letter of a cluster
    counts up to an ``=``, even those that are the value of an option before them
    (``-kfoo`` holds ``-o``): which options take a value is each program's business, and a
    forbid on an option must not miss it. ``--long`` options are not listed. Linear time.
    """
    found: set[str] = set()
    for word in command.split():
        if "-" not in word:
            continue
        word = word.translate(_QUOTES)
        if len(word) < 2 or word[0] != "-" or word[1] == "-":
            continue
        found.update("-" + c for c in word[1:].partition("=")[0])
    return CedarSet(found)


def _where(path: str, tool: str) -> str:
    return f"argument `{path}` of tool `{tool}`"


def _record(value: Mapping[str, Any], check: RecordCheck, path: str, tool: str) -> Record:
    properties, required, names = check
    for name in required:
        if value.get(name) is None:
            sub = f"{path}.{name}" if path else name
            raise ToolArgumentError(f"{_where(sub, tool)} is required", sub)
    if names is not None:
        for name in value:
            if name not in names:
                sub = f"{path}.{name}" if path else name
                raise ToolArgumentError(f"{_where(sub, tool)} is not a parameter of the tool", sub)
    out = {}
    get = value.get
    for name, prop in properties:
        item = get(name)
        if item is None:
            continue
        if item.__class__ is str and (prop[0] == STRING or prop[0] == TEXT) and prop[1] is None:
            out[name] = item  # (what `_value` returns for it, without the calls)
            continue
        converted = _value(item, prop, f"{path}.{name}" if path else name, tool)
        if converted is not None:
            out[name] = converted
    return Record(out)


def _value(value: Any, check: Check, path: str, tool: str) -> Any:
    """Check ``value`` and return its Cedar value (``None``: none, the value is untyped)."""
    kind, allowed, sub = check
    converted = _typed(value, kind, sub, path, tool)
    if allowed is not None and not any(_json_eq(value, a) for a in allowed):
        choices = ", ".join(f"`{a}`" for a in allowed)
        raise ToolArgumentError(
            f"{_where(path, tool)}: `{_shown(value)}` is not one of {choices}", path
        )
    return converted


def _typed(value: Any, kind: int, sub: Any, path: str, tool: str) -> Any:
    if kind == UNTYPED:
        return None
    if kind == TEXT:
        return value if value.__class__ is str else None
    if kind == STRING:
        if not isinstance(value, str):
            raise _wrong(path, tool, "a string", value)
        return value
    if kind == BOOL:
        if not isinstance(value, bool):
            raise _wrong(path, tool, "a boolean", value)
        return value
    if kind == LONG:
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise _wrong(path, tool, "an integer", value)
        if not I64_MIN <= value <= I64_MAX:
            raise ToolArgumentError(
                f"{_where(path, tool)}: `{preview(value)}` does not fit in 64 bits", path
            )
        return value
    if kind == DECIMAL:
        return _decimal(value, path, tool)
    if kind == SET:
        if not isinstance(value, list):
            raise _wrong(path, tool, "an array", value)
        return CedarSet(_value(v, sub, f"{path}[{i}]", tool) for i, v in enumerate(value))
    if kind == RECORD:
        if not isinstance(value, Mapping):
            raise _wrong(path, tool, "an object", value)
        return _record(value, sub, path, tool)
    raise AssertionError(kind)  # pragma: no cover


def _decimal(value: Any, path: str, tool: str) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _wrong(path, tool, "a number", value)
    if isinstance(value, int) and not I64_MIN <= value <= I64_MAX:  # never print a huge integer
        raise ToolArgumentError(f"{_where(path, tool)}: `{preview(value)}` is out of range", path)
    text = f"{value:.4f}" if isinstance(value, float) else f"{value}.0"
    if isinstance(value, float) and float(text) != value:
        raise ToolArgumentError(
            f"{_where(path, tool)}: `{value}` has more than 4 decimal places", path
        )
    try:
        return Decimal.parse(text)
    except CedarliteError:
        raise ToolArgumentError(f"{_where(path, tool)}: `{value}` is out of range", path) from None


def _shown(value: Any) -> str:
    """An argument value for a message: a short string as is, anything else previewed."""
    return value if isinstance(value, str) and len(value) <= 60 else preview(value)


def _wrong(path: str, tool: str, expected: str, value: Any) -> ToolArgumentError:
    # JSON schemas tell integers from numbers, so the message does too.
    got = "an integer" if type(value) is int else json_kind(value)
    return ToolArgumentError(f"{_where(path, tool)}: expected {expected}, got {got}", path)


def _json_eq(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b if isinstance(a, bool) or isinstance(b, bool) else a == b
