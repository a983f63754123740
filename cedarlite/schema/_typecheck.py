"""Strict-mode typing of one policy expression in one request environment.

:class:`EnvTypechecker` follows Cedar's strict typechecker (the Rust validator that the
conformance corpus was produced with; cedar-lean ``Validation/Typechecker.lean`` states the same
rules formally). Typing an expression gives its type, or ``None`` when it could not be typed
(an error was reported, or an unknown entity literal that the name checks report), and its
*capabilities*: the attribute and tag accesses that are safe when the expression is true.

* ``&&``, ``||`` and ``if`` use the singleton types ``True``/``False`` to skip what can never be
  evaluated, and pass capabilities on (``e has a && e.a``; ``if e has a then e.a else 0``);
* ``==`` between different entity types, and between two literals, is ``True``/``False``;
  otherwise its operands need a least upper bound, as do ``if`` branches, set elements and the
  operands of ``contains``/``containsAll``/``containsAny``;
* ``in`` is ``False`` when the schema's hierarchy rules it out, and is decided exactly for action
  literals (``action`` itself is the environment's action);
* optional attributes and tags need a capability; extension constructors need a string literal
  that parses.

Every problem is appended to the ``sink`` as a :class:`Finding`; typing goes on after an error
so that one run reports everything it can.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any, NamedTuple

from .._trampoline import Step, run
from ..data.ext import FUNCTIONS, METHODS, ExtFunction
from ..data.values import EntityUID, quote_string
from ..errors import CedarliteError
from ..lang.ast import (
    And,
    Arith,
    Binary,
    BinOp,
    Call,
    Expr,
    ExprVisitor,
    GetAttr,
    Has,
    If,
    Is,
    Like,
    Lit,
    MethodCall,
    Or,
    RecordLit,
    SetLit,
    Slot,
    SlotId,
    Unary,
    UnaryOp,
    Var,
    Variable,
    is_action_type,
    is_valid_ident,
)
from ..lang.printer import print_expr
from ..source import Span
from ._lattice import (
    COMPARABLE,
    FALSE,
    REGISTRY_TYPES,
    TRUE,
    disjoint,
    is_bool,
    lub_all,
    negate,
    show,
    singleton,
)
from .defs import did_you_mean
from .model import Schema
from .types import (
    BOOL,
    EMPTY_RECORD,
    LONG,
    STRING,
    Attribute,
    CedarType,
    EntityType,
    RecordType,
    SetType,
)

#: Capabilities: ``(expr, attribute name)`` for attributes, ``(expr, tag expr)`` for tags.
Capabilities = frozenset[tuple[Any, ...]]
NO_CAPS: Capabilities = frozenset()

#: A typing result: the type (``None``: untypable) and the capabilities.
Typed = tuple[CedarType | None, Capabilities]


class Finding(NamedTuple):
    """One problem found while typing: a stable code, a one-line message, where, a hint."""

    code: str
    message: str
    span: Span | None
    help: str | None = None


class TypeEnv(NamedTuple):
    """One request environment, with the entity types the template slots are linked to."""

    principal: str
    action: EntityUID
    resource: str
    context: RecordType
    principal_slot: str | None = None
    resource_slot: str | None = None


def typing_key(variables: frozenset[Var]) -> Callable[[TypeEnv], tuple[Any, ...]]:
    """What typing an expression that mentions ``variables`` depends on in an environment:
    two environments with the same key type it alike, with the same findings.

    The principal and resource types matter only where those variables appear; the action
    where ``action`` or ``context`` appears (the context is the action's, and messages about
    it name the action); the slots' linked types always (``None`` outside templates).
    """
    # INVARIANT: EnvTypechecker reads its env only in _variable, _slot, _literal (`action`)
    # and _owner (`context`, naming the action); a new use of the env must be keyed here.
    fields = [
        *(["principal"] if Var.PRINCIPAL in variables else []),
        *(["action"] if Var.ACTION in variables or Var.CONTEXT in variables else []),
        *(["resource"] if Var.RESOURCE in variables else []),
        "principal_slot",
        "resource_slot",
    ]
    return itemgetter(*(TypeEnv._fields.index(f) for f in fields))


def literal_type(schema: Schema, uid: EntityUID) -> CedarType | None:
    """The type of an entity literal, or ``None`` for an undeclared type or action."""
    known = uid in schema.actions if is_action_type(uid.type) else uid.type in schema.entity_types
    return EntityType(uid.type) if known else None


def actions_in(schema: Schema, groups: Sequence[EntityUID]) -> frozenset[EntityUID] | None:
    """The actions ``in`` any of ``groups`` (themselves included); ``None`` if one is unknown."""
    out: set[EntityUID] = set()
    for group in groups:
        if group not in schema.actions:
            return None
        out.add(group)
        out.update(schema.action_descendants(group))
    return frozenset(out)


# ---------------------------------------------------------------------------------------------
# What an operand must be, for `expect` (Cedar checks these with permissive subtyping).


class _Want(NamedTuple):
    accepts: Callable[[CedarType], bool]
    text: str


WANT_BOOL = _Want(is_bool, "`Bool`")


def _exactly(t: CedarType) -> _Want:
    if t == BOOL:
        return WANT_BOOL
    return _Want(lambda actual: actual == t, f"`{show(t)}`")


WANT_LONG = _exactly(LONG)
WANT_STRING = _exactly(STRING)
WANT_ENTITY = _Want(lambda t: t.__class__ is EntityType, "an entity")
WANT_SET = _Want(lambda t: t.__class__ is SetType, "a set")
WANT_ENTITY_OR_RECORD = _Want(
    lambda t: t.__class__ is EntityType or t.__class__ is RecordType, "an entity or a record"
)
WANT_ENTITIES = _Want(
    lambda t: (
        t.__class__ is EntityType or (t.__class__ is SetType and t.element.__class__ is EntityType)
    ),
    "an entity or a set of entities",
)
#: What each type of the extension registry's vocabulary accepts.
WANT_PARAM = {name: _exactly(t) for name, t in REGISTRY_TYPES.items()}


def _hint(default: str | None = None, **by_kind: str) -> Callable[[CedarType], str | None]:
    """A help message chosen by the kind of the wrong type (``set``, ``string``, ``entity``,
    ``record``), or ``default``."""

    def pick(t: CedarType) -> str | None:
        kind = _KINDS.get(t.__class__, "string" if t == STRING else "")
        return by_kind.get(kind, default)

    return pick


_KINDS = {SetType: "set", EntityType: "entity", RecordType: "record"}
_HAS_HINT = _hint(set="to test set membership use `contains`", string="use `like` on strings")
_IN_HINT = _hint("to test set membership use `contains`")
_CONCAT_HINT = _hint(string="strings cannot be concatenated")
_CONTAINS_HINT = _hint(
    entity="for entity membership use `in`", record="to test for an attribute use `has`"
)


class EnvTypechecker(ExprVisitor):
    # (one typing rule per expression node class: the visit_... methods)
    """Types expressions in one environment, appending every problem to ``sink``."""

    def __init__(self, schema: Schema, env: TypeEnv, sink: list[Finding]) -> None:
        self.schema = schema
        self.env = env
        self.sink = sink

    # -- entry points --------------------------------------------------------------------------

    def check(self, expr: Expr, caps: Capabilities = NO_CAPS) -> Step[Typed] | Typed:
        """The type and capabilities of ``expr`` given the capabilities ``caps``: a result for
        a leaf, else a computation for :func:`~cedarlite._trampoline.run` (every typing rule
        yields the typing of its operands, so any depth of nesting is typed without
        recursion)."""
        return self.VISIT[expr.__class__](self, expr, caps)

    def type_of(self, expr: Expr, caps: Capabilities = NO_CAPS) -> Typed:
        """The type and capabilities of ``expr`` given the capabilities ``caps``."""
        return run(self.check(expr, caps))

    def policy_type(self, condition: Expr) -> CedarType | None:
        """The type of a whole policy condition, which must be a Bool."""
        return self.expect(condition, run(self.check(condition, NO_CAPS)), WANT_BOOL)[0]

    # -- reporting -----------------------------------------------------------------------------

    def report(self, code: str, node: Any, message: str, help: str | None = None) -> None:
        """Record a finding located at ``node``."""
        self.sink.append(Finding(code, message, getattr(node, "span", None), help))

    def expect(
        self,
        expr: Expr,
        typed: Typed,
        want: _Want,
        hint: Callable[[CedarType], str | None] | None = None,
    ) -> Typed:
        """``typed`` (the typing of ``expr``) if its type is what ``want`` accepts, else
        reported (with the help ``hint`` gives for the wrong type) and untyped.

        Rules call it as ``self.expect(x, (yield self.check(x, caps)), WANT_BOOL)``.
        """
        t = typed[0]
        if t is None:
            return None, NO_CAPS
        if not want.accepts(t):
            self.report(
                "unexpected-type",
                expr,
                f"unexpected type: expected {want.text} but found `{show(t)}`",
                hint(t) if hint else None,
            )
            return None, NO_CAPS
        return typed

    def lub_or_report(self, node: Expr, types: Sequence[CedarType | None]) -> CedarType | None:
        """The least upper bound of ``types`` (``None`` if one is untyped or there is none)."""
        if any(t is None for t in types):
            return None
        joined = lub_all(types)  # type: ignore[arg-type]
        if joined is None:
            shown = ", ".join(f"`{show(t)}`" for t in dict.fromkeys(types))  # type: ignore[arg-type]
            self.report("incompatible-types", node, f"the types {shown} are not compatible")
        return joined

    # -- leaves --------------------------------------------------------------------------------

    def visit_lit(self, e: Lit, caps: Capabilities) -> Typed:
        value = e.value
        if value.__class__ is bool:
            return singleton(value), NO_CAPS
        if value.__class__ is int:
            return LONG, NO_CAPS
        if value.__class__ is str:
            return STRING, NO_CAPS
        # Undeclared types and actions are reported once per policy by the name checks.
        return literal_type(self.schema, value), NO_CAPS  # type: ignore[arg-type]

    def visit_variable(self, e: Variable, caps: Capabilities) -> Typed:
        env = self.env
        match e.var:
            case Var.PRINCIPAL:
                return EntityType(env.principal), NO_CAPS
            case Var.ACTION:
                return EntityType(env.action.type), NO_CAPS
            case Var.RESOURCE:
                return EntityType(env.resource), NO_CAPS
        return env.context, NO_CAPS

    def visit_slot(self, e: Slot, caps: Capabilities) -> Typed:
        linked = self.env.principal_slot if e.slot is SlotId.PRINCIPAL else self.env.resource_slot
        return (None if linked is None else EntityType(linked)), NO_CAPS

    # -- short-circuiting ----------------------------------------------------------------------

    def visit_if(self, e: If, caps: Capabilities) -> Step[Typed]:
        test, test_caps = self.expect(e.cond, (yield self.check(e.cond, caps)), WANT_BOOL)
        if test is TRUE:
            then, then_caps = yield self.check(e.then_, caps | test_caps)
            return then, then_caps | test_caps
        if test is FALSE:
            return (yield self.check(e.else_, caps))
        then, then_caps = yield self.check(e.then_, caps | test_caps)
        other, else_caps = yield self.check(e.else_, caps)
        joined = self.lub_or_report(e, (then, other))
        if joined is None or test is None:
            return joined, NO_CAPS
        return joined, (then_caps | test_caps) & else_caps

    def _and(self, operands: tuple[Expr, ...], caps: Capabilities) -> Step[Typed]:
        """``a && b && c`` typed as Cedar's left-nested ``(a && b) && c``: each operand is
        combined with the result so far, and sees its capabilities."""
        lt, lcaps = self.expect(operands[0], (yield self.check(operands[0], caps)), WANT_BOOL)
        for right in operands[1:]:
            if lt is FALSE:
                return FALSE, NO_CAPS
            rt, rcaps = self.expect(right, (yield self.check(right, caps | lcaps)), WANT_BOOL)
            if lt is None or rt is None:
                lt, lcaps = BOOL, NO_CAPS
            elif rt is FALSE:
                lt, lcaps = FALSE, NO_CAPS
            elif rt is TRUE:
                lcaps = lcaps | rcaps
            elif lt is TRUE:
                # As in Cedar's typechecker, only the right operand's capabilities survive here.
                lt, lcaps = rt, rcaps
            else:
                lt, lcaps = BOOL, lcaps | rcaps
        return lt, lcaps

    def visit_and(self, e: And, caps: Capabilities) -> Step[Typed]:
        return self._and(e.operands, caps)

    def visit_or(self, e: Or, caps: Capabilities) -> Step[Typed]:
        """``a || b || c`` typed as Cedar's left-nested ``(a || b) || c``."""
        lt, lcaps = self.expect(e.operands[0], (yield self.check(e.operands[0], caps)), WANT_BOOL)
        for right in e.operands[1:]:
            if lt is TRUE:
                return TRUE, lcaps
            rt, rcaps = self.expect(right, (yield self.check(right, caps)), WANT_BOOL)
            if lt is None or rt is None:
                lt, lcaps = BOOL, NO_CAPS
            elif rt is TRUE:
                lt, lcaps = TRUE, rcaps
            elif rt is FALSE:
                pass
            elif lt is FALSE:
                lt, lcaps = rt, rcaps
            else:
                lt, lcaps = BOOL, lcaps & rcaps
        return lt, lcaps

    # -- operators -----------------------------------------------------------------------------

    def visit_unary(self, e: Unary, caps: Capabilities) -> Step[Typed]:
        if e.op is UnaryOp.NOT:
            t, _ = self.expect(e.arg, (yield self.check(e.arg, caps)), WANT_BOOL)
            return (BOOL if t is None else negate(t)), NO_CAPS
        self.expect(e.arg, (yield self.check(e.arg, caps)), WANT_LONG)
        return LONG, NO_CAPS

    def visit_arith(self, e: Arith, caps: Capabilities) -> Step[Typed]:
        # Each operand is checked by the operator that first uses it (`a + b - c` is
        # `(a + b) - c`: `a` and `b` by `+`, `c` by `-`).
        for i, operand in enumerate(e.operands):
            op = e.ops[max(i - 1, 0)]
            self.expect(
                operand,
                (yield self.check(operand, caps)),
                WANT_LONG,
                _CONCAT_HINT if op is BinOp.ADD else None,
            )
        return LONG, NO_CAPS

    def visit_binary(self, e: Binary, caps: Capabilities) -> Step[Typed]:
        op = e.op
        if op is BinOp.EQ:
            return (yield self._equals(e, caps)), NO_CAPS
        if op is BinOp.NEQ:
            return negate((yield self._equals(e, caps))), NO_CAPS
        if op is BinOp.IN:
            return (yield self._in(e.left, e.right, caps)), NO_CAPS
        yield self._compare(e, caps)  # `a > b` is `!(a <= b)`, `a >= b` is `!(a < b)`: a Bool
        return BOOL, NO_CAPS

    def _equals(self, e: Binary, caps: Capabilities) -> Step[CedarType]:
        lt, _ = yield self.check(e.left, caps)
        rt, _ = yield self.check(e.right, caps)
        if lt is not None and rt is not None and disjoint(lt, rt):
            return FALSE
        left, right = self._literal(e.left), self._literal(e.right)
        if left is not None and right is not None:
            return singleton(left == right)
        if lt is not None and rt is not None:
            self.lub_or_report(e, (lt, rt))
        return BOOL

    def _literal(self, e: Expr) -> tuple[type, Any] | None:
        """A literal's value, tagged with its class (so that ``1`` and ``true`` differ)."""
        if e.__class__ is Lit:
            return e.value.__class__, e.value
        if e.__class__ is Variable and e.var is Var.ACTION:
            return EntityUID, self.env.action
        return None

    def _compare(self, e: Binary, caps: Capabilities) -> Step[None]:
        lt, _ = yield self.check(e.left, caps)
        rt, _ = yield self.check(e.right, caps)
        if lt is None or rt is None or (lt == rt and lt in COMPARABLE):
            return
        if LONG in (lt, rt) or lt in COMPARABLE or rt in COMPARABLE:
            good, bad_node, bad = (lt, e.right, rt) if lt in COMPARABLE else (rt, e.left, lt)
            self._wrong_operand(bad_node, f"`{show(good)}`", bad)
            return
        for node, t in ((e.left, lt), (e.right, rt)):
            self._wrong_operand(node, "`Long`, `datetime` or `duration`", t)

    def _wrong_operand(self, node: Expr, expected: str, actual: CedarType) -> None:
        message = f"unexpected type: expected {expected} but found `{show(actual)}`"
        self.report("unexpected-type", node, message)

    # -- `in` ----------------------------------------------------------------------------------

    def _in(self, lhs: Expr, rhs: Expr, caps: Capabilities) -> Step[CedarType]:
        lt, _ = self.expect(lhs, (yield self.check(lhs, caps)), WANT_ENTITY, _IN_HINT)
        rt, _ = self.expect(rhs, (yield self.check(rhs, caps)), WANT_ENTITIES, _HAS_HINT)
        if lt is None or rt is None:
            return BOOL
        lhs_uid = self._literal_uid(lhs)
        rhs_uids = self._literal_uids(rhs)
        if lhs_uid is not None and rhs_uids is not None and is_action_type(lhs_uid.type):
            groups = [uid for uid in rhs_uids if is_action_type(uid.type)]
            if not groups:
                return FALSE
            members = actions_in(self.schema, groups)
            return BOOL if members is None else singleton(lhs_uid in members)
        target = rt.element if rt.__class__ is SetType else rt
        if not self._may_be_in(lt.name, target.name):  # type: ignore[attr-defined]
            return FALSE
        return BOOL

    def _literal_uid(self, e: Expr) -> EntityUID | None:
        literal = self._literal(e)
        return literal[1] if literal is not None and literal[0] is EntityUID else None

    def _literal_uids(self, e: Expr) -> list[EntityUID] | None:
        single = self._literal_uid(e)
        if single is not None:
            return [single]
        if e.__class__ is not SetLit:
            return None
        uids = [self._literal_uid(x) for x in e.elements]
        return None if any(u is None for u in uids) else uids  # type: ignore[return-value]

    def _may_be_in(self, member: str, group: str) -> bool:
        """An entity of type ``member`` may be ``in`` one of type ``group``."""
        schema = self.schema
        if member == group or member in schema.entity_type_descendants(group):
            return True
        return any(
            action.type == group
            and any(d.type == member for d in schema.action_descendants(action))
            for action in schema.actions
        )

    # -- attributes ----------------------------------------------------------------------------

    def _shape(self, t: CedarType) -> RecordType:
        """The attributes of a record or entity type (actions have none)."""
        if t.__class__ is RecordType:
            return t
        definition = self.schema.entity_types.get(t.name)  # type: ignore[attr-defined]
        return EMPTY_RECORD if definition is None else definition.shape

    def visit_get_attr(self, e: GetAttr, caps: Capabilities) -> Step[Typed]:
        t, _ = self.expect(e.expr, (yield self.check(e.expr, caps)), WANT_ENTITY_OR_RECORD)
        if t is None:
            return None, NO_CAPS
        return self._access(e, e.expr, t, e.attr, caps), NO_CAPS

    def _access(
        self, node: Expr, receiver: Expr, t: CedarType, attr: str, caps: Capabilities
    ) -> CedarType | None:
        """The type of ``receiver.attr`` (``receiver`` has type ``t``), reporting unsafe access."""
        shape = self._shape(t)
        found = shape.attributes.get(attr)
        if found is None:
            path, owner = self._owner(receiver, t, attr)
            self.report(
                "unknown-attribute",
                node,
                f"{owner} has no attribute `{path}`",
                did_you_mean(attr, shape.attributes),
            )
            return None
        if not found.required and (receiver, attr) not in caps:
            path, owner = self._owner(receiver, t, attr)
            guard = f"{print_expr(receiver)} has {_has_path_text(attr)}"
            self.report(
                "unsafe-optional-attribute",
                node,
                f"attribute `{path}` of {owner} is optional and may be missing",
                f"guard the access with `{guard} && ...`",
            )
        return found.type

    def _owner(self, receiver: Expr, t: CedarType, attr: str) -> tuple[str, str]:
        """For messages: the attribute path and what it belongs to (entity type, context...)."""
        path = [attr]
        node, owner_type = receiver, t
        while owner_type.__class__ is RecordType and node.__class__ is GetAttr:
            path.insert(0, node.attr)
            node = node.expr
            owner_type = self._quiet_type(node) or EMPTY_RECORD
        if owner_type.__class__ is EntityType:
            return ".".join(path), f"entity type `{owner_type.name}`"
        if node.__class__ is Variable and node.var is Var.CONTEXT:
            return ".".join(path), f"the context of `{self.env.action}`"
        return attr, f"record type `{show(t)}`"

    def _quiet_type(self, e: Expr) -> CedarType | None:
        """The type of ``e`` without reporting anything (used to word messages)."""
        return EnvTypechecker(self.schema, self.env, []).type_of(e)[0]

    def visit_has(self, e: Has, caps: Capabilities) -> Step[Typed]:
        t, _ = self.expect(
            e.expr, (yield self.check(e.expr, caps)), WANT_ENTITY_OR_RECORD, _HAS_HINT
        )
        if t is None:
            return BOOL, NO_CAPS
        if len(e.path) == 1:
            return self._has_one(e.expr, t, e.path[0], caps)
        return self._has_path(e, t, caps)

    def _has_one(self, receiver: Expr, t: CedarType, attr: str, caps: Capabilities) -> Typed:
        shape = self._shape(t)
        found = shape.attributes.get(attr)
        if found is None:
            return (BOOL if shape.open else FALSE), NO_CAPS
        key = (receiver, attr)
        # An entity may be missing from the store, so even a required attribute is unknown.
        known = key in caps or (found.required and t.__class__ is RecordType)
        return (TRUE if known else BOOL), frozenset((key,))

    def _has_path(self, e: Has, t: CedarType, caps: Capabilities) -> Typed:
        """``e has a.b.c``: like ``e has a && e.a has b && e.a.b has c``, typed step by step."""
        steps: list[Typed] = []
        receiver, current = e.expr, t
        for i, attr in enumerate(e.path):
            step = self._has_step(receiver, current, attr, caps, e)
            if step is None:
                return BOOL, NO_CAPS
            steps.append(step)
            if i == len(e.path) - 1 or step[0] is FALSE:
                break
            caps = caps | step[1]
            nxt = self._access(e, receiver, current, attr, caps)
            if nxt is None:
                return BOOL, NO_CAPS
            receiver, current = GetAttr(receiver, attr, span=e.span), nxt
        result, result_caps = steps.pop()
        while steps:  # combine right to left, as `&&` does
            step_type, step_caps = steps.pop()
            if result is FALSE:
                result_caps = NO_CAPS
            else:
                if result is TRUE:
                    result = step_type
                result_caps = step_caps | result_caps
        return result, result_caps

    def _has_step(
        self, receiver: Expr, t: CedarType, attr: str, caps: Capabilities, node: Expr
    ) -> Typed | None:
        if not WANT_ENTITY_OR_RECORD.accepts(t):
            self._wrong_operand(node, WANT_ENTITY_OR_RECORD.text, t)
            return None
        shape = self._shape(t)
        found = shape.attributes.get(attr)
        if found is None:
            return (BOOL if shape.open else FALSE), NO_CAPS
        key = (receiver, attr)
        if key in caps or (found.required and t.__class__ is RecordType):
            return TRUE, NO_CAPS
        return BOOL, frozenset((key,))

    # -- other relations -----------------------------------------------------------------------

    def visit_like(self, e: Like, caps: Capabilities) -> Step[Typed]:
        like_hint = _hint(entity="to test an entity's type use `is`")
        self.expect(e.expr, (yield self.check(e.expr, caps)), WANT_STRING, like_hint)
        return BOOL, NO_CAPS

    def visit_is(self, e: Is, caps: Capabilities) -> Step[Typed]:
        if e.in_expr is not None:  # `x is T in y` is `x is T && x in y`
            is_t = Is(e.expr, e.entity_type, span=e.span)
            in_y = Binary(BinOp.IN, e.expr, e.in_expr, span=e.span)
            return (yield self._and((is_t, in_y), caps))
        t, _ = self.expect(e.expr, (yield self.check(e.expr, caps)), WANT_ENTITY)
        if t is None:
            return BOOL, NO_CAPS
        return singleton(t.name == e.entity_type), NO_CAPS  # type: ignore[attr-defined]

    # -- sets and records ----------------------------------------------------------------------

    def visit_set_lit(self, e: SetLit, caps: Capabilities) -> Step[Typed]:
        types = []
        for x in e.elements:
            types.append((yield self.check(x, caps))[0])
        if not types:
            self.report(
                "empty-set",
                e,
                "empty set literals are not allowed",
                "the validator cannot tell the type of an empty set's elements",
            )
            return None, NO_CAPS
        element = self.lub_or_report(e, types)
        return (None if element is None else SetType(element)), NO_CAPS

    def visit_record_lit(self, e: RecordLit, caps: Capabilities) -> Step[Typed]:
        attributes: dict[str, Attribute] = {}
        for key, value in e.entries:
            t = (yield self.check(value, caps))[0]
            if t is None:
                return None, NO_CAPS
            attributes[key] = Attribute(t)
        return RecordType(attributes), NO_CAPS

    # -- methods and extension functions -------------------------------------------------------

    def visit_call(self, e: Call, caps: Capabilities) -> Step[Typed]:
        return self._ext_call(e, FUNCTIONS.get(e.name), e.args, caps)

    def visit_method_call(self, e: MethodCall, caps: Capabilities) -> Step[Typed]:
        name = e.name
        if name == "contains":
            return (yield self._contains(e, caps)), NO_CAPS
        if name in ("containsAll", "containsAny"):
            left, _ = self.expect(
                e.receiver, (yield self.check(e.receiver, caps)), WANT_SET, _CONTAINS_HINT
            )
            one = _hint("for one element use `contains`")
            right, _ = self.expect(e.args[0], (yield self.check(e.args[0], caps)), WANT_SET, one)
            if left is not None and right is not None:
                self.lub_or_report(e, (left, right))
            return BOOL, NO_CAPS
        if name == "isEmpty":
            self.expect(
                e.receiver,
                (yield self.check(e.receiver, caps)),
                WANT_SET,
                _hint(string='compare with `""`'),
            )
            return BOOL, NO_CAPS
        if name == "hasTag":
            return (yield self._has_tag(e, caps))
        if name == "getTag":
            return (yield self._get_tag(e, caps)), NO_CAPS
        if name in ("startsWith", "endsWith"):  # cedarlite's dialect: (String, String) -> Bool
            self.expect(e.receiver, (yield self.check(e.receiver, caps)), WANT_STRING)
            self.expect(e.args[0], (yield self.check(e.args[0], caps)), WANT_STRING)
            return BOOL, NO_CAPS
        return (yield self._ext_call(e, METHODS.get(name), (e.receiver, *e.args), caps))

    def _contains(self, e: MethodCall, caps: Capabilities) -> Step[CedarType]:
        container, _ = self.expect(
            e.receiver, (yield self.check(e.receiver, caps)), WANT_SET, _CONTAINS_HINT
        )
        element, _ = yield self.check(e.args[0], caps)
        if container is not None and element is not None:
            self.lub_or_report(e, (container.element, element))  # type: ignore[attr-defined]
        return BOOL

    def _tag_operands(
        self, e: MethodCall, caps: Capabilities
    ) -> Step[tuple[CedarType, Any] | None]:
        """The receiver's type and the tags capability key, or ``None`` when untypable."""
        owner, _ = self.expect(e.receiver, (yield self.check(e.receiver, caps)), WANT_ENTITY)
        key, _ = self.expect(e.args[0], (yield self.check(e.args[0], caps)), WANT_STRING)
        if owner is None or key is None:
            return None
        return owner, (e.receiver, ("tag", e.args[0]))

    def _tags_of(self, t: CedarType) -> CedarType | None:
        definition = self.schema.entity_types.get(t.name)  # type: ignore[attr-defined]
        return None if definition is None else definition.tags

    def _has_tag(self, e: MethodCall, caps: Capabilities) -> Step[Typed]:
        operands = yield self._tag_operands(e, caps)
        if operands is None:
            return BOOL, NO_CAPS
        owner, key = operands
        if self._tags_of(owner) is None:
            result: CedarType = FALSE
        else:
            result = TRUE if key in caps else BOOL
        return result, frozenset((key,))

    def _get_tag(self, e: MethodCall, caps: Capabilities) -> Step[CedarType | None]:
        operands = yield self._tag_operands(e, caps)
        if operands is None:
            return None
        owner, key = operands
        tag_type = self._tags_of(owner)
        if key not in caps:
            tag = print_expr(e.args[0])
            self.report(
                "unsafe-tag-access",
                e,
                f"tag `{tag}` of entity type `{owner.name}` may be missing",
                f"guard the access with `{print_expr(e.receiver)}.hasTag({tag}) && ...`",
            )
            return None
        if tag_type is None:
            self.report("no-tags", e, f"entity type `{owner.name}` has no tags")
        return tag_type

    def _ext_call(
        self, e: Expr, func: ExtFunction | None, args: Sequence[Expr], caps: Capabilities
    ) -> Step[Typed]:
        name = getattr(e, "name", "")
        if func is None:  # the parser only lets registered names through
            self.report("unknown-function", e, f"`{name}` is not an extension function")
            return None, NO_CAPS
        returns = REGISTRY_TYPES[func.returns]
        if not self._ext_arguments_ok(e, func, args):
            for arg in args:
                yield self.check(arg, caps)
            return returns, NO_CAPS
        for arg, param in zip(args, func.params, strict=True):
            self.expect(arg, (yield self.check(arg, caps)), WANT_PARAM[param])
        return returns, NO_CAPS

    def _ext_arguments_ok(self, e: Expr, func: ExtFunction, args: Sequence[Expr]) -> bool:
        """The arity, and for a constructor a literal argument that parses (strict mode)."""
        ok = True
        if len(args) != func.arity:
            self.report(
                "wrong-arity",
                e,
                f"`{func.name}` takes {func.arity} argument(s) but was given {len(args)}",
            )
            ok = False
        if func.is_method:
            return ok
        for arg in args:
            if arg.__class__ is Lit and arg.value.__class__ is str:
                ok = self._parses(func, arg) and ok
        if not all(arg.__class__ is Lit for arg in args):
            self.report(
                "non-literal-extension-argument",
                e,
                f"`{func.name}` must be called with a string literal",
                "the validator checks constructor arguments, so they cannot be computed",
            )
            ok = False
        return ok

    def _parses(self, func: ExtFunction, arg: Lit) -> bool:
        try:
            func.call([arg.value])
        except CedarliteError:
            self.report(
                "invalid-extension-argument",
                arg,
                f"{quote_string(arg.value)} is not a valid `{func.returns}` literal",  # type: ignore[arg-type]
            )
            return False
        return True


def _has_path_text(attr: str) -> str:
    return attr if is_valid_ident(attr) else quote_string(attr)


__all__ = [
    "NO_CAPS",
    "EnvTypechecker",
    "Finding",
    "TypeEnv",
    "actions_in",
    "is_action_type",
    "literal_type",
    "typing_key",
]
