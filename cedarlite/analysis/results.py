"""What an equivalence check reports: :class:`Counterexample` and :class:`Equivalence`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..authorizer import Decision, Response
from ..data.values import EntityUID, to_cedar
from ..errors import CedarliteError

__all__ = ["Counterexample", "Equivalence"]


@dataclass(frozen=True)
class Counterexample:
    """A request on which two policy sets decide differently.

    ``request`` is a cedarpy-style request dict (uids as ``{"type", "id"}``, ``context`` as
    Cedar JSON), ``entities`` Cedar entity JSON; ``first`` and ``second`` are the two sets'
    :class:`~cedarlite.Response` (decision, determining policies, errors).
    """

    request: dict[str, Any]
    entities: list[dict[str, Any]]
    first: Response
    second: Response
    #: How reports name each set's policies (``@id``), by policy id.
    labels: tuple[Mapping[str, str], Mapping[str, str]] = field(
        default=({}, {}), compare=False, repr=False
    )

    @property
    def decisions(self) -> tuple[Decision, Decision]:
        """The two decisions (they differ)."""
        return self.first.decision, self.second.decision

    def render(self, names: tuple[str, str] = ("first", "second")) -> str:
        """A readable account: the request, its entities, both decisions and their policies."""
        req = self.request
        uid = lambda key: str(EntityUID(req[key]["type"], req[key]["id"]))  # noqa: E731
        lines = [
            "the policy sets decide differently:",
            f"  request:  principal {uid('principal')}, action {uid('action')}, "
            f"resource {uid('resource')}",
        ]
        if req.get("context"):
            lines.append(f"  context:  {cedar_json(req['context'])}")
        # The request's own entities (a given store can be large: the others are counted).
        own = {uid(k) for k in ("principal", "action", "resource")}
        shown = [e for e in self.entities if len(self.entities) <= 8 or _uid_text(e) in own]
        for i, ent in enumerate(shown):
            lines.append(("  entities: " if i == 0 else "            ") + _entity_text(ent))
        if len(shown) < len(self.entities):
            more = len(self.entities) - len(shown)
            lines.append(f"            (and {more} other entities of the store)")
        width = max(len(n) for n in names)
        for name, resp, labels in zip(names, (self.first, self.second), self.labels, strict=True):
            lines.append(f"  {name + ':':<{width + 1}} {_response_text(resp, labels)}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.render()


@dataclass(frozen=True)
class Equivalence:
    """What an equivalence check found, and how much it checked.

    ``counterexample`` is ``None`` when no difference was found among the ``checked`` distinct
    requests. ``exhaustive`` is true only when those were every class of inputs, or when the
    solver proved the sets equivalent (``proved``); then the sets are equivalent, under a
    schema's typing when one was given. Otherwise ``why_not`` says what kept the search from
    being exhaustive. ``proof`` is what the solver said, when it was asked (with a schema).
    """

    counterexample: Counterexample | None
    checked: int
    exhaustive: bool
    why_not: str = ""
    proved: bool = False
    proof: str = ""

    @property
    def equivalent(self) -> bool:
        """No difference was found (proved only if :attr:`exhaustive`)."""
        return self.counterexample is None

    def summary(self) -> str:
        """One line: ``proved equivalent (...)``, ``counterexample (...)``, ``equivalent
        (exhaustive over N requests)`` or ``[not proved: why; ]no difference found in N
        requests searched (not exhaustive: ...)``."""
        if self.proved:
            return "proved equivalent (for every request and entity store the schema allows)"
        if self.counterexample is not None:
            if self.proof.startswith("refuted"):
                return "counterexample (found by the solver, checked by re-evaluation)"
            return f"counterexample (found after {self.checked} requests)"
        prefix = f"{self.proof}; " if self.proof else ""
        if self.exhaustive:
            return f"{prefix}equivalent (exhaustive over {self.checked} requests)"
        return (
            f"{prefix}no difference found in {self.checked} requests searched "
            f"(not exhaustive: {self.why_not})"
        )


def cedar_json(obj: Any) -> str:
    from ..data.jsonvalue import value_from_json

    try:
        return to_cedar(value_from_json(obj, "value"))
    except CedarliteError:  # pragma: no cover - built by us, always valid
        return repr(obj)


def _uid_text(ent: Mapping[str, Any]) -> str:
    return str(EntityUID(ent["uid"]["type"], ent["uid"]["id"]))


def _entity_text(ent: Mapping[str, Any]) -> str:
    text = _uid_text(ent)
    if ent.get("attrs"):
        text += f" {cedar_json(ent['attrs'])}"
    if ent.get("tags"):
        text += f" tags {cedar_json(ent['tags'])}"
    if ent.get("parents"):
        text += (
            " in [" + ", ".join(str(EntityUID(p["type"], p["id"])) for p in ent["parents"]) + "]"
        )
    return text


def _response_text(resp: Response, labels: Mapping[str, str]) -> str:
    text = resp.decision.value.upper()
    if resp.reasons:
        text += " by " + ", ".join(labels.get(r, r) for r in resp.reasons)
    elif resp.decision is Decision.DENY:
        text += " (no permit applies)"
    if resp.errors:
        text += "; errors: " + "; ".join(
            f"{labels.get(e.policy_id, e.policy_id)}: {e.message}" for e in resp.errors
        )
    return text
