"""The ``cedarlite`` command line (:func:`main`); the only package that prints.

:mod:`.main` holds the parser and the dispatch; each family of commands has a module of its
own: :mod:`.policies` (authorize, validate, format, evaluate, run-tests, equiv...), :mod:`.tools`
(``cedarlite tools ...``), :mod:`.hosts` (``mcp-proxy``, ``hook claude-code``), :mod:`.openclaw`
(``hook openclaw``) and :mod:`.replay`;
:mod:`.common` holds what they share (exit codes, failures, the readers of common flags).
"""

from .main import main

__all__ = ["main"]
