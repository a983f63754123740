"""The service process: loads the guard set, runs the transports, watches the files, and ends
on ``SIGTERM``/``SIGINT``, at the end of stdin (``--stdio``), or after an idle period.

Shutdown is graceful: the transports stop taking requests, the requests in flight are answered
(for at most :data:`GRACE_SECONDS`), then the process exits 0.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

from ... import _log
from ...errors import CedarliteError
from .guards import GuardSet, ServeOptions
from .protocol import MAX_REQUEST_BYTES, Service

log = _log.get_logger("cedarlite.serve")

#: How long a shutdown waits for the requests in flight (seconds).
GRACE_SECONDS = 10.0


class Transport(Protocol):
    """What the process runs: ``run`` (a thread's body), ``stop`` (stop taking requests and
    wait, at most ``grace`` seconds, for those in flight) and ``closed`` (set when the
    transport ended by itself)."""

    closed: threading.Event

    def run(self) -> None: ...

    def stop(self, grace: float) -> None: ...


class Listen(NamedTuple):
    """Where the service listens: stdio, a Unix socket, an HTTP address (several at once,
    but stdio alone), with the HTTP token file, the idle exit (seconds; 0: never) and the
    request size limit."""

    stdio: bool = False
    socket: str | None = None
    http: str | None = None
    token_file: str | None = None
    idle_exit: float = 0.0
    limit: int = MAX_REQUEST_BYTES


class Activity:
    """When the service last answered (the idle exit reads it)."""

    def __init__(self) -> None:
        self.last = time.monotonic()

    def touch(self) -> None:
        self.last = time.monotonic()


class TrackedService(Service):
    """A :class:`Service` that records its activity."""

    def __init__(self, guards: GuardSet, activity: Activity) -> None:
        super().__init__(guards)
        self.activity = activity

    def answer(self, op: str, fields: dict[str, Any]) -> dict[str, Any]:
        self.activity.touch()
        try:
            return super().answer(op, fields)
        finally:
            self.activity.touch()


def make_transports(service: Service, listen: Listen, claimed: Any = None) -> list[Transport]:
    """The transports ``listen`` asks for, bound and ready (raises ``OSError`` or a
    :class:`~cedarlite.errors.CedarliteError` when one cannot listen)."""
    transports: list[Transport] = []
    if listen.stdio:
        # lazy on purpose: a service loads the transports it runs (uvicorn for HTTP alone)
        from .stdio import StdioTransport, protocol_streams

        stdin, stdout = protocol_streams()
        transports.append(StdioTransport(service, stdin, stdout, listen.limit))
    if listen.socket is not None:
        from .unix import UnixTransport  # lazy on purpose: (as above)

        transports.append(UnixTransport(service, claimed, listen.limit))
    if listen.http is not None:
        from .http import HttpTransport  # lazy on purpose: (as above)

        transports.append(HttpTransport(service, listen.http, listen.token_file, listen.limit))
    return transports


def serve(
    options: ServeOptions, listen: Listen, *, ready: Callable[[str], None] | None = None
) -> int:
    """Run the service until it is told to stop; returns the exit code (0). Raises a
    :class:`~cedarlite.errors.CedarliteError` when the files do not load (it never starts
    broken), ``OSError`` when it cannot listen."""
    claimed = None
    if listen.socket is not None:  # first: a second service for the socket ends here
        from .unix import claim  # lazy on purpose: (as in make_transports)

        claimed = claim(listen.socket)
    try:
        guards = GuardSet(options)
    except CedarliteError as err:
        if claimed is not None:  # the hooks that would start it again wait a while
            claimed.failed(err.render())
        raise
    if claimed is not None:
        claimed.failed(None)
    activity = Activity()
    service = TrackedService(guards, activity)
    transports = make_transports(service, listen, claimed)
    stop = threading.Event()
    _install_signals(stop, guards)
    threads = [threading.Thread(target=guards.watch, args=(stop,), daemon=True, name="watch")]
    threads += [
        threading.Thread(target=t.run, daemon=True, name=type(t).__name__) for t in transports
    ]
    for thread in threads:
        thread.start()
    where = ", ".join(_where(t) for t in transports)
    log.info("serving generation %d on %s", guards.current.number, where)
    if ready is not None:
        ready(where)
    while not stop.wait(0.25):
        if any(t.closed.is_set() for t in transports):
            log.info("a transport closed: stopping")
            break
        if listen.idle_exit and time.monotonic() - activity.last > listen.idle_exit:
            log.info("idle for %g s: stopping", listen.idle_exit)
            break
    stop.set()
    for t in transports:
        t.stop(GRACE_SECONDS)
    guards.close()
    return 0


def _install_signals(stop: threading.Event, guards: GuardSet) -> None:
    """``SIGTERM``/``SIGINT`` stop the service; ``SIGHUP`` reloads (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        return

    def on_stop(signum: int, frame: Any) -> None:
        stop.set()

    def on_hup(signum: int, frame: Any) -> None:
        guards.request_reload()

    signal.signal(signal.SIGTERM, on_stop)
    signal.signal(signal.SIGINT, on_stop)
    if hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, on_hup)


def _where(transport: Transport) -> str:
    """Where a transport listens, for the log (an HTTP port 0 says which port it got)."""
    path = getattr(transport, "path", None)
    if path is not None:
        return f"unix:{path}"
    address = getattr(transport, "address", None)
    return f"http://{address}" if address is not None else "stdio"
