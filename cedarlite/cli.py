"""The ``cedarlite`` command line, in the Cedar CLI's conventions. The only module that prints.

```
cedarlite authorize --policies p.cedar --entities e.json --principal 'User::"a"' \\
    --action 'Action::"read"' --resource 'Doc::"d"' [--context c.json] [--schema s.cedarschema]
cedarlite authorize --policies p.cedar --entities e.json --request-json request.json
cedarlite validate --policies p.cedar --schema s.cedarschema
cedarlite check-parse --policies p.cedar
cedarlite format --policies p.cedar [--check | --write]
cedarlite tools resolve scenario.json          # which tools a run may see
cedarlite tools explain scenario.json --tool exec
cedarlite tools check scenario.json --rules policies/exec-commands.cedar [--lenient]
cedarlite tools lint config.json [--tools tools.json] [--context ctx.json]
cedarlite tools schema scenario.json            # the Cedar schema of the scenario's tools
cedarlite tools shipped                         # shipped policies and examples: cedarlite:NAME
cedarlite replay --log 'logs/*.jsonl.gz' --config new.json [--rules r.cedar] [--out DIR]
```

Exit codes (as Cedar's CLI): 0 success / ALLOW, 1 failure (bad input or a usage error: the
message names the file, line and column), 2 DENY (and an empty tool allowlist), 3 validation
failure (and unmet expectations in ``tools check``). A closed output pipe (``| head``) ends the
command quietly.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from . import __version__
from .authorizer import Response, is_authorized
from .entities import Entities, load_json
from .errors import CedarliteError, RequestError, ValidationError
from .policyset import PolicySet

EXIT_OK, EXIT_FAILURE, EXIT_DENY, EXIT_INVALID = 0, 1, 2, 3

_QUIET = logging.NullHandler()


class _Failure(Exception):
    """A user-facing failure with its message already rendered."""


class _UsageError(Exception):
    """A command line argparse rejected (exit 1, not argparse's 2: 2 means DENY here)."""


class _ArgumentParser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:
        self.print_usage(sys.stderr)
        raise _UsageError(f"{self.prog}: error: {message}")


def plural(count: int, word: str, many: str | None = None) -> str:
    """``1 policy``, ``2 policies``: ``count`` and the word in the right number."""
    return f"{count} {word if count == 1 else (many or word + 's')}"


def _read(path: str, what: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise _Failure(f"error: cannot read {what} `{path}`: {err}") from None


def _json_file(path: str, what: str) -> Any:
    return load_json(_read(path, what), path, _JSONFileError)


class _JSONFileError(CedarliteError):
    code = "E0010"


def _policies(args: argparse.Namespace) -> PolicySet:
    text = _read(args.policies, "policies")
    ps = PolicySet.from_str(text, args.policies, strict=getattr(args, "strict", False))
    links = getattr(args, "template_linked", None)
    if links:
        items = _json_file(links, "template links")
        for i, link in enumerate(items if isinstance(items, list) else [None]):
            if not (
                isinstance(link, dict)
                and isinstance(link.get("template_id"), str)
                and isinstance(link.get("link_id"), str)
                and isinstance(link.get("args"), dict)
            ):
                raise _Failure(
                    f"error: {links}: entry {i} must be "
                    '{"template_id": str, "link_id": str, "args": {"?principal": ...}}'
                )
            ps = ps.link(link["template_id"], link["link_id"], link["args"])
    return ps


def _schema(args: argparse.Namespace) -> Any:
    if not getattr(args, "schema", None):
        return None
    from .schema import Schema

    text = _read(args.schema, "schema")
    if args.schema.endswith(".json"):
        return Schema.from_json(text, args.schema)
    return Schema.from_str(text, args.schema)


def _request(args: argparse.Namespace) -> dict[str, Any]:
    if args.request_json:
        from_file = _json_file(args.request_json, "request")
        if not isinstance(from_file, dict):
            raise _Failure(f"error: {args.request_json}: a request must be a JSON object")
        return from_file
    missing = [f"--{k}" for k in ("principal", "action", "resource") if not getattr(args, k)]
    if missing:
        raise _Failure(f"error: give --request-json, or all of {', '.join(missing)}")
    request: dict[str, Any] = {
        name: _uid_flag(getattr(args, name), f"--{name}")
        for name in ("principal", "action", "resource")
    }
    if args.context:
        request["context"] = _json_file(args.context, "context")
    return request


def _uid_flag(value: str, flag: str) -> Any:
    """An entity uid given on the command line; an error names the flag and marks the text."""
    from .parser import parse_entity_uid

    try:
        return parse_entity_uid(value)
    except CedarliteError as err:
        raise RequestError(err.message, span=err.span, text=value, source=flag) from None


def _labelled(resp: Response, policies: PolicySet) -> Response:
    """The response with policies named by ``@id`` (Cedar's CLI names them so), not position."""
    label = policies.label
    return Response(
        resp.decision,
        tuple(label(r) for r in resp.reasons),
        tuple(replace(e, policy_id=label(e.policy_id)) for e in resp.errors),
    )


# ---------------------------------------------------------------------------------------------
# Commands


def cmd_authorize(args: argparse.Namespace) -> int:
    """Decide one request: prints ALLOW or DENY, then errors and (verbose) reasons."""
    policies = _policies(args)
    schema = _schema(args)
    entities = (
        Entities.from_json(_read(args.entities, "entities"), schema=schema, source=args.entities)
        if args.entities
        else Entities.from_json([], schema=schema)
    )
    request = _request(args)
    with _blame(args.request_json or args.context or "the request"):  # its file names errors
        decided = is_authorized(
            request, policies, entities, schema=schema, validate=not args.no_request_validation
        )
    resp = _labelled(decided, policies)
    if args.json:
        print(json.dumps(resp.to_json(), indent=2))
    else:
        print(resp.decision.value.upper())
        if resp.errors:
            print()
            for err in resp.errors:
                print(err)
        if args.verbose:
            print()
            if resp.reasons:
                print("note: this decision was due to the following policies:")
                for reason in resp.reasons:
                    print(f"  {reason}")
            else:
                print("note: no policies applied to this request")
    return EXIT_OK if resp.allowed else EXIT_DENY


def cmd_validate(args: argparse.Namespace) -> int:
    """Strict validation against a schema: each issue with a caret snippet; exit 3 on errors."""
    from .schema.validator import validate

    result = validate(_policies(args), _schema(args))
    for issue in (*result.errors, *result.warnings):
        print(issue.render())
        print()
    if result.passed:
        print(
            f"{args.policies}: validation passed"
            + (f" ({plural(len(result.warnings), 'warning')})" if result.warnings else "")
        )
        return EXIT_OK
    print(f"{args.policies}: validation failed: {plural(len(result.errors), 'error')}")
    return EXIT_INVALID


def cmd_check_parse(args: argparse.Namespace) -> int:
    """Parse the policies (and schema, entities if given); report the first error."""
    ps = _policies(args)
    schema = _schema(args)
    if args.entities:
        Entities.from_json(_read(args.entities, "entities"), schema=schema, source=args.entities)
    print(f"{args.policies}: {plural(len(ps), 'policy', 'policies')} parse")
    return EXIT_OK


def cmd_format(args: argparse.Namespace) -> int:
    """Print the policies in canonical layout; --check fails if the file differs, --write fixes."""
    from .printer import format_text

    text = _read(args.policies, "policies")
    formatted = format_text(text, args.policies)
    if args.check:
        if formatted != text:
            print(f"{args.policies}: would be reformatted", file=sys.stderr)
            return EXIT_FAILURE
        return EXIT_OK
    if args.write:
        if formatted != text:
            Path(args.policies).write_text(formatted, encoding="utf-8")
        return EXIT_OK
    sys.stdout.write(formatted)
    return EXIT_OK


# ---------------------------------------------------------------------------------------------
# The agent tool layer


@dataclass(frozen=True)
class _Doc:
    """A JSON file read for the tool commands: its path, text and value (to locate findings)."""

    path: str
    text: str
    data: Any

    @classmethod
    def read(cls, path: str, what: str) -> _Doc:
        """Read and decode ``path`` (``cedarlite:NAME``: a shipped example)."""
        from .shipped import resolve

        path = resolve(path, "examples")
        text = _read(path, what)
        return cls(path, text, load_json(text, path, _JSONFileError))

    def locate(self, loc: Sequence[str | int], key: bool = False) -> Any:
        """The span of a JSON path in this file (``None`` if it is not there)."""
        from ._jsonloc import json_span

        return json_span(self.text, loc, key=key)

    def error(
        self, loc: Sequence[str | int], message: str, help: str | None = None, code: str = ""
    ) -> str:
        """A located diagnostic about the value at ``loc`` (or its nearest enclosing value
        present in the file: a missing argument is shown at its call's ``params``)."""
        span = None
        for end in range(len(loc), -1, -1):
            span = self.locate(loc[:end])
            if span is not None:
                break
        err = _JSONFileError(message, span=span, text=self.text, source=self.path, help=help)
        if code:
            err.code = code
        return err.render()


@dataclass(frozen=True)
class _Scenario:
    """A scenario file ``{"config", "tools", "context", "calls"}`` (all optional), or a bare
    tools configuration (``tools lint``); ``context`` may come from its own file."""

    doc: _Doc
    config: Any
    tools: list[Any]
    context: Any
    calls: list[Any]
    config_at: tuple[str, ...]  # where the configuration is in the file
    context_doc: _Doc | None  # the file of the context, when not the scenario's own

    def blame(self) -> AbstractContextManager[None]:
        """Errors about the scenario's values (raised without a source) name its file."""
        return _blame(self.doc.path)

    def render(self, issue: Any) -> str:
        """A lint finding located in the file it came from."""
        loc = tuple(issue.loc)
        if loc[:1] == ("context",):
            if self.context_doc is not None:
                doc, loc = self.context_doc, loc[1:]
            else:
                doc = self.doc
        else:
            doc, loc = self.doc, (*self.config_at, *loc)
        return issue.render(doc.text, doc.path, doc.locate(loc, key=issue.on_key))


@contextmanager
def _blame(path: str) -> Iterator[None]:
    """Name ``path`` in the errors raised without a source (values read from that file)."""
    try:
        yield
    except CedarliteError as err:
        if err.source is None:
            err.source = path
        raise


def _scenario(args: argparse.Namespace, *, bare_config: bool = False) -> _Scenario:
    """Read the scenario (with ``bare_config``, a file without ``config`` is the configuration
    itself, as ``tools lint`` takes it)."""
    doc = _Doc.read(args.scenario, "scenario")
    data = doc.data
    if not isinstance(data, dict):
        raise _Failure(doc.error((), "a scenario must be a JSON object"))
    scenario = bare_config and "config" not in data
    if not scenario:
        for key, kind, name in (("tools", list, "an array"), ("calls", list, "an array"),
                                ("context", dict, "an object")):  # fmt: skip
            if data.get(key) is not None and not isinstance(data[key], kind):
                raise _Failure(doc.error((key,), f"`{key}` must be {name}"))
    context_doc = None
    context = None if scenario else data.get("context")
    if getattr(args, "context", None):
        context_doc = _Doc.read(args.context, "context")
        context = context_doc.data
    tools = data.get("tools") if not scenario else None
    if getattr(args, "tools", None):
        tools = _Doc.read(args.tools, "tools").data
    return _Scenario(
        doc,
        data if scenario else data.get("config"),
        tools or [],
        context,
        [] if scenario else data.get("calls") or [],
        () if scenario else ("config",),
        context_doc,
    )


def _report(sc: _Scenario, findings: Sequence[Any]) -> None:
    """Print lint findings, located, on stderr."""
    for finding in findings:
        print(sc.render(finding), file=sys.stderr)


def _summary(findings: Sequence[Any]) -> str:
    errors = sum(1 for f in findings if f.severity == "error")
    warnings = len(findings) - errors
    return f"{plural(errors, 'error')}, {plural(warnings, 'warning')}"


def cmd_tools_resolve(args: argparse.Namespace) -> int:
    """The tools a run may see: the allowed list, each removed tool's layer, the findings."""
    from .tools import EmptyAllowlistError, resolve_tools

    sc = _scenario(args)
    try:
        with sc.blame():
            res = resolve_tools(sc.config, sc.tools, sc.context)
    except EmptyAllowlistError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_DENY
    if args.json:
        findings = [f.to_json() for f in res.findings]
        shown = {"allowed": res.allowed, "removed": res.removed, "warnings": res.warnings}
        print(json.dumps({**shown, "findings": findings}, indent=2))
        return EXIT_OK
    print(f"allowed ({len(res.allowed)}): {', '.join(map(str, res.allowed)) or '-'}")
    for tool, layer in res.removed.items():
        print(f"removed: {tool}  <- {layer}")
    for warning in res.warnings:  # §10's unknown-entry notes are the findings' (with a hint)
        if " allowlist contains unknown entries " not in warning:
            print(f"warning: {warning}")
    _report(sc, res.findings)
    return EXIT_OK


def cmd_tools_explain(args: argparse.Namespace) -> int:
    """Trace one tool through the layers of the configuration."""
    from .tools import explain

    sc = _scenario(args)
    with sc.blame():
        print(explain(sc.config, args.tool, sc.context, sc.tools or None))
    return EXIT_OK


def cmd_tools_lint(args: argparse.Namespace) -> int:
    """Every finding on a configuration (a scenario's, or a bare configuration file) and its
    run context; exit 3 if any is an error."""
    from .tools import lint_config

    sc = _scenario(args, bare_config=True)
    with sc.blame():
        findings = lint_config(sc.config, sc.tools or None, sc.context)
    if args.json:
        print(json.dumps([f.to_json() for f in findings], indent=2))
    else:
        for finding in findings:
            print(sc.render(finding))
            print()
        print(f"{sc.doc.path}: {_summary(findings) if findings else 'no findings'}")
    return EXIT_INVALID if any(f.severity == "error" for f in findings) else EXIT_OK


def cmd_tools_schema(args: argparse.Namespace) -> int:
    """The Cedar schema of a scenario's tools (or of a JSON array of tools)."""
    from .tools import ToolCatalog, cedar_schema

    doc = _Doc.read(args.scenario, "scenario")
    tools = doc.data if isinstance(doc.data, list) else _scenario(args).tools
    with _blame(doc.path):
        schema = cedar_schema(ToolCatalog.from_tools(tools))
    if args.json:
        print(json.dumps(schema.to_json(), indent=2))
    else:
        sys.stdout.write(schema.to_cedarschema())
    return EXIT_OK


def cmd_tools_check(args: argparse.Namespace) -> int:
    """Decide each call of the scenario, strictly: a configuration, context or rule that does
    not validate refuses to start (exit 3); every call is decided, a call that cannot be is
    reported with its index (exit 1); an unmet ``expect`` exits 3."""
    from .tools import ConfigError, ToolPolicy, ToolsError

    sc = _scenario(args)
    strict = not args.lenient
    try:
        with sc.blame():
            policy = ToolPolicy(sc.config, sc.tools, strict=strict)
            policy.check_context(sc.context)
    except ConfigError as err:
        _report(sc, err.issues)
        print(f"error: refusing to check: {_summary(err.issues)} (use --lenient to read the "
              "configuration as OpenClaw does)", file=sys.stderr)  # fmt: skip
        return EXIT_INVALID
    _report(sc, policy.findings + policy.context_findings(sc.context))
    try:
        from .shipped import resolve

        rules = policy.load_rules([resolve(r) for r in args.rules]) if args.rules else None
    except ValidationError as err:
        print(err.render(), file=sys.stderr)
        return EXIT_INVALID
    with sc.blame():
        resolution = policy.resolve(sc.context)
    print(
        f"run: {plural(len(resolution.allowed), 'tool')} offered, {len(resolution.removed)} removed"
    )
    unmet = failed = expected = 0
    for i, call in enumerate(sc.calls):
        problem = _call_problem(call, i)
        shown = "?"
        if isinstance(call, dict) and "tool" in call:
            params = call.get("params", {})
            shown = f"{call['tool']} {json.dumps(params, ensure_ascii=False)}"
        if problem is None:
            try:
                decision = policy.authorize_call(
                    call.get("context", sc.context), call["tool"], params, rules=rules,
                    call_id=str(i),
                )  # fmt: skip
            except ToolsError as err:
                problem = (*_call_error(call, i, err), err.code)
            except ConfigError as err:
                problem = (("calls", i, "context"), err.message, None, err.code)
        if problem is not None:
            failed += 1
            loc, message, help, code = problem
            print(f"ERROR  {shown}  (calls[{i}]: {message}{f'; {help}' if help else ''})")
            print(sc.doc.error(loc, message, help, code), file=sys.stderr)
            continue
        verdict = "allow" if decision.allowed else "deny"
        why = ", ".join(decision.policies) or "no policy applies"
        errors = "; ".join(e.message for e in decision.response.errors)
        why += f"; errors: {errors}" if errors else ""
        mark = ""
        if "expect" in call:
            expected += 1
            if call["expect"].lower() != verdict:
                unmet += 1
                mark = f"   << expected {call['expect'].upper()}"
        print(f"{verdict.upper():<6} {shown}  ({why}){mark}")
    if expected:
        print(f"{expected - unmet}/{plural(expected, 'call')} decided as expected")
    if failed:
        print(f"{plural(failed, 'call')} could not be decided", file=sys.stderr)
        return EXIT_FAILURE
    return EXIT_INVALID if unmet else EXIT_OK


_VERDICTS = ("allow", "deny")


_Problem = tuple[tuple[Any, ...], str, str | None, str]


def cmd_tools_shipped(args: argparse.Namespace) -> int:
    """List the shipped policy files and examples (``cedarlite:NAME`` on the command line)."""
    from . import shipped

    for kind, names, path in (
        ("policy", shipped.policy_names(), shipped.policy_path),
        ("example", shipped.example_names(), shipped.example_path),
    ):
        for name in names:
            print(f"{kind:<8} {shipped.PREFIX}{name:<20} {path(name)}")
    return EXIT_OK


def _call_problem(call: Any, i: int) -> _Problem | None:
    """What is wrong with the shape of ``calls[i]`` (``None``: nothing)."""
    if not isinstance(call, dict):
        return ("calls", i), "a call must be an object with a `tool`", None, ""
    if "tool" not in call:
        return ("calls", i), "this call has no `tool`", None, ""
    if call.get("params") is not None and not isinstance(call["params"], dict):
        return ("calls", i, "params"), "`params` must be an object", None, ""
    expect = call.get("expect", "allow")
    if not isinstance(expect, str) or expect.lower() not in _VERDICTS:
        from .tools.lint import did_you_mean

        hint = did_you_mean(expect, _VERDICTS) or 'write "allow" or "deny"'
        shown = json.dumps(expect, ensure_ascii=False)
        return (
            ("calls", i, "expect"),
            f"`expect` must be `allow` or `deny`, not `{shown}`",
            hint,
            "",
        )
    return None


def _call_error(call: dict[str, Any], i: int, err: Any) -> tuple[tuple[Any, ...], str, str | None]:
    """Where in ``calls[i]`` a tool error points, its message and help."""
    argument = getattr(err, "argument", None)
    if argument:
        return ("calls", i, "params", *_argument_path(argument)), err.message, err.help
    if err.message.startswith("unknown tool"):
        return ("calls", i, "tool"), err.message, err.help
    return ("calls", i), err.message, err.help


def _argument_path(argument: str) -> list[str | int]:
    """``env.HOME`` / ``items[2]`` as JSON path segments."""
    import re

    return [int(i) if i else name for name, i in re.findall(r"([^.\[\]]+)|\[(\d+)\]", argument)]


# ---------------------------------------------------------------------------------------------
# Impact of a policy change


def cmd_replay(args: argparse.Namespace) -> int:
    """Replay decision logs against a new configuration and rules: the calls whose decision
    would change, per transition and tool. Exit 3 when the configuration or rules do not
    validate, 1 when the replay cannot start or some of the log could not be read at all."""
    from .impact import ReplayError, replay
    from .shipped import resolve
    from .tools import ConfigError

    args.scenario = args.config  # read as `tools lint` reads its file (a scenario or a config)
    sc = _scenario(args, bare_config=True)
    progress = _ProgressBar() if sys.stderr.isatty() else None
    try:
        with sc.blame():
            report = replay(
                args.log,
                sc.config,
                [resolve(r) for r in args.rules] if args.rules else None,
                tools=sc.tools if (args.tools or sc.tools) else None,
                scheduler=args.scheduler,
                workers=args.workers,
                out=args.out,
                strict=not args.lenient,
                examples=args.examples,
                progress=progress,
            )
    except ConfigError as err:
        _report(sc, err.issues)
        print(f"error: refusing to replay: {_summary(err.issues)} (use --lenient to read the "
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


# ---------------------------------------------------------------------------------------------
# Argument parsing


def _parser() -> argparse.ArgumentParser:
    parser = _ArgumentParser(
        prog="cedarlite", description="Cedar-compatible policy engine for AI agents' tool calls."
    )
    parser.add_argument("--version", action="version", version=f"cedarlite {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def policies_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("-p", "--policies", required=True, help="Cedar policy file (- for stdin)")
        p.add_argument(
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

    a = sub.add_parser("authorize", help="decide one request")
    policies_args(a)
    schema_args(a)
    a.add_argument("--entities", help="entity JSON file")
    a.add_argument("--request-json", metavar="FILE", help="JSON request (principal, action, ...)")
    a.add_argument("-l", "--principal", help='principal, e.g. User::"alice"')
    a.add_argument("-a", "--action", help='action, e.g. Action::"read"')
    a.add_argument("-r", "--resource", help='resource, e.g. Doc::"readme"')
    a.add_argument("-c", "--context", metavar="FILE", help="JSON context file")
    a.add_argument(
        "--no-request-validation",
        action="store_true",
        help="with --schema, do not check the request against appliesTo",
    )
    a.add_argument("-v", "--verbose", action="store_true", help="list the determining policies")
    a.add_argument("--json", action="store_true", help="print the response as JSON")
    a.set_defaults(run=cmd_authorize)

    v = sub.add_parser("validate", help="strict validation of policies against a schema")
    policies_args(v)
    v.add_argument("-s", "--schema", required=True, help="schema file (.cedarschema, or .json)")
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

    t = sub.add_parser("tools", help="the agent tool layer (OpenClaw-style tool policy)")
    tsub = t.add_subparsers(dest="tools_command", required=True, metavar="TOOLS_COMMAND")

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

    ts = tsub.add_parser("schema", help="the Cedar schema of a scenario's tools")
    ts.add_argument("scenario", help="a scenario file, or a JSON array of tools")
    ts.add_argument("--json", action="store_true", help="the JSON schema format")
    ts.set_defaults(run=cmd_tools_schema)

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
        help="the new tools configuration (JSON), or a scenario file with `config` and `tools`",
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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (never raises on bad input)."""
    parser = _parser()
    # The tool commands print the tool layer's warnings themselves, located and with hints:
    # keep Python's last-resort handler from printing them a second time.
    logging.getLogger("cedarlite").addHandler(_QUIET)
    try:
        args = parser.parse_args(argv)
        return int(args.run(args))
    except _UsageError as err:
        print(err, file=sys.stderr)
        return EXIT_FAILURE
    except SystemExit as done:  # --help, --version
        return done.code if isinstance(done.code, int) else EXIT_FAILURE
    except _Failure as err:
        print(err, file=sys.stderr)
        return EXIT_FAILURE
    except CedarliteError as err:
        print(err.render(), file=sys.stderr)
        return EXIT_FAILURE
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_FAILURE
    except KeyboardInterrupt:  # pragma: no cover
        return 130


def _silence_stdout() -> None:
    """The reader of our output went away (``| head``): point stdout at /dev/null so that the
    interpreter's final flush does not raise again (the recipe of Python's signal docs)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # pragma: no cover - stdout without a file descriptor
        pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
