"""The before-tool-call guard (spec §11): one object per agent run that decides every call.

For one call, in order (the first check that blocks ends it):

1. the name is normalized; a tool the run does not offer is blocked (``not-offered``);
2. the arguments must be JSON (at most :data:`~cedarlite.hooks._json.MAX_PARAM_DEPTH` deep)
   and conform to the tool's parameter schema (``invalid-arguments``);
3. loop detection (§11.2), when the call has a session key: a critical result vetoes the call
   (``tool-loop``); a warning is emitted once per bucket; the call is recorded;
4. the compiled Cedar decision over the tool layer and the ``rules``: a satisfied forbid
   without ``@ask`` blocks (``policy``, its ``@reason``), so does a forbid or ``@ask`` policy
   that fails to evaluate (unless annotated ``@onError("skip")``); a satisfied ``@ask``
   policy requires an approval;
5. trusted policies (registration order): block, require an approval, replace the params;
6. hooks (§11.3): descending priority, sticky block, last params, first approval;
7. approvals (§11.4): ``before_tool_call`` answers ``"ask"`` with the pending requests;
   ``abefore_tool_call`` asks the ``approver``. ``allow-always`` is remembered per session.

Every exception of the guard's own (engine, state store, decision log, a bug) blocks the call
with the spec's failure reason; hook errors do too unless ``fail_closed=False``. Each decision
is appended to the decision log, when there is one, before it is returned.
"""

from __future__ import annotations

import inspect
import json
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Generator, Iterable, Mapping
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any, NamedTuple

from .._log import get_logger
from ..entities import Entity, load_json, overlay_closed, with_attrs
from ..response import Decision, PolicyError, Response
from ..tools.arguments import ArgumentPlan, ToolArgumentError
from ..tools.catalog import ToolCatalog, ToolInfo, tool_list
from ..tools.names import js_truthy, norm, norm_agent_id
from ..values import EntityUID, Record
from . import _json, loops
from .approvals import (
    CANCELLED,
    SEVERITIES,
    ApprovalRequest,
    Approver,
    AskSpec,
    GuardError,
    ask_spec,
    hook_request_fields,
    hook_request_problem,
    request_approval,
)
from .state import DEFAULT_STORE, SessionState, SessionStore

if TYPE_CHECKING:
    from ..ast import Policy
    from ..compiler.index import Leaf
    from ..policyset import PolicySet
    from ..tools.resolve import ToolPolicy, ToolResolution
    from .decision_log import DecisionLog

# Deciding needs the catalog, the compiled parameter checks and the compiled policies; building
# a guard also needs the configuration models (pydantic), the compilers, the parser and the
# schema model: those are imported where a guard is built, so that a process that loads a built
# guard (a hook, one process per tool call) decides without them (tests/test_layering.py), and
# so is the decision log, when there is none.

log = get_logger("cedarlite.hooks")

#: The reason of a failure of the guard itself or of a hook (spec §11.1.5).
HOOK_FAILED = "Tool call blocked because before_tool_call hook failed"
TRUSTED_BLOCKED = "Tool call blocked by trusted plugin policy"
HOOK_BLOCKED = "Tool call blocked by plugin hook"

#: The run-context keys of spec §4.3 (the decision log records these).
CONTEXT_KEYS = (
    "agentId",
    "provider",
    "model",
    "channel",
    "groupId",
    "sandboxed",
    "senderIsOwner",
    "subagentDepth",
    "toolsEnabled",
)

_STARTED_CAP = 4096

HookHandler = Callable[[dict[str, Any], dict[str, Any]], Any]
EventSink = Callable[[dict[str, Any]], Any]


# ---------------------------------------------------------------------------------------------
# The outcome


class Outcome(NamedTuple):
    """The guard's answer for one call.

    ``action`` is ``"allow"``, ``"block"`` or ``"ask"``; ``tool`` the normalized tool name;
    ``params`` the arguments the tool runs with (hooks may have rewritten them); ``reason`` the
    text the model (or the person asked) reads; ``denied_reason`` one of ``tool-loop``,
    ``plugin-before-tool-call``, ``plugin-approval``, ``policy``, ``not-offered``,
    ``invalid-arguments``, ``host`` (:meth:`Guard.refuse`) (``None`` unless blocked);
    ``policies`` the labels of the determining Cedar policies; ``errors`` the policies that
    failed to evaluate; ``approval`` the first pending approval request of an ``"ask"`` (all of
    them in ``approvals``); ``failure`` whether a block is a failure (an error result) rather
    than a veto (spec §11.5); ``warnings`` the loop warnings emitted for this call; ``error``
    the cause of a failure of the guard or of a hook (what the decision log's ``error`` says),
    else ``None``. (An immutable record; a named tuple because one is built per call.)
    """

    action: str
    tool: str
    params: Any = None
    reason: str | None = None
    denied_reason: str | None = None
    policies: tuple[str, ...] = ()
    errors: tuple[PolicyError, ...] = ()
    approval: ApprovalRequest | None = None
    approvals: tuple[ApprovalRequest, ...] = ()
    failure: bool = False
    warnings: tuple[str, ...] = ()
    error: str | None = None

    @property
    def allowed(self) -> bool:
        """``action == "allow"``."""
        return self.action == "allow"

    @property
    def blocked(self) -> bool:
        """``action == "block"``."""
        return self.action == "block"

    def citing_policies(self, text: str) -> str:
        """``text`` followed by the determining policies (``@id`` labels) it does not already
        name: ``"... (policy exec.dangerous)"``, for reasons shown outside the guard."""
        named = [p for p in self.policies if p not in text]
        return f"{text} (policy {', '.join(named)})" if named else text

    def to_tool_result(self) -> dict[str, Any] | None:
        """The tool result the model receives for a block (spec §11.5); ``None`` otherwise.

        A veto is ``{"content": [text], "details": {"status": "blocked", "deniedReason",
        "reason"}}``; a failure ``{"content": [payload as 2-space JSON], "details": payload}``
        with payload ``{"status": "error", "tool", "error"}``.
        """
        if self.action != "block":
            return None
        reason = self.reason or ""
        if self.failure:
            payload = {"status": "error", "tool": self.tool, "error": reason}
            text = _pretty(payload)
            return {"content": [{"type": "text", "text": text}], "details": payload}
        return {
            "content": [{"type": "text", "text": reason}],
            "details": {
                "status": "blocked",
                "deniedReason": self.denied_reason or "plugin-before-tool-call",
                "reason": reason,
            },
        }


_outcome: Callable[[tuple[Any, ...]], Outcome] = partial(tuple.__new__, Outcome)
"""An :class:`Outcome` of all twelve fields, in order (``Outcome._make`` without its checks)."""


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


# ---------------------------------------------------------------------------------------------
# One call in flight


class _Call:
    """The working record of one call (never escapes the guard)."""

    __slots__ = (
        "approvals_log",
        "approving",
        "args",
        "asks",
        "call_id",
        "canonical",
        "digest",
        "error",
        "errors",
        "info",
        "log_params",
        "name",
        "original",
        "params",
        "policies",
        "policy_ask",
        "rewritten",
        "run",
        "session",
        "session_id",
        "started",
        "tool",
        "waited",
        "warnings",
    )

    def __init__(self, name: Any, params: Any, call: Any) -> None:
        # (Built for every call: each field is set once, the call's fields read only when
        # there is a call.)
        self.started = time.perf_counter_ns()
        self.name = name
        self.tool = norm(name) or "tool"
        self.original = self.params = params
        self.session: str | None = None
        self.call_id: str | None = None
        self.run: str | None = None
        self.session_id: str | None = None
        self.error: str | None = None
        if call is not None:
            self._read_call(call)
        self.info: ToolInfo | None = None
        self.canonical: str | None = None
        self.digest: str | None = None
        self.args: str | None = None
        self.policies: tuple[str, ...] = ()
        self.errors: tuple[PolicyError, ...] = ()
        self.policy_ask: ApprovalRequest | None = None
        self.asks: tuple[ApprovalRequest, ...] = ()
        self.rewritten = False
        self.approvals_log: tuple[dict[str, Any], ...] = ()
        self.warnings: tuple[str, ...] = ()
        self.waited = 0.0
        self.approving = False
        self.log_params: tuple[str, list[str]] | None = None

    def _read_call(self, call: Any) -> None:
        """The session key, call id, run id and session id of the call dict."""
        try:
            if not isinstance(call, Mapping):
                self.error = f"the call must be a dict, not `{type(call).__name__}`"
                return
            get = call.get
            self.session = _text(get("sessionKey"))
            self.call_id = _text(get("toolCallId"))
            self.run = _text(get("runId"))
            self.session_id = _text(get("sessionId"))
        except Exception as err:  # a hostile Mapping: treated as a malformed call
            self.error = f"the call cannot be read: {err}"

    @property
    def call(self) -> dict[str, str | None]:
        """The call as approval requests carry it: ``sessionKey``, ``toolCallId``, ``runId``."""
        return {"sessionKey": self.session, "toolCallId": self.call_id, "runId": self.run}

    def canonical_params(self) -> str:
        """The canonical JSON of the params the model sent (computed once, when asked: the
        guard has checked them to be JSON before anything asks)."""
        if self.canonical is None:
            self.canonical = _json.canonical(self.original)
        return self.canonical

    def params_digest(self) -> str:
        """The SHA-256 of :meth:`canonical_params` (loop detection, approval keys)."""
        if self.digest is None:
            self.digest = _json.sha256(self.canonical_params())
        return self.digest


def _text(value: Any) -> str | None:
    """A call field: a non-empty string, else ``None``."""
    return value if isinstance(value, str) and value else None


class _Raised:
    """A handler's exception, handed to the hook plan."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


class _HookFailure(Exception):
    """A trusted policy or (fail-closed) hook failed: the call fails."""


_Plan = Generator[tuple[HookHandler, tuple[Any, ...]], Any, "Outcome | None"]


# ---------------------------------------------------------------------------------------------
# The guard


class Guard:
    """The before-tool-call guard of one agent run.

    ``config``, ``tools`` and ``context`` as for :func:`cedarlite.tools.resolve_tools`
    (spec §4); ``rules`` extra Cedar (a :class:`~cedarlite.PolicySet`, Cedar text, or a list
    of ``.cedar`` paths, or of PolicySets parsed from files): argument conditions, ``@ask``
    policies. ``on_event`` receives the ``tool.loop`` and ``tool.execution.*`` events as
    dicts. ``decision_log`` is a path to append one JSON line per decision to.
    ``fail_closed=False`` lets a failing hook handler be ignored (never an error of the guard
    itself). ``approver`` is an async callable answering :class:`ApprovalRequest` s.
    ``strict`` (the default) selects the tool layer's strict reading of the configuration,
    context and rules. ``session_store`` keeps loop histories and ``allow-always`` approvals
    (default: one store per process).

    Raises :class:`~cedarlite.tools.EmptyAllowlistError` when an explicit allowlist leaves the
    run no tool (spec §9), and a :class:`~cedarlite.CedarliteError` for bad input.

    A guard pickles: the copy decides alike, bound to the process that loads it (see
    :meth:`__setstate__`).
    """

    # `None` on a guard restored from a pickle until asked for (rebuilt from the inputs).
    _policy: ToolPolicy | None
    _policies: PolicySet | None
    _resolution: ToolResolution | None
    _rules_text: str
    # Per offered tool (by key), made on its first call: its action and the compiled leaves
    # its calls reach (see `_index_tools`).
    _routes: dict[str, tuple[EntityUID, tuple[tuple[Leaf, ...], ...]]]

    def __init__(
        self,
        config: Mapping[str, Any] | str | None,
        tools: Iterable[Mapping[str, Any]] | ToolCatalog,
        context: Mapping[str, Any] | None,
        *,
        rules: PolicySet
        | str
        | os.PathLike[str]
        | Iterable[str | os.PathLike[str] | PolicySet]
        | None = None,
        on_event: EventSink | None = None,
        decision_log: str | os.PathLike[str] | None = None,
        fail_closed: bool = True,
        approver: Approver | None = None,
        strict: bool = True,
        session_store: SessionStore | None = None,
    ) -> None:
        self.on_event = on_event
        self.fail_closed = fail_closed
        self.approver = approver
        self.strict = strict
        self.session_store: SessionStore = DEFAULT_STORE if session_store is None else session_store
        if not isinstance(tools, ToolCatalog):
            tools = tool_list(tools)
        self._policy, rule_policies = self._build(config, tools, rules, context, strict)
        self._entities = self.policy.entities
        # Per tool (by key): its call entity without arguments and its argument plan, made
        # once for every run context (`for_context` shares this dict; see `_index_tools`).
        self._per_tool: dict[str, tuple[Entity, ArgumentPlan]] = {}
        self._compile_rules(rule_policies)
        config_value, tools_value = _config_value(config), _tools_value(tools)
        from .decision_log import policy_hash

        self.policy_hash = policy_hash(config_value, tools_value, self._rules_text)
        # What rebuilds `policy`, `policies` and `resolution` for a guard restored from a pickle
        # (the run context is added by `_start_run`).
        self._inputs: tuple[Any, ...] = (config_value, tools_value, {}, strict)
        self._start_run(context)
        self._hooks: tuple[tuple[float, int, str, HookHandler], ...] = ()
        self._trusted: tuple[tuple[str, HookHandler], ...] = ()
        self._registered = 0
        self._log: DecisionLog | None = None
        if decision_log is not None:
            self.open_decision_log(decision_log)

    def for_context(self, context: Mapping[str, Any] | None) -> Guard:
        """A guard for another run (another run context) of the same configuration, tools and
        rules, sharing everything that does not depend on the run: the compiled policies, the
        policy hash, hooks, trusted policies, ``on_event``, ``approver`` and session store.

        This costs a resolution of the run's tools, not a compilation. The new guard appends
        to the same decision log file (through its own descriptor). Raises as the constructor
        does for a bad or (strict) unknown context, or an empty allowlist.
        """
        self.policy.check_context(context)  # a no-op for a lenient policy
        # A shallow copy of everything (not copy.copy, which would go through the pickling
        # state and leave out the hooks, the approver and the compiled policies).
        other = object.__new__(Guard)
        other.__dict__.update(self.__dict__)
        other._start_run(context)
        if self._log is not None:
            other._log = None  # its own descriptor: closing one guard's log leaves the other's
            other.open_decision_log(self._log.path)
        return other

    def _start_run(self, context: Mapping[str, Any] | None) -> None:
        """Everything that depends on the run context: the tools offered and their index, the
        agent and its loop settings, the context as the log writes it."""
        from ..tools.resolve import EmptyAllowlistError

        resolution = self.policy.resolve(context)
        if resolution.error is not None:
            raise EmptyAllowlistError(resolution.error, resolution)
        self._resolution = resolution
        run = resolution.context
        self.agent: str = run.agent
        self._principal = run.principal
        self._record = run.record()
        self._tools = tuple(resolution.allowed)
        self._index_tools(resolution)
        self.loop_settings = loops.LoopSettings.resolve(*self._loop_config())
        from .decision_log import redacted_json

        given = context if isinstance(context, Mapping) else {}
        config_value, tools_value, _, strict = self._inputs
        self._inputs = (config_value, tools_value, dict(given), strict)
        self._context_json, self._context_redacted = redacted_json(
            {k: given[k] for k in CONTEXT_KEYS if k in given}, "/context"
        )
        self._started: OrderedDict[tuple[str | None, str], float] = OrderedDict()
        self._started_lock = threading.Lock()

    # -- pickling: hook processes start once per call and load a built guard -----------------

    #: What a pickled guard leaves out: the process's (store, log, hooks, approver, events,
    #: started calls), and the tool policy, the syntax trees and the resolution (rebuilt from
    #: the inputs if asked for: loading them would need the configuration models).
    _UNPICKLED = frozenset(
        {
            "on_event", "approver", "session_store", "_log", "_hooks", "_trusted",
            "_registered", "_started", "_started_lock", "_policy", "_policies", "_resolution",
            "_routes",
        }
    )  # fmt: skip

    def __getstate__(self) -> dict[str, Any]:
        """Everything the guard decides with (plain data and the compiled policies)."""
        return {k: v for k, v in self.__dict__.items() if k not in self._UNPICKLED}

    def __setstate__(self, state: dict[str, Any]) -> None:
        """A restored guard decides as the pickled one did, with the process's defaults:
        the default session store, no decision log, hooks, trusted policies, approver or
        ``on_event`` (set the attributes, :meth:`open_decision_log`)."""
        self.__dict__.update(state)
        self.on_event = None
        self.approver = None
        self.session_store = DEFAULT_STORE
        self._log = None
        self._hooks = ()
        self._trusted = ()
        self._registered = 0
        self._started = OrderedDict()
        self._started_lock = threading.Lock()
        self._policy = None
        self._policies = None
        self._resolution = None
        self._routes = {}  # (leaves of the compiled set: walked again in this process)

    def open_decision_log(self, path: str | os.PathLike[str]) -> None:
        """Append every later decision to the JSON Lines file ``path`` (the ``decision_log``
        of the constructor; a log already open is closed). Raises :class:`GuardError` if the
        file cannot be opened."""
        from .decision_log import DecisionLog

        try:
            log_file = DecisionLog(path)
        except OSError as err:
            raise GuardError(
                f"cannot open the decision log `{os.fspath(path)}`: {err.strerror}"
            ) from None
        if self._log is not None:
            self._log.close()
        self._log = log_file

    def _rebuild(self) -> None:
        """``policy``, ``policies`` and ``resolution`` of a restored guard: built again from
        its inputs."""
        config, tools, context, strict = self._inputs
        again = Guard(config, tools, context, rules=self._rules_text or None, strict=strict)
        self._policy, self._policies = again._policy, again._policies
        self._resolution = again._resolution

    # -- construction ----------------------------------------------------------------------

    @staticmethod
    def _build(
        config: Any, tools: Any, rules: Any, context: Any, strict: bool
    ) -> tuple[ToolPolicy, list[tuple[Policy, str | None]]]:
        """The compiled tool policy and the rules' policies (with their sources).

        Strict (the default): configuration mistakes raise :class:`~cedarlite.tools.ConfigError`,
        a run context with unknown keys or agents raises it too, and rules that do not validate
        against the catalog's schema raise :class:`~cedarlite.tools.RulesError`.
        """
        from ..tools.resolve import ToolPolicy

        policy = ToolPolicy(config, tools, strict=strict)
        policy.check_context(context)  # a no-op for a lenient policy
        return policy, _load_rules(policy, rules, strict)

    def _compile_rules(self, rule_policies: list[tuple[Policy, str | None]]) -> None:
        """Merge the rules into the tool layer's policies, once: rules get ids ``rule<n>`` and
        keep their ``@id`` label; ``@ask`` policies become permits whose satisfaction asks."""
        from ..ast import Effect
        from ..compiler import compiled
        from ..policyset import PolicySet

        policies: list[Policy] = list(self.policy.policies)
        asks: dict[str, AskSpec] = {}
        ask_forbids: set[str] = set()
        blocking: set[str] = {p.id for p in policies if p.effect is Effect.FORBID}
        for i, (p, source) in enumerate(rule_policies):
            pid = f"rule{i}"
            label = p.annotations.get("id", p.id)
            on_error = p.annotations.get("onError", "block")
            if on_error not in ("block", "skip"):
                raise GuardError(
                    f"policy `{label}`: @onError(`{on_error}`) must be `block` or `skip`",
                    span=p.span,
                    source=source,
                )
            effect = p.effect
            if "ask" in p.annotations:
                asks[pid] = ask_spec(p, label, source)
                if effect is Effect.FORBID:
                    ask_forbids.add(pid)
                effect = Effect.PERMIT  # INVARIANT: satisfied asks show up in Allow reasons
            if (p.effect is Effect.FORBID or "ask" in p.annotations) and on_error == "block":
                blocking.add(pid)
            annotations = {"id": label, **p.annotations}
            policies.append(replace(p, id=pid, effect=effect, annotations=annotations))
        merged = PolicySet(policies, source="<guard>")
        self._policies = merged
        self._rules_text = (
            PolicySet([p for p, _ in rule_policies]).to_cedar() if rule_policies else ""
        )
        self._compiled = compiled(merged)
        self._labels = {p.id: p.annotations.get("id", p.id) for p in policies}
        self._reasons = {
            p.id: p.annotations["reason"] for p in policies if "reason" in p.annotations
        }
        self._asks = asks
        self._ask_forbids = frozenset(ask_forbids)
        self._blocking_errors = frozenset(blocking)

    def _index_tools(self, resolution: ToolResolution) -> None:
        """Offered tools by exact and normalized name, with their compiled parameter checks;
        removed tools' layer (with the deny entries that matched: ``tools.deny:
        github__delete_*``) and policies."""
        from ..tools.params import argument_plan, call_entity

        self._by_name: dict[str, ToolInfo] = {}
        self._by_norm: dict[str, ToolInfo] = {}
        # The resource entity of each tool's calls, without arguments, its ancestors closed
        # through the store once here (per call: one copy with the arguments, laid over the
        # store by `overlay_closed`, which neither copies the store nor closes again).
        self._call_entities: dict[str, Entity] = {}
        # The action of each tool's calls and the leaves of the policies whose scope holds for
        # them (the principal, action and call entity, and so their ancestors, are fixed per
        # tool and run): the scope walk is made on a tool's first call, not on every call.
        self._routes = {}
        self._arguments: dict[str, ArgumentPlan] = {}
        self._removed: dict[str, tuple[ToolInfo, str, tuple[str, ...]]] = {}
        per_tool = self._per_tool
        for d in resolution.decisions:
            t = d.tool
            if d.allowed:
                parts = per_tool.get(t.key)
                if parts is None:  # (two threads may both make it: the same value)
                    proto = call_entity(self.policy.catalog, t, Record(), "call")
                    parts = (self._entities.overlay([proto])[proto.uid], argument_plan(t))
                    per_tool[t.key] = parts
                self._call_entities[t.key], self._arguments[t.key] = parts
                if isinstance(t.name, str):
                    self._by_name.setdefault(t.name, t)
                self._by_norm.setdefault(t.normalized, t)
            elif d.removed_by is not None:
                if t.normalized in self._removed:
                    continue
                reasons = d.response.reasons if d.response is not None else ()
                labels = tuple(self._labels.get(r, r) for r in reasons)
                layer = d.removed_by
                # Only a deny list names an entry (a profile or allowlist lacks the tool).
                entries = (
                    self.policy.removal_entries(d, resolution.context) if "deny" in layer else ()
                )
                if entries:
                    layer += ": " + ", ".join(e if isinstance(e, str) else repr(e) for e in entries)
                self._removed[t.normalized] = (t, layer, labels)

    def _loop_config(self) -> tuple[Any, Any]:
        """``tools.loopDetection`` and the run's agent's ``loopDetection``."""
        config = self.policy.config
        global_value = config.tools.loop_detection if config.tools else None
        agent_value = None
        for entry in (config.agents.entries if config.agents else None) or ():
            if entry is None:
                continue
            if norm_agent_id(entry.id if isinstance(entry.id, str) else None) == self.agent:
                agent_value = entry.tools.loop_detection if entry.tools else None
                break
        return global_value, agent_value

    # -- public surface ----------------------------------------------------------------------

    @property
    def policy(self) -> ToolPolicy:
        """The compiled tool policy of the configuration and catalog (spec §4-§10)."""
        if self._policy is None:
            self._rebuild()
        assert self._policy is not None
        return self._policy

    @property
    def resolution(self) -> ToolResolution:
        """The run's tool resolution (spec §4.4): the offered tools and why others are not."""
        if self._resolution is None:
            self._rebuild()
        assert self._resolution is not None
        return self._resolution

    @property
    def tools(self) -> list[Any]:
        """The names of the tools offered to the model for this run (spec §4.4), in order."""
        return list(self._tools)

    @property
    def policies(self) -> PolicySet:
        """The compiled policy set the guard decides with (tool layer and rules)."""
        if self._policies is None:
            self._rebuild()
        assert self._policies is not None
        return self._policies

    def __repr__(self) -> str:
        tools, policies = len(self._tools), len(self._labels)
        return f"<Guard agent={self.agent!r}: {tools} tools, {policies} policies>"

    def __enter__(self) -> Guard:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the decision log (later decisions are blocked: they cannot be logged)."""
        if self._log is not None:
            self._log.close()

    def register_hook(
        self, handler: HookHandler, *, priority: float = 0, plugin_id: str | None = None
    ) -> None:
        """Register an OpenClaw ``before_tool_call`` handler: ``handler(event, ctx)`` returns
        ``None`` or a dict with ``block``, ``blockReason``, ``params``, ``requireApproval``
        (an awaitable of one with :meth:`abefore_tool_call`). Higher ``priority`` runs first;
        ``plugin_id`` defaults to the handler's qualified name."""
        plugin = self._plugin(handler, plugin_id)
        if isinstance(priority, bool) or not isinstance(priority, int | float):
            raise GuardError(f"hook priority must be a number, not `{priority!r}`")
        self._registered += 1
        hooks = [*self._hooks, (-float(priority), self._registered, plugin, handler)]
        self._hooks = tuple(sorted(hooks, key=lambda h: (h[0], h[1])))

    def register_trusted_policy(
        self, handler: HookHandler, *, plugin_id: str | None = None
    ) -> None:
        """Register a trusted tool policy (evaluated before hooks, in registration order):
        ``handler(event, ctx)`` returns ``None`` or a dict with ``block``, ``blockReason``,
        ``params`` (the params hooks then see), ``requireApproval``. Its failures always
        block the call."""
        self._trusted = (*self._trusted, (self._plugin(handler, plugin_id), handler))

    @staticmethod
    def _plugin(handler: Any, plugin_id: str | None) -> str:
        if not callable(handler):
            raise GuardError(f"a hook handler must be callable, not `{type(handler).__name__}`")
        if plugin_id is None:
            module = getattr(handler, "__module__", None) or "?"
            return f"{module}.{getattr(handler, '__qualname__', type(handler).__name__)}"
        if not isinstance(plugin_id, str) or not plugin_id:
            raise GuardError("a hook's plugin_id must be a non-empty string")
        return plugin_id

    # -- deciding ------------------------------------------------------------------------------

    def before_tool_call(
        self, tool_name: Any, params: Any, call: Mapping[str, Any] | None = None
    ) -> Outcome:
        """Decide one call (``call``: ``{"sessionKey", "toolCallId", "runId"?}``).

        Returns ``"allow"`` (with the params to run), ``"block"`` or ``"ask"`` (with the
        approval requests; use :meth:`abefore_tool_call` to have the ``approver`` answer
        them). Async hook handlers need :meth:`abefore_tool_call`. Never raises.
        """
        c = _Call(tool_name, params, call)
        try:
            outcome = self._check(c)
            if outcome is None and (self._trusted or self._hooks):
                outcome = self._drive(self._plan(c)) or self._recheck(c)
            if outcome is None:
                outcome = self._pending_approvals(c)
        except Exception as err:
            outcome = self._failed(c, err)
        return self._finish(c, outcome)

    async def abefore_tool_call(
        self, tool_name: Any, params: Any, call: Mapping[str, Any] | None = None
    ) -> Outcome:
        """Decide one call like :meth:`before_tool_call`, awaiting async hook handlers and
        running the approval flow (spec §11.4) with the ``approver``: the answer is
        ``"allow"`` or ``"block"``. If the awaiting task is cancelled during an approval, the
        decision is logged as cancelled and the cancellation propagates."""
        import asyncio  # loaded already: an event loop is running this

        c = _Call(tool_name, params, call)
        try:
            outcome = self._check(c)
            if outcome is None:
                outcome = await self._adrive(self._plan(c)) or self._recheck(c)
            if outcome is None:
                outcome = await self._run_approvals(c)
        except asyncio.CancelledError:  # logged, then propagated (spec §11.5: never converted)
            if c.approving:
                self._finish(c, self._block(c, "plugin-approval", CANCELLED, failure=True))
            else:
                reason = "Tool call cancelled (run aborted)"
                self._finish(c, self._block(c, "plugin-before-tool-call", reason, failure=True))
            raise
        except Exception as err:
            outcome = self._failed(c, err)
        return self._finish(c, outcome)

    def refuse(
        self, tool_name: Any, params: Any, call: Mapping[str, Any] | None = None, *, reason: str
    ) -> Outcome:
        """Block a call the host refused before any policy ran (the Claude Code hook refuses
        writes to the guard's own configuration), logged and announced like the guard's own
        decisions, with ``denied_reason`` ``host``. Never raises."""
        c = _Call(tool_name, params, call)
        return self._finish(c, self._block(c, "host", reason))

    def after_tool_call(
        self,
        tool_name: Any,
        params: Any,
        call: Mapping[str, Any] | None = None,
        result: Any = None,
        error: Any = None,
    ) -> None:
        """Record what a call returned (loop detection) and emit its completion event.

        Give the params passed to :meth:`before_tool_call`. ``result=None`` and
        ``error=None`` record nothing (the call returned nothing); an ``error`` (an exception
        or its message) wins over ``result``. Outcomes may arrive late, out of order, or
        never. Never raises.
        """
        c = _Call(tool_name, params, call)
        try:
            settings = self.loop_settings
            if settings.enabled and c.session and norm(tool_name) in self._by_norm:
                outcome = loops.outcome_hash(c.tool, params, result, error)
                if outcome is not None:
                    args = loops.args_hash(c.tool, _json.canonical(params))
                    self.session_store.update(
                        c.session,
                        partial(
                            _record_outcome, c.tool, args, c.call_id, outcome, settings, time.time()
                        ),
                    )
        except Exception as err:
            log.warning("after_tool_call failed: tool=%s error=%s", c.tool, err)
        if self.on_event is None:
            return
        try:
            with self._started_lock:
                started = self._started.pop((c.session, c.call_id), None) if c.call_id else None
            event = self._event(
                c, "tool.execution.error" if error is not None else "tool.execution.completed"
            )
            if started is not None:
                event["durationMs"] = round((time.perf_counter() - started) * 1000, 3)
            if error is not None:
                event["errorCategory"] = (
                    type(error).__name__ if isinstance(error, BaseException) else "error"
                )
                event["error"] = error if isinstance(error, str) else str(error)
        except Exception as err:
            log.warning("after_tool_call event failed: tool=%s error=%s", c.tool, err)
            return
        self._emit(event)

    # -- the stages ----------------------------------------------------------------------------

    def _check(self, c: _Call) -> Outcome | None:
        """Name, arguments, loop detection and the Cedar decision; an outcome if one blocks."""
        if self._log is not None:
            from .decision_log import redacted_json  # loaded with the log

            c.log_params = redacted_json(c.original, "/params")
        if c.error is not None:
            raise GuardError(c.error)
        info = self._offered(c.name)
        if info is None:
            return self._not_offered(c)
        c.info = info
        try:
            # Parameters are checked to be JSON here; their canonical text and digest are made
            # only if loop detection or an approval key needs them (`_Call.params_digest`).
            if not _json.plain(c.params):
                c.canonical = _json.canonical(c.params)
            arguments = self._arguments[info.key].convert(c.params)
        except _json.NotJSON as err:
            where = f" at `{err.path}`" if err.path else ""
            reason = f"arguments of tool `{info.name}` are not JSON: {err.message}{where}"
            return self._block(c, "invalid-arguments", reason)
        except ToolArgumentError as err:
            return self._block(c, "invalid-arguments", err.message)
        if self.loop_settings.enabled and c.session is not None:
            outcome = self._loops(c)
            if outcome is not None:
                return outcome
        return self._decide(c, info, arguments)

    def _offered(self, name: Any) -> ToolInfo | None:
        """The offered tool a call names: by its exact name, else by its normalized name."""
        info = None
        if name.__class__ is str:
            info = self._by_name.get(name)
        if info is None:
            info = self._by_norm.get(norm(name))
        return info

    def cedar_arguments(self, tool_name: Any, params: Any) -> tuple[ToolInfo, Record | None] | None:
        """What a call's Cedar decision reads besides the run: ``None`` for a tool the run
        does not offer; else the offered tool it names and its arguments as a Cedar record
        (as :meth:`before_tool_call` converts them), or ``None`` in place of the record when
        the call is blocked before Cedar (arguments that are not JSON or do not fit the tool's
        schema). Never raises.

        Without hooks, trusted policies, loop detection or remembered approvals, the
        decision of a call is a function of the tool name, and of the values of these
        arguments that its policies read (a replay keys its memo by them).
        """
        try:
            info = self._offered(tool_name)
        except Exception:  # a hostile name: decided (blocked) by the guard
            return None
        if info is None:
            return None
        try:
            if not _json.plain(params):
                _json.canonical(params)  # raises NotJSON, as in `_check`
            return info, self._arguments[info.key].convert(params)
        except Exception:  # not JSON, not the schema, a hostile value: the guard decides it
            return info, None

    def decide_arguments(
        self, tool_name: Any, params: Any, found: tuple[ToolInfo, Record | None] | None
    ) -> Outcome:
        """:meth:`before_tool_call` of a call without a session, given what
        :meth:`cedar_arguments` returned for the same ``tool_name`` and ``params``: the same
        outcome, without converting the arguments again (a replay converts them for its memo
        key, then decides the calls it has not seen). Never raises.

        The shortcut is taken only where it cannot change the outcome: an offered tool with
        converted arguments, no decision log, hooks or trusted policies (loop detection needs
        a session); anything else is :meth:`before_tool_call`.
        """
        arguments = None if found is None else found[1]
        if arguments is None or self._log is not None or self._hooks or self._trusted:
            return self.before_tool_call(tool_name, params)
        assert found is not None
        info = found[0]
        c = _Call(tool_name, params, None)
        c.info = info
        try:
            outcome = self._decide(c, info, arguments)
            if outcome is None:
                outcome = self._pending_approvals(c)
        except Exception as err:
            outcome = self._failed(c, err)
        return self._finish(c, outcome)

    def _not_offered(self, c: _Call) -> Outcome:
        removed = self._removed.get(norm(c.name))
        reason = f"Tool {c.tool} is not available in this run"
        if removed is None:
            return self._block(c, "not-offered", reason + ".")
        c.info, layer, c.policies = removed  # the log names the removed tool's plugin
        return self._block(c, "not-offered", f"{reason} (removed by {layer}).")

    def _loops(self, c: _Call) -> Outcome | None:
        settings = self.loop_settings
        c.args = f"{c.tool}:{c.params_digest()}"
        args, tool, params, call_id, now = c.args, c.tool, c.params, c.call_id, time.time()

        def change(
            state: SessionState,
        ) -> tuple[SessionState, tuple[loops.LoopResult | None, bool]]:
            updated, result, emit = loops.check_call(
                state.loop, tool, args, params, call_id, settings, now
            )
            new = state if updated is state.loop else SessionState(updated, state.approvals)
            return new, (result, emit)

        assert c.session is not None
        result, emit = self.session_store.update(c.session, change)
        if result is None or not emit:
            return None
        event: dict[str, Any] = {"type": "tool.loop", "sessionKey": c.session}
        if c.session_id is not None:
            event["sessionId"] = c.session_id
        event.update(
            toolName=c.tool,
            level=result.level,
            action="block" if result.critical else "warn",
            detector=result.detector,
            count=result.count,
            message=result.message,
        )
        if result.paired_tool is not None:
            event["pairedToolName"] = result.paired_tool
        self._emit(event)
        if result.critical:
            return self._block(c, "tool-loop", result.message)
        log.warning("%s", result.message)
        c.warnings += (result.message,)
        return None

    def _decide(self, c: _Call, info: ToolInfo, arguments: Record) -> Outcome | None:
        """The Cedar decision: a block, or ``None`` (asks are queued on the call)."""
        key = info.key
        proto = self._call_entities[key]
        entities = overlay_closed(self._entities, with_attrs(proto, arguments))
        route = self._routes.get(key)
        if route is None:  # the tool's first call in this run
            action = info.action
            reached = self._compiled.reach(self._principal, action, proto.uid, entities)
            route = self._routes[key] = (action, reached)
        context = Record({**self._record, "input": arguments})
        response: Response = self._compiled.authorize_reached(
            route[1], self._principal, route[0], proto.uid, context, entities
        )
        labels = self._labels
        if not response.errors and not self._asks and response.decision is Decision.ALLOW:
            c.policies = tuple([labels[p] for p in response.reasons])
            return None
        if response.errors:
            c.errors = tuple(PolicyError(labels[e.policy_id], e.message) for e in response.errors)
        if response.decision is Decision.DENY:
            if response.reasons:
                return self._forbidden(c, response.reasons)
            failed = [e for e in response.errors if e.policy_id in self._blocking_errors]
            if failed:
                return self._policy_error(c, failed)
            return self._block(c, "policy", f"Tool call blocked: no policy permits {c.tool}.")
        failed = [e for e in response.errors if e.policy_id in self._blocking_errors]
        if failed:
            return self._policy_error(c, failed)
        if all(p in self._ask_forbids for p in response.reasons):
            # Only @ask forbids are satisfied: without them Cedar denies for want of a permit.
            return self._block(c, "policy", f"Tool call blocked: no policy permits {c.tool}.")
        asks = [pid for pid in response.reasons if pid in self._asks]
        if asks:
            c.policies = tuple(labels[p] for p in asks)
            c.policy_ask = self._policy_approval(c, [self._asks[p] for p in asks])
        else:
            c.policies = tuple(labels[p] for p in response.reasons)
            c.policy_ask = None
        return None

    def _recheck(self, c: _Call) -> Outcome | None:
        """Params rewritten by trusted policies or hooks are checked like the model's: JSON,
        the tool's schema, the Cedar decision (whose asks replace the first decision's)."""
        if c.params is c.original or c.info is None:
            return None
        try:
            canonical = _json.canonical(c.params)
            if canonical == c.canonical_params():
                return None
            c.rewritten = True
            arguments = self._arguments[c.info.key].convert(c.params)
        except _json.NotJSON as err:
            reason = f"arguments rewritten by a hook are not JSON: {err.message}"
            return self._block(c, "invalid-arguments", reason)
        except ToolArgumentError as err:
            reason = f"arguments rewritten by a hook: {err.message}"
            return self._block(c, "invalid-arguments", reason)
        return self._decide(c, c.info, arguments)

    def _forbidden(self, c: _Call, forbids: tuple[str, ...]) -> Outcome:
        """One reason per deciding policy (its ``@id``): the ``@reason`` of one of the
        policies sharing the ``@id``, else the policy's name."""
        reasons: dict[str, str | None] = {}
        for p in forbids:
            label = self._labels[p]
            reasons[label] = reasons.get(label) or self._reasons.get(p)
        c.policies = tuple(reasons)
        texts = [text or f"Tool call blocked by policy {label}" for label, text in reasons.items()]
        return self._block(c, "policy", "; ".join(dict.fromkeys(texts)))

    def _policy_error(self, c: _Call, failed: list[PolicyError]) -> Outcome:
        c.policies = tuple(dict.fromkeys(self._labels[e.policy_id] for e in failed))
        names = ", ".join(c.policies)
        return self._block(
            c, "policy", f"Tool call blocked: policy {names} could not be evaluated."
        )

    def _policy_approval(self, c: _Call, specs: list[AskSpec]) -> ApprovalRequest:
        """One request for every ``@ask`` policy satisfied: their descriptions, the first
        title, the highest severity, the shortest timeout; a timeout allows only if every
        policy says so."""
        labels = tuple(s.label for s in specs)
        return ApprovalRequest(
            title=next((s.title for s in specs if s.title), f"Approve {c.tool} call"),
            description="\n".join(dict.fromkeys(s.description for s in specs)),
            severity=max((s.severity for s in specs), key=SEVERITIES.index),
            tool=c.tool,
            call=c.call,
            timeout=min(s.timeout for s in specs),
            timeout_behavior="allow"
            if all(s.timeout_behavior == "allow" for s in specs)
            else "deny",
            plugin_id=None,
            agent=self.agent,
            params=c.params,
            policies=labels,
            key=self._approval_key(c, "policy:" + ",".join(sorted(labels))),
        )

    def _hook_approval(self, c: _Call, spec: Mapping[str, Any], plugin_id: str) -> ApprovalRequest:
        return ApprovalRequest(
            tool=c.tool,
            call=c.call,
            plugin_id=plugin_id,
            agent=self.agent,
            params=c.params,
            key=self._approval_key(c, "plugin:" + plugin_id),
            **hook_request_fields(spec),
        )

    def _approval_key(self, c: _Call, source: str) -> str:
        """What ``allow-always`` remembers: this tool, these arguments, this asker."""
        return _json.sha256(_json.stable([c.tool, c.params_digest(), source]))

    # -- hooks ---------------------------------------------------------------------------------

    def _plan(self, c: _Call) -> _Plan:
        """Trusted policies, then hooks merged (spec §11.1.3-4, §11.3): yields each handler
        with its arguments and receives its result (or :class:`_Raised`)."""
        for plugin, handler in self._trusted:
            result = yield handler, self._hook_args(c)
            spec = self._result(plugin, result, trusted=True)
            if spec is None:
                continue
            if js_truthy(spec.get("block")):
                why = spec.get("blockReason")
                why = why if isinstance(why, str) and why else TRUSTED_BLOCKED
                return self._block(c, "plugin-before-tool-call", why)
            if isinstance(spec.get("requireApproval"), Mapping):
                c.asks += (self._hook_approval(c, spec["requireApproval"], plugin),)
            if isinstance(spec.get("params"), Mapping):
                c.params = dict(spec["params"])
        block = False
        reason: Any = None
        params: Any = None
        approval: Mapping[str, Any] | None = None
        approving: str | None = None
        for _, _, plugin, handler in self._hooks:
            result = yield handler, self._hook_args(c)
            spec = self._result(plugin, result, trusted=False)
            if spec is None:
                continue
            if spec.get("blockReason") is not None:
                reason = spec["blockReason"]
            asked = spec.get("requireApproval")
            if approval is None and isinstance(asked, Mapping):
                approval, approving = asked, plugin
            if spec.get("params") is not None and approving in (None, plugin):
                params = spec["params"]
            if js_truthy(spec.get("block")):
                block = True
                break
        if block:
            text = reason if isinstance(reason, str) and reason else HOOK_BLOCKED
            return self._block(c, "plugin-before-tool-call", text)
        if approval is not None and approving is not None:
            c.asks += (self._hook_approval(c, approval, approving),)
        if isinstance(params, Mapping):
            c.params = {**c.params, **params} if isinstance(c.params, Mapping) else dict(params)
        return None

    def _result(self, plugin: str, result: Any, *, trusted: bool) -> Mapping[str, Any] | None:
        """A handler's result as a dict (``None``: no opinion); failures per §11.3. A result
        whose ``requireApproval`` is neither absent, ``None``, ``False`` nor a well-formed
        approval object fails as a raising handler would: read as no approval, it would let
        the call through unasked."""
        if result is None:
            return None
        error: BaseException
        if isinstance(result, Mapping):
            problem = hook_request_problem(result.get("requireApproval"))
            if problem is None:
                return result
            error = TypeError(problem)
        elif isinstance(result, _Raised):
            error = result.error
        else:
            error = TypeError(f"returned `{type(result).__name__}`; expected a dict or None")
        kind = "trusted tool policy" if trusted else "before_tool_call handler"
        log.warning("[hooks] %s from %s failed: %s", kind, plugin, error)
        if trusted or self.fail_closed:
            raise _HookFailure(f"{kind} from {plugin} failed: {error}")
        return None

    def _hook_args(self, c: _Call) -> tuple[dict[str, Any], dict[str, Any]]:
        """The hook event and context (spec §11.1); each handler gets its own copy."""
        event: dict[str, Any] = {
            "toolName": c.tool,
            "params": dict(c.params) if isinstance(c.params, Mapping) else {},
        }
        ctx: dict[str, Any] = {"toolName": c.tool, "agentId": self.agent}
        for key, value in (
            ("sessionKey", c.session),
            ("sessionId", c.session_id),
            ("runId", c.run),
            ("toolCallId", c.call_id),
        ):
            if value is not None:
                ctx[key] = value
                if key in ("runId", "toolCallId"):
                    event[key] = value
        return event, ctx

    @staticmethod
    def _drive(plan: _Plan) -> Outcome | None:
        """Run a hook plan with plain calls (an awaitable result is a handler error)."""
        try:
            step = next(plan)
            while True:
                handler, args = step
                try:
                    result = handler(*args)
                    if inspect.isawaitable(result):
                        if inspect.iscoroutine(result):
                            result.close()
                        result = _Raised(TypeError("async handlers need abefore_tool_call"))
                except Exception as err:
                    result = _Raised(err)
                step = plan.send(result)
        except StopIteration as stop:
            return stop.value

    @staticmethod
    async def _adrive(plan: _Plan) -> Outcome | None:
        """Run a hook plan, awaiting handlers that return awaitables."""
        try:
            step = next(plan)
            while True:
                handler, args = step
                try:
                    result = handler(*args)
                    if inspect.isawaitable(result):
                        result = await result
                except Exception as err:
                    result = _Raised(err)
                step = plan.send(result)
        except StopIteration as stop:
            return stop.value

    # -- approvals -----------------------------------------------------------------------------

    def _requests(self, c: _Call) -> tuple[list[ApprovalRequest], frozenset[str]]:
        """The approvals the call needs (policy, trusted policies, hooks), with the params
        the call would run with, and the session's remembered ``allow-always`` keys."""
        asks = [c.policy_ask, *c.asks] if c.policy_ask is not None else c.asks
        requests = [replace(r, params=c.params) for r in asks]
        if not requests or c.session is None:
            return requests, frozenset()
        return requests, frozenset(self.session_store.load(c.session).approvals)

    def _pending_approvals(self, c: _Call) -> Outcome:
        """``allow``, or ``ask`` with the approvals not remembered with ``allow-always``."""
        if c.policy_ask is None and not c.asks:
            return self._allow(c)
        requests, remembered = self._requests(c)
        pending = []
        for request in requests:
            if request.key in remembered:
                c.approvals_log += (_approval_entry(request, "remembered"),)
            else:
                c.approvals_log += (_approval_entry(request, "pending"),)
                pending.append(request)
        if not pending:
            return self._allow(c)
        first = pending[0]
        return Outcome(
            "ask",
            c.tool,
            c.params,
            first.description or first.title,
            None,
            c.policies,
            c.errors,
            first,
            tuple(pending),
            warnings=c.warnings,
        )

    async def _run_approvals(self, c: _Call) -> Outcome:
        """Ask the approver for each approval not remembered, in order; the first failure
        blocks (``plugin-approval``)."""
        requests, remembered = self._requests(c)
        c.approving = True
        for request in requests:
            if request.key in remembered:
                c.approvals_log += (_approval_entry(request, "remembered"),)
                continue
            answer = await request_approval(request, self.approver)
            c.waited += answer.waited
            c.approvals_log += (_approval_entry(request, answer.resolution, answer.waited),)
            if answer.resolution == "allow-always" and c.session is not None:
                self.session_store.update(c.session, partial(_remember, request.key))
            if not answer.proceed:
                return self._block(c, "plugin-approval", answer.reason or "", failure=True)
        return self._allow(c)

    # -- outcomes ------------------------------------------------------------------------------

    # The two outcomes of most calls, built as tuples (Outcome's own __new__ is a Python
    # function with defaults): the fields in Outcome's order, action to error.

    def _allow(self, c: _Call) -> Outcome:
        return _outcome(
            ("allow", c.tool, c.params, None, None, c.policies, c.errors, None, (), False,
             c.warnings, None)
        )  # fmt: skip

    def _block(self, c: _Call, denied: str, reason: str, *, failure: bool = False) -> Outcome:
        return _outcome(
            ("block", c.tool, c.params, reason, denied, c.policies, c.errors, None, (), failure,
             c.warnings, c.error if failure else None)
        )  # fmt: skip

    def _failed(self, c: _Call, err: BaseException) -> Outcome:
        """Any exception of the guard or a fail-closed hook: a failure (spec §11.1.5)."""
        cause = str(err) or type(err).__name__
        c.error = (
            cause
            if isinstance(err, _HookFailure | GuardError)
            else f"{type(err).__name__}: {cause}"
        )
        where = f" toolCallId={c.call_id}" if c.call_id else ""
        log.error("before_tool_call hook failed: tool=%s%s error=%s", c.tool, where, c.error)
        return self._block(c, "plugin-before-tool-call", HOOK_FAILED, failure=True)

    def _finish(self, c: _Call, outcome: Outcome) -> Outcome:
        """Log the decision (an allow that cannot be logged is blocked) and emit its event."""
        try:
            if self._log is not None:
                self._write(c, outcome)
        except Exception as err:
            if outcome.action != "block":
                outcome = self._failed(c, err)
            else:
                log.error("decision log write failed: tool=%s error=%s", c.tool, err)
        if self.on_event is not None:
            if outcome.action == "block":
                event = self._event(c, "tool.execution.blocked")
                event["deniedReason"] = outcome.denied_reason
                event["reason"] = outcome.reason
                self._emit(event)
            elif outcome.action == "allow":
                if c.call_id is not None:
                    with self._started_lock:
                        self._started[(c.session, c.call_id)] = time.perf_counter()
                        if len(self._started) > _STARTED_CAP:
                            self._started.popitem(last=False)
                self._emit(self._event(c, "tool.execution.started"))
        return outcome

    def _write(self, c: _Call, outcome: Outcome) -> None:
        from .decision_log import log_line, redacted_json  # loaded with the log

        assert self._log is not None
        try:
            params_json, redacted = c.log_params or redacted_json(c.original, "/params")
        except Exception as err:  # params that cannot even be read: say so, keep the line
            params_json, redacted = _json.encode(f"<unreadable: {type(err).__name__}>")[0], []
        elapsed = time.perf_counter_ns() - c.started - int(c.waited * 1e9)
        info = c.info
        self._log.append(
            log_line(
                ts=time.time(),
                session=c.session,
                run=c.run,
                call_id=c.call_id,
                agent=self.agent,
                tool=c.tool,
                plugin=info.plugin_id if info is not None else None,
                params_json=params_json,
                redacted=[*redacted, *self._context_redacted],
                context_json=self._context_json,
                decision=outcome.action,
                denied_reason=outcome.denied_reason if outcome.action == "block" else None,
                reason=outcome.reason,
                policies=outcome.policies,
                errors=[(e.policy_id, e.message) for e in outcome.errors],
                params_rewritten=c.rewritten and outcome.action != "block",
                latency_us=max(0, elapsed // 1000),
                policy_hash=self.policy_hash,
                approvals=c.approvals_log,
                error=c.error,
            )
        )

    # -- events --------------------------------------------------------------------------------

    def _event(self, c: _Call, kind: str) -> dict[str, Any]:
        event: dict[str, Any] = {"type": kind, "sessionKey": c.session}
        if c.session_id is not None:
            event["sessionId"] = c.session_id
        event.update(runId=c.run, toolCallId=c.call_id, toolName=c.tool)
        return event

    def _emit(self, event: dict[str, Any]) -> None:
        """Deliver an event; a failing ``on_event`` is logged, never fails the call."""
        if self.on_event is None:
            return
        try:
            self.on_event(event)
        except Exception as err:
            log.warning("on_event failed for %s: %s", event.get("type"), err)


def _remember(key: str, state: SessionState) -> tuple[SessionState, None]:
    return state.with_approval(key), None


def _record_outcome(
    tool: str,
    args: str,
    call_id: str | None,
    outcome: str,
    settings: loops.LoopSettings,
    now: float,
    state: SessionState,
) -> tuple[SessionState, None]:
    updated = loops.record_outcome(state.loop, tool, args, call_id, outcome, settings, now)
    return state._replace(loop=updated), None


def _approval_entry(
    request: ApprovalRequest, resolution: str, waited: float = 0.0
) -> dict[str, Any]:
    """One element of the log's ``approvals``."""
    return {
        "plugin": request.plugin_id,
        "policies": list(request.policies),
        "severity": request.severity,
        "resolution": resolution,
        "waited_ms": round(waited * 1000, 3),
    }


# ---------------------------------------------------------------------------------------------
# Inputs


def _load_rules(policy: ToolPolicy, rules: Any, validate: bool) -> list[tuple[Policy, str | None]]:
    """The active policies of ``rules`` (a PolicySet, Cedar text, a path, or a list of paths
    and PolicySets, one per file), each with the source it came from, validated against the
    catalog when ``validate``."""
    from ..policyset import PolicySet

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


def _config_value(config: Any) -> Any:
    if isinstance(config, str | bytes):
        return load_json(config, "config", GuardError)
    return {} if config is None else config


def _tools_value(tools: list[Mapping[str, Any]] | ToolCatalog) -> Any:
    if isinstance(tools, ToolCatalog):
        return [dict(t.raw) if t.raw else {"name": t.name} for t in tools]
    return tools
