"""The building blocks shared by the extension types: the value base class, the function
record and the argument checks (the registry in :mod:`cedarlite.data.ext` collects the types)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from ...errors import EvaluationError
from ..values import type_error

_V = TypeVar("_V", bound="ExtensionValue")


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
