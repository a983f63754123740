"""The promises of an agent's rules, proved on the solver (``cedarlite tools prove``).

Each permit of a query file is a promise of the rules ("nothing like this is ever allowed"),
proved disjoint from the guard's compiled policy set (the tool layer and the argument rules)
over the catalog's schema (as ``cedarlite tools schema`` prints it), with the arguments as the
call entity's attributes and as ``context.input``, as the guard builds them. A refutation is a
concrete tool call, decided by the guard itself before it is reported.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from ..errors import CedarliteError
from ..policyset import PolicySet
from ._smt import Unsupported
from .prove import GUARD_DISJOINT, ProofResult, prove

__all__ = ["Promise", "prove_promises"]


@dataclass(frozen=True)
class Promise:
    """One promise of the rules, and what the solver said about it."""

    name: str
    result: ProofResult
    call: dict[str, Any] | None = None  # the bypass: {"tool", "params", "context"}


def prove_promises(
    scenario: str | os.PathLike[str],
    rules: list[str],
    never: PolicySet,
    *,
    timeout: float = 30.0,
) -> list[Promise]:
    """Prove each permit of ``never`` disjoint from the guard's policies for ``scenario`` (a
    scenario or configuration file, or ``cedarlite:NAME``) with ``rules``."""
    from ..shipped import resolve
    from ..tools import ToolPolicy

    path = resolve(str(scenario), "examples")
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, json.JSONDecodeError) as err:
        raise CedarliteError(f"cannot read `{scenario}`: {err}") from None
    config = doc.get("config", doc) if isinstance(doc, dict) else doc
    tools = doc.get("tools") if isinstance(doc, dict) and "config" in doc else None
    policy = ToolPolicy(config, tools or [])
    loaded = policy.load_rules([resolve(r) for r in rules]) if rules else None
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
            call, confirmed = _as_call(policy, loaded, result)
            if not confirmed:
                result = ProofResult(
                    result.prop,
                    None,
                    "not proved: the solver's bypass relies on tool entities other than the "
                    "catalog's (the guard denies it)",
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


def _as_call(policy: Any, rules: Any, result: ProofResult) -> tuple[dict[str, Any], bool]:
    """The counterexample as a tool call, and whether the guard itself allows it."""
    ce = result.counterexample
    assert ce is not None
    context = dict(ce.request["context"])
    params = context.pop("input", {})
    tool = ce.request["action"]["id"]
    call = {"tool": tool, "params": params, "context": context}
    try:
        decision = policy.authorize_call(context, tool, params, rules=rules)
    except CedarliteError:
        return call, False
    return call, bool(decision.allowed)
