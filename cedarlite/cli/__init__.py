"""The ``cedarlite`` command line (:func:`main`); the only package that prints.

:mod:`cedarlite.cli.main` holds the parser and the dispatch; each family of commands has a
module of its own.
"""

from .main import main

__all__ = ["main"]
