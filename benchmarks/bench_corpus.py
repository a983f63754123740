"""The official Cedar corpus (7,809 tests, 62,472 requests) through cedarlite and cedarpy.

    python benchmarks/bench_corpus.py [--limit N]

Both engines do the same work per test, in the same process: parse the schema, the policies
and the entities (schema-based), validate the policies, decide every request. The script prints
each engine's wall time, their ratio, and cedarlite's agreement with the expected answers.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from corpus import corpus_tests, run_test


def run_cedarlite(tests: list) -> tuple[float, int, int, int]:
    start = time.perf_counter()
    matched = requests = flags = 0
    for test in tests:
        outcome = run_test(test)
        matched += outcome.matched
        requests += outcome.requests
        flags += outcome.validation_agrees
    return time.perf_counter() - start, matched, requests, flags


def run_cedarpy(tests: list) -> tuple[float, int]:
    import cedarpy

    start = time.perf_counter()
    matched = 0
    for test in tests:
        schema = cedarpy.Schema.from_str(test.schema_text)
        policies = cedarpy.PolicySet.from_str(test.policies_text)
        entities = cedarpy.Entities.from_json_str(json.dumps(test.entities_json))
        cedarpy.validate_policies(test.policies_text, schema)
        for req in test.requests:
            request = {k: req[k] for k in ("principal", "action", "resource", "context")}
            result = cedarpy.is_authorized(request, policies, entities, schema)
            matched += str(result.decision).lower().endswith(req["decision"])
    return time.perf_counter() - start, matched


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, help="only the first N tests")
    args = parser.parse_args(argv)
    tests = list(corpus_tests())[: args.limit]
    ours, matched, requests, flags = run_cedarlite(tests)
    print(f"corpus: {len(tests)} tests, {requests} requests")
    print(
        f"  cedarlite  {ours:7.1f} s   requests matching {matched}/{requests}, "
        f"validation flags {flags}/{len(tests)}"
    )
    try:
        theirs, their_matched = run_cedarpy(tests)
    except ImportError:
        print("  cedarpy    (not installed)")
        return 0
    print(f"  cedarpy    {theirs:7.1f} s   decisions matching {their_matched}/{requests}")
    print(f"  ratio      cedarlite takes {ours / theirs:.2f}x cedarpy's time")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
