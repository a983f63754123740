"""Issue 23, the path items, through ``cedarlite hook claude-code`` as Claude Code runs it: one
hook process per event, payloads shaped exactly like Claude Code's (agent-hosts.md §1.2, §1.5).

Search tools read anywhere (item 2), the agents' own credential stores (item 3), self-protection
at any depth and through symbolic links (item 4), paths that keep the meaning the host sent under
a user's own rules (item 5), garbage in paths (item 6); and, in process, a property: every
spelling of a forbidden file that the OS opens as that file is denied by every adapter.
"""

from __future__ import annotations

import asyncio
import io
import os
import shutil
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_hook_claude_code import EXAMPLE, Answer, Project, run

from cedarlite import shipped
from cedarlite.hosts.claude_code import HookOptions
from cedarlite.hosts.claude_code import run as hook_run
from cedarlite.hosts.mcp_gate import McpGate


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    root = tmp_path_factory.mktemp("app")
    (root / ".claude" / "commands").mkdir(parents=True)
    (root / "src").mkdir()
    for name in ("cedarlite.json", "rules.cedar"):
        shutil.copy(EXAMPLE / name, root / ".claude" / name)
    # A committed symbolic link into .claude/ (item 4).
    os.symlink(".claude/commands", root / "cmdlink")
    p = Project(root, root.parent / (root.name + "-state"))
    # Installing builds the guard the first (parallel) calls use.
    installed = run([*p.args(), "--print-settings"], b"")
    assert installed.code == 0, installed.stderr
    yield p


def hooks(project: Project, cases: list[tuple[str, Any]]) -> list[Answer]:
    with ThreadPoolExecutor(max_workers=3) as pool:
        return list(pool.map(lambda c: project.hook(c[0], c[1]), cases))


def test_search_tools_do_not_read_anywhere(project: Project) -> None:
    """Item 2: Grep's and Glob's root and their glob filters are paths; `/` or a home as the
    root of a search is judged by the path rules."""
    cases = [
        ("Grep", {"pattern": ".", "path": "/", "glob": "**/.aws/credentials",
                  "output_mode": "content"}),
        ("Grep", {"pattern": "BEGIN OPENSSH", "path": "/home/u", "-A": 30}),
        ("Grep", {"pattern": "=", "path": ".", "glob": ".env"}),
        ("Grep", {"pattern": "token", "glob": "**/.npmrc"}),
        ("Glob", {"pattern": "**/*", "path": "/"}),
        ("Glob", {"pattern": "/home/u/.ssh/*"}),
        ("Glob", {"pattern": "*", "path": "/root"}),
    ]  # fmt: skip
    for (tool, tool_input), answer in zip(cases, hooks(project, cases), strict=True):
        assert answer.decision == "deny", (tool, tool_input, answer.reason)
        assert "fs.no-secrets" in answer.reason or "fs.no-broad-search" in answer.reason
    # Without a root, Grep searches the working directory: a home is searched whole.
    home = project.hook("Grep", {"pattern": "aws_secret", "output_mode": "content"}, cwd="/root")
    assert home.decision == "deny" and "fs.no-broad-search" in home.reason, home.reason
    ok = [("Grep", {"pattern": "TODO", "path": "src", "glob": "*.py", "output_mode": "content"}),
          ("Grep", {"pattern": "TODO"}),
          ("Glob", {"pattern": "src/**/*.py"})]  # fmt: skip
    for (tool, tool_input), answer in zip(ok, hooks(project, ok), strict=True):
        assert answer.decision == "allow", (tool, tool_input, answer.reason)


def test_the_agents_credential_stores_are_secrets(project: Project) -> None:
    """Item 3: the same stores through Bash and through the file tools, and `/etc/passwd`
    alike for both."""
    files = [
        "/home/u/.claude/.credentials.json", "/home/u/.codex/auth.json",
        "/home/u/.config/anthropic/credentials", "/home/u/.config/openai/auth.json",
        "/home/u/.gemini/oauth_creds.json", "/home/u/.config/github-copilot/apps.json",
        "/home/u/.cursor/mcp.json", "/home/u/.config/gcloud/application_default_credentials.json",
        "/home/u/.kube/config", "/home/u/.docker/config.json", "/home/u/.npmrc",
        "/home/u/.pypirc", "/etc/passwd",
    ]  # fmt: skip
    cases: list[tuple[str, Any]] = [("Read", {"file_path": f}) for f in files]
    cases += [("Bash", {"command": "cat " + f.replace("/home/u", "~")}) for f in files]
    cases += [("Bash", {"command": "head -c 4096 ~/.config/anthropic/credentials"})]
    for (tool, tool_input), answer in zip(cases, hooks(project, cases), strict=True):
        assert answer.decision == "deny", (tool, tool_input, answer.reason)
        assert "no-secrets" in answer.reason, (tool, tool_input, answer.reason)


def test_self_protection_at_any_depth_and_through_links(project: Project) -> None:
    """Item 4: nested arguments of MCP tools, and `link/..` resolved as the OS does."""
    root = project.root
    cases = [
        ("mcp__fs__write_files",
         {"files": [{"path": f"{root}/.claude/settings.local.json", "content": "{}"}]}),
        ("mcp__fs__write_files", {"paths": [f"{root}/.claude/cedarlite.json"]}),
        ("mcp__fs__edit", {"edit": {"target": {"file": f"{root}/.claude/rules.cedar"}}}),
        ("Write", {"file_path": f"{root}/cmdlink/../settings.local.json", "content": "{}"}),
    ]  # fmt: skip
    for (tool, tool_input), answer in zip(cases, hooks(project, cases), strict=True):
        assert answer.decision == "deny", (tool, tool_input, answer.reason)
        assert "a person must edit it" in answer.reason, (tool_input, answer.reason)


def test_paths_keep_the_meaning_the_host_sent(project: Project, tmp_path: Path) -> None:
    """Item 5: a user's rules written against what Claude Code sends (absolute paths) hold
    whatever the working directory; the shipped rule keeps writes in the project."""
    root = project.root
    rules = tmp_path / "user.cedar"
    rules.write_text(
        '@id("user.no-dotenv")\n'
        "forbid (principal, action, resource)\n"
        'when { resource has path && resource.path like "*/.env" };\n'
        '@id("user.writes-in-project")\n'
        'forbid (principal, action == Action::"write", resource)\n'
        f'unless {{ resource has path && resource.path like "{root}/*" }};\n'
    )
    args = ["--config", str(project.config), "--rules", "cedarlite:exec-commands",
            "--rules", str(rules), "--state-dir", str(project.state)]  # fmt: skip
    own = [
        ("Read", {"file_path": f"{root}/.env"}, "deny", "user.no-dotenv"),
        ("Write", {"file_path": f"{root}/src/a.py", "content": "x"}, "allow", ""),
        ("Write", {"file_path": "/tmp/elsewhere.py", "content": "x"}, "deny", "user.writes"),
    ]
    for tool, tool_input, decision, policy in own:
        answer = run(args, project.event(tool, tool_input))
        assert answer.decision == decision, (tool_input, answer.reason)
        assert policy in answer.reason
    shipped = [
        ("Write", {"file_path": f"{root}/src/b.py", "content": "x"}, "allow"),
        ("Write", {"file_path": f"{root}/../outside.py", "content": "x"}, "deny"),
        ("Edit", {"file_path": "/home/u/.bashrc", "old_string": "a", "new_string": "b"}, "deny"),
    ]
    answers = hooks(project, [(t, i) for t, i, _ in shipped])
    for (_, tool_input, decision), answer in zip(shipped, answers, strict=True):
        assert answer.decision == decision, (tool_input, answer.reason)


def test_garbage_in_a_path_is_denied(project: Project) -> None:
    """Item 6: NUL and other control characters name no file."""
    cases = [
        ("Read", {"file_path": "/home/u/.ssh\u0000/config"}),
        ("Read", {"file_path": f"{project.root}/.env\u0000.txt"}),
        ("mcp__fs__read_text_file", {"path": "notes\u0007.txt"}),
    ]
    for (tool, tool_input), answer in zip(cases, hooks(project, cases), strict=True):
        assert answer.decision == "deny", (tool, tool_input, answer.reason)
        assert "control character" in answer.reason


# ---------------------------------------------------------------------------------------------
# Property: every spelling the OS opens as a forbidden file is denied, by every adapter

SECRETS = [".env", ".ssh/id_rsa", ".aws/credentials", ".claude/.credentials.json", "key.pem"]
SEGMENT = st.sampled_from(["", ".", "x/..", "./.", "x/./..", "x/y/../.."])


@st.composite
def spellings(draw: st.DrawFn, home: str) -> tuple[str, str]:
    """(the secret's path, a spelling of it): extra separators, `.` and `x/..` segments,
    trailing `/`, `/.` or `//` (those open the file itself on Node's `path.resolve`, on which
    the MCP filesystem server opens files)."""
    secret = draw(st.sampled_from(SECRETS))
    out = "/".join("/" * draw(st.integers(0, 2)) + p for p in home.strip("/").split("/"))
    out = "/" + out
    parts = secret.split("/")
    for part in parts:
        extra = draw(SEGMENT)  # after the home and each directory of the secret
        if extra:
            out += "/" + extra
        out += "/" * draw(st.integers(1, 3)) + part
    out += draw(st.sampled_from(["", "/", "/.", "//", "/./"]))
    return f"{home}/{secret}", out


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A home holding the secrets (and the `x/y` the spellings climb out of)."""
    base = tmp_path_factory.mktemp("home")
    for secret in SECRETS:
        (base / secret).parent.mkdir(parents=True, exist_ok=True)
        (base / secret).write_text("SECRET")
    for secret in SECRETS:
        directory = (base / secret).parent
        while True:  # `x/..` opens only through an existing `x`
            (directory / "x" / "y").mkdir(parents=True, exist_ok=True)
            if directory == base:
                break
            directory = directory.parent
    return str(base)


def _os_opens(spelling: str, secret: str) -> bool:
    """Whether the OS opens ``spelling`` as ``secret`` (the trailing separators Node drops
    are dropped first, as the filesystem server does)."""
    bare = spelling.rstrip("/")
    while bare.endswith("/."):
        bare = bare[:-2].rstrip("/")
    try:
        return os.path.samefile(bare, secret)
    except OSError:
        return False


def test_every_adapter_denies_every_spelling(project: Project, home: str) -> None:
    options = HookOptions(str(project.config), project.rules, str(project.state), deadline=600)
    gate = McpGate(
        {"tools": {"profile": "coding"}},
        rules=[shipped.resolve("cedarlite:paths")],
        server="fs",
    )
    gate.observe([{"name": "read_text_file", "inputSchema": {
        "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"],
        "additionalProperties": False}}])  # fmt: skip

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.data())
    def check(data: st.DataObject) -> None:
        secret, spelling = data.draw(spellings(home))
        if not _os_opens(spelling, secret):
            return  # a spelling the OS does not open as the secret: nothing to promise
        for tool, tool_input in (
            ("Read", {"file_path": spelling}),
            ("Grep", {"pattern": "x", "path": spelling}),
            ("mcp__fs__read_text_file", {"path": spelling}),
        ):
            out = io.StringIO()
            event = project.event(tool, tool_input)
            hook_run(options, io.BytesIO(event.encode()), out, io.StringIO())
            answer = Answer(0, out.getvalue(), "")
            assert answer.decision == "deny", (tool, spelling, answer.reason)
        verdict = asyncio.run(gate.decide("read_text_file", {"path": spelling}))
        assert not verdict.allowed, (spelling, verdict)
        verdict = asyncio.run(gate.decide("read_text_file", {"path": [spelling]}))
        assert not verdict.allowed, (spelling, verdict)

    check()
