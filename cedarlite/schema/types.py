"""The Cedar type language of schemas: what an attribute, a context or a tag can hold.

Shared by schema-based JSON parsing and the validator (which adds its own internal types, such
as the ``True``/``False`` singletons, on top). Every type is immutable and hashable, and
compares structurally: attribute annotations are documentation and take no part in equality.

| Cedar spelling        | class                                   |
|-----------------------|-----------------------------------------|
| ``Bool``              | :class:`BoolType` (the :data:`BOOL` singleton)   |
| ``Long``              | :class:`LongType` (:data:`LONG`)        |
| ``String``            | :class:`StringType` (:data:`STRING`)    |
| ``NS::User``          | :class:`EntityType` (fully qualified)   |
| ``Set<T>``            | :class:`SetType`                        |
| ``{ a: T, b?: U }``   | :class:`RecordType` of :class:`Attribute` |
| ``ipaddr`` ...        | :class:`ExtensionType`                  |
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TypeVar

from ..data.values import quote_string
from ..lang.ast import is_valid_ident

#: Names of the extension types of Cedar 4.x.
EXTENSION_TYPE_NAMES = ("decimal", "ipaddr", "datetime", "duration")


_EMPTY: Mapping[str, str] = MappingProxyType({})

K = TypeVar("K")
V = TypeVar("V")


def frozen_map(items: Mapping[K, V] | None = None) -> Mapping[K, V]:
    """A read-only copy of ``items`` (insertion order kept)."""
    return MappingProxyType(dict(items or {}))


def attribute_name_text(name: str) -> str:
    """An attribute name as written in a ``.cedarschema``: bare when possible, else quoted."""
    return name if is_valid_ident(name) else quote_string(name)


class CedarType:
    """Base of every schema type. ``str(t)`` is its Cedar spelling on one line."""

    __slots__ = ()

    def __str__(self) -> str:
        return type_text(self)


@dataclass(frozen=True, slots=True, repr=False)
class BoolType(CedarType):
    """The ``Bool`` type (``Boolean`` in the JSON schema format)."""

    def __repr__(self) -> str:
        return "BOOL"


@dataclass(frozen=True, slots=True, repr=False)
class LongType(CedarType):
    """The ``Long`` type: signed 64-bit integers."""

    def __repr__(self) -> str:
        return "LONG"


@dataclass(frozen=True, slots=True, repr=False)
class StringType(CedarType):
    """The ``String`` type."""

    def __repr__(self) -> str:
        return "STRING"


BOOL = BoolType()
LONG = LongType()
STRING = StringType()


@dataclass(frozen=True, slots=True)
class EntityType(CedarType):
    """References to entities of one type; ``name`` is fully qualified (``"NS::User"``)."""

    name: str


@dataclass(frozen=True, slots=True)
class ExtensionType(CedarType):
    """An extension type: ``name`` is one of :data:`EXTENSION_TYPE_NAMES`."""

    name: str


@dataclass(frozen=True, slots=True)
class SetType(CedarType):
    """Sets whose elements all have type ``element``."""

    element: CedarType


@dataclass(frozen=True, slots=True)
class Attribute:
    """One attribute of a record type: its type and whether it must be present.

    ``annotations`` (``@doc("...")`` in a ``.cedarschema``) are kept for printing but ignored
    by equality and hashing.
    """

    type: CedarType
    required: bool = True
    annotations: Mapping[str, str] = field(
        default_factory=lambda: _EMPTY, compare=False, hash=False
    )

    def __post_init__(self) -> None:
        if type(self.annotations) is not MappingProxyType:
            object.__setattr__(self, "annotations", frozen_map(self.annotations))


@dataclass(frozen=True, slots=True, init=False)
class RecordType(CedarType):
    """Records with the given attributes. ``open`` records may carry undeclared attributes.

    ``attributes`` is a read-only mapping; the order of declaration is kept for printing and
    ignored by equality.
    """

    attributes: Mapping[str, Attribute]
    open: bool

    def __init__(self, attributes: Mapping[str, Attribute] | None = None, open: bool = False):
        object.__setattr__(self, "attributes", frozen_map(attributes))
        object.__setattr__(self, "open", open)

    def __hash__(self) -> int:
        return hash((frozenset(self.attributes.items()), self.open))


EMPTY_RECORD = RecordType()


def type_text(
    t: CedarType,
    *,
    namespace: str = "",
    qualify: frozenset[str] = frozenset(),
    indent: str | None = None,
) -> str:
    """The Cedar spelling of ``t``.

    Entity types of ``namespace`` are written relative to it (other names are fully qualified).
    Primitive and extension type names in ``qualify`` are written ``__cedar::Long`` (needed when
    an entity type of that name would capture the bare name). With ``indent`` (the current
    indentation) records are written one attribute per line with their annotations, as in a
    schema, and open records (which a schema cannot express) raise ``ValueError``; without it
    they are written ``{ a: Long, ... }``.
    """
    match t:
        case BoolType():
            name = "Bool"
        case LongType():
            name = "Long"
        case StringType():
            name = "String"
        case ExtensionType(name=name):
            pass
        case EntityType(name=entity_name):
            head, _, base = entity_name.rpartition("::")
            return base if namespace and head == namespace else entity_name
        case SetType(element=element):
            inner = type_text(element, namespace=namespace, qualify=qualify, indent=indent)
            return f"Set<{inner}>"
        case RecordType():
            return _record_text(t, namespace, qualify, indent)
        case _:
            raise TypeError(f"not a schema type: {t!r}")
    return f"__cedar::{name}" if name in qualify else name


def _record_text(t: RecordType, namespace: str, qualify: frozenset[str], indent: str | None) -> str:
    if t.open and indent is not None:
        raise ValueError("open record types cannot be written in a `.cedarschema`")
    if not t.attributes:
        return "{ ... }" if t.open else "{}"
    inner = None if indent is None else indent + "  "
    parts = []
    for name, attr in t.attributes.items():
        attr_type = type_text(attr.type, namespace=namespace, qualify=qualify, indent=inner)
        text = f"{attribute_name_text(name)}{'' if attr.required else '?'}: {attr_type}"
        if inner is not None:
            notes = "".join(
                f"{inner}{annotation_text(k, v)}\n" for k, v in attr.annotations.items()
            )
            text = f"{notes}{inner}{text}"
        parts.append(text)
    if indent is None:
        return "{ " + ", ".join(parts) + (", ... }" if t.open else " }")
    return "{\n" + ",\n".join(parts) + f"\n{indent}}}"


def annotation_text(key: str, value: str) -> str:
    """``@key("value")`` (or ``@key`` when the value is empty)."""
    return f"@{key}({quote_string(value)})" if value else f"@{key}"
