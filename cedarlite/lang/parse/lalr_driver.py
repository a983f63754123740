"""A lean driver for Lark's LALR tables: one-regex lexer, pre-resolved actions, exact errors.

Lark builds the automaton from our grammars and wires the rule callbacks (the embedded
transformers); this module only runs it, about twice as fast as Lark's own loop, which matters
when thousands of small policy sets and schemas are loaded. Both the policy parser and the
schema parser use it.

The lexer matches every terminal of the grammar with one regular expression. Cedar's keywords
are valid names wherever they cannot be keywords (``context.principal``, a record key ``if``
in a schema...), so a string terminal that the identifier pattern also matches is produced as
the keyword only where the parser state accepts it, and as an identifier anywhere else.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import re
import sys
from pathlib import Path
from typing import Any

import lark
from lark import Lark, Transformer
from lark.parsers.lalr_analysis import Shift

from ..._cache_dir import load_pickle, private_dir, store
from ...errors import CacheError

END = "$END"


def grammar_text(name: str) -> str:
    """A grammar file of ``grammar/``: inside the installed package, or next to a checkout."""
    here = Path(__file__).resolve().parents[2]  # the package: cedarlite/lang/parse/ -> cedarlite/
    for candidate in (here / "grammar" / name, here.parent / "grammar" / name):
        if candidate.is_file():
            return candidate.read_text(encoding="utf-8")
    raise FileNotFoundError(f"cedarlite grammar `{name}` not found next to {here}")


def build_lark(grammar: str, transformer: Transformer[Any, Any], **options: Any) -> Lark:
    """The LALR Lark parser of grammar file ``grammar``, its tables cached across processes.

    Why cache: building the tables is most of a cold start that parses (measured, first parse
    of a one-policy text in a fresh process, p50 of 15: 146 ms without a cache, 17 ms with one);
    a CLI call or a hook without a compile cache would pay it every time. Why not Lark's own
    ``cache=True``: it unpickles a file of a predictable name in the shared temp dir, so any
    local user who plants that file runs code in the guard. Here the tables go to the
    private per-user directory ``grammars`` (:mod:`cedarlite._cache_dir`: checked owner and mode,
    atomic writes); when there is none (no home, unsafe directory, not POSIX), the tables are
    built every time and nothing is read from anywhere.
    """
    text = grammar_text(grammar)
    digest = hashlib.sha256(
        "\0".join(
            (text, repr(sorted(options.items())), lark.__version__, repr(sys.version_info[:2]))
        ).encode()
    ).hexdigest()
    key = f"{grammar}-{digest}.pickle"
    directory: str | None
    try:
        directory = private_dir("grammars")
        data = load_pickle(directory, key)
    except CacheError:
        directory, data = None, None
    if isinstance(data, dict):
        try:
            # INTERNAL: Lark's own cache loads its tables this way (`Lark._load`, with the
            # options that are not serialised, like the transformer, passed again).
            return Lark.__new__(Lark)._load(data, transformer=transformer)
        except Exception:  # an entry of another Lark: rebuild and replace it
            pass
    parser = Lark(text, parser="lalr", transformer=transformer, **options)
    if directory is not None:
        buf = io.BytesIO()
        parser.save(buf, exclude_options=("transformer",))
        with contextlib.suppress(CacheError):
            store(directory, key, buf.getvalue())
    return parser


class Tok(str):
    """A token: the matched text, its terminal name and position (lighter than Lark's)."""

    __slots__ = ("column", "end_pos", "line", "start_pos", "type")

    type: str
    start_pos: int
    end_pos: int
    line: int
    column: int

    @property
    def value(self) -> str:
        """The matched text as a plain string."""
        return str.__str__(self)


class LexError(Exception):
    """No terminal matches the text at ``pos`` (1-based ``line``/``column``).

    ``expected`` holds the terminals the parser would have accepted there.
    """

    def __init__(self, pos: int, line: int, column: int, expected: frozenset[str]) -> None:
        super().__init__(pos)
        self.pos, self.line, self.column, self.expected = pos, line, column, expected


class UnexpectedToken(Exception):
    """The parser cannot take ``token`` (``$END`` at the end of input) here.

    ``expected`` holds exactly the terminals that would be accepted instead.
    """

    def __init__(self, token: Tok, expected: frozenset[str]) -> None:
        super().__init__(token)
        self.token, self.expected = token, expected


class TooDeep(Exception):
    """The input nests deeper than the parser was allowed to go; ``token`` is where."""

    def __init__(self, token: Tok) -> None:
        super().__init__(token)
        self.token = token


_PASS = -1
"""``pick`` of a one-symbol rule whose value is that symbol's (see :func:`_direct`)."""


def _direct(callback: Any, size: int) -> tuple[Any, Any]:
    """``(function, pick)``: how to reduce by a rule of ``size`` symbols whose Lark callback
    is ``callback``, without the wrappers Lark puts around our transformer's method.

    Lark wraps it to drop filtered tokens (punctuation) and, for ``?rule``, to return a lone
    child unchanged; most reductions of a parse are such one-child rules (an expression goes
    through a dozen precedence levels). ``pick`` is ``None`` (call ``function`` with all the
    children), a tuple (call it with the children at those positions), an int (no call: the
    value is the child at that position) or :data:`_PASS` (the same for a one-symbol rule).
    Wrappers this does not know (inlined ``_rule`` children, placeholders, positions) keep
    Lark's callback, which does it all.
    """
    # INTERNAL: the wrapper classes of lark.parse_tree_builder; a class this does not know
    # (another Lark) keeps Lark's callback. The parser and schema tests check the results.
    from lark.parse_tree_builder import (
        ChildFilterLALR,
        ChildFilterLALR_NoPlaceholders,
        ExpandSingleChild,
    )

    function, keep = callback, None
    if function.__class__ is ChildFilterLALR_NoPlaceholders:
        if any(expand for _, expand in function.to_include):
            return callback, None
        keep = tuple(i for i, _ in function.to_include)
        function = function.node_builder
    elif function.__class__ is ChildFilterLALR:  # (with `maybe_placeholders`)
        if function.append_none or any(expand or nones for _, expand, nones in function.to_include):
            return callback, None  # placeholders to insert: Lark's own callback
        keep = tuple(i for i, _, _ in function.to_include)
        function = function.node_builder
    if function.__class__ is ExpandSingleChild:
        kept = keep if keep is not None else tuple(range(size))
        if len(kept) == 1:
            return None, _PASS if size == 1 else kept[0]
        function = function.node_builder
    if function.__class__.__module__ == "lark.parse_tree_builder":
        return callback, None  # another wrapper: Lark's own callback
    if keep == tuple(range(size)):
        keep = None
    return function, keep


class Automaton:
    """Runs the LALR automaton of a Lark parser built with ``parser="lalr"`` and a transformer."""

    def __init__(self, lark: Lark, start: str = "start") -> None:
        self.lark = lark
        conf = lark.lexer_conf
        regexps = [t for t in conf.terminals if t.pattern.type == "re"]
        # keyword text -> (its terminal, the identifier terminal that also matches it)
        self.keywords: dict[str, tuple[str, str]] = {}
        punctuation = []
        for terminal in (t for t in conf.terminals if t.pattern.type == "str"):
            value = terminal.pattern.value
            owner = next((r for r in regexps if re.fullmatch(r.pattern.to_regexp(), value)), None)
            if owner is not None:
                self.keywords[value] = (terminal.name, owner.name)
            else:
                punctuation.append(terminal)
        punctuation.sort(key=lambda t: -len(t.pattern.value))  # `::` before `:`
        # One match per token: the ignored text before it (whitespace, comments), then one
        # named alternative per terminal (`lastgroup` names the terminal matched). The grammar's
        # terminals are character runs and possessive repeats (see STRING in cedar.lark), and
        # each match starts where the last token ended: lexing is linear in the text.
        skip = "|".join(r.pattern.to_regexp() for r in regexps if r.name in conf.ignore)
        tokens = [
            f"(?P<{t.name}>{t.pattern.to_regexp()})" for t in regexps if t.name not in conf.ignore
        ] + [f"(?P<{t.name}>{re.escape(t.pattern.value)})" for t in punctuation]
        self._token = re.compile(f"(?:{skip})*+(?:{'|'.join(tokens)})")
        self._skip = re.compile(f"(?:{skip})*+")
        # INTERNAL: Lark's parse table and the callbacks it built from our transformer.
        parser = lark.parser.parser.parser
        table, callbacks = parser.parse_table, parser.callbacks
        self._raw = table.states
        # Each action pre-resolved: (shift?, target state | rule size, callback, rule origin,
        # which children the callback takes; see `_direct`).
        reductions = {rule: _direct(callbacks[rule], len(rule.expansion)) for rule in callbacks}
        self._states: dict[Any, dict[str, tuple[bool, Any, Any, str, Any]]] = {
            state: {
                term: (True, arg, None, "", None)
                if action is Shift
                else (
                    False,
                    len(arg.expansion),
                    reductions[arg][0],
                    arg.origin.name,
                    reductions[arg][1],
                )
                for term, (action, arg) in actions.items()
            }
            for state, actions in table.states.items()
        }
        self._start = table.start_states[start]
        self._end = table.end_states[start]

    def parse(self, text: str, max_stack: int | None = None) -> Any:
        """Lex and parse ``text``; returns what the start rule's callback returns.

        Raises :class:`LexError` or :class:`UnexpectedToken`, or :class:`TooDeep` when the
        parser would hold more than ``max_stack`` unfinished symbols (input nested that deep
        is refused before it is read to the end); exceptions raised by callbacks propagate
        unchanged.
        """
        limit = max_stack if max_stack is not None else len(text) + 2
        states, keywords, match = self._states, self.keywords, self._token.match
        new_str = str.__new__
        stack: list[Any] = [self._start]
        values: list[Any] = []
        pos, end, line, line_start = 0, len(text), 1, 0
        while True:
            found = match(text, pos)
            if found is None:  # only ignored text is left, or a character no terminal matches
                start = self._skip.match(text, pos).end()  # type: ignore[union-attr]
                kind, value = END, ""
            else:
                kind = found.lastgroup or ""
                start = found.start(kind)
            newlines = text.count("\n", pos, start)
            if newlines:
                line += newlines
                line_start = text.rindex("\n", pos, start) + 1
            if found is None:
                if start != end:
                    raise LexError(start, line, start - line_start + 1, self.expected(stack))
            else:
                pos = found.end()
                value = text[start:pos]
                if value in keywords:
                    keyword, identifier = keywords[value]
                    table = states[stack[-1]]
                    if keyword in table and (
                        identifier not in table or self.accepts(stack, keyword)
                    ):
                        kind = keyword
            tok = new_str(Tok, value)  # one per token
            tok.type, tok.start_pos, tok.end_pos = kind, start, start + len(value)
            tok.line, tok.column = line, start - line_start + 1
            while True:
                action = states[stack[-1]].get(kind)
                if action is None:
                    raise UnexpectedToken(tok, self.expected(stack))
                shift, arg, callback, origin, pick = action
                if shift:
                    stack.append(arg)
                    values.append(tok)
                    if len(stack) > limit:
                        raise TooDeep(tok)
                    break
                if pick is _PASS:  # `?rule: x`: the value stays, only the state changes
                    goto = states[stack[-2]][origin][1]
                    if goto == self._end:
                        return values[-1]
                    stack[-1] = goto
                    continue
                if arg:
                    children = values[-arg:]
                    del stack[-arg:]
                    del values[-arg:]
                else:
                    children = []
                if pick is None:
                    value_ = callback(children)
                elif pick.__class__ is int:  # one child passed up (the others are filtered out)
                    value_ = children[pick]
                else:  # the children the rule keeps (punctuation filtered out)
                    value_ = callback([children[i] for i in pick])
                goto = states[stack[-1]][origin][1]
                if goto == self._end:
                    return value_
                stack.append(goto)
                values.append(value_)
            if "\n" in value:  # a token spanning lines (a string literal)
                line += value.count("\n")
                line_start = start + value.rindex("\n") + 1

    def accepts(self, stack: list[Any], terminal: str) -> bool:
        """Whether the parser would shift ``terminal`` after the reductions it triggers.

        An LALR state can list a terminal that only a merged, other context accepts; running
        the reductions settles it. They are simulated on the states they touch (``stack`` up
        to ``top``, then the states they push), never on a copy of the whole stack, so this
        costs what the reductions cost however deep the input nests.
        """
        states = self._raw
        top = len(stack)
        pushed: list[Any] = []
        while True:
            action = states[pushed[-1] if pushed else stack[top - 1]].get(terminal)
            if action is None:
                return False
            kind, rule = action
            if kind is Shift:
                return True
            size = len(rule.expansion)
            if size <= len(pushed):
                del pushed[len(pushed) - size :]
            else:
                top -= size - len(pushed)
                pushed.clear()
            goto = states[pushed[-1] if pushed else stack[top - 1]][rule.origin.name][1]
            if goto == self._end:
                return terminal == END
            pushed.append(goto)

    def expected(self, stack: list[Any]) -> frozenset[str]:
        """The terminals (``$END`` included) the parser accepts in this state."""
        return frozenset(t for t in self._raw[stack[-1]] if t.isupper() and self.accepts(stack, t))

    def terminal_text(self, name: str) -> str:
        """How to show a terminal in a message: `` `kw` `` for a keyword or punctuation."""
        try:
            pattern = self.lark.get_terminal(name).pattern
        except KeyError:
            return name
        return f"`{pattern.value}`" if pattern.type == "str" else name
