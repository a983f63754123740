"""``cedarlite serve --socket PATH`` end to end: the same payloads as the in-process guard,
concurrent clients (threads and processes), reloads under load, the faults of the issue, and
the socket's permission checks. Each test starts the service and stops it by process id."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from serve_support import (
    ENV,
    SocketClient,
    config_file,
    in_process_answers,
    payloads,
    serve_args,
    short_dir,
    socket_service,
    stop,
    wait_for,
)

OTHER_UID = 65534  # nobody


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return config_file(tmp_path)


def test_answers_are_the_in_process_guards(config: Path) -> None:
    requests = payloads()
    expected = in_process_answers(config, requests)
    with socket_service(config) as (_, path):
        client = SocketClient(path)
        answers = [client.ask("before_tool_call", **r) for r in requests]
        client.close()
    assert answers == expected


def test_concurrent_threads(config: Path) -> None:
    requests = payloads()
    expected = in_process_answers(config, requests)

    def one_client(path: str) -> list[dict[str, object]]:
        client = SocketClient(path)
        try:
            return [client.ask("before_tool_call", **r) for r in requests]
        finally:
            client.close()

    with socket_service(config) as (_, path), ThreadPoolExecutor(8) as pool:
        results = list(pool.map(one_client, [path] * 8))
    assert all(r == expected for r in results)


CLIENT = """
import json, socket, sys
path, requests = sys.argv[1], json.loads(sys.stdin.read())
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.settimeout(30)
sock.connect(path)
reader = sock.makefile("rb")
out = []
for i, r in enumerate(requests):
    sock.sendall(json.dumps({"id": i, "op": "before_tool_call", **r}).encode() + b"\\n")
    answer = json.loads(reader.readline())
    assert answer.pop("id") == i
    out.append(answer)
print(json.dumps(out))
"""


def test_concurrent_processes(config: Path) -> None:
    requests = payloads()
    expected = in_process_answers(config, requests)
    with socket_service(config) as (_, path):
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", CLIENT, path],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=ENV,
            )
            for _ in range(4)
        ]
        try:
            outputs = [p.communicate(json.dumps(requests).encode(), timeout=120)[0] for p in procs]
        finally:
            for p in procs:
                stop(p)
    assert all(p.returncode == 0 for p in procs)
    assert all(json.loads(out) == expected for out in outputs)


def test_reload_under_load_never_shows_half_a_set(config: Path) -> None:
    # Two valid versions: browser allowed (v1) or denied (v2). Every answer during reloads
    # must be one of the two, whole.
    v1 = json.loads(config.read_text())
    v2 = json.loads(config.read_text())
    v2["config"]["tools"]["deny"].append("browser")
    ask = {"tool": "browser", "params": {}, "call": {"sessionKey": "s"}}
    answers: list[dict[str, object]] = []
    done = threading.Event()

    def load(path: str) -> None:
        client = SocketClient(path)
        while not done.is_set():
            answers.append(client.ask("before_tool_call", **ask))
        client.close()

    with socket_service(config) as (_, path):
        threads = [threading.Thread(target=load, args=(path,)) for _ in range(4)]
        for t in threads:
            t.start()
        admin = SocketClient(path)
        try:
            for i in range(8):
                config.write_text(json.dumps(v2 if i % 2 == 0 else v1))
                assert admin.ask("reload")["ok"] is True
        finally:
            done.set()
            for t in threads:
                t.join(60)
        admin.close()
    kinds = {(a["action"], a["deniedReason"]) for a in answers}
    assert kinds == {("allow", None), ("block", "not-offered")}
    assert all("error" not in a for a in answers)


def test_faults_leave_the_service_and_other_clients_answered(config: Path) -> None:
    ask = {"tool": "exec", "params": {"command": "ls"}, "call": {"sessionKey": "s"}}
    with socket_service(config, "--max-request-bytes", "100000") as (proc, path):
        good = SocketClient(path)
        # Bad JSON and unknown fields: error answers, the connection goes on.
        good.send(b"{nope\n")
        assert "invalid JSON" in good.line()["error"]["message"]
        assert "unknown field" in good.ask("health", x=1)["error"]["message"]
        # A slow client (half a request, then nothing) never delays another's answer.
        slow = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        slow.connect(path)
        slow.sendall(b'{"id": 1, "op": "before_tool_call", "tool": "ex')
        started = time.monotonic()
        assert good.ask("before_tool_call", **ask)["action"] == "allow"
        assert time.monotonic() - started < 5
        # A client that disconnects mid-request (and one mid-line).
        for data in (
            json.dumps({"id": 1, "op": "before_tool_call", **ask}).encode() + b"\n",
            b'{"id": 2, "op": "hea',
        ):
            gone = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            gone.connect(path)
            gone.sendall(data)
            gone.close()
        # An over-long line: an error answer, then the connection is closed.
        big = SocketClient(path)
        big.send(b'{"id": 3, "op": "health", "pad": "' + b"x" * 200_000)
        assert big.line()["error"]["code"] == "E0961"
        assert big.reader.readline() == b""
        big.close()
        assert good.ask("health")["ok"] is True
        assert proc.poll() is None
        slow.close()
        good.close()


def test_sigterm_stops_gracefully_and_removes_the_socket(config: Path) -> None:
    with socket_service(config) as (proc, path):
        client = SocketClient(path)
        assert client.ask("health")["ok"]
        assert stop(proc) == 0
        assert not os.path.exists(path)
        assert client.reader.readline() == b""  # its connection was closed
        client.close()


def test_one_service_per_socket(config: Path) -> None:
    with socket_service(config) as (proc, path):
        second = subprocess.run(
            serve_args(config, "--socket", path), capture_output=True, env=ENV, timeout=60
        )
        assert second.returncode == 3
        assert b"another service is serving this socket" in second.stderr
        assert Path(path + ".lock").read_text().strip() == str(proc.pid)
        SocketClient(path).close()  # the first still serves


def test_a_stale_socket_is_replaced(config: Path) -> None:
    directory = short_dir()
    try:
        stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stale.bind(str(directory / "s.sock"))
        stale.close()  # the file stays, nobody listens
        with socket_service(config, path=directory / "s.sock") as (_, path):
            assert SocketClient(path).ask("health")["ok"]
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make files of another user")
def test_directory_checks(config: Path) -> None:
    directory = short_dir()
    try:
        for mode, owner, expected in (
            (0o777, 0, b"writable"),
            (0o700, OTHER_UID, b"belongs to uid"),
        ):
            os.chmod(directory, mode)
            os.chown(directory, owner, -1)
            run = subprocess.run(
                serve_args(config, "--socket", str(directory / "s.sock")),
                capture_output=True,
                env=ENV,
                timeout=60,
            )
            assert run.returncode == 3, run.stderr
            assert b"not private" in run.stderr and expected in run.stderr
        os.chown(directory, 0, -1)
        os.chmod(directory, 0o700)
        (directory / "s.sock").write_text("not a socket")
        run = subprocess.run(
            serve_args(config, "--socket", str(directory / "s.sock")),
            capture_output=True,
            env=ENV,
            timeout=60,
        )
        assert run.returncode == 3 and b"is not a socket" in run.stderr
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a client as another user")
def test_peers_of_another_uid_are_refused(config: Path) -> None:
    with socket_service(config) as (proc, path):
        # Open the way for the other user: only the uid check stands.
        os.chmod(os.path.dirname(path), 0o711)
        os.chmod(path, 0o666)
        assert _as_other_user(path) == b""  # closed, no answer
        assert wait_for(
            lambda: any(
                b"refused a connection from uid 65534" in line for line in proc.errors.queue.queue
            )
        )
        assert SocketClient(path).ask("health")["ok"]  # this user's clients are answered


def _as_other_user(path: str) -> bytes:
    """What a process of uid :data:`OTHER_UID` reads after sending ``health`` (a child forked
    from this one, its uid dropped)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 1
        try:
            os.close(read)
            os.setgid(OTHER_UID)
            os.setuid(OTHER_UID)
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(20)
            s.connect(path)
            try:
                s.sendall(b'{"id": 1, "op": "health"}\n')
                os.write(write, s.recv(100) or b"")
            except (ConnectionResetError, BrokenPipeError):  # closed before or after the send
                pass
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    try:
        data = b""
        while chunk := os.read(read, 100):
            data += chunk
    finally:
        os.close(read)
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    return data


def test_sighup_reloads(config: Path) -> None:
    with socket_service(config) as (proc, path):
        client = SocketClient(path)
        first = client.ask("health")["generation"]
        os.kill(proc.pid, signal.SIGHUP)
        assert wait_for(lambda: client.ask("health")["generation"] > first, timeout=5)
        client.close()


def test_sigterm_answers_the_request_in_flight(config: Path) -> None:
    # A reload takes a while (the set is parsed, compiled and validated again): SIGTERM
    # arrives while it runs, and its answer still comes before the service exits 0.
    with socket_service(config) as (proc, path):
        client = SocketClient(path)
        client.send(b'{"id": 1, "op": "reload"}\n')
        time.sleep(0.05)
        os.kill(proc.pid, signal.SIGTERM)
        answer = client.line()
        assert answer["id"] == 1 and answer["ok"] is True
        assert proc.wait(30) == 0
        client.close()
