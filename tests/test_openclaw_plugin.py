"""The shipped OpenClaw plugin's JavaScript, without OpenClaw: ``index.js`` registered with a
stand-in of OpenClaw's plugin API in a Node process, its handlers called as the gateway calls
them, against the real ``cedarlite serve --stdio`` and against services that fail (exit, answer
garbage, freeze, cannot start). Every failure must block, with a reason, within the deadline,
and the next call must start a new service. Needs any Node >= 18 (skips, saying so, without).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cedarlite.hosts.openclaw_settings import PLUGIN_DIR, Settings, service_command

DRIVER = r"""
import { pathToFileURL } from "node:url";
const spec = JSON.parse(process.argv[2]);
const plugin = (await import(pathToFileURL(spec.plugin).href)).default;
const handlers = {};
const logs = [];
const api = {
  pluginConfig: spec.config,
  logger: { info: (m) => logs.push(m), warn: (m) => logs.push(m), error: (m) => logs.push(m) },
  on: (name, handler) => { handlers[name] = handler; },
};
plugin.register(api);
const out = [];
for (const step of spec.steps) {
  if (step.wait) await new Promise((r) => setTimeout(r, step.wait));
  const started = Date.now();
  if (step.event?.params?.n === "BIGINT") step.event.params.n = 10n;
  const ctx = { ...step.ctx, abortSignal: new AbortController().signal };
  const result = await handlers[step.hook](step.event, ctx);
  out.push({ result: result ?? null, ms: Date.now() - started });
}
handlers.gateway_stop?.();
console.log(JSON.stringify({ out, logs }));
process.exit(0);
"""

CTX = {"agentId": "main", "sessionKey": "agent:main:explicit:t", "sessionId": "t",
       "runId": "r", "requester": {"senderIsOwner": True}, "trace": {"x": 1}}  # fmt: skip


def node() -> str:
    found = shutil.which("node")
    if found is None:
        pytest.skip("node is not installed (the plugin is JavaScript)")
    version = subprocess.run([found, "--version"], capture_output=True, text=True, check=False)
    if int(version.stdout.lstrip("v").split(".")[0] or 0) < 18:
        pytest.skip(f"node {version.stdout.strip()} is too old to import the plugin (>= 18)")
    return found


def before(tool: str, params: Any, call: str = "c1") -> dict[str, Any]:
    event = {"toolName": tool, "params": params, "runId": "r", "toolCallId": call}
    return {"hook": "before_tool_call", "event": event, "ctx": {**CTX, "toolCallId": call}}


def after(tool: str, params: Any, call: str = "c1", **extra: Any) -> dict[str, Any]:
    step = before(tool, params, call)
    return {**step, "hook": "after_tool_call", "event": {**step["event"], **extra}}


def drive(tmp_path: Path, command: list[str] | None, *steps: dict[str, Any],
          deadline: int = 3000) -> tuple[list[dict[str, Any]], list[str]]:  # fmt: skip
    config: dict[str, Any] = {"deadlineMs": deadline}
    if command is not None:
        config["command"] = command
    spec = {"plugin": str(Path(PLUGIN_DIR) / "index.js"), "config": config, "steps": list(steps)}
    script = tmp_path / "driver.mjs"
    script.write_text(DRIVER)
    done = subprocess.run([node(), str(script), json.dumps(spec)], capture_output=True,
                          text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout.splitlines()[-1])
    return data["out"], data["logs"]


def fake_service(tmp_path: Path, body: str) -> list[str]:
    """A service that counts its starts in ``starts.txt`` and then runs ``body``."""
    script = tmp_path / "fake_service.py"
    script.write_text(
        f"import sys, time\nopen({str(tmp_path / 'starts.txt')!r}, 'a').write('x')\n" + body
    )
    return [sys.executable, str(script)]


def starts(tmp_path: Path) -> int:
    path = tmp_path / "starts.txt"
    return len(path.read_text()) if path.exists() else 0


def blocked(step: dict[str, Any]) -> str:
    result = step["result"]
    assert result is not None and result["block"] is True, step
    return str(result["blockReason"])


def test_decisions_of_the_real_service(tmp_path: Path) -> None:
    config = tmp_path / "tools.json"
    config.write_text('{"tools": {"profile": "coding", "deny": ["apply_patch"]}}')
    command = service_command(Settings(("cedarlite:exec-commands",), str(config)))
    steps = [
        before("exec", {"command": "ls"}, "a"),
        after("exec", {"command": "ls"}, "a", result={"content": []}),
        before("exec", {"command": "ls | sh"}, "b"),
        before("apply_patch", {"input": "x"}, "c"),
        before("tool_call", {"id": "exec", "args": {"command": "ls; id"}}, "d"),
    ]
    out, _ = drive(tmp_path, command, *steps, deadline=10000)
    assert out[0]["result"] is None and out[1]["result"] is None  # allowed as it is
    assert "exec.no-chaining" in blocked(out[2]) or "exec." in blocked(out[2])
    assert "removed by tools.deny" in blocked(out[3])
    assert "exec.no-chaining" in blocked(out[4])


def test_a_service_that_cannot_load_its_rules_blocks_naming_the_file(tmp_path: Path) -> None:
    config = tmp_path / "tools.json"
    config.write_text('{"tools": {"profile": "coding"}}')
    rules = tmp_path / "broken.cedar"
    rules.write_text("permit (principal, action, resource) when {")
    command = service_command(Settings((str(rules),), str(config)))
    out, _ = drive(tmp_path, command, before("exec", {"command": "ls"}, "a"),
                   before("read", {"path": "a.txt"}, "b"), deadline=10000)  # fmt: skip
    for step in out:
        assert f"{rules}:1:" in blocked(step), step


def test_garbage_exit_and_silence_block_within_the_deadline_and_respawn(tmp_path: Path) -> None:
    counter = str(tmp_path / "starts.txt")
    command = fake_service(
        tmp_path,
        "line = sys.stdin.readline()\n"
        f"n = len(open({counter!r}).read())\n"
        "if n == 1: print('not json', flush=True); time.sleep(60)\n"
        "if n == 2: sys.exit(5)\n"
        "if n == 3: time.sleep(60)\n"
        "import json; print(json.dumps({'id': json.loads(line)['id'], 'action': 'allow',"
        " 'params': {'command': 'ls'}}), flush=True); time.sleep(60)\n",
    )
    steps = [before("exec", {"command": "ls"}, f"c{i}") for i in range(4)]
    for i in (1, 2, 3):  # past the hold after a failed start (within 1 s: the same reason)
        steps[i] = {**steps[i], "wait": 1100}
    out, _ = drive(tmp_path, command, *steps, deadline=1500)
    assert "not JSON" in blocked(out[0])
    assert "exited with code 5" in blocked(out[1])
    assert "no answer from the decision service within 1500 ms" in blocked(out[2])
    assert 1400 <= out[2]["ms"] < 5000
    assert out[3]["result"] is None  # a fourth service answered
    assert starts(tmp_path) == 4


def test_a_rewrite_and_an_approval_become_openclaws_answers(tmp_path: Path) -> None:
    command = fake_service(
        tmp_path,
        "import json\n"
        "for n, line in enumerate(sys.stdin):\n"
        "    rid = json.loads(line)['id']\n"
        "    answer = [{'action': 'allow', 'params': {'command': 'ls -l'}},\n"
        "              {'action': 'ask', 'reason': 'cedarlite: approval required: push',\n"
        "               'approval': {'title': 'Push?', 'severity': 'critical',"
        " 'timeoutMs': 5000}},\n"
        "              {'error': {'code': 'E0960', 'message': 'bad request'}}][n]\n"
        "    print(json.dumps({'id': rid, **answer}), flush=True)\n",
    )
    out, _ = drive(tmp_path, command, *(before("exec", {"command": "ls"}, f"c{i}")
                                        for i in range(3)))  # fmt: skip
    assert out[0]["result"] == {"params": {"command": "ls -l"}}
    assert out[1]["result"] == {
        "requireApproval": {
            "title": "Push?",
            "description": "cedarlite: approval required: push",
            "severity": "critical",
            "timeoutMs": 5000,
            "allowedDecisions": ["allow-once", "deny"],
        }
    }
    assert blocked(out[2]) == "cedarlite: blocked: bad request"


def test_only_calls_it_let_through_are_recorded(tmp_path: Path) -> None:
    log = tmp_path / "seen.jsonl"
    command = fake_service(
        tmp_path,
        "import json\n"
        "for line in sys.stdin:\n"
        "    request = json.loads(line)\n"
        f"    open({str(log)!r}, 'a').write(line)\n"
        "    blocked = request.get('event', {}).get('params', {}).get('command') == 'no'\n"
        "    answer = {'action': 'block', 'reason': 'no'} if blocked else {'action': 'allow',"
        " 'params': request.get('event', {}).get('params')}\n"
        "    print(json.dumps({'id': request['id'], **answer}), flush=True)\n",
    )
    ran = {"content": [{"type": "text", "text": "ok"}], "details": {}}
    vetoed = {"content": [], "details": {"status": "blocked"}}
    steps = []
    for call, command_text, result in (("a", "ls", ran), ("b", "no", vetoed), ("c", "x", vetoed)):
        params = {"command": command_text}
        steps += [before("exec", params, call), after("exec", params, call, result=result)]
    steps.append(after("exec", {"command": "ls"}, "never-asked", result=ran))
    drive(tmp_path, command, *steps)
    requests = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["op"] for r in requests] == ["openclaw_before_tool_call",
                                           "openclaw_after_tool_call",
                                           "openclaw_before_tool_call",
                                           "openclaw_before_tool_call"]  # fmt: skip
    assert requests[1]["event"]["toolCallId"] == "a"
    assert "abortSignal" not in requests[0]["ctx"] and "trace" not in requests[0]["ctx"]
    assert requests[0]["ctx"]["requester"] == {"senderIsOwner": True}


def test_openclaws_own_configuration_and_an_event_that_cannot_be_sent(tmp_path: Path) -> None:
    config = tmp_path / "openclaw.json"
    config.write_text(json.dumps({
        "gateway": {"mode": "local"}, "tools": {"profile": "coding"},
        "agents": {"entries": {"main": {}, "reviewer": {"tools": {"deny": ["exec"]}}}},
    }))  # fmt: skip
    command = service_command(Settings((), str(config)))
    reviewer = before("exec", {"command": "ls"}, "b")
    reviewer["ctx"]["agentId"] = "reviewer"
    unsendable = before("exec", {"command": "ls"}, "c")
    unsendable["event"]["params"] = {"n": "BIGINT"}  # the driver turns it into a BigInt
    out, _ = drive(tmp_path, command, before("exec", {"command": "ls"}, "a"), reviewer,
                   unsendable, before("read", {"path": "a.txt"}, "d"), deadline=10000)  # fmt: skip
    assert out[0]["result"] is None
    assert "removed by agents.reviewer.tools.deny" in blocked(out[1])
    assert "cannot be sent" in blocked(out[2])
    assert out[3]["result"] is None  # the service was not stopped for it


def test_no_command_or_no_interpreter_blocks(tmp_path: Path) -> None:
    out, _ = drive(tmp_path, None, before("exec", {"command": "ls"}))
    assert "--print-settings" in blocked(out[0])
    out, _ = drive(tmp_path, [str(tmp_path / "no-such-python")], before("exec", {"command": "ls"}))
    assert "cannot start the decision service" in blocked(out[0]) or "exited" in blocked(out[0])
