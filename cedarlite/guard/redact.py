"""What the decision log redacts: secret-named keys and credential-shaped strings.

A value is replaced by ``"[REDACTED]"`` when its key, lower-cased and without ``-`` and ``_``,
contains one of :data:`SECRET_WORDS`. Inside any string, credentials are replaced in place:
``sk-``/``sk_live_``/``ghp_``/``gho_``/``github_pat_``/``xox[abp]-`` tokens, ``AKIA``/``ASIA``
key ids, JWTs (``eyJ...`` in three base64url parts), PEM private key blocks (to the end of the
string when the block is cut off), and the token of ``Bearer <token>``. Keys are scrubbed the
same way (:func:`scrub_key`: an object key can be a token too), and so is every text the log
writes beside the params (reasons, error messages), which may quote an argument.

Every pattern is linear: a token may only start where no key character precedes it (so a scan
never restarts inside a run it has already read), quantifiers are possessive, and PEM blocks
are found with forward searches. The walk over nested values is
:func:`cedarlite.guard._json.encode`.
"""

from __future__ import annotations

import re
from functools import lru_cache

#: The replacement text.
REDACTED = "[REDACTED]"

#: What the decision log writes for values nested too deeply to write (see ``LOG_DEPTH``).
TRUNCATED = "[TRUNCATED]"

#: Key words (matched in keys lower-cased, ``-`` and ``_`` removed).
SECRET_WORDS = (
    "token",
    "password",
    "passwd",
    "secret",
    "apikey",
    "accesskey",
    "privatekey",
    "authorization",
    "cookie",
    "credential",
)

_KEY = r"A-Za-z0-9_\-"
_TOKENS = re.compile(
    rf"(?<![{_KEY}])"
    r"(?:"
    rf"(?:sk-|sk_live_|ghp_|gho_|github_pat_|xox[abp]-)[{_KEY}]{{8,}}+"
    r"|(?:AKIA|ASIA)[A-Z0-9]{12,}+"
    rf"|eyJ[{_KEY}]++\.[{_KEY}]++\.[{_KEY}]++"
    r")"
    r"|(?<![A-Za-z0-9])(?i:bearer)[ \t]++(?P<bearer>[A-Za-z0-9._~+/\-]{8,}+=*+)"
)
_PEM_BEGIN = re.compile(r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY-----")
_PEM_END = re.compile(r"-----END [A-Z0-9 ]{0,40}PRIVATE KEY-----")


def secret_key(key: str) -> bool:
    """Whether a value under this key is redacted (``api_key``, ``X-Auth-Token``, ...)."""
    if len(key) <= 64:
        return _secret_short(key)
    return _secret(key)


@lru_cache(maxsize=4096)
def _secret_short(key: str) -> bool:
    return _secret(key)


def _secret(key: str) -> bool:
    folded = key.lower().replace("-", "").replace("_", "")
    return any(word in folded for word in SECRET_WORDS)


def scrub_key(key: str) -> str | None:
    """:func:`scrub` for an object key (keys repeat from call to call: short ones are cached)."""
    return _scrub_short(key) if len(key) <= 64 else scrub(key)


@lru_cache(maxsize=4096)
def _scrub_short(key: str) -> str | None:
    return scrub(key)


def scrub_text(text: str) -> str:
    """``text`` with every credential in it replaced (the text itself when it holds none)."""
    scrubbed = scrub(text)
    return text if scrubbed is None else scrubbed


def scrub(text: str) -> str | None:
    """``text`` with every credential in it replaced by :data:`REDACTED`, or ``None`` when it
    holds none."""
    changed = False
    if "PRIVATE KEY-----" in text:
        pem = _scrub_pem(text)
        if pem is not None:
            text, changed = pem, True
    scrubbed, count = _TOKENS.subn(_replace, text)
    return scrubbed if count or changed else None


def _replace(match: re.Match[str]) -> str:
    if match.group("bearer") is None:
        return REDACTED
    start, end = match.span("bearer")
    whole = match.group(0)
    offset = match.start()
    return whole[: start - offset] + REDACTED + whole[end - offset :]


def _scrub_pem(text: str) -> str | None:
    parts: list[str] = []
    pos = 0
    while (begin := _PEM_BEGIN.search(text, pos)) is not None:
        parts += [text[pos : begin.start()], REDACTED]
        end = _PEM_END.search(text, begin.end())
        if end is None:  # a cut-off block is still a secret: redact to the end
            pos = len(text)
            break
        pos = end.end()
    if not parts:
        return None
    parts.append(text[pos:])
    return "".join(parts)
