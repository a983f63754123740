"""The SDK middleware (cedarlite.hosts.mcp), end to end: a server built with the official SDK
(tests/mcp_workbench.py) wrapped by ``guard_server``, started as a real stdio process and driven
by the SDK's own client."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the MCP SDK (pip install 'cedarlite[mcp]')")

from mcp.shared.exceptions import MCPError
from mcp.types import ElicitResult
from mcp_support import WORKBENCH, reap, run, session, text, wait_gone

CONFIG = {"tools": {"deny": ["workbench__delete_*"]}}
RULES = """
@id("wb.no-secrets")
@reason("Secrets stay secret.")
forbid (principal, action, resource)
when { context has input && context.input has path && context.input.path like "*secret*" };

@id("wb.keep-asks")
@ask("The agent wants to overwrite a kept file.")
forbid (principal, action == Action::"workbench__write_file", resource)
when { resource.path like "keep/*" };
"""


@pytest.fixture
def bench(tmp_path: Path) -> dict[str, Path]:
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("alpha")
    (root / "secret.txt").write_text("hunter2")
    (tmp_path / "config.json").write_text(json.dumps(CONFIG))
    (tmp_path / "rules.cedar").write_text(RULES)
    return {"tmp": tmp_path, "root": root, "log": tmp_path / "decisions.jsonl"}


def _args(bench: dict[str, Path]) -> list[str]:
    tmp = bench["tmp"]
    return [
        str(WORKBENCH), str(bench["root"]), "--guard", str(tmp / "config.json"),
        "--rules", str(tmp / "rules.cedar"), "--log", str(bench["log"]),
    ]  # fmt: skip


def test_list_filtered_calls_gated_concurrent_no_side_effect(bench: dict[str, Path]) -> None:
    root = bench["root"]

    async def scenario() -> None:
        async with session(_args(bench)) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            assert "delete_file" not in names  # tools.deny: workbench__delete_*
            assert {"read_file", "write_file", "slow"} <= set(names)

            allowed = await client.call_tool("read_file", {"path": "a.txt"})
            assert not allowed.is_error and text(allowed) == "alpha"

            denied = await client.call_tool("read_file", {"path": "secret.txt"})
            assert denied.is_error
            assert text(denied) == "Secrets stay secret. (policy wb.no-secrets)"

            # A tool removed from the list and called anyway: denied, and it does not run.
            removed = await client.call_tool("delete_file", {"path": "a.txt"})
            assert removed.is_error
            assert "not available" in text(removed) and "tools.deny" in text(removed)

            # The tool's own error passes through unchanged.
            missing = await client.call_tool("read_file", {"path": "nope.txt"})
            assert missing.is_error and text(missing).endswith("no such file: nope.txt")

            # Arguments that do not fit the tool's schema never reach it.
            bad = await client.call_tool("write_file", {"path": 5, "content": "x"})
            assert bad.is_error and "expected a string" in text(bad)

            # Concurrent calls, each decided on its own.
            reads = [client.call_tool("read_file", {"path": "a.txt"}) for _ in range(20)]
            secrets = [client.call_tool("read_file", {"path": "secret.txt"}) for _ in range(5)]
            results = await asyncio.gather(*reads, *secrets)
            assert [r.is_error for r in results] == [False] * 20 + [True] * 5

            # A tool added at run time: called before the client lists it again, the
            # middleware lists the server's tools itself and decides it.
            assert not (await client.call_tool("add_tool", {"name": "echo"})).is_error
            echoed = await client.call_tool("echo", {"text": "hi"})
            assert not echoed.is_error and text(echoed) == "hi"
            assert "echo" in [t.name for t in (await client.list_tools()).tools]

            # A client without elicitation cannot approve: denied, naming the approval.
            asked = await client.call_tool("write_file", {"path": "keep/x", "content": "new"})
            assert asked.is_error
            assert "The agent wants to overwrite a kept file." in text(asked)
            assert "wb.keep-asks" in text(asked)

    with reap(str(bench["tmp"])):
        run(scenario())
        assert not wait_gone(str(bench["tmp"]))
    assert (root / "a.txt").read_text() == "alpha"
    assert not (root / "keep").exists()
    lines = [json.loads(line) for line in bench["log"].read_text().splitlines()]
    decisions = [(e["tool"], e["decision"]) for e in lines]
    assert ("workbench__read_file", "allow") in decisions
    assert ("workbench__delete_file", "block") in decisions
    assert all(e["plugin"] == "bundle-mcp" for e in lines if e["tool"] != "workbench__delete_file")


def test_approval_by_elicitation(bench: dict[str, Path]) -> None:
    answers = iter(["allow-once", "deny"])
    asked: list[str] = []

    async def elicit(ctx: object, params: object) -> ElicitResult:
        asked.append(params.message)  # type: ignore[attr-defined]
        return ElicitResult(action="accept", content={"decision": next(answers)})

    async def scenario() -> None:
        async with session(_args(bench), elicitation_callback=elicit) as client:
            ok = await client.call_tool("write_file", {"path": "keep/a", "content": "one"})
            assert not ok.is_error, text(ok)
            no = await client.call_tool("write_file", {"path": "keep/b", "content": "two"})
            assert no.is_error
            assert text(no) == (
                "Denied by user: The agent wants to overwrite a kept file. (policy wb.keep-asks)"
            )

    with reap(str(bench["tmp"])):
        run(scenario())
    assert (bench["root"] / "keep" / "a").read_text() == "one"
    assert not (bench["root"] / "keep" / "b").exists()
    assert len(asked) == 2 and "keep/a" in asked[0] and "write_file" in asked[0]


def test_malformed_call_is_a_protocol_error_and_never_runs() -> None:
    from mcp.server.context import ServerRequestContext

    from cedarlite.hosts.mcp import PolicyMiddleware

    middleware = PolicyMiddleware(CONFIG, server="workbench")

    async def call_next(ctx: object) -> None:
        raise AssertionError("a malformed call reached the tool")

    for params in ({"name": 7}, {"name": "read_file", "arguments": [1]}, None):
        ctx = ServerRequestContext(
            session=None,  # type: ignore[arg-type]
            lifespan_context={},
            protocol_version="2025-11-25",
            method="tools/call",
            params=params,
            request_id=1,
        )
        with pytest.raises(MCPError) as caught:
            run(middleware(ctx, call_next))
        assert caught.value.code == -32602


def test_tools_whose_names_collide_are_neither_listed_nor_run() -> None:
    """The review's server: ``delete_note`` and ``Delete_Note`` beside a deny entry for
    ``notes__delete_note``; through the SDK's in-memory client neither runs."""
    from mcp import Client
    from mcp.server.mcpserver import MCPServer

    from cedarlite.hosts.mcp import guard_server

    server = MCPServer("notes")
    notes = {"todo.md": "buy milk"}

    @server.tool()
    def read_note(path: str) -> str:
        return notes[path]

    @server.tool()
    def delete_note(path: str) -> str:
        return f"deleted {notes.pop(path)}"

    @server.tool(name="Delete_Note")
    def delete_note_too(path: str) -> str:
        return f"deleted {notes.pop(path)}"

    guard_server(server, {"tools": {"deny": ["notes__delete_note"]}})

    async def scenario() -> None:
        async with Client(server) as client:
            assert [t.name for t in (await client.list_tools()).tools] == ["read_note"]
            for name in ("delete_note", "Delete_Note"):
                result = await client.call_tool(name, {"path": "todo.md"})
                assert result.is_error and "cannot be told apart" in text(result)
            assert text(await client.call_tool("read_note", {"path": "todo.md"})) == "buy milk"

    run(scenario())
    assert notes == {"todo.md": "buy milk"}


def test_paths_are_judged_as_the_proxy_and_the_hook_judge_them(bench: dict[str, Path]) -> None:
    """Issue 23: the middleware maps paths with the one function of every adapter: cleaned
    (`secret.txt/.` is `secret.txt`), garbage denied, never reaching the tool."""

    async def scenario() -> None:
        async with session(_args(bench)) as client:
            for path in ("secret.txt/.", "./secret.txt/", "x/../secret.txt"):
                denied = await client.call_tool("read_file", {"path": path})
                assert denied.is_error and "hunter2" not in text(denied), path
            garbage = await client.call_tool("write_file", {"path": "a.txt\x00", "content": "x"})
            assert garbage.is_error and "control character" in text(garbage), text(garbage)
            assert (bench["root"] / "a.txt").read_text() == "alpha"

    with reap(str(bench["tmp"])):
        run(scenario())
        assert not wait_gone(str(bench["tmp"]))
