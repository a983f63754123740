"""Benchmark: the OpenClaw tool layer through compiled Cedar vs the direct implementation.

Two jobs, measured in the same process on the same inputs (a run with 100 tools: the 32 core
tools, ``whatsapp_login``, 20 plugin tools and 47 MCP tools, and a configuration using
profiles, alsoAllow, deny, byProvider, agents, channel groups, sandbox and sub-agent settings):

* **resolve**: the tool list offered to the model for one run;
* **call**: may this ``exec`` call run (the tool is offered, and the shipped argument rules of
  ``policies/exec-commands.cedar``, secrets included, allow the command)?

"direct" is the step-by-step implementation of the spec used as the test oracle
(``tests/tools_oracle.py``) and, for calls, plain Python checks equivalent to the shipped rules.
Medians of several repeats are printed with the ratio cedarlite / direct. Run:

    python benchmarks/bench_tools.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import tools_oracle  # noqa: E402 - the direct implementation lives with the tests
from _cli import at_least  # noqa: E402

from cedarlite import PolicySet  # noqa: E402
from cedarlite.tools import ToolCatalog, compile_config, mcp_tools, resolve_tools  # noqa: E402
from cedarlite.tools.catalog import CORE_TOOL_IDS  # noqa: E402
from cedarlite.tools.resolve import ToolPolicy  # noqa: E402

# --- the run ----------------------------------------------------------------------------------


def build_tools() -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = [{"name": n} for n in [*CORE_TOOL_IDS, "whatsapp_login"]]
    plugins = {
        "lobster": ["lobster", "lobster_flow", "lobster_run", "lobster_status", "lobster_logs"],
        "ops": ["ops_status", "ops_restart", "ops_scale", "ops_logs", "ops_reset"],
        "docs": ["docs_search", "docs_get", "docs_index", "docs_sync", "docs_export"],
        "crm": ["crm_lookup", "crm_update", "crm_note", "crm_export", "crm_merge"],
    }
    for plugin, names in plugins.items():
        for name in names:
            tool: dict[str, Any] = {"name": name, "pluginId": plugin}
            if name == "ops_reset":
                tool["ownerOnly"] = True
            if name in ("docs_index", "docs_sync"):
                tool["optional"] = True
            tools.append(tool)
    servers = {
        "github": [f"gh_tool_{i}" for i in range(15)],
        "linear": [f"issue_op_{i}" for i in range(10)],
        "notion": [f"page_op_{i}" for i in range(10)],
        "slack": [f"msg_op_{i}" for i in range(12)],
    }
    mcp, _ = mcp_tools(servers, reserved=[t["name"] for t in tools])
    tools += [t.to_tool() for t in mcp]
    assert len(tools) == 100
    return tools


CONFIG: dict[str, Any] = {
    "tools": {
        "profile": "coding",
        "alsoAllow": ["browser", "lobster", "docs", "group:plugins"],
        "deny": ["gateway", "nodes", "crm_merge"],
        "byProvider": {
            "openai": {"deny": ["x_search"]},
            "openai/gpt-5": {"alsoAllow": ["canvas"], "deny": ["music_generate"]},
            "google": {"profile": "minimal", "alsoAllow": ["group:fs", "github__*"]},
        },
        "sandbox": {"tools": {"alsoAllow": ["bundle-mcp", "lobster"]}},
        "subagents": {"tools": {"alsoAllow": ["sessions_send"]}},
    },
    "agents": {
        "defaults": {"subagents": {"maxSpawnDepth": 2}},
        "list": [
            {"id": "main", "default": True},
            {"id": "coder", "tools": {"deny": ["message", "linear__*"]}},
            {"id": "support", "tools": {"profile": "messaging", "alsoAllow": ["crm"]}},
        ],
    },
    "channels": {"discord": {"groups": {"*": {"tools": {"deny": ["exec", "process"]}}}}},
}

CONTEXT: dict[str, Any] = {
    "agentId": "coder",
    "provider": "openai",
    "model": "gpt-5",
    "channel": "discord",
    "groupId": "guild-1",
    "senderIsOwner": True,
}

COMMANDS = ["git status", "git push", "ls -la", "cat x | sh", "sudo rm -rf /", "rg TODO src",
            "cat ~/.ssh/id_rsa", "grep -r AWS_SECRET ~/.aws", "git show HEAD:.env"]  # fmt: skip

# --- the direct call check (the shipped exec rules, in Python) --------------------------------

_SAFE_EXACT = ("ls", "pwd", "git status")
_SAFE_PREFIXES = ("ls ", "git status ", "git diff", "git log", "git show ", "cat ", "head ",
                  "tail ", "grep ", "rg ", "python -m pytest", "npm test")  # fmt: skip
_CHAINING = (";", "&", "|", "`", "$(", ">", "<", "\n")
_DANGEROUS = ("rm -rf", "rm -fr", "sudo", "mkfs", "dd if=", "chmod -R 777", "curl ", "wget ",
              "/dev/sd")  # fmt: skip


def _secret_patterns() -> re.Pattern[str]:
    """The `like` patterns of `exec.no-secrets`, as one regular expression (`*`: any text)."""
    text = (ROOT / "policies" / "exec-commands.cedar").read_text(encoding="utf-8")
    rule = text.split('@id("exec.no-secrets")', 1)[1].split("};", 1)[0]
    likes = [json.loads(p) for p in re.findall(r'like ("(?:[^"\\]|\\.)*")', rule)]
    alternatives = (
        "(?:" + ".*".join(re.escape(part) for part in p.split("*")) + ")" for p in likes
    )
    return re.compile("|".join(alternatives), re.S)


_SECRETS = _secret_patterns()


def direct_call(allowed: set[str], tool: str, params: dict[str, Any]) -> bool:
    """The direct decision on an ``exec`` call: offered, and the command passes the rules."""
    if tool not in allowed:
        return False
    command = params.get("command")
    if not isinstance(command, str):
        raise ValueError("argument `command` must be a string")
    if command not in _SAFE_EXACT and not command.startswith(_SAFE_PREFIXES):
        return False
    if any(c in command for c in _CHAINING) or any(d in command for d in _DANGEROUS):
        return False
    if _SECRETS.fullmatch(command):
        return False
    return not params.get("elevated")


# --- timing -----------------------------------------------------------------------------------


def median_seconds(fn: Callable[[], Any], repeat: int, number: int) -> float:
    """Median over ``repeat`` runs of the mean time of ``number`` calls."""
    fn()  # warm up
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - start) / number)
    return statistics.median(times)


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:10.4f} ms"


def show(label: str, ours: float, theirs: float | None) -> None:
    ratio = f"{ours / theirs:9.2f}x" if theirs else ""
    direct = _ms(theirs) if theirs is not None else " " * 13
    print(f"  {label:<52} {_ms(ours)} {direct} {ratio}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=at_least(1), default=7)
    args = parser.parse_args(argv)
    repeat = args.repeat

    tools = build_tools()
    catalog = ToolCatalog.from_tools(tools)
    policy = ToolPolicy(CONFIG, catalog)
    reference = ToolPolicy(CONFIG, catalog, engine="reference")
    rules = PolicySet.from_file(ROOT / "policies" / "exec-commands.cedar")

    # the two implementations agree on what they are timed on
    expected = tools_oracle.resolve(CONFIG, tools, CONTEXT)["allowed"]
    assert policy.resolve(CONTEXT).allowed == expected == reference.resolve(CONTEXT).allowed
    allowed = set(expected)
    for command in COMMANDS:
        ours = policy.authorize_call(CONTEXT, "exec", {"command": command}, rules=rules).allowed
        assert ours == direct_call(allowed, "exec", {"command": command}), command
    no_group = {k: v for k, v in CONTEXT.items() if k not in ("channel", "groupId")}
    assert policy.authorize_call(no_group, "exec", {"command": "git status"}, rules=rules).allowed

    counter = iter(range(10**9))

    def fresh_context() -> dict[str, Any]:  # a new run: nothing cached
        return {**CONTEXT, "groupId": f"guild-{next(counter)}"}

    print(f"OpenClaw tool layer: {len(tools)} tools, {len(policy.policies)} compiled policies "
          f"({len(expected)} offered to the run)")  # fmt: skip
    print(f"  {'(medians)':<52} {'cedarlite':>13} {'direct':>13} {'ratio':>10}")
    compile_time = median_seconds(lambda: compile_config(CONFIG, catalog), repeat, 3)
    show("compile config + catalog (once per catalog)", compile_time, None)
    direct_resolve = median_seconds(
        lambda: tools_oracle.resolve(CONFIG, tools, fresh_context()), repeat, 20
    )
    show(
        "resolve a run (compiled engine)",
        median_seconds(lambda: policy.resolve(fresh_context()), repeat, 20),
        direct_resolve,
    )
    show(
        "resolve a run (reference interpreter)",
        median_seconds(lambda: reference.resolve(fresh_context()), repeat, 5),
        direct_resolve,
    )
    show(
        "resolve the same run again (decision cache)",
        median_seconds(lambda: policy.resolve(CONTEXT), repeat, 20),
        direct_resolve,
    )
    show(
        "resolve_tools(config, tools, context)",
        median_seconds(lambda: resolve_tools(CONFIG, tools, fresh_context()), repeat, 20),
        direct_resolve,
    )
    params = {"command": "git status"}
    direct_one = median_seconds(lambda: direct_call(allowed, "exec", params), repeat, 2000)
    show(
        "decide one exec call (offered + argument rules)",
        median_seconds(
            lambda: policy.authorize_call(no_group, "exec", params, rules=rules), repeat, 200
        ),
        direct_one,
    )
    show(
        "decide one exec call (reference interpreter)",
        median_seconds(
            lambda: reference.authorize_call(no_group, "exec", params, rules=rules), repeat, 50
        ),
        direct_one,
    )
    direct_full = median_seconds(
        lambda: direct_call(
            set(tools_oracle.resolve(CONFIG, tools, no_group)["allowed"]), "exec", params
        ),
        repeat,
        20,
    )
    show(
        "decide one exec call vs direct re-resolving the run",
        median_seconds(
            lambda: policy.authorize_call(no_group, "exec", params, rules=rules), repeat, 200
        ),
        direct_full,
    )


if __name__ == "__main__":
    main()
