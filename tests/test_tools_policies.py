"""The shipped ``policies/``: generated files up to date, and the argument rules on
``resource.command`` and ``resource.path``, decided through the same engine as the tool policy."""

from __future__ import annotations

from pathlib import Path

import pytest

import cedarlite
from cedarlite import PolicySet
from cedarlite.tools import ToolCatalog
from cedarlite.tools.generated import shipped_policies
from cedarlite.tools.params import validate_rules
from cedarlite.tools.resolve import ENGINE, RunContext, ToolPolicy

POLICIES = Path(__file__).resolve().parents[1] / "policies"
CORE = ToolCatalog.core()


@pytest.mark.parametrize("filename", sorted(shipped_policies()))
def test_generated_policy_files_are_up_to_date(filename: str) -> None:
    # Regenerate with: cedarlite.tools.generated.write_shipped_policies("policies")
    assert (POLICIES / filename).read_text(encoding="utf-8") == shipped_policies()[filename]


@pytest.mark.parametrize("path", sorted(POLICIES.glob("*.cedar")), ids=lambda p: p.name)
def test_every_shipped_file_parses_and_validates(path: Path) -> None:
    policies = PolicySet.from_file(path)
    assert len(policies) > 0
    if path.name in ("exec-commands.cedar", "paths.cedar", "owner-only.cedar", "tools-base.cedar"):
        assert validate_rules(policies, CORE).passed


def test_the_shipped_profile_decides_like_the_compiled_configuration() -> None:
    base = (POLICIES / "tools-base.cedar").read_text(encoding="utf-8")
    profile = (POLICIES / "profile-coding.cedar").read_text(encoding="utf-8")
    shipped = PolicySet.from_str(base + profile)
    policy = ToolPolicy({"tools": {"profile": "coding"}}, CORE)
    run = RunContext.of({"senderIsOwner": True}, policy.config)
    for t in CORE.tools:
        request = cedarlite.Request(run.principal, t.action, t.resource, run.record())
        ours = cedarlite.is_authorized(request, shipped, CORE.entities, engine=ENGINE).decision
        theirs = cedarlite.is_authorized(
            request, policy.policies, CORE.entities, engine=ENGINE
        ).decision
        assert ours == theirs, t.name


# --- argument rules ---------------------------------------------------------------------------

RULES = PolicySet.from_str(
    (POLICIES / "exec-commands.cedar").read_text(encoding="utf-8")
    + (POLICIES / "paths.cedar").read_text(encoding="utf-8")
)
POLICY = ToolPolicy({"tools": {"profile": "coding"}}, CORE)


@pytest.mark.parametrize(
    ("command", "fired"),
    [
        ("git status", ()),
        ("git diff --stat", ()),
        ("ls -la src", ()),
        ("pwd", ()),
        ("python -m pytest -q tests", ()),
        ("git push origin main", ("exec.safe-prefixes",)),
        ("make deploy", ("exec.safe-prefixes",)),
        (
            "ls; rm -rf /",
            ("exec.safe-prefixes", "exec.no-chaining", "exec.dangerous", "exec.no-secrets"),
        ),
        ("cat notes.txt | sh", ("exec.no-chaining",)),
        ("ls $(whoami)", ("exec.no-chaining",)),
        ("grep -r key . > out.txt", ("exec.no-chaining",)),
        ("ls -l\nrm x", ("exec.no-chaining",)),
        ("sudo ls", ("exec.safe-prefixes", "exec.dangerous")),
        ("cat x && curl http://evil", ("exec.no-chaining", "exec.dangerous")),
    ],
)
def test_exec_command_rules(command: str, fired: tuple[str, ...]) -> None:
    decision = POLICY.authorize_call({}, "exec", {"command": command}, rules=RULES)
    assert decision.allowed is (not fired)
    if fired:
        assert set(decision.policies) == set(fired)


def test_elevated_exec_is_forbidden() -> None:
    decision = POLICY.authorize_call({}, "exec", {"command": "ls", "elevated": True}, rules=RULES)
    assert decision.policies == ("exec.no-elevated",)
    assert POLICY.authorize_call({}, "exec", {"command": "ls", "elevated": False}, rules=RULES)


@pytest.mark.parametrize(
    ("tool", "path", "fired"),
    [
        ("read", "src/main.py", ()),
        ("read", "/workspace/README.md", ()),
        ("read", "/usr/share/dict/words", ()),
        ("read", ".env", ("fs.no-secrets",)),
        ("read", "config/.env.local", ("fs.no-secrets",)),
        ("read", "/home/me/.ssh/id_ed25519", ("fs.no-secrets",)),
        ("read", "../secrets.txt", ("fs.no-traversal",)),
        ("read", "a/../../b", ("fs.no-traversal",)),
        ("write", "notes/todo.md", ()),
        ("write", "/workspace/out.txt", ()),
        ("write", "/etc/passwd", ("fs.no-secrets", "fs.writes-in-workspace")),
        ("write", "/tmp/x", ("fs.writes-in-workspace",)),
        ("edit", "~/.bashrc", ("fs.writes-in-workspace",)),
    ],
)
def test_path_rules(tool: str, path: str, fired: tuple[str, ...]) -> None:
    params = {
        "read": {"path": path},
        "write": {"path": path, "content": "x"},
        "edit": {"path": path, "oldText": "a", "newText": "b"},
    }[tool]
    decision = POLICY.authorize_call({}, tool, params, rules=RULES)
    assert decision.allowed is (not fired)
    if fired:
        assert set(decision.policies) == set(fired)


def test_the_tool_policy_still_applies_to_calls() -> None:
    catalog = ToolCatalog.from_tools([{"name": "exec"}, {"name": "browser"}])
    policy = ToolPolicy(
        {
            "tools": {"profile": "coding"},
            "channels": {"discord": {"groups": {"*": {"tools": {"deny": ["exec"]}}}}},
        },
        catalog,
    )
    in_group = {"channel": "discord", "groupId": "g"}
    assert policy.authorize_call(in_group, "exec", {"command": "ls"}, rules=RULES).policies == (
        'channels.discord.groups["*"].tools.deny',
    )
    assert policy.authorize_call({}, "exec", {"command": "ls"}, rules=RULES)
    assert policy.authorize_call({}, "browser", {}, rules=RULES).policies == ("tools.profile",)
