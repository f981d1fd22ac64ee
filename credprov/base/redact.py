"""Keeping secrets out of what credprov prints: one redactor and one terminal-safe folder.

Two mechanisms, used in this order of preference:

1. **By structure.** Where credprov has decoded a document (a plugin response, a pull
   secret, a docker config), it prints the decoded values and replaces every ``password``
   and ``auth`` value with :data:`REDACTED`; raw bytes that hold secrets are never printed
   by default. That is exact whatever the encoder did (Go writes ``&`` as ``\\u0026``,
   ``<``/``>`` as ``\\u003c``/``\\u003e``, may write ``/`` as ``\\/`` and non-ASCII raw).
2. **By value**, only for free text credprov cannot parse (a plugin's stderr): each known
   secret is replaced in every spelling an encoder may give it (raw, Python's and Go's JSON
   escaping, ``\\/``, ``\\uXXXX`` for every non-ASCII character). A value shorter than
   :data:`MIN_SCRUB_LENGTH` is not scrubbed, because replacing a one-character password
   would garble every word that contains it; that choice is logged at debug level (``-v 4``)
   without the value.

:func:`terminal_safe` folds text to one line and escapes control characters and escape
sequences, so plugin output can never move the cursor, recolour or split a log line.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable

log = logging.getLogger("credprov.redact")

REDACTED = "<redacted>"

#: Values shorter than this are not scrubbed from free text (see the module docstring).
MIN_SCRUB_LENGTH = 4


def _go_escape(value: str, ascii_only: bool) -> str:
    """``value`` as Go's ``encoding/json`` writes it inside a string (HTML-safe escaping)."""
    out = []
    for ch in value:
        code = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif code < 0x20 or ch in "<>&" or code in (0x2028, 0x2029):
            out.append(f"\\u{code:04x}")
        elif ascii_only and code > 0x7E:
            if code > 0xFFFF:
                code -= 0x10000
                out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
            else:
                out.append(f"\\u{code:04x}")
        else:
            out.append(ch)
    return "".join(out)


def spellings(value: str) -> set[str]:
    """Every way a JSON encoder (Go's or Python's) may write ``value`` in a document."""
    forms = {value}
    for ascii_only in (False, True):
        forms.add(json.dumps(value, ensure_ascii=ascii_only)[1:-1])
        go = _go_escape(value, ascii_only)
        forms.add(go)
        forms.add(go.replace("/", "\\/"))
    forms.discard("")
    return forms


class Redactor:
    """Replaces known secret values, in every JSON spelling, in free text.

    Values shorter than :data:`MIN_SCRUB_LENGTH` are skipped (and logged at debug level):
    the structure-based redaction of decoded documents covers them where it matters.
    """

    def __init__(self, values: Iterable[str] = (), min_length: int = MIN_SCRUB_LENGTH) -> None:
        self.min_length = min_length
        self._forms: set[str] = set()
        self._pattern: re.Pattern[str] | None = None
        for value in values:
            self.add(value)

    def add(self, value: str | None) -> None:
        if not value:
            return
        if len(value) < self.min_length:
            log.debug(
                "a secret of %d characters is too short to scrub from free text; "
                "structured output still redacts it",
                len(value),
            )
            return
        before = len(self._forms)
        self._forms |= spellings(value)
        if len(self._forms) != before:
            self._pattern = None

    def __bool__(self) -> bool:
        return bool(self._forms)

    def __call__(self, text: str) -> str:
        if not self._forms or not text:
            return text
        if self._pattern is None:
            # Longest first, so a secret that contains another is replaced whole.
            ordered = sorted(self._forms, key=len, reverse=True)
            self._pattern = re.compile("|".join(re.escape(f) for f in ordered))
        return self._pattern.sub(REDACTED, text)


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029]")


def _escape_control(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def terminal_safe(text: str) -> str:
    """``text`` on one line with control characters shown as ``\\xNN`` escapes.

    Each line is stripped and the lines are joined with single spaces (as the CLI always
    folded errors); tabs become spaces; an escape sequence such as ``ESC [ 3 1 m`` prints as
    ``\\x1b[31m``. Spaces inside a line are kept (some kubelet texts have two in a row).
    """
    if not text:
        return text
    folded = " ".join(part.strip() for part in text.splitlines() if part.strip())
    return _CONTROL.sub(_escape_control, folded.replace("\t", " "))
