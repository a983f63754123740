"""The official Cedar conformance tests: the 22 hand-written ones and the generated corpus.

Each test is parsed once; its ``shouldValidate`` flag is checked with the strict validator and
its requests (decision, reasons, errors) with the compiled engine (the reference engine too for
the hand-written tests). ``pytest -s`` prints the corpus counts and wall time.
"""

from __future__ import annotations

import time

import pytest
from corpus import DATA_ROOT, corpus_tests, handwritten_tests, run_test

pytestmark = pytest.mark.skipif(DATA_ROOT is None, reason="cedar-conformance data not found")

HANDWRITTEN = list(handwritten_tests()) if DATA_ROOT is not None else []


@pytest.mark.parametrize("test", HANDWRITTEN, ids=[t.name for t in HANDWRITTEN])
@pytest.mark.parametrize("engine", ["compiled", "reference"])
def test_handwritten(test, engine):
    outcome = run_test(test, engine)
    assert outcome.mismatches == []


def test_corpus():
    """>= 99.9% of the 62,472 requests and of the 7,809 validation flags match."""
    start = time.perf_counter()
    tests = requests = matched = flags = 0
    mismatches: list[str] = []
    for test in corpus_tests():
        outcome = run_test(test)
        tests += 1
        requests += outcome.requests
        matched += outcome.matched
        flags += outcome.validation_agrees
        mismatches += outcome.mismatches
    elapsed = time.perf_counter() - start
    print(
        f"\ncorpus: {matched}/{requests} requests match ({100 * matched / requests:.3f}%), "
        f"{flags}/{tests} validation flags agree ({100 * flags / tests:.3f}%), "
        f"in {elapsed:.1f}s"
    )
    for line in mismatches[:20]:
        print("  ", line)
    assert (tests, requests) == (7809, 62472)
    assert matched * 1000 >= requests * 999
    assert flags * 1000 >= tests * 999
