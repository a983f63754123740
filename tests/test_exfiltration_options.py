"""The exfiltration suite, combined short options (issue 23, item 6): every program-running
option that ``exec.no-program-options`` knows holds however the short options are written:
alone, combined with others (``-qo``), quoted, with their value attached. The rule reads
``resource.shortOptions`` (:func:`cedarlite.tools.arguments.short_options`)."""

from __future__ import annotations

import pytest
from test_exfiltration import decide

from cedarlite.tools.arguments import short_options

# (command, the option it hides); each is denied by exec.no-program-options.
COMBINED = [
    ("python -m pytest -qo cache_dir=/tmp/x", "-o"),
    ("python -m pytest -vc /tmp/x.ini", "-c"),
    ("python -m pytest -qqvo cache_dir=/home/u/x tests", "-o"),
    ("python -m pytest -xsc /tmp/evil.ini", "-c"),
    ("python -m pytest -q -ocache_dir=/tmp/x", "-o"),
    ("python -m pytest -qocache_dir=/tmp/x", "-o"),
    ('python -m pytest "-qo" cache_dir=/tmp/x', "-o"),
    ("python -m pytest '-vc' /tmp/x.ini", "-c"),
    ('python -m pytest -q"o" cache_dir=/tmp/x', "-o"),
    ("python -m pytest \\-vc /tmp/x.ini", "-c"),
    ("python -m pytest -vo=cache_dir=/tmp/x", "-o"),
    ("git diff -px sh", "-x"),
    ("git diff --stat -yx sh HEAD", "-x"),
    ("git log -p '-x' sh", "-x"),
    ("git show -Rx sh HEAD", "-x"),
]


@pytest.mark.parametrize(("command", "option"), COMBINED)
def test_combined_short_options_are_program_options(command: str, option: str) -> None:
    assert option in short_options(command)
    decision = decide("exec", {"command": command})
    assert not decision.allowed
    assert "exec.no-program-options" in decision.policies, decision.policies


@pytest.mark.parametrize(
    "command",
    [
        "python -m pytest -q",
        "python -m pytest -vv -x tests/test_loops.py",
        "python -m pytest -qx --tb=short -k slow_calls",
        "git log -p --stat -5",
        "git diff -w HEAD~1 -- src/config.py",
    ],
)
def test_ordinary_short_options_stay_allowed(command: str) -> None:
    assert decide("exec", {"command": command}).allowed


def test_a_call_cannot_say_its_own_short_options() -> None:
    """``shortOptions`` is derived from the command: an argument of that name is ignored."""
    params = {"command": "python -m pytest -qo cache_dir=/tmp/x", "shortOptions": []}
    decision = decide("exec", params)
    assert not decision.allowed


def test_short_options_read_shell_words_in_linear_time() -> None:
    assert set(short_options("ls -la --color=auto - -- x-y")) == {"-l", "-a"}
    assert set(short_options("a " * 100_000 + "-" + "z" * 100_000)) == {"-z"}
