"""cedarlite's loggers, which import :mod:`logging` only when something is logged.

A hook process (one per tool call) that logs nothing should not pay for importing
:mod:`logging`. :func:`get_logger` returns a :class:`Logger` with the methods cedarlite uses;
the first record logged imports :mod:`logging` and goes to the standard logger of that name,
so handlers, levels and ``caplog`` work as usual. The ``cedarlite`` logger has a
:class:`logging.NullHandler` (added with that first record), as a library's should: nothing is
printed unless the application configures logging.

A :func:`capture` (the hook's: it prints cedarlite's warnings on stderr itself) takes
cedarlite's records of level ``WARNING`` and above, as their messages, instead of
:mod:`logging`; records below that level are dropped while it lasts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

_WARNING = 30  # logging.WARNING, without importing logging

# The message sink of the running capture (None: records go to logging).
_sink: Callable[[str], None] | None = None
# Whether the `cedarlite` logger has its NullHandler (added with the first record).
_quiet = False


class Logger:
    """A logger that imports :mod:`logging` on its first record (see the module)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def _log(self, level: int, msg: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        sink = _sink
        if sink is not None:
            if level >= _WARNING:
                try:
                    sink(msg % args if args else msg)
                except Exception:  # a message that cannot be formatted is not worth failing for
                    sink(str(msg))
            return
        # lazy on purpose: a hook process never imports logging (test_layering)
        import logging

        global _quiet
        if not _quiet:
            # A library's logger: quiet (not logging's last-resort handler on stderr) unless
            # the application configures logging.
            logging.getLogger("cedarlite").addHandler(logging.NullHandler())
            _quiet = True
        kwargs.setdefault("stacklevel", 3)  # the caller of debug()/info()/..., not this module
        logging.getLogger(self.name).log(level, msg, *args, **kwargs)

    def debug(self, msg: str, *args: Any, **kwargs: Any) -> None:
        """Log ``msg % args`` at level ``DEBUG``."""
        self._log(10, msg, args, kwargs)

    def info(self, msg: str, *args: Any, **kwargs: Any) -> None:
        """Log ``msg % args`` at level ``INFO``."""
        self._log(20, msg, args, kwargs)

    def warning(self, msg: str, *args: Any, **kwargs: Any) -> None:
        """Log ``msg % args`` at level ``WARNING``."""
        self._log(_WARNING, msg, args, kwargs)

    def error(self, msg: str, *args: Any, **kwargs: Any) -> None:
        """Log ``msg % args`` at level ``ERROR``."""
        self._log(40, msg, args, kwargs)


def get_logger(name: str) -> Logger:
    """The logger ``name`` (a ``cedarlite.*`` name)."""
    return Logger(name)


@contextmanager
def capture(sink: Callable[[str], None]) -> Iterator[None]:
    """While it lasts, cedarlite's warnings and errors go to ``sink`` as messages (and
    nowhere else); lower records are dropped. Process-wide: it replaces a capture running
    (which it restores at the end)."""
    global _sink
    previous, _sink = _sink, sink
    try:
        yield
    finally:
        _sink = previous
