"""The ``credprov`` command: parse (:mod:`credprov.cli.parser`) and run the subcommand
through the one ``main()`` skeleton both front ends share
(:func:`credprov.cmdoptions.run_main`: logging, the Go behaviour, the error contract).

Every subcommand module exposes ``add_parser(subparsers)`` and ``run(args) -> int``. Errors
the user can act on are :class:`CLIError` (or a library error, never re-wrapped, so its
``hint`` is printed too) and print one line on stderr with exit status 1; usage errors
(argparse's, and :class:`credprov.errors.UsageError` from anywhere) exit 2; nothing prints
a traceback (:func:`credprov.cmdoptions.run_command`; the statuses are
``credprov.errors.EXIT_*``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from credprov.cmdoptions import one_line, run_main
from credprov.errors import CredprovError

__all__ = ["CLIError", "entry", "feature_gates", "main", "warn"]


class CLIError(CredprovError):
    """A user-facing error: printed as one line, exit status 1."""


def feature_gates(args: argparse.Namespace) -> dict[str, bool]:
    """The kubelet's ``--feature-gates`` (:data:`credprov.cmdoptions.FEATURE_GATES`), parsed
    as the kubelet parses them.

    Raises:
        credprov.credentialprovider.plugin.config.ConfigError: an unknown gate or a value that is not a bool.
    """
    from credprov.credentialprovider.plugin.config import parse_feature_gates

    return parse_feature_gates(args.feature_gates)


def warn(message: str) -> None:
    """One ``credprov: warning: ...`` line on stderr (shown at every verbosity)."""
    print(f"credprov: warning: {one_line(message)}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``credprov`` with ``argv`` (default ``sys.argv[1:]``); the exit status."""
    from credprov.cli.parser import build_parser

    return run_main("credprov", build_parser, argv, lambda args: int(args.run(args)))


def entry() -> None:
    """The ``credprov`` console script."""
    sys.exit(main())


if __name__ == "__main__":
    entry()
