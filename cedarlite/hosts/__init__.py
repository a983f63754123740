"""Adapters that put real agent hosts under cedarlite's guard (:mod:`cedarlite.hooks`).

* :mod:`cedarlite.hosts.mapping`: host tools (Claude Code's ``Bash``, ``Read``,
  ``mcp__<server>__<tool>``) as OpenClaw tools and arguments, as data a configuration overrides;
* :mod:`cedarlite.hosts.claude_code`: ``cedarlite hook claude-code``, the command hook of Claude
  Code (and of the hosts that copy its hook JSON), one process per tool call;
* :mod:`cedarlite.hosts.mcp_gate`: the policy of one MCP server's tools (filter ``tools/list``,
  decide ``tools/call``), shared by the two MCP adapters; needs no MCP SDK;
* :mod:`cedarlite.hosts.mcp`: a middleware for servers built with the official MCP Python SDK
  (``pip install 'cedarlite[mcp]'``);
* :mod:`cedarlite.hosts.mcp_proxy`: ``cedarlite mcp-proxy``, a gating stdio proxy in front of
  any MCP server;
* :mod:`cedarlite.hosts.serve`: ``cedarlite serve``, a long-lived decision service (stdio, a
  Unix socket, HTTP) for hosts that cannot embed Python, and the Claude Code hook's client of it.

Each adapter decides with a :class:`cedarlite.hooks.Guard` and fails closed: any bad input or
internal error denies, with a reason. Nothing here is imported by ``import cedarlite``: each
adapter loads what its host needs.
"""
