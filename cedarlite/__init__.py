"""cedarlite: a pure-Python, Cedar-compatible policy engine for AI agents' tool calls.

```python
import cedarlite
ps = cedarlite.PolicySet.from_str('permit(principal, action == Action::"read", resource);')
resp = cedarlite.is_authorized(
    {"principal": 'User::"alice"', "action": 'Action::"read"', "resource": 'File::"a"'}, ps
)
assert resp.decision is cedarlite.Decision.ALLOW
```
"""

from typing import TYPE_CHECKING

from .ast import Effect
from .authorizer import Decision, PolicyError, Response, is_authorized
from .compiler import is_authorized_batch
from .entities import Entities, Entity, EntityProvider
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
from .evaluator import Request
from .policyset import PolicySet
from .schema import Schema
from .schema.validator import ValidationIssue, ValidationResult, validate
from .values import CedarSet, EntityUID, Record

__version__ = "0.1.0"

if TYPE_CHECKING:
    from .impact import ReplayReport, replay

# Imported on first use (``import cedarlite`` never imports Dask or the replay machinery).
_LAZY = {"replay": ".impact", "ReplayReport": ".impact"}


def __getattr__(name: str) -> object:
    """The names of :data:`_LAZY`, imported when first asked for."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value


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
