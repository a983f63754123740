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

from cedarlite.hosts.mapping import path_calls
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
    # MCP tools whose schemas say nothing of `path` (finding 2): their string arguments count.
    {"name": "fs__read_text_file", "pluginId": "bundle-mcp"},
    {"name": "fs__stat", "pluginId": "bundle-mcp", "parameters": {"type": "object"}},
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
    # The agents' own credential stores and their SDKs' configuration (#23, item 3).
    "cat ~/.claude/.credentials.json",
    "cat ~/.claude.json",
    "cat ~/.codex/auth.json",
    "head -c 4096 ~/.config/anthropic/credentials",
    "cat /home/u/.config/openai/auth.json",
    "cat ~/.gemini/oauth_creds.json",
    "cat ~/.config/github-copilot/apps.json",
    "cat ~/.cursor/mcp.json",
    "cat ~/.config/gcloud/application_default_credentials.json",
    "cat ~/.cache/huggingface/token",
    "cat ~/.yarnrc.yml",
    # The same files as the path rules (`Read /etc/passwd` is denied, so is this).
    "cat /etc/passwd",
    "grep root /etc/group",
    # Dotenv files by another name, as `read` denies them: bypasses that `tools prove` found
    # for the promise "no command names a secret file" (#27).
    "tail ~~/pip/pip.env",
    "tail i.env ",
    "cat config/production.env",
    "head -n 5 prod.env README.md",
    "grep KEY prod.env",
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
    ("fs__read_text_file", {"path": "/home/me/.ssh/id_rsa"}),
    ("fs__read_text_file", {"path": "/home/me/app/.env"}),
    ("fs__stat", {"path": "/etc/shadow"}),
    # What the Claude Code hook sends for `Read /etc/shadow` with `/etc` as working directory.
    ("read", {"path": "shadow", "absolutePath": "/etc/shadow"}),
    ("read", {"path": "environ", "absolutePath": "/proc/self/environ"}),
    # The agents' own credential stores (#23, item 3).
    ("read", {"path": "/home/u/.claude/.credentials.json"}),
    ("read", {"path": "/home/u/.codex/auth.json"}),
    ("read", {"path": "/home/u/.config/anthropic/credentials"}),
    ("read", {"path": "/home/u/.config/openai/auth.json"}),
    ("read", {"path": "/home/u/.gemini/oauth_creds.json"}),
    ("read", {"path": "/home/u/.config/github-copilot/hosts.json"}),
    ("read", {"path": "/home/u/.cursor/mcp.json"}),
    ("read", {"path": "/home/u/.config/gcloud/application_default_credentials.json"}),
    ("fs__read_text_file", {"path": "/home/u/.anthropic/api_key"}),
    ("fs__read_text_file", {"path": "/home/u/.cache/huggingface/token"}),
    ("apply_patch", {"input": "*** Begin Patch\n*** Update File: ~/.codex/auth.json\n+x\n"}),
]


@pytest.mark.parametrize(("tool", "params"), FILE_ATTEMPTS, ids=lambda x: json.dumps(x)[:60])
def test_no_tool_that_takes_a_path_can_reach_secrets(tool: str, params: dict[str, Any]) -> None:
    decision = decide(tool, params)
    assert not decision.allowed
    assert any(p.startswith("fs.no-secret") for p in decision.policies), decision.policies


#: Commands that pass for a safe program, and the rule that stops them (findings 3 and 6).
EXEC_ESCAPES = [
    ("git difftool -y -x sh HEAD~1", "exec.safe-prefixes"),
    ("git diffx", "exec.safe-prefixes"),
    ("git logx -p", "exec.safe-prefixes"),
    ("python -m pytestevil", "exec.safe-prefixes"),
    ("npm testx", "exec.safe-prefixes"),
    ("npm test --script-shell=/tmp/evil.sh", "exec.safe-prefixes"),
    ("npm test --prefix /tmp/other", "exec.safe-prefixes"),
    ("git diff --output=/home/u/.bashrc HEAD", "exec.no-program-options"),
    ("git log -p --output /home/u/.profile", "exec.no-program-options"),
    ("git show --ext-diff HEAD", "exec.no-program-options"),
    ("git diff --ext HEAD", "exec.no-program-options"),
    ("git log -p --textconv", "exec.no-program-options"),
    ("git diff -x sh", "exec.no-program-options"),
    ("git diff --extcmd=sh", "exec.no-program-options"),
    ("rg --pre sh . payload.txt", "exec.no-program-options"),
    ("rg --pre=./x.sh foo", "exec.no-program-options"),
    ("rg --pre-glob '*.txt' --pre ./x.sh foo", "exec.no-program-options"),
    ("python -m pytest --basetemp=/home/u", "exec.no-program-options"),
    ("python -m pytest --junitxml=/home/u/.bashrc", "exec.no-program-options"),
    ("python -m pytest -o cache_dir=/home/u/x", "exec.no-program-options"),
    ("python -m pytest -c /tmp/evil.ini", "exec.no-program-options"),
    ("python -m pytest --log-file=/home/u/.profile", "exec.no-program-options"),
    ("cat README.md\t.env", "exec.no-chaining"),
    ("cat README.md\r.env", "exec.no-chaining"),
    ("grep -r . ~/.", "exec.no-secrets"),
    ("ls -la ~/.", "exec.no-secrets"),
    ("ls -la ~/./", "exec.no-secrets"),
    ("grep -r key ~/..", "exec.no-secrets"),
    ("ls $HOME/.", "exec.no-secrets"),
    ("ls /home", "exec.no-secrets"),
    ("ls -la /home/ -R", "exec.no-secrets"),
    ("cat //", "exec.no-secrets"),
    ("grep -r PRIVATE /home/u", "exec.relative-searches"),
    ("rg -uu token /home/u", "exec.relative-searches"),
    ("grep -r token ../..", "exec.relative-searches"),
    ("grep -r token --include=*.txt '/home/u'", "exec.relative-searches"),
    ("rg token $XDG_CONFIG_HOME", "exec.relative-searches"),
]


@pytest.mark.parametrize(("command", "policy"), EXEC_ESCAPES)
def test_safe_programs_cannot_run_others_or_scan_homes(command: str, policy: str) -> None:
    decision = decide("exec", {"command": command})
    assert not decision.allowed
    assert policy in decision.policies, decision.policies


@pytest.mark.parametrize(
    ("tool", "params"),
    [
        ("read", {"path": "../../etc/passwd"}),
        ("search", {"pattern": "x", "directory": "../.."}),
        ("fs__read_file", {"path": "/srv/app/../../etc/passwd"}),
        ("fs__read_text_file", {"path": "src/../../x"}),
        ("exec", {"command": "ls", "workdir": ".."}),
    ],
    ids=lambda x: json.dumps(x)[:60],
)
def test_no_tool_climbs_out_with_dot_dot(tool: str, params: dict[str, Any]) -> None:
    decision = decide(tool, params)
    assert not decision.allowed
    assert "fs.no-traversal" in decision.policies, decision.policies


def test_writes_to_git_internals_are_refused() -> None:
    for path in (".git/config", ".git/hooks/pre-commit", "sub/.git/config", "/workspace/.git"):
        decision = decide("write", {"path": path, "content": "x"})
        assert "fs.no-git-internals" in decision.policies, path
    assert decide("write", {"path": "src/.gitignore", "content": "x"}).allowed


#: What an adapter receives (#23, items 1, 2 and 4): spellings that the OS (or Node's
#: `path.resolve`, on which MCP filesystem servers open files) opens as a secret, nested path
#: arguments, and searches of a whole home. Each goes through the adapters' one mapping.
ADAPTER_ATTEMPTS = [
    ("fs__read_text_file", {"path": "/tmp/p1/.env/"}),
    ("fs__read_text_file", {"path": "/tmp/p1/.env/."}),
    ("fs__read_text_file", {"path": "/tmp/p1/.env//"}),
    ("fs__read_text_file", {"path": "/tmp/p1/.npmrc/"}),
    ("fs__read_text_file", {"path": "/tmp/p1/key.pem/."}),
    ("fs__read_text_file", {"path": "/tmp/p1/.git-credentials/"}),
    ("fs__read_text_file", {"paths": ["README.md", "/home/u/.ssh/id_rsa"]}),
    ("fs__read_text_file", {"files": [{"path": "/home/u/.aws/credentials"}]}),
    ("fs__read_text_file", {"request": {"source": "/home/u/.codex/auth.json"}}),
    ("search", {"pattern": "BEGIN OPENSSH", "directory": "/home/me"}),
    ("search", {"pattern": ".", "directory": "/"}),
    ("search", {"pattern": "=", "directory": ".", "glob": ".env"}),
    ("search", {"pattern": ".", "directory": "src", "glob": "**/.aws/credentials"}),
    ("read", {"path": "/workspace/app/docs/../.env"}),
]


@pytest.mark.parametrize(("tool", "params"), ADAPTER_ATTEMPTS, ids=lambda x: json.dumps(x)[:60])
def test_the_adapters_mapping_hides_no_secret(tool: str, params: dict[str, Any]) -> None:
    calls = path_calls(params, "/workspace/app")
    decisions = [decide(tool, p) for p in calls]
    assert not all(d.allowed for d in decisions), calls
    fired = {p for d in decisions for p in d.policies}
    assert fired & {"fs.no-secrets", "fs.no-broad-search", "fs.no-traversal"}, fired


def test_one_reason_per_promise() -> None:
    """A secret named by several of a call's arguments is refused by one rule, once (#28)."""
    params = {"path": "/home/u/.ssh/id_rsa", "absolutePath": "/home/u/.ssh/id_rsa"}
    assert decide("read", params).policies == ("fs.no-secrets",)


def test_writes_stay_in_the_workspace_by_the_adapters_word() -> None:
    inside = path_calls({"path": "/workspace/app/src/a.py", "content": "x"}, "/workspace/app")
    assert all(decide("write", p).allowed for p in inside)
    for path in ("/workspace/app/../other/a.py", "/tmp/a.py", "../a.py"):
        calls = path_calls({"path": path, "content": "x"}, "/workspace/app")
        assert "fs.writes-in-workspace" in decide("write", calls[0]).policies, path


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
        ("exec", {"command": "git diff"}),
        ("exec", {"command": "git diff --stat --no-ext-diff HEAD~1"}),
        ("exec", {"command": "git log"}),
        ("exec", {"command": "git log --oneline -5"}),
        ("exec", {"command": "grep -x -n 'main' src/app.py"}),
        ("exec", {"command": "grep -rn TODO ./src"}),
        ("exec", {"command": "rg -n 'fn main' src"}),
        ("exec", {"command": "python -m pytest"}),
        ("exec", {"command": "python -m pytest -x -q -p no:cacheprovider tests/test_app.py"}),
        ("exec", {"command": "npm test"}),
        ("exec", {"command": "npm test -- --watch=false"}),
        ("fs__read_text_file", {"path": "/workspace/app/README.md"}),
        ("read", {"path": "src/app.py", "absolutePath": "/workspace/app/src/app.py"}),
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
