"""Analysis of policy sets: proofs on an SMT solver, and the search for a difference.

* :func:`prove` (needs ``z3-solver``: ``pip install 'cedarlite[prove]'``): equivalence,
  implication, disjointness, always-allows/denies and never-errors, proved for every request
  and entity store a schema allows, or refuted with a checked counterexample;
* :func:`check_equivalence`, :func:`find_difference`, :func:`assert_equivalent`: with a schema
  they prove first; otherwise (or when the proof answers ``None``) they search for a request on
  which two policy sets decide differently (the search's sampling needs Hypothesis).
"""

from .equivalence import (
    Counterexample,
    Equivalence,
    assert_equivalent,
    check_equivalence,
    find_difference,
)
from .prove import PROPERTIES, ProofCounterexample, ProofResult, prove

__all__ = [
    "PROPERTIES",
    "Counterexample",
    "Equivalence",
    "ProofCounterexample",
    "ProofResult",
    "assert_equivalent",
    "check_equivalence",
    "find_difference",
    "prove",
]
