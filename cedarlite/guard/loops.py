"""Loop detection (docs/guard.md §11.2 and docs/guard.md), as pure functions.

A session's loop state is its history (a sliding window of calls and their outcomes) and its
warning buckets. :func:`check_call` decides one call from ``(state, call, settings)`` and
returns the new state; :func:`record_outcome` records what a call returned. Neither touches
anything else, so a store can load, update and save a session's state as one unit
(:mod:`cedarlite.guard.state`).

Detectors, in order (the first that fires wins): the global circuit breaker (a no-progress
streak of identical outcomes), known-poll no-progress (critical, then warning), ping-pong
(critical with no progress, then warning), generic repeat (warning only). Warnings are
bucketed: one is emitted only when ``count // 10`` exceeds the last bucket emitted for its key.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, NamedTuple

from ..tools.catalog import LOOP_DEFAULTS, LOOP_DETECTORS
from ..tools.names import js_trim, js_truthy
from . import _json

#: Most history entries a session keeps, whatever ``historySize`` says (bounds memory and the
#: work per call; the spec's default is 30).
MAX_HISTORY_SIZE = 10_000

#: Warning keys remembered per session; beyond it the earliest inserted key is dropped.
MAX_WARNING_KEYS = 256

#: Warnings are emitted once per bucket of this many repetitions.
BUCKET_SIZE = 10

DETECTORS = LOOP_DETECTORS


# ---------------------------------------------------------------------------------------------
# Settings


# Named tuples, not dataclasses: this module loads in every hook process (one per tool call),
# where a dataclass costs ~1 ms to create and a named tuple a tenth of that.
class LoopSettings(NamedTuple):
    """Resolved ``loopDetection`` settings (docs/guard.md §11.2 table, notes B1, B2, C3, C4)."""

    enabled: bool = False
    history_size: int = 30
    warning_threshold: int = 10
    critical_threshold: int = 20
    global_circuit_breaker_threshold: int = 30
    generic_repeat: bool = True
    known_poll_no_progress: bool = True
    ping_pong: bool = True

    @classmethod
    def resolve(cls, global_value: Any, agent_value: Any = None) -> LoopSettings:
        """Settings from ``tools.loopDetection`` laid under the agent's ``loopDetection``.

        Agent keys that are missing or ``null`` leave the global value; ``detectors`` merges
        one level down; a value that is not an object counts as not set. ``enabled`` must be
        ``true``; numbers must be positive integers (``5.0`` counts), else the default; the
        critical threshold is raised above the warning threshold, then the circuit breaker
        above the critical one. A detector is off only for ``false``, ``0`` or ``""``.
        """
        merged = _overlay(global_value, agent_value)
        detectors = _overlay(
            _object(global_value).get("detectors"), _object(agent_value).get("detectors")
        )
        warning = _positive(merged.get("warningThreshold"), LOOP_DEFAULTS["warningThreshold"])
        critical = _positive(merged.get("criticalThreshold"), LOOP_DEFAULTS["criticalThreshold"])
        if critical <= warning:
            critical = warning + 1
        breaker = _positive(
            merged.get("globalCircuitBreakerThreshold"),
            LOOP_DEFAULTS["globalCircuitBreakerThreshold"],
        )
        if breaker <= critical:
            breaker = critical + 1
        return cls(
            enabled=merged.get("enabled") is True,
            history_size=min(
                _positive(merged.get("historySize"), LOOP_DEFAULTS["historySize"]),
                MAX_HISTORY_SIZE,
            ),
            warning_threshold=warning,
            critical_threshold=critical,
            global_circuit_breaker_threshold=breaker,
            generic_repeat=_switch(detectors.get("genericRepeat")),
            known_poll_no_progress=_switch(detectors.get("knownPollNoProgress")),
            ping_pong=_switch(detectors.get("pingPong")),
        )


def _object(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _overlay(base: Any, top: Any) -> dict[str, Any]:
    merged = dict(_object(base))
    merged.update((k, v) for k, v in _object(top).items() if v is not None)
    return merged


def _positive(value: Any, default: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return default
    if isinstance(value, float) and (not math.isfinite(value) or not value.is_integer()):
        return default
    return int(value) if value > 0 else default


def _switch(value: Any) -> bool:
    return value is None or js_truthy(value)


# ---------------------------------------------------------------------------------------------
# History


class HistoryEntry(NamedTuple):
    """One call of the window: tool, ``argsHash``, call id (``None`` when it had none), and
    the outcome hash once known. ``timestamp`` is informational (seconds since the epoch)."""

    tool: str
    args_hash: str
    call_id: str | None = None
    result_hash: str | None = None
    timestamp: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """``{toolName, argsHash, toolCallId, resultHash, timestamp}``."""
        return {
            "toolName": self.tool,
            "argsHash": self.args_hash,
            "toolCallId": self.call_id,
            "resultHash": self.result_hash,
            "timestamp": self.timestamp,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> HistoryEntry:
        """The inverse of :meth:`to_json` (``TypeError``/``KeyError`` on malformed data)."""
        entry = cls(
            data["toolName"],
            data["argsHash"],
            data.get("toolCallId"),
            data.get("resultHash"),
            float(data.get("timestamp") or 0.0),
        )
        if not all(isinstance(x, str) for x in (entry.tool, entry.args_hash)) or not all(
            x is None or isinstance(x, str) for x in (entry.call_id, entry.result_hash)
        ):
            raise TypeError("malformed loop-history entry")
        return entry


class LoopState(NamedTuple):
    """A session's loop state: the history window, and the last bucket emitted per warning
    key (insertion order; updating a key does not move it)."""

    history: tuple[HistoryEntry, ...] = ()
    buckets: tuple[tuple[str, int], ...] = ()


def args_hash(tool: str, canonical_params: str) -> str:
    """``<tool>:<sha256 of the canonical JSON of the params>``."""
    return f"{tool}:{_json.sha256(canonical_params)}"


def is_known_poll(tool: str, params: Any) -> bool:
    """``command_status``, or ``process`` with ``action`` ``poll`` or ``log``."""
    if tool == "command_status":
        return True
    return (
        tool == "process"
        and isinstance(params, Mapping)
        and params.get("action") in ("poll", "log")
        and isinstance(params.get("action"), str)
    )


# ---------------------------------------------------------------------------------------------
# Detection


class LoopResult(NamedTuple):
    """A detector that fired: ``level`` (``warning``/``critical``), ``detector``, ``count``,
    the exact ``message``, the warning ``key`` (``None`` for criticals) and, for ping-pong,
    ``paired_tool`` (the tool of the newest history entry)."""

    level: str
    detector: str
    count: int  # type: ignore[assignment]  # the field shadows tuple.count, as meant
    message: str
    key: str | None = None
    paired_tool: str | None = None

    @property
    def critical(self) -> bool:
        """A critical result vetoes the call."""
        return self.level == "critical"


def detect(
    history: tuple[HistoryEntry, ...],
    tool: str,
    args: str,
    params: Any,
    settings: LoopSettings,
) -> LoopResult | None:
    """The first detector that fires for a call of ``tool`` with ``args`` (its argsHash),
    before the call is recorded; ``None`` when none does (or detection is off)."""
    if not settings.enabled:
        return None
    # One pass, newest first, over the entries of this tool and args: their number and the
    # no-progress streak (consecutive outcomes equal to the newest outcome).
    same = streak = 0
    latest: str | None = None
    broken = False
    for entry in reversed(history):
        if entry.args_hash != args or entry.tool != tool:
            continue
        same += 1
        outcome = entry.result_hash
        if outcome is None or broken:
            continue
        if latest is None:
            latest, streak = outcome, 1
        elif outcome == latest:
            streak += 1
        else:
            broken = True
    if streak >= settings.global_circuit_breaker_threshold:
        return LoopResult(
            "critical",
            "global_circuit_breaker",
            streak,
            f"CRITICAL: {tool} has repeated identical no-progress outcomes {streak} times. "
            "Session execution blocked by global circuit breaker to prevent runaway loops.",
        )
    known_poll = is_known_poll(tool, params)
    if known_poll and settings.known_poll_no_progress:
        if streak >= settings.critical_threshold:
            return LoopResult(
                "critical",
                "known_poll_no_progress",
                streak,
                f"CRITICAL: Called {tool} with identical arguments and no progress {streak} "
                "times. This appears to be a stuck polling loop. Session execution blocked to "
                "prevent resource waste.",
            )
        if streak >= settings.warning_threshold:
            return LoopResult(
                "warning",
                "known_poll_no_progress",
                streak,
                f"WARNING: You have called {tool} {streak} times with identical arguments and "
                "no progress. Stop polling and either (1) increase wait time between checks, "
                "or (2) report the task as failed if the process is stuck.",
                key=f"poll:{tool}:{args}:{latest}",
            )
    if settings.ping_pong:
        pong = _ping_pong(history, args)
        if pong is not None:
            count, no_progress, paired = pong
            if count >= settings.critical_threshold and no_progress:
                return LoopResult(
                    "critical",
                    "ping_pong",
                    count,
                    "CRITICAL: You are alternating between repeated tool-call patterns "
                    f"({count} consecutive calls) with no progress. This appears to be a stuck "
                    "ping-pong loop. Session execution blocked to prevent resource waste.",
                    paired_tool=paired.tool,
                )
            if count >= settings.warning_threshold:
                pair = sorted((args, paired.args_hash))
                return LoopResult(
                    "warning",
                    "ping_pong",
                    count,
                    "WARNING: You are alternating between repeated tool-call patterns "
                    f"({count} consecutive calls). This looks like a ping-pong loop; stop "
                    "retrying and report the task as failed.",
                    key=f"pingpong:{pair[0]}|{pair[1]}",
                    paired_tool=paired.tool,
                )
    if not known_poll and settings.generic_repeat and same >= settings.warning_threshold:
        return LoopResult(
            "warning",
            "generic_repeat",
            same,
            f"WARNING: You have called {tool} {same} times with identical arguments. If this "
            "is not making progress, stop retrying and report the task as failed.",
            key=f"generic:{tool}:{args}",
        )
    return None


def _ping_pong(
    history: tuple[HistoryEntry, ...], args: str
) -> tuple[int, bool, HistoryEntry] | None:
    """``(count, no progress, newest entry)`` when the call continues an alternation."""
    if not history:
        return None
    newest = history[-1]
    other = next(
        (e.args_hash for e in reversed(history[:-1]) if e.args_hash != newest.args_hash), None
    )
    if other is None or args != other:
        return None
    expected = (newest.args_hash, other)
    tail = 0
    for entry in reversed(history):
        if entry.args_hash != expected[tail % 2]:
            break
        tail += 1
    if tail < 2:
        return None
    outcomes: dict[str, str] = {}
    no_progress = True
    for entry in history[len(history) - tail :]:
        outcome = entry.result_hash
        if outcome is None or outcomes.setdefault(entry.args_hash, outcome) != outcome:
            no_progress = False
            break
    return tail + 1, no_progress, newest


# ---------------------------------------------------------------------------------------------
# Updating the state


def check_call(
    state: LoopState,
    tool: str,
    args: str,
    params: Any,
    call_id: str | None,
    settings: LoopSettings,
    now: float,
) -> tuple[LoopState, LoopResult | None, bool]:
    """Decide a call and record it: ``(new state, result, emit)``.

    A critical result leaves the state unchanged (the vetoed call is not recorded). A warning
    is emitted (``emit``) only when its bucket is new; the call is recorded either way.
    """
    result = detect(state.history, tool, args, params, settings)
    if result is not None and result.critical:
        return state, result, True
    buckets = state.buckets
    emit = False
    if result is not None and result.key is not None:
        emit, buckets = _bucket(buckets, result.key, result.count)
    entry = HistoryEntry(tool, args, call_id or None, None, now)
    history = _window((*state.history, entry), settings.history_size)
    return LoopState(history, buckets), result, emit


def _bucket(
    buckets: tuple[tuple[str, int], ...], key: str, count: int
) -> tuple[bool, tuple[tuple[str, int], ...]]:
    bucket = count // BUCKET_SIZE
    index = next((i for i, (k, _) in enumerate(buckets) if k == key), None)
    last = buckets[index][1] if index is not None else 0
    if bucket <= last:
        return False, buckets
    if index is not None:
        return True, (*buckets[:index], (key, bucket), *buckets[index + 1 :])
    updated = (*buckets, (key, bucket))
    return True, updated[-MAX_WARNING_KEYS:]


def _window(history: tuple[HistoryEntry, ...], size: int) -> tuple[HistoryEntry, ...]:
    return history[-size:] if len(history) > size else history


def record_outcome(
    state: LoopState,
    tool: str,
    args: str,
    call_id: str | None,
    outcome: str,
    settings: LoopSettings,
    now: float,
) -> LoopState:
    """Record an outcome hash (notes C8): the newest pending entry of the same call id (when
    one is given; else any id), tool and args gets it; otherwise it is appended."""
    call_id = call_id or None
    history = state.history
    for i in range(len(history) - 1, -1, -1):
        e = history[i]
        if (
            e.result_hash is None
            and e.args_hash == args
            and e.tool == tool
            and (call_id is None or e.call_id == call_id)
        ):
            done = e._replace(result_hash=outcome)
            return state._replace(history=(*history[:i], done, *history[i + 1 :]))
    entry = HistoryEntry(tool, args, call_id, outcome, now)
    return state._replace(history=_window((*history, entry), settings.history_size))


# ---------------------------------------------------------------------------------------------
# Outcome hashes (notes C6, C7)


def outcome_hash(tool: str, params: Any, result: Any = None, error: Any = None) -> str | None:
    """The hash of what a call returned; ``None`` when there is nothing to record.

    An error (an exception or a message) hashes as ``error:<sha256 of its message>`` and wins
    over ``result``; a result that is not an object hashes as its value; ``process``
    poll/log results keep only their progress fields; other objects ``{details, text}``.
    """
    if error is not None:
        if isinstance(error, BaseException):
            message = str(error) or type(error).__name__
        else:
            message = error if isinstance(error, str) else str(error)
        return "error:" + _json.sha256(message)
    if result is None:
        return None
    if not isinstance(result, Mapping):
        return _json.sha256(_json.stable(result))
    raw = result.get("details")
    details: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    text = _text(result.get("content"))
    action = params.get("action") if isinstance(params, Mapping) else None
    if tool == "process" and action in ("poll", "log") and isinstance(action, str):
        fields = _POLL_FIELDS if action == "poll" else _LOG_FIELDS
        value: dict[str, Any] = {"action": action}
        if "status" in details:
            value["status"] = details["status"]
        value.update((f, details.get(f)) for f in fields)
        value["text"] = text
    else:
        value = {"details": details, "text": text}
    return _json.sha256(_json.stable(value))


_POLL_FIELDS = ("exitCode", "exitSignal", "aggregated")
_LOG_FIELDS = ("totalLines", "totalChars", "truncated", "exitCode", "exitSignal")


def _text(content: Any) -> str:
    if not isinstance(content, list):
        return ""
    texts = [
        entry["text"]
        for entry in content
        if isinstance(entry, Mapping)
        and isinstance(entry.get("type"), str)
        and isinstance(entry.get("text"), str)
    ]
    return js_trim("\n".join(texts))
