"""Go's text conventions, for messages that must read exactly like the kubelet's.

``go_quote`` is ``%q`` / ``strconv.Quote`` (with Go's Unicode tables, not Python's);
``os_error`` is the text of an ``*fs.PathError`` (``stat /x: no such file or directory``).
"""

from __future__ import annotations

import os
from collections.abc import Callable

_ESCAPES = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
    "\\": "\\\\",
    '"': '\\"',
}


def go_quote(s: str | bytes, *, unicode: str | None = None) -> str:
    """``strconv.Quote`` (``%q``), for text or raw bytes.

    Lone surrogates stand for bytes that were not valid UTF-8 (``surrogateescape``), and Go
    prints each such byte as ``\\xNN``; bytes are read the same way.

    A rune is printed as it is when Go's ``strconv.IsPrint`` accepts it, and that follows the
    Unicode tables of the Go release: ``unicode`` is that version (``"15.0.0"`` for Go 1.21 to
    1.26, ``"17.0.0"`` for Go 1.27), by default the one of the release the process follows
    (:func:`credprov._go.version.current_go`). Python's ``unicodedata`` is older (14.0.0 in
    Python 3.11) and is not used: the tables are Go's own, generated from the toolchains by
    ``scripts/gen_go_printable.py`` into :mod:`credprov._go._printable`.
    """
    if isinstance(s, bytes):
        s = s.decode("utf-8", "surrogateescape")
    elif not s.isascii() and _has_surrogates(s):
        # Escaped bytes next to each other may spell a valid UTF-8 sequence, which Go reads
        # as one rune: quote the bytes the text stands for.
        raw = b"".join(
            surrogate_bytes(ch) if "\ud800" <= ch <= "\udfff" else ch.encode() for ch in s
        )
        s = raw.decode("utf-8", "surrogateescape")
    out = ['"']
    is_print = None
    for ch in s:
        code = ord(ch)
        esc = _ESCAPES.get(ch)
        if esc is not None:
            out.append(esc)
        elif code < 0x80:
            out.append(ch if 0x20 <= code < 0x7F else f"\\x{code:02x}")
        elif 0xD800 <= code <= 0xDFFF:
            out.extend(f"\\x{b:02x}" for b in surrogate_bytes(ch))
        else:
            if is_print is None:
                is_print = _printable(unicode)
            if is_print(code):
                out.append(ch)
            elif code <= 0xFFFF:
                out.append(f"\\u{code:04x}")
            else:
                out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


_TABLES: dict[str, Callable[[int], bool]] = {}


def _printable(unicode: str | None) -> Callable[[int], bool]:
    """``strconv.IsPrint`` of the Go releases with Unicode ``unicode`` (None: the process's)."""
    if unicode is None:
        from credprov._go.version import current_go

        unicode = current_go().unicode
    found = _TABLES.get(unicode)
    if found is not None:
        return found
    from bisect import bisect_right

    from credprov._go._printable import TABLES

    starts: list[int] = []
    ends: list[int] = []
    for word in "".join(TABLES[unicode]).split():
        lo, _, hi = word.partition("-")
        starts.append(int(lo, 16))
        ends.append(int(hi or lo, 16))

    def is_print(code: int) -> bool:
        i = bisect_right(starts, code) - 1
        return i >= 0 and code <= ends[i]

    _TABLES[unicode] = is_print
    return is_print


def _has_surrogates(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def surrogate_bytes(ch: str) -> bytes:
    """The raw byte(s) a lone surrogate stands for."""
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:
        return bytes([code - 0xDC00])
    return ch.encode("utf-8", "surrogatepass")


def errno_text(exc: OSError) -> str:
    """Go's syscall.Errno text: strerror with a lower-case first letter."""
    if exc.errno is None:
        return str(exc)
    text = os.strerror(exc.errno)
    return text[:1].lower() + text[1:]


def os_error(op: str, path: str, exc: OSError) -> str:
    """``*fs.PathError`` text: ``<op> <path>: <errno text>``."""
    return f"{op} {path}: {errno_text(exc)}"
