"""The strict validator: does every policy typecheck against the schema?

```python
import cedarlite
result = cedarlite.validate(policy_text, schema_text)
if not result.passed:
    for issue in result.errors:
        print(issue)          # policies.cedar:3:14: error[unknown-attribute]: ...
```

Cedar's strict validation, as the Rust engine does it (``Validator::validate(.., Strict)``),
in three parts per policy:

1. **names**: every entity type (literals and ``is``) and action must be declared, and an
   entity of an enumerated type must use one of its ids (wherever it appears, reachable or not);
2. **action application**: some action the action scope allows must apply to a principal type
   and a resource type the principal and resource scopes allow;
3. **typing**: in every request environment of the schema (principal type, action, resource
   type), the policy, scope included, must type as a Bool (see
   :mod:`cedarlite.schema._typecheck`). A policy that is ``False`` in every environment is an
   *impossible policy*: a warning, not an error (validation still passes).

Templates are typed with their slots linked to every entity type the scope allows; linked
policies have their link values checked (declared types, action application).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from ..data.values import EntityUID
from ..errors import ValidationError
from ..lang.ast import (
    And,
    Binary,
    BinOp,
    Expr,
    Is,
    Lit,
    Policy,
    Scope,
    ScopeOp,
    SetLit,
    Slot,
    SlotId,
    Var,
    Variable,
    condition_expr,
    is_action_type,
    walk,
)
from ..policyset import PolicySet
from ..source import Located, Span
from ._lattice import FALSE
from ._typecheck import EnvTypechecker, Finding, TypeEnv, actions_in, typing_key
from .defs import did_you_mean
from .model import Schema
from .types import RecordType

Severity = Literal["error", "warning"]


@dataclass(frozen=True, slots=True)
class ValidationIssue(Located):
    """One validation error or warning.

    ``code`` is stable (``unknown-attribute``, ``unexpected-type``, ``impossible-policy``...);
    ``message`` is one lowercase line with user input in backticks; ``span`` locates the
    offending expression in the policy text; ``help`` is an optional hint (a did-you-mean).
    ``policy_id`` is the policy's (positional) id; ``label`` how reports name it (its ``@id``,
    see :meth:`cedarlite.PolicySet.label`). ``str(issue)`` renders ``source:line:column`` and a
    caret snippet.
    """

    policy_id: str
    code: str
    message: str
    span: Span | None = None
    help: str | None = None
    severity: Severity = "error"
    text: str | None = field(default=None, compare=False, repr=False)
    source: str | None = field(default=None, compare=False, repr=False)
    label: str | None = field(default=None, compare=False, repr=False)

    def to_error(self) -> ValidationError:
        """This issue as a :class:`~cedarlite.ValidationError` (to raise or render)."""
        return ValidationError(
            f"policy `{self.label or self.policy_id}`: {self.message}",
            span=self.span,
            text=self.text,
            source=self.source,
            help=self.help,
            code=self.code,
        )

    def render(self) -> str:
        """The diagnostic: ``source:line:column: error[code]: ...``, caret snippet and help."""
        rendered = self.to_error().render()
        if self.severity == "warning":
            # CedarliteError renders errors; the one shared renderer is reused for warnings.
            rendered = rendered.replace(": error[", ": warning[", 1)
        return rendered

    def __str__(self) -> str:
        return self.render()


@dataclass(frozen=True, slots=True)
class ValidationResult:
    """The outcome of :func:`validate`: errors and warnings, each a :class:`ValidationIssue`.

    ``passed`` is true when there are no errors (warnings, such as an impossible policy, do not
    fail validation, as in Cedar).
    """

    errors: tuple[ValidationIssue, ...] = ()
    warnings: tuple[ValidationIssue, ...] = ()

    @property
    def passed(self) -> bool:
        """No errors."""
        return not self.errors

    def render(self) -> str:
        """Every issue rendered, errors first (or a one-line success note)."""
        issues = (*self.errors, *self.warnings)
        if not issues:
            return "validation passed"
        return "\n".join(issue.render() for issue in issues)

    def __str__(self) -> str:
        return self.render()


def validate(
    policies: PolicySet | str, schema: Schema | str | Mapping[str, Any]
) -> ValidationResult:
    """Validate ``policies`` against ``schema`` in Cedar's strict mode.

    ``policies`` is a :class:`~cedarlite.PolicySet` or Cedar text; ``schema`` a
    :class:`~cedarlite.schema.Schema`, ``.cedarschema`` text, or a JSON schema (text or the
    decoded object). Raises :class:`~cedarlite.ParseError` / :class:`~cedarlite.SchemaError`
    for input that does not parse; everything else is reported in the result.
    """
    policy_set = policies if isinstance(policies, PolicySet) else PolicySet.from_str(policies)
    return Validator(as_schema(schema)).validate(policy_set)


def as_schema(schema: Schema | str | Mapping[str, Any]) -> Schema:
    """``schema`` as a :class:`Schema`: one already, ``.cedarschema`` text, or Cedar's JSON
    schema format (text starting with ``{`` or a mapping)."""
    if isinstance(schema, Schema):
        return schema
    if isinstance(schema, str) and not schema.lstrip().startswith("{"):
        return Schema.from_str(schema)
    return Schema.from_json(schema)


class Validator:
    """Validates policies against one schema (its request environments are computed once per
    schema object, see :meth:`Schema.derived <cedarlite.schema.Schema.derived>`)."""

    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        self.tables = schema.derived(SchemaTables)
        self.envs = self.tables.envs
        self.known_types = self.tables.known_types

    def validate(self, policies: PolicySet) -> ValidationResult:
        """Validate every policy, template and template link of ``policies``."""
        errors: list[ValidationIssue] = []
        warnings: list[ValidationIssue] = []
        for policy in policies:
            source, text = policies.origin(policy.id)  # a set may come from several files
            found, notes = self.check(policy)
            if found and text is not None and any(f.span is None for f in found):
                found, notes = self.check(policies.spanned(policy.id))  # re-parsed with spans
            where = (policy.id, policies.label(policy.id), text, source)
            errors += _issues(where, found, "error")
            warnings += _issues(where, notes, "warning")
        return ValidationResult(tuple(errors), tuple(warnings))

    def check(self, policy: Policy) -> tuple[list[Finding], list[Finding]]:
        """The errors and warnings of one policy (unlocated when ``policy`` has no spans)."""
        if policy.template_id is not None:
            return self.check_link(policy), []
        scan = PolicyScan.of(policy)
        errors = [*self.check_names(policy, scan), *self.check_application(policy)]
        impossible = self.check_types(policy, errors, scan)  # any depth: on an explicit stack
        warnings = [_impossible(policy)] if impossible else []
        return _dedupe(errors), warnings

    def check_types(
        self, policy: Policy, sink: list[Finding], scan: PolicyScan | None = None
    ) -> bool:
        """Type ``policy`` in every environment, into ``sink``; true if it is always false.

        Environments with the same :func:`typing_key` type it alike (the same type and
        findings), so one of each is typed. ``scan`` is the policy's :class:`PolicyScan` when
        the caller has it.
        """
        condition = policy_condition(policy)
        variables = (scan or PolicyScan.of(policy)).variables
        if policy.is_template:
            envs = _distinct(self.environments(policy), typing_key(variables))
        else:
            envs = self.tables.distinct(variables)
        impossible = True
        for env in envs:
            if EnvTypechecker(self.schema, env, sink).policy_type(condition) is not FALSE:
                impossible = False
        return impossible

    # -- names ---------------------------------------------------------------------------------

    def check_names(self, policy: Policy, scan: PolicyScan | None = None) -> Iterator[Finding]:
        """Undeclared entity types and actions, and ids outside an enumerated type."""
        scan = scan or PolicyScan.of(policy)
        for uid, span in scan.literals:
            yield from self._check_uid(uid, span)
        for type_name, span in scan.is_types:
            if type_name not in self.known_types:
                yield self._unknown_type(type_name, span)

    def _check_uid(self, uid: EntityUID, span: Span | None) -> Iterator[Finding]:
        schema = self.schema
        if uid.type not in self.known_types:
            yield self._unknown_type(uid.type, span)
        if is_action_type(uid.type):
            if uid not in schema.actions:
                yield Finding(
                    "unknown-action",
                    f"unrecognized action `{uid}`",
                    span,
                    did_you_mean(str(uid), map(str, schema.actions)),
                )
            return
        definition = schema.entity_types.get(uid.type)
        if definition is not None and definition.enum is not None and uid.id not in definition.enum:
            yield Finding(
                "invalid-enum-entity",
                f"`{uid}` is not one of the ids of the enumerated entity type `{uid.type}`",
                span,
                did_you_mean(uid.id, definition.enum),
            )

    def _unknown_type(self, type_name: str, span: Span | None) -> Finding:
        return Finding(
            "unknown-entity-type",
            f"unrecognized entity type `{type_name}`",
            span,
            did_you_mean(type_name, self.known_types),
        )

    def check_link(self, policy: Policy) -> list[Finding]:
        """A template-linked policy: declared link types and action application."""
        unknown = [
            self._unknown_type(uid.type, policy.span)
            for uid in policy.links.values()
            if uid.type not in self.known_types
        ]
        return [*unknown, *self.check_application(policy)]

    # -- action application --------------------------------------------------------------------

    def check_application(self, policy: Policy) -> list[Finding]:
        """An error unless an action the scope allows applies to types the scope allows."""
        principals = self.scope_types(policy.principal)
        resources = self.scope_types(policy.resource)
        specs = [
            applies
            for uid in self.scope_actions(policy.action)
            if (applies := self.schema.actions[uid].applies_to) is not None
        ]
        if any(
            principals.intersection(s.principal_types) and resources.intersection(s.resource_types)
            for s in specs
        ):
            return []
        fix = [
            scope.var.value
            for scope, pick in (
                (policy.principal, lambda s: s.principal_types),
                (policy.resource, lambda s: s.resource_types),
            )
            if self._in_would_fix(scope, [pick(s) for s in specs])
        ]
        help = f"try `in` instead of `==` in the {' and '.join(fix)} scope" if fix else None
        return [
            Finding(
                "invalid-action-application",
                "no action the scope allows applies to the principal and resource types it allows",
                policy.span,
                help,
            )
        ]

    def _in_would_fix(self, scope: Scope, applicable: list[tuple[str, ...]]) -> bool:
        """``var == E`` matches no applicable type, but a descendant type of ``E`` applies."""
        if scope.op is not ScopeOp.EQ or not isinstance(scope.entity, EntityUID):
            return False
        type_name = scope.entity.type
        below = self.schema.entity_type_descendants(type_name)
        return all(type_name not in types for types in applicable) and any(
            t in below for types in applicable for t in types
        )

    def scope_types(self, scope: Scope) -> frozenset[str]:
        """The entity types of principals (or resources) a scope constraint allows."""
        op, target = scope.op, scope.entity
        if op in (ScopeOp.IS, ScopeOp.IS_IN):
            allowed = frozenset(t for t in (scope.entity_type,) if t in self.known_types)
            if isinstance(target, EntityUID):
                allowed &= self._types_in(target.type)
            return allowed
        if isinstance(target, EntityUID):
            return frozenset({target.type}) if op is ScopeOp.EQ else self._types_in(target.type)
        return frozenset(self.schema.entity_types)  # unconstrained, `== ?slot` or `in ?slot`

    def _types_in(self, type_name: str) -> frozenset[str]:
        return self.schema.entity_type_descendants(type_name) | {type_name}

    def scope_actions(self, scope: Scope) -> frozenset[EntityUID]:
        """The declared actions an action scope allows."""
        actions = self.schema.actions
        if scope.op is ScopeOp.ANY:
            return frozenset(actions)
        if scope.op is ScopeOp.EQ:
            return frozenset({scope.entity} & actions.keys())  # type: ignore[arg-type]
        groups = scope.entities if scope.op is ScopeOp.IN_SET else (scope.entity,)
        return actions_in(self.schema, groups) or frozenset()  # type: ignore[arg-type]

    # -- environments --------------------------------------------------------------------------

    def environments(self, policy: Policy) -> Iterator[TypeEnv]:
        """The request environments to type ``policy`` in (templates: with slots linked)."""
        if not policy.is_template:
            yield from self.envs
            return
        for env in self.envs:
            for p_slot in self._slot_types(policy.principal, env.principal):
                for r_slot in self._slot_types(policy.resource, env.resource):
                    yield env._replace(principal_slot=p_slot, resource_slot=r_slot)

    def _slot_types(self, scope: Scope, var_type: str) -> Iterable[str | None]:
        """The entity types a slot may be linked to so that the scope can match ``var_type``."""
        if scope.slot is None:
            return (None,)
        if scope.op is ScopeOp.EQ:
            return (var_type,)
        schema = self.schema
        if scope.op in (ScopeOp.IN, ScopeOp.IS_IN):
            below = schema.entity_type_descendants
            above = [t for t in schema.entity_types if var_type in below(t)]
            return (*above, var_type)
        return tuple(schema.entity_types)


# ---------------------------------------------------------------------------------------------
# The policy as one expression, and the literals in it


def policy_condition(policy: Policy) -> Expr:
    """``principal-scope && (action-scope && (resource-scope && (cond1 && ...)))``."""
    parts = [scope_expr(s) for s in (policy.principal, policy.action, policy.resource)]
    parts += [condition_expr(c) for c in policy.conditions]
    expr = parts.pop()
    while parts:
        left = parts.pop()
        expr = And((left, expr), span=left.span)
    return expr


def scope_expr(scope: Scope) -> Expr:
    """A scope constraint as the expression it stands for (``true`` when unconstrained)."""
    span = scope.span
    var = Variable(scope.var, span=span)
    target = _target(scope.entity, span)
    match scope.op:
        case ScopeOp.ANY:
            return Lit(True, span=span)
        case ScopeOp.EQ:
            return Binary(BinOp.EQ, var, target, span=span)  # type: ignore[arg-type]
        case ScopeOp.IN:
            return Binary(BinOp.IN, var, target, span=span)  # type: ignore[arg-type]
        case ScopeOp.IS:
            return Is(var, scope.entity_type, span=span)  # type: ignore[arg-type]
        case ScopeOp.IS_IN:
            return Is(var, scope.entity_type, target, span=span)  # type: ignore[arg-type]
    elements = tuple(Lit(uid, span=span) for uid in scope.entities)
    return Binary(BinOp.IN, var, SetLit(elements, span=span), span=span)


def _target(entity: EntityUID | SlotId | None, span: Span | None) -> Expr | None:
    if isinstance(entity, SlotId):
        return Slot(entity, span=span)
    return None if entity is None else Lit(entity, span=span)


class PolicyScan(NamedTuple):
    """What the validator reads off a policy in one walk over its conditions (scopes included):
    its entity literals and ``is`` types with where they are (in order: the name checks report
    them so), and the variables it mentions (what its typing can tell apart)."""

    literals: list[tuple[EntityUID, Span | None]]
    is_types: list[tuple[str, Span | None]]
    variables: frozenset[Var]

    @classmethod
    def of(cls, policy: Policy) -> PolicyScan:
        """Scan ``policy`` (iteratively: any depth is fine)."""
        literals: list[tuple[EntityUID, Span | None]] = []
        is_types: list[tuple[str, Span | None]] = []
        variables: set[Var] = set()
        for scope in (policy.principal, policy.action, policy.resource):
            if scope.op is not ScopeOp.ANY:
                variables.add(scope.var)  # as in `scope_expr`
            if isinstance(scope.entity, EntityUID):
                literals.append((scope.entity, scope.span))
            literals += [(uid, scope.span) for uid in scope.entities]
            if scope.entity_type is not None:
                is_types.append((scope.entity_type, scope.span))
        for cond in policy.conditions:
            for node in walk(cond.body):
                kind = node.__class__
                if kind is Lit:
                    if node.value.__class__ is EntityUID:  # type: ignore[attr-defined]
                        literals.append((node.value, node.span))  # type: ignore[attr-defined]
                elif kind is Variable:
                    variables.add(node.var)  # type: ignore[attr-defined]
                elif kind is Is:
                    is_types.append((node.entity_type, node.span))  # type: ignore[attr-defined]
        return cls(literals, is_types, frozenset(variables))


# ---------------------------------------------------------------------------------------------
# Helpers


def _impossible(policy: Policy) -> Finding:
    return Finding(
        "impossible-policy",
        "policy is impossible: it is false for every request the schema allows",
        policy.span,
        "check the scope and conditions against the schema's `appliesTo`",
    )


class SchemaTables:
    """What the validator derives from a schema, once per schema object
    (:meth:`Schema.derived <cedarlite.schema.Schema.derived>`; nothing here refers back to the
    schema, so no reference cycle keeps it alive)."""

    __slots__ = ("_distinct", "envs", "known_types")

    def __init__(self, schema: Schema) -> None:
        #: The request environments, in schema order.
        self.envs = tuple(
            TypeEnv(env.principal, env.action, env.resource, _context(schema, env.action))
            for env in schema.request_environments()
        )
        #: Every entity type name the schema knows, the actions' types included.
        self.known_types = frozenset(schema.entity_types) | schema.action_entity_types
        self._distinct: dict[frozenset[Var], tuple[TypeEnv, ...]] = {}

    def distinct(self, variables: frozenset[Var]) -> tuple[TypeEnv, ...]:
        """The environments a policy that mentions ``variables`` is typed in: the first of each
        :func:`typing_key` (made once per set of variables)."""
        envs = self._distinct.get(variables)
        if envs is None:
            envs = self._distinct[variables] = _distinct(self.envs, typing_key(variables))
        return envs


def _distinct(envs: Iterable[TypeEnv], key: Callable[[TypeEnv], Any]) -> tuple[TypeEnv, ...]:
    """The first of ``envs`` with each ``key``, in order."""
    first: dict[Any, TypeEnv] = {}
    for env in envs:
        first.setdefault(key(env), env)
    return tuple(first.values())


def _context(schema: Schema, action: EntityUID) -> RecordType:
    applies = schema.actions[action].applies_to
    assert applies is not None  # INVARIANT: request environments come from `appliesTo`
    return applies.context


def _dedupe(findings: list[Finding]) -> list[Finding]:
    """Drop repeats (the same problem found in several environments)."""
    return list(dict.fromkeys(findings))


def _issues(
    where: tuple[str, str, str | None, str | None], findings: list[Finding], severity: Severity
) -> list[ValidationIssue]:
    """Issues of one policy; ``where`` is its id, label, text and source."""
    policy_id, label, text, source = where
    return [
        ValidationIssue(policy_id, f.code, f.message, f.span, f.help, severity, text, source, label)
        for f in findings
    ]


__all__ = ["ValidationIssue", "ValidationResult", "Validator", "validate"]
