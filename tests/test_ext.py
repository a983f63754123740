"""Tests of the extension types (``cedarlite.data.ext``): unit tests, then a differential test
against the Rust engine (cedarpy).

The differential test builds small typed expression trees over the extension functions, renders
each as ``permit(principal, action, resource) when { EXPR };``, evaluates the whole batch in one
cedarpy call and compares every policy's outcome (true / false / error message) with the
outcome computed through the registry. Each example is a batch of up to 25 expressions.
``HYPOTHESIS_PROFILE=thorough`` runs 5,000 batches; ``CEDARLITE_EXT_EXAMPLES=N`` sets the count.
"""

from __future__ import annotations

import functools
import os
import pickle
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cedarlite.data.ext import (
    CONSTRUCTORS,
    EXTENSION_TYPES,
    FUNCTIONS,
    METHODS,
    Datetime,
    Decimal,
    Duration,
    ExtFunction,
    IPAddr,
    from_extn_json,
    lookup,
)
from cedarlite.data.values import CedarSet, cedar_eq, to_cedar, to_json_value, type_name
from cedarlite.errors import EvaluationError

I64_MIN, I64_MAX = -(2**63), 2**63 - 1


def call(name: str, *args: Any) -> Any:
    """Apply the extension function ``name`` through the registry."""
    func = lookup(name)
    assert func is not None, name
    return func.call(args)


def error_of(name: str, *args: Any) -> str:
    """The message of the error that ``name(*args)`` raises."""
    with pytest.raises(EvaluationError) as info:
        call(name, *args)
    return info.value.message


def ext_error(ext: str, message: str) -> str:
    return f"error while evaluating `{ext}` extension function: {message}"


# =============================================================================================
# Registry


def test_registry_names_and_signatures() -> None:
    assert set(FUNCTIONS) == {"decimal", "ip", "datetime", "duration"}
    assert set(METHODS) == {
        "lessThan", "lessThanOrEqual", "greaterThan", "greaterThanOrEqual",
        "isIpv4", "isIpv6", "isLoopback", "isMulticast", "isInRange",
        "offset", "durationSince", "toDate", "toTime",
        "toMilliseconds", "toSeconds", "toMinutes", "toHours", "toDays",
    }  # fmt: skip
    assert all(not f.is_method for f in FUNCTIONS.values())
    assert all(f.is_method for f in METHODS.values())
    vocabulary = {"String", "Long", "Bool", "decimal", "ipaddr", "datetime", "duration"}
    for func in [*FUNCTIONS.values(), *METHODS.values()]:
        assert isinstance(func, ExtFunction)
        assert set(func.params) | {func.returns} <= vocabulary
    assert METHODS["offset"].params == ("datetime", "duration")
    assert METHODS["durationSince"].params == ("datetime", "datetime")
    assert METHODS["durationSince"].returns == "duration"
    assert METHODS["isInRange"].arity == 2
    assert METHODS["toDays"].returns == "Long"
    assert FUNCTIONS["ip"].returns == "ipaddr"
    assert {k: c.cedar_type for k, c in EXTENSION_TYPES.items()} == {
        k: k for k in ("decimal", "ipaddr", "datetime", "duration")
    }
    assert CONSTRUCTORS["ipaddr"] is FUNCTIONS["ip"]
    assert lookup("ipaddr") is None


def test_wrong_arity() -> None:
    assert error_of("decimal") == (
        "wrong number of arguments provided to extension function `decimal`: expected 1, got 0"
    )
    assert error_of("toDays", Duration(1), 1) == (
        "wrong number of arguments provided to extension function `toDays`: expected 1, got 2"
    )


def test_from_extn_json() -> None:
    assert from_extn_json("ip", ["10.0.0.1"]) == IPAddr.parse("10.0.0.1")
    assert from_extn_json("decimal", ["1.5"]) == Decimal(15000)
    epoch = from_extn_json("datetime", ["1970-01-01"])
    five = from_extn_json("duration", ["5ms"])
    assert from_extn_json("offset", [epoch, five]) == Datetime(5)
    assert from_extn_json("toMilliseconds", [five]) == 5
    assert from_extn_json("lessThan", [Decimal(1), Decimal(2)]) is True
    with pytest.raises(EvaluationError, match=r"^extension function `ipaddr` does not exist$"):
        from_extn_json("ipaddr", ["10.0.0.1"])
    with pytest.raises(EvaluationError, match="expected 2, got 1"):
        from_extn_json("offset", [epoch])
    with pytest.raises(EvaluationError, match=r"^type error: expected string, got set$"):
        from_extn_json("decimal", [CedarSet(["1.0"])])
    with pytest.raises(EvaluationError, match=r"^type error: expected datetime, got long$"):
        from_extn_json("offset", [1, 2])


# =============================================================================================
# Value classes


VALUES = [
    Decimal(12300), Decimal(-5000), Decimal(I64_MIN), Decimal(I64_MAX),
    IPAddr.parse("10.0.0.1/8"), IPAddr.parse("::1"), IPAddr.parse("1::/16"),
    IPAddr.parse("::ffff:7f00:1"), IPAddr.parse("2001:db8:0:0:1:0:0:1"),
    Datetime(0), Datetime(-1), Datetime(I64_MIN), Datetime(I64_MAX), Datetime(1704067200000),
    Duration(0), Duration(-93784005), Duration(I64_MIN), Duration(I64_MAX),
]  # fmt: skip


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_value_protocol(value: Any) -> None:
    assert type_name(value) == value.cedar_type
    assert value == type(value)(*value.__reduce__()[1])
    assert hash(value) == hash(pickle.loads(pickle.dumps(value)))
    assert value != value._key() and value != "x"
    with pytest.raises(AttributeError):
        value.ms = 1
    fn, args = value.to_json()["__extn"]["fn"], value.to_json()["__extn"]
    arg_values = (
        [from_extn_json(a["__extn"]["fn"], [a["__extn"]["arg"]]) for a in args["args"]]
        if "args" in args
        else [args["arg"]]
    )
    assert from_extn_json(fn, arg_values) == value
    assert to_json_value(value) == value.to_json()
    assert type(value).__name__ in repr(value)


def test_to_cedar_text() -> None:
    assert Decimal(12300).to_cedar() == 'decimal("1.23")'
    assert Decimal(-5000).to_cedar() == 'decimal("-0.5")'
    assert Decimal(0).to_cedar() == 'decimal("0.0")'
    assert Decimal(I64_MIN).to_cedar() == 'decimal("-922337203685477.5808")'
    assert IPAddr.parse("10.0.0.1/8").to_cedar() == 'ip("10.0.0.1/8")'
    assert IPAddr.parse("0:0:0:0:0:0:0:1").to_cedar() == 'ip("::1")'
    assert IPAddr.parse("2001:db8:0:0:1:0:0:1").to_cedar() == 'ip("2001:db8::1:0:0:1")'
    assert IPAddr.parse("1:0:2:0:3:0:4:0").to_cedar() == 'ip("1:0:2:0:3:0:4:0")'
    assert IPAddr.parse("::ffff:7f00:1").to_cedar() == 'ip("::ffff:7f00:1")'
    assert Datetime(-1).to_cedar() == '(datetime("1970-01-01")).offset(duration("-1ms"))'
    assert Duration(90000).to_cedar() == 'duration("90000ms")'
    assert str(Duration(-93784005)) == "-1d2h3m4s5ms"
    assert str(Datetime(-1)) == "1969-12-31T23:59:59.999Z"
    assert str(Datetime(I64_MAX)).startswith("(datetime(")


def test_equality_is_by_value_and_class() -> None:
    assert Decimal.parse("1.0") == Decimal.parse("1.0000") == Decimal.parse("01.0")
    assert Decimal.parse("-0.0") == Decimal.parse("0.0")
    assert IPAddr.parse("192.168.0.1/24") != IPAddr.parse("192.168.0.3/24")
    assert IPAddr.parse("1.2.3.4/32") == IPAddr.parse("1.2.3.4")
    assert IPAddr.parse("::") == IPAddr.parse("0:0:0:0:0:0:0:0")
    assert IPAddr.parse("ABCD::ef") == IPAddr.parse("abcd::EF")
    assert Datetime(5) != Duration(5)
    assert not cedar_eq(Duration(5), 5)
    assert len(CedarSet([Decimal(1), Decimal(1), Datetime(1), Duration(1)])) == 3
    assert Datetime(1) < Datetime(2) <= Datetime(2)
    assert Duration(-1) < Duration(0)
    with pytest.raises(TypeError):
        _ = Datetime(1) < Duration(2)  # type: ignore[operator]
    with pytest.raises(ValueError):
        Decimal(I64_MAX + 1)
    with pytest.raises(ValueError):
        IPAddr(4, 1 << 32)


# =============================================================================================
# decimal


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1.0", 10000), ("-1.0", -10000), ("123.456", 1234560), ("0.1234", 1234),
        ("-0.0123", -123), ("-0.5", -5000), ("00.000", 0), ("0000000000000000000001.0", 10000),
        ("922337203685477.5807", I64_MAX), ("-922337203685477.5808", I64_MIN),
    ],
)  # fmt: skip
def test_decimal_ok(text: str, value: int) -> None:
    assert call("decimal", text) == Decimal(value)


def _bad_decimal(text: str) -> str:
    return ext_error("decimal", f"`{text}` is not a well-formed decimal value")


DECIMAL_OVERFLOW = ext_error("decimal", "overflow when converting to decimal")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1", _bad_decimal("1")), ("1.", _bad_decimal("1.")), (".5", _bad_decimal(".5")),
        ("-.5", _bad_decimal("-.5")), ("+1.0", _bad_decimal("+1.0")), ("", _bad_decimal("")),
        ("1.0\n", _bad_decimal("1.0\n")), (" 1.0", _bad_decimal(" 1.0")),
        ("1.0.0", _bad_decimal("1.0.0")), ("1e2.0", _bad_decimal("1e2.0")),
        ("1.23456", ext_error("decimal", "too many digits after the decimal in `1.23456`")),
        ("0.00000", ext_error("decimal", "too many digits after the decimal in `0.00000`")),
        ("922337203685477.5808", DECIMAL_OVERFLOW), ("-922337203685477.5809", DECIMAL_OVERFLOW),
        ("922337203685478.0", DECIMAL_OVERFLOW), ("99999999999999999999.12345", DECIMAL_OVERFLOW),
        # Unicode digits match Rust's `\d` but are not ASCII: overflow (as Rust says)
        ("٣.1", DECIMAL_OVERFLOW), ("1.٣", DECIMAL_OVERFLOW), ("1.\U00011f50", DECIMAL_OVERFLOW),
        # ...and count as two bytes each after the point
        ("1.٣٣٣", ext_error("decimal", "too many digits after the decimal in `1.٣٣٣`")),
        ("1.\U00011db0", _bad_decimal("1.\U00011db0")),
    ],
)  # fmt: skip
def test_decimal_errors(text: str, message: str) -> None:
    assert error_of("decimal", text) == message


def test_decimal_methods() -> None:
    a, b = Decimal.parse("-0.5"), Decimal.parse("0.0")
    assert call("lessThan", a, b) and call("lessThanOrEqual", a, a)
    assert call("greaterThan", b, a) and call("greaterThanOrEqual", b, b)
    assert not call("greaterThan", a, a) and not call("lessThan", b, a)
    assert error_of("lessThan", IPAddr.parse("1.2.3.4"), 1) == (
        "type error: expected decimal, got ipaddr"
    )
    assert error_of("lessThan", a, "1.0") == "type error: expected decimal, got string"
    assert error_of("decimal", 1) == "type error: expected string, got long"
    assert error_of("decimal", True) == "type error: expected string, got bool"
    assert error_of("decimal", a) == "type error: expected string, got decimal"


# =============================================================================================
# ipaddr


def _ip(text: str) -> tuple[int, int, int]:
    return call("ip", text)._key()  # type: ignore[no-any-return]


def test_ip_ok() -> None:
    assert _ip("1.2.3.4") == (4, 0x01020304, 32)
    assert _ip("0.0.0.0/0") == (4, 0, 0)
    assert _ip("255.255.255.255/32") == (4, 2**32 - 1, 32)
    assert _ip("::") == (6, 0, 128)
    assert _ip("::1") == (6, 1, 128)
    assert _ip("1::") == (6, 1 << 112, 128)
    assert _ip("::/0") == (6, 0, 0)
    assert _ip("1:2:3:4:5:6:7::") == (6, 0x0001000200030004000500060007_0000, 128)
    assert _ip("::1:2:3:4:5:6:7") == (6, 0x0000000100020003000400050006_0007, 128)
    assert _ip("FFFF:ffff::0000/128") == (6, 0xFFFFFFFF << 96, 128)
    assert _ip("ABCD:EF01:2345:6789:ABCD:EF01:2345:6789/128")[2] == 128  # 43 bytes


def _ip_err(message: str) -> str:
    return ext_error("ipaddr", message)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "invalid IP address: "),
        ("01.2.3.4", "invalid IP address: 01.2.3.4"),
        ("1.2.3.256", "invalid IP address: 1.2.3.256"),
        ("1.2.3", "invalid IP address: 1.2.3"),
        ("1.2.3.4.", "invalid IP address: 1.2.3.4."),
        ("1.2.3.4:80", "invalid IP address: 1.2.3.4:80"),
        ("::1%eth0", "invalid IP address: ::1%eth0"),
        (":::", "invalid IP address: :::"),
        ("1:::2", "invalid IP address: 1:::2"),
        ("1::2::3", "invalid IP address: 1::2::3"),
        ("00000::", "invalid IP address: 00000::"),
        ("1:2:3:4:5:6:7:8::", "invalid IP address: 1:2:3:4:5:6:7:8::"),
        ("::1:2:3:4:5:6:7:8", "invalid IP address: ::1:2:3:4:5:6:7:8"),
        ("1:2:3:4:5:6:7", "invalid IP address: 1:2:3:4:5:6:7"),
        (
            "::ffff:1.2.3.4",
            "error parsing IP address from string: We do not accept IPv4 embedded "
            "in IPv6 (e.g., ::ffff:127.0.0.1). Found: `::ffff:1.2.3.4`",
        ),
        (
            "1:2:3:4:5:6:7:8:9:10:11:12:13:14:15:16:17:18",
            "error parsing IP address from string `1:2:3:4:5:6:7:8:9:10:11:12:13:14:15:16:17:18`: "
            "string length is too large",
        ),
        ("/", "error parsing IP address from the string ``: invalid IP address syntax"),
        ("1.2.3/8", "error parsing IP address from the string `1.2.3`: invalid IP address syntax"),
        (
            "1.2.3.4/",
            "error parsing prefix from the string ``: cannot parse integer from empty string",
        ),
        ("1.2.3.4/33", "error parsing prefix: 33 is larger than the limit 32"),
        ("::1/129", "error parsing prefix: 129 is larger than the limit 128"),
        (
            "::/256",
            "error parsing prefix from the string `256`: number too large to fit in target type",
        ),
        ("1.2.3.4/123", "error parsing prefix: string length 3 is too large"),
        ("::/1234", "error parsing prefix: string length 4 is too large"),
        ("1.2.3.4/8/8", "error parsing prefix: string length 3 is too large"),
        ("::1/8/8", "error parsing prefix `8/8`: encountered non-digit"),
        ("1.2.3.4/01", "error parsing prefix `01`: leading zero(s)"),
        ("::1/00", "error parsing prefix `00`: leading zero(s)"),
        ("1.2.3.4/-1", "error parsing prefix `-1`: encountered non-digit"),
        ("1.2.3.4/٣", "error parsing prefix `٣`: encountered non-digit"),
        ("1.2.3.4/٣٣", "error parsing prefix: string length 4 is too large"),
    ],
)
def test_ip_errors(text: str, message: str) -> None:
    assert error_of("ip", text) == _ip_err(message)


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("isIpv4 1.2.3.4", True), ("isIpv6 1.2.3.4", False), ("isIpv6 ::ffff:0:0", True),
        ("isLoopback 127.0.0.1", True), ("isLoopback 127.255.0.1/8", True),
        ("isLoopback 127.0.0.1/7", False), ("isLoopback ::1", True),
        ("isLoopback ::1/127", False), ("isLoopback ::ffff:7f00:1", False),
        ("isMulticast 224.0.0.1/4", True), ("isMulticast 239.1.1.1", True),
        ("isMulticast 240.0.0.1", False), ("isMulticast 224.0.0.0/3", False),
        ("isMulticast ff00::/8", True), ("isMulticast ff00::/7", False),
        ("isMulticast fe00::", False),
        ("isInRange 10.1.2.3 10.0.0.0/8", True), ("isInRange 10.0.0.0/8 10.1.0.0/16", False),
        ("isInRange 10.0.0.0/8 10.255.255.255/8", True), ("isInRange 1.2.3.4 0.0.0.0/0", True),
        ("isInRange 1.2.3.4 ::/0", False), ("isInRange ::1 1.2.3.4/0", False),
        ("isInRange 2001:db8::1 2001:db8::/32", True), ("isInRange ::/0 ::/1", False),
    ],
)  # fmt: skip
def test_ip_methods(expr: str, expected: bool) -> None:
    name, *texts = expr.split()
    assert call(name, *(IPAddr.parse(t) for t in texts)) is expected


def test_ip_type_errors() -> None:
    addr = IPAddr.parse("1.2.3.4")
    assert error_of("isInRange", addr, 1) == "type error: expected ipaddr, got long"
    assert error_of("isInRange", addr, "1.2.3.4") == "type error: expected ipaddr, got string"
    assert error_of("isIpv4", Decimal(1)) == "type error: expected ipaddr, got decimal"
    assert error_of("ip", CedarSet()) == "type error: expected string, got set"


# =============================================================================================
# datetime


DAY = 86_400_000


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("1970-01-01", 0), ("1969-12-31", -DAY), ("2024-02-29", 1709164800000),
        ("2000-02-29", 951782400000), ("0000-02-29", -62162121600000),
        ("0000-01-01", -62167219200000), ("9999-12-31T23:59:59.999Z", 253402300799999),
        ("2024-10-15T11:38:02Z", 1728992282000), ("2024-10-15T11:38:02.101Z", 1728992282101),
        ("2024-10-15T11:38:02.101+1134", 1728950642101),
        ("2024-10-15T11:38:02-1134", 1729033922000),
        ("2024-01-01T00:00:00.999+2359", 1703980860999),
        ("9999-12-31T23:59:59.999-2359", 253402387139999),
    ],
)  # fmt: skip
def test_datetime_ok(text: str, ms: int) -> None:
    assert call("datetime", text) == Datetime(ms)


def test_datetime_offsets_normalize_to_utc() -> None:
    assert call("datetime", "2024-01-01T11:35:00-0100") == call("datetime", "2024-01-01T12:35:00Z")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "invalid date pattern"), ("2024-1-01", "invalid date pattern"),
        ("+2024-01-01", "invalid date pattern"), ("10000-01-01", "invalid date pattern"),
        ("٢٠٢٤-01-01", "invalid date pattern"), ("2024/01/01", "invalid date pattern"),
        ("2024-02-30", "invalid date: 2024-02-30"), ("1900-02-29", "invalid date: 1900-02-29"),
        ("2024-00-01", "invalid date: 2024-00-01"), ("2024-01-00", "invalid date: 2024-01-00"),
        ("2024-04-31", "invalid date: 2024-04-31"),
        ("2024-01-01Z", "invalid hour/minute/second pattern"),
        ("2024-01-01T", "invalid hour/minute/second pattern"),
        ("2024-01-01t00:00:00Z", "invalid hour/minute/second pattern"),
        ("2024-01-01 00:00:00Z", "invalid hour/minute/second pattern"),
        ("2024-01-01T01:02", "invalid hour/minute/second pattern"),
        ("2024-01-01T00:00:00", "invalid millisecond and/or offset pattern"),
        ("2024-01-01T00:00:00z", "invalid millisecond and/or offset pattern"),
        ("2024-01-01T00:00:00.00Z", "invalid millisecond and/or offset pattern"),
        ("2024-01-01T00:00:00.0000Z", "invalid millisecond and/or offset pattern"),
        ("2024-01-01T00:00:00+01:00", "invalid millisecond and/or offset pattern"),
        ("2024-01-01T00:00:00ZZ", "invalid millisecond and/or offset pattern"),
        ("2024-01-01T00:00:00Z\n", "invalid millisecond and/or offset pattern"),
        ("2024-01-01T24:00:00Z", "invalid hour/minute/second: 24:00:00"),
        ("2024-01-01T00:60:00Z", "invalid hour/minute/second: 00:60:00"),
        ("2016-12-31T23:59:60Z", "invalid hour/minute/second: 23:59:60"),
        ("2024-01-01T00:00:00+2400", "invalid offset range: 240"),
        ("2024-01-01T00:00:00.000-0099", "invalid offset range: 099"),
        ("2024-01-01T00:00:00+2460", "invalid offset range: 2460"),
        # range checks come after all syntax checks: date, then time, then offset
        ("2024-13-01T24:00:00+0099", "invalid date: 2024-13-01"),
        ("2024-13-01T24:00", "invalid hour/minute/second pattern"),
        ("2024-01-01T24:00:00+0099", "invalid hour/minute/second: 24:00:00"),
    ],
)  # fmt: skip
def test_datetime_errors(text: str, message: str) -> None:
    assert error_of("datetime", text) == ext_error("datetime", message)


def test_datetime_methods() -> None:
    def dt(text: str) -> Datetime:
        return Datetime.parse(text)

    assert call("offset", dt("2024-01-01"), Duration(-1)) == dt("2023-12-31T23:59:59.999Z")
    assert call("durationSince", dt("2024-01-02"), dt("2024-01-01")) == Duration(DAY)
    assert call("durationSince", dt("2024-01-01"), dt("2024-01-02")) == Duration(-DAY)
    assert call("toDate", dt("1969-12-31T23:59:59.999Z")) == dt("1969-12-31")
    assert call("toDate", dt("1969-12-31")) == dt("1969-12-31")
    assert call("toDate", dt("2024-05-06T07:08:09Z")) == dt("2024-05-06")
    assert call("toTime", dt("1969-12-31T23:59:59.999Z")) == Duration(DAY - 1)
    assert call("toTime", dt("1969-12-31")) == Duration(0)
    assert call("toTime", Datetime(I64_MIN)) == Duration(I64_MIN % DAY)
    assert call("toDate", Datetime(I64_MAX)) == Datetime(I64_MAX // DAY * DAY)


def test_datetime_overflow_messages() -> None:
    assert error_of("offset", Datetime.parse("9999-12-31T23:59:59.999Z"), Duration(I64_MAX)) == (
        ext_error(
            "offset",
            'overflows when adding an offset: (datetime("1970-01-01")).offset('
            'duration("253402300799999ms"))+(9223372036854775807ms)',
        )
    )
    assert error_of("durationSince", Datetime(I64_MIN), Datetime(1)) == ext_error(
        "durationSince",
        "overflows when computing the duration between "
        '(datetime("1970-01-01")).offset(duration("-9223372036854775808ms")) and '
        '(datetime("1970-01-01")).offset(duration("1ms"))',
    )
    assert error_of("toDate", Datetime(I64_MIN)) == ext_error(
        "toDate",
        'overflows when computing the date of (datetime("1970-01-01")).offset('
        'duration("-9223372036854775808ms"))',
    )


def test_datetime_type_errors() -> None:
    assert error_of("offset", IPAddr.parse("::"), 1) == "type error: expected datetime, got ipaddr"
    assert error_of("offset", Datetime(0), 1) == "type error: expected duration, got long"
    assert error_of("offset", Datetime(0), "1ms") == "type error: expected duration, got string"
    assert error_of("durationSince", Datetime(0), Duration(0)) == (
        "type error: expected datetime, got duration"
    )
    assert error_of("toDays", Datetime(0)) == "type error: expected duration, got datetime"
    assert error_of("datetime", 1) == "type error: expected string, got long"


# =============================================================================================
# duration


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("0ms", 0), ("-0ms", 0), ("1d2h3m4s5ms", 93784005), ("90m", 5400000),
        ("-1h30m", -5400000), ("1m1ms", 60001), ("1ms", 1), ("007s", 7000),
        ("9223372036854775807ms", I64_MAX), ("-9223372036854775808ms", I64_MIN),
        ("106751991167d", 106751991167 * DAY),
        ("-106751991167d7h12m55s808ms", I64_MIN),
    ],
)  # fmt: skip
def test_duration_ok(text: str, ms: int) -> None:
    assert call("duration", text) == Duration(ms)


@pytest.mark.parametrize(
    "text",
    ["", "-", "1", "d", "1D", " 1d", "1d ", "1ms\n", "1h1d", "1d1d", "1ms1s", "1d-1h",
     "1.5h", "+1h", "--1h", "1s1m", "1msms", "1hm"],
)  # fmt: skip
def test_duration_bad_pattern(text: str) -> None:
    assert error_of("duration", text) == ext_error("duration", "invalid duration pattern")


@pytest.mark.parametrize(
    "text",
    ["9223372036854775808ms", "-9223372036854775809ms", "106751991168d",
     "106751991167d7h12m55s808ms", "99999999999999999999ms", "18446744073709551616s"],
)  # fmt: skip
def test_duration_overflow(text: str) -> None:
    message = ext_error("duration", "Duration overflows internal representation")
    assert error_of("duration", text) == message


@pytest.mark.parametrize(
    ("ms", "seconds", "minutes", "hours", "days"),
    [
        (93784005, 93784, 1563, 26, 1), (-93784005, -93784, -1563, -26, -1),
        (-7, 0, 0, 0, 0), (-86399999, -86399, -1439, -23, 0), (-90000000, -90000, -1500, -25, -1),
        (I64_MIN, -9223372036854775, -153722867280912, -2562047788015, -106751991167),
        (I64_MAX, 9223372036854775, 153722867280912, 2562047788015, 106751991167),
    ],
)  # fmt: skip
def test_duration_conversions(ms: int, seconds: int, minutes: int, hours: int, days: int) -> None:
    d = Duration(ms)
    assert call("toMilliseconds", d) == ms
    assert (call("toSeconds", d), call("toMinutes", d)) == (seconds, minutes)
    assert (call("toHours", d), call("toDays", d)) == (hours, days)


# =============================================================================================
# Differential test against the Rust engine


@dataclass(frozen=True)
class Lit:
    """A literal (String, Long or Bool)."""

    value: Any

    def __str__(self) -> str:
        return to_cedar(self.value)


@dataclass(frozen=True)
class Raw:
    """Cedar text standing for ``value`` (a value's ``to_cedar()``, to check it round-trips)."""

    text: str
    value: Any

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class Call:
    """An extension function or method call; a method's receiver is ``args[0]``."""

    name: str
    args: tuple[Any, ...]

    def __str__(self) -> str:
        func = lookup(self.name)
        assert func is not None
        if func.is_method:
            receiver, *rest = self.args
            return f"({receiver}).{self.name}({', '.join(map(str, rest))})"
        return f"{self.name}({', '.join(map(str, self.args))})"


@dataclass(frozen=True)
class Binary:
    """``a == b`` or ``a < b`` / ``a <= b`` (the latter only between datetimes or durations)."""

    op: str
    left: Any
    right: Any

    def __str__(self) -> str:
        return f"({self.left}) {self.op} ({self.right})"


def evaluate(node: Any) -> Any:
    """Evaluate a test expression with the registry (raises ``EvaluationError``)."""
    if isinstance(node, Lit | Raw):
        return node.value
    if isinstance(node, Call):
        args = [evaluate(a) for a in node.args]
        return call(node.name, *args)
    left, right = evaluate(node.left), evaluate(node.right)
    if node.op == "==":
        return cedar_eq(left, right)
    assert type(left) is type(right) and hasattr(left, "ms")
    return left.ms < right.ms if node.op == "<" else left.ms <= right.ms


def outcome(node: Any) -> Any:
    """``True``, ``False`` or ``("error", message)``, as the policy ``when { node }`` ends."""
    try:
        value = evaluate(node)
    except EvaluationError as err:
        return ("error", err.message)
    if value is True or value is False:
        return value
    return ("error", f"type error: expected bool, got {type_name(value)}")


# --- strings near the constructors' grammars -------------------------------------------------


def _text(alphabet: str, extra: str, max_size: int) -> st.SearchStrategy[str]:
    """Strings of mostly ``alphabet`` characters, sometimes one of ``extra``."""
    return st.text(st.sampled_from(list(alphabet) * 4 + list(extra)), max_size=max_size)


def _number(low: int, high: int, width: int) -> st.SearchStrategy[str]:
    """A zero-padded integer in ``[low, high]``."""
    return st.integers(low, high).map(lambda n: f"{n:0{width}d}")


def _concat(*parts: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.tuples(*parts).map("".join)


JUNK = "\u0663\U00011f50\U00011db0a .:-+/ZT\n\U0001d7d9"


@st.composite
def mutated(draw: st.DrawFn, base: st.SearchStrategy[str]) -> str:
    """``base`` with, sometimes, one character inserted, replaced or deleted."""
    text = draw(base)
    action = draw(st.sampled_from(["keep", "keep", "keep", "insert", "replace", "delete"]))
    if action == "keep" or (action != "insert" and not text):
        return text
    pos = draw(st.integers(0, len(text) - (action != "insert")))
    char = draw(st.sampled_from("0123456789" + JUNK))
    if action == "insert":
        return text[:pos] + char + text[pos:]
    return text[:pos] + (char if action == "replace" else "") + text[pos + 1 :]


DECIMAL_TEXT = mutated(st.one_of(
    _concat(
        st.sampled_from(["", "", "", "-", "+"]),
        st.one_of(_text("0123456789", "\u0663", 21), st.sampled_from(["922337203685477", "0"])),
        st.sampled_from([".", ".", ".", "", ".."]),
        st.one_of(_text("0123456789", "\u0663", 6), st.sampled_from(["5807", "5808", "5809"])),
    ),
    st.sampled_from(["922337203685477.5807", "-922337203685477.5808", "-0.5", "1.\u0663\u0663"]),
))  # fmt: skip

PREFIX = st.one_of(
    st.just(""),
    st.integers(0, 140).map(lambda n: f"/{n}"),
    _concat(st.just("/"), _text("0123456789", "\u0663x/-", 4)),
)
V4_PART = st.one_of(st.integers(0, 300).map(str), _text("0123456789", "x", 4))
IPV4_TEXT = _concat(st.lists(V4_PART, min_size=3, max_size=5).map(".".join), PREFIX)
HEX_GROUP = st.one_of(
    st.integers(0, 0xFFFF).map(lambda n: f"{n:x}"),
    st.sampled_from(["0", "ff", "FFFF", "0000", "7f00", "ff00"]),
    _text("0123456789abcdefABCDEF", "gx.", 5),
)


@st.composite
def ipv6_text(draw: st.DrawFn) -> str:
    """Hex groups joined by ``:`` (sometimes ``::`` or ``:::``), then an optional prefix."""
    groups = draw(st.lists(HEX_GROUP, max_size=9))
    text = groups[0] if groups else ""
    for group in groups[1:]:
        text += draw(st.sampled_from([":"] * 8 + ["::", ":::"])) + group
    where = draw(st.sampled_from(["", "", "start", "end"]))
    text = {"start": "::" + text, "end": text + "::"}.get(where, text)
    return text + draw(PREFIX)


IP_TEXT = mutated(st.one_of(
    IPV4_TEXT, ipv6_text(),
    st.sampled_from([
        "::", "::1", "1::", "::/0", "127.0.0.1/8", "127.0.0.1/7", "ff00::/8", "224.0.0.0/4",
        "::ffff:1.2.3.4", "::ffff:7f00:1", "1:2:3:4:5:6:7:8", "0.0.0.0/0", "::1/128",
        "ABCD:EF01:2345:6789:ABCD:EF01:2345:6789/128", "10.0.0.0/8", "10.1.2.3/16",
    ]),
))  # fmt: skip

YEAR = st.one_of(
    st.sampled_from(["0000", "1969", "1970", "1900", "2000", "2024", "2100", "9999"]),
    _number(0, 9999, 4), _number(0, 9999, 4), _number(0, 9999, 4),
    _text("0123456789", "\u0663+", 5),
)  # fmt: skip
MONTH = st.one_of(
    _number(1, 12, 2), _number(1, 12, 2), _number(0, 13, 2), _text("0123456789", "x", 3)
)
DAY_OF_MONTH = st.one_of(_number(1, 28, 2), _number(0, 32, 2), _text("0123456789", "x", 3))
DATE = _concat(YEAR, st.just("-"), MONTH, st.just("-"), DAY_OF_MONTH)
TIME = _concat(
    st.sampled_from(["T"] * 8 + ["t", " "]), _number(0, 25, 2), st.just(":"),
    _number(0, 61, 2), st.sampled_from([":"] * 8 + ["::"]), _number(0, 61, 2),
)  # fmt: skip
ZONE = st.one_of(
    st.sampled_from(["Z", "Z", "Z", "Z", "", "z", "ZZ", "+", "+01:00"]),
    _concat(st.sampled_from(["+", "-"]), _number(0, 25, 2), _number(0, 61, 2)),
)
MILLIS = st.one_of(
    st.just(""),
    _number(0, 999, 3).map(".".__add__),
    _concat(st.just("."), _text("0123456789", "x", 4)),
)
DATETIME_TEXT = mutated(st.one_of(DATE, _concat(DATE, TIME, MILLIS, ZONE)))

UNITS = ["d", "h", "m", "s", "ms"]
_SMALL_COUNT = _text("0123456789", "", 4).filter(bool)
COUNT = st.one_of(
    _SMALL_COUNT, _SMALL_COUNT, _SMALL_COUNT,
    st.sampled_from(["9223372036854775807", "9223372036854775808", "106751991167",
                     "106751991168", "18446744073709551616", "0"]),
)  # fmt: skip


@st.composite
def duration_text(draw: st.DrawFn) -> str:
    """A sign and ``<count><unit>`` groups, usually in the right order."""
    sign = draw(st.sampled_from(["", "", "", "-", "-", "+", "--"]))
    if draw(st.integers(0, 4)):
        units = [u for u in UNITS if draw(st.booleans())]
    else:
        units = draw(st.lists(st.sampled_from([*UNITS, "D", "x", ""]), max_size=4))
    return sign + "".join(draw(COUNT) + u for u in units)


# --- well-formed strings, in the many ways each value can be written -------------------------


I64_NEAR_LIMITS = st.one_of(
    st.sampled_from([I64_MIN, I64_MIN + 1, I64_MAX - 1, I64_MAX]),
    st.integers(I64_MAX - 10**15, I64_MAX),
    st.integers(I64_MIN, I64_MIN + 10**15),
)
I64 = st.one_of(st.integers(I64_MIN, I64_MAX), I64_NEAR_LIMITS)


@st.composite
def valid_decimal(draw: st.DrawFn) -> str:
    """A valid decimal, with optional leading zeros and trailing fractional zeros."""
    value = draw(st.one_of(st.integers(-(10**6), 10**6), I64))
    sign, text = ("-", str(Decimal(value))[1:]) if value < 0 else ("", str(Decimal(value)))
    whole, frac = text.split(".")
    zeros = draw(st.sampled_from(["", "", "0", "000"]))
    return f"{sign}{zeros}{whole}.{frac.ljust(draw(st.integers(len(frac), 4)), '0')}"


V6_GROUPS = st.lists(
    st.one_of(st.sampled_from([0, 0, 0, 1, 0xFF00, 0xFFFF, 0x7F00]), st.integers(0, 0xFFFF)),
    min_size=8, max_size=8,
)  # fmt: skip


@st.composite
def valid_ip(draw: st.DrawFn) -> str:
    """A valid address (canonical, uppercase or uncompressed), with a prefix or not."""
    if draw(st.booleans()):
        address = IPAddr(4, draw(st.integers(0, 2**32 - 1)))
        text = str(address)
    else:
        groups = draw(V6_GROUPS)
        address = IPAddr(6, int("".join(f"{g:04x}" for g in groups), 16))
        style = draw(st.sampled_from(["canonical", "upper", "full"]))
        text = {
            "canonical": str(address), "upper": str(address).upper(),
            "full": ":".join(f"{g:x}" for g in groups),
        }[style]  # fmt: skip
    if draw(st.booleans()):
        return text
    return f"{text}/{draw(st.integers(0, address.width))}"


FIRST_MS, LAST_MS = -62167219200000, 253402300799999  # 0000-01-01 .. 9999-12-31T23:59:59.999


@st.composite
def valid_datetime(draw: st.DrawFn) -> str:
    """A valid datetime in one of the five formats, with a random UTC offset."""
    ms = draw(st.one_of(st.integers(FIRST_MS, LAST_MS), st.integers(-(10**11), 10**11)))
    form = draw(st.sampled_from(["date", "Z", "msZ", "offset", "msoffset"]))
    offset = draw(st.integers(-(24 * 60 - 1), 24 * 60 - 1)) if "offset" in form else 0
    shifted = Datetime(ms + offset * 60000).isoformat()
    if shifted is None:  # the local time would leave years 0000-9999: write it in UTC
        shifted, offset, form = Datetime(ms).isoformat(), 0, form.replace("offset", "Z")
    assert shifted is not None
    if form == "date":
        return shifted[:10]
    local = shifted[:23] if form.startswith("ms") else shifted[:19]
    if form.endswith("Z"):
        return local + "Z"
    return f"{local}{'-' if offset < 0 else '+'}{abs(offset) // 60:02d}{abs(offset) % 60:02d}"


VALID_DURATION = st.one_of(st.integers(-(10**10), 10**10), I64).flatmap(
    lambda ms: st.sampled_from([str(Duration(ms)), f"{ms}ms"])
)

CONSTRUCTOR_TEXT = {
    "decimal": ("decimal", st.one_of(valid_decimal(), DECIMAL_TEXT)),
    "ipaddr": ("ip", st.one_of(valid_ip(), IP_TEXT)),
    "datetime": ("datetime", st.one_of(valid_datetime(), DATETIME_TEXT)),
    "duration": ("duration", st.one_of(VALID_DURATION, mutated(duration_text()))),
}

# --- typed expression trees ------------------------------------------------------------------

OTHER_VALUE = st.one_of(
    st.integers(-3, 3).map(Lit),
    st.sampled_from(["1.0", "1.2.3.4", "1ms", "1970-01-01"]).map(Lit),
    st.booleans().map(Lit),
)
LITERAL = {
    "Long": st.integers(-(2**63), 2**63 - 1).map(Lit) | st.integers(-3, 3).map(Lit),
    "Bool": st.booleans().map(Lit),
}
EXTREME_DATETIME = I64_NEAR_LIMITS.map(
    lambda ms: Call("offset", (Call("datetime", (Lit("1970-01-01"),)),
                               Call("duration", (Lit(f"{ms}ms"),))))
)  # fmt: skip
PRODUCERS: dict[str, list[str]] = {}
for _func in METHODS.values():
    PRODUCERS.setdefault(_func.returns, []).append(_func.name)


@functools.cache
def typed(kind: str, depth: int = 2) -> st.SearchStrategy[Any]:
    """Expressions of Cedar type ``kind``; sometimes an argument has the wrong type or count."""
    options: list[st.SearchStrategy[Any]] = []
    if kind in CONSTRUCTOR_TEXT:
        name, texts = CONSTRUCTOR_TEXT[kind]
        good = texts.map(lambda t, name=name: Call(name, (Lit(t),)))
        bad = st.lists(OTHER_VALUE, max_size=2).map(lambda a, name=name: Call(name, tuple(a)))
        options += [good] * 6 + [bad] + [good] * 6  # rare; Hypothesis favours the ends
    if kind in LITERAL:
        options.append(LITERAL[kind])
    if kind == "datetime":
        options += [EXTREME_DATETIME] * 2
    if depth > 0:
        options += [method_call(name, depth - 1) for name in PRODUCERS.get(kind, [])] * 3
    if kind == "Bool" and depth > 0:
        options.append(
            comparison(("decimal", "ipaddr", "datetime", "duration", "Long"), ("==",), depth - 1)
        )
        options.append(comparison(("datetime", "duration"), ("<", "<="), depth - 1))
    return st.one_of(options)


def comparison(kinds: tuple[str, ...], ops: tuple[str, ...], depth: int) -> st.SearchStrategy[Any]:
    """``a <op> b`` with ``a`` and ``b`` of the same kind."""
    return st.sampled_from(kinds).flatmap(
        lambda k: st.builds(Binary, st.sampled_from(ops), typed(k, depth), typed(k, depth))
    )


def method_call(name: str, depth: int) -> st.SearchStrategy[Call]:
    """A call of ``name`` with well-typed arguments, sometimes a wrong one or a wrong count."""
    params = METHODS[name].params
    args = st.tuples(*(typed(p, depth) for p in params))
    wrong = st.tuples(args, st.integers(0, len(params) - 1), OTHER_VALUE).map(
        lambda x: (*x[0][: x[1]], x[2], *x[0][x[1] + 1 :])
    )
    count = args.map(lambda a: a[:-1] or (*a, a[0]))
    chosen = st.one_of([args] * 7 + [wrong] + [args] * 5 + [count] + [args] * 6)
    return chosen.map(lambda a: Call(name, a))


def top_level(node: Any) -> Any:
    """A Bool expression: ``node`` itself, or ``node == <our value as Cedar text>``."""
    try:
        value = evaluate(node)
    except EvaluationError:
        return Binary("==", node, node)
    if value is True or value is False:
        return node
    return Binary("==", node, Raw(to_cedar(value), value))


KINDS = ("decimal", "ipaddr", "datetime", "duration", "Bool", "Long")
EXPRESSIONS = st.sampled_from(KINDS).flatmap(typed).map(top_level)


def rust_outcomes(exprs: list[Any]) -> list[Any]:
    """Outcome of ``when { expr }`` for each expression, with all policies in one cedarpy call."""
    cedarpy = pytest.importorskip("cedarpy")
    policies = "\n".join(f"permit(principal, action, resource) when {{ {e} }};" for e in exprs)
    request = {
        "principal": 'User::"a"', "action": 'Action::"a"', "resource": 'User::"b"', "context": {},
    }  # fmt: skip
    result = cedarpy.is_authorized(request, policies, [])
    prefix = "error while evaluating policy `"
    errors = {}
    for err in result.diagnostics.errors:
        assert err.startswith(prefix), f"{err}\n{policies}"
        policy, message = err[len(prefix) :].split("`: ", 1)
        errors[policy] = message
    reasons = set(result.diagnostics.reasons)
    return [
        ("error", errors[f"policy{i}"]) if f"policy{i}" in errors else f"policy{i}" in reasons
        for i in range(len(exprs))
    ]


THOROUGH = os.environ.get("HYPOTHESIS_PROFILE") == "thorough"
EXAMPLES = int(os.environ.get("CEDARLITE_EXT_EXAMPLES", 5_000 if THOROUGH else 150))


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(EXPRESSIONS, min_size=1, max_size=25))
def test_differential_against_cedarpy(exprs: list[Any]) -> None:
    pytest.importorskip("cedarpy")
    expected = rust_outcomes(exprs)
    for expr, rust in zip(exprs, expected, strict=True):
        assert outcome(expr) == rust, str(expr)


@pytest.mark.parametrize(
    "expr",
    [
        'decimal("1.0") == decimal("1.0000")', 'decimal("-0.5").lessThan(decimal("0.0"))',
        'ip("192.168.0.1/24") != ip("192.168.0.3/24")', '!ip("1.2.3.4").isInRange(ip("::/0"))',
        'datetime("2024-01-01T11:35:00-0100") == datetime("2024-01-01T12:35:00Z")',
        'datetime("1969-12-31T23:59:59.999Z").toDate() == datetime("1969-12-31")',
        'duration("-1h30m").toMinutes() == -90',
    ],
)  # fmt: skip
def test_spec_examples_agree_with_cedarpy(expr: str) -> None:
    assert rust_outcomes([expr]) == [True]


def test_days_in_month_matches_the_calendar_module():
    import calendar

    from cedarlite.data.ext.datetime import _days_in_month

    for year in range(10000):  # Cedar's four-digit years
        for month in range(1, 13):
            assert _days_in_month(year, month) == calendar.monthrange(year, month)[1]
