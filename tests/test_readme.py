"""The README's contract: its first block holds the project's two commands, and its Python
quickstarts run. tests/test_packaging.py also runs this file against the installed wheel; the
rules for every block and link of README.md and docs/ are in tests/test_doc_blocks.py."""

from __future__ import annotations

import pytest
from test_doc_blocks import ROOT, first_block_commands, run_python_page


def test_first_block_has_exactly_the_two_commands() -> None:
    first_block_commands()


def test_python_examples_run(monkeypatch: pytest.MonkeyPatch) -> None:
    assert run_python_page(ROOT / "README.md", monkeypatch) >= 1


def test_the_readme_stays_a_front_door() -> None:
    """Reference lives in docs/: the README fits in about 250 lines."""
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 250
