"""The OpenClaw tool policy (openclaw-tool-policy.md §1-§10), implemented step by step.

This is the test oracle for ``cedarlite.tools``: a direct transcription of the specification on
plain JSON values, written independently of the compiled-Cedar path (it imports nothing from
cedarlite). It filters lists of tools the way the spec describes; the library must agree with it
while deciding every tool through Cedar policies.

``resolve(config, tools, context)`` returns ``{"allowed": [...]}`` or ``{"error": "..."}`` and, in
both cases, ``"removed"`` (tool name → label of the step that removed it, registration and
owner-only included) and ``"warnings"`` (the diagnostics of §6.2 and §10).
"""

from __future__ import annotations

import math
import re
from typing import Any

# --- §2: the core catalog ---------------------------------------------------------------------

CORE = [  # id, section, profiles, in group:openclaw
    ("read", "fs", {"coding"}, False),
    ("write", "fs", {"coding"}, False),
    ("edit", "fs", {"coding"}, False),
    ("apply_patch", "fs", {"coding"}, False),
    ("exec", "runtime", {"coding"}, False),
    ("process", "runtime", {"coding"}, False),
    ("code_execution", "runtime", {"coding"}, True),
    ("web_search", "web", {"coding"}, True),
    ("web_fetch", "web", {"coding"}, True),
    ("x_search", "web", {"coding"}, True),
    ("memory_search", "memory", {"coding"}, True),
    ("memory_get", "memory", {"coding"}, True),
    ("sessions_list", "sessions", {"coding", "messaging"}, True),
    ("sessions_history", "sessions", {"coding", "messaging"}, True),
    ("sessions_send", "sessions", {"coding", "messaging"}, True),
    ("sessions_spawn", "sessions", {"coding"}, True),
    ("sessions_yield", "sessions", {"coding"}, True),
    ("subagents", "sessions", {"coding"}, True),
    ("session_status", "sessions", {"minimal", "coding", "messaging"}, True),
    ("browser", "ui", set(), True),
    ("canvas", "ui", set(), True),
    ("message", "messaging", {"messaging"}, True),
    ("cron", "automation", {"coding"}, True),
    ("gateway", "automation", set(), True),
    ("nodes", "nodes", set(), True),
    ("agents_list", "agents", set(), True),
    ("update_plan", "agents", {"coding"}, True),
    ("image", "media", {"coding"}, True),
    ("image_generate", "media", {"coding"}, True),
    ("music_generate", "media", {"coding"}, True),
    ("video_generate", "media", {"coding"}, True),
    ("tts", "media", set(), True),
]
# OpenClaw 2026.9.6's additions (its dist/tool-catalog-*.mjs rows; the tool-search tools have
# no section).
_C, _M = {"coding"}, {"coding", "messaging"}
ADDED = [
    ("ls", "fs", _C, False), ("secrets", "runtime", _M, True), ("sessions", "sessions", _M, True),
    ("sessions_search", "sessions", _M, True), ("conversations_list", "sessions", _M, True),
    ("conversations_send", "sessions", _M, True), ("conversations_turn", "sessions", _M, True),
    ("github_identity_status", "sessions", _C, True), ("github_publish", "sessions", _C, True),
    ("agents_wait", "sessions", _C, True), ("suggest_task", "sessions", _C, True),
    ("dismiss_task", "sessions", _C, True), ("screen", "ui", _C, True), ("theme", "ui", _M, True),
    ("dashboard", "ui", _C, True), ("terminal", "ui", _C, True), ("portal", "ui", _C, True),
    ("show_widget", "ui", set(), True), ("heartbeat_respond", "automation", set(), True),
    ("automations", "automation", _C, True), ("plugins", "automation", _C, True),
    ("openclaw", "automation", set(), True), ("computer", "nodes", set(), True),
    ("mobile_ui", "nodes", set(), True), ("get_goal", "agents", _C, True),
    ("create_goal", "agents", _C, True), ("update_goal", "agents", _C, True),
    ("progress_card", "agents", _C, True), ("ask_user", "agents", _M, True),
    ("skill_workshop", "agents", _C, True), ("view_image", "media", _C, True),
    ("pdf", "media", set(), True), ("tool_search", None, _M, False),
    ("tool_describe", None, _M, False), ("tool_call", None, _M, False),
]  # fmt: skip
CORE += ADDED
CORE_IDS = [c[0] for c in CORE]

GROUPS = {
    "group:openclaw": [
        "code_execution", "web_search", "web_fetch", "x_search", "memory_search", "memory_get",
        "sessions_list", "sessions_history", "sessions_send", "sessions_spawn", "sessions_yield",
        "subagents", "session_status", "browser", "canvas", "message", "cron", "gateway", "nodes",
        "agents_list", "update_plan", "image", "image_generate", "music_generate",
        "video_generate", "tts",
    ],
    "group:fs": ["read", "write", "edit", "apply_patch"],
    "group:runtime": ["exec", "process", "code_execution"],
    "group:web": ["web_search", "web_fetch", "x_search"],
    "group:memory": ["memory_search", "memory_get"],
    "group:sessions": [
        "sessions_list", "sessions_history", "sessions_send", "sessions_spawn", "sessions_yield",
        "subagents", "session_status",
    ],
    "group:ui": ["browser", "canvas"],
    "group:messaging": ["message"],
    "group:automation": ["cron", "gateway"],
    "group:nodes": ["nodes"],
    "group:agents": ["agents_list", "update_plan"],
    "group:media": ["image", "image_generate", "music_generate", "video_generate", "tts"],
}  # fmt: skip
for _id, _section, _, _in_openclaw in ADDED:
    if _in_openclaw:
        GROUPS["group:openclaw"].append(_id)
    if _section is not None:
        GROUPS[f"group:{_section}"].append(_id)

PROFILES = {
    "minimal": ["session_status"],
    "coding": [
        "read", "write", "edit", "apply_patch", "exec", "process", "code_execution", "web_search",
        "web_fetch", "x_search", "memory_search", "memory_get", "sessions_list",
        "sessions_history", "sessions_send", "sessions_spawn", "sessions_yield", "subagents",
        "session_status", "cron", "update_plan", "image", "image_generate", "music_generate",
        "video_generate", "bundle-mcp",
    ],
    "messaging": [
        "sessions_list", "sessions_history", "sessions_send", "session_status", "message",
        "bundle-mcp",
    ],
}  # fmt: skip
for _name, _members in PROFILES.items():
    _members[-1:-1] = [a[0] for a in ADDED if _name in a[2]]

SANDBOX_ALLOW = [
    "exec", "process", "read", "write", "edit", "apply_patch", "image", "sessions_list",
    "sessions_history", "sessions_send", "sessions_spawn", "sessions_yield", "subagents",
    "session_status",
]  # fmt: skip
SANDBOX_DENY = [
    "browser", "canvas", "nodes", "cron", "gateway", "bluebubbles", "discord", "feishu",
    "googlechat", "imessage", "irc", "line", "matrix", "mattermost", "msteams", "nextcloud-talk",
    "nostr", "qqbot", "signal", "slack", "synology-chat", "telegram", "tlon", "twitch",
    "whatsapp", "zalo", "zalouser",
]  # fmt: skip
SUBAGENT_ALWAYS = ["gateway", "agents_list", "session_status", "cron", "sessions_send"]
SUBAGENT_LEAF = ["subagents", "sessions_list", "sessions_history", "sessions_spawn"]
OWNER_ONLY = {"whatsapp_login", "cron", "gateway", "nodes"} | {  # and 2026.9.6's
    "automations",
    "plugins",
    "openclaw",
    "screen",
    "terminal",
    "portal",
    "computer",
    "mobile_ui",
    "sessions",
    "conversations_list",
    "conversations_send",
    "conversations_turn",
}

# --- §3: names and patterns -------------------------------------------------------------------

WS = (
    "\t\n\x0b\x0c\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)


def trim(s: str) -> str:
    return s.strip(WS)


def norm(x: Any) -> str:
    if not isinstance(x, str):
        return ""
    x = trim(x).lower()
    return {"bash": "exec", "apply-patch": "apply_patch"}.get(x, x)


def same(a: Any, b: Any) -> bool:
    """JavaScript ``===`` on JSON values."""
    if isinstance(a, dict | list) or isinstance(b, dict | list):
        return a is b
    numbers = (int, float)
    if type(a) in numbers and type(b) in numbers:
        return a == b
    return type(a) is type(b) and a == b


def dedupe(items: list[Any]) -> list[Any]:
    out: list[Any] = []
    for x in items:
        if not any(same(x, y) for y in out):
            out.append(x)
    return out


def expand(lst: list[Any]) -> list[str]:
    out = []
    for e in lst:
        n = norm(e)
        if n == "":
            continue
        out.extend(GROUPS.get(n, [n]))
    return dedupe(out)


def patterns(lst: list[Any]) -> list[Any]:
    out: list[Any] = []
    for e in lst:
        n = norm(e)
        if n == "":
            continue
        if n == "*":
            out.append("*")
        elif "*" not in n:
            out.append(("exact", n))
        else:
            rx = "".join("[^\n\r\u2028\u2029]*" if ch == "*" else re.escape(ch) for ch in n)
            out.append(re.compile(rx))
    return out


def matches(name: str, pats: list[Any]) -> bool:
    for p in pats:
        if p == "*":
            return True
        if isinstance(p, tuple):
            if name == p[1]:
                return True
        elif p.fullmatch(name):
            return True
    return False


# --- helpers for reading the configuration (§4.1) ---------------------------------------------


def obj(x: Any) -> dict[str, Any] | None:
    return x if isinstance(x, dict) else None


def get(d: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(d, dict):
            return None
        d = d.get(key)
    return d


def arr(x: Any) -> list[Any] | None:
    return x if isinstance(x, list) else None


def norm_agent_id(v: Any) -> str:
    t = trim(v) if isinstance(v, str) else ""
    if t == "":
        return "main"
    if re.fullmatch(r"[a-z0-9][a-z0-9_-]{0,63}", t, re.IGNORECASE | re.ASCII):
        return t.lower()
    t = re.sub(r"[^a-z0-9_-]+", "-", t.lower()).strip("-")[:64]
    return t or "main"


def truthy(v: Any) -> bool:
    if v is None or v is False:
        return False
    if isinstance(v, int | float) and not isinstance(v, bool):
        return v != 0 and not (isinstance(v, float) and math.isnan(v))
    if isinstance(v, str):
        return v != ""
    return True


# --- §5: the step policies --------------------------------------------------------------------


def profile_policy(profile: Any) -> dict[str, Any] | None:
    if isinstance(profile, str) and profile in PROFILES:
        return {"allow": list(PROFILES[profile])}
    return None


def widen(policy: dict[str, Any] | None, extra: Any) -> dict[str, Any] | None:
    if policy is not None and policy.get("allow") is not None and arr(extra):
        return {**policy, "allow": dedupe(policy["allow"] + extra)}
    return policy


def pick(o: Any) -> dict[str, Any] | None:
    if not isinstance(o, dict):
        return None
    allow, also, deny = arr(o.get("allow")), arr(o.get("alsoAllow")), arr(o.get("deny"))
    also_nonempty = also is not None and len(also) > 0
    if allow is not None and not also_nonempty:
        a = allow
    elif allow is not None and len(allow) == 0 and also_nonempty:
        a = dedupe(["*", *also])  # type: ignore[misc]
    elif allow is not None and also_nonempty:
        a = dedupe(allow + also)  # type: ignore[operator]
    elif allow is None and also_nonempty:
        a = dedupe(["*", *also])  # type: ignore[misc]
    else:
        a = None
    if a is None and deny is None:
        return None
    return {"allow": a, "deny": deny}


def by_provider_match(bp: Any, context: dict[str, Any]) -> Any:
    """§5.5: the matched entry (any non-null value), or None."""
    return by_provider_key(bp, context)[1]


def by_provider_key(bp: Any, context: dict[str, Any]) -> tuple[str | None, Any]:
    """§5.5: the matched (normalized key, entry), or (None, None)."""
    provider = context.get("provider")
    if not isinstance(provider, str) or trim(provider) == "":
        return None, None
    if not isinstance(bp, dict) or len(bp) == 0:
        return None, None
    lookup: dict[str, Any] = {}
    for k, v in bp.items():
        nk = trim(k).lower()
        if nk == "":
            continue
        lookup.pop(nk, None)
        lookup[nk] = v
    p = trim(provider).lower()
    model = context.get("model")
    m = trim(model).lower() if isinstance(model, str) else ""
    candidates = []
    if m:
        candidates.append(m if "/" in m else p + "/" + m)
    candidates.append(p)
    for c in candidates:
        if lookup.get(c) is not None:
            return c, lookup[c]
    return None, None


def resolve_steps(config: Any, context: dict[str, Any]) -> dict[str, Any]:
    """Phase 1 and 2: the agent, the nine step policies and the two base profile policies."""
    cfg = config if isinstance(config, dict) else {}
    tools = obj(cfg.get("tools")) or {}
    entries = arr(get(cfg, "agents", "list")) or []
    objects = [e for e in entries if isinstance(e, dict)]

    agent_id = context.get("agentId")
    if isinstance(agent_id, str) and trim(agent_id) != "":
        agent = norm_agent_id(agent_id)
    elif objects:
        chosen = next((e for e in objects if truthy(e.get("default"))), objects[0])
        raw_id = chosen.get("id")
        agent = norm_agent_id(raw_id if isinstance(raw_id, str) else None)
    else:
        agent = "main"
    entry = next(
        (
            e
            for e in objects
            if norm_agent_id(e.get("id") if isinstance(e.get("id"), str) else None) == agent
        ),
        None,
    )
    agent_tools = obj(entry.get("tools")) if entry is not None else None

    # §5.3 profiles
    if agent_tools is not None and agent_tools.get("profile") is not None:
        profile = agent_tools.get("profile")
    else:
        profile = tools.get("profile")
    base_profile = profile_policy(profile)
    if agent_tools is not None and arr(agent_tools.get("alsoAllow")) is not None:
        profile_also = agent_tools.get("alsoAllow")
    else:
        profile_also = arr(tools.get("alsoAllow"))

    kg, global_match = by_provider_key(tools.get("byProvider"), context)
    ka, agent_match = (
        by_provider_key(agent_tools.get("byProvider"), context) if agent_tools else (None, None)
    )
    ga, gg = obj(agent_match), obj(global_match)
    if ga is not None and ga.get("profile") is not None:
        provider_profile = ga.get("profile")
    else:
        provider_profile = gg.get("profile") if gg is not None else None
    base_provider = profile_policy(provider_profile)
    if ga is not None and arr(ga.get("alsoAllow")) is not None:
        provider_also = ga.get("alsoAllow")
    else:
        provider_also = arr(gg.get("alsoAllow")) if gg is not None else None

    steps: list[tuple[str, dict[str, Any] | None]] = [
        ("tools.profile", widen(base_profile, profile_also)),
        ("tools.byProvider.profile", widen(base_provider, provider_also)),
        ("tools.allow", pick(tools)),
        ("tools.byProvider.allow", pick(global_match)),
        (f"agents.{agent}.tools.allow", pick(agent_tools)),
        (f"agents.{agent}.tools.byProvider.allow", pick(agent_match)),
        ("group tools.allow", group_policy(cfg, context)),
        (
            "sandbox tools.allow",
            sandbox_policy(tools, agent_tools) if context.get("sandboxed") is True else None,
        ),
        (
            "subagent tools.allow",
            subagent_policy(cfg, tools, context) if subagent_depth(context) >= 1 else None,
        ),
    ]
    # Removal labels: the configuration path that decided (allow list, deny parts).
    me = f"agents.{agent}.tools"
    own_profile = agent_tools is not None and agent_tools.get("profile") is not None
    own_provider = ga is not None and ga.get("profile") is not None
    sandbox = sandbox_sources(tools, agent_tools, me)
    remaining = steps[8][1]["deny_defaults"] if steps[8][1] is not None else 0
    sources = [
        (f"{me}.profile" if own_profile else "tools.profile", None, 0),
        (
            f"{me}.byProvider{path_key(ka)}.profile"
            if own_provider
            else f"tools.byProvider{path_key(kg or '')}.profile",
            None,
            0,
        ),
        ("tools.allow", "tools.deny", 0),
        (
            f"tools.byProvider{path_key(kg or '')}.allow",
            f"tools.byProvider{path_key(kg or '')}.deny",
            0,
        ),
        (f"{me}.allow", f"{me}.deny", 0),
        (
            f"{me}.byProvider{path_key(ka or '')}.allow",
            f"{me}.byProvider{path_key(ka or '')}.deny",
            0,
        ),
        group_sources(cfg, context),
        sandbox,
        ("tools.subagents.tools.allow", "tools.subagents.tools.deny", remaining),
    ]
    return {
        "agent": agent,
        "steps": steps,
        "sources": sources,
        "base_profile": base_profile,
        "base_provider": base_provider,
        "profile": profile,
        "provider_profile": provider_profile,
    }


def path_key(key: str) -> str:
    """A key in a removal label: ``.name`` or ``["quoted"]`` (Cedar string escapes)."""
    if re.fullmatch(r"[_a-zA-Z][_a-zA-Z0-9]*(::[_a-zA-Z][_a-zA-Z0-9]*)*", key):
        return "." + key
    escapes = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\", "\0": "\\0", '"': '\\"'}
    out = "".join(
        escapes.get(c) or (c if c.isprintable() or c == " " else f"\\u{{{ord(c):x}}}") for c in key
    )
    return f'["{out}"]'


def group_sources(cfg: dict[str, Any], context: dict[str, Any]) -> tuple[str, str, int]:
    """The labels of the group policy's lists (§5.6): the exact group or ``*``."""
    gid, channel = context.get("groupId"), context.get("channel")
    gid = trim(gid) if isinstance(gid, str) else ""
    channel = trim(channel).lower() if isinstance(channel, str) else ""
    groups = obj(get(obj(cfg.get("channels")), channel, "groups")) or {}
    exact = groups.get(gid)
    key = gid if isinstance(exact, dict) and isinstance(exact.get("tools"), dict) else "*"
    at = f"channels{path_key(channel)}.groups{path_key(key)}.tools"
    return f"{at}.allow", f"{at}.deny", 0


def sandbox_sources(
    tools: dict[str, Any], agent_tools: dict[str, Any] | None, me: str
) -> tuple[str, str, int]:
    """The labels of the sandbox lists (§5.7): the agent's array, the global one, or default."""
    g = obj(get(tools, "sandbox", "tools")) or {}
    a = (obj(get(agent_tools, "sandbox", "tools")) if agent_tools is not None else None) or {}

    def where(name: str) -> str:
        if arr(a.get(name)) is not None:
            return f"{me}.sandbox.tools.{name}"
        if arr(g.get(name)) is not None:
            return f"tools.sandbox.tools.{name}"
        return f"tools.sandbox.tools.{name} (default)"

    return where("allow"), where("deny"), 0


def group_policy(cfg: dict[str, Any], context: dict[str, Any]) -> dict[str, Any] | None:
    gid, channel = context.get("groupId"), context.get("channel")
    gid = trim(gid) if isinstance(gid, str) else ""
    channel = trim(channel).lower() if isinstance(channel, str) else ""
    if gid == "" or channel == "":
        return None
    channels = obj(cfg.get("channels"))
    groups = obj(get(channels, channel, "groups")) if channels is not None else None
    if groups is None:
        return None
    exact = groups.get(gid)
    if isinstance(exact, dict) and isinstance(exact.get("tools"), dict):
        return pick(exact["tools"])
    star = groups.get("*")
    if isinstance(star, dict) and star.get("tools") is not None:
        return pick(star["tools"])
    return None


def sandbox_policy(tools: dict[str, Any], agent_tools: dict[str, Any] | None) -> dict[str, Any]:
    g = obj(get(tools, "sandbox", "tools")) or {}
    a = obj(get(agent_tools, "sandbox", "tools")) if agent_tools is not None else None
    a = a or {}

    def field(name: str) -> list[Any] | None:
        return arr(a.get(name)) if arr(a.get(name)) is not None else arr(g.get(name))

    A, AA, D = field("allow"), field("alsoAllow"), field("deny")
    if A is not None and len(A) == 0:
        allow: list[Any] = []
    elif A is not None and not AA:
        allow = A
    elif A is not None and AA:
        allow = dedupe(A + AA)
    elif A is None and AA:
        allow = dedupe(SANDBOX_ALLOW + AA)
    else:
        allow = list(SANDBOX_ALLOW)
    if D is not None:
        deny = D
    else:
        lift = patterns(expand(dedupe((A or []) + (AA or []))))
        deny = [n for n in SANDBOX_DENY if not matches(n, lift)]
    deny = expand(deny)
    allow = expand(allow)
    if allow and "image" not in allow and "image" not in deny:
        allow.append("image")
    return {"allow": allow, "deny": deny}


def subagent_depth(context: dict[str, Any]) -> int:
    d = context.get("subagentDepth")
    if isinstance(d, bool) or not isinstance(d, int | float):
        return 0
    if isinstance(d, float) and (math.isnan(d) or math.isinf(d) or d != int(d)):
        return 0
    return int(d)


def subagent_policy(
    cfg: dict[str, Any], tools: dict[str, Any], context: dict[str, Any]
) -> dict[str, Any]:
    msd = get(cfg, "agents", "defaults", "subagents", "maxSpawnDepth")
    if isinstance(msd, int | float) and not isinstance(msd, bool) and math.isfinite(msd):
        max_depth = max(1, math.floor(msd))
    else:
        max_depth = 1
    leaf = not (subagent_depth(context) < max_depth)
    C = obj(get(tools, "subagents", "tools")) or {}
    allow, also, deny = arr(C.get("allow")), arr(C.get("alsoAllow")), arr(C.get("deny"))
    explicit = {norm(e) for e in (allow or []) + (also or [])}
    defaults = SUBAGENT_ALWAYS + (SUBAGENT_LEAF if leaf else [])
    remaining = [n for n in defaults if norm(n) not in explicit]
    if allow is not None and also is not None:
        a: list[Any] | None = dedupe(allow + also)
    elif allow is not None:
        a = allow
    else:
        a = None
    return {"allow": a, "deny": remaining + (deny or []), "deny_defaults": len(remaining)}


# --- §6-§10 -----------------------------------------------------------------------------------


def resolve(config: Any, tools: list[dict[str, Any]], context: dict[str, Any]) -> dict[str, Any]:
    """The whole layer (spec §5 phases 1-8), with removal labels and diagnostics."""
    context = context if isinstance(context, dict) else {}
    r = resolve_steps(config, context)
    steps = r["steps"]

    why: dict[int, str] = {}  # id(tool) -> the step that removed it
    notes: list[str] = []

    def remove(tool: dict[str, Any], label: str) -> None:
        why.setdefault(id(tool), label)

    # §6.2 registration
    is_plugin = [isinstance(t.get("pluginId"), str) for t in tools]
    core_names = {norm(t.get("name")) for t, p in zip(tools, is_plugin, strict=True) if not p}
    core_exact = [t.get("name") for t, p in zip(tools, is_plugin, strict=True) if not p]
    explicit_sources = [r["base_profile"], r["base_provider"], *(p for _, p in steps[2:])]
    E: set[str] = set()
    for pol in explicit_sources:
        if pol is None or pol.get("allow") is None:
            continue
        for e in pol["allow"]:
            if isinstance(e, str) and trim(e) != "":
                E.add(norm(trim(e)))
    E.discard("")
    kept: list[dict[str, Any]] = []
    kept_plugin_names: list[Any] = []
    for t, plugin in zip(tools, is_plugin, strict=True):
        if not plugin:
            kept.append(t)
            continue
        pid = t["pluginId"]
        if norm(pid) in core_names:
            notes.append(f"plugin id conflicts with core tool name ({pid})")
            remove(t, "plugins.id-conflict")
            continue
        wanted = {norm(t.get("name")), norm(pid), "group:plugins"}
        if t.get("optional") is True and not (E and wanted & E):
            remove(t, "plugins.optional")
            continue
        name = t.get("name")
        if any(same(name, c) for c in core_exact) or any(same(name, k) for k in kept_plugin_names):
            notes.append(f"plugin tool name conflict ({pid}): {name}")
            remove(t, "plugins.name-conflict")
            continue
        kept.append(t)
        kept_plugin_names.append(name)

    # §7 owner-only
    if context.get("senderIsOwner") is not True:
        survivors = []
        for t in kept:
            if t.get("ownerOnly") is True or norm(t.get("name")) in OWNER_ONLY:
                remove(t, "owner-only")
            else:
                survivors.append(t)
        kept = survivors
    entered = list(kept)

    # §6.3 plugin groups
    all_plugin = [norm(t.get("name")) for t in entered if isinstance(t.get("pluginId"), str)]
    per_plugin: dict[str, list[str]] = {}
    for t in entered:
        if isinstance(t.get("pluginId"), str):
            key = trim(t["pluginId"]).lower()
            if key:
                per_plugin.setdefault(key, []).append(norm(t.get("name")))

    def rewrite(lst: Any) -> Any:
        if not isinstance(lst, list) or len(lst) == 0:
            return lst
        out: list[str] = []
        for e in lst:
            n = norm(e)
            if n == "group:plugins":
                out.extend(all_plugin if all_plugin else [n])
            elif per_plugin.get(n):
                out.extend(per_plugin[n])
            else:
                out.append(n)
        return dedupe(out)

    # §8 the pipeline
    current = list(entered)
    for (_, pol), (allow_from, deny_from, defaults) in zip(steps, r["sources"], strict=True):
        if pol is None:
            continue
        deny = pol.get("deny") or []
        parts = [
            (f"{deny_from} (default)", patterns(expand(rewrite(deny[:defaults]) or []))),
            (deny_from, patterns(expand(rewrite(deny[defaults:]) or []))),
        ]
        A = patterns(expand(rewrite(pol.get("allow")) or []))
        survivors = []
        for t in current:
            n = norm(t.get("name"))
            denied = [
                label
                for label, D in parts
                if matches(n, D) or (n == "apply_patch" and matches("write", D))
            ]
            if denied:
                remove(t, denied[0])
            elif not A or matches(n, A) or (n == "apply_patch" and matches("write", A)):
                survivors.append(t)
            else:
                remove(t, allow_from)
        current = survivors

    # phase 6
    if context.get("toolsEnabled") is False:
        for t in current:
            remove(t, "toolsEnabled")
        current = []

    allowed = [t.get("name") for t in current]
    removed: dict[Any, str] = {}  # first tool of each name, in input order
    for t in tools:
        name = t.get("name")
        if id(t) in why and not any(same(name, a) for a in allowed):
            removed.setdefault(name, why[id(t)])
    warnings = dedupe(notes) + unknown_entry_warnings(r, steps, entered)

    # §9 the guard
    sources = []
    for label, pol in steps[2:]:
        if pol is None or pol.get("allow") is None:
            continue
        entries = [norm(trim(e)) for e in pol["allow"] if isinstance(e, str) and trim(e) != ""]
        if entries:
            sources.append(f"{label}: {', '.join(entries)}")
    callable_left = any(norm(t.get("name")) != "" for t in current)
    result: dict[str, Any] = {"removed": removed, "warnings": warnings}
    if sources and not callable_left:
        reason = (
            "the selected model does not support tools"
            if context.get("toolsEnabled") is False
            else "no registered tools matched"
        )
        result["error"] = (
            f"No callable tools remain after resolving explicit tool allowlist "
            f"({'; '.join(sources)}); {reason}. Fix the allowlist or enable the plugin that "
            "registers the requested tool."
        )
    else:
        result["allowed"] = allowed
    return result


def unknown_entry_warnings(
    r: dict[str, Any], steps: list[Any], entered: list[dict[str, Any]]
) -> list[str]:
    """§10: unknown allowlist entries of steps 1-7."""
    plugin_ids = {
        trim(t["pluginId"]).lower() for t in entered if isinstance(t.get("pluginId"), str)
    }
    plugin_ids.discard("")
    plugin_names = {norm(t.get("name")) for t in entered if isinstance(t.get("pluginId"), str)}
    core_names = {norm(t.get("name")) for t in entered if not isinstance(t.get("pluginId"), str)}
    out = []
    for i, (label, pol) in enumerate(steps[:7]):
        if pol is None or pol.get("allow") is None:
            continue
        allow = pol["allow"]
        if not any(isinstance(e, str) and trim(e) != "" for e in allow):
            continue
        base: set[str] = set()
        if i == 0:
            base = set(r["base_profile"]["allow"])
            label = f"{label} ({r['profile']})" if trim(r["profile"]) else label
        elif i == 1:
            base = set(r["base_provider"]["allow"])
            prof = r["provider_profile"]
            label = f"{label} ({prof})" if trim(prof) else label
        gated, other = [], []
        for e in dedupe([norm(x) for x in allow]):
            if e in ("", "*") or e in base:
                continue
            if e == "group:plugins" or e in plugin_ids or e in plugin_names:
                continue
            if any(m in core_names for m in (GROUPS.get(e) or [e])):
                continue
            (gated if e in CORE_IDS else other).append(e)
        if not gated and not other:
            continue
        if gated and other:
            detail = (
                "Some entries are shipped core tools but unavailable in the current "
                "runtime/provider/model/config; other entries won't match any tool unless the "
                "plugin is enabled."
            )
        elif gated:
            detail = (
                "These entries are shipped core tools but unavailable in the current "
                "runtime/provider/model/config."
            )
        else:
            detail = "These entries won't match any tool unless the plugin is enabled."
        entries = ", ".join(gated + other)
        out.append(f"tools: {label} allowlist contains unknown entries ({entries}). {detail}")
    return out
