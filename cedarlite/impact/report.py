"""The replay's answer: :class:`ReplayReport`, merged from the partitions in log order.

:class:`ReportBuilder` takes the :class:`~cedarlite.impact.worker.PartitionResult` s in
partition order (the order of the files, and of the blocks within a file), turns line indexes
into 1-based line numbers per file, keeps the first examples of each transition in log order
and bounds every table, so that a report does not depend on which worker ran what, nor on
the scheduler. :meth:`ReplayReport.to_json` is ``summary.json``; :meth:`ReplayReport.render`
the text the command line prints.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .logline import BAD_KINDS
from .worker import OTHER_TOOLS, OUTSIDE_KINDS, PartitionResult, transition

#: Distinct tools kept in a report (the rest are counted under "(other tools)").
REPORT_TOOLS = 10_000
#: Distinct logged policy hashes and rejected-run messages kept in a report.
REPORT_HASHES = 100

SUMMARY_VERSION = 1


@dataclass(frozen=True)
class ReplayReport:
    """What a decision log would have become under a new policy.

    Counts: ``lines`` read; ``compared`` calls decided again and compared (``unchanged`` +
    ``changed``); ``transitions`` the changed calls per ``"old->new"``; ``tools`` per tool:
    ``calls`` compared, ``changed``, one count per transition, ``undecidable`` and
    ``not_compared``; ``responsible`` per transition, tool and policy: the policies that made
    the new decisions (a block without one is shown by its reason, ``(not-offered)``);
    ``undecidable`` calls whose new decision may depend on a redacted value (not compared);
    ``not_compared`` calls whose logged decision was made outside the policy, per kind
    (``loop-detection``, ``hook``, ``guard-failure``); ``rejected_runs`` calls of runs the new
    configuration refuses to start, per error (they count as blocked); ``unreadable`` lines
    per kind, with ``unreadable_samples``; ``read_errors`` partitions whose data could not be
    read to the end; ``internal_errors`` lines the replay itself failed on (a bug: reported,
    never dropped). ``examples`` are the first calls of each transition and of
    ``undecidable``, in log order, with their file and line. ``policy_hash`` identifies the new
    policy (as a guard logs it); ``logged_policies`` counts the lines per logged hash.
    ``elapsed`` and ``workers`` describe the run and are not part of equality.
    """

    files: tuple[str, ...]
    lines: int
    compared: int
    unchanged: int
    changed: int
    transitions: Mapping[str, int]
    tools: Mapping[str, Mapping[str, int]]
    responsible: Mapping[str, Mapping[str, Mapping[str, int]]]
    undecidable: int
    not_compared: Mapping[str, int]
    rejected_runs: Mapping[str, int]
    unreadable: Mapping[str, int]
    unreadable_samples: tuple[Mapping[str, Any], ...]
    read_errors: tuple[Mapping[str, Any], ...]
    internal_errors: int
    internal_samples: tuple[Mapping[str, Any], ...]
    examples: Mapping[str, tuple[Mapping[str, Any], ...]]
    policy_hash: str
    logged_policies: Mapping[str, int]
    catalog: str
    notes: tuple[str, ...]
    elapsed: float = field(default=0.0, compare=False)
    workers: int = field(default=0, compare=False)
    scheduler: str = field(default="", compare=False)

    @property
    def unreadable_lines(self) -> int:
        """All lines that could not be read."""
        return sum(self.unreadable.values())

    @property
    def complete(self) -> bool:
        """Every line was read and replayed (no unreadable line, read error or internal error)."""
        return not (self.unreadable_lines or self.read_errors or self.internal_errors)

    def to_json(self) -> dict[str, Any]:
        """``summary.json``: every count, the samples and the examples."""
        return {
            "version": SUMMARY_VERSION,
            "files": list(self.files),
            "lines": self.lines,
            "compared": self.compared,
            "unchanged": self.unchanged,
            "changed": self.changed,
            "transitions": dict(self.transitions),
            "tools": {k: dict(v) for k, v in self.tools.items()},
            "responsible": {
                t: {tool: dict(p) for tool, p in by_tool.items()}
                for t, by_tool in self.responsible.items()
            },
            "undecidable": self.undecidable,
            "not_compared": dict(self.not_compared),
            "rejected_runs": dict(self.rejected_runs),
            "unreadable": dict(self.unreadable),
            "unreadable_samples": [dict(s) for s in self.unreadable_samples],
            "read_errors": [dict(e) for e in self.read_errors],
            "internal_errors": self.internal_errors,
            "internal_samples": [dict(s) for s in self.internal_samples],
            "examples": {k: [dict(e) for e in v] for k, v in self.examples.items()},
            "policy_hash": self.policy_hash,
            "logged_policies": dict(self.logged_policies),
            "catalog": self.catalog,
            "notes": list(self.notes),
            "elapsed_s": round(self.elapsed, 3),
            "workers": self.workers,
            "scheduler": self.scheduler,
        }

    def render(self, *, examples: bool = True) -> str:
        """The report as text: what was replayed, the table per transition and tool with the
        policies responsible, the per-tool table, what was not compared or not readable, and
        (``examples``) a few calls per transition."""
        out: list[str] = []
        files = _plural(len(self.files), "file")
        out.append(
            f"replayed {self.lines:,} log lines from {files} against the new policy "
            f"{self.policy_hash[:19]}... (tool catalog: {self.catalog})"
        )
        out.extend(f"note: {n}" for n in self.notes)
        out.append("")
        out.append(
            f"{self.compared:,} calls compared: {self.unchanged:,} unchanged, "
            f"{self.changed:,} changed"
            + (f"; {self.undecidable:,} undecidable from the log" if self.undecidable else "")
        )
        if self.changed:
            out.append("")
            rows: list[tuple[str, ...]] = [("transition", "tool", "calls", "new decision by")]
            for t, count in _by_count(self.transitions):
                rows.append((t, "(all tools)", f"{count:,}", ""))
                for tool, policies in _by_total(self.responsible.get(t, {})):
                    calls = self.tools.get(tool, {}).get(t, 0)
                    shown = ", ".join(f"{p} ({n:,})" for p, n in _by_count(policies)[:4])
                    if len(policies) > 4:
                        shown += f", +{len(policies) - 4}"
                    rows.append(("", tool, f"{calls:,}", shown))
            out.extend(_table(rows, right={2}))
        if self.tools:
            out.append("")
            kinds = sorted({k for v in self.tools.values() for k in v if "->" in k})
            header = ("tool", "calls", "changed", *kinds, "undecidable", "not compared")
            rows2: list[tuple[str, ...]] = [header]
            ranked = sorted(self.tools.items(), key=lambda kv: (-kv[1].get("changed", 0), kv[0]))
            for tool, c in ranked[:40]:
                rows2.append(
                    (
                        tool,
                        f"{c.get('calls', 0):,}",
                        f"{c.get('changed', 0):,}",
                        *(f"{c.get(k, 0):,}" for k in kinds),
                        f"{c.get('undecidable', 0):,}",
                        f"{c.get('not_compared', 0):,}",
                    )
                )
            out.extend(_table(rows2, right=set(range(1, len(header)))))
            if len(ranked) > 40:
                out.append(f"... and {len(ranked) - 40:,} more tools (summary.json has them all)")
        if any(self.not_compared.values()):
            parts = ", ".join(f"{k} {v:,}" for k, v in self.not_compared.items() if v)
            out.append("")
            out.append(
                f"not compared: {sum(self.not_compared.values()):,} calls whose logged decision "
                f"was not the policy's ({parts})"
            )
        if self.rejected_runs:
            out.append("")
            out.append("runs the new configuration refuses to start (their calls count as block):")
            for message, count in _by_count(self.rejected_runs):
                out.append(f"  {count:,} calls: {message}")
        if self.unreadable_lines:
            parts = ", ".join(f"{k} {v:,}" for k, v in self.unreadable.items() if v)
            out.append("")
            out.append(f"unreadable lines: {self.unreadable_lines:,} ({parts})")
            for s in self.unreadable_samples:
                col = f":{s['column']}" if s.get("column") else ""
                out.append(f"  {s['file']}:{s['line']}{col}: {s['kind']}: {s['message']}")
        for e in self.read_errors:
            out.append(f"error: {e['file']}: could not read past line {e['line']:,}: {e['error']}")
        if self.internal_errors:
            out.append(f"error: the replay failed on {self.internal_errors:,} lines (a bug):")
            for s in self.internal_samples:
                out.append(f"  {s['file']}:{s['line']}: {s['error']}")
        if examples and self.examples:
            out.append("")
            out.append("examples:")
            for t, items in sorted(self.examples.items()):
                out.append(f"  {t}")
                for e in items:
                    out.append("    " + _example_line(e))
        return "\n".join(out)


def _example_line(e: Mapping[str, Any]) -> str:
    params = json.dumps(e["params"], ensure_ascii=False)
    if len(params) > 120:
        params = params[:117] + "..."
    new = e["new"]
    by = ", ".join(new["policies"]) or new["denied_reason"] or "-"
    text = f"{e['file']}:{e['line']}  {e['tool']} {params}  now {new['decision']} ({by})"
    if e.get("redacted"):
        text += f"; {e['redacted']} {e['why']}"
    elif new.get("reason") and new["decision"] != "allow":
        text += f": {new['reason'][:100]}"
    return text


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def _by_count(counts: Mapping[str, int]) -> list[tuple[str, int]]:
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))


def _by_total(nested: Mapping[str, Mapping[str, int]]) -> list[tuple[str, Mapping[str, int]]]:
    return sorted(nested.items(), key=lambda kv: (-sum(kv[1].values()), kv[0]))


def _table(rows: list[tuple[str, ...]], right: set[int]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for r in rows:
        cells = [
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        ]
        out.append("  ".join(cells).rstrip())
    return out


class ReportBuilder:
    """Merges partition results, in partition order, into a :class:`ReplayReport`."""

    def __init__(self, files: tuple[str, ...], examples: int) -> None:
        self.files = files
        self.examples_per = examples
        self.offsets: Counter[str] = Counter()  # lines seen so far, per file
        self.lines = 0
        self.counts: Counter[tuple[str, str, str]] = Counter()
        self.responsible: Counter[tuple[str, str, str, str]] = Counter()
        self.undecidable: Counter[tuple[str, str, str]] = Counter()
        self.outside: Counter[tuple[str, str]] = Counter()
        self.rejected: Counter[str] = Counter()
        self.unreadable: Counter[str] = Counter()
        self.samples: list[dict[str, Any]] = []
        self.read_errors: list[dict[str, Any]] = []
        self.internal = 0
        self.internal_samples: list[dict[str, Any]] = []
        self.hashes: Counter[str] = Counter()
        self.examples: dict[str, list[dict[str, Any]]] = {}
        self.tools: set[str] = set()

    def line_base(self, result: PartitionResult) -> tuple[str, int]:
        """The file of a partition and the 1-based number of its first line."""
        path = result.path or ""
        return path, self.offsets[path] + 1

    def add(self, result: PartitionResult) -> None:
        """Merge the next partition's result (call in partition order)."""
        path, first = self.line_base(result)
        self.offsets[path] += result.lines
        self.lines += result.lines
        tool = self._tool
        for (t, old, new), n in result.counts.items():
            self.counts[(tool(t), old, new)] += n
        for (t, old, new, policy), n in result.responsible.items():
            self.responsible[(tool(t), old, new, policy)] += n
        for (t, old, new), n in result.undecidable.items():
            self.undecidable[(tool(t), old, new)] += n
        for (t, kind), n in result.outside.items():
            self.outside[(tool(t), kind)] += n
        for message, n in result.rejected.items():
            if message in self.rejected or len(self.rejected) < REPORT_HASHES:
                self.rejected[message] += n
        for h, n in result.hashes.items():
            if h in self.hashes or len(self.hashes) < REPORT_HASHES:
                self.hashes[h] += n
        self.unreadable.update(result.unreadable)
        kept = Counter(s["kind"] for s in self.samples)
        for index, kind, message, column in result.samples:
            if kept[kind] < self.examples_per:
                kept[kind] += 1
                self.samples.append(
                    {"file": path, "line": first + index, "column": column, "kind": kind,
                     "message": message}
                )  # fmt: skip
        if result.read_error is not None:
            self.read_errors.append(
                {"file": path, "line": first + result.lines - 1, "error": result.read_error}
            )
        self.internal += result.internal_errors
        for index, error in result.internal_samples:
            if len(self.internal_samples) < self.examples_per:
                self.internal_samples.append({"file": path, "line": first + index, "error": error})
        for t, items in result.examples.items():
            kept_items = self.examples.setdefault(t, [])
            for item in items:
                if len(kept_items) < self.examples_per:
                    kept_items.append({"file": path, **item, "line": first + item["line"]})

    def _tool(self, name: str) -> str:
        if name not in self.tools:
            if len(self.tools) >= REPORT_TOOLS:
                return OTHER_TOOLS
            self.tools.add(name)
        return name

    def report(self, *, policy_hash: str, catalog: str, notes: tuple[str, ...]) -> ReplayReport:
        """The merged report."""
        transitions: Counter[str] = Counter()
        tools: dict[str, Counter[str]] = {}
        unchanged = 0

        def row_of(tool: str) -> Counter[str]:
            found = tools.get(tool)
            if found is None:
                found = tools[tool] = Counter(calls=0, changed=0, undecidable=0, not_compared=0)
            return found

        for (t, old, new), n in self.counts.items():
            row = row_of(t)
            row["calls"] += n
            if old == new:
                unchanged += n
            else:
                key = transition(old, new)
                transitions[key] += n
                row[key] += n
                row["changed"] += n
        for (t, _, _), n in self.undecidable.items():
            row_of(t)["undecidable"] += n
        for (t, _), n in self.outside.items():
            row_of(t)["not_compared"] += n
        responsible: dict[str, dict[str, dict[str, int]]] = {}
        for (t, old, new, policy), n in self.responsible.items():
            by_tool = responsible.setdefault(transition(old, new), {})
            by_tool.setdefault(t, {})[policy] = by_tool.get(t, {}).get(policy, 0) + n
        not_compared = Counter({k: 0 for k in OUTSIDE_KINDS})
        for (_, kind), n in self.outside.items():
            not_compared[kind] += n
        compared = sum(self.counts.values())
        return ReplayReport(
            files=self.files,
            lines=self.lines,
            compared=compared,
            unchanged=unchanged,
            changed=compared - unchanged,
            transitions=dict(sorted(transitions.items())),
            tools={t: dict(c) for t, c in sorted(tools.items())},
            responsible={
                k: {t: dict(sorted(p.items())) for t, p in sorted(v.items())}
                for k, v in sorted(responsible.items())
            },
            undecidable=sum(self.undecidable.values()),
            not_compared=dict(not_compared),
            rejected_runs=dict(sorted(self.rejected.items())),
            unreadable={k: self.unreadable.get(k, 0) for k in BAD_KINDS},
            unreadable_samples=tuple(self.samples),
            read_errors=tuple(self.read_errors),
            internal_errors=self.internal,
            internal_samples=tuple(self.internal_samples),
            examples={k: tuple(v) for k, v in sorted(self.examples.items())},
            policy_hash=policy_hash,
            logged_policies=dict(sorted(self.hashes.items())),
            catalog=catalog,
            notes=notes,
        )
