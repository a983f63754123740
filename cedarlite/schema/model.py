"""The schema model, and how declarations as written become one.

A :class:`Schema` is fully resolved: every type name is fully qualified, common types are
inlined, and the entity and action hierarchies are closed once, on construction. Both schema
formats parse into the same :class:`~.defs.RawNamespace` declarations (names as written, with where
they were written) and share :func:`build_schema`, which applies Cedar's rules:

* an unqualified name ``T`` inside ``namespace NS`` means, in order: the common type ``NS::T``,
  the entity type ``NS::T``, the common type ``T`` of the empty namespace, the entity type
  ``T`` of the empty namespace; the primitive and extension types (``Long``, ``ipaddr``, ...)
  are common types of the empty namespace unless the user declared that name there, and are
  always reachable as ``__cedar::Long``. Qualified names (``A::T``) mean only themselves;
* a namespace may not redeclare a name of the empty namespace (RFC 70);
* common types may refer to each other but not in a cycle; action groups may not form cycles.

Direct construction (``Schema(entity_types, actions)``) trusts its arguments: use
:meth:`Schema.from_str` or :meth:`Schema.from_json` to have them checked.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, TypeVar

from ..data.entities import Entity
from ..data.request import Request
from ..data.values import EntityUID
from ..errors import SchemaError
from . import conform
from ._json import JSON_TYPE_NAMES, load_json_schema, schema_to_json
from .defs import (
    BUILTIN_TYPES,
    RESERVED_COMMON_TYPE_NAMES,
    ActionDef,
    AppliesTo,
    EntityTypeDef,
    ErrorSite,
    RawAction,
    RawActionRef,
    RawCommon,
    RawEntity,
    RawNamespace,
    RawRef,
    RawSet,
    RawType,
    RequestEnv,
    Where,
    action_type,
    did_you_mean,
    is_reserved_name,
    namespace_of,
    qualify,
)
from .types import (
    EMPTY_RECORD,
    Attribute,
    CedarType,
    EntityType,
    RecordType,
    SetType,
    frozen_map,
)

K = TypeVar("K")
T = TypeVar("T")


def _closure(parents: Mapping[K, Iterable[K]]) -> dict[K, frozenset[K]]:
    """Every key's transitive parents (a key is its own ancestor only through a cycle)."""
    out: dict[K, frozenset[K]] = {}
    for start in parents:
        seen: set[K] = set()
        stack = list(parents[start])
        while stack:
            node = stack.pop()
            if node not in seen:
                seen.add(node)
                stack.extend(parents.get(node, ()))
        out[start] = frozenset(seen)
    return out


def _invert(closure: Mapping[K, frozenset[K]]) -> dict[K, frozenset[K]]:
    children: dict[K, set[K]] = {key: set() for key in closure}
    for key, ancestors in closure.items():
        for ancestor in ancestors:
            children.setdefault(ancestor, set()).add(key)
    return {key: frozenset(value) for key, value in children.items()}


_EMPTY_SET: frozenset[Any] = frozenset()


@dataclass(frozen=True, eq=False)
class Schema:
    """A Cedar schema: entity types by fully qualified name, actions by uid.

    ``namespace_annotations`` holds the annotations of annotated namespaces. Equality compares
    these three mappings (the model), never the text a schema was read from.
    """

    entity_types: Mapping[str, EntityTypeDef]
    actions: Mapping[EntityUID, ActionDef]
    namespace_annotations: Mapping[str, Mapping[str, str]] = field(
        default_factory=lambda: MappingProxyType({})
    )
    _type_ancestors: Mapping[str, frozenset[str]] = field(init=False, repr=False)
    _type_descendants: Mapping[str, frozenset[str]] = field(init=False, repr=False)
    _action_ancestors: Mapping[EntityUID, frozenset[EntityUID]] = field(init=False, repr=False)
    _action_descendants: Mapping[EntityUID, frozenset[EntityUID]] = field(init=False, repr=False)
    _derived: dict[Any, Any] = field(init=False, repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        setattr_ = object.__setattr__
        setattr_(self, "entity_types", frozen_map(self.entity_types))
        setattr_(self, "actions", frozen_map(self.actions))
        setattr_(
            self,
            "namespace_annotations",
            frozen_map({k: frozen_map(v) for k, v in self.namespace_annotations.items()}),
        )
        types = _closure({n: d.member_of_types for n, d in self.entity_types.items()})
        actions = _closure({u: a.member_of for u, a in self.actions.items()})
        setattr_(self, "_type_ancestors", types)
        setattr_(self, "_type_descendants", _invert(types))
        setattr_(self, "_action_ancestors", actions)
        setattr_(self, "_action_descendants", _invert(actions))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Schema):
            return NotImplemented
        return (
            self.entity_types == other.entity_types
            and self.actions == other.actions
            and self.namespace_annotations == other.namespace_annotations
        )

    def __hash__(self) -> int:
        return hash((frozenset(self.entity_types.values()), frozenset(self.actions.values())))

    def derived(self, build: Callable[[Schema], T]) -> T:
        """``build(self)``, made once per schema object and kept with it (``build`` is the key).

        For what a later stage computes once per schema, such as the validator's request
        environments: a schema is immutable, so the result stays right for the schema's
        lifetime. (A result that refers back to the schema makes a reference cycle: only the
        garbage collector frees such a schema.)
        """
        memo = self._derived
        if build not in memo:
            memo[build] = build(self)
        return memo[build]

    # -- constructors and printers (the formats live in their own modules) --------------------

    @classmethod
    def from_str(cls, text: str, source: str | None = None) -> Schema:
        """Parse and check a schema in the human-readable ``.cedarschema`` format."""
        if not isinstance(text, str):
            raise SchemaError(
                f"schema text must be a string, not {type(text).__name__}", source=source
            )
        # lazy on purpose: the text format's parser imports Lark, which only this format needs
        from ._human import parse_cedarschema

        site = ErrorSite(text, source)
        return site.guard(lambda: build_schema(parse_cedarschema(text, site), site))

    @classmethod
    def from_json(cls, obj: Any, source: str | None = None) -> Schema:
        """Parse and check a JSON schema, given as JSON text or as the decoded object."""
        site = ErrorSite(obj if isinstance(obj, str) else None, source)
        return site.guard(
            lambda: build_schema(load_json_schema(obj, site), site, suggest=JSON_TYPE_NAMES)
        )

    def to_json(self) -> dict[str, Any]:
        """The JSON schema format, every name fully qualified: ``from_json(s.to_json()) == s``."""
        return schema_to_json(self)

    def to_cedarschema(self) -> str:
        """The ``.cedarschema`` text of this schema: ``from_str(s.to_cedarschema()) == s``."""
        # lazy on purpose: as in from_str (the writer shares the module with the parser)
        from ._human import schema_to_cedarschema

        return schema_to_cedarschema(self)

    # -- reading entity JSON and requests by their declared types (see :mod:`.conform`) -------

    def conform_entity(
        self, uid: EntityUID, item: Mapping[str, Any], parents: frozenset[EntityUID]
    ) -> Entity:
        """The entity of JSON ``item`` (``uid`` and ``parents`` already read) checked against its
        declaration, attribute and tag values read by their declared types.

        Used by :meth:`Entities.from_json(..., schema=...) <cedarlite.Entities.from_json>`;
        raises :class:`~cedarlite.EntitiesError`.
        """
        return conform.conform_entity(uid, item, parents, self)

    def action_entities(self) -> tuple[Entity, ...]:
        """The declared actions as entities, their parents being their action groups (and
        their ancestors computed: made once per schema)."""
        return self.derived(conform.action_entities)

    def conform_request(
        self, request: Request, context: Mapping[str, Any] | None = None, *, validate: bool = True
    ) -> Request:
        """``request`` with ``context`` (JSON) read by the action's context type (``None``: keep
        the request's own context), checked against the action's ``appliesTo`` if ``validate``.

        Used by :func:`cedarlite.is_authorized` with a ``schema``; raises
        :class:`~cedarlite.RequestError`.
        """
        return conform.conform_request(request, context, self, validate=validate)

    # -- derived relations, computed once ------------------------------------------------------

    def namespaces(self) -> tuple[str, ...]:
        """Namespaces with declarations or annotations, in order of first appearance."""
        seen = dict.fromkeys(namespace_of(name) for name in self.entity_types)
        seen.update(dict.fromkeys(namespace_of(uid.type) for uid in self.actions))
        seen.update(dict.fromkeys(self.namespace_annotations))
        return tuple(seen)

    @functools.cached_property
    def action_entity_types(self) -> frozenset[str]:
        """The entity types of the declared actions (``"Action"``, ``"NS::Action"``, ...)."""
        return frozenset(uid.type for uid in self.actions)

    def entity_type_ancestors(self, name: str) -> frozenset[str]:
        """Types whose entities may (transitively) contain an entity of type ``name``."""
        return self._type_ancestors.get(name, _EMPTY_SET)

    def entity_type_descendants(self, name: str) -> frozenset[str]:
        """Types whose entities may be (transitively) ``in`` an entity of type ``name``."""
        return self._type_descendants.get(name, _EMPTY_SET)

    def action_ancestors(self, uid: EntityUID) -> frozenset[EntityUID]:
        """The action groups ``uid`` is transitively a member of."""
        return self._action_ancestors.get(uid, _EMPTY_SET)

    def action_descendants(self, uid: EntityUID) -> frozenset[EntityUID]:
        """The actions transitively in the group ``uid``."""
        return self._action_descendants.get(uid, _EMPTY_SET)

    def principal_types_of(self, action: EntityUID) -> tuple[str, ...]:
        """The principal types ``action`` applies to (empty for unknown actions)."""
        definition = self.actions.get(action)
        applies = definition.applies_to if definition else None
        return applies.principal_types if applies else ()

    def resource_types_of(self, action: EntityUID) -> tuple[str, ...]:
        """The resource types ``action`` applies to (empty for unknown actions)."""
        definition = self.actions.get(action)
        applies = definition.applies_to if definition else None
        return applies.resource_types if applies else ()

    def request_environments(self) -> tuple[RequestEnv, ...]:
        """Every (principal type, action, resource type) the schema allows, in schema order."""
        return tuple(
            RequestEnv(principal, action.uid, resource)
            for action in self.actions.values()
            if action.applies_to is not None
            for principal in action.applies_to.principal_types
            for resource in action.applies_to.resource_types
        )


# ---------------------------------------------------------------------------------------------
# Resolution


_RESERVED = "`{}` cannot be declared: names with a `__cedar` part are reserved"


def build_schema(
    namespaces: Sequence[RawNamespace], site: ErrorSite, *, suggest: Iterable[str] = ()
) -> Schema:
    """Check the declarations and resolve them into a :class:`Schema`.

    ``suggest`` adds format-specific spellings (``Boolean``...) to did-you-mean hints.
    """
    return _Resolver(namespaces, site, tuple(suggest)).build()


class _Resolver:
    """One resolution: tables of declared names, then definitions resolved in schema order."""

    def __init__(
        self, namespaces: Sequence[RawNamespace], site: ErrorSite, suggest: tuple[str, ...]
    ) -> None:
        self.namespaces = namespaces
        self.site = site
        self.suggest = suggest
        # declarations by fully qualified name (uid for actions)
        self.commons: dict[str, RawCommon] = {}
        self.entities: dict[str, RawEntity] = {}
        self.action_uids: dict[EntityUID, RawAction] = {}
        # resolved common types, builtins included; names being resolved (cycle detection)
        self.resolved: dict[str, CedarType] = {}
        self.resolving: set[str] = set()
        self.action_types: set[str] = set()

    def fail(self, message: str, where: Where, help: str | None = None) -> SchemaError:
        return self.site.error(message, where, help)

    # -- declared names --------------------------------------------------------------------

    def declare(self) -> None:
        seen_namespaces: set[str] = set()
        for ns in self.namespaces:
            if ns.name in seen_namespaces:
                raise self.fail(f"duplicate namespace `{ns.name}`", ns.where)
            seen_namespaces.add(ns.name)
            if is_reserved_name(ns.name):
                raise self.fail(_RESERVED.format(ns.name), ns.where)
            for common in ns.commons:
                if common.name in RESERVED_COMMON_TYPE_NAMES:
                    raise self.fail(
                        f"`{common.name}` is reserved and cannot be the name of a common type",
                        common.where,
                    )
                name = self.declared_name(ns.name, common.name, common.where)
                if name in self.commons:
                    raise self.fail(f"common type `{name}` is declared twice", common.where)
                self.commons[name] = common
            for entity in ns.entities:
                if entity.name == "Action":
                    raise self.fail(
                        "entity type `Action` cannot be declared: it is the type of actions",
                        entity.where,
                    )
                name = self.declared_name(ns.name, entity.name, entity.where)
                if name in self.entities:
                    raise self.fail(f"entity type `{name}` is declared twice", entity.where)
                self.entities[name] = entity
            for action in ns.actions:
                uid = EntityUID(action_type(ns.name), action.name)
                if uid in self.action_uids:
                    raise self.fail(f"action `{uid}` is declared twice", action.where)
                self.action_uids[uid] = action
                self.action_types.add(uid.type)

    def declared_name(self, namespace: str, name: str, where: Where) -> str:
        if is_reserved_name(name):
            raise self.fail(_RESERVED.format(name), where)
        return qualify(namespace, name)

    def check_shadowing(self) -> None:
        """RFC 70: nothing in a namespace may reuse a name of the empty namespace."""
        empty = {name for name in (*self.commons, *self.entities) if "::" not in name}
        for name in (*self.commons, *self.entities):
            basename = name.rpartition("::")[2]
            if "::" in name and basename in empty:
                where = (self.commons.get(name) or self.entities[name]).where
                raise self.fail(
                    f"`{name}` shadows `{basename}` of the empty namespace",
                    where,
                    help="rename one of them: names of the empty namespace are visible "
                    "in every namespace",
                )
        empty_actions = {uid.id for uid in self.action_uids if uid.type == "Action"}
        for uid, action in self.action_uids.items():
            if uid.type != "Action" and uid.id in empty_actions:
                raise self.fail(
                    f"action `{uid}` shadows `{EntityUID('Action', uid.id)}` "
                    "of the empty namespace",
                    action.where,
                )

    def add_builtins(self) -> None:
        for name, builtin in BUILTIN_TYPES.items():
            self.resolved[f"__cedar::{name}"] = builtin
            if name not in self.entities and name not in self.commons:
                self.resolved[name] = builtin

    # -- types -----------------------------------------------------------------------------

    def candidates(self, name: str, namespace: str) -> tuple[str, ...]:
        """What ``name`` written in ``namespace`` may mean, in order of precedence."""
        if "::" in name or not namespace:
            return (name,)
        return (f"{namespace}::{name}", name)

    def resolve_ref(self, ref: RawRef, namespace: str, *, declared_only: bool = False) -> CedarType:
        """The type ``ref`` names (``declared_only``: a declared entity type, not ``Action``)."""
        for candidate in self.candidates(ref.name, namespace):
            if ref.kind != "entity" and (candidate in self.resolved or candidate in self.commons):
                return self.common(candidate)
            if ref.kind != "common" and (
                candidate in self.entities or (not declared_only and candidate in self.action_types)
            ):
                return EntityType(candidate)
        what = "entity type" if ref.kind == "entity" else "type"
        pool: list[str] = list(self.entities)
        if ref.kind != "entity":
            pool += [*self.commons, *BUILTIN_TYPES, *self.suggest]
        visible = [n.rpartition("::")[2] for n in pool if namespace_of(n) == namespace]
        raise self.fail(
            f"unknown {what} `{ref.name}`", ref.where, did_you_mean(ref.name, [*pool, *visible])
        )

    def common(self, name: str) -> CedarType:
        resolved = self.resolved.get(name)
        if resolved is not None:
            return resolved
        definition = self.commons[name]
        if name in self.resolving:
            raise self.fail(
                f"common type `{name}` is defined in terms of itself",
                definition.where,
                help="common types may refer to each other, but not in a cycle",
            )
        self.resolving.add(name)
        resolved = self.type(definition.type, namespace_of(name))
        self.resolving.discard(name)
        self.resolved[name] = resolved
        return resolved

    def type(self, raw: RawType, namespace: str) -> CedarType:
        if isinstance(raw, CedarType):
            return raw
        if isinstance(raw, RawRef):
            return self.resolve_ref(raw, namespace)
        if isinstance(raw, RawSet):
            return SetType(self.type(raw.element, namespace))
        return RecordType(
            {
                attr.name: Attribute(
                    self.type(attr.type, namespace), attr.required, attr.annotations
                )
                for attr in raw.attributes
            },
            raw.open,
        )

    def record(self, raw: RawType | None, namespace: str, where: Where, what: str) -> RecordType:
        if raw is None:
            return EMPTY_RECORD
        resolved = self.type(raw, namespace)
        if not isinstance(resolved, RecordType):
            raise self.fail(f"{what} must be a record type, not `{resolved}`", where)
        return resolved

    def entity_types(self, refs: Iterable[RawRef], namespace: str) -> tuple[str, ...]:
        names = (self.resolve_ref(ref, namespace, declared_only=True) for ref in refs)
        return tuple(dict.fromkeys(t.name for t in names if isinstance(t, EntityType)))

    # -- definitions -----------------------------------------------------------------------

    def entity(self, name: str, raw: RawEntity) -> EntityTypeDef:
        namespace = namespace_of(name)
        return EntityTypeDef(
            name,
            frozenset(self.entity_types(raw.member_of, namespace)),
            self.record(raw.shape, namespace, raw.shape_where, f"the shape of `{name}`"),
            None if raw.tags is None else self.type(raw.tags, namespace),
            raw.enum,
            raw.annotations,
        )

    def action(self, uid: EntityUID, raw: RawAction) -> ActionDef:
        namespace = namespace_of(uid.type)
        parents = tuple(dict.fromkeys(self.action_ref(ref, namespace) for ref in raw.member_of))
        applies_to = None
        if raw.applies_to is not None:
            spec = raw.applies_to
            principals = self.entity_types(spec.principals, namespace)
            resources = self.entity_types(spec.resources, namespace)
            context = self.record(
                spec.context, namespace, spec.context_where, f"the context of `{uid}`"
            )
            if principals and resources:
                applies_to = AppliesTo(principals, resources, context)
        return ActionDef(uid, parents, applies_to, raw.annotations)

    def action_ref(self, ref: RawActionRef, namespace: str) -> EntityUID:
        written = ref.type or "Action"
        for candidate in self.candidates(written, namespace):
            uid = EntityUID(candidate, ref.id)
            if uid in self.action_uids:
                return uid
        shown = EntityUID(written, ref.id)
        raise self.fail(
            f"unknown action `{shown}`",
            ref.where,
            did_you_mean(str(shown), map(str, self.action_uids)),
        )

    def build(self) -> Schema:
        self.declare()
        self.check_shadowing()
        self.add_builtins()
        for name in self.commons:
            self.common(name)
        entity_types = {name: self.entity(name, raw) for name, raw in self.entities.items()}
        actions = {uid: self.action(uid, raw) for uid, raw in self.action_uids.items()}
        annotations = {ns.name: ns.annotations for ns in self.namespaces if ns.annotations}
        schema = Schema(entity_types, actions, annotations)
        for uid, raw in self.action_uids.items():
            if uid in schema.action_ancestors(uid):
                raise self.fail(
                    f"action `{uid}` is a member of itself",
                    raw.where,
                    help="the action hierarchy may not contain a cycle",
                )
        return schema
