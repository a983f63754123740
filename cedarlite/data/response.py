"""The answer to a request: a :class:`Response` record, never a bare bool, made by both
engines (deny-overrides: :func:`cedarlite.engine.evaluator.decide`, and the compiled engine's same
rule on bitsets). It fails closed: no satisfied permit (an empty policy set included) means
Deny; a policy that errors is skipped and reported, whatever its effect.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any


class Decision(Enum):
    """The answer to a request."""

    ALLOW = "Allow"
    DENY = "Deny"


@dataclass(frozen=True, slots=True)
class PolicyError:
    """A policy that failed to evaluate for a request (and was therefore skipped)."""

    policy_id: str
    message: str

    def __str__(self) -> str:
        return f"error while evaluating policy `{self.policy_id}`: {self.message}"


@dataclass(frozen=True, slots=True)
class Response:
    """The decision with the determining policies (``reasons``) and the policies that errored.

    On Allow, ``reasons`` are the satisfied permits; on Deny, the satisfied forbids (empty when
    the deny is only due to no permit applying).
    """

    decision: Decision
    reasons: tuple[str, ...] = ()
    errors: tuple[PolicyError, ...] = ()

    @property
    def allowed(self) -> bool:
        """``decision is Decision.ALLOW``."""
        return self.decision is Decision.ALLOW

    def to_json(self) -> dict[str, Any]:
        """``{"decision", "diagnostics": {"reason", "errors"}}`` as Cedar's CLI prints it."""
        return {
            "decision": self.decision.value,
            "diagnostics": {
                "reason": list(self.reasons),
                "errors": [{"policyId": e.policy_id, "error": e.message} for e in self.errors],
            },
        }
