"""The policies and example scenarios that ship with cedarlite, read from the installed package.

```python
from cedarlite import shipped

shipped.policy_names()  # ('exec-commands', 'owner-only', 'paths', 'profile-coding', ...)
rules = shipped.load_policies("exec-commands", "paths")  # one PolicySet
scenario = shipped.example("coding-agent")  # {"config", "tools", "context", "calls"}
```

In a wheel they live inside the package (``cedarlite/policies``, ``cedarlite/examples``) and are
found with :mod:`importlib.resources`; in a source checkout, next to the package. On the command
line, ``cedarlite:NAME`` names one of them (``--rules cedarlite:paths``), and ``cedarlite tools
shipped`` lists them.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from .errors import CedarliteError

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

    from .policyset import PolicySet

# A hook process resolves `cedarlite:NAME` once per tool call: with the os module alone when
# the files are on the file system (the usual case), without importlib.resources, pathlib or
# the policy parser.
_INSTALLED = os.path.dirname(os.path.abspath(__file__))  # cedarlite/policies in a wheel
_CHECKOUT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))  # policies/ beside it

#: The prefix that names a shipped file on the command line (``cedarlite:paths``).
PREFIX = "cedarlite:"

_SUFFIX = {"policies": ".cedar", "examples": ".json"}


class ShippedError(CedarliteError):
    """A name that is not one of the shipped policies or examples."""

    code = "E0910"


def _local_folder(kind: str) -> str | None:
    """The folder of ``kind`` on the file system: inside the package (an installation), else
    next to it (a source checkout); ``None`` if neither is a directory."""
    for base in (_INSTALLED, _CHECKOUT):
        folder = os.path.join(base, kind)
        if os.path.isdir(folder):
            return folder
    return None


def _folder(kind: str) -> Traversable:
    local = _local_folder(kind)
    if local is not None:
        # lazy on purpose: a hook process never imports pathlib (test_layering)
        from pathlib import Path

        return Path(local)
    from importlib import resources  # a package that is not on the file system (a zip)

    installed = resources.files("cedarlite") / kind
    if installed.is_dir():
        return installed
    raise ShippedError(f"the shipped {kind} are missing from this installation of cedarlite")


def _names(kind: str) -> tuple[str, ...]:
    suffix = _SUFFIX[kind]
    local = _local_folder(kind)
    files = os.listdir(local) if local is not None else [f.name for f in _folder(kind).iterdir()]
    return tuple(sorted(f[: -len(suffix)] for f in files if f.endswith(suffix)))


def _file(kind: str, name: str) -> Traversable:
    name = name.removeprefix(PREFIX)
    names = _names(kind)
    if name not in names:
        # lazy on purpose: only a mistake needs it (the JSON locator, suggestions)
        from .schema.model import did_you_mean

        listed = ", ".join(f"`{n}`" for n in names)
        what = "example" if kind == "examples" else "policy file"
        raise ShippedError(
            f"no shipped {what} `{name}` (shipped: {listed})",
            help=did_you_mean(name, names),
            source=PREFIX + name,
        )
    return _folder(kind) / f"{name}{_SUFFIX[kind]}"


def policy_names() -> tuple[str, ...]:
    """The shipped policy files, by name (``paths`` is ``policies/paths.cedar``)."""
    return _names("policies")


def example_names() -> tuple[str, ...]:
    """The shipped example scenarios, by name (``coding-agent``)."""
    return _names("examples")


def policy_path(name: str) -> Traversable:
    """Where a shipped policy file is (a :class:`pathlib.Path` in an unpacked installation)."""
    return _file("policies", name)


def example_path(name: str) -> Traversable:
    """Where a shipped example scenario is."""
    return _file("examples", name)


def policy_text(name: str) -> str:
    """The Cedar text of a shipped policy file."""
    return policy_path(name).read_text(encoding="utf-8")


def load_policies(*names: str) -> PolicySet:
    """The shipped policy files ``names`` as one :class:`~cedarlite.PolicySet`.

    One file keeps its ids (``policy0``...); several are merged with each id prefixed by the
    file's name (``paths:policy0``); reports name policies by ``@id`` either way.
    """
    # lazy on purpose: only loading a shipped policy set parses
    from dataclasses import replace

    from .policyset import PolicySet

    if not names:
        raise ShippedError("name at least one shipped policy file", help=", ".join(policy_names()))
    sets = [PolicySet.from_str(policy_text(n), str(policy_path(n))) for n in names]
    if len(sets) == 1:
        return sets[0]
    return PolicySet(
        replace(p, id=f"{n.removeprefix(PREFIX)}:{p.id}")
        for n, ps in zip(names, sets, strict=True)
        for p in ps
    )


def example(name: str) -> dict[str, Any]:
    """A shipped example scenario: ``{"config", "tools", "context", "calls"}``."""
    data: dict[str, Any] = json.loads(example_path(name).read_text(encoding="utf-8"))
    return data


def resolve(reference: str, kind: str = "policies") -> str:
    """A command-line file reference: ``cedarlite:NAME`` becomes the path of the shipped file
    of that name (``kind``: ``"policies"`` or ``"examples"``); anything else is returned as
    is."""
    if not reference.startswith(PREFIX):
        return reference
    name, local = reference.removeprefix(PREFIX), _local_folder(kind)
    if local is not None and name in _names(kind):
        return os.path.join(local, name + _SUFFIX[kind])
    return str(_file(kind, reference))  # a zip installation, or no such file (the error)
