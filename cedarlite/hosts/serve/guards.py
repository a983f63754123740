"""The service's guard set: the configuration, rules and policies it decides with, loaded and
validated as one :class:`Generation`, and :class:`GuardSet`, which swaps in a new generation
only when it loads whole.

A request reads :attr:`GuardSet.current` once and decides with that generation alone, so it
never sees half a reload: a reload builds the new generation beside the old one (parsing,
compiling and strictly validating every file) and replaces the reference in one assignment.
A file that does not load leaves the old generation serving; :meth:`GuardSet.health` names it
until it is fixed. The session state (loop histories, ``allow-always`` approvals) belongs to
the set, not to a generation: a reload keeps it.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from ... import _log
from ..._version import __version__
from ...errors import CedarliteError
from ...guard import Guard, MemorySessionStore, SessionStore
from ...shipped import resolve
from ..claude_code import (
    HookConfig,
    HookOptions,
    answer_event,
    guard_key,
    load_guard,
    state_dir,
)
from .protocol import ProtocolError

log = _log.get_logger("cedarlite.serve")

#: Run contexts (and Claude Code guards) kept per generation; the least recently used beyond.
MAX_CONTEXTS = 256

#: How often the files are checked for changes (seconds).
POLL_SECONDS = 1.0

_SESSIONS = "sessions.sqlite3"


class ServeOptions(NamedTuple):
    """What ``cedarlite serve`` decides with: the hook configuration file (``--config``), the
    rule files, the plain Cedar ``--policies`` of ``is_authorized``, the private state
    directory (session state in SQLite; default: in memory), the decision log, and whether it
    serves the Claude Code hook (``--claude-code``: the guards are the hook's)."""

    config: str
    rules: tuple[str, ...] = ()
    policies: tuple[str, ...] = ()
    state_dir: str | None = None
    decision_log: str | None = None
    claude_code: bool = False

    def hook_options(self) -> HookOptions:
        """The Claude Code hook's options with these files."""
        return HookOptions(self.config, self.rules, self.state_dir, self.decision_log)


Stamp = tuple[int, int, int, int]  # (inode, size, mtime_ns, ctime_ns); (0, -1, 0, 0): missing


def _stamp(path: str) -> Stamp:
    try:
        st = os.stat(path)
    except OSError:
        return (0, -1, 0, 0)
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class Broken(NamedTuple):
    """A reload that failed: the file, the error (one line) and the files' stamps then."""

    file: str
    message: str
    stamps: dict[str, Stamp]


class Generation:
    """One loaded guard set (immutable once built, but for its caches of guards per run
    context, which only grow up to :data:`MAX_CONTEXTS`)."""

    def __init__(
        self,
        number: int,
        options: ServeOptions,
        store: SessionStore,
        directory: str | None,
        stamps: dict[str, Stamp],
    ) -> None:
        self.number = number
        self.options = options
        self.store = store
        self.directory = directory
        self.stamps = stamps
        self.loaded_at = time.time()
        # A scenario file (`tools check`'s, with `calls`) serves as is; the Claude Code
        # hook's service reads the file exactly as the hook does.
        ignore = () if options.claude_code else ("calls",)
        self.config = HookConfig.read(options.config, options.rules, ignore=ignore)
        self.rule_sets = self.config.rule_sets()
        self.policies = _load_policies(options.policies) if options.policies else None
        self._lock = threading.Lock()
        self._contexts: OrderedDict[str, Guard] = OrderedDict()
        self._hook_guards: OrderedDict[str, Guard] = OrderedDict()
        self._base: Guard | None = None
        if options.claude_code:
            assert directory is not None
            self.hook_guard(None, self.config.run_context({}))  # validates the set
        else:
            self._base = self._build_base()

    # -- the guards of the OpenClaw-shaped operations ------------------------------------------

    def _build_base(self) -> Guard:
        """The guard of the file's run context (strict: any mistake raises)."""
        try:
            guard = Guard(
                self.config.config,
                self.config.run_tools(rule_sets=self.rule_sets),
                self.config.context,
                rules=self.rule_sets or None,
                strict=True,
                session_store=self.store,
            )
        except CedarliteError as err:
            raise self.config.located(err) from None
        if self.options.decision_log is not None:
            guard.open_decision_log(self.options.decision_log)
        return guard

    def guard_for(self, context: Mapping[str, Any] | None) -> Guard:
        """The guard of a run context (``None``: the file's), cached per context."""
        base = self._base
        if base is None:
            with self._lock:
                if self._base is None:
                    try:
                        self._base = self._build_base()
                    except CedarliteError as err:
                        raise ProtocolError(
                            f"the configuration does not load: {err.one_line()}", code="E0964"
                        ) from None
                base = self._base
        if context is None:
            return base
        key = json.dumps(context, sort_keys=True, ensure_ascii=True, default=repr)
        with self._lock:
            guard = self._contexts.get(key)
            if guard is not None:
                self._contexts.move_to_end(key)
                return guard
        try:
            guard = base.for_context(context)
        except CedarliteError as err:
            raise ProtocolError(
                f"the run context does not load: {err.message}", code="E0964"
            ) from None
        with self._lock:
            guard = self._contexts.setdefault(key, guard)
            if len(self._contexts) > MAX_CONTEXTS:
                self._contexts.popitem(last=False)
        return guard

    # -- Claude Code ---------------------------------------------------------------------------

    def hook_guard(self, call: Any, context: Mapping[str, Any]) -> Guard:
        """The Claude Code hook's guard for a call and run context (as the hook process loads
        it), with the set's session store and decision log attached."""
        assert self.directory is not None
        key = guard_key(self.config, self.config.catalog(call), context)
        with self._lock:
            guard = self._hook_guards.get(key)
            if guard is not None:
                self._hook_guards.move_to_end(key)
                return guard
        guard = load_guard(self.config, call, context, self.directory)
        guard.session_store = self.store
        if self.options.decision_log is not None:
            guard.open_decision_log(self.options.decision_log)
        with self._lock:
            guard = self._hook_guards.setdefault(key, guard)
            if len(self._hook_guards) > MAX_CONTEXTS:
                self._hook_guards.popitem(last=False)
        return guard

    def claude_code_hook(self, text: str) -> dict[str, Any]:
        """What the hook process prints for the event ``text``: ``{"exit", "stdout",
        "stderr"}``."""
        if not self.options.claude_code:
            raise ProtocolError(
                "this service does not serve the Claude Code hook (start it with --claude-code)",
                code="E0966",
            )
        data = text.encode("utf-8", "surrogatepass")
        out, err, code = answer_event(self.options.hook_options(), data, self)
        return {"exit": code, "stdout": out, "stderr": err}

    # -- plain Cedar ---------------------------------------------------------------------------

    def is_authorized(self, fields: Mapping[str, Any]) -> dict[str, Any]:
        """Decide a Cedar request against ``--policies``."""
        if self.policies is None:
            raise ProtocolError(
                "`is_authorized` needs policies: start the service with --policies FILE",
                code="E0966",
            )
        # lazy on purpose: plain Cedar only for a service started with --policies
        from ...authorizer import is_authorized

        request = {k: fields[k] for k in ("principal", "action", "resource")}
        if fields.get("context") is not None:
            request["context"] = fields["context"]
        try:
            response = is_authorized(request, self.policies, fields.get("entities"))
        except CedarliteError as err:
            raise ProtocolError(f"bad request: {err.message}", code="E0962") from None
        return {
            "decision": response.decision.value,
            "reasons": list(response.reasons),
            "errors": [{"policyId": e.policy_id, "error": e.message} for e in response.errors],
        }


def _load_policies(paths: Sequence[str]) -> Any:
    from ...policyset import PolicySet  # lazy on purpose: only with --policies

    if len(paths) == 1 and not os.path.isdir(paths[0]):
        return PolicySet.from_file(paths[0])
    return PolicySet.from_files(list(paths))


class ReloadError(CedarliteError):
    """A reload whose files do not load (the old set keeps serving)."""

    code = "E0965"


class GuardSet:
    """The service's current :class:`Generation` and how it is replaced: :meth:`reload` (on
    ``reload``, ``SIGHUP``) and :meth:`watch` (a file changed)."""

    def __init__(self, options: ServeOptions) -> None:
        self.options = options
        self.started = time.time()
        self.directory: str | None = None
        if options.claude_code or options.state_dir is not None:
            self.directory = state_dir(options.state_dir)
        self.store: SessionStore
        if self.directory is not None:
            # lazy on purpose: SQLite only for a state directory
            from ...guard.sqlite_store import SQLiteSessionStore

            self.store = SQLiteSessionStore(os.path.join(self.directory, _SESSIONS))
        else:
            self.store = MemorySessionStore(max_sessions=10_000)
        self.broken: Broken | None = None
        self._reload_lock = threading.Lock()
        self._wake = threading.Event()
        self._number = 0
        self.current = self._load(self._stamps())  # raises: a service never starts broken

    def files(self) -> list[str]:
        """The files the set is loaded from (rules and policy directories resolved)."""
        out = [self.options.config, *(resolve(r) for r in self.options.rules)]
        for path in self.options.policies:
            if os.path.isdir(path):
                out.append(path)
                out += sorted(
                    os.path.join(path, n) for n in os.listdir(path) if n.endswith(".cedar")
                )
            else:
                out.append(path)
        return out

    def _stamps(self) -> dict[str, Stamp]:
        try:
            files = self.files()
        except OSError:
            files = [self.options.config]
        return {f: _stamp(f) for f in files}

    def _load(self, stamps: dict[str, Stamp]) -> Generation:
        self._number += 1
        return Generation(self._number, self.options, self.store, self.directory, stamps)

    def reload(self) -> Generation:
        """Load the files again and, if they load whole, serve them; raises
        :class:`ReloadError` (the file and the error; the old set keeps serving)."""
        with self._reload_lock:
            stamps = self._stamps()
            try:
                gen = self._load(stamps)
            except CedarliteError as err:
                file = err.source if err.source and err.source in stamps else self.options.config
                self.broken = Broken(file, err.one_line(), stamps)
                log.error("reload failed, the previous set keeps serving: %s", err.one_line())
                raise ReloadError(err.one_line(), source=file) from None
            self.current = gen
            if self.broken is not None:
                log.warning("reloaded: %s is fixed", self.broken.file)
            self.broken = None
            log.info("reloaded: generation %d", gen.number)
            return gen

    def fresh(self) -> Generation:
        """The current generation, reloaded first if a file changed since it was loaded: what
        the Claude Code hook would decide with in-process, which reads the files at every
        call. Raises :class:`~cedarlite.hosts.serve.protocol.ProtocolError` when they do not
        load (the hook then decides in-process, and says what is wrong)."""
        gen = self.current
        if self._stamps() == gen.stamps:
            return gen
        try:
            return self.reload()
        except ReloadError as err:
            raise ProtocolError(
                f"the files changed and do not load: {err.message}", code="E0965", file=err.source
            ) from None

    def reload_answer(self) -> dict[str, Any]:
        """The ``reload`` operation's answer (once the new set serves), or an error answer
        naming the broken file."""
        try:
            gen = self.reload()
        except ReloadError as err:
            raise ProtocolError(
                f"reload failed, the previous set keeps serving: {err.message}",
                code="E0965",
                file=err.source,
            ) from None
        return {"ok": True, "generation": gen.number, "files": list(gen.stamps)}

    def changed(self) -> bool:
        """Whether a file changed since the current set (or the last failed reload) read it."""
        stamps = self._stamps()
        seen = self.broken.stamps if self.broken is not None else self.current.stamps
        return stamps != seen

    def request_reload(self) -> None:
        """Have the watcher reload now (``SIGHUP``: a signal handler must not do it)."""
        self._forced = True
        self._wake.set()

    _forced = False

    def watch(self, stop: threading.Event, poll: float = POLL_SECONDS) -> None:
        """Reload when a file changes or :meth:`request_reload` asks, until ``stop`` is set
        (a thread's loop)."""
        while not stop.is_set():
            self._wake.wait(poll)
            self._wake.clear()
            if stop.is_set():
                return
            forced, self._forced = self._forced, False
            try:
                if forced or self.changed():
                    self.reload()
            except ReloadError:
                pass  # logged; health names the file
            except Exception as err:  # an error of ours must not end the watcher
                log.error("checking the files failed: %r", err)

    def close(self) -> None:
        """Close the session store (the service is stopping)."""
        close = getattr(self.store, "close", None)
        if close is not None:
            close()

    def health(self) -> dict[str, Any]:
        """The ``health`` answer: the generation serving, its files, and the broken file."""
        gen = self.current
        out: dict[str, Any] = {
            "ok": True,
            "status": "ok" if self.broken is None else "degraded",
            "version": __version__,
            "generation": gen.number,
            "loadedAt": round(gen.loaded_at, 3),
            "uptime": round(time.time() - self.started, 3),
            "files": list(gen.stamps),
            "claudeCode": self.options.claude_code,
            "policies": self.options.policies != (),
        }
        if self.broken is not None:
            out["broken"] = {"file": self.broken.file, "message": self.broken.message}
        return out
