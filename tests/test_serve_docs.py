"""The commands of docs/service.md, run: the stdio example answers as the page says, and each
long-lived command (```bash no-run) serves until it is stopped by process id."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from serve_support import ENV, SocketClient, http_ask, process, short_dir, wait_for

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "service.md"
BLOCK = re.compile(r"```bash( no-run)?\n(.*?)```", re.S)


def blocks(no_run: bool) -> list[str]:
    text = PAGE.read_text()
    return [m.group(2) for m in BLOCK.finditer(text) if bool(m.group(1)) == no_run]


def env_with_home(home: Path) -> dict[str, str]:
    bin_dir = os.path.dirname(sys.executable)
    return {**ENV, "HOME": str(home), "PATH": bin_dir + os.pathsep + ENV.get("PATH", "")}


def test_the_stdio_example_answers(tmp_path: Path) -> None:
    (command,) = blocks(no_run=False)
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", command],
        capture_output=True,
        cwd=ROOT,
        env=env_with_home(tmp_path),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert [a["id"] for a in answers] == [1, 2, 3]
    assert answers[0]["action"] == "block" and "exec.dangerous" in answers[0]["policies"]
    assert answers[1]["action"] == "allow"
    assert answers[2]["ok"] is True and answers[2]["status"] == "ok"


def test_the_documented_commands_serve() -> None:
    commands = blocks(no_run=True)
    assert len(commands) == 2
    home = short_dir()
    try:
        for command in commands:
            with process(
                ["bash", "-c", "exec " + command.strip()],
                cwd=ROOT,
                env=env_with_home(home),
                stderr=subprocess.PIPE,
            ) as proc:
                if "--socket" in command:
                    path = str(home / ".cache" / "cedarlite" / "serve" / "agent.sock")

                    def ready(path: str = path) -> bool:
                        try:
                            return SocketClient(path, timeout=5).ask("health")["ok"] is True
                        except OSError:
                            return False

                    assert wait_for(ready, timeout=60), proc.poll()
                    client = SocketClient(path)
                    call = {"sessionKey": "s", "toolCallId": "c"}
                    answer = client.ask(
                        "before_tool_call", tool="exec", params={"command": "ls"}, call=call
                    )
                    assert answer["action"] == "allow"
                    client.close()
                    assert (home / "decisions.jsonl").read_text().count("\n") == 1
                else:

                    def ready() -> bool:
                        try:
                            return http_ask("127.0.0.1:8181", "health", method="GET")[0] == 200
                        except OSError:
                            return False

                    assert wait_for(ready, timeout=60), proc.poll()
                    status, answer = http_ask(
                        "127.0.0.1:8181",
                        "is_authorized",
                        {
                            "principal": 'Agent::"coder"',
                            "action": 'Action::"read"',
                            "resource": 'Tool::"read"',
                            "context": {"toolsEnabled": True},
                        },
                    )
                    assert status == 200 and answer["decision"] == "Allow"
                proc.terminate()
                assert proc.wait(30) == 0
    finally:
        shutil.rmtree(home, ignore_errors=True)
