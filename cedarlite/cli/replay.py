"""``cedarlite replay``: a decision log replayed against new rules, with a progress bar."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from ..errors import CedarliteError, ValidationError
from .common import EXIT_FAILURE, EXIT_INVALID, EXIT_OK, plural
from .tools import report_findings, scenario, summary


def cmd_replay(args: argparse.Namespace) -> int:
    """Replay decision logs against a new configuration and rules: the calls whose decision
    would change, per transition and tool. Exit 3 when the configuration or rules do not
    validate, 1 when the replay cannot start or some of the log could not be read at all."""
    # lazy on purpose: a command loads only the stages it runs (the command line's start time)
    from ..impact import ReplayError, replay
    from ..impact.hook import hook_replay, is_hook_config
    from ..shipped import resolve
    from ..tools import ConfigError

    args.scenario = args.config  # read as `tools lint` reads its file (a scenario or a config)
    sc = scenario(args, bare_config=True)
    rules = [resolve(r) for r in args.rules] if args.rules else None
    tools, catalog = sc.tools if (args.tools or sc.tools) else None, None
    if not args.tools and is_hook_config(sc.doc.data):  # a hook's log, with the hook's files
        try:
            _, rules, catalog = hook_replay(args.config, args.rules or ())
        except CedarliteError as err:
            print(err.render(), file=sys.stderr)
            return EXIT_INVALID
        tools = None
    progress = _ProgressBar() if sys.stderr.isatty() else None
    try:
        with sc.blame():
            report = replay(
                args.log,
                sc.config,
                rules,
                tools=tools,
                catalog=catalog,
                scheduler=args.scheduler,
                workers=args.workers,
                out=args.out,
                strict=not args.lenient,
                examples=args.examples,
                progress=progress,
            )
    except ConfigError as err:
        report_findings(args, sc, err.issues)
        print(f"error: refusing to replay: {summary(err.issues)} (use --lenient to read the "
              "configuration as OpenClaw does)", file=sys.stderr)  # fmt: skip
        return EXIT_INVALID
    except ValidationError as err:
        print(err.render(), file=sys.stderr)
        return EXIT_INVALID
    except ReplayError as err:
        print(f"error: {err.message}", file=sys.stderr)
        return EXIT_FAILURE
    finally:
        if progress is not None:
            progress.clear()
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        print(report.render())
        rate = report.lines / report.elapsed if report.elapsed else 0
        print(f"\n{report.lines:,} lines in {report.elapsed:.1f} s ({rate:,.0f} lines/s) on "
              f"{report.scheduler}")  # fmt: skip
    if args.out:
        names = "summary.json, changes.jsonl, undecidable.jsonl"
        if (Path(args.out) / "changes.parquet").exists():
            names += ", changes.parquet"
        print(f"wrote {names} to {args.out}", file=sys.stderr)
    if report.unreadable_lines:
        print(f"warning: {plural(report.unreadable_lines, 'line')} of the log could not be read "
              "(counted in the report)", file=sys.stderr)  # fmt: skip
    if report.read_errors or report.internal_errors:
        print("error: the replay is incomplete: part of the log could not be read",
              file=sys.stderr)  # fmt: skip
        return EXIT_FAILURE
    return EXIT_OK


class _ProgressBar:
    """One line on the terminal (stderr), redrawn as partitions complete."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.shown = False

    def __call__(self, phase: str, done: int, total: int, lines: int) -> None:
        width = 30
        filled = width * done // max(total, 1)
        bar = "#" * filled + "." * (width - filled)
        if phase == "tools":
            text = f"reading the tool catalog from the log [{bar}] {done}/{total}"
        else:
            rate = lines / max(time.monotonic() - self.started, 1e-9)
            text = f"replaying [{bar}] {done}/{total} partitions, {lines:,} lines ({rate:,.0f}/s)"
        sys.stderr.write("\r" + text + "\x1b[K")
        sys.stderr.flush()
        self.shown = True

    def clear(self) -> None:
        """Erase the bar."""
        if self.shown:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()
