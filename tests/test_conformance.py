"""The official Cedar conformance tests: hand-written and the generated corpus."""

from __future__ import annotations

import time

import pytest

from corpus import DATA_ROOT, corpus_tests, handwritten_tests, run_authorization

pytestmark = pytest.mark.skipif(DATA_ROOT is None, reason="cedar-conformance data not found")

HANDWRITTEN = list(handwritten_tests()) if DATA_ROOT is not None else []


@pytest.mark.parametrize("test", HANDWRITTEN, ids=[t.name for t in HANDWRITTEN])
@pytest.mark.parametrize("engine", ["compiled", "reference"])
def test_handwritten(test, engine):
    outcome = run_authorization(test, engine)
    assert outcome.mismatches == []


def test_corpus_authorization():
    """>= 99.9% of the 62,472 corpus requests match decision, reasons and errors."""
    start = time.perf_counter()
    requests = matched = 0
    mismatches: list[str] = []
    for test in corpus_tests():
        outcome = run_authorization(test)
        requests += outcome.requests
        matched += outcome.matched
        mismatches += outcome.mismatches
    elapsed = time.perf_counter() - start
    print(
        f"\ncorpus authorization: {matched}/{requests} requests match "
        f"({100 * matched / requests:.3f}%) in {elapsed:.1f}s"
    )
    for line in mismatches[:20]:
        print("  ", line)
    assert requests == 62472
    assert matched / requests >= 0.999
