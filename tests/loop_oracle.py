"""A step-by-step oracle of loop detection (spec §11.2 and loop-detection-notes.md).

Written from the spec's text, independently of ``cedarlite.guard.loops``: plain dicts and
lists, recursion, no shared helpers. The property test in ``test_guard_loops.py`` drives the
guard and this oracle with the same calls and outcomes and compares every veto and event.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

UNDEFINED = object()  # "no result": after_tool_call(result=None, error=None)

DEFAULTS = {
    "historySize": 30,
    "warningThreshold": 10,
    "criticalThreshold": 20,
    "globalCircuitBreakerThreshold": 30,
}


def _positive_int(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return False
    return value == int(value) and value > 0


def _falsy(value: Any) -> bool:
    return value is False or value == "" or (type(value) in (int, float) and value == 0)


def resolve(global_ld: Any, agent_ld: Any) -> dict[str, Any]:
    """The settings: agent keys over global keys (null = unset), detectors one level down."""
    g = global_ld if isinstance(global_ld, dict) else {}
    a = agent_ld if isinstance(agent_ld, dict) else {}
    merged = dict(g)
    for k, v in a.items():
        if v is not None:
            merged[k] = v
    gd = g.get("detectors") if isinstance(g.get("detectors"), dict) else {}
    ad = a.get("detectors") if isinstance(a.get("detectors"), dict) else {}
    detectors = dict(gd)
    for k, v in ad.items():
        if v is not None:
            detectors[k] = v
    out: dict[str, Any] = {"enabled": merged.get("enabled") is True}
    for key, default in DEFAULTS.items():
        value = merged.get(key)
        out[key] = int(value) if _positive_int(value) else default
    if not out["criticalThreshold"] > out["warningThreshold"]:
        out["criticalThreshold"] = out["warningThreshold"] + 1
    if not out["globalCircuitBreakerThreshold"] > out["criticalThreshold"]:
        out["globalCircuitBreakerThreshold"] = out["criticalThreshold"] + 1
    for name in ("genericRepeat", "knownPollNoProgress", "pingPong"):
        value = detectors.get(name)
        out[name] = not (value is not None and _falsy(value))
    return out


def _stable(value: Any) -> str:
    if isinstance(value, dict):
        keys = sorted(value)
        return "{" + ",".join(json.dumps(k) + ":" + _stable(value[k]) for k in keys) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_stable(v) for v in value) + "]"
    if isinstance(value, float) and value == int(value):
        return str(int(value))
    return json.dumps(value)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def args_hash(tool: str, params: Any) -> str:
    return tool + ":" + _sha(_stable(params))


def outcome_hash(tool: str, params: Any, result: Any, error: Any) -> str | None:
    if error is not None:
        message = error if isinstance(error, str) else (str(error) or type(error).__name__)
        return "error:" + _sha(message)
    if result is UNDEFINED or result is None:
        return None
    if not isinstance(result, dict):
        return _sha(_stable(result))
    details = result["details"] if isinstance(result.get("details"), dict) else {}
    texts = []
    content = result.get("content")
    if isinstance(content, list):
        for entry in content:
            if (
                isinstance(entry, dict)
                and isinstance(entry.get("type"), str)
                and isinstance(entry.get("text"), str)
            ):
                texts.append(entry["text"])
    text = "\n".join(texts).strip()
    action = params.get("action") if isinstance(params, dict) else None
    if tool == "process" and action == "poll":
        value = {"action": "poll"}
        if "status" in details:
            value["status"] = details["status"]
        for f in ("exitCode", "exitSignal", "aggregated"):
            value[f] = details.get(f)
        value["text"] = text
    elif tool == "process" and action == "log":
        value = {"action": "log"}
        if "status" in details:
            value["status"] = details["status"]
        for f in ("totalLines", "totalChars", "truncated", "exitCode", "exitSignal"):
            value[f] = details.get(f)
        value["text"] = text
    else:
        value = {"details": details, "text": text}
    return _sha(_stable(value))


class Oracle:
    """Loop detection for many sessions, one step at a time."""

    def __init__(self, settings: dict[str, Any]) -> None:
        self.s = settings
        self.sessions: dict[str, dict[str, Any]] = {}

    def _session(self, key: str) -> dict[str, Any]:
        return self.sessions.setdefault(key, {"history": [], "buckets": {}})

    def before(
        self, tool: str, params: Any, session_key: str | None, call_id: str | None
    ) -> tuple[str | None, list[dict[str, Any]]]:
        """``(veto message or None, tool.loop events)`` for one call."""
        if not self.s["enabled"] or not session_key:
            return None, []
        state = self._session(session_key)
        history = state["history"]
        current = args_hash(tool, params)
        found = self._detect(history, tool, params, current)
        events = []
        if found is not None:
            level, detector, count, message, key, paired = found
            emit = True
            if level == "warning":
                bucket = count // 10
                last = state["buckets"].get(key, 0)
                if bucket <= last:
                    emit = False
                else:
                    state["buckets"][key] = bucket  # a dict keeps the first insertion position
                    if len(state["buckets"]) > 256:
                        del state["buckets"][next(iter(state["buckets"]))]
            if emit:
                event = {
                    "type": "tool.loop",
                    "sessionKey": session_key,
                    "toolName": tool,
                    "level": level,
                    "action": "block" if level == "critical" else "warn",
                    "detector": detector,
                    "count": count,
                    "message": message,
                }
                if paired is not None:
                    event["pairedToolName"] = paired
                events.append(event)
            if level == "critical":
                return message, events
        history.append({"tool": tool, "args": current, "id": call_id or None, "result": None})
        del history[: max(0, len(history) - self.s["historySize"])]
        return None, events

    def after(
        self,
        tool: str,
        params: Any,
        session_key: str | None,
        call_id: str | None,
        result: Any,
        error: Any,
    ) -> None:
        if not self.s["enabled"] or not session_key:
            return
        outcome = outcome_hash(tool, params, result, error)
        if outcome is None:
            return
        history = self._session(session_key)["history"]
        current = args_hash(tool, params)
        for entry in reversed(history):
            if entry["result"] is not None or entry["tool"] != tool or entry["args"] != current:
                continue
            if call_id and entry["id"] != call_id:
                continue
            entry["result"] = outcome
            return
        history.append({"tool": tool, "args": current, "id": call_id or None, "result": outcome})
        del history[: max(0, len(history) - self.s["historySize"])]

    def _detect(self, history, tool, params, current):
        s = self.s
        poll = tool == "command_status" or (
            tool == "process"
            and isinstance(params, dict)
            and params.get("action") in ("poll", "log")
        )
        # no-progress streak
        mine = [e for e in history if e["tool"] == tool and e["args"] == current]
        with_outcome = [e["result"] for e in reversed(mine) if e["result"] is not None]
        streak = 0
        for r in with_outcome:
            if r != with_outcome[0]:
                break
            streak += 1
        newest = with_outcome[0] if with_outcome else None
        # ping-pong
        pp_count, pp_no_progress, pp_paired, pp_pair = 0, False, None, None
        if history:
            last = history[-1]
            other = None
            for e in reversed(history[:-1]):
                if e["args"] != last["args"]:
                    other = e
                    break
            if other is not None:
                tail = 0
                for e in reversed(history):
                    want = last["args"] if tail % 2 == 0 else other["args"]
                    if e["args"] != want:
                        break
                    tail += 1
                if tail >= 2 and current == other["args"]:
                    pp_count = tail + 1
                    pp_paired = last["tool"]
                    pp_pair = tuple(sorted([current, last["args"]]))
                    sides: dict[str, set] = {}
                    pp_no_progress = True
                    for e in history[-tail:]:
                        if e["result"] is None:
                            pp_no_progress = False
                        sides.setdefault(e["args"], set()).add(e["result"])
                    if any(len(v) != 1 for v in sides.values()):
                        pp_no_progress = False
        t = tool
        if streak >= s["globalCircuitBreakerThreshold"]:
            return (
                "critical",
                "global_circuit_breaker",
                streak,
                f"CRITICAL: {t} has repeated identical no-progress outcomes {streak} times. "
                "Session execution blocked by global circuit breaker to prevent runaway loops.",
                None,
                None,
            )
        if poll and s["knownPollNoProgress"] and streak >= s["criticalThreshold"]:
            return (
                "critical",
                "known_poll_no_progress",
                streak,
                f"CRITICAL: Called {t} with identical arguments and no progress {streak} times. "
                "This appears to be a stuck polling loop. Session execution blocked to prevent "
                "resource waste.",
                None,
                None,
            )
        if poll and s["knownPollNoProgress"] and streak >= s["warningThreshold"]:
            return (
                "warning",
                "known_poll_no_progress",
                streak,
                f"WARNING: You have called {t} {streak} times with identical arguments and no "
                "progress. Stop polling and either (1) increase wait time between checks, or (2) "
                "report the task as failed if the process is stuck.",
                ("poll", t, current, newest),
                None,
            )
        if s["pingPong"] and pp_count >= s["criticalThreshold"] and pp_no_progress:
            return (
                "critical",
                "ping_pong",
                pp_count,
                "CRITICAL: You are alternating between repeated tool-call patterns "
                f"({pp_count} consecutive calls) with no progress. This appears to be a stuck "
                "ping-pong loop. Session execution blocked to prevent resource waste.",
                None,
                pp_paired,
            )
        if s["pingPong"] and pp_count >= s["warningThreshold"]:
            return (
                "warning",
                "ping_pong",
                pp_count,
                "WARNING: You are alternating between repeated tool-call patterns "
                f"({pp_count} consecutive calls). This looks like a ping-pong loop; stop "
                "retrying and report the task as failed.",
                ("pingpong", pp_pair),
                pp_paired,
            )
        if not poll and s["genericRepeat"] and len(mine) >= s["warningThreshold"]:
            return (
                "warning",
                "generic_repeat",
                len(mine),
                f"WARNING: You have called {t} {len(mine)} times with identical arguments. If "
                "this is not making progress, stop retrying and report the task as failed.",
                ("generic", t, current),
                None,
            )
        return None
