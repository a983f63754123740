"""Adversarial inputs: cedarlite next to cedarpy (the Rust engine) on the same work, one process.

    python benchmarks/bench_hostile.py            # every case
    python benchmarks/bench_hostile.py --quick    # fewer rounds (a smoke run)

Each case is something a hostile tool argument, request or policy file can do: ``like``
patterns with several wildcards on inputs that almost match, long chains of one operator,
deep nesting, deep and huge contexts, huge literals. Both engines get the same Python inputs
and their pre-parsed handles (``decide`` rows) or the same text (``load`` rows: parse, and for
cedarlite compile); they are run in small interleaved blocks, engine order alternating, and
every answer is checked to agree before anything is timed.

The goal (issue #8) is every case within 10x cedarpy's median and under 50 ms. The machine is
shared and noisy: read the medians and the ratios, not single times. A ``tight loop`` column
gives cedarlite's median when called back to back without the peer in between.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import cedarlite
from cedarlite.authorizer import make_request
from cedarlite.engine.compiler import compiled
from cedarlite.engine.compiler.runtime import make_factory, make_leaf_factory
from cedarlite.lang.parse import clear_parse_cache

try:
    import cedarpy
except ImportError:  # pragma: no cover - the peer is optional
    cedarpy = None

GOAL_RATIO = 10.0
GOAL_MS = 50.0
REQUEST = {"principal": 'User::"alice"', "action": 'Action::"read"', "resource": 'Doc::"d"'}


def when(body: str) -> str:
    """One policy permitting when ``body`` holds."""
    return f"permit(principal, action, resource) when {{ {body} }};"


def nest(opening: str, leaf: str, closing: str, levels: int) -> str:
    return opening * levels + leaf + closing * levels


@dataclass
class Case:
    """One adversarial input: a policy text and a request context, decided or loaded."""

    name: str
    text: str
    context: Any
    expect: str  # "Allow", "Deny" or "error" (refused input)
    load: bool = False  # time parsing (+ compiling) the text instead of deciding


def cases() -> list[Case]:
    """The adversarial cases (the issue's and more)."""
    heredoc = "cat > notes.md <<EOF\n" + "curl is mentioned, and sh too\n" * 7000 + "EOF"
    almost = "a" * 1_000_000
    pattern = when('context.s like "*a*a*a*b"')
    out = [
        Case("like *a*a*a*b, 500 chars", pattern, {"s": "a" * 500}, "Deny"),
        Case("like *a*a*a*b, 2,000 chars", pattern, {"s": "a" * 2000}, "Deny"),
        Case("like *a*a*a*b, 1 MB", pattern, {"s": almost}, "Deny"),
        Case("like *curl *|*sh*, 200 KB heredoc", when('context.s like "*curl *|*sh*"'),
             {"s": heredoc}, "Deny"),
        Case("like with 100 wildcards, 1 MB", when('context.s like "' + "*a" * 100 + '*b"'),
             {"s": almost}, "Deny"),
        Case("like *ab*, 1 MB (substring)", when('context.s like "*ab*"'), {"s": almost}, "Deny"),
    ]  # fmt: skip
    chains = {
        "||": " || ".join(f"context.x == {i}" for i in range(1000)),
        "&&": " && ".join("context.x == 999" for _ in range(1000)),
        "+": " + ".join(["context.x"] * 1000) + " == 999000",
        ".contains ||": " || ".join(f'["c{i}", "d{i}"].contains(context.s)' for i in range(1000)),
    }
    for op, body in chains.items():
        out.append(Case(f"1,000-term {op} chain", when(body), {"x": 999, "s": "d999"}, "Allow"))
        out.append(Case(f"1,000-term {op} chain", when(body), {"x": 999, "s": "d999"}, "Allow",
                        load=True))  # fmt: skip
    nested = {
        "500 nested if": "if context.t then " * 500 + "true" + " else false" * 500,
        "500 nested !( )": nest("!(", "context.t", ")", 500),
        "500 nested sets ==": nest("[", "context.x", "]", 500) + " == "
        + nest("[", "999", "]", 500),
        "500 nested records ==": nest("{a: ", "context.x", "}", 500) + " == "
        + nest("{a: ", "999", "}", 500),
    }  # fmt: skip
    for name, body in nested.items():
        out.append(Case(name, when(body), {"t": True, "x": 999}, "Allow"))
        out.append(Case(name, when(body), {"t": True, "x": 999}, "Allow", load=True))
    deep: Any = 1
    for _ in range(120):
        deep = {"a": deep}
    out += [
        Case("context nested 120 deep", when("context has d"), {"d": deep}, "Allow"),
        Case("context: 100,000-element set", when("context.s.contains(99999)"),
             {"s": list(range(100_000))}, "Allow"),
        Case("context: 1 MB string ==", when(f'context.s == "{"a" * 1000}"'), {"s": almost},
             "Deny"),
        Case("1 MB string literal", when(f'context.s == "{almost}"'), {"s": "a"}, "Deny",
             load=True),
        Case("integer literal of 5,000 digits", when("1" * 5000 + " == 1"), {}, "error",
             load=True),
        Case('decimal("<5,000 digits>.0")', when('decimal(context.d) == decimal("1.0")'),
             {"d": "1" * 5000 + ".0"}, "Deny"),
    ]  # fmt: skip
    return out


# ---------------------------------------------------------------------------------------------
# Running both engines


def cedarlite_runner(case: Case) -> Callable[[], str]:
    if case.load:

        def load() -> str:
            make_factory.cache_clear()  # cold: no code compiled by an earlier load
            make_leaf_factory.cache_clear()
            clear_parse_cache()  # nor policies parsed by an earlier load
            try:
                ps = cedarlite.PolicySet.from_str(case.text)
                compiled(ps)
            except cedarlite.CedarliteError:
                return "error"
            return "loaded"

        return load
    ps = cedarlite.PolicySet.from_str(case.text)
    index, entities = compiled(ps), cedarlite.Entities()
    request = {**REQUEST, "context": case.context}
    return lambda: index.authorize(make_request(request), entities).decision.value


def cedarpy_runner(case: Case) -> Callable[[], str]:
    if case.load:

        def load() -> str:
            try:
                cedarpy.PolicySet.from_str(case.text)
            except ValueError:
                return "error"
            return "loaded"

        return load
    ps, entities = cedarpy.PolicySet.from_str(case.text), cedarpy.Entities.from_json_str("[]")
    request = {**REQUEST, "context": case.context}
    return lambda: str(cedarpy.is_authorized(request, ps, entities).decision.value)


def per_call(fn: Callable[[], str], calls: int) -> float:
    """Milliseconds per call over a block of ``calls``."""
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) * 1000 / calls


def measure(case: Case, rounds: int) -> dict[str, float]:
    """Medians in milliseconds: both engines interleaved block by block, then a tight loop."""
    ours = cedarlite_runner(case)
    theirs = cedarpy_runner(case) if cedarpy is not None else None
    want = "loaded" if case.load and case.expect != "error" else case.expect
    got = ours()
    if got != want:
        raise SystemExit(f"{case.name}: cedarlite answered {got}, expected {want}")
    if theirs is not None and (peer := theirs()) != got:
        raise SystemExit(f"{case.name}: cedarpy answered {peer}, cedarlite {got}: not comparable")
    once = per_call(ours, 1)
    calls = max(1, min(50, int(20 / max(once, 0.001))))  # blocks of about 20 ms
    mine: list[float] = []
    peer_times: list[float] = []
    for i in range(rounds):
        order = (
            [(ours, mine), (theirs, peer_times)]
            if i % 2 == 0
            else [(theirs, peer_times), (ours, mine)]
        )
        for fn, samples in order:
            if fn is not None:
                samples.append(per_call(fn, calls))
    tight = [per_call(ours, calls) for _ in range(rounds)]
    out = {"cedarlite": statistics.median(mine), "tight": statistics.median(tight)}
    if peer_times:
        out["cedarpy"] = statistics.median(peer_times)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (smoke run)")
    args = parser.parse_args(argv)
    rounds = 5 if args.quick else 15
    print(
        f"python {sys.version.split()[0]}, cedarlite {cedarlite.__version__}, "
        f"cedarpy {'absent' if cedarpy is None else 'present'}; medians in ms of {rounds} "
        "interleaved blocks"
    )
    header = (
        f"{'case':<44}{'what':>7}{'cedarlite':>11}{'tight':>9}{'cedarpy':>10}{'ratio':>8}  goal"
    )
    print(header)
    print("-" * len(header))
    met = total = 0
    for case in cases():
        m = measure(case, rounds)
        peer = m.get("cedarpy")
        ratio = m["cedarlite"] / peer if peer else float("nan")
        ok = m["cedarlite"] < GOAL_MS and (peer is None or ratio <= GOAL_RATIO)
        met, total = met + ok, total + 1
        what = "load" if case.load else "decide"
        peer_text = f"{peer:10.2f}" if peer is not None else f"{'—':>10}"
        print(
            f"{case.name:<44}{what:>7}{m['cedarlite']:11.2f}{m['tight']:9.2f}{peer_text}"
            f"{ratio:7.1f}x  {'yes' if ok else 'NO'}"
        )
    print(f"\n{met}/{total} cases within {GOAL_RATIO:.0f}x cedarpy and under {GOAL_MS:.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
