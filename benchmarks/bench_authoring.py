"""Policy-author tools: cedarlite vs cedarpy (the Rust engine) on the same work, one process.

    python benchmarks/bench_authoring.py [--rounds N]

1. translate Cedar text -> JSON policy format (EST): ``PolicySet.from_str(t).to_json()`` +
   ``json.dumps`` vs ``cedarpy.policies_to_json_str(t)``, on the agent-hook policies and on RBAC
   sets of 10 / 100 / 1,000 policies;
2. translate JSON -> Cedar text: ``PolicySet.from_json(j).to_cedar()`` vs
   ``cedarpy.policies_from_json_str(j)``;
3. run the 22 hand-written conformance test files (parse schema, policies and entities,
   validate, decide 74 requests): ``cedarlite.runtests`` vs cedarpy doing the same calls;
4. equivalence proofs (no peer: cedarpy has no equivalence checker): the time per request of
   the exhaustive enumeration and of the sampled search.

The two engines run interleaved, one call each per round, so machine noise hits both alike;
the script prints medians over the rounds and their ratio.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from _cli import at_least  # noqa: E402
from bench_authz import agent_hook_data, rbac_policies  # noqa: E402
from bench_corpus import cedarpy_test  # noqa: E402
from corpus import DATA_ROOT, handwritten_tests  # noqa: E402

import cedarlite  # noqa: E402
from cedarlite import PolicySet  # noqa: E402

try:
    import cedarpy
except ImportError:  # pragma: no cover - the peer is optional
    cedarpy = None


def interleaved(fns: dict[str, Callable[[], Any]], rounds: int) -> dict[str, float]:
    """Median seconds of each function, called in turn once per round."""
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            samples[name].append(time.perf_counter() - t0)
    return {name: statistics.median(s) for name, s in samples.items()}


def row(label: str, medians: dict[str, float]) -> None:
    ours = medians["cedarlite"]
    theirs = medians.get("cedarpy")
    ratio = f"{theirs / ours:.2f}x" if theirs else "-"
    peer = f"{theirs * 1e3:.2f}" if theirs else "-"
    print(f"  {label:<28}{ours * 1e3:14.2f}{peer:>12}{ratio:>10}")


def header(title: str) -> None:
    print(f"\n{title}")
    print(f"  {'input':<28}{'cedarlite ms':>14}{'cedarpy ms':>12}{'speed-up':>10}")


def translation(rounds: int) -> None:
    rng = random.Random(7)
    inputs = {"agent hook (57 policies)": agent_hook_data(1)[0]}
    for n in (10, 100, 1000):
        inputs[f"RBAC, {n} policies"] = rbac_policies(n, rng)[1]
    header("Cedar text -> JSON (EST), median per call")
    for label, text in inputs.items():
        fns: dict[str, Callable[[], Any]] = {
            "cedarlite": lambda t=text: json.dumps(PolicySet.from_str(t).to_json())
        }
        if cedarpy is not None:
            fns["cedarpy"] = lambda t=text: cedarpy.policies_to_json_str(t)
        assert cedarpy is None or json.loads(fns["cedarlite"]()) == json.loads(fns["cedarpy"]())
        row(label, interleaved(fns, rounds))
    header("JSON (EST) -> Cedar text, median per call")
    for label, text in inputs.items():
        doc = json.dumps(PolicySet.from_str(text).to_json())
        fns = {"cedarlite": lambda d=doc: PolicySet.from_json(d).to_cedar()}
        if cedarpy is not None:
            fns["cedarpy"] = lambda d=doc: cedarpy.policies_from_json_str(d)
        row(label, interleaved(fns, rounds))


def conformance(rounds: int) -> None:
    if DATA_ROOT is None:
        print("\nconformance data not found: run-tests skipped")
        return
    from cedarlite.runtests import load_tests, run_tests

    files = sorted((DATA_ROOT / "tests").glob("*/*.json"))
    tests = list(handwritten_tests())

    def ours() -> None:
        report = run_tests(load_tests(f) for f in files)
        assert report.failed == 0

    def theirs() -> None:
        for test in tests:  # the same calls bench_corpus.py makes for the generated corpus
            cedarpy_test(test)

    fns: dict[str, Callable[[], Any]] = {"cedarlite": ours}
    if cedarpy is not None:
        fns["cedarpy"] = theirs
    header("run-tests: 22 conformance files, 74 requests (whole run)")
    row("hand-written tests", interleaved(fns, rounds))


def equivalence(rounds: int) -> None:
    from cedarlite.testing import check_equivalence

    p = PolicySet.from_str
    cases = {
        "De Morgan (exhaustive)": (
            p("permit (principal, action, resource) unless { context.a || context.b };"),
            p("permit (principal, action, resource) when { !context.a && !context.b };"),
            {},
        ),
        "ranges (exhaustive)": (
            p(
                "permit (principal, action, resource) when { context.n >= 18 && "
                'principal.age < 65 && principal in Group::"staff" };'
            ),
            p(
                "permit (principal, action, resource) when { !(context.n < 18) && "
                '!(principal.age >= 65) && principal in Group::"staff" };'
            ),
            {},
        ),
        "like (sampled, 300)": (
            p('permit (principal, action, resource) when { resource.path like "*.md" };'),
            p('permit (principal, action, resource) when { resource.path like "*.md" && true };'),
            {"max_examples": 300},
        ),
    }
    print("\nequivalence (no peer), median per check and per request checked")
    print(f"  {'check':<28}{'ms':>12}{'requests':>10}{'us/request':>12}")
    for label, (a, b, kw) in cases.items():
        times, checked = [], 0
        for _ in range(max(3, rounds // 5)):
            t0 = time.perf_counter()
            result = check_equivalence(a, b, **kw)
            times.append(time.perf_counter() - t0)
            checked = result.checked
            assert result.equivalent
        med = statistics.median(times)
        print(f"  {label:<28}{med * 1e3:12.1f}{checked:>10}{med / checked * 1e6:12.0f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--rounds", type=at_least(1), default=15, help="interleaved rounds (median)"
    )
    args = parser.parse_args(argv)
    print(
        f"cedarlite {cedarlite.__version__}; cedarpy {'absent' if cedarpy is None else 'present'}"
    )
    translation(args.rounds)
    conformance(args.rounds)
    equivalence(args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
