"""The command-line vocabulary, defined once: shared options, their value types, the error
contract and the exit statuses.

Both front ends use it: the ``credprov`` CLI (:mod:`credprov.cli`) and the standalone doctor
(:mod:`credprov.doctor.cli`, the bundle's ``doctor``, which must not import the CLI). As
pip's ``cmdoptions`` does, each option that more than one command takes is one
:class:`Option` object here, with its spelling, ``dest``, type, metavar and help; a command
adds it with ``OPTION.add(parser)`` (only ``required`` and ``default`` may differ per
command), so an option string means one thing everywhere. ``tests/unit/cli/test_options.py``
walks every parser and holds the commands to that.

* Every duration option parses with :func:`duration` (Go's grammar,
  :mod:`credprov._go.durations`): a bad value is an argparse usage error, exit 2.
* A renamed option keeps its old spelling for one release as a hidden alias (not in
  ``--help``) that prints one ``credprov: warning: --root is deprecated; use --root-dir``
  line on stderr and then works as the new one.
* :func:`run_command` is the one error handler: a :class:`credprov.errors.CredprovError` is
  printed as ``PROG: error: <message>`` plus its ``hint`` line (library errors are never
  re-wrapped, so the hint survives), exit 1 (2 for a usage error); anything else is an
  "internal error", exit 70, never a traceback.

Start-up matters (every command parses its options before doing anything): only
``argparse`` and ``sys`` are imported here; everything else is imported when used.
"""

from __future__ import annotations

import argparse
import sys

from credprov._go.goenv import GO_VERSION_ENV
from credprov.errors import (
    EXIT_BROKEN_PIPE,
    EXIT_FAILURE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    CredprovError,
    UsageError,
)

TYPE_CHECKING = False  # typing costs start-up; the annotations need it only when checked
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any, NoReturn

__all__ = [
    "ALL_OPTIONS",
    "OneLineErrorParser",
    "Option",
    "add_common",
    "duration",
    "follow_go_options",
    "one_line",
    "period",
    "print_json",
    "print_line",
    "report_error",
    "run_command",
    "run_main",
    "safe_streams",
    "verbosity",
]

_UNSET: Any = object()


# -- value types -------------------------------------------------------------------------------


def duration(value: str) -> int:
    """argparse type of every duration option: a positive Go duration (``90s``, ``1m30s``),
    in nanoseconds. A bad value is the parser's usage error (exit 2)."""
    from credprov._go.durations import DurationError, parse_duration

    try:
        ns = parse_duration(value)
    except DurationError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if ns <= 0:
        raise argparse.ArgumentTypeError("must be positive")
    return ns


#: The longest period a loop (``doctor --every``) takes: it sleeps and arms a timer for a
#: period, and neither takes Go's largest duration (292 years); a year is plenty.
MAX_PERIOD_NS = 366 * 24 * 3600 * 10**9


def period(value: str) -> int:
    """argparse type of a loop's period: a positive Go duration of at most
    :data:`MAX_PERIOD_NS` (8784h), in nanoseconds."""
    ns = duration(value)
    if ns > MAX_PERIOD_NS:
        raise argparse.ArgumentTypeError(
            f"{value}: longer than {MAX_PERIOD_NS // (3600 * 10**9)}h, the longest period the "
            "loop can sleep"
        )
    return ns


def verbosity(value: str) -> int:
    """argparse type of ``-v``: an integer >= 0."""
    try:
        level = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid verbosity {value!r}: want an integer") from None
    if level < 0:
        raise argparse.ArgumentTypeError("verbosity must be >= 0")
    return level


# -- the parser --------------------------------------------------------------------------------


class OneLineErrorParser(argparse.ArgumentParser):
    """argparse, with a usage error as one line (``PROG: error: ... (see --help)``) instead
    of the usage text and the error, exit status 2; subcommand parsers are of this class
    too (``add_subparsers`` makes them with ``type(self)``)."""

    #: When set, a usage error also prints what it returns for the message on stdout (the
    #: doctor's ``--npd``: node-problem-detector reads one line there, never stderr).
    stdout_line: Callable[[str], str] | None = None

    def error(self, message: str) -> NoReturn:
        """Print the one line and exit 2."""
        if self.stdout_line is not None:
            print(self.stdout_line(one_line(message)), flush=True)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {one_line(message)} (see --help)\n")


# -- options -----------------------------------------------------------------------------------


class _WarnsWhenDeprecated(argparse.Action):
    """Mixed into an argparse action: warn when it is reached through a spelling it no
    longer shows (a deprecated alias), then act as usual."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        if option_string is not None and option_string not in self.option_strings:
            print(
                f"credprov: warning: {option_string} is deprecated; use {self.option_strings[-1]}",
                file=sys.stderr,
            )
        super().__call__(parser, namespace, values, option_string)


class _DeprecatedAliasAction(_WarnsWhenDeprecated, argparse._StoreAction):
    """A store action with deprecated aliases."""


class _DeprecatedAliasAppendAction(_WarnsWhenDeprecated, argparse._AppendAction):
    """An append action (a repeatable option) with deprecated aliases."""


class Option:
    """One shared option: its spellings and ``add_argument`` keywords, defined once.

    ``deprecated`` spellings are accepted (with a warning line) but not shown in ``--help``,
    in usage lines or in error messages, which name the current spelling.

    ``meaning`` names what the option stands for (default: its ``dest``); no two spellings
    may stand for one meaning (``tests/unit/cli/test_options.py``). Its ``help`` says what
    the option is on any command; a command adds what is particular to it as a ``note``.
    """

    def __init__(
        self, *flags: str, deprecated: tuple[str, ...] = (), meaning: str = "", **kwargs: Any
    ) -> None:
        self.flags = flags
        self.deprecated = deprecated
        self.kwargs = kwargs
        self.meaning = meaning or kwargs.get("dest") or flags[-1].lstrip("-").replace("-", "_")

    def add(
        self,
        parser: Any,
        *,
        required: bool | None = None,
        default: Any = _UNSET,
        note: str = "",
        aliases: tuple[str, ...] = (),
    ) -> argparse.Action:
        """Add the option to ``parser`` (an ArgumentParser or an argument group); only
        whether it is ``required``, its ``default``, a ``note`` on what it does on this
        command (appended to the help after ``; ``) and the old spellings this command
        accepted (``aliases``, hidden and warned as ``deprecated`` ones) may differ from one
        command to another."""
        kwargs = dict(self.kwargs)
        if required is not None:
            kwargs["required"] = required
        if default is not _UNSET:
            kwargs["default"] = default
        if note:
            kwargs["help"] = f"{kwargs['help']}; {note}"
        hidden = (*self.deprecated, *aliases)
        if hidden:
            kwargs["action"] = (
                _DeprecatedAliasAppendAction
                if kwargs.get("action") == "append"
                else _DeprecatedAliasAction
            )
        action: argparse.Action = parser.add_argument(*self.flags, *hidden, **kwargs)
        # The parser still maps the old spellings to the action; help, usage and errors
        # read option_strings, which keeps only the current ones.
        action.option_strings = list(self.flags)
        action.credprov_option = self  # type: ignore[attr-defined]  # tests find them by it
        action.credprov_note = note  # type: ignore[attr-defined]
        return action


OUTPUT = Option(
    "-o",
    "--output",
    choices=("text", "json"),
    default="text",
    help="text for people (default) or json for machines",
)
VERBOSITY = Option(
    "-v",
    "--v",
    dest="verbosity",
    type=verbosity,
    default=argparse.SUPPRESS,
    metavar="N",
    help="log verbosity on stderr (0: none, 1: warnings and errors, 2: info, 4: debug); "
    "secrets are never logged",
)
GO_VERSION = Option(
    "--go-version",
    default=None,
    metavar="VERSION",
    help="the Go release the kubelet was built with, e.g. 1.25.5 (`go version -m "
    "<kubelet binary>` prints it): what url.Parse accepts in matchImages, and the "
    f"text of its errors, differ between releases (default: ${GO_VERSION_ENV}, "
    "else 1.25.5: current Kubernetes 1.34 and 1.35 releases)",
)
GO_DEBUG = Option(
    "--go-debug",
    default=None,
    metavar="NAME=VALUE,...",
    help="GODEBUG settings of the kubelet's process, over its binary's defaults, as its "
    "GODEBUG environment variable would set them, e.g. urlstrictcolons=0 (Go 1.26 and "
    "later: host::5000-style entries are accepted)",
)
KUBELET_VERSION = Option(
    "--kubelet-version",
    default=None,
    metavar="1.N[.P]",
    help="the kubelet's Kubernetes version, e.g. 1.34: follow the Go release and the "
    "GODEBUG defaults that release is built with (credprov's table; the nearest entry, "
    "said so, past it); instead of --go-version",
)
KUBELET_BINARY = Option(
    "--kubelet-binary",
    default=None,
    metavar="PATH",
    help="the kubelet's binary: follow the Go release and the GODEBUG defaults it was "
    "built with, read from its Go build information (it is never run); instead of "
    "--go-version",
)
#: The options that say which Go behaviour a command follows (:mod:`credprov._go.goenv`).
GO_BEHAVIOUR = (GO_VERSION, GO_DEBUG, KUBELET_VERSION, KUBELET_BINARY)
FEATURE_GATES = Option(
    "--feature-gates",
    default="",
    metavar="Name=bool,...",
    help="feature gates of the component the command stands for (its description says "
    "which), parsed as that component parses them; the kubelet's: "
    "KubeletServiceAccountTokenForCredentialProviders (default true)",
)
CONFIG = Option(
    "--config",
    metavar="PATH",
    help="the CredentialProviderConfig: a file, or a directory of *.json/*.yaml/*.yml files",
)
BIN_DIR = Option(
    "--bin-dir",
    metavar="DIR",
    help="the plugins' directory, the kubelet's --image-credential-provider-bin-dir",
)
OBJECTS = Option(
    "--objects",
    metavar="FILE",
    help="the cluster's objects: kubectl get -o json|yaml output (a List, objects, or YAML "
    "documents); - for stdin",
)
NODE = Option(
    "--node",
    metavar="NAME",
    help="the node's name (user system:node:NAME)",
)
PULL_SECRET = Option(
    "--pull-secret",
    action="append",
    default=[],
    metavar="FILE",
    meaning="the pull secrets",
    help="pull Secrets: a file of Secret objects (or a List of them), YAML or JSON; "
    "repeatable; not with --objects, where the pod's imagePullSecrets are read from the "
    "cluster",
)
NODE_DOCKER_CONFIG = Option(
    "--node-docker-config",
    metavar="FILE",
    help="the node's docker config.json (or legacy .dockercfg)",
)
POD = Option(
    "--pod",
    metavar="POD",
    help="NAMESPACE/NAME of a pod in --objects",
)
IMAGE = Option(
    "--image",
    dest="images",
    action="append",
    default=[],
    metavar="IMAGE",
    help="an image to ask credentials for; repeatable where a command takes several",
)
CRI = Option(
    "--cri",
    metavar="unix:///PATH",
    help="the container runtime's CRI endpoint, e.g. unix:///run/containerd/containerd.sock",
)
ROOT_DIR = Option(
    "--root-dir",
    deprecated=("--root",),
    metavar="DIR",
    help="the kubelet's root directory (/var/lib/kubelet on a node): its pull records are "
    "in DIR/image_manager",
)
NODE_ROOT = Option(
    "--node-root",
    deprecated=("--root",),
    default="/",
    metavar="DIR",
    help="the node's filesystem root: / (default), a mounted node disk or image",
)
NODE_IMAGES = Option(
    "--node-images",
    deprecated=("--images",),
    metavar="FILE",
    help="the node's images: one reference per line, or 'crictl images -o json'",
)
CONTAINERD_CONFIG_PATH = Option(
    "--containerd-config-path",
    metavar="DIR",
    help="containerd's registry config_path (DIR/<host>/hosts.toml, e.g. /etc/containerd/certs.d): "
    "say which hosts the runtime contacts for an image",
)
REGISTRIES_CONF = Option(
    "--registries-conf",
    metavar="FILE",
    help="CRI-O's registries.conf (drop-ins in FILE.d/), e.g. /etc/containers/registries.conf: "
    "say which hosts the runtime contacts for an image",
)
PLUGIN_TIMEOUT = Option(
    "--plugin-timeout",
    meaning="the deadline of a plugin run",
    type=duration,
    default="1m",
    metavar="DURATION",
    help="deadline of each plugin run, a Go duration (the kubelet's: 1m)",
)
PLUGINS_DEADLINE = Option(
    "--plugins-deadline",
    type=duration,
    default="2m",
    metavar="DURATION",
    help="overall deadline of all plugin runs: each run gets at most what is left, and "
    "plugins not run before it is spent are skipped",
)
PULL_TIMEOUT = Option(
    "--pull-timeout",
    type=duration,
    default="5m",
    metavar="DURATION",
    help="deadline of one CRI PullImage, a Go duration (default 5m)",
)
SHOW_SECRETS = Option(
    "--show-secrets",
    action="store_true",
    help="print passwords (and a plugin's raw stdout) instead of <redacted>",
)
METRICS_OUT = Option(
    "--metrics-out",
    metavar="FILE",
    help="write the metrics here (Prometheus text exposition)",
)
OUT_DIR = Option(
    "--out",
    metavar="DIR",
    help="the directory to write into, created if missing",
)
DRY_RUN = Option("--dry-run", action="store_true", help="only say what would be done")
TEXTFILE = Option(
    "--textfile",
    metavar="PATH",
    help="also write the report for node_exporter's textfile collector, atomically "
    "(PATH ends in .prom; a symlink or FIFO there is refused); a failed run writes "
    "credprov_doctor_up 0",
)
EVERY = Option(
    "--every",
    type=period,
    default=None,
    metavar="DURATION",
    help="run again every DURATION, a Go duration (e.g. 10m, at most 8784h), rewriting --textfile, until "
    "SIGTERM (exit 0); a run still going when the next is due is stopped and counts as failed",
)
NPD = Option(
    "--npd",
    action="store_true",
    help="run as a node-problem-detector custom plugin: one line of at most 80 characters "
    "on stdout, exit 0 when no check fails, 1 when one does, 2 when the node cannot be "
    "judged",
)

#: Every shared option, by name (the tests' table).
ALL_OPTIONS: dict[str, Option] = {
    name: value for name, value in dict(globals()).items() if isinstance(value, Option)
}


def add_common(parser: argparse.ArgumentParser, *options: Option, leaf: bool = True) -> None:
    """Add ``options``, then, on a ``leaf`` command, ``-o/--output``, then ``-v`` (accepted
    after a subcommand's name too: ``credprov explain X -v 2``)."""
    for option in options:
        option.add(parser)
    if leaf:
        OUTPUT.add(parser)
    VERBOSITY.add(parser)


# -- output and errors -------------------------------------------------------------------------


def one_line(message: str) -> str:
    """Fold a multi-line message (YAML errors, plugin stderr) into one line, with control
    characters escaped so nothing from a plugin or a file reaches the terminal raw."""
    from credprov.base.redact import terminal_safe  # imported only when printing one

    return terminal_safe(str(message))


def print_line(line: str = "") -> None:
    """One line of a command's text output on stdout, with every character that could
    forge or restyle a line (newline, escape sequences, C1 and bidirectional controls)
    shown as an escape: the one rule for text from a file, a plugin or a node
    (:func:`credprov.base.report.text`, which the doctor's report uses too)."""
    from credprov.base.report import text  # imported only when printing

    print(text(line))


def print_json(value: Any) -> None:
    """``value`` as indented JSON on stdout (``-o json``): exact values, non-ASCII text as is,
    but no raw terminal control (:func:`credprov.base.redact.json_terminal_safe`)."""
    import json

    from credprov.base.redact import json_terminal_safe

    document = json.dumps(value, indent=2, ensure_ascii=False)
    sys.stdout.write(json_terminal_safe(document) + "\n")


def safe_streams() -> None:
    """Never fail on printing: text that cannot be encoded (an argument with invalid UTF-8,
    kept by Python as surrogate escapes) is written as backslash escapes instead."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")


def usage_error(prog: str, message: str) -> int:
    """Print ``PROG: error: message`` (one line) and return the usage exit status."""
    print(f"{prog}: error: {one_line(message)}", file=sys.stderr)
    return EXIT_USAGE


def follow_go_options(args: argparse.Namespace, prog: str) -> int | None:
    """Follow the Go behaviour :data:`GO_BEHAVIOUR`'s options name
    (:func:`credprov._go.goenv.follow_go`): None, after printing what a kubelet binary or
    version gave on stderr; or the usage exit status, after printing the one-line error."""
    from credprov._go.goenv import follow_go

    go = follow_go(
        go_version=getattr(args, "go_version", None),
        go_debug=getattr(args, "go_debug", None),
        kubelet_version=getattr(args, "kubelet_version", None),
        kubelet_binary=getattr(args, "kubelet_binary", None),
    )
    if go.error is not None:
        return usage_error(prog, go.error)
    if go.notice is not None:
        print(f"{prog}: {one_line(go.notice)}", file=sys.stderr)
    return None


def report_error(prog: str, exc: CredprovError) -> int:
    """Print ``exc`` as ``PROG: error: ...`` and its ``hint`` as ``PROG: hint: ...``; its
    exit status (2 for a :class:`~credprov.errors.UsageError`, else 1)."""
    print(f"{prog}: error: {one_line(str(exc))}", file=sys.stderr)
    if exc.hint:
        print(f"{prog}: hint: {one_line(exc.hint)}", file=sys.stderr)
    return EXIT_USAGE if isinstance(exc, UsageError) else EXIT_FAILURE


def run_main(
    prog: str,
    build_parser: Callable[[list[str]], argparse.ArgumentParser],
    argv: Sequence[str] | None,
    run: Callable[[argparse.Namespace], int],
) -> int:
    """The one ``main()`` of both front ends (the ``credprov`` CLI and the bundle's
    standalone commands): streams made safe, ``argv`` (default ``sys.argv[1:]``) parsed by
    the parser ``build_parser`` makes for those words, logging set up from ``-v`` (lazily:
    :func:`credprov.base.logs.setup_logging_lazily`), the Go behaviour options followed,
    then ``run`` under :func:`run_command`; its exit status."""
    from credprov.base.logs import setup_logging_lazily

    safe_streams()
    words = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(words).parse_args(words)
    setup_logging_lazily(args.verbosity)
    bad_go = follow_go_options(args, prog)
    if bad_go is not None:
        return bad_go
    return run_command(prog, lambda: int(run(args)))


def run_command(prog: str, command: Callable[[], int]) -> int:
    """Run ``command`` under the one error contract; its exit status, or the error's.

    A :class:`~credprov.errors.CredprovError` prints ``PROG: error: ...`` and, if it has
    one, ``PROG: hint: ...``: exit 2 for a :class:`~credprov.errors.UsageError`, else 1.
    Ctrl-C is 130, a closed stdout 141, and any other exception an internal error (70, the
    traceback only at ``-v 4``).
    """
    try:
        return command()
    except CredprovError as exc:
        return report_error(prog, exc)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_BROKEN_PIPE
    except Exception as exc:  # never a traceback for the user; say what failed
        print(
            f"{prog}: internal error ({type(exc).__name__}); rerun with -v 4 and report it",
            file=sys.stderr,
        )
        import logging

        logging.getLogger("credprov").debug("internal error", exc_info=True)
        return EXIT_INTERNAL
