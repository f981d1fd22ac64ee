"""Go ``time.Duration`` strings, as ``metav1.Duration`` reads and writes them.

Mirrors ``time.ParseDuration`` (signs, fractions, the units ``ns us µs μs ms s m h``,
overflow) and ``time.Duration.String`` (``1h0m0s``, ``1.5s``, ``500ms``, ``0s``), so that
configs and plugin responses round-trip byte for byte. Durations are plain ``int``
nanoseconds everywhere in credprov.
"""

from __future__ import annotations

from credprov._gofmt import go_quote

NANOSECOND = 1
MICROSECOND = 1000 * NANOSECOND
MILLISECOND = 1000 * MICROSECOND
SECOND = 1000 * MILLISECOND
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE

_MAX = (1 << 63) - 1

_UNITS = {
    "ns": NANOSECOND,
    "us": MICROSECOND,
    "\u00b5s": MICROSECOND,  # micro sign
    "\u03bcs": MICROSECOND,  # Greek mu
    "ms": MILLISECOND,
    "s": SECOND,
    "m": MINUTE,
    "h": HOUR,
}


class DurationError(ValueError):
    """A string that ``time.ParseDuration`` would reject; ``str()`` is Go's text."""


def parse_duration(text: str) -> int:
    """Parse a Go duration string into nanoseconds.

    Raises:
        DurationError: with ``time.ParseDuration``'s message.
    """
    orig = text
    s = text
    neg = False
    if s and s[0] in "-+":
        neg = s[0] == "-"
        s = s[1:]
    if s == "0":
        return 0
    if s == "":
        raise DurationError(f"time: invalid duration {go_quote(orig)}")
    total = 0
    while s:
        if not (s[0] == "." or (s[0].isdigit() and s[0].isascii())):
            raise DurationError(f"time: invalid duration {go_quote(orig)}")
        i = 0
        while i < len(s) and s[i].isascii() and s[i].isdigit():
            i += 1
        int_part = s[:i]
        s = s[i:]
        pre = bool(int_part)
        frac_part = ""
        post = False
        if s.startswith("."):
            s = s[1:]
            j = 0
            while j < len(s) and s[j].isascii() and s[j].isdigit():
                j += 1
            frac_part = s[:j]
            post = bool(frac_part)
            s = s[j:]
        if not pre and not post:
            raise DurationError(f"time: invalid duration {go_quote(orig)}")
        k = 0
        while k < len(s) and s[k] != "." and not (s[k].isascii() and s[k].isdigit()):
            k += 1
        if k == 0:
            raise DurationError(f"time: missing unit in duration {go_quote(orig)}")
        unit_name = s[:k]
        s = s[k:]
        unit = _UNITS.get(unit_name)
        if unit is None:
            raise DurationError(
                f"time: unknown unit {go_quote(unit_name)} in duration {go_quote(orig)}"
            )
        v = int(int_part or "0")
        if v > _MAX // unit:
            raise DurationError(f"time: invalid duration {go_quote(orig)}")
        v *= unit
        if frac_part:
            # Go truncates the fraction toward zero at nanosecond precision.
            v += int(frac_part) * unit // (10 ** len(frac_part))
        total += v
        if total > _MAX + (1 if neg else 0):
            raise DurationError(f"time: invalid duration {go_quote(orig)}")
    if neg:
        return -total
    if total > _MAX:
        raise DurationError(f"time: invalid duration {go_quote(orig)}")
    return total


def _fmt_frac(v: int, prec: int) -> tuple[str, int]:
    digits = []
    printed = False
    for _ in range(prec):
        digit = v % 10
        printed = printed or digit != 0
        if printed:
            digits.append(str(digit))
        v //= 10
    frac = ("." + "".join(reversed(digits))) if printed else ""
    return frac, v


def format_duration(ns: int) -> str:
    """Render nanoseconds as ``time.Duration.String`` does (``1h0m0s``, ``-1m0s``, ``0s``)."""
    neg = ns < 0
    u = -ns if neg else ns
    sign = "-" if neg else ""
    if u < SECOND:
        if u == 0:
            return "0s"
        if u < MICROSECOND:
            return f"{sign}{u}ns"
        if u < MILLISECOND:
            frac, whole = _fmt_frac(u, 3)
            return f"{sign}{whole}{frac}\u00b5s"
        frac, whole = _fmt_frac(u, 6)
        return f"{sign}{whole}{frac}ms"
    frac, whole = _fmt_frac(u, 9)
    secs = whole % 60
    whole //= 60
    out = f"{secs}{frac}s"
    if whole > 0:
        mins = whole % 60
        whole //= 60
        out = f"{mins}m{out}"
        if whole > 0:
            out = f"{whole}h{out}"
    return sign + out
