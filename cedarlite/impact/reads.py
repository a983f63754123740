"""Which call arguments a policy reads: the static analysis behind "undecidable from the log".

The decision log redacts secrets (``"[REDACTED]"`` in place of a value, or of a credential
inside a string). A replay decides the logged arguments, so a call is decided soundly only
when its new decision cannot depend on what was redacted. This module answers that from the
policies themselves, never by guessing values:

* the arguments reach Cedar as one record, read as ``resource.<path>`` or
  ``context.input.<path>`` (:mod:`cedarlite.tools.params`); :func:`argument_reads` collects,
  per policy, every attribute path of that record its conditions read: ``resource.command``
  reads ``("command",)``; ``resource has a.b`` reads ``("a", "b")``; using a record as a
  value (``context.input == {...}``, ``context`` itself) reads all of it. An attribute
  access whose target is not known statically (``(if c then resource else x).a``, a literal
  call entity) may read anything;
* a policy can only apply to a call if its action scope admits the call's action;
  :class:`ArgumentReads` unions the reads of those policies for one tool;
* a redacted value at a JSON pointer is visible to Cedar only if the tool's parameter schema
  gives every step a Cedar type (:func:`cedar_path`); inside an array it is the whole set.

A redacted path *conflicts* with a read path when one is a prefix of the other. Sound, and
deliberately coarse: a rule that reads ``resource.command`` makes every call whose command
holds a redacted token undecidable, even when the rule only looks at the command's start.

The same pass finds the top-level arguments a policy reads only as strings put to tests:
``resource.command like "git *"``, ``context.input.path == ".."`` (or ``!=``), and ``has``.
Such a policy sees of the argument only which tests it passes
(:class:`~cedarlite.impact.strings.StringTests`); a replay memoizes decisions by that.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .._glob import Segments, like_segments
from ..data.entities import Entities
from ..data.values import EntityUID
from ..lang.ast import (
    Binary,
    BinOp,
    Expr,
    GetAttr,
    Has,
    If,
    Like,
    Lit,
    MethodCall,
    Policy,
    RecordLit,
    ScopeOp,
    SetLit,
    Var,
    Variable,
    children,
)
from ..schema.types import RecordType, SetType
from ..tools.catalog import ToolCatalog, action_uid
from ..tools.params import CALL_NAMESPACE, cedar_type, parameters_of
from .strings import StringTests

AttrPath = tuple[str, ...]

_UNSET: Any = object()

# What an expression statically refers to (see _Walker.visit).
_RESOURCE = ("resource",)  # the call's resource entity (its attributes are the arguments)
_CONTEXT = ("context",)  # the context record (its `input` is the arguments)
_OTHER = ("other",)  # a value that is not, and does not contain, the arguments
_UNKNOWN = ("unknown",)  # may be the resource entity or hold the arguments
_ARGS = "args"  # ("args", *path): the arguments record at a path


class PolicyReads:
    """The argument paths one policy reads; ``everything`` when they cannot be bounded.

    ``tests``: the top-level arguments it reads only as strings put to ``like`` or equality
    tests (and ``has``), with the segments of those tests (see the module docstring)."""

    __slots__ = ("everything", "paths", "tests")

    def __init__(
        self,
        paths: Iterable[AttrPath] = (),
        everything: bool = False,
        tests: Mapping[str, frozenset[Segments]] | None = None,
    ) -> None:
        self.paths: frozenset[AttrPath] = frozenset(paths)
        self.everything = everything
        self.tests: Mapping[str, frozenset[Segments]] = tests or {}

    def conflicts(self, path: AttrPath) -> bool:
        """Whether reading these paths may observe the value at ``path``."""
        if self.everything:
            return True
        for read in self.paths:
            n = min(len(read), len(path))
            if read[:n] == path[:n]:
                return True
        return False

    def __repr__(self) -> str:
        return "<PolicyReads everything>" if self.everything else f"<PolicyReads {set(self.paths)}>"


def argument_reads(policy: Policy) -> PolicyReads:
    """The argument paths the conditions of ``policy`` read (scopes read no arguments)."""
    walker = _Walker()
    for condition in policy.conditions:
        walker.use(walker.visit(condition.body))
    tests = {
        name: frozenset(found) for name, found in walker.tests.items() if name not in walker.other
    }
    return PolicyReads(walker.paths, walker.everything, tests)


class _Walker:
    """One pass over a policy's conditions. Policies are trusted input nested at most 200
    levels (the parser's limit), so plain recursion is fine here."""

    def __init__(self) -> None:
        self.paths: set[AttrPath] = set()
        self.everything = False
        # Top-level arguments put to string tests (their segments), and read otherwise.
        self.tests: dict[str, set[Segments]] = {}
        self.other: set[str] = set()

    def use(self, ref: tuple[str, ...]) -> None:
        """``ref`` is used as a value: an arguments record or value is read whole."""
        if ref[:1] == (_ARGS,):
            self.paths.add(ref[1:])
        elif ref == _CONTEXT:
            self.paths.add(())

    def visit(self, e: Any) -> tuple[str, ...]:
        """What ``e`` refers to; every read below ``e`` is recorded."""
        match e:
            case Variable(var=Var.RESOURCE):
                return _RESOURCE
            case Variable(var=Var.CONTEXT):
                return _CONTEXT
            case Variable():
                return _OTHER
            case Lit(value=EntityUID() as uid) if uid.type.startswith(CALL_NAMESPACE + "::"):
                return _UNKNOWN  # a call entity named literally: its attributes are arguments
            case GetAttr(expr=base, attr=attr):
                return self._attr(self.visit(base), (attr,), has=False)
            case Has(expr=base, path=path):
                self._attr(self.visit(base), path, has=True)
                return _OTHER
            case Like(expr=target, pattern=pattern) if (name := _argument(target)) is not None:
                return self._test(name, like_segments(pattern))
            case Binary(op=BinOp.EQ | BinOp.NEQ, left=left, right=right) if (
                (name := _argument(left)) is not None
                and right.__class__ is Lit
                and right.value.__class__ is str
            ):
                return self._test(name, (right.value,))
            case Binary(op=BinOp.EQ | BinOp.NEQ, left=left, right=right) if (
                (name := _argument(right)) is not None
                and left.__class__ is Lit
                and left.value.__class__ is str
            ):
                return self._test(name, (left.value,))
            case If(cond=cond, then_=then_, else_=else_):
                self.use(self.visit(cond))
                return self._combine([then_, else_])
            case RecordLit() | SetLit():
                return self._combine(children(e))
            case MethodCall(receiver=Variable(var=Var.RESOURCE), name="getTag" | "hasTag"):
                for arg in e.args:  # a call entity has no tags, whatever its arguments
                    self.use(self.visit(arg))
                return _OTHER
            case _:
                for child in children(e):
                    self.use(self.visit(child))
                return _OTHER

    def _test(self, name: str, segments: Segments) -> tuple[str, ...]:
        """``resource.<name>`` (or ``context.input.<name>``) put to a string test: read."""
        self.paths.add((name,))
        self.tests.setdefault(name, set()).add(segments)
        return _OTHER

    def _combine(self, parts: Iterable[Any]) -> tuple[str, ...]:
        """A value made of ``parts`` (a branch of an ``if``, a record or set literal): each
        part is used; the whole may hold the arguments unless no part can."""
        refs = [self.visit(part) for part in parts]
        for ref in refs:
            self.use(ref)
        return _OTHER if all(r == _OTHER for r in refs) else _UNKNOWN

    def _attr(self, base: tuple[str, ...], path: AttrPath, *, has: bool) -> tuple[str, ...]:
        """``base.path`` (an attribute access, or the target of ``has``)."""
        if base == _RESOURCE:
            ref = (_ARGS, *path)
        elif base == _CONTEXT:
            if path[0] != "input":
                return _OTHER  # the run's attributes (agentId, channel, ...)
            ref = (_ARGS, *path[1:])
        elif base[:1] == (_ARGS,):
            ref = (*base, *path)
        elif base == _OTHER:
            return _OTHER
        else:
            self.everything = True
            return _UNKNOWN
        if has and len(ref) > 1:
            self.paths.add(ref[1:])
        if len(ref) > 2 or (len(ref) == 2 and not has):  # a value of the argument, not a test
            self.other.add(ref[1])
        # (`context has input` alone reads nothing: a call's context always has its input.)
        return ref


class ArgumentReads:
    """The argument reads of a compiled policy set, per tool of a catalog (computed once per
    tool, on first use)."""

    def __init__(
        self,
        policies: Iterable[Policy],
        labels: Mapping[str, str],
        catalog: ToolCatalog,
        entities: Entities,
    ) -> None:
        analysed = [(p, labels.get(p.id, p.id), argument_reads(p)) for p in policies]
        # Policies that read no argument never make a call undecidable.
        self._policies = [item for item in analysed if item[2].everything or item[2].paths]
        self._catalog = catalog
        self._entities = entities
        self._tools: dict[str, tuple[list[tuple[str, PolicyReads]], list[Any]]] = {}
        self._pointers: dict[tuple[str, str], tuple[str, ...]] = {}
        self._attributes: dict[str, frozenset[str] | None] = {}
        self._tests: dict[str, dict[str, StringTests]] = {}
        # Tools share tests (every file tool's `path`): one StringTests per set of tests.
        self._test_sets: dict[frozenset[Segments], StringTests] = {}

    def pointer_readers(self, tool: str, pointer: str) -> tuple[str, ...]:
        """The labels of the policies that may apply to a call of ``tool`` and read the value
        at ``pointer`` (a JSON pointer into the call's ``params``, ``/params/...``). Cached:
        a log redacts the same few arguments over and over."""
        key = (tool, pointer)
        found = self._pointers.get(key)
        if found is None:
            tokens = pointer_tokens(pointer)[1:]
            labels: dict[str, None] = {}
            for schema in self.schemas(tool):
                path = cedar_path(schema, tokens)
                if path is not None:
                    labels.update(dict.fromkeys(self.readers(tool, path)))
            found = tuple(labels)
            if len(pointer) <= 256:  # the cache is bounded in size as well as entries
                if len(self._pointers) >= 10_000:
                    self._pointers.clear()
                self._pointers[key] = found
        return found

    def readers(self, tool: str, path: AttrPath) -> list[str]:
        """The labels of the policies that may apply to a call of ``tool`` (a normalized name)
        and read the argument at ``path``."""
        reads, _ = self._tool(tool)
        return [label for label, r in reads if r.conflicts(path)]

    def attributes(self, tool: str) -> frozenset[str] | None:
        """The top-level arguments the policies that may apply to a call of ``tool`` (a
        normalized name) read, ``None`` when they may read any (a policy reads the record
        whole, or reads what it cannot be told apart from it). Cached per tool.

        INVARIANT: a call's Cedar decision cannot tell apart two argument records equal on
        these attributes (present with equal values, or absent in both)."""
        found = self._attributes.get(tool, _UNSET)
        if found is _UNSET:
            found = frozenset()
            for _, reads in self._tool(tool)[0]:
                if reads.everything or () in reads.paths:
                    found = None
                    break
                found |= {path[0] for path in reads.paths}
            self._attributes[tool] = found
        return found

    def _string_tests(self, tests: frozenset[Segments]) -> StringTests:
        found = self._test_sets.get(tests)
        if found is None:
            if len(self._test_sets) >= 10_000:
                self._test_sets.clear()
            found = self._test_sets[tests] = StringTests(tests)
        return found

    def string_tests(self, tool: str) -> dict[str, StringTests]:
        """The top-level arguments that every policy that may apply to a call of ``tool`` (a
        normalized name) and reads them reads only as strings put to tests, with those tests.
        Cached per tool.

        INVARIANT: a call's Cedar decision cannot tell apart two argument records equal on
        :meth:`attributes` but for string values of these that pass the same tests
        (:meth:`StringTests.key`)."""
        found = self._tests.get(tool)
        if found is None:
            segments: dict[str, set[Segments]] = {}
            refused: set[str] = set()
            for _, reads in self._tool(tool)[0]:
                if reads.everything or () in reads.paths:
                    segments.clear()  # no read key is made (see `attributes`)
                    break
                for path in reads.paths:
                    tested = reads.tests.get(path[0])
                    if tested is None:
                        refused.add(path[0])
                    else:
                        segments.setdefault(path[0], set()).update(tested)
            found = {
                name: self._string_tests(frozenset(tests))
                for name, tests in segments.items()
                if name not in refused
            }
            if len(tool) <= 256:
                if len(self._tests) >= 10_000:
                    self._tests.clear()
                self._tests[tool] = found
        return found

    def schemas(self, tool: str) -> list[Any]:
        """The parameter schemas of the catalog's tools of this normalized name."""
        return self._tool(tool)[1]

    def _tool(self, tool: str) -> tuple[list[tuple[str, PolicyReads]], list[Any]]:
        cached = self._tools.get(tool)
        if cached is None:
            action = action_uid(tool)
            entity = self._entities.get(action)
            ancestors = entity.ancestors if entity is not None else frozenset()
            reads = [(label, r) for p, label, r in self._policies if _admits(p, action, ancestors)]
            schemas = [parameters_of(t) for t in self._catalog.registered if t.normalized == tool]
            cached = (reads, schemas)
            if len(tool) <= 256:  # a log may name any number of tools, of any length
                if len(self._tools) >= 10_000:
                    self._tools.clear()
                self._tools[tool] = cached
        return cached


def _argument(e: Expr) -> str | None:
    """The name of the top-level argument ``e`` is (``resource.<name>`` or
    ``context.input.<name>``), else ``None``."""
    match e:
        case GetAttr(expr=Variable(var=Var.RESOURCE), attr=name):
            return name
        case GetAttr(expr=GetAttr(expr=Variable(var=Var.CONTEXT), attr="input"), attr=name):
            return name
    return None


def _admits(policy: Policy, action: EntityUID, ancestors: frozenset[EntityUID]) -> bool:
    """Whether the policy's action scope can hold for ``action``."""
    scope = policy.action
    if scope.op is ScopeOp.ANY:
        return True
    if scope.op is ScopeOp.EQ:
        return scope.entity == action
    if scope.op is ScopeOp.IN:
        return scope.entity == action or scope.entity in ancestors
    if scope.op is ScopeOp.IN_SET:
        return any(e == action or e in ancestors for e in scope.entities)
    return True  # an action scope of another shape: assume it may apply


def cedar_path(schema: Any, tokens: Iterable[str]) -> AttrPath | None:
    """The attribute path of the arguments record at a JSON pointer's tokens (into
    ``params``), or ``None`` when the value there is not part of the record (a parameter
    without a Cedar type, or none at all). A pointer into an array stops at the array: Cedar
    sees the set whole."""
    path: list[str] = []
    for token in tokens:
        t = cedar_type(schema)
        if isinstance(t, SetType):
            return tuple(path)
        if not isinstance(t, RecordType):
            # The top level has no typed parameter: nothing is visible. Deeper, the pointer
            # goes inside a scalar attribute (the value does not fit the schema): that one.
            return tuple(path) if path else None
        props = schema.get("properties")
        sub = props.get(token) if isinstance(props, Mapping) else None
        if sub is None or cedar_type(sub) is None:
            return None
        path.append(token)
        schema = sub
    return tuple(path)


def pointer_tokens(pointer: str) -> list[str]:
    """The tokens of an RFC 6901 JSON pointer (``/a~1b/c`` is ``["a/b", "c"]``)."""
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]]
