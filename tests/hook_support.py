"""Claude Code's hook payloads, shaped exactly as Claude Code writes them (one place for the
tests that run `cedarlite hook claude-code` as a subprocess)."""

from __future__ import annotations

from typing import Any

#: The session of every payload (a Claude Code session id).
SESSION = "6f1c2d9e-0b7a-4c1e-9d3f-2a5b8c7e1f00"


def pre_tool_use(cwd: str, tool: str, tool_input: Any, /, **fields: Any) -> dict[str, Any]:
    """A ``PreToolUse`` event of ``tool`` with ``tool_input``, run in ``cwd``; ``fields``
    replace or add top-level keys (``hook_event_name``, ``tool_response``...)."""
    return {
        "session_id": SESSION,
        "transcript_path": f"/home/u/.claude/projects/-app/{SESSION}.jsonl",
        "cwd": cwd,
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_use_id": "toolu_01ABCDEF",
        **fields,
    }
