"""What cedarlite's OpenClaw plugin adds to a tool call in the real OpenClaw gateway.

Two gateways of the published ``openclaw@2026.9.6`` (isolated homes, loopback, the scripted
model of ``tests/openclaw_support.py``): one with the plugin (the settings ``cedarlite hook
openclaw --print-settings`` prints, with the shipped ``exec-commands`` and ``paths`` rules), one
without. Each agent turn makes ``--calls`` sequential ``read`` calls of a small file; turns
alternate between the two gateways (the order flips every round), so both see the same machine
load. Both gateways also load a probe plugin whose ``before_tool_call`` handlers run first and
last: the time between them is what a call waits for the handlers in between (cedarlite's, in
the gateway that has it). Printed, per call (median, p90):

* the handlers' time with and without the plugin, and the plugin's added time (the difference
  of the medians): the headline figure;
* the whole call as the model sees it (from its answer that makes the call to the request that
  brings the result back): OpenClaw's own work dominates it, and two gateway processes differ
  by more than the plugin costs, so its difference is context, not a measurement of the plugin;
* one decision through the service alone (``cedarlite serve --stdio`` answering
  ``openclaw_before_tool_call`` lines one after the other): cedarlite's share of the added time;
  the rest is the pipe round trip and the gateway's event loop.

    python benchmarks/bench_hosts_openclaw.py [--rounds 6] [--calls 20]

Needs what the end-to-end tests need (``.ci/run`` installs it): Node >= 24.16 and
``openclaw@2026.9.6`` under ~/.cache/cedarlite-test/openclaw (it prints ``skipped`` without
them). The machine is shared and noisy: quote medians.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _cli import at_least

ROOT = Path(__file__).resolve().parent.parent
RULES = ("cedarlite:exec-commands", "cedarlite:paths")

#: A probe plugin in both gateways: a before_tool_call handler that runs first (the highest
#: priority) and one that runs last, each noting the time; between them run the other
#: plugins' handlers (cedarlite's, in the gateway that has it).
PROBE_MANIFEST = {
    "id": "probe", "name": "probe", "activation": {"onStartup": True},
    "configSchema": {"type": "object", "properties": {"log": {"type": "string"}}},
}  # fmt: skip
PROBE = """\
import { appendFileSync } from "node:fs";
export default {
  id: "probe",
  name: "probe",
  register(api) {
    const log = api.pluginConfig.log;
    const note = (which) => (event) => {
      appendFileSync(log, `${process.hrtime.bigint()} ${which} ${event.toolCallId}\\n`);
    };
    api.on("before_tool_call", note("first"), { priority: 1000000 });
    api.on("before_tool_call", note("last"), { priority: -1000000 });
  },
};
"""


def probe(home: Path) -> dict[str, Any]:
    """The probe plugin's folder in ``home`` and the settings that load it."""
    folder = home / "probe"
    folder.mkdir(mode=0o755)
    (folder / "openclaw.plugin.json").write_text(json.dumps(PROBE_MANIFEST))
    (folder / "package.json").write_text(
        json.dumps({"name": "probe", "type": "module", "openclaw": {"extensions": ["./index.js"]}})
    )
    (folder / "index.js").write_text(PROBE)
    return {
        "plugins": {
            "load": {"paths": [str(folder)]},
            "entries": {"probe": {"enabled": True, "config": {"log": str(home / "probe.log")}}},
        }
    }


def handler_seconds(home: Path) -> dict[str, float]:
    """Per call: the seconds from the first probe handler to the last."""
    first: dict[str, int] = {}
    out: dict[str, float] = {}
    for line in (home / "probe.log").read_text().splitlines():
        at, which, call = line.split(" ", 2)
        if which == "first":
            first[call] = int(at)
        elif call in first:
            out[call] = (int(at) - first[call]) / 1e9
    return out


def settings(home: Path) -> dict[str, Any]:
    config = home / "tools.json"
    config.write_text(json.dumps({"tools": {"profile": "coding"}}))
    command = [sys.executable, "-m", "cedarlite", "hook", "openclaw", "--print-settings",
               "--config", str(config), *(w for r in RULES for w in ("--rules", r))]  # fmt: skip
    return json.loads(subprocess.run(command, capture_output=True, text=True, check=True).stdout)


def turn(gateway: Any, model: Any, session: str, calls: int) -> list[float]:
    """Seconds per call of one turn of ``calls`` reads."""
    marker = f"BENCH-{session}"
    lines = [marker, *['TOOLCALL read {"path": "small.txt"}'] * calls]
    gateway.agent(session, "\n".join(lines), timeout=300)
    seconds = model.call_seconds(marker)
    return seconds[:calls]  # the last gap is the model's final answer, not a call


def decisions(rounds: int) -> list[float]:
    """Seconds per ``openclaw_before_tool_call`` through ``cedarlite serve --stdio``, one
    request after the other (the service warm)."""
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "tools.json"
        config.write_text(json.dumps({"tools": {"profile": "coding"}}))
        command = [sys.executable, "-m", "cedarlite", "serve", "--stdio", "--config",
                   str(config), *(w for r in RULES for w in ("--rules", r))]  # fmt: skip
        service = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL)  # fmt: skip
        assert service.stdin is not None and service.stdout is not None
        out = []
        try:
            for i in range(rounds + 50):
                event = {"toolName": "read", "params": {"path": "small.txt"},
                         "runId": "r", "toolCallId": f"c{i}"}  # fmt: skip
                ctx = {"agentId": "main", "sessionKey": "agent:main:explicit:b",
                       "requester": {"senderIsOwner": True}}  # fmt: skip
                line = json.dumps({"id": i, "op": "openclaw_before_tool_call", "event": event,
                                   "ctx": ctx})  # fmt: skip
                started = time.perf_counter()
                service.stdin.write(line.encode() + b"\n")
                service.stdin.flush()
                answer = json.loads(service.stdout.readline())
                if i >= 50:  # the first ones warm the service
                    out.append(time.perf_counter() - started)
                assert answer["action"] == "allow", answer
        finally:
            service.stdin.close()
            service.wait(timeout=30)
        return out


def p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1] if len(values) > 1 else values[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=at_least(1), default=6, help="turns per gateway")
    parser.add_argument("--calls", type=at_least(1), default=20, help="reads per turn")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "tests"))
    from openclaw_support import Gateway, ScriptedModel, deep_merge, missing

    why = missing()
    if why is not None:  # as the end-to-end tests skip
        print(f"skipped: {why}")
        return
    with tempfile.TemporaryDirectory() as tmp:
        homes = {name: Path(tmp) / name for name in ("without", "with")}
        for home in homes.values():
            home.mkdir()
        with ScriptedModel() as model_a, ScriptedModel() as model_b:
            plain = Gateway(homes["without"], model_a, probe(homes["without"]))
            both = deep_merge(probe(homes["with"]), settings(homes["with"]))
            guarded = Gateway(homes["with"], model_b, both)
            with plain, guarded:
                for gateway in (plain, guarded):
                    (gateway.workspace / "small.txt").write_text("hello\n")
                    turn(gateway, gateway.model, "warm", 2)  # the service starts here
                for home in homes.values():  # the warm-up's calls are not counted
                    (home / "probe.log").write_text("")
                times: dict[str, list[float]] = {"without": [], "with": []}
                for r in range(args.rounds):
                    order = [("without", plain), ("with", guarded)]
                    for name, gateway in order if r % 2 == 0 else order[::-1]:
                        times[name] += turn(gateway, gateway.model, f"r{r}", args.calls)
                    print(f"round {r + 1}/{args.rounds}", file=sys.stderr, flush=True)
                hooks = {k: list(handler_seconds(h).values()) for k, h in homes.items()}
    print(f"OpenClaw 2026.9.6 gateway, {args.rounds} turns x {args.calls} sequential `read` "
          "calls per gateway, interleaved")  # fmt: skip
    print(f"{'':34} {'median ms':>10} {'p90 ms':>8} {'calls':>6}")
    print("before_tool_call handlers, first probe to last (the time a call waits for them):")
    report(hooks)
    hook_added = (statistics.median(hooks["with"]) - statistics.median(hooks["without"])) * 1000
    print(f"  {'added by the plugin (medians)':32} {hook_added:10.2f}   (goal: at most 25 ms)")
    print("the whole call, as the model sees it (two gateways: their own spread included):")
    report(times)
    added = (statistics.median(times["with"]) - statistics.median(times["without"])) * 1000
    print(f"  {'difference of the medians':32} {added:10.1f}")
    tight = decisions(1000)
    print(
        f"  {'one decision via serve --stdio':32} {statistics.median(tight) * 1000:10.2f} "
        f"{p90(tight) * 1000:8.2f} {len(tight):6d}   (tight loop, the service alone)"
    )


def report(values: dict[str, list[float]]) -> None:
    for label, key in (("without the plugin", "without"), ("with the plugin", "with")):
        v = values[key]
        print(f"  {label:32} {statistics.median(v) * 1000:10.2f} {p90(v) * 1000:8.2f} "
              f"{len(v):6d}")  # fmt: skip


if __name__ == "__main__":
    main()
