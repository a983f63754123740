"""What runs on a Dask worker: one partition of log lines replayed against the new policy.

:func:`replay_partition` reads each line (:func:`~cedarlite.impact.logline.read_line`),
decides the logged call again with a :class:`~cedarlite.hooks.Guard` built from the new
configuration, tools and rules, and returns one :class:`PartitionResult`: counters, the first
examples, and (when output files are asked for) one row per changed or undecidable call.
Nothing here depends on the other partitions: results are merged by the driver.

The guards are built once per worker process, not per partition: a :class:`Replayer` is kept
per :class:`ReplaySpec` (by its digest) and builds one guard per run context seen (the first
in full, the others with :meth:`Guard.for_context`, which shares the compiled policies). The
replayed guards have no decision log, hooks, approver or session: a call is decided without
a session key (so loop detection and remembered approvals never apply) and an ``ask`` stays
``ask``. With those off a guard's answer is a pure function of (run context, tool, params),
and of less: a tool the run does not offer is blocked whatever its params, and an offered
tool's valid arguments are decided by the values its policies read (a GitHub tool's title
never changes an answer), and of a string that they read only through ``like`` and equality
tests, by the tests it passes (:mod:`~cedarlite.impact.strings`: ``git diff a.py`` and ``git
diff b.py`` are one decision). So answers are memoized per worker process by (run context,
tool, what decides), exactly (:meth:`Replayer.decide`; a property test holds memoized answers
equal to a guard's).

Memo and guard keys are cheap and exact (:func:`memo_text`): the JSON texts of the params
and of the run context as the line wrote them (the fast reader keeps them; the standard
reader's values are written again), of at most :data:`MEMO_TEXT` characters. Equal texts are
the same value (``true`` is not ``1``, as in Cedar and unlike Python); the same value written
two ways only misses the memo.
"""

from __future__ import annotations

import gc
import json
import threading
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import repeat
from typing import TYPE_CHECKING, Any, NamedTuple

from ..data.values import CedarSet
from ..guard import Guard, MemorySessionStore
from ..guard.decision_log import policy_hash
from ..policyset import PolicySet
from ..tools.names import norm
from ..tools.resolve import RuleSet
from .logline import MAX_LINE, BadLine, LogLine, read_line
from .reads import ArgumentReads
from .strings import StringTests

if TYPE_CHECKING:
    from ..data.values import Record
    from ..tools.catalog import ToolInfo

#: Decision memo entries and characters of keys per generation, per worker process (two
#: generations, see :meth:`Replayer._remember`; an entry is charged the text of its key and a
#: little); the longest JSON text of params or run context that is a key (a longer one's call
#: is memoized by the arguments its policies read alone, its run context's guard is not kept);
#: guards kept per worker process (the oldest run contexts are dropped). Every cache is bounded
#: in entries and size.
MEMO_SIZE = 25_000
MEMO_CHARS = 8 * 1024 * 1024
MEMO_TEXT = 4096
GUARDS = 256
#: A tool's calls stop being memoized as logged (exact entries) once :data:`EXACT_TRIAL` of
#: them were kept and fewer than one in :data:`EXACT_RATIO` was found again: calls whose
#: params always differ (a file's content, a search query) only churn the memo. Tool names
#: followed per worker process: :data:`EXACT_TOOLS`, of at most :data:`TOOL_CHARS` characters
#: (the others keep exact entries).
EXACT_TRIAL = 2000
EXACT_RATIO = 20
EXACT_TOOLS = 1000
#: Text from the log kept in a report (examples, messages) is cut to this many characters.
SHOWN = 300
#: Distinct tool names counted per partition (a hostile log could name millions); the rest
#: are counted under OTHER_TOOLS. Names are cut to TOOL_CHARS characters.
PARTITION_TOOLS = 1000
OTHER_TOOLS = "(other tools)"
TOOL_CHARS = 100
#: Logged policy hashes counted per partition.
PARTITION_HASHES = 64

#: Why a logged decision is not compared: it was not the policy's (see ``old_decision``).
OUTSIDE_KINDS = ("loop-detection", "hook", "guard-failure")

_dumps = json.JSONEncoder(ensure_ascii=True, separators=(",", ":")).encode


@dataclass(frozen=True)
class ReplaySpec:
    """Everything a partition needs, picklable: the new ``config`` and ``tools`` (JSON
    values), ``rules`` (Cedar text), ``strict``, the number of ``examples`` kept per
    transition, whether to collect ``rows`` for output files, and the line size limit.
    ``checked``: the fingerprint of the tool catalog the driver validated ``rules`` against
    (``""``: not validated); a worker whose catalog has that fingerprint does not validate
    them again. ``digest`` identifies the policy (worker processes cache guards by it)."""

    config: Any
    tools: list[Any]
    rules: str
    strict: bool = True
    examples: int = 3
    rows: bool = False
    max_line: int = MAX_LINE
    checked: str = ""
    digest: str = field(init=False, compare=False)

    def __post_init__(self) -> None:
        digest = policy_hash(self.config, self.tools, self.rules) + (":s" if self.strict else ":l")
        object.__setattr__(self, "digest", digest)


class New(NamedTuple):
    """The replayed decision of one call."""

    action: str
    denied_reason: str | None
    policies: tuple[str, ...]
    reason: str | None


@dataclass
class PartitionResult:
    """What one partition found (merged by the driver in partition order).

    ``line`` numbers are 0-based indexes into the partition; ``path`` is the file the lines
    came from (``None`` for an empty partition).
    """

    path: str | None = None
    lines: int = 0
    #: (tool, old, new) -> calls compared (old == new included).
    counts: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    #: (tool, old, new, policy or "(denied reason)") -> changed calls it decided.
    responsible: Counter[tuple[str, str, str, str]] = field(default_factory=Counter)
    #: (tool, old, new decided on the logged text) -> undecidable calls.
    undecidable: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    #: (tool, kind) -> calls whose logged decision was not the policy's.
    outside: Counter[tuple[str, str]] = field(default_factory=Counter)
    #: kind -> unreadable lines, and the first few of each kind: (line, kind, message, column).
    unreadable: Counter[str] = field(default_factory=Counter)
    samples: list[tuple[int, str, str, int | None]] = field(default_factory=list)
    #: error message -> calls of runs the new configuration refuses to start.
    rejected: Counter[str] = field(default_factory=Counter)
    #: logged policy_hash -> lines.
    hashes: Counter[str] = field(default_factory=Counter)
    #: transition ("allow->block", or "undecidable") -> the first examples, in line order.
    examples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: rows of changed calls and of undecidable calls (only when the spec asks for rows).
    changes: list[dict[str, Any]] = field(default_factory=list)
    undecidable_rows: list[dict[str, Any]] = field(default_factory=list)
    #: a failure to read the partition's data (I/O, corrupt compression), after ``lines``.
    read_error: str | None = None
    #: errors of the replay itself on a line (bugs: never silent), first few messages.
    internal_errors: int = 0
    internal_samples: list[tuple[int, str]] = field(default_factory=list)


class Replayer:
    """The new policy in one worker process: guards per run context, the decision memo and
    the argument-read analysis (see the module docstring). Thread-safe."""

    def __init__(self, spec: ReplaySpec) -> None:
        self.spec = spec
        self._base: Guard | None = None
        # run context key -> (its guard, or why the run is refused; a number naming the guard
        # in memo keys: never reused, so an entry of a dropped guard is never found again).
        self._guards: dict[Any, tuple[Guard | str, int]] = {}
        self._built = 0
        # memo key -> (answer, characters charged): the current and the old generation.
        self._memo: dict[tuple[Any, ...], tuple[New, int]] = {}
        self._old: dict[tuple[Any, ...], tuple[New, int]] = {}
        self._memo_chars = 0
        # tool name as logged -> [exact entries kept, exact entries found]
        self._exact_use: dict[str, list[int]] = {}
        self._reads: ArgumentReads | None = None
        # normalized tool name -> the names of the arguments its policies read, sorted
        # (_ALL: any), and the positions among them of those read only by string tests, with
        # their tests; only tools of the catalog get here, so it is bounded by the catalog.
        self._read_names: dict[str, tuple[tuple[str, ...], tuple[tuple[int, StringTests], ...]]]
        self._read_names = {}
        self._lock = threading.Lock()

    def guard(self, context_key: Any, context: dict[str, Any]) -> tuple[Guard | str, int]:
        """The guard of a run context (by its :func:`memo_text`, ``None``: not kept), or why
        the new configuration refuses that run; and the number naming it in memo keys."""
        if context_key is None:  # not a context a guard writes: built for this line alone
            return self._build(context), -1
        found = self._guards.get(context_key)  # INVARIANT: entries are never changed
        if found is None:
            with self._lock:
                found = self._guards.get(context_key)
                if found is None:
                    while len(self._guards) >= GUARDS:  # the oldest run context goes
                        del self._guards[next(iter(self._guards))]
                        _thaw()
                    self._built += 1
                    found = self._guards[context_key] = (self._build(context), self._built)
        return found

    def _build(self, context: dict[str, Any]) -> Guard | str:
        spec = self.spec
        try:
            if self._base is None:
                rules: RuleSet | str | None = spec.rules or None
                if spec.rules and spec.checked:  # validated by the driver (`load_rules`
                    # checks that this guard's catalog is the one they were validated against)
                    rules = RuleSet.of(PolicySet.from_str(spec.rules, "<rules>"), spec.checked)
                guard = Guard(
                    spec.config,
                    spec.tools,
                    context,
                    rules=rules,
                    strict=spec.strict,
                    session_store=MemorySessionStore(),
                )
                self._base = guard
            else:
                guard = self._base.for_context(context)
        except Exception as err:  # a run the new configuration refuses to start
            return _cut(f"{type(err).__name__}: {err}")
        # Calls are decided without a session key, which already keeps loop detection off;
        # say so in the guard as well.
        guard.loop_settings = guard.loop_settings._replace(enabled=False)
        return guard

    def decide(self, guard: Guard, number: int, tool: str, params: Any, text: Any) -> New:
        """The new decision of a call of the guard named ``number`` (``-1``: not kept, not
        memoized), memoized twice: by the call as logged (``(number, tool, text)``, with
        ``text`` the JSON text of its params, see :func:`memo_text`: a repeated call costs a
        lookup), and by what its answer depends on (:meth:`read_key`: a call that differs only
        in arguments no policy reads, or in strings that pass the same tests, costs the
        conversion of its arguments and those tests, which a call not seen before then
        reuses). Exact entries are kept only for tools whose calls repeat (see
        :data:`EXACT_TRIAL`)."""
        if number < 0:
            return _decision(guard, tool, params, None)
        use = self._exact_use.get(tool)
        if use is None and len(tool) <= TOOL_CHARS and len(self._exact_use) < EXACT_TOOLS:
            use = self._exact_use[tool] = [0, 0]
        exact = None
        if text is not None and (
            use is None or use[0] < EXACT_TRIAL or use[1] * EXACT_RATIO >= use[0]
        ):
            exact = (number, tool, text)
            new = self._get(exact)
            if new is not None:
                if use is not None:
                    use[1] += 1
                return new
        found = guard.cedar_arguments(tool, params)
        read = self.read_key(number, tool, found)
        new = None if read is None else self._get(read[0])
        if new is None:
            new = _decision(guard, tool, params, found)
            if read is not None:
                self._remember(read[0], new, read[1])
        if exact is not None:
            self._remember(exact, new, 64 + len(tool) + len(text))
            if use is not None:
                use[0] += 1
        return new

    def _get(self, key: tuple[Any, ...]) -> New | None:
        found = self._memo.get(key)
        if found is None and self._old:
            found = self._old.get(key)
            if found is not None:  # still in use: it moves to the current generation
                self._remember(key, found[0], found[1])
        return None if found is None else found[0]

    def _remember(self, key: tuple[Any, ...], new: New, charge: int) -> None:
        """Keep an answer charged ``charge`` characters. The memo has two generations of at
        most :data:`MEMO_SIZE` entries and :data:`MEMO_CHARS` characters: when the current
        one is full it becomes the old one (the older one is dropped), and an answer found in
        the old one moves to the current one; so answers in use stay, the rest age out."""
        if len(self._memo) >= MEMO_SIZE or self._memo_chars + charge > MEMO_CHARS:
            self._old = self._memo
            self._memo = {}
            self._memo_chars = 0
        self._memo[key] = (new, charge)
        self._memo_chars += charge

    def read_key(
        self,
        number: int,
        tool: str,
        found: tuple[ToolInfo, Record | None] | None,
    ) -> tuple[tuple[Any, ...], int] | None:
        """The exact memo key of a call by what its answer depends on, given its
        :meth:`Guard.cedar_arguments` (``found``), and what its entry is charged (the text it
        holds, and a little): ``(number, tool)`` for a tool the run does not offer (nothing
        else); ``(number, tool, values, classes)`` of the arguments the tool's policies read
        (:meth:`ArgumentReads.attributes`), when those are all strings, integers, booleans or sets
        of strings (an ``exec`` call's derived ``shortOptions``)
        (``_ABSENT`` when missing: ``has`` can tell) and of at most :data:`MEMO_TEXT`
        characters; else ``None``. A string read only by ``like`` and equality tests
        (:meth:`ArgumentReads.string_tests`) is in ``values`` as the set of tests it passes
        (:meth:`StringTests.key`; ``classes`` keeps it a string)."""
        if found is None:
            return (number, tool), 64 + len(tool)
        info, arguments = found
        if arguments is None:
            return None
        names, tested = self._names(info.normalized)
        if names is _ALL:
            return None
        values = tuple(map(arguments.get, names, repeat(_ABSENT)))
        classes = tuple(map(type, values))
        if not _KEYED.issuperset(classes):
            return None
        extra = 0
        if CedarSet in classes:  # a set of strings (an exec call's `shortOptions`), keyed whole
            for v in values:
                if v.__class__ is CedarSet:
                    if not all(k.__class__ is str for k in v):
                        return None
                    extra += sum(map(len, v)) + len(v)
        if tested:
            keyed = list(values)
            for i, tests in tested:
                value = keyed[i]
                if value.__class__ is str:  # (any length: the key holds a number)
                    keyed[i] = tests.key(value)
            values = tuple(keyed)
        chars = sum([len(v) for v in values if v.__class__ is str]) + extra
        if chars > MEMO_TEXT:
            return None
        return (number, tool, values, classes), 64 + len(tool) + chars

    def _names(self, tool: str) -> tuple[tuple[str, ...], tuple[tuple[int, StringTests], ...]]:
        """The names of the arguments the policies of ``tool`` (normalized) read, sorted
        (:data:`_ALL`: any), and the positions of those read only by string tests among them,
        with their tests."""
        found = self._read_names.get(tool)
        if found is None:
            reads = self.reads()
            read = reads.attributes(tool)
            if read is None:
                found = (_ALL, ())
            else:
                names = tuple(sorted(read))
                tests = reads.string_tests(tool)
                found = (names, tuple([(i, tests[n]) for i, n in enumerate(names) if n in tests]))
            self._read_names[tool] = found
        return found

    def reads(self) -> ArgumentReads:
        """The argument reads of the new policy (the same for every run context)."""
        with self._lock:
            if self._reads is None:
                base = self._base
                assert base is not None  # a guard was built before any call is decided
                self._reads = ArgumentReads(
                    base.policies.active,
                    base.policies.labels,
                    base.policy.catalog,
                    base.policy.entities,
                )
            return self._reads

    def undecidable(self, rec: LogLine, old: str, new: New) -> tuple[str, str] | None:
        """``(pointer, why)`` when the new decision may depend on a redacted value."""
        for pointer in rec.redacted:  # the run context decides which tools a run has
            if pointer.startswith("/context"):
                return pointer, "a value of the run context is redacted"
        if new.denied_reason in ("not-offered", "run-rejected"):
            return None  # decided before the arguments are looked at
        old_invalid = old == "block" and rec.denied_reason == "invalid-arguments"
        new_invalid = new.action == "block" and new.denied_reason == "invalid-arguments"
        if old_invalid and new_invalid:
            return None  # the arguments did not fit the schema, and still do not
        if old_invalid or new_invalid:
            why = "a redacted value decides whether the arguments fit the tool's schema"
            return rec.redacted[0], why
        reads = self.reads()
        tool = norm(rec.tool)
        for pointer in rec.redacted:
            readers = reads.pointer_readers(tool, pointer)
            if readers:
                shown = ", ".join(readers[:3]) + (", ..." if len(readers) > 3 else "")
                return pointer, f"read by {shown}"
        return None


def _decision(guard: Guard, tool: str, params: Any, found: Any) -> New:
    """The guard's answer to a call (whose :meth:`Guard.cedar_arguments` are ``found``, when
    known), as a replay keeps it."""
    out = guard.decide_arguments(tool, params, found)
    return New(out.action, out.denied_reason, out.policies, out.reason)


class _Absent:
    __slots__ = ()


#: Memo keys: an argument that is absent, the classes of argument values a key may hold
#: (the class is in the key: ``True == 1`` in Python, not in Cedar), the mark of a tool whose
#: policies may read any argument.
_ABSENT = _Absent()
_KEYED = frozenset({str, int, bool, _Absent, CedarSet})
_ALL: tuple[str, ...] = ("(all)",)


_REPLAYERS: dict[str, Replayer] = {}
_REPLAYERS_LOCK = threading.Lock()


def replayer(spec: ReplaySpec) -> Replayer:
    """This process's :class:`Replayer` of ``spec`` (the two most recent specs are kept)."""
    with _REPLAYERS_LOCK:
        found = _REPLAYERS.get(spec.digest)
        if found is None:
            while len(_REPLAYERS) >= 2:
                del _REPLAYERS[next(iter(_REPLAYERS))]
                _thaw()
            found = _REPLAYERS[spec.digest] = Replayer(spec)
        return found


#: Whether this process is a worker cedarlite started for a replay (the local scheduler's
#: pool: see :func:`own_process`), where the replay may tune the cyclic garbage collector.
_OWN_PROCESS = False


def own_process() -> None:
    """Mark this process as a replay worker cedarlite owns (the initializer of the local
    scheduler's pool; never called in a user's process or a ``dask.distributed`` worker).

    Its guards and memo live as long as the process, and the cyclic garbage collector's full
    collections traverse every object alive: in a long replay, re-traversing the compiled
    policies of every guard was a tenth to a fifth of a worker's time. So each partition ends
    with :func:`gc.freeze`, which moves the objects then alive out of later collections
    (reference counting still frees them); dropping a guard or a replayer unfreezes them, and
    the partition then ends with a full collection before it freezes again, so that any cycle
    the dropped objects held is collected (a log of more than :data:`GUARDS` run contexts)."""
    global _OWN_PROCESS
    _OWN_PROCESS = True


_thawed = False


def _freeze() -> None:
    global _thawed
    if _OWN_PROCESS:
        if _thawed:
            _thawed = False
            gc.collect()
        gc.freeze()


def _thaw() -> None:
    global _thawed
    if _OWN_PROCESS:
        _thawed = True
        gc.unfreeze()


def forget_replayers() -> None:
    """Drop this process's replayers (their guards and memo)."""
    with _REPLAYERS_LOCK:
        _REPLAYERS.clear()
        _thaw()


def transition(old: str, new: str) -> str:
    """``"allow->block"``: the key of a transition in the report and in ``summary.json``."""
    return f"{old}->{new}"


def old_decision(rec: LogLine) -> tuple[str | None, str | None]:
    """``(old, None)``: the logged decision of the policy (``allow``/``block``/``ask``); or
    ``(None, kind)`` when the logged decision was made by something a replay does not run:

    * a failure of the guard or of a hook (``error`` set): ``guard-failure``;
    * loop detection (``tool-loop``): ``loop-detection``;
    * a hook or trusted policy that blocked (``plugin-before-tool-call`` without approvals),
      or the host (``host``: the Claude Code hook refusing a write to the guard's own files):
      ``hook``.

    A call that needed approvals is compared on what the policy said before anyone answered:
    ``ask`` when a policy asked (an approval without a plugin), else ``allow`` (only hooks
    asked, after the policy allowed), whatever the person decided.
    """
    if rec.error is not None:
        return None, "guard-failure"
    if rec.decision == "block" and rec.denied_reason == "tool-loop":
        return None, "loop-detection"
    if rec.approvals:
        asked = any(a.get("plugin") is None for a in rec.approvals)
        return ("ask" if asked else "allow"), None
    if rec.decision == "block" and rec.denied_reason in (
        "plugin-before-tool-call",
        "plugin-approval",
        "host",
    ):
        return None, "hook"
    return rec.decision, None


class _Partition:
    """The state of one partition being replayed."""

    def __init__(self, spec: ReplaySpec) -> None:
        self.spec = spec
        self.result = PartitionResult()
        self.tools: dict[str, str] = {}
        # The result's two counters of every line, as plain dicts until the partition ends.
        self.counts: dict[tuple[str, str, str], int] = {}
        self.hashes: dict[str, int] = {}

    def tool_key(self, tool: str) -> str:
        key = self.tools.get(tool)
        if key is None:
            if len(self.tools) >= PARTITION_TOOLS:
                return OTHER_TOOLS
            key = tool if len(tool) <= TOOL_CHARS else tool[: TOOL_CHARS - 3] + "..."
            self.tools[tool] = key
        return key

    def bad(self, index: int, bad: BadLine) -> None:
        r = self.result
        r.unreadable[bad.kind] += 1
        if r.unreadable[bad.kind] <= self.spec.examples:
            r.samples.append((index, bad.kind, bad.message, bad.column))

    def example(self, transition: str, item: dict[str, Any]) -> None:
        found = self.result.examples.setdefault(transition, [])
        if len(found) < self.spec.examples:
            found.append(item)


def replay_partition(lines: Iterable[tuple[str, str]], spec: ReplaySpec) -> list[PartitionResult]:
    """Replay one partition of ``(line, path)`` pairs (a ``dask.bag`` partition of the log);
    returns ``[PartitionResult]``. Never raises for the data: an unreadable line is counted,
    a failure to read the rest of the partition is recorded in ``read_error``."""
    part = _Partition(spec)
    result = part.result
    rep = replayer(spec)
    index = 0
    source: Iterator[tuple[str, str]] = iter(lines)
    while True:
        try:
            item = next(source, None)
        except Exception as err:  # I/O errors, corrupt compressed data
            result.read_error = f"{type(err).__name__}: {err}"
            break
        if item is None:
            break
        text, path = item
        if result.path is None:
            result.path = path
        try:
            _replay_line(part, rep, index, text)
        except Exception as err:  # a bug of ours: counted and shown, never silent
            result.internal_errors += 1
            if len(result.internal_samples) < spec.examples:
                result.internal_samples.append((index, f"{type(err).__name__}: {err}"))
        index += 1
    result.lines = index
    result.counts.update(part.counts)
    result.hashes.update(part.hashes)
    _freeze()
    return [result]


def _replay_line(part: _Partition, rep: Replayer, index: int, text: str) -> None:
    spec = part.spec
    result = part.result
    rec = read_line(text, max_line=spec.max_line)
    if isinstance(rec, BadLine):
        part.bad(index, rec)
        return
    logged = rec.policy_hash
    if logged is not None:
        hashes = part.hashes
        seen = hashes.get(logged)
        if seen is not None:
            hashes[logged] = seen + 1
        elif len(logged) <= 100 and len(hashes) < PARTITION_HASHES:
            hashes[logged] = 1
    tool = part.tool_key(rec.tool)
    old, outside = old_decision(rec)
    if old is None:
        assert outside is not None
        result.outside[(tool, outside)] += 1
        return
    guard, number = rep.guard(memo_text(rec.context_text, rec.context), rec.context)
    if isinstance(guard, str):
        new = New("block", "run-rejected", (), guard)
        result.rejected[guard] += 1
    else:
        params_key = memo_text(rec.params_text, rec.params)
        new = rep.decide(guard, number, rec.tool, rec.params, params_key)
    if rec.redacted:
        found = rep.undecidable(rec, old, new)
        if found is not None:
            pointer, why = found
            params_text = _text(rec.params)
            result.undecidable[(tool, old, new.action)] += 1
            part.example("undecidable", _example(index, rec, old, new, params_text, pointer, why))
            if spec.rows:
                row = _row(index, rec, old, new, params_text)
                row.update(redacted=pointer, why=why)
                result.undecidable_rows.append(row)
            return
    key = (tool, old, new.action)
    part.counts[key] = part.counts.get(key, 0) + 1
    if old == new.action:
        return
    params_text = _text(rec.params)
    for policy in new.policies or (f"({new.denied_reason})",):
        result.responsible[(tool, old, new.action, policy)] += 1
    part.example(transition(old, new.action), _example(index, rec, old, new, params_text))
    if spec.rows:
        result.changes.append(_row(index, rec, old, new, params_text))


def _text(value: Any) -> str | None:
    """The JSON text of a logged value, ``None`` when it is nested deeper than the encoder goes
    (then nothing about it is memoized)."""
    try:
        return _dumps(value)
    except (RecursionError, ValueError):
        return None


def memo_text(text: bytes | None, value: Any) -> bytes | str | None:
    """The memo key of a logged value: its JSON text as logged (``text``, from the fast
    reader) or as written again, when at most :data:`MEMO_TEXT` characters (else ``None``: not
    memoized). Equal texts are the same JSON value; the same value written differently only
    misses the memo."""
    key = _text(value) if text is None else text
    return key if key is not None and len(key) <= MEMO_TEXT else None


#: What the output shows for params nested too deeply to write.
UNWRITABLE = '"<params nested too deeply to write>"'


def _example(
    index: int,
    rec: LogLine,
    old: str,
    new: New,
    params_text: str | None,
    pointer: str | None = None,
    why: str | None = None,
) -> dict[str, Any]:
    """One example call for the report (params as logged; long or deeply nested ones as
    cut JSON text, so that a report never nests deeper than a log line may)."""
    params: Any = rec.params
    if params_text is None:
        params = json.loads(UNWRITABLE)
    elif len(params_text) > 2000 or params_text.count("[") + params_text.count("{") > 100:
        params = _cut(params_text, 2000)
    out: dict[str, Any] = {
        "line": index,
        "session": _cut(rec.session),
        "call_id": _cut(rec.call_id),
        "agent": _cut(rec.agent),
        "tool": _cut(rec.tool),
        "params": params,
        "old": {
            "decision": old,
            "logged": rec.decision,
            "denied_reason": _cut(rec.denied_reason),
            "reason": _cut(rec.reason),
            "policies": [_cut(p) for p in rec.policies[:10]],
        },
        "new": {
            "decision": new.action,
            "denied_reason": new.denied_reason,
            "reason": _cut(new.reason),
            "policies": list(new.policies),
        },
    }
    if pointer is not None:
        out.update(redacted=_cut(pointer), why=why)
    return out


def _cut(text: str | None, limit: int = SHOWN) -> Any:
    """Text from the log as a report shows it: at most ``limit`` characters."""
    if text is None or len(text) <= limit:
        return text
    return text[: limit - 3] + "..."


def _row(index: int, rec: LogLine, old: str, new: New, params_text: str | None) -> dict[str, Any]:
    """One line of ``changes.jsonl`` (the driver adds ``file`` and the line number)."""
    return {
        "line": index,
        "ts": rec.ts,
        "session": rec.session,
        "run": rec.run,
        "call_id": rec.call_id,
        "agent": rec.agent,
        "tool": rec.tool,
        "old": old,
        "new": new.action,
        "policies": list(new.policies),
        "denied_reason": new.denied_reason,
        "reason": new.reason,
        "old_logged": rec.decision,
        "old_policies": list(rec.policies),
        "params": UNWRITABLE if params_text is None else params_text,
        "params_rewritten": rec.params_rewritten,
    }


def seen_tools(lines: Iterable[tuple[str, str]], max_line: int = MAX_LINE) -> list[set[Any]]:
    """The pre-pass of a replay without a tool list: the ``(tool, plugin)`` pairs of the log
    that were tools of the logged run (see :func:`known_tool`). Unreadable lines are skipped
    here; the replay itself counts them."""
    found: set[tuple[str, str | None]] = set()
    source = iter(lines)
    while len(found) <= 10_000:
        try:
            item = next(source, None)
        except Exception:  # the replay reports the same read error
            break
        if item is None:
            break
        rec = read_line(item[0], max_line=max_line)
        if isinstance(rec, LogLine) and known_tool(rec):
            found.add((rec.tool, rec.plugin))
    return [found]


def known_tool(rec: LogLine) -> bool:
    """Whether the logged call names a tool of the run's catalog: one with a plugin, or any
    tool the guard did not block as unknown (an unknown tool is blocked ``not-offered``
    without a layer: no policy removed it, it was never there)."""
    if rec.plugin is not None:
        return True
    return not (rec.decision == "block" and rec.denied_reason == "not-offered" and not rec.policies)
