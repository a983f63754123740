"""What a guard is built from: the tool policy of the configuration and catalog, the rules'
policies with their sources, and the values the policy hash covers."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..data.jsonvalue import load_json
from ..tools.catalog import ToolCatalog
from ..tools.names import norm_agent_id
from .approvals import GuardError

if TYPE_CHECKING:
    from ..lang.ast import Policy
    from ..tools.resolve import ToolPolicy


def tool_policy(
    config: Any, tools: Any, rules: Any, context: Any, strict: bool
) -> tuple[ToolPolicy, list[tuple[Policy, str | None]]]:
    """The compiled tool policy and the rules' policies (with their sources).

    Strict (the default): configuration mistakes raise :class:`~cedarlite.tools.ConfigError`,
    a run context with unknown keys or agents raises it too, and rules that do not validate
    against the catalog's schema raise :class:`~cedarlite.tools.RulesError`.
    """
    # lazy on purpose: the configuration models (pydantic) and the compilers load only where a
    # guard is built, never in a process that loads a built one
    from ..tools.resolve import ToolPolicy

    policy = ToolPolicy(config, tools, strict=strict)
    policy.check_context(context)  # a no-op for a lenient policy
    return policy, load_rules(policy, rules, strict)


def load_rules(policy: ToolPolicy, rules: Any, validate: bool) -> list[tuple[Policy, str | None]]:
    """The active policies of ``rules`` (a PolicySet, Cedar text, a path, or a list of paths
    and PolicySets, one per file), each with the source it came from, validated against the
    catalog when ``validate``."""
    from ..policyset import PolicySet  # lazy on purpose: as in tool_policy

    if rules is None:
        return []
    if isinstance(rules, os.PathLike):
        rules = [rules]
    elif not isinstance(rules, PolicySet | str):
        if isinstance(rules, bytes) or not isinstance(rules, Iterable):
            raise GuardError(
                f"rules must be a PolicySet, Cedar text or a list of .cedar paths, not "
                f"`{type(rules).__name__}`"
            )
        rules = list(rules)
        for path in rules:
            if not isinstance(path, str | os.PathLike | PolicySet):
                raise GuardError(
                    f"a rules path must be a string or a PolicySet, not `{type(path).__name__}`"
                )
    ps = policy.load_rules(rules, validate=validate)
    return [(p, ps.origin(p.id).source) for p in ps.active]


def loop_config(policy: ToolPolicy, agent: str) -> tuple[Any, Any]:
    """``tools.loopDetection`` and the run's agent's ``loopDetection``."""
    config = policy.config
    global_value = config.tools.loop_detection if config.tools else None
    agent_value = None
    for entry in (config.agents.entries if config.agents else None) or ():
        if entry is None:
            continue
        if norm_agent_id(entry.id if isinstance(entry.id, str) else None) == agent:
            agent_value = entry.tools.loop_detection if entry.tools else None
            break
    return global_value, agent_value


def config_value(config: Any) -> Any:
    """The configuration as the policy hash covers it (JSON text decoded)."""
    if isinstance(config, str | bytes):
        return load_json(config, "config", GuardError)
    return {} if config is None else config


def tools_value(tools: list[Mapping[str, Any]] | ToolCatalog) -> Any:
    """The catalog as the policy hash covers it (a catalog's tools as their raw entries)."""
    if isinstance(tools, ToolCatalog):
        return [dict(t.raw) if t.raw else {"name": t.name} for t in tools]
    return tools
