"""The official Cedar corpus (7,809 tests, 62,472 requests) through cedarlite and cedarpy.

    python benchmarks/bench_corpus.py [--limit N]          # whole tests, engines alternated
    python benchmarks/bench_corpus.py --stages [--limit N] # the same, stage by stage
    python benchmarks/bench_corpus.py --parse-cache        # texts seen before not parsed again

Both engines do the same work per test, in the same process: parse the schema, the policies
and the entities (schema-based), validate the policies, decide every request. The engines
alternate test by test (which one goes first alternates too), so a change in the load of a
shared machine weighs on both alike. The script prints each engine's wall time, their ratio,
and cedarlite's agreement with the expected answers; ``--stages`` alternates the engines at
every stage of every test and prints each stage's time and ratio (where the time goes).
The corpus has 3,083 distinct policy texts among its 7,809 tests; cedarlite keeps the parse of
recent texts (:data:`cedarlite.lang.parse.PARSE_CACHE_CHARS`). The script clears that cache before
every test, so that cedarlite parses every text as cedarpy does; ``--parse-cache`` keeps it
(what a process loading the same texts again gets).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from _cli import at_least
from corpus import ConformanceTest, corpus_tests, run_test

STAGES = ("schema", "policies", "entities", "validate", "requests")


def cedarpy_test(test: ConformanceTest) -> int:
    """cedarpy's work on one test (as :func:`corpus.run_test` does cedarlite's); returns the
    number of decisions matching the expected ones."""
    import cedarpy

    schema = cedarpy.Schema.from_str(test.schema_text)
    policies = cedarpy.PolicySet.from_str(test.policies_text)
    entities = cedarpy.Entities.from_json_str(json.dumps(test.entities_json))
    cedarpy.validate_policies(test.policies_text, schema)
    matched = 0
    for req in test.requests:
        request = {k: req[k] for k in ("principal", "action", "resource", "context")}
        result = cedarpy.is_authorized(request, policies, entities, schema)
        matched += str(result.decision).lower().endswith(req["decision"])
    return matched


def whole_tests(tests: list[ConformanceTest], parse_cache: bool = False) -> None:
    """Each test through both engines, alternating; totals and agreement."""
    from cedarlite.lang.parse import clear_parse_cache

    ours = theirs = 0.0
    matched = their_matched = requests = flags = 0
    clock = time.perf_counter
    for i, test in enumerate(tests):
        for engine in ("cedarlite", "cedarpy") if i % 2 else ("cedarpy", "cedarlite"):
            if engine == "cedarlite" and not parse_cache:
                clear_parse_cache()
            start = clock()
            if engine == "cedarlite":
                outcome = run_test(test)
                ours += clock() - start
                matched += outcome.matched
                requests += outcome.requests
                flags += outcome.validation_agrees
            else:
                their_matched += cedarpy_test(test)
                theirs += clock() - start
    print(f"corpus: {len(tests)} tests, {requests} requests (engines alternated test by test)")
    print(
        f"  cedarlite  {ours:7.2f} s   requests matching {matched}/{requests}, "
        f"validation flags {flags}/{len(tests)}"
    )
    print(f"  cedarpy    {theirs:7.2f} s   decisions matching {their_matched}/{requests}")
    print(f"  ratio      cedarlite takes {ours / theirs:.2f}x cedarpy's time")


def stage_by_stage(tests: list[ConformanceTest], parse_cache: bool = False) -> None:
    """Each stage of each test through both engines, alternating; time per stage."""
    import cedarpy

    import cedarlite
    from cedarlite.lang.parse import clear_parse_cache
    from cedarlite.schema import Schema

    def entities_ours(data: Any, schema: Schema) -> cedarlite.Entities:
        return cedarlite.Entities.from_json(data, schema=schema)

    def entities_theirs(data: Any) -> Any:
        return cedarpy.Entities.from_json_str(json.dumps(data))

    ours = dict.fromkeys(STAGES, 0.0)
    theirs = dict.fromkeys(STAGES, 0.0)
    clock = time.perf_counter

    def timed(totals: dict[str, float], stage: str, fn: Callable[..., Any], *args: Any) -> Any:
        start = clock()
        try:
            return fn(*args)
        finally:
            totals[stage] += clock() - start

    def decide_ours(req: dict[str, Any], ps: Any, ents: Any, schema: Any) -> None:
        try:
            validate = req.get("validateRequest", True)
            cedarlite.is_authorized(req, ps, ents, schema=schema, validate=validate)
        except cedarlite.CedarliteError:
            pass  # (a request the corpus expects to be refused)

    for test in tests:
        try:
            schema = timed(ours, "schema", Schema.from_str, test.schema_text, test.schema_path)
            c_schema = timed(theirs, "schema", cedarpy.Schema.from_str, test.schema_text)
            if not parse_cache:
                clear_parse_cache()
            ps = timed(ours, "policies", cedarlite.PolicySet.from_str, test.policies_text)
            c_ps = timed(theirs, "policies", cedarpy.PolicySet.from_str, test.policies_text)
            ents = timed(ours, "entities", entities_ours, test.entities_json, schema)
            c_ents = timed(theirs, "entities", entities_theirs, test.entities_json)
        except (cedarlite.CedarliteError, ValueError):
            continue  # a test whose inputs one engine refuses (none in today's corpus)
        timed(ours, "validate", cedarlite.validate, ps, schema)
        timed(theirs, "validate", cedarpy.validate_policies, test.policies_text, c_schema)
        for req in test.requests:
            timed(ours, "requests", decide_ours, req, ps, ents, schema)
            request = {k: req[k] for k in ("principal", "action", "resource", "context")}
            timed(theirs, "requests", cedarpy.is_authorized, request, c_ps, c_ents, c_schema)
    cold = "" if parse_cache else ", cedarlite's parse cache cleared before each test"
    print(f"corpus: {len(tests)} tests, stage by stage (engines alternated at every stage{cold})")
    print(f"  {'stage':<10}{'cedarlite s':>13}{'cedarpy s':>11}{'ratio':>8}")
    for stage in (*STAGES, "total"):
        a = sum(ours.values()) if stage == "total" else ours[stage]
        b = sum(theirs.values()) if stage == "total" else theirs[stage]
        print(f"  {stage:<10}{a:>13.2f}{b:>11.2f}{a / b:>7.2f}x")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=at_least(1), help="only the first N tests")
    parser.add_argument("--stages", action="store_true", help="time each stage apart")
    parser.add_argument(
        "--parse-cache",
        action="store_true",
        help="keep cedarlite's parse cache between tests (cleared before each test by default)",
    )
    args = parser.parse_args(argv)
    tests = list(corpus_tests())[: args.limit]
    try:
        import cedarpy  # noqa: F401
    except ImportError:
        print("cedarpy is not installed: nothing to compare with")
        return 1
    if args.stages:
        stage_by_stage(tests, parse_cache=args.parse_cache)
    else:
        whole_tests(tests, parse_cache=args.parse_cache)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
