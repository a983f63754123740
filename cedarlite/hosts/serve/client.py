"""The Claude Code hook's side of the decision service: ``cedarlite hook claude-code`` asks the
per-user service for its configuration and rules before it decides in-process.

Claude Code starts a hook process for every tool call, so this module imports almost nothing:
the C modules ``_socket``, ``_json`` and SHA-256, beside what the interpreter has loaded
already (no ``socket``, ``json``, ``re`` or ``subprocess``; ``python -X importtime -m
cedarlite hook claude-code ...`` shows it). :func:`ask_service`:

1. reads the hook's command line (``--no-service``, or ``CEDARLITE_NO_SERVICE=1`` in the
   environment: go straight to the in-process hook);
2. finds the service's socket: ``<state dir>/serve/<fingerprint>.sock``, the fingerprint
   naming cedarlite's version, the interpreter, the configuration and rule files, the state
   directory, the decision log and the environment the hook decides with (the project
   directory, home and cache: :data:`_ENVIRONMENT`), so a service only ever answers for the
   files it loaded and the project it was started from;
3. checks that the directory is private (a directory owned by this user, writable by no one
   else) and the socket owned by this user, connects, and checks the service's uid with
   ``SO_PEERCRED``; anything else and the hook decides in-process;
4. sends the hook event as it arrived on stdin (``claude_code_hook``) and prints the answer
   exactly as the in-process hook would have: the service runs the same code on the same
   files, with the same state directory (session state) and decision log;
5. when no service answers, starts one in the background (``cedarlite serve --claude-code``,
   idle exit after :data:`IDLE_EXIT` seconds) unless one is starting or one failed to start
   in the last :data:`RETRY_SECONDS`, and returns: the hook
   decides this call in-process, within the rest of its deadline. A service that does not
   answer within :func:`budget` seconds is given up on the same way.
"""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False  # (not typing's: see cedarlite/__init__.py)
if TYPE_CHECKING:
    from typing import Any, ClassVar, NoReturn

#: An environment variable: set (not ``0``), every hook decides in-process, as ``--no-service``.
NO_SERVICE = "CEDARLITE_NO_SERVICE"

#: The service a hook starts exits after this many idle seconds (30 min).
IDLE_EXIT = 1800

#: After a service failed to start (its files do not load), hooks wait this many seconds
#: before they start another (they decide in-process, and say why, meanwhile).
RETRY_SECONDS = 60

#: Hook events longer than this go to the in-process hook (under the service's request limit,
#: with room for JSON escaping).
MAX_SENT = 4 * 1024 * 1024

_DEFAULT_DEADLINE = 5.0  # claude_code.DEFAULT_DEADLINE (a test holds them equal)
_MAX_INPUT = 32 * 1024 * 1024  # claude_code.MAX_INPUT
_FLAGS = ("--config", "--rules", "--state-dir", "--decision-log", "--deadline")
#: The environment variables the in-process hook decides with (a service inherits them from
#: the hook that started it, so they are part of its fingerprint).
_ENVIRONMENT = ("CLAUDE_PROJECT_DIR", "HOME", "XDG_CACHE_HOME")


class Target:
    """Where this hook's service is: the command line's files (absolute), the socket, and
    the words of the in-process hook's command line (without ``--no-service``)."""

    __slots__ = ("config", "deadline", "decision_log", "directory", "rules", "state_dir")

    def __init__(self) -> None:
        self.config = ""
        self.rules: list[str] = []
        self.state_dir = ""
        self.decision_log = ""
        self.deadline = _DEFAULT_DEADLINE
        self.directory = ""

    def fingerprint(self) -> str:
        """The SHA-256 (hex, 32 digits) naming the service of these files."""
        # lazy on purpose: the client loads nothing it does not use (see the module)
        from ..._sha import sha256
        from ..._version import __version__

        parts = [__version__, sys.executable, self.config, *self.rules]
        parts += ["--state-dir", self.state_dir, "--decision-log", self.decision_log]
        # What the hook reads from its environment: the project (the workspace of paths),
        # and the home and cache directories (`~`, the protected cache): a service started
        # from another project or home must not answer for this one.
        parts += [os.environ.get(k, "") for k in _ENVIRONMENT]
        return sha256("\0".join(parts).encode("utf-8", "surrogateescape")).hexdigest()[:32]

    def socket_path(self) -> str:
        return os.path.join(self.directory, self.fingerprint() + ".sock")

    def serve_args(self) -> list[str]:
        """The command line of the service for these files."""
        args = [sys.executable, "-m", "cedarlite", "serve", "--claude-code"]
        args += ["--socket", self.socket_path(), "--config", self.config]
        for rules in self.rules:
            args += ["--rules", rules]
        args += ["--state-dir", self.state_dir]
        if self.decision_log:
            args += ["--decision-log", self.decision_log]
        return [*args, "--idle-exit", str(IDLE_EXIT)]


def read_target(words: list[str]) -> tuple[Target | None, list[str]]:
    """The service target of a hook command line (``claude-code --config ...``) and the
    words without ``--no-service``; no target for ``--no-service`` or a command line that is
    not a plain one (the full parser reads those)."""
    rest = [w for w in words if w != "--no-service"]
    if len(rest) != len(words) or not words or words[0] != "claude-code":
        return None, rest
    if os.environ.get(NO_SERVICE, "") not in ("", "0"):
        return None, rest
    target = Target()
    i = 1
    while i < len(words):
        flag, eq, value = words[i].partition("=")
        if flag not in _FLAGS:
            return None, rest
        if not eq:
            if i + 1 == len(words):
                return None, rest
            value = words[i + 1]
        i += 1 if eq else 2
        if flag == "--rules":
            target.rules.append(value if value.startswith("cedarlite:") else os.path.abspath(value))
        elif flag == "--deadline":
            try:
                target.deadline = float(value)
            except ValueError:
                return None, rest
        elif flag == "--config":
            target.config = os.path.abspath(value)
        elif flag == "--state-dir":
            target.state_dir = os.path.abspath(value)
        else:
            target.decision_log = os.path.abspath(value)
    if not target.config or not 0 < target.deadline <= 3600:
        return None, rest
    if not target.state_dir:
        root = _cache_root()
        if root is None:
            return None, rest
        target.state_dir = os.path.join(root, "hook")
    target.directory = os.path.join(target.state_dir, "serve")
    return target, rest


def _cache_root() -> str | None:
    """cedarlite's per-user cache root, as :func:`cedarlite._cache_dir.cache_root` finds it
    (a test holds them equal)."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):
        return os.path.join(xdg, "cedarlite")
    home = os.path.expanduser("~")
    return os.path.join(home, ".cache", "cedarlite") if os.path.isabs(home) else None


def budget(deadline: float) -> float:
    """Seconds the hook waits for the service before it decides in-process."""
    return min(2.0, deadline * 0.4)


def private(path: str, kind: int) -> bool | None:
    """Whether ``path`` is of ``kind`` (``S_IFDIR``, ``S_IFSOCK``), not a link, owned by this
    user and writable by no one else; ``None`` when it does not exist."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError:
        return False
    return (st.st_mode & 0o170000) == kind and st.st_uid == os.geteuid() and not st.st_mode & 0o022


def ask_service(words: list[str]) -> list[str]:
    """Answer the hook event through the service and end the process; or return the command
    line for the in-process hook (see the module). Never raises: whatever goes wrong here,
    the in-process hook answers (it answers every event, and never exits 1)."""
    try:
        return _ask_service(words)
    except Exception:
        return [w for w in words if w != "--no-service"]


def _ask_service(words: list[str]) -> list[str]:
    started = time.monotonic()
    target, rest = read_target(words)
    if target is None:
        return rest
    state = private(target.directory, 0o040000)
    if state is False:
        _note("the service directory is not private: deciding in-process")
        return rest
    path = target.socket_path()
    if state is None or private(path, 0o140000) is None:
        start_service(target)
        return rest
    if private(path, 0o140000) is False:
        _note("the service socket is not this user's: deciding in-process")
        return rest
    seconds = budget(target.deadline)
    data, whole = _read_stdin(seconds)
    sys.stdin = _Replay(data, whole)  # (the in-process hook reads it again)
    answer = None
    if whole:
        try:
            answer = _exchange(path, data, seconds - (time.monotonic() - started))
        except (OSError, ValueError, UnicodeError):
            answer = None
    if answer is None:
        if not _live(path):
            start_service(target)
        return rest
    _finish(answer)


def _read_stdin(seconds: float) -> tuple[bytes, bool]:
    """What arrives on stdin within ``seconds``, and whether that is all of it (a hung or
    very large input is left to the in-process hook, under its deadline)."""
    import select  # lazy on purpose: the client loads nothing it does not use

    chunks: list[bytes] = []
    size = 0
    end = time.monotonic() + seconds
    while True:
        left = end - time.monotonic()
        try:
            if left <= 0 or not select.select([0], [], [], left)[0]:
                return b"".join(chunks), False
            chunk = os.read(0, 1 << 20)
        except (OSError, ValueError):  # no stdin, say: the in-process hook reports it
            return b"".join(chunks), False
        if not chunk:
            return b"".join(chunks), True
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_SENT:
            return b"".join(chunks), False


class _Replay:
    """Stands in for ``sys.stdin`` once (part of) the event was read: its ``buffer`` gives
    what was read, then the rest of the real stdin."""

    def __init__(self, data: bytes, whole: bool) -> None:
        self.buffer = self
        self._data = data
        self._whole = whole

    def read(self, size: int = -1) -> bytes:
        data, self._data = self._data, b""
        if self._whole or (size >= 0 and len(data) >= size):
            return data
        stdin = sys.__stdin__
        if stdin is None:
            return data
        return data + stdin.buffer.read(-1 if size < 0 else size - len(data))


class _ScanContext:
    """What ``_json.make_scanner`` reads (the settings of :func:`json.loads`)."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    memo: ClassVar[dict[str, Any]] = {}

    @staticmethod
    def parse_constant(name: str) -> Any:
        raise ValueError(f"unexpected {name}")


def _exchange(path: str, data: bytes, seconds: float) -> dict[str, Any] | None:
    """Send the event, read the answer (``None``: the service could not answer it)."""
    # lazy on purpose: the client loads nothing it does not use
    import _json
    import _socket

    text = data.decode("utf-8")
    request = '{"id":1,"op":"claude_code_hook","input":' + _json.encode_basestring_ascii(text)
    end = time.monotonic() + seconds
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(seconds)
        sock.connect(path)
        cred = sock.getsockopt(_socket.SOL_SOCKET, getattr(_socket, "SO_PEERCRED", 17), 12)
        if int.from_bytes(cred[4:8], sys.byteorder) != os.geteuid():
            _note("the service runs as another user: deciding in-process")
            return None
        sock.sendall((request + "}\n").encode("ascii"))
        chunks = []
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return None
            sock.settimeout(left)
            chunk = sock.recv(65536)
            if not chunk:
                return None
            chunks.append(chunk)
            if chunk.endswith(b"\n"):
                break
    finally:
        sock.close()
    scan = _json.make_scanner(_ScanContext())  # type: ignore[arg-type]  # (json.loads's ctx)
    line = b"".join(chunks).decode("ascii")
    answer, _ = scan(line, 0)
    ok = (
        isinstance(answer, dict)
        and answer.get("id") == 1
        and answer.get("exit") in (0, 2)
        and isinstance(answer.get("stdout"), str)
        and isinstance(answer.get("stderr"), str)
    )
    return answer if ok else None


def _finish(answer: dict[str, Any]) -> NoReturn:
    """Print the service's answer as the hook process and end it."""
    for stream, text in ((sys.stdout, answer["stdout"]), (sys.stderr, answer["stderr"])):
        if text:
            try:
                stream.write(text if text.endswith("\n") else text + "\n")
                stream.flush()
            except (OSError, ValueError):
                pass
    os._exit(answer["exit"])


def _live(path: str) -> bool:
    """Whether a service holds the socket's lock (it is running or starting)."""
    import fcntl  # lazy on purpose: only when no service answered

    try:
        fd = os.open(path + ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError:
        return True  # cannot tell: do not start another
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # (releases the lock when it was taken)
    return False


def start_service(target: Target) -> None:
    """Start the service for ``target`` in the background (its own session, its log in
    ``serve/<fingerprint>.log``), unless one is running or starting, or the state directory
    is not there yet (the in-process hook creates it; the next call starts the service)."""
    if private(target.state_dir, 0o040000) is not True:
        return
    try:
        os.mkdir(target.directory, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return
    if private(target.directory, 0o040000) is not True:
        return
    path = target.socket_path()
    try:
        if os.stat(path + ".failed").st_mtime > time.time() - RETRY_SECONDS:
            return
    except OSError:
        pass
    if _live(path):
        return
    logfile = path[: -len(".sock")] + ".log"
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
        (os.POSIX_SPAWN_OPEN, 2, logfile, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600),
    ]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    try:
        pid = os.posix_spawn(
            sys.executable, target.serve_args(), env, file_actions=actions, setsid=True
        )
    except OSError:
        return
    _ = pid  # (not waited for: it outlives this process, reparented to init)


def _note(text: str) -> None:
    try:  # noqa: SIM105 (no contextlib: a hook process does not load it)
        sys.stderr.write(f"cedarlite: {text}\n")
    except (OSError, ValueError):
        pass
