"""The Cedar language: the syntax tree (:mod:`.ast`), the parsers (:mod:`.parse`), Cedar's JSON
policy format (:mod:`.est`) and the canonical printer (:mod:`.printer`)."""
