"""The ``cedarlite`` command line, in the Cedar CLI's conventions. The only module that prints.

```
cedarlite authorize --policies p.cedar --entities e.json --principal 'User::"a"' \\
    --action 'Action::"read"' --resource 'Doc::"d"' [--context c.json] [--schema s.cedarschema]
cedarlite authorize --policies p.cedar --entities e.json --request-json request.json
cedarlite check-parse --policies p.cedar
cedarlite format --policies p.cedar [--check | --write]
```

Exit codes (as Cedar's CLI): 0 success / ALLOW, 1 failure (bad input: the message names the
file, line and column), 2 DENY, 3 validation failure.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import __version__
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
        request = _json_file(args.request_json, "request")
        if not isinstance(request, dict):
            raise _Failure(f"error: {args.request_json}: a request must be a JSON object")
        return request
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
    from .printer import print_policies

    text = _read(args.policies, "policies")
    ps = PolicySet.from_str(text, args.policies)
    formatted = print_policies(ps) if len(ps) else ""
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
# Argument parsing


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cedarlite", description="Cedar-compatible policy engine for AI agents' tool calls."
    )
    parser.add_argument("--version", action="version", version=f"cedarlite {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def policies_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("-p", "--policies", required=True, help="Cedar policy file (- for stdin)")
        p.add_argument("--template-linked", metavar="FILE",
                       help='JSON list of {"template_id", "link_id", "args": {"?principal": ...}}')
        p.add_argument("--strict", action="store_true",
                       help="reject cedarlite's dialect extras (startsWith/endsWith)")

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
    a.add_argument("--no-request-validation", action="store_true",
                   help="with --schema, do not check the request against appliesTo")
    a.add_argument("-v", "--verbose", action="store_true", help="list the determining policies")
    a.add_argument("--json", action="store_true", help="print the response as JSON")
    a.set_defaults(run=cmd_authorize)

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
