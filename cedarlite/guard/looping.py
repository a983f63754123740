"""The loop-detection stage (docs/guard.md §11.2): a call checked against its session's history,
kept by the :class:`~.state.SessionStore`, and what a call returned recorded there.

:mod:`.loops` decides, as pure functions of a session's state; this stage runs them inside the
store's update of that state (one transaction per call) and turns a result into the call's
block, warning and ``tool.loop`` event.
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any

from .._log import get_logger
from . import _json, loops
from .call import Call, block
from .outcome import Outcome
from .record import Events
from .state import SessionState, SessionStore

log = get_logger("cedarlite.hooks")


def check(
    c: Call, settings: loops.LoopSettings, store: SessionStore, events: Events
) -> Outcome | None:
    """A critical result blocks (``tool-loop``); a warning is emitted once per bucket and
    travels with the call; the call is recorded in the session's history."""
    c.args = f"{c.tool}:{c.params_digest()}"
    args, tool, params, call_id, now = c.args, c.tool, c.params, c.call_id, time.time()

    def change(state: SessionState) -> tuple[SessionState, tuple[loops.LoopResult | None, bool]]:
        updated, result, emit = loops.check_call(
            state.loop, tool, args, params, call_id, settings, now
        )
        new = state if updated is state.loop else SessionState(updated, state.approvals)
        return new, (result, emit)

    assert c.session is not None
    result, emit = store.update(c.session, change)
    if result is None or not emit:
        return None
    events.loop(c, result)
    if result.critical:
        return block(c, "tool-loop", result.message)
    log.warning("%s", result.message)
    c.warnings += (result.message,)
    return None


def record(
    c: Call, params: Any, result: Any, error: Any, settings: loops.LoopSettings, store: SessionStore
) -> None:
    """Record what a call returned (nothing for a call that returned nothing)."""
    outcome = loops.outcome_hash(c.tool, params, result, error)
    if outcome is None or c.session is None:
        return
    args = loops.args_hash(c.tool, _json.canonical(params))
    change = partial(_record_outcome, c.tool, args, c.call_id, outcome, settings, time.time())
    store.update(c.session, change)


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
