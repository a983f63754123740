"""Approvals (spec §11.4) through ``abefore_tool_call``: every answer, timeout, cancellation
and failure message, ``onResolution``, and ``allow-always`` remembered per session."""

from __future__ import annotations

import asyncio
import json

import pytest

from cedarlite.hooks import Guard, MemorySessionStore

TOOLS = [{"name": "exec"}, {"name": "read"}]
RULES = """
@id("exec.push") @ask("Pushes to a remote") @timeout("200ms")
forbid (principal, action == Action::"exec", resource) when { resource.command like "git push*" };

@id("exec.tag") @ask("Pushes a tag") @timeout("200ms") @timeoutBehavior("allow")
forbid (principal, action == Action::"exec", resource) when { resource.command like "git tag*" };
"""
PUSH = {"command": "git push origin main"}


def make(approver=None, **kw):
    kw.setdefault("session_store", MemorySessionStore())
    return Guard({"tools": {"profile": "coding"}}, TOOLS, {}, rules=RULES, approver=approver, **kw)


def call(n=1, session="s1"):
    return {"sessionKey": session, "toolCallId": f"call-{n}"}


def answering(answer, asked=None):
    async def approver(request):
        if asked is not None:
            asked.append(request)
        return answer

    return approver


def decide(guard, params=PUSH, c=None, tool="exec"):
    return asyncio.run(guard.abefore_tool_call(tool, params, c or call()))


@pytest.mark.parametrize("answer", ["allow-once", "allow-always"])
def test_approved(answer):
    asked = []
    out = decide(make(answering(answer, asked)))
    assert out.action == "allow" and out.params == PUSH and out.policies == ("exec.push",)
    assert asked[0].description == "Pushes to a remote" and asked[0].timeout == 0.2


def test_denied_by_user():
    out = decide(make(answering("deny")))
    assert (out.action, out.denied_reason, out.reason, out.failure) == (
        "block",
        "plugin-approval",
        "Denied by user",
        True,
    )
    payload = {"status": "error", "tool": "exec", "error": "Denied by user"}
    assert out.to_tool_result() == {
        "content": [{"type": "text", "text": json.dumps(payload, indent=2)}],
        "details": payload,
    }


async def never(request):
    await asyncio.sleep(30)


def test_timeout_denies_by_default_and_allows_when_told():
    out = decide(make(never))
    assert (out.action, out.reason) == ("block", "Approval timed out")
    out = decide(make(never), {"command": "git tag v1"})
    assert out.action == "allow"


def test_any_other_answer_is_a_timeout():
    assert decide(make(answering("yes please"))).reason == "Approval timed out"
    assert decide(make(answering("maybe")), {"command": "git tag v1"}).allowed


@pytest.mark.parametrize("approver", [None, answering(None)])
def test_approval_unavailable(approver):
    out = decide(make(approver))
    assert (out.denied_reason, out.reason) == (
        "plugin-approval",
        "Plugin approval unavailable (no approval route)",
    )


def test_approver_failure_is_gateway_unavailable():
    async def broken(request):
        raise ConnectionError("gateway down")

    out = decide(make(broken))
    assert out.reason == "Plugin approval required (gateway unavailable)"
    assert out.denied_reason == "plugin-approval"


def test_approval_cancelled_by_the_approver():
    async def cancelled(request):
        raise asyncio.CancelledError

    out = decide(make(cancelled))
    assert out.reason == "Approval cancelled (run aborted)" and out.blocked


def test_run_aborted_while_waiting_propagates_and_is_logged(tmp_path):
    log = tmp_path / "log.jsonl"
    events = []
    guard = make(never, decision_log=log, on_event=events.append)

    async def run():
        task = asyncio.create_task(guard.abefore_tool_call("exec", PUSH, call()))
        await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(run())
    (line,) = [json.loads(x) for x in log.read_text().splitlines()]
    assert line["decision"] == "block" and line["reason"] == "Approval cancelled (run aborted)"
    assert events[-1]["type"] == "tool.execution.blocked"


def test_allow_always_is_remembered_for_the_session_and_logged(tmp_path):
    log = tmp_path / "log.jsonl"
    asked = []
    guard = make(answering("allow-always", asked), decision_log=log)
    assert decide(guard).allowed
    # Same session, tool and arguments: no question, in the sync and async paths.
    assert guard.before_tool_call("exec", PUSH, call(2)).allowed
    assert decide(guard, c=call(3)).allowed
    assert len(asked) == 1
    # Other arguments, or another session: asked again.
    assert guard.before_tool_call("exec", {"command": "git push origin dev"}, call(4)).action == (
        "ask"
    )
    assert guard.before_tool_call("exec", PUSH, call(5, session="s2")).action == "ask"
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert [a["resolution"] for a in lines[0]["approvals"]] == ["allow-always"]
    assert [a["resolution"] for a in lines[1]["approvals"]] == ["remembered"]
    assert lines[1]["approvals"][0]["policies"] == ["exec.push"]
    assert [a["resolution"] for a in lines[3]["approvals"]] == ["pending"]
    assert lines[3]["decision"] == "ask"


def test_allow_once_is_not_remembered():
    asked = []
    guard = make(answering("allow-once", asked))
    decide(guard)
    decide(guard, c=call(2))
    assert len(asked) == 2


def test_remembered_approvals_are_shared_through_the_store():
    store = MemorySessionStore()
    first = make(answering("allow-always"), session_store=store)
    decide(first)
    second = make(None, session_store=store)  # another run of the same session
    assert second.before_tool_call("exec", PUSH, call(9)).allowed


def test_hook_approval_with_on_resolution_and_merged_params():
    resolutions = []

    def on_resolution(value):
        resolutions.append(value)
        raise RuntimeError("ignored")  # only logged

    guard = make(answering("allow-once"))
    guard.register_hook(
        lambda e, c: {
            "params": {"timeout": 5},
            "requireApproval": {
                "title": "Run it?",
                "description": "ops check",
                "severity": "info",
                "timeoutMs": 1500,
                "onResolution": on_resolution,
            },
        },
        plugin_id="ops",
    )
    asked = []
    guard.approver = answering("allow-once", asked)
    out = decide(guard, {"command": "ls"})
    assert out.allowed and out.params == {"command": "ls", "timeout": 5}
    assert resolutions == ["allow-once"]
    request = asked[0]
    assert (request.title, request.description, request.severity, request.timeout) == (
        "Run it?",
        "ops check",
        "info",
        1.5,
    )
    assert request.plugin_id == "ops" and request.params == {"command": "ls", "timeout": 5}


def test_on_resolution_sees_timeouts_and_denials():
    for approver, expected in ((never, "timeout"), (answering("deny"), "deny")):
        seen = []
        guard = make(approver)
        guard.register_hook(
            lambda e, c, seen=seen: {
                "requireApproval": {"title": "t", "timeoutMs": 50, "onResolution": seen.append}
            },
            plugin_id="p",
        )
        decide(guard, {"command": "ls"})
        assert seen == [expected]


def test_async_hooks_are_awaited():
    async def hook(event, ctx):
        await asyncio.sleep(0)
        return {"block": True, "blockReason": "async says no"}

    guard = make()
    guard.register_hook(hook, plugin_id="async")
    out = decide(guard, {"command": "ls"})
    assert out.reason == "async says no"


def test_both_approvals_must_pass():
    guard = make(answering("allow-once"))
    answers = iter(["allow-once", "deny"])

    async def approver(request):
        return next(answers)

    guard.approver = approver
    guard.register_hook(lambda e, c: {"requireApproval": {"title": "Hook"}}, plugin_id="h")
    out = decide(guard)
    assert out.blocked and out.reason == "Denied by user"


def test_run_aborted_during_an_async_hook_propagates_and_is_logged(tmp_path):
    log = tmp_path / "log.jsonl"
    guard = make(decision_log=log)

    async def slow_hook(event, ctx):
        await asyncio.sleep(30)

    guard.register_hook(slow_hook, plugin_id="slow")

    async def run():
        task = asyncio.create_task(guard.abefore_tool_call("exec", {"command": "ls"}, call()))
        await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(run())
    (line,) = [json.loads(x) for x in log.read_text().splitlines()]
    assert (line["decision"], line["reason"]) == ("block", "Tool call cancelled (run aborted)")
