"""What every command of the command line shares: exit codes, the errors that end a command,
and the readers of the common flags (``--policies``, ``--entities``, ``--schema``, a request)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..data.entities import Entities
from ..data.jsonvalue import load_json
from ..data.response import Response
from ..data.values import EntityUID
from ..errors import CedarliteError, RequestError
from ..policyset import PolicySet

EXIT_OK, EXIT_FAILURE, EXIT_DENY, EXIT_INVALID = 0, 1, 2, 3


class Failure(Exception):
    """A user-facing failure with its message already rendered (``code`` for JSON output)."""

    def __init__(self, message: str, code: str = "E0001") -> None:
        super().__init__(message)
        self.code = code


class UsageError(Exception):
    """A command line argparse rejected (exit 1, not argparse's 2: 2 means DENY here)."""


class ArgumentParser(argparse.ArgumentParser):
    """No command takes an abbreviation of an option: ``--policy`` is not ``--policy-format``
    (a misspelled option is an error that says what was meant: ``main.unknown_options``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> Any:
        self.print_usage(sys.stderr)
        raise UsageError(f"{self.prog}: error: {message}")


def plural(count: int, word: str, many: str | None = None) -> str:
    """``1 policy``, ``2 policies``: ``count`` and the word in the right number."""
    return f"{count} {word if count == 1 else (many or word + 's')}"


def read_text(path: str, what: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise Failure(f"error: cannot read {what} `{path}`: {err}") from None


def json_file(path: str, what: str) -> Any:
    return load_json(read_text(path, what), path, JSONFileError)


class JSONFileError(CedarliteError):
    code = "E0010"


def load_policies(
    paths: Sequence[str], *, strict: bool = False, policy_format: str = "cedar"
) -> PolicySet:
    """One file (Cedar's positional ids, ``-`` for standard input), or several files and
    directories (ids qualified by file: ``a.cedar:policy0``)."""
    if len(paths) == 1 and (paths[0] == "-" or not os.path.isdir(paths[0])):
        text = read_text(paths[0], "policies")
        if policy_format == "json":
            return PolicySet.from_json(text, paths[0], strict=strict)
        return PolicySet.from_str(text, paths[0], strict=strict)
    if policy_format == "json":
        raise Failure("error: `--policy-format json` reads one policy file")
    if "-" in paths:
        raise Failure("error: `-` (standard input) cannot be combined with other policy files")
    return PolicySet.from_files(paths, strict=strict)


def named_paths(paths: Sequence[str]) -> str:
    return ", ".join(paths)


def read_policies(args: argparse.Namespace, *, links: bool = True) -> PolicySet:
    """The ``--policies`` (and, with ``links``, the ``--template-linked`` links)."""
    ps = load_policies(
        args.policies,
        strict=getattr(args, "strict", False),
        policy_format=getattr(args, "policy_format", "cedar"),
    )
    path = getattr(args, "template_linked", None)
    return with_links(ps, path) if path and links else ps


def with_links(ps: PolicySet, path: str) -> PolicySet:
    """``ps`` with the links of a template-links file (Cedar's format)."""
    items = json_file(path, "template links")
    for i, link in enumerate(items if isinstance(items, list) else [None]):
        if not (
            isinstance(link, dict)
            and isinstance(link.get("template_id"), str)
            and isinstance(link.get("link_id"), str)
            and isinstance(link.get("args"), dict)
        ):
            raise Failure(
                f"error: {path}: entry {i} must be "
                '{"template_id": str, "link_id": str, "args": {"?principal": ...}}'
            )
        ps = ps.link(link["template_id"], link["link_id"], link["args"])
    return ps


def read_entities(args: argparse.Namespace, schema: Any) -> Entities:
    """The ``--entities`` file (read by the schema, if any), or an empty store."""
    if not getattr(args, "entities", None):
        return Entities.from_json([], schema=schema)
    return Entities.from_json(
        read_text(args.entities, "entities"), schema=schema, source=args.entities
    )


def read_schema(args: argparse.Namespace) -> Any:
    if not getattr(args, "schema", None):
        return None
    # lazy on purpose: a command loads only the stages it runs (the command line's start time)
    from ..schema import Schema

    text = read_text(args.schema, "schema")
    if args.schema.endswith(".json"):
        return Schema.from_json(text, args.schema)
    return Schema.from_str(text, args.schema)


def read_request(args: argparse.Namespace, unread: Sequence[str] = ()) -> dict[str, Any]:
    """The request of ``--request-json`` or of the flags; the variables in ``unread`` (which
    nothing will read) may be left out: an entity no store holds stands in for them."""
    if args.request_json:
        from_file = json_file(args.request_json, "request")
        if not isinstance(from_file, dict):
            raise Failure(f"error: {args.request_json}: a request must be a JSON object")
        return from_file
    names = ("principal", "action", "resource")
    missing = [f"--{k}" for k in names if not getattr(args, k) and k not in unread]
    if missing:
        raise Failure(f"error: give --request-json, or all of {', '.join(missing)}")
    request: dict[str, Any] = {
        name: uid_flag(getattr(args, name), f"--{name}")
        if getattr(args, name)
        else EntityUID("__cedarlite::Unspecified", name)
        for name in names
    }
    if args.context:
        request["context"] = read_context(args.context)
    return request


def read_context(value: str) -> Any:
    """``--context``: a JSON object written inline (``'{"hour": 3}'``), or its file."""
    if value.lstrip().startswith("{"):
        return load_json(value, "--context", JSONFileError)
    return json_file(value, "context")


def context_name(value: str | None) -> str | None:
    """What errors in the ``--context`` value name: its file, or the flag."""
    return "--context" if value and value.lstrip().startswith("{") else value


def uid_flag(value: str, flag: str) -> Any:
    """An entity uid given on the command line; an error names the flag and marks the text."""
    # lazy on purpose: a command loads only the stages it runs (the command line's start time)
    from ..data.request import parse_entity_uid

    try:
        return parse_entity_uid(value)
    except CedarliteError as err:
        raise RequestError(err.message, span=err.span, text=value, source=flag) from None


def labelled(resp: Response, policies: PolicySet) -> Response:
    """The response with policies named by ``@id`` (Cedar's CLI names them so), not position."""
    label = policies.label
    return Response(
        resp.decision,
        tuple(label(r) for r in resp.reasons),
        tuple(replace(e, policy_id=label(e.policy_id)) for e in resp.errors),
    )


@contextmanager
def blame(path: str) -> Iterator[None]:
    """Name ``path`` in the errors raised without a source (values read from that file)."""
    try:
        yield
    except CedarliteError as err:
        if err.source is None:
            err.source = path
        raise


def write_atomically(path: str, text: str) -> None:
    """Replace ``path`` in one step (a crash leaves the old file, never half of the new)."""
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError as err:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise Failure(f"error: cannot write `{path}`: {err}") from None
