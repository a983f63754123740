"""The decision service under load: throughput and latency of ``before_tool_call`` over the Unix
socket and over HTTP with 8 concurrent clients, next to the in-process guard.

    python benchmarks/bench_serve.py                    # 8 clients, 400 requests each
    python benchmarks/bench_serve.py --clients 8 --requests 1000 --rounds 3

The configuration is the shipped coding-agent scenario (examples/coding-agent.json) with the
exec-commands rules; the requests are its calls in four run contexts (other agents,
providers, channels), so every answer goes through the tool layer, the argument rules and
the guard's run-context cache. Each client is its own process (no GIL shared with another
client) with one connection (keep-alive for HTTP) and sends its requests one after the other;
it records each request's round trip. The transports are measured in alternating rounds (socket,
HTTP, socket, ...), each against a fresh service, so neither runs warm from the other.

The in-process rows decide the same requests with :class:`cedarlite.guard.Guard` in this
process: one thread, and 8 threads sharing it (one GIL). Printed: requests per second over
the whole round (all clients), p50 and p99 of the round trips, and the services' throughput
over the in-process guard's. Shared machines are noisy: quote medians and ratios.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from _cli import at_least

ROOT = Path(__file__).resolve().parent.parent
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
RULES = "cedarlite:exec-commands"
CONTEXTS: list[dict[str, Any] | None] = [
    None,
    {"agentId": "reviewer", "senderIsOwner": True},
    {"agentId": "coder", "provider": "openai", "model": "gpt-5", "senderIsOwner": True},
    {"agentId": "coder", "channel": "discord", "groupId": "g1", "senderIsOwner": False},
]


def requests() -> list[dict[str, Any]]:
    example = json.loads((ROOT / "examples" / "coding-agent.json").read_text())
    out = []
    for ci, context in enumerate(CONTEXTS):
        for i, c in enumerate(example["calls"]):
            r = {"tool": c["tool"], "params": c.get("params", {}),
                 "call": {"sessionKey": f"s{ci}", "toolCallId": f"c{i}"}}  # fmt: skip
            if context is not None:
                r["context"] = context
            out.append(r)
    return out


def config_file(work: Path) -> Path:
    example = json.loads((ROOT / "examples" / "coding-agent.json").read_text())
    data = {k: example[k] for k in ("config", "tools", "context")}
    path = work / "serve.json"
    path.write_text(json.dumps(data))
    return path


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


# -- clients (each in its own process) ---------------------------------------------------------


def socket_client(path: str, items: list[dict[str, Any]], n: int) -> list[float]:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(60)
    sock.connect(path)
    reader = sock.makefile("rb")
    lines = [json.dumps({"id": i, "op": "before_tool_call", **items[i % len(items)]}).encode()
             + b"\n" for i in range(n)]  # fmt: skip
    times = []
    for line in lines:
        t0 = time.perf_counter()
        sock.sendall(line)
        answer = reader.readline()
        times.append((time.perf_counter() - t0) * 1000)
        if b'"action"' not in answer:
            raise SystemExit(f"bad answer: {answer[:200]!r}")
    sock.close()
    return times


def http_client(address: str, items: list[dict[str, Any]], n: int) -> list[float]:
    import http.client

    host, port = address.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    bodies = [json.dumps(items[i % len(items)]).encode() for i in range(n)]
    headers = {"Content-Type": "application/json"}
    times = []
    for body in bodies:
        t0 = time.perf_counter()
        conn.request("POST", "/v1/before_tool_call", body=body, headers=headers)
        response = conn.getresponse()
        answer = response.read()
        times.append((time.perf_counter() - t0) * 1000)
        if response.status != 200 or b'"action"' not in answer:
            raise SystemExit(f"bad answer: {response.status} {answer[:200]!r}")
    conn.close()
    return times


def _client(args: tuple[str, str, list[dict[str, Any]], int]) -> list[float]:
    kind, where, items, n = args
    return (socket_client if kind == "socket" else http_client)(where, items, n)


# -- services ----------------------------------------------------------------------------------


@contextlib.contextmanager
def service(kind: str, config: Path, work: Path) -> Any:
    """A fresh service of ``kind``; yields where it listens. Stopped by process id."""
    args = [sys.executable, "-m", "cedarlite", "serve", "--config", str(config), "--rules", RULES]
    sock = str(work / "s.sock")
    args += ["--socket", sock] if kind == "socket" else ["--http", "127.0.0.1:0"]
    proc = subprocess.Popen(args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, env=ENV)
    try:
        assert proc.stderr is not None
        while True:
            line = proc.stderr.readline()
            if not line:
                raise SystemExit("the service ended before it served")
            found = re.search(rb"serving generation \d+ on (\S+)", line)
            if found:
                break
        where = found.group(1).decode()
        yield sock if kind == "socket" else where.removeprefix("http://")
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()


def round_of(kind: str, where: str, items: list[dict[str, Any]], clients: int, n: int,
             pool: Any) -> tuple[float, list[float]]:  # fmt: skip
    """(requests per second, round trips) of ``clients`` processes sending ``n`` each."""
    pool.map(_client, [(kind, where, items, 20)] * clients)  # warm: connections, caches
    t0 = time.perf_counter()
    results = pool.map(_client, [(kind, where, items, n)] * clients)
    elapsed = time.perf_counter() - t0
    times = [t for r in results for t in r]
    return len(times) / elapsed, times


def in_process(config: Path, items: list[dict[str, Any]], threads: int, n: int
               ) -> tuple[float, list[float]]:  # fmt: skip
    from cedarlite.guard import Guard, MemorySessionStore
    from cedarlite.shipped import resolve

    data = json.loads(config.read_text())
    store = MemorySessionStore(max_sessions=10_000)
    base = Guard(data["config"], data["tools"], data["context"], rules=[resolve(RULES)],
                 session_store=store)  # fmt: skip
    guards: dict[str, Guard] = {}

    def guard_for(context: Any) -> Guard:  # the service's cache of guards per context
        if context is None:
            return base
        key = json.dumps(context, sort_keys=True)
        if key not in guards:
            guards[key] = base.for_context(context)
        return guards[key]

    def worker(_: int) -> list[float]:
        times = []
        for i in range(n):
            r = items[i % len(items)]
            t0 = time.perf_counter()
            guard_for(r.get("context")).before_tool_call(r["tool"], r["params"], r["call"])
            times.append((time.perf_counter() - t0) * 1000)
        return times

    worker(0)
    t0 = time.perf_counter()
    with ThreadPoolExecutor(threads) as tp:
        results = list(tp.map(worker, range(threads)))
    elapsed = time.perf_counter() - t0
    times = [t for r in results for t in r]
    return len(times) / elapsed, times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=at_least(1), default=8)
    parser.add_argument("--requests", type=at_least(10), default=400, help="per client")
    parser.add_argument("--rounds", type=at_least(1), default=2, help="per transport")
    opts = parser.parse_args()
    import logging

    logging.getLogger("cedarlite").setLevel(logging.ERROR)  # the example's lint warnings
    items = requests()
    work = Path(tempfile.mkdtemp(prefix="bench-serve-", dir="/tmp"))
    config = config_file(work)
    rates: dict[str, list[float]] = {}
    times: dict[str, list[float]] = {}
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(opts.clients) as pool:
        for _ in range(opts.rounds):
            for kind in ("socket", "http"):
                with service(kind, config, work) as where:
                    rate, lat = round_of(kind, where, items, opts.clients, opts.requests, pool)
                name = f"{'Unix socket' if kind == 'socket' else 'HTTP (uvicorn)'}, " \
                       f"{opts.clients} client processes"  # fmt: skip
                rates.setdefault(name, []).append(rate)
                times.setdefault(name, []).extend(lat)
            for threads in (1, opts.clients):  # (more requests: a decision is microseconds)
                rate, lat = in_process(config, items, threads, opts.requests * 20)
                name = f"in-process Guard, {threads} thread{'s' if threads > 1 else ''}"
                rates.setdefault(name, []).append(rate)
                times.setdefault(name, []).extend(lat)
    load = os.getloadavg()[0]
    print(f"{opts.rounds} rounds x {opts.clients} x {opts.requests} requests; "
          f"{len(items)} distinct requests (4 run contexts); load {load:.1f}")  # fmt: skip
    one = statistics.median(rates["in-process Guard, 1 thread"])
    print(f"{'':38} {'req/s (median)':>15} {'p50':>9} {'p99':>9}  req/s over in-process (1 thread)")
    for name in rates:
        rate = statistics.median(rates[name])
        lat = times[name]
        print(f"{name:38} {rate:15,.0f} {statistics.median(lat):7.3f}ms "
              f"{percentile(lat, 0.99):7.3f}ms  {rate / one:.2f}x")  # fmt: skip
    print("p50/p99: one request's round trip (in-process: one decision)")


if __name__ == "__main__":
    main()
