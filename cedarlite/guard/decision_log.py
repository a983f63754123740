"""The decision log: one JSON line per guard decision, appended atomically.

The format (version 1) is a contract with the tools that read it (replaying a log against a
changed policy); docs/guard.md ("The decision log") documents every key. This module writes it:

* :class:`DecisionLog` appends whole lines to a file opened ``O_APPEND`` under an exclusive
  ``flock``, so lines from several processes never interleave; a write that fails half-way is
  cut back to the last whole line, and the error is raised to the guard, which then blocks
  the call (an unlogged decision never becomes an allow);
* :func:`policy_hash` identifies the policy inputs across processes;
* :func:`log_line` renders one decision.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from . import _json
from .redact import scrub_text

try:  # pragma: no cover - every POSIX system has it
    import fcntl
except ImportError:  # pragma: no cover - Windows: O_APPEND alone
    fcntl = None  # type: ignore[assignment]

#: The format version written in ``v``.
VERSION = 1

#: Params and context nested deeper than this are cut (``"[TRUNCATED]"``, listed in
#: ``redacted``): deeper than the guard accepts, so a replay still refuses them, and shallow
#: enough for JSON parsers that recurse.
LOG_DEPTH = _json.MAX_PARAM_DEPTH + 44

_escape = _json.escape


class DecisionLog:
    """An append-only JSON Lines file (created owner-only, ``0600``: it holds call arguments).

    :meth:`append` writes one line or raises ``OSError``; it never leaves a partial line.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
        self._fd: int | None = os.open(self.path, flags, 0o600)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<DecisionLog {self.path!r}{' (closed)' if self._fd is None else ''}>"

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._fd is None

    def append(self, line: str) -> None:
        """Append ``line`` (no newline in it) and a newline, atomically."""
        data = (line + "\n").encode("ascii")
        with self._lock:
            fd = self._fd
            if fd is None:
                raise OSError("the decision log is closed")
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                written = 0
                try:
                    while written < len(data):
                        written += os.write(fd, data[written:] if written else data)
                except BaseException:
                    # Never leave half a line for the next writer: under the lock, the file
                    # grew by our bytes alone. (Not a regular file: nothing to cut.)
                    if written:
                        with contextlib.suppress(OSError):
                            os.ftruncate(fd, os.fstat(fd).st_size - written)
                    raise
            finally:
                if fcntl is not None:
                    fcntl.flock(fd, fcntl.LOCK_UN)

    def close(self) -> None:
        """Close the file; later appends raise (and the guard blocks those calls)."""
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def __del__(self) -> None:
        # A guard built per run and dropped without close() must not leak its descriptor.
        fd = getattr(self, "_fd", None)
        if fd is not None:
            self._fd = None
            with contextlib.suppress(OSError):
                os.close(fd)


def redacted_json(value: Any, prefix: str) -> tuple[str, list[str]]:
    """The JSON text of params or context as the log writes it, and the redacted pointers."""
    return _json.encode(value, redact=True, prefix=prefix, cut_depth=LOG_DEPTH)


def policy_hash(config: Any, tools: Any, rules_text: str) -> str:
    """``sha256:<hex>`` of the canonical JSON of ``[config, tools, rules text]``."""
    return "sha256:" + _json.sha256(_json.stable([config, tools, rules_text]))


def timestamp(seconds: float) -> str:
    """RFC 3339 UTC with microseconds: ``2026-12-01T08:36:16.123456Z``."""
    whole = int(seconds // 1)
    micros = round((seconds - whole) * 1e6)
    if micros == 1_000_000:
        whole, micros = whole + 1, 0
    return f"{_second(whole)}.{micros:06d}Z"


@lru_cache(maxsize=4)
def _second(whole: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole))


def _safe(value: str) -> str:
    """A text of the log as JSON, credentials scrubbed."""
    return _escape(scrub_text(value))


def _text(value: str | None) -> str:
    return "null" if value is None else _safe(value)


def _texts(values: Sequence[str]) -> str:
    return "[" + ",".join([_safe(v) for v in values]) + "]"


def log_line(
    *,
    ts: float,
    session: str | None,
    run: str | None,
    call_id: str | None,
    agent: str,
    tool: str,
    plugin: str | None,
    params_json: str,
    redacted: Sequence[str],
    context_json: str,
    decision: str,
    denied_reason: str | None,
    reason: str | None,
    policies: Sequence[str],
    errors: Sequence[tuple[str, str]],
    params_rewritten: bool,
    latency_us: int,
    policy_hash: str,
    approvals: Sequence[Mapping[str, Any]],
    error: str | None,
) -> str:
    """One line of the log (keys in the documented order; ``approvals`` and ``error`` are
    cedarlite's additions to version 1). Credentials are scrubbed from every text, not only
    from ``params_json`` and ``context_json`` (which the caller redacted): a reason or an error
    message may quote an argument, an approval its description."""
    failed = ",".join([f'{{"policy":{_safe(p)},"message":{_safe(m)}}}' for p, m in errors])
    approvals_json = _json.encode(list(approvals), redact=True)[0] if approvals else "[]"
    return (
        f'{{"v":{VERSION},"ts":"{timestamp(ts)}","session":{_text(session)},'
        f'"run":{_text(run)},"call_id":{_text(call_id)},"agent":{_safe(agent)},'
        f'"tool":{_safe(tool)},"plugin":{_text(plugin)},"params":{params_json},'
        f'"redacted":{_texts(redacted)},"context":{context_json},"decision":{_escape(decision)},'
        f'"denied_reason":{_text(denied_reason)},"reason":{_text(reason)},'
        f'"policies":{_texts(policies)},"errors":[{failed}],'
        f'"params_rewritten":{"true" if params_rewritten else "false"},'
        f'"latency_us":{int(latency_us)},"policy_hash":{_escape(policy_hash)},'
        f'"approvals":{approvals_json},"error":{_text(error)}}}'
    )
