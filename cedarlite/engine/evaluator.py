"""The reference interpreter: small and obviously right. The compiler is checked against it.

Semantics follow Cedar's formal model: strict left-to-right evaluation, with ``&&``, ``||`` and
``if`` short-circuiting; the operators themselves live in :mod:`cedarlite.engine.ops`.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable
from typing import Any

from ..data.ext import FUNCTIONS, METHODS
from ..data.request import Request
from ..data.response import Decision, PolicyError, Response
from ..data.values import CedarSet, EntityUID, Record
from ..errors import EvaluationError
from ..lang.ast import (
    And,
    Arith,
    Binary,
    BinOp,
    Call,
    Condition,
    ConditionKind,
    Effect,
    Expr,
    GetAttr,
    Has,
    If,
    Is,
    Like,
    Lit,
    MethodCall,
    Or,
    Policy,
    RecordLit,
    Scope,
    ScopeOp,
    SetLit,
    Slot,
    Unary,
    UnaryOp,
    Var,
    Variable,
)
from . import ops

_RELATION = {
    BinOp.EQ: ops.eq,
    BinOp.NEQ: ops.neq,
    BinOp.LT: ops.less,
    BinOp.LE: ops.less_eq,
    BinOp.GT: ops.greater,
    BinOp.GE: ops.greater_eq,
}
_ARITH = {BinOp.ADD: ops.add, BinOp.SUB: ops.sub, BinOp.MUL: ops.mul}
_COMPOUND: Any = object()  # `_leaf`'s answer for a node with operands


class Evaluator:
    """Evaluates expressions and policies for one request against one entity store."""

    __slots__ = ("_vars", "entities", "request")

    def __init__(self, request: Request, entities: ops.EntityStore) -> None:
        self.request = request
        self.entities = entities
        self._vars: dict[Var, Any] = {
            Var.PRINCIPAL: request.principal,
            Var.ACTION: request.action,
            Var.RESOURCE: request.resource,
            Var.CONTEXT: request.context,
        }

    # -- policies -------------------------------------------------------------------------

    def policy_satisfied(self, policy: Policy) -> bool:
        """Whether the policy applies: its scope matches and every condition holds.

        Raises :class:`EvaluationError` when a condition fails to evaluate to a Bool.
        """
        if not (
            self.scope_matches(policy.principal)
            and self.scope_matches(policy.action)
            and self.scope_matches(policy.resource)
        ):
            return False
        return all(self.condition_holds(c) for c in policy.conditions)

    def scope_matches(self, scope: Scope) -> bool:
        """Whether the request variable satisfies a (linked) scope constraint."""
        value: EntityUID = self._vars[scope.var]
        match scope.op:
            case ScopeOp.ANY:
                return True
            case ScopeOp.EQ:
                return value == scope.entity
            case ScopeOp.IN:
                return ops.in_(value, scope.entity, self.entities)
            case ScopeOp.IS:
                return value.type == scope.entity_type
            case ScopeOp.IS_IN:
                return value.type == scope.entity_type and ops.in_(
                    value, scope.entity, self.entities
                )
            case ScopeOp.IN_SET:
                return ops.in_(value, CedarSet(scope.entities), self.entities)
        raise AssertionError(scope.op)  # pragma: no cover

    def condition_holds(self, cond: Condition) -> bool:
        """The Bool value of a ``when``/``unless`` clause."""
        value = ops.expect_bool(self.evaluate(cond.body))
        return value if cond.kind is ConditionKind.WHEN else not value

    # -- expressions ----------------------------------------------------------------------

    def evaluate(self, expr: Expr) -> Any:
        """The value of an expression; raises :class:`EvaluationError`.

        Sub-expressions are evaluated on an explicit stack (each compound node is a generator
        that yields its operands in evaluation order and receives their values), so any depth
        of nesting is fine and a chain costs no depth at all.
        """
        value = self._leaf(expr)
        if value is not _COMPOUND:
            return value
        stack = [self._node(expr)]
        value = None
        while True:
            try:
                operand = stack[-1].send(value)
            except StopIteration as done:
                stack.pop()
                if not stack:
                    return done.value
                value = done.value
                continue
            value = self._leaf(operand)
            if value is _COMPOUND:
                stack.append(self._node(operand))
                value = None

    def _leaf(self, e: Expr) -> Any:
        """The value of a literal or a variable, else ``_COMPOUND``."""
        cls = e.__class__
        if cls is Lit:
            return e.value  # type: ignore[attr-defined]
        if cls is Variable:
            return self._vars[e.var]  # type: ignore[attr-defined]
        return _COMPOUND

    def _node(self, e: Expr) -> Generator[Expr, Any, Any]:
        """Evaluate a compound node: yields each operand to evaluate, returns the value."""
        match e:
            case And(operands=operands):
                for operand in operands:
                    if not ops.expect_bool((yield operand)):
                        return False
                return True
            case Or(operands=operands):
                for operand in operands:
                    if ops.expect_bool((yield operand)):
                        return True
                return False
            case If():
                # A branch is in tail position: `if` cascades (`else if ...`, `then if ...`)
                # are followed in this one step, however long.
                node: Expr = e
                while isinstance(node, If):
                    node = node.then_ if ops.expect_bool((yield node.cond)) else node.else_
                return (yield node)
            case Unary(op=UnaryOp.NOT, arg=arg):
                return ops.not_((yield arg))
            case Unary(op=UnaryOp.NEG, arg=arg):
                return ops.neg((yield arg))
            case Arith(operands=operands, ops=arith_ops):
                # Left to right: `(a + b) + c` adds (and may overflow) before evaluating `c`.
                acc = yield operands[0]
                for op, operand in zip(arith_ops, operands[1:], strict=True):
                    acc = _ARITH[op](acc, (yield operand))
                return acc
            case Binary(op=BinOp.IN, left=left, right=right):
                lhs = yield left
                return ops.in_(lhs, (yield right), self.entities)
            case Binary(op=op, left=left, right=right):
                lhs = yield left
                return _RELATION[op](lhs, (yield right))
            case GetAttr(expr=inner, attr=attr):
                return ops.get_attr((yield inner), attr, self.entities)
            case Has(expr=inner, path=path):
                return self._has((yield inner), path)
            case Like(expr=inner, pattern=pattern):
                return ops.like((yield inner), pattern)
            case Is(expr=inner, entity_type=entity_type, in_expr=None):
                return ops.is_((yield inner), entity_type)
            case Is(expr=inner, entity_type=entity_type, in_expr=Expr() as in_expr):
                value = yield inner
                return ops.is_(value, entity_type) and ops.in_(
                    value, (yield in_expr), self.entities
                )
            case MethodCall(receiver=receiver, name=name, args=args):
                values = [(yield receiver)]
                for arg in args:
                    values.append((yield arg))
                return self._method(name, values)
            case Call(name=name, args=args):
                values = []
                for arg in args:
                    values.append((yield arg))
                return FUNCTIONS[name].call(values)
            case SetLit(elements=elements):
                values = []
                for element in elements:
                    values.append((yield element))
                return CedarSet(values)
            case RecordLit(entries=entries):
                # Rust keeps record literals in a BTreeMap: entries evaluate in key order, which
                # decides which error a record with two failing entries reports.
                record = {}
                for key, value_expr in sorted(entries, key=_entry_key):
                    record[key] = yield value_expr
                return Record(record)
            case Slot(slot=slot):
                raise EvaluationError(f"template slot `{slot.value}` is not linked")
        raise AssertionError(f"unknown expression node {e!r}")  # pragma: no cover

    def _has(self, value: Any, path: tuple[str, ...]) -> bool:
        """``value has a.b.c`` = ``value has a && value.a has b && value.a.b has c``."""
        for i, attr in enumerate(path):
            if not ops.has_attr(value, attr, self.entities):
                return False
            if i + 1 < len(path):
                value = ops.get_attr(value, attr, self.entities)
        return True

    def _method(self, name: str, values: list[Any]) -> Any:
        pure = ops.PURE_METHODS.get(name)
        if pure is not None:
            return pure(*values)
        tag = ops.ENTITY_METHODS.get(name)
        if tag is not None:
            return tag(values[0], values[1], self.entities)
        return METHODS[name].call(values)


def _entry_key(entry: tuple[str, Expr]) -> str:
    return entry[0]


def evaluate(expr: Expr, request: Request, entities: ops.EntityStore) -> Any:
    """Evaluate one expression for a request (see :class:`Evaluator`)."""
    return Evaluator(request, entities).evaluate(expr)


# ---------------------------------------------------------------------------------------------
# The reference authorizer


def decide(satisfied: Iterable[Policy], errors: Iterable[PolicyError] = ()) -> Response:
    """Deny-overrides: Allow iff some permit is satisfied and no forbid is."""
    permits: list[str] = []
    forbids: list[str] = []
    for p in satisfied:
        (permits if p.effect is Effect.PERMIT else forbids).append(p.id)
    if forbids:
        return Response(Decision.DENY, tuple(forbids), tuple(errors))
    if permits:
        return Response(Decision.ALLOW, tuple(permits), tuple(errors))
    return Response(Decision.DENY, (), tuple(errors))


def evaluate_policies(
    policies: Iterable[Policy], request: Request, entities: ops.EntityStore
) -> Response:
    """The reference authorizer: evaluate every policy with the interpreter, then decide."""
    ev = Evaluator(request, entities)
    satisfied: list[Policy] = []
    errors: list[PolicyError] = []
    for p in policies:
        try:
            if ev.policy_satisfied(p):
                satisfied.append(p)
        except EvaluationError as err:
            errors.append(PolicyError(p.id, err.message))
    return decide(satisfied, errors)
