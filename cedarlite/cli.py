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
cedarlite tools check scenario.json --rules policies/exec-commands.cedar
```

Exit codes (as Cedar's CLI): 0 success / ALLOW, 1 failure (bad input: the message names the
file, line and column), 2 DENY (and an empty tool allowlist), 3 validation failure (and
unmet expectations in ``tools check``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ._version import __version__
from .authorizer import is_authorized
from .entities import Entities, load_json
from .errors import CedarliteError
from .policyset import PolicySet

EXIT_OK, EXIT_FAILURE, EXIT_DENY, EXIT_INVALID = 0, 1, 2, 3


class _Failure(Exception):
    """A user-facing failure with its message already rendered."""


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
        "principal": args.principal,
        "action": args.action,
        "resource": args.resource,
    }
    if args.context:
        request["context"] = _json_file(args.context, "context")
    return request


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
    resp = is_authorized(
        request, policies, entities, schema=schema, validate=not args.no_request_validation
    )
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
            + (f" ({len(result.warnings)} warnings)" if result.warnings else "")
        )
        return EXIT_OK
    print(f"{args.policies}: validation failed: {len(result.errors)} errors")
    return EXIT_INVALID


def cmd_check_parse(args: argparse.Namespace) -> int:
    """Parse the policies (and schema, entities if given); report the first error."""
    ps = _policies(args)
    schema = _schema(args)
    if args.entities:
        Entities.from_json(_read(args.entities, "entities"), schema=schema, source=args.entities)
    print(f"{args.policies}: {len(ps)} policies parse")
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


def _scenario(args: argparse.Namespace) -> dict[str, Any]:
    """An agent scenario file: ``{"config", "tools", "context", "calls"}`` (all optional)."""
    scenario = _json_file(args.scenario, "scenario")
    if not isinstance(scenario, dict):
        raise _Failure(f"error: {args.scenario}: a scenario must be a JSON object")
    for key, kind in (("tools", list), ("calls", list), ("context", dict)):
        if key in scenario and not isinstance(scenario[key], kind):
            raise _Failure(f"error: {args.scenario}: `{key}` must be a JSON {kind.__name__}")
    if getattr(args, "context", None):
        scenario["context"] = _json_file(args.context, "context")
    return scenario


def _rules(args: argparse.Namespace) -> PolicySet | None:
    sets = [PolicySet.from_str(_read(path, "rules"), path) for path in args.rules or ()]
    if not sets:
        return None
    # Each file numbers its policies from policy0: keep them apart by file.
    renamed = [
        replace(p, id=f"{path}:{p.id}")
        for path, ps in zip(args.rules, sets, strict=True)
        for p in ps
    ]
    return PolicySet(renamed)


def cmd_tools_resolve(args: argparse.Namespace) -> int:
    """The tools a run may see: the allowed list, and each removed tool's layer."""
    from .tools import EmptyAllowlistError, resolve_tools

    sc = _scenario(args)
    try:
        res = resolve_tools(sc.get("config"), sc.get("tools", []), sc.get("context"))
    except EmptyAllowlistError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_DENY
    if args.json:
        print(
            json.dumps(
                {"allowed": res.allowed, "removed": res.removed, "warnings": res.warnings}, indent=2
            )
        )
        return EXIT_OK
    print(f"allowed ({len(res.allowed)}): {', '.join(map(str, res.allowed)) or '-'}")
    for tool, layer in res.removed.items():
        print(f"removed: {tool}  <- {layer}")
    for warning in res.warnings:
        print(f"warning: {warning}")
    return EXIT_OK


def cmd_tools_explain(args: argparse.Namespace) -> int:
    """Trace one tool through the layers of the configuration."""
    from .tools import explain

    sc = _scenario(args)
    print(explain(sc.get("config"), args.tool, sc.get("context"), sc.get("tools") or None))
    return EXIT_OK


def cmd_tools_check(args: argparse.Namespace) -> int:
    """Decide each call of the scenario; exit 3 if a call's ``expect`` is not met."""
    from .tools import ToolPolicy, ToolsError

    sc = _scenario(args)
    policy = ToolPolicy(sc.get("config"), sc.get("tools", []))
    rules = _rules(args)
    context = sc.get("context")
    resolution = policy.resolve(context)
    print(f"run: {len(resolution.allowed)} tools offered, {len(resolution.removed)} removed")
    unmet = 0
    for i, call in enumerate(sc.get("calls", [])):
        if not isinstance(call, dict) or "tool" not in call:
            raise _Failure(f"error: {args.scenario}: calls[{i}] needs a `tool`")
        params = call.get("params", {})
        try:
            decision = policy.authorize_call(
                call.get("context", context),
                call["tool"],
                params,
                rules=rules,
                call_id=str(i),
            )
            verdict = "allow" if decision.allowed else "deny"
            why = ", ".join(decision.policies) or "no policy applies"
            errors = "; ".join(e.message for e in decision.response.errors)
            why += f"; errors: {errors}" if errors else ""
        except ToolsError as err:
            verdict, why = "deny", err.message
        expect = call.get("expect")
        mark = ""
        if expect is not None and expect.lower() != verdict:
            unmet += 1
            mark = f"   << expected {expect.upper()}"
        shown = json.dumps(params, ensure_ascii=False)
        print(f"{verdict.upper():<6} {call['tool']} {shown}  ({why}){mark}")
    expected = sum(1 for c in sc.get("calls", []) if isinstance(c, dict) and "expect" in c)
    if expected:
        print(f"{expected - unmet}/{expected} calls decided as expected")
    return EXIT_INVALID if unmet else EXIT_OK


# ---------------------------------------------------------------------------------------------
# Argument parsing


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
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
        p.add_argument("scenario", help='JSON file: {"config", "tools", "context", "calls"}')
        p.add_argument("-c", "--context", metavar="FILE", help="run context (overrides the file's)")

    tr = tsub.add_parser("resolve", help="which tools a run may see, and why the others not")
    scenario_args(tr)
    tr.add_argument("--json", action="store_true", help="print JSON")
    tr.set_defaults(run=cmd_tools_resolve)

    te = tsub.add_parser("explain", help="trace one tool through the layers")
    scenario_args(te)
    te.add_argument("--tool", required=True, help="tool name")
    te.set_defaults(run=cmd_tools_explain)

    tc = tsub.add_parser("check", help="decide the scenario's tool calls")
    scenario_args(tc)
    tc.add_argument(
        "--rules",
        action="append",
        metavar="FILE",
        help="argument rules (.cedar), e.g. policies/exec-commands.cedar; repeatable",
    )
    tc.set_defaults(run=cmd_tools_check)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (never raises on bad input)."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return int(args.run(args))
    except _Failure as err:
        print(err, file=sys.stderr)
        return EXIT_FAILURE
    except CedarliteError as err:
        print(err.render(), file=sys.stderr)
        return EXIT_FAILURE
    except KeyboardInterrupt:  # pragma: no cover
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
