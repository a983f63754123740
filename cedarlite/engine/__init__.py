"""Deciding: the operators both paths share (:mod:`.ops`), the reference interpreter
(:mod:`.evaluator`) and the compiler to an indexed decision tree (:mod:`.compiler`)."""
