"""The replay driver: inputs checked up front, the log as a ``dask.bag``, results merged.

:func:`replay` validates everything a worker would otherwise fail on (the log paths, the
configuration, the tool list before Dask starts; the rules while the first partitions run, whose
results are used only if they pass), builds one ``dask.bag`` of lines
per log file (blocks of lines for plain files; one streamed partition per compressed
file, whose lines are read as they are replayed), maps :func:`~cedarlite.impact.worker.
replay_partition` over the partitions, and merges their results in partition order with at
most a few partitions in flight, so the driver holds a bounded number of results and streams
changed calls to ``--out`` files as they arrive.

Without a scheduler the partitions run on Dask's local multiprocessing scheduler (a pool of
``workers`` processes, the cores of this machine by default); with one, on a
``dask.distributed`` cluster (an address, or a ``Client``).
"""

from __future__ import annotations

import contextlib
import glob
import importlib
import json
import os
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from itertools import islice
from pathlib import Path
from typing import Any, TextIO

from ..data.jsonvalue import load_json
from ..errors import CedarliteError
from ..guard.decision_log import policy_hash
from ..policyset import PolicySet
from ..tools import ToolCatalog, ToolPolicy
from ..tools.catalog import tool_list as tool_list_of
from .logline import MAX_LINE
from .report import ReplayReport, ReportBuilder
from .worker import (
    PartitionResult,
    ReplaySpec,
    forget_replayers,
    own_process,
    replay_partition,
    seen_tools,
)

#: Block size of the partitions of plain (uncompressed) log files: by default the logs' total
#: size over PARTITIONS_PER_WORKER times the workers (so that the last partitions to finish
#: leave the workers idle for little of the run), between MIN_BLOCKSIZE and BLOCKSIZE.
BLOCKSIZE = 16 * 1024 * 1024
MIN_BLOCKSIZE = 1024 * 1024
PARTITIONS_PER_WORKER = 16

INSTALL_HINT = "pip install 'cedarlite[replay]'"

#: What a replay does not run, said in every report.
NOTES = (
    "replayed without loop detection (it depends on the session's history), hooks, trusted "
    "policies or an approver: a call the new policy asks about stays `ask`",
)

Progress = Callable[[str, int, int, int], Any]


class ReplayError(CedarliteError):
    """A replay that cannot start: no log file, Dask missing, a bad configuration value."""

    code = "E0950"


def replay(
    logs: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    config: Mapping[str, Any] | str | os.PathLike[str] | None,
    rules: PolicySet | str | os.PathLike[str] | Iterable[str | os.PathLike[str]] | None = None,
    *,
    tools: Iterable[Mapping[str, Any]] | None = None,
    catalog: Callable[[list[dict[str, Any]]], list[Mapping[str, Any]]] | None = None,
    scheduler: Any = None,
    workers: int | None = None,
    out: str | os.PathLike[str] | None = None,
    strict: bool = True,
    blocksize: int | None = None,
    examples: int = 3,
    max_line: int = MAX_LINE,
    progress: Progress | None = None,
) -> ReplayReport:
    """Replay decision logs against a new policy and report what would change.

    ``logs``: paths or glob patterns of the guard's JSON-lines decision logs (plain, or
    compressed: ``.gz``, ``.bz2``, ``.xz``...). ``config``: the new tools configuration (an
    object, its JSON text, or a path to a JSON file). ``rules``: the new argument rules, as a
    :class:`~cedarlite.hooks.Guard` takes them. ``tools``: the run's tool list; without it the
    catalog is the tools the log shows the logged runs had (docs/replay.md, "The tool
    catalog"), or, with ``catalog``, what ``catalog`` makes of those (the run's tool list as a
    host builds it: :func:`~cedarlite.impact.hook.hook_catalog`). ``scheduler``: ``None`` (or
    ``"processes"``) for Dask's local multiprocessing scheduler with ``workers`` processes
    (default: the CPU count); ``"sync"`` for Dask's synchronous scheduler in this process (small
    logs, debugging); or a ``dask.distributed`` address (``"tcp://host:8786"``) or ``Client``.
    ``out``: a directory to write ``changes.jsonl``, ``undecidable.jsonl``, ``summary.json``
    (and ``changes.parquet`` when pyarrow is installed) into. ``progress(phase, done, total,
    lines)`` is called as partitions complete (``phase``: ``"tools"`` for the pass that finds
    the catalog, then ``"replay"``).

    Raises :class:`ReplayError` when the replay cannot start (no such log, Dask missing),
    :class:`~cedarlite.tools.ConfigError` for a configuration that does not validate
    (``strict``), :class:`~cedarlite.tools.RulesError` for rules that do not; bad log lines
    are never errors: they are counted in the report.
    """
    started = time.perf_counter()
    if workers is not None and workers < 1:
        raise ReplayError(f"workers must be at least 1, not {workers}")
    if examples < 0 or (blocksize is not None and blocksize < 1) or max_line < 1:
        raise ReplayError("examples must be at least 0, blocksize and max_line at least 1")
    _require_dask(distributed=scheduler not in (None, "processes", "sync", "synchronous"))
    files = expand_logs(logs)
    config_value = _config(config)
    if strict:  # fail fast, before any pass over the log
        ToolPolicy(config_value, ToolCatalog.core(), strict=True)
    rule_text, rule_source = _rules(rules)
    given = None if tools is None else [dict(t) for t in tool_list_of(tools)]
    with _Runner.start(scheduler, workers) as runner:
        if blocksize is None:
            blocksize = auto_blocksize(files, runner.workers)
        if given is not None:
            shown, tool_list = "given", given
        else:
            shown = "the tools the log shows"
            tool_list = _tools_from_log(runner, files, blocksize, max_line, progress)
            if catalog is not None:
                shown = "the host's, with the tools the log shows"
                tool_list = [dict(t) for t in tool_list_of(catalog(tool_list))]
        policy = ToolPolicy(config_value, tool_list, strict=strict)
        # The workers take the rules as validated against this catalog (`checked`: they do
        # not validate them again) and start on the log while they are validated here: no
        # result is used unless they pass.
        checked = policy.catalog.fingerprint if strict and rule_text else ""
        spec = ReplaySpec(
            config_value,
            tool_list,
            rule_text,
            strict,
            examples,
            out is not None,
            max_line,
            checked,
        )
        tasks, names = _partitions(files, blocksize, runner.workers, replay_partition, spec)
        results = runner.run(tasks, names)  # the first partitions start now
        canonical = ""
        if rule_text:
            policy.load_rules(rule_source, validate=strict)  # errors name the files
            # The canonical text a guard hashes (of the one text the workers get).
            canonical = PolicySet(list(PolicySet.from_str(rule_text).active)).to_cedar()
        notes = NOTES + tuple(f"configuration: {w}" for w in policy.warnings)
        builder = ReportBuilder(tuple(files), examples)
        with _Outputs.open(out) as outputs:
            for done, result in enumerate(results, 1):
                path, first = builder.line_base(result)
                outputs.write(result, path, first)
                builder.add(result)
                if progress is not None:
                    progress("replay", done, len(tasks), builder.lines)
            report = builder.report(
                policy_hash=policy_hash(config_value, tool_list, canonical),
                catalog=f"{shown}, {len(policy.catalog.registered):,} tools",
                notes=notes,
            )
            report = replace(
                report,
                elapsed=time.perf_counter() - started,
                workers=runner.workers,
                scheduler=runner.name,
            )
            outputs.finish(report)
    return report


# ---------------------------------------------------------------------------------------------
# Inputs


def auto_blocksize(files: Sequence[str], workers: int) -> int:
    """The default block size: :data:`PARTITIONS_PER_WORKER` partitions per worker of the
    plain files' total size, between :data:`MIN_BLOCKSIZE` and :data:`BLOCKSIZE` (a
    compressed file is one partition, read as a stream)."""
    # lazy on purpose: an optional dependency (cedarlite[replay]); `import cedarlite` never loads it
    from fsspec.utils import infer_compression

    total = 0
    for path in files:
        if infer_compression(path) is None:
            with contextlib.suppress(OSError):  # gone since: the replay says so
                total += os.path.getsize(path)
    share = total // (PARTITIONS_PER_WORKER * workers)
    return max(MIN_BLOCKSIZE, min(BLOCKSIZE, share))


def _require_dask(distributed: bool) -> None:
    try:
        import dask.bag  # noqa: F401
    except ImportError:
        raise ReplayError(f"replaying a log needs Dask: {INSTALL_HINT}") from None
    if distributed:
        try:
            import distributed as _  # noqa: F401
        except ImportError:
            raise ReplayError(
                f"replaying on a cluster needs dask.distributed: {INSTALL_HINT}"
            ) from None


def expand_logs(logs: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> list[str]:
    """The log files named by paths and glob patterns (``*``, ``?``, ``[...]``, ``**``), each
    pattern's matches sorted, duplicates dropped. A pattern that matches nothing, a missing
    file or a directory is a :class:`ReplayError`."""
    items = [logs] if isinstance(logs, str | os.PathLike) else list(logs)
    if not items:
        raise ReplayError("no decision log given")
    files: dict[str, None] = {}
    for item in items:
        name = os.fspath(item)
        if glob.has_magic(name):
            matches = sorted(m for m in glob.glob(name, recursive=True) if os.path.isfile(m))
            if not matches:
                raise ReplayError(f"no decision log matches `{name}`")
        elif os.path.isdir(name):
            raise ReplayError(f"`{name}` is a directory: name the log files (`{name}/*.jsonl`)")
        elif not os.path.isfile(name):
            raise ReplayError(f"cannot read the decision log `{name}`: no such file")
        else:
            matches = [name]
        for m in matches:
            files.setdefault(m, None)
    return list(files)


def _config(config: Mapping[str, Any] | str | os.PathLike[str] | None) -> Any:
    if config is None:
        return {}
    if isinstance(config, os.PathLike):
        path = os.fspath(config)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise ReplayError(f"cannot read the configuration `{path}`: {err}") from None
        return load_json(text, path, ReplayError)
    if isinstance(config, str):
        return load_json(config, "<config>", ReplayError)
    return config


def _rules(rules: Any) -> tuple[str, Any]:
    """The rules as one Cedar text for the workers (files concatenated in order, so that
    policies are numbered as a guard numbers the policies of several files), and the rules
    as given, to validate (so that errors name the files)."""
    if rules is None:
        return "", None
    if isinstance(rules, PolicySet):
        return (rules.text if rules.text is not None else rules.to_cedar()), rules
    if isinstance(rules, str):
        return rules, rules
    paths = [rules] if isinstance(rules, os.PathLike) else list(rules)
    texts = []
    for path in paths:
        if not isinstance(path, str | os.PathLike):
            raise ReplayError(f"a rules path must be a string, not `{type(path).__name__}`")
        texts.append(PolicySet.from_file(path).text or "")
    return "\n".join(texts), paths


def _tools_from_log(
    runner: _Runner, files: list[str], blocksize: int, max_line: int, progress: Progress | None
) -> list[dict[str, Any]]:
    """The pre-pass: the tools the logged runs had, sorted (a deterministic catalog)."""
    tasks, names = _partitions(files, blocksize, runner.workers, seen_tools, max_line)
    found: set[tuple[str, str | None]] = set()
    for i, result in enumerate(runner.run(tasks, names, kind=set)):
        found |= result
        if progress is not None:
            progress("tools", i + 1, len(tasks), 0)
    if len(found) > 10_000:
        raise ReplayError(
            "the log names more than 10,000 tools: give the run's tool list (--tools)"
        )
    ordered = sorted(found, key=lambda tp: (tp[0], tp[1] or ""))
    return [{"name": t} if p is None else {"name": t, "pluginId": p} for t, p in ordered]


# ---------------------------------------------------------------------------------------------
# Partitions


class _BlockLines:
    """The lines of a block of a plain log file (:func:`_read_block` ends every block but the
    file's last at a line end): decoded once, each line cut from the text as it is
    iterated. (``dask.bag.read_text`` splits a block through ``io.StringIO``: 3.2 to 4.0 µs a
    line of the benchmark's log, against 0.6 to 0.9 here.)"""

    def __init__(self, block: bytes) -> None:
        self.block = block

    def __iter__(self) -> Iterator[str]:
        text = self.block.decode("utf-8", "surrogateescape")
        find, start, size = text.find, 0, len(text)
        while start < size:
            end = find("\n", start) + 1 or size
            yield text[start:end]
            start = end


class _LineStream:
    """The lines of a compressed log file, read as they are iterated (a picklable, lazy
    ``dask.bag`` partition: the file is never held in memory)."""

    def __init__(self, open_file: Any) -> None:
        self.open_file = open_file

    def __iter__(self) -> Iterator[str]:
        with self.open_file as f:
            yield from f


def block_spans(size: int, blocksize: int, tail: int) -> list[tuple[int, int]]:
    """``(offset, length)`` of the blocks of a plain file of ``size`` bytes: ``blocksize``
    each, but its last ``tail`` bytes or more (``workers * blocksize``) in blocks of a quarter,
    so that the workers' last partitions end close together. A block read from ``offset``
    starts after the first line end at or after it and ends at the first line end at or after
    ``offset + length`` (:func:`fsspec.utils.read_block`): every line is in one block."""
    head = max(0, size - tail) // blocksize * blocksize
    starts = [*range(0, min(head, size), blocksize), *range(head, size, max(1, blocksize // 4))]
    ends = [*starts[1:], size] if starts else []
    return [(start, end - start) for start, end in zip(starts, ends, strict=True)]


def _read_block(path: str, offset: int, length: int) -> bytes:
    # lazy on purpose: an optional dependency (cedarlite[replay]); `import cedarlite` never loads it
    from fsspec.utils import read_block

    with open(path, "rb") as f:
        return read_block(f, offset, length, delimiter=b"\n")


def _partitions(
    files: Sequence[str], blocksize: int, workers: int, fn: Callable[..., Any], *args: Any
) -> tuple[list[Any], list[str]]:
    """One Dask task per partition of each file's bag of lines, mapped with ``fn(lines, path,
    *args)``; and each task's file."""
    # lazy on purpose: an optional dependency (cedarlite[replay]); `import cedarlite` never loads it
    import dask.bag as db
    from dask import delayed
    from fsspec.core import open_files
    from fsspec.utils import infer_compression

    tasks: list[Any] = []
    names: list[str] = []
    for path in files:
        try:
            size = os.path.getsize(path)
            if size == 0:
                continue  # no line (and Dask's reader refuses an empty file)
            compression = infer_compression(path)
            suffix = os.path.splitext(path)[1]
            if compression is None and suffix in _NEEDS_LIBRARY:
                raise ReplayError(
                    f"cannot read the decision log `{path}`: its {suffix} compression needs "
                    f"the `{_NEEDS_LIBRARY[suffix]}` package"
                )
            if compression is not None:
                (open_file,) = open_files(
                    path, "rt", compression=compression, encoding="utf-8",
                    errors="surrogateescape", newline="\n",
                )  # fmt: skip
                lines = db.from_delayed([delayed(_LineStream)(open_file)])
            else:
                spans = block_spans(size, blocksize, workers * blocksize)
                read = delayed(_read_block)
                lines = db.from_delayed([delayed(_BlockLines)(read(path, *s)) for s in spans])
        except (OSError, ValueError) as err:  # gone since, or a compression without its library
            raise ReplayError(f"cannot read the decision log `{path}`: {err}") from None
        part_tasks = lines.map_partitions(_call, fn, path, *args).to_delayed()
        tasks += part_tasks
        names += [path] * len(part_tasks)
    return tasks, names


#: Compressed files whose codec fsspec knows only when a package is installed.
_NEEDS_LIBRARY = {".zst": "zstandard", ".lz4": "lz4", ".sz": "python-snappy"}


def _call(lines: Iterable[str], fn: Callable[..., Any], path: str, *args: Any) -> Any:
    """A partition's task: ``fn`` over its lines (each with the file's name)."""
    return fn(((line, path) for line in lines), *args)


# ---------------------------------------------------------------------------------------------
# Running


class _Runner:
    """Runs partition tasks with at most ``2 * workers`` in flight and yields their results
    in partition order (the driver holds at most that many results)."""

    def __init__(self, submit: Callable[[Any], Any], workers: int, name: str) -> None:
        self._submit = submit
        self.workers = workers
        self.name = name
        self._closers: list[Callable[[], Any]] = []

    @classmethod
    @contextlib.contextmanager
    def start(cls, scheduler: Any, workers: int | None) -> Iterator[_Runner]:
        """A runner on the local scheduler (``scheduler=None``) or a distributed cluster."""
        if scheduler is None or scheduler == "processes":
            runner = cls._local(workers or os.cpu_count() or 1)
        elif scheduler in ("sync", "synchronous"):
            runner = cls._synchronous()
        else:
            runner = cls._distributed(scheduler)
        try:
            yield runner
        finally:
            for close in reversed(runner._closers):
                with contextlib.suppress(Exception):
                    close()

    @classmethod
    def _local(cls, workers: int) -> _Runner:
        # lazy on purpose: an optional dependency (cedarlite[replay]); `import cedarlite` never
        # loads it
        import concurrent.futures

        import dask
        from dask.multiprocessing import get

        # One pool for the whole replay, so that each process builds its guards once; each
        # partition is one compute on Dask's multiprocessing scheduler, from its own thread.
        # The scheduler is given as its function: named by a string, Dask first imports
        # `distributed` (0.5 s of CPU, when installed) to look for a client.
        pool = concurrent.futures.ProcessPoolExecutor(
            workers, mp_context=_process_context(), initializer=own_process
        )
        threads = concurrent.futures.ThreadPoolExecutor(2 * workers)
        # The processes start now, from a thread: the first waits for the fork server to
        # import the modules, while the driver reads and validates its inputs.
        threads.submit(lambda: [pool.submit(_warm_up) for _ in range(workers)])

        def submit(task: Any) -> Any:
            return threads.submit(lambda: dask.compute(task, scheduler=get, pool=pool)[0])

        plural = "" if workers == 1 else "es"
        runner = cls(submit, workers, f"dask local scheduler ({workers} process{plural})")
        runner._closers += [lambda: pool.shutdown(cancel_futures=True), threads.shutdown]
        return runner

    @classmethod
    def _synchronous(cls) -> _Runner:
        # lazy on purpose: an optional dependency (cedarlite[replay]); `import cedarlite` never
        # loads it
        import concurrent.futures

        import dask
        from dask.local import get_sync

        def submit(task: Any) -> Any:
            done: concurrent.futures.Future[Any] = concurrent.futures.Future()
            try:
                done.set_result(dask.compute(task, scheduler=get_sync)[0])
            except Exception as err:
                done.set_exception(err)
            return done

        runner = cls(submit, 1, "dask synchronous scheduler (this process)")
        runner._closers.append(forget_replayers)  # the guards built here are not kept
        return runner

    @classmethod
    def _distributed(cls, scheduler: Any) -> _Runner:
        # lazy on purpose: an optional dependency (cedarlite[replay]); `import cedarlite` never
        # loads it
        from distributed import Client

        if isinstance(scheduler, Client):
            client, own = scheduler, False
        else:
            try:
                client, own = Client(scheduler, timeout="10s"), True
            except Exception as err:
                raise ReplayError(
                    f"cannot connect to the Dask scheduler `{scheduler}`: {err}"
                ) from None
        workers = max(1, sum(client.nthreads().values()))
        address = getattr(client.scheduler, "address", scheduler)
        runner = cls(client.compute, workers, f"dask.distributed {address}")
        if own:
            runner._closers.append(client.close)
        return runner

    def run(
        self, tasks: list[Any], names: list[str], kind: type = PartitionResult
    ) -> Iterator[Any]:
        """The results of ``tasks``, in order; the first ``2 * workers`` are submitted now,
        each of the others when a result is taken. A task that fails (its data cannot be read
        at all) yields an empty result with the error, never stops the replay."""
        ahead = iter(zip(tasks, names, strict=True))
        pending = deque((self._submit(t), n) for t, n in islice(ahead, 2 * self.workers))
        return self._results(pending, ahead, kind)

    def _results(
        self, pending: deque[tuple[Any, str]], ahead: Iterator[tuple[Any, str]], kind: type
    ) -> Iterator[Any]:
        # lazy on purpose: only local worker processes can break
        from concurrent.futures.process import BrokenProcessPool

        while pending:
            future, name = pending.popleft()
            try:
                (result,) = future.result()
            except BrokenProcessPool as err:  # no partition can run any more: not the data's
                why = str(err).rstrip(".")
                raise ReplayError(
                    f"the replay's worker processes stopped ({why}): one may have been killed "
                    "(out of memory?), or Python cannot start them for this program (one read "
                    "from standard input); run it from a file, or with the `sync` scheduler"
                ) from None
            except Exception as err:
                result = kind() if kind is not PartitionResult else _failed(name, err)
            nxt = next(ahead, None)
            if nxt is not None:
                pending.append((self._submit(nxt[0]), nxt[1]))
            yield result


#: What the local pool's processes import before their first partition.
WORKER_MODULES = ("cedarlite.impact.worker", "dask.multiprocessing", "fsspec.utils")


def _process_context() -> Any:
    """The start method of the local pool's processes: a fork server that has imported
    :data:`WORKER_MODULES` where the platform has one (Linux, macOS), so that the workers
    are forked with them imported (0.6 s of CPU once, not once per process). Else Dask's
    ``multiprocessing.context``: where it names another start method than its default
    (``spawn``), or where there is no fork server (Windows).

    Python has one fork server per process: the modules are added to its preload list
    (kept with ``__main__`` and any the program set), which counts when it starts; a
    server the program already started serves as it is (its workers import them)."""
    # lazy on purpose: an optional dependency (cedarlite[replay]); `import cedarlite` never loads it
    import multiprocessing
    from multiprocessing import forkserver

    import dask
    from dask.multiprocessing import get_context

    chosen = dask.config.get("multiprocessing.context", "spawn")
    if chosen != "spawn" or "forkserver" not in multiprocessing.get_all_start_methods():
        return get_context()
    context = multiprocessing.get_context("forkserver")
    preload = list(getattr(forkserver._forkserver, "_preload_modules", None) or ["__main__"])
    context.set_forkserver_preload(preload + [m for m in WORKER_MODULES if m not in preload])
    return context


def _warm_up() -> None:
    """The first task of a process of the local scheduler's pool: the imports its partitions
    need (the worker, Dask's task runner, fsspec's block reader), made while the driver reads
    its inputs (none left to make in a process forked from the fork server)."""
    for module in WORKER_MODULES:
        importlib.import_module(module)


def _failed(path: str, err: BaseException) -> PartitionResult:
    result = PartitionResult(path=path)
    result.read_error = f"{type(err).__name__}: {err} (the block's lines are not counted)"
    return result


# ---------------------------------------------------------------------------------------------
# Output files


class _Outputs:
    """``--out DIR``: changed and undecidable calls streamed to JSON lines (and Parquet), the
    summary at the end. Files are created owner-only: they hold call arguments."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        self.changes: TextIO | None = None
        self.undecidable: TextIO | None = None
        self.parquet: Any = None
        self.parquet_writer: Any = None

    @classmethod
    @contextlib.contextmanager
    def open(cls, out: str | os.PathLike[str] | None) -> Iterator[_Outputs]:
        """The outputs of a replay (nothing is written without a directory)."""
        outputs = cls(None if out is None else Path(out))
        try:
            if outputs.directory is not None:
                outputs._start()
            yield outputs
        finally:
            outputs._close()

    def _start(self) -> None:
        assert self.directory is not None
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            self.changes = _private(self.directory / "changes.jsonl")
            self.undecidable = _private(self.directory / "undecidable.jsonl")
        except OSError as err:
            raise ReplayError(f"cannot write to `{self.directory}`: {err.strerror}") from None
        try:
            # lazy on purpose: an optional dependency (cedarlite[replay]); `import cedarlite` never
            # loads it
            import pyarrow.parquet as pq
        except ImportError:
            self.parquet = None
        else:
            self.parquet = pq

    def write(self, result: PartitionResult, path: str, first: int) -> None:
        """Append one partition's rows (``first``: the line number of its first line)."""
        if self.changes is None or self.undecidable is None:
            return
        for rows, f in (
            (result.changes, self.changes),
            (result.undecidable_rows, self.undecidable),
        ):
            for row in rows:
                f.write(_row_json(row, path, first))
        if result.changes and self.parquet is not None:
            self._parquet(result.changes, path, first)

    def _parquet(self, rows: list[dict[str, Any]], path: str, first: int) -> None:
        # lazy on purpose: an optional dependency (cedarlite[replay]); `import cedarlite` never
        # loads it
        import pyarrow as pa

        columns: dict[str, list[Any]] = {name: [] for name in PARQUET_SCHEMA_FIELDS}
        for row in rows:
            for name in PARQUET_SCHEMA_FIELDS:
                if name == "file":
                    columns[name].append(path)
                elif name == "line":
                    columns[name].append(first + row["line"])
                else:
                    columns[name].append(row[name])
        table = pa.table(columns, schema=_parquet_schema())
        if self.parquet_writer is None:
            assert self.directory is not None
            target = self.directory / "changes.parquet"
            self.parquet_writer = self.parquet.ParquetWriter(str(target), table.schema)
            os.chmod(target, 0o600)
        self.parquet_writer.write_table(table)

    def finish(self, report: ReplayReport) -> None:
        """Write ``summary.json`` (and an empty Parquet file when nothing changed)."""
        if self.directory is None:
            return
        if self.parquet is not None and self.parquet_writer is None:
            # lazy on purpose: an optional dependency (cedarlite[replay]); `import cedarlite` never
            # loads it
            import pyarrow as pa

            empty = pa.table({n: [] for n in PARQUET_SCHEMA_FIELDS}, schema=_parquet_schema())
            self.parquet.write_table(empty, str(self.directory / "changes.parquet"))
        with _private(self.directory / "summary.json") as f:
            json.dump(report.to_json(), f, indent=2)
            f.write("\n")

    def _close(self) -> None:
        for f in (self.changes, self.undecidable):
            if f is not None:
                f.close()
        if self.parquet_writer is not None:
            self.parquet_writer.close()


def _private(path: Path) -> TextIO:
    """A file for writing, created (or truncated) with mode 0600."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)
    return open(fd, "w", encoding="utf-8")


def _row_json(row: dict[str, Any], path: str, first: int) -> str:
    """One JSON line: the file and line, the row, and ``params`` as the logged object."""
    fields = {"file": path, "line": first + row["line"]}
    fields.update((k, v) for k, v in row.items() if k not in ("line", "params"))
    head = json.dumps(fields, ensure_ascii=True, separators=(",", ":"))
    return f'{head[:-1]},"params":{row["params"]}}}\n'


#: The columns of ``changes.parquet``: those of ``changes.jsonl``, ``params`` as JSON text.
PARQUET_SCHEMA_FIELDS = (
    "file",
    "line",
    "ts",
    "session",
    "run",
    "call_id",
    "agent",
    "tool",
    "old",
    "new",
    "policies",
    "denied_reason",
    "reason",
    "old_logged",
    "old_policies",
    "params",
    "params_rewritten",
)


def _parquet_schema() -> Any:
    # lazy on purpose: an optional dependency (cedarlite[replay]); `import cedarlite` never loads it
    import pyarrow as pa

    text = pa.string()
    types = {
        "line": pa.int64(),
        "policies": pa.list_(text),
        "old_policies": pa.list_(text),
        "params_rewritten": pa.bool_(),
    }
    return pa.schema([(name, types.get(name, text)) for name in PARQUET_SCHEMA_FIELDS])
