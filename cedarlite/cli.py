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
cedarlite tools check scenario.json --rules policies/exec-commands.cedar
```

``--policies`` takes a file or a directory (every ``*.cedar`` file under it) and may be repeated;
``--error-format json`` (before or after the command) prints errors as JSON objects.

Exit codes (as Cedar's CLI): 0 success / ALLOW / equivalent, 1 failure (bad input: the message
names the file, line and column; failing tests), 2 DENY (an empty tool allowlist; policy sets
that differ), 3 validation failure (and unmet expectations in ``tools check``).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from . import __version__
from .authorizer import is_authorized
from .entities import Entities, load_json, uid_from_json
from .errors import CedarliteError
from .policyset import PolicySet

EXIT_OK, EXIT_FAILURE, EXIT_DENY, EXIT_INVALID = 0, 1, 2, 3


class _Failure(Exception):
    """A user-facing failure with its message already rendered (``code`` for JSON output)."""

    def __init__(self, message: str, code: str = "E0001") -> None:
        super().__init__(message)
        self.code = code


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
    entities = _entities_arg(args, schema)
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
        if args.error_format == "json":
            print(json.dumps({**issue.to_error().to_json(), "severity": issue.severity}))
        else:
            print(issue.render())
            print()
    if result.passed:
        print(
            f"{_named(args.policies)}: validation passed"
            + (f" ({len(result.warnings)} warnings)" if result.warnings else "")
        )
        return EXIT_OK
    print(f"{_named(args.policies)}: validation failed: {len(result.errors)} errors")
    return EXIT_INVALID


def cmd_check_parse(args: argparse.Namespace) -> int:
    """Parse the policies (and schema, entities if given); report the first error."""
    ps = _policies(args)
    schema = _schema(args)
    if args.entities:
        Entities.from_json(_read(args.entities, "entities"), schema=schema, source=args.entities)
    print(f"{_named(args.policies)}: {len(ps)} policies parse")
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
# Argument parsing


ERROR_FORMATS = ("human", "json")


def _with_parent(sub: Any, parent: argparse.ArgumentParser) -> Any:
    """``sub`` (subparsers) whose every command also takes ``parent``'s options."""
    add_parser = sub.add_parser

    def command(name: str, **kwargs: Any) -> argparse.ArgumentParser:
        return add_parser(name, parents=[parent], **kwargs)

    sub.add_parser = command
    return sub


def _parser() -> argparse.ArgumentParser:
    # `--error-format` is accepted before the command and after it (as Cedar's global flag).
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--error-format",
        choices=ERROR_FORMATS,
        default=argparse.SUPPRESS,
        help="how errors are printed: human (with a caret snippet) or json (one object a line)",
    )
    parser = argparse.ArgumentParser(
        prog="cedarlite",
        description="Cedar-compatible policy engine for AI agents' tool calls.",
        parents=[common],
    )
    parser.add_argument("--version", action="version", version=f"cedarlite {__version__}")
    sub = _with_parent(
        parser.add_subparsers(dest="command", required=True, metavar="COMMAND"), common
    )

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
        t.add_subparsers(dest="tools_command", required=True, metavar="TOOLS_COMMAND"), common
    )

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
    if not hasattr(args, "error_format"):
        args.error_format = "human"
    try:
        return int(args.run(args))
    except _Failure as err:
        _report(args, str(err), None, err.code)
        return EXIT_FAILURE
    except CedarliteError as err:
        _report(args, err.render(), err)
        return EXIT_FAILURE
    except KeyboardInterrupt:  # pragma: no cover
        return 130


def _report(
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
