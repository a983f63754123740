"""Commands that guard a host: ``mcp-proxy`` (a guarded MCP server over stdio) and ``hook
claude-code`` (Claude Code's command hook)."""

from __future__ import annotations

import argparse
import logging
import sys

from .common import EXIT_INVALID, UsageError
from .tools import Doc, Scenario, report_findings, summary


def cmd_mcp_proxy(args: argparse.Namespace) -> int:
    """A gating stdio MCP proxy in front of ``COMMAND`` (see :mod:`cedarlite.hosts.mcp_proxy`):
    the configuration and context (exit 3 for mistakes) and the rules' syntax (exit 1) are
    checked before the upstream starts; the exit code is then 0 when the client ends the
    session, 1 when the upstream fails."""
    # lazy on purpose: a command loads only the stages it runs (the command line's start time)
    from ..hosts.mcp_gate import McpGate
    from ..hosts.mcp_proxy import run_proxy
    from ..shipped import resolve
    from ..tools import ConfigError

    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        raise UsageError(
            "cedarlite mcp-proxy: error: give the upstream server's command after `--`"
        )
    if args.max_message_bytes < 1024:
        raise UsageError("cedarlite mcp-proxy: error: --max-message-bytes must be at least 1024")
    doc = Doc.read(args.config, "configuration")
    context_doc = Doc.read(args.context, "context") if args.context else None
    context = context_doc.data if context_doc is not None else None
    sc = Scenario(doc, doc.data, [], context, [], (), context_doc)
    try:
        with sc.blame():
            gate = McpGate(
                doc.data,
                rules=[resolve(r) for r in args.rules] if args.rules else None,
                context=context,
                server=args.server,
                decision_log=args.decision_log,
            )
    except ConfigError as err:
        report_findings(args, sc, err.issues)
        print(f"error: refusing to start: {summary(err.issues)}", file=sys.stderr)
        return EXIT_INVALID
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger = logging.getLogger("cedarlite")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)  # the proxy's stderr is the client's log of the server
    try:
        return run_proxy(gate, command, max_message_bytes=args.max_message_bytes)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def cmd_hook_claude_code(args: argparse.Namespace) -> int:
    """Answer one Claude Code hook event (exit 0, or 2 for unreadable input), or print the
    settings that install the hook (``--print-settings``)."""
    # lazy on purpose: a command loads only the stages it runs (the command line's start time)
    from ..hosts import claude_code

    options = claude_code.HookOptions(
        args.config,
        tuple(args.rules),
        args.state_dir,
        args.decision_log,
        args.deadline if args.deadline is not None else claude_code.DEFAULT_DEADLINE,
    )
    if args.print_settings:
        return claude_code.print_settings(options, sys.stdout, sys.stderr)
    return claude_code.run_blocking(options)
