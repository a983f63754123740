"""A private per-user state directory: session state and built guards of hook processes.

The hook keeps two things between its processes: the session database (loop history,
``allow-always`` approvals) and built guards, as pickles (loading a pickle runs code). Both may
only come from a place no one but the current user can write to:

* the default is ``$XDG_CACHE_HOME/cedarlite/<name>`` or ``~/.cache/cedarlite/<name>`` (never the
  shared temp dir, where anyone can plant a file under a predictable name);
* directories are created with mode 0700 and, before every use, opened without following a
  symbolic link and checked: owned by the effective user, writable by no one else. Anything
  else is a :class:`StateDirError` and nothing in it is read;
* entries are opened relative to that checked, open directory (the directory cannot be swapped
  between the check and the read), must be regular files owned by the user, and are written
  atomically (an owner-only temporary file, then a rename).

POSIX only (ownership and ``dir_fd`` are needed).
"""

from __future__ import annotations

import contextlib
import os
import re
import stat

from ..errors import CedarliteError

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")
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
)


class StateDirError(CedarliteError):
    """A state directory that is not private (or cannot be made): nothing in it is used."""

    code = "E0911"


def default_dir(name: str) -> str:
    """``$XDG_CACHE_HOME/cedarlite/<name>`` (an absolute ``XDG_CACHE_HOME`` only, as the XDG
    spec says) or ``~/.cache/cedarlite/<name>``."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):
        return os.path.join(xdg, "cedarlite", name)
    home = os.path.expanduser("~")
    if not os.path.isabs(home):
        raise StateDirError(
            "no per-user state directory: neither `XDG_CACHE_HOME` nor a home directory is set",
            help="give one with --state-dir",
        )
    return os.path.join(home, ".cache", "cedarlite", name)


def ensure_private(path: str | os.PathLike[str]) -> str:
    """``path`` as a private directory: created (mode 0700, missing parents too) if absent,
    then checked (a real directory owned by this user, writable by no one else).

    Raises :class:`StateDirError`.
    """
    directory = os.path.abspath(os.fspath(path))
    if not _SUPPORTED:
        raise StateDirError(
            "a private state directory needs POSIX file ownership", source=directory
        )
    try:
        os.makedirs(directory, mode=0o700)
    except FileExistsError:
        pass
    except OSError as err:
        raise StateDirError(
            f"cannot create the state directory: {err.strerror or err}", source=directory
        ) from None
    os.close(_open_checked(directory))
    return directory


def _open_checked(directory: str) -> int:
    """A descriptor of ``directory``, opened without following links and checked private."""
    try:
        fd = os.open(directory, _DIR_FLAGS)
    except OSError as err:
        if os.path.islink(directory):
            message = "the state directory is a symbolic link; it must be a real directory"
        else:
            message = f"cannot open the state directory: {err.strerror or err}"
        raise StateDirError(message, source=directory) from None
    try:
        st = os.fstat(fd)
        uid = os.geteuid()
        if st.st_uid != uid:
            raise StateDirError(
                f"the state directory belongs to uid {st.st_uid}, not to this user (uid {uid})",
                source=directory,
                help="use a directory of your own, created with `mkdir -m 700`",
            )
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise StateDirError(
                f"the state directory is writable by others (mode "
                f"{stat.S_IMODE(st.st_mode):04o}), so anyone could plant code in it",
                source=directory,
                help=f"`chmod 700 {directory}`",
            )
    except BaseException:
        os.close(fd)
        raise
    return fd


def _check_name(name: str) -> None:
    if not _NAME.fullmatch(name):
        raise ValueError(f"invalid entry name {name!r}")


def read_entry(directory: str, name: str) -> bytes | None:
    """The bytes of entry ``name`` of a private ``directory``; ``None`` if there is none (or
    it is not a regular file of this user's). Raises :class:`StateDirError` if the directory
    is not private (anymore)."""
    _check_name(name)
    dfd = _open_checked(directory)
    try:
        try:
            fd = os.open(name, _FILE_FLAGS, dir_fd=dfd)
        except OSError:  # missing, or a symbolic link (O_NOFOLLOW)
            return None
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
                return None
            return f.read()
    finally:
        os.close(dfd)


def write_entry(directory: str, name: str, data: bytes, *, keep: int | None = None) -> bool:
    """Write entry ``name`` atomically; ``False`` if it could not be written (a full disk
    is not the caller's error). With ``keep``, the oldest entries beyond that many (by
    modification time; temporary files aside) are removed first. Raises
    :class:`StateDirError` if the directory is not private (anymore)."""
    _check_name(name)
    dfd = _open_checked(directory)
    tmp = f".{name}.{os.urandom(8).hex()}.tmp"
    try:
        if keep is not None:
            _prune(dfd, keep - 1)
        fd = os.open(tmp, _NEW_FLAGS, 0o600, dir_fd=dfd)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
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
    """Remove the oldest entries of the directory beyond ``keep``."""
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
