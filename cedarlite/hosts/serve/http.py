"""``cedarlite serve --http HOST:PORT``: the protocol over HTTP, served by uvicorn.

``POST /v1/before_tool_call``, ``/v1/after_tool_call``, ``/v1/is_authorized``, ``/v1/reload``
with the operation's fields as a JSON object body, ``GET /v1/health``; the answer is the
body, JSON. A decision is HTTP 200, and so is every answer to ``before_tool_call`` (and to
``openclaw_before_tool_call``): an error answer to it says ``"action": "block"`` (a host
must never read a status as "no opinion").
Other error answers: 400 (a bad request), 401 (no or a wrong token), 404, 405, 413 (over the
size limit), 422 (a reload whose files do not load), 409 (``is_authorized`` without
``--policies``).

uvicorn (``pip install 'cedarlite[serve]'``) parses HTTP and keeps each connection in its
event loop, so a slow client costs a coroutine, not a thread, and never delays another
client's answer. Decisions take microseconds and run on the event loop; with the session
state in SQLite (which may wait for another process) they run in a thread pool. The service
listens on loopback unless ``--token-file`` is given; with it, every request must carry
``Authorization: Bearer <token>`` (compared in constant time).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ... import _log
from ...guard import MemorySessionStore
from .protocol import (
    DECISIONS,
    HTTP_STATUS,
    OPERATIONS,
    ProtocolError,
    Service,
    blocked,
    decode,
    encode,
    too_large,
)

log = _log.get_logger("cedarlite.serve")

#: Requests decided at once (the others wait in the event loop, costing no thread).
WORKERS = 16

#: A request body must arrive within this many seconds (a stalled client is answered with
#: an error and its connection closed).
BODY_SECONDS = 30.0

#: The longest request head (request line and headers), bytes.
HEAD_BYTES = 64 * 1024

#: The HTTP paths: ``/v1/<operation>`` (``claude_code_hook`` is the Unix socket's alone).
PATHS = {f"/v1/{op}": op for op in OPERATIONS if op != "claude_code_hook"}

_JSON = [(b"content-type", b"application/json")]


class TokenError(ProtocolError):
    """A token file that cannot be used."""


def read_token(path: str) -> bytes:
    """The token of ``--token-file`` (its text, stripped); raises :class:`TokenError`."""
    try:
        with open(path, "rb") as f:
            token = f.read(4097).strip()
    except OSError as err:
        raise TokenError(f"cannot read the token file `{path}`: {err.strerror}") from None
    if not token or len(token) > 4096 or b"\n" in token:
        raise TokenError(f"the token file `{path}` must hold one token of 1 to 4096 bytes")
    return token


class App:
    """The ASGI application: routes, the token, the size limit, then :class:`Service`."""

    def __init__(self, service: Service, token: bytes | None, limit: int) -> None:
        self.service = service
        self.expected = b"Bearer " + token if token is not None else None
        self.limit = limit
        self.pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="decide")
        # Decisions with the session state in memory never wait: they run on the event loop.
        # With it in SQLite, a decision may wait for another process's transaction: a thread.
        self.inline = isinstance(service.guards.store, MemorySessionStore)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        status, answer = await self._handle(scope, receive)
        body = encode(answer)
        headers = [*_JSON, (b"content-length", str(len(body)).encode())]
        if status == 401:
            headers.append((b"www-authenticate", b"Bearer"))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def _handle(self, scope: dict[str, Any], receive: Any) -> tuple[int, dict[str, Any]]:
        op = PATHS.get(scope["path"])
        if op is None:
            known = ", ".join(sorted(PATHS))
            return 404, ProtocolError(f"no such path (paths: {known})", code="E0963").answer()
        method = scope["method"]
        if method != "POST" and not (op == "health" and method == "GET"):
            allowed = "GET or POST" if op == "health" else "POST"
            return 405, ProtocolError(f"use {allowed} for `{scope['path']}`").answer()
        if self.expected is not None and not self._authorized(scope):
            message = "missing or wrong token: send `Authorization: Bearer <token>`"
            return 401, ProtocolError(message, code="E0969").answer()
        try:
            fields = await self._fields(scope, receive)
        except ProtocolError as err:
            if op in DECISIONS:
                return 200, blocked(err)
            return HTTP_STATUS.get(err.code, 400), err.answer()
        if op != "reload" and self.inline:
            answer = self.service.answer(op, fields)  # microseconds: cheaper than a thread hop
        else:
            loop = asyncio.get_running_loop()
            answer = await loop.run_in_executor(self.pool, self.service.answer, op, fields)
        error = answer.get("error")
        if error is None or op in DECISIONS:
            return 200, answer
        return HTTP_STATUS.get(error.get("code"), 400), answer

    def _authorized(self, scope: dict[str, Any]) -> bool:
        assert self.expected is not None
        given = [v for k, v in scope["headers"] if k == b"authorization"]
        return len(given) == 1 and hmac.compare_digest(given[0], self.expected)

    async def _fields(self, scope: dict[str, Any], receive: Any) -> dict[str, Any]:
        for key, value in scope["headers"]:
            if key == b"content-length" and value.isdigit() and int(value) > self.limit:
                raise too_large(self.limit)
        chunks: list[bytes] = []
        size = 0
        while True:
            try:
                message = await asyncio.wait_for(receive(), BODY_SECONDS)
            except TimeoutError:
                raise ProtocolError(
                    f"the request body did not arrive within {BODY_SECONDS:g} s"
                ) from None
            if message["type"] == "http.disconnect":
                raise ProtocolError("the client went away")
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                raise too_large(self.limit)
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        if not body.strip():
            return {}
        fields = decode(body)
        if not isinstance(fields, dict):
            raise ProtocolError("the body must be a JSON object (the operation's fields)")
        return fields


def split_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) as ``(host, port)``; raises ``ValueError``."""
    host, sep, port = text.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"`{text}`: expected HOST:PORT, e.g. 127.0.0.1:8181")
    return host, int(port)


def _bounded_protocol() -> Any:
    """uvicorn's httptools protocol with the request head (line and headers) bounded to
    :data:`HEAD_BYTES`, which it does not bound itself (the 400 answer closes the connection);
    ``"h11"`` without httptools (h11 bounds it: ``h11_max_incomplete_event_size``)."""
    try:
        # lazy on purpose: the serve extra, needed by --http alone
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:
        return "h11"

    class BoundedHead(HttpToolsProtocol):
        in_head = True  # until the head of the current request is complete
        head = 0  # bytes of it received (give or take one read of the one before)

        def data_received(self, data: bytes) -> None:
            if self.in_head:
                self.head += len(data)
                if self.head > HEAD_BYTES:
                    self.send_400_response("Request head too large.")
                    return
            super().data_received(data)

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self.in_head, self.head = True, 0

        def on_headers_complete(self) -> None:
            self.in_head = False
            super().on_headers_complete()

    return BoundedHead


class HttpTransport:
    """uvicorn serving :class:`App` on a socket bound at construction (so that a port in use
    is an error of the command, not of a thread)."""

    def __init__(self, service: Service, address: str, token_file: str | None, limit: int) -> None:
        import uvicorn  # lazy on purpose: the serve extra, needed by --http alone

        host, port = split_address(address)
        token = read_token(token_file) if token_file is not None else None
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Inherited by the accepted connections: an answer's head and body are two writes,
        # which Nagle's algorithm would hold for the client's delayed ACK (~40 ms).
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            sock.bind((host, port))
        except OSError:
            sock.close()
            raise
        sock.listen(1024)
        self.sock = sock
        bound = sock.getsockname()
        self.address = (
            f"[{bound[0]}]:{bound[1]}" if family == socket.AF_INET6 else f"{bound[0]}:{bound[1]}"
        )
        self.app = App(service, token, limit)
        config = uvicorn.Config(
            self.app,
            http=_bounded_protocol(),
            lifespan="off",
            log_level="warning",
            access_log=False,
            server_header=False,
            date_header=False,
            timeout_keep_alive=30,
            timeout_graceful_shutdown=10,
            h11_max_incomplete_event_size=HEAD_BYTES,  # (without httptools)
        )
        self.server = uvicorn.Server(config)
        self.closed = threading.Event()
        self._thread: threading.Thread | None = None

    def run(self) -> None:
        """Serve until :meth:`stop` (a thread's body: uvicorn runs its own event loop)."""
        self._thread = threading.current_thread()
        try:
            self.server.run(sockets=[self.sock])
        finally:
            self.closed.set()

    def stop(self, grace: float) -> None:
        """Stop taking connections; uvicorn answers the requests in flight (at most ``grace``
        seconds)."""
        self.server.config.timeout_graceful_shutdown = int(grace)
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(grace + 2)
        self.app.pool.shutdown(wait=False, cancel_futures=True)
        with contextlib.suppress(OSError):
            self.sock.close()
