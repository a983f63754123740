"""Adapters that put cedarlite in front of real agent hosts.

* :mod:`cedarlite.hosts.mapping`: host tools (Claude Code's ``Bash``, ``Read``,
  ``mcp__<server>__<tool>``) as OpenClaw tools and arguments, as data a configuration overrides;
* :mod:`cedarlite.hosts.claude_code`: ``cedarlite hook claude-code``, the command hook of Claude
  Code (and of the hosts that copy its hook JSON), one process per tool call.

Each adapter decides with a :class:`cedarlite.hooks.Guard` and fails closed: any bad input or
internal error denies, with a reason.
"""
