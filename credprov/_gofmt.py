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


def go_quote(s: str) -> str:
    """``strconv.Quote``: printable runes pass through, the rest is escaped Go-style."""
    out = []
    for ch in s:
        esc = _ESCAPES.get(ch)
        if esc is not None:
            out.append(esc)
        elif "\udc80" <= ch <= "\udcff":
            # surrogateescape'd byte: Go would see the raw, invalid byte.
            out.append(f"\\x{ord(ch) - 0xDC00:02x}")
        elif ch.isprintable():
            out.append(ch)
        else:
            code = ord(ch)
            if code < 0x80:
                out.append(f"\\x{code:02x}")
            elif code <= 0xFFFF:
                out.append(f"\\u{code:04x}")
            else:
                out.append(f"\\U{code:08x}")
    return '"' + "".join(out) + '"'


def errno_text(exc: OSError) -> str:
    """Go's syscall.Errno text: strerror with a lower-case first letter."""
    if exc.errno is None:
        return str(exc)
    text = os.strerror(exc.errno)
    return text[:1].lower() + text[1:]


def os_error(op: str, path: str, exc: OSError) -> str:
    """``*fs.PathError`` text: ``<op> <path>: <errno text>``."""
    return f"{op} {path}: {errno_text(exc)}"
