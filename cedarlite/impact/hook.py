"""Replaying a host hook's own log with the hook's own files.

A Claude Code hook decides each call with a guard whose catalog it builds itself
(:meth:`cedarlite.hosts.claude_code.HookConfig.catalog`): Claude Code's built-in tools, the
configuration's extra ``tools``, the MCP tools its rules name, and each called tool that is
none of these (MCP tools are known only when called). A replay of its log must decide with that
catalog, not with the configuration's extra ``tools`` alone (every built-in would be
"not offered") nor without the tools the rules name (their rules would not validate).
:func:`hook_replay` reads the hook's configuration and rules as the hook reads them and gives
:func:`~cedarlite.impact.replay` the configuration, the rules and :func:`hook_catalog`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

from ..hosts.claude_code import HookConfig, named_mcp_tools
from ..hosts.mapping import MappedCall


def is_hook_config(data: Any) -> bool:
    """Whether a JSON document is a Claude Code hook configuration rather than a scenario:
    it has the hook's own section, ``claudeCode``."""
    return isinstance(data, Mapping) and "claudeCode" in data


def hook_catalog(
    config: HookConfig, named: Sequence[str], seen: list[dict[str, Any]]
) -> list[Mapping[str, Any]]:
    """The hook's catalog (its one function, :meth:`HookConfig.catalog`) with the tools the
    log shows were called (``seen``: ``{"name", "pluginId"?}``) added as the hook adds a
    called tool."""
    calls = [MappedCall(t["name"], t["name"], t.get("pluginId"), ()) for t in seen]
    return config.catalog(None, named, calls)


def hook_replay(
    path: str | os.PathLike[str], rules: Sequence[str]
) -> tuple[Any, list[str], Callable[[list[dict[str, Any]]], list[Mapping[str, Any]]]]:
    """``(config, rule paths, catalog)`` for :func:`~cedarlite.impact.replay` from the hook's
    configuration file and ``--rules`` (``cedarlite:NAME`` for a shipped file), checked as
    the hook checks them when it builds a guard. Raises
    :class:`~cedarlite.hosts.claude_code.HookError` (located in the file) or a rules error."""
    config = HookConfig.read(os.fspath(path), rules)
    config.check()
    named = named_mcp_tools(config.rule_sets())
    return config.config, [p for p, _ in config.rules], partial(hook_catalog, config, named)
