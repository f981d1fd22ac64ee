"""The ``credprov`` command: argument parsing, logging and the one-line error contract.

Every subcommand module exposes ``add_parser(subparsers)`` and ``run(args) -> int``. Errors
the user can act on are :class:`CLIError` (or a library error) and print one line on
stderr with exit status 1; usage errors exit 2; nothing prints a traceback.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from credprov import __version__
from credprov.errors import CredprovError
from credprov.redact import terminal_safe


class CLIError(CredprovError):
    """A user-facing error: printed as one line, exit status 1."""


def _verbosity(value: str) -> int:
    try:
        level = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid verbosity {value!r}: want an integer") from None
    if level < 0:
        raise argparse.ArgumentTypeError("verbosity must be >= 0")
    return level


def _add_verbosity(parser: argparse.ArgumentParser, default: object) -> None:
    parser.add_argument(
        "-v",
        "--v",
        dest="verbosity",
        type=_verbosity,
        default=default,
        metavar="N",
        help="log verbosity on stderr (0: none, 1: warnings and errors, 2: info, 4: debug); "
        "secrets are never logged",
    )


def add_common(parser: argparse.ArgumentParser) -> None:
    """Options every subcommand accepts after its name too (``credprov explain X -v 2``)."""
    _add_verbosity(parser, default=argparse.SUPPRESS)


def build_parser() -> argparse.ArgumentParser:
    from credprov.cli import (
        bundle_cmd,
        config_cmd,
        credentials_cmd,
        doctor_cmd,
        ensure_cmd,
        explain_cmd,
        imagegc_cmd,
        nodeauth_cmd,
        plugin_cmd,
        pullrecords_cmd,
        simulate_cmd,
    )

    parser = argparse.ArgumentParser(
        prog="credprov",
        description=(
            "Kubelet image credential providers, offline: validate a "
            "CredentialProviderConfig, see which providers match an image and why, and "
            "get registry credentials exactly as the kubelet would."
        ),
    )
    parser.add_argument("--version", action="version", version=f"credprov {__version__}")
    _add_verbosity(parser, default=0)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    bundle_cmd.add_parser(sub)
    config_cmd.add_parser(sub)
    credentials_cmd.add_parser(sub)
    doctor_cmd.add_parser(sub)
    ensure_cmd.add_parser(sub)
    explain_cmd.add_parser(sub)
    imagegc_cmd.add_parser(sub)
    nodeauth_cmd.add_parser(sub)
    plugin_cmd.add_parser(sub)
    pullrecords_cmd.add_parser(sub)
    simulate_cmd.add_parser(sub)
    return parser


def _setup_logging(verbosity: int) -> None:
    if verbosity <= 0:
        level = logging.CRITICAL + 1
    elif verbosity == 1:
        level = logging.WARNING
    elif verbosity < 4:
        level = logging.INFO
    else:
        level = logging.DEBUG
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("credprov: %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger("credprov")
    root.handlers[:] = [handler]
    root.setLevel(level)
    root.propagate = False


def one_line(message: str) -> str:
    """Fold a multi-line message (e.g. YAML errors, plugin stderr) into one line, with
    control characters escaped so nothing from a plugin or a file reaches the terminal raw."""
    return terminal_safe(str(message))


def warn(message: str) -> None:
    """One ``credprov: warning: ...`` line on stderr (shown at every verbosity)."""
    print(f"credprov: warning: {one_line(message)}", file=sys.stderr)


def _safe_streams() -> None:
    """Never fail on printing: text that cannot be encoded (an argument with invalid UTF-8,
    kept by Python as surrogate escapes) is written as backslash escapes instead."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")


def main(argv: Sequence[str] | None = None) -> int:
    _safe_streams()
    parser = build_parser()
    args = parser.parse_args(argv)
    _setup_logging(args.verbosity)
    try:
        code: int = args.run(args)
        return code
    except CredprovError as exc:
        print(f"credprov: error: {one_line(str(exc))}", file=sys.stderr)
        if exc.hint:
            print(f"credprov: hint: {one_line(exc.hint)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("credprov: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 141
    except Exception as exc:  # never a traceback for the user; say what failed
        print(
            f"credprov: internal error ({type(exc).__name__}); rerun with -v 4 and report it",
            file=sys.stderr,
        )
        logging.getLogger("credprov").debug("internal error", exc_info=True)
        return 70


def entry() -> None:
    sys.exit(main())


if __name__ == "__main__":
    entry()
