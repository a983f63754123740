"""``cedarlite tools ...``: the agent tool layer's commands (resolve, explain, lint, schema, check,
shipped), and the scenario files they read."""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from ..data.jsonvalue import load_json
from ..errors import CedarliteError, ValidationError
from .common import (
    EXIT_DENY,
    EXIT_FAILURE,
    EXIT_INVALID,
    EXIT_OK,
    Failure,
    JSONFileError,
    blame,
    plural,
    read_text,
)


@dataclass(frozen=True)
class Doc:
    """A JSON file read for the tool commands: its path, text and value (to locate findings)."""

    path: str
    text: str
    data: Any

    @classmethod
    def read(cls, path: str, what: str) -> Doc:
        """Read and decode ``path`` (``cedarlite:NAME``: a shipped example)."""
        # lazy on purpose: a command loads only the stages it runs (the command line's start time)
        from ..shipped import resolve

        path = resolve(path, "examples")
        text = read_text(path, what)
        return cls(path, text, load_json(text, path, JSONFileError))

    def locate(self, loc: Sequence[str | int], key: bool = False) -> Any:
        """The span of a JSON path in this file (``None`` if it is not there)."""
        # lazy on purpose: a command loads only the stages it runs (the command line's start time)
        from .._jsonloc import json_span

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
        err = JSONFileError(message, span=span, text=self.text, source=self.path, help=help)
        if code:
            err.code = code
        return err.render()


@dataclass(frozen=True)
class Scenario:
    """A scenario file ``{"config", "tools", "context", "calls"}`` (all optional), or a bare
    tools configuration (``tools lint``); ``context`` may come from its own file."""

    doc: Doc
    config: Any
    tools: list[Any]
    context: Any
    calls: list[Any]
    config_at: tuple[str, ...]  # where the configuration is in the file
    context_doc: Doc | None  # the file of the context, when not the scenario's own

    def blame(self) -> AbstractContextManager[None]:
        """Errors about the scenario's values (raised without a source) name its file."""
        return blame(self.doc.path)

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


def scenario(args: argparse.Namespace, *, bare_config: bool = False) -> Scenario:
    """Read the scenario (with ``bare_config``, a file without ``config`` is the configuration
    itself, as ``tools lint`` takes it)."""
    doc = Doc.read(args.scenario, "scenario")
    data = doc.data
    if not isinstance(data, dict):
        raise Failure(doc.error((), "a scenario must be a JSON object"))
    scenario = bare_config and "config" not in data
    if not scenario:
        for key, kind, name in (("tools", list, "an array"), ("calls", list, "an array"),
                                ("context", dict, "an object")):  # fmt: skip
            if data.get(key) is not None and not isinstance(data[key], kind):
                raise Failure(doc.error((key,), f"`{key}` must be {name}"))
    context_doc = None
    context = None if scenario else data.get("context")
    if getattr(args, "context", None):
        context_doc = Doc.read(args.context, "context")
        context = context_doc.data
    tools = data.get("tools") if not scenario else None
    if getattr(args, "tools", None):
        tools = Doc.read(args.tools, "tools").data
    return Scenario(
        doc,
        data if scenario else data.get("config"),
        tools or [],
        context,
        [] if scenario else data.get("calls") or [],
        () if scenario else ("config",),
        context_doc,
    )


def report_findings(args: argparse.Namespace, sc: Scenario, findings: Sequence[Any]) -> None:
    """Print lint findings on stderr: located with a snippet, or one JSON object a line."""
    for finding in findings:
        if args.error_format == "json":
            print(json.dumps(finding.to_json(), ensure_ascii=False), file=sys.stderr)
        else:
            print(sc.render(finding), file=sys.stderr)


def summary(findings: Sequence[Any], more_errors: int = 0) -> str:
    errors = sum(1 for f in findings if f.severity == "error")
    warnings = len(findings) - errors
    errors += more_errors
    return f"{plural(errors, 'error')}, {plural(warnings, 'warning')}"


def cmd_tools_resolve(args: argparse.Namespace) -> int:
    """The tools a run may see: the allowed list, each removed tool's layer, the findings."""
    # lazy on purpose: a command loads only the stages it runs (the command line's start time)
    from ..tools import EmptyAllowlistError, resolve_tools

    sc = scenario(args)
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
    # docs/tool-policy.md §10's unknown-entry notes are the findings' (with a hint)
    for warning in res.warnings:
        if " allowlist contains unknown entries " not in warning:
            print(f"warning: {warning}")
    report_findings(args, sc, res.findings)
    return EXIT_OK


def cmd_tools_explain(args: argparse.Namespace) -> int:
    """Trace one tool through the layers of the configuration."""
    # lazy on purpose: a command loads only the stages it runs (the command line's start time)
    from ..tools import explain

    sc = scenario(args)
    with sc.blame():
        print(explain(sc.config, args.tool, sc.context, sc.tools or None))
    return EXIT_OK


def cmd_tools_lint(args: argparse.Namespace) -> int:
    """Every finding on a configuration (a scenario's, or a bare configuration file) and its
    run context; exit 3 if any is an error."""
    # lazy on purpose: a command loads only the stages it runs (the command line's start time)
    from ..impact.hook import is_hook_config
    from ..tools import ToolCatalog, lint_config
    from ..tools.lint import tool_issues

    sc = scenario(args, bare_config=True)
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
        text = summary(findings, more) if findings or more else "no findings"
        print(f"{sc.doc.path}: {text}")
    if hook_error is not None or any(f.severity == "error" for f in findings):
        return EXIT_INVALID
    return EXIT_OK


def _hook_lint(path: str) -> tuple[Any, CedarliteError | None]:
    """A Claude Code hook configuration's catalog (as the hook builds it, before any call)
    and the first mistake in its argument maps, located (``None`` when there is none)."""
    # lazy on purpose: only a hook's configuration needs the hook's reader
    from ..hosts.claude_code import HookConfig

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
    # lazy on purpose: a command loads only the stages it runs (the command line's start time)
    from ..tools import ToolCatalog, cedar_schema

    doc = Doc.read(args.scenario, "scenario")
    tools = doc.data if isinstance(doc.data, list) else scenario(args).tools
    with blame(doc.path):
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
    # lazy on purpose: a command loads only the stages it runs (the command line's start time)
    from ..tools import ConfigError, ToolPolicy, ToolsError

    sc = scenario(args)
    strict = not args.lenient
    try:
        with sc.blame():
            policy = ToolPolicy(sc.config, sc.tools, strict=strict)
            policy.check_context(sc.context)
    except ConfigError as err:
        report_findings(args, sc, err.issues)
        print(f"error: refusing to check: {summary(err.issues)} (use --lenient to read the "
              "configuration as OpenClaw does)", file=sys.stderr)  # fmt: skip
        return EXIT_INVALID
    report_findings(args, sc, policy.findings + policy.context_findings(sc.context))
    try:
        # lazy on purpose: a command loads only the stages it runs (the command line's start time)
        from ..shipped import resolve

        rules = policy.load_rules([resolve(r) for r in args.rules]) if args.rules else None
    except ValidationError as err:
        print(err.render(), file=sys.stderr)
        return EXIT_INVALID
    with sc.blame():
        resolution = policy.resolve(sc.context)
    print(
        f"run: {plural(len(resolution.allowed), 'tool')} offered, {len(resolution.removed)} removed"
    )
    verdict_of = _GuardVerdicts(sc.config, sc.tools, rules, strict)
    unmet = failed = expected = bad_expects = 0
    for i, call in enumerate(sc.calls):
        problem = _call_problem(call, i)
        bad_expect = None
        if problem is not None and problem[0][-1:] == ("expect",):  # decided all the same
            bad_expect, problem = problem, None
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
        verdict, policies = verdict_of(call.get("context", sc.context), call["tool"], params)
        if verdict is None:
            verdict = "allow" if decision.allowed else "deny"
        why = ", ".join(policies or decision.policies) or "no policy applies"
        errors = "; ".join(e.message for e in decision.response.errors)
        why += f"; errors: {errors}" if errors else ""
        mark = ""
        if bad_expect is not None:
            bad_expects += 1
            loc, message, help, code = bad_expect
            mark = f"   << calls[{i}]: {message}"
            print(sc.doc.error(loc, message, help, code), file=sys.stderr)
        elif "expect" in call:
            expected += 1
            if _VERDICTS[call["expect"].lower()] != verdict:
                unmet += 1
                mark = f"   << expected {call['expect'].upper()}"
        print(f"{verdict.upper():<6} {shown}  ({why}){mark}")
    if expected:
        print(f"{expected - unmet}/{plural(expected, 'call')} decided as expected")
    if bad_expects:
        print(f"{plural(bad_expects, 'call')} with an `expect` that is no verdict", file=sys.stderr)
    if failed:
        print(f"{plural(failed, 'call')} could not be decided", file=sys.stderr)
    if failed or bad_expects:
        return EXIT_FAILURE
    return EXIT_INVALID if unmet else EXIT_OK


# What `expect` may say: Cedar's words and the guard's (`block` is a deny).
_VERDICTS = {"allow": "allow", "deny": "deny", "block": "deny", "ask": "ask"}


class _GuardVerdicts:
    """The guard's answer for a scenario's call (``tools check`` says what a hook would):
    ``allow``, ``deny`` or ``ask`` (a person's approval is needed) with the deciding policies
    (the ``@ask`` ones for an ask); ``(None, ())`` when no guard can be built for the run (an
    empty allowlist: the tool layer's decision stands)."""

    def __init__(self, config: Any, tools: Any, rules: Any, strict: bool) -> None:
        self._args = (config, tools, rules, strict)
        self._guards: dict[str, Any] = {}

    def __call__(self, context: Any, tool: Any, params: Any) -> tuple[str | None, tuple[str, ...]]:
        # lazy on purpose: a command loads only the stages it runs (the command line's start time)
        from ..guard import Guard, MemorySessionStore
        from ..tools import EmptyAllowlistError

        key = json.dumps(context, sort_keys=True, default=str)
        if key not in self._guards:
            config, tools, rules, strict = self._args
            try:
                self._guards[key] = Guard(
                    config, tools, context, rules=rules, strict=strict,
                    session_store=MemorySessionStore(),
                )  # fmt: skip
            except EmptyAllowlistError:
                self._guards[key] = None
        guard = self._guards[key]
        if guard is None:
            return None, ()
        outcome = guard.before_tool_call(tool, params)
        return _VERDICTS[outcome.action], outcome.policies


_Problem = tuple[tuple[Any, ...], str, str | None, str]


def cmd_tools_shipped(args: argparse.Namespace) -> int:
    """List the shipped policy files and examples (``cedarlite:NAME`` on the command line)."""
    # lazy on purpose: a command loads only the stages it runs (the command line's start time)
    from .. import shipped

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
        # lazy on purpose: a command loads only the stages it runs (the command line's start time)
        from ..tools.lint import did_you_mean

        hint = did_you_mean(expect, _VERDICTS) or 'write "allow", "deny" (or "block") or "ask"'
        shown = json.dumps(expect, ensure_ascii=False)
        return (
            ("calls", i, "expect"),
            f"`expect` must be `allow`, `deny` (or `block`) or `ask`, not `{shown}`",
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
    return [int(i) if i else name for name, i in re.findall(r"([^.\[\]]+)|\[(\d+)\]", argument)]
