"""Compile an OpenClaw tools configuration and a catalog into Cedar policies.

The pipeline of docs/tool-policy.md §5-§8 ("each step can only remove") is deny-overrides: one
blanket ``permit`` and, per step and rule, annotated ``forbid`` policies. Every forbid carries
``@id`` (a readable name), ``@layer`` (the step label of docs/tool-policy.md §5.2, or
``plugins.optional``, ``plugins.name-conflict``, ``owner-only``, ``toolsEnabled``) and the
configured entries it came from.

* A step that depends on the run is conditioned on the request: the agent is the principal
  (``principal == Agent::"coder"``), the rest is in the context (``context.provider``,
  ``context.providerModel``, ``context.channel``, ``context.groupId``, ``context.sandboxed``,
  ``context.senderIsOwner``, ``context.subagentDepth``, ``context.toolsEnabled``).
* Entries are expanded against the catalog when compiling: a core group is its group action
  (``Action::"group:fs"``), a plugin id its plugin group (``Action::"plugin:lobster"``), a name
  its action, a glob the actions of the catalog it matches, ``*`` no constraint at all.
* What a plugin entry means can depend on the run (docs/tool-policy.md §6.3 builds plugin groups
  from the tools
  that *entered* the pipeline, which optional loading and owner-only removal decide); such
  entries compile to conditions on the context, folded away whenever they are constant.

:func:`compile_config` returns a :class:`ToolPolicySet`, a :class:`~cedarlite.PolicySet` that also
records the catalog it was compiled against and the compilation plan (which policy belongs to
which step, and the expression of every entry) used by ``explain`` and the diagnostics.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..data.values import EntityUID
from ..lang.ast import (
    Binary,
    BinOp,
    Condition,
    ConditionKind,
    Effect,
    Expr,
    Policy,
    Scope,
    ScopeOp,
    SetLit,
    Var,
    Variable,
)
from ..policyset import PolicySet
from .catalog import (
    CORE_GROUPS,
    GROUP_OWNER_ONLY,
    GROUP_PLUGINS,
    OWNER_ONLY_TOOLS,
    ToolCatalog,
    ToolInfo,
    action_uid,
    agent_uid,
    group_uid,
    guard_depth,
    plugin_uid,
)
from .config import ToolsConfig
from .expr import (
    ACTION,
    FALSE,
    TRUE,
    action_in,
    and_,
    ctx,
    eq,
    is_false,
    is_group,
    is_true,
    lit,
    not_,
    or_,
    principal_not_in,
    specialize,
)
from .lint import load_config
from .names import glob_match, js_trim, norm
from .steps import Variant, build_variants

# ---------------------------------------------------------------------------------------------
# Layers, in pipeline order

LAYER_ID_CONFLICT = "plugins.id-conflict"
LAYER_OPTIONAL = "plugins.optional"
LAYER_COLLISION = "plugins.name-conflict"
LAYER_OWNER = "owner-only"
LAYER_TOOLS_ENABLED = "toolsEnabled"

#: Rank of the layers that are not numbered steps (steps 1-9 rank 10-90).
_RANKS = {
    LAYER_ID_CONFLICT: 1, LAYER_OPTIONAL: 2, LAYER_COLLISION: 3, LAYER_OWNER: 4,
    LAYER_TOOLS_ENABLED: 100,
}  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Entries → what they match (docs/tool-policy.md)


@dataclass(frozen=True, slots=True)
class Unit:
    """One thing an entry matches, under a condition on the run.

    ``kind``: ``all`` (``*``), ``name`` (one normalized name), ``group`` (a core group key),
    ``glob``, ``plugin`` (a plugin group whose tools all enter the pipeline) or ``plugins``
    (``group:plugins``, likewise); ``names`` are the tool names of a plugin unit.
    """

    cond: Expr
    kind: str
    text: str
    names: frozenset[str] = frozenset()

    def contains(self, name: str) -> bool:
        """Whether the normalized name ``name`` is matched (used for ``write``)."""
        match self.kind:
            case "all":
                return True
            case "name":
                return name == self.text
            case "group":
                return name in CORE_GROUPS[self.text]
            case "glob":
                return glob_match(self.text, name)
        return name in self.names

    def targets(self, catalog: ToolCatalog) -> tuple[EntityUID, ...] | None:
        """The actions matched (``None``: every action)."""
        match self.kind:
            case "all":
                return None
            case "name":
                return (action_uid(self.text),)
            case "group":
                return (group_uid(self.text),)
            case "glob":
                return tuple(action_uid(n) for n in catalog.names if glob_match(self.text, n))
            case "plugin":
                return (plugin_uid(self.text),)
        return (group_uid(GROUP_PLUGINS),)

    def relevant(self, catalog: ToolCatalog) -> bool:
        """Whether some tool of the catalog can be matched."""
        if self.kind in ("all", "plugin", "plugins"):
            return True
        return any(self.contains(n) for n in catalog.names)


@dataclass(frozen=True, slots=True)
class Expansion:
    """A list of entries compiled: its units, per entry, and when it is non-empty."""

    entries: tuple[tuple[Any, tuple[Unit, ...]], ...]
    nonempty: Expr

    @property
    def units(self) -> tuple[Unit, ...]:
        """Every unit of every entry."""
        return tuple(u for _, units in self.entries for u in units)


def _plain(name: str) -> bool:
    return bool(name) and "*" not in name and name not in CORE_GROUPS


class _Expander:
    """Expands entries against a catalog, given when each tool enters the pipeline."""

    def __init__(
        self,
        catalog: ToolCatalog,
        enters: Mapping[int, Expr],
        principal: str | None = None,
        excluded: Sequence[str] = (),
    ) -> None:
        self.catalog = catalog
        self.enters = (
            {i: specialize(e, principal, excluded) for i, e in enters.items()}
            if principal is not None or excluded
            else enters
        )

    def expand(self, entries: Sequence[Any]) -> Expansion:
        out = []
        nonempty: list[Expr] = []
        for entry in entries:
            text = norm(entry)
            if text == GROUP_PLUGINS and self.catalog.plugin_tools:
                units, ne = self._members("plugins", text, self.catalog.plugin_tools)
            elif text in self.catalog.plugin_groups:
                units, ne = self._members("plugin", text, self.catalog.plugin_groups[text])
            else:
                units = self._literal(text, TRUE)
                ne = TRUE if units else FALSE
            out.append((entry, tuple(units)))
            nonempty.append(ne)
        return Expansion(tuple(out), or_(*nonempty))

    def _members(self, kind: str, key: str, members: Sequence[ToolInfo]) -> tuple[list[Unit], Expr]:
        enters = [self.enters[t.index] for t in members]
        names = [t.normalized for t in members]
        if all(is_true(e) for e in enters) and all(_plain(n) for n in names):
            return [Unit(TRUE, kind, key, frozenset(names))], TRUE
        entered = or_(*enters)
        units = [
            u for t, e in zip(members, enters, strict=True) for u in self._literal(t.normalized, e)
        ]
        units += self._literal(key, not_(entered))
        if all(names):
            nonempty = TRUE
        else:
            named = [e for n, e in zip(names, enters, strict=True) if n]
            nonempty = or_(*named, not_(entered))
        return units, nonempty

    @staticmethod
    def _literal(text: str, cond: Expr) -> list[Unit]:
        name = norm(text)
        if not name or is_false(cond):
            return []
        if name in CORE_GROUPS:
            return [Unit(cond, "group", name)]
        if name == "*":
            return [Unit(cond, "all", name)]
        return [Unit(cond, "glob" if "*" in name else "name", name)]


@dataclass(frozen=True, slots=True)
class _Match:
    """What a list matches: ``every``, or static actions plus conditional parts."""

    every: bool
    static: tuple[EntityUID, ...]
    parts: tuple[Expr, ...]

    def expr(self) -> Expr:
        if self.every:
            return TRUE
        return or_(action_in(self.static) if self.static else FALSE, *self.parts)


def _match(units: Iterable[Unit], catalog: ToolCatalog, with_patch_link: bool) -> _Match:
    """The actions matched by ``units``; with the ``write`` → ``apply_patch`` link of
    docs/tool-policy.md §8."""
    units = list(units)
    static: list[EntityUID] = []
    parts: list[Expr] = []
    for u in units:
        targets = u.targets(catalog)
        if is_true(u.cond):
            if targets is None:
                return _Match(True, (), ())
            static.extend(targets)
        elif u.relevant(catalog):
            parts.append(u.cond if targets is None else and_(u.cond, action_in(targets)))
    if with_patch_link:
        link = or_(*(u.cond for u in units if u.contains("write")))
        static_patch = any(is_true(u.cond) and u.contains("apply_patch") for u in units)
        if is_true(link):
            if not static_patch:
                static.append(action_uid("apply_patch"))
        elif not is_false(link):
            parts.append(and_(link, eq(ACTION, lit(action_uid("apply_patch")))))
    return _Match(False, tuple(dict.fromkeys(static)), tuple(parts))


# ---------------------------------------------------------------------------------------------
# The compiled policy set


@dataclass(frozen=True, slots=True)
class CompiledStep:
    """A compiled :class:`Variant`: its Cedar policy ids and the expression of every entry.

    ``allow_entries``/``deny_entries`` pair each configured entry with the Cedar condition under
    which it matches the request's action (used by ``explain``).
    """

    variant: Variant
    policy_ids: tuple[str, ...]
    allow_entries: tuple[tuple[Any, Expr], ...] = ()
    deny_entries: tuple[tuple[Any, Expr], ...] = ()


@dataclass(frozen=True)
class CompiledPlan:
    """How a :class:`ToolPolicySet` was built: steps, layers and the catalog."""

    catalog: ToolCatalog
    config: ToolsConfig
    steps: tuple[CompiledStep, ...]
    layers: Mapping[str, tuple[int, str]]  # policy id -> (rank, layer label)
    enters: Mapping[int, Expr] = field(default_factory=dict)

    def layer_of(self, policy_id: str) -> tuple[int, str] | None:
        """``(rank, label)`` of a policy of the set (``None`` for the permit)."""
        return self.layers.get(policy_id)


class ToolPolicySet(PolicySet):
    """The Cedar policies of a tools configuration for one catalog.

    A :class:`~cedarlite.PolicySet` (evaluate it with :func:`cedarlite.is_authorized` against
    ``plan.catalog.entities``) that records :attr:`catalog_fingerprint` and the :attr:`plan`.
    ``to_cedar()`` gives readable Cedar that parses back to the same policies.
    """

    __slots__ = ("catalog_fingerprint", "plan")

    def __init__(self, policies: Iterable[Policy], plan: CompiledPlan) -> None:
        super().__init__(policies, source="<tools config>")
        self.plan = plan
        self.catalog_fingerprint = plan.catalog.fingerprint

    def __repr__(self) -> str:
        return f"<ToolPolicySet: {len(self)} policies for catalog {self.catalog_fingerprint}>"


class _Builder:
    def __init__(self) -> None:
        self.policies: list[Policy] = []
        self.layers: dict[str, tuple[int, str]] = {}
        self.names: set[str] = set()

    def add(
        self,
        effect: Effect,
        name: str,
        layer: str | None,
        rank: int,
        *,
        principal: str | None = None,
        action: tuple[EntityUID, ...] | None = None,
        resource: EntityUID | None = None,
        when: Expr = TRUE,
        unless: Expr = FALSE,
        notes: Mapping[str, str] | None = None,
        label: str | None = None,
    ) -> str | None:
        """Add one policy (folded: nothing when it can never apply).

        ``name`` becomes its ``@id`` (made unique), ``layer`` its ``@layer``; ``label`` (default:
        the layer) is what a removal by this policy is reported as.
        """
        if is_false(when) or is_true(unless):
            return None
        pid = f"policy{len(self.policies)}"
        unique = name
        n = 2
        while unique in self.names:
            unique = f"{name}#{n}"
            n += 1
        self.names.add(unique)
        annotations = {"id": unique}
        if layer is not None:
            annotations["layer"] = layer
        annotations.update(notes or {})
        conditions = []
        if not is_true(when):
            conditions.append(Condition(ConditionKind.WHEN, when))
        if not is_false(unless):
            conditions.append(Condition(ConditionKind.UNLESS, unless))
        self.policies.append(
            Policy(
                pid,
                effect,
                _scope(Var.PRINCIPAL, agent_uid(principal) if principal is not None else None),
                _action_scope(action),
                _scope(Var.RESOURCE, resource),
                tuple(conditions),
                annotations,
            )
        )
        if layer is not None:
            self.layers[pid] = (rank, label or layer)
        return pid


def _scope(var: Var, uid: EntityUID | None) -> Scope:
    """``principal == Agent::"a"`` / ``resource in Tool::"x"`` (calls are children of tools)."""
    if uid is None:
        return Scope(var)
    return Scope(var, ScopeOp.EQ if var is Var.PRINCIPAL else ScopeOp.IN, entity=uid)


def _action_scope(uids: tuple[EntityUID, ...] | None) -> Scope:
    if uids is None:
        return Scope(Var.ACTION)
    if len(uids) != 1:
        return Scope(Var.ACTION, ScopeOp.IN_SET, entities=uids)
    op = ScopeOp.IN if is_group(uids[0]) else ScopeOp.EQ
    return Scope(Var.ACTION, op, entity=uids[0])


def _entries_note(entries: Sequence[Any]) -> str:
    return ", ".join(e if isinstance(e, str) else repr(e) for e in entries)


def _source_keys(entries: Iterable[Any]) -> set[str]:
    """docs/tool-policy.md §6.2: string entries, trimmed, blanks dropped, normalized."""
    return {norm(e) for e in entries if isinstance(e, str) and js_trim(e)}


@guard_depth
def compile_config(
    config: Mapping[str, Any] | ToolsConfig | None,
    catalog: ToolCatalog,
) -> ToolPolicySet:
    """Compile a tools configuration (docs/tool-policy.md §4.1) for a catalog into Cedar policies.

    The result decides, for a request ``(Agent::"<id>", Action::"<tool>", Tool::"<name>")``
    with the run context, whether the tool is offered to the model: Allow keeps it, Deny removes
    it, and the forbids that fired name the layer that removed it.
    """
    model = config if isinstance(config, ToolsConfig) else load_config(config)[0]
    variants = build_variants(model)
    loads = _loads(catalog, variants)
    enters = _enters(catalog, loads)
    b = _Builder()
    b.add(Effect.PERMIT, "tools.permit", None, 0)
    _registration(b, catalog, loads)
    _owner_only(b, catalog)
    steps = [
        _compile_variant(b, v, _Expander(catalog, enters, v.principal, v.excluded), catalog)
        for v in variants
    ]
    b.add(
        Effect.FORBID, LAYER_TOOLS_ENABLED, LAYER_TOOLS_ENABLED, _RANKS[LAYER_TOOLS_ENABLED],
        unless=ctx("toolsEnabled"),
    )  # fmt: skip
    plan = CompiledPlan(catalog, model, tuple(steps), b.layers, enters)
    return ToolPolicySet(b.policies, plan)


def _loads(catalog: ToolCatalog, variants: Sequence[Variant]) -> dict[int, Expr]:
    """When each optional tool is loaded (docs/tool-policy.md §6.2 step 2): its name, its plugin id
    or ``group:plugins`` is an entry of an explicit allowlist that applies."""
    sources = [(v.applies, _source_keys(v.source_entries)) for v in variants]
    out: dict[int, Expr] = {}
    for t in catalog.registered:
        if t.optional:
            wanted = {t.normalized, norm(t.plugin_id), GROUP_PLUGINS} - {""}
            out[t.index] = or_(*(cond for cond, keys in sources if keys & wanted))
    return out


def _enters(catalog: ToolCatalog, loads: Mapping[int, Expr]) -> dict[int, Expr]:
    """When each registered tool enters the pipeline (registration and owner-only,
    docs/tool-policy.md §6.2, §7)."""
    out: dict[int, Expr] = {}
    for t in catalog.registered:
        loaded = loads.get(t.index, TRUE)
        taken = or_(TRUE if t.name_taken else FALSE, *(loads[i] for i in t.collides_with))
        owner = ctx("senderIsOwner") if t.owner_restricted else TRUE
        out[t.index] = and_(loaded, not_(taken), owner)
    return out


def _registration(b: _Builder, catalog: ToolCatalog, loads: Mapping[int, Expr]) -> None:
    for t in catalog.registered:
        if t.optional:
            b.add(
                Effect.FORBID, f"{LAYER_OPTIONAL}/{t.key}", LAYER_OPTIONAL, _RANKS[LAYER_OPTIONAL],
                resource=t.resource, unless=loads[t.index],
            )  # fmt: skip
    for t in catalog.registered:
        if t.collides_with or t.name_taken:
            taken = or_(TRUE if t.name_taken else FALSE, *(loads[i] for i in t.collides_with))
            b.add(
                Effect.FORBID, f"{LAYER_COLLISION}/{t.key}", LAYER_COLLISION,
                _RANKS[LAYER_COLLISION], resource=t.resource, when=taken,
            )  # fmt: skip


def _owner_only(b: _Builder, catalog: ToolCatalog) -> None:
    rank = _RANKS[LAYER_OWNER]
    b.add(
        Effect.FORBID, LAYER_OWNER, LAYER_OWNER, rank, action=(group_uid(GROUP_OWNER_ONLY),),
        unless=ctx("senderIsOwner"),
    )  # fmt: skip
    flagged = [
        t for t in catalog.registered if t.owner_only and t.normalized not in OWNER_ONLY_TOOLS
    ]
    if len(flagged) == 1:
        b.add(Effect.FORBID, f"{LAYER_OWNER}/flagged", LAYER_OWNER, rank,
              resource=flagged[0].resource, unless=ctx("senderIsOwner"))  # fmt: skip
    elif flagged:
        where = Binary(
            BinOp.IN, Variable(Var.RESOURCE), SetLit(tuple(lit(t.resource) for t in flagged))
        )
        b.add(Effect.FORBID, f"{LAYER_OWNER}/flagged", LAYER_OWNER, rank,
              when=where, unless=ctx("senderIsOwner"))  # fmt: skip


def _compile_variant(
    b: _Builder, v: Variant, expander: _Expander, catalog: ToolCatalog
) -> CompiledStep:
    """The forbids of one step variant: one per part of its deny list (its defaults, then the
    configured entries), one for its allowlist.

    Each forbid's ``@id`` is the configuration path that decides (``agents.coder.tools.deny``);
    its rank orders the deny parts before the allowlist, as the spec checks deny first.
    """
    rank = v.step * 10
    cond = and_(principal_not_in(v.excluded), v.condition)
    notes = {"profile": v.profile} if v.step <= 2 and isinstance(v.profile, str) else {}
    ids: list[str | None] = []
    deny_entries: list[tuple[Any, Expr]] = []
    allow_entries: tuple[tuple[Any, Expr], ...] = ()

    def add(label: str, order: int, entries: Sequence[Any], **parts: Any) -> None:
        note = {**notes, "entries": _entries_note(entries)}
        ids.append(
            b.add(Effect.FORBID, label, v.label, rank + order, principal=v.principal,
                  notes=note, label=label, **parts)
        )  # fmt: skip

    deny = v.policy.deny or ()
    parts = [
        (f"{v.deny_from} (default)", deny[: v.deny_defaults]),
        (v.deny_from, deny[v.deny_defaults :]),
    ]
    for order, (label, entries) in enumerate(p for p in parts if p[1]):
        exp = expander.expand(entries)
        deny_entries += [(e, _match(us, catalog, False).expr()) for e, us in exp.entries]
        m = _match(exp.units, catalog, True)
        if m.every:  # the whole step is a deny
            add(label, order, entries, when=cond)
        elif not m.parts and m.static:  # actions known at compile time: in the scope
            add(label, order, entries, action=m.static, when=cond)
        elif m.parts:
            add(label, order, entries, when=and_(cond, m.expr()))
    if v.policy.allow:
        exp = expander.expand(v.policy.allow)
        allow_entries = tuple((e, _match(us, catalog, False).expr()) for e, us in exp.entries)
        m = _match(exp.units, catalog, True)
        if not m.every:
            add(v.allow_from, 5, v.policy.allow, when=and_(cond, exp.nonempty), unless=m.expr())
    policy_ids = tuple(pid for pid in ids if pid is not None)
    return CompiledStep(v, policy_ids, allow_entries, tuple(deny_entries))
