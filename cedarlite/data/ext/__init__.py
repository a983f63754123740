"""Cedar's four extension types and the registry of their functions.

The registry is the single source of truth for the parser (which names exist, function or
method style), the evaluator (``ExtFunction.call``) and the validator (``params``/``returns``).

| Cedar type | class                               | constructor | methods                        |
|------------|-------------------------------------|-------------|--------------------------------|
| decimal    | :class:`~.decimal.Decimal`          | ``decimal`` | ``lessThan`` ... (4)           |
| ipaddr     | :class:`~.ipaddr.IPAddr`            | ``ip``      | ``isIpv4`` ... ``isInRange``   |
| datetime   | :class:`~.datetime.Datetime`        | ``datetime``| ``offset`` ... ``toTime``      |
| duration   | :class:`~.datetime.Duration`        | ``duration``| ``toMilliseconds`` ... (5)     |

Every ``impl`` type-checks its own arguments and raises :class:`~cedarlite.errors.EvaluationError`
with the Rust engine's message (without the ``error while evaluating policy ...:`` prefix).
"""

from __future__ import annotations

from typing import Any

from ...errors import EvaluationError
from ._base import ExtensionValue, ExtFunction, extension_error
from .datetime import DATETIME_FUNCTIONS, Datetime, Duration
from .decimal import DECIMAL_FUNCTIONS, Decimal
from .ipaddr import IPADDR_FUNCTIONS, IPAddr

# ---------------------------------------------------------------------------------------------
# The registry

_ALL: tuple[ExtFunction, ...] = DECIMAL_FUNCTIONS + IPADDR_FUNCTIONS + DATETIME_FUNCTIONS

FUNCTIONS: dict[str, ExtFunction] = {f.name: f for f in _ALL if not f.is_method}
"""Function-style extension functions by Cedar name: ``decimal ip datetime duration``."""

METHODS: dict[str, ExtFunction] = {f.name: f for f in _ALL if f.is_method}
"""Method-style extension functions by Cedar name (``lessThan``, ``isInRange``, ``offset``...)."""

EXTENSION_TYPES: dict[str, type[ExtensionValue]] = {
    cls.cedar_type: cls for cls in (Decimal, IPAddr, Datetime, Duration)
}
"""Extension value classes by Cedar type name (``decimal ipaddr datetime duration``)."""

CONSTRUCTORS: dict[str, ExtFunction] = {
    "decimal": FUNCTIONS["decimal"],
    "ipaddr": FUNCTIONS["ip"],
    "datetime": FUNCTIONS["datetime"],
    "duration": FUNCTIONS["duration"],
}
"""The String -> value constructor of each extension type, by Cedar type name (for schema-based
parsing, where a plain string stands for an extension value)."""


def lookup(name: str) -> ExtFunction | None:
    """The extension function or method called ``name``, if any (names never collide)."""
    return FUNCTIONS.get(name) or METHODS.get(name)


def from_extn_json(fn: str, args: list[Any]) -> Any:
    """Decode ``{"__extn": {"fn": fn, "arg": a}}`` (``args=[a]``) or ``{..., "args": [...]}``.

    ``args`` are already-decoded Cedar values. Like Rust, any extension function is accepted,
    methods included (receiver first): ``from_extn_json("offset", [datetime, duration])``.
    Raises :class:`EvaluationError` on an unknown name (``ipaddr`` is not a function), a wrong
    number of arguments, a wrongly typed argument or a malformed constructor string.
    """
    func = lookup(fn)
    if func is None:
        raise EvaluationError(f"extension function `{fn}` does not exist")
    return func.call(args)


__all__ = [
    "CONSTRUCTORS",
    "EXTENSION_TYPES",
    "FUNCTIONS",
    "METHODS",
    "Datetime",
    "Decimal",
    "Duration",
    "ExtFunction",
    "ExtensionValue",
    "IPAddr",
    "extension_error",
    "from_extn_json",
    "lookup",
]
