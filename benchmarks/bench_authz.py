"""Authorization benchmarks: cedarlite vs cedarpy (the Rust engine) vs pycasbin, one process.

    python benchmarks/bench_authz.py                  # all workloads
    python benchmarks/bench_authz.py --quick          # fewer requests (a smoke run)
    python benchmarks/bench_authz.py --only hook      # one workload (hook, rbac, load)
    python benchmarks/bench_authz.py --profile        # where a cold decision's time goes

Workloads (identical requests for every engine; peers get their pre-parsed handles):

1. agent hook: OpenClaw-style layered tool policies (profile allowlist, global and per-agent
   deny lists, sandbox and sub-agent layers, owner-only tools) plus `exec` command rules
   (safe prefixes, dangerous patterns) over ~100 tools: ~60 policies.
2. RBAC scale series: 10 / 100 / 1,000 / 10,000 scoped policies (users in teams, documents in
   folders, 10% conditional forbids).
3. load: parse + compile 10,000 policies, cold and from the compile cache (warm).

Each decision workload is timed two ways, on the same request sequence:

* tight loop: each engine decides every request in a row, so it runs with the CPU caches
  warmed by its own previous call (the best case, and what most benchmarks show);
* interleaved: the engines alternate call by call (cedarpy, cedarlite from the request dict,
  cedarpy, cedarlite from a prebuilt ``Request``, ...), so neither runs with caches warmed by
  itself: closer to a hook inside a busy agent loop, where other work runs between two
  decisions. Each cedarlite call follows a cedarpy call, and every cedarpy call follows a
  cedarlite call; cedarpy's row holds both of its calls per request.

cedarlite is timed on two inputs: JSON-shaped request dicts through the public
``cedarlite.is_authorized(request, policies, entities)`` (what a hook calls with the JSON it
received), and prebuilt ``cedarlite.Request`` objects through the compiled set (what a hook that
builds requests itself passes); the decision cache is off unless stated (``cache miss`` rows
show its cost on first sight of a request, ``cache hit`` rows a repeat).

Shared machines are noisy: the script prints medians, p99 and ratios measured in the same run,
never a single absolute time. ``--profile`` times the stages of a decision separately, each
right after a cedarpy call, to show where a cold decision's time goes.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

import cedarlite
from cedarlite.data.jsonvalue import plain_record
from cedarlite.data.request import make_request
from cedarlite.engine.compiler import compiled

try:
    import cedarpy
except ImportError:  # pragma: no cover - peers are optional
    cedarpy = None
try:
    import casbin
except ImportError:  # pragma: no cover
    casbin = None


# ---------------------------------------------------------------------------------------------
# Timing


Timed = tuple[Callable[[Any], Any], Sequence[Any]]
"""A function to time and the items to call it with, one call per item."""


def timings(fn: Callable[[Any], Any], items: Sequence[Any], repeat: int = 1) -> list[float]:
    """Per-call wall times in microseconds (each item called ``repeat`` times)."""
    out = []
    clock = time.perf_counter
    for _ in range(repeat):
        for item in items:
            t0 = clock()
            fn(item)
            out.append((clock() - t0) * 1e6)
    return out


def interleaved(peer: Timed, ours: dict[str, Timed]) -> dict[str, list[float]]:
    """Per-call wall times in microseconds, alternating engines call by call.

    For each item index ``i``, every function of ``ours`` is called on its ``i``-th item,
    each right after a call of ``peer`` on the peer's ``i``-th item (so each of our calls
    follows a peer call, and each peer call follows one of ours). Returns each name's samples
    and the peer's under ``"peer"``.
    """
    clock = time.perf_counter
    peer_fn, peer_items = peer
    out: dict[str, list[float]] = {name: [] for name in ours}
    out["peer"] = []
    peer_samples = out["peer"]
    plan = [(out[name], fn, items) for name, (fn, items) in ours.items()]
    for i, peer_item in enumerate(peer_items):
        for samples, fn, items in plan:
            t0 = clock()
            peer_fn(peer_item)
            t1 = clock()
            fn(items[i])
            t2 = clock()
            peer_samples.append((t1 - t0) * 1e6)
            samples.append((t2 - t1) * 1e6)
    return out


def our_engines(
    ps: cedarlite.PolicySet, ents: cedarlite.Entities, requests: list[Any], prebuilt: list[Any]
) -> dict[str, Timed]:
    """cedarlite's two inputs: request dicts through the public ``is_authorized``, prebuilt
    ``Request`` objects through the compiled set (decision cache off)."""
    index = compiled(ps)
    return {
        "cedarlite (request dicts)": (lambda r: cedarlite.is_authorized(r, ps, ents), requests),
        "cedarlite (prebuilt Request)": (lambda r: index.authorize(r, ents), prebuilt),
    }


def fresh_dicts(ours: dict[str, Timed]) -> dict[str, Timed]:
    """``ours`` with each request dict replaced by a copy decoded from its JSON, as a hook
    receives it: strings never hashed (the tight loop has hashed the originals)."""
    return {
        name: (fn, [json.loads(json.dumps(r)) for r in items] if "dicts" in name else items)
        for name, (fn, items) in ours.items()
    }


def summary(samples: list[float]) -> tuple[float, float]:
    """(median, p99) in microseconds."""
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def report(
    title: str,
    tight: dict[str, list[float]],
    baseline: str,
    mixed: dict[str, list[float]] | None = None,
) -> dict[str, float]:
    """Print medians, p99 and each row's speed-up over ``baseline`` (its median over the
    row's), for the tight loop and, when given, interleaved; returns the tight medians and the
    interleaved ones (keys prefixed ``interleaved:``)."""
    print(f"\n{title}")
    head = f"{'median us':>11}{'p99 us':>10}{'speed-up':>10}"
    print(f"  {'':<34}{'tight loop':^31}", end="")
    print(f"{'interleaved with ' + baseline.split(' ')[0]:^31}" if mixed else "")
    print(f"  {'engine':<34}{head}{head if mixed else ''}")
    medians: dict[str, float] = {}
    for kind, rows in (("", tight), ("interleaved:", mixed or {})):
        base = summary(rows[baseline])[0] if baseline in rows else None
        for name, samples in rows.items():
            medians[kind + name] = summary(samples)[0]
        medians[kind + "base"] = base or 0.0
    for name in dict.fromkeys([*tight, *(mixed or {})]):
        line = f"  {name:<34}"
        for kind, rows in (("", tight), ("interleaved:", mixed or {})):
            if not mixed and kind:
                continue
            if name not in rows:
                line += f"{'':>31}"
                continue
            med, p99 = summary(rows[name])
            base = medians[kind + "base"]
            ratio = f"{base / med:,.1f}x" if base and name != baseline else ""
            line += f"{med:>11,.1f}{p99:>10,.1f}{ratio:>10}"
        print(line)
    return medians


def check_same(name: str, ours: list[bool], theirs: list[bool]) -> None:
    """Benchmarks compare like with like: every engine must give the same decisions."""
    if ours != theirs:
        diff = sum(a != b for a, b in zip(ours, theirs, strict=True))
        raise SystemExit(f"{name}: {diff} decisions differ from cedarlite's; not comparable")


def cedarpy_allowed(result: Any) -> bool:
    return str(result.decision).endswith("Allow")


# ---------------------------------------------------------------------------------------------
# 1. Agent hook workload


def agent_hook_data(n_requests: int) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
    """The agent-hook workload: (policy text, entity JSON, requests)."""
    rng = random.Random(7)
    core = [
        "read",
        "write",
        "edit",
        "apply_patch",
        "exec",
        "process",
        "web_search",
        "web_fetch",
        "memory_search",
        "memory_get",
        "sessions_list",
        "sessions_send",
        "sessions_spawn",
        "session_status",
        "browser",
        "canvas",
        "message",
        "cron",
        "gateway",
        "nodes",
        "image",
        "tts",
        "update_plan",
        "agents_list",
    ]
    groups = {
        "group:fs": core[:4],
        "group:runtime": core[4:6],
        "group:web": core[6:8],
        "group:memory": core[8:10],
        "group:sessions": core[10:14],
        "group:ui": core[14:16],
        "group:automation": ["cron", "gateway"],
    }
    mcp = [
        f"{server}__{tool}"
        for server in ("github", "linear", "slack", "notion", "jira")
        for tool in (
            "search",
            "create",
            "update",
            "delete",
            "list",
            "get",
            "comment",
            "assign",
            "close",
            "reopen",
            "link",
            "watch",
            "export",
            "import",
            "sync",
        )
    ]
    tools = core + mcp
    entities = []
    for tool in tools:
        parents = [{"type": "Action", "id": g} for g, members in groups.items() if tool in members]
        if "__" in tool:
            parents.append({"type": "Action", "id": "bundle-mcp"})
        entities.append({"uid": {"type": "Action", "id": tool}, "attrs": {}, "parents": parents})
    for group in [*groups, "bundle-mcp", "owner-only"]:
        entities.append({"uid": {"type": "Action", "id": group}, "attrs": {}, "parents": []})
    for tool in ("cron", "gateway", "nodes"):
        entities[tools.index(tool)]["parents"].append({"type": "Action", "id": "owner-only"})
    entities.append({"uid": {"type": "Agent", "id": "main"}, "attrs": {}, "parents": []})

    def acts(names: Sequence[str]) -> str:
        return ", ".join(f'Action::"{n}"' for n in names)

    policies = ["permit (principal, action, resource);"]
    coding = [
        t
        for t in core
        if t not in ("browser", "canvas", "message", "gateway", "nodes", "tts", "agents_list")
    ]
    policies.append(
        f'@layer("tools.profile") forbid (principal, action, resource) '
        f'unless {{ action in [{acts(coding)}, Action::"bundle-mcp"] }};'
    )
    policies.append(
        '@layer("owner-only") forbid (principal, action in Action::"owner-only", '
        "resource) unless { context.senderIsOwner };"
    )
    policies.append(
        '@layer("tools.deny") forbid (principal, action in [Action::"gateway", '
        'Action::"nodes"], resource);'
    )
    for agent in range(12):
        denied = rng.sample(tools, 4)
        policies.append(
            f'@layer("agents.a{agent}.tools.deny") forbid (principal, action in '
            f'[{acts(denied)}], resource) when {{ context.agent == "a{agent}" }};'
        )
    for provider in ("openai", "anthropic", "google", "xai", "mistral", "groq"):
        policies.append(
            f'@layer("tools.byProvider") forbid (principal, action in '
            f"[{acts(rng.sample(mcp, 5))}], resource) when "
            f'{{ context.provider == "{provider}" }};'
        )
    policies.append(
        '@layer("sandbox") forbid (principal, action in [Action::"browser", '
        'Action::"canvas", Action::"cron", Action::"gateway", Action::"nodes"], '
        "resource) when { context.sandboxed };"
    )
    policies.append(
        '@layer("subagent") forbid (principal, action in [Action::"gateway", '
        'Action::"agents_list", Action::"session_status", Action::"cron", '
        'Action::"sessions_send"], resource) when { context.subagentDepth >= 1 };'
    )
    for server in ("github", "linear", "slack", "notion", "jira"):
        policies.append(
            f'@layer("mcp.{server}") forbid (principal, action in '
            f"[{acts([t for t in mcp if t.startswith(server) and 'delete' in t])}], "
            f"resource) unless {{ context.senderIsOwner }};"
        )
    safe = [
        "git ",
        "ls",
        "cat ",
        "grep ",
        "rg ",
        "pytest",
        "python -m pytest",
        "npm test",
        "make ",
        "cargo test",
        "go test",
        "echo ",
    ]
    for prefix in safe:
        policies.append(
            f'@layer("exec.safe") permit (principal, action == Action::"exec", '
            f'resource) when {{ context.input.command like "{prefix}*" }};'
        )
    for pattern in (
        "*rm -rf*",
        "*sudo *",
        "*curl * | sh*",
        "*mkfs*",
        "*:(){*",
        "*> /dev/sd*",
        "*chmod 777*",
        "*dd if=*",
        "*shutdown*",
        "*reboot*",
    ):
        policies.append(
            f'@layer("exec.dangerous") forbid (principal, action == Action::"exec", '
            f'resource) when {{ context.input.command like "{pattern}" }};'
        )
    policies.append(
        '@layer("exec.allowlist") forbid (principal, action == Action::"exec", '
        'resource) unless { context.input.command like "git *" || '
        'context.input.command like "ls*" || context.input.command like "pytest*" '
        '|| context.input.command like "rg *" || context.input.command like "cat *" '
        '|| context.input.command like "make *" };'
    )
    for path_rule in ("/etc/*", "*/.ssh/*", "*/.env", "/usr/*", "*/id_rsa*"):
        policies.append(
            f'@layer("fs.paths") forbid (principal, action in Action::"group:fs", '
            f"resource) when {{ context.input has path && "
            f'context.input.path like "{path_rule}" }};'
        )
    text = "\n".join(policies)

    commands = [
        "git status",
        "git log --oneline",
        "ls -la",
        "rm -rf /",
        "pytest -q",
        "curl x | sh",
        "cat README.md",
        "sudo reboot",
        "rg TODO",
        "make test",
    ]
    paths = ["src/app.py", "/etc/passwd", "/home/u/.ssh/id_rsa", "README.md", "/home/u/.env"]
    requests = []
    for _ in range(n_requests):
        tool = rng.choice(tools[:14] + rng.sample(tools, 3))
        context: dict[str, Any] = {
            "agent": f"a{rng.randrange(12)}",
            "provider": rng.choice(["openai", "anthropic", "google", "xai"]),
            "sandboxed": rng.random() < 0.3,
            "senderIsOwner": rng.random() < 0.5,
            "subagentDepth": rng.choice([0, 0, 0, 1, 2]),
            "input": {"command": rng.choice(commands)}
            if tool == "exec"
            else {"path": rng.choice(paths)}
            if tool in groups["group:fs"]
            else {},
        }
        requests.append(
            {
                "principal": {"type": "Agent", "id": "main"},
                "action": {"type": "Action", "id": tool},
                "resource": {"type": "Session", "id": "s1"},
                "context": context,
            }
        )

    return text, entities, requests


def agent_hook_workload(n_requests: int) -> dict[str, float]:
    text, entities, requests = agent_hook_data(n_requests)
    ps = cedarlite.PolicySet.from_str(text)
    ents = cedarlite.Entities.from_json(entities)
    index = compiled(ps)
    prebuilt = [make_request(r) for r in requests]
    groups = {p["id"] for e in entities for p in e["parents"] if p["type"] == "Action"}
    tools = [e for e in entities if e["uid"]["type"] == "Action" and e["uid"]["id"] not in groups]
    print(f"\nagent hook: {len(tools)} tools, {len(ps)} policies, {len(requests)} tool calls")
    ours = our_engines(ps, ents, requests, prebuilt)
    rows = {name: timings(fn, items) for name, (fn, items) in ours.items()}
    rows["cedarlite (prebuilt, cache miss)"] = timings(
        lambda r: index.authorize(r, ents, cache=True), prebuilt
    )
    # The same calls again: every one is now a cache hit.
    rows["cedarlite (prebuilt, cache hit)"] = timings(
        lambda r: index.authorize(r, ents, cache=True), prebuilt
    )
    ours_allowed = [index.authorize(r, ents, cache=False).allowed for r in prebuilt]
    check_same(
        "cedarlite (request dicts)",
        ours_allowed,
        [cedarlite.is_authorized(r, ps, ents).allowed for r in requests],
    )
    mixed = None
    if cedarpy is not None:
        cps = cedarpy.PolicySet.from_str(text)
        cents = cedarpy.Entities.from_json_str(json.dumps(entities))
        peer = lambda r: cedarpy.is_authorized(r, cps, cents)  # noqa: E731
        rows["cedarpy (pre-parsed handles)"] = timings(peer, requests)
        check_same("cedarpy", ours_allowed, [cedarpy_allowed(peer(r)) for r in requests])
        mixed = interleaved((peer, requests), fresh_dicts(ours))
        mixed["cedarpy (pre-parsed handles)"] = mixed.pop("peer")
    return report("agent hook workload", rows, "cedarpy (pre-parsed handles)", mixed)


# ---------------------------------------------------------------------------------------------
# 2. RBAC scale series


def rbac_policies(n: int, rng: random.Random) -> tuple[list[tuple[str, str, str, str]], str]:
    teams, folders = max(2, n // 10), max(2, n // 10)
    rows = []
    texts = []
    for i in range(n):
        team, folder = f"t{rng.randrange(teams)}", f"f{rng.randrange(folders)}"
        act = rng.choice(["read", "write", "delete"])
        if i % 10 == 9:
            rows.append(("deny", team, folder, act))
            texts.append(
                f'forbid (principal in Team::"{team}", action == Action::"{act}", '
                f'resource in Folder::"{folder}") when {{ resource.classified }};'
            )
        else:
            rows.append(("allow", team, folder, act))
            texts.append(
                f'permit (principal in Team::"{team}", action == Action::"{act}", '
                f'resource in Folder::"{folder}");'
            )
    return rows, "\n".join(texts)


def rbac_entities(n: int, rng: random.Random) -> tuple[list[dict[str, Any]], dict, dict]:
    teams, folders = max(2, n // 10), max(2, n // 10)
    users, docs = {}, {}
    entities = []
    for u in range(200):
        team = f"t{rng.randrange(teams)}"
        users[f"u{u}"] = team
        entities.append(
            {
                "uid": {"type": "User", "id": f"u{u}"},
                "attrs": {},
                "parents": [{"type": "Team", "id": team}],
            }
        )
    for d in range(200):
        folder = f"f{rng.randrange(folders)}"
        docs[f"d{d}"] = folder
        entities.append(
            {
                "uid": {"type": "Doc", "id": f"d{d}"},
                "attrs": {"classified": True},
                "parents": [{"type": "Folder", "id": folder}],
            }
        )
    return entities, users, docs


def casbin_enforcer(rows: list[tuple[str, str, str, str]], users: dict, docs: dict) -> Any:
    """RBAC with two role hierarchies; classified docs make every forbid apply."""
    model = casbin.Model()
    model.load_model_from_text(
        "[request_definition]\nr = sub, obj, act\n"
        "[policy_definition]\np = sub, obj, act, eft\n"
        "[role_definition]\ng = _, _\ng2 = _, _\n"
        "[policy_effect]\ne = some(where (p.eft == allow)) && !some(where (p.eft == deny))\n"
        "[matchers]\nm = g(r.sub, p.sub) && g2(r.obj, p.obj) && r.act == p.act\n"
    )
    enforcer = casbin.Enforcer(model)
    enforcer.add_policies([[team, folder, act, eft] for eft, team, folder, act in rows])
    enforcer.add_named_grouping_policies("g", [[u, t] for u, t in users.items()])
    enforcer.add_named_grouping_policies("g2", [[d, f] for d, f in docs.items()])
    return enforcer


def rbac_requests(n: int, n_requests: int) -> tuple[str, list[dict[str, Any]], list[Any], Any]:
    """The RBAC workload of ``n`` policies: (policy text, entity JSON, requests, rows)."""
    rng = random.Random(n)
    rows, text = rbac_policies(n, rng)
    entities, users, docs = rbac_entities(n, rng)
    requests = [
        {
            "principal": {"type": "User", "id": rng.choice(list(users))},
            "action": {"type": "Action", "id": rng.choice(["read", "write", "delete"])},
            "resource": {"type": "Doc", "id": rng.choice(list(docs))},
            "context": {},
        }
        for _ in range(n_requests)
    ]
    return text, entities, requests, (rows, users, docs)


def rbac_round(n: int, n_requests: int) -> dict[str, float]:
    """One size of the RBAC series: time every engine, print the table, return the medians."""
    text, entities, requests, (rows, users, docs) = rbac_requests(n, n_requests)
    ps = cedarlite.PolicySet.from_str(text)
    ents = cedarlite.Entities.from_json(entities)
    index = compiled(ps)
    prebuilt = [make_request(r) for r in requests]
    ours = our_engines(ps, ents, requests, prebuilt)
    rows_t = {name: timings(fn, items) for name, (fn, items) in ours.items()}
    ours_allowed = [index.authorize(r, ents, cache=False).allowed for r in prebuilt]
    # The peers are slow at scale: time a sample (the same first requests for both).
    size = max(50, n_requests // max(1, n // 100))
    sample = requests[:size]
    mixed = None
    if cedarpy is not None:
        cps = cedarpy.PolicySet.from_str(text)
        cents = cedarpy.Entities.from_json_str(json.dumps(entities))
        peer = lambda r: cedarpy.is_authorized(r, cps, cents)  # noqa: E731
        rows_t["cedarpy (pre-parsed handles)"] = timings(peer, sample)
        check_same("cedarpy", ours_allowed[:size], [cedarpy_allowed(peer(r)) for r in sample])
        mixed = interleaved((peer, sample), fresh_dicts(ours))
        mixed["cedarpy (pre-parsed handles)"] = mixed.pop("peer")
    if casbin is not None:
        enforcer = casbin_enforcer(rows, users, docs)
        args = [(r["principal"]["id"], r["resource"]["id"], r["action"]["id"]) for r in sample]
        rows_t["pycasbin"] = timings(lambda a: enforcer.enforce(*a), args)
        check_same("pycasbin", ours_allowed[:size], [enforcer.enforce(*a) for a in args])
    return report(f"RBAC scale: {n:,} policies", rows_t, "cedarpy (pre-parsed handles)", mixed)


def rbac_scale(n_requests: int) -> dict[int, dict[str, float]]:
    results = {n: rbac_round(n, n_requests) for n in (10, 100, 1000, 10000)}
    base = results[10]
    print("\n  growth of cedarlite's median from 10 to 10,000 policies (tight / interleaved):")
    for name in ("cedarlite (request dicts)", "cedarlite (prebuilt Request)"):
        tight = results[10000][name] / base[name]
        mixed = ""
        if "interleaved:" + name in base:
            key = "interleaved:" + name
            mixed = f" / {results[10000][key] / base[key]:.2f}x"
        print(f"    {name:<32}{tight:.2f}x{mixed}")
    return results


# ---------------------------------------------------------------------------------------------
# Where a cold decision's time goes


def profile(n_requests: int) -> None:
    """Stages of a decision timed on their own, each right after a cedarpy call on the same
    request (reading the request dict, converting its context, finding the request's entities,
    walking the scope index, then whole decisions, which also run the leaf functions and make
    the response), for the agent hook and 10,000 RBAC policies."""
    if cedarpy is None:
        print("\n--profile needs cedarpy (its calls are what makes each stage cold)")
        return
    text, entities, requests = agent_hook_data(n_requests)
    profile_one("agent hook", text, entities, requests)
    text, entities, requests, _ = rbac_requests(10000, max(50, n_requests // 20))
    profile_one("RBAC 10,000 policies", text, entities, requests)


def profile_one(title: str, text: str, entities: list[Any], requests: list[Any]) -> None:
    """:func:`profile` of one workload."""
    ps = cedarlite.PolicySet.from_str(text)
    ents = cedarlite.Entities.from_json(entities)
    index = compiled(ps)
    prebuilt = [make_request(r) for r in requests]
    cps = cedarpy.PolicySet.from_str(text)
    cents = cedarpy.Entities.from_json_str(json.dumps(entities))
    find = ents.lookup
    fresh = [json.loads(json.dumps(r)) for r in requests]  # strings never hashed, as in a hook
    stages: dict[str, Timed] = {
        "(timer and call, no work)": (lambda r: None, requests),
        "read the request dict (make_request)": (make_request, fresh),
        "the context alone (plain_record)": (lambda r: plain_record(r["context"]), fresh),
        "the three entities from the store": (
            lambda r: (find(r.principal), find(r.action), find(r.resource)),
            prebuilt,
        ),
        "scope index, node by node (groups)": (lambda r: index.groups(r, ents), prebuilt),
        "whole decision, prebuilt Request": (lambda r: index.authorize(r, ents), prebuilt),
        "whole decision, request dict": (lambda r: cedarlite.is_authorized(r, ps, ents), fresh),
    }
    mixed = interleaved((lambda r: cedarpy.is_authorized(r, cps, cents), requests), stages)
    tight = {name: timings(fn, items) for name, (fn, items) in stages.items()}
    print(f"\nwhere a decision's time goes: {title} ({len(requests)} requests)")
    print(f"  {'stage':<40}{'tight median us':>17}{'cold median us':>17}")
    for name in stages:
        print(f"  {name:<40}{summary(tight[name])[0]:>17,.1f}{summary(mixed[name])[0]:>17,.1f}")
    print(f"  {'cedarpy (pre-parsed handles)':<40}{'':>17}{summary(mixed['peer'])[0]:>17,.1f}")


# ---------------------------------------------------------------------------------------------
# 3. Load


def load_benchmark() -> None:
    rng = random.Random(3)
    _, text = rbac_policies(10000, rng)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "policies.cedar")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        cold, warm = [], []
        for i in range(5):
            cache = os.path.join(tmp, f"cache{i}")
            t0 = time.perf_counter()
            compiled(cedarlite.PolicySet.from_file(path, cache_dir=cache))
            cold.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            compiled(cedarlite.PolicySet.from_file(path, cache_dir=cache))
            warm.append(time.perf_counter() - t0)
        peer = []
        if cedarpy is not None:
            for _ in range(5):
                t0 = time.perf_counter()
                cedarpy.PolicySet.from_str(text)
                peer.append(time.perf_counter() - t0)
    print("\nload 10,000 policies (seconds, median of 5)")
    print(f"  cedarlite parse + compile (cold)      {statistics.median(cold):8.3f}")
    print(f"  cedarlite from compile cache (warm)   {statistics.median(warm):8.3f}")
    if peer:
        print(f"  cedarpy PolicySet.from_str            {statistics.median(peer):8.3f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer requests (smoke run)")
    parser.add_argument("--only", choices=["hook", "rbac", "load"], help="one workload")
    parser.add_argument(
        "--profile", action="store_true", help="where a cold decision's time goes (and exit)"
    )
    args = parser.parse_args(argv)
    n = 300 if args.quick else 3000
    print(
        f"python {sys.version.split()[0]}, cedarlite {cedarlite.__version__}, "
        f"cedarpy {'absent' if cedarpy is None else getattr(cedarpy, '__version__', 'present')}, "
        f"pycasbin {'absent' if casbin is None else 'present'}"
    )
    if args.profile:
        profile(n)
        return 0
    if args.only in (None, "hook"):
        agent_hook_workload(n)
    if args.only in (None, "rbac"):
        rbac_scale(n)
    if args.only in (None, "load"):
        load_benchmark()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
