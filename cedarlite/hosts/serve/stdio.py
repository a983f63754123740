"""``cedarlite serve --stdio``: the protocol as JSON lines on the standard streams, for a host
that spawns the service as its child (the OpenClaw plugin).

One request per line on stdin, its answer one line on stdout, in order (requests are answered
one after the other: a host that needs several in flight opens the socket or HTTP transport).
A line over the limit is answered with an error and skipped to its end; the service ends at
the end of stdin. Anything else the process prints goes to stderr: fd 1 is the protocol's
alone.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import BinaryIO

from .protocol import Service, encode, too_large

_CHUNK = 64 * 1024


def protocol_streams() -> tuple[BinaryIO, BinaryIO]:
    """The process's stdin and a private copy of its stdout for the protocol; fd 1 (and
    ``sys.stdout``) then point at stderr, so that a stray print cannot corrupt the wire."""
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return sys.stdin.buffer, out


class StdioTransport:
    """Answers the lines of ``stdin`` on ``stdout`` (a thread's loop: :meth:`run`)."""

    def __init__(self, service: Service, stdin: BinaryIO, stdout: BinaryIO, limit: int) -> None:
        self.service = service
        self.stdin = stdin
        self.stdout = stdout
        self.limit = limit
        #: Held while a request is being answered (shutdown waits for it).
        self.busy = threading.Lock()
        self.closed = threading.Event()

    def run(self) -> None:
        """Answer every line until the end of stdin (then :attr:`closed` is set)."""
        try:
            while True:
                line = self.stdin.readline(self.limit + 1)
                if not line:
                    return
                with self.busy:
                    if len(line) > self.limit and not line.endswith(b"\n"):
                        self._skip_line()
                        answer = encode(too_large(self.limit).answer())
                    else:
                        answer = self.service.answer_line(line)
                    self.stdout.write(answer)
                    self.stdout.flush()
        except (OSError, ValueError):  # the host closed a stream: nothing more to answer
            return
        finally:
            self.closed.set()

    def _skip_line(self) -> None:
        """Read past the rest of an over-long line (in bounded chunks)."""
        while True:
            chunk = self.stdin.readline(_CHUNK)
            if not chunk or chunk.endswith(b"\n"):
                return

    def stop(self, grace: float) -> None:
        """Wait (at most ``grace`` seconds) for the request being answered."""
        if self.busy.acquire(timeout=grace):
            self.busy.release()
