"""The benchmark scripts still run: each one's ``--help`` imports everything it uses.

Benchmarks are not run by the test suite (performance is measured, never asserted), but a
script broken by a change elsewhere (a renamed helper, a moved module) should fail here, not
weeks later when someone measures.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = sorted(
    p
    for p in (Path(__file__).resolve().parent.parent / "benchmarks").glob("*.py")
    if not p.name.startswith("_")  # helper modules, not scripts
)


@pytest.mark.parametrize("script", BENCHMARKS, ids=lambda p: p.name)
def test_benchmark_script_imports_and_parses_its_options(script: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(script), "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=script.parent,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage:" in done.stdout
