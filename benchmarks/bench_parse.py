"""Parsing policy text: cedarlite's fast parser, its LALR parser and cedarpy, one process.

    python benchmarks/bench_parse.py            # the corpus texts, then the hostile shapes
    python benchmarks/bench_parse.py --quick    # fewer texts and rounds (a smoke run)

``parse_policies`` reads valid text with the fast parser (:mod:`cedarlite.lang.parse.fast`) and
hands anything else to the LALR parser (:mod:`cedarlite.lang.parse.lalr`), which every text went
through before. Rows:

* the distinct policy texts of the Cedar corpus: per text, ``parse_policies`` (its cache of
  parsed texts cleared first: a cold parse), the LALR parser alone and
  ``cedarpy.PolicySet.from_str``, interleaved text by text with the order rotating; totals of
  each pass, median over passes;
* long chains and deep nesting (the ``load`` texts of ``bench_hostile.py``): the three
  interleaved in small blocks; medians of the blocks, and cedarlite alone in a tight loop.

The machine is shared and noisy: read the medians and the ratios, not single times.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from bench_hostile import cases
from corpus import corpus_files

from cedarlite.lang.parse import clear_parse_cache, parse_policies
from cedarlite.lang.parse.lalr import parse_lalr


def _fast(text: str) -> Any:
    clear_parse_cache()
    return parse_policies(text)


def _engines() -> dict[str, Callable[[str], Any]]:
    import cedarpy

    return {"cedarlite": _fast, "lalr": parse_lalr, "cedarpy": cedarpy.PolicySet.from_str}


def corpus_rows(texts: list[str], passes: int) -> None:
    """Every text through each engine, rotating the order; the pass totals' medians."""
    engines = _engines()
    names = list(engines)
    totals: dict[str, list[float]] = {name: [] for name in names}
    clock = time.perf_counter
    for _ in range(passes):
        spent = dict.fromkeys(names, 0.0)
        for i, text in enumerate(texts):
            k = i % len(names)
            for name in names[k:] + names[:k]:
                start = clock()
                engines[name](text)
                spent[name] += clock() - start
        for name in names:
            totals[name].append(spent[name])
    peer = statistics.median(totals["cedarpy"])
    print(f"corpus: {len(texts)} distinct policy texts, median of {passes} interleaved passes")
    for name in names:
        mine = statistics.median(totals[name])
        print(f"  {name:<10}{mine:8.2f} s  {mine / peer:6.2f}x cedarpy")


def per_call(fn: Callable[[str], Any], text: str, calls: int) -> float:
    """Milliseconds per call over a block of ``calls``."""
    start = time.perf_counter()
    for _ in range(calls):
        fn(text)
    return (time.perf_counter() - start) * 1000 / calls


def hostile_rows(rounds: int) -> None:
    """Chains and nesting: the engines interleaved block by block; medians in ms."""
    engines = _engines()
    names = list(engines)
    print(f"\nhostile shapes: medians in ms of {rounds} interleaved blocks")
    header = f"{'text':<32}{'cedarlite':>11}{'tight':>9}{'lalr':>9}{'cedarpy':>9}"
    print(header + f"{'vs lalr':>9}{'vs cedarpy':>12}")
    for case in cases():
        if not case.load or case.expect == "error":
            continue
        calls = max(1, min(20, int(20 / max(per_call(_fast, case.text, 1), 0.001))))
        samples: dict[str, list[float]] = {name: [] for name in names}
        for i in range(rounds):
            k = i % len(names)
            for name in names[k:] + names[:k]:
                samples[name].append(per_call(engines[name], case.text, calls))
        tight = statistics.median(per_call(_fast, case.text, calls) for _ in range(rounds))
        m = {name: statistics.median(samples[name]) for name in names}
        print(
            f"{case.name[:31]:<32}{m['cedarlite']:11.2f}{tight:9.2f}{m['lalr']:9.2f}"
            f"{m['cedarpy']:9.2f}{m['cedarlite'] / m['lalr']:8.2f}x"
            f"{m['cedarlite'] / m['cedarpy']:11.2f}x"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer texts and rounds")
    args = parser.parse_args(argv)
    try:
        import cedarpy  # noqa: F401
    except ImportError:
        print("cedarpy is not installed: nothing to compare with")
        return 1
    texts = sorted(
        {data.decode() for name, data in corpus_files().items() if name.endswith(".cedar")}
    )
    if args.quick:
        texts = texts[:300]
    corpus_rows(texts, 1 if args.quick else 3)
    hostile_rows(3 if args.quick else 9)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
