"""The approval stage: the requests a call needs (``@ask`` policies, trusted policies, hooks),
answered from the session's ``allow-always`` memory, returned as ``ask`` or put to the
``approver`` (docs/guard.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

from . import _json
from .approvals import (
    SEVERITIES,
    ApprovalRequest,
    Approver,
    AskSpec,
    hook_request_fields,
    request_approval,
)
from .call import Call, allow, block
from .outcome import Outcome

if TYPE_CHECKING:
    from .state import SessionState, SessionStore


def policy_request(c: Call, specs: list[AskSpec], agent: str) -> ApprovalRequest:
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
        timeout_behavior="allow" if all(s.timeout_behavior == "allow" for s in specs) else "deny",
        plugin_id=None,
        agent=agent,
        params=c.params,
        policies=labels,
        key=approval_key(c, "policy:" + ",".join(sorted(labels))),
    )


def hook_request(c: Call, spec: Mapping[str, Any], plugin_id: str, agent: str) -> ApprovalRequest:
    """The request of a trusted policy's or a hook's ``requireApproval``."""
    return ApprovalRequest(
        tool=c.tool,
        call=c.call,
        plugin_id=plugin_id,
        agent=agent,
        params=c.params,
        key=approval_key(c, "plugin:" + plugin_id),
        **hook_request_fields(spec),
    )


def approval_key(c: Call, source: str) -> str:
    """What ``allow-always`` remembers: this tool, these arguments, this asker."""
    return _json.sha256(_json.stable([c.tool, c.params_digest(), source]))


def _requests(c: Call, store: SessionStore) -> tuple[list[ApprovalRequest], frozenset[str]]:
    """The approvals the call needs (policy, trusted policies, hooks), with the params
    the call would run with, and the session's remembered ``allow-always`` keys."""
    asks = [c.policy_ask, *c.asks] if c.policy_ask is not None else c.asks
    requests = [replace(r, params=c.params) for r in asks]
    if not requests or c.session is None:
        return requests, frozenset()
    return requests, frozenset(store.load(c.session).approvals)


def pending(c: Call, store: SessionStore) -> Outcome:
    """``allow``, or ``ask`` with the approvals not remembered with ``allow-always``."""
    if c.policy_ask is None and not c.asks:
        return allow(c)
    requests, remembered = _requests(c, store)
    waiting = []
    for request in requests:
        if request.key in remembered:
            c.approvals_log += (_entry(request, "remembered"),)
        else:
            c.approvals_log += (_entry(request, "pending"),)
            waiting.append(request)
    if not waiting:
        return allow(c)
    first = waiting[0]
    return Outcome(
        "ask",
        c.tool,
        c.params,
        first.description or first.title,
        None,
        c.policies,
        c.errors,
        first,
        tuple(waiting),
        warnings=c.warnings,
    )


async def ask(c: Call, store: SessionStore, approver: Approver | None) -> Outcome:
    """Ask the approver for each approval not remembered, in order; the first failure
    blocks (``plugin-approval``)."""
    requests, remembered = _requests(c, store)
    c.approving = True
    for request in requests:
        if request.key in remembered:
            c.approvals_log += (_entry(request, "remembered"),)
            continue
        answer = await request_approval(request, approver)
        c.waited += answer.waited
        c.approvals_log += (_entry(request, answer.resolution, answer.waited),)
        if answer.resolution == "allow-always" and c.session is not None:
            store.update(c.session, partial(_remember, request.key))
        if not answer.proceed:
            return block(c, "plugin-approval", answer.reason or "", failure=True)
    return allow(c)


def _remember(key: str, state: SessionState) -> tuple[SessionState, None]:
    return state.with_approval(key), None


def _entry(request: ApprovalRequest, resolution: str, waited: float = 0.0) -> dict[str, Any]:
    """One element of the log's ``approvals``."""
    return {
        "plugin": request.plugin_id,
        "policies": list(request.policies),
        "severity": request.severity,
        "resolution": resolution,
        "waited_ms": round(waited * 1000, 3),
    }
