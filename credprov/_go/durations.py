"""Go ``time.Duration`` strings, as ``metav1.Duration`` reads and writes them.

Mirrors ``time.ParseDuration`` (signs, fractions, the units ``ns us µs μs ms s m h``,
overflow) and ``time.Duration.String`` (``1h0m0s``, ``1.5s``, ``500ms``, ``0s``), so that
configs and plugin responses round-trip byte for byte. Durations are plain ``int``
nanoseconds everywhere in credprov.
"""

from __future__ import annotations

from credprov.errors import GoError

__all__ = [
    "HOUR",
    "MICROSECOND",
    "MILLISECOND",
    "MINUTE",
    "NANOSECOND",
    "SECOND",
    "DurationError",
    "format_duration",
    "parse_duration",
    "time_quote",
]


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


class DurationError(GoError, ValueError):
    """A string that ``time.ParseDuration`` would reject; ``str()`` is Go's text."""


def time_quote(s: str) -> str:
    """The ``time`` package's own ``quote``: not ``strconv.Quote``.

    Non-ASCII and control characters become ``\\xHH`` per UTF-8 byte (lone surrogates from
    ``surrogateescape`` become their original byte); ``"`` and ``\\`` are backslashed.
    """
    out = ['"']
    for ch in s:
        if ord(ch) >= 0x80 or ch < " ":
            raw = ch.encode("utf-8", "surrogateescape")
            out.extend(f"\\x{b:02x}" for b in raw)
        else:
            if ch in '"\\':
                out.append("\\")
            out.append(ch)
    out.append('"')
    return "".join(out)


def _invalid(orig: str) -> DurationError:
    return DurationError(f"time: invalid duration {time_quote(orig)}")


_DIGITS = "0123456789"
_OVERFLOW = 1 << 63
_UINT64 = (1 << 64) - 1


def _leading_int(s: str) -> tuple[int, str] | None:
    x = 0
    i = 0
    while i < len(s) and s[i] in _DIGITS:
        if x > _OVERFLOW // 10:
            return None
        x = x * 10 + ord(s[i]) - 48
        if x > _OVERFLOW:
            return None
        i += 1
    return x, s[i:]


def _leading_fraction(s: str) -> tuple[int, float, str]:
    x = 0
    scale = 1.0
    overflow = False
    i = 0
    while i < len(s) and s[i] in _DIGITS:
        if not overflow:
            if x > (_OVERFLOW - 1) // 10:
                overflow = True
            else:
                y = x * 10 + ord(s[i]) - 48
                if y > _OVERFLOW:
                    overflow = True
                else:
                    x = y
                    scale *= 10
        i += 1
    return x, scale, s[i:]


def parse_duration(text: str) -> int:
    """Parse a Go duration string into nanoseconds, exactly as ``time.ParseDuration``.

    Fractions use float64 arithmetic, as Go does (so ``0.3333333333333333333h`` is 20m).

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
        raise _invalid(orig)
    d = 0
    while s:
        if not (s[0] == "." or s[0] in _DIGITS):
            raise _invalid(orig)
        pl = len(s)
        leading = _leading_int(s)
        if leading is None:
            raise _invalid(orig)
        v, s = leading
        pre = pl != len(s)
        post = False
        f, scale = 0, 1.0
        if s and s[0] == ".":
            s = s[1:]
            pl = len(s)
            f, scale, s = _leading_fraction(s)
            post = pl != len(s)
        if not pre and not post:
            raise _invalid(orig)
        i = 0
        while i < len(s) and not (s[i] == "." or s[i] in _DIGITS):
            i += 1
        if i == 0:
            raise DurationError(f"time: missing unit in duration {time_quote(orig)}")
        unit_name, s = s[:i], s[i:]
        unit = _UNITS.get(unit_name)
        if unit is None:
            raise DurationError(
                f"time: unknown unit {time_quote(unit_name)} in duration {time_quote(orig)}"
            )
        if v > _OVERFLOW // unit:
            raise _invalid(orig)
        v *= unit
        if f > 0:
            # float64 is what Go uses to stay nanosecond-accurate for fractions of hours.
            v += int(float(f) * (float(unit) / scale))
            if v > _OVERFLOW:
                raise _invalid(orig)
        # Go sums in a uint64: a sum past 2**64 wraps (and may then parse), as the kubelet
        # reads it; only a sum between 2**63 and 2**64 is refused here.
        d = (d + v) & _UINT64
        if d > _OVERFLOW:
            raise _invalid(orig)
    if neg:
        return -d
    if d > _MAX:
        raise _invalid(orig)
    return d


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
