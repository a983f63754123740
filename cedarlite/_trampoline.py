"""Recursion on a heap stack, so that the depth of the data never meets Python's limits.

A recursive function over the AST is written as a generator that *yields* each recursive call
(another such generator) and receives its result::

    def size(e):
        total = 1
        for child in children(e):
            total += yield size(child)
        return total

    run(size(expr))

:func:`run` drives the generators by nested calls for the first :data:`NESTED_LEVELS` levels
(the common, shallow case, and the fastest) and with an explicit stack below them: the call
depth stays bounded however deep the tree is (Python's recursion limit, 1,000 frames by
default, would otherwise stop a policy nested a few hundred levels deep). Exceptions travel
up through the waiting generators exactly as they would through ordinary frames. A yielded
value that is not a generator is a result computed directly (a leaf), handed straight back.
"""

from __future__ import annotations

from collections.abc import Generator
from types import GeneratorType
from typing import Any, TypeVar

T = TypeVar("T")

Step = Generator[Any, Any, T]
"""A generator-written recursive computation returning ``T``."""


def run(root: Any) -> Any:
    """The result of ``root`` (a :data:`Step`, or already a result), running the computations
    it yields as nested calls :data:`NESTED_LEVELS` deep, and deeper ones on an explicit
    stack."""
    if root.__class__ is not GeneratorType:
        return root
    return _nested(root, NESTED_LEVELS)


NESTED_LEVELS = 50
"""How many levels of yielded computations run as nested calls of :func:`_nested` (the fast
way) before :func:`_stacked` takes over: the Python stack stays bounded by this constant, not
by the depth of the data."""


def _nested(step: Step[Any], levels: int) -> Any:
    """The result of ``step``, a computation it yields run by a nested call while ``levels``
    remain, on the explicit stack after that."""
    value: Any = None
    error: Exception | None = None
    while True:
        try:
            sub = step.send(value) if error is None else step.throw(error)
        except StopIteration as done:
            return done.value
        error = None
        if sub.__class__ is GeneratorType:
            try:
                value = _nested(sub, levels - 1) if levels else _stacked(sub)
            except Exception as exc:  # raised into `step`, as through ordinary frames
                error = exc
        else:
            value = sub


def _stacked(root: Step[Any]) -> Any:
    """The result of ``root``, every computation it yields run on an explicit stack."""
    stack: list[Step[Any]] = [root]
    value: Any = None
    error: Exception | None = None
    while True:
        top = stack[-1]
        try:
            if error is None:
                sub = top.send(value)
            else:
                sub, error = top.throw(error), None
        except StopIteration as done:
            stack.pop()
            if not stack:
                return done.value
            value, error = done.value, None
            continue
        except Exception as exc:
            stack.pop()
            if not stack:
                raise
            error = exc
            continue
        if sub.__class__ is GeneratorType:
            stack.append(sub)
            value = None
        else:
            value = sub
