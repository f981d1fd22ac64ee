"""The ``credprov`` command: parse (:mod:`credprov.cli.parser`), set up logging
(:mod:`credprov.cli._logging`), run the subcommand under the one error contract.

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

from credprov.cmdoptions import follow_go_options, one_line, run_command, safe_streams
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
    from credprov.cli._logging import setup_logging_lazily
    from credprov.cli.parser import build_parser

    safe_streams()
    parser = build_parser(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    setup_logging_lazily(args.verbosity)
    bad_go = follow_go_options(args, "credprov")
    if bad_go is not None:
        return bad_go
    return run_command("credprov", lambda: int(args.run(args)))


def entry() -> None:
    """The ``credprov`` console script."""
    sys.exit(main())


if __name__ == "__main__":
    entry()
