"""``cedarlite serve``: the decision service's command line (:func:`add_parser`, registered
by :mod:`cedarlite.cli.main`) and :func:`run` (the service is :mod:`cedarlite.hosts.serve`).
Imports nothing heavy until the command runs."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from typing import Any

#: The largest ``--max-request-bytes`` (well under 50 MB).
MAX_LIMIT = 48 * 1024 * 1024

#: Where the service may listen over HTTP without ``--token-file``.
LOOPBACK = ("127.0.0.1", "::1", "localhost")


def add_parser(sub: Any) -> None:
    """Add ``serve`` to the subcommands ``sub``."""
    # lazy on purpose: a command loads only the stages it runs (the command line's start time)
    from ..hosts.serve.protocol import MAX_REQUEST_BYTES

    sp = sub.add_parser(
        "serve",
        help="a long-lived decision service (stdio, Unix socket, HTTP)",
        description="Hold one guard set and answer before_tool_call, after_tool_call, "
        "is_authorized, health and reload over JSON lines (stdio, a Unix socket) or HTTP. "
        "The files are reloaded, validated, when they change, on SIGHUP and on `reload`.",
    )
    sp.add_argument(
        "--config",
        required=True,
        metavar="FILE",
        help='{"config", "tools", "context"} (as `tools check` and the Claude Code hook read; '
        "cedarlite:coding-agent: the shipped example)",
    )
    sp.add_argument(
        "--rules",
        action="append",
        default=[],
        metavar="FILE",
        help="argument rules (.cedar), e.g. cedarlite:exec-commands; repeatable",
    )
    sp.add_argument(
        "-p",
        "--policies",
        action="append",
        default=[],
        metavar="PATH",
        help="Cedar policies (file or directory of *.cedar) for is_authorized; repeatable",
    )
    sp.add_argument(
        "--state-dir",
        metavar="DIR",
        help="private directory for session state (SQLite; default: in memory)",
    )
    sp.add_argument("--decision-log", metavar="FILE", help="append each decision (JSON Lines)")
    sp.add_argument("--stdio", action="store_true", help="JSON lines on stdin/stdout")
    sp.add_argument("--socket", metavar="PATH", help="JSON lines on a Unix socket")
    sp.add_argument("--http", metavar="HOST:PORT", help="HTTP (loopback unless --token-file)")
    sp.add_argument(
        "--token-file",
        metavar="FILE",
        help="HTTP requests must carry `Authorization: Bearer <the file's token>`",
    )
    sp.add_argument(
        "--claude-code",
        action="store_true",
        help="serve the Claude Code hook (its guards, its state directory by default)",
    )
    sp.add_argument(
        "--idle-exit",
        type=float,
        default=0.0,
        metavar="S",
        help="exit after S seconds without a request (default 0: never)",
    )
    sp.add_argument(
        "--max-request-bytes",
        type=int,
        default=MAX_REQUEST_BYTES,
        metavar="N",
        help=f"longest request line or body (default {MAX_REQUEST_BYTES // (1024 * 1024)} MiB)",
    )
    sp.set_defaults(run=run)


class ListenError(Exception):
    """Listening options that do not go together (exit 2, as argparse's mistakes)."""


def run(args: argparse.Namespace) -> int:
    """``cedarlite serve``: the process exits 0 after a graceful stop; returns 2 for a bad
    command line, 3 when the files do not load (the error is printed, located), 1 when it
    cannot listen."""
    try:
        listen = _listen(args)
    except ListenError as err:
        print(f"cedarlite serve: error: {err}", file=sys.stderr)
        return 2
    # lazy on purpose: a command loads only the stages it runs (the command line's start time)
    from ..errors import CedarliteError
    from ..hosts.serve.guards import ServeOptions
    from ..hosts.serve.service import serve

    _log_to_stderr()
    try:
        config = args.config
        if config.startswith("cedarlite:"):  # a shipped example scenario
            # lazy on purpose: only for a shipped example
            from .. import shipped

            config = str(shipped.example_path(config))
        options = ServeOptions(  # absolute paths: health shows them as they are watched
            os.path.abspath(config),
            tuple(r if r.startswith("cedarlite:") else os.path.abspath(r) for r in args.rules),
            tuple(os.path.abspath(p) for p in args.policies),
            _absolute(args.state_dir),
            _absolute(args.decision_log),
            args.claude_code,
        )
        code = serve(options, listen)
    except CedarliteError as err:
        shown = json.dumps(err.to_json()) if args.error_format == "json" else err.render()
        print(shown, file=sys.stderr)
        return 3
    except OSError as err:
        print(f"cedarlite serve: error: cannot listen: {err}", file=sys.stderr)
        return 1
    # Stopped gracefully (answers sent, the session store closed). A transport thread may
    # still block in a read of stdin, which the interpreter's shutdown would abort on: end
    # the process here.
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


def _absolute(path: str | None) -> str | None:
    return os.path.abspath(path) if path is not None else None


def _listen(args: argparse.Namespace) -> Any:
    # lazy on purpose: a command loads only the stages it runs (the command line's start time)
    from ..hosts.serve.service import Listen

    if not (args.stdio or args.socket or args.http):
        raise ListenError("say where to listen: --stdio, --socket PATH or --http HOST:PORT")
    if args.stdio and (args.socket or args.http):
        raise ListenError("--stdio serves its parent alone: it takes no --socket or --http")
    if not 0 < args.max_request_bytes <= MAX_LIMIT:
        raise ListenError(f"--max-request-bytes must be between 1 and {MAX_LIMIT}")
    if args.idle_exit < 0:
        raise ListenError("--idle-exit must be 0 (never) or a number of seconds")
    if args.http is not None:
        # lazy on purpose: a command loads only the stages it runs
        from ..hosts.serve.http import split_address

        try:
            host, _ = split_address(args.http)
        except ValueError as err:
            raise ListenError(f"--http {err}") from None
        if host not in LOOPBACK and args.token_file is None:
            raise ListenError(
                f"--http {args.http} is not a loopback address: give --token-file FILE"
            )
    elif args.token_file is not None:
        raise ListenError("--token-file is for --http")
    return Listen(
        args.stdio, args.socket, args.http, args.token_file, args.idle_exit, args.max_request_bytes
    )


def _log_to_stderr() -> None:
    """cedarlite's records of level INFO and above on stderr, one line each."""
    import logging  # lazy on purpose: only a running service logs

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("cedarlite serve: %(levelname)s: %(message)s"))
    logger = logging.getLogger("cedarlite")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
