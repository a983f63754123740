"""Resolve the tools of a run through the compiled Cedar policies (docs/tool-policy.md §5-§10).

:func:`resolve_tools` is the whole layer: it builds (or reuses) the catalog of the run's tools and
the Cedar policies of the configuration, turns the run context into a Cedar request context, asks
the engine once per tool, and reports the survivors in input order, the step that removed each other
tool, the diagnostics of docs/tool-policy.md §10 and, when an explicit allowlist left nothing
callable, the guard error of docs/tool-policy.md §9. Python never filters here: every keep/remove is
a Cedar decision.

:class:`ToolPolicy` is the same, compiled once for a configuration and a catalog: the object to
keep around when a process resolves many runs or decides many calls.
"""

from __future__ import annotations

import json
import math
import os
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from typing import Any

from cachetools import LRUCache

from .._log import get_logger
from ..authorizer import is_authorized, is_authorized_batch
from ..data.entities import Entities
from ..data.request import Request
from ..data.response import Decision, Response
from ..data.values import I64_MAX, I64_MIN, EntityUID, Record
from ..engine.compiler.codegen import compile_predicate
from ..engine.evaluator import Evaluator
from ..errors import CedarliteError, PolicySetError, ValidationError
from ..lang.ast import Effect, Policy, ScopeOp
from ..policyset import PolicyOrigin, PolicySet
from ..schema.model import Schema
from ..schema.validator import ValidationIssue, ValidationResult, Validator
from .arguments import ArgumentPlan
from .catalog import (
    CORE_GROUPS,
    CORE_TOOL_IDS,
    GROUP_PLUGINS,
    ToolCatalog,
    ToolInfo,
    ToolsError,
    agent_uid,
    guard_depth,
    tool_list,
)
from .compile import (
    LAYER_COLLISION,
    LAYER_ID_CONFLICT,
    LAYER_OPTIONAL,
    LAYER_OWNER,
    LAYER_TOOLS_ENABLED,
    CompiledStep,
    ToolPolicySet,
    compile_config,
)
from .config import ConfigIssue, ToolsConfig, read_config
from .lint import (
    as_object,
    configured_agents,
    context_issues,
    did_you_mean,
    errors_of,
    lint_config,
    raise_errors,
)
from .names import js_trim, js_truthy, norm, norm_agent_id, trim_lower
from .params import ToolArgumentError, argument_plan, call_entity, cedar_schema
from .steps import STEP_LABELS

#: The engine every tool decision uses: cedarlite's compiled decision index (the reference
#: interpreter, ``"reference"``, gives the same answers).
ENGINE = "compiled"

log = get_logger("cedarlite.tools")

# ---------------------------------------------------------------------------------------------
# Errors


class EmptyAllowlistError(CedarliteError):
    """An explicit allowlist left no callable tool (docs/tool-policy.md §9); ``str()`` is the guard
    message.

    ``resolution`` is the :class:`ToolResolution` that triggered it.
    """

    code = "E0820"

    def __init__(self, message: str, resolution: ToolResolution | None = None) -> None:
        super().__init__(message)
        self.resolution = resolution

    def render(self) -> str:
        return self.message


# ---------------------------------------------------------------------------------------------
# The run context


@dataclass(frozen=True, slots=True)
class RunContext:
    """A run context (docs/tool-policy.md §4.3) normalized for the Cedar request.

    ``agent`` is the agent id (normalized, or the default agent of the configuration);
    ``provider`` is trimmed and lower-cased (``""`` when absent) and ``provider_model`` the
    model-specific byProvider key (``"<provider>/<model>"``, or the model id when it contains
    ``/``; ``""`` without a provider or a model); ``channel`` is trimmed and lower-cased,
    ``group_id`` trimmed; the flags count only when exactly ``true`` (``tools_enabled`` only
    when exactly ``false``); ``subagent_depth`` is the whole number given, else 0.
    """

    agent: str = "main"
    provider: str = ""
    provider_model: str = ""
    channel: str = ""
    group_id: str = ""
    sandboxed: bool = False
    sender_is_owner: bool = False
    subagent_depth: int = 0
    tools_enabled: bool = True

    @classmethod
    def of(cls, context: Mapping[str, Any] | None, config: ToolsConfig) -> RunContext:
        """Normalize a run context given as in docs/tool-policy.md §4.3."""
        if context is None:
            context = {}
        if not isinstance(context, Mapping):
            raise ToolsError("the run context must be a JSON object")
        agent_id = context.get("agentId")
        if isinstance(agent_id, str) and js_trim(agent_id):
            agent = norm_agent_id(agent_id)
        else:
            agent = default_agent(config)
        provider = trim_lower(context.get("provider"))
        model = trim_lower(context.get("model"))
        provider_model = ""
        if provider and model:
            provider_model = model if "/" in model else f"{provider}/{model}"
        group_id = context.get("groupId")
        return cls(
            agent=agent,
            provider=provider,
            provider_model=provider_model,
            channel=trim_lower(context.get("channel")),
            group_id=js_trim(group_id) if isinstance(group_id, str) else "",
            sandboxed=context.get("sandboxed") is True,
            sender_is_owner=context.get("senderIsOwner") is True,
            subagent_depth=_whole(context.get("subagentDepth")),
            tools_enabled=context.get("toolsEnabled") is not False,
        )

    @property
    def principal(self) -> EntityUID:
        """``Agent::"<agent>"``."""
        return agent_uid(self.agent)

    def record(self) -> Record:
        """The Cedar context record of a request (one shared object per run context, so that
        decision caches compare it by identity)."""
        return _record(self)

    def _build_record(self) -> Record:
        return Record(
            {
                "agent": self.agent,
                "provider": self.provider,
                "providerModel": self.provider_model,
                "channel": self.channel,
                "groupId": self.group_id,
                "sandboxed": self.sandboxed,
                "senderIsOwner": self.sender_is_owner,
                "subagentDepth": self.subagent_depth,
                "toolsEnabled": self.tools_enabled,
            }
        )


@lru_cache(maxsize=1024)
def _record(run: RunContext) -> Record:
    return run._build_record()


def _whole(value: Any) -> int:
    """A whole number (clamped to 64 bits), else 0."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    if isinstance(value, float) and (not math.isfinite(value) or not value.is_integer()):
        return 0
    return max(I64_MIN, min(I64_MAX, int(value)))


def default_agent(config: ToolsConfig) -> str:
    """The default agent (docs/tool-policy.md §5.1): the first list entry marked ``default``, else
    the first."""
    entries = [e for e in (config.agents.entries or ()) if e is not None] if config.agents else []
    if not entries:
        return "main"
    chosen = next((e for e in entries if js_truthy(e.default)), entries[0])
    return norm_agent_id(chosen.id if isinstance(chosen.id, str) else None)


# ---------------------------------------------------------------------------------------------
# Results


@dataclass(frozen=True)
class ToolDecision:
    """The Cedar answer for one tool of the run: its decision, and the layer that removed it."""

    tool: ToolInfo
    response: Response | None
    removed_by: str | None

    @property
    def allowed(self) -> bool:
        """The tool is offered to the model."""
        return self.removed_by is None


@dataclass(frozen=True)
class ToolResolution:
    """The tools a run may see.

    ``allowed``: names exactly as given, in input order. ``removed``: each other tool name → the
    label of the earliest layer (pipeline order) whose policy removed it. ``warnings``: the
    diagnostics of docs/tool-policy.md §10 and the registration diagnostics of docs/tool-policy.md
    §6.2. ``error``: the guard message of docs/tool-policy.md §9 when it applies
    (:func:`resolve_tools` raises it). ``findings``: the lint findings of the configuration and the
    run context (:func:`~cedarlite.tools.lint_config`).
    """

    allowed: list[Any]
    removed: dict[Any, str]
    warnings: list[str]
    error: str | None = None
    context: RunContext = field(default_factory=RunContext)
    decisions: tuple[ToolDecision, ...] = ()
    findings: tuple[ConfigIssue, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The output of docs/tool-policy.md §4.4: ``{"allowed": [...]}`` or ``{"error":
        "..."}``."""
        return {"error": self.error} if self.error is not None else {"allowed": list(self.allowed)}


@dataclass(frozen=True)
class StepTrace:
    """One layer of :func:`explain`: did it apply, what did it decide, and why.

    ``verdict`` is ``"removed"``, ``"kept"`` or ``"skipped"`` (the layer has no policy for this
    run). ``allow_matches``/``deny_matches`` are the configured entries that match the tool;
    ``policies`` the ``@id`` of the layer's Cedar policies, ``fired`` those that were satisfied;
    ``removed_as`` the configuration path that removed the tool (``tools.deny``).
    """

    label: str
    verdict: str
    allow_matches: tuple[Any, ...] = ()
    deny_matches: tuple[Any, ...] = ()
    policies: tuple[str, ...] = ()
    fired: tuple[str, ...] = ()
    removed_as: str | None = None

    def __str__(self) -> str:
        head = f"{self.label}: {self.verdict}"
        parts = [f"{head} by {self.removed_as}" if self.removed_as else head]
        if self.deny_matches:
            parts.append(f"deny {_matching(self.deny_matches)}")
        if self.allow_matches:
            parts.append(f"allow {_matching(self.allow_matches)}")
        elif self.verdict == "removed" and not self.deny_matches and self.policies:
            parts.append("no allow entry matches")
        return "; ".join(parts)


@dataclass(frozen=True)
class Explanation:
    """The step-by-step trace of one tool (:func:`explain`)."""

    tool: Any
    allowed: bool
    removed_by: str | None
    steps: tuple[StepTrace, ...]

    def __str__(self) -> str:
        head = f"{self.tool}: " + ("allowed" if self.allowed else f"removed by {self.removed_by}")
        return "\n".join([head, *(f"  {s}" for s in self.steps)])


def _matching(entries: Sequence[Any]) -> str:
    """``entry `cron` matches`` / ``entries `a`, `b` match``."""
    shown = ", ".join(f"`{e}`" for e in entries)
    return f"entry {shown} matches" if len(entries) == 1 else f"entries {shown} match"


# ---------------------------------------------------------------------------------------------
# The compiled policy of a configuration and catalog


class ToolPolicy:
    """A tools configuration compiled for one catalog (build once, resolve many runs).

    ``config`` is the JSON configuration (docs/tool-policy.md §4.1); ``tools`` the run's tool list
    (docs/tool-policy.md §4.2) or a :class:`ToolCatalog`; ``engine`` the cedarlite engine
    (``"compiled"`` or ``"reference"``, which agree).

    ``findings`` are the configuration's lint findings against this catalog
    (:func:`~cedarlite.tools.lint_config`), split into ``errors`` and ``warnings``. With
    ``strict=True`` (what a guard in front of calls wants) an error raises
    :class:`~cedarlite.tools.ConfigError` here, and every run context is checked by
    :meth:`check_context` before it is used; warnings (list entries that match nothing in
    this catalog: a plugin may be absent) are never raised. ``strict=False`` reads everything
    as OpenClaw does.
    """

    def __init__(
        self,
        config: Mapping[str, Any] | str | None,
        tools: Iterable[Mapping[str, Any]] | ToolCatalog,
        *,
        strict: bool = False,
        engine: str = ENGINE,
    ) -> None:
        self.engine = engine
        self.strict = strict
        raw = as_object(config)
        self.config = read_config(raw)
        self.catalog = tools if isinstance(tools, ToolCatalog) else ToolCatalog.from_tools(tools)
        self.findings: tuple[ConfigIssue, ...] = lint_config(raw, self.catalog)
        if strict:
            raise_errors(self.findings)
        self._agents = configured_agents(raw)
        self.policies: ToolPolicySet = compile_config(self.config, self.catalog)
        self.entities: Entities = self.catalog.entities
        self._merged: dict[Any, tuple[Any, PolicySet, Mapping[str, str]]] = {}
        self._applies: dict[int, Any] = {}
        self._labels = self.policies.labels
        self._targets = [(t, t.action, t.resource) for t in self.catalog.tools if t.registered]

    def __repr__(self) -> str:
        return f"<ToolPolicy: {len(self.policies)} policies, {len(self.catalog)} tools>"

    @property
    def errors(self) -> tuple[ConfigIssue, ...]:
        """The error findings of the configuration (a strict policy has none)."""
        return tuple(errors_of(self.findings))

    @property
    def warnings(self) -> tuple[ConfigIssue, ...]:
        """The warning findings: list entries that match nothing in this catalog."""
        return tuple(f for f in self.findings if f.severity == "warning")

    @property
    def issues(self) -> tuple[ConfigIssue, ...]:
        """The error findings (the name :func:`~cedarlite.tools.load_config` uses)."""
        return self.errors

    def check_context(self, context: Mapping[str, Any] | None) -> None:
        """For a strict policy, raise :class:`~cedarlite.tools.ConfigError` for a run context
        with unknown keys (``agentID``), values of the wrong type (``"sandboxed": "true"``) or
        an agent id the configuration does not list, each with a did-you-mean. A lenient
        policy accepts any context (the spec reads what it can)."""
        if self.strict:
            raise_errors(context_issues(context, self._agents), "run context")

    def context_findings(self, context: Mapping[str, Any] | None) -> tuple[ConfigIssue, ...]:
        """The findings :meth:`check_context` would raise, for any policy."""
        return tuple(context_issues(context, self._agents))

    def to_cedar(self) -> str:
        """The Cedar text of the compiled policies."""
        return self.policies.to_cedar()

    # -- deciding --------------------------------------------------------------------------

    def decide(self, run: RunContext) -> tuple[ToolDecision, ...]:
        """The Cedar decision for every tool of the catalog, in input order."""
        record = run.record()
        principal = run.principal
        requests = [
            Request(principal, action, resource, record) for _, action, resource in self._targets
        ]
        answers = iter(_authorize_all(requests, self.policies, self.entities, self.engine))
        out = []
        for t in self.catalog.tools:
            if not t.registered:
                label = LAYER_ID_CONFLICT if t.dropped == "plugin-id-conflict" else LAYER_COLLISION
                out.append(ToolDecision(t, None, label))
                continue
            response = next(answers)
            out.append(ToolDecision(t, response, self._removed_by(response)))
        return tuple(out)

    def _removed_by(self, response: Response) -> str | None:
        if response.decision is Decision.ALLOW and not response.errors:
            return None
        layers = [self.policies.plan.layer_of(pid) for pid in response.reasons]
        ranked = sorted(x for x in layers if x is not None)
        if ranked:
            return ranked[0][1]
        if response.errors:  # fail closed: a policy that cannot be evaluated removes the tool
            return f"error: {response.errors[0]}"
        return "no permit"  # pragma: no cover - the blanket permit always applies

    def applies(self, step: CompiledStep, run: RunContext) -> bool:
        """Whether a compiled step applies to a run (its condition, evaluated by Cedar)."""
        predicate = self._applies.get(id(step))
        if predicate is None:  # INVARIANT: ids of the plan's own steps (the plan keeps them)
            predicate = self._applies[id(step)] = compile_predicate(step.variant.applies)
        return predicate(run.principal, _ANY_ACTION, _ANY_RESOURCE, run.record(), self.entities)

    @guard_depth
    def resolve(self, context: Mapping[str, Any] | None) -> ToolResolution:
        """The tools offered to the model for a run (docs/tool-policy.md §4.4); never raises the
        guard.

        The resolution's ``findings`` are the configuration's and the context's lint findings.
        """
        self.check_context(context)
        run = RunContext.of(context, self.config)
        decisions = self.decide(run)
        allowed = [d.tool.name for d in decisions if d.allowed]
        allowed_keys = {_name_key(n) for n in allowed}
        removed: dict[Any, str] = {}
        for d in decisions:
            key = _name_key(d.tool.name)
            if d.removed_by is not None and key not in allowed_keys and key not in removed:
                removed[key] = d.removed_by
        steps = [s for s in self.policies.plan.steps if self.applies(s, run)]
        warnings = self._registration_notes(decisions) + _unknown_entry_warnings(steps, decisions)
        _emit(warnings)
        error = _guard(steps, decisions, run)
        findings = self.findings + self.context_findings(context)
        return ToolResolution(allowed, removed, warnings, error, run, decisions, findings)

    @staticmethod
    def _registration_notes(decisions: Sequence[ToolDecision]) -> list[str]:
        """The diagnostics of docs/tool-policy.md §6.2, in input order."""
        notes = []
        for d in decisions:
            if d.removed_by == LAYER_ID_CONFLICT:
                notes.append(f"plugin id conflicts with core tool name ({d.tool.plugin_id})")
            elif d.removed_by == LAYER_COLLISION:
                notes.append(f"plugin tool name conflict ({d.tool.plugin_id}): {d.tool.name}")
        return list(dict.fromkeys(notes))

    @guard_depth
    def explain(self, tool: Any, context: Mapping[str, Any] | None) -> Explanation:
        """The step-by-step trace of one tool (a name of the catalog, exactly as given)."""
        self.check_context(context)
        run = RunContext.of(context, self.config)
        info = tool if isinstance(tool, ToolInfo) else self.catalog.find(tool)
        if info is None:
            info = next((t for t in self.catalog.tools if _same_name(t.name, tool)), None)
        if info is None:
            names = [t.name for t in self.catalog.tools if isinstance(t.name, str)]
            raise ToolsError(f"no tool `{tool}` in the catalog", help=did_you_mean(tool, names))
        decision = next(d for d in self.decide(run) if d.tool.index == info.index)
        return Explanation(
            info.name, decision.allowed, decision.removed_by, self._trace(info, run, decision)
        )

    def _trace(
        self, info: ToolInfo, run: RunContext, decision: ToolDecision
    ) -> tuple[StepTrace, ...]:
        plan = self.policies.plan
        reasons = set(decision.response.reasons) if decision.response else set()
        ids = self._labels
        by_layer: dict[str, list[str]] = {}
        for pid, (_, label) in sorted(plan.layers.items(), key=lambda kv: kv[1][0]):
            by_layer.setdefault(label, []).append(pid)
        out: list[StepTrace] = []
        static = {"plugin-id-conflict": LAYER_ID_CONFLICT, "name-conflict": LAYER_COLLISION}
        if not info.registered:
            return (StepTrace(static[info.dropped or ""], "removed"),)
        for label in (LAYER_OPTIONAL, LAYER_COLLISION, LAYER_OWNER):
            out.append(self._layer_trace(label, by_layer.get(label, []), reasons, ids))
        ev = self._evaluator(info, run)
        for number, step in self._steps(run):
            if step is None:
                out.append(StepTrace(STEP_LABELS[number].format(agent=run.agent), "skipped"))
                continue
            fired, decided = self._fired(step, reasons)
            out.append(
                StepTrace(
                    step.variant.display_label,
                    "removed" if fired else "kept",
                    _holding(step.allow_entries, ev),
                    _holding(step.deny_entries, ev),
                    tuple(ids[p] for p in step.policy_ids),
                    tuple(ids[p] for p in fired),
                    decided,
                )
            )
        out.append(
            self._layer_trace(
                LAYER_TOOLS_ENABLED, by_layer.get(LAYER_TOOLS_ENABLED, []), reasons, ids
            )
        )
        return tuple(out)

    def removal_entries(self, decision: ToolDecision, run: RunContext) -> tuple[Any, ...]:
        """The configured deny entries that removed a tool (``github__delete_*`` of
        ``tools.deny``), from the layer that removed it; ``()`` when no deny entry did (a
        profile or an allowlist that lacks the tool, a default list, a registration rule)."""
        if decision.allowed or not decision.tool.registered or decision.response is None:
            return ()
        # What `_trace` finds, without tracing the steps that did not remove the tool: the
        # first step whose fired policies' first layer removed it and whose deny entries match.
        reasons = set(decision.response.reasons)
        ev = None
        for _, step in self._steps(run):
            if step is not None and self._fired(step, reasons)[1] == decision.removed_by:
                ev = ev or self._evaluator(decision.tool, run)
                found = _holding(step.deny_entries, ev)
                if found:
                    return found
        return ()

    def _fired(self, step: CompiledStep, reasons: set[str]) -> tuple[list[str], str | None]:
        """The policies of ``step`` among ``reasons`` (those that fired), and the label of the
        first layer among them (the one that removed the tool), ``None`` when none fired."""
        layers = self.policies.plan.layers
        fired = [p for p in step.policy_ids if p in reasons]
        decided = min((layers[p] for p in fired), default=None)
        return fired, decided[1] if decided else None

    def _steps(self, run: RunContext) -> Iterator[tuple[int, CompiledStep | None]]:
        """Each step number (1 to 9) of the plan, with the variant that applies to ``run``
        (the first), or ``None``."""
        steps = self.policies.plan.steps
        for number in range(1, 10):
            yield (
                number,
                next((s for s in steps if s.variant.step == number and self.applies(s, run)), None),
            )

    def _evaluator(self, info: ToolInfo, run: RunContext) -> Evaluator:
        """An evaluator of the entry conditions of ``info`` in ``run``."""
        request = Request(run.principal, info.action, info.resource, run.record())
        return Evaluator(request, self.entities)

    @staticmethod
    def _layer_trace(
        label: str, pids: list[str], reasons: set[str], ids: Mapping[str, str]
    ) -> StepTrace:
        fired = tuple(ids[p] for p in pids if p in reasons)
        verdict = "removed" if fired else ("kept" if pids else "skipped")
        return StepTrace(label, verdict, policies=tuple(ids[p] for p in pids), fired=fired)

    # -- calls -------------------------------------------------------------------------------

    @guard_depth
    def authorize_call(
        self,
        context: Mapping[str, Any] | None,
        tool: Any,
        params: Any,
        *,
        rules: PolicySet | str | None = None,
        call_id: str = "call",
    ) -> CallDecision:
        """May this call run? The tool must be offered to the run, and ``rules`` (argument
        policies such as ``policies/exec-commands.cedar``; best loaded once with
        :meth:`load_rules`, else validated on first use) must not forbid it.

        The arguments are checked against the tool's parameter schema and become the
        attributes of the call's resource (``resource.command``) and ``context.input``.
        Fails closed: a policy that cannot be evaluated denies the call. Raises
        :class:`~cedarlite.tools.params.ToolArgumentError` for an unknown tool or arguments
        that do not conform (and, for a strict policy, :class:`~cedarlite.tools.ConfigError`
        for a run context :meth:`check_context` refuses).
        """
        self.check_context(context)
        run = RunContext.of(context, self.config)
        info = self._called(tool, run)
        plan = self._argument_plans.get(info.key)
        if plan is None:  # built once per tool: plain data, reused by every call
            plan = self._argument_plans[info.key] = argument_plan(info)
        arguments = plan.convert(params)
        entity = call_entity(self.catalog, info, arguments, call_id)
        entities = self.entities.overlay([entity])
        record = Record({**run.record(), "input": arguments})
        request = Request(run.principal, info.action, entity.uid, record)
        policies, ids = self._with_rules(rules)
        response = is_authorized(request, policies, entities, engine=self.engine)
        if response.errors:  # fail closed
            response = Response(Decision.DENY, (), response.errors)
        return CallDecision(
            info.name, response.allowed, response, tuple(ids[r] for r in response.reasons)
        )

    def _called(self, tool: Any, run: RunContext) -> ToolInfo:
        candidates = [t for t in self.catalog.registered if _same_name(t.name, tool)]
        if not candidates:
            names = [t.name for t in self.catalog.registered if isinstance(t.name, str)]
            raise ToolArgumentError(f"unknown tool `{tool}`", help=did_you_mean(tool, names))
        if len(candidates) == 1:
            return candidates[0]
        allowed = {d.tool.index for d in self.decide(run) if d.allowed}
        return next((t for t in candidates if t.index in allowed), candidates[0])

    # -- argument rules ----------------------------------------------------------------------

    @cached_property
    def schema(self) -> Schema:
        """The Cedar schema of this catalog's calls (:func:`~cedarlite.tools.cedar_schema`)."""
        return cedar_schema(self.catalog)

    @cached_property
    def _argument_plans(self) -> dict[str, ArgumentPlan]:
        """Each called tool's argument plan (:func:`~cedarlite.tools.params.argument_plan`)."""
        return {}

    @cached_property
    def _validator(self) -> Validator:
        return Validator(self.schema)

    def load_rules(
        self,
        rules: PolicySet | str | Sequence[str | os.PathLike[str] | PolicySet] | os.PathLike[str],
        *,
        validate: bool = True,
    ) -> PolicySet:
        """Argument rules for :meth:`authorize_call`, checked against this catalog's schema.

        ``rules`` is a :class:`~cedarlite.PolicySet`, Cedar text, or ``.cedar`` paths (several
        files are merged as :meth:`PolicySet.merge` does: ids qualified with the file; a file
        already parsed may be given as its PolicySet). Each file is validated with
        :meth:`validate_rules`; any error raises :class:`~cedarlite.ValidationError` whose
        ``str()`` renders every issue with ``file:line:column`` and a caret (Cedar skips a
        policy that errors at run time, so a forbid naming a missing attribute would otherwise
        never fire). ``validate=False`` skips the check. The result can be passed as
        ``authorize_call(..., rules=...)``, and is returned as it is when loaded again for a
        catalog with the same fingerprint (validated once).
        """
        if isinstance(rules, RuleSet) and rules.checked == self.catalog.fingerprint:
            return rules
        if isinstance(rules, PolicySet):
            sets = [rules]
        elif isinstance(rules, str):
            sets = [_rules_text(rules)]
        else:
            paths = [rules] if isinstance(rules, os.PathLike) else list(rules)
            sets = [p if isinstance(p, PolicySet) else PolicySet.from_file(p) for p in paths]
            _one_file_per_id(sets)
        warnings: list[ValidationIssue] = []
        if validate:
            results = [self.validate_rules(ps) for ps in sets]
            issues = [i for r in results for i in r.errors]
            if issues:
                raise RulesError(issues)
            warnings = [w for r in results for w in r.warnings]
        merged = sets[0] if len(sets) == 1 else sets[0].merge(*sets[1:])
        checked = self.catalog.fingerprint if validate else _UNCHECKED
        return RuleSet.of(merged, checked, tuple(warnings))

    def validate_rules(self, rules: PolicySet | str) -> ValidationResult:
        """Cedar's strict validation of argument rules against :attr:`schema`, for a guard.

        Two findings change severity: a rule that applies to no tool of this catalog (its
        actions are tools the run does not have, or, for a rule on every action, no tool has
        the arguments it reads) is a warning, not an error: it can never apply, and never needs
        to. A *forbid* on named tools of this run that is impossible (false for every call the
        schema allows, e.g. ``resource has comand && ...``) is an error, not a warning: it
        guards nothing.
        """
        ps = rules if isinstance(rules, PolicySet) else PolicySet.from_str(rules, "<rules>")
        result = self._validator.validate(ps)
        absent = {p.id for p in ps if self._applies_to_no_tool(p)}
        errors: list[ValidationIssue] = []
        warnings: list[ValidationIssue] = []
        for issue in (*result.errors, *result.warnings):
            policy = ps.get(issue.policy_id)
            if issue.policy_id in absent and issue.code in _NO_TOOL_CODES:
                if issue.code == "invalid-action-application":
                    warnings.append(
                        replace(issue, code="no-tool-in-run", severity="warning",
                                message="this rule applies to no tool of this run")
                    )  # fmt: skip
            elif issue.code == "impossible-policy" and policy and policy.effect is Effect.FORBID:
                if policy.action.op is ScopeOp.ANY:  # a rule for whichever tool has an argument
                    warnings.append(
                        replace(issue, code="no-tool-in-run", message="this rule applies to no "
                                "tool of this run (none has the arguments it reads)")
                    )  # fmt: skip
                    continue
                errors.append(
                    replace(issue, severity="error", message="this forbid can never apply: it is "
                            "false for every call the schema allows", help=_IMPOSSIBLE_HELP)
                )  # fmt: skip
            else:
                (errors if issue.severity == "error" else warnings).append(issue)
        return ValidationResult(tuple(errors), tuple(warnings))

    def _applies_to_no_tool(self, policy: Policy) -> bool:
        """The rule's action scope names only actions that apply to nothing in this catalog."""
        actions = self._validator.scope_actions(policy.action)
        return bool(actions) and all(self.schema.actions[a].applies_to is None for a in actions)

    def _with_rules(self, rules: PolicySet | str | None) -> tuple[PolicySet, Mapping[str, str]]:
        """The compiled policies plus argument ``rules``, and each policy's ``@id`` label.

        Rules not loaded by :meth:`load_rules` for this catalog are validated first (once).
        """
        if rules is None:
            return self.policies, self._labels
        key = rules if isinstance(rules, str) else id(rules)
        cached = self._merged.get(key)
        # Text is its own key; a PolicySet is keyed by identity (checked: ids are reused).
        if cached is not None and (isinstance(rules, str) or cached[0] is rules):
            return cached[1], cached[2]
        extra: PolicySet
        if isinstance(rules, RuleSet) and rules.checked in (self.catalog.fingerprint, _UNCHECKED):
            extra = rules
        else:
            extra = self.load_rules(rules)
        renamed = [
            replace(
                p, id=f"rule{i}", annotations={"id": p.annotations.get("id", p.id), **p.annotations}
            )
            for i, p in enumerate(extra.active)
        ]
        merged = PolicySet([*self.policies, *renamed])
        labels = merged.labels
        if len(self._merged) > 16:
            self._merged.clear()
        self._merged[key] = (rules, merged, labels)
        return merged, labels


_UNCHECKED = "<not validated>"
_NO_TOOL_CODES = ("invalid-action-application", "impossible-policy")
_IMPOSSIBLE_HELP = (
    "check attribute names and types against the catalog's schema (`cedarlite tools schema`)"
)


class RuleSet(PolicySet):
    """Argument rules loaded by :meth:`ToolPolicy.load_rules`: a :class:`~cedarlite.PolicySet`
    that remembers the catalog it was validated against (``checked``) and the validation's
    ``warnings`` (rules that apply to no tool of the run, impossible permits...)."""

    __slots__ = ("checked", "warnings")

    def __init__(
        self,
        policies: Iterable[Policy],
        source: str | None,
        checked: str,
        warnings: tuple[ValidationIssue, ...] = (),
        origins: Mapping[str, PolicyOrigin] | None = None,
    ) -> None:
        super().__init__(policies, source=source, origins=origins)
        self.checked = checked
        self.warnings = warnings

    @classmethod
    def of(
        cls, policies: PolicySet, checked: str, warnings: tuple[ValidationIssue, ...] = ()
    ) -> RuleSet:
        """``policies`` as a rule set, each policy keeping the file and text it came from."""
        origins = {p.id: policies.origin(p.id) for p in policies}
        return cls(policies, policies.source, checked, warnings, origins=origins)


def _rules_text(text: str) -> PolicySet:
    """Rules given as one string: Cedar text. A file name there (``rules="x.cedar"``) is a
    mistake that would otherwise read as a Cedar syntax error: it says how to give a file."""
    try:
        return PolicySet.from_str(text, "<rules>")
    except CedarliteError:
        name = text.strip()
        if "\n" in name or not (
            name.endswith(".cedar") or name.startswith("cedarlite:") or os.path.exists(name)
        ):
            raise
    shown = json.dumps(name, ensure_ascii=False)
    if name.startswith("cedarlite:"):  # a shipped file, as the command line names it
        shown = f"cedarlite.shipped.policy_path({json.dumps(name.removeprefix('cedarlite:'))})"
    raise PolicySetError(
        f"`{name}` is a file name, but rules given as one string are Cedar text",
        source="<rules>",
        help=f"did you mean `rules=[{shown}]` (a list of .cedar files)?",
    ) from None


def _one_file_per_id(sets: Sequence[PolicySet]) -> None:
    """Two rule files may not give one ``@id`` to their policies: decisions, reasons and logs
    name policies by it (the policies of one file may share one, it is theirs)."""
    first: dict[str, tuple[PolicySet, Policy]] = {}
    for ps in sets:
        here: dict[str, tuple[PolicySet, Policy]] = {}
        for p in ps:
            name = p.annotations.get("id")
            if not name:
                continue
            seen = first.get(name)
            if seen is not None:
                other, q = seen
                line = f":{q.span.line}:{q.span.column}" if q.span is not None else ""
                source, text = ps.origin(p.id)
                where = other.origin(q.id).source or "another rule set"
                raise PolicySetError(
                    f"`{name}` is also the @id of a policy in `{where}{line}`: an @id names "
                    "one policy in decisions, reasons and logs",
                    span=p.span,
                    text=text,
                    source=source,
                    help="rename one of them (or load one of the files)",
                )
            here.setdefault(name, (ps, p))
        first.update(here)


class RulesError(ValidationError):
    """Argument rules that do not validate against the catalog's schema: ``issues`` holds
    every :class:`~cedarlite.ValidationIssue`; ``str()`` renders them all with their snippets.
    """

    def __init__(self, issues: Sequence[ValidationIssue]) -> None:
        n = len(issues)
        super().__init__(f"{n} validation error{'s' if n != 1 else ''} in the argument rules")
        self.issues = tuple(issues)

    def render(self) -> str:
        return "\n\n".join([*(i.render() for i in self.issues), f"error: {self.message}"])


@dataclass(frozen=True)
class CallDecision:
    """The decision on one tool call: ``allowed``, the Cedar ``response`` and, by ``@id``, the
    policies that determined it (the forbids that fired on a denial)."""

    tool: Any
    allowed: bool
    response: Response
    policies: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return self.allowed


def _holding(entries: Iterable[tuple[Any, Any]], ev: Evaluator) -> tuple[Any, ...]:
    """The configured entries whose compiled condition holds for ``ev``'s request."""
    return tuple(e for e, expr in entries if ev.evaluate(expr) is True)


def _same_name(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


_ANY_ACTION = EntityUID("Action", "")
_ANY_RESOURCE = EntityUID("Tool", "")


def _name_key(name: Any) -> Any:
    try:
        hash(name)
    except TypeError:
        return json.dumps(name, sort_keys=True, default=repr)
    return name


def _authorize_all(
    requests: Sequence[Request], policies: PolicySet, entities: Entities, engine: str
) -> list[Response]:
    """One decision per request against the same policies and entities."""
    return is_authorized_batch(requests, policies, entities, cache=True, engine=engine)


# ---------------------------------------------------------------------------------------------
# The guard (docs/tool-policy.md §9) and the diagnostics (docs/tool-policy.md §10)

_GUARD = (
    "No callable tools remain after resolving explicit tool allowlist ({sources}); {reason}. "
    "Fix the allowlist or enable the plugin that registers the requested tool."
)


def _guard(
    steps: Sequence[CompiledStep], decisions: Sequence[ToolDecision], run: RunContext
) -> str | None:
    sources = []
    for step in sorted(steps, key=lambda s: s.variant.step):
        if step.variant.step < 3:
            continue
        entries = [
            norm(e) for e in step.variant.policy.allow or () if isinstance(e, str) and js_trim(e)
        ]
        if entries:
            sources.append(f"{step.variant.label}: {', '.join(entries)}")
    if not sources or any(d.allowed and d.tool.normalized for d in decisions):
        return None
    reason = (
        "the selected model does not support tools"
        if not run.tools_enabled
        else "no registered tools matched"
    )
    return _GUARD.format(sources="; ".join(sources), reason=reason)


_GATED = (
    "These entries are shipped core tools but unavailable in the current "
    "runtime/provider/model/config."
)
_PLUGIN = "These entries won't match any tool unless the plugin is enabled."
_BOTH = (
    "Some entries are shipped core tools but unavailable in the current runtime/provider/model/"
    "config; other entries won't match any tool unless the plugin is enabled."
)


def _unknown_entry_warnings(
    steps: Sequence[CompiledStep], decisions: Sequence[ToolDecision]
) -> list[str]:
    """docs/tool-policy.md §10: unknown allowlist entries of steps 1-7, against the tools that
    entered."""
    entered = [
        d.tool for d in decisions
        if d.response is not None and (d.removed_by is None or _after_entry(d.removed_by))
    ]  # fmt: skip
    plugin_ids = {t.plugin_key for t in entered if t.is_plugin and t.plugin_key}
    plugin_names = {t.normalized for t in entered if t.is_plugin}
    core_names = {t.normalized for t in entered if not t.is_plugin}
    out = []
    for step in sorted(steps, key=lambda s: s.variant.step):
        v = step.variant
        if v.step > 7 or not any(isinstance(e, str) and js_trim(e) for e in v.policy.allow or ()):
            continue
        base = {norm(e) for e in v.base or ()} if v.step <= 2 else set()
        gated: list[str] = []
        unknown: list[str] = []
        for entry in dict.fromkeys(norm(e) for e in v.policy.allow or ()):
            if not entry or entry == "*" or entry in base:
                continue
            if entry == GROUP_PLUGINS or entry in plugin_ids or entry in plugin_names:
                continue
            if any(m in core_names for m in CORE_GROUPS.get(entry, (entry,))):
                continue
            (gated if entry in CORE_TOOL_IDS else unknown).append(entry)
        if gated or unknown:
            detail = _BOTH if gated and unknown else (_GATED if gated else _PLUGIN)
            listed = ", ".join([*gated, *unknown])
            out.append(
                f"tools: {v.display_label} allowlist contains unknown entries ({listed}). {detail}"
            )
    return out


def _after_entry(label: str) -> bool:
    """The tool entered the pipeline: it was removed by a step or by ``toolsEnabled``."""
    return label not in (LAYER_ID_CONFLICT, LAYER_OPTIONAL, LAYER_COLLISION, LAYER_OWNER)


_emitted: LRUCache[str, bool] = LRUCache(maxsize=256)
_emitted_lock = threading.Lock()


def _emit(warnings: Iterable[str]) -> None:
    """Log each warning once per process (the 256 most recent distinct warnings are kept)."""
    for w in warnings:
        with _emitted_lock:
            if _emitted.get(w):
                continue
            _emitted[w] = True
        log.warning(w)


# ---------------------------------------------------------------------------------------------
# The API

_policies: LRUCache[tuple[str, str], ToolPolicy] = LRUCache(maxsize=64)
_catalogs: LRUCache[str, ToolCatalog] = LRUCache(maxsize=64)
_cache_lock = threading.Lock()


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=repr, ensure_ascii=False)


@guard_depth
def tool_policy(
    config: Mapping[str, Any] | None, tools: Iterable[Mapping[str, Any]] | ToolCatalog
) -> ToolPolicy:
    """The :class:`ToolPolicy` of a configuration and tool list, compiled once and cached.

    A new catalog (other tools) means a new compilation; the cache holds 64 of each.
    """
    if isinstance(tools, ToolCatalog):
        catalog = tools
    else:
        tools = tool_list(tools)
        tools_key = _key(tools)
        with _cache_lock:
            catalog = _catalogs.get(tools_key)  # type: ignore[assignment]
        if catalog is None:
            catalog = ToolCatalog.from_tools(tools)
            with _cache_lock:
                _catalogs[tools_key] = catalog
    key = (_key(config), catalog.fingerprint)
    with _cache_lock:
        policy = _policies.get(key)
    if policy is None:
        policy = ToolPolicy(config, catalog)
        with _cache_lock:
            _policies[key] = policy
    return policy


@guard_depth
def resolve_tools(
    config: Mapping[str, Any] | None,
    tools: Iterable[Mapping[str, Any]] | ToolCatalog,
    context: Mapping[str, Any] | None,
) -> ToolResolution:
    """Resolve the tools offered to the model for a run (docs/tool-policy.md §1, docs/tool-policy.md
    §4-§10).

    ``config`` is the tools configuration (docs/tool-policy.md §4.1), ``tools`` the run's tools
    (docs/tool-policy.md §4.2), ``context`` the run context (docs/tool-policy.md §4.3). Every
    decision is made by the compiled Cedar policies. Raises :class:`EmptyAllowlistError` (whose
    ``str()`` is the message of docs/tool-policy.md §9) when an explicit allowlist left no callable
    tool, :class:`~cedarlite.tools.ConfigError` for a configuration that is not an object.
    """
    resolution = tool_policy(config, tools).resolve(context)
    if resolution.error is not None:
        raise EmptyAllowlistError(resolution.error, resolution)
    return resolution


@guard_depth
def authorize_call(
    config: Mapping[str, Any] | None,
    tools: Iterable[Mapping[str, Any]] | ToolCatalog,
    context: Mapping[str, Any] | None,
    tool: Any,
    params: Any,
    *,
    rules: PolicySet | str | None = None,
) -> CallDecision:
    """Decide one call of ``tool`` with ``params`` (see :meth:`ToolPolicy.authorize_call`)."""
    return tool_policy(config, tools).authorize_call(context, tool, params, rules=rules)


@guard_depth
def explain(
    config: Mapping[str, Any] | None,
    tool: Any,
    context: Mapping[str, Any] | None,
    tools: Iterable[Mapping[str, Any]] | ToolCatalog | None = None,
) -> Explanation:
    """The step-by-step trace for one tool: each layer's verdict, the matching entries and the
    Cedar policy ids.

    ``tool`` is a tool object (docs/tool-policy.md §4.2) or a name; ``tools`` the run's tools
    (default: just this one tool).
    """
    if tools is None:
        tools = [tool if isinstance(tool, Mapping) else {"name": tool}]
    name = tool.get("name") if isinstance(tool, Mapping) else tool
    return tool_policy(config, tools).explain(name, context)
