"""The package version, in a module of its own so that any stage can read it without importing
the facade (``pyproject.toml`` holds the same number; ``tests/test_layering.py`` keeps them equal).
"""

__version__ = "0.1.0"
