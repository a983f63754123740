"""The run time of generated code: the names it may use, and the factories that turn a leaf's
source into its function ``leaf(P, A, R, C, E, errors) -> int`` and a condition's source into
a function ``cond(P, A, R, C, E) -> bool``.

Kept apart from :mod:`.codegen` (which writes the source from the AST) so that a compiled
policy set loaded from the compile cache rebuilds its conditions without the syntax tree
classes, the reference interpreter or the code generator.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable
from functools import lru_cache
from types import CodeType, FunctionType
from typing import Any

from ..._glob import match as match_segments
from ...data.ext import FUNCTIONS, METHODS
from ...data.values import I64_MAX, I64_MIN, CedarSet, EntityUID, Record
from ...errors import EvaluationError
from .. import ops

CondFn = Callable[[EntityUID, EntityUID, EntityUID, Record, Any], bool]
LeafFn = Callable[[EntityUID, EntityUID, EntityUID, Record, Any, list[tuple[int, str]]], int]

_MISSING = object()
_UNREAD = object()  # a shared read not made yet

DEEP_MESSAGE = "expression is nested too deeply to evaluate"
"""The error of a condition that ran out of Python stack (a safety net: conditions nested
deeper than the code generator compiles are evaluated without recursion)."""


def _evaluate_deep(expr: Any, P: Any, A: Any, R: Any, C: Any, E: Any) -> Any:
    """Run-time evaluation of a sub-expression nested too deeply to compile (see
    ``codegen.CODEGEN_DEPTH``; the expression is a constant of the condition): the reference
    interpreter, imported only when such a policy runs."""
    # lazy on purpose: only a condition nested too deeply to compile runs the interpreter
    from ...data.request import Request
    from ..evaluator import Evaluator

    return Evaluator(Request(P, A, R, C), E).evaluate(expr)


_INT_OPS: dict[Any, Callable[[int, int], int]] = {
    ops.add: operator.add,
    ops.sub: operator.sub,
    ops.mul: operator.mul,
}


def _arith_run(acc: Any, step: Callable[[Any, Any], Any], operands: Iterable[Any]) -> Any:
    """``acc step o1 step o2 ...`` for a run of operands of one shape (``codegen.RUN_MIN``),
    each evaluated (by the generator ``operands``) just before its step, as Cedar does;
    ``step`` is ``_ops.add``, ``sub`` or ``mul`` (the checked operation, which also makes
    the errors), with a fast path for two integers whose result fits in 64 bits."""
    fast = _INT_OPS[step]
    for operand in operands:
        if (
            acc.__class__ is int
            and operand.__class__ is int
            and I64_MIN <= (result := fast(acc, operand)) <= I64_MAX
        ):
            acc = result
        else:
            acc = step(acc, operand)
    return acc


SubstringIndex = tuple[tuple[str, ...], dict[str, tuple[str, ...]]]


def contains_any(text: str, index: SubstringIndex) -> bool:
    """Whether ``text`` contains one of the strings of ``index`` (``codegen.substring_index``:
    the strings grouped by one of their characters, the group's key): only the groups whose key
    ``text`` contains are searched, so each key is one scan of ``text`` (C code) and each string
    at most one, as ``any(s in text for s in strings)`` would make."""
    keys, groups = index
    # (Loops, not `filter(text.__contains__, keys)` or `any(map(...))`: `in` is a bytecode,
    # the bound `__contains__` a slot wrapper that takes twice the time; no generator either.)
    for key in keys:
        if key in text:
            for string in groups[key]:
                if string in text:
                    return True
    return False


# Names visible to generated code. Everything a condition calls comes from here.
_GLOBALS: dict[str, Any] = {
    "__builtins__": {},
    "any": any,
    "all": all,
    "map": map,
    "EvaluationError": EvaluationError,
    "RecursionError": RecursionError,  # (named by each policy's `except`: no builtins here)
    "_U": _UNREAD,
    "_DEEP": DEEP_MESSAGE,
    "int": int,
    "bool": bool,
    "str": str,
    "_MISSING": _MISSING,
    "EntityUID": EntityUID,
    "CedarSet": CedarSet,
    "Record": Record,
    "_b": ops.expect_bool,
    "_not": ops.not_,
    "_neg": ops.neg,
    "_add": ops.add,
    "_sub": ops.sub,
    "_mul": ops.mul,
    "_lt": ops.less,
    "_le": ops.less_eq,
    "_gt": ops.greater,
    "_ge": ops.greater_eq,
    "_eq": ops.eq,
    "_in": ops.in_,
    "_in_uid": ops.in_uid,
    "_in_uids": ops.in_uids,
    "_has": ops.has_attr,
    "_ga": ops.get_attr,
    "_like_s": ops.like_segments_match,
    "_like_str": match_segments,
    "_has_any": contains_any,
    "_ev": _evaluate_deep,
    "_arun": _arith_run,
    "_is": ops.is_,
    **{f"_e_{name}": fn for name, fn in ops.ENTITY_METHODS.items()},
    "_LO": I64_MIN,
    "_HI": I64_MAX,
    **{f"_m_{name}": fn for name, fn in ops.PURE_METHODS.items()},
    # Extension functions by name, so that constants stay plain (picklable) values.
    **{f"_x_{f.name}": f.impl for f in (*FUNCTIONS.values(), *METHODS.values())},
    **{f"_X_{f.name}": f for f in (*FUNCTIONS.values(), *METHODS.values())},
}


@lru_cache(maxsize=8192)
def make_factory(body: str) -> Callable[[tuple[Any, ...]], CondFn]:
    """The function ``K -> cond`` for one condition body (compiled once per distinct body:
    policies that differ only in their literals, hoisted into ``K``, share it)."""
    source = f"def _factory(K):\n def cond(P, A, R, C, E):\n  return {body}\n return cond\n"
    namespace: dict[str, Any] = {}
    exec(compile(source, "<cedarlite condition>", "exec"), _GLOBALS, namespace)
    return namespace["_factory"]


@lru_cache(maxsize=8192)
def make_leaf_factory(body: str) -> Callable[[tuple[Any, ...], tuple[int, ...]], LeafFn]:
    """The function ``(K, G) -> leaf`` for one leaf body (compiled once per distinct body:
    leaves that differ only in their literals ``K`` and policy positions ``G`` share it)."""
    source = f"def _factory(K, G):\n def leaf(P, A, R, C, E, errs):\n{body} return leaf\n"
    namespace: dict[str, Any] = {}
    exec(compile(source, "<cedarlite leaf>", "exec"), _GLOBALS, namespace)
    return namespace["_factory"]


def build_leaf(
    source: tuple[str, tuple[Any, ...]], positions: tuple[int, ...], code: CodeType | None = None
) -> LeafFn:
    """The function for a :func:`~.codegen.leaf_source` result, whose policies are at
    ``positions`` in the policy set.

    ``code`` is the code of the source's factory, kept from an earlier compile (a compiled set
    loaded from the compile cache): it skips compiling the source. The function returns the
    bitmask of the policies whose conditions hold and reports each policy that fails to
    evaluate, exactly like evaluating them with :class:`~cedarlite.engine.evaluator.Evaluator`.
    """
    body, consts = source
    if code is not None:  # the factory's code, compiled before (a cached compiled set)
        factory: Callable[..., LeafFn] = FunctionType(code, _GLOBALS)
        return factory(consts, positions)
    return make_leaf_factory(body)(consts, positions)
