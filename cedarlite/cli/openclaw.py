"""``cedarlite hook openclaw --print-settings``: the command line (:func:`add_parser`,
registered by :mod:`cedarlite.cli.main`); the work is
:func:`cedarlite.hosts.openclaw_settings.print_settings`."""

from __future__ import annotations

import sys
from typing import Any


def add_parser(hosts: Any) -> None:
    """Add ``openclaw`` to the subcommands of ``cedarlite hook``."""
    # lazy on purpose: a command loads only the stages it runs (the command line's start time)
    from ..hosts.openclaw_settings import DEFAULT_DEADLINE, MAX_DEADLINE

    op = hosts.add_parser(
        "openclaw",
        help="print the OpenClaw settings that load cedarlite's plugin (--print-settings)",
        description="Check the configuration and rules, then print the `plugins` settings to "
        "deep-merge into openclaw.json: they load cedarlite's OpenClaw plugin, which decides "
        "every tool call through `cedarlite serve --stdio`.",
    )
    op.add_argument(
        "--print-settings",
        action="store_true",
        required=True,
        help="check the files, then print the settings (required: the plugin itself runs "
        "`cedarlite serve --stdio`)",
    )
    op.add_argument(
        "--rules",
        action="append",
        default=[],
        metavar="FILE",
        help="argument rules (.cedar), e.g. cedarlite:exec-commands; repeatable",
    )
    op.add_argument(
        "--config",
        metavar="FILE",
        help="a tools configuration (default: the tools section of OpenClaw's own "
        "openclaw.json, $OPENCLAW_CONFIG_PATH or ~/.openclaw/openclaw.json)",
    )
    op.add_argument(
        "--state-dir", metavar="DIR", help="private directory for session state (SQLite)"
    )
    op.add_argument("--decision-log", metavar="FILE", help="append each decision (JSON Lines)")
    op.add_argument(
        "--deadline",
        type=float,
        default=DEFAULT_DEADLINE,
        metavar="S",
        help=f"block a call not decided within S seconds (default {DEFAULT_DEADLINE:g}, "
        f"at most {MAX_DEADLINE:g})",
    )
    op.set_defaults(run=run_command)


def run_command(args: Any) -> int:
    """``cedarlite hook openclaw --print-settings ...``."""
    # lazy on purpose: a command loads only the stages it runs (the command line's start time)
    from ..hosts.openclaw_settings import Settings, print_settings

    settings = Settings(
        tuple(args.rules), args.config, args.state_dir, args.decision_log, args.deadline
    )
    return print_settings(settings, sys.stdout, sys.stderr)
