"""A small MCP server built with the official SDK, for the MCP adapter tests (run as a script).

``python tests/mcp_workbench.py ROOT [--guard CONFIG.json] [--rules R.cedar]... [--log FILE]``
serves on stdio, over files under ``ROOT``: ``write_file``, ``read_file`` (a missing file is
the tool's own ``isError`` result), ``delete_file``, ``slow`` (sleeps, reporting progress),
``add_tool`` (registers a tool and sends ``notifications/tools/list_changed``) and
``ask_roots`` (asks the client ``roots/list``). With ``--guard`` the server is wrapped by
:class:`cedarlite.hosts.mcp.PolicyMiddleware` (tools named ``workbench__<tool>``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError


def build(root: Path) -> MCPServer:
    """The workbench server over ``root``."""
    server = MCPServer("workbench")

    def resolve(path: str) -> Path:
        return root / path.lstrip("/")

    @server.tool()
    def write_file(path: str, content: str) -> str:
        """Write a text file."""
        target = resolve(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
        return f"wrote {len(content)} characters to {path}"

    @server.tool()
    def read_file(path: str) -> str:
        """Read a text file."""
        try:
            return resolve(path).read_text()
        except FileNotFoundError:
            raise ToolError(f"no such file: {path}") from None

    @server.tool()
    def delete_file(path: str) -> str:
        """Delete a file."""
        resolve(path).unlink()
        return f"deleted {path}"

    @server.tool()
    async def slow(seconds: float, ctx: Context) -> str:
        """Sleep, reporting progress twice."""
        await ctx.report_progress(0, 2, "started")
        await asyncio.sleep(seconds)
        await ctx.report_progress(2, 2, "done")
        return f"slept {seconds}"

    @server.tool()
    async def add_tool(name: str, ctx: Context) -> str:
        """Register a new tool (it echoes its text) and tell the client the list changed."""

        def echo(text: str) -> str:
            return text

        server.add_tool(echo, name=name, description="Echo the text.")
        await ctx.session.send_tool_list_changed()
        return f"added {name}"

    @server.tool()
    async def ask_roots(ctx: Context) -> str:
        """Ask the client for its roots (a server-to-client request)."""
        roots = await ctx.session.list_roots()
        return json.dumps([str(r.uri) for r in roots.roots])

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("root")
    parser.add_argument("--guard", metavar="CONFIG")
    parser.add_argument("--rules", action="append")
    parser.add_argument("--log")
    args = parser.parse_args()
    server = build(Path(args.root))
    if args.guard:
        from cedarlite.hosts.mcp import guard_server

        config = json.loads(Path(args.guard).read_text())
        guard_server(server, config, rules=args.rules, decision_log=args.log)
    server.run()


if __name__ == "__main__":
    main()
