"""Go's text conventions, for messages that must read exactly like the kubelet's.

``go_quote`` is ``%q`` / ``strconv.Quote``; ``os_error`` is the text of an ``*fs.PathError``
(``stat /x: no such file or directory``).
"""

from __future__ import annotations

import os

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


def go_quote(s: str | bytes) -> str:
    """``strconv.Quote`` (``%q``), for text or raw bytes.

    Lone surrogates stand for bytes that were not valid UTF-8 (``surrogateescape``), and Go
    prints each such byte as ``\\xNN``; bytes are read the same way.
    """
    if isinstance(s, bytes):
        s = s.decode("utf-8", "surrogateescape")
    out = ['"']
    for ch in s:
        code = ord(ch)
        esc = _ESCAPES.get(ch)
        if esc is not None:
            out.append(esc)
        elif 0xD800 <= code <= 0xDFFF:
            out.extend(f"\\x{b:02x}" for b in surrogate_bytes(ch))
        elif ch.isprintable():
            # str.isprintable keeps exactly categories L, M, N, P, S and U+0020, which is
            # Go's unicode.IsPrint.
            out.append(ch)
        elif code < 0x80:
            out.append(f"\\x{code:02x}")
        elif code <= 0xFFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


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
