"""Private per-user cache directories, for cache files that hold code.

A cache entry of cedarlite is a pickle (compiled policy sets, whose conditions are Python source
run on load; Lark's grammar tables), and loading a pickle runs code. So an entry may only come
from a place that no one but the current user can write to:

* the default root is ``$XDG_CACHE_HOME/cedarlite`` or ``~/.cache/cedarlite`` (never the shared
  temp dir, where anyone can plant a file under a predictable name);
* directories are created with mode 0700, and before every read or write the directory is
  opened without following symbolic links and checked: a directory owned by the effective user,
  writable by no one else. Anything else is refused with a :class:`~cedarlite.errors.CacheError`
  (the caller decides whether to fail or to go on without the cache; it never reads the entry);
* entries are opened relative to that checked, open directory (no path is resolved twice, so
  the directory cannot be swapped between the check and the read) and must be regular files
  owned by the user;
* entries are written atomically (a new owner-only temporary file, then a rename), so
  concurrent processes see a whole entry or none; an entry that fails to load is the caller's
  to rebuild (:func:`load_pickle` returns ``None`` for it).

POSIX only (ownership and ``dir_fd`` are needed); elsewhere :func:`ensure_private` refuses.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import re
import stat
from typing import Any

from .errors import CacheError

_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")
_DIR_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_DIRECTORY", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
_FILE_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_NEW_FLAGS = (
    os.O_WRONLY
    | os.O_CREAT
    | os.O_EXCL
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
_SUPPORTED = (
    hasattr(os, "geteuid")
    and hasattr(os, "O_NOFOLLOW")
    and hasattr(os, "O_DIRECTORY")
    and os.open in os.supports_dir_fd
    and os.rename in os.supports_dir_fd  # os.replace shares its dir_fd support
)


def cache_root() -> str:
    """cedarlite's per-user cache root: ``$XDG_CACHE_HOME/cedarlite`` (an absolute
    ``XDG_CACHE_HOME`` only, as the XDG spec says) or ``~/.cache/cedarlite``."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):
        return os.path.join(xdg, "cedarlite")
    home = os.path.expanduser("~")
    if not os.path.isabs(home):  # no HOME and no passwd entry: `~` stays as it is
        raise CacheError(
            "no per-user cache directory: neither `XDG_CACHE_HOME` nor a home directory is set"
        )
    return os.path.join(home, ".cache", "cedarlite")


def private_dir(name: str) -> str:
    """The private cache directory ``name`` under :func:`cache_root`, created (0700, the root
    too) if missing and checked; raises :class:`CacheError` if it is not private."""
    if not _KEY.fullmatch(name):
        raise ValueError(f"invalid cache directory name {name!r}")
    return ensure_private(os.path.join(ensure_private(cache_root()), name))


def ensure_private(path: str | os.PathLike[str]) -> str:
    """``path`` as a private directory: created with mode 0700 (and missing parents) if absent,
    then checked (owned by this user, writable by no one else, not a symbolic link).

    Raises :class:`CacheError` if it is not private or cannot be created.
    """
    directory = os.fspath(path)
    if not _SUPPORTED:
        raise CacheError(
            "private cache directories need POSIX file ownership; caching is off on this system",
            source=directory,
        )
    try:
        os.makedirs(directory, mode=0o700)
    except FileExistsError:
        pass
    except OSError as err:
        raise CacheError(
            f"cannot create the cache directory: {err.strerror or err}", source=directory
        ) from None
    os.close(_open_checked(directory))
    return directory


def _open_checked(directory: str) -> int:
    """A descriptor of ``directory``, opened without following links and checked private."""
    where = directory
    try:
        fd = os.open(directory, _DIR_FLAGS)
    except OSError as err:
        if os.path.islink(directory):
            message = "the cache directory is a symbolic link; it must be a real directory"
        else:
            message = f"cannot open the cache directory: {err.strerror or err}"
        raise CacheError(message, source=where) from None
    try:
        st = os.fstat(fd)
        uid = os.geteuid()
        if st.st_uid != uid:
            raise CacheError(
                f"the cache directory belongs to uid {st.st_uid}, not to this user (uid {uid})",
                source=where,
                help="use a directory of your own, created with `mkdir -m 700`",
            )
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise CacheError(
                f"the cache directory is writable by others (mode "
                f"{stat.S_IMODE(st.st_mode):04o}), so anyone could plant code in it",
                source=where,
                help=f"`chmod 700 {where}`",
            )
    except BaseException:
        os.close(fd)
        raise
    return fd


def _check_key(key: str) -> None:
    if not _KEY.fullmatch(key):
        raise ValueError(f"invalid cache key {key!r}")


def load(directory: str, key: str) -> bytes | None:
    """The bytes of entry ``key`` of a private ``directory``, or ``None`` if there is none
    (or it is not a regular file of this user's). Raises :class:`CacheError` if the directory
    is not private (anymore)."""
    _check_key(key)
    dfd = _open_checked(directory)
    try:
        try:
            fd = os.open(key, _FILE_FLAGS, dir_fd=dfd)
        except OSError:  # missing, or a symbolic link (O_NOFOLLOW)
            return None
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
                return None
            return f.read()
    finally:
        os.close(dfd)


def store(directory: str, key: str, data: bytes, *, keep: int | None = None) -> bool:
    """Write entry ``key`` atomically (owner-only temporary file, then rename); ``False`` if it
    could not be written (a full disk is not an error of the caller's). With ``keep``, the
    oldest entries beyond that many (by modification time) are removed first. Raises
    :class:`CacheError` if the directory is not private (anymore)."""
    _check_key(key)
    dfd = _open_checked(directory)
    tmp = f".{key}.{os.urandom(8).hex()}.tmp"
    try:
        if keep is not None:
            _prune(dfd, keep - 1)
        fd = os.open(tmp, _NEW_FLAGS, 0o600, dir_fd=dfd)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, key, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dfd)
            raise
    except OSError:
        return False
    finally:
        os.close(dfd)
    return True


def _prune(dfd: int, keep: int) -> None:
    """Remove the oldest entries of the directory beyond ``keep`` (temporary files aside)."""
    entries = []
    for name in os.listdir(dfd):
        if name.startswith("."):
            continue
        with contextlib.suppress(OSError):
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            if stat.S_ISREG(st.st_mode):
                entries.append((st.st_mtime_ns, name))
    entries.sort(reverse=True)
    for _, name in entries[max(0, keep) :]:
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=dfd)


def load_pickle(directory: str, key: str) -> Any:
    """The object pickled in entry ``key``, or ``None`` if it is missing or does not unpickle
    (a corrupt or foreign entry: the caller rebuilds and stores it again)."""
    data = load(directory, key)
    if data is None:
        return None
    try:
        return pickle.loads(data)
    except Exception:  # any failure of a damaged entry (truncated, old classes...): rebuild
        return None


def store_pickle(directory: str, key: str, obj: Any) -> bool:
    """Pickle ``obj`` into entry ``key`` (see :func:`store`)."""
    return store(directory, key, pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))
