"""Cedar expressions for the compiled tool policy, folded as they are built: ``and_(TRUE, e)`` is
``e``, ``or_(e, TRUE)`` is ``TRUE``, so that a step whose condition does not depend on the run
compiles to an unconditional policy (docs/tool-policy.md)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..data.values import EntityUID
from ..lang.ast import (
    And,
    Binary,
    BinOp,
    Expr,
    GetAttr,
    Lit,
    MethodCall,
    Or,
    SetLit,
    Unary,
    UnaryOp,
    Var,
    Variable,
)
from .catalog import agent_uid
from .config import ProviderEntry
from .names import trim_lower

TRUE: Expr = Lit(True)
FALSE: Expr = Lit(False)
CONTEXT = Variable(Var.CONTEXT)
ACTION = Variable(Var.ACTION)
PRINCIPAL = Variable(Var.PRINCIPAL)


def ctx(attr: str) -> Expr:
    """``context.<attr>``."""
    return GetAttr(CONTEXT, attr)


def lit(value: Any) -> Expr:
    return Lit(value)


def is_true(e: Expr) -> bool:
    return isinstance(e, Lit) and e.value is True


def is_false(e: Expr) -> bool:
    return isinstance(e, Lit) and e.value is False


def _chain(cls: type[And] | type[Or], parts: Sequence[Expr]) -> Expr:
    """One flat chain node (or the single part)."""
    return parts[0] if len(parts) == 1 else cls(tuple(parts))


def and_(*parts: Expr) -> Expr:
    """``a && b && ...`` with ``true`` dropped and ``false`` absorbing."""
    kept = []
    for p in parts:
        if is_false(p):
            return FALSE
        if not is_true(p) and p not in kept:
            kept.append(p)
    return _chain(And, kept) if kept else TRUE


def or_(*parts: Expr) -> Expr:
    """``a || b || ...`` with ``false`` dropped and ``true`` absorbing."""
    kept = []
    for p in parts:
        if is_true(p):
            return TRUE
        if not is_false(p) and p not in kept:
            kept.append(p)
    return _chain(Or, kept) if kept else FALSE


def not_(e: Expr) -> Expr:
    """``!e`` (constants folded, double negation removed)."""
    if is_true(e):
        return FALSE
    if is_false(e):
        return TRUE
    if isinstance(e, Unary) and e.op is UnaryOp.NOT:
        return e.arg
    return Unary(UnaryOp.NOT, e)


def eq(left: Expr, right: Expr) -> Expr:
    """``left == right``."""
    return Binary(BinOp.EQ, left, right)


def set_contains(values: Iterable[str], item: Expr) -> Expr:
    """``["a", "b"].contains(item)``; ``false`` for no values."""
    values = list(values)
    if not values:
        return FALSE
    return MethodCall(SetLit(tuple(lit(v) for v in values)), "contains", (item,))


def action_in(uids: Sequence[EntityUID]) -> Expr:
    if len(uids) == 1:
        op = BinOp.IN if is_group(uids[0]) else BinOp.EQ
        return Binary(op, ACTION, lit(uids[0]))
    return Binary(BinOp.IN, ACTION, SetLit(tuple(lit(u) for u in uids)))


def is_group(uid: EntityUID) -> bool:
    return uid.id.startswith(("group:", "plugin:"))


def principal_is(agent: str) -> Expr:
    """``principal == Agent::"<agent>"``."""
    return eq(PRINCIPAL, lit(agent_uid(agent)))


def principal_not_in(agents: Sequence[str]) -> Expr:
    """``!(principal in [Agent::"a", ...])``; ``true`` for no agents."""
    if not agents:
        return TRUE
    return not_(Binary(BinOp.IN, PRINCIPAL, SetLit(tuple(lit(agent_uid(a)) for a in agents))))


def specialize(e: Expr, principal: str | None, excluded: Sequence[str] = ()) -> Expr:
    """``e`` knowing the principal is ``Agent::"<principal>"`` (or is none of ``excluded``).

    Used inside a policy scoped to one agent: ``principal == Agent::"coder"`` becomes ``true``.
    """
    if principal is None and not excluded:
        return e
    match e:
        case Binary(
            op=BinOp.EQ, left=Variable(var=Var.PRINCIPAL), right=Lit(value=EntityUID() as u)
        ):
            if principal is not None:
                return TRUE if u == agent_uid(principal) else FALSE
            return FALSE if u in {agent_uid(a) for a in excluded} else e
        case Binary(op=BinOp.IN, left=Variable(var=Var.PRINCIPAL), right=SetLit(elements=elems)):
            uids = {x.value for x in elems if isinstance(x, Lit)}
            if principal is not None:
                return TRUE if agent_uid(principal) in uids else FALSE
            return FALSE if uids <= {agent_uid(a) for a in excluded} else e
        case Unary(op=UnaryOp.NOT, arg=arg):
            return not_(specialize(arg, principal, excluded))
        case And(operands=operands):
            return and_(*(specialize(x, principal, excluded) for x in operands))
        case Or(operands=operands):
            return or_(*(specialize(x, principal, excluded) for x in operands))
    return e


# -- context conditions of the steps -----------------------------------------------------------


def provider_lookup(
    by_provider: Mapping[str, ProviderEntry | None] | None,
) -> dict[str, ProviderEntry]:
    """docs/tool-policy.md §5.5 step 2: keys trimmed and lower-cased, blanks ignored, the later key
    wins, ``null`` values absent."""
    out: dict[str, ProviderEntry | None] = {}
    for key, value in (by_provider or {}).items():
        k = trim_lower(key)
        if k:
            out.pop(k, None)
            out[k] = value
    return {k: v for k, v in out.items() if v is not None}


def provider_matches(keys: Sequence[str], key: str) -> Expr:
    """The byProvider entry ``key`` of a lookup with ``keys`` is the match (docs/tool-policy.md
    §5.5).

    ``context.providerModel`` is the model candidate (always containing ``/``, ``""`` without a
    model): the model-specific key beats the provider-wide key.
    """
    slash = [k for k in keys if "/" in k]
    by_model = eq(ctx("providerModel"), lit(key)) if "/" in key else FALSE
    by_provider = and_(
        eq(ctx("provider"), lit(key)), not_(set_contains(slash, ctx("providerModel")))
    )
    return or_(by_model, by_provider)


def provider_unmatched(keys: Sequence[str]) -> Expr:
    """No entry of a lookup with ``keys`` matches."""
    slash = [k for k in keys if "/" in k]
    return and_(
        not_(set_contains(keys, ctx("provider"))), not_(set_contains(slash, ctx("providerModel")))
    )


def provider_match_or_none(keys: Sequence[str], key: str | None) -> Expr:
    """:func:`provider_matches` for a key, :func:`provider_unmatched` for ``None``."""
    return provider_matches(keys, key) if key is not None else provider_unmatched(keys)
