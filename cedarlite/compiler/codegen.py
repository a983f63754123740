"""Policy conditions -> Python functions over the request variables and the entity store.

The conditions of a leaf of the decision tree (policies with the same scope constraints, see
:mod:`.index`) become one generated Python function, ``leaf(P, A, R, C, E, errors) -> int``:
the bitmask of its policies whose conditions hold, each policy's evaluation errors appended to
``errors`` (:func:`leaf_source`). The generated code calls the same operator
functions as the reference interpreter (:mod:`cedarlite._ops`), so errors and their messages
are identical by construction, and adds inline fast paths only where the outcome is provably
the same: equality against a literal, ``context`` attribute reads, ``like`` patterns that are
a prefix/suffix/substring test, integer comparison and arithmetic with an overflow check, and
``in`` against a literal entity. Sub-expressions without variables or entity reads are folded
at compile time (unless they fail, in which case they fail at run time, in place).

Within a leaf function, a variable's attribute path read more than once (``resource.command``
tested by sixty ``like`` patterns, ``context.input`` by several policies) is read once: the
first read stores its value in a local that the later reads use (reads have no effects, so
every later read would give the same value; a read that fails stores nothing, and the next
one fails the same way). A run of ``||`` operands that test one such path against string
literals (``like`` patterns, ``==``) becomes one test of the string: exact strings in a set,
prefixes and suffixes with one ``startswith``/``endswith`` each, substrings searched by C code
in one call, so the tests cost little beyond scanning the string.

Literals are hoisted into a constants tuple ``K``, so leaves that differ only in their
literals share one compiled code object (cached by source text).
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Sequence
from typing import Any

from .. import _ops as ops
from .._glob import Segments, like_segments
from ..ast import (
    And,
    Arith,
    Binary,
    BinOp,
    Call,
    ConditionKind,
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
    SetLit,
    Slot,
    Unary,
    UnaryOp,
    Var,
    Variable,
    children,
    postorder,
)
from ..errors import EvaluationError
from ..evaluator import Evaluator
from ..ext import FUNCTIONS, METHODS
from ..request import Request
from ..values import EntityUID, Record
from .runtime import CondFn, make_factory

_VAR_NAMES = {Var.PRINCIPAL: "P", Var.ACTION: "A", Var.RESOURCE: "R", Var.CONTEXT: "C"}

_BOOL_METHODS = frozenset(
    {*ops.PURE_METHODS, "hasTag"} | {name for name, f in METHODS.items() if f.returns == "Bool"}
)


def returns_bool(e: Expr) -> bool:
    """``e`` evaluates to a Bool whenever it does not raise (so no Bool check is needed)."""
    pending = [e]
    while pending:  # iterative: `if` cascades may be deep
        node = pending.pop()
        match node:
            case Lit(value=v):
                if v.__class__ is not bool:
                    return False
            case Binary() | And() | Or() | Has() | Like() | Is() | Unary(op=UnaryOp.NOT):
                pass  # Binary nodes are relations
            case MethodCall(name=name):
                if name not in _BOOL_METHODS:
                    return False
            case If(then_=t, else_=f):
                pending += (t, f)
            case _:
                return False
    return True


# ---------------------------------------------------------------------------------------------
# Constant folding


def _reads_request(e: Expr) -> bool:
    """``e`` itself reads a variable, a slot or the entity store (whatever its operands do)."""
    match e:
        case Variable() | Slot() | GetAttr() | Has() | Binary(op=BinOp.IN):
            return True
        case Is(in_expr=in_expr):
            return in_expr is not None
        case MethodCall(name=name):
            return name in ops.ENTITY_METHODS
    return False


def foldable_nodes(root: Expr) -> set[int]:
    """The ids of the nodes of ``root`` with no variable, slot or entity-store read anywhere
    in them (their value is a constant, or a constant error)."""
    out: set[int] = set()
    for node in postorder(root):
        if not _reads_request(node) and all(id(c) in out for c in children(node)):
            out.add(id(node))
    return out


class _NoEntities:
    def get(self, uid: EntityUID) -> None:
        return None


_FOLD_EVALUATOR = Evaluator(
    Request(EntityUID("", ""), EntityUID("", ""), EntityUID("", ""), Record()), _NoEntities()
)


def _fold(e: Expr) -> tuple[bool, Any]:
    """``(True, value)`` if the constant expression ``e`` evaluates without error."""
    try:
        return True, _FOLD_EVALUATOR.evaluate(e)
    except EvaluationError:
        return False, None


CODEGEN_DEPTH = 24
"""Sub-expressions nested deeper than this are not compiled to Python (whose parser stops at
200 nested parentheses) but evaluated by the interpreter, which has no depth limit."""


# ---------------------------------------------------------------------------------------------
# Code generation


def _path_ids(bodies: Sequence[Expr]) -> tuple[dict[int, int], dict[int, int]]:
    """Attribute paths rooted at a variable (``context.input.command``): the path of each
    such node (by node id, as a path number) and how many nodes read each path.

    Paths are numbered bottom-up, a node's from its operand's and its attribute, so this is
    linear in the size of the trees however long the paths are."""
    numbers: dict[tuple[Any, str], int] = {}
    path_of: dict[int, int] = {}
    counts: dict[int, int] = {}
    for body in bodies:
        for node in postorder(body):
            if node.__class__ is Variable:
                key: tuple[Any, str] = (None, node.var.value)
            elif node.__class__ is GetAttr and id(node.expr) in path_of:
                key = (path_of[id(node.expr)], node.attr)
            else:
                continue
            number = numbers.setdefault(key, len(numbers))
            path_of[id(node)] = number
            if node.__class__ is GetAttr:
                counts[number] = counts.get(number, 0) + 1
    return path_of, counts


class _Gen:
    """Generates the Python source of condition code (one condition, or a leaf's function)."""

    def __init__(self) -> None:
        self.consts: list[Any] = []
        self._tmp = itertools.count()
        self._foldable: set[int] = set()
        self._depth = 0
        # Shared reads (leaf functions only): the path of each attribute-read node, the paths
        # read more than once, and the local each of those is kept in once read.
        self._path_of: dict[int, int] = {}
        self._shared: set[int] = set()
        self.memos: dict[int, str] = {}

    def share_reads(self, bodies: Sequence[Expr]) -> None:
        """Read each attribute path that ``bodies`` read more than once only once (the
        generated code must start by setting every name of :attr:`memos` to ``_U``)."""
        self._path_of, counts = _path_ids(bodies)
        self._shared = {path for path, n in counts.items() if n > 1}

    def _memo(self, e: Expr) -> str | None:
        """The local holding the value of attribute read ``e``, if it is shared."""
        path = self._path_of.get(id(e))
        if path is None or path not in self._shared:
            return None
        name = self.memos.get(path)
        if name is None:
            name = self.memos[path] = f"_m{len(self.memos)}"
        return name

    def const(self, value: Any) -> str:
        self.consts.append(value)
        return f"K[{len(self.consts) - 1}]"

    def tmp(self) -> str:
        return f"_t{next(self._tmp)}"

    def literal(self, value: Any) -> str:
        """Python source for a literal Cedar value (hoisted into ``K``)."""
        if value is True or value is False:
            return repr(value)
        return self.const(value)

    def condition(self, body: Expr) -> str:
        """Source that evaluates a whole condition and checks it is a Bool."""
        self._foldable = foldable_nodes(body)
        return self.bool_(body)

    def bool_(self, e: Expr) -> str:
        """Source that evaluates ``e`` and checks it is a Bool."""
        code = self.expr(e)
        return code if returns_bool(e) else f"_b({code})"

    def expr(self, e: Expr) -> str:
        """Source that evaluates ``e`` (a node of the tree given to :meth:`condition`)."""
        if e.__class__ is Lit:
            return self.literal(e.value)
        if id(e) in self._foldable:
            ok, value = _fold(e)
            if ok:
                return self.literal(value)
        if self._depth >= CODEGEN_DEPTH:
            return f"_ev({self.const(e)}, P, A, R, C, E)"
        self._depth += 1
        try:
            return self._node(e)
        finally:
            self._depth -= 1

    def _node(self, e: Expr) -> str:
        match e:
            case Variable(var=var):
                return _VAR_NAMES[var]
            case And(operands=operands):
                return "(" + " and ".join(self.bool_(x) for x in operands) + ")"
            case Or(operands=operands):
                return "(" + " or ".join(self._or_parts(operands)) + ")"
            case If(cond=c, then_=t, else_=f):
                return f"({self.expr(t)} if {self.bool_(c)} else {self.expr(f)})"
            case Unary(op=UnaryOp.NOT, arg=arg):
                return f"(not {self.bool_(arg)})"
            case Unary(op=UnaryOp.NEG, arg=arg):
                return f"_neg({self.expr(arg)})"
            case Arith(operands=operands, ops=arith_ops):
                return self._arith(operands, arith_ops)
            case Binary(op=op, left=left, right=right):
                return self._binary(op, left, right)
            case GetAttr(expr=inner, attr=attr):
                memo = self._memo(e)
                if memo is not None:
                    code = self._get_attr(inner, attr)
                    return f"({memo} if {memo} is not _U else ({memo} := {code}))"
                return self._get_attr(inner, attr)
            case Has(expr=inner, path=path):
                return self._has(inner, path)
            case Like(expr=inner, pattern=pattern):
                return self._like(inner, pattern)
            case Is(expr=inner, entity_type=t, in_expr=None):
                v = self.tmp()
                return (
                    f"(({v}).type == {t!r} if ({v} := {self.expr(inner)}).__class__ is EntityUID "
                    f"else _is({v}, {t!r}))"
                )
            case Is(expr=inner, entity_type=t, in_expr=target):
                v = self.tmp()
                return (
                    f"(_is({v} := {self.expr(inner)}, {t!r}) and "
                    f"{self._in(v, target)})"  # type: ignore[arg-type]
                )
            case MethodCall(receiver=receiver, name=name, args=args):
                return self._method(receiver, name, args)
            case Call(name=name, args=args):
                return self._ext(FUNCTIONS[name], [self.expr(a) for a in args])
            case SetLit(elements=elements):
                return f"CedarSet({_tuple([self.expr(x) for x in elements])})"
            case RecordLit(entries=entries):
                # Entries evaluate in key order, as the interpreter's (Rust's BTreeMap).
                body = ", ".join(f"{k!r}: {self.expr(v)}" for k, v in sorted(entries))
                return f"Record({{{body}}})"
            case Slot(slot=slot):
                raise ValueError(f"unlinked template slot `{slot.value}` in a condition")
        raise TypeError(f"not an expression node: {type(e).__name__}")  # pragma: no cover

    # -- operators ---------------------------------------------------------------------------

    def _binary(self, op: BinOp, left: Expr, right: Expr) -> str:
        if op is BinOp.IN:
            return self._in(self.expr(left), right)
        if op in (BinOp.EQ, BinOp.NEQ):
            code = self._eq(left, right)
            return code if op is BinOp.EQ else f"(not {code})"
        a, b = self.tmp(), self.tmp()
        lhs, rhs = self.expr(left), self.expr(right)
        both_int = f"(({a} := {lhs}).__class__ is int) & (({b} := {rhs}).__class__ is int)"
        fn = {BinOp.LT: "_lt", BinOp.LE: "_le", BinOp.GT: "_gt", BinOp.GE: "_ge"}[op]
        return f"({a} {op.value} {b} if {both_int} else {fn}({a}, {b}))"

    def _arith(self, operands: tuple[Expr, ...], arith_ops: tuple[BinOp, ...]) -> str:
        """A chain ``a op b op c ...``: one step per operator, in a flat tuple (evaluated left
        to right), so that a long chain does not nest Python expressions."""
        acc, b, r = self.tmp(), self.tmp(), self.tmp()
        steps = [f"({acc} := {self.expr(operands[0])})"]
        for op, operand in zip(arith_ops, operands[1:], strict=True):
            rhs = self.expr(operand)
            fn = {BinOp.ADD: "_add", BinOp.SUB: "_sub", BinOp.MUL: "_mul"}[op]
            both_int = f"({acc}.__class__ is int) & (({b} := {rhs}).__class__ is int)"
            checked = f"_LO <= ({r} := {acc} {op.value} {b}) <= _HI"
            steps.append(f"({acc} := {r} if {both_int} and {checked} else {fn}({acc}, {b}))")
        if len(steps) == 2:
            return f"({steps[0]}, {steps[1]})[1]"
        return f"({', '.join(steps)})[-1]"

    def _eq(self, left: Expr, right: Expr) -> str:
        if isinstance(left, Lit) and not isinstance(right, Lit):
            left, right = right, left  # a literal has no effects: evaluation order is moot
        if isinstance(right, Lit):
            value = right.value
            if value.__class__ in (str, EntityUID):
                # No other Cedar value compares equal to a str or to an EntityUID (a tuple).
                return f"({self.expr(left)} == {self.literal(value)})"
            v = self.tmp()
            cls = "bool" if value.__class__ is bool else "int"
            return (
                f"(({v} := {self.expr(left)}) == {self.literal(value)} and {v}.__class__ is {cls})"
            )
        a, b = self.tmp(), self.tmp()
        return (
            f"(({a} := {self.expr(left)}).__class__ is ({b} := {self.expr(right)}).__class__ "
            f"and {a} == {b})"
        )

    def _in(self, lhs: str, target: Expr) -> str:
        """``lhs in target``, the left side given as source (evaluated first)."""
        if isinstance(target, Lit) and target.value.__class__ is EntityUID:
            return f"_in_uid({lhs}, {self.literal(target.value)}, E)"
        constant = isinstance(target, SetLit) and id(target) in self._foldable
        ok, value = _fold(target) if constant else (False, None)
        if ok and value is not None and all(v.__class__ is EntityUID for v in value):
            # A constant set of entities: its elements need no type check at run time.
            return f"_in_uids({lhs}, {self.const(frozenset(value))}, E)"
        return f"_in({lhs}, {self.expr(target)}, E)"

    # -- string tests on one shared read ---------------------------------------------------

    def _or_parts(self, operands: tuple[Expr, ...]) -> list[str]:
        """The operands of ``||``, with each run of string tests on one shared read (two or
        more) made one test (see the module docs)."""
        parts: list[str] = []
        i = 0
        while i < len(operands):
            subject = self._string_test_subject(operands[i])
            j = i + 1
            if subject is not None:
                while j < len(operands) and self._string_test_subject(operands[j]) == subject:
                    j += 1
            if j - i > 1:
                parts.append(self._string_tests(operands[i:j]))
            else:
                parts.append(self.bool_(operands[i]))
            i = j
        return parts

    def _string_test_subject(self, e: Expr) -> int | None:
        """The shared path that ``e`` tests against a string literal (``like``, ``==``)."""
        match e:
            case Like(expr=inner):
                subject = inner
            case Binary(op=BinOp.EQ, left=left, right=Lit(value=v)) if v.__class__ is str:
                subject = left
            case Binary(op=BinOp.EQ, left=Lit(value=v), right=right) if v.__class__ is str:
                subject = right
            case _:
                return None
        path = self._path_of.get(id(subject))
        return path if path is not None and path in self._shared else None

    def _string_tests(self, tests: tuple[Expr, ...]) -> str:
        """``t1 || t2 || ...``, each ``X like p`` or ``X == "s"`` on the same read ``X``.

        When ``X`` is a string no test can fail, so their order does not matter and they are
        grouped by kind. Otherwise the ``==`` tests are false and the first ``like`` fails with
        its type error, as it would have in the chain (none: the chain is false).
        """
        exact: list[str] = []
        prefixes: list[str] = []
        suffixes: list[str] = []
        middles: list[str] = []
        general: list[Segments] = []
        first_like: Segments | None = None
        anything = False
        for test in tests:
            if test.__class__ is Like:
                segments = like_segments(test.pattern)
                first_like = first_like or segments
                match segments:
                    case (text,):
                        exact.append(text)
                    case ("", ""):
                        anything = True
                    case (prefix, ""):
                        prefixes.append(prefix)
                    case ("", suffix):
                        suffixes.append(suffix)
                    case ("", middle, ""):
                        middles.append(middle)
                    case _:
                        general.append(segments)
            else:
                exact.append(_literal(test))
        v = self.tmp()
        checks: list[str] = ["True"] if anything else []
        if exact:
            checks.append(
                f"{v} == {self.literal(exact[0])}"
                if len(exact) == 1
                else f"{v} in {self.const(frozenset(exact))}"
            )
        if prefixes:
            checks.append(f"{v}.startswith({self.const(tuple(prefixes))})")
        if suffixes:
            checks.append(f"{v}.endswith({self.const(tuple(suffixes))})")
        if len(middles) == 1:
            checks.append(f"({self.literal(middles[0])} in {v})")
        elif middles:
            checks.append(f"any(map({v}.__contains__, {self.const(tuple(middles))}))")
        checks += [f"_like_s({v}, {self.const(segments)})" for segments in general]
        other = f"_like_s({v}, {self.const(first_like)})" if first_like is not None else "False"
        subject = self.expr(tests[0].expr if tests[0].__class__ is Like else _subject(tests[0]))
        return f"(({' or '.join(checks)}) if ({v} := {subject}).__class__ is str else {other})"

    # -- attributes --------------------------------------------------------------------------

    def _get_attr(self, inner: Expr, attr: str) -> str:
        v = self.tmp()
        if isinstance(inner, Variable) and inner.var is Var.CONTEXT:
            # INVARIANT: the context is always a Record.
            return (
                f"({v} if ({v} := C.get({attr!r}, _MISSING)) is not _MISSING "
                f"else _ga(C, {attr!r}, E))"
            )
        if isinstance(inner, Variable):  # principal, action, resource: always entities
            return f"_ga({_VAR_NAMES[inner.var]}, {attr!r}, E)"
        return (
            f"({v}[{attr!r}] if ({v} := {self.expr(inner)}).__class__ is Record "
            f"and {attr!r} in {v} else _ga({v}, {attr!r}, E))"
        )

    def _has(self, inner: Expr, path: tuple[str, ...]) -> str:
        v = self.tmp()
        parts = [self._has_one(f"({v} := {self.expr(inner)})", v, path[0])]
        for prev, attr in itertools.pairwise(path):
            nxt = self.tmp()
            parts.append(self._has_one(f"({nxt} := _ga({v}, {prev!r}, E))", nxt, attr))
            v = nxt
        return "(" + " and ".join(parts) + ")"

    @staticmethod
    def _has_one(assign: str, v: str, attr: str) -> str:
        """``has attr`` on the value that ``assign`` computes into variable ``v``."""
        return f"({attr!r} in {v} if {assign}.__class__ is Record else _has({v}, {attr!r}, E))"

    def _like(self, inner: Expr, pattern: tuple[Any, ...]) -> str:
        segments = like_segments(pattern)
        v = self.tmp()
        test = _string_test(v, segments)
        if test is None:
            return f"_like_s({self.expr(inner)}, {self.const(segments)})"
        segs = self.const(segments)
        return f"({test} if ({v} := {self.expr(inner)}).__class__ is str else _like_s({v}, {segs}))"

    def _method(self, receiver: Expr, name: str, args: tuple[Expr, ...]) -> str:
        codes = [self.expr(receiver), *(self.expr(a) for a in args)]
        if name in ops.PURE_METHODS:
            return f"_m_{name}({', '.join(codes)})"
        if name in ops.ENTITY_METHODS:
            return f"_e_{name}({codes[0]}, {codes[1]}, E)"
        return self._ext(METHODS[name], codes)

    def _ext(self, func: Any, codes: list[str]) -> str:
        if len(codes) == func.arity:
            return f"_x_{func.name}({', '.join(codes)})"
        # Wrong arity is an evaluation error, raised after the arguments are evaluated.
        return f"_X_{func.name}.call({_tuple(codes)})"


def _literal(test: Any) -> str:
    """The string literal side of ``X == "s"``."""
    return str((test.right if test.right.__class__ is Lit else test.left).value)


def _subject(test: Any) -> Expr:
    """The non-literal side of ``X == "s"``."""
    return test.left if test.right.__class__ is Lit else test.right


def _tuple(codes: list[str]) -> str:
    """Python source of a tuple of the given element sources."""
    return "()" if not codes else f"({', '.join(codes)},)"


def _string_test(v: str, segments: Segments) -> str | None:
    """A str-method test equivalent to matching ``segments`` against variable ``v``, if any."""
    match segments:
        case (text,):
            return f"{v} == {text!r}"
        case ("", ""):
            return "True"
        case (prefix, ""):
            return f"{v}.startswith({prefix!r})"
        case ("", suffix):
            return f"{v}.endswith({suffix!r})"
        case ("", middle, ""):
            return f"({middle!r} in {v})"
    return None


# ---------------------------------------------------------------------------------------------
# Entry point


def leaf_source(policies: Sequence[Policy]) -> tuple[str, tuple[Any, ...]] | None:
    """The body source and constants of the function of one leaf (None: no policy has a
    condition). Bit ``j`` of its result is ``policies[j]``; errors name ``G[j]``.

    The body is that of ``leaf(P, A, R, C, E, errors)`` (see :mod:`.runtime`): policies are
    evaluated in order, each in its own ``try``, so an error skips only its own policy.
    """
    conditional = [(j, p) for j, p in enumerate(policies) if p.conditions]
    if not conditional:
        return None
    gen = _Gen()
    gen.share_reads([c.body for _, p in conditional for c in p.conditions])
    lines = []
    for j, policy in conditional:
        parts = []
        for cond in policy.conditions:
            code = gen.condition(cond.body)
            parts.append(code if cond.kind is ConditionKind.WHEN else f"(not {code})")
        lines += [
            "  try:",
            f"   if {' and '.join(parts)}:",
            f"    _s |= {1 << j}",
            "  except EvaluationError as _e:",
            f"   errs.append((G[{j}], _e.message))",
            "  except RecursionError:",
            f"   errs.append((G[{j}], _DEEP))",
        ]
    head = ["  _s = 0"]
    if gen.memos:
        head.insert(0, f"  {' = '.join(gen.memos.values())} = _U")
    # Interned: leaves of one shape share one body (one compile, one pickled copy).
    return sys.intern("\n".join([*head, *lines, "  return _s"]) + "\n"), tuple(gen.consts)


def compile_predicate(expr: Expr) -> CondFn:
    """A function deciding a boolean expression as a ``when`` clause would (compiled once)."""
    gen = _Gen()
    return make_factory(sys.intern(gen.condition(expr)))(tuple(gen.consts))
