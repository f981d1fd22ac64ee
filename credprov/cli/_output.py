"""Output helpers shared by the subcommands: JSON and the redaction marker."""

from __future__ import annotations

import json
import sys

TYPE_CHECKING = False  # typing costs start-up; the annotations need it only when checked
if TYPE_CHECKING:
    from typing import Any

REDACTED = "<redacted>"


def print_json(value: Any) -> None:
    json.dump(value, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")


def secret(value: str, show: bool) -> str:
    """``value`` if ``show``, else the redaction marker (empty stays empty)."""
    if show or value == "":
        return value
    return REDACTED
