"""Output helpers shared by the subcommands: the redaction marker. (``-o json`` is written by
:func:`credprov.cmdoptions.print_json`, shared with the standalone doctor.)"""

from __future__ import annotations

REDACTED = "<redacted>"


def secret(value: str, show: bool) -> str:
    """``value`` if ``show``, else the redaction marker (empty stays empty)."""
    if show or value == "":
        return value
    return REDACTED


def write_metrics(path: str, exposition: bytes) -> None:
    """Write ``--metrics-out`` (the Prometheus text ``exposition``) atomically.

    Raises:
        credprov.cli.main.CLIError: the file cannot be written (one line).
    """
    from credprov.base.fileio import write_atomic
    from credprov.cli.main import CLIError

    try:
        write_atomic(path, exposition)
    except OSError as exc:
        raise CLIError(f"cannot write {path}: {exc.strerror}") from None
