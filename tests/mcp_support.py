"""Helpers of the MCP adapter tests: sessions with the SDK's own client, process bookkeeping.

Every test starts what it needs and, however it ends, stops every process it started by
process id (:func:`reap`): the processes are found by a marker (the test's temporary
directory) on their command line.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "mcp-proxy"
WORKBENCH = Path(__file__).resolve().parent / "mcp_workbench.py"
BIN = Path(sys.executable).parent

#: Where ``.ci/run`` (and a developer) installs @modelcontextprotocol/server-filesystem.
FILESYSTEM_DEFAULT = (
    Path.home() / ".cache/cedarlite-test/node/node_modules/@modelcontextprotocol"
    / "server-filesystem/dist/index.js"
)  # fmt: skip


def filesystem_server() -> Path:
    """The filesystem server's ``dist/index.js``, or skip the test saying how to get it."""
    given = os.environ.get("CEDARLITE_TEST_MCP_FILESYSTEM")
    path = Path(given) if given else FILESYSTEM_DEFAULT
    if shutil.which("node") is None:
        pytest.skip("node is not installed (the filesystem MCP server is a Node.js program)")
    if not path.is_file():
        pytest.skip(
            f"@modelcontextprotocol/server-filesystem is not installed at {path} "
            "(.ci/run installs it with npm; or set CEDARLITE_TEST_MCP_FILESYSTEM)"
        )
    return path


def tool_command(name: str) -> str:
    """An installed console script of this environment (a third-party MCP server)."""
    path = BIN / name
    if not path.exists():
        found = shutil.which(name)
        if found is None:
            pytest.skip(f"`{name}` is not installed (pip install '.[test]')")
        return found
    return str(path)


def proxy_args(*args: str) -> list[str]:
    """``python -m cedarlite mcp-proxy ARGS``."""
    return ["-m", "cedarlite", "mcp-proxy", *args]


def env() -> dict[str, str]:
    """The environment of spawned servers: this one's (the SDK passes only a few names)."""
    return {**os.environ, "PYTHONPATH": str(ROOT)}


@asynccontextmanager
async def session(
    args: list[str], command: str = sys.executable, **callbacks: Any
) -> AsyncIterator[ClientSession]:
    """An initialized SDK client session with a stdio server ``command ARGS``."""
    params = StdioServerParameters(command=command, args=args, env=env())
    async with stdio_client(params) as (read, write), ClientSession(read, write, **callbacks) as c:
        await c.initialize()
        yield c


def run(coro: Any, timeout: float = 60) -> Any:
    """Run a test scenario with an overall deadline."""
    return asyncio.run(asyncio.wait_for(coro, timeout))


def pids_with(marker: str) -> list[int]:
    """Processes (other than this one) whose command line contains ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def wait_gone(marker: str, timeout: float = 10) -> list[int]:
    """Wait until no process carries ``marker``; returns those still there."""
    deadline = time.monotonic() + timeout
    while (left := pids_with(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


@contextmanager
def reap(marker: str) -> Iterator[None]:
    """Kill (by process id) whatever process carrying ``marker`` is left when the block ends."""
    try:
        yield
    finally:
        for pid in pids_with(marker):
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def text(result: Any) -> str:
    """The text of a tool result's first content block."""
    return result.content[0].text if result.content else ""
