"""The hosts, per tool call: the Claude Code hook, the MCP proxy, the service, the OpenClaw plugin.

    python benchmarks/bench_hosts.py                    # all four, default rounds
    python benchmarks/bench_hosts.py --hook-rounds 40 --mcp-rounds 4000 --serve-requests 1000

Runs ``bench_hosts_hook.py`` (one hook process per call, through the decision service and
in-process, interleaved with a cedarpy hook script: median and p99 wall and CPU time, ratios),
``bench_hosts_mcp.py`` (an upstream MCP server called directly and through ``cedarlite
mcp-proxy``, interleaved: median and p99 per call and the proxy's overhead),
``bench_serve.py`` (``cedarlite serve`` over the Unix socket and HTTP with 8 concurrent
clients, next to the in-process guard: requests per second, p50 and p99) and
``bench_hosts_openclaw.py`` (the published OpenClaw gateway with and without cedarlite's
plugin, interleaved: the plugin's added time per call), each in its own
interpreter so none warms another. The scripts can also be run alone; their docstrings say
what they time and how.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from _cli import at_least

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hook-rounds", type=at_least(1), default=20)
    parser.add_argument("--mcp-rounds", type=at_least(1), default=2000)
    parser.add_argument("--serve-requests", type=at_least(10), default=400)
    parser.add_argument("--openclaw-rounds", type=at_least(1), default=6)
    args = parser.parse_args()
    runs = [
        ("Claude Code hook process", "bench_hosts_hook.py", ["--rounds", str(args.hook_rounds)]),
        ("MCP proxy overhead", "bench_hosts_mcp.py", ["--rounds", str(args.mcp_rounds)]),
        ("Decision service under load", "bench_serve.py", ["--requests", str(args.serve_requests)]),
        ("OpenClaw plugin", "bench_hosts_openclaw.py", ["--rounds", str(args.openclaw_rounds)]),
    ]
    failed = 0
    for title, script, extra in runs:
        print(f"== {title} ({script}) ==", flush=True)
        failed |= subprocess.call([sys.executable, str(HERE / script), *extra])
        print(flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
