"""Keeping secrets and terminal controls out of what credprov prints: one redactor, one
sanitiser.

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
   without the value. :class:`Redactor` is the one implementation, with one minimum, for
   every caller: the engine and the doctor, the CRI client, the plugin SDK and the plugins
   (which get it as ``credprov.sdk.Redactor``).

:func:`terminal_safe` is the one sanitiser for text that reaches a terminal: it escapes control
characters, escape sequences and bidirectional controls, so a plugin's output or a node's
file can never move the cursor, recolour, reorder or split a line. It either folds a
multi-line message onto one line (errors) or shows every line break as ``\\n`` (values and
report lines, where a newline is data to show, not layout to keep). Labels such as
``<env NAME of provider P>`` (:func:`env_label`) say *which* secret was left out without
saying what it was.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

REDACTED = "<redacted>"

#: The label of a service-account token (KEP-4412) in what credprov prints.
TOKEN_LABEL = "<service-account token>"

#: Values shorter than this are not scrubbed from free text (see the module docstring).
MIN_SCRUB_LENGTH = 4


def env_label(name: str, provider: str) -> str:
    """The label printed in place of the value of ``provider``'s ``env`` variable ``name``."""
    return f"<env {name} of provider {provider}>"


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

    Each value is replaced by its label (:data:`REDACTED` unless :meth:`add` was given one);
    a spelling shared by two values keeps the label it was first added with. Values shorter
    than :data:`MIN_SCRUB_LENGTH` are skipped (and logged at debug level): the
    structure-based redaction of decoded documents covers them where it matters.
    """

    def __init__(self, values: Iterable[str] = (), min_length: int = MIN_SCRUB_LENGTH) -> None:
        self.min_length = min_length
        self._labels: dict[str, str] = {}  # spelling -> label
        self._pattern: re.Pattern[str] | None = None
        for value in values:
            self.add(value)

    def add(self, value: str | None, label: str = REDACTED) -> None:
        """Replace ``value`` (in every spelling) by ``label`` from now on; empty is ignored."""
        if not value:
            return
        if len(value) < self.min_length:
            # Imported here: importing this module must not cost logging's start-up.
            import logging

            logging.getLogger("credprov.redact").debug(
                "a secret of %d characters is too short to scrub from free text; "
                "structured output still redacts it",
                len(value),
            )
            return
        for form in spellings(value):
            if form not in self._labels:
                self._labels[form] = label
                self._pattern = None

    def __bool__(self) -> bool:
        return bool(self._labels)

    def __call__(self, text: str) -> str:
        """``text`` with every known secret replaced by its label."""
        if not self._labels or not text:
            return text
        if self._pattern is None:
            # Longest first, so a secret that contains another is replaced whole.
            ordered = sorted(self._labels, key=len, reverse=True)
            self._pattern = re.compile("|".join(re.escape(f) for f in ordered))
        labels = self._labels
        return self._pattern.sub(lambda match: labels[match.group()], text)


#: What must not reach a terminal raw: C0 and C1 controls (ESC, CSI ``\\x9b``, CR, LF, ...),
#: DEL, the line and paragraph separators, and the bidirectional controls (U+061C, U+200E,
#: U+200F, U+202A-U+202E, U+2066-U+2069) that make a terminal show text in another order
#: than it is stored.
_BEYOND_C0 = "\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
UNSAFE_CHARACTERS = "\x00-\x1f" + _BEYOND_C0
_UNSAFE = re.compile(f"[{UNSAFE_CHARACTERS}]")
_UNSAFE_IN_JSON = re.compile(f"[{_BEYOND_C0}]")  # json.dumps escapes C0 itself
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def terminal_safe(text: str, *, fold_lines: bool = True) -> str:
    """``text`` on one line, every character of :data:`UNSAFE_CHARACTERS` shown as an escape.

    With ``fold_lines`` (for messages: errors, a plugin's stderr) each line is stripped and
    the lines are joined with single spaces, as the CLI always folded errors, and tabs
    become spaces. Without it (for values and report lines, where the text is data) nothing
    is folded: a newline prints as ``\\n``, a carriage return as ``\\r``, a tab as
    ``\\t``, so a value with a newline cannot forge a second line. Either way an escape
    sequence such as ``ESC [ 3 1 m`` prints as ``\\x1b[31m``, U+202E as ``\\u202e``, and
    spaces inside a line are kept (some kubelet texts have two in a row).
    """
    if not text:
        return text
    if fold_lines:
        folded = " ".join(part.strip() for part in text.splitlines() if part.strip())
        text = folded.replace("\t", " ")
    return _UNSAFE.sub(_escape, text)


#: What stands for the part :func:`shorten` leaves out.
ELLIPSIS = "..."


def shorten(text: str, limit: int, marker: str = ELLIPSIS) -> str:
    """``text`` at most ``limit`` characters, its **middle** left out when it is longer.

    A message's cause is at its end ("...: version `GLIBC_2.35' not found", "No such file
    or directory"), its subject at its start: both stay, the middle (a long path, a build
    id) gives way. Redact before shortening: a secret cut in two is not found.
    """
    if len(text) <= limit:
        return text
    if limit <= len(marker):
        return text[:limit]
    room = limit - len(marker)
    head = room // 2
    return text[:head] + marker + text[len(text) - (room - head) :]


def json_terminal_safe(document: str) -> str:
    """A JSON document (``json.dumps(..., ensure_ascii=False)``) with every character of
    :data:`UNSAFE_CHARACTERS` it holds raw written as a ``\\uXXXX`` escape.

    The encoder escapes C0 controls already (a raw newline is layout) but writes DEL, C1
    controls and bidirectional controls raw. Those can only occur inside strings, where
    ``\\uXXXX`` decodes to the same character, so the document's values stay exact.
    """
    return _UNSAFE_IN_JSON.sub(lambda match: f"\\u{ord(match.group()):04x}", document)
