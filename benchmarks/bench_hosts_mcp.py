"""What ``cedarlite mcp-proxy`` adds to an MCP tool call.

One process, two sessions of the official SDK client with the same upstream server: one
direct, one through the proxy (the upstream's tools under a configuration and argument rules).
Calls alternate call by call (direct, proxied; the order flips every round), so both see the
same machine load. Printed: per-call wall-clock median and p99 of each, the proxy's overhead
(the difference of the medians, and the ratio), and beside them the tight-loop cost of the
decision alone (``McpGate.decide`` in process, the part of the overhead that is cedarlite's;
the rest is the extra process hop: two more pipe writes and JSON parses).

    python benchmarks/bench_hosts_mcp.py [--rounds 2000] [--upstream time|fs|both]

Upstreams: ``mcp-server-time`` (PyPI; ``get_current_time``) and, when node and
``@modelcontextprotocol/server-filesystem`` are installed (see ``.ci/run``), the filesystem
server of ``examples/mcp-proxy`` (``read_text_file`` under the example's rules and the shipped
``cedarlite:paths``). The machine is shared and noisy: quote medians and ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from _cli import at_least
from mcp import ClientSession, StdioServerParameters, stdio_client

from cedarlite.hosts.mcp_gate import McpGate
from cedarlite.shipped import resolve

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "mcp-proxy"
FILESYSTEM = Path(
    os.environ.get(
        "CEDARLITE_TEST_MCP_FILESYSTEM",
        Path.home() / ".cache/cedarlite-test/node/node_modules/@modelcontextprotocol"
        "/server-filesystem/dist/index.js",
    )
)
TIME_RULES = """@id("time.no-mars") @reason("Mars has no timezone here.")
forbid (principal, action == Action::"time__get_current_time", resource)
when { resource.timezone like "Mars/*" };
"""


def _setups(which: str, tmp: Path) -> list[dict[str, Any]]:
    out = []
    if which in ("time", "both"):
        config = tmp / "time.json"
        config.write_text(json.dumps({"tools": {"allow": ["time__get_current_time"]}}))
        rules = tmp / "time.cedar"
        rules.write_text(TIME_RULES)
        binary = shutil.which("mcp-server-time") or str(
            Path(sys.executable).parent / "mcp-server-time"
        )
        out.append(
            {
                "name": "mcp-server-time get_current_time",
                "upstream": [binary, "--local-timezone", "UTC"],
                "server": "time",
                "config": config,
                "rules": [rules],
                "tool": "get_current_time",
                "arguments": {"timezone": "Europe/Paris"},
            }
        )
    if which in ("fs", "both") and shutil.which("node") and FILESYSTEM.is_file():
        root = tmp / "root"
        root.mkdir(exist_ok=True)
        (root / "notes.txt").write_text("one\ntwo\n")
        out.append(
            {
                "name": "server-filesystem read_text_file",
                "upstream": ["node", str(FILESYSTEM), str(root)],
                "server": "fs",
                "config": EXAMPLE / "tools.json",
                "rules": [EXAMPLE / "rules.cedar", Path(resolve("cedarlite:paths"))],
                "tool": "read_text_file",
                "arguments": {"path": str(root / "notes.txt")},
            }
        )
    elif which in ("fs", "both"):
        print("(server-filesystem not installed: skipped; see .ci/run)", file=sys.stderr)
    return out


async def _session(stack: AsyncExitStack, command: list[str]) -> ClientSession:
    params = StdioServerParameters(
        command=command[0], args=command[1:], env={**os.environ, "PYTHONPATH": str(ROOT)}
    )
    read, write = await stack.enter_async_context(stdio_client(params))
    session = await stack.enter_async_context(ClientSession(read, write))
    await session.initialize()
    await session.list_tools()
    return session


def _stats(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


async def _measure(setup: dict[str, Any], rounds: int) -> None:
    proxy = [
        sys.executable, "-m", "cedarlite", "mcp-proxy", "--config", str(setup["config"]),
        *[a for r in setup["rules"] for a in ("--rules", str(r))],
        "--server", setup["server"], "--", *setup["upstream"],
    ]  # fmt: skip
    tool, arguments = setup["tool"], setup["arguments"]
    async with AsyncExitStack() as stack:
        direct = await _session(stack, setup["upstream"])
        proxied = await _session(stack, proxy)
        times: dict[str, list[float]] = {"direct": [], "proxied": []}
        for i in range(rounds + 50):
            order = [("direct", direct), ("proxied", proxied)]
            for label, session in order if i % 2 else order[::-1]:
                started = time.perf_counter()
                result = await session.call_tool(tool, arguments)
                elapsed = time.perf_counter() - started
                assert not result.is_error, result
                if i >= 50:  # warm-up rounds are not counted
                    times[label].append(elapsed)

    # The decision alone, in process: the same configuration, rules and tool.
    gate = McpGate(
        json.loads(Path(setup["config"]).read_text()), rules=setup["rules"], server=setup["server"]
    )
    async with AsyncExitStack() as stack:
        listing = (await (await _session(stack, setup["upstream"])).list_tools()).tools
    gate.observe([t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in listing])
    decide: list[float] = []
    for i in range(rounds):
        started = time.perf_counter()
        verdict = await gate.decide(tool, arguments, call_id=str(i))
        decide.append(time.perf_counter() - started)
        assert verdict.allowed, verdict.reason

    d_med, d_p99 = _stats(times["direct"])
    p_med, p_p99 = _stats(times["proxied"])
    g_med, g_p99 = _stats(decide)
    print(f"\n{setup['name']}: {rounds} interleaved rounds (+50 warm-up)")
    print(f"{'per call':<44}{'median':>12}{'p99':>12}")
    print(f"{'direct to the upstream':<44}{d_med * 1e3:>9.3f} ms{d_p99 * 1e3:>9.3f} ms")
    print(f"{'through cedarlite mcp-proxy':<44}{p_med * 1e3:>9.3f} ms{p_p99 * 1e3:>9.3f} ms")
    print(
        f"{'proxy overhead (difference of medians)':<44}{(p_med - d_med) * 1e3:>9.3f} ms"
        f"{'':>12}  ({p_med / d_med:.2f}x the direct call)"
    )
    label = "decision alone (McpGate.decide, in process)"
    print(f"{label:<44}{g_med * 1e6:>9.1f} us{g_p99 * 1e6:>9.1f} us")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=at_least(1), default=2000)
    parser.add_argument("--upstream", choices=["time", "fs", "both"], default="both")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for setup in _setups(args.upstream, Path(tmp)):
            asyncio.run(_measure(setup, args.rounds))


if __name__ == "__main__":
    main()
