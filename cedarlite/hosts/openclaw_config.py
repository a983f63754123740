"""OpenClaw's own configuration file (``openclaw.json``), read as a tools configuration.

OpenClaw keeps its tool settings (spec §4.1) in the one file that also holds its gateway,
models, plugins and channels. :func:`is_openclaw_config` tells such a file from a bare tools
configuration, :func:`tools_section` keeps the keys the tool layer reads (so that the strict
reading does not refuse the gateway's settings), and :func:`default_config_path` says where
OpenClaw reads it. The hook configuration reader (:class:`cedarlite.hosts.claude_code.HookConfig`,
which the decision service uses too) applies them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ..errors import CedarliteError

#: Top-level keys of OpenClaw's own configuration (2026.9.6's schema) that a tools
#: configuration (spec §4.1) never has: a file with one of them is an ``openclaw.json``, of
#: which only the tool layer's keys are read.
OPENCLAW_KEYS = frozenset(
    {
        "$schema", "meta", "env", "wizard", "diagnostics", "logging", "update", "telemetry",
        "browser", "ui", "secrets", "auth", "accessGroups", "acp", "models", "nodeHost",
        "worktreeRoot", "worktreeAcceleration", "security", "bindings", "broadcast",
        "attachments", "messages", "tts", "commands", "approvals", "session", "cron",
        "transcripts", "hooks", "discovery", "talk", "gateway", "cloudWorkers", "desktop",
        "memory", "mcp", "skills", "plugins", "surfaces", "proxy",
    }
)  # fmt: skip


class OpenClawError(CedarliteError):
    """An OpenClaw event, context or configuration that cannot be used (the call is blocked
    with this message)."""

    code = "E0930"


def default_config_path(env: Mapping[str, str] | None = None) -> str:
    """Where OpenClaw reads its configuration: ``$OPENCLAW_CONFIG_PATH``, else
    ``openclaw.json`` in ``$OPENCLAW_STATE_DIR``, else in ``~/.openclaw``."""
    env = os.environ if env is None else env
    given = (env.get("OPENCLAW_CONFIG_PATH") or "").strip()
    if given:
        return os.path.abspath(os.path.expanduser(given))
    state = (env.get("OPENCLAW_STATE_DIR") or "").strip()
    base = (
        os.path.expanduser(state) if state else os.path.join(os.path.expanduser("~"), ".openclaw")
    )
    return os.path.abspath(os.path.join(base, "openclaw.json"))


def is_openclaw_config(data: Any) -> bool:
    """Whether a configuration object is OpenClaw's own ``openclaw.json`` (see
    :data:`OPENCLAW_KEYS`; ``agents.entries`` too)."""
    if not isinstance(data, Mapping):
        return False
    agents = data.get("agents")
    return bool(OPENCLAW_KEYS & data.keys()) or (
        isinstance(agents, Mapping) and "entries" in agents
    )


def tools_section(data: Mapping[str, Any]) -> dict[str, Any]:
    """The tools configuration (spec §4.1) inside OpenClaw's configuration: ``tools``,
    ``agents.defaults.subagents``, the agent list and the channels' group ``tools``.

    2026.9 writes the agent list as ``agents.entries`` (``{"<id>": {...}}``; it wins over a
    legacy ``agents.list``, as OpenClaw reads it); each entry becomes ``{"id": "<id>", ...}``.
    Of an agent, only ``id``, ``default`` and ``tools`` are kept. Raises
    :class:`OpenClawError` for an ``agents.entries`` that is not an object.
    """
    out: dict[str, Any] = {}
    if "tools" in data:
        out["tools"] = data["tools"]
    agents = data.get("agents")
    if isinstance(agents, Mapping):
        section: dict[str, Any] = {}
        defaults = agents.get("defaults")
        if isinstance(defaults, Mapping) and "subagents" in defaults:
            sub = defaults["subagents"]
            keep = {"maxSpawnDepth": sub["maxSpawnDepth"]} if isinstance(sub, Mapping) and (
                "maxSpawnDepth" in sub) else {}  # fmt: skip
            section["defaults"] = {"subagents": keep}
        entries = agents.get("entries")
        if entries is not None:
            if not isinstance(entries, Mapping):
                raise OpenClawError('`agents.entries` must be an object: {"<agent id>": {...}}')
            listed: Any = [
                {"id": key, **_agent_keys(value)} if isinstance(value, Mapping) else value
                for key, value in entries.items()
            ]
        else:
            raw = agents.get("list")
            listed = (
                [_agent_keys(e) if isinstance(e, Mapping) else e for e in raw]
                if isinstance(raw, list)
                else raw
            )
        if listed is not None:
            section["list"] = listed
        out["agents"] = section
    channels = data.get("channels")
    if isinstance(channels, Mapping):
        kept: dict[str, Any] = {}
        for name, channel in channels.items():
            groups = channel.get("groups") if isinstance(channel, Mapping) else None
            if isinstance(groups, Mapping):
                kept[name] = {
                    "groups": {
                        g: {"tools": v["tools"]}
                        for g, v in groups.items()
                        if isinstance(v, Mapping) and "tools" in v
                    }
                }
        if kept:
            out["channels"] = kept
    return out


def _agent_keys(entry: Mapping[str, Any]) -> dict[str, Any]:
    return {k: entry[k] for k in ("id", "default", "tools") if k in entry}
