"""Reusing compiled policy sets across processes: a content-addressed cache directory.

The key is a hash of the policy text, the parse mode and the cedarlite version, so a cache
entry can only ever be used for the exact text it was built from. Entries are written
atomically (temporary file, then rename); a corrupt or foreign entry is ignored and rebuilt.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from typing import TYPE_CHECKING

from .._version import __version__
from . import FORMAT_VERSION, CompiledPolicySet, compiled

if TYPE_CHECKING:
    from ..policyset import PolicySet


def cache_key(text: str, strict: bool) -> str:
    """The cache entry name for ``text`` parsed in the given mode by this cedarlite."""
    h = hashlib.sha256()
    h.update(f"cedarlite {__version__} format {FORMAT_VERSION} strict={strict}\0".encode())
    h.update(text.encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def load_cached(text: str, source: str | None, strict: bool, cache_dir: str) -> PolicySet:
    """A policy set for ``text`` whose compiled form comes from (or goes to) ``cache_dir``."""
    from ..policyset import PolicySet

    path = os.path.join(cache_dir, cache_key(text, strict) + ".pickle")
    try:
        with open(path, "rb") as f:
            index = pickle.load(f)
        if not isinstance(index, CompiledPolicySet):
            raise TypeError("not a compiled policy set")
    except Exception:  # a missing, corrupt or foreign entry (any failure): rebuild it
        ps = PolicySet.from_str(text, source, strict=strict)
        _store(path, compiled(ps))
        return ps
    ps = PolicySet._deferred(text, source, strict)
    ps._cache["compiled"] = index
    return ps


def _store(path: str, index: CompiledPolicySet) -> None:
    """Write atomically; failing to cache (read-only directory...) is not an error."""
    directory = os.path.dirname(path) or "."
    try:
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                pickle.dump(index, f, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        pass
