"""``cedarlite serve --http`` end to end (uvicorn): the same payloads as the in-process guard,
the status codes of the contract, the bearer token, concurrent and slow clients. Each test
starts the service and stops it by process id."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from serve_support import (
    ENV,
    config_file,
    http_ask,
    http_service,
    in_process_answers,
    payloads,
    serve_args,
    stop,
)


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return config_file(tmp_path)


def test_answers_are_the_in_process_guards(config: Path) -> None:
    requests = payloads()
    expected = in_process_answers(config, requests)
    with http_service(config) as (_, address):
        answers = [http_ask(address, "before_tool_call", r) for r in requests]
    assert {status for status, _ in answers} == {200}
    assert [a for _, a in answers] == expected


def test_concurrent_clients(config: Path) -> None:
    requests = payloads()
    expected = in_process_answers(config, requests)

    def one_client(address: str) -> list[dict[str, object]]:
        return [http_ask(address, "before_tool_call", r)[1] for r in requests]

    with http_service(config) as (_, address), ThreadPoolExecutor(8) as pool:
        results = list(pool.map(one_client, [address] * 8))
    assert all(r == expected for r in results)


def test_status_codes(config: Path, tmp_path: Path) -> None:
    call = {"sessionKey": "s", "toolCallId": "c"}
    with http_service(config, "--max-request-bytes", "10000") as (_, address):
        status, health = http_ask(address, "health", method="GET")
        assert status == 200 and health["ok"] is True
        assert http_ask(
            address, "after_tool_call", {"tool": "exec", "params": {}, "call": call}
        ) == (200, {"ok": True})
        # Errors on before_tool_call: HTTP 200 and a block (never a status a host could read
        # as "no opinion").
        for body in (
            {"tool": "exec", "params": {}},
            {"tool": "exec", "params": {}, "call": call, "extra": 1},
        ):
            status, answer = http_ask(address, "before_tool_call", body)
            assert status == 200 and answer["action"] == "block" and "error" in answer
        status, answer = http_ask(address, "before_tool_call", raw=b"{not json")
        assert status == 200 and answer["action"] == "block"
        status, answer = http_ask(address, "before_tool_call", raw=b"x" * 20_000)
        assert status == 200 and answer["error"]["code"] == "E0961"
        # The OpenClaw plugin's decision too.
        for raw in (b"{not json", b"x" * 20_000, b'{"event": {"toolName": "exec"}}', b"[1]"):
            status, answer = http_ask(address, "openclaw_before_tool_call", raw=raw)
            assert status == 200 and answer["action"] == "block", raw
        # Other operations: 4xx with an error answer.
        assert http_ask(address, "after_tool_call", {"tool": "exec"})[0] == 400
        assert (
            http_ask(
                address,
                "is_authorized",
                {"principal": 'U::"a"', "action": 'A::"b"', "resource": 'R::"c"'},
            )[0]
            == 409
        )
        assert http_ask(address, "health", raw=b"[1]")[0] == 400
        assert http_ask(address, "reload", raw=b"x" * 20_000)[0] == 413
        assert http_ask(address, "nothing", {})[0] == 404
        assert http_ask(address, "claude_code_hook", {"input": "{}"})[0] == 404
        assert http_ask(address, "before_tool_call", method="GET")[0] == 405
        # A reload whose file is broken: 422, naming the file; the old set serves on.
        good = config.read_text()
        config.write_text("{")
        status, answer = http_ask(address, "reload")
        assert status == 422 and answer["error"]["file"] == str(config)
        assert http_ask(address, "health", method="GET")[1]["broken"]["file"] == str(config)
        config.write_text(good)
        status, answer = http_ask(address, "reload")
        assert status == 200 and answer["ok"] is True


def test_token(config: Path, tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("s3cret-token\n")
    ask = {"tool": "exec", "params": {"command": "ls"}, "call": {"sessionKey": "s"}}
    with http_service(config, "--token-file", str(token)) as (_, address):
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret-token"}):
            status, answer = http_ask(address, "before_tool_call", ask, headers=headers)
            assert status == 401 and "action" not in answer
        assert http_ask(address, "health", method="GET")[0] == 401
        good = {"Authorization": "Bearer s3cret-token"}
        status, answer = http_ask(address, "before_tool_call", ask, headers=good)
        assert status == 200 and answer["action"] == "allow"


def test_non_loopback_needs_a_token(config: Path, tmp_path: Path) -> None:
    run = subprocess.run(
        serve_args(config, "--http", "0.0.0.0:0"), capture_output=True, env=ENV, timeout=60
    )
    assert run.returncode == 2 and b"--token-file" in run.stderr
    empty = tmp_path / "empty"
    empty.write_text("")
    run = subprocess.run(
        serve_args(config, "--http", "127.0.0.1:0", "--token-file", str(empty)),
        capture_output=True,
        env=ENV,
        timeout=60,
    )
    assert run.returncode == 3 and b"one token" in run.stderr


def test_slow_and_vanishing_clients_do_not_delay_others(config: Path) -> None:
    ask = {"tool": "exec", "params": {"command": "ls"}, "call": {"sessionKey": "s"}}
    with http_service(config) as (proc, address):
        host, port = address.split(":")
        slow = []
        for _ in range(20):  # headers sent, the body promised and never sent
            s = socket.create_connection((host, int(port)), timeout=10)
            s.sendall(
                b"POST /v1/before_tool_call HTTP/1.1\r\nHost: x\r\n"
                b'Content-Length: 1000\r\n\r\n{"tool"'
            )
            slow.append(s)
        gone = socket.create_connection((host, int(port)), timeout=10)
        body = json.dumps(ask).encode()
        gone.sendall(
            b"POST /v1/before_tool_call HTTP/1.1\r\nHost: x\r\nContent-Length: "
            + str(len(body)).encode()
            + b"\r\n\r\n"
            + body
        )
        gone.close()
        started = time.monotonic()
        status, answer = http_ask(address, "before_tool_call", ask)
        assert time.monotonic() - started < 5
        assert status == 200 and answer["action"] == "allow"
        for s in slow:
            s.close()
        assert proc.poll() is None
        assert stop(proc) == 0


def test_a_request_head_over_the_limit_is_refused(config: Path) -> None:
    with http_service(config) as (proc, address):
        host, port = address.split(":")
        s = socket.create_connection((host, int(port)), timeout=30)
        s.sendall(b"POST /v1/health HTTP/1.1\r\nHost: x\r\n")
        try:
            for _ in range(64):  # 1 MiB of headers
                s.sendall(b"X-Pad: " + b"x" * 16_000 + b"\r\n")
        except OSError:
            pass  # the service closed the connection as it should
        answer = b""
        try:
            while chunk := s.recv(65536):
                answer += chunk
        except TimeoutError:
            raise AssertionError("the service kept reading the head") from None
        except ConnectionResetError:
            pass  # closed with our bytes unread: the 400 may be lost with them
        s.close()
        assert answer.startswith(b"HTTP/1.1 400") or answer == b"", answer[:100]
        status, health = http_ask(address, "health", method="GET")
        assert status == 200 and health["ok"] is True and proc.poll() is None
