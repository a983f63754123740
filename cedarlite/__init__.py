"""cedarlite: a pure-Python, Cedar-compatible policy engine for AI agents' tool calls.

```python
import cedarlite
ps = cedarlite.PolicySet.from_str('permit(principal, action == Action::"read", resource);')
resp = cedarlite.is_authorized(
    {"principal": 'User::"alice"', "action": 'Action::"read"', "resource": 'File::"a"'}, ps
)
assert resp.decision is cedarlite.Decision.ALLOW
```

The names below are imported on first use (PEP 562): ``import cedarlite`` loads nothing else,
and a decision loads only the stages it runs through (no grammar, no schema, no validator
unless used). Submodules (``cedarlite.tools``, ``cedarlite.schema``...) load the same way.
"""

from __future__ import annotations

from ._version import __version__ as __version__

# Not `from typing import ...`: typing (and the `re` it loads) costs a hook process, which
# starts for every tool call and loads nothing else of it, ~5 ms.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from .authorizer import is_authorized, is_authorized_batch
    from .data.entities import Entities, Entity, EntityProvider
    from .data.request import Request
    from .data.response import Decision, PolicyError, Response
    from .data.values import CedarSet, EntityUID, Record
    from .errors import (
        CedarliteError,
        EntitiesError,
        EvaluationError,
        ParseError,
        PolicySetError,
        RequestError,
        SchemaError,
        ValidationError,
    )
    from .impact import ReplayReport, replay
    from .lang.ast import Effect
    from .policyset import PolicySet
    from .schema import Schema
    from .schema.validator import ValidationIssue, ValidationResult, validate

# INVARIANT: the same names as the imports above and as __all__ (tests/test_layering.py).
_EXPORTS: dict[str, str] = {
    "CedarSet": ".data.values",
    "CedarliteError": ".errors",
    "Decision": ".data.response",
    "Effect": ".lang.ast",
    "Entities": ".data.entities",
    "EntitiesError": ".errors",
    "Entity": ".data.entities",
    "EntityProvider": ".data.entities",
    "EntityUID": ".data.values",
    "EvaluationError": ".errors",
    "ParseError": ".errors",
    "PolicyError": ".data.response",
    "PolicySet": ".policyset",
    "PolicySetError": ".errors",
    "Record": ".data.values",
    "ReplayReport": ".impact",
    "Request": ".data.request",
    "RequestError": ".errors",
    "Response": ".data.response",
    "Schema": ".schema",
    "SchemaError": ".errors",
    "ValidationError": ".errors",
    "ValidationIssue": ".schema.validator",
    "ValidationResult": ".schema.validator",
    "is_authorized": ".authorizer",
    "is_authorized_batch": ".authorizer",
    "replay": ".impact",
    "validate": ".schema.validator",
}

__all__ = [
    "CedarSet",
    "CedarliteError",
    "Decision",
    "Effect",
    "Entities",
    "EntitiesError",
    "Entity",
    "EntityProvider",
    "EntityUID",
    "EvaluationError",
    "ParseError",
    "PolicyError",
    "PolicySet",
    "PolicySetError",
    "Record",
    "ReplayReport",
    "Request",
    "RequestError",
    "Response",
    "Schema",
    "SchemaError",
    "ValidationError",
    "ValidationIssue",
    "ValidationResult",
    "is_authorized",
    "is_authorized_batch",
    "replay",
    "validate",
]


def __getattr__(name: str) -> object:
    """Import a public name, or a submodule, on first access."""
    # __import__ rather than importlib.import_module: the same import, without importing
    # importlib (a millisecond of every hook process)
    module = _EXPORTS.get(name)
    if module is not None:
        value = getattr(__import__(__name__ + module, fromlist=(name,)), name)
        globals()[name] = value  # later accesses are plain attribute reads
        return value
    if name.isidentifier() and not name.startswith("__"):
        try:
            return __import__(f"{__name__}.{name}", fromlist=("*",))
        except ModuleNotFoundError as err:
            if err.name != f"{__name__}.{name}":
                raise  # a submodule that exists but lacks a dependency of its own
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """The public names, loaded or not."""
    return sorted(set(globals()) | set(__all__))
