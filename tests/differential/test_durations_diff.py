"""credprov's Go durations against real Go: ``time.ParseDuration`` (every ``cacheDuration`` and
``defaultCacheDuration`` the kubelet reads) and ``Duration.String``, on a table of edge cases
and generated strings. Accept or refuse, the value, the printed form and the error text must
be equal. ``CREDPROV_DIFF_LONG=N`` runs N generated strings (1 means 20,000) instead of 2,000.
"""

from __future__ import annotations

import random

import pytest

from credprov._go.durations import DurationError, format_duration, parse_duration
from tests.differential import gotool

pytestmark = pytest.mark.e2e

TABLE = [
    "0", "", "+0", "-0", "1", "1s", "-1.5h", "+2m", ".5s", "5.s", ".s", "1.0000000001s",
    "0.3333333333333333333h", "1h2m3s4ms5us6ns", "1µs", "1μs", "1us", "1ns", "1x", "1sec",
    "9223372036854775807ns", "9223372036854775808ns", "-9223372036854775808ns",
    "9223372036854775808ns9223372036854775808ns", "9223372036854775808ns1ns",
    "18446744073709551615ns", "2562047h47m16.854775807s", "2562047h47m16.854775808s",
    "2562047.9h", "-2562047h47m16.854775808s", "1e3s", "1h-1m", "1 s", " 1s", "1s ",
    "9223372036854775808h", "92233720368547758080ns", "0.00000000000000000000001s",
    "1.99999999999999999999999999999s", "3000000h", "1m1m1m", "1..5s", "h", "1", "-",
]  # fmt: skip

_UNITS = ["ns", "us", "µs", "μs", "ms", "s", "m", "h", "x", ""]


def _generated(count: int) -> list[str]:
    rng = random.Random(20261125)
    out = []
    for _ in range(count):
        parts = [rng.choice(["", "", "-", "+"])]
        for _ in range(rng.randint(1, 3)):
            digits = rng.choice(
                [str(rng.randint(0, 100)), str(rng.randint(0, 2**64)), str(2**63), "", "0"]
            )
            if rng.random() < 0.3:
                digits += "." + str(rng.randint(0, 10 ** rng.randint(0, 25)))
            parts.append(digits + rng.choice(_UNITS))
        out.append("".join(parts))
    return out


def _ours(text: str) -> dict[str, object]:
    try:
        ns = parse_duration(text)
    except DurationError as exc:
        return {"ok": False, "err": str(exc)}
    return {"ok": True, "ns": ns, "out": format_duration(ns)}


@pytest.mark.parametrize("source", ["table", "generated"])
def test_durations_match_go(source: str) -> None:
    inputs = TABLE if source == "table" else _generated(gotool.case_count(2000))
    answers = gotool.oracle("duration").ask([{"op": "parse", "in": text} for text in inputs])
    failures = []
    for text, go in zip(inputs, answers, strict=True):
        expected = (
            {"ok": True, "ns": go["ns"], "out": go["out"]}
            if go["ok"]
            else {"ok": False, "err": go["err"]}
        )
        if _ours(text) != expected:
            failures.append(f"{text!r}: go {expected}, credprov {_ours(text)}")
    assert not failures, f"{len(failures)} divergences:\n" + "\n".join(failures[:30])
