"""Compile an OpenClaw tools configuration and a catalog into Cedar policies.

The pipeline of spec §5-§8 ("each step can only remove") is deny-overrides: one blanket
``permit`` and, per step and rule, annotated ``forbid`` policies. Every forbid carries
``@id`` (a readable name), ``@layer`` (the step label of spec §5.2, or ``plugins.optional``,
``plugins.name-conflict``, ``owner-only``, ``toolsEnabled``) and the configured entries it came
from.

* A step that depends on the run is conditioned on the request: the agent is the principal
  (``principal == Agent::"coder"``), the rest is in the context (``context.provider``,
  ``context.providerModel``, ``context.channel``, ``context.groupId``, ``context.sandboxed``,
  ``context.senderIsOwner``, ``context.subagentDepth``, ``context.toolsEnabled``).
* Entries are expanded against the catalog when compiling: a core group is its group action
  (``Action::"group:fs"``), a plugin id its plugin group (``Action::"plugin:lobster"``), a name
  its action, a glob the actions of the catalog it matches, ``*`` no constraint at all.
* What a plugin entry means can depend on the run (spec §6.3 builds plugin groups from the tools
  that *entered* the pipeline, which optional loading and owner-only removal decide); such
  entries compile to conditions on the context, folded away whenever they are constant.

:func:`compile_config` returns a :class:`ToolPolicySet`, a :class:`~cedarlite.PolicySet` that also
records the catalog it was compiled against and the compilation plan (which policy belongs to
which step, and the expression of every entry) used by ``explain`` and the diagnostics.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

from .._jsonloc import json_path_text
from ..data.values import EntityUID
from ..lang.ast import (
    And,
    Binary,
    BinOp,
    Condition,
    ConditionKind,
    Effect,
    Expr,
    GetAttr,
    Lit,
    MethodCall,
    Or,
    Policy,
    Scope,
    ScopeOp,
    SetLit,
    Unary,
    UnaryOp,
    Var,
    Variable,
)
from ..policyset import PolicySet
from .catalog import (
    CORE_GROUPS,
    GROUP_OWNER_ONLY,
    GROUP_PLUGINS,
    OWNER_ONLY_TOOLS,
    PROFILES,
    SANDBOX_DEFAULT_ALLOW,
    SANDBOX_DEFAULT_DENY,
    SUBAGENT_ALWAYS_DENY,
    SUBAGENT_LEAF_DENY,
    ToolCatalog,
    ToolInfo,
    action_uid,
    agent_uid,
    group_uid,
    guard_depth,
    plugin_uid,
)
from .config import AgentTools, PolicyLists, ProviderEntry, ToolsConfig
from .lint import load_config
from .names import dedupe, expand, glob_match, js_trim, norm, norm_agent_id, pattern_of, trim_lower

# ---------------------------------------------------------------------------------------------
# Layers, in pipeline order

LAYER_ID_CONFLICT = "plugins.id-conflict"
LAYER_OPTIONAL = "plugins.optional"
LAYER_COLLISION = "plugins.name-conflict"
LAYER_OWNER = "owner-only"
LAYER_TOOLS_ENABLED = "toolsEnabled"

#: Step number → label template of spec §5.2 (``{agent}`` is the agent id).
STEP_LABELS: dict[int, str] = {
    1: "tools.profile",
    2: "tools.byProvider.profile",
    3: "tools.allow",
    4: "tools.byProvider.allow",
    5: "agents.{agent}.tools.allow",
    6: "agents.{agent}.tools.byProvider.allow",
    7: "group tools.allow",
    8: "sandbox tools.allow",
    9: "subagent tools.allow",
}

#: Rank of the layers that are not numbered steps (steps 1-9 rank 10-90).
_RANKS = {
    LAYER_ID_CONFLICT: 1, LAYER_OPTIONAL: 2, LAYER_COLLISION: 3, LAYER_OWNER: 4,
    LAYER_TOOLS_ENABLED: 100,
}  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Cedar expressions with constant folding

TRUE: Expr = Lit(True)
FALSE: Expr = Lit(False)
_CONTEXT = Variable(Var.CONTEXT)
_ACTION = Variable(Var.ACTION)
_PRINCIPAL = Variable(Var.PRINCIPAL)


def ctx(attr: str) -> Expr:
    """``context.<attr>``."""
    return GetAttr(_CONTEXT, attr)


def _lit(value: Any) -> Expr:
    return Lit(value)


def _is_true(e: Expr) -> bool:
    return isinstance(e, Lit) and e.value is True


def _is_false(e: Expr) -> bool:
    return isinstance(e, Lit) and e.value is False


def _chain(cls: type[And] | type[Or], parts: Sequence[Expr]) -> Expr:
    """One flat chain node (or the single part)."""
    return parts[0] if len(parts) == 1 else cls(tuple(parts))


def and_(*parts: Expr) -> Expr:
    """``a && b && ...`` with ``true`` dropped and ``false`` absorbing."""
    kept = []
    for p in parts:
        if _is_false(p):
            return FALSE
        if not _is_true(p) and p not in kept:
            kept.append(p)
    return _chain(And, kept) if kept else TRUE


def or_(*parts: Expr) -> Expr:
    """``a || b || ...`` with ``false`` dropped and ``true`` absorbing."""
    kept = []
    for p in parts:
        if _is_true(p):
            return TRUE
        if not _is_false(p) and p not in kept:
            kept.append(p)
    return _chain(Or, kept) if kept else FALSE


def not_(e: Expr) -> Expr:
    """``!e`` (constants folded, double negation removed)."""
    if _is_true(e):
        return FALSE
    if _is_false(e):
        return TRUE
    if isinstance(e, Unary) and e.op is UnaryOp.NOT:
        return e.arg
    return Unary(UnaryOp.NOT, e)


def eq(left: Expr, right: Expr) -> Expr:
    """``left == right``."""
    return Binary(BinOp.EQ, left, right)


def set_contains(values: Iterable[str], item: Expr) -> Expr:
    """``["a", "b"].contains(item)``; ``false`` for no values."""
    values = list(values)
    if not values:
        return FALSE
    return MethodCall(SetLit(tuple(_lit(v) for v in values)), "contains", (item,))


def _action_in(uids: Sequence[EntityUID]) -> Expr:
    if len(uids) == 1:
        op = BinOp.IN if _is_group(uids[0]) else BinOp.EQ
        return Binary(op, _ACTION, _lit(uids[0]))
    return Binary(BinOp.IN, _ACTION, SetLit(tuple(_lit(u) for u in uids)))


def _is_group(uid: EntityUID) -> bool:
    return uid.id.startswith(("group:", "plugin:"))


def principal_is(agent: str) -> Expr:
    """``principal == Agent::"<agent>"``."""
    return eq(_PRINCIPAL, _lit(agent_uid(agent)))


def principal_not_in(agents: Sequence[str]) -> Expr:
    """``!(principal in [Agent::"a", ...])``; ``true`` for no agents."""
    if not agents:
        return TRUE
    return not_(Binary(BinOp.IN, _PRINCIPAL, SetLit(tuple(_lit(agent_uid(a)) for a in agents))))


def specialize(e: Expr, principal: str | None, excluded: Sequence[str] = ()) -> Expr:
    """``e`` knowing the principal is ``Agent::"<principal>"`` (or is none of ``excluded``).

    Used inside a policy scoped to one agent: ``principal == Agent::"coder"`` becomes ``true``.
    """
    if principal is None and not excluded:
        return e
    match e:
        case Binary(
            op=BinOp.EQ, left=Variable(var=Var.PRINCIPAL), right=Lit(value=EntityUID() as u)
        ):
            if principal is not None:
                return TRUE if u == agent_uid(principal) else FALSE
            return FALSE if u in {agent_uid(a) for a in excluded} else e
        case Binary(op=BinOp.IN, left=Variable(var=Var.PRINCIPAL), right=SetLit(elements=elems)):
            uids = {x.value for x in elems if isinstance(x, Lit)}
            if principal is not None:
                return TRUE if agent_uid(principal) in uids else FALSE
            return FALSE if uids <= {agent_uid(a) for a in excluded} else e
        case Unary(op=UnaryOp.NOT, arg=arg):
            return not_(specialize(arg, principal, excluded))
        case And(operands=operands):
            return and_(*(specialize(x, principal, excluded) for x in operands))
        case Or(operands=operands):
            return or_(*(specialize(x, principal, excluded) for x in operands))
    return e


# -- context conditions of the steps -----------------------------------------------------------


def provider_lookup(
    by_provider: Mapping[str, ProviderEntry | None] | None,
) -> dict[str, ProviderEntry]:
    """Spec §5.5 step 2: keys trimmed and lower-cased, blanks ignored, the later key wins,
    ``null`` values absent."""
    out: dict[str, ProviderEntry | None] = {}
    for key, value in (by_provider or {}).items():
        k = trim_lower(key)
        if k:
            out.pop(k, None)
            out[k] = value
    return {k: v for k, v in out.items() if v is not None}


def provider_matches(keys: Sequence[str], key: str) -> Expr:
    """The byProvider entry ``key`` of a lookup with ``keys`` is the match (spec §5.5).

    ``context.providerModel`` is the model candidate (always containing ``/``, ``""`` without a
    model): the model-specific key beats the provider-wide key.
    """
    slash = [k for k in keys if "/" in k]
    by_model = eq(ctx("providerModel"), _lit(key)) if "/" in key else FALSE
    by_provider = and_(
        eq(ctx("provider"), _lit(key)), not_(set_contains(slash, ctx("providerModel")))
    )
    return or_(by_model, by_provider)


def provider_unmatched(keys: Sequence[str]) -> Expr:
    """No entry of a lookup with ``keys`` matches."""
    slash = [k for k in keys if "/" in k]
    return and_(
        not_(set_contains(keys, ctx("provider"))), not_(set_contains(slash, ctx("providerModel")))
    )


def provider_match_or_none(keys: Sequence[str], key: str | None) -> Expr:
    """:func:`provider_matches` for a key, :func:`provider_unmatched` for ``None``."""
    return provider_matches(keys, key) if key is not None else provider_unmatched(keys)


# ---------------------------------------------------------------------------------------------
# The step policies of a configuration (spec §5)


@dataclass(frozen=True, slots=True)
class StepPolicy:
    """``{allow?, deny?}`` of one step, as built by spec §5 (raw entries, ``None`` = not set)."""

    allow: tuple[Any, ...] | None = None
    deny: tuple[Any, ...] | None = None


@dataclass(frozen=True, slots=True)
class Variant:
    """One step policy and the runs it applies to.

    A step may have several variants (one per agent, byProvider key, channel group...); their
    conditions never overlap. ``principal`` restricts it to one agent, ``excluded`` leaves
    agents out, ``condition`` is on the context. ``base`` is the profile list before
    ``alsoAllow`` (steps 1 and 2), ``profile`` its name.

    ``allow_from``/``deny_from`` name the configuration that decided, as removal labels report
    it: the path of the list (``agents.coder.tools.deny``, ``tools.byProvider.openai.allow``),
    of the profile (``tools.profile``), or of a default (``tools.sandbox.tools.deny
    (default)``). The first ``deny_defaults`` deny entries are the step's default denies
    (sub-agents): they are labelled as defaults, the rest as ``deny_from``.
    """

    step: int
    label: str
    key: str
    policy: StepPolicy
    principal: str | None = None
    excluded: tuple[str, ...] = ()
    condition: Expr = TRUE
    profile: str | None = None
    base: tuple[str, ...] | None = None
    allow_from: str = ""
    deny_from: str = ""
    deny_defaults: int = 0

    @property
    def applies(self) -> Expr:
        """The whole applicability condition (principal and context)."""
        who = principal_is(self.principal) if self.principal is not None else TRUE
        return and_(who, principal_not_in(self.excluded), self.condition)

    @property
    def source_entries(self) -> tuple[Any, ...]:
        """The allow list that counts as an explicit allowlist (spec §6.2, §9)."""
        if self.step <= 2:
            return self.base or ()
        return self.policy.allow or ()

    @property
    def display_label(self) -> str:
        """The label with the profile name, as diagnostics print it (spec §5.2)."""
        if self.step <= 2 and self.profile is not None and js_trim(self.profile):
            return f"{self.label} ({self.profile})"
        return self.label


def widen(base: tuple[Any, ...] | None, extra: Sequence[Any] | None) -> tuple[Any, ...] | None:
    """Spec §5.3 ``widen``: a profile allow list plus ``alsoAllow`` (never creates one)."""
    if base is None or not extra:
        return base
    return tuple(dedupe([*base, *extra]))


def pick(lists: PolicyLists | None) -> StepPolicy | None:
    """Spec §5.4 ``pick``: allow/alsoAllow/deny into a step policy (``None``: no policy)."""
    if lists is None:
        return None
    allow, also, deny = lists.allow, lists.also_allow, lists.deny
    if allow is not None and not also:
        built: tuple[Any, ...] | None = tuple(allow)
    elif allow:
        built = tuple(dedupe([*allow, *also]))  # type: ignore[misc]
    elif also:
        built = tuple(dedupe(["*", *also]))
    else:
        built = None
    if built is None and deny is None:
        return None
    return StepPolicy(built, tuple(deny) if deny is not None else None)


def _profile_list(profile: Any) -> tuple[str, ...] | None:
    return PROFILES.get(profile) if isinstance(profile, str) else None


@dataclass(frozen=True, slots=True)
class _Agents:
    """The configured agents: normalized id → tools of the first entry with that id."""

    tools: Mapping[str, AgentTools]

    @classmethod
    def of(cls, config: ToolsConfig) -> _Agents:
        seen: dict[str, AgentTools | None] = {}
        entries = config.agents.entries if config.agents else None
        for entry in entries or ():
            if entry is None:
                continue
            agent = norm_agent_id(entry.id if isinstance(entry.id, str) else None)
            seen.setdefault(agent, entry.tools)
        return cls({a: t for a, t in seen.items() if t is not None})


def build_variants(config: ToolsConfig) -> list[Variant]:
    """Every step policy of a configuration with the condition under which it applies."""
    g = config.tools
    agents = _Agents.of(config).tools
    out: list[Variant] = []
    out += _profile_variants(g, agents)
    out += _provider_profile_variants(g, agents)
    if (p := pick(g)) is not None:
        out.append(Variant(3, STEP_LABELS[3], "", p, **lists_from("tools")))
    global_lookup = provider_lookup(g.by_provider if g else None)
    keys = list(global_lookup)
    for k, entry in global_lookup.items():
        if (p := pick(entry)) is not None:
            out.append(
                Variant(4, STEP_LABELS[4], k, p, condition=provider_matches(keys, k),
                        **lists_from(provider_path("tools", k)))
            )  # fmt: skip
    for agent, tools in agents.items():
        if (p := pick(tools)) is not None:
            out.append(
                Variant(5, STEP_LABELS[5].format(agent=agent), "", p, principal=agent,
                        **lists_from(agent_path(agent)))
            )  # fmt: skip
    for agent, tools in agents.items():
        lookup = provider_lookup(tools.by_provider)
        label = STEP_LABELS[6].format(agent=agent)
        for k, entry in lookup.items():
            if (p := pick(entry)) is not None:
                cond = provider_matches(list(lookup), k)
                out.append(
                    Variant(6, label, k, p, principal=agent, condition=cond,
                            **lists_from(provider_path(agent_path(agent), k)))
                )  # fmt: skip
    out += _group_variants(config)
    out += _sandbox_variants(g, agents)
    out += _subagent_variants(config)
    return out


def agent_path(agent: str) -> str:
    """``agents.<id>.tools``: an agent's tools section, named by agent id as the spec's labels
    name it (normalized ids need no quoting)."""
    return f"agents.{agent}.tools"


def provider_path(section: str, key: str) -> str:
    """``<section>.byProvider.<key>`` (a key that is not a plain name is quoted)."""
    return f"{section}.{json_path_text(('byProvider', key))}"


class Sources(TypedDict, total=False):
    """Removal labels of a :class:`Variant` (keyword arguments)."""

    allow_from: str
    deny_from: str
    deny_defaults: int


def lists_from(section: str) -> Sources:
    """The removal labels of a section's ``allow`` and ``deny`` lists."""
    return {"allow_from": f"{section}.allow", "deny_from": f"{section}.deny"}


def _per_agent(
    step: int,
    agents: Mapping[str, AgentTools],
    build: Any,
    condition: Expr = TRUE,
) -> list[Variant]:
    """Variants of a step whose policy depends on the agent only: agents that differ from the
    default get their own variant, the default applies to everyone else."""
    default = build(None, None)
    special = {a: r for a, t in agents.items() if (r := build(a, t)) != default}
    out = []
    for agent, (policy, profile, base, labels) in special.items():
        if policy is not None:
            out.append(
                Variant(step, STEP_LABELS[step], agent, policy, principal=agent,
                        condition=condition, profile=profile, base=base, **labels)
            )  # fmt: skip
    policy, profile, base, labels = default
    if policy is not None:
        out.append(
            Variant(step, STEP_LABELS[step], "", policy, excluded=tuple(special),
                    condition=condition, profile=profile, base=base, **labels)
        )  # fmt: skip
    return out


def _profile_variants(g: Any, agents: Mapping[str, AgentTools]) -> list[Variant]:
    def build(agent: str | None, tools: AgentTools | None) -> tuple[Any, ...]:
        own = agent is not None and tools is not None and tools.profile is not None
        section = agent_path(agent) if own else "tools"  # type: ignore[arg-type]
        return (
            *_profile_step(
                _first_set(tools and tools.profile, g and g.profile),
                _first_set(tools and tools.also_allow, g and g.also_allow),
            ),
            Sources(allow_from=f"{section}.profile"),
        )

    return _per_agent(1, agents, build)


def _provider_profile(
    agent_entry: ProviderEntry | None, global_entry: ProviderEntry | None
) -> tuple[StepPolicy | None, Any, Any]:
    return _profile_step(
        _first_set(agent_entry and agent_entry.profile, global_entry and global_entry.profile),
        _first_set(
            agent_entry and agent_entry.also_allow, global_entry and global_entry.also_allow
        ),
    )


def _first_set(agent_value: Any, global_value: Any) -> Any:
    """The agent-level value when it is set (not ``None``), else the global one (spec §5.3)."""
    return agent_value if agent_value is not None else global_value


def _profile_step(profile: Any, also: Any) -> tuple[StepPolicy | None, Any, Any]:
    """A profile step: the profile's list widened by ``alsoAllow`` (spec §5.3), the profile
    name, and the unwidened list."""
    base = _profile_list(profile)
    allow = widen(base, also)
    return (StepPolicy(allow) if allow is not None else None), profile, base


def _provider_profile_variants(g: Any, agents: Mapping[str, AgentTools]) -> list[Variant]:
    glob = provider_lookup(g.by_provider if g else None)
    gkeys = list(glob)
    classes: list[tuple[str | None, dict[str, ProviderEntry]]] = []
    special = []
    for name, tools in agents.items():
        own = provider_lookup(tools.by_provider)
        if own:
            classes.append((name, own))
            special.append(name)
    classes.append((None, {}))
    out: list[Variant] = []
    label = STEP_LABELS[2]
    for agent, lookup in classes:
        akeys = list(lookup)
        who: dict[str, Any] = (
            {"principal": agent} if agent is not None else {"excluded": tuple(special)}
        )
        for ka in [*akeys, None]:
            entry_a = lookup[ka] if ka is not None else None
            results = [
                (kg, _provider_profile(entry_a, glob[kg] if kg is not None else None))
                for kg in [*gkeys, None]
            ]
            matters = not all(r == results[-1][1] for _, r in results)
            if not matters:
                results = results[-1:]  # the same whatever the global match
            for kg, (policy, profile, base) in results:
                if policy is None:
                    continue
                cond = and_(
                    provider_match_or_none(akeys, ka),
                    provider_match_or_none(gkeys, kg) if matters else TRUE,
                )
                key = ",".join(x for x in (agent, ka, kg) if x)
                section = (
                    provider_path(agent_path(agent), ka)
                    if agent is not None
                    and ka is not None
                    and entry_a
                    and entry_a.profile is not None
                    else provider_path("tools", kg or "")
                )
                out.append(
                    Variant(2, label, key, policy, condition=cond, profile=profile, base=base,
                            allow_from=f"{section}.profile", **who)
                )  # fmt: skip
    return out


def _group_variants(config: ToolsConfig) -> list[Variant]:
    out: list[Variant] = []
    label = STEP_LABELS[7]
    for channel, entry in (config.channels or {}).items():
        if entry is None or entry.groups is None or not channel or trim_lower(channel) != channel:
            continue  # a key that is not a normalized channel id never matches
        in_channel = eq(ctx("channel"), _lit(channel))
        exact = [
            k for k, grp in entry.groups.items()
            if k != "*" and k and js_trim(k) == k and grp is not None and grp.tools is not None
        ]  # fmt: skip
        for k in exact:
            if (p := pick(entry.groups[k].tools)) is not None:  # type: ignore[union-attr]
                cond = and_(in_channel, eq(ctx("groupId"), _lit(k)))
                at = json_path_text(("channels", channel, "groups", k, "tools"))
                out.append(Variant(7, label, f"{channel},{k}", p, condition=cond, **lists_from(at)))
        star = entry.groups.get("*")
        if star is not None and (p := pick(star.tools)) is not None:
            cond = and_(
                in_channel,
                Binary(BinOp.NEQ, ctx("groupId"), _lit("")),
                not_(set_contains(exact, ctx("groupId"))),
            )
            at = json_path_text(("channels", channel, "groups", "*", "tools"))
            out.append(Variant(7, label, f"{channel},*", p, condition=cond, **lists_from(at)))
    return out


def sandbox_policy(
    allow: Sequence[Any] | None, also: Sequence[Any] | None, deny: Sequence[Any] | None
) -> StepPolicy:
    """Spec §5.7: the sandbox step from the chosen allow/alsoAllow/deny arrays."""
    if allow is not None and not allow:
        built: list[Any] = []
    elif allow:
        built = dedupe([*allow, *also]) if also else list(allow)
    elif also:
        built = dedupe([*SANDBOX_DEFAULT_ALLOW, *also])
    else:
        built = list(SANDBOX_DEFAULT_ALLOW)
    if deny is not None:
        denied: list[Any] = list(deny)
    else:
        lifted = [p for e in expand([*(allow or ()), *(also or ())], CORE_GROUPS)
                  if (p := pattern_of(e)) is not None]  # fmt: skip
        denied = [n for n in SANDBOX_DEFAULT_DENY if not any(p.matches(n) for p in lifted)]
    denied = expand(denied, CORE_GROUPS)
    built = expand(built, CORE_GROUPS)
    if built and "image" not in built and "image" not in denied:
        built.append("image")
    return StepPolicy(tuple(built), tuple(denied))


SANDBOX_LISTS = "tools.sandbox.tools"


def _sandbox_variants(g: Any, agents: Mapping[str, AgentTools]) -> list[Variant]:
    glob = g.sandbox.tools if g is not None and g.sandbox is not None else None

    def build(agent: str | None, tools: AgentTools | None) -> tuple[Any, ...]:
        own = tools.sandbox.tools if tools is not None and tools.sandbox is not None else None

        def field(name: str) -> tuple[Any, str]:
            """The chosen array (the agent's replaces the global one) and where it is."""
            value = getattr(own, name) if own is not None else None
            if value is not None:
                return value, f"{agent_path(agent)}.sandbox.tools"  # type: ignore[arg-type]
            return (getattr(glob, name) if glob else None), SANDBOX_LISTS

        (allow, allow_at), (also, _), (deny, deny_at) = map(field, ("allow", "also_allow", "deny"))
        labels = Sources(
            allow_from=f"{allow_at}.allow"
            if allow is not None
            else f"{SANDBOX_LISTS}.allow (default)",
            deny_from=f"{deny_at}.deny" if deny is not None else f"{SANDBOX_LISTS}.deny (default)",
        )
        return sandbox_policy(allow, also, deny), None, None, labels

    return _per_agent(8, agents, build, condition=ctx("sandboxed"))


def _subagent_variants(config: ToolsConfig) -> list[Variant]:
    g = config.tools
    lists = g.subagents.tools if g is not None and g.subagents is not None else None
    allow = lists.allow if lists else None
    also = lists.also_allow if lists else None
    deny = lists.deny if lists else None
    reenabled = {norm(e) for e in [*(allow or ()), *(also or ())]} - {""}
    always = [n for n in SUBAGENT_ALWAYS_DENY if n not in reenabled]
    leaf = [n for n in SUBAGENT_LEAF_DENY if n not in reenabled]
    if allow is not None and also is not None:
        built: tuple[Any, ...] | None = tuple(dedupe([*allow, *also]))
    else:
        built = tuple(allow) if allow is not None else None
    depth = ctx("subagentDepth")
    n = config.max_spawn_depth
    label = STEP_LABELS[9]
    at = "tools.subagents.tools"
    out = [
        Variant(9, label, "leaf", StepPolicy(built, (*always, *leaf, *(deny or ()))),
                condition=Binary(BinOp.GE, depth, _lit(n)),
                deny_defaults=len(always) + len(leaf), allow_from=f"{at}.allow",
                deny_from=f"{at}.deny")
    ]  # fmt: skip
    if n > 1:
        cond = and_(Binary(BinOp.GE, depth, _lit(1)), Binary(BinOp.LT, depth, _lit(n)))
        out.insert(
            0, Variant(9, label, "orchestrator", StepPolicy(built, (*always, *(deny or ()))),
                       condition=cond, deny_defaults=len(always), allow_from=f"{at}.allow",
                       deny_from=f"{at}.deny")
        )  # fmt: skip
    return out


# ---------------------------------------------------------------------------------------------
# Entries → what they match (spec §6.3, §3.2, §3.3, §8)


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
        if all(_is_true(e) for e in enters) and all(_plain(n) for n in names):
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
        if not name or _is_false(cond):
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
        return or_(_action_in(self.static) if self.static else FALSE, *self.parts)


def _match(units: Iterable[Unit], catalog: ToolCatalog, with_patch_link: bool) -> _Match:
    """The actions matched by ``units``; with the ``write`` → ``apply_patch`` link of §8."""
    units = list(units)
    static: list[EntityUID] = []
    parts: list[Expr] = []
    for u in units:
        targets = u.targets(catalog)
        if _is_true(u.cond):
            if targets is None:
                return _Match(True, (), ())
            static.extend(targets)
        elif u.relevant(catalog):
            parts.append(u.cond if targets is None else and_(u.cond, _action_in(targets)))
    if with_patch_link:
        link = or_(*(u.cond for u in units if u.contains("write")))
        static_patch = any(_is_true(u.cond) and u.contains("apply_patch") for u in units)
        if _is_true(link):
            if not static_patch:
                static.append(action_uid("apply_patch"))
        elif not _is_false(link):
            parts.append(and_(link, eq(_ACTION, _lit(action_uid("apply_patch")))))
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
        if _is_false(when) or _is_true(unless):
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
        if not _is_true(when):
            conditions.append(Condition(ConditionKind.WHEN, when))
        if not _is_false(unless):
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
    op = ScopeOp.IN if _is_group(uids[0]) else ScopeOp.EQ
    return Scope(Var.ACTION, op, entity=uids[0])


def _entries_note(entries: Sequence[Any]) -> str:
    return ", ".join(e if isinstance(e, str) else repr(e) for e in entries)


def _source_keys(entries: Iterable[Any]) -> set[str]:
    """Spec §6.2: string entries, trimmed, blanks dropped, normalized."""
    return {norm(e) for e in entries if isinstance(e, str) and js_trim(e)}


@guard_depth
def compile_config(
    config: Mapping[str, Any] | ToolsConfig | None,
    catalog: ToolCatalog,
) -> ToolPolicySet:
    """Compile a tools configuration (spec §4.1) for a catalog into Cedar policies.

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
    """When each optional tool is loaded (spec §6.2 step 2): its name, its plugin id or
    ``group:plugins`` is an entry of an explicit allowlist that applies."""
    sources = [(v.applies, _source_keys(v.source_entries)) for v in variants]
    out: dict[int, Expr] = {}
    for t in catalog.registered:
        if t.optional:
            wanted = {t.normalized, norm(t.plugin_id), GROUP_PLUGINS} - {""}
            out[t.index] = or_(*(cond for cond, keys in sources if keys & wanted))
    return out


def _enters(catalog: ToolCatalog, loads: Mapping[int, Expr]) -> dict[int, Expr]:
    """When each registered tool enters the pipeline (registration and owner-only, §6.2, §7)."""
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
            BinOp.IN, Variable(Var.RESOURCE), SetLit(tuple(_lit(t.resource) for t in flagged))
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


# ---------------------------------------------------------------------------------------------
# The shipped policies (``policies/*.cedar``)

_SHIPPED: dict[str, tuple[dict[str, Any], tuple[str | None, ...], str]] = {
    "tools-base.cedar": (
        {}, (None, LAYER_TOOLS_ENABLED),
        "Every tool is allowed unless a forbid removes it; none when the model cannot take tools.",
    ),
    "owner-only.cedar": (
        {}, (LAYER_OWNER,),
        "Owner-only tools (spec §7): whatsapp_login, cron, gateway and nodes need an owner sender.",
    ),
    "profile-minimal.cedar": (
        {"tools": {"profile": "minimal"}}, (STEP_LABELS[1],), "The `minimal` tool profile.",
    ),
    "profile-coding.cedar": (
        {"tools": {"profile": "coding"}}, (STEP_LABELS[1],),
        "The `coding` tool profile (MCP tools through their plugin group).",
    ),
    "profile-messaging.cedar": (
        {"tools": {"profile": "messaging"}}, (STEP_LABELS[1],),
        "The `messaging` tool profile (MCP tools through their plugin group).",
    ),
    "sandbox-defaults.cedar": (
        {}, (STEP_LABELS[8],), "The default sandbox tool policy (spec §5.7), for sandboxed runs.",
    ),
    "subagent-defaults.cedar": (
        {}, (STEP_LABELS[9],),
        "The default sub-agent tool policy (spec §5.8; with maxSpawnDepth 1 every sub-agent is a\n"
        "// leaf).",
    ),
}  # fmt: skip


def shipped_policies() -> dict[str, str]:
    """The text of the generated files of ``policies/``: the profiles and the owner-only,
    sandbox and sub-agent defaults, compiled from the default configuration by
    :func:`compile_config` for the core catalog (plus one MCP tool, so that ``bundle-mcp`` is
    the plugin group ``Action::"plugin:bundle-mcp"``)."""
    from ..lang.printer import print_policies
    from .catalog import BUNDLE_MCP

    catalog = ToolCatalog.core({"name": "server__tool", "pluginId": BUNDLE_MCP})
    out = {}
    for filename, (config, layers, about) in _SHIPPED.items():
        compiled = compile_config(config, catalog)
        chosen = [p for p in compiled if p.annotations.get("layer") in layers]
        header = (
            f"// {about}\n"
            "// Generated by cedarlite.tools.compile.shipped_policies() from the spec's defaults;\n"
            '// regenerate with cedarlite.tools.compile.write_shipped_policies("policies").\n\n'
        )
        out[filename] = header + print_policies(chosen)
    return out


def write_shipped_policies(directory: str) -> list[str]:
    """Write :func:`shipped_policies` into ``directory``; returns the paths written."""
    import os

    paths = []
    for filename, text in shipped_policies().items():
        path = os.path.join(directory, filename)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        paths.append(path)
    return paths
