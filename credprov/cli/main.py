"""The ``credprov`` command: argument parsing, logging and the one-line error contract.

Every subcommand module exposes ``add_parser(subparsers)`` and ``run(args) -> int``. Errors
the user can act on are :class:`CLIError` (or a library error) and print one line on
stderr with exit status 1; usage errors (argparse's, and
:class:`credprov.errors.UsageError` from anywhere) exit 2; nothing prints a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from credprov import __version__
from credprov._go.goenv import GO_VERSION_ENV
from credprov.errors import CredprovError, UsageError

TYPE_CHECKING = False  # typing costs start-up; the annotations need it only when checked
if TYPE_CHECKING:
    from typing import Any


class CLIError(CredprovError):
    """A user-facing error: printed as one line, exit status 1."""


def _use_go_version(args: argparse.Namespace) -> str | None:
    """Follow ``--go-version`` (or ``$CREDPROV_GO_VERSION``); the error text, if any."""
    from credprov._go.goenv import follow_go_version

    return follow_go_version(getattr(args, "go_version", None))


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


class _ArgumentParser(argparse.ArgumentParser):
    """An ArgumentParser whose default formatter is :class:`_HelpFormatter`; subcommand
    parsers are of this class too (``add_subparsers`` makes them with ``type(self)``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)


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


def add_common(
    parser: argparse.ArgumentParser,
    *,
    output: bool = False,
    feature_gates: bool = False,
    go_version: bool = False,
) -> None:
    """The options subcommands share, defined once: ``-v N`` always (accepted after the
    subcommand's name too: ``credprov explain X -v 2``), ``-o text|json`` with ``output``,
    the kubelet's ``--feature-gates`` with ``feature_gates`` (read them back with
    :func:`feature_gates`) and ``--go-version`` with ``go_version`` (for commands that parse
    ``matchImages`` or image names; :func:`main` applies it)."""
    if go_version:
        parser.add_argument(
            "--go-version",
            default=None,
            metavar="VERSION",
            help="the Go release the kubelet was built with, e.g. 1.25.5 (`go version -m "
            "<kubelet binary>` prints it): what url.Parse accepts in matchImages, and the "
            f"text of its errors, differ between releases (default: ${GO_VERSION_ENV}, "
            "else 1.25.5: current Kubernetes 1.34 and 1.35 releases)",
        )
    if feature_gates:
        parser.add_argument(
            "--feature-gates",
            default="",
            metavar="Name=bool,...",
            help="kubelet feature gates (KubeletServiceAccountTokenForCredentialProviders, "
            "default true)",
        )
    if output:
        parser.add_argument(
            "-o",
            "--output",
            choices=("text", "json"),
            default="text",
            help="text for people (default) or json for machines",
        )
    _add_verbosity(parser, default=argparse.SUPPRESS)


def feature_gates(args: argparse.Namespace) -> dict[str, bool]:
    """The ``--feature-gates`` of :func:`add_common`, parsed as the kubelet parses them.

    Raises:
        credprov.credentialprovider.plugin.config.ConfigError: an unknown gate or a value that is not a bool.
    """
    from credprov.credentialprovider.plugin.config import parse_feature_gates

    return parse_feature_gates(args.feature_gates)


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
    _add_verbosity(parser, default=0)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for module in modules:
        module.add_parser(sub)
    return parser


class _SetUpLoggingWhenImported:
    """A meta-path finder for ``logging`` alone: the module is loaded as usual, then the
    CLI's set-up is applied before anything can log through it.

    With ``-v 0`` a command that never imports a module that logs (``config validate``,
    ``explain``) thus never imports ``logging`` (about 7 ms of start-up).
    """

    def __init__(self, spec: Any, verbosity: int) -> None:
        exec_module = spec.loader.exec_module

        def exec_then_set_up(module: Any) -> None:
            exec_module(module)
            _setup_logging(verbosity)

        spec.loader.exec_module = exec_then_set_up
        self._spec = spec

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != "logging":
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        return self._spec


def _setup_logging_lazily(verbosity: int) -> None:
    if "logging" not in sys.modules:
        from _frozen_importlib_external import PathFinder  # already loaded: no cost

        spec = PathFinder.find_spec("logging")
        if spec is not None and hasattr(spec.loader, "exec_module"):
            sys.meta_path[:] = [
                f for f in sys.meta_path if not isinstance(f, _SetUpLoggingWhenImported)
            ]
            sys.meta_path.insert(0, _SetUpLoggingWhenImported(spec, verbosity))
            return
    _setup_logging(verbosity)


def _setup_logging(verbosity: int) -> None:
    from credprov.base.logs import setup_logging

    setup_logging(verbosity)


def one_line(message: str) -> str:
    """Fold a multi-line message (e.g. YAML errors, plugin stderr) into one line, with
    control characters escaped so nothing from a plugin or a file reaches the terminal raw."""
    from credprov.base.redact import terminal_safe  # imported only when printing one

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
    parser = build_parser(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    _setup_logging_lazily(args.verbosity)
    bad_go_version = _use_go_version(args)
    if bad_go_version is not None:  # a usage error
        print(f"credprov: error: {one_line(bad_go_version)}", file=sys.stderr)
        return 2
    try:
        code: int = args.run(args)
        return code
    except CredprovError as exc:
        print(f"credprov: error: {one_line(str(exc))}", file=sys.stderr)
        if exc.hint:
            print(f"credprov: hint: {one_line(exc.hint)}", file=sys.stderr)
        return 2 if isinstance(exc, UsageError) else 1
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
        import logging

        logging.getLogger("credprov").debug("internal error", exc_info=True)
        return 70


def entry() -> None:
    sys.exit(main())


if __name__ == "__main__":
    entry()
