"""The shipped argument rules keep their promise: secrets are out of reach of every tool that can
read them (#9, finding 3).

Each attempt goes through the README's main job: the example coding agent's configuration, its
tools plus a filesystem MCP server and a search plugin, and both shipped rule files, decided by
``ToolPolicy.authorize_call``. The rules are string rules: a speed bump for a model that wanders,
not a boundary against one that tries to get around them (see the README).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cedarlite.tools import ToolPolicy

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = json.loads((ROOT / "examples" / "coding-agent.json").read_text(encoding="utf-8"))
EXTRA_TOOLS = [
    {
        "name": "fs__read_file",
        "pluginId": "bundle-mcp",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    },
    {
        "name": "search",
        "pluginId": "grep",
        "parameters": {
            "type": "object",
            "properties": {"pattern": {"type": "string"}, "directory": {"type": "string"}},
            "required": ["pattern"],
        },
    },
]
CONFIG = {**EXAMPLE["config"], "tools": {**EXAMPLE["config"]["tools"], "alsoAllow": ["search"]}}
POLICY = ToolPolicy(CONFIG, [*EXAMPLE["tools"], *EXTRA_TOOLS], strict=True)
RULES = POLICY.load_rules(
    [ROOT / "policies" / "exec-commands.cedar", ROOT / "policies" / "paths.cedar"]
)
CONTEXT = EXAMPLE["context"]


def decide(tool: str, params: dict[str, Any]) -> Any:
    return POLICY.authorize_call(CONTEXT, tool, params, rules=RULES)


EXEC_ATTEMPTS = [
    "cat ~/.ssh/id_rsa",
    "cat .env",
    "grep -r AWS_SECRET ~/.aws",
    "git diff --no-index /etc/shadow /dev/null",
    "cat ./config/.env.production",
    "head -c 4096 ~/.ssh/id_ed25519",
    "tail -n 200 ~/.bash_history",
    "cat /proc/self/environ",
    "grep -r password ~",
    "grep -ri token $HOME",
    "rg -uu api_key",
    "rg --hidden API_KEY .",
    "ls -la ~/.aws",
    "cat ~/.kube/config",
    "cat ~/.docker/config.json",
    "cat ~/.npmrc",
    "cat ~/.pypirc",
    "cat ~/.netrc",
    "cat ~/.config/gh/hosts.yml",
    "cat ~/.git-credentials",
    "ls ~/.gnupg",
    "git show HEAD:.env",
    "git log -p -- .env",
    "cat deploy/server.key",
    "cat certs/server.pem",
    "head /etc/ssh/ssh_host_ed25519_key",
    "cat /run/secrets/db_password",
    'grep -r "BEGIN RSA PRIVATE KEY" .',
    "cat $HOME/.aws/credentials",
    "grep -r secret /",
    "cat ../../.env",
    "tail ~/.zsh_history",
    "cat ~/.pgpass",
    "cat ~/.vault-token",
    "git log --all -p -- '.env.local'",
]


@pytest.mark.parametrize("command", EXEC_ATTEMPTS)
def test_exec_cannot_read_secrets(command: str) -> None:
    decision = decide("exec", {"command": command})
    assert not decision.allowed
    assert "exec.no-secrets" in decision.policies


FILE_ATTEMPTS = [
    ("read", {"path": "/home/me/.ssh/id_rsa"}),
    ("read", {"path": "/home/me/.netrc"}),
    ("read", {"path": "/proc/self/environ"}),
    ("read", {"path": "/home/me/.config/gh/hosts.yml"}),
    ("read", {"path": "~/.aws/credentials"}),
    ("read", {"path": "~/.kube/config"}),
    ("read", {"path": "~/.docker/config.json"}),
    ("read", {"path": "~/.gnupg/private-keys-v1.d/ABCD.key"}),
    ("read", {"path": "~/.npmrc"}),
    ("read", {"path": "~/.pypirc"}),
    ("read", {"path": "keys/id_ed25519"}),
    ("read", {"path": "~/.zsh_history"}),
    ("read", {"path": "/etc/shadow"}),
    ("read", {"path": "certs/tls.key"}),
    ("read", {"path": ".envrc"}),
    ("read", {"path": "/var/run/secrets/kubernetes.io/serviceaccount/token"}),
    ("edit", {"path": ".env", "oldText": "A=1", "newText": "A=2"}),
    ("write", {"path": "/home/me/.ssh/authorized_keys", "content": "ssh-ed25519 AAAA"}),
    ("exec", {"command": "cat credentials", "workdir": "/home/me/.aws"}),
    ("exec", {"command": "ls", "workdir": "~/.ssh"}),
    ("apply_patch", {"input": "*** Begin Patch\n*** Add File: ~/.ssh/authorized_keys\n+key\n"}),
    ("apply_patch", {"input": "*** Begin Patch\n*** Update File: .env\n@@\n-A=1\n+A=2\n"}),
    ("fs__read_file", {"path": "/home/me/.ssh/id_rsa"}),
    ("fs__read_file", {"path": "/home/me/project/.env"}),
    ("search", {"pattern": "aws_secret_access_key", "directory": "/home/me/.aws"}),
    ("search", {"pattern": "token", "directory": "/proc/1/environ"}),
    ("web_fetch", {"url": "file:///etc/shadow"}),
    ("web_fetch", {"url": "file:///home/me/.ssh/id_rsa"}),
]


@pytest.mark.parametrize(("tool", "params"), FILE_ATTEMPTS, ids=lambda x: json.dumps(x)[:60])
def test_no_tool_that_takes_a_path_can_reach_secrets(tool: str, params: dict[str, Any]) -> None:
    decision = decide(tool, params)
    assert not decision.allowed
    assert any(p.startswith("fs.no-secret") for p in decision.policies), decision.policies


def test_there_are_at_least_forty_attempts() -> None:
    assert len(EXEC_ATTEMPTS) + len(FILE_ATTEMPTS) >= 40


@pytest.mark.parametrize(
    ("tool", "params"),
    [
        ("exec", {"command": "git status"}),
        ("exec", {"command": "cat README.md"}),
        ("exec", {"command": "grep -rn TODO src"}),
        ("exec", {"command": "grep -rn process.env src"}),
        ("exec", {"command": "rg keyboard src"}),
        ("exec", {"command": "git diff HEAD~1 -- src/env.py"}),
        ("exec", {"command": "ls -la", "workdir": "/workspace/app"}),
        ("read", {"path": "docs/environment.md"}),
        ("read", {"path": "src/keys.py"}),
        ("write", {"path": "src/monkey.py", "content": "x"}),
        ("apply_patch", {"input": "*** Begin Patch\n*** Update File: src/app.py\n+x\n"}),
        ("fs__read_file", {"path": "/workspace/app/README.md"}),
        ("search", {"pattern": "password", "directory": "src"}),
        ("web_fetch", {"url": "https://example.com/docs"}),
    ],
    ids=lambda x: json.dumps(x)[:60],
)
def test_ordinary_work_stays_allowed(tool: str, params: dict[str, Any]) -> None:
    decision = decide(tool, params)
    assert decision.allowed, decision.policies


def test_the_rules_are_a_speed_bump_not_a_sandbox() -> None:
    """What the README admits: shell quoting and globs get around string rules."""
    for command in ('cat ~/.s"s"h/id_r"s"a', "cat ~/.ss?/id_*"):
        assert decide("exec", {"command": command}).allowed
