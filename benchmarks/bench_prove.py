"""Proofs on z3: how long `prove("equivalent", ...)` takes on a policy set and its rewrite.

    python benchmarks/bench_prove.py [--rounds N] [--sizes 10,100,1000] [--promises]

1. equivalence of an RBAC-and-attributes policy set of 10 / 100 / 1,000 policies and its
   rewrite (each condition restated: `a >= n` as `!(a < n)`, `&&` operands swapped, `when` as
   `unless !`), proved for every request and entity store the schema allows;
2. with ``--promises``: the shipped agent rules' promises (``policies/promises.cedar``) against
   the coding-agent example's guard, one proof per promise, 60 s each.

No peer runs in Python (cedarpy has no symbolic analysis; SymCC is a Rust crate on cvc5), so
the script prints medians over the rounds and the time per policy.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _cli import at_least  # noqa: E402

from cedarlite import PolicySet  # noqa: E402
from cedarlite.analysis import prove  # noqa: E402
from cedarlite.schema import Schema  # noqa: E402

SCHEMA = """
entity Team;
entity User in [Team] = { level: Long, dept: String, roles: Set<String> };
entity Doc = { owner: User, classification: Long, tags: Set<String> };
action view, edit, share appliesTo {
  principal: User, resource: Doc, context: { hour: Long, mfa: Bool }
};
"""
ACTIONS = ("view", "edit", "share")


def policy_pair(n: int) -> tuple[str, str]:
    """``n`` policies and the same policies restated."""
    first, second = [], []
    for i in range(n):
        action = ACTIONS[i % 3]
        team = f'Team::"t{i % 17}"'
        level = i % 10
        role = f"r{i % 23}"
        effect = "forbid" if i % 7 == 0 else "permit"
        head = f'{effect} (principal in {team}, action == Action::"{action}", resource)'
        first.append(
            f"{head} when {{ principal.level >= {level} && "
            f'principal.roles.contains("{role}") && context.hour < {8 + i % 12} }};'
        )
        second.append(
            f"{head} unless {{ !(context.hour < {8 + i % 12} && "
            f'principal.roles.contains("{role}") && !(principal.level < {level})) }};'
        )
    return "\n".join(first), "\n".join(second)


def bench_sizes(sizes: list[int], rounds: int, schema: Schema) -> None:
    print(f"equivalence of a policy set and its rewrite (median of {rounds} rounds)")
    print(f"  {'policies':>8}  {'median s':>9}  {'ms/policy':>9}  answer")
    for n in sizes:
        a, b = PolicySet.from_str(policy_pair(n)[0]), PolicySet.from_str(policy_pair(n)[1])
        times, answer = [], None
        for _ in range(rounds):
            start = time.perf_counter()
            r = prove("equivalent", a, b, schema=schema, timeout=600)
            times.append(time.perf_counter() - start)
            answer = r.holds
        med = statistics.median(times)
        print(f"  {n:>8}  {med:>9.3f}  {1000 * med / n:>9.2f}  holds={answer}")


def bench_promises(rounds: int) -> None:
    import json

    from cedarlite.analysis.promises import prove_promises
    from cedarlite.shipped import resolve
    from cedarlite.tools import ToolPolicy

    never = PolicySet.from_file(HERE.parent / "policies" / "promises.cedar")
    example = json.loads((HERE.parent / "examples" / "coding-agent.json").read_text("utf-8"))
    policy = ToolPolicy(example["config"], example["tools"])
    rules = [resolve("cedarlite:paths"), resolve("cedarlite:exec-commands")]
    print(f"the shipped rules' promises (coding-agent example; median of {rounds} rounds)")
    samples: dict[str, list[float]] = {}
    answers: dict[str, object] = {}
    for _ in range(rounds):
        for p in never.active:
            one = PolicySet([p])
            start = time.perf_counter()
            [promise] = prove_promises(policy, rules, one, timeout=60)
            samples.setdefault(promise.name, []).append(time.perf_counter() - start)
            answers[promise.name] = promise.result.holds
    for name, times in samples.items():
        print(f"  {name:<32} {statistics.median(times):>8.2f} s  holds={answers[name]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=at_least(1), default=3)
    parser.add_argument("--sizes", default="10,100,1000")
    parser.add_argument("--promises", action="store_true", help="also the shipped promises")
    args = parser.parse_args()
    schema = Schema.from_str(SCHEMA)
    bench_sizes([int(s) for s in args.sizes.split(",")], args.rounds, schema)
    if args.promises:
        bench_promises(args.rounds)


if __name__ == "__main__":
    main()
