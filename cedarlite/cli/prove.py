"""The commands on proofs, ``prove`` and ``tools prove`` (the logic: :mod:`cedarlite.analysis`).

``cedarlite prove PROP A [B] --schema S``: exit 0 when the property holds, 1 when it is
refuted (the counterexample is printed with an ``authorize`` command line that reproduces it;
``--out DIR`` writes ``request.json`` and ``entities.json``), 3 when unknown (not encoded,
timed out, or input that cannot be read).

``cedarlite tools prove CONFIG [--host openclaw|claude-code] --rules R... --never QUERY.cedar``:
each permit of the query file is a promise of the rules ("nothing like this is ever
allowed"); each is proved disjoint from the guard's compiled policy set (tool layer and
rules), over the schema of the catalog the host's guard has. A refutation is a concrete tool
call the guard allows, checked by deciding it with the guard itself.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from typing import Any

from ..analysis.promises import prove_promises
from ..analysis.prove import PROPERTIES, ProofResult, prove
from ..data.values import EntityUID
from ..errors import CedarliteError
from ..policyset import PolicySet
from ..schema.model import Schema

EXIT_HOLDS, EXIT_REFUTED, EXIT_UNKNOWN = 0, 1, 3


def _policies(path: str) -> PolicySet:
    from ..shipped import resolve

    path = resolve(path)
    if os.path.isdir(path):
        return PolicySet.from_dir(path)
    return PolicySet.from_file(path)


def _schema(path: str) -> Schema:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as err:
        raise CedarliteError(f"cannot read schema `{path}`: {err.strerror}") from None
    if path.endswith(".json"):
        return Schema.from_json(text, path)
    return Schema.from_str(text, path)


def run_prove(args: Any) -> int:
    """``cedarlite prove``: print the answer; the exit code says which it was."""
    try:
        if args.prop not in PROPERTIES:
            raise CedarliteError(
                f"unknown property `{args.prop}`", help="one of: " + ", ".join(PROPERTIES)
            )
        a = _policies(args.first)
        b = _policies(args.second) if args.second else None
        schema = _schema(args.schema)
        result = prove(args.prop, a, b, schema=schema, timeout=args.timeout)
    except CedarliteError as err:
        print(err.render(), file=sys.stderr)
        return EXIT_UNKNOWN
    print(result.reason)
    if result.holds is True:
        return EXIT_HOLDS
    if result.holds is None:
        return EXIT_UNKNOWN
    _print_counterexample(result, args)
    return EXIT_REFUTED


def _print_counterexample(result: ProofResult, args: Any) -> None:
    ce = result.counterexample
    assert ce is not None
    request = {
        key: str(EntityUID(ce.request[key]["type"], ce.request[key]["id"]))
        for key in ("principal", "action", "resource")
    }
    request["context"] = ce.request.get("context", {})
    request_text = json.dumps(request, indent=2, ensure_ascii=False)
    entities_text = json.dumps(ce.entities, indent=2, ensure_ascii=False)
    request_file, entities_file = "request.json", "entities.json"
    if args.out:
        try:
            os.makedirs(args.out, exist_ok=True)
            request_file = os.path.join(args.out, "request.json")
            entities_file = os.path.join(args.out, "entities.json")
            for path, text in ((request_file, request_text), (entities_file, entities_text)):
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text + "\n")
        except OSError as err:
            print(f"error: cannot write the counterexample: {err}", file=sys.stderr)
        else:
            print(f"wrote {request_file} and {entities_file}")
    else:
        print(f"request.json:\n{request_text}\nentities.json:\n{entities_text}")
    q = shlex.quote
    print("reproduce:")
    for path in (args.first, args.second):
        if path:
            print(
                f"  cedarlite authorize --policies {q(path)} --schema {q(args.schema)} "
                f"--request-json {q(request_file)} --entities {q(entities_file)} -v"
            )


def _host_call(mapping: Any, call: dict[str, Any]) -> str:
    """A bypass as the host's own call: the first host tool mapped to it, its arguments
    renamed back (those the adapter computes from a path left out)."""
    # lazy on purpose: as in run_tools_prove
    from ..hosts.mapping import without_path_attributes

    params = without_path_attributes(call["params"])
    for host_tool, entry in mapping.entries.items():
        if entry.tool == call["tool"]:
            back = {new: old for old, new in entry.arguments.items() if new is not None}
            params = {back.get(k, k): v for k, v in params.items()}
            return f"{host_tool} {json.dumps(params, ensure_ascii=False)}"
    return f"{call['tool']} {json.dumps(params, ensure_ascii=False)}"


def run_tools_prove(args: Any) -> int:
    """``cedarlite tools prove``: each promise proved, or its bypass printed."""
    # lazy on purpose: only this command reads a host's configuration
    from ..hosts.claude_code import HookConfig
    from ..shipped import resolve
    from ..tools import ToolPolicy

    try:
        never = _policies(args.never)
        # The configuration as the host's guard reads it (a scenario's `calls` aside), with
        # the tools the guard has before any call.
        config = HookConfig.read(resolve(args.scenario, "examples"), args.rules or [],
                                 ignore=("calls",))  # fmt: skip
        rule_sets = config.rule_sets()
        try:
            policy = ToolPolicy(config.config, config.run_tools(args.host, rule_sets), strict=True)
            policy.check_context(config.context)
        except CedarliteError as err:
            raise config.located(err) from None
        # The run context the deployment decides in: the file's (the Claude Code hook adds
        # that the local user is the owner).
        run = config.run_context({}) if args.host == "claude-code" else config.context
        promises = prove_promises(
            policy, rule_sets or None, never, timeout=args.timeout, context=run
        )
    except CedarliteError as err:
        print(err.render(), file=sys.stderr)
        return EXIT_UNKNOWN
    worst = EXIT_HOLDS
    for promise in promises:
        r = promise.result
        if r.holds is True:
            print(f"proved   {promise.name}: no call the guard allows matches it")
        elif r.holds is False and promise.call is not None:
            worst = EXIT_REFUTED
            call = promise.call
            print(f"BYPASS   {promise.name}: the guard allows")
            params = json.dumps(call["params"], ensure_ascii=False)
            print(f"           tool {call['tool']} {params}")
            if args.host == "claude-code":
                print(f"           as Claude Code calls it: {_host_call(config.mapping, call)}")
            print(f"           context {json.dumps(call['context'], ensure_ascii=False)}")
        else:
            worst = max(worst, EXIT_UNKNOWN) if worst != EXIT_REFUTED else worst
            print(f"unknown  {promise.name}: {r.reason}")
    return worst
