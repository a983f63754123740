"""Benchmark: replaying a decision log against a changed policy (``cedarlite.replay``).

The log is ``make_decision_log.py``'s: N calls of the 100-tool run of ``bench_tools.py``,
decided and written by the guard with the shipped argument rules (generated once and kept in
the temporary directory; ``--log`` names another). The new policy removes ``lobster`` from
``alsoAllow`` and forbids ``python -m pytest`` commands.

Three measurements:

* **throughput**: the whole log replayed on Dask's local scheduler with 1 and with 2 worker
  processes (after the machine's own ceiling: a pure-Python loop in 2 processes at once
  against 1), each replay in a fresh process, the two alternating over ``--rounds`` rounds:
  calls per second (wall) and per worker, the 1 → 2 speed-up, and calls per CPU-second of
  the workers (robust to other load on the machine);
* **memory**: the peak resident memory (``VmHWM``) of the largest worker process and of the
  driver, replaying the first quarter, half and all of the log with 2 workers;
* **per call**: where one worker's time goes, in one process, interleaved in small blocks
  over the same sample of lines (CPU time, medians of the blocks): decoding the JSON line,
  reading and checking it, replaying a line whose decision is memoized, deciding the logged
  call with the guard (what a line with new arguments costs), the compiled Cedar decision of
  the same calls alone (request and entity store built beforehand: what the guard adds is the
  difference), and the peer: cedarpy deciding the same calls' Cedar requests (pre-parsed
  handles; only calls the run offers with valid arguments, the requests built by cedarlite's
  tool layer).

    python benchmarks/bench_replay.py [--calls 1000000] [--rounds 3] [--log PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from _cli import at_least  # noqa: E402
from bench_tools import CONFIG, build_tools  # noqa: E402
from make_decision_log import RULE_FILES, generate  # noqa: E402

try:
    import cedarpy
except ImportError:  # pragma: no cover - peers are optional
    cedarpy = None

NEW_CONFIG = {
    **CONFIG,
    "tools": {
        **CONFIG["tools"],
        "alsoAllow": [e for e in CONFIG["tools"]["alsoAllow"] if e != "lobster"],
    },
}
NEW_RULE = """
@id("exec.no-pytest") @reason("Run the test suite in CI.")
forbid (principal, action == Action::"exec", resource)
when { resource.command like "python -m pytest*" };
"""


def new_rules() -> str:
    return "\n".join(Path(p).read_text(encoding="utf-8") for p in RULE_FILES) + NEW_RULE


# ---------------------------------------------------------------------------------------------
# One replay, in its own process (so that RUSAGE_CHILDREN is its workers' alone)


def one(log: str, workers: int) -> dict[str, Any]:
    import threading

    import cedarlite

    peaks: dict[int, float] = {}
    stop = threading.Event()

    def watch() -> None:  # the worker processes' own high-water marks, while they live
        while not stop.wait(0.2):
            for pid in _workers(os.getpid()):
                peaks[pid] = max(peaks.get(pid, 0.0), _high_water_mb(pid))

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    started = time.perf_counter()
    report = cedarlite.replay(log, NEW_CONFIG, new_rules(), tools=build_tools(), workers=workers)
    elapsed = time.perf_counter() - started
    stop.set()
    watcher.join()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "lines": report.lines,
        "elapsed": elapsed,
        "worker_cpu": children.ru_utime + children.ru_stime + _live_cpu(os.getpid()),
        "worker_peak_mb": max(peaks.values(), default=0.0),
        "driver_peak_mb": _high_water_mb(os.getpid()),
        "transitions": dict(report.transitions),
        "undecidable": report.undecidable,
    }


def _stats() -> dict[int, list[str]]:
    """The fields after the command name of ``/proc/PID/stat``, of every process."""
    out = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as f:
                    out[int(entry)] = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
    return out


def _is_fork_server(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"forkserver" in f.read()
    except OSError:
        return False


def _workers(parent: int) -> list[int]:
    """The replay's worker processes: ``parent``'s children, or the fork server's children
    where the pool forks them from one (the local scheduler's default on Linux)."""
    stats = _stats()
    children = [pid for pid, fields in stats.items() if int(fields[1]) == parent]
    servers = {pid for pid in children if _is_fork_server(pid)}
    forked = [pid for pid, fields in stats.items() if int(fields[1]) in servers]
    return [pid for pid in children if pid not in servers] + forked


def _live_cpu(parent: int) -> float:
    """The CPU seconds of ``parent``'s live children and of the processes they started and
    reaped (the fork server, its imports, and the workers it forked): what
    ``RUSAGE_CHILDREN`` of ``parent`` does not count."""
    ticks = os.sysconf("SC_CLK_TCK")
    return sum(
        sum(map(int, fields[11:15])) / ticks  # utime, stime, cutime, cstime
        for fields in _stats().values()
        if int(fields[1]) == parent
    )


def _high_water_mb(pid: int) -> float:
    """``VmHWM``: the peak resident memory of the process's current image (unlike
    ``ru_maxrss``, not inherited from the process it was forked from before ``exec``)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def run_one(log: str, workers: int) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--one", log, "--workers", str(workers)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    return json.loads(done.stdout.splitlines()[-1])


def _loop(_: Any = None) -> float:
    """A fixed pure-Python workload (dict and integer work, like a replay's), its CPU time."""
    started = time.process_time()
    total, table = 0, {}
    for i in range(3_000_000):
        total += i % 7
        table[i & 4095] = total
    return time.process_time() - started


def machine_scaling(rounds: int = 3) -> float:
    """What 2 processes get out of this machine: the median, over ``rounds``, of the work
    per second of the same loop run in 2 processes at once over 1 process alone (2.0 when
    the cores do not slow each other; shared caches, memory and neighbours make it less)."""
    import multiprocessing

    ratios = []
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        pool.map(_loop, range(2))  # both processes started and warm
        for _ in range(rounds):
            alone = pool.apply(_loop)
            wall = time.perf_counter()
            pool.map(_loop, range(2), chunksize=1)
            ratios.append(2 * alone / (time.perf_counter() - wall))
    return statistics.median(ratios)


# ---------------------------------------------------------------------------------------------
# Per call


def per_call(log: str, sample: int, blocks: int) -> None:
    from cedarlite.hooks import Guard, MemorySessionStore
    from cedarlite.impact.logline import LogLine, _decode, read_line
    from cedarlite.impact.worker import ReplaySpec, forget_replayers, replay_partition, replayer

    rng = random.Random(3)
    with open(log, encoding="utf-8") as f:
        lines = [line for _, line in zip(range(sample * 4), f, strict=False)]
    lines = rng.sample(lines, min(sample, len(lines)))
    records = [r for r in map(read_line, lines) if isinstance(r, LogLine)]
    spec = ReplaySpec(NEW_CONFIG, build_tools(), new_rules())
    forget_replayers()
    replay_partition([(line, log) for line in lines], spec)  # guards built, memo filled
    rep = replayer(spec)
    guards: dict[str, Guard] = {}
    base = Guard(NEW_CONFIG, build_tools(), {}, rules=new_rules(),
                 session_store=MemorySessionStore())  # fmt: skip

    def guard_of(context: dict[str, Any]) -> Guard:
        key = json.dumps(context, sort_keys=True)
        if key not in guards:
            guards[key] = base.for_context(context)
        return guards[key]

    calls = [(guard_of(r.context), r.tool, r.params) for r in records]
    peer = _cedarpy_rows(calls) if cedarpy is not None else []
    bare = _bare_rows(calls)

    def each(fn: Callable[[Any], Any], items: list[Any]) -> Callable[[int, int], Any]:
        def block(start: int, size: int) -> None:
            for i in range(start, start + size):
                fn(items[i % len(items)])

        return block

    # Each row runs a block of calls; a replayed block is one partition of those lines.
    rows: dict[str, Callable[[int, int], Any]] = {
        "json decode of the line": each(_decode, lines),
        "read and check the line": each(read_line, lines),
        "replay a line (decision memoized)": lambda start, size: replay_partition(
            [(line, log) for line in lines[start : start + size]], spec
        ),
        "guard decision of the call (no memo)": each(
            lambda c: c[0].before_tool_call(c[1], c[2]), calls
        ),
    }
    rows["bare Cedar decision, same calls (subset)"] = each(
        lambda b: b[0].authorize(b[1], b[2]), bare
    )
    if peer:
        rows["cedarpy, same Cedar requests (subset)"] = each(
            lambda p: cedarpy.is_authorized(*p), peer
        )
    size = 200
    samples: dict[str, list[float]] = {name: [] for name in rows}
    names = list(rows)
    for b in range(blocks):
        rng.shuffle(names)
        start = (b * size) % max(1, len(lines) - size)
        for name in names:
            t0 = time.thread_time()
            rows[name](start, size)
            samples[name].append((time.thread_time() - t0) * 1e6 / size)
    assert rep is replayer(spec)
    guard_us = statistics.median(samples["guard decision of the call (no memo)"])
    print(f"\nper call: {len(lines):,} sampled lines, {blocks} interleaved blocks of {size}, "
          "CPU time (median of blocks)")  # fmt: skip
    print(f"  {'row':<42}{'us/call':>9}{'calls/s':>10}{'x guard':>9}")
    for name, values in samples.items():
        us = statistics.median(values)
        print(f"  {name:<42}{us:>9.1f}{1e6 / us:>10,.0f}{us / guard_us:>9.2f}")
    print(f"  (bare and cedarpy rows: {len(bare):,} and {len(peer):,} of the sampled calls, "
          "those the run offers with valid arguments, request and entities built beforehand; "
          "the guard row decides all of them)")  # fmt: skip


def _requests(calls: list[tuple[Any, str, Any]]) -> Iterator[tuple[Any, Any, Any]]:
    """(guard, Cedar request, call entity) of each call the run offers with valid arguments,
    built by cedarlite's tool layer (the bench reaches into the guard)."""
    from cedarlite import Request
    from cedarlite.data.values import Record
    from cedarlite.tools.params import ToolArgumentError, call_arguments, call_entity

    for guard, tool, params in calls:
        info = guard._offered.by_norm.get(tool)
        if info is None:
            continue
        try:
            arguments = call_arguments(info, params)
        except (ToolArgumentError, TypeError, ValueError):
            continue
        entity = call_entity(guard.policy.catalog, info, arguments, "call")
        run = guard.resolution.context
        request = Request(run.principal, info.action, entity.uid,
                          Record({**run.record(), "input": arguments}))  # fmt: skip
        yield guard, request, entity


def _bare_rows(calls: list[tuple[Any, str, Any]]) -> list[tuple[Any, ...]]:
    """(compiled policies, request, entities) of the calls the guard takes to Cedar: what the
    guard's decision costs without the guard."""
    from cedarlite.data.entities import overlay_closed

    out = []
    for guard, request, entity in _requests(calls):
        closed = guard.policy.entities.overlay([entity])[entity.uid]
        out.append((guard._rules.compiled, request, overlay_closed(guard.policy.entities, closed)))
    return out


def _cedarpy_rows(calls: list[tuple[Any, str, Any]]) -> list[tuple[Any, ...]]:
    from cedarlite.data.values import to_json_value

    out = []
    handles: dict[int, Any] = {}
    for guard, request, entity in _requests(calls):
        if id(guard.policies) not in handles:
            handles[id(guard.policies)] = cedarpy.PolicySet.from_str(guard.policies.to_cedar())
        entities = guard.policy.entities.overlay([entity]).to_json()
        out.append(
            (
                {
                    "principal": str(request.principal),
                    "action": str(request.action),
                    "resource": str(request.resource),
                    "context": to_json_value(request.context),
                },
                handles[id(guard.policies)],
                cedarpy.Entities.from_json_str(json.dumps(entities)),
            )
        )
        if len(out) >= 2000:
            break
    return out


# ---------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=at_least(1), default=1_000_000, help="log size (lines)")
    parser.add_argument("--rounds", type=at_least(1), default=3, help="replays per worker count")
    parser.add_argument("--log", help="an existing decision log (default: generated)")
    parser.add_argument(
        "--sample", type=at_least(1), default=4000, help="lines for the per-call rows"
    )
    parser.add_argument(
        "--blocks", type=at_least(1), default=60, help="blocks for the per-call rows"
    )
    parser.add_argument("--skip", default="", help="comma-separated: throughput,memory,calls")
    parser.add_argument("--one", metavar="LOG", help=argparse.SUPPRESS)
    parser.add_argument("--workers", type=at_least(1), default=1, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.one, args.workers)))
        return 0
    skip = set(filter(None, args.skip.split(",")))
    log = args.log
    if log is None:
        folder = Path(tempfile.gettempdir()) / "cedarlite-bench-replay"
        folder.mkdir(exist_ok=True)
        log = str(folder / f"decisions-{args.calls}.jsonl")
        if not os.path.exists(log):
            print(f"writing {args.calls:,} calls to {log} (make_decision_log.py)...", flush=True)
            generate(log, args.calls, workers=os.cpu_count() or 1)
    size = os.path.getsize(log)
    print(f"log: {log}: {size / 1e6:,.0f} MB; {os.cpu_count()} CPUs; load average "
          f"{os.getloadavg()[0]:.1f}")  # fmt: skip

    if "throughput" not in skip:
        print(f"machine: a pure-Python loop in 2 processes at once does "
              f"{machine_scaling():.2f}x the work of 1 (the ceiling of the speed-up below)",
              flush=True)  # fmt: skip
        runs: dict[int, list[dict[str, Any]]] = {1: [], 2: []}
        for r in range(args.rounds):
            for workers in (1, 2) if r % 2 == 0 else (2, 1):
                result = run_one(log, workers)
                runs[workers].append(result)
                print(f"  round {r + 1}, {workers} worker(s): {result['lines']:,} lines in "
                      f"{result['elapsed']:.1f} s", flush=True)  # fmt: skip
        print(f"\nthroughput: {runs[1][0]['lines']:,} logged calls, {args.rounds} rounds "
              f"(medians); transitions {runs[1][0]['transitions']}, undecidable "
              f"{runs[1][0]['undecidable']:,}")  # fmt: skip
        print(f"  {'workers':<9}{'wall s':>8}{'calls/s':>10}{'per worker':>12}{'speed-up':>10}"
              f"{'calls/CPU-s':>13}{'worker peak MB':>16}")  # fmt: skip
        base = None
        for workers, results in runs.items():
            wall = statistics.median(r["elapsed"] for r in results)
            lines = results[0]["lines"]
            rate = lines / wall
            base = base or rate
            cpu_rate = statistics.median(r["lines"] / r["worker_cpu"] for r in results)
            peak = max(r["worker_peak_mb"] for r in results)
            print(f"  {workers:<9}{wall:>8.1f}{rate:>10,.0f}{rate / workers:>12,.0f}"
                  f"{rate / base:>10.2f}{cpu_rate:>13,.0f}{peak:>16.0f}")  # fmt: skip

    if "memory" not in skip:
        print("\nmemory: 2 workers, prefixes of the log")
        print(f"  {'lines':>10}{'MB of log':>11}{'worker peak MB':>16}{'driver peak MB':>16}")
        with open(log, "rb") as f:
            total = sum(1 for _ in f)
        with tempfile.TemporaryDirectory() as tmp:
            for share in (4, 2, 1):
                part = Path(tmp) / f"part-{share}.jsonl"
                with open(log, "rb") as src, open(part, "wb") as dst:  # streamed: this
                    for _, line in zip(range(total // share), src, strict=False):  # process
                        dst.write(line)  # stays small, so its children's figures are theirs
                result = run_one(str(part), 2)
                print(f"  {result['lines']:>10,}{part.stat().st_size / 1e6:>11,.0f}"
                      f"{result['worker_peak_mb']:>16.0f}{result['driver_peak_mb']:>16.0f}",
                      flush=True)  # fmt: skip

    if "calls" not in skip:
        per_call(log, args.sample, args.blocks)
    return 0


if __name__ == "__main__":
    sys.exit(main())
