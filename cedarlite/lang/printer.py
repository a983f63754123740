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

import re
from collections.abc import Iterable, Sequence

from ..data.values import EntityUID, quote_string
from ..errors import ParseError
from ..source import Span
from .ast import (
    WILDCARD,
    And,
    Arith,
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
    postorder,
)
from .parse import parse_policies

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


WIDTH = 80
"""Line width the formatter aims for (as Cedar's formatter); longer atoms are left whole."""


# A string literal (runs of plain characters between escapes) or a comment, possessive and
# with disjoint alternatives: linear.
_COMMENT = re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+"|//[^\n\r]*+')


def format_text(text: str, source: str | None = None, *, width: int = WIDTH) -> str:
    """Canonical layout of a policy file, keeping its comments.

    Comments between policies stay above the policy that follows them (and at the end of the
    file); a comment *inside* a policy has no place in the canonical layout, so it is a
    :class:`~cedarlite.ParseError` (pointing at it) rather than silently dropped.
    """
    policies = parse_policies(text, source)
    out: list[str] = []
    previous_end = 0
    for policy in policies:
        assert policy.span is not None  # INVARIANT: parsed policies carry their span
        inner = _comments(text, policy.span.start, policy.span.end)
        if inner:
            start, _ = inner[0]
            raise ParseError(
                "the formatter keeps comments between policies only; this one is inside a policy",
                span=Span.at(text, start, start + 2),
                text=text,
                source=source,
                help="move the comment above the policy",
            )
        leading = _comment_block(text, previous_end, policy.span.start)
        out.append(leading + print_policy(policy, width=width))
        previous_end = policy.span.end
    trailing = _comment_block(text, previous_end, len(text))
    if trailing:
        out.append(trailing.rstrip("\n"))
    return "\n\n".join(out) + "\n" if out else ""


def _comment_block(text: str, start: int, end: int) -> str:
    """The comments of ``text[start:end]``, each ending its line; a blank line between comment
    groups, or between the comments and what follows, is kept (as one)."""
    out = ""
    previous = None
    for pos, comment in _comments(text, start, end):
        if previous is not None and text.count("\n", previous, pos) > 1:
            out += "\n"
        out += comment + "\n"
        previous = pos
    if previous is not None and text.count("\n", previous, end) > 1 and end < len(text):
        out += "\n"
    return out


def _comments(text: str, start: int, end: int) -> list[tuple[int, str]]:
    """The ``//`` comments in ``text[start:end]`` (not those inside string literals)."""
    found = []
    for m in _COMMENT.finditer(text, start, end):
        if m.group().startswith("//"):
            found.append((m.start(), m.group().rstrip()))
    return found


def print_policies(policies: Iterable[Policy], *, width: int = WIDTH) -> str:
    """Cedar text for a sequence of policies, separated by blank lines ("" for none)."""
    texts = [print_policy(p, width=width) for p in policies]
    return "\n\n".join(texts) + "\n" if texts else ""


def print_policy(policy: Policy, *, width: int = WIDTH) -> str:
    """Cedar text for one policy (or template), wrapped to ``width`` where it can be."""
    lines = [f"@{k}({quote_string(v)})" if v else f"@{k}" for k, v in policy.annotations.items()]
    scopes = [
        _scope(policy.principal, width),
        _scope(policy.action, width),
        _scope(policy.resource, width),
    ]
    lines.append(f"{policy.effect.value} (")
    lines.append(",\n".join(f"  {s}" for s in scopes))
    lines.append(")")
    for cond in policy.conditions:
        lines.append(_condition(cond, width))
    return "\n".join(lines) + ";"


def _condition(cond: Condition, width: int) -> str:
    head = f"{cond.kind.value} {{ "
    texts = _Texts(cond.body)
    if len(head) + texts.length(cond.body, _IF) + 2 <= width:
        return f"{head}{texts.text(cond.body, _IF)} }}"
    return f"{cond.kind.value} {{\n  {_layout(texts, cond.body, _IF, 2, width, 0)}\n}}"


MAX_LAYOUT_DEPTH = 32
"""Nested ``&&``/``||`` chains are broken over lines this many levels deep, then kept flat."""


def _layout(texts: _Texts, e: Expr, needed: int, indent: int, width: int, depth: int) -> str:
    """``e`` as text starting at column ``indent``: flat if it fits, else broken at its
    top-level ``&&``/``||`` operands and set elements (continuation lines are indented)."""
    if indent + texts.length(e, needed) <= width or depth >= MAX_LAYOUT_DEPTH:
        return texts.text(e, needed)
    match e:
        case And(operands=operands) | Or(operands=operands):
            op, level = ("&&", _AND) if isinstance(e, And) else ("||", _OR)
            inner = indent if level >= needed else indent + 2
            parts = [_layout(texts, operands[0], level, inner, width, depth + 1)]
            parts += [_layout(texts, x, level + 1, inner, width, depth + 1) for x in operands[1:]]
            text = f" {op}\n{' ' * inner}".join(parts)
            if level < needed:
                return f"(\n{' ' * inner}{text}\n{' ' * indent})"
            return text
        case SetLit(elements=elements):
            return _wrap_list([texts.text(x, _IF) for x in elements], indent, width)
        case Binary(op=BinOp.IN, left=left, right=SetLit(elements=elements)) if needed <= _REL:
            head = f"{texts.text(left, _ADD)} in "
            return head + _wrap_list([texts.text(x, _IF) for x in elements], indent, width)
    return texts.text(e, needed)


def _wrap_list(items: list[str], indent: int, width: int) -> str:
    """``[a, b, ...]`` with the items filled on lines indented two more than ``indent``."""
    pad = " " * (indent + 2)
    lines: list[str] = []
    line = ""
    for i, item in enumerate(items):
        piece = item + ("," if i + 1 < len(items) else "")
        if line and len(pad) + len(line) + 1 + len(piece) > width:
            lines.append(line)
            line = piece
        else:
            line = f"{line} {piece}" if line else piece
    if line:
        lines.append(line)
    return "[\n" + "\n".join(pad + x for x in lines) + f"\n{' ' * indent}]"


def _target(entity: EntityUID | SlotId | None) -> str:
    if isinstance(entity, SlotId):
        return entity.value
    return str(entity)


def _scope(scope: Scope, width: int = WIDTH) -> str:
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
            flat = f"{var} in [{', '.join(str(e) for e in scope.entities)}]"
            if len(flat) + 3 <= width:
                return flat
            return f"{var} in " + _wrap_list([str(e) for e in scope.entities], 2, width)
    raise AssertionError(scope.op)  # pragma: no cover


def print_expr(expr: Expr) -> str:
    """Cedar text for an expression (any depth, in time linear in the text)."""
    return _Texts(expr).text(expr, _IF)


Part = str | tuple[Expr, int]
"""A piece of a node's text: literal text, or an operand printed at a binding level."""


class _Texts:
    """Prints the nodes of one tree without recursion, in time linear in the text.

    Each node is described once by its *parts* (literal text and operands with the binding
    level they need) and its own binding level; the flat length of every node is summed
    bottom-up, so a layout decision never prints a sub-tree to measure it, and text is
    emitted top-down on an explicit stack, parentheses added only where precedence requires.
    """

    def __init__(self, root: Expr) -> None:
        self._shape: dict[int, tuple[int, list[Part]]] = {}
        self._length: dict[int, int] = {}
        for node in postorder(root):
            level, parts = self._parts(node)
            self._shape[id(node)] = level, parts
            self._length[id(node)] = sum(
                len(p) if isinstance(p, str) else self.length(*p) for p in parts
            )

    def length(self, e: Expr, needed: int) -> int:
        """The length of :meth:`text` for a node of the tree."""
        own = self._length[id(e)]
        return own + 2 if self._shape[id(e)][0] < needed else own

    def text(self, e: Expr, needed: int) -> str:
        """The text of ``e`` (a node of the tree), parenthesized if it binds looser than
        ``needed``."""
        out: list[str] = []
        stack: list[Part] = [(e, needed)]
        while stack:
            part = stack.pop()
            if isinstance(part, str):
                out.append(part)
                continue
            node, wanted = part
            level, parts = self._shape[id(node)]
            if level < wanted:
                stack.append(")")
            stack.extend(reversed(parts))
            if level < wanted:
                stack.append("(")
        return "".join(out)

    def _parts(self, e: Expr) -> tuple[int, list[Part]]:
        """The binding level of ``e`` and its parts."""
        match e:
            case Lit(value=value):
                negative = value.__class__ is int and value < 0
                return (_UNARY if negative else _MEMBER), [_literal(value)]
            case Variable(var=var):
                return _MEMBER, [var.value]
            case Slot(slot=slot):
                return _MEMBER, [slot.value]
            case If(cond=c, then_=then_, else_=else_):
                return _IF, ["if ", (c, _IF), " then ", (then_, _IF), " else ", (else_, _IF)]
            case Or(operands=operands):
                return _OR, _joined(operands, " || ", _OR, _AND)
            case And(operands=operands):
                return _AND, _joined(operands, " && ", _AND, _REL)
            case Arith(operands=operands, ops=ops):
                level = _LEVEL[ops[0]]
                parts: list[Part] = [(operands[0], level)]
                for op, x in zip(ops, operands[1:], strict=True):
                    parts += [f" {op.value} ", (x, level + 1)]
                return level, parts
            case Binary(op=op, left=left, right=right):
                return _REL, [(left, _ADD), f" {op.value} ", (right, _ADD)]
            case Has(expr=inner, path=path):
                return _REL, [(inner, _ADD), f" has {_has_path(path)}"]
            case Like(expr=inner, pattern=pattern):
                return _REL, [(inner, _ADD), f" like {_pattern(pattern)}"]
            case Is(expr=inner, entity_type=type_name, in_expr=None):
                return _REL, [(inner, _ADD), f" is {type_name}"]
            case Is(expr=inner, entity_type=type_name, in_expr=Expr() as target):
                return _REL, [(inner, _ADD), f" is {type_name} in ", (target, _ADD)]
            case Unary(op=op, arg=arg):
                return _UNARY, _unary(op, arg)
            case GetAttr(expr=inner, attr=attr):
                access = f".{attr}" if _is_name(attr) else f"[{quote_string(attr)}]"
                return _MEMBER, [(inner, _MEMBER), access]
            case MethodCall(receiver=receiver, name=name, args=args):
                return _MEMBER, [(receiver, _MEMBER), f".{name}(", *_listed(args), ")"]
            case Call(name=name, args=args):
                return _MEMBER, [f"{name}(", *_listed(args), ")"]
            case SetLit(elements=elements):
                return _MEMBER, ["[", *_listed(elements), "]"]
            case RecordLit(entries=entries):
                record: list[Part] = ["{"]
                for i, (key, item) in enumerate(entries):
                    record += [", " if i else "", f"{_key(key)}: ", (item, _IF)]
                return _MEMBER, [*record, "}"]
        raise TypeError(f"not an expression node: {type(e).__name__}")


def _joined(operands: Sequence[Expr], sep: str, first: int, rest: int) -> list[Part]:
    """``a sep b sep c``: the first operand at level ``first``, the others at ``rest``."""
    parts: list[Part] = [(operands[0], first)]
    for x in operands[1:]:
        parts += [sep, (x, rest)]
    return parts


def _listed(items: Sequence[Expr]) -> list[Part]:
    """Comma-separated operands (call arguments, set elements), each at the loosest level."""
    parts: list[Part] = []
    for i, x in enumerate(items):
        parts += [", " if i else "", (x, _IF)]
    return parts


def _unary(op: UnaryOp, arg: Expr) -> list[Part]:
    """``!``/``-`` runs of at most four; a literal under ``-`` keeps its parentheses."""
    count = 1
    while isinstance(arg, Unary) and arg.op is op and count < 4:
        count += 1
        arg = arg.arg
    if op is UnaryOp.NEG and isinstance(arg, Lit) and arg.value.__class__ is int:
        return [op.value * count, f"({_literal(arg.value)})"]  # `-5` would be the literal -5
    if isinstance(arg, Unary):
        return [op.value * count, (arg, _MEMBER + 1)]  # `!-x`, five `!`: parenthesized
    return [op.value * count, (arg, _MEMBER)]


def _is_name(name: str) -> bool:
    """``name`` can be written bare after ``.``, as a record key or in a dotted ``has``."""
    return is_valid_ident(name) and name != "__cedar"


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
