"""docs/tools-config.md stays true: its tables are the code's data."""

from __future__ import annotations

import re
from pathlib import Path

from cedarlite.tools.catalog import CORE_GROUPS, PROFILES
from cedarlite.tools.lint import RUN_CONTEXT_KEYS

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "tools-config.md").read_text(encoding="utf-8")


def table(heading: str) -> dict[str, list[str]]:
    """The first column (unquoted) → the other cells, of the table under ``heading``."""
    section = DOC.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")][1:]  # no header
    cells = [[c.strip() for c in row.strip("|").split("|")] for row in rows]
    return {c[0].strip("`"): c[1:] for c in cells}


def test_profiles() -> None:
    rows = table("Profiles")
    assert {name: rows[name][0].split(", ") for name in PROFILES} == {
        name: list(tools) for name, tools in PROFILES.items()
    }
    assert set(rows) == {*PROFILES, "full"}


def test_groups() -> None:
    rows = table("Groups")
    assert {g: m[0].split(", ") for g, m in rows.items()} == {
        g: list(m) for g, m in CORE_GROUPS.items()
    }


def test_context_keys() -> None:
    rows = table("The run context")
    assert {k: v[0] for k, v in rows.items()} == RUN_CONTEXT_KEYS


def test_every_lint_code_is_documented() -> None:
    source = (ROOT / "cedarlite" / "tools" / "lint.py").read_text(encoding="utf-8")
    codes = set(re.findall(r'code="([a-z-]+)"', source))
    documented = {c.strip("`") for row in table("Strict and lenient") for c in row.split(", ")}
    assert codes <= documented, codes - documented
