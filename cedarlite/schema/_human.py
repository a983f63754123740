"""The human-readable schema format (``.cedarschema``), both directions.

:func:`parse_cedarschema` turns text into :class:`~.model.RawNamespace` declarations with
the Lark LALR grammar ``grammar/cedarschema.lark`` (this is the only schema module that
imports Lark, and Lark's exceptions stop here); :func:`schema_to_cedarschema` prints a
:class:`~.model.Schema` back as text that parses to an equal schema.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, NamedTuple, cast

from lark import Transformer

from ..data.values import EntityUID, quote_string
from ..errors import SchemaError
from ..lang.ast import RESERVED
from ..lang.parse.lalr_driver import END, Automaton, LexError, Tok, UnexpectedToken, build_lark
from ..source import BadEscape, Span, decode_literal
from .defs import (
    BUILTIN_TYPES,
    ActionDef,
    EntityTypeDef,
    ErrorSite,
    RawAction,
    RawActionRef,
    RawAppliesTo,
    RawAttr,
    RawCommon,
    RawEntity,
    RawNamespace,
    RawRecord,
    RawRef,
    RawSet,
    SchemaModel,
    Where,
    namespace_of,
)
from .types import annotation_text, frozen_map, type_text

# ---------------------------------------------------------------------------------------------
# The grammar and its lexer


@functools.cache
def _parser() -> Automaton:
    return Automaton(build_lark("cedarschema.lark", _Builder(), maybe_placeholders=True))


class _Fail(Exception):
    """Raised while parsing, where the text is not at hand: located by the caller."""

    def __init__(self, message: str, where: Where, help: str | None = None) -> None:
        super().__init__(message)
        self.message, self.where, self.help = message, where, help


# ---------------------------------------------------------------------------------------------
# Parsing


def parse_cedarschema(text: str, site: ErrorSite) -> list[RawNamespace]:
    """The declarations of a ``.cedarschema`` text; syntax errors become :class:`SchemaError`."""
    try:
        return cast(list[RawNamespace], _parser().parse(text))
    except _Fail as fail:
        raise site.error(fail.message, fail.where, fail.help) from None
    except LexError as error:
        span = Span(error.pos, error.pos + 1, error.line, error.column)
        if text[error.pos] == '"':
            raise site.error("unterminated string literal", span) from None
        raise site.error(f"unexpected character `{text[error.pos]}`", span) from None
    except UnexpectedToken as error:
        raise _syntax_error(text, error, site) from None


_TOKEN_NAMES = {"IDENT": "identifier", "STR": "string literal"}


def _syntax_error(text: str, error: UnexpectedToken, site: ErrorSite) -> SchemaError:
    names = sorted({_terminal_text(name) for name in error.expected if name != END})
    help = f"expected {', '.join(names)}" if names else None
    token = error.token
    if token.type == END:
        return site.error("unexpected end of input", Span.at(text, len(text.rstrip())), help)
    return site.error(f"unexpected `{token}`", _span(token), help)


def _terminal_text(name: str) -> str:
    return _TOKEN_NAMES.get(name) or _parser().terminal_text(name)


def _span(first: Any, last: Any = None) -> Span:
    """The span from token ``first`` to token ``last`` (default: ``first`` alone)."""
    end = (first if last is None else last).end_pos
    return Span(first.start_pos, end, first.line, first.column)


def _inner_span(token: Tok, start: int, end: int) -> Span:
    """The span of ``token[start:end]``."""
    before = token[:start]
    newlines = before.count("\n")
    line = token.line + newlines
    column = start - before.rfind("\n") if newlines else token.column + start
    return Span(token.start_pos + start, token.start_pos + end, line, column)


def unescape(token: Tok) -> str:
    """The value of a string literal token, with Cedar's (Rust's) escapes decoded."""
    body = token[1:-1]
    try:
        parts = decode_literal(body)
    except BadEscape as bad:
        raise _Fail(
            f"invalid escape `{body[bad.start : bad.end]}` in string literal",
            _inner_span(token, bad.start + 1, bad.end + 1),
        ) from None
    return parts[0] if parts else ""


def _ident(token: Tok) -> Tok:
    """An identifier used as a name: reserved words are rejected."""
    if token in RESERVED:
        raise _Fail(f"`{token}` is a reserved identifier", _span(token))
    return token


def _name(token: Tok) -> _Name:
    """An identifier or string literal used as a name, with where it is written."""
    value = unescape(token) if token.type == "STR" else str(_ident(token))
    return _Name(value, _span(token))


def _annotations(pairs: list[tuple[Tok, str]]) -> Mapping[str, str]:
    out: dict[str, str] = {}
    for key, value in pairs:
        if key in out:
            raise _Fail(f"duplicate annotation `@{key}`", _span(key))
        out[str(key)] = value
    return frozen_map(out)


class _Name(NamedTuple):
    """A declared name and where it is written."""

    value: str
    where: Span


class _AppDecl(NamedTuple):
    """One ``appliesTo`` clause: ``principal``, ``resource`` or ``context``."""

    kind: str
    keyword: Tok
    value: Any


def _path_text(path: list[Tok]) -> str:
    return "::".join(path)


class _Builder(Transformer[Any, Any]):
    """Lark callbacks, one per grammar rule, building the declarations bottom-up."""

    # -- names ------------------------------------------------------------------------------

    def path(self, c: list[Any]) -> list[Tok]:
        if len(c) == 1:
            return [c[0] if c[0].type == "SET" else _ident(c[0])]
        return [*c[0], _ident(c[1])]

    def idents(self, c: list[Tok]) -> list[_Name]:
        return [_Name(str(_ident(token)), _span(token)) for token in c]

    def names(self, c: list[Tok]) -> list[_Name]:
        return [_name(token) for token in c]

    def strs(self, c: list[Tok]) -> tuple[str, ...]:
        return tuple(unescape(token) for token in c)

    # -- types ------------------------------------------------------------------------------

    def type_ref(self, c: list[list[Tok]]) -> RawRef:
        path = c[0]
        return RawRef(_path_text(path), "either", _span(path[0], path[-1]))

    def set_type(self, c: list[Any]) -> RawSet:
        return RawSet(c[-1])

    def record_type(self, c: list[RawAttr | None]) -> RawRecord:
        return RawRecord(tuple(attr for attr in c if attr is not None))

    def attr_decl(self, c: list[Any]) -> RawAttr:
        *annotations, name, optional, type_ = c
        return RawAttr(_name(name).value, type_, optional is None, _annotations(annotations))

    def ent_types(self, c: list[list[Tok] | None]) -> list[RawRef]:
        return [RawRef(_path_text(p), "entity", _span(p[0], p[-1])) for p in c if p is not None]

    # -- annotations ------------------------------------------------------------------------

    def annotation(self, c: list[Tok | None]) -> tuple[Tok, str]:
        key, value = c
        assert key is not None
        return key, "" if value is None else unescape(value)

    # -- declarations -----------------------------------------------------------------------

    def entity(self, c: list[Any]) -> list[RawEntity]:
        names, parents, shape, tags = c
        return [
            RawEntity(name.value, name.where, tuple(parents or ()), shape, name.where, tags)
            for name in names
        ]

    def entity_shape(self, c: list[RawRecord]) -> RawRecord:
        return c[0]

    def enum_entity(self, c: list[Any]) -> list[RawEntity]:
        names, choices = c
        return [RawEntity(name.value, name.where, enum=choices) for name in names]

    def type_decl(self, c: list[Any]) -> list[RawCommon]:
        name, type_ = c
        return [RawCommon(str(_ident(name)), type_, _span(name))]

    def action(self, c: list[Any]) -> list[RawAction]:
        names, parents, app_decls = c
        applies_to = None if app_decls is None else self._applies_to(names[0], app_decls)
        return [
            RawAction(name.value, name.where, tuple(parents or ()), applies_to) for name in names
        ]

    def _applies_to(self, action: _Name, decls: list[_AppDecl]) -> RawAppliesTo:
        found: dict[str, _AppDecl] = {}
        for decl in decls:
            if decl.kind in found:
                raise _Fail(
                    f"duplicate `{decl.kind}` in the `appliesTo` of action `{action.value}`",
                    _span(decl.keyword),
                )
            if decl.kind != "context" and not decl.value:
                raise _Fail(
                    f"empty `{decl.kind}` list in action `{action.value}`",
                    _span(decl.keyword),
                    help="an action that applies to nothing can leave out `appliesTo`",
                )
            found[decl.kind] = decl
        for kind in ("principal", "resource"):
            if kind not in found:
                raise _Fail(
                    f"missing `{kind}` in the `appliesTo` of action `{action.value}`", action.where
                )
        context = found.get("context")
        return RawAppliesTo(
            tuple(found["principal"].value),
            tuple(found["resource"].value),
            context.value if context else None,
            None if context is None else getattr(context.value, "where", _span(context.keyword)),
        )

    def action_parents(self, c: list[RawActionRef]) -> list[RawActionRef]:
        return c

    def qualified_action(self, c: list[Any]) -> RawActionRef:
        path, id_ = c
        return RawActionRef(_path_text(path), unescape(id_), _span(path[0], id_))

    def path_action(self, c: list[list[Tok]]) -> RawActionRef:
        path = c[0]
        if len(path) > 1:
            raise _Fail(
                f"`{_path_text(path)}` is not an action",
                _span(path[0], path[-1]),
                help=f'an action in another namespace is written `{_path_text(path)}::"id"`',
            )
        return RawActionRef(None, str(path[0]), _span(path[0]))

    def string_action(self, c: list[Tok]) -> RawActionRef:
        return RawActionRef(None, unescape(c[0]), _span(c[0]))

    def app_decls(self, c: list[_AppDecl]) -> list[_AppDecl]:
        return c

    def principal_decl(self, c: list[Any]) -> _AppDecl:
        return _AppDecl("principal", c[0], c[-1])

    def resource_decl(self, c: list[Any]) -> _AppDecl:
        return _AppDecl("resource", c[0], c[-1])

    def context_decl(self, c: list[Any]) -> _AppDecl:
        keyword, value = c[0], c[-1]
        if isinstance(value, list):  # a path: must name a common type
            value = RawRef(_path_text(value), "common", _span(value[0], value[-1]))
        return _AppDecl("context", keyword, value)

    # -- structure --------------------------------------------------------------------------

    def namespace_item(self, c: list[Any]) -> tuple[Mapping[str, str], list[Any]]:
        *annotations, decls = c
        return _annotations(annotations), decls

    def namespace(self, c: list[Any]) -> RawNamespace:
        path, *items = c
        return _namespace(_path_text(path), _span(path[0], path[-1]), frozen_map(), items)

    def item(self, c: list[Any]) -> RawNamespace | tuple[Mapping[str, str], list[Any]]:
        *annotations, body = c
        if isinstance(body, RawNamespace):
            return body._replace(annotations=_annotations(annotations))
        return _annotations(annotations), body

    def start(self, c: list[Any]) -> list[RawNamespace]:
        named = [item for item in c if isinstance(item, RawNamespace)]
        loose = [item for item in c if not isinstance(item, RawNamespace)]
        return [_namespace("", None, frozen_map(), loose), *named]


def _namespace(
    name: str, where: Where, annotations: Mapping[str, str], items: list[Any]
) -> RawNamespace:
    """Sort annotated declarations into a namespace (annotations apply to every name)."""
    commons: list[RawCommon] = []
    entities: list[RawEntity] = []
    actions: list[RawAction] = []
    for decl_annotations, decls in items:
        for decl in decls:
            if isinstance(decl, RawCommon):
                commons.append(decl)
            elif isinstance(decl, RawEntity):
                entities.append(decl._replace(annotations=decl_annotations))
            else:
                actions.append(decl._replace(annotations=decl_annotations))
    return RawNamespace(name, where, annotations, tuple(commons), tuple(entities), tuple(actions))


# ---------------------------------------------------------------------------------------------
# Printing

_INDENT = "  "


def schema_to_cedarschema(schema: SchemaModel) -> str:
    """``.cedarschema`` text for ``schema``: declarations grouped by namespace, in order."""
    blocks: list[str] = []
    for namespace in schema.namespaces():
        qualify = frozenset(
            name
            for name in BUILTIN_TYPES
            if name in schema.entity_types or f"{namespace}::{name}" in schema.entity_types
        )
        indent = _INDENT if namespace else ""
        decls = [
            _entity_text(definition, namespace, qualify, indent)
            for name, definition in schema.entity_types.items()
            if namespace_of(name) == namespace
        ] + [
            _action_text(definition, namespace, qualify, indent)
            for uid, definition in schema.actions.items()
            if namespace_of(uid.type) == namespace
        ]
        if not namespace:
            blocks.extend(decls)
            continue
        header = _annotations_text(schema.namespace_annotations.get(namespace, {}), "")
        body = "\n\n".join(decls)
        blocks.append(f"{header}namespace {namespace} {{\n{body}{chr(10) if body else ''}}}")
    return "\n\n".join(blocks) + "\n" if blocks else ""


def _annotations_text(annotations: Mapping[str, str], indent: str) -> str:
    return "".join(f"{indent}{annotation_text(k, v)}\n" for k, v in annotations.items())


def _entity_name(name: str, namespace: str) -> str:
    return name[len(namespace) + 2 :] if namespace and namespace_of(name) == namespace else name


def _entity_text(
    definition: EntityTypeDef, namespace: str, qualify: frozenset[str], indent: str
) -> str:
    out = _annotations_text(definition.annotations, indent)
    out += f"{indent}entity {_entity_name(definition.name, namespace)}"
    if definition.enum is not None:
        return out + f" enum [{', '.join(map(quote_string, definition.enum))}];"
    if definition.member_of_types:
        parents = sorted(_entity_name(n, namespace) for n in definition.member_of_types)
        out += f" in [{', '.join(parents)}]"
    if definition.shape.attributes:
        out += " = " + _type(definition.shape, namespace, qualify, indent)
    if definition.tags is not None:
        out += " tags " + _type(definition.tags, namespace, qualify, indent)
    return out + ";"


def _action_text(
    definition: ActionDef, namespace: str, qualify: frozenset[str], indent: str
) -> str:
    out = _annotations_text(definition.annotations, indent)
    out += f"{indent}action {quote_string(definition.uid.id)}"
    if definition.member_of:
        parents = ", ".join(_action_ref(uid, namespace) for uid in definition.member_of)
        out += f" in [{parents}]"
    applies = definition.applies_to
    if applies is not None:
        inner = indent + _INDENT
        principals = ", ".join(_entity_name(n, namespace) for n in applies.principal_types)
        resources = ", ".join(_entity_name(n, namespace) for n in applies.resource_types)
        context = _type(applies.context, namespace, qualify, inner)
        out += (
            f" appliesTo {{\n{inner}principal: [{principals}],\n"
            f"{inner}resource: [{resources}],\n{inner}context: {context}\n{indent}}}"
        )
    return out + ";"


def _action_ref(uid: EntityUID, namespace: str) -> str:
    if uid.type == f"{namespace}::Action" or (not namespace and uid.type == "Action"):
        return quote_string(uid.id)
    return str(uid)


def _type(t: Any, namespace: str, qualify: frozenset[str], indent: str) -> str:
    try:
        return type_text(t, namespace=namespace, qualify=qualify, indent=indent)
    except ValueError as error:
        raise SchemaError(str(error)) from None
