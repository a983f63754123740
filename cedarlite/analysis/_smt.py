"""Cedar expressions as SMT terms (z3), directed by the schema's types.

One :class:`Encoder` per request environment (principal type, action, resource type). Every
encoded expression is a :class:`Sym`: its Cedar type, its value as z3 terms and ``err``, the
condition under which evaluating it errors (Cedar's option type: the value means something
only where ``err`` is false). The encoding follows the shape of Cedar's SymCC:

* each entity type is an uninterpreted sort (an enumerated type, and each namespace's
  ``Action`` type, a finite sort of its ids); entity literals are distinct constants;
* an attribute of an entity type is a function from its sort (nested records: one function per
  attribute path; an optional attribute adds a presence function); tags are two arrays per
  entity (present keys, values);
* the hierarchy is one function per (type, ancestor type) to a set of ancestors; the action
  hierarchy is the schema's, known exactly;
* Long, decimal, datetime and duration are 64-bit bitvectors (arithmetic overflow is an error);
  ipaddr a datatype (IPv6?, address, prefix); strings are SMT strings and ``like`` a regular
  expression; sets are arrays to Bool; records are their attributes, each with its presence
  (a record that is one value, a set's element or a tag's value, is a datatype).

What is not encoded raises :class:`Unsupported` naming the construct; the caller answers
``None`` with it, never a guess.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..data.ext import FUNCTIONS, Datetime, Decimal, Duration, IPAddr
from ..data.values import EntityUID
from ..errors import CedarliteError
from ..lang.ast import (
    And,
    Arith,
    Binary,
    BinOp,
    Call,
    Expr,
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
    Unary,
    UnaryOp,
    Var,
    Variable,
    is_action_type,
)
from ..schema.model import Schema
from ..schema.types import (
    BOOL,
    LONG,
    STRING,
    Attribute,
    BoolType,
    CedarType,
    EntityType,
    ExtensionType,
    LongType,
    RecordType,
    SetType,
    StringType,
)

_SORTS = itertools.count()
MAX_CHAR = 0x2FFFF  # the largest character z3's strings hold
DAY_MS = 86_400_000
DECIMAL = ExtensionType("decimal")
IPADDR = ExtensionType("ipaddr")
DATETIME = ExtensionType("datetime")
DURATION = ExtensionType("duration")


class Unsupported(Exception):
    """A construct the encoding does not cover (the message names it)."""


def z3mod() -> Any:
    """The z3 module, imported on first use (an optional dependency)."""
    try:
        import z3
    except ImportError:
        raise CedarliteError(
            "proofs need the z3 solver, which is not installed: pip install 'cedarlite[prove]' "
            "(or pip install z3-solver)",
            code="missing-dependency",
        ) from None
    return z3


@dataclass(frozen=True)
class Sym:
    """An encoded expression: its type, its value (z3 terms; a record is a dict of
    ``name -> (present, Sym)``) and the condition under which it errors."""

    ty: CedarType
    v: Any
    err: Any


@dataclass(frozen=True)
class PackedRecord:
    """A record type as one z3 datatype (see :meth:`Sorts.record`)."""

    sort: Any
    make: Any
    fields: dict[str, Any]  # the accessor of each attribute
    options: dict[str, Any]  # the option datatype of each optional attribute


class Sorts:
    """The z3 sorts and uninterpreted functions of one schema (shared by its environments)."""

    def __init__(self, schema: Schema, extra_actions: Sequence[EntityUID] = ()) -> None:
        z3 = self.z3 = z3mod()
        self.schema = schema
        #: Actions the policies name that the schema does not declare (never a request's).
        self.extra_actions = tuple(dict.fromkeys(extra_actions))
        self.bv = z3.BitVecSort(64)
        self.string = z3.StringSort()
        self._entity: dict[str, Any] = {}
        self._enum_values: dict[str, dict[str, Any]] = {}
        self._literals: dict[EntityUID, Any] = {}
        self._funcs: dict[Any, Any] = {}
        self._enum_ids: dict[str, dict[int, str]] = {}
        self._records: dict[RecordType, PackedRecord] = {}
        self._options: dict[int, Any] = {}
        self._action_groups: dict[tuple[str, str], dict[str, frozenset[str]]] = {}
        # z3's names are global: each schema's sorts get their own suffix.
        self.tag = f"#{next(_SORTS)}"
        ip = z3.Datatype("IPAddr" + self.tag)
        ip.declare(
            "ip", ("v6", z3.BoolSort()), ("addr", z3.BitVecSort(128)), ("prefix", z3.BitVecSort(8))
        )
        self.ip = ip.create()

    def entity(self, name: str) -> Any:
        """The sort of an entity type (finite for enumerated types and actions)."""
        sort = self._entity.get(name)
        if sort is not None:
            return sort
        z3 = self.z3
        ids: Sequence[str] | None = None
        definition = self.schema.entity_types.get(name)
        if definition is not None and definition.enum is not None:
            ids = definition.enum
        elif is_action_type(name):
            ids = [uid.id for uid in self.schema.actions if uid.type == name]
            ids += [u.id for u in self.extra_actions if u.type == name and u.id not in ids]
        if ids:
            sort, values = z3.EnumSort(name + self.tag, [f"{name}::{i!r}{self.tag}" for i in ids])
            self._enum_values[name] = dict(zip(ids, values, strict=True))
        else:
            sort = z3.DeclareSort(name + self.tag)
        self._entity[name] = sort
        return sort

    def is_finite(self, name: str) -> bool:
        self.entity(name)
        return name in self._enum_values

    def enum_values(self, name: str) -> dict[str, Any]:
        self.entity(name)
        return self._enum_values.get(name, {})

    def enum_id(self, name: str, term: Any) -> str | None:
        """The id of ``term`` when it is one of the values of the finite sort ``name``."""
        by_ast = self._enum_ids.get(name)
        if by_ast is None:
            by_ast = self._enum_ids[name] = {
                c.get_id(): i for i, c in self.enum_values(name).items()
            }
        return by_ast.get(term.get_id())

    def action_groups(self, t: str, target: str) -> dict[str, frozenset[str]]:
        """For each action of type ``t`` (declared, or named by a policy): the ids of type
        ``target`` it is ``in``, itself included, by the schema's action hierarchy."""
        key = (t, target)
        found = self._action_groups.get(key)
        if found is None:
            declared = {uid.id: uid for uid in self.schema.actions if uid.type == t}
            found = self._action_groups[key] = {
                i: frozenset(
                    [g.id for g in self.schema.action_ancestors(declared[i]) if g.type == target]
                    if i in declared
                    else []
                )
                | ({i} if t == target else set())
                for i in self.enum_values(t)
            }
        return found

    def literal(self, uid: EntityUID) -> Any:
        """The constant of an entity literal (literals of one type are pairwise distinct)."""
        values = self.enum_values(uid.type)
        if values:
            if uid.id not in values:
                raise Unsupported(f"entity `{uid}` (not an id of its enumerated type)")
            return values[uid.id]
        found = self._literals.get(uid)
        if found is None:
            found = self._literals[uid] = self.z3.Const(str(uid), self.entity(uid.type))
        return found

    def literals(self) -> dict[EntityUID, Any]:
        return self._literals

    def distinctness(self) -> list[Any]:
        by_type: dict[str, list[Any]] = {}
        for uid, c in self._literals.items():
            by_type.setdefault(uid.type, []).append(c)
        return [self.z3.Distinct(*cs) for cs in by_type.values() if len(cs) > 1]

    def sort_of(self, ty: CedarType) -> Any:
        """The z3 sort of a (non-record) type's values."""
        z3 = self.z3
        match ty:
            case BoolType():
                return z3.BoolSort()
            case LongType():
                return self.bv
            case StringType():
                return self.string
            case EntityType(name=name):
                return self.entity(name)
            case ExtensionType(name="ipaddr"):
                return self.ip
            case ExtensionType():
                return self.bv
            case SetType(element=element):
                return z3.SetSort(self.sort_of(element))
            case RecordType():
                return self.record(ty).sort
        raise Unsupported(f"a value of type `{ty}` inside a set, a tag or an entity's ancestors")

    def record(self, ty: RecordType) -> PackedRecord:
        """The datatype of ``ty``'s values where a record is one value (a set's element, a
        tag's value): one field per attribute, an optional one wrapped in an option (absent
        is ``none``, so that equal records are equal terms)."""
        found = self._records.get(ty)
        if found is not None:
            return found
        if ty.open:
            raise Unsupported("an open record type (`additionalAttributes`)")
        z3 = self.z3
        names = sorted(ty.attributes)
        fields, options = [], {}
        for name in names:
            a = ty.attributes[name]
            sort = self.sort_of(a.type)
            if not a.required:
                options[name] = self.option(sort)
                sort = options[name]
            fields.append((name, sort))
        dt = z3.Datatype(f"Record{len(self._records)}{self.tag}")
        dt.declare("record", *fields)
        sort = dt.create()
        accessors = {name: sort.accessor(0, i) for i, name in enumerate(names)}
        found = self._records[ty] = PackedRecord(sort, sort.constructor(0), accessors, options)
        return found

    def option(self, sort: Any) -> Any:
        """``none | some(val)`` over ``sort``."""
        found = self._options.get(sort.get_id())
        if found is None:
            dt = self.z3.Datatype(f"Option{len(self._options)}{self.tag}")
            dt.declare("none")
            dt.declare("some", ("val", sort))
            found = self._options[sort.get_id()] = dt.create()
        return found

    def func(self, key: tuple[Any, ...], domain: Any, rng: Any) -> Any:
        """The uninterpreted function named by ``key`` (made once)."""
        f = self._funcs.get(key)
        if f is None:
            f = self._funcs[key] = self.z3.Function("|".join(map(str, key)) + self.tag, domain, rng)
        return f

    def functions(self) -> dict[Any, Any]:
        return self._funcs


def conj(z3: Any, *parts: Any) -> Any:
    """``And`` of ``parts``, folding the constants (so that short-circuits are seen)."""
    kept = []
    for p in parts:
        if z3.is_false(p):
            return p
        if not z3.is_true(p):
            kept.append(p)
    return z3.And(*kept) if len(kept) > 1 else kept[0] if kept else z3.BoolVal(True)


def disj(z3: Any, *parts: Any) -> Any:
    """``Or`` of ``parts``, folding the constants."""
    kept = []
    for p in parts:
        if z3.is_true(p):
            return p
        if not z3.is_false(p):
            kept.append(p)
    return z3.Or(*kept) if len(kept) > 1 else kept[0] if kept else z3.BoolVal(False)


def same(z3: Any, a: Any, b: Any) -> Any:
    """``a == b``, decided at once when both are values (literals, enum constants)."""
    if _is_value(z3, a) and _is_value(z3, b):
        return z3.BoolVal(a.eq(b))
    return a == b


def _is_value(z3: Any, x: Any) -> bool:
    return z3.is_const(x) and x.decl().kind() != z3.Z3_OP_UNINTERPRETED


def given(z3: Any, cond: Any, value: bool, f: Any) -> Any:
    """``f`` where ``cond`` is ``value``: the error condition of the right of ``&&``, ``||``
    or a branch of ``if``, which only counts there. ``has x && x.a like ...`` then errs
    nowhere (the access is guarded) instead of carrying every test of ``x.a`` into its error
    condition, where the solver would meet them again with the other polarity."""
    if z3.is_false(f) or z3.is_true(f):
        return f
    joined = z3.is_and(cond) if value else z3.is_or(cond)
    pairs = []
    for atom in cond.children() if joined else [cond]:
        if z3.is_not(atom):
            pairs.append((atom.arg(0), z3.BoolVal(not value)))
        elif not (z3.is_true(atom) or z3.is_false(atom)):
            pairs.append((atom, z3.BoolVal(value)))
    return z3.simplify(z3.substitute(f, *pairs)) if pairs else f


def neg(z3: Any, p: Any) -> Any:
    if z3.is_true(p):
        return z3.BoolVal(False)
    if z3.is_false(p):
        return z3.BoolVal(True)
    return z3.Not(p)


def string_val(z3: Any, text: str) -> Any:
    """A z3 string of exactly ``text`` (z3 reads escapes in its literals: write them all)."""
    out = []
    for ch in text:
        code = ord(ch)
        if code > MAX_CHAR:
            raise Unsupported(f"a string with the character U+{code:X} (above U+2FFFF)")
        out.append(ch if ch.isascii() and ch.isalnum() else f"\\u{{{code:x}}}")
    return z3.StringVal("".join(out))


class Encoder:
    """Encodes policies in one request environment."""

    def __init__(
        self, sorts: Sorts, principal: str, action: EntityUID, resource: str, context: RecordType
    ) -> None:
        z3 = self.z3 = sorts.z3
        self.sorts = sorts
        self.schema = sorts.schema
        self.action = action
        self.false = z3.BoolVal(False)
        self.true = z3.BoolVal(True)
        self.principal = Sym(
            EntityType(principal), z3.Const("principal", sorts.entity(principal)), self.false
        )
        self.resource = Sym(
            EntityType(resource), z3.Const("resource", sorts.entity(resource)), self.false
        )
        self.action_sym = Sym(EntityType(action.type), sorts.literal(action), self.false)
        self.assumptions: list[Any] = []
        self.context = self.free_record(context, ("context",))
        #: Entity terms by type, for the hierarchy's ground instances; tag key terms by type.
        self.entity_terms: dict[str, dict[str, Any]] = {}
        self.tag_keys: dict[str, list[Any]] = {}
        #: Terms that are tested for membership in, or added to, sets (by sort).
        self.set_terms: dict[str, list[Any]] = {}
        for sym in (self.principal, self.resource):
            self.note_entity(sym)

    # -- free values ---------------------------------------------------------------------------

    def free(self, ty: CedarType, name: tuple[str, ...]) -> Sym:
        """A fresh value of type ``ty`` (a context attribute)."""
        if isinstance(ty, RecordType):
            return self.free_record(ty, name)
        return self.value(ty, self.z3.Const(".".join(name), self.sorts.sort_of(ty)))

    def free_record(self, ty: RecordType, name: tuple[str, ...]) -> Sym:
        if ty.open:
            raise Unsupported("an open record type (`additionalAttributes`)")
        fields = {}
        for attr, a in ty.attributes.items():
            path = (*name, attr)
            present = self.true if a.required else self.z3.Bool(".".join(path) + "?")
            fields[attr] = (present, self.free(a.type, path))
        return Sym(ty, fields, self.false)

    def attribute(
        self, owner: Sym, ty: CedarType, path: tuple[str, ...], required: bool
    ) -> tuple[Any, Sym]:
        """An entity attribute (at ``path``, inside nested records): (present, value)."""
        z3, sorts = self.z3, self.sorts
        name = owner.ty.name  # type: ignore[attr-defined]
        domain = sorts.entity(name)
        present = self.true
        if not required:
            present = sorts.func((name, *path, "?"), domain, z3.BoolSort())(owner.v)
        if isinstance(ty, RecordType):
            if ty.open:
                raise Unsupported("an open record type (`additionalAttributes`)")
            fields = {
                attr: self.attribute(owner, a.type, (*path, attr), a.required)
                for attr, a in ty.attributes.items()
            }
            return present, Sym(ty, fields, self.false)
        return present, self.value(
            ty, sorts.func((name, *path), domain, sorts.sort_of(ty))(owner.v)
        )

    def value(self, ty: CedarType, term: Any) -> Sym:
        """The value of type ``ty`` that ``term`` holds (a record: its datatype, unpacked),
        with the constraints every ipaddr meets, and its entity terms noted."""
        if isinstance(ty, RecordType):
            return self.unpack(term, ty)
        if ty == IPADDR:
            self.assumptions.append(self.ip_ok(term))
        sym = Sym(ty, term, self.false)
        self.note_entity(sym)
        return sym

    def ip_ok(self, v: Any) -> Any:
        z3, ip = self.z3, self.sorts.ip
        v6, addr, prefix = ip.v6(v), ip.addr(v), ip.prefix(v)
        return z3.If(
            v6,
            z3.ULE(prefix, 128),
            z3.And(z3.ULE(prefix, 32), z3.ULT(addr, z3.BitVecVal(1 << 32, 128))),
        )

    def note_entity(self, sym: Sym) -> None:
        if isinstance(sym.ty, EntityType) and not self.sorts.is_finite(sym.ty.name):
            self.entity_terms.setdefault(sym.ty.name, {})[str(sym.v)] = sym.v

    # -- records as one value ------------------------------------------------------------------

    def packed(self, sym: Sym) -> Any:
        """``sym``'s value as one term: a record packed into its datatype."""
        if not isinstance(sym.ty, RecordType):
            return sym.v
        z3 = self.z3
        rs = self.sorts.record(sym.ty)
        args = []
        for name in sorted(sym.ty.attributes):
            present, field = sym.v[name]
            value = self.packed(field)
            if sym.ty.attributes[name].required:
                args.append(value)
            else:
                opt = rs.options[name]
                args.append(z3.If(present, opt.some(value), opt.none))
        return rs.make(*args)

    def unpack(self, term: Any, ty: RecordType) -> Sym:
        """A packed record as its attributes (the form every other record has)."""
        rs = self.sorts.record(ty)
        fields = {}
        for name, a in ty.attributes.items():
            x = rs.fields[name](term)
            present = self.true
            if not a.required:
                opt = rs.options[name]
                present, x = opt.is_some(x), opt.val(x)
            fields[name] = (present, self.value(a.type, x))
        return Sym(ty, fields, self.false)

    # -- policies ------------------------------------------------------------------------------

    def condition(self, e: Expr) -> Sym:
        """A policy's whole condition (scope and clauses), which must be a Bool."""
        sym = self.expr(e)
        if not isinstance(sym.ty, BoolType):
            raise Unsupported(f"a condition of type `{sym.ty}`")
        return sym

    def hierarchy_axioms(self) -> list[Any]:
        """Ground instances of transitivity and acyclicity over the entity terms met."""
        z3 = self.z3
        out: list[Any] = []
        terms = {t: list(ts.values()) for t, ts in self.entity_terms.items()}
        for t, ts in terms.items():
            for a in self.ancestor_types(t):
                if a == t:
                    out += [z3.Not(z3.IsMember(x, self.ancestors(x, t, a))) for x in ts]
                for b in self.ancestor_types(a):
                    if b not in self.ancestor_types(t):
                        continue
                    for x in ts:
                        for y in terms.get(a, ()):
                            for w in terms.get(b, ()):
                                out.append(
                                    z3.Implies(
                                        z3.And(
                                            z3.IsMember(y, self.ancestors(x, t, a)),
                                            z3.IsMember(w, self.ancestors(y, a, b)),
                                        ),
                                        z3.IsMember(w, self.ancestors(x, t, b)),
                                    )
                                )
        return out

    # -- expressions ---------------------------------------------------------------------------

    def expr(self, e: Expr) -> Sym:
        method = _DISPATCH.get(e.__class__)
        if method is None:
            raise Unsupported(f"`{e.__class__.__name__}` expressions")
        return method(self, e)

    def _lit(self, e: Lit) -> Sym:
        z3, value = self.z3, e.value
        if value.__class__ is bool:
            return Sym(BOOL, z3.BoolVal(value), self.false)
        if value.__class__ is int:
            return Sym(LONG, z3.BitVecVal(value, 64), self.false)
        if value.__class__ is str:
            return Sym(STRING, string_val(z3, value), self.false)
        uid: EntityUID = value  # type: ignore[assignment]
        sym = Sym(EntityType(uid.type), self.sorts.literal(uid), self.false)
        self.note_entity(sym)
        return sym

    def _var(self, e: Variable) -> Sym:
        match e.var:
            case Var.PRINCIPAL:
                return self.principal
            case Var.RESOURCE:
                return self.resource
            case Var.ACTION:
                return self.action_sym
        return self.context

    def _bool(self, e: Expr) -> Sym:
        sym = self.expr(e)
        if not isinstance(sym.ty, BoolType):
            raise Unsupported(f"a `{sym.ty}` where a Bool is required")
        return sym

    def _and(self, e: And) -> Sym:
        z3 = self.z3
        first = self._bool(e.operands[0])
        v, err = first.v, first.err
        for operand in e.operands[1:]:
            if z3.is_false(v) and z3.is_false(err):
                break  # never evaluated (the validator does not type it either)
            right = self._bool(operand)
            err = disj(z3, err, conj(z3, v, given(z3, v, True, right.err)))
            v = conj(z3, v, right.v)
        return Sym(BOOL, v, err)

    def _or(self, e: Or) -> Sym:
        z3 = self.z3
        first = self._bool(e.operands[0])
        v, err = first.v, first.err
        for operand in e.operands[1:]:
            if z3.is_true(v) and z3.is_false(err):
                break
            right = self._bool(operand)
            err = disj(z3, err, conj(z3, neg(z3, v), given(z3, v, False, right.err)))
            v = disj(z3, v, right.v)
        return Sym(BOOL, v, err)

    def _if(self, e: If) -> Sym:
        z3 = self.z3
        c = self._bool(e.cond)
        if z3.is_true(c.v) and z3.is_false(c.err):
            return self.expr(e.then_)
        if z3.is_false(c.v) and z3.is_false(c.err):
            return self.expr(e.else_)
        t, f = self.expr(e.then_), self.expr(e.else_)
        ty = _join(t.ty, f.ty)
        err = disj(
            z3,
            c.err,
            conj(z3, c.v, given(z3, c.v, True, t.err)),
            conj(z3, neg(z3, c.v), given(z3, c.v, False, f.err)),
        )
        return Sym(ty, self.ite(c.v, t, f, ty), err)

    def ite(self, c: Any, t: Sym, f: Sym, ty: CedarType) -> Any:
        z3 = self.z3
        if isinstance(ty, RecordType):
            out = {}
            for name in ty.attributes:
                tp, tv = t.v[name]
                fp, fv = f.v[name]
                sub = ty.attributes[name].type
                out[name] = (z3.If(c, tp, fp), Sym(sub, self.ite(c, tv, fv, sub), self.false))
            return out
        return z3.If(c, t.v, f.v)

    def _unary(self, e: Unary) -> Sym:
        z3 = self.z3
        if e.op is UnaryOp.NOT:
            a = self._bool(e.arg)
            return Sym(BOOL, neg(z3, a.v), a.err)
        a = self._long(e.arg)
        overflow = a.v == z3.BitVecVal(-(2**63), 64)
        return Sym(LONG, -a.v, z3.Or(a.err, overflow))

    def _long(self, e: Expr) -> Sym:
        sym = self.expr(e)
        if not isinstance(sym.ty, LongType):
            raise Unsupported(f"arithmetic on `{sym.ty}`")
        return sym

    def _arith(self, e: Arith) -> Sym:
        z3 = self.z3
        acc = self._long(e.operands[0])
        v, err = acc.v, acc.err
        for op, operand in zip(e.ops, e.operands[1:], strict=True):
            b = self._long(operand)
            if op is BinOp.ADD:
                ok = z3.And(z3.BVAddNoOverflow(v, b.v, True), z3.BVAddNoUnderflow(v, b.v))
                nv = v + b.v
            elif op is BinOp.SUB:
                ok = z3.And(z3.BVSubNoOverflow(v, b.v), z3.BVSubNoUnderflow(v, b.v, True))
                nv = v - b.v
            else:
                ok = z3.And(z3.BVMulNoOverflow(v, b.v, True), z3.BVMulNoUnderflow(v, b.v))
                nv = v * b.v
            err = z3.Or(err, b.err, z3.Not(ok))
            v = nv
        return Sym(LONG, v, err)

    def _binary(self, e: Binary) -> Sym:
        z3 = self.z3
        if e.op is BinOp.IN:
            return self._in(self.expr(e.left), self.expr(e.right))
        a, b = self.expr(e.left), self.expr(e.right)
        err = disj(z3, a.err, b.err)
        if e.op in (BinOp.EQ, BinOp.NEQ):
            eq = self.equal(a, b)
            return Sym(BOOL, eq if e.op is BinOp.EQ else neg(z3, eq), err)
        if a.ty != b.ty or a.ty not in (LONG, DATETIME, DURATION):
            raise Unsupported(f"`{e.op.value}` between `{a.ty}` and `{b.ty}`")
        v = {
            BinOp.LT: lambda: a.v < b.v,
            BinOp.LE: lambda: a.v <= b.v,
            BinOp.GT: lambda: a.v > b.v,
            BinOp.GE: lambda: a.v >= b.v,
        }[e.op]()
        return Sym(BOOL, v, err)

    def equal(self, a: Sym, b: Sym) -> Any:
        """Cedar's ``==`` (values of different types are unequal)."""
        z3 = self.z3
        if isinstance(a.ty, RecordType) and isinstance(b.ty, RecordType):
            parts = []
            for name in sorted(set(a.ty.attributes) | set(b.ty.attributes)):
                ap, av = a.v.get(name, (self.false, None))
                bp, bv = b.v.get(name, (self.false, None))
                if av is None or bv is None:  # declared on one side only: absent from both
                    parts.append(z3.Not(ap if av is not None else bp))
                    continue
                parts.append(z3.And(ap == bp, z3.Implies(ap, self.equal(av, bv))))
            return z3.And(*parts) if parts else self.true
        if a.ty != b.ty:
            if isinstance(a.ty, SetType) and isinstance(b.ty, SetType):
                raise Unsupported(f"`==` between `{a.ty}` and `{b.ty}`")
            return self.false
        return same(z3, a.v, b.v)

    # -- hierarchy -----------------------------------------------------------------------------

    def ancestor_types(self, name: str) -> frozenset[str]:
        return self.schema.entity_type_ancestors(name)

    def ancestors(self, x: Any, t: str, a: str) -> Any:
        """The set of ancestors of type ``a`` of the entity ``x`` of type ``t``."""
        sorts = self.sorts
        f = sorts.func(("ancestors", t, a), sorts.entity(t), self.z3.SetSort(sorts.entity(a)))
        return f(x)

    def _in(self, a: Sym, b: Sym) -> Sym:
        z3 = self.z3
        err = disj(z3, a.err, b.err)
        if not isinstance(a.ty, EntityType):
            raise Unsupported(f"`in` on `{a.ty}`")
        if isinstance(b.ty, EntityType):
            return Sym(BOOL, self.in_one(a, b.ty.name, b.v), err)
        if isinstance(b.ty, SetType) and isinstance(b.ty.element, EntityType):
            target = b.ty.element.name
            elements = _store_chain(z3, b.v)
            if elements is not None:
                v = disj(z3, *[self.in_one(a, target, x) for x in elements])
                return Sym(BOOL, v, err)
            parts = []
            if a.ty.name == target:
                parts.append(z3.IsMember(a.v, b.v))
            if target in self.ancestor_types(a.ty.name):
                inter = z3.SetIntersect(b.v, self.ancestors(a.v, a.ty.name, target))
                parts.append(inter != z3.EmptySet(self.sorts.entity(target)))
            return Sym(BOOL, disj(z3, *parts), err)
        raise Unsupported(f"`in` with `{b.ty}` on the right")

    def in_one(self, a: Sym, target: str, x: Any) -> Any:
        z3 = self.z3
        t = a.ty.name  # type: ignore[attr-defined]
        if is_action_type(t) and is_action_type(target):
            return self.action_in(a.v, t, target, x)
        parts = []
        if t == target:
            parts.append(a.v == x)
        if target in self.ancestor_types(t):
            parts.append(z3.IsMember(x, self.ancestors(a.v, t, target)))
        return disj(z3, *parts)

    def action_in(self, v: Any, t: str, target: str, x: Any) -> Any:
        """``v in x`` for actions: the schema's hierarchy, known exactly (and folded to a
        constant where the environment fixes the action and ``x`` is a literal)."""
        z3 = self.z3
        sorts = self.sorts
        values, targets = sorts.enum_values(t), sorts.enum_values(target)
        groups = sorts.action_groups(t, target)
        known_v, known_x = sorts.enum_id(t, v), sorts.enum_id(target, x)
        if known_v is not None:
            if known_x is not None:
                return z3.BoolVal(known_x in groups[known_v])
            return disj(z3, *[x == targets[g] for g in groups[known_v]])
        if known_x is not None:
            return disj(z3, *[v == values[u] for u, gs in groups.items() if known_x in gs])
        return disj(
            z3,
            *[
                conj(z3, v == values[u], disj(z3, *[x == targets[g] for g in gs]))
                for u, gs in groups.items()
                if gs
            ],
        )

    def _is(self, e: Is) -> Sym:
        z3 = self.z3
        a = self.expr(e.expr)
        if not isinstance(a.ty, EntityType):
            raise Unsupported(f"`is` on `{a.ty}`")
        same = z3.BoolVal(a.ty.name == e.entity_type)
        if e.in_expr is None:
            return Sym(BOOL, same, a.err)
        if z3.is_false(same):
            return Sym(BOOL, self.false, a.err)
        b = self.expr(e.in_expr)
        inside = self._in(a, b)
        return Sym(BOOL, inside.v, inside.err)

    # -- attributes ----------------------------------------------------------------------------

    def _get_attr(self, e: GetAttr) -> Sym:
        z3 = self.z3
        owner = self.expr(e.expr)
        present, value = self.field(owner, e.attr)
        return Sym(value.ty, value.v, disj(z3, owner.err, neg(z3, present)))

    def field(self, owner: Sym, attr: str) -> tuple[Any, Sym]:
        if isinstance(owner.ty, RecordType):
            found = owner.v.get(attr)
            if found is None:
                raise Unsupported(f"attribute `{attr}` of a record without it")
            return found
        if isinstance(owner.ty, EntityType):
            definition = self.schema.entity_types.get(owner.ty.name)
            a: Attribute | None = definition.shape.attributes.get(attr) if definition else None
            if a is None or definition is None:
                raise Unsupported(f"attribute `{attr}` of `{owner.ty.name}`")
            if definition.shape.open:
                raise Unsupported("an open record type (`additionalAttributes`)")
            return self.attribute(owner, a.type, (attr,), a.required)
        raise Unsupported(f"an attribute of `{owner.ty}`")

    def _has(self, e: Has) -> Sym:
        z3 = self.z3
        owner = self.expr(e.expr)
        conds = []
        current = owner
        for attr in e.path:
            if isinstance(current.ty, RecordType | EntityType) and not self._declares(
                current.ty, attr
            ):
                conds.append(self.false)
                break
            present, value = self.field(current, attr)
            conds.append(present)
            current = value
        return Sym(BOOL, conj(z3, *conds), owner.err)

    def _declares(self, ty: CedarType, attr: str) -> bool:
        if isinstance(ty, RecordType):
            return attr in ty.attributes
        definition = self.schema.entity_types.get(ty.name)  # type: ignore[attr-defined]
        return definition is not None and attr in definition.shape.attributes

    def _like(self, e: Like) -> Sym:
        z3 = self.z3
        a = self.expr(e.expr)
        if not isinstance(a.ty, StringType):
            raise Unsupported(f"`like` on `{a.ty}`")
        pieces = []
        for el in e.pattern:
            if isinstance(el, str):
                pieces.append(z3.Re(string_val(z3, el)))
            else:
                pieces.append(z3.Star(z3.AllChar(z3.ReSort(z3.StringSort()))))
        if not pieces:
            return Sym(BOOL, a.v == z3.StringVal(""), a.err)
        regex = pieces[0] if len(pieces) == 1 else z3.Concat(*pieces)
        return Sym(BOOL, z3.InRe(a.v, regex), a.err)

    # -- sets and records ----------------------------------------------------------------------

    def _set(self, e: SetLit) -> Sym:
        z3 = self.z3
        items = [self.expr(x) for x in e.elements]
        if not items:
            raise Unsupported("an empty set literal")
        ty = items[0].ty
        for it in items[1:]:
            ty = _join(ty, it.ty)
        sort = self.sorts.sort_of(ty)
        v = z3.EmptySet(sort)
        for it in items:
            x = self.packed(it)
            v = z3.SetAdd(v, x)
            self.set_terms.setdefault(str(sort), []).append(x)
        return Sym(SetType(ty), v, disj(z3, *[it.err for it in items]))

    def _record(self, e: RecordLit) -> Sym:
        z3 = self.z3
        fields = {}
        errs = []
        for key, value in e.entries:
            sym = self.expr(value)
            fields[key] = (self.true, Sym(sym.ty, sym.v, self.false))
            errs.append(sym.err)
        ty = RecordType({k: Attribute(s.ty) for k, (_, s) in fields.items()})
        return Sym(ty, fields, disj(z3, *errs))

    def _method(self, e: MethodCall) -> Sym:
        z3 = self.z3
        name = e.name
        recv = self.expr(e.receiver)
        args = [self.expr(a) for a in e.args]
        err = disj(z3, recv.err, *[a.err for a in args])
        if name in ("contains", "containsAll", "containsAny", "isEmpty"):
            if not isinstance(recv.ty, SetType):
                raise Unsupported(f"`{name}` on `{recv.ty}`")
            if name == "isEmpty":
                return Sym(BOOL, recv.v == z3.EmptySet(self.sorts.sort_of(recv.ty.element)), err)
            arg = args[0]
            if name == "contains":
                if _join(recv.ty.element, arg.ty) != recv.ty.element:
                    raise Unsupported(f"`contains` of `{arg.ty}` in `{recv.ty}`")
                x = self.packed(arg)
                self.set_terms.setdefault(str(x.sort()), []).append(x)
                return Sym(BOOL, z3.IsMember(x, recv.v), err)
            if arg.ty != recv.ty:
                raise Unsupported(f"`{name}` between `{recv.ty}` and `{arg.ty}`")
            if name == "containsAll":
                return Sym(BOOL, z3.IsSubset(arg.v, recv.v), err)
            inter = z3.SetIntersect(recv.v, arg.v)
            return Sym(BOOL, inter != z3.EmptySet(self.sorts.sort_of(recv.ty.element)), err)
        if name in ("hasTag", "getTag"):
            return self._tag(name, recv, args[0], err)
        if name in ("startsWith", "endsWith"):
            if recv.ty != STRING or args[0].ty != STRING:
                raise Unsupported(f"`{name}` on `{recv.ty}`")
            test = z3.PrefixOf if name == "startsWith" else z3.SuffixOf
            return Sym(BOOL, test(args[0].v, recv.v), err)
        return self._ext_method(name, recv, args, err)

    def _tag(self, name: str, owner: Sym, key: Sym, err: Any) -> Sym:
        z3, sorts = self.z3, self.sorts
        if not isinstance(owner.ty, EntityType) or key.ty != STRING:
            raise Unsupported(f"`{name}` on `{owner.ty}`")
        t = owner.ty.name
        definition = self.schema.entity_types.get(t)
        tag_type = definition.tags if definition else None
        self.tag_keys.setdefault(t, []).append(key.v)
        if tag_type is None:
            if name == "hasTag":
                return Sym(BOOL, self.false, err)
            raise Unsupported(f"`getTag` on `{t}`, which has no tags")
        domain = sorts.entity(t)
        keys = sorts.func(("tags", t), domain, z3.SetSort(sorts.string))(owner.v)
        present = z3.IsMember(key.v, keys)
        if name == "hasTag":
            return Sym(BOOL, present, err)
        values = sorts.func(
            ("tag-values", t), domain, z3.ArraySort(sorts.string, sorts.sort_of(tag_type))
        )(owner.v)
        value = self.value(tag_type, z3.Select(values, key.v))
        return Sym(tag_type, value.v, z3.Or(err, z3.Not(present)))

    # -- extension types -----------------------------------------------------------------------

    def _call(self, e: Call) -> Sym:
        func = FUNCTIONS.get(e.name)
        if func is None or len(e.args) != 1:
            raise Unsupported(f"the function `{e.name}`")
        arg = e.args[0]
        if not (isinstance(arg, Lit) and isinstance(arg.value, str)):
            raise Unsupported(f"`{e.name}` of a computed string")
        try:
            value = func.call([arg.value])
        except CedarliteError:
            return Sym(_EXT_RETURNS[e.name], self.default(_EXT_RETURNS[e.name]), self.true)
        return self.ext_value(value)

    def default(self, ty: CedarType) -> Any:
        if ty == IPADDR:
            return self.sorts.ip.ip(self.false, self.z3.BitVecVal(0, 128), self.z3.BitVecVal(0, 8))
        return self.z3.BitVecVal(0, 64)

    def ext_value(self, value: Any) -> Sym:
        z3 = self.z3
        if isinstance(value, Decimal):
            return Sym(DECIMAL, z3.BitVecVal(value.value, 64), self.false)
        if isinstance(value, Datetime):
            return Sym(DATETIME, z3.BitVecVal(value.ms, 64), self.false)
        if isinstance(value, Duration):
            return Sym(DURATION, z3.BitVecVal(value.ms, 64), self.false)
        assert isinstance(value, IPAddr)
        v = self.sorts.ip.ip(
            z3.BoolVal(value.version == 6),
            z3.BitVecVal(value.addr, 128),
            z3.BitVecVal(value.prefix, 8),
        )
        return Sym(IPADDR, v, self.false)

    def _ext_method(self, name: str, recv: Sym, args: list[Sym], err: Any) -> Sym:
        handler = _EXT_METHODS.get((name, str(recv.ty)))
        if handler is None:
            raise Unsupported(f"the method `{name}` on `{recv.ty}`")
        return handler(self, recv, args, err)

    def ip_range(self, v: Any) -> tuple[Any, Any]:
        z3, ip = self.z3, self.sorts.ip
        width = z3.If(ip.v6(v), z3.BitVecVal(128, 128), z3.BitVecVal(32, 128))
        host = width - z3.ZeroExt(120, ip.prefix(v))
        hostmask = (z3.BitVecVal(1, 128) << host) - 1
        low = ip.addr(v) & ~hostmask
        return low, low | hostmask

    def in_range(self, a: Any, b: Any) -> Any:
        z3, ip = self.z3, self.sorts.ip
        alo, ahi = self.ip_range(a)
        blo, bhi = self.ip_range(b)
        return z3.And(ip.v6(a) == ip.v6(b), z3.ULE(blo, alo), z3.ULE(ahi, bhi))

    def ip_const(self, text: str) -> Any:
        return self.ext_value(IPAddr.parse(text)).v


def _store_chain(z3: Any, v: Any) -> list[Any] | None:
    """The elements of a set built by ``SetAdd`` from the empty set, or ``None``."""
    out = []
    while z3.is_store(v):
        if not z3.is_true(v.arg(2)):
            return None
        out.append(v.arg(1))
        v = v.arg(0)
    if z3.is_const_array(v) and z3.is_false(v.arg(0)):
        return out
    return None


def _join(a: CedarType, b: CedarType) -> CedarType:
    if a == b:
        return a
    if (
        isinstance(a, RecordType)
        and isinstance(b, RecordType)
        and a.attributes.keys() == b.attributes.keys()
        and all(a.attributes[k].required == b.attributes[k].required for k in a.attributes)
    ):
        return RecordType(
            {
                k: Attribute(
                    _join(a.attributes[k].type, b.attributes[k].type), a.attributes[k].required
                )
                for k in a.attributes
            }
        )
    if isinstance(a, SetType) and isinstance(b, SetType):
        return SetType(_join(a.element, b.element))
    raise Unsupported(f"values of types `{a}` and `{b}` in one place")


_EXT_RETURNS = {"decimal": DECIMAL, "ip": IPADDR, "datetime": DATETIME, "duration": DURATION}


def _decimal_cmp(op: Callable[[Any, Any], Any]) -> Callable[[Encoder, Sym, list[Sym], Any], Sym]:
    def run(enc: Encoder, recv: Sym, args: list[Sym], err: Any) -> Sym:
        if args[0].ty != DECIMAL:
            raise Unsupported(f"a decimal comparison with `{args[0].ty}`")
        return Sym(BOOL, op(recv.v, args[0].v), err)

    return run


def _ip_test(test: Callable[[Encoder, Any], Any]) -> Callable[[Encoder, Sym, list[Sym], Any], Sym]:
    def run(enc: Encoder, recv: Sym, args: list[Sym], err: Any) -> Sym:
        return Sym(BOOL, test(enc, recv.v), err)

    return run


def _in_range(enc: Encoder, recv: Sym, args: list[Sym], err: Any) -> Sym:
    if args[0].ty != IPADDR:
        raise Unsupported(f"`isInRange` with `{args[0].ty}`")
    return Sym(BOOL, enc.in_range(recv.v, args[0].v), err)


def _loopback(enc: Encoder, v: Any) -> Any:
    z3 = enc.z3
    return z3.Or(enc.in_range(v, enc.ip_const("127.0.0.0/8")), enc.in_range(v, enc.ip_const("::1")))


def _multicast(enc: Encoder, v: Any) -> Any:
    z3 = enc.z3
    return z3.Or(
        enc.in_range(v, enc.ip_const("224.0.0.0/4")), enc.in_range(v, enc.ip_const("ff00::/8"))
    )


def _offset(enc: Encoder, recv: Sym, args: list[Sym], err: Any) -> Sym:
    z3 = enc.z3
    d = args[0]
    if d.ty != DURATION:
        raise Unsupported(f"`offset` with `{d.ty}`")
    ok = z3.And(z3.BVAddNoOverflow(recv.v, d.v, True), z3.BVAddNoUnderflow(recv.v, d.v))
    return Sym(DATETIME, recv.v + d.v, z3.Or(err, z3.Not(ok)))


def _duration_since(enc: Encoder, recv: Sym, args: list[Sym], err: Any) -> Sym:
    z3 = enc.z3
    d = args[0]
    if d.ty != DATETIME:
        raise Unsupported(f"`durationSince` with `{d.ty}`")
    ok = z3.And(z3.BVSubNoOverflow(recv.v, d.v), z3.BVSubNoUnderflow(recv.v, d.v, True))
    return Sym(DURATION, recv.v - d.v, z3.Or(err, z3.Not(ok)))


def _day_split(enc: Encoder, ms: Any) -> tuple[Any, Any]:
    """``ms`` as (days, remainder) with the remainder in ``[0, day)`` (floored division)."""
    z3 = enc.z3
    day = z3.BitVecVal(DAY_MS, 64)
    q, r = ms / day, z3.SRem(ms, day)  # signed, truncating toward zero
    negative = r < 0
    return z3.If(negative, q - 1, q), z3.If(negative, r + day, r)


def _to_date(enc: Encoder, recv: Sym, args: list[Sym], err: Any) -> Sym:
    z3 = enc.z3
    days, _ = _day_split(enc, recv.v)
    day = z3.BitVecVal(DAY_MS, 64)
    ok = z3.And(z3.BVMulNoOverflow(days, day, True), z3.BVMulNoUnderflow(days, day))
    return Sym(DATETIME, days * day, disj(z3, err, neg(z3, ok)))


def _to_time(enc: Encoder, recv: Sym, args: list[Sym], err: Any) -> Sym:
    return Sym(DURATION, _day_split(enc, recv.v)[1], err)


def _duration_to(unit: int) -> Callable[[Encoder, Sym, list[Sym], Any], Sym]:
    def run(enc: Encoder, recv: Sym, args: list[Sym], err: Any) -> Sym:
        v = recv.v if unit == 1 else recv.v / enc.z3.BitVecVal(unit, 64)  # truncating, signed
        return Sym(LONG, v, err)

    return run


_EXT_METHODS: dict[tuple[str, str], Callable[[Encoder, Sym, list[Sym], Any], Sym]] = {
    ("lessThan", "decimal"): _decimal_cmp(lambda a, b: a < b),
    ("lessThanOrEqual", "decimal"): _decimal_cmp(lambda a, b: a <= b),
    ("greaterThan", "decimal"): _decimal_cmp(lambda a, b: a > b),
    ("greaterThanOrEqual", "decimal"): _decimal_cmp(lambda a, b: a >= b),
    ("isIpv4", "ipaddr"): _ip_test(lambda enc, v: enc.z3.Not(enc.sorts.ip.v6(v))),
    ("isIpv6", "ipaddr"): _ip_test(lambda enc, v: enc.sorts.ip.v6(v)),
    ("isLoopback", "ipaddr"): _ip_test(_loopback),
    ("isMulticast", "ipaddr"): _ip_test(_multicast),
    ("isInRange", "ipaddr"): _in_range,
    ("offset", "datetime"): _offset,
    ("durationSince", "datetime"): _duration_since,
    ("toDate", "datetime"): _to_date,
    ("toTime", "datetime"): _to_time,
    ("toMilliseconds", "duration"): _duration_to(1),
    ("toSeconds", "duration"): _duration_to(1000),
    ("toMinutes", "duration"): _duration_to(60_000),
    ("toHours", "duration"): _duration_to(3_600_000),
    ("toDays", "duration"): _duration_to(DAY_MS),
}

_DISPATCH: dict[type, Callable[[Encoder, Any], Sym]] = {
    Lit: Encoder._lit,
    Variable: Encoder._var,
    And: Encoder._and,
    Or: Encoder._or,
    If: Encoder._if,
    Unary: Encoder._unary,
    Arith: Encoder._arith,
    Binary: Encoder._binary,
    GetAttr: Encoder._get_attr,
    Has: Encoder._has,
    Like: Encoder._like,
    Is: Encoder._is,
    SetLit: Encoder._set,
    RecordLit: Encoder._record,
    MethodCall: Encoder._method,
    Call: Encoder._call,
}
