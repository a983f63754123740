"""cedarlite's OpenClaw plugin in the published OpenClaw gateway (openclaw@2026.9.6), end to end.

One gateway (isolated home, loopback, a scripted model on 127.0.0.1) runs with the settings
``cedarlite hook openclaw --print-settings`` prints, merged into its ``openclaw.json``. The
scripted model plays ``TOOLCALL`` lines; every test asserts on effects: files created or not,
what the model was told, what reached it. The suite skips, saying why, when Node >= 24.16 or
the OpenClaw package is missing (``.ci/run`` installs both into ~/.cache/cedarlite-test).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openclaw_support import Gateway, ScriptedModel, missing, running

pytestmark = pytest.mark.skipif(missing() is not None, reason=missing() or "")

SECRET = "SECRET-TOKEN-3b7c"
ESCAPED = "OUTSIDE-MARKER-91d2"
MARKER = "WORKSPACE-MARKER-5e0a"
#: OpenClaw's limit for a before_tool_call handler, and the acceptance bound per call.
MOST_SECONDS = 20.0

TOOLS = {
    "tools": {
        "profile": "coding",
        "deny": ["apply_patch"],
        "loopDetection": {"enabled": True, "warningThreshold": 2, "criticalThreshold": 4},
    }
}
ASK = """\
@id("ask.write") @ask("Writes a file named ask-*")
forbid (principal, action == Action::"write", resource)
when { resource has path && resource.path like "ask-*" };
"""


class World:
    """The running gateway, its scripted model and the files of the test."""

    def __init__(self, home: Path, gateway: Gateway, model: ScriptedModel) -> None:
        self.home = home
        self.gateway = gateway
        self.model = model
        self.workspace = gateway.workspace
        self.ask_rules = home / "ask.cedar"

    def run(self, session: str, *calls: tuple[str, dict[str, Any]]) -> tuple[list[str], float]:
        """One agent turn playing ``calls``; the tool results the model read, and the turn's
        seconds."""
        marker = f"RUN-{session}"
        lines = [marker, *(f"TOOLCALL {tool} {json.dumps(args)}" for tool, args in calls)]
        result = self.gateway.agent(session, "\n".join(lines))
        return self.model.tool_results(marker), result["seconds"]

    def services(self) -> list[int]:
        """The process ids of this gateway's decision services (found by their command line,
        which names this test's files)."""
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                words = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            text = [w.decode(errors="replace") for w in words]
            if "serve" in text and "--stdio" in text and str(self.home / "tools.json") in text:
                found.append(int(entry.name))
        return found

    def exists(self, name: str) -> bool:
        return (self.workspace / name).exists()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    home = tmp_path_factory.mktemp("openclaw")
    (home / "tools.json").write_text(json.dumps(TOOLS))
    (home / "ask.cedar").write_text(ASK)
    (home / "outside.txt").write_text(ESCAPED)
    command = [sys.executable, "-m", "cedarlite", "hook", "openclaw", "--print-settings",
               "--config", str(home / "tools.json"), "--rules", "cedarlite:exec-commands",
               "--rules", "cedarlite:paths", "--rules", str(home / "ask.cedar"),
               "--state-dir", str(home / "state"), "--deadline", "6"]  # fmt: skip
    printed = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)
    settings = json.loads(printed.stdout)
    with running(home, settings) as (gateway, model):
        workspace = gateway.workspace
        (workspace / ".env").write_text(f"TOKEN={SECRET}\n")
        (workspace / "marker-e2e.txt").write_text(MARKER)
        (workspace / "script.txt").write_text("touch piped.txt\n")
        yield World(home, gateway, model)


# ---------------------------------------------------------------------------------------------
# Decisions: one turn, many calls


@pytest.fixture(scope="module")
def turn(world: World) -> list[str]:
    results, _ = world.run(
        "decisions",
        ("exec", {"command": "ls"}),
        ("exec", {"command": "ls && touch chained.txt"}),
        ("exec", {"command": "ls $(touch substituted.txt)"}),
        ("exec", {"command": "cat script.txt | sh"}),
        ("read", {"path": ".env"}),
        ("read", {"path": "../outside.txt"}),
        ("write", {"path": "inside.txt", "content": "ok"}),
        ("write", {"path": str(world.home / "written-outside.txt"), "content": "no"}),
        ("write", {"path": "../escaped-write.txt", "content": "no"}),
        ("apply_patch", {"input": "*** Begin Patch\n*** Add File: patched.txt\n+x\n*** End Patch"}),
        ("write", {"path": "ask-first.txt", "content": "no"}),
        ("tool_call", {"id": "exec", "args": {"command": "ls; touch via-tool-call.txt"}}),
        ("tool_call", {"id": "openclaw:core:read", "args": {"path": ".env"}}),
        ("tool_call", {"id": "read", "args": {"path": "marker-e2e.txt"}}),
        ("read", {"path": ".env/"}),
        ("read", {"path": "src/../.env/."}),
    )  # fmt: skip
    assert len(results) == 16, results
    return results


def test_an_allowed_exec_runs(world: World, turn: list[str]) -> None:
    assert "marker-e2e.txt" in turn[0]  # the model read `ls`'s output


def test_denied_commands_leave_no_side_effect_and_the_model_reads_why(
    world: World, turn: list[str]
) -> None:
    for name in ("chained.txt", "substituted.txt", "piped.txt"):
        assert not world.exists(name), name
    for text in turn[1:4]:
        assert text.startswith("cedarlite: blocked:") and "policy exec." in text, text


def test_secrets_and_escapes_are_not_read(world: World, turn: list[str]) -> None:
    assert "fs.no-secrets" in turn[4] and "fs.no-traversal" in turn[5]
    # Spellings that Node's path.resolve opens as the file itself (docs/paths.md).
    assert "fs.no-secrets" in turn[14] and "fs.no-secrets" in turn[15], turn[14:]
    sent = world.model.everything_sent()
    assert SECRET not in sent and ESCAPED not in sent


def test_writes_stay_in_the_workspace(world: World, turn: list[str]) -> None:
    assert (world.workspace / "inside.txt").read_text() == "ok"
    assert not (world.home / "written-outside.txt").exists()
    assert not (world.home / "escaped-write.txt").exists()
    assert "fs.writes-in-workspace" in turn[7] and "fs.no-traversal" in turn[8]


def test_a_tool_the_configuration_removes_is_blocked(world: World, turn: list[str]) -> None:
    assert not world.exists("patched.txt")
    assert "removed by tools.deny" in turn[9], turn[9]


def test_an_ask_rule_does_not_run_the_call(world: World, turn: list[str]) -> None:
    assert not world.exists("ask-first.txt")
    assert "approval" in turn[10].lower(), turn[10]


def test_tool_call_cannot_bypass_a_rule(world: World, turn: list[str]) -> None:
    assert not world.exists("via-tool-call.txt")
    assert "exec.no-chaining" in turn[11] and "fs.no-secrets" in turn[12]
    assert MARKER in turn[13]  # an allowed call through tool_call runs


def test_the_gateways_own_configuration_is_read_without_config(world: World) -> None:
    # The file as the running gateway keeps it (OpenClaw's keys), with an agent written as
    # 2026.9 writes them (`agents.entries`), loads; the service decides with its tools section.
    config = json.loads(world.gateway.config_path.read_text())
    config["agents"]["entries"] = {"main": {}, "reviewer": {"tools": {"deny": ["exec"]}}}
    path = world.home / "openclaw-copy.json"
    path.write_text(json.dumps(config))
    env = {**os.environ, "OPENCLAW_CONFIG_PATH": str(path)}
    printed = subprocess.run(
        [sys.executable, "-m", "cedarlite", "hook", "openclaw", "--print-settings"],
        capture_output=True, text=True, timeout=120, env=env, check=False,
    )  # fmt: skip
    assert printed.returncode == 0, printed.stderr
    command = json.loads(printed.stdout)["plugins"]["entries"]["cedarlite"]["config"]["command"]
    assert command[5:] == ["--config", str(path)]
    lines = [
        {"id": i, "op": "openclaw_before_tool_call", "ctx": {"agentId": agent},
         "event": {"toolName": "exec", "params": {"command": "ls"}, "toolCallId": f"c{i}"}}
        for i, agent in enumerate(("main", "reviewer"))
    ]  # fmt: skip
    served = subprocess.run(command, input="".join(json.dumps(x) + "\n" for x in lines),
                            capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    main, reviewer = (json.loads(line) for line in served.stdout.splitlines())
    assert main["action"] == "allow", main
    assert "removed by agents.reviewer.tools.deny" in reviewer["reason"], reviewer


# ---------------------------------------------------------------------------------------------
# Loop detection, per session


def test_a_looping_poll_is_blocked_at_the_critical_threshold_in_its_session_only(
    world: World,
) -> None:
    poll = ("process", {"action": "poll", "sessionId": "no-such-session"})
    looping, _ = world.run("loop-a", *[poll] * 6)
    blocked = [i for i, text in enumerate(looping) if text.startswith("cedarlite: blocked:")]
    # Four polls ran and answered alike (the critical threshold); the fifth and sixth did not.
    assert blocked == [4, 5], looping
    assert "CRITICAL" in looping[4] and "polling loop" in looping[4]
    other, _ = world.run("loop-b", poll)
    assert other == ["No session found for no-such-session"], other


# ---------------------------------------------------------------------------------------------
# Faults: the service killed, frozen, its rules broken


def gone(pid: int) -> bool:
    """Whether the process has ended (a zombie not yet reaped has)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[0] == "Z"


def test_a_killed_or_frozen_service_never_allows_a_denied_call(world: World) -> None:
    world.run("warm", ("exec", {"command": "pwd"}))
    pids = world.services()
    assert pids, "no decision service is running"
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    results, _ = world.run("killed", ("exec", {"command": "ls && touch after-kill.txt"}),
                                 ("exec", {"command": "ls"}))  # fmt: skip
    assert not world.exists("after-kill.txt")
    assert "cedarlite: blocked" in results[0] and "marker-e2e.txt" in results[1], results
    frozen = world.services()
    assert frozen and not set(frozen) & set(pids)  # a new service decided
    for pid in frozen:
        os.kill(pid, signal.SIGSTOP)
    try:
        results, _ = world.run("frozen", ("exec", {"command": "ls && touch frozen.txt"}))
    finally:
        alive = [pid for pid in frozen if not gone(pid)]
        for pid in alive:
            os.kill(pid, signal.SIGCONT)
    assert not alive  # the plugin killed the frozen service at the deadline
    assert not world.exists("frozen.txt")
    assert "no answer from the decision service" in results[0], results
    assert max(world.model.call_seconds("RUN-frozen")) < MOST_SECONDS
    results, _ = world.run("respawned", ("exec", {"command": "ls"}))
    assert "marker-e2e.txt" in results[0], results


def test_unparsable_rules_block_every_call_naming_the_file(world: World) -> None:
    world.ask_rules.write_text("forbid (principal, action, resource) when {")
    try:
        for pid in world.services():  # the running set keeps serving; a new one must load
            os.kill(pid, signal.SIGKILL)
        results, _ = world.run("broken", ("exec", {"command": "ls"}),
                               ("write", {"path": "broken.txt", "content": "no"}))  # fmt: skip
    finally:
        world.ask_rules.write_text(ASK)
        for pid in world.services():
            os.kill(pid, signal.SIGKILL)
    assert not world.exists("broken.txt")
    assert len(results) == 2
    for text in results:
        assert "cedarlite: blocked" in text and str(world.ask_rules) in text, text
