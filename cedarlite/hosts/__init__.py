"""Adapters that put real agent hosts under cedarlite's guard (:mod:`cedarlite.hooks`).

* :mod:`cedarlite.hosts.mcp_gate`: the policy of one MCP server's tools (filter ``tools/list``,
  decide ``tools/call``), shared by the two MCP adapters; needs no MCP SDK;
* :mod:`cedarlite.hosts.mcp`: a middleware for servers built with the official MCP Python SDK
  (``pip install 'cedarlite[mcp]'``);
* :mod:`cedarlite.hosts.mcp_proxy`: ``cedarlite mcp-proxy``, a gating stdio proxy in front of
  any MCP server.

Nothing here is imported by ``import cedarlite``: each adapter loads what its host needs.
"""
