"""The Cedar stage: the tool layer's policies and the rules merged into one compiled set, and
the decision of one call against it (docs/guard.md).

:class:`CedarRules` is built once per configuration (rules get ids ``rule<n>`` and keep their
``@id`` label; ``@ask`` policies become permits whose satisfaction asks);
:class:`OfferedTools` is the index of one run's tools (by exact and normalized name, with
their argument plans, call entities and the compiled leaves their calls reach).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..data.entities import Entity, overlay_closed, with_attrs
from ..data.response import Decision, PolicyError, Response
from ..data.values import EntityUID, Record
from ..tools.arguments import ArgumentPlan
from ..tools.catalog import ToolInfo
from ..tools.names import norm
from .approvals import AskSpec, GuardError, ask_spec
from .approving import policy_request
from .call import Call, block
from .outcome import Outcome

if TYPE_CHECKING:
    from ..data.entities import Entities
    from ..engine.compiler import CompiledPolicySet
    from ..engine.compiler.index import Leaf
    from ..lang.ast import Policy
    from ..policyset import PolicySet
    from ..tools.resolve import ToolPolicy, ToolResolution


class CedarRules:
    """The compiled policies a guard decides with, and what it needs to word a decision:
    each policy's label and ``@reason``, the ``@ask`` specs, and which policies block when
    they fail to evaluate."""

    #: ``policies`` (the syntax trees) is left out of a pickle: a loaded guard decides with
    #: the compiled form alone and parses again only if asked for the trees.
    _UNPICKLED = frozenset({"policies"})

    def __init__(self, policy: ToolPolicy, rule_policies: list[tuple[Policy, str | None]]):
        # lazy on purpose: building needs the syntax tree, the compiler and the policy set; a
        # guard loaded from a pickle decides without them
        from ..engine.compiler import compiled
        from ..lang.ast import Effect
        from ..policyset import PolicySet

        policies: list[Policy] = list(policy.policies)
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
        self.policies: PolicySet | None = merged
        self.rules_text = (
            PolicySet([p for p, _ in rule_policies]).to_cedar() if rule_policies else ""
        )
        self.compiled: CompiledPolicySet = compiled(merged)
        self.labels = {p.id: p.annotations.get("id", p.id) for p in policies}
        self.reasons = {
            p.id: p.annotations["reason"] for p in policies if "reason" in p.annotations
        }
        self.asks = asks
        self.ask_forbids = frozenset(ask_forbids)
        self.blocking_errors = frozenset(blocking)

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in self._UNPICKLED}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.policies = None

    def decide(
        self, c: Call, info: ToolInfo, arguments: Record, run: OfferedTools, agent: str
    ) -> Outcome | None:
        """The Cedar decision: a block, or ``None`` (asks are queued on the call)."""
        key = info.key
        proto = run.call_entities[key]
        entities = overlay_closed(run.entities, with_attrs(proto, arguments))
        route = run.routes.get(key)
        if route is None:  # the tool's first call in this run
            action = info.action
            reached = self.compiled.reach(run.principal, action, proto.uid, entities)
            route = run.routes[key] = (action, reached)
        context = Record({**run.context, "input": arguments})
        response: Response = self.compiled.authorize_reached(
            route[1], run.principal, route[0], proto.uid, context, entities
        )
        labels = self.labels
        if not response.errors and not self.asks and response.decision is Decision.ALLOW:
            c.policies = tuple([labels[p] for p in response.reasons])
            return None
        if response.errors:
            c.errors = tuple(PolicyError(labels[e.policy_id], e.message) for e in response.errors)
        if response.decision is Decision.DENY:
            if response.reasons:
                return self._forbidden(c, response.reasons)
            failed = [e for e in response.errors if e.policy_id in self.blocking_errors]
            if failed:
                return self._policy_error(c, failed)
            return block(c, "policy", f"Tool call blocked: no policy permits {c.tool}.")
        failed = [e for e in response.errors if e.policy_id in self.blocking_errors]
        if failed:
            return self._policy_error(c, failed)
        if all(p in self.ask_forbids for p in response.reasons):
            # Only @ask forbids are satisfied: without them Cedar denies for want of a permit.
            return block(c, "policy", f"Tool call blocked: no policy permits {c.tool}.")
        asks = [pid for pid in response.reasons if pid in self.asks]
        if asks:
            c.policies = tuple(labels[p] for p in asks)
            c.policy_ask = policy_request(c, [self.asks[p] for p in asks], agent)
        else:
            c.policies = tuple(labels[p] for p in response.reasons)
            c.policy_ask = None
        return None

    def _forbidden(self, c: Call, forbids: tuple[str, ...]) -> Outcome:
        """One reason per deciding policy (its ``@id``): the ``@reason`` of one of the
        policies sharing the ``@id``, else the policy's name."""
        reasons: dict[str, str | None] = {}
        for p in forbids:
            label = self.labels[p]
            reasons[label] = reasons.get(label) or self.reasons.get(p)
        c.policies = tuple(reasons)
        texts = [text or f"Tool call blocked by policy {label}" for label, text in reasons.items()]
        return block(c, "policy", "; ".join(dict.fromkeys(texts)))

    def _policy_error(self, c: Call, failed: list[PolicyError]) -> Outcome:
        c.policies = tuple(dict.fromkeys(self.labels[e.policy_id] for e in failed))
        names = ", ".join(c.policies)
        return block(c, "policy", f"Tool call blocked: policy {names} could not be evaluated.")


class OfferedTools:
    """One run's tools: the offered ones by exact and normalized name, with their compiled
    argument plans and call entities; the removed ones with the layer (and the deny entries
    that matched: ``tools.deny: github__delete_*``) and policies that removed them."""

    #: The compiled leaves per tool are walked again in a process that loads a pickle.
    _UNPICKLED = frozenset({"routes"})

    def __init__(
        self,
        policy: ToolPolicy,
        resolution: ToolResolution,
        labels: dict[str, str],
        per_tool: dict[str, tuple[Entity, ArgumentPlan]],
    ) -> None:
        # lazy on purpose: the parameter compiler is needed to build a guard, not to decide
        from ..tools.params import argument_plan, call_entity

        run = resolution.context
        self.principal: EntityUID = run.principal
        self.context: Record = run.record()
        self.entities: Entities = policy.entities
        self.by_name: dict[str, ToolInfo] = {}
        self.by_norm: dict[str, ToolInfo] = {}
        # The resource entity of each tool's calls, without arguments, its ancestors closed
        # through the store once here (per call: one copy with the arguments, laid over the
        # store by `overlay_closed`, which neither copies the store nor closes again).
        self.call_entities: dict[str, Entity] = {}
        # The action of each tool's calls and the leaves of the policies whose scope holds for
        # them (the principal, action and call entity, and so their ancestors, are fixed per
        # tool and run): the scope walk is made on a tool's first call, not on every call.
        self.routes: dict[str, tuple[EntityUID, tuple[tuple[Leaf, ...], ...]]] = {}
        self.arguments: dict[str, ArgumentPlan] = {}
        self.removed: dict[str, tuple[ToolInfo, str, tuple[str, ...]]] = {}
        for d in resolution.decisions:
            t = d.tool
            if d.allowed:
                parts = per_tool.get(t.key)
                if parts is None:  # (two threads may both make it: the same value)
                    proto = call_entity(policy.catalog, t, Record(), "call")
                    parts = (self.entities.overlay([proto])[proto.uid], argument_plan(t))
                    per_tool[t.key] = parts
                self.call_entities[t.key], self.arguments[t.key] = parts
                if isinstance(t.name, str):
                    self.by_name.setdefault(t.name, t)
                self.by_norm.setdefault(t.normalized, t)
            elif d.removed_by is not None:
                if t.normalized in self.removed:
                    continue
                reasons = d.response.reasons if d.response is not None else ()
                names = tuple(labels.get(r, r) for r in reasons)
                layer = d.removed_by
                # Only a deny list names an entry (a profile or allowlist lacks the tool).
                entries = policy.removal_entries(d, run) if "deny" in layer else ()
                if entries:
                    layer += ": " + ", ".join(e if isinstance(e, str) else repr(e) for e in entries)
                self.removed[t.normalized] = (t, layer, names)

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in self._UNPICKLED}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.routes = {}

    def find(self, name: Any) -> ToolInfo | None:
        """The offered tool a call names: by its exact name, else by its normalized name."""
        info = None
        if name.__class__ is str:
            info = self.by_name.get(name)
        if info is None:
            info = self.by_norm.get(norm(name))
        return info

    def not_offered(self, c: Call) -> Outcome:
        """The block of a call to a tool the run does not offer (naming what removed it)."""
        removed = self.removed.get(norm(c.name))
        reason = f"Tool {c.tool} is not available in this run"
        if removed is None:
            return block(c, "not-offered", reason + ".")
        c.info, layer, c.policies = removed  # the log names the removed tool's plugin
        return block(c, "not-offered", f"{reason} (removed by {layer}).")
