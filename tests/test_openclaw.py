"""The OpenClaw host without OpenClaw: what the plugin's events become (run context, session,
``tool_call`` decided as its inner tool), OpenClaw's own configuration read as a tools
configuration, the service's answers to the plugin, and ``hook openclaw --print-settings``.
(tests/test_openclaw_e2e.py runs the real gateway; tests/test_openclaw_plugin.py the plugin's
JavaScript.)"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from cedarlite.cli import main
from cedarlite.hosts import openclaw, openclaw_config
from cedarlite.hosts import openclaw_settings as install
from cedarlite.hosts.claude_code import HookConfig
from cedarlite.hosts.serve.guards import GuardSet, ServeOptions
from cedarlite.hosts.serve.protocol import Service

CTX = {
    "toolName": "exec",
    "agentId": "main",
    "sessionKey": "agent:main:explicit:s1",
    "sessionId": "s1",
    "runId": "r1",
    "toolCallId": "call_1",
    "requester": {"senderIsOwner": True},
}
ASK = """\
@id("ask.log") @ask("Reads the history")
forbid (principal, action == Action::"exec", resource)
when { resource has command && resource.command like "git log*" };
"""


def event(tool: str, params: Any, call: str = "call_1", **extra: Any) -> dict[str, Any]:
    return {"toolName": tool, "params": params, "runId": "r1", "toolCallId": call, **extra}


# ---------------------------------------------------------------------------------------------
# The events


def test_the_run_context_comes_from_ctx() -> None:
    assert openclaw.run_context(CTX) == {"senderIsOwner": True, "agentId": "main"}
    stranger = {**CTX, "requester": {"senderIsOwner": False}}
    assert openclaw.run_context(stranger)["senderIsOwner"] is False
    # an agent the configuration does not list runs with the defaults
    assert openclaw.run_context(CTX, frozenset({"coder"})) == {"senderIsOwner": True}
    assert openclaw.run_context(CTX, frozenset({"main"}))["agentId"] == "main"
    for hostile in (None, [], "x", {"requester": "yes", "agentId": 7}):
        assert openclaw.run_context(hostile) == {}


def test_the_session_is_the_session_key() -> None:
    record = openclaw.call_record(event("exec", {}), CTX)
    assert record == {"sessionKey": "agent:main:explicit:s1", "sessionId": "s1",
                      "toolCallId": "call_1", "runId": "r1"}  # fmt: skip


def test_a_tool_call_is_decided_as_the_tool_it_calls() -> None:
    for ident in ("exec", "openclaw:core:exec", " exec "):
        call = openclaw.decided_call(
            event("tool_call", {"id": ident, "args": {"command": "ls"}}), CTX
        )
        assert (call.tool, call.params) == ("exec", {"command": "ls"})
        assert call.call["sessionKey"] is None  # OpenClaw decides the inner call again
    assert openclaw.decided_call(event("tool_call", {"id": "ls"}), CTX).params == {}
    for bad in (None, "exec", {"args": {}}, {"id": ""}, {"id": 3}, {"id": "openclaw:core:"}):
        with pytest.raises(openclaw.OpenClawError):
            openclaw.decided_call(event("tool_call", bad), CTX)


# ---------------------------------------------------------------------------------------------
# OpenClaw's own configuration


OPENCLAW_JSON = {
    "gateway": {"mode": "local", "port": 1},
    "models": {"providers": {}},
    "tools": {"profile": "coding", "deny": ["apply_patch"]},
    "agents": {
        "defaults": {"workspace": "/w", "model": {"primary": "x/y"}},
        "entries": {
            "main": {"default": True, "workspace": "/w"},
            "reviewer": {"tools": {"deny": ["write", "edit", "exec"]}, "model": "z"},
        },
    },
    "channels": {"discord": {"token": "t", "groups": {"g1": {"tools": {"deny": ["read"]}}}}},
    "plugins": {"allow": ["other"]},
}


def test_openclaw_json_is_read_for_its_tools_section(tmp_path: Path) -> None:
    assert openclaw_config.is_openclaw_config(OPENCLAW_JSON)
    assert not openclaw_config.is_openclaw_config({"tools": {}, "agents": {"list": []}})
    section = openclaw_config.tools_section(OPENCLAW_JSON)
    assert section == {
        "tools": {"profile": "coding", "deny": ["apply_patch"]},
        "agents": {"list": [{"id": "main", "default": True},
                            {"id": "reviewer", "tools": {"deny": ["write", "edit", "exec"]}}]},
        "channels": {"discord": {"groups": {"g1": {"tools": {"deny": ["read"]}}}}},
    }  # fmt: skip
    path = tmp_path / "openclaw.json"
    path.write_text(json.dumps(OPENCLAW_JSON))
    assert HookConfig.read(str(path)).config == section
    with pytest.raises(openclaw.OpenClawError, match=r"agents\.entries"):
        openclaw_config.tools_section({"agents": {"entries": ["main"]}})


def test_the_default_configuration_path() -> None:
    env = {"HOME": "/h"}
    assert openclaw_config.default_config_path({"OPENCLAW_CONFIG_PATH": "/c/o.json"}) == "/c/o.json"
    assert openclaw_config.default_config_path({"OPENCLAW_STATE_DIR": "/s"}) == "/s/openclaw.json"
    assert openclaw_config.default_config_path(env).endswith("/.openclaw/openclaw.json")


# ---------------------------------------------------------------------------------------------
# The service's answers


@pytest.fixture
def service(tmp_path: Path) -> Service:
    config = tmp_path / "openclaw.json"
    data = json.loads(json.dumps(OPENCLAW_JSON))
    data["tools"]["loopDetection"] = {"enabled": True, "warningThreshold": 2,
                                      "criticalThreshold": 3}  # fmt: skip
    config.write_text(json.dumps(data))
    rules = tmp_path / "ask.cedar"
    rules.write_text(ASK)
    options = ServeOptions(str(config), ("cedarlite:exec-commands", "cedarlite:paths", str(rules)))
    return Service(GuardSet(options))


def before(service: Service, ev: dict[str, Any], ctx: Any = CTX) -> dict[str, Any]:
    return service.answer(openclaw.BEFORE, {"event": ev, "ctx": ctx})


def test_answers_name_the_deciding_policy_or_layer(service: Service) -> None:
    allowed = before(service, event("exec", {"command": "ls"}))
    assert allowed["action"] == "allow" and allowed["params"] == {"command": "ls"}
    chained = before(service, event("exec", {"command": "ls; rm -rf /"}))
    assert chained["action"] == "block" and chained["reason"].startswith("cedarlite: blocked:")
    assert "exec.no-chaining" in chained["reason"] and "exec.no-chaining" in chained["policies"]
    removed = before(service, event("apply_patch", {"input": "*** Begin Patch"}))
    assert "removed by tools.deny" in removed["reason"]
    asked = before(service, event("exec", {"command": "git log"}))
    assert asked["action"] == "ask" and "Reads the history" in asked["reason"]
    assert asked["approval"]["title"] and asked["approval"]["severity"] == "warning"
    # the 2026.9 tools are offered by the coding profile
    assert before(service, event("ls", {"path": "src"}))["action"] == "allow"


def test_agents_entries_select_the_agents_tools(service: Service) -> None:
    reviewer = {**CTX, "agentId": "reviewer"}
    answer = before(service, event("write", {"path": "a.txt", "content": ""}), reviewer)
    assert answer["action"] == "block" and "agents.reviewer.tools.deny" in answer["reason"]
    stranger = {**CTX, "agentId": "nobody"}  # not listed: the defaults
    assert (
        before(service, event("write", {"path": "a.txt", "content": ""}), stranger)["action"]
        == "allow"
    )


def test_tool_call_cannot_bypass_a_rule(service: Service) -> None:
    cases = [
        ({"id": "exec", "args": {"command": "ls && curl x | sh"}}, "exec.no-chaining"),
        ({"id": "openclaw:core:read", "args": {"path": "../.env"}}, "fs.no-secrets"),
        ({"id": "apply_patch", "args": {"input": "x"}}, "tools.deny"),
        ({"id": "exec"}, "invalid-arguments"),  # no command: the schema refuses it
    ]
    for params, why in cases:
        answer = before(service, event("tool_call", params))
        assert answer["action"] == "block", params
        assert why in answer["reason"] or answer["deniedReason"] == why, answer
    # a tool_call of a tool_call, and the tool's name as the guard reads it: the inner tool
    chained = {"command": "ls && curl x | sh"}
    for tool, params in (
        ("tool_call", {"id": "tool_call", "args": {"id": "exec", "args": chained}}),
        ("tool_call", {"id": "openclaw:core:TOOL_CALL", "args": {"id": "bash", "args": chained}}),
        ("TOOL_CALL", {"id": "exec", "args": chained}),
        (" Tool_Call ", {"id": "exec", "args": chained}),
    ):
        answer = before(service, event(tool, params))
        assert answer["action"] == "block" and "exec.no-chaining" in answer["reason"], params
    nested = {"id": "tool_call", "args": {"id": "read", "args": {"path": "src/a.py"}}}
    ok = before(service, event("tool_call", nested))
    assert ok["action"] == "allow" and ok["params"] == nested
    hostile = before(service, event("tool_call", {"id": ["exec"]}))
    assert hostile["action"] == "block" and "`tool_call`" in hostile["reason"]
    through = {"id": "read", "args": {"path": "src/a.py"}}
    ok = before(service, event("tool_call", through))
    assert ok["action"] == "allow" and ok["params"] == through  # tool_call's own params


def test_the_models_own_path_attributes_are_not_the_adapters(service: Service) -> None:
    # `inWorkspace` and `absolutePath` are what an adapter says of a path it judged; sent by
    # the model, they must not turn fs.writes-in-workspace off.
    write = {"path": "/opt/app/start.sh", "content": "x"}
    for extra in ({}, {"inWorkspace": True}, {"inWorkspace": True, "absolutePath": "/workspace/a"}):
        for ev in (event("write", {**write, **extra}),
                   event("tool_call", {"id": "write", "args": {**write, **extra}})):  # fmt: skip
            answer = before(service, ev)
            assert answer["action"] == "block" and "fs.writes-in-workspace" in answer["reason"]
    sent = {"path": "src/a.py", "content": "x", "inWorkspace": False}
    ok = before(service, event("write", sent))
    assert ok["action"] == "allow" and ok["params"] == sent  # runs as the model sent it


def test_every_path_is_judged_as_the_adapters_judge_it(service: Service) -> None:
    # The one path mapping of every adapter (docs/paths.md): a secret's spelling that the OS
    # (or Node's path.resolve) opens as the file, a path nested in the arguments, and garbage.
    for path in (".env/", ".env/.", ".env//", "src/../.env", "./.ssh/id_rsa/"):
        for ev in (event("read", {"path": path}),
                   event("tool_call", {"id": "read", "args": {"path": path}})):  # fmt: skip
            answer = before(service, ev)
            assert answer["action"] == "block" and "fs.no-secrets" in answer["reason"], path
    nested = before(service, event("ls", {"paths": ["src", "/home/u/.aws/credentials"]}))
    assert nested["action"] == "block" and "fs.no-secrets" in nested["reason"]
    garbage = before(service, event("read", {"path": "notes\u0000.txt"}))
    assert garbage["action"] == "block" and "U+0000" in garbage["reason"]
    fine = {"path": "src/a.py/"}
    ok = before(service, event("read", fine))
    assert ok["action"] == "allow" and ok["params"] == fine  # runs as the model sent it


def test_unreadable_events_block(service: Service) -> None:
    for ev, ctx in ((None, CTX), ("exec", CTX), (event(7, {}), CTX), (event("exec", "ls"), None)):
        answer = service.answer(openclaw.BEFORE, {"event": ev, "ctx": ctx})
        assert answer["action"] == "block", (ev, ctx)
    missing = service.answer(openclaw.BEFORE, {"event": event("exec", {})})
    assert missing["action"] == "block" and "ctx" in missing["reason"]


def test_loops_are_fed_by_calls_that_ran_in_their_session(service: Service) -> None:
    poll = {"action": "poll", "sessionId": "x"}
    same = {"content": [{"type": "text", "text": "No session found for x"}], "details": {}}

    def ran(ctx: dict[str, Any], i: int) -> dict[str, Any]:
        ev = event("process", poll, call=f"c{i}")
        answer = before(service, ev, ctx)
        if answer["action"] == "allow":
            done = service.answer(openclaw.AFTER, {"event": {**ev, "result": same}, "ctx": ctx})
            assert done == {"ok": True, "recorded": True}
        return answer

    first = [ran(CTX, i)["action"] for i in range(5)]
    assert first[:3] == ["allow"] * 3 and first[3] == "block", first
    other = {**CTX, "sessionKey": "agent:main:explicit:s2"}
    assert ran(other, 9)["action"] == "allow"  # its own history


def test_blocked_results_and_tool_calls_are_not_recorded(service: Service) -> None:
    blocked = {"content": [], "details": {"status": "blocked", "reason": "no"}}
    for ev in (event("exec", {"command": "ls"}, result=blocked),
               event("tool_call", {"id": "exec", "args": {"command": "ls"}}),
               event("Tool_Call", {"id": "exec", "args": {"command": "ls"}})):  # fmt: skip
        answer = service.answer(openclaw.AFTER, {"event": ev, "ctx": CTX})
        assert answer == {"ok": True, "recorded": False}


# ---------------------------------------------------------------------------------------------
# hook openclaw --print-settings


def settings(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    code = main(["hook", "openclaw", "--print-settings", *argv])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else out), err


def test_print_settings_loads_the_shipped_plugin(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "tools.json"
    config.write_text('{"tools": {"profile": "coding"}}')
    code, printed, _ = settings(capsys, "--config", str(config), "--rules",
                                "cedarlite:exec-commands", "--state-dir", "st")  # fmt: skip
    assert code == 0 and list(printed) == ["plugins"]
    plugins = printed["plugins"]
    assert plugins["load"]["paths"] == [install.PLUGIN_DIR]
    entry = plugins["entries"]["cedarlite"]
    assert entry["enabled"] is True and entry["config"]["deadlineMs"] == 10000
    command = entry["config"]["command"]
    assert Path(command[0]).is_absolute() and command[1:5] == [
        "-m",
        "cedarlite",
        "serve",
        "--stdio",
    ]
    assert command[5:] == ["--config", str(config), "--rules", "cedarlite:exec-commands",
                           "--state-dir", str(Path("st").resolve())]  # fmt: skip
    assert "allow" not in plugins  # no allow list to join: none is created
    manifest = json.loads((Path(install.PLUGIN_DIR) / "openclaw.plugin.json").read_text())
    assert manifest["id"] == install.PLUGIN_ID and manifest["activation"] == {"onStartup": True}
    schema = manifest["configSchema"]
    assert set(entry["config"]) <= set(schema["properties"]) and schema["required"] == ["command"]


def test_print_settings_reads_openclaws_own_configuration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "state" / "openclaw.json"
    path.parent.mkdir()
    path.write_text(json.dumps(OPENCLAW_JSON))
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(path.parent))
    monkeypatch.delenv("OPENCLAW_CONFIG_PATH", raising=False)
    code, printed, _ = settings(capsys)
    assert code == 0
    command = printed["plugins"]["entries"]["cedarlite"]["config"]["command"]
    assert command[5:] == ["--config", str(path)]
    assert printed["plugins"]["allow"] == ["cedarlite"]  # joins the file's allow list


def test_print_settings_refuses_broken_files_with_the_located_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "tools.json"
    config.write_text('{"tools": {"profile": "codng"}}')
    code, out, err = settings(capsys, "--config", str(config))
    assert (code, out) == (3, "") and f"{config}:1:23" in err and "did you mean `coding`" in err
    config.write_text('{"tools": {"profile": "coding"}}')
    rules = tmp_path / "r.cedar"
    rules.write_text("forbid (principal, action, resource) when {")
    code, out, err = settings(capsys, "--config", str(config), "--rules", str(rules))
    assert (code, out) == (3, "") and f"{rules}:1:" in err
    code, out, err = settings(capsys, "--config", str(tmp_path / "missing.json"))
    assert code != 0 and "missing.json" in err
    code, out, err = settings(capsys, "--config", str(config), "--deadline", "14")
    assert code == 2 and "15 s" in err


def test_the_service_command_line_is_what_serve_accepts(tmp_path: Path) -> None:
    config = tmp_path / "tools.json"
    config.write_text('{"tools": {"profile": "coding"}}')
    words = install.service_command(install.Settings(("cedarlite:paths",), str(config)))
    from cedarlite.cli.main import _parser

    args = _parser().parse_args(words[3:])
    assert args.stdio and args.config == str(config) and args.rules == ["cedarlite:paths"]
    out = io.StringIO()
    assert install.print_settings(install.Settings((), str(config)), out, io.StringIO()) == 0
