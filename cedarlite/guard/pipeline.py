"""The before-tool-call guard (docs/guard.md): one object per agent run that decides every call.

For one call, in order (the first check that blocks ends it):

1. the name is normalized; a tool the run does not offer is blocked (``not-offered``);
2. the arguments must be JSON (at most :data:`~cedarlite.guard._json.MAX_PARAM_DEPTH` deep)
   and conform to the tool's parameter schema (``invalid-arguments``);
3. loop detection (docs/guard.md §11.2), when the call has a session key: a critical result
   vetoes the call (``tool-loop``); a warning is emitted once per bucket; the call is recorded;
4. the compiled Cedar decision over the tool layer and the ``rules``: a satisfied forbid
   without ``@ask`` blocks (``policy``, its ``@reason``), so does a forbid or ``@ask`` policy
   that fails to evaluate (unless annotated ``@onError("skip")``); a satisfied ``@ask``
   policy requires an approval;
5. trusted policies (registration order): block, require an approval, replace the params;
6. hooks (docs/guard.md §11.3): descending priority, sticky block, last params, first approval;
7. approvals (docs/guard.md §11.4): ``before_tool_call`` answers ``"ask"`` with the pending
   requests; ``abefore_tool_call`` asks the ``approver``. ``allow-always`` is remembered per
   session.

Each stage is a collaborator with one job: :class:`~.decide.OfferedTools` (the run's tools and
their argument plans), loop detection (:mod:`.looping`, over the :class:`~.state.SessionStore`),
:class:`~.decide.CedarRules` (the Cedar decision), :class:`~.plugins.Plugins` (trusted policies
and hooks), :mod:`.approving` (approvals) and :mod:`.record` (the decision log and the events);
:class:`Guard` builds them and runs a call through them.

Every exception of the guard's own (engine, state store, decision log, a bug) blocks the call
with the guard's failure reason; hook errors do too unless ``fail_closed=False``. Each decision
is appended to the decision log, when there is one, before it is returned.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .._log import get_logger
from ..data.entities import Entity
from ..data.values import Record
from ..tools.arguments import ArgumentPlan, ToolArgumentError
from ..tools.catalog import ToolCatalog, ToolInfo, tool_list
from ..tools.names import norm
from . import _json, approving, looping, loops
from .approvals import CANCELLED, Approver, GuardError
from .build import config_value, loop_config, tool_policy, tools_value
from .call import Call, block
from .decide import CedarRules, OfferedTools
from .outcome import HOOK_FAILED, Outcome
from .plugins import HookFailure, HookHandler, Plugins
from .record import DecisionRecord, Events, EventSink
from .state import DEFAULT_STORE, SessionStore

if TYPE_CHECKING:
    from ..policyset import PolicySet
    from ..tools.resolve import ToolPolicy, ToolResolution

# Deciding needs the catalog, the compiled parameter checks and the compiled policies; building
# a guard also needs the configuration models (pydantic), the compilers, the parser and the
# schema model: those are imported where a guard is built (build.py, decide.py), so that a
# process that loads a built guard (a hook, one process per tool call) decides without them
# (tests/test_layering.py), and so is the decision log, when there is none.

log = get_logger("cedarlite.hooks")


class Guard:
    """The before-tool-call guard of one agent run.

    ``config``, ``tools`` and ``context`` as for :func:`cedarlite.tools.resolve_tools`
    ; ``rules`` extra Cedar (a :class:`~cedarlite.PolicySet`, Cedar text, or a list
    of ``.cedar`` paths, or of PolicySets parsed from files): argument conditions, ``@ask``
    policies. ``on_event`` receives the ``tool.loop`` and ``tool.execution.*`` events as
    dicts. ``decision_log`` is a path to append one JSON line per decision to.
    ``fail_closed=False`` lets a failing hook handler be ignored (never an error of the guard
    itself). ``approver`` is an async callable answering :class:`ApprovalRequest` s.
    ``strict`` (the default) selects the tool layer's strict reading of the configuration,
    context and rules. ``session_store`` keeps loop histories and ``allow-always`` approvals
    (default: one store per process).

    Raises :class:`~cedarlite.tools.EmptyAllowlistError` when an explicit allowlist leaves the
    run no tool, and a :class:`~cedarlite.CedarliteError` for bad input.

    A guard pickles: the copy decides alike, bound to the process that loads it (see
    :meth:`__setstate__`).
    """

    # `None` on a guard restored from a pickle until asked for (rebuilt from the inputs).
    _policy: ToolPolicy | None
    _resolution: ToolResolution | None

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
        self.fail_closed = fail_closed
        self.approver = approver
        self.strict = strict
        self.session_store: SessionStore = DEFAULT_STORE if session_store is None else session_store
        if not isinstance(tools, ToolCatalog):
            tools = tool_list(tools)
        self._policy, rule_policies = tool_policy(config, tools, rules, context, strict)
        # Per tool (by key): its call entity without arguments and its argument plan, made
        # once for every run context (`for_context` shares this dict; see OfferedTools).
        self._per_tool: dict[str, tuple[Entity, ArgumentPlan]] = {}
        self._rules = CedarRules(self.policy, rule_policies)
        # lazy on purpose: the decision log's module loads where a guard is built or logs
        from .decision_log import policy_hash

        values = config_value(config), tools_value(tools)
        self.policy_hash = policy_hash(*values, self._rules.rules_text)
        # What rebuilds `policy`, `policies` and `resolution` for a guard restored from a pickle
        # (the run context is added by `_start_run`).
        self._inputs: tuple[Any, ...] = (*values, {}, strict)
        self._events = Events(on_event)
        self._start_run(context)
        self._plugins = Plugins()
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
        other._plugins = self._plugins.copy()  # hooks registered later stay with their guard
        other._start_run(context)
        if self._record.log is not None:  # its own descriptor: closing one leaves the other's
            other.open_decision_log(self._record.log.path)
        return other

    def _start_run(self, context: Mapping[str, Any] | None) -> None:
        """Everything that depends on the run context: the tools offered and their index, the
        agent and its loop settings, the context as the log writes it, the run's events."""
        # lazy on purpose: as in build.py (the tool layer's resolution is a building step)
        from ..tools.resolve import EmptyAllowlistError

        resolution = self.policy.resolve(context)
        if resolution.error is not None:
            raise EmptyAllowlistError(resolution.error, resolution)
        self._resolution = resolution
        self.agent: str = resolution.context.agent
        self._tools = tuple(resolution.allowed)
        self._offered = OfferedTools(self.policy, resolution, self._rules.labels, self._per_tool)
        self.loop_settings = loops.LoopSettings.resolve(*loop_config(self.policy, self.agent))
        given = context if isinstance(context, Mapping) else {}
        config, tools, _, strict = self._inputs
        self._inputs = (config, tools, dict(given), strict)
        self._record = DecisionRecord(self.policy_hash, given)
        self._events = Events(self._events.sink)

    # -- pickling: hook processes start once per call and load a built guard -----------------

    #: What a pickled guard leaves out: the process's (store, hooks, approver, events, open
    #: log), and the tool policy and the resolution (rebuilt from the inputs if asked for:
    #: loading them would need the configuration models).
    _UNPICKLED = frozenset(
        {"approver", "session_store", "_plugins", "_events", "_policy", "_resolution"}
    )

    def __getstate__(self) -> dict[str, Any]:
        """Everything the guard decides with (plain data and the compiled policies)."""
        return {k: v for k, v in self.__dict__.items() if k not in self._UNPICKLED}

    def __setstate__(self, state: dict[str, Any]) -> None:
        """A restored guard decides as the pickled one did, with the process's defaults:
        the default session store, no decision log, hooks, trusted policies, approver or
        ``on_event`` (set the attributes, :meth:`open_decision_log`)."""
        self.__dict__.update(state)
        self.approver = None
        self.session_store = DEFAULT_STORE
        self._plugins = Plugins()
        self._events = Events(None)
        self._policy = None
        self._resolution = None

    def open_decision_log(self, path: str | os.PathLike[str]) -> None:
        """Append every later decision to the JSON Lines file ``path`` (the ``decision_log``
        of the constructor; a log already open is closed). Raises :class:`GuardError` if the
        file cannot be opened."""
        self._record.open(path)

    def _rebuild(self) -> None:
        """``policy``, ``policies`` and ``resolution`` of a restored guard: built again from
        its inputs."""
        config, tools, context, strict = self._inputs
        again = Guard(config, tools, context, rules=self._rules.rules_text or None, strict=strict)
        self._policy, self._resolution = again.policy, again.resolution
        self._rules.policies = again.policies

    # -- public surface ----------------------------------------------------------------------

    @property
    def on_event(self) -> EventSink | None:
        """Receives the ``tool.loop`` and ``tool.execution.*`` events as dicts (or ``None``)."""
        return self._events.sink

    @on_event.setter
    def on_event(self, sink: EventSink | None) -> None:
        self._events.sink = sink

    @property
    def policy(self) -> ToolPolicy:
        """The compiled tool policy of the configuration and catalog."""
        if self._policy is None:
            self._rebuild()
        assert self._policy is not None
        return self._policy

    @property
    def resolution(self) -> ToolResolution:
        """The run's tool resolution: the offered tools and why others are not."""
        if self._resolution is None:
            self._rebuild()
        assert self._resolution is not None
        return self._resolution

    @property
    def tools(self) -> list[Any]:
        """The names of the tools offered to the model for this run, in order."""
        return list(self._tools)

    @property
    def policies(self) -> PolicySet:
        """The compiled policy set the guard decides with (tool layer and rules)."""
        if self._rules.policies is None:
            self._rebuild()
        assert self._rules.policies is not None
        return self._rules.policies

    def __repr__(self) -> str:
        tools, policies = len(self._tools), len(self._rules.labels)
        return f"<Guard agent={self.agent!r}: {tools} tools, {policies} policies>"

    def __enter__(self) -> Guard:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the decision log (later decisions are blocked: they cannot be logged)."""
        self._record.close()

    def register_hook(
        self, handler: HookHandler, *, priority: float = 0, plugin_id: str | None = None
    ) -> None:
        """Register an OpenClaw ``before_tool_call`` handler: ``handler(event, ctx)`` returns
        ``None`` or a dict with ``block``, ``blockReason``, ``params``, ``requireApproval``
        (an awaitable of one with :meth:`abefore_tool_call`). Higher ``priority`` runs first;
        ``plugin_id`` defaults to the handler's qualified name."""
        self._plugins.add_hook(handler, priority, plugin_id)

    def register_trusted_policy(
        self, handler: HookHandler, *, plugin_id: str | None = None
    ) -> None:
        """Register a trusted tool policy (evaluated before hooks, in registration order):
        ``handler(event, ctx)`` returns ``None`` or a dict with ``block``, ``blockReason``,
        ``params`` (the params hooks then see), ``requireApproval``. Its failures always
        block the call."""
        self._plugins.add_trusted(handler, plugin_id)

    # -- deciding ------------------------------------------------------------------------------

    def before_tool_call(
        self, tool_name: Any, params: Any, call: Mapping[str, Any] | None = None
    ) -> Outcome:
        """Decide one call (``call``: ``{"sessionKey", "toolCallId", "runId"?}``).

        Returns ``"allow"`` (with the params to run), ``"block"`` or ``"ask"`` (with the
        approval requests; use :meth:`abefore_tool_call` to have the ``approver`` answer
        them). Async hook handlers need :meth:`abefore_tool_call`. Never raises.
        """
        c = Call(tool_name, params, call)
        try:
            outcome = self._check(c)
            if outcome is None and self._plugins:
                plan = self._plugins.plan(c, self.agent, self.fail_closed)
                outcome = Plugins.drive(plan) or self._recheck(c)
            if outcome is None:
                outcome = approving.pending(c, self.session_store)
        except Exception as err:
            outcome = self._failed(c, err)
        return self._finish(c, outcome)

    async def abefore_tool_call(
        self, tool_name: Any, params: Any, call: Mapping[str, Any] | None = None
    ) -> Outcome:
        """Decide one call like :meth:`before_tool_call`, awaiting async hook handlers and
        running the approval flow with the ``approver``: the answer is ``"allow"`` or
        ``"block"``. If the awaiting task is cancelled during an approval, the decision is
        logged as cancelled and the cancellation propagates."""
        import asyncio  # lazy on purpose: loaded already, an event loop is running this

        c = Call(tool_name, params, call)
        try:
            outcome = self._check(c)
            if outcome is None:
                plan = self._plugins.plan(c, self.agent, self.fail_closed)
                outcome = await Plugins.adrive(plan) or self._recheck(c)
            if outcome is None:
                outcome = await approving.ask(c, self.session_store, self.approver)
        except asyncio.CancelledError:  # logged, then propagated (never converted)
            if c.approving:
                self._finish(c, block(c, "plugin-approval", CANCELLED, failure=True))
            else:
                reason = "Tool call cancelled (run aborted)"
                self._finish(c, block(c, "plugin-before-tool-call", reason, failure=True))
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
        c = Call(tool_name, params, call)
        return self._finish(c, block(c, "host", reason))

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
        c = Call(tool_name, params, call)
        try:
            settings = self.loop_settings
            if settings.enabled and c.session and norm(tool_name) in self._offered.by_norm:
                looping.record(c, params, result, error, settings, self.session_store)
        except Exception as err:
            log.warning("after_tool_call failed: tool=%s error=%s", c.tool, err)
        if self._events.sink is not None:
            self._events.finished(c, error)

    # -- the stages ----------------------------------------------------------------------------

    def _check(self, c: Call) -> Outcome | None:
        """Name, arguments, loop detection and the Cedar decision; an outcome if one blocks."""
        if self._record.log is not None:
            self._record.read_params(c)
        if c.error is not None:
            raise GuardError(c.error)
        info = self._offered.find(c.name)
        if info is None:
            return self._offered.not_offered(c)
        c.info = info
        try:
            # Parameters are checked to be JSON here; their canonical text and digest are made
            # only if loop detection or an approval key needs them (`Call.params_digest`).
            if not _json.plain(c.params):
                c.canonical = _json.canonical(c.params)
            arguments = self._offered.arguments[info.key].convert(c.params)
        except _json.NotJSON as err:
            where = f" at `{err.path}`" if err.path else ""
            reason = f"arguments of tool `{info.name}` are not JSON: {err.message}{where}"
            return block(c, "invalid-arguments", reason)
        except ToolArgumentError as err:
            return block(c, "invalid-arguments", err.message)
        if self.loop_settings.enabled and c.session is not None:
            outcome = looping.check(c, self.loop_settings, self.session_store, self._events)
            if outcome is not None:
                return outcome
        return self._rules.decide(c, info, arguments, self._offered, self.agent)

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
            info = self._offered.find(tool_name)
        except Exception:  # a hostile name: decided (blocked) by the guard
            return None
        if info is None:
            return None
        try:
            if not _json.plain(params):
                _json.canonical(params)  # raises NotJSON, as in `_check`
            return info, self._offered.arguments[info.key].convert(params)
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
        if arguments is None or self._record.log is not None or self._plugins:
            return self.before_tool_call(tool_name, params)
        assert found is not None
        info = found[0]
        c = Call(tool_name, params, None)
        c.info = info
        try:
            outcome = self._rules.decide(c, info, arguments, self._offered, self.agent)
            if outcome is None:
                outcome = approving.pending(c, self.session_store)
        except Exception as err:
            outcome = self._failed(c, err)
        return self._finish(c, outcome)

    def _recheck(self, c: Call) -> Outcome | None:
        """Params rewritten by trusted policies or hooks are checked like the model's: JSON,
        the tool's schema, the Cedar decision (whose asks replace the first decision's)."""
        if c.params is c.original or c.info is None:
            return None
        try:
            canonical = _json.canonical(c.params)
            if canonical == c.canonical_params():
                return None
            c.rewritten = True
            arguments = self._offered.arguments[c.info.key].convert(c.params)
        except _json.NotJSON as err:
            reason = f"arguments rewritten by a hook are not JSON: {err.message}"
            return block(c, "invalid-arguments", reason)
        except ToolArgumentError as err:
            reason = f"arguments rewritten by a hook: {err.message}"
            return block(c, "invalid-arguments", reason)
        return self._rules.decide(c, c.info, arguments, self._offered, self.agent)

    # -- outcomes ------------------------------------------------------------------------------

    def _failed(self, c: Call, err: BaseException) -> Outcome:
        """Any exception of the guard or a fail-closed hook: a failure."""
        cause = str(err) or type(err).__name__
        c.error = (
            cause if isinstance(err, HookFailure | GuardError) else f"{type(err).__name__}: {cause}"
        )
        where = f" toolCallId={c.call_id}" if c.call_id else ""
        log.error("before_tool_call hook failed: tool=%s%s error=%s", c.tool, where, c.error)
        return block(c, "plugin-before-tool-call", HOOK_FAILED, failure=True)

    def _finish(self, c: Call, outcome: Outcome) -> Outcome:
        """Log the decision (an allow that cannot be logged is blocked) and emit its event."""
        try:
            if self._record.log is not None:
                self._record.write(c, outcome, self.agent)
        except Exception as err:
            if outcome.action != "block":
                outcome = self._failed(c, err)
            else:
                log.error("decision log write failed: tool=%s error=%s", c.tool, err)
        if self._events.sink is not None:
            self._events.decided(c, outcome)
        return outcome
