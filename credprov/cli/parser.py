"""The ``credprov`` parser: the subcommands, imported only when needed, and argparse's help
sized without ``shutil``.

Every subcommand module exposes ``add_parser(subparsers)``; its options come from
:mod:`credprov.cmdoptions` where more than one command takes them.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from credprov import __version__
from credprov import cmdoptions as opts

TYPE_CHECKING = False  # typing costs start-up; the annotations need it only when checked
if TYPE_CHECKING:
    from typing import Any


def _terminal_columns() -> int:
    """The width ``shutil.get_terminal_size`` reports: ``$COLUMNS``, else the terminal's, else
    80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, sized without ``shutil``: argparse imports it (2-3 ms, with
    ``bz2`` and ``lzma``) in every parser's first ``add_argument`` only to read the terminal
    width, so every command paid for help it did not print."""

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
    ) -> None:
        if width is None:
            width = _terminal_columns() - 2
        super().__init__(prog, indent_increment, max_help_position, width)


class _ArgumentParser(opts.OneLineErrorParser):
    """The shared one-line-error parser whose default formatter is :class:`_HelpFormatter`;
    subcommand parsers are of this class too (``add_subparsers`` makes them with
    ``type(self)``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)


# Subcommand -> the module that defines it. Only the module of the command being run is
# imported (each costs start-up time); --help, a typo and the like load them all.
_COMMAND_MODULES = {
    "bundle": "bundle_cmd",
    "config": "config_cmd",
    "get-credentials": "credentials_cmd",
    "doctor": "doctor_cmd",
    "ensure-image": "ensure_cmd",
    "explain": "explain_cmd",
    "image-gc": "imagegc_cmd",
    "kep4412": "kep4412_cmd",
    "nodeauth": "nodeauth_cmd",
    "plugin": "plugin_cmd",
    "install": "plugin_cmd",
    "pull-records": "pullrecords_cmd",
    "simulate": "simulate_cmd",
}
_MODULE_ORDER = (
    "bundle_cmd",
    "config_cmd",
    "credentials_cmd",
    "doctor_cmd",
    "ensure_cmd",
    "explain_cmd",
    "imagegc_cmd",
    "kep4412_cmd",
    "nodeauth_cmd",
    "plugin_cmd",
    "pullrecords_cmd",
    "simulate_cmd",
)


def _command_of(argv: Sequence[str] | None) -> str | None:
    """The subcommand ``argv`` names, if it can be told without parsing; else None."""
    args = sys.argv[1:] if argv is None else list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-v", "--v"):
            i += 2  # the verbosity value
            continue
        if arg == "--":
            return args[i + 1] if i + 1 < len(args) else None
        if arg.startswith("-"):
            i += 1
            continue
        return arg
    return None


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser; with ``argv``, only the subcommand it names (all if it names none)."""
    import importlib

    wanted = _COMMAND_MODULES.get(_command_of(argv) or "") if argv is not None else None
    modules = [
        importlib.import_module(f"credprov.cli.{name}")
        for name in _MODULE_ORDER
        if wanted is None or name == wanted
    ]

    parser = _ArgumentParser(
        prog="credprov",
        description=(
            "Kubelet image credential providers, offline: validate a "
            "CredentialProviderConfig, see which providers match an image and why, and "
            "get registry credentials exactly as the kubelet would."
        ),
    )
    parser.add_argument("--version", action="version", version=f"credprov {__version__}")
    opts.VERBOSITY.add(parser, default=0)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for module in modules:
        module.add_parser(sub)
    if argv is not None and _command_of(argv) == "doctor" and "--npd" in argv:
        from credprov.doctor.cli import npd_usage_line

        for p in (parser, sub.choices["doctor"]):
            p.stdout_line = npd_usage_line
    return parser
