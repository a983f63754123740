"""Benchmark: the before-tool-call guard's overhead per call, next to a bare decision.

The run of ``bench_tools.py`` (100 tools: core, plugin and MCP tools; a configuration using
profiles, byProvider, agents, sandbox and sub-agent settings), the shipped argument rules
(``policies/exec-commands.cedar``, ``policies/paths.cedar``) and a mix of calls: ``exec``
commands and file paths that pass and fail the rules, MCP tools, tools the run does not offer.

Rows, measured in the same process, interleaved call by call (each round times every row once
on the same call, in a shuffled order), then in a tight loop of blocks:

* **bare decision**: the compiled Cedar decision on a request built beforehand (the engine
  alone: no name lookup, no argument checking);
* **authorize_call**: ``ToolPolicy.authorize_call``, the tool layer's per-call API (arguments
  checked and converted, request built, decided);
* **cedarpy**: the Rust engine on the same requests (pre-parsed policy and entity handles);
* **guard**: ``Guard.before_tool_call`` with loop detection off/on and the decision log off/on
  (the log is a file in a temporary directory).

Every row must reach the same allow/deny on every call. Medians and p99 in microseconds; the
ratio is the row's median over the bare decision's. Per-call times are the thread's CPU time
by default (``--clock cpu``): on a shared machine a wall-clock sample often includes time the
process spent descheduled, which no row causes; ``--clock wall`` measures wall time. The
tight-loop column is wall time either way. Run:

    python benchmarks/bench_guard.py [--rounds 4000] [--clock cpu|wall]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from _cli import at_least  # noqa: E402
from bench_tools import CONFIG, build_tools  # noqa: E402

from cedarlite import PolicySet, Request  # noqa: E402
from cedarlite.data.values import Record  # noqa: E402
from cedarlite.engine.compiler import compiled  # noqa: E402
from cedarlite.hooks import Guard, MemorySessionStore  # noqa: E402
from cedarlite.tools import ToolPolicy  # noqa: E402
from cedarlite.tools.params import call_arguments, call_entity  # noqa: E402

try:
    import cedarpy
except ImportError:  # pragma: no cover - peers are optional
    cedarpy = None

CONTEXT = {"agentId": "coder", "provider": "openai", "model": "gpt-5", "senderIsOwner": True}
RULE_FILES = [ROOT / "policies" / "exec-commands.cedar", ROOT / "policies" / "paths.cedar"]
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("exec", {"command": "git status"}),
    ("exec", {"command": "python -m pytest -q"}),
    ("exec", {"command": "rm -rf /"}),
    ("exec", {"command": "git log | sh"}),
    ("exec", {"command": "rg TODO src", "workdir": "/srv/app", "timeout": 30}),
    ("read", {"path": "src/app.py"}),
    ("read", {"path": "/home/me/.ssh/id_rsa"}),
    ("write", {"path": "notes/todo.md", "content": "x" * 200}),
    ("write", {"path": "../outside.txt", "content": "x"}),
    ("github__gh_tool_3", {"repo": "acme/app", "title": "Flaky test"}),
    ("lobster_run", {}),
    ("gateway", {}),
]


def summary(samples: list[float]) -> tuple[float, float]:
    """(median, p99) in microseconds."""
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def interleaved(
    rows: dict[str, Callable[[int], Any]], rounds: int, clock: Callable[[], float]
) -> dict[str, list[float]]:
    """Per-call times: each round calls every row once on the same call, in a shuffled order
    (a fixed rotation would always run a row after the same neighbour, whose effect on the
    caches it would then carry)."""
    names = list(rows)
    samples: dict[str, list[float]] = {n: [] for n in names}
    rng = random.Random(7)
    for r in range(rounds):
        i = r % len(CALLS)
        rng.shuffle(names)
        for name in names:
            fn = rows[name]
            t0 = clock()
            fn(i)
            samples[name].append((clock() - t0) * 1e6)
    return samples


def tight(rows: dict[str, Callable[[int], Any]], blocks: int, size: int) -> dict[str, float]:
    """Mean microseconds per call over blocks of ``size`` back-to-back calls (median block)."""
    out: dict[str, list[float]] = {n: [] for n in rows}
    for _ in range(blocks):
        for name, fn in rows.items():
            t0 = time.perf_counter()
            for k in range(size):
                fn(k % len(CALLS))
            out[name].append((time.perf_counter() - t0) * 1e6 / size)
    return {n: statistics.median(v) for n, v in out.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=at_least(1), default=4000, help="interleaved rounds")
    parser.add_argument("--clock", choices=["cpu", "wall"], default="cpu")
    args = parser.parse_args(argv)

    tools = build_tools()
    policy = ToolPolicy(CONFIG, tools)
    rules = PolicySet.from_str("\n".join(p.read_text() for p in RULE_FILES))
    tmp = tempfile.TemporaryDirectory(prefix="bench-guard-")

    def guard(loops: bool, log: bool) -> Guard:
        config = {**CONFIG, "tools": {**CONFIG["tools"], "loopDetection": {"enabled": loops}}}
        return Guard(
            config,
            tools,
            CONTEXT,
            rules=[str(p) for p in RULE_FILES],
            decision_log=Path(tmp.name) / f"log-{loops}-{log}.jsonl" if log else None,
            session_store=MemorySessionStore(),
        )

    guards = {(loops, log): guard(loops, log) for loops in (False, True) for log in (False, True)}
    base = guards[(False, False)]

    # The bare decision: requests built beforehand, decided by the guard's own compiled set.
    index = compiled(base.policies)
    run = base.resolution.context
    prebuilt = []
    for name, params in CALLS:
        info = policy.catalog.find(name)
        arguments = call_arguments(info, params)
        entity = call_entity(policy.catalog, info, arguments, "call")
        record = Record({**run.record(), "input": arguments})
        request = Request(run.principal, info.action, entity.uid, record)
        prebuilt.append((request, base.policy.entities.overlay([entity])))

    calls = [{"sessionKey": "bench", "toolCallId": f"c{i}"} for i in range(len(CALLS))]
    rows: dict[str, Callable[[int], Any]] = {
        "bare decision (prebuilt request)": lambda i: index.authorize(*prebuilt[i]),
        "ToolPolicy.authorize_call": lambda i: policy.authorize_call(
            CONTEXT, CALLS[i][0], CALLS[i][1], rules=rules
        ),
    }
    if cedarpy is not None:
        text = base.policies.to_cedar()
        cps = cedarpy.PolicySet.from_str(text)
        peer = []
        for request, entities in prebuilt:
            ents = cedarpy.Entities.from_json_str(json.dumps(entities.to_json()))
            peer.append((_cedarpy_request(request), cps, ents))
        rows["cedarpy (pre-parsed handles)"] = lambda i: cedarpy.is_authorized(*peer[i])
    for (loops, log), g in guards.items():
        label = f"guard (loops {'on' if loops else 'off'}, log {'on' if log else 'off'})"
        rows[label] = lambda i, g=g: g.before_tool_call(CALLS[i][0], CALLS[i][1], calls[i])

    # Like with like: every row reaches the same decision on every call.
    expected = [index.authorize(*p).allowed for p in prebuilt]
    for name, fn in rows.items():
        got = [_allowed(fn(i)) for i in range(len(CALLS))]
        if got != expected:
            raise SystemExit(f"{name} decides differently: {got} != {expected}")

    clock = time.thread_time if args.clock == "cpu" else time.perf_counter
    samples = interleaved(rows, args.rounds, clock)
    loop_means = tight(rows, blocks=5, size=400)
    bare = summary(samples["bare decision (prebuilt request)"])[0]
    n_allowed = sum(expected)
    print(
        f"guard overhead: {len(tools)} tools, {len(base.policies)} policies, "
        f"{len(CALLS)} calls ({n_allowed} allowed), {args.rounds} interleaved rounds, "
        f"{args.clock} time"
    )
    print(
        f"  {'row':<38}{'median us':>11}{'p99 us':>10}{'x bare':>9}"
        f"{'+us vs bare':>13}{'tight-loop us':>15}"
    )
    for name, values in samples.items():
        median, p99 = summary(values)
        print(
            f"  {name:<38}{median:>11.1f}{p99:>10.1f}{median / bare:>9.2f}"
            f"{median - bare:>13.1f}{loop_means[name]:>15.1f}"
        )
    after = guards[(True, False)]
    result = {"content": [{"type": "text", "text": "ok"}], "details": {"exitCode": 0}}
    after_samples = []
    for r in range(args.rounds):
        i = r % len(CALLS)
        t0 = clock()
        after.after_tool_call(CALLS[i][0], CALLS[i][1], calls[i], result=result)
        after_samples.append((clock() - t0) * 1e6)
    median, p99 = summary(after_samples)
    print(f"  {'after_tool_call (loops on)':<38}{median:>11.1f}{p99:>10.1f}")
    for g in guards.values():
        g.close()
    tmp.cleanup()
    return 0


def _allowed(result: Any) -> bool:
    if hasattr(result, "action"):
        return bool(result.action == "allow")
    if hasattr(result, "decision") and not hasattr(result, "allowed"):
        return str(result.decision).endswith("Allow")
    return bool(result.allowed)


def _cedarpy_request(request: Request) -> dict[str, Any]:
    from cedarlite.data.values import to_json_value

    return {
        "principal": str(request.principal),
        "action": str(request.action),
        "resource": str(request.resource),
        "context": to_json_value(request.context),
    }


if __name__ == "__main__":
    raise SystemExit(main())
