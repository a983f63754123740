"""SHA-256 from the interpreter's own implementation, without loading OpenSSL.

``import hashlib`` first loads OpenSSL's ``_hashlib`` (~3 ms), a tenth of the imports of a
hook process (one per tool call) that computes a few digests of small texts. The built-in
module gives the same digests; ``hashlib`` is the fallback where it is missing.
"""

from __future__ import annotations

TYPE_CHECKING = False  # (not typing's: see cedarlite/__init__.py)
if TYPE_CHECKING:
    from hashlib import sha256  # the same interface
else:
    try:
        from _sha256 import sha256  # Python 3.11
    except ImportError:  # pragma: no cover - its name from Python 3.12
        try:
            from _sha2 import sha256
        except ImportError:  # a Python without it: the public way
            from hashlib import sha256

__all__ = ["sha256"]
