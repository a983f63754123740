"""The steps of the tool pipeline a configuration defines (docs/tool-policy.md): profiles,
provider profiles, allow and deny lists globally, per provider, per agent, for sandboxes and
for subagents, each a :class:`Variant` of a step with the run condition under which it holds."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from .._jsonloc import json_path_text
from ..lang.ast import Binary, BinOp, Expr
from .catalog import (
    CORE_GROUPS,
    PROFILES,
    SANDBOX_DEFAULT_ALLOW,
    SANDBOX_DEFAULT_DENY,
    SUBAGENT_ALWAYS_DENY,
    SUBAGENT_LEAF_DENY,
)
from .config import AgentTools, PolicyLists, ProviderEntry, ToolsConfig
from .expr import (
    TRUE,
    and_,
    ctx,
    eq,
    lit,
    not_,
    principal_is,
    principal_not_in,
    provider_lookup,
    provider_match_or_none,
    provider_matches,
    set_contains,
)
from .names import dedupe, expand, js_trim, norm, norm_agent_id, pattern_of, trim_lower

#: Step number → label template of docs/tool-policy.md §5.2 (``{agent}`` is the agent id).
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


@dataclass(frozen=True, slots=True)
class StepPolicy:
    """``{allow?, deny?}`` of one step, as built by docs/tool-policy.md §5 (raw entries, ``None`` =
    not set)."""

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
        """The allow list that counts as an explicit allowlist (docs/tool-policy.md §6.2,
        §9)."""
        if self.step <= 2:
            return self.base or ()
        return self.policy.allow or ()

    @property
    def display_label(self) -> str:
        """The label with the profile name, as diagnostics print it (docs/tool-policy.md §5.2)."""
        if self.step <= 2 and self.profile is not None and js_trim(self.profile):
            return f"{self.label} ({self.profile})"
        return self.label


def widen(base: tuple[Any, ...] | None, extra: Sequence[Any] | None) -> tuple[Any, ...] | None:
    """docs/tool-policy.md §5.3 ``widen``: a profile allow list plus ``alsoAllow`` (never creates
    one)."""
    if base is None or not extra:
        return base
    return tuple(dedupe([*base, *extra]))


def pick(lists: PolicyLists | None) -> StepPolicy | None:
    """docs/tool-policy.md §5.4 ``pick``: allow/alsoAllow/deny into a step policy (``None``: no
    policy)."""
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
    """The agent-level value when it is set (not ``None``), else the global one (docs/tool-policy.md
    §5.3)."""
    return agent_value if agent_value is not None else global_value


def _profile_step(profile: Any, also: Any) -> tuple[StepPolicy | None, Any, Any]:
    """A profile step: the profile's list widened by ``alsoAllow`` (docs/tool-policy.md §5.3), the
    profile name, and the unwidened list."""
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
        in_channel = eq(ctx("channel"), lit(channel))
        exact = [
            k for k, grp in entry.groups.items()
            if k != "*" and k and js_trim(k) == k and grp is not None and grp.tools is not None
        ]  # fmt: skip
        for k in exact:
            if (p := pick(entry.groups[k].tools)) is not None:  # type: ignore[union-attr]
                cond = and_(in_channel, eq(ctx("groupId"), lit(k)))
                at = json_path_text(("channels", channel, "groups", k, "tools"))
                out.append(Variant(7, label, f"{channel},{k}", p, condition=cond, **lists_from(at)))
        star = entry.groups.get("*")
        if star is not None and (p := pick(star.tools)) is not None:
            cond = and_(
                in_channel,
                Binary(BinOp.NEQ, ctx("groupId"), lit("")),
                not_(set_contains(exact, ctx("groupId"))),
            )
            at = json_path_text(("channels", channel, "groups", "*", "tools"))
            out.append(Variant(7, label, f"{channel},*", p, condition=cond, **lists_from(at)))
    return out


def sandbox_policy(
    allow: Sequence[Any] | None, also: Sequence[Any] | None, deny: Sequence[Any] | None
) -> StepPolicy:
    """docs/tool-policy.md §5.7: the sandbox step from the chosen allow/alsoAllow/deny arrays."""
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
                condition=Binary(BinOp.GE, depth, lit(n)),
                deny_defaults=len(always) + len(leaf), allow_from=f"{at}.allow",
                deny_from=f"{at}.deny")
    ]  # fmt: skip
    if n > 1:
        cond = and_(Binary(BinOp.GE, depth, lit(1)), Binary(BinOp.LT, depth, lit(n)))
        out.insert(
            0, Variant(9, label, "orchestrator", StepPolicy(built, (*always, *(deny or ()))),
                       condition=cond, deny_defaults=len(always), allow_from=f"{at}.allow",
                       deny_from=f"{at}.deny")
        )  # fmt: skip
    return out
