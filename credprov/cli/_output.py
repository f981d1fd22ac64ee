"""Output helpers shared by the subcommands: JSON and the redaction marker."""

from __future__ import annotations

import json
import sys

TYPE_CHECKING = False  # typing costs start-up; the annotations need it only when checked
if TYPE_CHECKING:
    from typing import Any

REDACTED = "<redacted>"


def print_json(value: Any) -> None:
    """``value`` as indented JSON on stdout: exact values, non-ASCII text as is, but no raw
    terminal control (C1 and bidirectional controls, which the encoder leaves raw, are
    written as ``\\uXXXX``: :func:`credprov.base.redact.json_terminal_safe`)."""
    from credprov.base.redact import json_terminal_safe

    document = json.dumps(value, indent=2, ensure_ascii=False)
    sys.stdout.write(json_terminal_safe(document) + "\n")


def secret(value: str, show: bool) -> str:
    """``value`` if ``show``, else the redaction marker (empty stays empty)."""
    if show or value == "":
        return value
    return REDACTED
