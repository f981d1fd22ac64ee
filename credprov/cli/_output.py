"""Output helpers shared by the subcommands: JSON, redaction, atomic files."""

from __future__ import annotations

import contextlib
import json
import os
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


def write_atomic(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temporary file and rename (never half a file).

    Raises:
        OSError: the directory is not writable and so on.
    """
    import tempfile  # only when writing a file: it costs every command's start-up

    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".credprov-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
