"""Cedar's data: values (:mod:`.values`), the extension types (:mod:`.ext`), entity stores
(:mod:`.entities`), requests (:mod:`.request`) and responses (:mod:`.response`).

Every module here is below the language and the engine: a decision loaded from the compile
cache needs this package and :mod:`cedarlite.engine`, never the parser or the syntax tree.
"""
