"""``cedarlite serve --socket PATH``: the protocol's JSON lines over a Unix socket.

The socket's directory is created 0700 if missing and checked like cedarlite's caches (owned
by this user, writable by no one else, not a symbolic link); the socket itself is made 0600,
and every peer is checked by uid with ``SO_PEERCRED``: a process of another user is closed
without an answer. Each connection has its own thread and sends any number of requests, one
line each, answered in order; a slow or stalled client holds only its own thread (a request
line must arrive whole within :data:`LINE_SECONDS`, an idle connection is closed after
:data:`IDLE_SECONDS`), and at most :data:`MAX_CONNECTIONS` are open at once.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import stat
import struct
import threading
import time
from typing import NamedTuple

from ... import _cache_dir, _log
from ...errors import CacheError
from .protocol import Service, encode, too_large

log = _log.get_logger("cedarlite.serve")

#: Connections served at once; one more is answered with an error and closed.
MAX_CONNECTIONS = 256

#: A request line must arrive whole within this many seconds of its first byte.
LINE_SECONDS = 30.0

#: A connection with no request for this long is closed.
IDLE_SECONDS = 600.0

_CHUNK = 256 * 1024
_UCRED = struct.Struct("3i")  # struct ucred: pid, uid, gid


class SocketError(CacheError):
    """A socket path the service may not listen on."""

    code = "E0968"


def peer_uid(conn: socket.socket) -> int | None:
    """The uid of the process at the other end (``SO_PEERCRED``; ``None`` where the system
    does not tell)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    data = conn.getsockopt(socket.SOL_SOCKET, option, _UCRED.size)
    return int(_UCRED.unpack(data)[1])


class Claim(NamedTuple):
    """A socket path this process may listen on: absolute, in a private directory, its lock
    (``PATH.lock``, held with ``flock`` while the process lives; it holds the process id)
    taken."""

    path: str
    lock: int

    def failed(self, error: str | None) -> None:
        """Record that the service for this socket could not start (``PATH.failed``, with
        the error), or, with ``None``, that it did: a hook does not start another within
        :data:`~cedarlite.hosts.serve.client.RETRY_SECONDS` of a failure."""
        marker = self.path + ".failed"
        with contextlib.suppress(OSError):
            if error is None:
                os.unlink(marker)
            else:
                flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
                fd = os.open(marker, flags, 0o600)
                try:
                    os.write(fd, error.encode("utf-8", "replace")[:65536])
                finally:
                    os.close(fd)


def claim(path: str) -> Claim:
    """Claim the socket path ``path``: its directory private (created 0700), the lock taken
    (one service per socket) and a stale socket removed; raises :class:`SocketError`."""
    full = os.path.abspath(path)
    directory = os.path.dirname(full)
    try:
        _cache_dir.ensure_private(directory)
    except CacheError as err:
        message = f"the socket's directory is not private: {err.message}"
        raise SocketError(message, source=directory) from None
    if len(os.fsencode(full)) >= 104:  # sun_path: 108 bytes on Linux, 104 on the BSDs
        raise SocketError("the socket path is too long (at most 103 bytes)", source=full)
    flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
    try:
        lock = os.open(full + ".lock", flags, 0o600)
    except OSError as err:
        raise SocketError(f"cannot open the socket's lock: {err.strerror}", source=full) from None
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(lock)
        raise SocketError("another service is serving this socket", source=full) from None
    os.ftruncate(lock, 0)
    os.write(lock, f"{os.getpid()}\n".encode())  # who holds it (to stop it: kill PID)
    try:
        st = os.lstat(full)
    except FileNotFoundError:
        return Claim(full, lock)
    if not stat.S_ISSOCK(st.st_mode):
        os.close(lock)
        raise SocketError("the path exists and is not a socket", source=full)
    os.unlink(full)  # stale: the service that made it is gone (it held the lock)
    return Claim(full, lock)


class UnixTransport:
    """Serves a Unix socket (bound at construction): :meth:`run` accepts, :meth:`stop`
    stops."""

    def __init__(self, service: Service, claimed: Claim, limit: int) -> None:
        self.service = service
        self.limit = limit
        self.path = claimed.path
        self.claimed = claimed
        self.uid = os.geteuid()
        self.closed = threading.Event()
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._connections: set[socket.socket] = set()
        self._busy = 0
        self._idle = threading.Condition(self._lock)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            sock.bind(self.path)
        finally:
            os.umask(old)
        os.chmod(self.path, 0o600)
        sock.listen(128)
        sock.settimeout(0.25)
        self.sock = sock
        self.stat = os.stat(self.path)

    def run(self) -> None:
        """Accept connections until :meth:`stop`."""
        while not self._stopping.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                if self._stopping.is_set():
                    return
                time.sleep(0.05)  # out of descriptors, say: try again shortly
                continue
            uid = peer_uid(conn)
            if uid is not None and uid != self.uid:
                log.warning(
                    "refused a connection from uid %d (the service is uid %d)", uid, self.uid
                )
                conn.close()
                continue
            with self._lock:
                full = len(self._connections) >= MAX_CONNECTIONS
                if not full:
                    self._connections.add(conn)
            if full:
                with contextlib.suppress(OSError):
                    conn.settimeout(1.0)
                    conn.sendall(
                        encode({"error": {"code": "E0969", "message": "too many connections"}})
                    )
                conn.close()
                continue
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        """Answer one connection's lines until it closes, stalls or the service stops."""
        buf = bytearray()
        scanned = 0
        line_started = 0.0
        last = time.monotonic()  # the last answer (or the connection's start)
        try:
            while not self._stopping.is_set():
                nl = buf.find(b"\n", scanned)
                if nl >= 0:
                    line = bytes(buf[: nl + 1])
                    del buf[: nl + 1]
                    scanned = 0
                    line_started = time.monotonic() if buf else 0.0
                    if not self._answer(conn, line):
                        return
                    last = time.monotonic()
                    continue
                scanned = len(buf)
                if len(buf) > self.limit:
                    conn.sendall(encode(too_large(self.limit).answer()))
                    return  # the rest of the line is not worth reading
                if buf:
                    left = LINE_SECONDS - (time.monotonic() - line_started)
                    if left <= 0:
                        return  # a stalled request: the connection is closed
                    conn.settimeout(min(left, 1.0))
                else:
                    conn.settimeout(1.0)
                try:
                    chunk = conn.recv(_CHUNK)
                except TimeoutError:
                    if not buf and time.monotonic() - last > IDLE_SECONDS:
                        return
                    continue
                if not chunk:
                    return  # the client went away (a partial request is dropped)
                if not buf:
                    line_started = time.monotonic()
                buf += chunk
        except OSError:
            return  # the client went away mid-answer
        finally:
            with self._lock:
                self._connections.discard(conn)
            conn.close()

    def _answer(self, conn: socket.socket, line: bytes) -> bool:
        """Answer one line; ``False`` when the service is stopping (not answered)."""
        with self._lock:
            if self._stopping.is_set():
                return False
            self._busy += 1
        try:
            answer = self.service.answer_line(line)
            conn.settimeout(LINE_SECONDS)  # a client that does not read its answer is dropped
            conn.sendall(answer)
            return True
        finally:
            with self._lock:
                self._busy -= 1
                self._idle.notify_all()

    def stop(self, grace: float) -> None:
        """Stop accepting, wait (at most ``grace`` seconds) for the requests being answered,
        close every connection and remove the socket file."""
        self._stopping.set()
        with contextlib.suppress(OSError):
            self.sock.close()
        with self._lock:
            self._idle.wait_for(lambda: self._busy == 0, timeout=grace)
            connections = list(self._connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            st = os.lstat(self.path)
            if (st.st_ino, st.st_dev) == (self.stat.st_ino, self.stat.st_dev):
                os.unlink(self.path)  # ours
        with contextlib.suppress(OSError):
            os.close(self.claimed.lock)
