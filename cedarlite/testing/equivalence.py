"""Moved to :mod:`cedarlite.analysis.equivalence`; these names stay importable from here."""

from ..analysis.equivalence import (
    Counterexample,
    Equivalence,
    assert_equivalent,
    check_equivalence,
    find_difference,
)

__all__ = [
    "Counterexample",
    "Equivalence",
    "assert_equivalent",
    "check_equivalence",
    "find_difference",
]
