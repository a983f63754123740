"""Cedar schemas: the model, the ``.cedarschema`` and JSON formats, and the type language.

```python
from cedarlite.schema import Schema
schema = Schema.from_str('entity User; action view appliesTo { principal: User, resource: User };')
```
"""

from .defs import ActionDef, AppliesTo, EntityTypeDef, RequestEnv
from .model import Schema
from .types import (
    BOOL,
    LONG,
    STRING,
    Attribute,
    BoolType,
    CedarType,
    EntityType,
    ExtensionType,
    LongType,
    RecordType,
    SetType,
    StringType,
)

__all__ = [
    "BOOL",
    "LONG",
    "STRING",
    "ActionDef",
    "AppliesTo",
    "Attribute",
    "BoolType",
    "CedarType",
    "EntityType",
    "EntityTypeDef",
    "ExtensionType",
    "LongType",
    "RecordType",
    "RequestEnv",
    "Schema",
    "SetType",
    "StringType",
]
