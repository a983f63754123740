"""PolicySet: an immutable, ordered collection of policies, templates and template links."""

from __future__ import annotations

import os
from _thread import allocate_lock  # threading.Lock, without importing threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from .errors import CedarliteError, PolicySetError
from .request import parse_entity_uid
from .values import EntityUID

if TYPE_CHECKING:
    from .ast import Policy, Scope


class PolicySet:
    """An immutable set of policies in source order.

    Iterating yields every policy and template (templates are never evaluated themselves; their
    links are). Ids are unique. Derived forms (the compiled decision index) are cached on the
    instance, which is safe because it never changes: :meth:`link` and :meth:`merge` return new
    sets.
    """

    __slots__ = ("__weakref__", "_cache", "_loaded", "_lock", "_pending", "source")

    def __init__(self, policies: Iterable[Policy] = (), *, source: str | None = None) -> None:
        self.source = source
        self._cache: dict[str, Any] = {}
        self._pending: tuple[str, bool] | None = None
        self._lock = allocate_lock()
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
                    from ._shapes import parse_fast

                    text, strict = self._pending
                    self._loaded = self._index(tuple(parse_fast(text, self.source, strict=strict)))
                    self._pending = None
        return self._loaded

    # -- construction -----------------------------------------------------------------------

    @classmethod
    def from_str(cls, text: str, source: str | None = None, *, strict: bool = False) -> PolicySet:
        """Parse Cedar policy text. Ids are ``policy0``, ``policy1``, ... by position.

        ``strict=True`` rejects cedarlite's dialect extras (``startsWith``/``endsWith``).
        Raises :class:`~cedarlite.ParseError`.
        """
        from ._shapes import parse_fast

        ps = cls(parse_fast(text, source, strict=strict), source=source)
        ps._cache["text"] = text
        return ps

    @classmethod
    def from_file(
        cls,
        path: str | os.PathLike[str],
        *,
        strict: bool = False,
        cache_dir: str | os.PathLike[str] | bool | None = None,
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
        try:
            with open(name, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as err:
            raise PolicySetError(f"cannot read policy file: {err}", source=name) from None
        if cache_dir is None or cache_dir is False:
            return cls.from_str(text, name, strict=strict)
        from ._cache_dir import ensure_private, private_dir
        from .compiler import compiled
        from .compiler.cache import load_compiled, store_compiled

        directory = private_dir("policies") if cache_dir is True else ensure_private(cache_dir)
        index = load_compiled(directory, text, strict)
        if index is not None:
            ps = cls._deferred(text, name, strict)
            ps._cache["compiled"] = index
            return ps
        ps = cls.from_str(text, name, strict=strict)
        store_compiled(directory, text, strict, compiled(ps))
        return ps

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

    @property
    def text(self) -> str | None:
        """The Cedar text the set was parsed from (None for sets built from policies)."""
        return self._cache.get("text")

    def spanned(self, policy_id: str) -> Policy:
        """The policy with spans on every node (large sets are parsed without inner spans).

        Re-parses the policy's own text when needed; the spans' lines and columns refer to the
        text the set was parsed from.
        """
        policy = self[policy_id]
        text = self.text
        if text is None or policy.span is None or policy.template_id is not None:
            return policy
        start = policy.span.start
        # Pad so that lines and columns come out as in the original text.
        padded = "\n" * (policy.span.line - 1) + " " * (policy.span.column - 1)
        from .parser import parse_policies

        (reparsed,) = parse_policies(padded + text[start : policy.span.end], self.source)
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
        return PolicySet((*self._policies, linked), source=self.source)

    def merge(self, *others: PolicySet) -> PolicySet:
        """A new set with the policies of ``others`` appended (ids must stay unique)."""
        policies = list(self._policies)
        for other in others:
            policies.extend(other)
        return PolicySet(policies, source=self.source)

    def to_cedar(self) -> str:
        """Canonical Cedar text of the whole set (templates included, links not)."""
        from .printer import print_policies

        return print_policies(p for p in self._policies if p.template_id is None)


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
    from .ast import ScopeOp, SlotId  # linking only: a set loaded from a cache has no AST

    slot = scope.slot
    if slot is None:
        return scope
    uid = links[slot.value]
    assert isinstance(slot, SlotId) and scope.op in (ScopeOp.EQ, ScopeOp.IN, ScopeOp.IS_IN)
    return replace(scope, entity=uid)
