"""Reusing compiled policy sets across processes: content-addressed cache entries.

The key is a hash of the policy text, the parse mode, the cedarlite version and the compiled
format, so an entry can only ever be used for the exact text it was built from. Entries live in
a private per-user directory (:mod:`cedarlite._cache_dir`: checked for owner and mode before
every read, written atomically), because they are pickles whose conditions are Python source
that runs on load. A corrupt or foreign entry is ignored and rebuilt.
:meth:`cedarlite.PolicySet.from_file` is the way in.
"""

from __future__ import annotations

try:  # the C module behind hashlib.blake2b: `import hashlib` would first load OpenSSL, about
    # 4 ms of a hook's cold start for one digest
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - a Python without it: the public way
    from hashlib import blake2b

from ..._cache_dir import load_pickle, store_pickle
from ..._version import __version__
from . import FORMAT_VERSION, CompiledPolicySet


def cache_key(text: str, strict: bool) -> str:
    """The cache key of ``text`` parsed in the given mode by this cedarlite (the entry is
    ``<key>.pickle``)."""
    h = blake2b(digest_size=32)
    h.update(f"cedarlite {__version__} format {FORMAT_VERSION} strict={strict}\0".encode())
    h.update(text.encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def load_compiled(directory: str, text: str, strict: bool) -> CompiledPolicySet | None:
    """The cached compiled form of ``text``, or ``None`` (no entry, or one that does not load
    as a compiled policy set). Raises :class:`~cedarlite.errors.CacheError` if ``directory``
    is not private."""
    index = load_pickle(directory, cache_key(text, strict) + ".pickle")
    return index if isinstance(index, CompiledPolicySet) else None


def store_compiled(directory: str, text: str, strict: bool, index: CompiledPolicySet) -> bool:
    """Cache the compiled form of ``text`` (atomically; ``False`` if it could not be written)."""
    return store_pickle(directory, cache_key(text, strict) + ".pickle", index)
