"""Go ``time.ParseDuration`` / ``Duration.String`` cases (Go's ``time_test.go``)."""

from __future__ import annotations

import random

import pytest

from credprov._go.durations import (
    HOUR,
    MICROSECOND,
    MILLISECOND,
    MINUTE,
    NANOSECOND,
    SECOND,
    DurationError,
    format_duration,
    parse_duration,
    time_quote,
)

_MAX = (1 << 63) - 1
_MIN = -(1 << 63)

_PARSE = [
    ("0", 0),
    ("5s", 5 * SECOND),
    ("30s", 30 * SECOND),
    ("1478s", 1478 * SECOND),
    ("-5s", -5 * SECOND),
    ("+5s", 5 * SECOND),
    ("-0", 0),
    ("+0", 0),
    ("5.0s", 5 * SECOND),
    ("5.6s", 5 * SECOND + 600 * MILLISECOND),
    ("5.s", 5 * SECOND),
    (".5s", 500 * MILLISECOND),
    ("1.0s", SECOND),
    ("1.00s", SECOND),
    ("1.004s", SECOND + 4 * MILLISECOND),
    ("1.0040s", SECOND + 4 * MILLISECOND),
    ("100.00100s", 100 * SECOND + MILLISECOND),
    ("10ns", 10 * NANOSECOND),
    ("11us", 11 * MICROSECOND),
    ("12\u00b5s", 12 * MICROSECOND),
    ("12\u03bcs", 12 * MICROSECOND),
    ("13ms", 13 * MILLISECOND),
    ("14s", 14 * SECOND),
    ("15m", 15 * MINUTE),
    ("16h", 16 * HOUR),
    ("3h30m", 3 * HOUR + 30 * MINUTE),
    ("1h30m", 90 * MINUTE),
    ("10.5s4m", 4 * MINUTE + 10 * SECOND + 500 * MILLISECOND),
    ("-2m3.4s", -(2 * MINUTE + 3 * SECOND + 400 * MILLISECOND)),
    ("1h2m3s4ms5us6ns", HOUR + 2 * MINUTE + 3 * SECOND + 4 * MILLISECOND + 5 * MICROSECOND + 6),
    ("39h9m14.425s", 39 * HOUR + 9 * MINUTE + 14 * SECOND + 425 * MILLISECOND),
    ("52763797000ns", 52763797000),
    ("0.3333333333333333333h", 20 * MINUTE),
    ("9007199254740993ns", (1 << 53) + 1),
    ("9223372036854775807ns", _MAX),
    ("9223372036854775.807us", _MAX),
    ("9223372036s854ms775us807ns", _MAX),
    ("-9223372036854775808ns", _MIN),
    ("-9223372036854775.808us", _MIN),
    ("-9223372036s854ms775us808ns", _MIN),
    ("-2562047h47m16.854775808s", _MIN),
    ("0.100000000000000000000h", 6 * MINUTE),
    ("0.830103483285477580700h", 49 * MINUTE + 48 * SECOND + 372539827),
]


@pytest.mark.parametrize(("text", "want"), _PARSE, ids=[t for t, _ in _PARSE])
def test_parse(text: str, want: int) -> None:
    assert parse_duration(text) == want


_PARSE_ERRORS = [
    ("", 'time: invalid duration ""'),
    ("3", 'time: missing unit in duration "3"'),
    ("-", 'time: invalid duration "-"'),
    ("s", 'time: invalid duration "s"'),
    (".", 'time: invalid duration "."'),
    ("-.", 'time: invalid duration "-."'),
    (".s", 'time: invalid duration ".s"'),
    ("+.s", 'time: invalid duration "+.s"'),
    ("1d", 'time: unknown unit "d" in duration "1d"'),
    ("\udc85\udc85", 'time: invalid duration "\\x85\\x85"'),
    ("\udcffff", 'time: invalid duration "\\xffff"'),
    ("hello \udcffff world", 'time: invalid duration "hello \\xffff world"'),
    ("\ufffd", 'time: invalid duration "\\xef\\xbf\\xbd"'),
    ("1\u00b5d", 'time: unknown unit "\\xc2\\xb5d" in duration "1\\xc2\\xb5d"'),
    ("9223372036854775810ns", 'time: invalid duration "9223372036854775810ns"'),
    ("9223372036854775808ns", 'time: invalid duration "9223372036854775808ns"'),
    ("-9223372036854775809ns", 'time: invalid duration "-9223372036854775809ns"'),
    ("9223372036854776us", 'time: invalid duration "9223372036854776us"'),
    ("3000000h", 'time: invalid duration "3000000h"'),
    ("9223372036854775.808us", 'time: invalid duration "9223372036854775.808us"'),
    ("9223372036854ms775us808ns", 'time: invalid duration "9223372036854ms775us808ns"'),
    ("1m 2s", 'time: unknown unit "m " in duration "1m 2s"'),
    ('1"s', 'time: unknown unit "\\"s" in duration "1\\"s"'),
]


@pytest.mark.parametrize(
    ("text", "message"), _PARSE_ERRORS, ids=[repr(t) for t, _ in _PARSE_ERRORS]
)
def test_parse_errors(text: str, message: str) -> None:
    with pytest.raises(DurationError) as info:
        parse_duration(text)
    assert str(info.value) == message


_STRING = [
    ("0s", 0),
    ("1ns", 1),
    ("1.1\u00b5s", 1100),
    ("2.2ms", 2200 * MICROSECOND),
    ("3.3s", 3300 * MILLISECOND),
    ("4m5s", 4 * MINUTE + 5 * SECOND),
    ("4m5.001s", 4 * MINUTE + 5001 * MILLISECOND),
    ("5h6m7.001s", 5 * HOUR + 6 * MINUTE + 7001 * MILLISECOND),
    ("8m0.000000001s", 8 * MINUTE + 1),
    ("2562047h47m16.854775807s", _MAX),
    ("-2562047h47m16.854775808s", _MIN),
    ("1h30m0s", 90 * MINUTE),
    ("-1m0s", -MINUTE),
    ("10m0s", 10 * MINUTE),
]


@pytest.mark.parametrize(("want", "ns"), _STRING, ids=[s for s, _ in _STRING])
def test_format(want: str, ns: int) -> None:
    assert format_duration(ns) == want
    if ns > 0:
        assert format_duration(-ns) == "-" + want


@pytest.mark.parametrize("ns", [_MAX, _MIN, 0, -MINUTE], ids=["max", "min", "zero", "minus-1m"])
def test_round_trip_extremes(ns: int) -> None:
    assert parse_duration(format_duration(ns)) == ns


def test_round_trip_random_milliseconds() -> None:
    rng = random.Random(48629)
    for _ in range(200):
        ns = rng.randrange(1 << 31) * MILLISECOND
        assert parse_duration(format_duration(ns)) == ns


@pytest.mark.parametrize(
    ("text", "want"),
    [("abc", '"abc"'), ('a"b\\', '"a\\"b\\\\"'), ("\n", '"\\x0a"'), ("\u00b5", '"\\xc2\\xb5"')],
    ids=["plain", "quote-backslash", "control", "non-ascii"],
)
def test_time_quote(text: str, want: str) -> None:
    assert time_quote(text) == want


@pytest.mark.parametrize(
    ("text", "nanoseconds"),
    [
        # Go sums the terms in a uint64: past 2**64 the sum wraps, and the result parses.
        ("9223372036854775808ns9223372036854775808ns", 0),
        ("18446744073709551615ns1ns", None),  # one term past 2**63: refused before the sum
        ("9223372036854775808ns9223372036854775809ns", None),  # a term past 2**63 is refused
        ("-9223372036854775808ns", -(2**63)),
    ],
)
def test_sum_wraps_as_a_uint64(text: str, nanoseconds: int | None) -> None:
    if nanoseconds is None:
        with pytest.raises(DurationError):
            parse_duration(text)
    else:
        assert parse_duration(text) == nanoseconds
