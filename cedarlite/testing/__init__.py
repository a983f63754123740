"""Property testing for Cedar policies: Hypothesis strategies and policy-set equivalence.

Needs Hypothesis, a test dependency (``pip install 'cedarlite[test]'``):

```python
from cedarlite import PolicySet, testing

old = PolicySet.from_file("policies/app.cedar")
new = PolicySet.from_file("policies/app-refactored.cedar")
testing.assert_equivalent(old, new)          # raises AssertionError with a counterexample
result = testing.check_equivalence(old, new)
print(result.summary())                      # e.g. "equivalent (exhaustive over 96 requests)"
```

* :mod:`cedarlite.analysis` (re-exported here): :func:`find_difference`, :func:`check_equivalence`,
  :func:`assert_equivalent` and their results :class:`Counterexample`, :class:`Equivalence`;
* :mod:`.strategies`: strategies for policies, policy sets, entities, requests and whole
  scenarios, for your own property tests;
* :mod:`.universe`: the small shared world the strategies draw from.
"""

try:
    import hypothesis as _hypothesis  # noqa: F401 - only to fail early with a clear message
except ImportError:  # pragma: no cover - exercised in a subprocess by the tests
    raise ImportError(
        "cedarlite.testing needs Hypothesis, which is not installed: "
        "pip install 'cedarlite[test]' (or pip install hypothesis)"
    ) from None

from ..analysis.equivalence import (
    Counterexample,
    Equivalence,
    assert_equivalent,
    check_equivalence,
    find_difference,
)
from .strategies import (
    Scenario,
    contexts,
    entities,
    entity_uids,
    expressions,
    extension_strings,
    policies,
    policy_sets,
    requests,
    scenarios,
)
from .universe import (
    ANY,
    BAD_DATETIME_STRINGS,
    BAD_DECIMAL_STRINGS,
    BAD_DURATION_STRINGS,
    BAD_IP_STRINGS,
    BOOL,
    DATETIME,
    DATETIME_STRINGS,
    DECIMAL,
    DECIMAL_STRINGS,
    DEFAULT_UNIVERSE,
    DURATION,
    DURATION_STRINGS,
    ENTITY,
    EXT_CTOR,
    EXTENSIONS,
    IP_STRINGS,
    IPADDR,
    LONG,
    LONG_POOL,
    META,
    SIMPLE_TYPES,
    STRING,
    STRING_POOL,
    Type,
    Universe,
    record_of,
    set_of,
    universe_for,
)

__all__ = [
    "ANY",
    "BAD_DATETIME_STRINGS",
    "BAD_DECIMAL_STRINGS",
    "BAD_DURATION_STRINGS",
    "BAD_IP_STRINGS",
    "BOOL",
    "DATETIME",
    "DATETIME_STRINGS",
    "DECIMAL",
    "DECIMAL_STRINGS",
    "DEFAULT_UNIVERSE",
    "DURATION",
    "DURATION_STRINGS",
    "ENTITY",
    "EXTENSIONS",
    "EXT_CTOR",
    "IPADDR",
    "IP_STRINGS",
    "LONG",
    "LONG_POOL",
    "META",
    "SIMPLE_TYPES",
    "STRING",
    "STRING_POOL",
    "Counterexample",
    "Equivalence",
    "Scenario",
    "Type",
    "Universe",
    "assert_equivalent",
    "check_equivalence",
    "contexts",
    "entities",
    "entity_uids",
    "expressions",
    "extension_strings",
    "find_difference",
    "policies",
    "policy_sets",
    "record_of",
    "requests",
    "scenarios",
    "set_of",
    "universe_for",
]
