"""The ``cedarlite`` command line, in the Cedar CLI's conventions: the parser and the dispatch.

```
cedarlite authorize --policies p.cedar --entities e.json --principal 'User::"a"' \\
    --action 'Action::"read"' --resource 'Doc::"d"' [--context c.json] [--schema s.cedarschema]
cedarlite authorize --policies p.cedar --entities e.json --request-json request.json
cedarlite validate --policies p.cedar --schema s.cedarschema
cedarlite check-parse --policies p.cedar
cedarlite format --policies p.cedar [--check | --write]
cedarlite evaluate 'principal.age >= 18' --entities e.json -l 'U::"a"' -a 'Action::"v"' -r 'D::"d"'
cedarlite run-tests --policies policies/ --tests tests.json [-v] [--coverage [--threshold 90]]
cedarlite translate-policy --direction cedar-to-json --policies p.cedar
cedarlite link --policies p.cedar --template-id t --new-id alice --arguments '{"?principal": ...}'
cedarlite equiv old.cedar new.cedar [--schema s.cedarschema] [--entities e.json]
cedarlite tools resolve scenario.json          # which tools a run may see
cedarlite tools explain scenario.json --tool exec
cedarlite tools check scenario.json --rules policies/exec-commands.cedar [--lenient]
cedarlite tools lint config.json [--tools tools.json] [--context ctx.json]
cedarlite tools schema scenario.json            # the Cedar schema of the scenario's tools
cedarlite tools shipped                         # shipped policies and examples: cedarlite:NAME
cedarlite mcp-proxy --config tools.json [--rules r.cedar]... [--server NAME] -- COMMAND [ARGS...]
cedarlite hook claude-code --config hook.json [--rules r.cedar]... [--state-dir DIR] \
    [--decision-log FILE] [--deadline S] [--print-settings]   # Claude Code's command hook
cedarlite replay --log 'logs/*.jsonl.gz' --config new.json [--rules r.cedar] [--out DIR]
```

``--policies`` takes a file or a directory (every ``*.cedar`` file under it) and may be repeated;
``--error-format json`` (before or after the command) prints errors as JSON objects.

Exit codes (as Cedar's CLI): 0 success / ALLOW / equivalent, 1 failure (bad input or a usage
error: the message names the file, line and column; failing tests), 2 DENY (an empty tool
allowlist; policy sets that differ), 3 validation failure (and unmet expectations in ``tools
check``). A closed output pipe (``| head``) ends the command quietly.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from .._version import __version__
from ..errors import CedarliteError
from . import serve
from .common import EXIT_DENY, EXIT_FAILURE, ArgumentParser, Failure, UsageError
from .hosts import cmd_hook_claude_code, cmd_mcp_proxy
from .openclaw import add_parser as add_openclaw_parser
from .policies import (
    cmd_authorize,
    cmd_check_parse,
    cmd_equiv,
    cmd_evaluate,
    cmd_format,
    cmd_link,
    cmd_run_tests,
    cmd_translate_policy,
    cmd_validate,
)
from .replay import cmd_replay
from .tools import (
    cmd_tools_check,
    cmd_tools_explain,
    cmd_tools_lint,
    cmd_tools_resolve,
    cmd_tools_schema,
    cmd_tools_shipped,
)

ERROR_FORMATS = ("human", "json")


def _with_parent(sub: Any, parent: argparse.ArgumentParser) -> Any:
    """``sub`` (subparsers) whose every command also takes ``parent``'s options."""
    add_parser = sub.add_parser

    def command(name: str, **kwargs: Any) -> argparse.ArgumentParser:
        return add_parser(name, parents=[parent], **kwargs)

    sub.add_parser = command
    return sub


def _common_options() -> argparse.ArgumentParser:
    """The options every command takes: `--error-format`, accepted before the command and after
    it (as Cedar's global flag)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--error-format",
        choices=ERROR_FORMATS,
        default=argparse.SUPPRESS,
        help="how errors are printed: human (with a caret snippet) or json (one object a line)",
    )
    return common


def _top_parser() -> tuple[argparse.ArgumentParser, Any]:
    common = _common_options()
    parser = ArgumentParser(
        prog="cedarlite",
        description="Cedar-compatible policy engine for AI agents' tool calls.",
        parents=[common],
    )
    parser.add_argument("--version", action="version", version=f"cedarlite {__version__}")
    sub = _with_parent(
        parser.add_subparsers(dest="command", required=True, metavar="COMMAND"), common
    )
    return parser, sub


def _prove_commands() -> Any:
    """The proof commands, imported when one runs (they bring the validator and the solver)."""
    from . import prove

    return prove


def _parser() -> argparse.ArgumentParser:
    parser, sub = _top_parser()

    def policies_args(p: argparse.ArgumentParser, required: bool = True) -> None:
        p.add_argument(
            "-p",
            "--policies",
            action="append",
            required=required,
            metavar="PATH",
            help="Cedar policy file or directory of *.cedar files (- for stdin); repeatable",
        )
        p.add_argument(
            "--policy-format",
            choices=("cedar", "json"),
            default="cedar",
            help="format of a single policy file: Cedar text or Cedar's JSON policy format",
        )
        p.add_argument(
            "-k",
            "--template-linked",
            metavar="FILE",
            help='JSON list of {"template_id", "link_id", "args": {"?principal": ...}}',
        )
        p.add_argument(
            "--strict",
            action="store_true",
            help="reject cedarlite's dialect extras (startsWith/endsWith)",
        )

    def schema_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("-s", "--schema", help="schema file (.cedarschema, or .json)")

    def request_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("--entities", help="entity JSON file")
        p.add_argument("--request-json", metavar="FILE", help="JSON request (principal, ...)")
        p.add_argument("-l", "--principal", help='principal, e.g. User::"alice"')
        p.add_argument("-a", "--action", help='action, e.g. Action::"read"')
        p.add_argument("-r", "--resource", help='resource, e.g. Doc::"readme"')
        p.add_argument(
            "-c",
            "--context",
            metavar="FILE_OR_JSON",
            help="JSON context file, or inline: '{\"hour\": 3}'",
        )
        p.add_argument(
            "--no-request-validation",
            action="store_true",
            help="with --schema, do not check the request against appliesTo",
        )

    a = sub.add_parser("authorize", help="decide one request")
    policies_args(a)
    schema_args(a)
    request_args(a)
    a.add_argument("-v", "--verbose", action="store_true", help="list the determining policies")
    a.add_argument("--json", action="store_true", help="print the response as JSON")
    a.set_defaults(run=cmd_authorize)

    v = sub.add_parser("validate", help="strict validation of policies against a schema")
    policies_args(v)
    v.add_argument("-s", "--schema", required=True, help="schema file (.cedarschema, or .json)")
    v.add_argument(
        "--deny-warnings",
        action="store_true",
        help="fail (exit 3) on warnings too: a forbid that can never apply, say (for CI)",
    )
    v.set_defaults(run=cmd_validate)

    c = sub.add_parser("check-parse", help="check that policies (and entities) parse")
    policies_args(c)
    schema_args(c)
    c.add_argument("--entities", help="entity JSON file")
    c.set_defaults(run=cmd_check_parse)

    f = sub.add_parser("format", help="print policies in canonical layout")
    f.add_argument("-p", "--policies", required=True, help="Cedar policy file (- for stdin)")
    mode = f.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="exit 1 if the file is not formatted")
    mode.add_argument("--write", action="store_true", help="rewrite the file in place")
    f.set_defaults(run=cmd_format)

    ev = sub.add_parser("evaluate", help="evaluate an expression for a request")
    ev.add_argument("expression", metavar="EXPRESSION", help='e.g. "principal.age >= 18"')
    schema_args(ev)
    request_args(ev)
    ev.set_defaults(run=cmd_evaluate)

    rt = sub.add_parser(
        "run-tests",
        help="run policy tests (Cedar CLI's JSON test format, or the conformance format)",
    )
    policies_args(rt, required=False)
    schema_args(rt)
    rt.add_argument(
        "--tests", action="append", required=True, metavar="FILE", help="test file; repeatable"
    )
    rt.add_argument(
        "-v", "--verbose", action="store_true", help="print every test, not only failures"
    )
    rt.add_argument(
        "--coverage", action="store_true", help="report the policies no test made determining"
    )
    rt.add_argument(
        "--threshold",
        type=float,
        metavar="PERCENT",
        help="fail if fewer than PERCENT%% of the policies are covered (implies --coverage)",
    )
    rt.set_defaults(run=cmd_run_tests)

    tp = sub.add_parser("translate-policy", help="Cedar text <-> Cedar's JSON policy format")
    tp.add_argument(
        "--direction", required=True, choices=("cedar-to-json", "json-to-cedar"), help="which way"
    )
    tp.add_argument("-p", "--policies", metavar="FILE", help="input file (default: stdin)")
    tp.add_argument("--pretty", action="store_true", help="indent the JSON")
    tp.set_defaults(run=cmd_translate_policy)

    lk = sub.add_parser("link", help="link a template (and record the link with -k FILE)")
    policies_args(lk)
    lk.add_argument("--template-id", required=True, help="id of the template")
    lk.add_argument("-n", "--new-id", required=True, help="id of the new linked policy")
    lk.add_argument(
        "--arguments",
        required=True,
        metavar="JSON",
        help='e.g. \'{"?principal": "User::\\"a\\""}\'',
    )
    lk.set_defaults(run=cmd_link)

    eq = sub.add_parser("equiv", help="search for a request on which two policy sets differ")
    eq.add_argument("first", metavar="A", help="policy file or directory")
    eq.add_argument("second", metavar="B", help="policy file or directory")
    schema_args(eq)
    eq.add_argument("--entities", help="a fixed entity store (JSON): only requests vary")
    eq.add_argument(
        "--max-examples", type=int, default=1000, help="requests to draw when not exhaustive"
    )
    eq.add_argument(
        "--exhaustive-limit",
        type=int,
        default=20_000,
        help="enumerate finite spaces of at most this many requests",
    )
    eq.add_argument("--out", metavar="DIR", help="write the counterexample's request/entities here")
    eq.set_defaults(run=cmd_equiv)

    pv = sub.add_parser("prove", help="prove a property of policy sets on an SMT solver (z3)")
    pv.add_argument("prop", metavar="PROP", help="equivalent | implies | disjoint | "
                    "always-allows | always-denies | never-errors")  # fmt: skip
    pv.add_argument("first", metavar="A", help="policy file or directory")
    pv.add_argument("second", metavar="B", nargs="?", help="the second policy set, if PROP has one")
    pv.add_argument("-s", "--schema", required=True, help="schema file (.cedarschema, or .json)")
    pv.add_argument("--out", metavar="DIR", help="write a counterexample's request/entities here")
    pv.add_argument("--timeout", type=float, default=30.0, help="seconds for the solver")
    pv.set_defaults(run=lambda args: _prove_commands().run_prove(args))

    t = sub.add_parser("tools", help="the agent tool layer (OpenClaw-style tool policy)")
    tsub = _with_parent(
        t.add_subparsers(dest="tools_command", required=True, metavar="TOOLS_COMMAND"),
        _common_options(),
    )

    def scenario_args(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "scenario",
            help='JSON file: {"config", "tools", "context", "calls"} (cedarlite:coding-agent: '
            "the shipped example)",
        )
        p.add_argument("-c", "--context", metavar="FILE", help="run context (overrides the file's)")

    tr = tsub.add_parser("resolve", help="which tools a run may see, and why the others not")
    scenario_args(tr)
    tr.add_argument("--json", action="store_true", help="print JSON")
    tr.set_defaults(run=cmd_tools_resolve)

    te = tsub.add_parser("explain", help="trace one tool through the layers")
    scenario_args(te)
    te.add_argument("--tool", required=True, help="tool name")
    te.set_defaults(run=cmd_tools_explain)

    tc = tsub.add_parser("check", help="decide the scenario's tool calls (strictly)")
    scenario_args(tc)
    tc.add_argument(
        "--rules",
        action="append",
        metavar="FILE",
        help="argument rules (.cedar), e.g. cedarlite:exec-commands (shipped); repeatable",
    )
    tc.add_argument(
        "--lenient",
        action="store_true",
        help="read the configuration and context as OpenClaw does (mistakes become warnings)",
    )
    tc.set_defaults(run=cmd_tools_check)

    tl = tsub.add_parser("lint", help="every mistake in a configuration and run context")
    tl.add_argument("scenario", metavar="CONFIG", help="a scenario file, or a configuration")
    tl.add_argument("-c", "--context", metavar="FILE", help="run context to check as well")
    tl.add_argument("-t", "--tools", metavar="FILE", help="the run's tools (JSON array)")
    tl.add_argument("--json", action="store_true", help="print JSON")
    tl.set_defaults(run=cmd_tools_lint)

    tp = tsub.add_parser("shipped", help="the shipped policies and examples (cedarlite:NAME)")
    tp.set_defaults(run=cmd_tools_shipped)

    tpv = tsub.add_parser("prove", help="prove the rules' promises, or find a bypass (z3)")
    tpv.add_argument("scenario", metavar="CONFIG", help="a scenario file (cedarlite:NAME too)")
    tpv.add_argument("--rules", action="append", metavar="FILE", help="argument rules; repeatable")
    tpv.add_argument("--never", required=True, metavar="QUERY", help="permits nothing may match")
    tpv.add_argument("--timeout", type=float, default=30.0, help="seconds per promise")
    tpv.add_argument(
        "--host",
        choices=("openclaw", "claude-code"),
        default="openclaw",
        help="whose tools the guard has: the file's own (OpenClaw's core tools when it lists "
        "none), or Claude Code's built-ins mapped as its hook maps them (default: openclaw)",
    )
    tpv.set_defaults(run=lambda args: _prove_commands().run_tools_prove(args))

    ts = tsub.add_parser("schema", help="the Cedar schema of a scenario's tools")
    ts.add_argument("scenario", help="a scenario file, or a JSON array of tools")
    ts.add_argument("--json", action="store_true", help="the JSON schema format")
    ts.set_defaults(run=cmd_tools_schema)

    mp = sub.add_parser(
        "mcp-proxy",
        help="a stdio MCP server that gates another one: filters tools/list, decides tools/call",
        description="Start COMMAND as the upstream stdio MCP server and relay every message, "
        "filtering tools/list and deciding tools/call with the tool policy.",
    )
    mp.add_argument("--config", required=True, metavar="FILE", help="tools configuration (JSON)")
    mp.add_argument(
        "--rules",
        action="append",
        metavar="FILE",
        help="argument rules (.cedar), e.g. cedarlite:paths (shipped); repeatable",
    )
    mp.add_argument("-c", "--context", metavar="FILE", help="run context (JSON: agentId, ...)")
    mp.add_argument(
        "--server",
        metavar="NAME",
        help="server name in tool names <server>__<tool> (default: the upstream's serverInfo.name)",
    )
    mp.add_argument("--decision-log", metavar="FILE", help="append each decision as JSON Lines")
    mp.add_argument(
        "--max-message-bytes",
        type=int,
        default=32 * 1024 * 1024,
        metavar="N",
        help="longest message accepted, in bytes (default 32 MiB)",
    )
    mp.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARGS...]: the upstream")
    mp.set_defaults(run=cmd_mcp_proxy)

    rp = sub.add_parser("replay", help="replay decision logs against a changed policy")
    rp.add_argument(
        "--log",
        required=True,
        action="extend",
        nargs="+",
        metavar="PATH_OR_GLOB",
        help="the guard's decision logs (JSON lines, plain or .gz); globs are expanded",
    )
    rp.add_argument(
        "--config",
        required=True,
        metavar="FILE",
        help="the new tools configuration (JSON), a scenario file with `config` and `tools`, "
        "or a Claude Code hook configuration (its catalog rebuilt as the hook builds it)",
    )
    rp.add_argument(
        "--rules",
        action="append",
        metavar="FILE",
        help="the new argument rules (.cedar; cedarlite:NAME for a shipped file); repeatable",
    )
    rp.add_argument(
        "-t",
        "--tools",
        metavar="FILE",
        help="the run's tools (JSON array); default: the scenario's, else the tools the log "
        "shows the logged runs had",
    )
    rp.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="a dask.distributed scheduler (tcp://host:8786), or `sync` (in this process); "
        "default: Dask's local scheduler",
    )
    rp.add_argument(
        "--workers", type=int, metavar="N", help="local worker processes (default: CPU count)"
    )
    rp.add_argument("--out", metavar="DIR", help="write summary.json, changes.jsonl... there")
    rp.add_argument("--examples", type=int, default=3, metavar="N", help="examples per transition")
    rp.add_argument("--json", action="store_true", help="print summary.json instead of tables")
    rp.add_argument(
        "--lenient",
        action="store_true",
        help="read the configuration as OpenClaw does (mistakes become warnings)",
    )
    rp.set_defaults(run=cmd_replay)

    _hook_parser(sub)
    serve.add_parser(sub)  # `cedarlite serve` (the service: cedarlite/hosts/serve)
    return parser


def _hook_parser(sub: Any) -> None:
    """``cedarlite hook HOST``. A hook runs once per tool call: ``main`` builds only this
    part of the command line for it (the whole of it costs a hook process ~20-40 ms)."""
    hk = sub.add_parser("hook", help="decide an agent host's tool calls as its hook command")
    hsub = hk.add_subparsers(
        dest="host", required=True, metavar="HOST", parser_class=_HookArgumentParser
    )
    hc = hsub.add_parser(
        "claude-code",
        help="Claude Code's PreToolUse/PostToolUse command hook (event on stdin, answer on stdout)",
    )
    hc.add_argument(
        "--config",
        required=True,
        metavar="FILE",
        help='{"config", "tools", "context", "claudeCode"} or a bare tools configuration',
    )
    hc.add_argument(
        "--rules",
        action="append",
        default=[],
        metavar="FILE",
        help="argument rules (.cedar), e.g. cedarlite:exec-commands; repeatable",
    )
    hc.add_argument(
        "--state-dir",
        metavar="DIR",
        help="private directory for session state and built guards "
        "(default ~/.cache/cedarlite/hook)",
    )
    hc.add_argument("--decision-log", metavar="FILE", help="append each decision (JSON Lines)")
    hc.add_argument(
        "--deadline",
        type=_seconds,
        metavar="S",
        help="deny when no decision is made within S seconds (default 5)",
    )
    hc.add_argument(
        "--no-service",
        action="store_true",
        help="decide in this process (default: ask the per-user decision service, start it)",
    )
    hc.add_argument(
        "--print-settings",
        action="store_true",
        help="check the configuration and rules, then print the settings.json snippet",
    )
    hc.set_defaults(run=cmd_hook_claude_code)
    add_openclaw_parser(hsub)


class _HookArgumentParser(ArgumentParser):
    """A hook's command line is run by the host: its mistakes exit 2, a blocking error (exit 1
    would let the tool call through)."""

    def error(self, message: str) -> Any:
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message} (cedarlite blocks the call)", file=sys.stderr)
        raise SystemExit(EXIT_DENY)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"`{text}` is not a number of seconds") from None
    # lazy on purpose: a command loads only the stages it runs (the command line's start time)
    from ..hosts.claude_code import MAX_DEADLINE

    if not 0 < value <= MAX_DEADLINE:
        raise argparse.ArgumentTypeError(
            f"the deadline must be between 0 and {MAX_DEADLINE:g} seconds"
        )
    return value


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (never raises on bad input)."""
    words = sys.argv[1:] if argv is None else list(argv)
    # A hook's command line is run by the host, where exit 1 lets the tool call through: its
    # errors exit 2 (`hook` may follow `--error-format FORMAT`).
    hook = "hook" in words[:3]
    failure = EXIT_DENY if hook else EXIT_FAILURE
    if words[:1] == ["hook"]:
        parser, sub = _top_parser()
        _hook_parser(sub)
    else:
        parser = _parser()
    args = argparse.Namespace(error_format="human")
    try:
        args = parser.parse_args(argv)
        if not hasattr(args, "error_format"):
            args.error_format = "human"
        return int(args.run(args))
    except UsageError as err:
        print(err, file=sys.stderr)
        for hint in unknown_options(parser, words):
            print(f"{parser.prog}: error: {hint}", file=sys.stderr)
        return failure
    except SystemExit as done:  # --help, --version
        return done.code if isinstance(done.code, int) else EXIT_FAILURE
    except Failure as err:
        _report_error(args, str(err), None, err.code)
        return failure
    except CedarliteError as err:
        _report_error(args, err.render(), err)
        return failure
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_FAILURE
    except KeyboardInterrupt:  # pragma: no cover
        return 130


def unknown_options(parser: argparse.ArgumentParser, words: Sequence[str]) -> list[str]:
    """``unknown option `--policy` (did you mean `--policies`?)`` for each ``--option`` of the
    command line that no command takes (argparse may report another error first: a required
    option it did not see under the misspelled name)."""
    # lazy on purpose: a command loads only the stages it runs (the command line's start time)
    from ..tools.lint import did_you_mean

    known: set[str] = set()
    stack = [parser]
    while stack:
        p = stack.pop()
        for action in p._actions:
            known.update(action.option_strings)
            if isinstance(action, argparse._SubParsersAction):
                stack.extend(action.choices.values())
    hints = []
    for word in words:
        if word == "--":
            break
        flag = word.partition("=")[0]
        if flag.startswith("--") and flag not in known:
            close = did_you_mean(flag, [k for k in known if k.startswith("--")])
            hints.append(f"unknown option `{flag}`" + (f" ({close})" if close else ""))
    return hints


def _silence_stdout() -> None:
    """The reader of our output went away (``| head``): point stdout at /dev/null so that the
    interpreter's final flush does not raise again (the recipe of Python's signal docs)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # pragma: no cover - stdout without a file descriptor
        pass


def _report_error(
    args: argparse.Namespace, text: str, err: CedarliteError | None, code: str = "E0001"
) -> None:
    """Print an error to stderr in the chosen ``--error-format``."""
    if args.error_format != "json":
        print(text, file=sys.stderr)
        return
    diag: dict[str, object]
    if err is None:
        message = text.removeprefix("error: ")
        diag = {"severity": "error", "code": code, "message": message, "source": None,
                "line": None, "column": None, "help": None}  # fmt: skip
    else:
        diag = err.to_json()
    print(json.dumps(diag, ensure_ascii=False), file=sys.stderr)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
