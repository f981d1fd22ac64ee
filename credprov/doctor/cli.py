"""The doctor's command line, standalone: options, running the checks, printing the report.

Two front ends share it. ``credprov doctor`` (:mod:`credprov.cli.doctor_cmd`) adds
:func:`add_arguments` to its subparser, takes ``-v``, ``-o`` and ``--go-version`` from the
CLI's shared option definitions, and calls :func:`run`. The plugin bundle's multicall
runtime starts :func:`main` as ``credprov-plugins/doctor`` (``credprov.bundle._multicall``),
on nodes without Python and in the installer image; the bundle leaves ``credprov.cli`` out
to stay small, so nothing here imports it: :func:`build_parser` defines ``--go-version``,
``-o`` and ``-v`` itself, with the same names, values and help, and :func:`main` applies
them as ``credprov.cli.main`` does (the Go release followed by ``matchImages`` parsing, and
the ``credprov`` logger's level).

Exit status 0 when nothing fails, 1 when a check fails, 2 on usage errors; every error is
one line on stderr.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from credprov._go.goenv import GO_VERSION_ENV

__all__ = ["DESCRIPTION", "HELP", "add_arguments", "build_parser", "main", "run"]

#: The name ``credprov doctor`` is known by in its messages.
PROG = "credprov doctor"

HELP = "why does this node get no credentials? check its kubelet setup"
DESCRIPTION = (
    "Find the node's kubelet setup (a running kubelet, k3s or rke2 process; else the "
    "systemd unit, its drop-ins and EnvironmentFile= files; the KubeletConfiguration; "
    "distribution defaults) and check it: the credential provider flags, the config "
    "as the kubelet validates it, the bin dir, every plugin (present, runnable on "
    "this node, answering as the kubelet expects), feature gates, the KEP-2535 pull "
    "policy and records, and with --objects the KEP-4412 token RBAC and a KEP-2535 "
    "upgrade preflight. Read-only. With --root, plugins run only inside the root "
    "(chroot in a private mount namespace, as uid 65534, with the provider's env "
    "only); without, as the kubelet runs them. Exit 0 when nothing fails, 1 when a "
    "check fails, 2 on usage errors."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The doctor's own options (not ``-v``, ``-o`` and ``--go-version``, which the caller
    adds after them: the credprov CLI from its shared definitions, :func:`build_parser`
    itself)."""
    p.add_argument("--root", default="/", metavar="DIR", help="the node's filesystem root")
    p.add_argument("--config", metavar="PATH", help="provider config (wins over the node's)")
    p.add_argument("--bin-dir", metavar="DIR", help="plugin bin dir (wins over the node's)")
    p.add_argument("--kubelet-config", metavar="FILE", help="the KubeletConfiguration file")
    p.add_argument("--node", metavar="NAME", help="node name (default: the node's hostname)")
    p.add_argument(
        "--image",
        action="append",
        default=[],
        dest="images",
        metavar="IMAGE",
        help="check which providers match IMAGE; also the sample image for plugin runs",
    )
    p.add_argument("--no-exec", action="store_true", help="do not run the plugins")
    p.add_argument("--objects", metavar="FILE", help="the cluster's objects (YAML or JSON List)")
    images = p.add_mutually_exclusive_group()
    images.add_argument("--cri", metavar="ENDPOINT", help="the node's CRI socket (unix:///...)")
    images.add_argument(
        "--images",
        dest="images_file",
        metavar="FILE",
        help="the node's images: one reference per line, or 'crictl images -o json'",
    )
    p.add_argument(
        "--plugin-timeout",
        default="1m",
        metavar="DURATION",
        help="deadline of each plugin run (the kubelet's: 1m)",
    )
    p.add_argument(
        "--plugins-deadline",
        default="2m",
        metavar="DURATION",
        help="overall deadline of all plugin runs: each run gets at most what is left, and "
        "plugins not run before it is spent are skipped",
    )


def _colour(stream: Any) -> bool:
    return bool(getattr(stream, "isatty", lambda: False)()) and not os.environ.get("NO_COLOR")


def run(args: argparse.Namespace, prog: str = PROG) -> int:
    """Run the checks ``args`` (parsed by a parser with :func:`add_arguments` and ``-o``)
    ask for and print the report; the exit status. ``prog`` names the command in errors."""
    from credprov._go.durations import DurationError, parse_duration
    from credprov.doctor import DoctorOptions, DoctorUsageError, render_text, run_doctor

    durations: dict[str, int] = {}
    for option, value in (
        ("--plugin-timeout", args.plugin_timeout),
        ("--plugins-deadline", args.plugins_deadline),
    ):
        try:
            durations[option] = parse_duration(value)
        except DurationError as exc:
            return _usage(f"{option}: {exc}", prog)
        if durations[option] <= 0:
            return _usage(f"{option} must be positive", prog)
    options = DoctorOptions(
        root=args.root,
        config=args.config,
        bin_dir=args.bin_dir,
        kubelet_config=args.kubelet_config,
        node=args.node,
        images=list(args.images),
        no_exec=args.no_exec,
        objects=args.objects,
        cri=args.cri,
        images_file=args.images_file,
        plugin_timeout_ns=durations["--plugin-timeout"],
        plugin_deadline_ns=durations["--plugins-deadline"],
    )
    try:
        report = run_doctor(options)
    except DoctorUsageError as exc:
        return _usage(str(exc), prog)
    if args.output == "json":
        _print_json(report.to_dict())
    else:
        sys.stdout.write(render_text(report, colour=_colour(sys.stdout)))
    return 1 if report.failed else 0


def _print_json(value: Any) -> None:
    """As ``credprov``'s ``-o json``: exact values, no raw terminal controls."""
    import json

    from credprov.base.redact import json_terminal_safe

    document = json.dumps(value, indent=2, ensure_ascii=False)
    sys.stdout.write(json_terminal_safe(document) + "\n")


def _one_line(message: str) -> str:
    from credprov.base.redact import terminal_safe

    return terminal_safe(str(message))


def _usage(message: str, prog: str = PROG) -> int:
    print(f"{prog}: error: {_one_line(message)}", file=sys.stderr)
    return 2


# -- the standalone command ----------------------------------------------------------------------


class _OneLineErrors(argparse.ArgumentParser):
    """argparse, with a usage error as one line (``PROG: error: ...``), exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {_one_line(message)} (see --help)\n")


def _verbosity(value: str) -> int:
    try:
        level = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid verbosity {value!r}: want an integer") from None
    if level < 0:
        raise argparse.ArgumentTypeError("verbosity must be >= 0")
    return level


def build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    """The standalone parser: :func:`add_arguments` plus ``--go-version``, ``-o`` and ``-v``
    as ``credprov doctor`` has them."""
    p = _OneLineErrors(prog=prog, description=DESCRIPTION)
    add_arguments(p)
    p.add_argument(
        "--go-version",
        default=None,
        metavar="VERSION",
        help="the Go release the kubelet was built with, e.g. 1.25.5 (`go version -m "
        "<kubelet binary>` prints it): what url.Parse accepts in matchImages, and the "
        f"text of its errors, differ between releases (default: ${GO_VERSION_ENV}, "
        "else 1.25.5: current Kubernetes 1.34 and 1.35 releases)",
    )
    p.add_argument(
        "-o",
        "--output",
        choices=("text", "json"),
        default="text",
        help="text for people (default) or json for machines",
    )
    p.add_argument(
        "-v",
        "--v",
        dest="verbosity",
        type=_verbosity,
        default=0,
        metavar="N",
        help="log verbosity on stderr (0: none, 1: warnings and errors, 2: info, 4: debug); "
        "secrets are never logged",
    )
    return p


def main(argv: Sequence[str] | None = None, prog: str = PROG) -> int:
    """``credprov doctor`` without the credprov CLI: parse ``argv`` (default
    ``sys.argv[1:]``), run, return the exit status; never a traceback."""
    from credprov.errors import CredprovError

    for stream in (sys.stdout, sys.stderr):  # text that cannot be encoded is escaped
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    args = build_parser(prog).parse_args(argv)
    from credprov._go.goenv import follow_go_version
    from credprov.base.logs import setup_logging

    setup_logging(args.verbosity)
    bad_go_version = follow_go_version(args.go_version)
    if bad_go_version is not None:
        return _usage(bad_go_version, prog)
    try:
        return run(args, prog)
    except CredprovError as exc:
        print(f"{prog}: error: {_one_line(str(exc))}", file=sys.stderr)
        if exc.hint:
            print(f"{prog}: hint: {_one_line(exc.hint)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 141
    except Exception as exc:  # never a traceback for the user; say what failed
        print(
            f"{prog}: internal error ({type(exc).__name__}); rerun with -v 4 and report it",
            file=sys.stderr,
        )
        import logging

        logging.getLogger("credprov").debug("internal error", exc_info=True)
        return 70


if __name__ == "__main__":
    sys.exit(main())
