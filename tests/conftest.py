"""Hypothesis profiles for the whole test suite.

* ``default`` (the normal run, also on CI): deterministic (a fixed seed derived from each
  test), no deadline (CI machines are slow and noisy), Hypothesis's usual 100 examples unless a
  test asks for more.
* ``thorough``: random seeds, ten times the examples; the differential suites scale their own
  example counts up as well. Select it with ``HYPOTHESIS_PROFILE=thorough pytest``.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "default",
    max_examples=100,
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=True,
)
settings.register_profile(
    "thorough",
    max_examples=1000,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

# Hook processes decide in-process unless a test asks for the decision service (which a hook
# would otherwise start in the background, to outlive the test): tests/test_serve_hook.py.
os.environ["CEDARLITE_NO_SERVICE"] = "1"
