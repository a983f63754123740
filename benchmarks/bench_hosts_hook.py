"""The Claude Code hook, per tool call: one process from stdin to exit, cedarlite against cedarpy.

    python benchmarks/bench_hosts_hook.py               # 20 interleaved rounds
    python benchmarks/bench_hosts_hook.py --rounds 40

Claude Code starts one hook process per tool call (agent-hosts.md §1.1), so a user waits for
process start + imports + policy load + one decision. Timed here as whole subprocess runs
(wall clock and the process's own CPU time, user + system, which other work on a shared
machine sways less), interleaved call by call in a rotating order:

* ``python -c pass`` and ``python -c "import cedarpy"``: the floors;
* a cedarpy hook script doing the same work as the hook: it reads the PreToolUse JSON, maps the
  tool and its arguments (Bash → exec, ``file_path`` → ``path``, ...), parses the same Cedar
  policies (the example's tool policy and rules, as cedarlite decides with them: cedarpy parses
  them in every process, as it must), reads the catalog's entities, decides and prints the
  hook's answer;
* ``cedarlite hook claude-code`` with the shipped example (examples/claude-code) answered by
  the per-user decision service (``cedarlite serve --claude-code``, started by the hook in the
  warm-up; loop detection on): the hook process only forwards the event over a Unix socket.
  Its CPU column is the hook process's alone (the service is not its child);
* the same in-process (``--no-service``): the built guard loaded from the state directory,
  loop detection on (one SQLite transaction per call);
* in-process with loop detection off (no state access);
* in-process, first call on an empty state directory (the guard is built: parse, compile,
  validate, store).

Both hooks must give the same decision for every input (checked). The output gives medians and
p99 of wall and CPU time per process and ratios of medians against the cedarpy script. Shared
machines are noisy: quote the medians and ratios, not single times.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _cli import at_least
from bench_startup import importtime_rows, run  # one way to time a process

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "claude-code"
RULES = ("cedarlite:exec-commands", "cedarlite:paths", str(EXAMPLE / "rules.cedar"))

PROJECT = "/home/u/app"
INPUTS: list[tuple[str, dict[str, Any]]] = [
    ("Bash", {"command": "git status", "description": "Show status"}),
    ("Bash", {"command": "rm -rf /", "timeout": 120000}),
    ("Read", {"file_path": f"{PROJECT}/src/app.py", "offset": 1, "limit": 50}),
    ("Read", {"file_path": "/home/u/.ssh/id_rsa"}),
    ("Write", {"file_path": f"{PROJECT}/notes.md", "content": "# notes\n"}),
    ("WebFetch", {"url": "http://example.com/", "prompt": "Summarize"}),
    ("mcp__github__create_issue", {"repo": "acme/app", "title": "Flaky test"}),
    ("mcp__github__create_issue", {"repo": "evil/app", "title": "x"}),
]

# The cedarpy hook: the same mapping (the contract rows used here), the same policies.
CEDARPY_HOOK = """\
import json, sys
import cedarpy
event = json.load(sys.stdin)
with open(sys.argv[1], encoding="utf-8") as f:
    policies = f.read()
with open(sys.argv[2], encoding="utf-8") as f:
    setup = json.load(f)
MAP = {"Bash": ("exec", {"run_in_background": "background", "timeout": "timeoutMs"}),
       "Read": ("read", {"file_path": "path"}), "Write": ("write", {"file_path": "path"}),
       "Edit": ("edit", {"file_path": "path", "old_string": "oldText", "new_string": "newText"}),
       "WebFetch": ("web_fetch", {}), "WebSearch": ("web_search", {})}
name = event["tool_name"]
if name.startswith("mcp__"):
    tool, renames = name[5:], {}
else:
    tool, renames = MAP.get(name, (name.lower(), {}))
args = {renames.get(k, k): v for k, v in (event.get("tool_input") or {}).items()}
cwd = event.get("cwd", "")
if isinstance(args.get("path"), str) and args["path"].startswith(cwd + "/"):
    args["path"] = args["path"][len(cwd) + 1:]
typed = {k: v for k, v in args.items() if k in setup["parameters"].get(tool, ())}
call = {"type": setup["call_types"][tool], "id": "call"}
entities = setup["entities"] + [
    {"uid": call, "attrs": typed, "parents": [{"type": "Tool", "id": tool}]}]
request = {"principal": setup["principal"], "action": 'Action::"' + tool + '"',
           "resource": call["type"] + '::"call"', "context": {**setup["context"], "input": typed}}
result = cedarpy.is_authorized(request, policies, entities)
reasons = ", ".join(sorted(result.diagnostics.reasons)) or "no permit applies"
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
      "permissionDecision": "allow" if result.allowed else "deny",
      "permissionDecisionReason": "cedar policies: " + reasons}}))
"""


def event(tool: str, tool_input: dict[str, Any], n: int) -> str:
    return json.dumps(
        {
            "session_id": "bench-session",
            "transcript_path": "/home/u/.claude/projects/-home-u-app/bench.jsonl",
            "cwd": PROJECT,
            "permission_mode": "default",
            "hook_event_name": "PreToolUse",
            "tool_name": tool,
            "tool_input": tool_input,
            "tool_use_id": f"toolu_{n:06d}",
        }
    )


def setup_cedarpy(work: Path) -> tuple[Path, Path]:
    """The policies cedarlite decides with, as Cedar text, and the catalog's entities."""
    from cedarlite.data.values import to_json_value
    from cedarlite.hosts.claude_code import HookConfig, load_guard
    from cedarlite.hosts.mapping import MappedCall
    from cedarlite.tools.params import call_types, parameters_of

    config = HookConfig.read(str(EXAMPLE / "cedarlite.json"), RULES)
    context = config.run_context({})
    state = work / "setup-state"
    # The MCP tool of the inputs is in the configuration: every input has this catalog.
    guard = load_guard(config, MappedCall("Bash", "exec", None, ({},)), context, str(state))
    catalog = guard.policy.catalog
    types = call_types(catalog)
    run = guard.resolution.context
    setup = {
        "principal": f'{run.principal.type}::"{run.principal.id}"',
        "context": {k: to_json_value(v) for k, v in run.record().items()},
        "entities": guard.policy.entities.to_json(),
        "call_types": {t.name: types.of(t) for t in catalog.registered},
        "parameters": {
            t.name: sorted((parameters_of(t) or {}).get("properties", {}))
            for t in catalog.registered
        },
    }
    policies = work / "policies.cedar"
    policies.write_text(guard.policies.to_cedar(), encoding="utf-8")
    data = work / "setup.json"
    data.write_text(json.dumps(setup), encoding="utf-8")
    return policies, data


def decision(stdout: str) -> str:
    return str(json.loads(stdout)["hookSpecificOutput"]["permissionDecision"])


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=at_least(1), default=20)
    opts = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-hosts-hook-"))
    try:
        bench(work, opts.rounds)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def bench(work: Path, rounds: int) -> None:
    policies, setup = setup_cedarpy(work)
    script = work / "cedarpy_hook.py"
    script.write_text(CEDARPY_HOOK, encoding="utf-8")
    no_loops = work / "no-loops.json"
    config = json.loads((EXAMPLE / "cedarlite.json").read_text())
    config["config"]["tools"]["loopDetection"] = {"enabled": False}
    no_loops.write_text(json.dumps(config))
    hook = [sys.executable, "-m", "cedarlite", "hook", "claude-code"]
    local = [*hook, "--no-service"]
    rules = [arg for r in RULES for arg in ("--rules", r)]
    state, state_off, served = work / "state", work / "state-off", work / "state-served"
    commands: dict[str, Any] = {
        "python -c pass": lambda n: [sys.executable, "-c", "pass"],
        'python -c "import cedarpy"': lambda n: [sys.executable, "-c", "import cedarpy"],
        "cedarpy hook script": lambda n: [sys.executable, str(script), str(policies), str(setup)],
        SERVED: lambda n: [
            *hook, "--config", str(EXAMPLE / "cedarlite.json"), *rules, "--state-dir", str(served)
        ],
        "cedarlite hook in-process (loops on)": lambda n: [
            *local, "--config", str(EXAMPLE / "cedarlite.json"), *rules, "--state-dir", str(state)
        ],
        "cedarlite hook in-process (loops off)": lambda n: [
            *local, "--config", str(no_loops), *rules, "--state-dir", str(state_off)
        ],
        "cedarlite hook in-process (first call: builds)": lambda n: [
            *local, "--config", str(EXAMPLE / "cedarlite.json"), *rules,
            "--state-dir", str(work / f"cold-{n}"),
        ],
    }  # fmt: skip
    try:
        measure(commands, served, rounds, script, policies, setup, state)
    finally:
        stop_services(served)


SERVED = "cedarlite hook via the service (loops on)"


def service_ready(state: Path) -> bool:
    """Whether the service the hook started in ``state`` answers ``health``."""
    import socket

    for path in (state / "serve").glob("*.sock") if (state / "serve").is_dir() else ():
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(5)
                sock.connect(str(path))
                sock.sendall(b'{"id": 1, "op": "health"}\n')
                return b'"ok":true' in sock.recv(65536)
        except OSError:
            return False
    return False


def stop_services(state: Path) -> None:
    """Stop the services the hook started in ``state``, by the pid in their lock files."""
    import contextlib
    import signal

    for lock in (state / "serve").glob("*.lock") if (state / "serve").is_dir() else ():
        text = lock.read_text().strip()
        if text.isdigit():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(text), signal.SIGTERM)


def measure(
    commands: dict[str, Any],
    served: Path,
    rounds: int,
    script: Path,
    policies: Path,
    setup: Path,
    state: Path,
) -> None:
    # Warm up: bytecode compiled, guards built and stored, the service started, decisions
    # compared.
    for i, (tool, tool_input) in enumerate(INPUTS):
        run(commands[SERVED](i), event(tool, tool_input, i))
    deadline = time.monotonic() + 60
    while not service_ready(served):
        if time.monotonic() > deadline:
            raise SystemExit("the decision service did not start")
        time.sleep(0.1)
    for i, (tool, tool_input) in enumerate(INPUTS):
        answers = {}
        for name in ("cedarpy hook script", "cedarlite hook in-process (loops on)", SERVED):
            answers[name] = decision(run(commands[name](i), event(tool, tool_input, i))[2])
        run(commands["cedarlite hook in-process (loops off)"](i), event(tool, tool_input, i))
        if len(set(answers.values())) != 1:
            raise SystemExit(f"the hooks disagree on {tool} {tool_input}: {answers}")
        print(f"  {tool:28} {answers['cedarpy hook script']}")
    walls: dict[str, list[float]] = {name: [] for name in commands}
    cpus: dict[str, list[float]] = {name: [] for name in commands}
    names = list(commands)
    n = 0
    for r in range(rounds):
        for i, (tool, tool_input) in enumerate(INPUTS):
            order = names[(r + i) % len(names) :] + names[: (r + i) % len(names)]
            for name in order:
                n += 1
                wall, cpu, _ = run(commands[name](n), event(tool, tool_input, n))
                walls[name].append(wall)
                cpus[name].append(cpu)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    samples = rounds * len(INPUTS)
    print(f"\n{rounds} rounds x {len(INPUTS)} inputs = {samples} runs per row; load {load:.1f}")
    base_wall = statistics.median(walls["cedarpy hook script"])
    base_cpu = statistics.median(cpus["cedarpy hook script"])
    print(f"{'process':48} {'wall p50':>9} {'wall p99':>9} {'CPU p50':>8} {'CPU p99':>8}  ratio")
    for name in names:
        w, c = walls[name], cpus[name]
        ratio = ""
        if name.startswith("cedarlite"):
            ratio = (
                f"{statistics.median(w) / base_wall:.2f}x / {statistics.median(c) / base_cpu:.2f}x"
            )
        print(
            f"{name:48} {statistics.median(w):7.1f}ms {percentile(w, 0.99):7.1f}ms "
            f"{statistics.median(c):6.1f}ms {percentile(c, 0.99):6.1f}ms  {ratio}"
        )
    print("ratio: cedarlite's median over the cedarpy hook script's (wall / CPU)")
    fast = statistics.median(walls[SERVED])
    print(
        f"the cedarpy hook script over the hook via the service (p50 wall): "
        f"{base_wall / fast:.2f}x faster"
    )
    import_profile(commands["cedarlite hook in-process (loops off)"](0), event(*INPUTS[0], 0))
    import_profile(commands[SERVED](0), event(*INPUTS[0], 0), what="via the service")
    in_process(script, policies, setup, state, rounds)


def import_profile(
    argv: list[str], stdin: str, runs: int = 5, top: int = 12, what: str = "in-process, loops off"
) -> None:
    """``python -X importtime`` of a warm hook process: each module's smallest self time over
    a few runs (the least disturbed by other work), their sum, and the largest."""
    best: dict[str, int] = {}
    for _ in range(runs):
        for self_us, _, name in importtime_rows(argv, stdin):
            module = name.strip()
            best[module] = min(best.get(module, self_us), self_us)
    mine = sum(us for module, us in best.items() if module.split(".")[0] == "cedarlite")
    print(
        f"\npython -X importtime, warm hook process ({what}), best of {runs}: "
        f"{len(best)} modules, {sum(best.values()) / 1000:.1f} ms of imports "
        f"(cedarlite's own modules {mine / 1000:.1f} ms); the largest self times:"
    )
    for module, us in sorted(best.items(), key=lambda kv: -kv[1])[:top]:
        print(f"  {us / 1000:6.2f} ms  {module}")


def in_process(script: Path, policies: Path, setup: Path, state: Path, rounds: int) -> None:
    """The same work without the process: the cedarpy script's code, and the hook's ``run``
    (configuration read, built guard loaded from the state directory, loop detection on),
    interleaved call by call in this process; medians per call."""
    import contextlib
    import io

    from cedarlite.hosts.claude_code import HookOptions
    from cedarlite.hosts.claude_code import run as hook_run

    code = compile(script.read_text(encoding="utf-8"), str(script), "exec")
    options = HookOptions(str(EXAMPLE / "cedarlite.json"), RULES, str(state))

    def cedarpy_call(stdin: str) -> str:
        saved = sys.stdin, sys.argv
        sys.stdin, sys.argv = io.StringIO(stdin), [str(script), str(policies), str(setup)]
        try:
            with contextlib.redirect_stdout(io.StringIO()) as out:
                exec(code, {"__name__": "__main__"})
        finally:
            sys.stdin, sys.argv = saved
        return out.getvalue()

    def cedarlite_call(stdin: str) -> str:
        out = io.StringIO()
        hook_run(options, io.BytesIO(stdin.encode()), out, io.StringIO())
        return out.getvalue()

    calls = {"cedarpy hook script": cedarpy_call, "cedarlite hook run()": cedarlite_call}
    times: dict[str, list[float]] = {name: [] for name in calls}
    n = 0
    for r in range(rounds):
        for i, (tool, tool_input) in enumerate(INPUTS):
            stdin = event(tool, tool_input, n)
            answers = set()
            for name in list(calls)[(r + i) % 2 :] + list(calls)[: (r + i) % 2]:
                n += 1
                t0 = time.perf_counter()
                answers.add(decision(calls[name](stdin)))
                times[name].append((time.perf_counter() - t0) * 1000)
            if len(answers) != 1:
                raise SystemExit(f"the hooks disagree in process on {tool} {tool_input}")
    base = statistics.median(times["cedarpy hook script"])
    print(f"\nin one process, interleaved, {rounds * len(INPUTS)} calls each (no process start):")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"  {name:24} p50 {median:6.2f} ms  p99 {percentile(values, 0.99):6.2f} ms  "
              f"{median / base:.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()
