"""PolicySet: an immutable, ordered collection of policies, templates and template links."""

from __future__ import annotations

import os
from _thread import allocate_lock  # threading.Lock, without importing threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from .data.request import parse_entity_uid
from .data.values import EntityUID
from .errors import CedarliteError, PolicySetError

if TYPE_CHECKING:
    from .lang.ast import Policy, Scope


T = TypeVar("T")


class PolicyOrigin(NamedTuple):
    """Where a policy was read from: the source name (a file) and the text holding it."""

    source: str | None
    text: str | None


class PolicySet:
    """An immutable set of policies in source order.

    Iterating yields every policy and template (templates are never evaluated themselves; their
    links are). Ids are unique. Derived forms (the compiled decision index) are cached on the
    instance, which is safe because it never changes: :meth:`link` and :meth:`merge` return new
    sets.

    Policy ids: a set parsed from one text (:meth:`from_str`, :meth:`from_file`) numbers its
    policies ``policy0``, ``policy1``, ... as Cedar does. A set read from several files or a
    directory (:meth:`from_files`, :meth:`from_dir`), or merged from such sets
    (:meth:`merge`), qualifies those positional ids with the file they come from:
    ``exec-commands.cedar:policy3``, so ids stay unique and do not change when another file
    changes. With ``id_annotations=True`` a policy's non-empty ``@id("...")`` annotation is its
    id instead (unqualified: such ids must be unique across all files).
    """

    __slots__ = (
        "__weakref__",
        "_cache",
        "_loaded",
        "_lock",
        "_origins",
        "_pending",
        "_positional",
        "source",
    )

    def __init__(
        self,
        policies: Iterable[Policy] = (),
        *,
        source: str | None = None,
        origins: Mapping[str, PolicyOrigin] | None = None,
    ) -> None:
        """A set of ``policies`` read from ``source``; ``origins`` gives each policy's own
        source and text instead (a set built from the policies of several files)."""
        self.source = source
        self._cache: dict[str, Any] = {}
        self._pending: tuple[str, bool] | None = None
        self._lock = allocate_lock()
        # Ids the parser assigned (`policy0`...): the ones `merge` qualifies with the source
        # (None: every policy and template of a set parsed from text).
        self._positional: frozenset[str] | None = frozenset()
        # Per-policy origin, for sets combined from several sources (None: all from `source`).
        self._origins = None if origins is None else MappingProxyType(dict(origins))
        self._loaded = self._index(tuple(policies))

    def _index(
        self, policies: tuple[Policy, ...]
    ) -> tuple[tuple[Policy, ...], Mapping[str, Policy]]:
        by_id: dict[str, Policy] = {}
        for p in policies:
            if p.id in by_id:
                raise PolicySetError(
                    f"duplicate policy id `{p.id}`", span=p.span, source=self.source
                )
            by_id[p.id] = p
        return policies, MappingProxyType(by_id)

    @classmethod
    def _deferred(cls, text: str, source: str | None, strict: bool) -> PolicySet:
        """A set whose policies are parsed from ``text`` on first access (used with a cached
        compiled form, which decides requests without the policies' syntax trees)."""
        ps = cls(source=source)
        ps._pending = (text, strict)
        ps._cache["text"] = text
        ps._positional = None
        return ps

    @property
    def _policies(self) -> tuple[Policy, ...]:
        return self._materialized()[0]

    @property
    def _by_id(self) -> Mapping[str, Policy]:
        return self._materialized()[1]

    def _materialized(self) -> tuple[tuple[Policy, ...], Mapping[str, Policy]]:
        if self._pending is not None:
            with self._lock:
                if self._pending is not None:
                    # lazy on purpose: a set loaded from the compile cache decides without it
                    # (test_layering)
                    from .lang.parse.shapes import parse_fast

                    text, strict = self._pending
                    self._loaded = self._index(tuple(parse_fast(text, self.source, strict=strict)))
                    self._pending = None
        return self._loaded

    # -- construction -----------------------------------------------------------------------

    @classmethod
    def from_str(
        cls,
        text: str,
        source: str | None = None,
        *,
        strict: bool = False,
        id_annotations: bool = False,
    ) -> PolicySet:
        """Parse Cedar policy text. Ids are ``policy0``, ``policy1``, ... by position.

        ``strict=True`` rejects cedarlite's dialect extras (``startsWith``/``endsWith``).
        ``id_annotations=True`` names each policy with a non-empty ``@id("...")`` by it.
        Raises :class:`~cedarlite.ParseError` (and :class:`~cedarlite.PolicySetError` for two
        policies with the same ``@id``).
        """
        # lazy on purpose: a set loaded from the compile cache decides without it (test_layering)
        from .lang.parse.shapes import parse_fast

        policies = parse_fast(text, source, strict=strict)
        positional = None
        if id_annotations:
            policies, positional = _named_by_annotation(policies, source, text)
        ps = cls(policies, source=source)
        ps._cache["text"] = text
        ps._positional = positional
        return ps

    @classmethod
    def from_file(
        cls,
        path: str | os.PathLike[str],
        *,
        strict: bool = False,
        cache_dir: str | os.PathLike[str] | bool | None = None,
        id_annotations: bool = False,
    ) -> PolicySet:
        """Parse a ``.cedar`` file (errors name the file).

        With ``cache_dir``, the compiled form is stored there, keyed by the file's content, and
        reused by later loads of the same text in any process (the policies themselves are then
        parsed only if something asks for them). ``cache_dir=True`` is the per-user default,
        ``$XDG_CACHE_HOME/cedarlite/policies`` (or ``~/.cache/cedarlite/policies``). The cache
        holds code, so the directory must be private: it is created with mode 0700 and, before
        every read, must belong to the current user and be writable by no one else, or a
        :class:`~cedarlite.errors.CacheError` is raised.
        """
        name = os.fspath(path)
        text = _read_policy_file(name)
        if cache_dir is None or cache_dir is False or id_annotations:
            return cls.from_str(text, name, strict=strict, id_annotations=id_annotations)
        # lazy on purpose: a set loaded from the compile cache decides without it (test_layering)
        from ._cache_dir import ensure_private, private_dir
        from .engine.compiler import compiled
        from .engine.compiler.cache import load_compiled, store_compiled

        directory = private_dir("policies") if cache_dir is True else ensure_private(cache_dir)
        index = load_compiled(directory, text, strict)
        if index is not None:
            ps = cls._deferred(text, name, strict)
            ps._cache["compiled"] = index
            return ps
        ps = cls.from_str(text, name, strict=strict)
        store_compiled(directory, text, strict, compiled(ps))
        return ps

    @classmethod
    def from_files(
        cls,
        paths: Iterable[str | os.PathLike[str]],
        *,
        strict: bool = False,
        id_annotations: bool = False,
    ) -> PolicySet:
        """Parse several ``.cedar`` files, or directories of them, into one set, in order.

        Positional ids are qualified with the file: its path as given, or for a file found in
        a directory, its path relative to that directory (``exec/commands.cedar:policy0``; see
        the class docs). Errors name the file, line and column they are in. Merging
        :meth:`from_file` of each file gives the same set.
        """
        parts: list[tuple[str, PolicySet]] = []
        for path in (os.fspath(p) for p in paths):
            files = _policy_files(path) if os.path.isdir(path) else [(path, path)]
            for label, name in files:
                ps = cls.from_file(name, strict=strict, id_annotations=id_annotations)
                parts.append((label, ps))
        if not parts:
            raise PolicySetError("no policy files given")
        return _combine(parts)

    @classmethod
    def from_dir(
        cls,
        directory: str | os.PathLike[str],
        *,
        strict: bool = False,
        id_annotations: bool = False,
    ) -> PolicySet:
        """Parse every ``*.cedar`` file under ``directory`` (subdirectories included, hidden
        ones and symbolic links to directories not), sorted by path.

        Positional ids are qualified with the file's path relative to ``directory``, written
        with ``/``: ``exec/commands.cedar:policy0``. A directory without policy files is an
        error (an empty set would deny everything without saying why).
        """
        root = os.fspath(directory)
        if not os.path.isdir(root):
            raise PolicySetError(f"`{root}` is not a directory", source=root)
        return cls.from_files([root], strict=strict, id_annotations=id_annotations)

    @classmethod
    def from_json(cls, data: Any, source: str | None = None, *, strict: bool = False) -> PolicySet:
        """Read Cedar's JSON policy format (EST): a policy set object ``{"staticPolicies",
        "templates", "templateLinks"}`` or a single policy object, as JSON text or decoded.

        Policy ids are the JSON object keys (a single policy is ``policy0``). Raises
        :class:`~cedarlite.ParseError` naming the JSON path (and line and column, for text).
        """
        # lazy on purpose: a set loaded from the compile cache decides without it (test_layering)
        from .lang.est import policy_set_from_json

        return policy_set_from_json(data, cls, source, strict=strict)

    def to_json(self) -> dict[str, Any]:
        """Cedar's JSON policy format (EST) of the set, as Rust's ``PolicySet::to_json`` writes
        it: ``{"templates", "staticPolicies", "templateLinks"}`` (``json.dumps`` it to save)."""
        # lazy on purpose: a set loaded from the compile cache decides without it (test_layering)
        from .lang.est import policy_set_to_json

        try:
            return policy_set_to_json(self)
        except RecursionError:
            raise PolicySetError("a policy is nested too deeply to write as JSON") from None

    # -- access --------------------------------------------------------------------------------

    @property
    def policies(self) -> tuple[Policy, ...]:
        """Every policy, template and linked policy, in order."""
        return self._policies

    @property
    def templates(self) -> tuple[Policy, ...]:
        """The templates (policies with slots)."""
        return tuple(p for p in self._policies if p.is_template)

    @property
    def active(self) -> tuple[Policy, ...]:
        """The policies that take part in decisions: static and linked, not templates."""
        cached = self._cache.get("active")
        if cached is None:
            cached = self._cache["active"] = tuple(p for p in self._policies if not p.is_template)
        return cached

    def derived(self, key: str, make: Callable[[PolicySet], T]) -> T:
        """``make(self)``, computed on first use and kept with the set (a set never changes):
        its compiled form (``"compiled"``, :func:`cedarlite.engine.compiler.compiled`), say."""
        value = self._cache.get(key)
        if value is None:
            value = self._cache[key] = make(self)
        return value

    @property
    def text(self) -> str | None:
        """The Cedar text the set was parsed from (None for sets built from policies)."""
        return self._cache.get("text")

    def origin(self, policy_id: str) -> PolicyOrigin:
        """The source name and text a policy was read from (``(None, None)`` when unknown);
        spans of the policy refer to that text."""
        origins = self._origins
        if origins is not None:
            found = origins.get(policy_id)
            return found if found is not None else PolicyOrigin(None, None)
        return PolicyOrigin(self.source, self.text)

    def spanned(self, policy_id: str) -> Policy:
        """The policy with spans on every node (large sets are parsed without inner spans).

        Re-parses the policy's own text when needed; the spans' lines and columns refer to the
        text it was read from (:meth:`origin`).
        """
        policy = self[policy_id]
        source, text = self.origin(policy_id)
        if text is None or policy.span is None or policy.template_id is not None:
            return policy
        start = policy.span.start
        # Pad so that lines and columns come out as in the original text.
        padded = "\n" * (policy.span.line - 1) + " " * (policy.span.column - 1)
        # lazy on purpose: a set loaded from the compile cache decides without it (test_layering)
        from .lang.parse import parse_policies

        (reparsed,) = parse_policies(padded + text[start : policy.span.end], source)
        return replace(reparsed, id=policy.id)

    def __iter__(self) -> Iterator[Policy]:
        return iter(self._policies)

    def __len__(self) -> int:
        return len(self._policies)

    def __getitem__(self, policy_id: str) -> Policy:
        try:
            return self._by_id[policy_id]
        except KeyError:
            raise KeyError(policy_id) from None

    def __contains__(self, policy_id: object) -> bool:
        return policy_id in self._by_id

    def get(self, policy_id: str) -> Policy | None:
        """The policy with this id, or ``None``."""
        return self._by_id.get(policy_id)

    def label(self, policy_id: str) -> str:
        """How reports name a policy: its ``@id`` annotation, as Cedar's CLI names policies.

        Ids stay positional (``policy0``, as cedarpy returns them); the label is for people.
        A policy without ``@id`` (or an unknown id) is labelled by its id; an ``@id`` shared
        by several policies is followed by the id (``exec.rule (policy3)``).
        """
        return self.labels.get(policy_id, policy_id)

    @property
    def labels(self) -> Mapping[str, str]:
        """:meth:`label` of every policy, by id (computed once per set)."""
        cached = self._cache.get("labels")
        if cached is None:
            names = {p.id: p.annotations.get("id") or p.id for p in self._policies}
            counts: dict[str, int] = {}
            for name in names.values():
                counts[name] = counts.get(name, 0) + 1
            cached = self._cache["labels"] = MappingProxyType(
                {
                    pid: name if counts[name] == 1 or name == pid else f"{name} ({pid})"
                    for pid, name in names.items()
                }
            )
        return cached

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PolicySet):
            return NotImplemented
        return self._policies == other._policies

    def __hash__(self) -> int:
        return hash(self._policies)

    def __repr__(self) -> str:
        return f"<PolicySet: {len(self._policies)} policies>"

    # -- derived sets ----------------------------------------------------------------------

    def link(
        self,
        template_id: str,
        new_id: str,
        values: Mapping[str, EntityUID | Mapping[str, str] | str],
    ) -> PolicySet:
        """A new set with template ``template_id`` linked as policy ``new_id``.

        ``values`` maps ``"?principal"``/``"?resource"`` to entity uids (``EntityUID``,
        ``{"type", "id"}`` or ``'Type::"id"'``); exactly the template's slots must be given.
        """
        template = self._by_id.get(template_id)
        if template is None:
            raise PolicySetError(f"no template with id `{template_id}`")
        if not template.is_template:
            raise PolicySetError(f"policy `{template_id}` is not a template (it has no slots)")
        if new_id in self._by_id:
            raise PolicySetError(f"duplicate policy id `{new_id}`")
        wanted = {s.value for s in template.slots}
        given = set(values)
        if given != wanted:
            missing = ", ".join(f"`{s}`" for s in sorted(wanted - given))
            extra = ", ".join(f"`{s}`" for s in sorted(given - wanted))
            detail = "; ".join(
                part
                for part in (missing and f"missing {missing}", extra and f"unexpected {extra}")
                if part
            )
            raise PolicySetError(f"cannot link template `{template_id}`: {detail}")
        links = {slot: _as_uid(value, slot) for slot, value in values.items()}
        linked = replace(
            template,
            id=new_id,
            principal=_fill(template.principal, links),
            resource=_fill(template.resource, links),
            template_id=template_id,
            links=links,
        )
        out = PolicySet((*self._policies, linked), source=self.source)
        out._positional = self._positional
        if self._origins is not None:
            out._origins = MappingProxyType({**self._origins, new_id: self.origin(template_id)})
        else:
            out._cache["text"] = self.text
        return out

    def merge(self, *others: PolicySet) -> PolicySet:
        """A new set with the policies of ``self`` and ``others``, in order.

        The positional ids (``policy0``...) of each set read from a named source are qualified
        with it, ``a.cedar:policy0``, as :meth:`from_files` does; other ids are kept. Raises
        :class:`~cedarlite.PolicySetError` if ids still collide (sets parsed without a source
        name: give one, ``PolicySet.from_str(text, source="name")``).
        """
        return _combine([(ps.source, ps) for ps in (self, *others)])

    def to_cedar(self) -> str:
        """Canonical Cedar text of the whole set (templates included, links not)."""
        # lazy on purpose: a set loaded from the compile cache decides without it (test_layering)
        from .lang.printer import print_policies

        return print_policies(p for p in self._policies if p.template_id is None)


def _read_policy_file(name: str) -> str:
    try:
        with open(name, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as err:
        raise PolicySetError(f"cannot read policy file: {err}", source=name) from None


def _policy_files(directory: str) -> list[tuple[str, str]]:
    """The ``*.cedar`` files under ``directory`` as ``(path relative to it with "/", path)``,
    sorted; hidden directories and symbolic links to directories are not entered."""
    found: list[tuple[str, str]] = []
    for here, dirs, files in os.walk(directory, onerror=_walk_error):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            if name.endswith(".cedar") and not name.startswith("."):
                path = os.path.join(here, name)
                rel = os.path.relpath(path, directory).replace(os.sep, "/")
                found.append((rel, path))
    if not found:
        raise PolicySetError(
            f"no `*.cedar` policy files in directory `{directory}`", source=directory
        )
    return sorted(found)


def _walk_error(err: OSError) -> None:
    raise PolicySetError(f"cannot read policy directory: {err}", source=err.filename) from None


def _named_by_annotation(
    policies: Sequence[Policy], source: str | None, text: str | None
) -> tuple[list[Policy], frozenset[str]]:
    """Policies renamed by their non-empty ``@id`` annotations, and the ids left positional."""
    out: list[Policy] = []
    positional: set[str] = set()
    seen: dict[str, Policy] = {}
    for p in policies:
        chosen = p.annotations.get("id")
        if chosen:
            p = replace(p, id=chosen)
        else:
            positional.add(p.id)
        first = seen.get(p.id)
        if first is not None:
            raise _duplicate(p, source, text, PolicyOrigin(source, text), first)
        seen[p.id] = p
        out.append(p)
    return out, frozenset(positional)


def _duplicate(
    policy: Policy, source: str | None, text: str | None, first_origin: PolicyOrigin, first: Policy
) -> PolicySetError:
    where = first_origin.source or "<input>"
    if first.span is not None:
        where += f":{first.span.line}:{first.span.column}"
    return PolicySetError(
        f"duplicate policy id `{policy.id}`",
        span=policy.span,
        text=text,
        source=source,
        help=f"the first policy with this id is at {where}",
    )


def _combine(parts: Sequence[tuple[str | None, PolicySet]]) -> PolicySet:
    """One set from several, each ``(label, set)``: positional ids of labelled sets become
    ``label:id`` (template links follow their template); every policy keeps its origin."""
    policies: list[Policy] = []
    origins: dict[str, PolicyOrigin] = {}
    firsts: dict[str, Policy] = {}
    for label, ps in parts:
        positional = ps._positional
        renamed: dict[str, str] = {}
        for p in ps:
            origin = ps.origin(p.id)
            if (
                label is not None
                and p.template_id is None
                and (positional is None or p.id in positional)
            ):
                renamed[p.id] = f"{label}:{p.id}"
            new_id = renamed.get(p.id, p.id)
            template_id = p.template_id
            if template_id is not None:
                template_id = renamed.get(template_id, template_id)
            if new_id != p.id or template_id != p.template_id:
                p = replace(p, id=new_id, template_id=template_id)
            first = firsts.get(p.id)
            if first is not None:
                raise _duplicate(p, origin.source, origin.text, origins[p.id], first)
            firsts[p.id] = p
            origins[p.id] = origin
            policies.append(p)
    out = PolicySet(policies)
    out._origins = MappingProxyType(origins)
    return out


def _as_uid(value: Any, slot: str) -> EntityUID:
    if isinstance(value, EntityUID):
        return value
    try:
        if isinstance(value, str):
            return parse_entity_uid(value)
        if (
            isinstance(value, Mapping)
            and isinstance(value.get("type"), str)
            and isinstance(value.get("id"), str)
        ):
            return EntityUID(value["type"], value["id"])
    except CedarliteError as err:
        raise PolicySetError(f"cannot link `{slot}`: {err.message}") from None
    raise PolicySetError(f"cannot link `{slot}`: expected an entity uid, got `{value!r}`")


def _fill(scope: Scope, links: Mapping[str, EntityUID]) -> Scope:
    from .lang.ast import ScopeOp, SlotId  # linking only: a set loaded from a cache has no AST

    slot = scope.slot
    if slot is None:
        return scope
    uid = links[slot.value]
    assert isinstance(slot, SlotId) and scope.op in (ScopeOp.EQ, ScopeOp.IN, ScopeOp.IS_IN)
    return replace(scope, entity=uid)
