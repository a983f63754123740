"""Policy conditions -> Python functions over the request variables and the entity store.

The conditions of a leaf of the decision tree (policies with the same scope constraints, see
:mod:`.index`) become one generated Python function, ``leaf(P, A, R, C, E, errors) -> int``:
the bitmask of its policies whose conditions hold, each policy's evaluation errors appended to
``errors`` (:func:`leaf_source`). The generated code calls the same operator
functions as the reference interpreter (:mod:`cedarlite.engine.ops`), so errors and their messages
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

Long chains stay cheap to compile (Python's ``compile()`` took ~150 ms for the 243 KB once
generated for a 1,000-term ``+`` chain): a memo that is certainly set at a point of the code
(read by the first operand of the chain it is in, or by an earlier operand of the same
``&&``/``||``) is used there by its bare name; a node's temporaries are reused by the code
that runs after it; and in a chain of :data:`RUN_MIN` operands or more, consecutive operands
whose code is the same but for their literals become one loop over a tuple of those literals
(``any``/``all`` over a generator for ``||``/``&&``, a helper applying the operator for
arithmetic), evaluated in the same order with the same short-circuits and errors. A
1,000-term allowlist is a few hundred characters of source.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable, Sequence
from keyword import iskeyword
from typing import Any

from ..._glob import Segments, like_segments, rarity
from ...data.ext import FUNCTIONS, METHODS
from ...data.request import Request
from ...data.values import CedarSet, EntityUID, Record
from ...errors import EvaluationError
from ...lang.ast import (
    CHILDREN_OF,
    And,
    Binary,
    BinOp,
    ConditionKind,
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
    Policy,
    SetLit,
    Slot,
    Unary,
    UnaryOp,
    Var,
    Variable,
    generic_children,
)
from .. import ops
from ..evaluator import Evaluator
from .runtime import CondFn, make_factory

_VAR_NAMES = {Var.PRINCIPAL: "P", Var.ACTION: "A", Var.RESOURCE: "R", Var.CONTEXT: "C"}
_ARITH_FNS = {BinOp.ADD: "_add", BinOp.SUB: "_sub", BinOp.MUL: "_mul"}

_BOOL_METHODS = frozenset(
    {*ops.PURE_METHODS, "hasTag"} | {name for name, f in METHODS.items() if f.returns == "Bool"}
)


_RELATIONS = frozenset({Binary, And, Or, Has, Like, Is})  # (Binary nodes are relations)


def returns_bool(e: Expr) -> bool:
    """``e`` evaluates to a Bool whenever it does not raise (so no Bool check is needed)."""
    if e.__class__ in _RELATIONS:
        return True
    if e.__class__ is MethodCall:
        return e.name in _BOOL_METHODS
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


# Nodes that read a variable, a slot or the entity store themselves (whatever their operands
# do), by class: a test of the node, or none (the class always reads).
# (Variables and attribute reads are told apart before this table is consulted.)
_READS: dict[type, Any] = {
    Slot: lambda e: True,
    Has: lambda e: True,
    Binary: lambda e: e.op is BinOp.IN,
    Is: lambda e: e.in_expr is not None,
    MethodCall: lambda e: e.name in ops.ENTITY_METHODS,
}


def foldable_nodes(root: Expr) -> set[int]:
    """The ids of the nodes of ``root`` with no variable, slot or entity-store read anywhere
    in them (their value is a constant, or a constant error)."""
    return _analyse([root])[0]


def _analyse(bodies: Sequence[Expr]) -> tuple[set[int], dict[int, int], dict[int, int]]:
    """One pass over ``bodies``: the ids of their foldable nodes (see :func:`foldable_nodes`),
    and their attribute paths rooted at a variable (``context.input.command``): the path of
    each such node (by node id, as a path number) and how many nodes read each path.

    Paths are numbered bottom-up, a node's from its operand's and its attribute, so this is
    linear in the size of the trees however long the paths are."""
    # Every node, top-down and breadth first (so reversed, each node comes after all the
    # nodes inside it), with its children.
    order: list[Any] = list(bodies)
    kids_of: list[tuple[Expr, ...]] = []
    foldable: set[int] = set()
    table = CHILDREN_OF  # (`children` inlined: one call less per node)
    i = 0
    while i < len(order):
        node = order[i]
        kids = table.get(node.__class__, generic_children)(node)
        if node.__class__ is SetLit and all(kid.__class__ is Lit for kid in kids):
            foldable.add(id(node))  # a literal set of literals (`[...].contains(x)`): done
            kids = ()
        kids_of.append(kids)
        order += kids
        i += 1
    numbers: dict[tuple[Any, str], int] = {}
    path_of: dict[int, int] = {}
    counts: dict[int, int] = {}
    reads = _READS
    add = foldable.add
    for node, kids in zip(reversed(order), reversed(kids_of), strict=True):
        cls = node.__class__
        if not kids:
            if cls is Lit:
                add(id(node))
            elif cls is Variable:
                key: tuple[Any, str] = (None, node.var._value_)
                path_of[id(node)] = numbers.setdefault(key, len(numbers))
        elif cls is GetAttr:
            inner = path_of.get(id(node.expr))
            if inner is not None:
                number = numbers.setdefault((inner, node.attr), len(numbers))
                path_of[id(node)] = number
                counts[number] = counts.get(number, 0) + 1
        elif foldable.issuperset(map(id, kids)) and (
            (test := reads.get(cls)) is None or not test(node)
        ):
            add(id(node))
    return foldable, path_of, counts


class _NoEntities:
    def get(self, uid: EntityUID) -> None:
        return None


_FOLD_EVALUATOR = Evaluator(
    Request(EntityUID("", ""), EntityUID("", ""), EntityUID("", ""), Record()), _NoEntities()
)


def _fold(e: Expr) -> tuple[bool, Any]:
    """``(True, value)`` if the constant expression ``e`` evaluates without error."""
    if e.__class__ is SetLit:
        # The interpreter's value, without its machinery, for a literal set of literals (with
        # no `true` or `false`, whose Cedar keys are not the values themselves).
        elements = e.elements
        values = [x.value for x in elements if x.__class__ is Lit]
        if len(values) == len(elements) and bool not in map(type, values):
            return True, CedarSet.of_keys(frozenset(values))
    try:
        return True, _FOLD_EVALUATOR.evaluate(e)
    except EvaluationError:
        return False, None


CODEGEN_DEPTH = 24
"""Sub-expressions nested deeper than this are not compiled to Python (whose parser stops at
200 nested parentheses) but evaluated by the interpreter, which has no depth limit."""


# ---------------------------------------------------------------------------------------------
# Code generation


RUN_MIN = 8
"""Chains (``||``, ``&&``, arithmetic) of at least this many operands are generated operand by
operand and scanned for runs: this many or more consecutive operands whose code is the same
but for their literals (a generated allowlist, ``x + x + ...``) become one loop over a tuple
of their literals, so that the source, and Python's ``compile()`` of it, stays small however
long the chain is. Shorter chains are generated inline, exactly as before."""

_MARK = "\x00"  # around a constant's index in a run candidate's code (see `_Gen.const`)


class _Gen(ExprVisitor):
    """Generates the Python source of condition code (one condition, or a leaf's function)."""

    ELSEWHERE = (Lit,)  # a literal's code is made before the dispatch (`expr`)

    def __init__(self) -> None:
        self.consts: list[Any] = []
        # The constants of the chain operand being generated (None: outside long chains, a
        # constant is `K[i]`), and how many such operands enclose it (names loop variables).
        self._frame: list[Any] | None = None
        self._frames = 0
        self._ntmp = 0
        self._foldable: set[int] = set()
        self._depth = 0
        # Shared reads (leaf functions only): the path of each attribute-read node, the paths
        # read more than once, and the local each of those is kept in once read.
        self._path_of: dict[int, int] = {}
        self._shared: set[int] = set()
        self.memos: dict[int, str] = {}
        # The memos certainly set where the code being generated runs (a read of them on
        # every path there), and the order they were learned in, to forget them on leaving a
        # part of the code that may not run (see `forget`).
        self._known: set[str] = set()
        self._learned: list[str] = []

    def analyse(self, bodies: Sequence[Expr], *, share_reads: bool) -> None:
        """Find the constant sub-expressions of ``bodies`` and, with ``share_reads``, read
        each attribute path that they read more than once only once (the generated code must
        then start by setting every name of :attr:`memos` to ``_U``)."""
        self._foldable, path_of, counts = _analyse(bodies)
        if share_reads:
            self._path_of = path_of
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

    # -- what the code knows: a memo read on every path to a point of the code is set there --

    def _mark(self) -> int:
        return len(self._learned)

    def forget(self, mark: int = 0) -> None:
        """Forget the memos learned since ``mark`` (leaving a part of the code that may not
        run: a later operand of ``&&``/``||``, a branch; ``0``: a new policy's ``try``)."""
        learned, known = self._learned, self._known
        while len(learned) > mark:
            known.discard(learned.pop())

    def _learn(self, name: str) -> None:
        if name not in self._known:
            self._known.add(name)
            self._learned.append(name)

    # -- names and constants -------------------------------------------------------------------

    def const(self, value: Any) -> str:
        """A reference to constant ``value``: ``K[i]``, or, inside an operand of a long chain,
        the index of the value in the operand's frame between two ``_MARK`` characters (which
        no generated code contains otherwise: user strings enter it only through ``repr``,
        which escapes control characters), resolved by :meth:`_unframe` or :meth:`_runs`."""
        frame = self._frame
        if frame is None:
            self.consts.append(value)
            return f"K[{len(self.consts) - 1}]"
        frame.append(value)
        return f"{_MARK}{len(frame) - 1}{_MARK}"

    def tmp(self) -> str:
        """A fresh temporary (see :meth:`expr` for when it is reused)."""
        n = self._ntmp
        self._ntmp = n + 1
        return f"_t{n}"

    def _bind(self, code: str) -> tuple[str, str]:
        """An expression evaluating ``code`` and a name holding its value after it: a memo or
        a variable is its own name, anything else is assigned to a temporary (``True`` and
        ``False`` too: they are keywords, and ``True['a']`` is a compile-time SyntaxWarning)."""
        if code.isidentifier() and not iskeyword(code):
            return code, code
        v = self.tmp()
        return f"({v} := {code})", v

    def literal(self, value: Any) -> str:
        """Python source for a literal Cedar value (hoisted into ``K``)."""
        if value is True or value is False:
            return repr(value)
        return self.const(value)

    # -- expressions ---------------------------------------------------------------------------

    def condition(self, body: Expr) -> str:
        """Source that evaluates a whole condition (analysed by :meth:`analyse`) and checks it
        is a Bool."""
        return self.bool_(body)

    def bool_(self, e: Expr) -> str:
        """Source that evaluates ``e`` and checks it is a Bool."""
        code = self.expr(e)
        return code if returns_bool(e) else f"_b({code})"

    def expr(self, e: Expr) -> str:
        """Source that evaluates ``e`` (a node of the trees given to :meth:`analyse`)."""
        if e.__class__ is Lit:
            return self.literal(e.value)
        if id(e) in self._foldable:
            ok, value = _fold(e)
            if ok:
                return self.literal(value)
        if self._depth >= CODEGEN_DEPTH:
            return f"_ev({self.const(e)}, P, A, R, C, E)"
        node = self.VISIT.get(e.__class__)
        if node is None:  # pragma: no cover - every node class has its method
            raise TypeError(f"not an expression node: {type(e).__name__}")
        self._depth += 1
        ntmp = self._ntmp
        try:
            return node(self, e)
        finally:
            self._depth -= 1
            # INVARIANT: a node's temporaries are dead once its code has run (its value is
            # the code's value, never left in a temporary), and a node takes its temporaries
            # before generating the operands that run while they are live; so the code that
            # runs after this node reuses them, and a leaf has few distinct locals.
            self._ntmp = ntmp

    # -- one method per node class (ExprVisitor; a Lit is handled before the dispatch) -------

    def visit_get_attr(self, e: Any) -> str:
        """An attribute read: through its memo if its path is shared (the memo's bare name
        where it is certainly set already)."""
        memo = self._memo(e)
        if memo is None:
            return self._get_attr(e.expr, e.attr)
        if memo in self._known:
            return memo
        mark = self._mark()
        code = self._get_attr(e.expr, e.attr)  # runs only while the memo is unset
        self.forget(mark)
        self._learn(memo)
        return f"({memo} if {memo} is not _U else ({memo} := {code}))"

    def visit_variable(self, e: Any) -> str:
        return _VAR_NAMES[e.var]

    def visit_and(self, e: Any) -> str:
        return self._junction([(x,) for x in e.operands], "and")

    def visit_or(self, e: Any) -> str:
        return self._junction(self._or_units(e.operands), "or")

    def visit_if(self, e: Any) -> str:
        test = self.bool_(e.cond)
        mark = self._mark()
        then = self.expr(e.then_)
        self.forget(mark)
        other = self.expr(e.else_)
        self.forget(mark)
        return f"({then} if {test} else {other})"

    def visit_unary(self, e: Any) -> str:
        if e.op is UnaryOp.NOT:
            return f"(not {self.bool_(e.arg)})"
        return f"_neg({self.expr(e.arg)})"

    def visit_is(self, e: Any) -> str:
        t = e.entity_type
        assign, v = self._bind(self.expr(e.expr))
        if e.in_expr is None:
            return f"({v}.type == {t!r} if {assign}.__class__ is EntityUID else _is({v}, {t!r}))"
        mark = self._mark()
        test = self._in(v, e.in_expr)
        self.forget(mark)
        return f"(_is({assign}, {t!r}) and {test})"

    def visit_call(self, e: Any) -> str:
        return self._ext(FUNCTIONS[e.name], [self.expr(a) for a in e.args])

    def visit_set_lit(self, e: Any) -> str:
        return f"CedarSet({_tuple([self.expr(x) for x in e.elements])})"

    def visit_record_lit(self, e: Any) -> str:
        # Entries evaluate in key order, as the interpreter's (Rust's BTreeMap).
        body = ", ".join(f"{k!r}: {self.expr(v)}" for k, v in sorted(e.entries))
        return f"Record({{{body}}})"

    def visit_slot(self, e: Any) -> str:
        raise ValueError(f"unlinked template slot `{e.slot.value}` in a condition")

    # -- chains --------------------------------------------------------------------------------

    def _junction(self, units: list[tuple[Expr, ...]], word: str) -> str:
        """``&&`` (``word`` is ``and``) or ``||`` over ``units``: single operands, or runs of
        string tests on one shared read (see :meth:`_or_units`)."""

        def gen(unit: tuple[Expr, ...]) -> str:
            return self.bool_(unit[0]) if len(unit) == 1 else self._string_tests(unit)

        # The first operand always runs: what it reads is known to the others; each later
        # operand runs only if the ones before it did, so it knows what they read, but the
        # code after the chain knows only what the first one read.
        if len(units) < RUN_MIN:
            first = gen(units[0])
            mark = self._mark()
            parts = [first, *(gen(unit) for unit in units[1:])]
        else:
            items, mark = self._framed(gen, units)
            loop = "any" if word == "or" else "all"
            parts = [
                code if source is None else f"{loop}({code} for {source})"
                for _, code, source in self._runs(items, [code for code, _ in items])
            ]
        self.forget(mark)
        return "(" + f" {word} ".join(parts) + ")"

    def visit_arith(self, e: Any) -> str:
        """A chain ``a op b op c ...``: one step per operator, in a flat tuple (evaluated left
        to right), so that a long chain does not nest Python expressions."""
        operands, arith_ops = e.operands, e.ops
        acc = self.tmp()
        base = self._ntmp  # each step's temporaries are dead after it: the next reuses them
        names = [_ARITH_FNS[op] for op in arith_ops]
        if len(operands) < RUN_MIN:
            steps = [f"({acc} := {self.expr(operands[0])})"]
            for op, fn, operand in zip(arith_ops, names, operands[1:], strict=True):
                self._ntmp = base
                steps.append(self._arith_step(acc, op, fn, self.expr(operand)))
        else:
            items, _ = self._framed(self.expr, operands)
            steps = [f"({acc} := {self._unframe(*items[0])})"]
            keys = [f"{fn} {code}" for fn, (code, _) in zip(names, items[1:], strict=True)]
            for i, code, source in self._runs(items[1:], keys):
                self._ntmp = base
                if source is None:
                    steps.append(self._arith_step(acc, arith_ops[i], names[i], code))
                else:  # the same operation with operands of one shape, one after another
                    steps.append(f"({acc} := _arun({acc}, {names[i]}, ({code} for {source})))")
        if len(steps) == 2:
            return f"({steps[0]}, {steps[1]})[1]"
        return f"({', '.join(steps)})[-1]"

    def _arith_step(self, acc: str, op: BinOp, fn: str, code: str) -> str:
        """``acc op (code)``, checked, with a fast path for integers."""
        assign, v = self._bind(code)
        r = self.tmp()
        both_int = f"({acc}.__class__ is int) & ({assign}.__class__ is int)"
        checked = f"_LO <= ({r} := {acc} {op.value} {v}) <= _HI"
        return f"({acc} := {r} if {both_int} and {checked} else {fn}({acc}, {v}))"

    def _framed(
        self, gen: Callable[[Any], str], operands: Sequence[Any]
    ) -> tuple[list[tuple[str, list[Any]]], int]:
        """The code ``gen`` makes of each of ``operands`` (of a long chain, in order), with the
        constants each refers to in a frame of its own (see :meth:`const`), and the mark of
        what is known after the first."""
        outer = self._frame
        self._frames += 1
        items: list[tuple[str, list[Any]]] = []
        mark = self._mark()
        try:
            for operand in operands:
                frame: list[Any] = []
                self._frame = frame
                items.append((gen(operand), frame))
                if len(items) == 1:
                    mark = self._mark()
        finally:
            self._frame = outer
            self._frames -= 1
        return items, mark

    def _unframe(self, code: str, frame: list[Any]) -> str:
        """``code`` of :meth:`_framed`, its constants referred to as outside the frame."""
        if not frame:
            return code
        parts = code.split(_MARK)
        for i in range(1, len(parts), 2):
            parts[i] = self.const(frame[int(parts[i])])
        return "".join(parts)

    def _runs(
        self, items: list[tuple[str, list[Any]]], keys: list[str]
    ) -> list[tuple[int, str, str | None]]:
        """``items`` of :meth:`_framed` as ``(index, code, None)`` for a single item and
        ``(index of the first, body, "var in values")`` for a run of :data:`RUN_MIN` or more
        with the same key: the loop ``body for var in values`` evaluates the items of the run
        in order, each with its own constants (``var``), each exactly as its own code would."""
        out: list[tuple[int, str, str | None]] = []
        i, n = 0, len(items)
        while i < n:
            j = i + 1
            while j < n and keys[j] == keys[i]:
                j += 1
            if j - i >= RUN_MIN:
                var = f"_k{self._frames}"  # (a run inside a run's body is one frame deeper)
                parts = items[i][0].split(_MARK)
                for k in range(1, len(parts), 2):
                    parts[k] = f"{var}[{parts[k]}]"
                values = self.const(tuple(tuple(frame) for _, frame in items[i:j]))
                out.append((i, "".join(parts), f"{var} in {values}"))
            else:
                out += [(k, self._unframe(*items[k]), None) for k in range(i, j)]
            i = j
        return out

    # -- operators ---------------------------------------------------------------------------

    def visit_binary(self, e: Any) -> str:
        op, left, right = e.op, e.left, e.right
        if op is BinOp.IN:
            return self._in(self.expr(left), right)
        if op in (BinOp.EQ, BinOp.NEQ):
            code = self._eq(left, right)
            return code if op is BinOp.EQ else f"(not {code})"
        la, a = self._bind(self.expr(left))
        rb, b = self._bind(self.expr(right))
        both_int = f"({la}.__class__ is int) & ({rb}.__class__ is int)"
        fn = {BinOp.LT: "_lt", BinOp.LE: "_le", BinOp.GT: "_gt", BinOp.GE: "_ge"}[op]
        return f"({a} {op.value} {b} if {both_int} else {fn}({a}, {b}))"

    def _eq(self, left: Expr, right: Expr) -> str:
        if isinstance(left, Lit) and not isinstance(right, Lit):
            left, right = right, left  # a literal has no effects: evaluation order is moot
        if isinstance(right, Lit):
            value = right.value
            if value.__class__ in (str, EntityUID):
                # No other Cedar value compares equal to a str or to an EntityUID (a tuple).
                return f"({self.expr(left)} == {self.literal(value)})"
            assign, v = self._bind(self.expr(left))
            cls = "bool" if value.__class__ is bool else "int"
            return f"({assign} == {self.literal(value)} and {v}.__class__ is {cls})"
        la, a = self._bind(self.expr(left))
        rb, b = self._bind(self.expr(right))
        return f"({la}.__class__ is {rb}.__class__ and {a} == {b})"

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

    def _or_units(self, operands: tuple[Expr, ...]) -> list[tuple[Expr, ...]]:
        """The operands of ``||`` in units: each run of string tests on one shared read (two
        or more) is one unit, made one test (see the module docs); any other operand is one."""
        units: list[tuple[Expr, ...]] = []
        i = 0
        while i < len(operands):
            subject = self._string_test_subject(operands[i])
            j = i + 1
            if subject is not None:
                while j < len(operands) and self._string_test_subject(operands[j]) == subject:
                    j += 1
            units.append(operands[i:j])
            i = j
        return units

    def _string_test_subject(self, e: Any) -> int | None:
        """The shared path that ``e`` tests against a string literal (``like``, ``==``)."""
        cls = e.__class__
        if cls is Like:
            subject = e.expr
        elif cls is Binary and e.op is BinOp.EQ:
            if e.right.__class__ is Lit and e.right.value.__class__ is str:
                subject = e.left
            elif e.left.__class__ is Lit and e.left.value.__class__ is str:
                subject = e.right
            else:
                return None
        else:
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
        subject = self.expr(tests[0].expr if tests[0].__class__ is Like else _subject(tests[0]))
        assign, v = self._bind(subject)
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
        elif len(middles) >= SUBSTRING_INDEX_MIN and all(
            middles
        ):  # (like_segments makes none empty)
            checks.append(f"_has_any({v}, {self.const(substring_index(middles))})")
        elif middles:  # (`in` tests: `any(map(v.__contains__, ...))` takes three times as long)
            checks += [f"({self.literal(m)} in {v})" for m in middles]
        checks += [self._segments_test(v, segments) for segments in general]
        other = f"_like_s({v}, {self.const(first_like)})" if first_like is not None else "False"
        return f"(({' or '.join(checks)}) if {assign}.__class__ is str else {other})"

    # -- attributes --------------------------------------------------------------------------

    def _get_attr(self, inner: Expr, attr: str) -> str:
        if isinstance(inner, Variable) and inner.var is Var.CONTEXT:
            # INVARIANT: the context is always a Record.
            v = self.tmp()
            return (
                f"({v} if ({v} := C.get({attr!r}, _MISSING)) is not _MISSING "
                f"else _ga(C, {attr!r}, E))"
            )
        if isinstance(inner, Variable):  # principal, action, resource: always entities
            return f"_ga({_VAR_NAMES[inner.var]}, {attr!r}, E)"
        assign, v = self._bind(self.expr(inner))
        return (
            f"({v}[{attr!r}] if {assign}.__class__ is Record "
            f"and {attr!r} in {v} else _ga({v}, {attr!r}, E))"
        )

    def visit_has(self, e: Any) -> str:
        inner, path = e.expr, e.path
        assign, v = self._bind(self.expr(inner))
        parts = [self._has_one(assign, v, path[0])]
        for prev, attr in itertools.pairwise(path):
            nxt = self.tmp()
            parts.append(self._has_one(f"({nxt} := _ga({v}, {prev!r}, E))", nxt, attr))
            v = nxt
        return "(" + " and ".join(parts) + ")"

    @staticmethod
    def _has_one(assign: str, v: str, attr: str) -> str:
        """``has attr`` on the value that ``assign`` computes into variable ``v``."""
        return f"({attr!r} in {v} if {assign}.__class__ is Record else _has({v}, {attr!r}, E))"

    def visit_like(self, e: Any) -> str:
        inner, segments = e.expr, like_segments(e.pattern)
        assign, v = self._bind(self.expr(inner))
        test = _string_test(v, segments) or self._segments_test(v, segments)
        return f"({test} if {assign}.__class__ is str else _like_s({v}, {self.const(segments)}))"

    def _segments_test(self, v: str, segments: Segments) -> str:
        """``v like pattern`` for a string ``v`` and a pattern no str method matches alone:
        the matcher, behind the test of the pattern's last literal (else its first, else its
        first middle one) that it would make itself, in C code (most strings fail it)."""
        first, last = segments[0], segments[-1]
        if last:
            pre = f"{v}.endswith({self.literal(last)})"
        elif first:
            pre = f"{v}.startswith({self.literal(first)})"
        else:  # (`*a*b*`: two middle segments or more, none empty)
            pre = f"({self.literal(segments[1])} in {v})"
        return f"({pre} and _like_str({self.const(segments)}, {v}))"

    def visit_method_call(self, e: Any) -> str:
        name = e.name
        codes = [self.expr(e.receiver), *[self.expr(a) for a in e.args]]
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


SUBSTRING_INDEX_MIN = 16
"""Substrings searched in one string at least for :func:`substring_index` (fewer are searched
one by one: the index's own scans would cost as much as it saves)."""


def substring_index(strings: Sequence[str]) -> tuple[tuple[str, ...], dict[str, tuple[str, ...]]]:
    """The index that :func:`~.runtime.contains_any` searches for ``strings`` (non-empty): the
    strings grouped by their rarest character (the first of equally rare ones), the keys in
    order of first appearance. A group whose key is itself one of the strings is that string
    alone (the key found, the test holds)."""
    groups: dict[str, list[str]] = {}
    for text in strings:
        groups.setdefault(max(text, key=rarity), []).append(text)
    return tuple(groups), {
        key: (key,) if key in group else tuple(dict.fromkeys(group))
        for key, group in groups.items()
    }


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
    gen.analyse([c.body for _, p in conditional for c in p.conditions], share_reads=True)
    lines = []
    for j, policy in conditional:
        gen.forget()  # a policy may run after one that failed half way: nothing is known
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
    gen.analyse([expr], share_reads=False)
    return make_factory(sys.intern(gen.condition(expr)))(tuple(gen.consts))
