"""``cedarlite serve --stdio`` end to end: the service as a child process speaking JSON lines,
as the OpenClaw plugin runs it. Each test starts the service and stops it by process id."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from serve_support import (
    ENV,
    config_file,
    in_process_answers,
    payloads,
    process,
    serve_args,
    stdio_service,
    stop,
    wait_for,
)


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return config_file(tmp_path)


def test_answers_are_the_in_process_guards(config: Path) -> None:
    requests = payloads()
    expected = in_process_answers(config, requests)
    with stdio_service(config) as service:
        answers = [service.ask("before_tool_call", **r) for r in requests]
    assert answers == expected
    assert {a["action"] for a in answers} == {"allow", "block"}


POLL = {"tool": "process", "params": {"action": "poll", "sessionId": "p1"}}
RUNNING = {"content": [{"type": "text", "text": "still running"}], "details": {"status": "running"}}


def test_loop_detection_across_calls(config: Path) -> None:
    # A process polled with no progress is vetoed (spec §11.2), as the in-process guard does.
    from serve_support import expected_answer, in_process_guard

    guard = in_process_guard(config)
    answers, expected = [], []
    with stdio_service(config) as service:
        for i in range(6):
            ids = {"sessionKey": "loop", "toolCallId": f"c{i}"}
            answers.append(service.ask("before_tool_call", **POLL, call=ids))
            expected.append(
                expected_answer(guard.before_tool_call(POLL["tool"], POLL["params"], ids))
            )
            done = service.ask("after_tool_call", **POLL, call=ids, result=RUNNING)
            guard.after_tool_call(POLL["tool"], POLL["params"], ids, result=RUNNING)
            assert done == {"ok": True}
        other = service.ask("before_tool_call", **POLL, call={"sessionKey": "other"})
    assert answers == expected
    assert answers[0]["action"] == "allow" and answers[-1]["deniedReason"] == "tool-loop"
    assert other["action"] == "allow"


def test_error_answers(config: Path) -> None:
    call = {"sessionKey": "s", "toolCallId": "c"}
    with stdio_service(config, "--max-request-bytes", "2000") as service:
        service.send(b"not json\n")
        bad = service.lines.json()
        assert bad["error"]["code"] == "E0960" and "invalid JSON" in bad["error"]["message"]
        service.send(b"[1, 2]\n")
        assert "JSON object" in service.lines.json()["error"]["message"]
        service.send(b'{"id": 1, "op": "before_tool_call", "id": 2}\n')
        assert "duplicate key" in service.lines.json()["error"]["message"]
        service.send(b"\xff\xfe\n")
        assert "UTF-8" in service.lines.json()["error"]["message"]
        unknown = service.ask("launch")
        assert unknown["error"]["code"] == "E0963"
        for missing in ("tool", "params", "call"):
            fields = {"tool": "exec", "params": {"command": "ls"}, "call": call}
            del fields[missing]
            answer = service.ask("before_tool_call", **fields)
            assert f"requires the field `{missing}`" in answer["error"]["message"]
            assert answer["action"] == "block"  # fail closed for a host that reads only this
            after = service.ask("after_tool_call", **fields)
            assert "error" in after and "action" not in after
        extra = service.ask("before_tool_call", tool="exec", params={}, call=call, user="x")
        assert "unknown field `user`" in extra["error"]["message"]
        assert extra["action"] == "block"
        odd_call = service.ask("before_tool_call", tool="exec", params={}, call={"session": "s"})
        assert "call.session" in odd_call["error"]["message"]
        context = service.ask(
            "before_tool_call", tool="exec", params={}, call=call, context={"agent": "x"}
        )
        assert context["action"] == "block" and "run context" in context["reason"]
        assert "error" in service.ask("health", verbose=True)
        # An over-long line is refused and skipped; the next request is answered.
        service.send(b'{"id": 9, "op": "health", "pad": "' + b"x" * 10_000 + b'"}\n')
        assert service.lines.json()["error"]["code"] == "E0961"
        assert service.ask("health")["ok"] is True
        assert (
            service.ask(
                "is_authorized", principal='User::"a"', action='Action::"r"', resource='R::"x"'
            )["error"]["code"]
            == "E0966"
        )


def test_is_authorized(config: Path, tmp_path: Path) -> None:
    policies = tmp_path / "p.cedar"
    policies.write_text(
        '@id("readers") permit(principal, action == Action::"read", resource) '
        'when { principal in Group::"readers" };\n'
        '@id("no-secrets") forbid(principal, action, resource) when { resource.secret };\n'
    )
    readers = [{"type": "Group", "id": "readers"}]
    entities = [
        {"uid": {"type": "User", "id": "a"}, "attrs": {}, "parents": readers},
        {"uid": {"type": "Doc", "id": "d"}, "attrs": {"secret": False}, "parents": []},
        {"uid": {"type": "Doc", "id": "s"}, "attrs": {"secret": True}, "parents": []},
    ]
    with stdio_service(config, "--policies", str(policies)) as service:
        allow = service.ask(
            "is_authorized",
            principal='User::"a"',
            action='Action::"read"',
            resource='Doc::"d"',
            entities=entities,
        )
        deny = service.ask(
            "is_authorized",
            principal='User::"a"',
            action='Action::"read"',
            resource='Doc::"s"',
            entities=entities,
            context={},
        )
        bad = service.ask(
            "is_authorized", principal="alice", action='Action::"read"', resource='Doc::"s"'
        )
    assert allow == {"decision": "Allow", "reasons": ["policy0"], "errors": []}
    assert deny == {"decision": "Deny", "reasons": ["policy1"], "errors": []}
    assert bad["error"]["code"] == "E0962"


def test_decision_log_lines_are_the_guards(config: Path, tmp_path: Path) -> None:
    from serve_support import in_process_guard

    served, local = tmp_path / "served.jsonl", tmp_path / "local.jsonl"
    requests = payloads()
    with stdio_service(config, "--decision-log", str(served)) as service:
        for r in requests:
            service.ask("before_tool_call", **r)
    guards = {}
    for r in requests:
        key = json.dumps(r.get("context"), sort_keys=True)
        if key not in guards:
            guards[key] = in_process_guard(config, r.get("context"))
            guards[key].open_decision_log(local)
        guards[key].before_tool_call(r["tool"], r["params"], r["call"])

    def lines(path: Path) -> list[dict[str, object]]:
        out = []
        for line in path.read_text().splitlines():
            entry = json.loads(line)
            del entry["ts"], entry["latency_us"]
            out.append(entry)
        return out

    assert lines(served) == lines(local)
    assert len(lines(served)) == len(requests)


def test_reload_good_and_broken(config: Path) -> None:
    call = {"sessionKey": "s", "toolCallId": "c"}
    ask = {"tool": "browser", "params": {}, "call": call}
    original = config.read_text()
    with stdio_service(config) as service:
        assert service.ask("before_tool_call", **ask)["action"] == "allow"
        first = service.ask("health")["generation"]
        data = json.loads(original)
        data["config"]["tools"]["deny"].append("browser")
        config.write_text(json.dumps(data))
        reloaded = service.ask("reload")
        assert reloaded["ok"] is True and reloaded["generation"] > first
        assert service.ask("before_tool_call", **ask)["action"] == "block"
        # A broken file: reported with the file, the old set keeps serving.
        config.write_text(original.replace('"profile"', '"profil"'))
        failed = service.ask("reload")
        assert failed["error"]["code"] == "E0965"
        assert failed["error"]["file"] == str(config) and "profil" in failed["error"]["message"]
        health = service.ask("health")
        assert health["status"] == "degraded" and health["broken"]["file"] == str(config)
        assert service.ask("before_tool_call", **ask)["action"] == "block"
        config.write_text("{not json")
        assert "invalid JSON" in service.ask("reload")["error"]["message"]
        # Fixed: picked up by the watcher (within 5 s) without a reload request.
        config.write_text(original)
        assert wait_for(lambda: service.ask("health")["status"] == "ok", timeout=5)
        assert service.ask("before_tool_call", **ask)["action"] == "allow"


def test_sighup_and_file_changes_reload(config: Path) -> None:
    ask = {"tool": "browser", "params": {}, "call": {"sessionKey": "s"}}
    original = json.loads(config.read_text())
    with stdio_service(config) as service:
        first = service.ask("health")["generation"]
        os.kill(service.proc.pid, signal.SIGHUP)
        assert wait_for(lambda: service.ask("health")["generation"] > first, timeout=5)
        original["config"]["tools"]["deny"].append("browser")
        started = time.monotonic()
        config.write_text(json.dumps(original))
        assert wait_for(lambda: service.ask("before_tool_call", **ask)["action"] == "block", 5)
        assert time.monotonic() - started < 5


def test_service_refuses_to_start_broken(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"config": {"tools": {"profile": "codin"}}}')
    run = subprocess.run(
        serve_args(bad, "--stdio"), input=b"", capture_output=True, env=ENV, timeout=60
    )
    assert run.returncode == 3
    assert str(bad) in run.stderr.decode() and "codin" in run.stderr.decode()
    usage = subprocess.run(serve_args(bad), capture_output=True, env=ENV, timeout=60)
    assert usage.returncode == 2 and b"--stdio" in usage.stderr


def test_end_of_stdin_and_sigterm_stop_it(config: Path) -> None:
    with stdio_service(config) as service:
        assert service.ask("health")["ok"]
        assert service.proc.stdin is not None
        service.proc.stdin.close()
        assert service.proc.wait(20) == 0
    with stdio_service(config) as service:
        assert service.ask("health")["ok"]
        started = time.monotonic()
        assert stop(service.proc) == 0
        assert time.monotonic() - started < 10


def test_stray_output_cannot_corrupt_the_wire(config: Path) -> None:
    # Warnings go to stderr (the reviewer's allowlist names unknown tools: logged on load).
    with process(
        serve_args(config, "--stdio"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as proc:
        out, err = proc.communicate(b'{"id": 1, "op": "health"}\n', timeout=60)
    assert [json.loads(line)["id"] for line in out.splitlines()] == [1]
    assert b"serving generation" in err
