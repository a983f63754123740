"""``cedarlite mcp-proxy`` end to end: the proxy as a real stdio process in front of real MCP
servers (``mcp-server-time`` and ``mcp-server-git`` from PyPI, the npm filesystem server of
``examples/mcp-proxy/`` when node is installed, and the SDK-built workbench), driven by the
SDK's own client, and by raw JSON-RPC lines for hostile input and shutdown."""

from __future__ import annotations

import asyncio
import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

mcp = pytest.importorskip("mcp", reason="the MCP SDK (pip install 'cedarlite[mcp]')")

from mcp import StdioServerParameters  # noqa: E402
from mcp.types import ElicitResult, ListRootsResult, Root  # noqa: E402
from mcp_support import (  # noqa: E402
    EXAMPLE,
    WORKBENCH,
    env,
    filesystem_server,
    proxy_args,
    reap,
    run,
    session,
    text,
    tool_command,
    wait_gone,
)

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}


def _write(tmp: Path, name: str, value: Any) -> str:
    path = tmp / name
    path.write_text(value if isinstance(value, str) else json.dumps(value))
    return str(path)


# ---------------------------------------------------------------------------------------------
# Third-party servers from PyPI


def test_time_server_filtered_gated_concurrent(tmp_path: Path) -> None:
    config = _write(tmp_path, "tools.json", {"tools": {"allow": ["time__get_current_time"]}})
    rules = _write(
        tmp_path,
        "rules.cedar",
        '@id("time.no-mars") @reason("Mars has no timezone here.")\n'
        'forbid (principal, action == Action::"time__get_current_time", resource)\n'
        'when { resource.timezone like "Mars/*" };\n',
    )
    log = tmp_path / "decisions.jsonl"
    args = proxy_args(
        "--config", config, "--rules", rules, "--server", "time", "--decision-log", str(log),
        "--", tool_command("mcp-server-time"), "--local-timezone", "UTC",
    )  # fmt: skip

    async def scenario() -> None:
        async with session(args) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            assert names == ["get_current_time"]  # convert_time is not in the allowlist

            now = await client.call_tool("get_current_time", {"timezone": "Europe/Paris"})
            assert not now.is_error and now.structured_content["timezone"] == "Europe/Paris"

            # The upstream's own error result passes through unchanged.
            bad = await client.call_tool("get_current_time", {"timezone": "Not/AZone"})
            assert bad.is_error and "Not/AZone" in text(bad)

            denied = await client.call_tool("get_current_time", {"timezone": "Mars/Olympus"})
            assert denied.is_error
            assert text(denied) == "Mars has no timezone here. (policy time.no-mars)"

            hidden = await client.call_tool(
                "convert_time",
                {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
            )
            assert hidden.is_error
            assert text(hidden) == (
                "Tool time__convert_time is not available in this run (removed by tools.allow)."
            )

            zones = ["UTC", "Asia/Tokyo", "America/New_York", "Mars/Base"] * 8
            results = await asyncio.gather(
                *[client.call_tool("get_current_time", {"timezone": z}) for z in zones]
            )
            assert [r.is_error for r in results] == [z.startswith("Mars") for z in zones]
            await client.send_ping()

    with reap(str(tmp_path)):
        run(scenario())
        assert not wait_gone(str(tmp_path)), "the proxy or the upstream outlived the session"
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    assert {e["tool"] for e in entries} == {"time__get_current_time", "time__convert_time"}
    assert sum(e["decision"] == "block" for e in entries) == 2 + 8


def test_modern_client_names_the_server_from_its_stamp(tmp_path: Path) -> None:
    """``mcp.Client`` probes ``server/discover`` (2026-07-28): no ``initialize`` passes the
    proxy, which learns the server's name from the results' ``serverInfo`` stamp."""
    config = _write(tmp_path, "tools.json", {"tools": {"deny": ["mcp-time__convert_time"]}})
    params = StdioServerParameters(
        command=sys.executable,
        args=proxy_args("--config", config, "--", tool_command("mcp-server-time")),
        env=env(),
    )

    async def scenario() -> None:
        async with mcp.Client(params) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            assert names == ["get_current_time"]
            ok = await client.call_tool("get_current_time", {"timezone": "UTC"})
            assert not ok.is_error
            no = await client.call_tool(
                "convert_time",
                {"source_timezone": "UTC", "time": "12:00", "target_timezone": "UTC"},
            )
            assert no.is_error and "removed by tools.deny" in text(no)

    with reap(str(tmp_path)):
        run(scenario())
        assert not wait_gone(str(tmp_path))


def test_git_server_denied_call_has_no_side_effect(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    git = ["git", "-C", str(repo), "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "init"], check=True)
    config = _write(tmp_path, "tools.json", {"tools": {"profile": "coding"}})
    rules = _write(
        tmp_path,
        "rules.cedar",
        '@id("git.no-branches") @reason("Branches are made by people here.")\n'
        'forbid (principal, action == Action::"git__git_create_branch", resource);\n',
    )
    args = proxy_args(
        "--config", config, "--rules", rules, "--server", "git",
        "--", tool_command("mcp-server-git"), "--repository", str(repo),
    )  # fmt: skip

    async def scenario() -> None:
        async with session(args) as client:
            status = await client.call_tool("git_status", {"repo_path": str(repo)})
            assert not status.is_error and "branch" in text(status).lower()
            made = await client.call_tool(
                "git_create_branch", {"repo_path": str(repo), "branch_name": "sneaky"}
            )
            assert made.is_error
            assert text(made) == "Branches are made by people here. (policy git.no-branches)"

    with reap(str(tmp_path)):
        run(scenario())
        assert not wait_gone(str(tmp_path))
    branches = subprocess.run(
        [*git, "branch", "--list"], check=True, capture_output=True, text=True
    ).stdout
    assert "sneaky" not in branches


def test_rules_that_do_not_fit_the_tools_fail_closed(tmp_path: Path) -> None:
    config = _write(tmp_path, "tools.json", {"tools": {"profile": "coding"}})
    rules = _write(
        tmp_path,
        "rules.cedar",
        '@id("time.typo")\nforbid (principal, action == Action::"time__get_current_time", '
        'resource) when { resource.timezon == "UTC" };\n',
    )
    args = proxy_args(
        "--config", config, "--rules", rules, "--server", "time",
        "--", tool_command("mcp-server-time"),
    )  # fmt: skip

    async def scenario() -> None:
        async with session(args) as client:
            assert (await client.list_tools()).tools == []
            result = await client.call_tool("get_current_time", {"timezone": "UTC"})
            assert result.is_error
            assert "the policy cannot be applied to the tools of `time`" in text(result)
            assert "timezon" in text(result)

    with reap(str(tmp_path)):
        run(scenario())
        assert not wait_gone(str(tmp_path))


# ---------------------------------------------------------------------------------------------
# The shipped example, in front of @modelcontextprotocol/server-filesystem (npm)


def test_filesystem_example(tmp_path: Path) -> None:
    server = filesystem_server()
    root = tmp_path / "root"
    (root / "drafts").mkdir(parents=True)
    (root / "notes.txt").write_text("one\ntwo\n")
    (root / ".env").write_text("TOKEN=x\n")
    log = tmp_path / "decisions.jsonl"
    args = proxy_args(
        "--config", str(EXAMPLE / "tools.json"), "--rules", str(EXAMPLE / "rules.cedar"),
        "--rules", "cedarlite:paths", "--server", "fs", "--decision-log", str(log),
        "--", "node", str(server), str(root),
    )  # fmt: skip
    answers = iter(["allow-once", "deny"])
    roots_asked: list[bool] = []

    async def elicit(ctx: object, params: object) -> ElicitResult:
        return ElicitResult(action="accept", content={"decision": next(answers)})

    async def roots(ctx: object) -> ListRootsResult:
        roots_asked.append(True)
        return ListRootsResult(roots=[Root(uri=root.as_uri())])

    async def scenario() -> None:
        async with session(args, elicitation_callback=elicit, list_roots_callback=roots) as c:
            names = {t.name for t in (await c.list_tools()).tools}
            assert "read_text_file" in names and "write_file" in names
            assert not names & {"move_file", "read_file", "read_multiple_files"}

            read = await c.call_tool("read_text_file", {"path": str(root / "notes.txt")})
            assert not read.is_error and read.structured_content == {"content": "one\ntwo\n"}

            secret = await c.call_tool("read_text_file", {"path": str(root / ".env")})
            assert secret.is_error and "fs.no-secrets" in text(secret)

            outside = await c.call_tool(
                "write_file", {"path": str(root / "evil.txt"), "content": "x"}
            )
            assert outside.is_error and "drafts/" in text(outside)
            draft = await c.call_tool(
                "write_file", {"path": str(root / "drafts/plan.md"), "content": "plan"}
            )
            assert not draft.is_error, text(draft)

            missing = await c.call_tool("read_text_file", {"path": str(root / "nope.txt")})
            assert missing.is_error and "ENOENT" in text(missing)

            moved = await c.call_tool(
                "move_file", {"source": str(root / "notes.txt"), "destination": "/tmp/x"}
            )
            assert moved.is_error and "removed by tools.allow" in text(moved)

            edit = {
                "path": str(root / "notes.txt"),
                "edits": [{"oldText": "one", "newText": "uno"}],
            }
            approved = await c.call_tool("edit_file", edit)
            assert not approved.is_error, text(approved)
            refused = await c.call_tool(
                "edit_file", {**edit, "edits": [{"oldText": "two", "newText": "dos"}]}
            )
            assert refused.is_error and text(refused).startswith("Denied by user")

    with reap(str(tmp_path)):
        run(scenario())
        assert not wait_gone(str(tmp_path))
    assert not (root / "evil.txt").exists()
    assert (root / "drafts/plan.md").read_text() == "plan"
    assert (root / "notes.txt").read_text() == "uno\ntwo\n"
    assert roots_asked, "the server's roots/list request did not reach the client"
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    edits = [e for e in entries if e["tool"] == "fs__edit_file"]
    assert [e["approvals"][0]["resolution"] for e in edits] == ["allow-once", "deny"]


# ---------------------------------------------------------------------------------------------
# Routing: interleaving, progress, list changes, server-to-client requests


def test_slow_calls_do_not_hold_up_others(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("alpha")
    config = _write(tmp_path, "tools.json", {"tools": {"profile": "coding"}})
    args = proxy_args("--config", config, "--", sys.executable, str(WORKBENCH), str(root))
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    async def roots(ctx: object) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=root.as_uri())])

    async def scenario() -> None:
        async with session(args, list_roots_callback=roots) as client:
            await client.list_tools()
            slow = asyncio.ensure_future(
                client.call_tool("slow", {"seconds": 1.5}, progress_callback=on_progress)
            )
            await asyncio.sleep(0.2)
            started = time.monotonic()
            fast = await client.call_tool("read_file", {"path": "a.txt"})
            assert text(fast) == "alpha" and time.monotonic() - started < 1.0
            assert not slow.done()
            assert text(await slow) == "slept 1.5"
            assert progress == [0, 2]

            # Server-to-client requests are relayed.
            asked = await client.call_tool("ask_roots", {})
            assert json.loads(text(asked)) == [root.as_uri()]

            # A tool added at run time (list_changed relayed, the catalog rebuilt).
            await client.call_tool("add_tool", {"name": "echo"})
            echoed = await client.call_tool("echo", {"text": "hi"})
            assert not echoed.is_error and text(echoed) == "hi"
            names = [t.name for t in (await client.list_tools()).tools]
            assert "echo" in names

    with reap(str(tmp_path)):
        run(scenario())
        assert not wait_gone(str(tmp_path))


# ---------------------------------------------------------------------------------------------
# Raw JSON-RPC: hostile input, shutdown both ways


class Raw:
    """The proxy as a subprocess spoken to in raw JSON-RPC lines."""

    def __init__(self, args: list[str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env(),
        )
        self._buffer = b""

    def send(self, data: bytes | dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        line = data if isinstance(data, bytes) else json.dumps(data).encode()
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def recv(self, timeout: float = 20) -> dict[str, Any]:
        return json.loads(self.recv_line(timeout))

    def recv_line(self, timeout: float = 20) -> bytes:
        """The next line, with its end (read from the pipe itself: a line that arrived with
        the one before is in our buffer, where `select` cannot see it)."""
        assert self.proc.stdout is not None
        while b"\n" not in self._buffer:
            ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
            assert ready, "no answer from the proxy"
            chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
            assert chunk, "the proxy closed its output"
            self._buffer += chunk
        line, end, self._buffer = self._buffer.partition(b"\n")
        return line + end

    def handshake(self) -> dict[str, Any]:
        self.send(INIT)
        answer = self.recv()
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer


def _call(rid: Any, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


def _raw_args(tmp_path: Path, *extra: str) -> list[str]:
    config = _write(tmp_path, "tools.json", {"tools": {"profile": "coding"}})
    return proxy_args(
        "--config", config, *extra, "--", tool_command("mcp-server-time"), "--local-timezone", "UTC"
    )


def test_hostile_client_messages(tmp_path: Path) -> None:
    with reap(str(tmp_path)):
        raw = Raw(_raw_args(tmp_path, "--max-message-bytes", "65536"))
        assert raw.handshake()["result"]["serverInfo"]["name"] == "mcp-time"
        raw.send(b"this is not json")
        assert raw.recv()["error"]["code"] == -32700
        raw.send(b"[" * 200_000 + b"]" * 200_000)  # longer than the cap
        assert raw.recv()["error"]["code"] == -32600
        raw.send(b"[" * 50_000)  # deep, under the cap
        answer = raw.recv()
        assert answer["id"] is None and answer["error"]["code"] == -32700
        raw.send(b"[1, 2]")
        assert raw.recv()["error"]["code"] == -32600
        raw.send(b'\xff\xfe{"jsonrpc"')
        assert raw.recv()["error"]["code"] == -32700
        for number in (b"NaN", b"-Infinity", b"1e400"):  # no JSON can carry them on
            raw.send(b'{"jsonrpc":"2.0","id":20,"method":"ping","params":{"x":%s}}' % number)
            assert raw.recv()["error"]["code"] == -32700
        raw.send({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": 3}})
        assert raw.recv() == {
            "jsonrpc": "2.0",
            "id": 7,
            "error": {
                "code": -32602,
                "message": "Invalid params: `tools/call` needs a string `name` and object "
                "`arguments`",
            },
        }
        big = "x" * 100_000  # over the cap inside a valid call: refused, never forwarded
        raw.send(_call(8, "get_current_time", {"timezone": big}))
        assert raw.recv()["error"]["code"] == -32600
        # Still serving: a call before any tools/list makes the proxy list the tools itself.
        raw.send(_call("x", "get_current_time", {"timezone": "UTC"}))
        answer = raw.recv()
        assert answer["id"] == "x" and answer["result"]["isError"] is False
        # Unknown methods are the upstream's to answer.
        raw.send({"jsonrpc": "2.0", "id": 9, "method": "no/such"})
        assert raw.recv()["error"]["code"] == -32601
        assert raw.proc.stdin is not None
        raw.proc.stdin.close()
        assert raw.proc.wait(10) == 0
        assert not wait_gone(str(tmp_path))


def test_sigterm_ends_the_upstream(tmp_path: Path) -> None:
    with reap(str(tmp_path)):
        raw = Raw(_raw_args(tmp_path))
        raw.handshake()
        upstream = [p for p in _children(raw.proc.pid)]
        assert upstream
        raw.proc.send_signal(signal.SIGTERM)
        assert raw.proc.wait(10) == 0
        assert not wait_gone(str(tmp_path))


def test_upstream_exit_ends_the_proxy(tmp_path: Path) -> None:
    with reap(str(tmp_path)):
        raw = Raw(_raw_args(tmp_path))
        raw.handshake()
        (child,) = _children(raw.proc.pid)
        os.kill(child, signal.SIGKILL)
        assert raw.proc.wait(10) == 1
        assert raw.proc.stderr is not None
        assert b"the upstream server exited with status -9" in raw.proc.stderr.read()
        assert not wait_gone(str(tmp_path))


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(stat[1]) == pid and stat[0] != "Z":
                out.append(int(entry.name))
    return out


# ---------------------------------------------------------------------------------------------
# Refusing to start


def _cli(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    from cedarlite.cli import main

    code = main(["mcp-proxy", *args])
    return code, capsys.readouterr().err


def test_mistakes_refuse_to_start(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Checked before the upstream starts, in process (nothing is launched)."""
    marker = tmp_path / "started"
    upstream = ["--", sys.executable, "-c", f"open({str(marker)!r}, 'w')"]
    good = _write(tmp_path, "tools.json", {"tools": {"profile": "coding"}})

    bad = _write(tmp_path, "bad.json", '{"tools": {"profle": "coding"}}')
    code, err = _cli("--config", bad, *upstream, capsys=capsys)
    assert code == 3 and "bad.json:1:" in err and "profile" in err

    broken = _write(tmp_path, "broken.cedar", "forbid (principal, action, resource) when {")
    code, err = _cli("--config", good, "--rules", broken, *upstream, capsys=capsys)
    assert code == 1 and "broken.cedar:1:" in err

    code, err = _cli("--config", good, capsys=capsys)
    assert code == 1 and "command after `--`" in err

    code, err = _cli("--config", good, "--", str(tmp_path / "no-such-server"), capsys=capsys)
    assert code == 1 and "cannot start the upstream server" in err
    assert not marker.exists()


def test_readme_client_configuration_runs(tmp_path: Path) -> None:
    """docs/hosts.md's ``mcpServers`` recipe, with ``npx`` replaced by the installed server."""
    import re

    page = (EXAMPLE.parent.parent / "docs" / "hosts.md").read_text()
    (block,) = [b for b in re.findall(r"```json\n(.*?)```", page, re.S) if "mcpServers" in b]
    entry = json.loads(block)["mcpServers"]["files"]
    assert entry["command"] == "cedarlite"
    args = entry["args"]
    at = args.index("npx")
    assert args[at : at + 3] == ["npx", "-y", "@modelcontextprotocol/server-filesystem"]
    root = tmp_path / "project"
    (root / "drafts").mkdir(parents=True)
    args = [*args[:at], "node", str(filesystem_server()), str(root)]
    args = [str(EXAMPLE.parent.parent / a) if a.startswith("examples/") else a for a in args]
    args[args.index("decisions.jsonl")] = str(tmp_path / "decisions.jsonl")

    async def scenario() -> None:
        async with session(["-m", "cedarlite", *args]) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert "write_file" in names and "move_file" not in names
            ok = await client.call_tool(
                "write_file", {"path": str(root / "drafts/a.md"), "content": "a"}
            )
            assert not ok.is_error, text(ok)

    with reap(str(tmp_path)):
        run(scenario())
        assert not wait_gone(str(tmp_path))
    assert (tmp_path / "decisions.jsonl").read_text().count('"decision":"allow"') == 1


# ---------------------------------------------------------------------------------------------
# What the proxy forwards is what it checked: its own encoding of the parsed message


def _git_repo(tmp_path: Path) -> tuple[Path, list[str]]:
    repo = tmp_path / "repo"
    git = ["git", "-C", str(repo), "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "init"], check=True)
    return repo, git


def test_carriage_returns_smuggle_no_call_to_the_upstream(tmp_path: Path) -> None:
    """A ``\\r`` is JSON whitespace to the proxy but a line break to the SDK's stdio server:
    a denied call hidden between two ``\\r`` in an allowed message (a request, a notification,
    an answer to the server) must reach the upstream as part of that message, never alone."""
    repo, git = _git_repo(tmp_path)
    config = _write(tmp_path, "tools.json", {"tools": {"allow": ["git__git_status"]}})
    args = proxy_args(
        "--config", config, "--server", "git",
        "--", tool_command("mcp-server-git"), "--repository", str(repo),
    )  # fmt: skip

    def smuggled(n: int) -> bytes:
        call = _call(100 + n, "git_create_branch", {"repo_path": str(repo), "branch_name": f"s{n}"})
        return b"\r" + json.dumps(call).encode() + b"\r"

    with reap(str(tmp_path)):
        raw = Raw(args)
        raw.handshake()
        raw.send(_call(2, "git_create_branch", {"repo_path": str(repo), "branch_name": "direct"}))
        denied = raw.recv()
        assert denied["id"] == 2 and denied["result"]["isError"] is True
        lines = [
            b'{"jsonrpc":"2.0","id":3,"method":"ping","params":{"_meta":{"x":%s}}}',
            b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"_meta":{"x":%s}}}',
            b'{"jsonrpc":"2.0","id":"no-such-request","result":{"x":%s}}',
            b'{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"_meta":{"x":%s}}}',
        ]
        for n, line in enumerate(lines):
            message = line % smuggled(n)
            json.loads(message)  # one valid message to a JSON parser
            raw.send(message)
        answers = {a["id"]: a["result"] for a in (raw.recv(), raw.recv())}
        assert answers[3] == {}
        assert [t["name"] for t in answers[4]["tools"]] == ["git_status"]
        # The upstream has answered everything before this: nothing else came, no branch.
        raw.send(_call(5, "git_status", {"repo_path": str(repo)}))
        status = raw.recv()
        assert status["id"] == 5 and status["result"]["isError"] is False
        assert raw.proc.stdin is not None
        raw.proc.stdin.close()
        assert raw.proc.wait(10) == 0
        assert not wait_gone(str(tmp_path))
    branches = subprocess.run(
        [*git, "branch", "--list"], check=True, capture_output=True, text=True
    ).stdout.split()
    assert len(branches) == 2 and branches[0] == "*", branches  # the initial branch only


_RAW_UPSTREAM = r"""
import json, sys
HIDDEN = {"name": "delete_all", "inputSchema": {"type": "object"}}
SHOWN = {"name": "read", "inputSchema": {"type": "object"}}
for line in sys.stdin.buffer:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if msg["method"] == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities":
                  {"tools": {}}, "serverInfo": {"name": "raw", "version": "1"}}
        out = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}).encode()
    elif msg["method"] == "tools/list":
        inner = json.dumps({"jsonrpc": "2.0", "id": msg["id"],
                            "result": {"tools": [SHOWN, HIDDEN]}}).encode()
        out = (b'{"jsonrpc":"2.0","id":%s,"result":{"tools":[%s],"_meta":{"x":\r%s\r}}}'
               % (json.dumps(msg["id"]).encode(), json.dumps(SHOWN).encode(), inner))
    else:
        out = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {}}).encode()
    sys.stdout.buffer.write(out + b"\n")
    sys.stdout.buffer.flush()
"""


def test_upstream_messages_are_reencoded_too(tmp_path: Path) -> None:
    """An upstream hiding a second ``tools/list`` answer (with a removed tool) between two
    ``\\r`` reaches the client as one message: every output line is ASCII JSON without ``\\r``."""
    upstream = _write(tmp_path, "upstream.py", _RAW_UPSTREAM)
    config = _write(tmp_path, "tools.json", {"tools": {"deny": ["raw__delete_all"]}})
    with reap(str(tmp_path)):
        raw = Raw(proxy_args("--config", config, "--", sys.executable, upstream))
        raw.handshake()
        raw.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        line = raw.recv_line()
        assert line.endswith(b"\n") and line.isascii()
        assert b"\r" not in line
        answer = json.loads(line)
        assert [t["name"] for t in answer["result"]["tools"]] == ["read"]
        raw.proc.stdin.close()  # type: ignore[union-attr]
        assert raw.proc.wait(10) == 0
        assert not wait_gone(str(tmp_path))


def test_sdk_traffic_survives_reencoding(tmp_path: Path) -> None:
    """The SDK client and a real SDK server through the proxy: text with carriage returns,
    line separators, non-ASCII and astral characters arrives exactly."""
    root = tmp_path / "root"
    root.mkdir()
    config = _write(tmp_path, "tools.json", {"tools": {"profile": "coding"}})
    args = proxy_args("--config", config, "--", sys.executable, str(WORKBENCH), str(root))
    content = 'a\rb\r\nc\u2028d\u2029e\x85f "q" \\ \u00e9\u4e2d\U0001f600 \t\x00\x1f'

    async def scenario() -> None:
        async with session(args) as client:
            await client.call_tool("add_tool", {"name": "echo"})
            back = await client.call_tool("echo", {"text": content})
            assert not back.is_error and text(back) == content

    with reap(str(tmp_path)):
        run(scenario())
        assert not wait_gone(str(tmp_path))


def test_a_request_id_in_use_is_refused(tmp_path: Path) -> None:
    """A request reusing the id of one in flight (forwarded, being decided, or cancelled and
    not answered) is refused: its answer could pass for the other's (an unfiltered listing)."""
    root = tmp_path / "root"
    root.mkdir()
    config = _write(tmp_path, "tools.json", {"tools": {"deny": ["workbench__delete_file"]}})
    args = proxy_args("--config", config, "--", sys.executable, str(WORKBENCH), str(root))
    in_use = "Invalid Request: request id {} is in use"
    with reap(str(tmp_path)):
        raw = Raw(args)
        raw.handshake()
        raw.send({"jsonrpc": "2.0", "id": 7, "method": "ping"})
        raw.send({"jsonrpc": "2.0", "id": 7, "method": "tools/list"})
        answers = [raw.recv(), raw.recv()]
        assert {"jsonrpc": "2.0", "id": 7, "result": {}} in answers
        refused = {"code": -32600, "message": in_use.format("`7`")}
        assert {"jsonrpc": "2.0", "id": 7, "error": refused} in answers
        # Answered: the id is free again; the listing is filtered.
        raw.send({"jsonrpc": "2.0", "id": 7, "method": "tools/list"})
        names = [t["name"] for t in raw.recv()["result"]["tools"]]
        assert "delete_file" not in names and "read_file" in names

        raw.send(_call("slow", "slow", {"seconds": 30}))
        raw.send({"jsonrpc": "2.0", "id": "slow", "method": "tools/list"})
        assert raw.recv()["error"]["message"] == in_use.format('`"slow"`')
        cancel = {"requestId": "slow", "reason": "test"}
        raw.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
        raw.send({"jsonrpc": "2.0", "id": "slow", "method": "ping"})
        assert raw.recv()["error"]["message"] == in_use.format('`"slow"`')
        raw.send({"jsonrpc": "2.0", "id": 8, "method": "ping"})
        assert raw.recv() == {"jsonrpc": "2.0", "id": 8, "result": {}}
        raw.proc.stdin.close()  # type: ignore[union-attr]
        assert raw.proc.wait(10) == 0
        assert not wait_gone(str(tmp_path))


# ---------------------------------------------------------------------------------------------
# Stdin the event loop cannot watch


def test_stdin_from_dev_null_or_a_file(tmp_path: Path) -> None:
    """``/dev/null`` ends the session at once; a regular file is read as the client's
    messages; a closed stdin is a one-line error. Never a traceback, never a hang."""
    config = _write(tmp_path, "tools.json", {"tools": {"deny": ["raw__delete_all"]}})
    args = [sys.executable, *proxy_args("--config", config, "--")]
    upstream = [sys.executable, _write(tmp_path, "upstream.py", _RAW_UPSTREAM)]
    with reap(str(tmp_path)):
        with open(os.devnull, "rb") as null:
            done = subprocess.run(
                [*args, "sh", "-c", "sleep 100", str(tmp_path)],
                stdin=null, capture_output=True, env=env(), timeout=30,
            )  # fmt: skip
        assert done.returncode == 0 and done.stdout == b""
        assert b"Traceback" not in done.stderr and b"Error" not in done.stderr

        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        messages = tmp_path / "messages.jsonl"
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        lines = (INIT, initialized, listing)
        messages.write_text("".join(json.dumps(m) + "\n" for m in lines))
        with messages.open("rb") as given:
            done = subprocess.run(
                [*args, *upstream], stdin=given, capture_output=True, env=env(), timeout=30
            )
        assert done.returncode == 0 and b"Traceback" not in done.stderr
        answers = {a["id"]: a for a in map(json.loads, done.stdout.splitlines())}
        assert answers[1]["result"]["serverInfo"]["name"] == "raw"
        assert [t["name"] for t in answers[2]["result"]["tools"]] == ["read"]

        done = subprocess.run(
            [*args, *upstream], stdin=subprocess.DEVNULL, capture_output=True, env=env(),
            timeout=30, preexec_fn=lambda: os.close(0),
        )  # fmt: skip
        assert done.returncode == 1 and b"Traceback" not in done.stderr
        assert done.stderr.decode().strip().splitlines() == [
            "<stdin>: error[E0870]: cannot carry the client's messages: bad file descriptor"
        ]
        assert not wait_gone(str(tmp_path))


def test_tools_whose_names_collide_are_refused_through_the_proxy(tmp_path: Path) -> None:
    """A tool added at run time whose name differs from one allowed only in case: after the
    list change neither is offered, and a call of either is blocked naming the other."""
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("alpha")
    config = _write(tmp_path, "tools.json", {"tools": {"deny": ["workbench__echo"]}})
    args = proxy_args("--config", config, "--", sys.executable, str(WORKBENCH), str(root))

    async def scenario() -> None:
        async with session(args) as client:
            assert text(await client.call_tool("read_file", {"path": "a.txt"})) == "alpha"
            await client.call_tool("add_tool", {"name": "Read_File"})
            names = [t.name for t in (await client.list_tools()).tools]
            assert "read_file" not in names and "Read_File" not in names and "slow" in names
            blocked = await client.call_tool("read_file", {"path": "a.txt"})
            assert blocked.is_error
            assert "`read_file` of server `workbench` cannot be told apart from `Read_File`" in (
                text(blocked)
            )

    with reap(str(tmp_path)):
        run(scenario())
        assert not wait_gone(str(tmp_path))


# ---------------------------------------------------------------------------------------------
# Issue 23: paths mean to the rules what the upstream opens


def _fs_proxy(tmp_path: Path, root: Path, allow: list[str]) -> list[str]:
    config = _write(tmp_path, "tools.json", {"tools": {"allow": allow}})
    server = filesystem_server()
    return proxy_args(
        "--config", config, "--rules", "cedarlite:paths", "--server", "fs",
        "--", "node", str(server), str(root),
    )  # fmt: skip


def test_secrets_stay_secret_whatever_the_spelling(tmp_path: Path) -> None:
    """Item 1: Node's `path.resolve` drops a trailing `/`, `/.` or `//`; the rules see the file
    the server opens. Nested paths (`read_multiple_files`' `paths`) are judged one by one."""
    root = tmp_path / "p1"
    root.mkdir()
    secrets = {".env": "DB_PASSWORD=hunter2\n", ".npmrc": "//r/:_authToken=npm_SECRET\n",
               "key.pem": "-----BEGIN PRIVATE KEY-----SECRET\n",
               ".git-credentials": "https://u:SECRET@example.com\n"}  # fmt: skip
    for name, body in secrets.items():
        (root / name).write_text(body)
    (root / "notes.txt").write_text("hello\n")
    args = _fs_proxy(tmp_path, root, ["fs__read_text_file", "fs__read_multiple_files"])
    spellings = [f"{root}/{n}{tail}" for n in secrets for tail in ("/", "/.", "//", "/./", "")]
    spellings += [f"{root}//.env", f"{root}/./.env", f"{root}/sub/../.env"]

    async def scenario() -> None:
        async with session(args) as c:
            ok = await c.call_tool("read_text_file", {"path": f"{root}/notes.txt"})
            assert not ok.is_error and "hello" in text(ok)
            for path in spellings:
                answer = await c.call_tool("read_text_file", {"path": path})
                assert answer.is_error, path
                assert "SECRET" not in text(answer) and "hunter2" not in text(answer), path
                assert "cedarlite" in text(answer) or "blocked" in text(answer), text(answer)
            many = await c.call_tool(
                "read_multiple_files", {"paths": [f"{root}/notes.txt", f"{root}/.env/"]}
            )
            assert many.is_error and "hunter2" not in text(many), text(many)
            garbage = await c.call_tool("read_text_file", {"path": f"{root}/.env\x00.txt"})
            assert garbage.is_error and "control character" in text(garbage), text(garbage)

    with reap(str(tmp_path)):
        run(scenario())
        assert not wait_gone(str(tmp_path))


#: An upstream that writes down every line it receives and answers requests with `{}`
#: (`initialize` with a handshake): what reached it, notifications included.
RECORDER = """
import json, sys
log = open(sys.argv[1], "a")
for line in sys.stdin:
    log.write(line); log.flush()
    msg = json.loads(line)
    if "id" not in msg:
        continue
    result = {}
    if msg.get("method") == "initialize":
        result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                  "serverInfo": {"name": "recorder", "version": "1"}}
    elif msg.get("method") == "tools/list":
        result = {"tools": [{"name": n, "inputSchema": {"type": "object"}}
                            for n in ("read_text_file", "move_file")]}
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
"""


def test_a_call_without_id_is_never_relayed(tmp_path: Path) -> None:
    """Item 6: a `tools/call` notification (no `id`, so no denial could go back) for a removed
    tool, or any tool, never reaches the upstream undecided."""
    seen = tmp_path / "seen.jsonl"
    config = _write(tmp_path, "tools.json", {"tools": {"allow": ["rec__read_text_file"]}})
    args = proxy_args(
        "--config", config, "--server", "rec", "--", sys.executable, "-c", RECORDER, str(seen)
    )
    with reap(str(tmp_path)):
        raw = Raw(args)
        assert raw.handshake()["result"]["serverInfo"]["name"] == "recorder"
        for name in ("move_file", "read_text_file"):
            call = _call(0, name, {"source": "/tmp/a", "destination": "/tmp/b", "path": "x"})
            del call["id"]
            raw.send(call)
        raw.send({"jsonrpc": "2.0", "id": 3, "method": "ping"})
        assert raw.recv() == {"jsonrpc": "2.0", "id": 3, "result": {}}
        methods = [json.loads(line).get("method") for line in seen.read_text().splitlines()]
        assert "tools/call" not in methods, methods
        assert "ping" in methods
        assert raw.proc.stdin is not None
        raw.proc.stdin.close()
        assert raw.proc.wait(10) == 0
