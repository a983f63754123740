"""The promises of an agent's rules, proved on the solver (``cedarlite tools prove``).

Each permit of a query file is a promise of the rules ("nothing like this is ever allowed"),
proved disjoint from the guard's compiled policy set (the tool layer and the argument rules)
over the catalog's schema (as ``cedarlite tools schema`` prints it), with the arguments as the
call entity's attributes and as ``context.input``, as the guard builds them. A refutation is a
concrete tool call, decided by the guard itself before it is reported.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import CedarliteError
from ..policyset import PolicySet
from ._smt import Unsupported
from .prove import GUARD_DISJOINT, ProofResult, prove

if TYPE_CHECKING:
    from ..tools import ToolPolicy

__all__ = ["Promise", "prove_promises"]


@dataclass(frozen=True)
class Promise:
    """One promise of the rules, and what the solver said about it."""

    name: str
    result: ProofResult
    call: dict[str, Any] | None = None  # the bypass: {"tool", "params", "context"}


def prove_promises(
    policy: ToolPolicy,
    rules: Any,
    never: PolicySet,
    *,
    timeout: float = 30.0,
    context: Mapping[str, Any] | None = None,
) -> list[Promise]:
    """Prove each permit of ``never`` disjoint from the guard's policies: ``policy``'s tool
    layer with the argument ``rules`` (anything :meth:`ToolPolicy.load_rules` takes, or
    ``None``), over ``policy.schema``. A refutation is decided by the guard in the run
    context the solver chose, else in ``context`` (the deployment's own), and reported as a
    bypass only when one of them allows it."""
    loaded = policy.load_rules(rules) if rules is not None else None
    guard, _ = policy._with_rules(loaded)
    out = []
    for p in never.active:
        name = never.label(p.id)
        result = prove(
            GUARD_DISJOINT,
            guard,
            PolicySet([p]),
            schema=policy.schema,
            timeout=timeout,
            assume=_arguments_are_attributes,
        )
        call = None
        if result.holds is False and result.counterexample is not None:
            call = _as_call(policy, loaded, result, context or {})
            if call is None:
                result = ProofResult(
                    result.prop,
                    None,
                    "not proved: the solver's bypass is denied by the guard in a run context "
                    "it accepts (the solver's, or the configuration's): it relies on a context "
                    "or tool entities no run has",
                    result.counterexample,
                )
        out.append(Promise(name, result, call))
    return out


def _arguments_are_attributes(enc: Any) -> list[Any]:
    """The guard's calls: the call entity's attributes are the arguments (``context.input``)."""
    z3 = enc.z3
    found = enc.context.v.get("input")
    if found is None or not isinstance(found[1].v, dict):
        return []
    out = []
    for name, (present, value) in found[1].v.items():
        try:
            has, attr = enc.field(enc.resource, name)
        except Unsupported:
            continue
        out.append(present == has)
        if not isinstance(value.v, dict):
            out.append(z3.Implies(present, value.v == attr.v))
    return out


def _as_call(
    policy: ToolPolicy, rules: Any, result: ProofResult, context: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The counterexample as a tool call (``{"tool", "params", "context"}``, the context a
    run context) that the guard itself allows, or ``None``."""
    ce = result.counterexample
    assert ce is not None
    cedar = dict(ce.request["context"])
    params = cedar.pop("input", {})
    tool = ce.request["action"]["id"]
    for run in (_run_context(cedar), context):
        try:
            decision = policy.authorize_call(run, tool, params, rules=rules)
        except CedarliteError:  # not a run context this configuration accepts
            continue
        if decision.allowed:
            return {"tool": tool, "params": params, "context": dict(run)}
    return None


def _run_context(cedar: Mapping[str, Any]) -> dict[str, Any]:
    """The run context whose Cedar context is ``cedar`` (as the guard builds it), with the
    keys that it holds a value for."""
    run: dict[str, Any] = {}
    if cedar.get("agent"):
        run["agentId"] = cedar["agent"]
    if cedar.get("provider") and cedar.get("providerModel"):
        run["provider"] = cedar["provider"]
        run["model"] = cedar["providerModel"]
    for key in ("channel", "groupId"):
        if cedar.get(key):
            run[key] = cedar[key]
    for key in ("sandboxed", "senderIsOwner", "subagentDepth", "toolsEnabled"):
        if key in cedar:
            run[key] = cedar[key]
    return run
