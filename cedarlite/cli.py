"""The ``cedarlite`` command line, in the Cedar CLI's conventions. The only module that prints.

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
import logging
import os
import shlex
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ._version import __version__
from .authorizer import is_authorized
from .entities import Entities, load_json, uid_from_json
from .errors import CedarliteError, RequestError, ValidationError
from .policyset import PolicySet
from .response import Response

EXIT_OK, EXIT_FAILURE, EXIT_DENY, EXIT_INVALID = 0, 1, 2, 3

_QUIET = logging.NullHandler()


class _Failure(Exception):
    """A user-facing failure with its message already rendered (``code`` for JSON output)."""

    def __init__(self, message: str, code: str = "E0001") -> None:
        super().__init__(message)
        self.code = code


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


def _load_policies(
    paths: Sequence[str], *, strict: bool = False, policy_format: str = "cedar"
) -> PolicySet:
    """One file (Cedar's positional ids, ``-`` for standard input), or several files and
    directories (ids qualified by file: ``a.cedar:policy0``)."""
    if len(paths) == 1 and (paths[0] == "-" or not os.path.isdir(paths[0])):
        text = _read(paths[0], "policies")
        if policy_format == "json":
            return PolicySet.from_json(text, paths[0], strict=strict)
        return PolicySet.from_str(text, paths[0], strict=strict)
    if policy_format == "json":
        raise _Failure("error: `--policy-format json` reads one policy file")
    if "-" in paths:
        raise _Failure("error: `-` (standard input) cannot be combined with other policy files")
    return PolicySet.from_files(paths, strict=strict)


def _named(paths: Sequence[str]) -> str:
    return ", ".join(paths)


def _policies(args: argparse.Namespace, *, links: bool = True) -> PolicySet:
    """The ``--policies`` (and, with ``links``, the ``--template-linked`` links)."""
    ps = _load_policies(
        args.policies,
        strict=getattr(args, "strict", False),
        policy_format=getattr(args, "policy_format", "cedar"),
    )
    path = getattr(args, "template_linked", None)
    return _with_links(ps, path) if path and links else ps


def _with_links(ps: PolicySet, path: str) -> PolicySet:
    """``ps`` with the links of a template-links file (Cedar's format)."""
    items = _json_file(path, "template links")
    for i, link in enumerate(items if isinstance(items, list) else [None]):
        if not (
            isinstance(link, dict)
            and isinstance(link.get("template_id"), str)
            and isinstance(link.get("link_id"), str)
            and isinstance(link.get("args"), dict)
        ):
            raise _Failure(
                f"error: {path}: entry {i} must be "
                '{"template_id": str, "link_id": str, "args": {"?principal": ...}}'
            )
        ps = ps.link(link["template_id"], link["link_id"], link["args"])
    return ps


def _entities_arg(args: argparse.Namespace, schema: Any) -> Entities:
    """The ``--entities`` file (read by the schema, if any), or an empty store."""
    if not getattr(args, "entities", None):
        return Entities.from_json([], schema=schema)
    return Entities.from_json(_read(args.entities, "entities"), schema=schema, source=args.entities)


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
    from .request import parse_entity_uid

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
    entities = _entities_arg(args, schema)
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
        if args.error_format == "json":
            print(json.dumps({**issue.to_error().to_json(), "severity": issue.severity}))
        else:
            print(issue.render())
            print()
    if result.passed:
        print(
            f"{_named(args.policies)}: validation passed"
            + (f" ({plural(len(result.warnings), 'warning')})" if result.warnings else "")
        )
        return EXIT_OK
    print(f"{_named(args.policies)}: validation failed: {plural(len(result.errors), 'error')}")
    return EXIT_INVALID


def cmd_check_parse(args: argparse.Namespace) -> int:
    """Parse the policies (and schema, entities if given); report the first error."""
    ps = _policies(args)
    schema = _schema(args)
    if args.entities:
        Entities.from_json(_read(args.entities, "entities"), schema=schema, source=args.entities)
    print(f"{_named(args.policies)}: {plural(len(ps), 'policy', 'policies')} parse")
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
        if getattr(issue, "in_tool_list", False) and self.config_at:  # beside `config`
            doc = self.doc
        elif loc[:1] == ("context",):
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


def _report_findings(args: argparse.Namespace, sc: _Scenario, findings: Sequence[Any]) -> None:
    """Print lint findings on stderr: located with a snippet, or one JSON object a line."""
    for finding in findings:
        if args.error_format == "json":
            print(json.dumps(finding.to_json(), ensure_ascii=False), file=sys.stderr)
        else:
            print(sc.render(finding), file=sys.stderr)


def _summary(findings: Sequence[Any], more_errors: int = 0) -> str:
    errors = sum(1 for f in findings if f.severity == "error")
    warnings = len(findings) - errors
    errors += more_errors
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
    _report_findings(args, sc, res.findings)
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
    from .impact.hook import is_hook_config
    from .tools import ToolCatalog, lint_config
    from .tools.lint import tool_issues

    sc = _scenario(args, bare_config=True)
    tools, hook_error, hook = sc.tools or None, None, is_hook_config(sc.doc.data)
    if hook:  # a Claude Code hook's: its catalog, its argument maps
        tools, hook_error = _hook_lint(args.scenario)
    with sc.blame():
        findings = lint_config(sc.config, tools, sc.context, check_tools=not hook)
        if hook:  # its own `tools` entries, at their place in the file
            findings = (*tool_issues(ToolCatalog.from_tools(sc.tools)), *findings)
    more = 0 if hook_error is None else 1
    if args.json:
        if hook_error is not None:
            print(hook_error.render(), file=sys.stderr)
        print(json.dumps([f.to_json() for f in findings], indent=2))
    else:
        for text in [*([hook_error.render()] if hook_error else []), *map(sc.render, findings)]:
            print(text)
            print()
        summary = _summary(findings, more) if findings or more else "no findings"
        print(f"{sc.doc.path}: {summary}")
    if hook_error is not None or any(f.severity == "error" for f in findings):
        return EXIT_INVALID
    return EXIT_OK


def _hook_lint(path: str) -> tuple[Any, CedarliteError | None]:
    """A Claude Code hook configuration's catalog (as the hook builds it, before any call)
    and the first mistake in its argument maps, located (``None`` when there is none)."""
    from .hosts.claude_code import HookConfig

    try:
        config = HookConfig.read(path)
    except CedarliteError as err:
        return None, err
    try:
        config.mapping.check()
    except CedarliteError as err:
        return config.catalog(None), config.located(err)
    return config.catalog(None), None


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
        _report_findings(args, sc, err.issues)
        print(f"error: refusing to check: {_summary(err.issues)} (use --lenient to read the "
              "configuration as OpenClaw does)", file=sys.stderr)  # fmt: skip
        return EXIT_INVALID
    _report_findings(args, sc, policy.findings + policy.context_findings(sc.context))
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


def cmd_mcp_proxy(args: argparse.Namespace) -> int:
    """A gating stdio MCP proxy in front of ``COMMAND`` (see :mod:`cedarlite.hosts.mcp_proxy`):
    the configuration and context (exit 3 for mistakes) and the rules' syntax (exit 1) are
    checked before the upstream starts; the exit code is then 0 when the client ends the
    session, 1 when the upstream fails."""
    from .hosts.mcp_gate import McpGate
    from .hosts.mcp_proxy import run_proxy
    from .shipped import resolve
    from .tools import ConfigError

    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        raise _UsageError(
            "cedarlite mcp-proxy: error: give the upstream server's command after `--`"
        )
    if args.max_message_bytes < 1024:
        raise _UsageError("cedarlite mcp-proxy: error: --max-message-bytes must be at least 1024")
    doc = _Doc.read(args.config, "configuration")
    context_doc = _Doc.read(args.context, "context") if args.context else None
    context = context_doc.data if context_doc is not None else None
    sc = _Scenario(doc, doc.data, [], context, [], (), context_doc)
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
        _report_findings(args, sc, err.issues)
        print(f"error: refusing to start: {_summary(err.issues)}", file=sys.stderr)
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
# Commands for policy authors: evaluate, run-tests, translate-policy, link, equiv


def cmd_evaluate(args: argparse.Namespace) -> int:
    """Evaluate an expression for a request; print the value in Cedar syntax (exit 1 with the
    evaluation error)."""
    from .authorizer import make_request
    from .errors import EvaluationError
    from .evaluator import Evaluator
    from .parser import parse_expression
    from .values import display

    schema = _schema(args)
    request = make_request(_request(args), schema=schema, validate=not args.no_request_validation)
    expr = parse_expression(args.expression, "<expression>")
    entities = _entities_arg(args, schema)
    try:
        value = Evaluator(request, entities).evaluate(expr)
        print(display(value))
    except EvaluationError as err:
        message = f"error: failed to evaluate the expression: {err.message}"
        raise _Failure(message, EvaluationError.code) from None
    except RecursionError:
        raise _Failure("error: the value is nested too deeply to print") from None
    return EXIT_OK


def cmd_run_tests(args: argparse.Namespace) -> int:
    """Run policy tests (Cedar CLI's format, or the conformance format); exit 1 if any fails
    or coverage is under ``--threshold``."""
    from .runtests import load_tests, run_tests

    policies = _policies(args) if args.policies else None
    schema = _schema(args)
    report = run_tests(load_tests(path, policies, schema) for path in args.tests)
    print(f"running {len(report.results)} test{'s' * (len(report.results) != 1)}")
    for r in report.results:
        if args.verbose or not r.passed:
            print(f"  test {r.name} ... {'ok' if r.passed else 'fail: ' + r.failure}")
    status = EXIT_OK if report.failed == 0 else EXIT_FAILURE
    if args.coverage or args.threshold is not None:
        cov = report.coverage()
        print(
            f"coverage: {cov.covered}/{cov.total} policies determining in some test "
            f"({cov.percent:.1f}%)"
        )
        for u in cov.uncovered:
            where = f"{u.source or '<input>'}" + (f":{u.line}" if u.line is not None else "")
            named = f" @id({json.dumps(u.name)})" if u.name else ""
            print(f"  not covered: {u.policy_id}{named}  ({where})")
        if args.threshold is not None and not cov.meets(args.threshold):
            print(f"coverage is under the threshold of {args.threshold:g}%")
            status = EXIT_FAILURE
    print(f"results: {report.passed} passed, {report.failed} failed")
    return status


def cmd_translate_policy(args: argparse.Namespace) -> int:
    """Cedar text <-> Cedar's JSON policy format (EST). Comments are not carried over."""
    path = args.policies or "-"
    text = _read(path, "policies")
    if args.direction == "cedar-to-json":
        # As Cedar's CLI: policies with an `@id` annotation are named by it.
        ps = PolicySet.from_str(text, path, id_annotations=True)
        print(json.dumps(ps.to_json(), indent=2 if args.pretty else None, ensure_ascii=False))
        return EXIT_OK
    ps = PolicySet.from_json(text, path)
    if any(p.template_id is not None for p in ps):
        raise _Failure(
            "error: cannot translate a policy set with template links to Cedar text "
            "(Cedar text holds templates, not their links)"
        )
    sys.stdout.write(ps.to_cedar())
    return EXIT_OK


def cmd_link(args: argparse.Namespace) -> int:
    """Link a template; print the linked policy and, with ``--template-linked``, add the link
    to that file (created if missing)."""
    values = load_json(args.arguments, "--arguments", _JSONFileError)
    if not isinstance(values, dict):
        raise _Failure(
            'error: --arguments must be a JSON object like {"?principal": "User::\\"a\\""}'
        )
    ps = _policies(args, links=False)
    if args.template_linked and os.path.exists(args.template_linked):  # else `link` creates it
        ps = _with_links(ps, args.template_linked)
    ps = ps.link(args.template_id, args.new_id, values)
    linked = ps[args.new_id]
    from .printer import print_policy

    print(f"Template-linked policy added: {args.new_id}")
    print(print_policy(linked))
    if args.template_linked:
        path = args.template_linked
        existing = _json_file(path, "template links") if os.path.exists(path) else []
        if not isinstance(existing, list):
            raise _Failure(f"error: {path}: expected a JSON array of template links")
        args_text = {slot: str(uid) for slot, uid in linked.links.items()}
        entry = {"template_id": args.template_id, "link_id": args.new_id, "args": args_text}
        _write_atomically(path, json.dumps([*existing, entry], indent=2) + "\n")
    return EXIT_OK


def _write_atomically(path: str, text: str) -> None:
    """Replace ``path`` in one step (a crash leaves the old file, never half of the new)."""
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError as err:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise _Failure(f"error: cannot write `{path}`: {err}") from None


def cmd_equiv(args: argparse.Namespace) -> int:
    """Search for a request on which two policy sets decide differently: exit 0 if none was
    found (saying whether the search was exhaustive), 2 with a ready-to-run counterexample."""
    from .testing import check_equivalence

    first = _load_policies([args.first])
    second = _load_policies([args.second])
    schema = _schema(args)
    entities = _entities_arg(args, schema) if args.entities else None
    result = check_equivalence(
        first,
        second,
        schema=schema,
        entities=entities,
        max_examples=args.max_examples,
        exhaustive_limit=args.exhaustive_limit,
    )
    print(result.summary())
    ce = result.counterexample
    if ce is None:
        return EXIT_OK
    print(ce.render((f"first ({args.first})", f"second ({args.second})")))
    request = {
        key: str(uid_from_json(ce.request[key], key)) for key in ("principal", "action", "resource")
    }
    request["context"] = ce.request.get("context", {})
    request_text = json.dumps(request, indent=2, ensure_ascii=False)
    entities_text = json.dumps(ce.entities, indent=2, ensure_ascii=False)
    entities_file = args.entities or "entities.json"
    if args.out:
        try:
            os.makedirs(args.out, exist_ok=True)
        except OSError as err:
            raise _Failure(f"error: cannot create `{args.out}`: {err}") from None
        request_file = os.path.join(args.out, "request.json")
        _write_atomically(request_file, request_text + "\n")
        if not args.entities:
            entities_file = os.path.join(args.out, "entities.json")
            _write_atomically(entities_file, entities_text + "\n")
        print(f"\nwrote {request_file}" + ("" if args.entities else f" and {entities_file}"))
    else:
        request_file = "request.json"
        print(f"\nrequest.json:\n{request_text}")
        if not args.entities:
            print(f"entities.json:\n{entities_text}")
    q = shlex.quote
    schema_arg = f" --schema {q(args.schema)}" if args.schema else ""
    print("\nreproduce:")
    for path in (args.first, args.second):
        print(
            f"  cedarlite authorize --policies {q(path)}{schema_arg} "
            f"--request-json {q(request_file)} --entities {q(entities_file)} -v"
        )
    return EXIT_DENY


# ---------------------------------------------------------------------------------------------
# Impact of a policy change


def cmd_replay(args: argparse.Namespace) -> int:
    """Replay decision logs against a new configuration and rules: the calls whose decision
    would change, per transition and tool. Exit 3 when the configuration or rules do not
    validate, 1 when the replay cannot start or some of the log could not be read at all."""
    from .impact import ReplayError, replay
    from .impact.hook import hook_replay, is_hook_config
    from .shipped import resolve
    from .tools import ConfigError

    args.scenario = args.config  # read as `tools lint` reads its file (a scenario or a config)
    sc = _scenario(args, bare_config=True)
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
        _report_findings(args, sc, err.issues)
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
    parser = _ArgumentParser(
        prog="cedarlite",
        description="Cedar-compatible policy engine for AI agents' tool calls.",
        parents=[common],
    )
    parser.add_argument("--version", action="version", version=f"cedarlite {__version__}")
    sub = _with_parent(
        parser.add_subparsers(dest="command", required=True, metavar="COMMAND"), common
    )
    return parser, sub


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
        p.add_argument("-c", "--context", metavar="FILE", help="JSON context file")
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
        "--print-settings",
        action="store_true",
        help="check the configuration and rules, then print the settings.json snippet",
    )
    hc.set_defaults(run=cmd_hook_claude_code)


class _HookArgumentParser(_ArgumentParser):
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
    from .hosts.claude_code import MAX_DEADLINE

    if not 0 < value <= MAX_DEADLINE:
        raise argparse.ArgumentTypeError(
            f"the deadline must be between 0 and {MAX_DEADLINE:g} seconds"
        )
    return value


def cmd_hook_claude_code(args: argparse.Namespace) -> int:
    """Answer one Claude Code hook event (exit 0, or 2 for unreadable input), or print the
    settings that install the hook (``--print-settings``)."""
    from .hosts import claude_code

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
    # The tool commands print the tool layer's warnings themselves, located and with hints:
    # keep Python's last-resort handler from printing them a second time.
    logging.getLogger("cedarlite").addHandler(_QUIET)
    args = argparse.Namespace(error_format="human")
    try:
        args = parser.parse_args(argv)
        if not hasattr(args, "error_format"):
            args.error_format = "human"
        return int(args.run(args))
    except _UsageError as err:
        print(err, file=sys.stderr)
        return failure
    except SystemExit as done:  # --help, --version
        return done.code if isinstance(done.code, int) else EXIT_FAILURE
    except _Failure as err:
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
