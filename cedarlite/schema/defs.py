"""The parts of a schema: names, entity type and action definitions, and the declarations as
written that both schema formats parse into (resolved by :func:`~.model.build_schema`).

Also the helpers every schema stage reports errors with: :class:`ErrorSite` (located
:class:`~cedarlite.SchemaError`\\ s), :func:`json_path_text` and :func:`did_you_mean`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, NamedTuple, Protocol, TypeVar

from .._jsonloc import json_path_text
from ..data.values import EntityUID
from ..errors import SchemaError
from ..errors import did_you_mean as did_you_mean  # (the schema modules import it from here)
from ..source import Span
from .types import (
    BOOL,
    EMPTY_RECORD,
    EXTENSION_TYPE_NAMES,
    LONG,
    STRING,
    CedarType,
    ExtensionType,
    RecordType,
    frozen_map,
)

_T = TypeVar("_T")

# ---------------------------------------------------------------------------------------------
# Names

#: The primitive and extension types, by the name the schema formats give them.
BUILTIN_TYPES: Mapping[str, CedarType] = MappingProxyType(
    {"Bool": BOOL, "Long": LONG, "String": STRING}
    | {name: ExtensionType(name) for name in EXTENSION_TYPE_NAMES}
)

#: Names a common type may not have (they would be ambiguous in the JSON format).
RESERVED_COMMON_TYPE_NAMES = frozenset(
    {"Bool", "Boolean", "Entity", "Extension", "Long", "Record", "Set", "String"}
)

_NO_ANNOTATIONS: Mapping[str, str] = MappingProxyType({})


def namespace_of(name: str) -> str:
    """The namespace part of a fully qualified name (``"A::B"`` for ``"A::B::T"``, else ``""``)."""
    head, _, _ = name.rpartition("::")
    return head


def qualify(namespace: str, name: str) -> str:
    """``name`` declared in ``namespace`` (``""`` is the empty namespace)."""
    return f"{namespace}::{name}" if namespace else name


def action_type(namespace: str) -> str:
    """The entity type of the actions declared in ``namespace``."""
    return qualify(namespace, "Action")


def is_reserved_name(name: str) -> bool:
    """A declared name (or namespace) with a ``__cedar`` segment, which Cedar keeps for itself."""
    return "__cedar" in name.split("::")


# ---------------------------------------------------------------------------------------------
# The model


@dataclass(frozen=True, slots=True)
class EntityTypeDef:
    """A declared entity type.

    ``member_of_types`` are the types whose entities may be parents of this type's entities;
    ``shape`` its attributes; ``tags`` the type of its tags (``None``: no tags); ``enum`` the
    only ids its entities may have (``None``: any id).
    """

    name: str
    member_of_types: frozenset[str] = frozenset()
    shape: RecordType = EMPTY_RECORD
    tags: CedarType | None = None
    enum: tuple[str, ...] | None = None
    annotations: Mapping[str, str] = field(default_factory=lambda: _NO_ANNOTATIONS)

    def __post_init__(self) -> None:
        object.__setattr__(self, "member_of_types", frozenset(self.member_of_types))
        if self.enum is not None:
            object.__setattr__(self, "enum", tuple(self.enum))
        object.__setattr__(self, "annotations", frozen_map(self.annotations))

    def __hash__(self) -> int:
        return hash((self.name, self.member_of_types, self.shape, self.tags, self.enum))


@dataclass(frozen=True, slots=True)
class AppliesTo:
    """The principal and resource types an action applies to, and the type of its context."""

    principal_types: tuple[str, ...]
    resource_types: tuple[str, ...]
    context: RecordType = EMPTY_RECORD

    def __post_init__(self) -> None:
        object.__setattr__(self, "principal_types", tuple(self.principal_types))
        object.__setattr__(self, "resource_types", tuple(self.resource_types))


@dataclass(frozen=True, slots=True)
class ActionDef:
    """A declared action: its uid, the action groups it is a member of, what it applies to.

    ``applies_to`` is ``None`` for an action that applies to no request (no ``appliesTo``, or
    an empty principal or resource list).
    """

    uid: EntityUID
    member_of: tuple[EntityUID, ...] = ()
    applies_to: AppliesTo | None = None
    annotations: Mapping[str, str] = field(default_factory=lambda: _NO_ANNOTATIONS)

    def __post_init__(self) -> None:
        object.__setattr__(self, "member_of", tuple(self.member_of))
        object.__setattr__(self, "annotations", frozen_map(self.annotations))

    def __hash__(self) -> int:
        return hash((self.uid, self.member_of, self.applies_to))


class SchemaModel(Protocol):
    """What the schema formats (:mod:`._human`, :mod:`._json`) and schema-based parsing
    (:mod:`.conform`) read of a schema. :class:`~.model.Schema` is built on them, so they name
    it by this protocol, and the imports point one way (model above them)."""

    @property
    def entity_types(self) -> Mapping[str, EntityTypeDef]: ...

    @property
    def actions(self) -> Mapping[EntityUID, ActionDef]: ...

    @property
    def namespace_annotations(self) -> Mapping[str, Mapping[str, str]]: ...

    @property
    def action_entity_types(self) -> frozenset[str]: ...

    def namespaces(self) -> tuple[str, ...]: ...

    def action_ancestors(self, uid: EntityUID) -> frozenset[EntityUID]: ...

    def derived(self, build: Callable[[Any], _T]) -> _T: ...


class RequestEnv(NamedTuple):
    """One request shape a schema allows: principal type, action, resource type."""

    principal: str
    action: EntityUID
    resource: str


# ---------------------------------------------------------------------------------------------
# Where errors happen

#: A place in a schema: a span of ``.cedarschema`` text, a JSON path, or unknown.
Where = Span | tuple[str | int, ...] | None


@dataclass(frozen=True, slots=True)
class ErrorSite:
    """The schema being read (its text and name), to build located :class:`SchemaError`\\ s."""

    text: str | None
    source: str | None

    def error(self, message: str, where: Where = None, help: str | None = None) -> SchemaError:
        """A :class:`SchemaError` at ``where``; JSON paths are written before the message."""
        if isinstance(where, Span):
            return SchemaError(message, span=where, text=self.text, source=self.source, help=help)
        if where:
            message = f"at {json_path_text(where)}: {message}"
        return SchemaError(message, source=self.source, help=help)

    def guard(self, load: Callable[[], _T]) -> _T:
        """Run ``load``, turning a ``RecursionError`` (absurdly deep nesting) into an error."""
        try:
            return load()
        except RecursionError:
            raise self.error("schema is nested too deeply") from None


# ---------------------------------------------------------------------------------------------
# Declarations as written (both formats parse into these)

RefKind = Literal["common", "entity", "either"]


class RawRef(NamedTuple):
    """A type name as written; ``kind`` says whether it may name a common type, an entity type
    or either (``.cedarschema`` names are ``either``; the JSON format can be specific)."""

    name: str
    kind: RefKind
    where: Where


class RawSet(NamedTuple):
    """``Set<element>`` as written."""

    element: RawType


class RawAttr(NamedTuple):
    """One attribute of a record type as written."""

    name: str
    type: RawType
    required: bool
    annotations: Mapping[str, str]


class RawRecord(NamedTuple):
    """A record type as written (a later attribute of the same name replaces an earlier one,
    as in the reference implementation)."""

    attributes: tuple[RawAttr, ...]
    open: bool = False


#: A type as written: resolved already (``Long`` in JSON), or still holding names.
RawType = CedarType | RawRef | RawSet | RawRecord


class RawCommon(NamedTuple):
    """``type name = type;``"""

    name: str
    type: RawType
    where: Where


class RawEntity(NamedTuple):
    """One entity type declaration (a declaration naming several types gives one each)."""

    name: str
    where: Where
    member_of: tuple[RawRef, ...] = ()
    shape: RawType | None = None
    shape_where: Where = None
    tags: RawType | None = None
    enum: tuple[str, ...] | None = None
    annotations: Mapping[str, str] = _NO_ANNOTATIONS


class RawActionRef(NamedTuple):
    """A reference to an action group: ``type`` is ``None`` for plain ``"id"`` (``Action``)."""

    type: str | None
    id: str
    where: Where


class RawAppliesTo(NamedTuple):
    """An ``appliesTo`` as written."""

    principals: tuple[RawRef, ...]
    resources: tuple[RawRef, ...]
    context: RawType | None
    context_where: Where


class RawAction(NamedTuple):
    """One action declaration."""

    name: str
    where: Where
    member_of: tuple[RawActionRef, ...] = ()
    applies_to: RawAppliesTo | None = None
    annotations: Mapping[str, str] = _NO_ANNOTATIONS


class RawNamespace(NamedTuple):
    """A namespace as written (``name`` ``""`` for the declarations outside any namespace)."""

    name: str
    where: Where
    annotations: Mapping[str, str]
    commons: tuple[RawCommon, ...]
    entities: tuple[RawEntity, ...]
    actions: tuple[RawAction, ...]
