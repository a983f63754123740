"""Lint a tools configuration and a run context: every mistake that would silently widen access.

The spec reads configurations leniently (docs/tool-policy.md §4.1): a typo'd key, a misspelled
profile, a string where a list belongs, all mean "not set", and the rule the user wrote disappears.
That is right for resolving tools the way OpenClaw does, and wrong in front of a call.
:func:`lint_config` reports all of it, each finding with its JSON path, what was expected and, where
one is close, a did-you-mean:

* **errors** (a strict :class:`~cedarlite.tools.ToolPolicy` refuses them): wrong types, unknown
  keys, unknown profiles, blank entries, unknown groups, agent entries without an id or with a
  repeated id, provider, channel and group keys that can never match; in a run context,
  unknown keys, values of the wrong type and agent ids the configuration does not list;
* **warnings** (never refused: a plugin may be absent from this run): list entries that match
  no tool, group or plugin of the catalog.

Keys: the objects made only of tool-policy lists (``sandbox.tools``, ``subagents.tools``,
channel groups' ``tools``, ``byProvider`` entries) are closed: any other key is an error. The
other sections share their objects with the rest of an OpenClaw configuration (``tools.exec``,
``agents.list[].workspace``...): there a key is an error only when it looks like one the tool
policy reads (``denny``, ``Tools``, ``also_allow``); other keys are left alone.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..data.jsonvalue import check_json_limits, json_kind, load_json
from .catalog import (
    CORE_GROUPS,
    CORE_TOOL_IDS,
    GROUP_PLUGINS,
    LOOP_DEFAULTS,
    LOOP_DETECTORS,
    OWNER_ONLY_TOOLS,
    PROFILES,
    ToolCatalog,
)
from .config import (
    TOOL_LIST,
    ConfigError,
    ConfigIssue,
    ToolsConfig,
    read_config,
)
from .names import compile_glob, js_trim, js_truthy, match_glob, norm, norm_agent_id, trim_lower

Loc = tuple[str | int, ...]

#: Profile names: the three with an allow list, and ``full`` (no profile step).
PROFILE_NAMES: tuple[str, ...] = (*PROFILES, "full")

#: The run context keys of docs/tool-policy.md §4.3 and the JSON type each takes.
RUN_CONTEXT_KEYS: dict[str, str] = {
    "agentId": "string",
    "provider": "string",
    "model": "string",
    "channel": "string",
    "groupId": "string",
    "sandboxed": "boolean",
    "senderIsOwner": "boolean",
    "subagentDepth": "integer",
    "toolsEnabled": "boolean",
}

_LONGEST_SUGGESTED = 100  # keys longer than this get no did-you-mean (bounded work)
_MOST_CONTEXT_FINDINGS = 20  # a run context is checked on every call: stop early


def did_you_mean(name: Any, candidates: Iterable[str], cutoff: float = 0.6) -> str | None:
    """``did you mean `x`?`` for the closest candidate (case and ``_``/``-`` ignored)."""
    if not isinstance(name, str) or not name or len(name) > _LONGEST_SUGGESTED:
        return None
    by_fold = {_fold(c): c for c in sorted(set(candidates), reverse=True)}
    folded = _fold(name)
    if folded in by_fold:
        return f"did you mean `{by_fold[folded]}`?"
    match = difflib.get_close_matches(folded, list(by_fold), n=1, cutoff=cutoff)
    return f"did you mean `{by_fold[match[0]]}`?" if match else None


def _clip(value: Any, limit: int = 60) -> str:
    """User text shown in a message, cut to ``limit`` characters."""
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _fold(text: str) -> str:
    return text.lower().replace("_", "").replace("-", "")


def _looks_like(key: str, known: Iterable[str]) -> str | None:
    """The did-you-mean of a key that looks like a known one (strictly: open objects)."""
    return did_you_mean(key, known, cutoff=0.75)


# ---------------------------------------------------------------------------------------------
# The shape of the configuration the tool policy reads (docs/tool-policy.md §4.1)

LIST = "list"  # an array of tool names
PROFILE = "profile"
AGENT_LIST = "agents"
NUMBER = "number"
STRING = "string"
ANY = "any"
BOOLEAN = "boolean"  # `true` or `false`
POSITIVE = "positive"  # a whole number above 0 (loop detection's thresholds)


@dataclass(frozen=True)
class Section:
    """An object: its known keys and what each holds; ``closed`` objects take no other key.

    ``each`` (instead of ``keys``) describes an object with free keys (``byProvider``,
    ``channels``, ``groups``), ``key_kind`` how those keys are matched.
    """

    what: str
    keys: Mapping[str, Any] = field(default_factory=dict)
    closed: bool = False
    each: Any = None
    key_kind: str = ""


_LISTS = {"allow": LIST, "alsoAllow": LIST, "deny": LIST}
_POLICY = Section("a tool policy", _LISTS, closed=True)
_PROVIDER = Section("a byProvider entry", {"profile": PROFILE, **_LISTS}, closed=True)
_BY_PROVIDER = Section("`byProvider`", each=_PROVIDER, key_kind="provider")
_SANDBOX = Section("a sandbox section", {"tools": _POLICY})
_LOOP_DETECTION = Section(
    "`loopDetection`",
    {
        "enabled": BOOLEAN,
        **{key: POSITIVE for key in LOOP_DEFAULTS},
        "detectors": Section(
            "`loopDetection.detectors`", {d: BOOLEAN for d in LOOP_DETECTORS}, closed=True
        ),
    },
    closed=True,
)
_AGENT_TOOLS = Section(
    "an agent's `tools`",
    {
        "profile": PROFILE,
        **_LISTS,
        "byProvider": _BY_PROVIDER,
        "sandbox": _SANDBOX,
        "loopDetection": _LOOP_DETECTION,
    },
)
_TOOLS = Section(
    "the `tools` section",
    {**_AGENT_TOOLS.keys, "subagents": Section("`tools.subagents`", {"tools": _POLICY})},
)
_AGENT = Section("an agent entry", {"id": STRING, "default": ANY, "tools": _AGENT_TOOLS})
_AGENTS = Section(
    "the `agents` section",
    {
        "defaults": Section(
            "`agents.defaults`",
            {"subagents": Section("`agents.defaults.subagents`", {"maxSpawnDepth": NUMBER})},
        ),
        "list": AGENT_LIST,
    },
)
_GROUP = Section("a channel group", {"tools": _POLICY})
_CHANNEL = Section("a channel", {"groups": Section("`groups`", each=_GROUP, key_kind="group")})
ROOT = Section(
    "the configuration",
    {
        "tools": _TOOLS,
        "agents": _AGENTS,
        "channels": Section("`channels`", each=_CHANNEL, key_kind="channel"),
    },
)


# ---------------------------------------------------------------------------------------------
# Findings


def _error(loc: Loc, message: str, help: str | None = None, **kw: Any) -> ConfigIssue:
    return ConfigIssue(loc, message, help, "error", **kw)


def _warning(loc: Loc, message: str, help: str | None = None, **kw: Any) -> ConfigIssue:
    return ConfigIssue(loc, message, help, "warning", **kw)


class _Linter:
    """One walk over a configuration (the shape bounds the depth: no recursion on input)."""

    def __init__(self, catalog: ToolCatalog | None) -> None:
        self.catalog = catalog if catalog is not None else ToolCatalog.core()
        self.where = "this run" if catalog is not None else "the core catalog"
        self.out: list[ConfigIssue] = []
        self.agents: dict[str, Loc] = {}

    def section(self, value: Any, shape: Section, loc: Loc) -> None:
        if not isinstance(value, Mapping):
            if value is not None:
                self.out.append(
                    _error(
                        loc,
                        f"expected an object ({shape.what}), not {json_kind(value)}; "
                        "the spec ignores it",
                        code="wrong-type",
                    )
                )
            return
        if shape.each is not None:
            self.free_keys(value, shape, loc)
            return
        for key, item in value.items():
            kind = shape.keys.get(key)
            if kind is None:
                self.unknown_key(key, shape, loc)
            else:
                self.value(item, kind, (*loc, key))

    def unknown_key(self, key: Any, shape: Section, loc: Loc) -> None:
        hint = (did_you_mean if shape.closed else _looks_like)(key, shape.keys)
        if not shape.closed and hint is None:
            return  # a key of the wider OpenClaw configuration
        known = ", ".join(f"`{k}`" for k in shape.keys)
        self.out.append(
            _error(
                (*loc, key),
                f"unknown key `{_clip(key)}` in {shape.what} (it reads {known})",
                hint,
                code="unknown-key",
                on_key=True,
            )
        )

    def free_keys(self, value: Mapping[str, Any], shape: Section, loc: Loc) -> None:
        seen: dict[str, str] = {}
        for key, item in value.items():
            here = (*loc, key)
            if shape.key_kind == "provider":
                folded = trim_lower(key)
                if not folded:
                    self.out.append(
                        _error(
                            here,
                            "a blank provider key never matches",
                            code="never-matches",
                            on_key=True,
                        )
                    )
                elif folded in seen:
                    self.out.append(
                        _error(
                            here,
                            f"`{_clip(key)}` and `{_clip(seen[folded])}` are the same provider "
                            "key; the later one replaces the earlier",
                            code="duplicate-key",
                            on_key=True,
                        )
                    )
                seen.setdefault(folded, key)
            elif shape.key_kind == "channel" and (not key or trim_lower(key) != key):
                fixed = trim_lower(key)
                self.out.append(
                    _error(
                        here,
                        f"channel key `{_clip(key)}` never matches: channel ids are matched "
                        "trimmed and lower-cased",
                        f"did you mean `{fixed}`?" if fixed else None,
                        code="never-matches",
                        on_key=True,
                    )
                )
            elif shape.key_kind == "group" and (not key or js_trim(key) != key):
                self.out.append(
                    _error(
                        here,
                        f"group key `{_clip(key)}` never matches: group ids are matched "
                        "exactly and trimmed",
                        code="never-matches",
                        on_key=True,
                    )
                )
            if item is not None:
                self.section(item, shape.each, here)

    def value(self, value: Any, kind: Any, loc: Loc) -> None:
        if isinstance(kind, Section):
            self.section(value, kind, loc)
        elif value is None or kind == ANY:
            return
        elif kind == LIST:
            self.entries(value, loc)
        elif kind == PROFILE:
            self.profile(value, loc)
        elif kind == AGENT_LIST:
            self.agent_list(value, loc)
        elif kind == NUMBER:
            self.number(value, loc)
        elif kind == BOOLEAN:
            self.boolean(value, loc)
        elif kind == POSITIVE:
            self.positive(value, loc)
        elif kind == STRING and not isinstance(value, str):
            self.out.append(
                _error(loc, f"expected a string, not {json_kind(value)}", code="wrong-type")
            )

    def entries(self, value: Any, loc: Loc) -> None:
        if not isinstance(value, list):
            help = f'write `["{value}"]`' if isinstance(value, str) else None
            self.out.append(
                _error(
                    loc,
                    f"expected an array of tool names, not {json_kind(value)}; the spec "
                    "reads this list as not set",
                    help,
                    code="wrong-type",
                )
            )
            return
        for i, entry in enumerate(value):
            self.entry(entry, (*loc, i))

    def entry(self, entry: Any, loc: Loc) -> None:
        if not isinstance(entry, str):
            self.out.append(
                _error(
                    loc,
                    f"expected a tool name (a string), not {json_kind(entry)}; it matches nothing",
                    code="wrong-type",
                )
            )
            return
        name = norm(entry)
        catalog = self.catalog
        if not name:
            self.out.append(_error(loc, "a blank entry matches nothing", code="blank-entry"))
        elif name == "*" or name in CORE_GROUPS:
            return
        elif name == GROUP_PLUGINS:
            if not catalog.plugin_tools:
                self.out.append(
                    _warning(
                        loc,
                        f"`{_clip(entry)}` matches nothing: there are no plugin "
                        f"tools in {self.where}",
                        code="no-match",
                    )
                )
        elif name in catalog.plugin_groups or name in catalog.names:
            return
        elif "*" in name:
            glob = compile_glob(name)
            if not any(match_glob(glob, n) for n in catalog.names):
                self.out.append(
                    _warning(
                        loc, f"`{_clip(entry)}` matches no tool in {self.where}", code="no-match"
                    )
                )
        elif name.startswith("group:"):
            self.out.append(
                _error(
                    loc,
                    f"unknown group `{_clip(entry)}`",
                    did_you_mean(name, self.candidates()),
                    code="unknown-group",
                )
            )
        else:
            core = name in CORE_TOOL_IDS or name in OWNER_ONLY_TOOLS
            message = (
                f"core tool `{_clip(entry)}` is not in {self.where}"
                if core
                else f"`{_clip(entry)}` matches no tool, group or plugin in {self.where}"
            )
            hint = None if core else did_you_mean(name, self.candidates())
            self.out.append(_warning(loc, message, hint, code="no-match"))

    def candidates(self) -> list[str]:
        c = self.catalog
        return [
            *c.names,
            *CORE_TOOL_IDS,
            *OWNER_ONLY_TOOLS,
            *CORE_GROUPS,
            GROUP_PLUGINS,
            *c.plugin_groups,
        ]

    def profile(self, value: Any, loc: Loc) -> None:
        if not isinstance(value, str):
            self.out.append(
                _error(
                    loc,
                    f"expected a profile name, not {json_kind(value)}; the spec reads no profile",
                    code="wrong-type",
                )
            )
        elif value not in PROFILE_NAMES:
            names = ", ".join(f"`{p}`" for p in PROFILE_NAMES)
            hint = did_you_mean(value, PROFILE_NAMES) if value else "write `full` for no profile"
            self.out.append(
                _error(
                    loc,
                    f"unknown profile `{_clip(value)}` (profiles: {names}); the spec reads no "
                    "profile",
                    hint,
                    code="unknown-profile",
                )
            )

    def number(self, value: Any, loc: Loc) -> None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.out.append(
                _error(
                    loc,
                    f"expected a number, not {json_kind(value)}; the spec reads the default 1",
                    code="wrong-type",
                )
            )
        elif not (math.isfinite(value) and value >= 1 and float(value).is_integer()):
            read = max(1, int(value // 1)) if math.isfinite(value) else 1
            self.out.append(
                _warning(
                    loc,
                    f"`{value}` is read as {read}",
                    "use a whole number of at least 1",
                    code="rounded",
                )
            )

    def boolean(self, value: Any, loc: Loc) -> None:
        """A switch: loop detection's ``enabled`` counts only when ``true`` (notes B2), a
        detector is off for ``false``, ``0`` and ``""`` (C4), a tool's ``optional`` and
        ``ownerOnly`` only when ``true``; anything but a boolean is an error, read as the spec
        reads it."""
        if isinstance(value, bool):
            return
        if loc[-1] == "enabled":
            read = "detection off"
        elif len(loc) > 1 and loc[-2] == "detectors":
            read = "the detector off" if not js_truthy(value) else "the detector on"
        else:
            read = "`false`"
        self.out.append(
            _error(
                loc,
                f"expected `true` or `false`, not {json_kind(value)}; the spec reads {read}",
                _coerce_hint(value, "boolean") or _bool_hint(value),
                code="wrong-type",
            )
        )

    def positive(self, value: Any, loc: Loc) -> None:
        """A loop detection threshold: a whole number above 0 (``5.0`` counts, notes C3);
        anything else is an error, read as the default."""
        number = not isinstance(value, bool) and isinstance(value, int | float)
        if number and math.isfinite(value) and float(value).is_integer() and value > 0:
            return
        key = loc[-1]
        default = LOOP_DEFAULTS[key] if isinstance(key, str) and key in LOOP_DEFAULTS else None
        self.out.append(
            _error(
                loc,
                f"expected a whole number above 0, not `{_clip(json.dumps(value, default=repr))}`"
                f"; the spec reads the default {default}",
                _coerce_hint(value, "integer"),
                code="wrong-type",
            )
        )

    def agent_list(self, value: Any, loc: Loc) -> None:
        if not isinstance(value, list):
            help = (
                'write `"list": [{"id": "...", "tools": {...}}]`'
                if isinstance(value, Mapping)
                else None
            )
            self.out.append(
                _error(
                    loc,
                    f"expected an array of agent objects, not {json_kind(value)}; the "
                    "spec reads no agents",
                    help,
                    code="wrong-type",
                )
            )
            return
        defaults = 0
        for i, entry in enumerate(value):
            here = (*loc, i)
            if not isinstance(entry, Mapping):
                self.out.append(
                    _error(
                        here,
                        f"expected an agent object, not {json_kind(entry)}; the spec skips it",
                        code="wrong-type",
                    )
                )
                continue
            self.section(entry, _AGENT, here)
            raw_id = entry.get("id")
            if raw_id is None:
                self.out.append(
                    _error(
                        here,
                        "agent entry without an `id`: it configures the agent `main`",
                        'add `"id": "main"` if that is meant',
                        code="missing-id",
                    )
                )
            agent = norm_agent_id(raw_id if isinstance(raw_id, str) else None)
            if agent in self.agents:
                first = self.agents[agent]
                self.out.append(
                    _error(
                        here,
                        f"agent `{agent}` is listed again (first at "
                        f"`{ConfigIssue(first, '').path}`); the spec ignores this entry",
                        code="duplicate-agent",
                    )
                )
            else:
                self.agents[agent] = here
            defaults += js_truthy(entry.get("default"))
        if defaults > 1:
            self.out.append(
                _warning(
                    loc,
                    f"{defaults} agents are marked `default`; the first one is",
                    code="several-defaults",
                )
            )


_TOOL = Section(
    "a tool",
    {
        "name": STRING,
        "pluginId": STRING,
        "optional": BOOLEAN,
        "ownerOnly": BOOLEAN,
        "parameters": ANY,
    },
)


def tool_issues(catalog: ToolCatalog) -> list[ConfigIssue]:
    """The findings on a run's tool list (docs/tool-policy.md §4.2), each at ``tools[i]...`` (see
    :attr:`~cedarlite.tools.ConfigIssue.in_tool_list`): a tool without a string ``name``,
    values of the wrong type, and unknown keys that look like a known one (``nam``)."""
    linter = _Linter(catalog)
    for tool in catalog.tools:
        loc: Loc = (TOOL_LIST, tool.index)
        if tool.raw and not isinstance(tool.raw.get("name"), str):
            message = "a tool needs a `name`, a string; the spec matches no tool by it"
            linter.out.append(_error(loc, message, code="wrong-type"))
        linter.section(tool.raw, _TOOL, loc)
    return linter.out


def lint_config(
    config: Mapping[str, Any] | str | None,
    tools: Iterable[Mapping[str, Any]] | ToolCatalog | None = None,
    context: Mapping[str, Any] | None = None,
    *,
    check_tools: bool = True,
) -> tuple[ConfigIssue, ...]:
    """Every finding on a tools configuration (and a run context), in document order.

    ``tools`` (the run's tools or a :class:`ToolCatalog`) is what list entries are checked against
    (the 32 core tools without it), and, with ``check_tools``, is checked itself
    (:func:`tool_issues`, paths ``tools[i]...``); ``context`` (a run context, docs/tool-policy.md
    §4.3) is checked too, its findings' paths starting with ``context``. Each finding is a
    :class:`~cedarlite.tools.ConfigIssue` with ``severity`` ``"error"`` or ``"warning"``, ``path``,
    ``message`` and ``help``. Raises :class:`~cedarlite.tools.ConfigError` only for a configuration
    that is not a JSON object.
    """
    raw = as_object(config)
    catalog = (
        tools if isinstance(tools, ToolCatalog) or tools is None else ToolCatalog.from_tools(tools)
    )
    linter = _Linter(catalog)
    linter.section(raw, ROOT, ())
    findings = list(linter.out)
    if tools is not None and check_tools:
        findings += tool_issues(linter.catalog)
    if context is not None:
        findings += context_issues(context, set(linter.agents))
    return tuple(findings)


def configured_agents(config: Mapping[str, Any] | str | None) -> frozenset[str]:
    """The (normalized) ids of the agents a configuration lists."""
    raw = as_object(config)
    agents = raw.get("agents") if isinstance(raw, Mapping) else None
    entries = agents.get("list") if isinstance(agents, Mapping) else None
    return (
        frozenset(
            norm_agent_id(e.get("id") if isinstance(e.get("id"), str) else None)
            for e in entries or ()
            if isinstance(e, Mapping)
        )
        if isinstance(entries, list)
        else frozenset()
    )


def context_issues(context: Any, agents: Iterable[str]) -> list[ConfigIssue]:
    """The errors of a run context: unknown keys, wrong types, agent ids not configured.

    ``agents`` are the configured agent ids; with none configured, any agent id is accepted
    (no agent has settings to lose).
    """
    if context is None:
        return []
    if not isinstance(context, Mapping):
        return [
            _error(
                ("context",),
                f"expected a run context object, not {json_kind(context)}",
                code="wrong-type",
            )
        ]
    out: list[ConfigIssue] = []
    for key, value in context.items():
        if len(out) >= _MOST_CONTEXT_FINDINGS:  # a hostile context costs no more than this
            out.append(
                _error(("context",), "too many problems; the rest was not checked", code="too-many")
            )
            return out
        loc: Loc = ("context", key)
        kind = RUN_CONTEXT_KEYS.get(key) if isinstance(key, str) else None
        if kind is None:
            known = ", ".join(f"`{k}`" for k in RUN_CONTEXT_KEYS)
            out.append(
                _error(
                    loc,
                    f"unknown run context key `{_clip(key)}` (keys: {known})",
                    did_you_mean(key, RUN_CONTEXT_KEYS),
                    code="unknown-key",
                    on_key=True,
                )
            )
        elif value is not None and not _is(value, kind):
            out.append(
                _error(
                    loc,
                    f"`{key}` must be a {kind}, not {json_kind(value)}",
                    _coerce_hint(value, kind),
                    code="wrong-type",
                )
            )
    agent_id = context.get("agentId")
    known_agents = sorted(agents)
    if isinstance(agent_id, str) and js_trim(agent_id) and known_agents:
        agent = norm_agent_id(agent_id)
        if agent not in known_agents:
            listed = ", ".join(f"`{a}`" for a in known_agents)
            out.append(
                _error(
                    ("context", "agentId"),
                    f"unknown agent `{_clip(agent_id)}`: the "
                    f"configuration lists {listed}; this run would get no agent-level settings",
                    did_you_mean(agent, known_agents),
                    code="unknown-agent",
                )
            )
    return out


def _is(value: Any, kind: str) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return float(value).is_integer() and value >= 0


def _bool_hint(value: Any) -> str | None:
    if value in (1, 0) or (isinstance(value, str) and value.strip().lower() in _YES_NO):
        yes = value == 1 or (isinstance(value, str) and value.strip().lower() in _YES)
        return f"write `{'true' if yes else 'false'}`"
    return None


_YES = ("yes", "on", "1", "true")
_YES_NO = (*_YES, "no", "off", "0", "false")


def _coerce_hint(value: Any, kind: str) -> str | None:
    if kind == "boolean" and value in ("true", "false"):
        return f"write `{value}` without quotes"
    if kind == "integer" and isinstance(value, str) and value.strip().isdigit():
        return f"write `{value.strip()}` without quotes"
    return None


def as_object(config: Mapping[str, Any] | str | None) -> Any:
    if isinstance(config, str | bytes):
        config = load_json(config, "config", ConfigError)
    if config is None:
        return {}
    if not isinstance(config, Mapping):
        raise ConfigError(f"the tools configuration must be a JSON object, not {json_kind(config)}")
    check_json_limits(config, "the tools configuration", ConfigError)
    return config


def errors_of(findings: Iterable[ConfigIssue]) -> list[ConfigIssue]:
    """The error findings (what a strict policy refuses)."""
    return [f for f in findings if f.severity == "error"]


def raise_errors(findings: Iterable[ConfigIssue], what: str = "tools configuration") -> None:
    """Raise a :class:`ConfigError` naming the first error finding (all findings attached)."""
    findings = tuple(findings)
    errors = errors_of(findings)
    if not errors:
        return
    first = errors[0]
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    hint = f"; {first.help}" if first.help else ""
    raise ConfigError(
        f"invalid {what} at `{first.path}`: {first.message}{hint}{more}",
        issues=tuple(sorted(findings, key=lambda f: f.severity != "error")),
    )


def load_config(
    config: Mapping[str, Any] | str | None, *, strict: bool = False
) -> tuple[ToolsConfig, tuple[ConfigIssue, ...]]:
    """Read a tools configuration (a dict, JSON text or ``None``) the way the spec reads it.

    Returns the model and the configuration's errors (see :func:`check_config`). With
    ``strict=True`` an error raises :class:`ConfigError`. A configuration that is not a JSON
    object always raises.
    """
    raw = as_object(config)
    model = read_config(raw)
    findings = lint_config(raw)
    if strict:
        raise_errors(findings)
    return model, tuple(errors_of(findings))


def check_config(config: Mapping[str, Any] | str | None) -> tuple[ConfigIssue, ...]:
    """The errors of a configuration, checked without a catalog (see
    :func:`cedarlite.tools.lint_config`, which also takes the run's tools and context)."""
    return load_config(config)[1]
