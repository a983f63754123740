"""Requests: who (principal) does what (action) to what (resource), in which context.

:class:`Request` is what both engines decide. :func:`make_request` reads one from a
cedarpy-style dict (entity uids as ``{"type", "id"}`` objects or ``'Type::"id"'`` strings, the
context as Cedar JSON), and :func:`parse_entity_uid` reads a ``Type::"id"`` string without the
policy parser (so that deciding never loads the grammar).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, NamedTuple, Protocol

from ..errors import CedarliteError, ParseError, RequestError, did_you_mean
from ..lexical import is_valid_type_name
from ..source import BadEscape, Span, decode_literal
from ..source import clip as _clip
from .jsonvalue import JSONValueError, check_json_limits, load_json, uid_from_json, value_from_json
from .values import EMPTY_RECORD, EntityUID, Record


class Request(NamedTuple):
    """An authorization request: who (principal) does what (action) to what (resource).

    ``context`` is a :class:`~cedarlite.data.values.Record`. (A named tuple: cheap to build and to
    hash, which the decision cache does for every request.)
    """

    principal: EntityUID
    action: EntityUID
    resource: EntityUID
    context: Record


class RequestSchema(Protocol):
    """What :func:`make_request` needs from a schema (:class:`cedarlite.Schema` provides it)."""

    def conform_request(
        self, request: Request, context: Mapping[str, Any] | None = None, *, validate: bool = True
    ) -> Request:
        """``request`` with ``context`` read by the action's context type (``None``: keep the
        request's own), checked against the action's ``appliesTo`` when ``validate``."""
        ...


# ---------------------------------------------------------------------------------------------
# Entity uids

_UID_RE = re.compile(
    r'([_a-zA-Z][_a-zA-Z0-9]*+(?:::[_a-zA-Z][_a-zA-Z0-9]*+)*+)::("[^"\\]*+(?:\\.[^"\\]*+)*+")',
    re.S,
)


SEEN_UIDS: dict[tuple[str, str], EntityUID] = {}
"""Request uids read by :func:`uid_of` (at most 4,096, each of at most 256 characters)."""


def uid_of(type_name: Any, id_: Any) -> EntityUID | None:
    """The uid of a request's ``{"type": type_name, "id": id_}``, or ``None`` when that is
    not one (not two strings, or not a valid type name: :func:`read_uid` says what is wrong).

    Remembered for the uids requests use: ``SEEN_UIDS.get((type_name, id_))`` answers for one
    seen before without building an ``EntityUID`` (a cold decision pays for every C path it
    runs, and ``tuple.__new__`` parses its arguments).
    """
    if (
        type_name.__class__ is not str
        or id_.__class__ is not str
        or not is_valid_type_name(type_name)
    ):
        return None
    uid = tuple.__new__(EntityUID, (type_name, id_))  # (without EntityUID's Python __new__)
    if len(SEEN_UIDS) < 4096 and len(type_name) + len(id_) <= 256:
        SEEN_UIDS[uid] = uid  # (a tuple key equals, and hashes as, the uid)
    return uid


def parse_entity_uid(text: str, source: str | None = None) -> EntityUID:
    """Parse ``Type::"id"`` (Cedar syntax, escapes decoded; surrounding whitespace allowed).

    Raises :class:`~cedarlite.ParseError` pointing at the part of ``text`` that is wrong.
    """
    if not isinstance(text, str):
        raise ParseError(f"entity uid must be a string, not {type(text).__name__}", source=source)
    stripped = text.strip()
    m = _UID_RE.fullmatch(stripped)
    if m is None:
        raise ParseError(
            f'`{_clip(text)}` is not an entity uid; expected `Type::"id"`',
            span=Span.at(text, 0, len(text)),
            text=text,
            source=source,
        )
    offset = len(text) - len(text.lstrip())
    type_name = m.group(1)
    if not is_valid_type_name(type_name):
        raise ParseError(
            f"`{_clip(type_name)}` is not a valid entity type name (reserved identifier or "
            "`__cedar`)",
            span=Span.at(text, offset, offset + len(type_name)),
            text=text,
            source=source,
        )
    raw = m.group(2)[1:-1]
    try:
        parts = decode_literal(raw)
    except BadEscape as bad:
        start = offset + m.start(2) + 1 + bad.start
        raise ParseError(
            f"the input `{raw[bad.start : bad.end]}` is not a valid escape",
            span=Span.at(text, start, start + (bad.end - bad.start)),
            text=text,
            source=source,
        ) from None
    return EntityUID(type_name, parts[0] if parts else "")


def read_uid(value: Any, field: str) -> EntityUID:
    """The entity uid of a request field: an ``EntityUID``, a ``{"type", "id"}`` object (or
    its ``__entity`` form) or a ``'Type::"id"'`` string; raises :class:`RequestError`."""
    cls = value.__class__
    if cls is EntityUID:
        return value
    if cls is dict and len(value) == 2:  # the common `{"type", "id"}`
        uid = uid_of(value.get("type"), value.get("id"))
        if uid is not None:
            return uid
    if isinstance(value, str):
        try:
            return parse_entity_uid(value)
        except CedarliteError as err:
            raise RequestError(f"request {field}: {err.message}") from None
    return uid_from_json(value, f"request {field}", RequestError)


# ---------------------------------------------------------------------------------------------
# Requests


def make_request(
    request: Request | Mapping[str, Any],
    *,
    schema: RequestSchema | None = None,
    validate: bool = True,
) -> Request:
    """A :class:`Request` from a ``Request`` or a cedarpy-style dict.

    ``principal``/``action``/``resource`` are ``EntityUID``s, ``{"type", "id"}`` dicts or
    ``'Type::"id"'`` strings; ``context`` is a dict of Cedar JSON values (or a ``Record``).
    With a ``schema``, the context is parsed by the action's context type and, when
    ``validate``, the request is checked against the action's ``appliesTo``.
    """
    if request.__class__ is Request:
        req: Request = request
        if (
            req.context.__class__ is Record
            and req.principal.__class__ is EntityUID
            and req.action.__class__ is EntityUID
            and req.resource.__class__ is EntityUID
        ):
            if schema is None:
                return req
            return schema.conform_request(req, None, validate=validate)
        # A hand-built Request with plain Python fields: read it like a request dict.
        request = req._asdict()
    if request.__class__ is not dict:
        if not isinstance(request, Mapping):
            raise RequestError(f"request must be a mapping, not {type(request).__name__}")
        request = dict(request)
    get = request.get
    principal, action, resource = get("principal"), get("action"), get("resource")
    if principal is None or action is None or resource is None:
        missing = [k for k in ("principal", "action", "resource") if get(k) is None]
        raise RequestError(
            f"request is missing `{'`, `'.join(missing)}`", help=_misspelled(request, missing)
        )
    uids = (
        read_uid(principal, "principal"),
        read_uid(action, "action"),
        read_uid(resource, "resource"),
    )
    context_json = get("context")
    if context_json is not None and context_json.__class__ is not dict:
        if isinstance(context_json, str):
            context_json = load_json(context_json, "request context", RequestError)
        if not isinstance(context_json, Mapping):
            raise RequestError("request context must be a JSON object")
        context_json = dict(context_json)
    if schema is not None:
        if context_json:  # (the schema-less reading below checks the limits as it goes)
            check_json_limits(context_json, "request context", RequestError)
        req = Request(*uids, EMPTY_RECORD)
        return schema.conform_request(req, context_json or {}, validate=validate)
    if not context_json:
        return Request(*uids, EMPTY_RECORD)
    try:
        context = value_from_json(context_json, "context")
    except JSONValueError as err:
        raise RequestError(f"request {err.message}") from None
    return Request(*uids, context)


def _misspelled(request: Mapping[Any, Any], missing: list[str]) -> str | None:
    """``the request has `principle`: did you mean `principal`?`` for a key that is close to a
    missing one."""
    known = ("principal", "action", "resource", "context")
    for key in request:
        if isinstance(key, str) and key not in known:
            hint = did_you_mean(key, missing)
            if hint:
                return f"the request has `{key}`: {hint}"
    return None
