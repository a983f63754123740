"""``cedarlite mcp-proxy``: a stdio MCP server that gates another one.

The client (Claude Desktop, Cursor, an IDE, an SDK client) starts the proxy as its MCP server;
the proxy starts ``COMMAND`` as the *upstream* server and relays JSON-RPC messages (one per
line) both ways. What it relays is always its own encoding of the message it parsed and
checked (ASCII JSON on one line), never the bytes it read: a reader that splits lines
differently (the SDK's, on ``\\r`` as well) must not find a second message the proxy never saw.
Messages pass unchanged in content, except that:

* each ``tools/list`` answer (every page) is filtered through the tool policy: the client sees
  the upstream's own tool objects, minus the tools the policy removes;
* each ``tools/call`` is decided by the guard (:class:`~cedarlite.hosts.mcp_gate.McpGate`)
  before it reaches the upstream: an allowed call is forwarded and its answer relayed as is; a
  denied call is answered by the proxy with ``isError: true`` and the reason, and never reaches
  the upstream; an ``@ask`` approval is put to the person through MCP elicitation when the
  client offers it (form mode, handshake era), otherwise the call is denied, naming it;
* ``notifications/tools/list_changed`` makes the proxy forget the tools (the next list or call
  relists them); a call of a tool not listed yet makes the proxy list the upstream's tools
  itself (request ids ``cedarlite-<random>-<n>``, never forwarded to the client).

Everything else (``initialize``, capabilities, ``server/discover``, ping, progress,
cancellation, logging, resources, prompts, completions, server-to-client requests such as
``roots/list``, ``sampling/createMessage``, ``elicitation/create``, unknown methods) is relayed
as is. Messages are handled independently: a slow call or an approval waiting for a person
never holds up other messages. Every client request is remembered until answered: a request
reusing the id of one in flight (or cancelled and not yet answered) is refused with an
``Invalid Request`` error, and an upstream answer no request waits for is dropped.

The proxy is hostile-input safe: lines longer than ``max_message_bytes`` are dropped (a client
request gets a JSON-RPC error), JSON is parsed by the standard C decoder (which refuses deep
nesting with an error; ``NaN`` and ``Infinity`` are refused), a malformed message from the
client gets a JSON-RPC parse error, and at most :data:`MAX_PENDING` client requests may be in
flight. Stdin may be a pipe, a socket, a terminal, a regular file or ``/dev/null`` (the last two
are read in a thread). The upstream's stderr is the proxy's; the upstream exiting ends the
proxy; the proxy ending (stdin closed, SIGTERM, SIGINT) ends the upstream: its stdin is
closed, then after 2 s its process group gets SIGTERM, then SIGKILL.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import signal
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from .._log import get_logger
from ..errors import CedarliteError
from ..guard.approvals import ApprovalRequest
from .mcp_gate import (
    APPROVAL_SCHEMA,
    McpGate,
    approval_answer,
    approval_message,
    denial,
    form_elicitation,
)

log = get_logger("cedarlite.hosts")

#: Default cap on one message (one line), in bytes.
MAX_MESSAGE_BYTES = 32 * 1024 * 1024
#: Client requests in flight at once (forwarded and not yet answered, or being decided).
MAX_PENDING = 4096
#: Pages of the proxy's own ``tools/list`` before it gives up.
MAX_PAGES = 100
#: Seconds the upstream has to answer the proxy's own ``tools/list``.
LIST_TIMEOUT = 10.0
#: Seconds between closing the upstream's stdin, SIGTERM and SIGKILL.
STOP_GRACE = 2.0

_CHUNK = 1 << 16
_META_PREFIX = "io.modelcontextprotocol/"
_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
_PARSE_ERROR, _INVALID_REQUEST, _INVALID_PARAMS, _INTERNAL = -32700, -32600, -32602, -32603
_TOO_LONG: Any = object()

Key = tuple[bool, Any]  # a JSON-RPC id: (is a string, value), so that 1 and "1" differ


class ProxyError(CedarliteError):
    """The proxy cannot start (the upstream command cannot be run, stdio is unusable)."""

    code = "E0870"


# ---------------------------------------------------------------------------------------------
# Byte streams


class _Lines:
    """The lines of a byte stream, each at most ``limit`` bytes (``_TOO_LONG`` for a longer
    one, whose bytes are skipped as they arrive: memory stays bounded by ``limit``)."""

    def __init__(self, read: Callable[[int], Awaitable[bytes]], limit: int) -> None:
        self._read = read
        self._limit = limit
        self._buf = bytearray()
        self._scanned = 0  # bytes of _buf known to hold no newline
        self._skipping = False
        self._eof = False

    async def next(self) -> bytes | None:
        """The next line without its newline; ``None`` at the end of the stream."""
        while True:
            at = self._buf.find(b"\n", self._scanned)
            if at >= 0:
                line = bytes(self._buf[:at])
                del self._buf[: at + 1]
                self._scanned = 0
                if self._skipping:
                    self._skipping = False
                    return _TOO_LONG
                if len(line) > self._limit:
                    return _TOO_LONG
                return line
            self._scanned = len(self._buf)
            if len(self._buf) > self._limit:
                self._skipping = True
                self._buf.clear()
                self._scanned = 0
            if self._eof:
                rest, skipped = bytes(self._buf), self._skipping
                self._buf.clear()
                self._skipping = False
                if skipped:
                    return _TOO_LONG
                return rest if rest.strip() else None
            chunk = await self._read(_CHUNK)
            if not chunk:
                self._eof = True
            else:
                self._buf += chunk


class _Sink(asyncio.Protocol):
    """The write side of a pipe, with backpressure (the transport pauses us when full)."""

    def __init__(self) -> None:
        self._ready = asyncio.Event()
        self._ready.set()
        self.closed = False

    def pause_writing(self) -> None:
        self._ready.clear()

    def resume_writing(self) -> None:
        self._ready.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._ready.set()


class _Output:
    """Whole lines to a file descriptor (a pipe, or a regular file written directly)."""

    def __init__(self) -> None:
        self._transport: asyncio.WriteTransport | None = None
        self._sink: _Sink | None = None
        self._fd: int | None = None

    @classmethod
    async def open(cls, fd: int) -> _Output:
        out = cls()
        loop = asyncio.get_running_loop()
        try:
            pipe = os.fdopen(os.dup(fd), "wb", buffering=0)
            transport, sink = await loop.connect_write_pipe(_Sink, pipe)
            out._transport, out._sink = transport, sink
        except (ValueError, OSError):  # a regular file: plain writes never block for long
            out._fd = fd
        return out

    async def send(self, line: bytes) -> None:
        """Write one line (a newline is added); raises ``ConnectionError`` once closed."""
        data = line + b"\n"
        if self._fd is not None:
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view) :]
            return
        assert self._transport is not None and self._sink is not None
        if self._sink.closed or self._transport.is_closing():
            raise ConnectionError("the output is closed")
        self._transport.write(data)
        await self._sink._ready.wait()
        if self._sink.closed:
            raise ConnectionError("the output is closed")

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()


async def _stdin_reader(fd: int) -> Callable[[int], Awaitable[bytes]]:
    """A chunk reader of ``fd``: a pipe transport when the event loop can watch ``fd`` (a pipe,
    a socket, a terminal), else reads in a thread (a regular file, ``/dev/null``: reads that
    never wait)."""
    loop = asyncio.get_running_loop()
    try:
        # The transport registers the descriptor only later, in a callback whose failure
        # (epoll refuses regular files and /dev/null) would leave the proxy waiting forever:
        # try it here first.
        loop.add_reader(fd, lambda: None)
        loop.remove_reader(fd)
    except (ValueError, OSError):
        return _thread_reader(fd)
    reader = asyncio.StreamReader(limit=_CHUNK * 4)
    pipe = os.fdopen(os.dup(fd), "rb", buffering=0)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
    except (ValueError, OSError):
        pipe.close()
        return _thread_reader(fd)
    return reader.read


def _thread_reader(fd: int) -> Callable[[int], Awaitable[bytes]]:
    """Reads of ``fd`` in the default executor; a read error ends the stream (logged)."""
    loop = asyncio.get_running_loop()

    async def read(n: int) -> bytes:
        try:
            return await loop.run_in_executor(None, os.read, fd, n)
        except OSError as err:
            log.error("cedarlite mcp-proxy: cannot read stdin: %s", err.strerror or err)
            return b""

    return read


# ---------------------------------------------------------------------------------------------
# JSON-RPC


def _key(value: Any) -> Key | None:
    """The key of a valid request id (a string or an integer), else ``None``."""
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return (isinstance(value, str), value)
    return None


def _encode(message: Mapping[str, Any]) -> bytes:
    """One line of JSON: ASCII only (every line break and separator escaped), so that no reader,
    however it splits lines (``\\n``, ``\\r``, U+2028), sees anything but this one message."""
    return json.dumps(message, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode()


def _error(rid: Any, code: int, message: str) -> bytes:
    return _encode({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}})


def _shown(rid: Any) -> str:
    """A request id for a message, in backticks (long ones cut)."""
    text = json.dumps(rid)
    return f"`{text[:64]}...`" if len(text) > 64 else f"`{text}`"


def _field(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, Mapping) else None


def _no_constant(name: str) -> Any:
    raise ValueError(f"`{name}` is not JSON")


def _parse(line: bytes) -> tuple[Any, bytes, str | None]:
    """The message of a line and its re-encoding (:func:`_encode`), or why it cannot be read.

    The re-encoding is what the proxy forwards, never the line itself: the line may hold bytes
    that another reader splits differently (a ``\\r`` is JSON whitespace, but a line break to a
    reader with universal newlines), so that the proxy would check one message and the peer
    run another.
    """
    try:
        msg = json.loads(line.decode("utf-8"), parse_constant=_no_constant)
        return msg, _encode(msg), None
    except RecursionError:
        return None, b"", "the message is nested too deeply"
    except UnicodeDecodeError:
        return None, b"", "the message is not UTF-8"
    except ValueError as err:
        return None, b"", f"the message is not JSON: {err}"


# ---------------------------------------------------------------------------------------------
# The proxy


class McpProxy:
    """One proxy session: the client on this process's stdin/stdout, the upstream ``command``.

    ``gate`` decides; ``max_message_bytes`` caps one message. :meth:`run` serves until the
    client or the upstream goes away and returns the exit code.
    """

    def __init__(
        self,
        gate: McpGate,
        command: list[str],
        *,
        max_message_bytes: int = MAX_MESSAGE_BYTES,
        stdin_fd: int = 0,
        stdout_fd: int = 1,
    ) -> None:
        if not command:
            raise ProxyError("give the upstream server's command after `--`")
        self.gate = gate
        self.command = command
        self.max_message_bytes = max_message_bytes
        self._stdin_fd, self._stdout_fd = stdin_fd, stdout_fd
        self._prefix = f"cedarlite-{secrets.token_hex(6)}-"
        self._counter = 0
        # Client requests forwarded and not answered yet: id -> what to do with the answer
        # (every one is held, so that no later request can reuse its id meanwhile).
        self._pending: dict[Key, tuple[str, Any, Any]] = {}
        # tools/call requests being decided (a cancellation drops them before they are sent).
        self._deciding: dict[Key, asyncio.Task[None]] = {}
        # The proxy's own requests, to the upstream and to the client.
        self._own_upstream: dict[Key, asyncio.Future[Any]] = {}
        self._own_client: dict[Key, asyncio.Future[Any]] = {}
        self._cancelled: OrderedDict[Key, None] = OrderedDict()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._client_caps: Any = None
        self._refreshing: asyncio.Task[None] | None = None
        self._upstream: asyncio.subprocess.Process | None = None
        self._to_client: _Output | None = None
        self._done = asyncio.Event()
        self._why = ""

    # -- running -------------------------------------------------------------------------

    async def run(self) -> int:
        """Start the upstream, relay until one side ends, stop the upstream; the exit code:
        0 when the client ended the session (or a signal did), else 1."""
        loop = asyncio.get_running_loop()
        self._to_client = await _Output.open(self._stdout_fd)
        read_client = await _stdin_reader(self._stdin_fd)
        try:
            self._upstream = await asyncio.create_subprocess_exec(
                *self.command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as err:
            raise ProxyError(
                f"cannot start the upstream server `{self.command[0]}`: {err.strerror or err}"
            ) from None
        handled = []
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, self._stop, f"signal {sig.name}")
                handled.append(sig)
        assert self._upstream.stdout is not None
        pumps = [
            asyncio.create_task(
                self._pump(
                    _Lines(read_client, self.max_message_bytes),
                    "client",
                    self._from_client,
                    self._client_too_long,
                )
            ),
            asyncio.create_task(
                self._pump(
                    _Lines(self._upstream.stdout.read, self.max_message_bytes),
                    "upstream",
                    self._from_upstream,
                    self._upstream_too_long,
                )
            ),
        ]
        try:
            await self._done.wait()
        finally:
            # The client's side first; the upstream's answers are relayed while it stops.
            for task in [pumps[0], *self._tasks]:
                task.cancel()
            await asyncio.gather(pumps[0], *self._tasks, return_exceptions=True)
            code = await self._stop_upstream()
            # What the upstream wrote before it exited is still relayed (its output ends
            # soon after it exits, unless a child of its own holds it open).
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(pumps[1]), STOP_GRACE)
            pumps[1].cancel()
            for outcome in await asyncio.gather(*pumps, return_exceptions=True):
                if isinstance(outcome, Exception):
                    log.error("cedarlite mcp-proxy: internal error: %r", outcome)
            for sig in handled:
                loop.remove_signal_handler(sig)
            self._to_client.close()
        if self._why == "upstream":
            if code:
                log.error("cedarlite mcp-proxy: the upstream server exited with status %s", code)
            return 0 if code == 0 else 1
        return 0

    def _stop(self, why: str) -> None:
        if not self._done.is_set():
            self._why = why
            self._done.set()

    async def _stop_upstream(self) -> int | None:
        """Close the upstream's stdin, wait, SIGTERM its process group, wait, SIGKILL."""
        proc = self._upstream
        if proc is None:
            return None
        if proc.stdin is not None:
            with contextlib.suppress(Exception):
                proc.stdin.close()
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            if sig is not None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, sig)
            try:
                return await asyncio.wait_for(proc.wait(), STOP_GRACE)
            except TimeoutError:
                continue
        return await proc.wait()

    def _spawn(self, coro: Awaitable[None]) -> asyncio.Task[None]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _send_client(self, line: bytes) -> None:
        assert self._to_client is not None
        try:
            await self._to_client.send(line)
        except (ConnectionError, OSError):
            self._stop("client")

    async def _send_upstream(self, line: bytes) -> None:
        proc = self._upstream
        assert proc is not None and proc.stdin is not None
        try:
            proc.stdin.write(line + b"\n")
            await proc.stdin.drain()
        except (ConnectionError, OSError):
            self._stop("upstream")

    def _next_id(self) -> str:
        self._counter += 1
        return f"{self._prefix}{self._counter}"

    # -- client -> upstream --------------------------------------------------------------

    async def _pump(
        self,
        lines: _Lines,
        side: str,
        handle: Callable[[bytes], Awaitable[None]],
        too_long: Callable[[], Awaitable[None]],
    ) -> None:
        """Hand each line from one side to ``handle``, until that side's stream ends."""
        try:
            while (line := await lines.next()) is not None:
                if line is _TOO_LONG:
                    await too_long()
                elif line.strip():
                    try:
                        await handle(line)
                    except Exception as err:  # a bug of ours: that message is lost, not others
                        log.error(
                            "cedarlite mcp-proxy: a message from the %s failed: %r", side, err
                        )
        finally:
            self._stop(side)

    async def _client_too_long(self) -> None:
        await self._send_client(_error(None, _INVALID_REQUEST, self._too_long("the message")))

    async def _upstream_too_long(self) -> None:
        log.error(
            "cedarlite mcp-proxy: dropped a message from the upstream: %s", self._too_long("it")
        )

    def _too_long(self, what: str) -> str:
        return f"{what} is longer than {self.max_message_bytes} bytes"

    async def _from_client(self, raw: bytes) -> None:
        # INVARIANT: only `line`, the re-encoding of the parsed `msg`, is ever forwarded.
        msg, line, problem = _parse(raw)
        if problem is not None:
            await self._send_client(_error(None, _PARSE_ERROR, f"Parse error: {problem}"))
            return
        if not isinstance(msg, dict):
            await self._send_client(
                _error(None, _INVALID_REQUEST, "Invalid Request: a message must be an object")
            )
            return
        method, rid = msg.get("method"), msg.get("id")
        if isinstance(method, str):
            if "id" not in msg:
                await self._client_notification(method, msg, line)
                return
            key = _key(rid)
            if key is None or (isinstance(rid, str) and rid.startswith(self._prefix)):
                await self._send_client(
                    _error(
                        None,
                        _INVALID_REQUEST,
                        "Invalid Request: `id` must be a string or an integer",
                    )
                )
                return
            await self._client_request(method, key, msg, line)
            return
        key = _key(rid)
        if key is not None and ("result" in msg or "error" in msg):
            waiter = self._own_client.pop(key, None)
            if waiter is not None:
                if not waiter.done():
                    waiter.set_result(msg)
                return
            await self._send_upstream(line)  # the answer to an upstream's request
            return
        if "id" in msg:
            await self._send_client(
                _error(rid if key else None, _INVALID_REQUEST, "Invalid Request")
            )
        else:
            log.warning("cedarlite mcp-proxy: dropped a client message of unknown kind")

    async def _client_request(
        self, method: str, key: Key, msg: dict[str, Any], line: bytes
    ) -> None:
        rid = msg["id"]
        if key in self._pending or key in self._deciding or key in self._cancelled:
            # Its answer could not be told from the earlier request's (an unfiltered
            # `tools/list` page passing as a ping's answer): refused, never forwarded.
            why = f"Invalid Request: request id {_shown(rid)} is in use"
            await self._send_client(_error(rid, _INVALID_REQUEST, why))
            return
        if len(self._pending) + len(self._deciding) >= MAX_PENDING:
            await self._send_client(
                _error(rid, _INTERNAL, f"too many requests in flight (at most {MAX_PENDING})")
            )
            return
        params = msg.get("params")
        if method == "tools/call":
            self._deciding[key] = self._spawn(self._call(key, rid, params, line))
            return
        if method == "initialize":
            if isinstance(params, Mapping):
                self._client_caps = params.get("capabilities")
            self._pending[key] = ("handshake", None, None)
        elif method == "server/discover":
            self._pending[key] = ("handshake", None, None)
        elif method == "tools/list":
            cursor = params.get("cursor") if isinstance(params, Mapping) else None
            self._pending[key] = ("tools/list", not cursor, None)
        else:  # relayed as is, but its id is held until answered
            self._pending[key] = ("relay", None, None)
        await self._send_upstream(line)

    async def _client_notification(self, method: str, msg: dict[str, Any], line: bytes) -> None:
        if method == "tools/call":
            # A call without `id` is no request: nothing could carry a denial back, and a
            # call relayed undecided would run. Dropped, whatever the tool.
            log.warning("cedarlite mcp-proxy: dropped a `tools/call` without `id`")
            return
        if method == "notifications/cancelled":
            params = msg.get("params")
            key = _key(params.get("requestId")) if isinstance(params, Mapping) else None
            if key is not None:
                deciding = self._deciding.pop(key, None)
                if deciding is not None:  # not sent upstream yet: never will be
                    deciding.cancel()
                    return
                if key not in self._pending:  # answered by the proxy already, or unknown
                    return
                # Its answer, if one still comes, is dropped (the client ignores it anyway,
                # and a `tools/list` page would otherwise go out unfiltered).
                self._pending.pop(key)
                self._cancelled[key] = None
                while len(self._cancelled) > MAX_PENDING:
                    self._cancelled.popitem(last=False)
        await self._send_upstream(line)

    async def _call(self, key: Key, rid: Any, params: Any, line: bytes) -> None:
        """Decide one ``tools/call``: forward it, or answer it with a denial."""
        try:
            name = params.get("name") if isinstance(params, Mapping) else None
            arguments = params.get("arguments") if isinstance(params, Mapping) else None
            if not isinstance(name, str) or not (arguments is None or isinstance(arguments, dict)):
                self._deciding.pop(key, None)
                await self._send_client(
                    _error(
                        rid,
                        _INVALID_PARAMS,
                        "Invalid params: `tools/call` needs a string `name` and object `arguments`",
                    )
                )
                return
            meta = params.get("_meta")
            version = meta.get(_PROTOCOL_VERSION) if isinstance(meta, Mapping) else None
            reason: str | None
            try:
                if not self.gate.knows(name):
                    await self._refresh(meta)
                can_ask = form_elicitation(self._client_caps)
                verdict = await self.gate.decide(
                    name,
                    arguments,
                    call_id=str(rid),
                    ask=self._ask(f"{name} (server {self.gate.server})") if can_ask else None,
                )
                reason = None if verdict.allowed else verdict.reason or "Tool call blocked"
            except asyncio.CancelledError:
                raise
            except Exception as err:  # an error of ours: deny, never forward
                log.error("cedarlite mcp-proxy: deciding `%s` failed: %s", name, err)
                reason = f"Tool call blocked: cedarlite failed to decide it ({type(err).__name__})."
            if self._deciding.pop(key, None) is None:
                return  # cancelled by the client meanwhile
            if reason is not None:
                result = denial(reason, version)
                await self._send_client(_encode({"jsonrpc": "2.0", "id": rid, "result": result}))
                return
            self._pending[key] = ("tools/call", name, arguments)
            await self._send_upstream(line)
        except asyncio.CancelledError:
            self._deciding.pop(key, None)

    async def _refresh(self, meta: Any) -> None:
        """List the upstream's tools (every page) for the gate; one listing at a time."""
        if self._refreshing is None or self._refreshing.done():
            self._refreshing = asyncio.ensure_future(self._list_upstream(meta))
        try:
            await asyncio.wait_for(asyncio.shield(self._refreshing), LIST_TIMEOUT)
        except TimeoutError:
            log.warning(
                "cedarlite mcp-proxy: the upstream did not list its tools within %ss", LIST_TIMEOUT
            )
        except Exception as err:
            log.warning("cedarlite mcp-proxy: listing the upstream's tools failed: %s", err)

    async def _list_upstream(self, meta: Any) -> None:
        envelope = (
            {k: v for k, v in meta.items() if isinstance(k, str) and k.startswith(_META_PREFIX)}
            if isinstance(meta, Mapping)
            else {}
        )
        cursor: Any = None
        for page in range(MAX_PAGES):
            params: dict[str, Any] = {}
            if envelope:
                params["_meta"] = envelope
            if cursor:
                params["cursor"] = cursor
            answer = await self._request_upstream("tools/list", params)
            result = answer.get("result")
            if not isinstance(result, Mapping):
                raise ProxyError(f"the upstream answered `tools/list` with {answer.get('error')}")
            self._learn(result)
            cursor = result.get("nextCursor")
            last = not isinstance(cursor, str) or not cursor
            self.gate.observe(result.get("tools"), first_page=page == 0, last_page=last)
            if last:
                return

    async def _request_upstream(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        rid = self._next_id()
        waiter: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._own_upstream[(True, rid)] = waiter
        try:
            await self._send_upstream(
                _encode({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
            )
            answer: dict[str, Any] = await waiter
            return answer
        finally:
            self._own_upstream.pop((True, rid), None)

    def _ask(self, name: str) -> Callable[[ApprovalRequest], Awaitable[str | None]]:
        async def ask(request: ApprovalRequest) -> str | None:
            """Put the approval to the person through the client (``elicitation/create``)."""
            rid = self._next_id()
            waiter: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            self._own_client[(True, rid)] = waiter
            params = {
                "mode": "form",
                "message": approval_message(request, name),
                "requestedSchema": APPROVAL_SCHEMA,
            }
            try:
                await self._send_client(
                    _encode(
                        {
                            "jsonrpc": "2.0",
                            "id": rid,
                            "method": "elicitation/create",
                            "params": params,
                        }
                    )
                )
                answer = await waiter
            except asyncio.CancelledError:  # timed out, or the call was cancelled
                with contextlib.suppress(Exception):
                    note = {"requestId": rid, "reason": "the approval is no longer needed"}
                    await self._send_client(
                        _encode(
                            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": note}
                        )
                    )
                raise
            finally:
                self._own_client.pop((True, rid), None)
            if "error" in answer:
                log.warning("cedarlite mcp-proxy: the client could not ask: %s", answer["error"])
                return None
            return approval_answer(answer.get("result"))

        return ask

    # -- upstream -> client --------------------------------------------------------------

    async def _from_upstream(self, raw: bytes) -> None:
        # INVARIANT: only `line`, the re-encoding of the parsed `msg`, is ever forwarded.
        msg, line, problem = _parse(raw)
        if problem is not None or not isinstance(msg, dict):
            log.error(
                "cedarlite mcp-proxy: dropped a message from the upstream: %s",
                problem or "not an object",
            )
            return
        if "method" in msg:
            rid = msg.get("id")
            if isinstance(rid, str) and rid.startswith(self._prefix):  # the client's answer
                await self._send_upstream(  # would be taken for an answer to the proxy
                    _error(rid, _INVALID_REQUEST, "Invalid Request: this id is the proxy's")
                )
                return
            if msg.get("method") == "notifications/tools/list_changed":
                self.gate.forget()
            await self._send_client(line)  # notifications and server-to-client requests
            return
        key = _key(msg.get("id"))
        if key is None:
            await self._send_client(line)
            return
        waiter = self._own_upstream.get(key)
        if waiter is not None:
            if not waiter.done():
                waiter.set_result(msg)
            return
        if key in self._deciding or self._cancelled.pop(key, 0) is None:
            return  # not sent upstream (yet), or cancelled: no answer of the upstream's counts
        kind, first, arguments = self._pending.pop(key, (None, None, None))
        if kind is None:  # no request of the client's is waiting for it (a repeated answer)
            log.warning("cedarlite mcp-proxy: dropped an upstream answer to no pending request")
            return
        result = msg.get("result")
        if isinstance(result, Mapping):
            self._learn(result)
        if kind == "tools/list" and isinstance(result, Mapping):
            line = self._filtered(msg, result, bool(first), line)
        elif kind == "tools/list":  # an error answer: nothing to filter
            pass
        elif kind == "tools/call":
            self._record(first, arguments, msg)
        await self._send_client(line)

    def _learn(self, result: Mapping[str, Any]) -> None:
        """The server's name, from ``initialize``'s ``serverInfo`` or a result's stamp."""
        if self.gate.server is not None:
            return
        info = result.get("serverInfo")
        meta = result.get("_meta")
        if info is None and isinstance(meta, Mapping):
            info = meta.get(_SERVER_INFO)
        self.gate.learn_server(info)

    def _filtered(
        self, msg: dict[str, Any], result: Mapping[str, Any], first: bool, line: bytes
    ) -> bytes:
        tools = result.get("tools")
        try:
            cursor = result.get("nextCursor")
            last = not isinstance(cursor, str) or not cursor
            self.gate.observe(tools, first_page=first, last_page=last)
            kept = self.gate.filter(tools)
        except Exception as err:  # an error of ours: show nothing
            log.error("cedarlite mcp-proxy: filtering `tools/list` failed: %s", err)
            kept = []
        if isinstance(tools, list) and len(kept) == len(tools):
            return line  # nothing removed: the upstream's message as it was parsed
        return _encode({**msg, "result": {**result, "tools": kept}})

    def _record(self, name: Any, arguments: Any, msg: Mapping[str, Any]) -> None:
        """What an allowed call returned, for loop detection."""
        error = msg.get("error")
        self.gate.record(
            name,
            arguments,
            call_id=str(msg.get("id")),
            result=msg.get("result"),
            error=None if error is None else str(_field(error, "message") or "error"),
        )


def run_proxy(
    gate: McpGate, command: list[str], *, max_message_bytes: int = MAX_MESSAGE_BYTES
) -> int:
    """Serve one proxy session on this process's stdin/stdout; returns the exit code.
    Raises :class:`ProxyError` when either is closed."""
    for fd, name in ((0, "<stdin>"), (1, "<stdout>")):
        try:  # before the event loop opens descriptors of its own, which could take these
            os.fstat(fd)
        except OSError as err:
            why = (err.strerror or str(err)).lower()
            raise ProxyError(f"cannot carry the client's messages: {why}", source=name) from None
    proxy = McpProxy(gate, command, max_message_bytes=max_message_bytes)
    return asyncio.run(proxy.run())
