"""The validator's type lattice: schema types plus the singleton Bool types ``True``/``False``.

Strict-mode Cedar typing works on the schema types of :mod:`cedarlite.schema.types` and two
more, the singleton Bool types that let the typechecker model short-circuiting (``false && e``
never evaluates ``e``). This module holds the relations over them, following Cedar's strict
mode (cedar-lean ``Validation/Subtyping.lean``; the Rust validator's ``types.rs``):

* subtyping: ``True <: Bool``, ``False <: Bool``, ``Set<S> <: Set<T>`` when ``S <: T``, records
  by depth only (same attribute names, same required flags, attribute types in subtype);
  entity and extension types only to themselves;
* least upper bounds (:func:`lub`): ``True ⊔ False = Bool``, element-wise for sets and records,
  none between different entity types, between entities and records, or between different
  primitive types.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .types import (
    BOOL,
    LONG,
    STRING,
    Attribute,
    BoolType,
    CedarType,
    EntityType,
    ExtensionType,
    RecordType,
    SetType,
    attribute_name_text,
)


@dataclass(frozen=True, slots=True, repr=False)
class BoolLiteralType(CedarType):
    """A singleton Bool type: ``True`` (only the value ``true``) or ``False``."""

    value: bool

    def __repr__(self) -> str:
        return "TRUE" if self.value else "FALSE"


TRUE = BoolLiteralType(True)
FALSE = BoolLiteralType(False)

#: The types ``<``/``<=`` accept (both operands of the same one).
COMPARABLE: frozenset[CedarType] = frozenset(
    {LONG, ExtensionType("datetime"), ExtensionType("duration")}
)

#: The extension registry's type vocabulary (``ExtFunction.params``/``returns``) as types.
REGISTRY_TYPES: dict[str, CedarType] = {"String": STRING, "Long": LONG, "Bool": BOOL} | {
    name: ExtensionType(name) for name in ("decimal", "ipaddr", "datetime", "duration")
}


def singleton(value: bool) -> BoolLiteralType:
    """The singleton type of ``value``."""
    return TRUE if value else FALSE


def is_bool(t: CedarType) -> bool:
    """``t`` is ``Bool``, ``True`` or ``False``."""
    return t.__class__ is BoolType or t.__class__ is BoolLiteralType


def negate(t: CedarType) -> CedarType:
    """The type of ``!e`` for ``e`` of Bool type ``t``."""
    if t is TRUE:
        return FALSE
    if t is FALSE:
        return TRUE
    return BOOL


def is_subtype(sub: CedarType, sup: CedarType) -> bool:
    """``sub <: sup`` in strict mode."""
    if sub == sup:
        return True
    if sub.__class__ is BoolLiteralType:
        return sup.__class__ is BoolType
    if sub.__class__ is SetType and sup.__class__ is SetType:
        return is_subtype(sub.element, sup.element)
    if sub.__class__ is RecordType and sup.__class__ is RecordType:
        return _record_subtype(sub, sup)
    return False


def _record_subtype(sub: RecordType, sup: RecordType) -> bool:
    if sub.open and not sup.open:
        return False
    if sub.attributes.keys() != sup.attributes.keys():
        return False
    return all(
        a.required == sup.attributes[name].required
        and is_subtype(a.type, sup.attributes[name].type)
        for name, a in sub.attributes.items()
    )


def lub(a: CedarType, b: CedarType) -> CedarType | None:
    """The least upper bound of ``a`` and ``b`` in strict mode, or ``None`` when there is none."""
    if is_subtype(a, b):
        return b
    if is_subtype(b, a):
        return a
    if a.__class__ is BoolLiteralType and b.__class__ is BoolLiteralType:
        return BOOL
    if a.__class__ is SetType and b.__class__ is SetType:
        element = lub(a.element, b.element)
        return None if element is None else SetType(element)
    if a.__class__ is RecordType and b.__class__ is RecordType:
        return _record_lub(a, b)
    return None


def _record_lub(a: RecordType, b: RecordType) -> RecordType | None:
    if a.attributes.keys() != b.attributes.keys():
        return None
    attributes: dict[str, Attribute] = {}
    for name, attr in a.attributes.items():
        other = b.attributes[name]
        joined = lub(attr.type, other.type)
        if joined is None or attr.required != other.required:
            return None
        attributes[name] = Attribute(joined, attr.required)
    return RecordType(attributes, a.open or b.open)


def lub_all(types: Iterable[CedarType]) -> CedarType | None:
    """The least upper bound of one or more types (``None``: there is none)."""
    it = iter(types)
    result: CedarType | None = next(it)
    for t in it:
        result = lub(result, t)  # type: ignore[arg-type]
        if result is None:
            return None
    return result


def disjoint(a: CedarType, b: CedarType) -> bool:
    """No value has both types (decided for entity types only, as Cedar does)."""
    return a.__class__ is EntityType and b.__class__ is EntityType and a != b


def show(t: CedarType) -> str:
    """The Cedar spelling of a type for messages (singletons are shown as ``Bool``)."""
    if t.__class__ is BoolLiteralType:
        return "Bool"
    if t.__class__ is SetType:
        return f"Set<{show(t.element)}>"
    if t.__class__ is RecordType:
        return _show_record(t)
    return str(t)


def _show_record(t: RecordType) -> str:
    parts = [
        f"{attribute_name_text(name)}{'' if a.required else '?'}: {show(a.type)}"
        for name, a in t.attributes.items()
    ]
    if t.open:
        parts.append("...")
    return "{ " + ", ".join(parts) + " }" if parts else "{}"


__all__ = [
    "COMPARABLE",
    "FALSE",
    "REGISTRY_TYPES",
    "TRUE",
    "BoolLiteralType",
    "disjoint",
    "is_bool",
    "is_subtype",
    "lub",
    "lub_all",
    "negate",
    "show",
    "singleton",
]
