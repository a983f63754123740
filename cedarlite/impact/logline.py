"""One line of the guard's decision log, read as hostile input.

The format (version 1) is the contract documented in docs/guard.md ("The decision log") and
written by :func:`cedarlite.guard.decision_log.log_line`. :func:`read_line` turns one line
into a :class:`LogLine`, or a :class:`BadLine` saying why it cannot be used, in one of the
:data:`BAD_KINDS`; it never raises. Its cost is linear in the line: one C JSON decode (a line
nested deeper than Python's recursion limit is refused by the decoder, not by a crash) and a
constant number of type checks on the top-level fields.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, NamedTuple

from ..data.jsonvalue import json_kind
from ..guard.decision_log import VERSION

#: Why a line could not be read: the last line of a file cut short, text that is not JSON (or
#: not a JSON object), bytes that are not UTF-8, a line above the size limit, nesting deeper
#: than the decoder allows, a line of a later format version, fields of the wrong type, a
#: blank line.
BAD_KINDS = (
    "truncated",
    "not-json",
    "not-utf8",
    "too-large",
    "too-deep",
    "future-version",
    "bad-fields",
    "empty",
)

#: The default size limit of one line, in characters (the log is ASCII: bytes).
MAX_LINE = 16 * 1024 * 1024

DECISIONS = ("allow", "block", "ask")


class BadLine(NamedTuple):
    """A line that cannot be replayed: its ``kind`` (one of :data:`BAD_KINDS`), a one-line
    ``message`` and the 1-based ``column`` the problem was found at (``None``: the line)."""

    kind: str
    message: str
    column: int | None = None


class LogLine(NamedTuple):
    """The fields of a readable version-1 line that a replay uses (``params`` and ``context``
    as logged: redacted values are ``"[REDACTED]"``; ``redacted`` their JSON pointers).

    ``params_text`` and ``context_text``: the JSON texts of ``params`` and ``context`` exactly
    as the line wrote them (UTF-8 bytes), when the reader kept them (the fast reader does;
    ``None`` from the standard one). Equal texts are equal values, so a replay keys its memo
    and its guards by them without looking at the values."""

    ts: str | None
    session: str | None
    run: str | None
    call_id: str | None
    agent: str | None
    tool: str
    plugin: str | None
    params: Any
    redacted: tuple[str, ...]
    context: dict[str, Any]
    decision: str
    denied_reason: str | None
    reason: str | None
    policies: tuple[str, ...]
    params_rewritten: bool
    policy_hash: str | None
    approvals: tuple[Mapping[str, Any], ...]
    error: str | None
    params_text: bytes | None = None
    context_text: bytes | None = None


def _no_constant(name: str) -> Any:
    raise ValueError(f"`{name}` is not JSON")


# One decoder, built once (json.loads with arguments builds one per call). NaN and Infinity
# are not JSON, and the guard never writes them.
_decode = json.JSONDecoder(parse_constant=_no_constant).decode

_NONE = type(None)
_TEXT = (str, _NONE)
_LIST = (list, _NONE)
#: The optional fields and the classes their values may have (an absent key reads as null).
_FIELDS = (
    ("ts", _TEXT, "a string or null"),
    ("session", _TEXT, "a string or null"),
    ("run", _TEXT, "a string or null"),
    ("call_id", _TEXT, "a string or null"),
    ("agent", _TEXT, "a string or null"),
    ("plugin", _TEXT, "a string or null"),
    ("reason", _TEXT, "a string or null"),
    ("policy_hash", _TEXT, "a string or null"),
    ("error", _TEXT, "a string or null"),
    ("redacted", _LIST, "an array of strings"),
    ("policies", _LIST, "an array of strings"),
    ("approvals", _LIST, "an array"),
    ("params_rewritten", (bool, _NONE), "true or false"),
)


def read_line(text: str, *, max_line: int = MAX_LINE) -> LogLine | BadLine:
    """Read one line (with or without its newline; a line without one is the last of its file,
    and is ``truncated`` when it does not parse). Never raises."""
    if _fast is not None and len(text) <= max_line:
        # (A line end is JSON whitespace, and text that is not UTF-8 does not decode.)
        line = _fast(text)
        if line is not None:
            return line
    ended = text.endswith("\n")
    body = text[:-1] if ended else text
    if body.endswith("\r"):
        body = body[:-1]
    if len(body) > max_line:
        return BadLine("too-large", f"line of {len(body):,} characters (limit {max_line:,})")
    if not body.isascii():
        try:
            body.encode("utf-8")
        except UnicodeEncodeError as err:  # bytes decoded with surrogateescape
            return BadLine("not-utf8", "bytes that are not UTF-8", err.start + 1)
    try:
        obj = _decode(body)
    except RecursionError:
        return BadLine("too-deep", "JSON nested too deeply to decode")
    except json.JSONDecodeError as err:
        if not body.strip():
            return BadLine("empty", "blank line")
        kind = "not-json" if ended else "truncated"
        what = "the last line is cut short" if kind == "truncated" else "not JSON"
        return BadLine(kind, f"{what}: {err.msg}", err.colno)
    except ValueError as err:  # NaN, Infinity, numbers too long to convert
        return BadLine("not-json" if ended else "truncated", f"not JSON: {err}")
    if obj.__class__ is not dict:
        return BadLine("not-json", f"a log line is a JSON object, not {json_kind(obj)}")
    version = obj.get("v")
    if version.__class__ is not int:
        return BadLine("bad-fields", _wrong("v", "the format version (an integer)", version))
    if version > VERSION:
        return BadLine("future-version", f"format version {version} (this reader knows {VERSION})")
    if version < 1:
        return BadLine("bad-fields", f"`v` must be at least 1, not {version}")
    line = _fields(obj)
    if isinstance(line, str):
        return BadLine("bad-fields", line)
    return line


def _fields(obj: dict[str, Any]) -> LogLine | str:
    """The line's fields, or what is wrong with the first field that is missing or of the
    wrong type (one pass over the documented keys: this runs on every line)."""
    get = obj.get
    tool = get("tool")
    if tool.__class__ is not str or not tool:
        return _wrong("tool", "a tool name", tool)
    if "params" not in obj:
        return "no `params`"
    decision = get("decision")
    if decision.__class__ is not str or decision not in DECISIONS:
        return _wrong("decision", '"allow", "block" or "ask"', decision)
    context = get("context")
    if context.__class__ is not dict:
        return _wrong("context", "an object", context)
    for key, allowed, expected in _FIELDS:
        value = get(key)
        if value.__class__ not in allowed:
            return _wrong(key, expected, value)
    denied = get("denied_reason")
    if decision == "block" and (denied.__class__ is not str or not denied):
        return _wrong("denied_reason", "the reason of a block (a string)", denied)
    if decision != "block" and denied is not None:
        return _wrong("denied_reason", f"null on {decision}", denied)
    redacted = get("redacted") or ()
    for pointer in redacted:
        if pointer.__class__ is not str or not pointer.startswith(("/params", "/context")):
            return _wrong("redacted", "pointers into /params or /context", pointer)
    policies = get("policies") or ()
    for policy in policies:
        if policy.__class__ is not str:
            return _wrong("policies", "an array of strings", policy)
    approvals = get("approvals") or ()
    for item in approvals:
        plugin = item.get("plugin") if item.__class__ is dict else 0
        if plugin is not None and plugin.__class__ is not str:
            return _wrong("approvals", "objects with a `plugin` string or null", item)
    return LogLine(
        get("ts"),
        get("session"),
        get("run"),
        get("call_id"),
        get("agent"),
        tool,
        get("plugin"),
        obj["params"],
        tuple(redacted),
        context,
        decision,
        denied,
        get("reason"),
        tuple(policies),
        get("params_rewritten") is True,
        get("policy_hash"),
        tuple(approvals),
        get("error"),
    )


#: The fields that are a string or null (the fast reader's types).
_TEXT_FIELDS = ("ts", "session", "run", "call_id", "agent", "plugin", "reason", "policy_hash",
                "error")  # fmt: skip


def _fast_reader() -> Any:
    """:func:`read_line`'s fast path when msgspec is installed (the ``replay`` extra): the
    line decoded in C straight into the fields a replay uses, their types checked as it goes,
    the other fields skipped; ``params`` and ``context`` are kept as their JSON texts
    (``params_text``, ``context_text``) and decoded from them. It returns a :class:`LogLine`
    for a readable line, ``None`` for anything else, which the standard decoder then reads to
    say exactly what is wrong.

    INVARIANT: a :class:`LogLine` from here is the one the standard path makes of the same
    line, but for the two texts. msgspec refuses everything the standard decoder refuses (and
    more: lone surrogate escapes, numbers out of range), takes the last of duplicate keys as
    it does, and stops at the same recursion limit; its types below are those :func:`_fields`
    checks (``bool`` is not an ``int`` in its strict mode); the checks across fields are made
    again here.
    """
    try:
        # lazy on purpose: an optional dependency (cedarlite[replay]); `import cedarlite` never
        # loads it
        import msgspec
    except ImportError:
        return None

    text, unset = str | None, msgspec.UNSET
    # (made with defstruct: this module's annotations are strings, and msgspec is not one of
    # its names)
    line_type = msgspec.defstruct(
        "_Line",
        [
            ("v", int),
            ("tool", str),
            ("decision", str),
            ("context", msgspec.Raw),
            ("params", msgspec.Raw | msgspec.UnsetType, unset),
            *[(name, text, None) for name in _TEXT_FIELDS],
            ("denied_reason", Any, None),
            ("redacted", tuple[str, ...] | None, None),
            ("policies", tuple[str, ...] | None, None),
            ("approvals", tuple[Any, ...] | None, None),
            ("params_rewritten", bool | None, None),
        ],
    )

    decode_line = msgspec.json.Decoder(line_type).decode
    decode_value = msgspec.json.Decoder().decode
    decode_context = msgspec.json.Decoder(dict[str, Any]).decode
    make = LogLine._make
    # A log has few run contexts, each on many lines: the last ones decoded, by their text.
    # INVARIANT: nothing changes a line's context (lines of one context share the dict).
    contexts: dict[bytes, dict[str, Any]] = {}

    def fast(body: str) -> LogLine | None:
        try:
            r: Any = decode_line(body)
            raw = r.params
            if raw is unset:
                return None
            params_text, context_text = bytes(raw), bytes(r.context)
            params = decode_value(params_text)
            context = contexts.get(context_text)
            if context is None:
                context = decode_context(context_text)
                if len(context_text) <= 4096:
                    if len(contexts) >= 256:
                        contexts.clear()
                    contexts[context_text] = context
        except Exception:  # not a readable line: the standard path says why
            return None
        decision, denied = r.decision, r.denied_reason
        if not 1 <= r.v <= VERSION or not r.tool or decision not in DECISIONS:
            return None
        if decision == "block":
            if denied.__class__ is not str or not denied:
                return None
        elif denied is not None:
            return None
        redacted = r.redacted or ()
        for pointer in redacted:
            if not pointer.startswith(("/params", "/context")):
                return None
        approvals = r.approvals or ()
        for item in approvals:
            if item.__class__ is not dict:
                return None
            plugin = item.get("plugin")
            if plugin is not None and plugin.__class__ is not str:
                return None
        return make((
            r.ts, r.session, r.run, r.call_id, r.agent, r.tool, r.plugin, params, redacted,
            context, decision, denied, r.reason, r.policies or (), r.params_rewritten is True,
            r.policy_hash, approvals, r.error, params_text, context_text,
        ))  # fmt: skip

    return fast


_fast = _fast_reader()


def _wrong(key: str, expected: str, value: Any) -> str:
    return f"`{key}` must be {expected}, not {_shown(value)}"


def _shown(value: Any) -> str:
    """A value in a message: a scalar in backticks (long text cut), else its kind (a container
    is never rendered: it may be nested hundreds of levels deep)."""
    if value.__class__ is str:
        return (
            f'`{json.dumps(value[:40])[:-1]}..."`' if len(value) > 40 else f"`{json.dumps(value)}`"
        )
    if value.__class__ is int and abs(value) >= 10**40:
        return "a long integer"
    if value is None or value.__class__ in (bool, int, float):
        return f"`{json.dumps(value)}`"
    return json_kind(value)
