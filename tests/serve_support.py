"""Shared by the tests of ``cedarlite serve`` (tests/test_serve*.py): the configuration and
payloads every transport is checked on, the in-process guard's answers to them (built here
with the public API, not with the service's code), and a service process started and stopped
by process id."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cedarlite.guard import Guard, MemorySessionStore, Outcome

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = json.loads((ROOT / "examples" / "coding-agent.json").read_text())
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
RULES = "cedarlite:exec-commands"
LOOPS = {"enabled": True, "warningThreshold": 2, "criticalThreshold": 3}

#: A request's context replaces the file's: these select other agents, providers, channels.
CONTEXTS: list[dict[str, Any] | None] = [
    None,
    {"agentId": "reviewer", "senderIsOwner": True},
    {"agentId": "coder", "provider": "openai", "model": "gpt-5", "senderIsOwner": True},
    {"agentId": "coder", "channel": "discord", "groupId": "g1", "senderIsOwner": False},
]


def config_file(directory: Path, *, loops: bool = True) -> Path:
    """The shipped coding-agent scenario as a serve configuration (``calls`` left out), with
    loop detection on."""
    config = json.loads(json.dumps(EXAMPLE["config"]))
    if loops:
        config["tools"]["loopDetection"] = LOOPS
    data = {"config": config, "tools": EXAMPLE["tools"], "context": EXAMPLE["context"]}
    path = directory / "serve.json"
    path.write_text(json.dumps(data, indent=1))
    return path


def payloads() -> list[dict[str, Any]]:
    """``before_tool_call`` requests: the scenario's calls in every context, and hostile
    shapes (params that are no object, odd names, a call without a session)."""
    out: list[dict[str, Any]] = []
    calls = [*EXAMPLE["calls"], {"tool": "exec", "params": {"command": "cat ~/.ssh/id_rsa"}}]
    calls += [
        {"tool": "exec", "params": "ls"},
        {"tool": "EXEC", "params": {"command": "ls"}},
        {"tool": "no_such_tool", "params": {}},
        {"tool": 7, "params": {}},
        {"tool": "read", "params": {"path": "/etc/passwd", "x": [1, {"y": None}]}},
        {"tool": "github__create_issue", "params": {"repo": "a/b", "title": "t"}},
        {"tool": "github__delete_repo", "params": {"repo": "a/b"}},
    ]
    for ci, context in enumerate(CONTEXTS):
        for i, c in enumerate(calls):
            call = {"sessionKey": f"s{ci}", "toolCallId": f"c{ci}-{i}", "runId": "r1"}
            request = {"tool": c["tool"], "params": c.get("params", {}), "call": call}
            if context is not None:
                request["context"] = context
            out.append(request)
    return out


def in_process_guard(config: Path, context: dict[str, Any] | None = None) -> Guard:
    """The guard an embedding host would build from the same files (the public API)."""
    data = json.loads(config.read_text())
    from cedarlite.shipped import resolve

    return Guard(
        data["config"],
        data["tools"],
        data["context"] if context is None else context,
        rules=[resolve(RULES)],
        session_store=MemorySessionStore(),
    )


def expected_answer(outcome: Outcome) -> dict[str, Any]:
    """The documented answer of ``before_tool_call`` for an outcome (docs/service.md)."""
    out: dict[str, Any] = {
        "action": outcome.action,
        "params": outcome.params,
        "reason": outcome.reason,
        "deniedReason": outcome.denied_reason,
        "policies": list(outcome.policies),
    }
    if outcome.action == "ask":
        out["approval"] = {
            **outcome.approval.to_json(),
            "policies": list(outcome.approval.policies),
        }
    return json.loads(json.dumps(out))


def in_process_answers(config: Path, requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The in-process guards' answers to ``requests`` (one guard per context, as the
    service keeps them)."""
    guards: dict[str, Guard] = {}
    out = []
    for r in requests:
        key = json.dumps(r.get("context"), sort_keys=True)
        if key not in guards:
            guards[key] = in_process_guard(config, r.get("context"))
        outcome = guards[key].before_tool_call(r["tool"], r["params"], r["call"])
        out.append(expected_answer(outcome))
    return out


def serve_args(config: Path, *more: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "cedarlite",
        "serve",
        "--config",
        str(config),
        "--rules",
        RULES,
        *more,
    ]


@contextlib.contextmanager
def process(args: list[str], **kwargs: Any) -> Iterator[subprocess.Popen[bytes]]:
    """A process, stopped by its id when the block ends (SIGTERM, then SIGKILL)."""
    proc = subprocess.Popen(args, env=kwargs.pop("env", ENV), **kwargs)
    try:
        yield proc
    finally:
        stop(proc)


def stop(proc: subprocess.Popen[bytes], timeout: float = 15) -> int:
    """SIGTERM the process by id; SIGKILL it if it has not exited within ``timeout``."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
    return proc.returncode


class Lines:
    """The lines a process writes on a stream, read by a thread (so reads time out)."""

    def __init__(self, stream: Any) -> None:
        self.queue: queue.Queue[bytes] = queue.Queue()
        self.thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self.thread.start()

    def _read(self, stream: Any) -> None:
        for line in iter(stream.readline, b""):
            self.queue.put(line)
        self.queue.put(b"")

    def next(self, timeout: float = 20) -> bytes:
        return self.queue.get(timeout=timeout)

    def json(self, timeout: float = 20) -> dict[str, Any]:
        line = self.next(timeout)
        assert line, "the stream ended"
        value = json.loads(line)
        assert isinstance(value, dict)
        return value


class StdioService:
    """``cedarlite serve --stdio`` as a child: :meth:`ask` writes one request line and
    reads its answer."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.lines = Lines(proc.stdout)
        self.next_id = 0

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def ask(self, op: str, timeout: float = 30, **fields: Any) -> dict[str, Any]:
        self.next_id += 1
        self.send(json.dumps({"id": self.next_id, "op": op, **fields}).encode() + b"\n")
        answer = self.lines.json(timeout)
        assert answer.pop("id") == self.next_id
        return answer


@contextlib.contextmanager
def stdio_service(config: Path, *more: str) -> Iterator[StdioService]:
    args = serve_args(config, "--stdio", *more)
    with process(
        args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as proc:
        errors = Lines(proc.stderr)
        service = StdioService(proc)
        service.errors = errors  # type: ignore[attr-defined]
        yield service


def wait_for(predicate: Any, timeout: float = 10, step: float = 0.05) -> bool:
    """Poll ``predicate`` until it is true or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return bool(predicate())


# ---------------------------------------------------------------------------------------------
# The socket and HTTP transports


class SocketClient:
    """One connection to ``serve --socket``: :meth:`ask` sends a request line, reads its
    answer line."""

    def __init__(self, path: str, timeout: float = 30) -> None:
        import socket

        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.reader = self.sock.makefile("rb")
        self.next_id = 0

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def line(self) -> dict[str, Any]:
        line = self.reader.readline()
        assert line, "the service closed the connection"
        value = json.loads(line)
        assert isinstance(value, dict)
        return value

    def ask(self, op: str, **fields: Any) -> dict[str, Any]:
        self.next_id += 1
        self.send(json.dumps({"id": self.next_id, "op": op, **fields}).encode() + b"\n")
        answer = self.line()
        assert answer.pop("id") == self.next_id
        return answer

    def close(self) -> None:
        self.reader.close()
        self.sock.close()


def short_dir() -> Path:
    """A private directory with a short path (a socket path has at most 107 bytes)."""
    import tempfile

    return Path(tempfile.mkdtemp(prefix="cl-serve-", dir="/tmp"))


@contextlib.contextmanager
def socket_service(
    config: Path, *more: str, path: Path | None = None
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """``serve --socket`` on a socket in a fresh private directory, ready (it answers
    ``health``); stopped by process id."""
    import shutil

    directory = short_dir() if path is None else None
    sock = str(path if path is not None else directory / "s.sock")  # type: ignore[operator]
    args = serve_args(config, "--socket", sock, *more)
    try:
        with process(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as proc:
            errors = Lines(proc.stderr)

            def ready() -> bool:
                assert proc.poll() is None, b"".join(errors.queue.queue).decode()
                try:
                    client = SocketClient(sock, timeout=5)
                except OSError:
                    return False
                client.close()
                return True

            assert wait_for(ready, timeout=60)
            proc.errors = errors  # type: ignore[attr-defined]
            yield proc, sock
    finally:
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)


@contextlib.contextmanager
def http_service(config: Path, *more: str) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """``serve --http 127.0.0.1:0``, ready; yields the process and ``host:port``."""
    import re

    args = serve_args(config, "--http", "127.0.0.1:0", *more)
    with process(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as proc:
        errors = Lines(proc.stderr)
        while True:
            line = errors.next(timeout=60)
            assert line, "the service ended"
            found = re.search(rb"http://([0-9.]+:[0-9]+)", line)
            if found:
                break
        proc.errors = errors  # type: ignore[attr-defined]
        yield proc, found.group(1).decode()


def http_ask(
    address: str,
    op: str,
    body: Any = None,
    *,
    method: str = "POST",
    headers: dict[str, str] | None = None,
    raw: bytes | None = None,
) -> tuple[int, dict[str, Any]]:
    """One HTTP request (a new connection); the status and the JSON answer."""
    import http.client

    host, port = address.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        conn.request(method, f"/v1/{op}", body=data, headers=headers or {})
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()
