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

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from ..errors import EvaluationError
from ..values import type_error

_V = TypeVar("_V", bound="ExtensionValue")

# ---------------------------------------------------------------------------------------------
# Shared building blocks of the submodules (defined before they are imported, below).


class ExtensionValue:
    """Base of the extension value classes: immutable, compared by exact class and :meth:`_key`.

    Subclasses set ``cedar_type`` (the lowercase Cedar type name used in messages) and
    ``__slots__``, and implement :meth:`_key`, :meth:`to_cedar`, :meth:`to_json` and ``__str__``.
    """

    __slots__ = ()
    cedar_type: ClassVar[str]

    def _key(self) -> Any:
        """The tuple or int that identifies the value (equality and hashing)."""
        raise NotImplementedError

    def _init(self, **fields: Any) -> None:
        """Set the slots once, at construction (``__setattr__`` is disabled afterwards)."""
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __eq__(self, other: object) -> bool:
        return other.__class__ is self.__class__ and self._key() == other._key()

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash((self.__class__.__name__, self._key()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self)!r})"

    def to_cedar(self) -> str:
        """Cedar source text that evaluates to a value equal to this one."""
        raise NotImplementedError

    def to_json(self) -> dict[str, Any]:
        """The ``{"__extn": {"fn": ..., "arg"/"args": ...}}`` form of the value."""
        raise NotImplementedError


def extn_json(fn: str, arg: Any) -> dict[str, Any]:
    """``{"__extn": {"fn": fn, "arg": arg}}``."""
    return {"__extn": {"fn": fn, "arg": arg}}


def extension_error(name: str, message: str) -> EvaluationError:
    """Rust's ``error while evaluating `<name>` extension function: <message>``."""
    return EvaluationError(f"error while evaluating `{name}` extension function: {message}")


def expect_string(value: Any) -> str:
    """``value`` if it is a Cedar String, else ``type error: expected string, got ...``."""
    if value.__class__ is not str:
        raise type_error("string", value)
    return value


def expect(cls: type[_V], value: Any) -> _V:
    """``value`` if it is an instance of extension class ``cls``, else Rust's type error."""
    if value.__class__ is not cls:
        raise type_error(cls.cedar_type, value)
    return value


@dataclass(frozen=True, slots=True)
class ExtFunction:
    """One extension function or method.

    ``params`` and ``returns`` use the vocabulary ``String Long Bool decimal ipaddr datetime
    duration``; for a method the receiver is ``params[0]``. ``impl`` takes evaluated Cedar
    values (receiver first) and type-checks them itself.
    """

    name: str
    is_method: bool
    params: tuple[str, ...]
    returns: str
    impl: Callable[..., Any]

    @property
    def arity(self) -> int:
        """Number of arguments, the receiver of a method included."""
        return len(self.params)

    def call(self, args: Sequence[Any]) -> Any:
        """Apply to evaluated arguments (receiver first), checking the arity as Rust does.

        Rust evaluates every argument first, then checks the count, then the types.
        """
        if len(args) != len(self.params):
            raise EvaluationError(
                f"wrong number of arguments provided to extension function `{self.name}`: "
                f"expected {len(self.params)}, got {len(args)}"
            )
        return self.impl(*args)


# ---------------------------------------------------------------------------------------------
# The registry. The submodules import the helpers above, so they are imported here, not on top.

from .datetime import DATETIME_FUNCTIONS, Datetime, Duration  # noqa: E402
from .decimal import DECIMAL_FUNCTIONS, Decimal  # noqa: E402
from .ipaddr import IPADDR_FUNCTIONS, IPAddr  # noqa: E402

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
