"""Commands on Cedar policies: authorize, validate, check-parse, format, evaluate, run-tests,
translate-policy, link, equiv."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path

from ..authorizer import is_authorized
from ..data.entities import Entities
from ..data.jsonvalue import load_json, uid_from_json
from ..policyset import PolicySet
from .common import (
    EXIT_DENY,
    EXIT_FAILURE,
    EXIT_INVALID,
    EXIT_OK,
    Failure,
    JSONFileError,
    blame,
    context_name,
    json_file,
    labelled,
    load_policies,
    named_paths,
    plural,
    read_entities,
    read_policies,
    read_request,
    read_schema,
    read_text,
    with_links,
    write_atomically,
)


def cmd_authorize(args: argparse.Namespace) -> int:
    """Decide one request: prints ALLOW or DENY, then errors and (verbose) reasons."""
    policies = read_policies(args)
    schema = read_schema(args)
    entities = read_entities(args, schema)
    request = read_request(args)
    with blame(args.request_json or context_name(args.context) or "the request"):
        decided = is_authorized(
            request, policies, entities, schema=schema, validate=not args.no_request_validation
        )
    resp = labelled(decided, policies)
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
    # lazy on purpose: a command loads only the stages it runs (the command line's start time)
    from ..schema.validator import validate

    result = validate(read_policies(args), read_schema(args))
    for issue in (*result.errors, *result.warnings):
        if args.error_format == "json":
            print(json.dumps({**issue.to_error().to_json(), "severity": issue.severity}))
        else:
            print(issue.render())
            print()
    denied = len(result.warnings) if args.deny_warnings else 0
    if result.passed and not denied:
        print(
            f"{named_paths(args.policies)}: validation passed"
            + (f" ({plural(len(result.warnings), 'warning')})" if result.warnings else "")
        )
        return EXIT_OK
    counts = plural(len(result.errors), "error")
    counts += f", {plural(denied, 'warning')} denied by --deny-warnings" if denied else ""
    print(f"{named_paths(args.policies)}: validation failed: {counts}")
    return EXIT_INVALID


def cmd_check_parse(args: argparse.Namespace) -> int:
    """Parse the policies (and schema, entities if given); report the first error."""
    ps = read_policies(args)
    schema = read_schema(args)
    if args.entities:
        Entities.from_json(
            read_text(args.entities, "entities"), schema=schema, source=args.entities
        )
    print(f"{named_paths(args.policies)}: {plural(len(ps), 'policy', 'policies')} parse")
    return EXIT_OK


def cmd_format(args: argparse.Namespace) -> int:
    """Print the policies in canonical layout; --check fails if the file differs, --write fixes."""
    # lazy on purpose: a command loads only the stages it runs (the command line's start time)
    from ..lang.printer import format_text

    text = read_text(args.policies, "policies")
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


def cmd_evaluate(args: argparse.Namespace) -> int:
    """Evaluate an expression for a request; print the value in Cedar syntax (exit 1 with the
    evaluation error)."""
    # lazy on purpose: a command loads only the stages it runs (the command line's start time)
    from ..authorizer import make_request
    from ..data.values import display
    from ..engine.evaluator import Evaluator
    from ..errors import EvaluationError
    from ..lang.ast import Variable, walk
    from ..lang.parse import parse_expression

    schema = read_schema(args)
    expr = parse_expression(args.expression, "<expression>")
    read = {e.var.value for e in walk(expr) if isinstance(e, Variable)}
    unread = [k for k in ("principal", "action", "resource") if k not in read]
    given = read_request(args, unread)
    stand_ins = not args.request_json and any(not getattr(args, k) for k in unread)
    request = make_request(
        given,
        schema=None if stand_ins else schema,  # (a stand-in is in no schema; nothing reads it)
        validate=not args.no_request_validation,
    )
    entities = read_entities(args, schema)
    try:
        value = Evaluator(request, entities).evaluate(expr)
        print(display(value))
    except EvaluationError as err:
        message = f"error: failed to evaluate the expression: {err.message}"
        raise Failure(message, EvaluationError.code) from None
    except RecursionError:
        raise Failure("error: the value is nested too deeply to print") from None
    return EXIT_OK


def cmd_run_tests(args: argparse.Namespace) -> int:
    """Run policy tests (Cedar CLI's format, or the conformance format); exit 1 if any fails
    or coverage is under ``--threshold``."""
    # lazy on purpose: a command loads only the stages it runs (the command line's start time)
    from ..runtests import load_tests, run_tests

    policies = read_policies(args) if args.policies else None
    schema = read_schema(args)
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
    text = read_text(path, "policies")
    if args.direction == "cedar-to-json":
        # As Cedar's CLI: policies with an `@id` annotation are named by it.
        ps = PolicySet.from_str(text, path, id_annotations=True)
        print(json.dumps(ps.to_json(), indent=2 if args.pretty else None, ensure_ascii=False))
        return EXIT_OK
    ps = PolicySet.from_json(text, path)
    if any(p.template_id is not None for p in ps):
        raise Failure(
            "error: cannot translate a policy set with template links to Cedar text "
            "(Cedar text holds templates, not their links)"
        )
    sys.stdout.write(ps.to_cedar())
    return EXIT_OK


def cmd_link(args: argparse.Namespace) -> int:
    """Link a template; print the linked policy and, with ``--template-linked``, add the link
    to that file (created if missing)."""
    values = load_json(args.arguments, "--arguments", JSONFileError)
    if not isinstance(values, dict):
        raise Failure(
            'error: --arguments must be a JSON object like {"?principal": "User::\\"a\\""}'
        )
    ps = read_policies(args, links=False)
    if args.template_linked and os.path.exists(args.template_linked):  # else `link` creates it
        ps = with_links(ps, args.template_linked)
    ps = ps.link(args.template_id, args.new_id, values)
    linked = ps[args.new_id]
    # lazy on purpose: a command loads only the stages it runs (the command line's start time)
    from ..lang.printer import print_policy

    print(f"Template-linked policy added: {args.new_id}")
    print(print_policy(linked))
    if args.template_linked:
        path = args.template_linked
        existing = json_file(path, "template links") if os.path.exists(path) else []
        if not isinstance(existing, list):
            raise Failure(f"error: {path}: expected a JSON array of template links")
        args_text = {slot: str(uid) for slot, uid in linked.links.items()}
        entry = {"template_id": args.template_id, "link_id": args.new_id, "args": args_text}
        write_atomically(path, json.dumps([*existing, entry], indent=2) + "\n")
    return EXIT_OK


def cmd_equiv(args: argparse.Namespace) -> int:
    """Search for a request on which two policy sets decide differently: exit 0 if none was
    found (saying whether the search was exhaustive), 2 with a ready-to-run counterexample."""
    # lazy on purpose: a command loads only the stages it runs (the command line's start time)
    from ..analysis.equivalence import check_equivalence

    first = load_policies([args.first])
    second = load_policies([args.second])
    schema = read_schema(args)
    entities = read_entities(args, schema) if args.entities else None
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
            raise Failure(f"error: cannot create `{args.out}`: {err}") from None
        request_file = os.path.join(args.out, "request.json")
        write_atomically(request_file, request_text + "\n")
        if not args.entities:
            entities_file = os.path.join(args.out, "entities.json")
            write_atomically(entities_file, entities_text + "\n")
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
