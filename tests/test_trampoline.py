"""The generator trampoline (cedarlite._trampoline): nested calls near the top, an explicit
stack below, the same results and exceptions either way, any depth."""

from __future__ import annotations

from typing import Any

import pytest

from cedarlite._trampoline import NESTED_LEVELS, Step, run


def countdown(n: int) -> Step[int] | int:
    """``n`` levels of computations, each adding one to its child's result."""
    if n == 0:
        return 0  # a leaf: a result, not a generator
    return _countdown(n)


def _countdown(n: int) -> Step[int]:
    return 1 + (yield countdown(n - 1))


def failing(n: int) -> Step[Any]:
    """``n`` levels whose deepest one raises."""
    if n == 0:
        raise ValueError("bottom")
    yield failing(n - 1)


def catching(n: int, catch_at: int) -> Step[str]:
    """``n`` levels whose deepest one raises; the one ``catch_at`` levels from the top catches
    the error and answers; the levels above pass the answer on."""
    if n == 0:
        raise ValueError("bottom")
    if catch_at == 0:
        try:
            yield catching(n - 1, -1)
        except ValueError as err:
            return f"caught {err}"
        return "not raised"
    return (yield catching(n - 1, catch_at - 1))


@pytest.mark.parametrize("depth", [0, 1, NESTED_LEVELS - 1, NESTED_LEVELS + 1, 100_000])
def test_results_at_any_depth(depth: int) -> None:
    assert run(countdown(depth)) == depth


@pytest.mark.parametrize("depth", [1, NESTED_LEVELS, NESTED_LEVELS + 2, 5_000])
def test_an_exception_reaches_the_caller(depth: int) -> None:
    with pytest.raises(ValueError, match="bottom"):
        run(failing(depth))


@pytest.mark.parametrize(
    "catch_at", [0, NESTED_LEVELS - 1, NESTED_LEVELS, NESTED_LEVELS + 1, 3_000]
)
def test_a_waiting_computation_catches_an_exception(catch_at: int) -> None:
    """Above, across and below the switch from nested calls to the explicit stack."""
    assert run(catching(5_000, catch_at)) == "caught bottom"
