"""Strict validation of the Cedar conformance corpus: agreement with ``shouldValidate`` and time.

    python benchmarks/validation_corpus.py [--list] [--cedarpy]

Prints how many of the 7,809 generated corpus tests (and the 22 hand-written ones) cedarlite's
:func:`cedarlite.validate` agrees with, every disagreement (``--list`` shows the policies), and
the time spent: parsing the schemas and policies is timed apart from validating them. With
``--cedarpy`` the same corpus is also validated by cedarpy (the Rust engine) for comparison.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from corpus import ConformanceTest, corpus_tests, handwritten_tests

from cedarlite import PolicySet
from cedarlite.schema import Schema
from cedarlite.schema.validator import Validator


def run(tests: list[ConformanceTest]) -> tuple[list[ConformanceTest], float, float]:
    """The tests whose verdict disagrees, the parse time and the validation time (seconds)."""
    parse_time = check_time = 0.0
    wrong = []
    for test in tests:
        start = time.perf_counter()
        schema = Schema.from_str(test.schema_text)
        policies = PolicySet.from_str(test.policies_text, test.policies_path)
        middle = time.perf_counter()
        passed = Validator(schema).validate(policies).passed
        check_time += time.perf_counter() - middle
        parse_time += middle - start
        if passed != test.should_validate:
            wrong.append(test)
    return wrong, parse_time, check_time


def main(argv: list[str] | None = None) -> int:
    """Run the corpus; the exit code is 1 when agreement is below 99.9%."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="print each disagreeing test")
    parser.add_argument("--cedarpy", action="store_true", help="time cedarpy on the same tests")
    args = parser.parse_args(argv)
    ok = True
    for label, loader in (("hand-written", handwritten_tests), ("corpus", corpus_tests)):
        tests = list(loader())
        wrong, parse_time, check_time = run(tests)
        agree = len(tests) - len(wrong)
        print(
            f"{label}: {agree}/{len(tests)} agree ({100 * agree / len(tests):.2f}%); "
            f"parse {parse_time:.1f} s, validate {check_time:.1f} s"
        )
        for test in wrong:
            print(f"  MISMATCH {test.name}: expected passed={test.should_validate}")
            if args.list:
                print(test.schema_text, test.policies_text, sep="\n")
        ok = ok and agree * 1000 >= len(tests) * 999
        if args.cedarpy:
            print(f"  cedarpy: {time_cedarpy(tests):.1f} s")
    return 0 if ok else 1


def time_cedarpy(tests: list[ConformanceTest]) -> float:
    """Seconds cedarpy takes to validate the same tests (schema parsing included)."""
    import cedarpy

    start = time.perf_counter()
    for test in tests:
        cedarpy.validate_policies(test.policies_text, test.schema_text)
    return time.perf_counter() - start


if __name__ == "__main__":
    sys.exit(main())
