"""AST -> canonical Cedar text (the formatter). ``parse(print(x)) == x`` for parsed policies.

Parentheses are added only where precedence requires them. Layout:

```
@id("read-own")
permit (
  principal,
  action == Action::"read",
  resource
)
when { resource.owner == principal };
```
"""

from __future__ import annotations

from collections.abc import Iterable

from .ast import (
    WILDCARD,
    And,
    Binary,
    BinOp,
    Call,
    Condition,
    Expr,
    GetAttr,
    Has,
    If,
    Is,
    Like,
    Lit,
    MethodCall,
    Or,
    PatternElem,
    Policy,
    RecordLit,
    Scope,
    ScopeOp,
    SetLit,
    Slot,
    SlotId,
    Unary,
    UnaryOp,
    Variable,
    is_valid_ident,
)
from .values import EntityUID, quote_string

# Binding strength of each syntactic level (higher binds tighter).
_IF, _OR, _AND, _REL, _ADD, _MUL, _UNARY, _MEMBER = range(8)

_LEVEL = {
    BinOp.EQ: _REL,
    BinOp.NEQ: _REL,
    BinOp.LT: _REL,
    BinOp.LE: _REL,
    BinOp.GT: _REL,
    BinOp.GE: _REL,
    BinOp.IN: _REL,
    BinOp.ADD: _ADD,
    BinOp.SUB: _ADD,
    BinOp.MUL: _MUL,
}


def print_policies(policies: Iterable[Policy]) -> str:
    """Cedar text for a sequence of policies, separated by blank lines."""
    return "\n\n".join(print_policy(p) for p in policies) + "\n"


def print_policy(policy: Policy) -> str:
    """Cedar text for one policy (or template)."""
    lines = [f"@{k}({quote_string(v)})" if v else f"@{k}" for k, v in policy.annotations.items()]
    scopes = [_scope(policy.principal), _scope(policy.action), _scope(policy.resource)]
    lines.append(f"{policy.effect.value} (")
    lines.append(",\n".join(f"  {s}" for s in scopes))
    lines.append(")")
    for cond in policy.conditions:
        lines.append(_condition(cond))
    return "\n".join(lines) + ";"


def _condition(cond: Condition) -> str:
    return f"{cond.kind.value} {{ {print_expr(cond.body)} }}"


def _target(entity: EntityUID | SlotId | None) -> str:
    if isinstance(entity, SlotId):
        return entity.value
    return str(entity)


def _scope(scope: Scope) -> str:
    var = scope.var.value
    match scope.op:
        case ScopeOp.ANY:
            return var
        case ScopeOp.EQ:
            return f"{var} == {_target(scope.entity)}"
        case ScopeOp.IN:
            return f"{var} in {_target(scope.entity)}"
        case ScopeOp.IS:
            return f"{var} is {scope.entity_type}"
        case ScopeOp.IS_IN:
            return f"{var} is {scope.entity_type} in {_target(scope.entity)}"
        case ScopeOp.IN_SET:
            return f"{var} in [{', '.join(str(e) for e in scope.entities)}]"
    raise AssertionError(scope.op)  # pragma: no cover


def print_expr(expr: Expr) -> str:
    """Cedar text for an expression."""
    return _expr(expr, _IF)


def _paren(text: str, level: int, needed: int) -> str:
    return f"({text})" if level < needed else text


def _expr(e: Expr, needed: int) -> str:  # noqa: C901 - one case per node type reads best
    match e:
        case Lit(value=value):
            text = _literal(value)
            negative = value.__class__ is int and value < 0  # type: ignore[operator]
            return _paren(text, _UNARY if negative else _MEMBER, needed)
        case Variable(var=var):
            return var.value
        case Slot(slot=slot):
            return slot.value
        case If(cond=c, then_=t, else_=f):
            text = f"if {_expr(c, _IF)} then {_expr(t, _IF)} else {_expr(f, _IF)}"
            return _paren(text, _IF, needed)
        case Or(left=left, right=right):
            return _paren(f"{_expr(left, _OR)} || {_expr(right, _AND)}", _OR, needed)
        case And(left=left, right=right):
            return _paren(f"{_expr(left, _AND)} && {_expr(right, _REL)}", _AND, needed)
        case Binary(op=op, left=left, right=right):
            level = _LEVEL[op]
            if level == _REL:
                text = f"{_expr(left, _ADD)} {op.value} {_expr(right, _ADD)}"
            else:
                text = f"{_expr(left, level)} {op.value} {_expr(right, level + 1)}"
            return _paren(text, level, needed)
        case Has(expr=inner, path=path):
            return _paren(f"{_expr(inner, _ADD)} has {_has_path(path)}", _REL, needed)
        case Like(expr=inner, pattern=pattern):
            return _paren(f"{_expr(inner, _ADD)} like {_pattern(pattern)}", _REL, needed)
        case Is(expr=inner, entity_type=t, in_expr=None):
            return _paren(f"{_expr(inner, _ADD)} is {t}", _REL, needed)
        case Is(expr=inner, entity_type=t, in_expr=target):
            text = f"{_expr(inner, _ADD)} is {t} in {_expr(target, _ADD)}"  # type: ignore[arg-type]
            return _paren(text, _REL, needed)
        case Unary(op=op, arg=arg):
            return _paren(_unary(op, arg), _UNARY, needed)
        case GetAttr(expr=inner, attr=attr):
            access = f".{attr}" if _is_name(attr) else f"[{quote_string(attr)}]"
            return _expr(inner, _MEMBER) + access
        case MethodCall(receiver=receiver, name=name, args=args):
            return f"{_expr(receiver, _MEMBER)}.{name}({_args(args)})"
        case Call(name=name, args=args):
            return f"{name}({_args(args)})"
        case SetLit(elements=elements):
            return f"[{_args(elements)}]"
        case RecordLit(entries=entries):
            return "{" + ", ".join(f"{_key(k)}: {print_expr(v)}" for k, v in entries) + "}"
    raise TypeError(f"not an expression node: {e!r}")


def _unary(op: UnaryOp, arg: Expr) -> str:
    """``!``/``-`` runs of at most four; a literal under ``-`` keeps its parentheses."""
    count = 1
    while isinstance(arg, Unary) and arg.op is op and count < 4:
        count += 1
        arg = arg.arg
    if op is UnaryOp.NEG and isinstance(arg, Lit) and arg.value.__class__ is int:
        inner = f"({_literal(arg.value)})"  # `-5` would parse as the literal -5
    elif isinstance(arg, Unary):
        inner = f"({_expr(arg, _IF)})"  # `!-x` and five `!` in a row do not parse
    else:
        inner = _expr(arg, _MEMBER)
    return op.value * count + inner


def _is_name(name: str) -> bool:
    """``name`` can be written bare after ``.``, as a record key or in a dotted ``has``."""
    return is_valid_ident(name) and name != "__cedar"


def _args(args: Iterable[Expr]) -> str:
    return ", ".join(print_expr(a) for a in args)


def _key(key: str) -> str:
    return key if _is_name(key) else quote_string(key)


def _has_path(path: tuple[str, ...]) -> str:
    if len(path) == 1:
        return _key(path[0])
    if not all(_is_name(p) for p in path):
        raise ValueError(f"extended `has` path {path!r} has a segment that is not an identifier")
    return ".".join(path)


def _pattern(pattern: tuple[PatternElem, ...]) -> str:
    out = []
    for el in pattern:
        if el is WILDCARD:
            out.append("*")
        else:
            out.append(quote_string(el)[1:-1].replace("*", "\\*"))  # type: ignore[arg-type]
    return '"' + "".join(out) + '"'


def _literal(value: object) -> str:
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return quote_string(value)
    return str(value)  # EntityUID
