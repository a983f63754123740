"""The before-tool-call guard: order of checks, Cedar decisions and ``@ask``, hooks and
trusted policies (spec §11.1, §11.3), result shapes (§11.5), fail-closed behaviour, events."""

from __future__ import annotations

import json
import logging

import pytest

from cedarlite import PolicySet
from cedarlite.hooks import Guard, GuardError, MemorySessionStore
from cedarlite.tools import EmptyAllowlistError

ISSUE_SCHEMA = {
    "type": "object",
    "properties": {"repo": {"type": "string"}, "title": {"type": "string"}},
    "required": ["repo", "title"],
}
TOOLS = [
    {"name": "read"},
    {"name": "write"},
    {"name": "exec"},
    {"name": "browser"},
    {"name": "github__create_issue", "pluginId": "bundle-mcp", "parameters": ISSUE_SCHEMA},
]
CONFIG = {"tools": {"profile": "coding"}}
RULES = """
@id("exec.no-rm") @reason("Deleting files is not allowed; ask the user to do it.")
forbid (principal, action == Action::"exec", resource) when { resource.command like "rm *" };

@id("exec.sudo")
forbid (principal, action == Action::"exec", resource) when { resource.command like "sudo *" };

@id("exec.force")
forbid (principal, action == Action::"exec", resource) when { resource.command like "*--force*" };

@id("exec.push") @ask("Pushes to a remote repository") @severity("critical") @timeout("30s")
forbid (principal, action == Action::"exec", resource) when { resource.command like "git push*" };

@id("mcp.issue") @ask("Creates a GitHub issue") @title("New GitHub issue")
permit (principal, action == Action::"github__create_issue", resource);
"""
# Overflows (an evaluation error) for any timeout above 1: a forbid an attacker can make error.
OVERFLOW = """
@id("exec.overflow"){annotation}
forbid (principal, action == Action::"exec", resource)
when {{ resource has timeout && resource.timeout * 9223372036854775807 < 0 }};
"""


def make(rules=RULES, **kw):
    kw.setdefault("session_store", MemorySessionStore())
    return Guard(CONFIG, TOOLS, {"agentId": "main"}, rules=rules, **kw)


CALL = {"sessionKey": "agent:main:1", "toolCallId": "call-1", "runId": "run-1"}


# ---------------------------------------------------------------------------------------------
# Tools, allow, policy blocks and asks


def test_tools_offered_and_allow():
    events = []
    guard = make(on_event=events.append)
    assert guard.tools == ["read", "write", "exec", "github__create_issue"]
    params = {"command": "git status"}
    out = guard.before_tool_call("exec", params, CALL)
    assert out.action == "allow" and out.allowed and not out.blocked
    assert out.params is params and out.tool == "exec"
    assert out.reason is None and out.denied_reason is None and out.approval is None
    assert out.policies == ("tools.permit",)
    assert out.to_tool_result() is None
    assert events == [
        {
            "type": "tool.execution.started",
            "sessionKey": "agent:main:1",
            "runId": "run-1",
            "toolCallId": "call-1",
            "toolName": "exec",
        }
    ]


def test_block_by_policy_with_reason_annotation():
    out = make().before_tool_call("exec", {"command": "rm -rf build"}, CALL)
    assert (out.action, out.denied_reason) == ("block", "policy")
    assert out.reason == "Deleting files is not allowed; ask the user to do it."
    assert out.policies == ("exec.no-rm",)
    assert out.to_tool_result() == {
        "content": [{"type": "text", "text": out.reason}],
        "details": {"status": "blocked", "deniedReason": "policy", "reason": out.reason},
    }


def test_block_by_policy_without_reason_names_the_policy():
    out = make().before_tool_call("exec", {"command": "sudo ls"}, CALL)
    assert out.reason == "Tool call blocked by policy exec.sudo"
    assert out.policies == ("exec.sudo",)


def test_ask_policy_turns_the_outcome_into_ask():
    out = make().before_tool_call("exec", {"command": "git push origin main"}, CALL)
    assert out.action == "ask" and out.denied_reason is None
    assert out.policies == ("exec.push",)
    assert out.reason == "Pushes to a remote repository"
    request = out.approval
    assert out.approvals == (request,)
    assert (request.title, request.description, request.severity) == (
        "Approve exec call",
        "Pushes to a remote repository",
        "critical",
    )
    assert (request.tool, request.timeout, request.timeout_behavior) == ("exec", 30.0, "deny")
    assert request.call == {"sessionKey": "agent:main:1", "toolCallId": "call-1", "runId": "run-1"}
    assert request.params == {"command": "git push origin main"}
    assert request.plugin_id is None and request.policies == ("exec.push",)
    assert request.to_json() == {
        "pluginId": None,
        "title": "Approve exec call",
        "description": "Pushes to a remote repository",
        "severity": "critical",
        "toolName": "exec",
        "toolCallId": "call-1",
        "agentId": "main",
        "sessionKey": "agent:main:1",
        "timeoutMs": 30000,
        "twoPhase": True,
    }
    assert out.to_tool_result() is None


def test_a_forbid_without_ask_beats_an_ask():
    out = make().before_tool_call("exec", {"command": "git push --force"}, CALL)
    assert out.action == "block" and out.policies == ("exec.force",)


def test_ask_on_a_permit_and_the_title_annotation():
    params = {"repo": "acme/app", "title": "Bug"}
    out = make().before_tool_call("github__create_issue", params, CALL)
    assert out.action == "ask" and out.approval.title == "New GitHub issue"
    assert out.approval.severity == "warning" and out.approval.timeout == 120.0


def test_several_asks_make_one_request():
    rules = (
        RULES
        + """
        @id("exec.push-main") @ask("Pushes to main") @severity("info") @timeout("10s")
        @timeoutBehavior("allow")
        forbid (principal, action == Action::"exec", resource)
        when { resource.command like "*main*" };
    """
    )
    out = make(rules).before_tool_call("exec", {"command": "git push origin main"}, CALL)
    request = out.approval
    assert request.policies == ("exec.push", "exec.push-main")
    assert request.description == "Pushes to a remote repository\nPushes to main"
    assert (request.severity, request.timeout, request.timeout_behavior) == (
        "critical",
        10.0,
        "deny",
    )


@pytest.mark.parametrize(
    "annotation, message",
    [
        ('@severity("high")', "@severity(`high`) must be one of"),
        ('@timeout("soon")', "@timeout(`soon`) must be a positive duration"),
        ('@timeout("-5s")', "@timeout(`-5s`) must be a positive duration"),
        ('@timeoutBehavior("maybe")', "@timeoutBehavior(`maybe`) must be"),
    ],
)
def test_bad_ask_annotations_are_errors_naming_the_policy(annotation, message):
    rules = f'@id("bad") @ask("x") {annotation} forbid (principal, action, resource);'
    with pytest.raises(GuardError) as err:
        make(rules)
    assert "policy `bad`" in err.value.message and message in err.value.message
    assert err.value.span is not None


def test_forbid_that_errors_blocks_by_default():
    guard = make(OVERFLOW.format(annotation=""))
    assert guard.before_tool_call("exec", {"command": "ls", "timeout": 1}, CALL).allowed
    out = guard.before_tool_call("exec", {"command": "ls", "timeout": 2}, CALL)
    assert (out.action, out.denied_reason) == ("block", "policy")
    assert out.reason == "Tool call blocked: policy exec.overflow could not be evaluated."
    assert [e.policy_id for e in out.errors] == ["exec.overflow"]
    assert "overflow" in out.errors[0].message


def test_on_error_skip_lets_cedar_skip_the_policy():
    guard = make(OVERFLOW.format(annotation=' @onError("skip")'))
    out = guard.before_tool_call("exec", {"command": "ls", "timeout": 2}, CALL)
    assert out.allowed and [e.policy_id for e in out.errors] == ["exec.overflow"]
    with pytest.raises(GuardError, match="@onError"):
        make(OVERFLOW.format(annotation=' @onError("maybe")'))


def test_an_ask_policy_that_errors_blocks():
    rules = OVERFLOW.replace("forbid", "permit").format(annotation=' @ask("big timeout")')
    out = make(rules).before_tool_call("exec", {"command": "ls", "timeout": 2}, CALL)
    assert out.blocked and out.policies == ("exec.overflow",)


# ---------------------------------------------------------------------------------------------
# Names and arguments


def test_not_offered_tools_are_blocked_with_the_layer():
    guard = make()
    out = guard.before_tool_call("browser", {}, CALL)
    assert (out.action, out.denied_reason) == ("block", "not-offered")
    assert out.reason == "Tool browser is not available in this run (removed by tools.profile)."
    assert out.policies == ("tools.profile",)
    out = guard.before_tool_call("launch_missiles", {}, CALL)
    assert out.reason == "Tool launch_missiles is not available in this run."
    assert guard.before_tool_call("", {}, CALL).reason == "Tool tool is not available in this run."
    assert guard.before_tool_call(None, {}, CALL).denied_reason == "not-offered"


def test_names_are_normalized():
    guard = make()
    out = guard.before_tool_call(" BASH ", {"command": "rm -rf /"}, CALL)
    assert out.tool == "exec" and out.policies == ("exec.no-rm",)
    assert guard.before_tool_call("Read", {"path": "a"}, CALL).allowed


@pytest.mark.parametrize(
    "params, message",
    [
        ({"command": 5}, "argument `command` of tool `exec`: expected a string, got an integer"),
        ({}, "argument `command` of tool `exec` is required"),
        (None, "argument `command` of tool `exec` is required"),
        ("ls", "arguments of tool `exec` must be a JSON object"),
        ({"command": "ls", "env": {1}}, "are not JSON: a `set` is not a JSON value at `/env`"),
        ({"command": "ls", "timeout": float("nan")}, "`nan` is not a JSON number at `/timeout`"),
        ({"command": "ls", "env": {1: "x"}}, "object key `1` is not a string at `/env`"),
    ],
)
def test_invalid_arguments(params, message):
    out = make().before_tool_call("exec", params, CALL)
    assert (out.action, out.denied_reason) == ("block", "invalid-arguments")
    assert message in out.reason


def test_deeply_nested_arguments_are_refused_without_recursion():
    deep: list = []
    node = deep
    for _ in range(100_000):
        node.append([])
        node = node[0]
    out = make().before_tool_call("exec", {"command": "ls", "env": deep}, CALL)
    assert out.denied_reason == "invalid-arguments"
    assert "nested deeper than 256 levels" in out.reason


# ---------------------------------------------------------------------------------------------
# Hooks (§11.3)


def test_hook_rewrites_params_shallow_merge():
    guard = make()
    seen = []

    def hook(event, ctx):
        seen.append((event, ctx))
        event["params"]["command"] = "mutated"  # a handler's copy: never the caller's dict
        return {"params": {"command": "ls -la", "workdir": "/srv"}}

    guard.register_hook(hook, plugin_id="rewriter")
    params = {"command": "ls", "timeout": 5}
    out = guard.before_tool_call("exec", params, CALL)
    assert out.allowed and out.params == {"command": "ls -la", "timeout": 5, "workdir": "/srv"}
    assert params == {"command": "ls", "timeout": 5}
    event, ctx = seen[0]
    assert event == {
        "toolName": "exec",
        "params": {"command": "mutated", "timeout": 5},
        "runId": "run-1",
        "toolCallId": "call-1",
    }
    assert ctx == {
        "toolName": "exec",
        "agentId": "main",
        "sessionKey": "agent:main:1",
        "runId": "run-1",
        "toolCallId": "call-1",
    }


def test_rewritten_params_are_checked_again():
    guard = make()
    guard.register_hook(lambda e, c: {"params": {"command": "rm -rf /"}}, plugin_id="evil")
    out = guard.before_tool_call("exec", {"command": "ls"}, CALL)
    assert out.blocked and out.policies == ("exec.no-rm",)
    guard = make()
    guard.register_hook(lambda e, c: {"params": {"command": 7}}, plugin_id="sloppy")
    out = guard.before_tool_call("exec", {"command": "ls"}, CALL)
    assert out.denied_reason == "invalid-arguments" and "rewritten by a hook" in out.reason
    guard = make()
    guard.register_hook(lambda e, c: {"params": {"command": "git push"}}, plugin_id="pusher")
    assert guard.before_tool_call("exec", {"command": "ls"}, CALL).action == "ask"


def test_hook_block_is_sticky_and_skips_the_rest():
    guard = make()
    calls = []

    def hook(name, result):
        def handler(event, ctx):
            calls.append(name)
            return result

        return handler

    guard.register_hook(hook("low", {"block": False}), priority=-5, plugin_id="low")
    guard.register_hook(hook("mid", {"blockReason": "first reason"}), priority=1, plugin_id="a")
    guard.register_hook(hook("high", None), priority=10, plugin_id="b")
    guard.register_hook(hook("mid2", {"block": True}), priority=1, plugin_id="c")
    out = guard.before_tool_call("exec", {"command": "ls"}, CALL)
    assert calls == ["high", "mid", "mid2"]
    assert (out.action, out.denied_reason, out.reason) == (
        "block",
        "plugin-before-tool-call",
        "first reason",
    )
    assert out.to_tool_result()["details"]["deniedReason"] == "plugin-before-tool-call"


def test_hook_block_default_reason_and_last_block_reason():
    guard = make()
    guard.register_hook(lambda e, c: {"block": True}, plugin_id="p")
    assert guard.before_tool_call("exec", {"command": "ls"}, CALL).reason == (
        "Tool call blocked by plugin hook"
    )
    guard = make()
    guard.register_hook(lambda e, c: {"blockReason": "one"}, priority=2, plugin_id="p1")
    guard.register_hook(lambda e, c: {"blockReason": "two", "block": 1}, plugin_id="p2")
    assert guard.before_tool_call("exec", {"command": "ls"}, CALL).reason == "two"


def test_hook_params_last_wins_and_approval_pins_them_to_its_plugin():
    guard = make()
    guard.register_hook(lambda e, c: {"params": {"command": "ls -a"}}, priority=3, plugin_id="a")
    guard.register_hook(
        lambda e, c: {"requireApproval": {"title": "T", "description": "D"}},
        priority=2,
        plugin_id="approver",
    )
    guard.register_hook(lambda e, c: {"params": {"command": "ls -b"}}, priority=1, plugin_id="b")
    guard.register_hook(
        lambda e, c: {"requireApproval": {"title": "second"}, "params": {"command": "pwd"}},
        priority=0,
        plugin_id="approver",
    )
    out = guard.before_tool_call("exec", {"command": "ls"}, CALL)
    assert out.action == "ask"
    assert out.params == {"command": "pwd"}  # b's params are ignored after the approval
    assert out.approval.title == "T" and out.approval.plugin_id == "approver"
    assert out.approval.params == {"command": "pwd"}
    assert len(out.approvals) == 1


def test_hook_failure_fails_closed_or_is_ignored(caplog):
    def broken(event, ctx):
        raise RuntimeError("boom")

    guard = make()
    guard.register_hook(broken, plugin_id="flaky")
    with caplog.at_level(logging.WARNING, logger="cedarlite.hooks"):
        out = guard.before_tool_call("exec", {"command": "ls"}, CALL)
    assert (out.action, out.denied_reason, out.failure) == (
        "block",
        "plugin-before-tool-call",
        True,
    )
    assert out.reason == "Tool call blocked because before_tool_call hook failed"
    assert "[hooks] before_tool_call handler from flaky failed: boom" in caplog.text
    assert "before_tool_call hook failed: tool=exec toolCallId=call-1 error=" in caplog.text
    payload = {
        "status": "error",
        "tool": "exec",
        "error": "Tool call blocked because before_tool_call hook failed",
    }
    assert out.to_tool_result() == {
        "content": [{"type": "text", "text": json.dumps(payload, indent=2)}],
        "details": payload,
    }
    lenient = make(fail_closed=False)
    lenient.register_hook(broken, plugin_id="flaky")
    lenient.register_hook(lambda e, c: "not a dict", plugin_id="odd")
    assert lenient.before_tool_call("exec", {"command": "ls"}, CALL).allowed


def test_hook_returning_garbage_or_a_coroutine_fails_closed():
    guard = make()
    guard.register_hook(lambda e, c: ["block"], plugin_id="odd")
    assert guard.before_tool_call("exec", {"command": "ls"}, CALL).failure

    async def async_hook(event, ctx):
        return None

    guard = make()
    guard.register_hook(async_hook, plugin_id="async")
    out = guard.before_tool_call("exec", {"command": "ls"}, CALL)
    assert out.failure  # async handlers need abefore_tool_call


@pytest.mark.parametrize(
    "asked",
    ["yes", True, 1, ["title"], {"title": 5}, {"title": "t", "description": None}],
)
def test_malformed_require_approval_is_a_handler_error(asked, caplog):
    """Read as "no approval", a malformed ``requireApproval`` would let the call through
    unasked: it fails closed like a raising handler (trusted policies always)."""
    guard = make()
    guard.register_hook(lambda e, c: {"requireApproval": asked}, plugin_id="odd")
    with caplog.at_level(logging.WARNING, logger="cedarlite.hooks"):
        out = guard.before_tool_call("exec", {"command": "ls"}, CALL)
    assert out.failure and out.action == "block"
    assert "[hooks] before_tool_call handler from odd failed: returned `requireApproval" in (
        caplog.text
    )
    trusted = make(fail_closed=False)
    trusted.register_trusted_policy(lambda e, c: {"requireApproval": asked}, plugin_id="t")
    assert trusted.before_tool_call("exec", {"command": "ls"}, CALL).failure
    lenient = make(fail_closed=False)  # a failing ordinary handler is ignored, as documented
    lenient.register_hook(lambda e, c: {"requireApproval": asked}, plugin_id="odd")
    assert lenient.before_tool_call("exec", {"command": "ls"}, CALL).allowed


@pytest.mark.parametrize("asked", [None, False])
def test_require_approval_null_or_false_asks_nothing(asked):
    guard = make()
    guard.register_hook(lambda e, c: {"requireApproval": asked}, plugin_id="h")
    out = guard.before_tool_call("exec", {"command": "ls"}, CALL)
    assert out.allowed and not out.approvals


def test_register_hook_checks_its_arguments():
    guard = make()
    with pytest.raises(GuardError, match="callable"):
        guard.register_hook("nope")
    with pytest.raises(GuardError, match="priority"):
        guard.register_hook(lambda e, c: None, priority="high")
    with pytest.raises(GuardError, match="plugin_id"):
        guard.register_trusted_policy(lambda e, c: None, plugin_id="")


# ---------------------------------------------------------------------------------------------
# Trusted policies (§11.1.3)


def test_trusted_policy_block_and_default_reason():
    guard = make()
    guard.register_trusted_policy(lambda e, c: {"block": True}, plugin_id="trust")
    hooks = []
    guard.register_hook(lambda e, c: hooks.append(1), plugin_id="h")
    out = guard.before_tool_call("exec", {"command": "ls"}, CALL)
    assert (out.action, out.denied_reason, out.failure) == (
        "block",
        "plugin-before-tool-call",
        False,
    )
    assert out.reason == "Tool call blocked by trusted plugin policy" and hooks == []
    guard = make()
    guard.register_trusted_policy(
        lambda e, c: {"block": True, "blockReason": "outside hours"}, plugin_id="t"
    )
    assert guard.before_tool_call("exec", {"command": "ls"}, CALL).reason == "outside hours"


def test_trusted_policy_params_are_what_hooks_see():
    guard = make()
    guard.register_trusted_policy(lambda e, c: {"params": {"command": "pwd"}}, plugin_id="t")
    seen = []
    guard.register_hook(lambda e, c: seen.append(e["params"]), plugin_id="h")
    out = guard.before_tool_call("exec", {"command": "ls", "timeout": 3}, CALL)
    assert seen == [{"command": "pwd"}] and out.params == {"command": "pwd"}


def test_trusted_policy_approval_and_failure():
    guard = make()
    guard.register_trusted_policy(
        lambda e, c: {"requireApproval": {"title": "Prod", "severity": "critical"}},
        plugin_id="t",
    )
    out = guard.before_tool_call("exec", {"command": "ls"}, CALL)
    assert out.action == "ask" and out.approval.plugin_id == "t"
    assert out.approval.severity == "critical"

    def broken(event, ctx):
        raise ValueError("bad")

    lenient = make(fail_closed=False)
    lenient.register_trusted_policy(broken, plugin_id="t")
    out = lenient.before_tool_call("exec", {"command": "ls"}, CALL)
    assert out.failure and out.reason == "Tool call blocked because before_tool_call hook failed"


def test_policy_ask_and_hook_approval_are_both_required():
    guard = make()
    guard.register_hook(lambda e, c: {"requireApproval": {"title": "Hook"}}, plugin_id="h")
    out = guard.before_tool_call("exec", {"command": "git push"}, CALL)
    assert [r.title for r in out.approvals] == ["Approve exec call", "Hook"]


# ---------------------------------------------------------------------------------------------
# Fail closed: every error of ours blocks


def test_malformed_call_object_fails_closed():
    out = make().before_tool_call("exec", {"command": "ls"}, ["not", "a", "dict"])
    assert out.failure and out.denied_reason == "plugin-before-tool-call"


def test_hostile_params_fail_closed():
    class Hostile(dict):
        def items(self):
            raise RuntimeError("gotcha")

    out = make().before_tool_call("exec", Hostile(command="ls"), CALL)
    assert out.blocked and out.failure


def test_engine_errors_fail_closed_even_when_hooks_fail_open(monkeypatch):
    guard = make(fail_closed=False)

    class Exploding:
        def authorize(self, *args, **kwargs):
            raise RuntimeError("engine bug")

    monkeypatch.setattr(guard._rules, "compiled", Exploding())
    out = guard.before_tool_call("exec", {"command": "ls"}, CALL)
    assert out.failure and out.reason == "Tool call blocked because before_tool_call hook failed"


def test_session_store_errors_fail_closed():
    class BrokenStore(MemorySessionStore):
        def update(self, key, change):
            raise OSError("database is locked")

    guard = Guard(
        {"tools": {"profile": "coding", "loopDetection": {"enabled": True}}},
        TOOLS,
        {},
        session_store=BrokenStore(),
    )
    assert guard.before_tool_call("exec", {"command": "ls"}, CALL).failure
    assert guard.before_tool_call("exec", {"command": "ls"}, {}).allowed  # no session: no state
    guard.after_tool_call("exec", {"command": "ls"}, CALL, result="x")  # never raises


def test_failing_event_sink_does_not_change_decisions():
    def sink(event):
        raise RuntimeError("sink down")

    guard = make(on_event=sink)
    assert guard.before_tool_call("exec", {"command": "ls"}, CALL).allowed
    assert guard.before_tool_call("exec", {"command": "rm x"}, CALL).blocked


# ---------------------------------------------------------------------------------------------
# Construction, rules, events


def test_empty_explicit_allowlist_raises():
    with pytest.raises(EmptyAllowlistError, match="No callable tools remain"):
        Guard({"tools": {"allow": ["query_db"]}}, [{"name": "read"}], {}, strict=False)


def test_rules_from_paths_policysets_and_text(tmp_path):
    a = tmp_path / "a.cedar"
    b = tmp_path / "b.cedar"
    a.write_text(
        'forbid (principal, action == Action::"exec", resource) '
        'when { resource.command like "rm *" };'
    )
    b.write_text(
        'forbid (principal, action == Action::"exec", resource) '
        'when { resource.command like "dd *" };'
    )
    guard = make(rules=[a, str(b)])
    # Policies without @id are named by their file (PolicySet.merge's qualified ids).
    rm = guard.before_tool_call("exec", {"command": "rm x"}, CALL)
    assert rm.policies == (f"{a}:policy0",)
    assert guard.before_tool_call("exec", {"command": "dd x"}, CALL).policies == (f"{b}:policy0",)
    guard = make(rules=PolicySet.from_str(RULES))
    assert guard.before_tool_call("exec", {"command": "sudo x"}, CALL).policies == ("exec.sudo",)
    with pytest.raises(GuardError, match="rules must be"):
        make(rules=42)
    with pytest.raises(Exception, match="cannot read policy file"):
        make(rules=[tmp_path / "missing.cedar"])


def test_for_context_is_the_guard_that_context_would_build(tmp_path):
    config = {
        "tools": {"profile": "coding"},
        "agents": {"list": [{"id": "main", "default": True}, {"id": "reader",
                            "tools": {"allow": ["read"]}}]},
    }  # fmt: skip
    log = tmp_path / "log.jsonl"
    guard = Guard(config, TOOLS, {"agentId": "main"}, rules=RULES, decision_log=log)
    guard.register_hook(lambda event, ctx: None, plugin_id="noop")
    reader = guard.for_context({"agentId": "reader"})
    built = Guard(config, TOOLS, {"agentId": "reader"}, rules=RULES)
    assert reader.agent == built.agent == "reader"
    assert reader.tools == built.tools == ["read"]
    assert reader.policy_hash == built.policy_hash == guard.policy_hash
    assert reader.policies is guard.policies  # compiled once, shared
    for tool, params in [("read", {"path": "a"}), ("exec", {"command": "ls"})]:
        assert reader.before_tool_call(tool, params) == built.before_tool_call(tool, params)
    assert guard.before_tool_call("exec", {"command": "ls"}).allowed  # the original is intact
    # The other way round: from a run with fewer tools to one with more.
    main = built.for_context({"agentId": "main"})
    fresh = Guard(config, TOOLS, {"agentId": "main"}, rules=RULES)
    for tool, params in [
        ("read", {"path": "a"}),
        ("exec", {"command": "ls"}),
        ("exec", {"command": 3}),
        ("write", {"path": "b", "content": ""}),
    ]:
        assert main.before_tool_call(tool, params) == fresh.before_tool_call(tool, params)
    reader.close()  # each guard has its own descriptor on the shared log
    assert guard.before_tool_call("read", {"path": "b"}).allowed
    agents = [json.loads(line)["agent"] for line in log.read_text().splitlines()]
    assert agents == ["reader", "reader", "main", "main"]
    with pytest.raises(Exception, match="agentId"):
        guard.for_context({"agentId": "nobody"})  # strict: an unknown agent
    lenient = Guard(
        {"agents": {"list": [{"id": "main"}, {"id": "x", "tools": {"allow": ["query_db"]}}]}},
        TOOLS, {},
        strict=False,
    )  # fmt: skip
    with pytest.raises(EmptyAllowlistError):
        lenient.for_context({"agentId": "x"})


def test_a_guard_for_another_context_shares_the_hooks_registered_before_not_after():
    guard = make()
    guard.register_hook(lambda event, ctx: {"params": {**event["params"], "timeout": 5}})
    other = guard.for_context({})
    other.register_hook(lambda event, ctx: {"block": True}, plugin_id="late")
    call = ("exec", {"command": "ls"}, CALL)
    assert guard.before_tool_call(*call).params == {"command": "ls", "timeout": 5}
    blocked = other.before_tool_call(*call)
    assert blocked.blocked and blocked.reason == "Tool call blocked by plugin hook"


def test_lifecycle_events():
    events = []
    guard = make(on_event=events.append)
    guard.before_tool_call("exec", {"command": "ls"}, CALL)
    guard.after_tool_call("exec", {"command": "ls"}, CALL, result={"content": []})
    guard.before_tool_call("exec", {"command": "ls"}, dict(CALL, toolCallId="call-2"))
    guard.after_tool_call(
        "exec", {"command": "ls"}, dict(CALL, toolCallId="call-2"), error=TimeoutError("slow")
    )
    guard.before_tool_call("exec", {"command": "sudo ls"}, CALL)
    kinds = [e["type"] for e in events]
    assert kinds == [
        "tool.execution.started",
        "tool.execution.completed",
        "tool.execution.started",
        "tool.execution.error",
        "tool.execution.blocked",
    ]
    assert events[1]["durationMs"] >= 0
    assert events[3]["errorCategory"] == "TimeoutError" and events[3]["error"] == "slow"
    assert events[4]["deniedReason"] == "policy"
    assert events[4]["reason"] == "Tool call blocked by policy exec.sudo"


def test_context_manager_and_repr(tmp_path):
    with make(decision_log=tmp_path / "log.jsonl") as guard:
        assert "4 tools" in repr(guard)
    assert guard.before_tool_call("exec", {"command": "ls"}, CALL).blocked  # log closed


def test_one_guard_shared_by_threads(tmp_path):
    import threading

    log = tmp_path / "log.jsonl"
    store = MemorySessionStore()
    guard = Guard(
        {"tools": {"profile": "coding", "loopDetection": {"enabled": True}}},
        TOOLS,
        {},
        rules=RULES,
        decision_log=log,
        session_store=store,
        on_event=lambda e: None,
    )
    failures = []

    def worker(n):
        for i in range(200):
            c = {"sessionKey": f"s{n % 2}", "toolCallId": f"{n}-{i}"}
            command = "rm x" if i % 5 == 0 else f"ls {i}"
            out = guard.before_tool_call("exec", {"command": command}, c)
            if out.allowed == (i % 5 == 0) or out.failure:
                failures.append((n, i, out))
            guard.after_tool_call("exec", {"command": command}, c, result="ok")

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    assert len(log.read_text().splitlines()) == 800
    assert len(store.load("s0").loop.history) == 30


# ---------------------------------------------------------------------------------------------
# Strict by default (#9): mistakes refuse to start instead of quietly widening access


@pytest.mark.parametrize(
    ("config", "context", "needle"),
    [
        ({"tools": {"denny": ["exec"]}}, {"agentId": "main"}, "deny"),
        ({"tools": {"profile": "codeing"}}, {"agentId": "main"}, "coding"),
        ({"tool": {"deny": ["exec"]}}, {"agentId": "main"}, "tools"),
        (CONFIG, {"agentID": "main"}, "agentId"),
    ],
)
def test_a_strict_guard_refuses_config_and_context_mistakes(config, context, needle):
    from cedarlite.tools import ConfigError

    with pytest.raises(ConfigError) as info:
        Guard(config, TOOLS, context, session_store=MemorySessionStore())
    assert needle in str(info.value)
    # The lenient reading (OpenClaw's) accepts them.
    Guard(config, TOOLS, context, strict=False, session_store=MemorySessionStore())


def test_a_strict_guard_refuses_rules_that_name_missing_arguments(tmp_path):
    from cedarlite.tools import RulesError

    typo = '@id("exec.rm")\nforbid (principal, action == Action::"exec", resource)\n'
    typo += 'when { resource.comand like "rm *" };\n'
    path = tmp_path / "typo.cedar"
    path.write_text(typo)
    for rules in (typo, [path], PolicySet.from_str(typo, "typo.cedar")):
        with pytest.raises(RulesError) as info:
            make(rules=rules)
        assert "comand" in str(info.value) and "command" in str(info.value)
    # Not validated, the forbid would error; the guard still blocks rather than skip it.
    out = make(rules=typo, strict=False).before_tool_call("exec", {"command": "rm -rf /"}, CALL)
    assert out.action == "block"


# ---------------------------------------------------------------------------------------------
# The per-call path: the call entity is prebuilt per tool, each call lays its own copy over
# the store (`overlay_closed`)


def test_call_entities_never_leak_between_calls_or_tools():
    calls = [
        ("exec", {"command": "rm -rf /"}),
        ("exec", {"command": "ls"}),
        ("read", {"path": "/tmp/x"}),
        ("exec", {"command": "sudo ls"}),
        ("github__create_issue", {"repo": "a/b", "title": "t"}),
        ("exec", {"command": "git status"}),
        ("exec", {"command": "git push --force"}),
        ("exec", {}),
        ("exec", {"command": "echo"}),
    ]
    shared = make()
    for tool, params in calls * 2:
        alone = make().before_tool_call(tool, params, CALL)
        assert shared.before_tool_call(tool, params, CALL) == alone, (tool, params)
    for proto in shared._offered.call_entities.values():  # the prebuilt entities stay argument-free
        assert not proto.attrs


def test_a_closed_overlay_is_the_overlay_of_the_call_entity():
    from cedarlite.data.entities import Entity, overlay_closed
    from cedarlite.data.values import Record

    guard = make()
    base = guard._offered.entities
    for proto in guard._offered.call_entities.values():
        entity = Entity(proto.uid, Record(command="ls"), proto.parents, proto.tags, proto.ancestors)
        closed, built = overlay_closed(base, entity), base.overlay([entity])
        assert closed == built and len(closed) == len(built) == len(base) + 1
        assert closed[proto.uid].ancestors == built[proto.uid].ancestors != frozenset()
        # a store of its own for the decision cache
        assert overlay_closed(base, entity).serial != closed.serial


def test_the_scope_walk_of_a_tool_is_made_once_per_run_and_never_shared_between_runs():
    # Each run walks the compiled index on a tool's first call (its principal, the tool's
    # action and call entity are fixed) and reuses the leaves for later calls: a run of
    # another agent walks again, and so does a guard loaded from a pickle.
    import pickle

    rules = RULES + '\nforbid (principal == Agent::"ops", action == Action::"exec", resource);'
    config = {"tools": {"profile": "coding"}, "agents": {"list": [{"id": "main"}, {"id": "ops"}]}}
    main = Guard(config, TOOLS, {"agentId": "main"}, rules=rules)
    assert main.before_tool_call("exec", {"command": "ls"}, CALL).action == "allow"
    assert set(main._offered.routes) == {"exec"}
    ops = main.for_context({"agentId": "ops"})
    assert ops._offered.routes == {} and main._offered.routes != {}
    out = ops.before_tool_call("exec", {"command": "ls"}, CALL)
    assert out.action == "block" and out.policies == ("policy5",)
    assert main.before_tool_call("exec", {"command": "ls"}, CALL).action == "allow"
    again = pickle.loads(pickle.dumps(ops))
    assert again._offered.routes == {}
    for params in ({"command": "ls"}, {"command": "rm -rf /"}):
        assert again.before_tool_call("exec", params, CALL) == ops.before_tool_call(
            "exec", params, CALL
        )
    for tool, params in [("read", {"path": "a"}), ("exec", {"command": "sudo ls"})] * 2:
        assert main.before_tool_call(tool, params, CALL) == make().before_tool_call(
            tool, params, CALL
        )


class _HostileCall(dict):
    def get(self, key, default=None):
        raise RuntimeError("no reading")


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (["agent:main:1"], "the call must be a dict, not `list`"),
        (_HostileCall(), "the call cannot be read: no reading"),
    ],
)
def test_a_malformed_call_fails_closed_and_says_why(call, error):
    out = make().before_tool_call("exec", {"command": "ls"}, call)
    assert out.action == "block" and out.failure and out.error.endswith(error)
    assert out.denied_reason == "plugin-before-tool-call"


def test_outcomes_are_outcomes_field_by_field():
    # `allow` and `block` build the named tuple from a plain tuple: the fields land where
    # the constructor puts them.
    from cedarlite.guard.call import Call, allow, block
    from cedarlite.guard.outcome import Outcome

    c = Call("Exec", {"command": "ls"}, CALL)
    c.policies, c.warnings = ("p",), ("w",)
    assert allow(c) == Outcome("allow", "exec", c.params, policies=("p",), warnings=("w",))
    c.error = "boom"
    blocked = block(c, "policy", "no", failure=True)
    assert (
        type(blocked) is Outcome
        and blocked._asdict()
        == Outcome(
            "block",
            "exec",
            c.params,
            "no",
            "policy",
            ("p",),
            failure=True,
            warnings=("w",),
            error="boom",
        )._asdict()
    )
    assert block(c, "policy", "no").error is None
    assert c.call == {"sessionKey": "agent:main:1", "toolCallId": "call-1", "runId": "run-1"}
