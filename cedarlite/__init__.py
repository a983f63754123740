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

from ._version import __version__ as __version__
from .ast import Effect
from .authorizer import is_authorized, is_authorized_batch
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
from .policyset import PolicySet
from .request import Request
from .response import Decision, PolicyError, Response
from .schema import Schema
from .schema.validator import ValidationIssue, ValidationResult, validate
from .values import CedarSet, EntityUID, Record

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
    "validate",
]
