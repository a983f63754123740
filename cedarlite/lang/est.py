"""Cedar's JSON policy format (the EST, "external syntax tree") <-> the policy AST.

The format is the one Cedar's ``translate-policy`` and ``PolicySet::to_json`` write:

```json
{"staticPolicies": {"policy0": {"effect": "permit",
                                "principal": {"op": "==", "entity": {"type": "User", "id": "a"}},
                                "action": {"op": "All"}, "resource": {"op": "All"},
                                "conditions": [{"kind": "when", "body": {"Var": "context"}}],
                                "annotations": {"id": "p0"}}},
 "templates": {}, "templateLinks": []}
```

:func:`policy_set_to_json` writes exactly what the Rust engine writes for the same policies (the
differential suite compares the two as parsed JSON): ``>``, ``>=``, ``!=`` and negative
literals are kept as written, a dotted ``has`` becomes a chain of single ``has`` tests, a
``like`` pattern is one element per character. Two things have no exact counterpart:

* an annotation without a value (``@advice``) and one with the empty string are the same
  annotation in cedarlite (Cedar gives both the value ``""``); both are written as ``null``, as
  Rust writes ``@advice``;
* cedarlite's dialect methods ``startsWith``/``endsWith`` are written like extension method
  calls (``{"startsWith": [receiver, argument]}``), which Cedar itself rejects, as it rejects
  them in Cedar text; :func:`policy_set_from_json` with ``strict=True`` rejects them too.

:func:`policy_set_from_json` reads a policy set object or a single policy object (named
``policy0``). Input is hostile: every object is checked for its keys and types, nesting deeper
than the parser's limit is refused, and errors name the JSON path of the offending value (and,
when the JSON came as text, its line and column with a caret snippet).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import pairwise
from typing import Any, NoReturn, Protocol

from .._jsonloc import json_path_text, json_span
from ..data.ext import FUNCTIONS as EXT_FUNCTIONS
from ..data.ext import METHODS as EXT_METHODS
from ..data.jsonvalue import json_kind, load_json, preview
from ..data.values import I64_MAX, I64_MIN, EntityUID
from ..errors import CedarliteError, ParseError
from ..source import Span
from .ast import (
    WILDCARD,
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
    Var,
    Variable,
    children,
    is_action_type,
    is_valid_ident,
    is_valid_type_name,
)
from .parse import BUILTIN_METHODS, DIALECT_METHODS, MAX_NESTING


class PolicySetLike(Protocol):
    """What the reader needs of a policy set (:class:`cedarlite.PolicySet`, which sits above
    this stage and passes its own class in): holding policies and linking templates."""

    def link(self, template_id: str, new_id: str, values: Mapping[str, Any]) -> PolicySetLike: ...

    def __iter__(self) -> Iterator[Policy]: ...


__all__ = ["expr_to_json", "policy_set_from_json", "policy_set_to_json", "policy_to_json"]

# ---------------------------------------------------------------------------------------------
# AST -> JSON

_BINARY_KEYS = {op: op.value for op in BinOp}
_ARITH_OPS = frozenset({BinOp.ADD, BinOp.SUB, BinOp.MUL})
_SET_METHODS = ("contains", "containsAll", "containsAny", "getTag", "hasTag")


def policy_set_to_json(policies: Iterable[Policy]) -> dict[str, Any]:
    """The EST of a policy set: ``{"templates", "staticPolicies", "templateLinks"}``."""
    static: dict[str, Any] = {}
    templates: dict[str, Any] = {}
    links: list[dict[str, Any]] = []
    for p in policies:
        if p.template_id is not None:
            values = {slot: uid.to_json() for slot, uid in p.links.items()}
            links.append({"templateId": p.template_id, "newId": p.id, "values": values})
        elif p.is_template:
            templates[p.id] = policy_to_json(p)
        else:
            static[p.id] = policy_to_json(p)
    return {"templates": templates, "staticPolicies": static, "templateLinks": links}


def policy_to_json(policy: Policy) -> dict[str, Any]:
    """The EST of one policy or template (its id is not part of it)."""
    out: dict[str, Any] = {
        "effect": policy.effect.value,
        "principal": _scope_to_json(policy.principal),
        "action": _scope_to_json(policy.action),
        "resource": _scope_to_json(policy.resource),
        "conditions": [
            {"kind": c.kind.value, "body": expr_to_json(c.body)} for c in policy.conditions
        ],
    }
    if policy.annotations:
        out["annotations"] = {k: (v if v else None) for k, v in policy.annotations.items()}
    return out


def _target_to_json(entity: EntityUID | SlotId | None) -> dict[str, Any]:
    if isinstance(entity, SlotId):
        return {"slot": entity.value}
    assert entity is not None
    return {"entity": entity.to_json()}


def _scope_to_json(scope: Scope) -> dict[str, Any]:
    match scope.op:
        case ScopeOp.ANY:
            return {"op": "All"}
        case ScopeOp.EQ | ScopeOp.IN:
            return {"op": scope.op.value, **_target_to_json(scope.entity)}
        case ScopeOp.IS:
            return {"op": "is", "entity_type": scope.entity_type}
        case ScopeOp.IS_IN:
            return {
                "op": "is",
                "entity_type": scope.entity_type,
                "in": _target_to_json(scope.entity),
            }
        case ScopeOp.IN_SET if len(scope.entities) == 1:  # Rust writes `in [A]` as `in A`
            return {"op": "in", "entity": scope.entities[0].to_json()}
        case ScopeOp.IN_SET:
            return {"op": "in", "entities": [e.to_json() for e in scope.entities]}
    raise AssertionError(scope.op)  # pragma: no cover


def expr_to_json(e: Expr) -> dict[str, Any]:
    """The EST of an expression (recursive; policy ASTs are at most :data:`MAX_NESTING` deep)."""
    match e:
        case Lit(value=EntityUID() as uid):
            return {"Value": {"__entity": uid.to_json()}}
        case Lit(value=value):
            return {"Value": value}
        case Variable(var=var):
            return {"Var": var.value}
        case Slot(slot=slot):
            return {"Slot": slot.value}
        case And() | Or():
            # Left-nested, as Cedar's parser builds `a && b && c` (read through `children`, so
            # a flat n-ary chain serializes the same way).
            key = "&&" if isinstance(e, And) else "||"
            operands = children(e)
            out = expr_to_json(operands[0])
            for right in operands[1:]:
                out = {key: {"left": out, "right": expr_to_json(right)}}
            return out
        case Unary(op=UnaryOp.NOT, arg=arg):
            return {"!": {"arg": expr_to_json(arg)}}
        case Unary(op=UnaryOp.NEG, arg=arg):
            return {"neg": {"arg": expr_to_json(arg)}}
        case Binary(op=op, left=left, right=right):
            return {_BINARY_KEYS[op]: {"left": expr_to_json(left), "right": expr_to_json(right)}}
        case Arith(operands=operands, ops=ops):
            out = expr_to_json(operands[0])  # left-nested, as Cedar's parser builds it
            for op, right in zip(ops, operands[1:], strict=True):
                out = {_BINARY_KEYS[op]: {"left": out, "right": expr_to_json(right)}}
            return out
        case If(cond=c, then_=t, else_=f):
            return {
                "if-then-else": {
                    "if": expr_to_json(c),
                    "then": expr_to_json(t),
                    "else": expr_to_json(f),
                }
            }
        case GetAttr(expr=inner, attr=attr):
            return {".": {"left": expr_to_json(inner), "attr": attr}}
        case Has(expr=inner, path=path):
            # `e has a.b` is `e has a && e.a has b`, as Rust writes it.
            base = expr_to_json(inner)
            out = {"has": {"left": base, "attr": path[0]}}
            for prev, attr in pairwise(path):
                base = {".": {"left": base, "attr": prev}}
                out = {"&&": {"left": out, "right": {"has": {"left": base, "attr": attr}}}}
            return out
        case Like(expr=inner, pattern=pattern):
            return {
                "like": {"left": expr_to_json(inner), "pattern": list(_pattern_to_json(pattern))}
            }
        case Is(expr=inner, entity_type=t, in_expr=target):
            body: dict[str, Any] = {"left": expr_to_json(inner), "entity_type": t}
            if target is not None:
                body["in"] = expr_to_json(target)
            return {"is": body}
        case MethodCall(receiver=receiver, name="isEmpty", args=()):
            return {"isEmpty": {"arg": expr_to_json(receiver)}}
        case MethodCall(receiver=receiver, name=name, args=(arg,)) if name in _SET_METHODS:
            return {name: {"left": expr_to_json(receiver), "right": expr_to_json(arg)}}
        case MethodCall(receiver=receiver, name=name, args=args):
            return {name: [expr_to_json(receiver), *(expr_to_json(a) for a in args)]}
        case Call(name=name, args=args):
            return {name: [expr_to_json(a) for a in args]}
        case SetLit(elements=elements):
            return {"Set": [expr_to_json(x) for x in elements]}
        case RecordLit(entries=entries):
            return {"Record": {k: expr_to_json(v) for k, v in entries}}
    raise TypeError(f"not an expression node: {e!r}")


def _pattern_to_json(pattern: Sequence[PatternElem]) -> Iterator[Any]:
    for el in pattern:
        if el is WILDCARD:
            yield "Wildcard"
        else:
            yield from ({"Literal": ch} for ch in str(el))


# ---------------------------------------------------------------------------------------------
# JSON -> AST

Path = tuple[str | int, ...]

_POLICY_SET_KEYS = ("staticPolicies", "templates", "templateLinks")
_POLICY_KEYS = ("effect", "principal", "action", "resource", "conditions", "annotations")
_LINK_KEYS = ("templateId", "newId", "values")
_BINARY_OPS = {op.value: op for op in BinOp}
_VARS = {v.value: v for v in Var}
_SLOTS = {s.value: s for s in SlotId}
_UNARY_OPS = {"!": UnaryOp.NOT, "neg": UnaryOp.NEG}
_ANNOTATION_NAME = re.compile(r"[_a-zA-Z][_a-zA-Z0-9]*")  # any identifier, reserved words too
_EXPR_KEYS = (
    *("Value", "Var", "Slot", "!", "neg", "&&", "||", "if-then-else", ".", "has", "like", "is"),
    *_BINARY_OPS,
    *("contains", "containsAll", "containsAny", "isEmpty", "getTag", "hasTag", "Set", "Record"),
)


class _Invalid(Exception):
    """A problem at a JSON path (turned into a located :class:`ParseError` at the boundary)."""

    def __init__(self, path: Path, message: str, help: str | None = None) -> None:
        super().__init__(message)
        self.path, self.message, self.help = path, message, help


def _fail(path: Path, message: str, help: str | None = None) -> NoReturn:
    raise _Invalid(path, message, help)


def policy_set_from_json(
    data: Any,
    policy_set: Callable[..., PolicySetLike],
    source: str | None = None,
    *,
    strict: bool = False,
) -> Any:
    """A :class:`~cedarlite.PolicySet` from the EST (JSON text, bytes or a decoded object).

    Accepts a policy set object (``staticPolicies``, ``templates``, ``templateLinks``; a
    missing key counts as empty) or a single policy or template object (id ``policy0``).
    Policy ids are the object keys. ``strict=True`` rejects cedarlite's dialect methods.
    Raises :class:`~cedarlite.ParseError` naming the JSON path (and, for text, the line and
    column) of the first problem. ``policy_set`` is the class that holds and links the policies
    (passed in: this stage sits below :mod:`cedarlite.policyset`).
    """
    text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
    obj = load_json(text, source, ParseError) if isinstance(text, str) else data
    try:
        policies = _Reader(strict, policy_set).policy_set(obj)
        return policy_set(policies, source=source)
    except _Invalid as err:
        raise _located(err, text if isinstance(text, str) else None, source) from None
    except CedarliteError as err:  # duplicate ids, bad links: name the source
        err.source = err.source or source
        raise
    except RecursionError:
        raise ParseError(
            f"policy JSON is nested too deeply (more than {MAX_NESTING} levels)", source=source
        ) from None


def _located(err: _Invalid, text: str | None, source: str | None) -> ParseError:
    where = json_path_text(err.path) if err.path else "policy JSON"
    span = _locate(text, err.path) if text is not None else None
    return ParseError(
        f"`{where}`: {err.message}", span=span, text=text, source=source, help=err.help
    )


class _Reader:
    """Reads EST objects into AST nodes, checking every key and type on the way."""

    def __init__(self, strict: bool, policy_set: Callable[..., PolicySetLike]) -> None:
        self.strict = strict
        self.make_set = policy_set

    # -- policy sets and policies ------------------------------------------------------------

    def policy_set(self, obj: Any) -> list[Policy]:
        if not isinstance(obj, dict):
            _fail((), f"expected a policy set or policy object, got {_kind(obj)}")
        if any(k in obj for k in _POLICY_KEYS) and not any(k in obj for k in _POLICY_SET_KEYS):
            return [self.policy(obj, "policy0", ())]
        if not obj:
            _fail(
                (),
                f"expected a policy set ({_names(_POLICY_SET_KEYS)}) or a policy "
                f"({_names(_POLICY_KEYS[:4])}), got an empty object",
            )
        _keys(obj, (), _POLICY_SET_KEYS, "policy set")
        out: list[Policy] = []
        seen: set[str] = set()
        for group, want_template in (("staticPolicies", False), ("templates", True)):
            entries = obj.get(group, {})
            if not isinstance(entries, dict):
                _fail((group,), f"expected an object of policies by id, got {_kind(entries)}")
            for policy_id, body in entries.items():
                if policy_id in seen:
                    _fail((group, policy_id), f"duplicate policy id `{policy_id}`")
                seen.add(policy_id)
                policy = self.policy(body, policy_id, (group, policy_id))
                if policy.is_template != want_template:
                    what = (
                        "a template has slots; put it under `templates`"
                        if policy.is_template
                        else "has no slots: a template needs `?principal` or `?resource`; "
                        "put it under `staticPolicies`"
                    )
                    _fail((group, policy_id), f"policy `{policy_id}` {what}")
                out.append(policy)
        links = obj.get("templateLinks", [])
        if not isinstance(links, list):
            _fail(("templateLinks",), f"expected an array of links, got {_kind(links)}")
        ps = self.make_set(out)
        for i, link in enumerate(links):
            path: Path = ("templateLinks", i)
            if not isinstance(link, dict):
                _fail(path, f"expected a link object, got {_kind(link)}")
            _keys(link, path, _LINK_KEYS, "template link", required=_LINK_KEYS)
            for key in ("templateId", "newId"):
                if not isinstance(link[key], str):
                    _fail((*path, key), f"expected a string, got {_kind(link[key])}")
            values = link["values"]
            if not isinstance(values, dict):
                _fail((*path, "values"), f"expected an object of slot values, got {_kind(values)}")
            try:
                ps = ps.link(link["templateId"], link["newId"], values)
            except CedarliteError as err:
                _fail(path, err.message)
        return list(ps)

    def policy(self, obj: Any, policy_id: str, path: Path) -> Policy:
        if not isinstance(obj, dict):
            _fail(path, f"expected a policy object, got {_kind(obj)}")
        _keys(obj, path, _POLICY_KEYS, "policy", required=_POLICY_KEYS[:4])
        effect = obj["effect"]
        if effect not in ("permit", "forbid"):
            _fail((*path, "effect"), f"expected `permit` or `forbid`, got `{_preview(effect)}`")
        conditions = obj.get("conditions", [])
        if not isinstance(conditions, list):
            _fail((*path, "conditions"), f"expected an array, got {_kind(conditions)}")
        return Policy(
            policy_id,
            Effect(effect),
            self.scope(obj["principal"], Var.PRINCIPAL, (*path, "principal")),
            self.scope(obj["action"], Var.ACTION, (*path, "action")),
            self.scope(obj["resource"], Var.RESOURCE, (*path, "resource")),
            tuple(self.condition(c, (*path, "conditions", i)) for i, c in enumerate(conditions)),
            self.annotations(obj.get("annotations", {}), (*path, "annotations")),
        )

    def annotations(self, obj: Any, path: Path) -> dict[str, str]:
        if not isinstance(obj, dict):
            _fail(path, f"expected an object, got {_kind(obj)}")
        out: dict[str, str] = {}
        for key, value in obj.items():
            if not _ANNOTATION_NAME.fullmatch(key):
                _fail((*path, key), f"`{key}` is not a valid annotation name")
            if value is not None and not isinstance(value, str):
                _fail((*path, key), f"expected a string or null, got {_kind(value)}")
            out[key] = value or ""
        return out

    def condition(self, obj: Any, path: Path) -> Condition:
        if not isinstance(obj, dict):
            _fail(path, f"expected a condition object, got {_kind(obj)}")
        _keys(obj, path, ("kind", "body"), "condition", required=("kind", "body"))
        if obj["kind"] not in ("when", "unless"):
            _fail((*path, "kind"), f"expected `when` or `unless`, got `{_preview(obj['kind'])}`")
        return Condition(ConditionKind(obj["kind"]), self.expr(obj["body"], (*path, "body"), 1))

    def scope(self, obj: Any, var: Var, path: Path) -> Scope:
        if not isinstance(obj, dict):
            _fail(path, f"expected a scope object, got {_kind(obj)}")
        op = obj.get("op")
        if op in ("All", "all"):
            _keys(obj, path, ("op",), "scope")
            return Scope(var)
        if op == "==":
            return Scope(var, ScopeOp.EQ, entity=self.target(obj, var, path))
        if op == "in":
            if var is Var.ACTION and "entities" in obj:
                _keys(obj, path, ("op", "entities"), "scope")
                items = obj["entities"]
                if not isinstance(items, list):
                    _fail((*path, "entities"), f"expected an array, got {_kind(items)}")
                uids = tuple(
                    self.action_uid(u, (*path, "entities", i)) for i, u in enumerate(items)
                )
                return Scope(var, ScopeOp.IN_SET, entities=uids)
            return Scope(var, ScopeOp.IN, entity=self.target(obj, var, path))
        if op == "is" and var is not Var.ACTION:
            _keys(obj, path, ("op", "entity_type", "in"), "scope", required=("entity_type",))
            entity_type = self.type_name(obj["entity_type"], (*path, "entity_type"))
            if "in" not in obj:
                return Scope(var, ScopeOp.IS, entity_type=entity_type)
            inner = obj["in"]
            if not isinstance(inner, dict):
                _fail((*path, "in"), f"expected an object, got {_kind(inner)}")
            target = self.target({"op": "in", **inner}, var, (*path, "in"))
            return Scope(var, ScopeOp.IS_IN, entity=target, entity_type=entity_type)
        ops = "`All`, `==`, `in`" + ("" if var is Var.ACTION else ", `is`")
        _fail((*path, "op"), f"expected one of {ops}, got `{_preview(op)}`")

    def target(self, obj: dict[str, Any], var: Var, path: Path) -> EntityUID | SlotId:
        if "slot" in obj and var is not Var.ACTION:
            _keys(obj, path, ("op", "slot"), "scope")
            want = SlotId.PRINCIPAL if var is Var.PRINCIPAL else SlotId.RESOURCE
            if obj["slot"] != want.value:
                _fail((*path, "slot"), f"expected `{want.value}`, got `{_preview(obj['slot'])}`")
            return want
        _keys(obj, path, ("op", "entity"), "scope", required=("entity",))
        if var is Var.ACTION:
            return self.action_uid(obj["entity"], (*path, "entity"))
        return self.uid(obj["entity"], (*path, "entity"))

    def uid(self, obj: Any, path: Path) -> EntityUID:
        if isinstance(obj, dict) and set(obj) == {"__entity"}:
            obj, path = obj["__entity"], (*path, "__entity")
        if not isinstance(obj, dict):
            _fail(path, f'expected an entity `{{"type": ..., "id": ...}}`, got {_kind(obj)}')
        _keys(obj, path, ("type", "id"), "entity reference", required=("type", "id"))
        if not isinstance(obj["id"], str):
            _fail((*path, "id"), f"expected a string, got {_kind(obj['id'])}")
        return EntityUID(self.type_name(obj["type"], (*path, "type")), obj["id"])

    def action_uid(self, obj: Any, path: Path) -> EntityUID:
        uid = self.uid(obj, path)
        if not is_action_type(uid.type):
            _fail(path, f"expected an action (type `Action` or `NS::Action`), got `{uid}`")
        return uid

    def type_name(self, obj: Any, path: Path) -> str:
        if not isinstance(obj, str) or not is_valid_type_name(obj):
            _fail(path, f"`{_preview(obj)}` is not a valid entity type name")
        return obj

    # -- expressions ------------------------------------------------------------------------

    def expr(self, obj: Any, path: Path, depth: int) -> Expr:
        if depth > MAX_NESTING:
            _fail(path, f"expression is nested too deeply (more than {MAX_NESTING} levels)")
        if not isinstance(obj, dict) or len(obj) != 1:
            _fail(path, f"expected an object with one operator key, got {_describe(obj)}")
        ((key, body),) = obj.items()
        at = (*path, key)
        sub = depth + 1
        if key == "Value":
            return self.value(body, at, sub)
        if key == "Var":
            if not isinstance(body, str) or body not in _VARS:
                _fail(at, f"expected a variable name, got `{_preview(body)}`")
            return Variable(_VARS[body])
        if key == "Slot":
            _fail(at, "template slots are only allowed in the principal and resource scope")
        if key in _UNARY_OPS:
            fields = _fields(body, at, ("arg",))
            return Unary(_UNARY_OPS[key], self.expr(fields["arg"], (*at, "arg"), sub))
        if key in ("&&", "||") or key in _BINARY_OPS:
            fields = _fields(body, at, ("left", "right"))
            left = self.expr(fields["left"], (*at, "left"), sub)
            right = self.expr(fields["right"], (*at, "right"), sub)
            if key == "&&":
                return And((left, right))  # a left-nested chain flattens into one node
            if key == "||":
                return Or((left, right))
            op = _BINARY_OPS[key]
            if op in _ARITH_OPS:
                return Arith((left, right), (op,))
            return Binary(op, left, right)
        if key == "if-then-else":
            fields = _fields(body, at, ("if", "then", "else"))
            return If(*(self.expr(fields[k], (*at, k), sub) for k in ("if", "then", "else")))
        if key == ".":
            fields = _fields(body, at, ("left", "attr"))
            return GetAttr(self.expr(fields["left"], (*at, "left"), sub), _str(fields, "attr", at))
        if key == "has":
            return self.has(body, at, sub)
        if key == "like":
            fields = _fields(body, at, ("left", "pattern"))
            inner = self.expr(fields["left"], (*at, "left"), sub)
            return Like(inner, _pattern(fields["pattern"], (*at, "pattern")))
        if key == "is":
            fields = _fields(body, at, ("left", "entity_type"), optional=("in",))
            inner = self.expr(fields["left"], (*at, "left"), sub)
            entity_type = self.type_name(fields["entity_type"], (*at, "entity_type"))
            target = self.expr(fields["in"], (*at, "in"), sub) if "in" in fields else None
            return Is(inner, entity_type, target)
        if key == "isEmpty":
            fields = _fields(body, at, ("arg",))
            return MethodCall(self.expr(fields["arg"], (*at, "arg"), sub), "isEmpty", ())
        if key in _SET_METHODS:
            fields = _fields(body, at, ("left", "right"))
            receiver = self.expr(fields["left"], (*at, "left"), sub)
            return MethodCall(receiver, key, (self.expr(fields["right"], (*at, "right"), sub),))
        if key == "Set":
            if not isinstance(body, list):
                _fail(at, f"expected an array, got {_kind(body)}")
            return SetLit(tuple(self.expr(x, (*at, i), sub) for i, x in enumerate(body)))
        if key == "Record":
            if not isinstance(body, dict):
                _fail(at, f"expected an object, got {_kind(body)}")
            return RecordLit(tuple((k, self.expr(v, (*at, k), sub)) for k, v in body.items()))
        return self.call(key, body, at, sub)

    def has(self, body: Any, at: Path, depth: int) -> Expr:
        fields = _fields(body, at, ("left", "attr"))
        inner = self.expr(fields["left"], (*at, "left"), depth)
        attr = fields["attr"]
        if isinstance(attr, str):
            return Has(inner, (attr,))
        if not (isinstance(attr, list) and attr and all(isinstance(a, str) for a in attr)):
            _fail(
                (*at, "attr"),
                f"expected a string or a non-empty array of strings, got {_kind(attr)}",
            )
        if all(_is_ident(a) for a in attr):
            return Has(inner, tuple(attr))
        # Not writable as a dotted path: the chain `e has a && e.a has b ...` it stands for.
        out: Expr = Has(inner, (attr[0],))
        base = inner
        for prev, name in pairwise(attr):
            base = GetAttr(base, prev)
            out = And((out, Has(base, (name,))))
        return out

    def call(self, name: str, body: Any, at: Path, depth: int) -> Expr:
        is_method = name in EXT_METHODS or (not self.strict and name in DIALECT_METHODS)
        if name not in EXT_FUNCTIONS and not is_method:
            help = None
            if name in DIALECT_METHODS:
                help = f"`{name}` is a cedarlite extension, rejected in strict mode"
            elif name in BUILTIN_METHODS:
                help = f'write `{name}` as {{"{name}": {{"left": ..., "right": ...}}}}'
            _fail(at[:-1], f"unknown operator or function `{name}`", help or _did_you_mean(name))
        if not isinstance(body, list):
            _fail(at, f"expected an array of arguments, got {_kind(body)}")
        args = tuple(self.expr(x, (*at, i), depth) for i, x in enumerate(body))
        if not is_method:
            return Call(name, args)
        if not args:
            _fail(at, f"method `{name}` needs its receiver as the first argument")
        return MethodCall(args[0], name, args[1:])

    def value(self, obj: Any, path: Path, depth: int) -> Expr:
        """A ``Value``: Cedar's JSON value format as a literal expression."""
        if depth > MAX_NESTING:
            _fail(path, f"expression is nested too deeply (more than {MAX_NESTING} levels)")
        cls = obj.__class__
        if cls is bool or cls is str:
            return Lit(obj)
        if cls is int:
            if not I64_MIN <= obj <= I64_MAX:
                _fail(path, f"integer `{obj}` does not fit in 64 bits")
            return Lit(obj)
        if cls is list:
            return SetLit(tuple(self.value(x, (*path, i), depth + 1) for i, x in enumerate(obj)))
        if cls is dict:
            if set(obj) == {"__entity"}:
                return Lit(self.uid(obj, path))
            if set(obj) == {"__extn"}:
                return self.extension_value(obj["__extn"], (*path, "__extn"), depth)
            return RecordLit(
                tuple((k, self.value(v, (*path, k), depth + 1)) for k, v in obj.items())
            )
        if obj is None:
            _fail(path, "JSON `null` is not a Cedar value")
        if cls is float:
            _fail(path, f"`{obj}` is not an integer; Cedar has no floating point")
        _fail(path, f"expected a Cedar value, got {_kind(obj)}")

    def extension_value(self, obj: Any, path: Path, depth: int) -> Expr:
        if not isinstance(obj, dict):
            _fail(path, f'expected `{{"fn": ..., "arg": ...}}`, got {_kind(obj)}')
        _keys(obj, path, ("fn", "arg", "args"), "extension value", required=("fn",))
        fn = obj["fn"]
        if not isinstance(fn, str) or fn not in EXT_FUNCTIONS:
            _fail((*path, "fn"), f"unknown extension function `{_preview(fn)}`", _did_you_mean(fn))
        if "args" in obj:
            if not isinstance(obj["args"], list):
                _fail((*path, "args"), f"expected an array, got {_kind(obj['args'])}")
            args = [self.value(a, (*path, "args", i), depth + 1) for i, a in enumerate(obj["args"])]
        elif "arg" in obj:
            args = [self.value(obj["arg"], (*path, "arg"), depth + 1)]
        else:
            _fail(path, "an extension value needs `arg` or `args`")
        return Call(fn, tuple(args))


def _fields(
    body: Any, path: Path, required: tuple[str, ...], optional: tuple[str, ...] = ()
) -> dict[str, Any]:
    if not isinstance(body, dict):
        _fail(path, f"expected an object with {_names(required)}, got {_kind(body)}")
    _keys(body, path, required + optional, "operator", required=required)
    return body


def _keys(
    obj: dict[str, Any],
    path: Path,
    allowed: Sequence[str],
    what: str,
    required: Sequence[str] = (),
) -> None:
    for key in obj:
        if key not in allowed:
            _fail(
                (*path, key),
                f"unknown key `{key}` in {what}; expected {_names(allowed)}",
                _did_you_mean(key, allowed),
            )
    for key in required:
        if key not in obj:
            _fail(path, f"{what} is missing `{key}`")


def _str(fields: Mapping[str, Any], key: str, path: Path) -> str:
    value = fields[key]
    if not isinstance(value, str):
        _fail((*path, key), f"expected a string, got {_kind(value)}")
    return value


def _pattern(obj: Any, path: Path) -> tuple[PatternElem, ...]:
    if not isinstance(obj, list):
        _fail(path, f"expected an array of pattern elements, got {_kind(obj)}")
    out: list[PatternElem] = []
    run: list[str] = []  # the literal text since the last wildcard (joined once: linear)
    for i, el in enumerate(obj):
        if el == "Wildcard":
            if run:
                out.append("".join(run))
                run.clear()
            out.append(WILDCARD)
        elif isinstance(el, dict) and set(el) == {"Literal"} and isinstance(el["Literal"], str):
            if el["Literal"]:
                run.append(el["Literal"])
        else:
            _fail(
                (*path, i), f'expected `"Wildcard"` or `{{"Literal": "..."}}`, got {_describe(el)}'
            )
    if run:
        out.append("".join(run))
    return tuple(out)


def _is_ident(name: str) -> bool:
    return is_valid_ident(name) and name != "__cedar"


def _names(keys: Sequence[str]) -> str:
    return ", ".join(f"`{k}`" for k in keys)


def _did_you_mean(name: Any, candidates: Sequence[str] | None = None) -> str | None:
    # lazy on purpose: only a mistake needs it (the JSON locator, suggestions)
    import difflib

    if not isinstance(name, str):
        return None
    pool = (
        list(candidates) if candidates is not None else [*_EXPR_KEYS, *EXT_FUNCTIONS, *EXT_METHODS]
    )
    close = difflib.get_close_matches(name, pool, n=1)
    return f"did you mean `{close[0]}`?" if close else None


def _preview(obj: Any) -> str:
    return obj if isinstance(obj, str) and len(obj) <= 60 else preview(obj)


def _kind(obj: Any) -> str:
    return json_kind(obj)


def _describe(obj: Any) -> str:
    if isinstance(obj, dict):
        return "an object with keys " + _names(list(obj)[:5]) if obj else "an empty object"
    return _kind(obj)


# ---------------------------------------------------------------------------------------------
# Locating a JSON path in the text it was decoded from


def _locate(text: str, path: Path) -> Span | None:
    """The span of the deepest value on ``path`` that ``text`` holds (errors only)."""
    for n in range(len(path), -1, -1):
        span = json_span(text, path[:n])
        if span is not None:
            return span
    return None
