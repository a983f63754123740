"""The ``ipaddr`` extension: an IPv4 or IPv6 address with a prefix length (CIDR notation).

``ip(s)`` reproduces the Rust engine (``std::net`` address syntax plus Cedar's own prefix
rules), check by check, because each check has its own message:

1. at most 43 bytes (``ABCD:EF01:2345:6789:ABCD:EF01:2345:6789/128``);
2. no IPv4 embedded in IPv6: a string with two or more ``:`` *and* two or more ``.`` is rejected;
3. without ``/``: a strict address (dotted quad without leading zeros, or IPv6 of 1-4 hex digit
   groups with at most one ``::``, no embedded IPv4, no zone), prefix 32 or 128;
4. with ``/`` (the first one): the address as in 3, then the prefix: at most 2 (IPv4) or 3
   (IPv6) bytes, ASCII digits, no leading zero, a u8, at most 32 or 128.

The value keeps the address as written (host bits are not masked): ``ip("10.0.0.1/8")`` and
``ip("10.0.0.2/8")`` are different values, though they denote the same range.
"""

from __future__ import annotations

import re
from typing import Any

from ._base import ExtensionValue, ExtFunction, expect, expect_string, extension_error, extn_json

_MAX_TEXT_BYTES = 43
_WIDTH = {4: 32, 6: 128}
_PREFIX_MAX_DIGITS = {4: 2, 6: 3}

# Bounded repeats on short parts: constant work each.
_V4_PART = re.compile(r"0|[1-9][0-9]{0,2}")
_V6_GROUP = re.compile(r"[0-9A-Fa-f]{1,4}")


class IPAddr(ExtensionValue):
    """A Cedar ``ipaddr``: ``version`` (4 or 6), ``addr`` (the address as an int), ``prefix``."""

    __slots__ = ("addr", "prefix", "version")
    cedar_type = "ipaddr"
    version: int
    addr: int
    prefix: int

    def __init__(self, version: int, addr: int, prefix: int | None = None) -> None:
        width = _WIDTH.get(version)
        if width is None:
            raise ValueError(f"IP version must be 4 or 6, not {version!r}")
        prefix = width if prefix is None else prefix
        if not 0 <= addr < 1 << width or not 0 <= prefix <= width:
            raise ValueError(f"invalid IPv{version} address/prefix: {addr}/{prefix}")
        self._init(version=version, addr=addr, prefix=prefix)

    @classmethod
    def parse(cls, text: str) -> IPAddr:
        """The value of ``ip(text)``; raises ``EvaluationError`` with Rust's message."""
        return cls(*_parse(text))

    def _key(self) -> tuple[int, int, int]:
        return (self.version, self.addr, self.prefix)

    def __reduce__(self) -> tuple[Any, ...]:
        return (IPAddr, self._key())

    @property
    def width(self) -> int:
        """Address size in bits: 32 or 128."""
        return _WIDTH[self.version]

    def range(self) -> tuple[int, int]:
        """The first and last address of the CIDR range (network and broadcast addresses)."""
        host_bits = self.width - self.prefix
        low = self.addr >> host_bits << host_bits
        return low, low | ((1 << host_bits) - 1)

    def is_in_range(self, other: IPAddr) -> bool:
        """This range lies within ``other``'s; addresses of different families never do."""
        if self.version != other.version:
            return False
        low, high = self.range()
        other_low, other_high = other.range()
        return other_low <= low and high <= other_high

    def __str__(self) -> str:
        """Canonical text: dotted quad or RFC 5952 IPv6, with ``/n`` unless a single address."""
        text = _format_v4(self.addr) if self.version == 4 else _format_v6(self.addr)
        return text if self.prefix == self.width else f"{text}/{self.prefix}"

    def to_cedar(self) -> str:
        """``ip("<canonical text>")``."""
        return f'ip("{self}")'

    def to_json(self) -> dict[str, Any]:
        """``{"__extn": {"fn": "ip", "arg": "<canonical text>"}}``."""
        return extn_json("ip", str(self))


# ---------------------------------------------------------------------------------------------
# Parsing


def _error(message: str) -> Exception:
    return extension_error("ipaddr", message)


def _parse(text: str) -> tuple[int, int, int]:
    """``(version, addr, prefix)`` of ``ip(text)``."""
    if len(text.encode("utf-8", "surrogatepass")) > _MAX_TEXT_BYTES:
        raise _error(f"error parsing IP address from string `{text}`: string length is too large")
    if text.count(":") >= 2 and text.count(".") >= 2:
        raise _error(
            "error parsing IP address from string: We do not accept IPv4 embedded in IPv6 "
            f"(e.g., ::ffff:127.0.0.1). Found: `{text}`"
        )
    addr_text, slash, prefix_text = text.partition("/")
    parsed = _parse_address(addr_text)
    if not slash:
        if parsed is None:
            raise _error(f"invalid IP address: {text}")
        return (*parsed, _WIDTH[parsed[0]])
    if parsed is None:
        raise _error(
            f"error parsing IP address from the string `{addr_text}`: invalid IP address syntax"
        )
    version = parsed[0]
    return (*parsed, _parse_prefix(prefix_text, _WIDTH[version], _PREFIX_MAX_DIGITS[version]))


def _parse_address(text: str) -> tuple[int, int] | None:
    """``(version, addr)`` of a strict IPv4 or IPv6 address (Rust's ``IpAddr::from_str``)."""
    v4 = _parse_v4(text)
    if v4 is not None:
        return 4, v4
    v6 = _parse_v6(text)
    return None if v6 is None else (6, v6)


def _parse_v4(text: str) -> int | None:
    """A dotted quad of decimal parts 0..255 without leading zeros."""
    parts = text.split(".")
    if len(parts) != 4 or not all(_V4_PART.fullmatch(p) for p in parts):
        return None
    values = [int(p) for p in parts]
    if max(values) > 255:
        return None
    return _join(values, 8)


def _parse_v6(text: str) -> int | None:
    """Eight groups of 1-4 hex digits, or fewer around one ``::`` standing for >= 1 zero group."""
    head, double_colon, tail = text.partition("::")
    head_groups = head.split(":") if head else []
    tail_groups = tail.split(":") if tail else []
    if double_colon:
        if len(head_groups) + len(tail_groups) > 7:
            return None
    elif len(head_groups) != 8:
        return None
    if not all(_V6_GROUP.fullmatch(g) for g in head_groups + tail_groups):
        return None
    zeros = [0] * (8 - len(head_groups) - len(tail_groups))
    return _join([int(g, 16) for g in head_groups] + zeros + [int(g, 16) for g in tail_groups], 16)


def _join(parts: list[int], bits: int) -> int:
    """The integer whose big-endian ``bits``-bit digits are ``parts``."""
    value = 0
    for part in parts:
        value = value << bits | part
    return value


def _parse_prefix(text: str, limit: int, max_digits: int) -> int:
    """The prefix length after ``/``, with Rust's checks in Rust's order."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > max_digits:
        raise _error(f"error parsing prefix: string length {size} is too large")
    if any(c not in "0123456789" for c in text):
        raise _error(f"error parsing prefix `{text}`: encountered non-digit")
    if text.startswith("0") and text != "0":
        raise _error(f"error parsing prefix `{text}`: leading zero(s)")
    if not text:
        raise _error(
            "error parsing prefix from the string ``: cannot parse integer from empty string"
        )
    value = int(text)
    if value > 255:
        raise _error(
            f"error parsing prefix from the string `{text}`: number too large to fit in target type"
        )
    if value > limit:
        raise _error(f"error parsing prefix: {value} is larger than the limit {limit}")
    return value


# ---------------------------------------------------------------------------------------------
# Formatting


def _format_v4(addr: int) -> str:
    return ".".join(str(addr >> shift & 0xFF) for shift in (24, 16, 8, 0))


def _format_v6(addr: int) -> str:
    """RFC 5952: lowercase, no leading zeros, the first longest run of 2+ zero groups as ``::``."""
    groups = [addr >> shift & 0xFFFF for shift in range(112, -1, -16)]
    best_start, best_len, start = -1, 1, None
    for i, group in enumerate([*groups, 1]):
        if group == 0 and start is None:
            start = i
        elif group != 0 and start is not None:
            if i - start > best_len:
                best_start, best_len = start, i - start
            start = None
    text = [f"{g:x}" for g in groups]
    if best_start < 0:
        return ":".join(text)
    head = ":".join(text[:best_start])
    tail = ":".join(text[best_start + best_len :])
    return f"{head}::{tail}"


# ---------------------------------------------------------------------------------------------
# Functions


def ip(text: Any) -> IPAddr:
    """``ip(String) -> ipaddr``."""
    return IPAddr.parse(expect_string(text))


def is_ipv4(value: Any) -> bool:
    """``ipaddr.isIpv4() -> Bool``."""
    return expect(IPAddr, value).version == 4


def is_ipv6(value: Any) -> bool:
    """``ipaddr.isIpv6() -> Bool``."""
    return expect(IPAddr, value).version == 6


_LOOPBACK = {4: IPAddr(4, 127 << 24, 8), 6: IPAddr(6, 1, 128)}
_MULTICAST = {4: IPAddr(4, 224 << 24, 4), 6: IPAddr(6, 0xFF << 120, 8)}


def is_loopback(value: Any) -> bool:
    """``ipaddr.isLoopback() -> Bool``: the whole range is in 127.0.0.0/8 or is ``::1``."""
    address = expect(IPAddr, value)
    return address.is_in_range(_LOOPBACK[address.version])


def is_multicast(value: Any) -> bool:
    """``ipaddr.isMulticast() -> Bool``: the whole range is in 224.0.0.0/4 or ff00::/8."""
    address = expect(IPAddr, value)
    return address.is_in_range(_MULTICAST[address.version])


def is_in_range(value: Any, other: Any) -> bool:
    """``ipaddr.isInRange(ipaddr) -> Bool``."""
    return expect(IPAddr, value).is_in_range(expect(IPAddr, other))


IPADDR_FUNCTIONS: tuple[ExtFunction, ...] = (
    ExtFunction("ip", False, ("String",), "ipaddr", ip),
    ExtFunction("isIpv4", True, ("ipaddr",), "Bool", is_ipv4),
    ExtFunction("isIpv6", True, ("ipaddr",), "Bool", is_ipv6),
    ExtFunction("isLoopback", True, ("ipaddr",), "Bool", is_loopback),
    ExtFunction("isMulticast", True, ("ipaddr",), "Bool", is_multicast),
    ExtFunction("isInRange", True, ("ipaddr", "ipaddr"), "Bool", is_in_range),
)
"""The ``ip`` constructor and the five ``ipaddr`` methods."""
