"""The README stays true: its Python examples run, and its results are what they say."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```python\n(.*?)```", README, re.S)


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_python_examples_run(code, monkeypatch):
    monkeypatch.chdir(ROOT)  # the examples use repository paths (policies/...)
    exec(compile(code, "README.md", "exec"), {"__name__": "readme"})


def test_commented_results_hold(monkeypatch):
    """The values shown in comments (`x  # value`) are the real ones."""
    monkeypatch.chdir(ROOT)
    namespace: dict = {}
    for code in BLOCKS:
        exec(compile(code, "README.md", "exec"), namespace)
    checks = {
        "resp.allowed": True,
        "resp.reasons": ("policy0",),
        "res.allowed": ["read", "exec", "github__create_issue"],
        "res.removed": {"browser": "tools.profile", "cron": "agents.coder.tools.deny"},
        "(findings[0].path, findings[0].help)": ("tools.denny", "did you mean `deny`?"),
        "shipped.example_names()": ("coding-agent",),
        "shipped.example('coding-agent')['calls'][0]['tool']": "exec",
        "shipped.policy_names()[:4]": ("exec-commands", "owner-only", "paths", "profile-coding"),
    }
    for expr, expected in checks.items():
        assert eval(expr, namespace) == expected, expr
    assert f"# {checks['res.allowed']!r}".replace('"', "'") in README


def test_first_block_has_exactly_the_two_commands():
    first = re.search(r"```bash\n(.*?)```", README, re.S)
    assert first is not None
    commands = [line for line in first.group(1).splitlines() if line and not line.startswith("#")]
    assert len(commands) == 2
    assert "python3 -m pytest" in commands[1]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert commands[1] in ci
    assert os.access(ROOT / ".ci" / "run", os.X_OK)
