"""The doctor's command line, standalone: options, running the checks, printing the report.

Two front ends share it. ``credprov doctor`` (:mod:`credprov.cli.doctor_cmd`) adds
:func:`add_arguments` to its subparser and calls :func:`run`. The plugin bundle's multicall
runtime starts :func:`main` as ``credprov-plugins/doctor`` (``credprov.bundle._multicall``),
on nodes without Python and in the installer image; the bundle leaves ``credprov.cli`` out
to stay small, so nothing here imports it: the options (``--node-root``, ``--node-images``,
``-o``, ``-v``, ``--go-version``...), the error contract and the exit statuses come from
:mod:`credprov.cmdoptions`, which both front ends use, and :func:`main` applies ``-v`` and
``--go-version`` as ``credprov.cli.main`` does.

Exit status 0 when nothing fails, 1 when a check fails, 2 on usage errors; every error is
one line on stderr.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

from credprov import cmdoptions as opts
from credprov.errors import EXIT_FAILURE, EXIT_OK, UsageError

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
    "upgrade preflight. Read-only. With --node-root, plugins run only inside the root "
    "(chroot in a private mount namespace, as uid 65534, with the provider's env "
    "only); without, as the kubelet runs them. Exit 0 when nothing fails, 1 when a "
    "check fails, 2 on usage errors."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """All the doctor's options, from :mod:`credprov.cmdoptions` where shared (``-v``
    defaults to nothing here: ``credprov -v N doctor`` sets it before the subcommand; the
    standalone :func:`build_parser` defaults it to 0)."""
    opts.NODE_ROOT.add(p)
    opts.CONFIG.add(p)
    opts.BIN_DIR.add(p)
    p.add_argument("--kubelet-config", metavar="FILE", help="the KubeletConfiguration file")
    opts.NODE.add(p)
    opts.IMAGE.add(p)
    p.add_argument("--no-exec", action="store_true", help="do not run the plugins")
    opts.OBJECTS.add(p)
    images = p.add_mutually_exclusive_group()
    opts.CRI.add(images)
    opts.NODE_IMAGES.add(images)
    opts.PLUGIN_TIMEOUT.add(p)
    opts.PLUGINS_DEADLINE.add(p)
    opts.add_common(p, opts.GO_VERSION)


def _colour(stream: Any) -> bool:
    return bool(getattr(stream, "isatty", lambda: False)()) and not os.environ.get("NO_COLOR")


def run(args: argparse.Namespace, prog: str = PROG) -> int:
    """Run the checks ``args`` (parsed by a parser with :func:`add_arguments`) ask for and
    print the report; the exit status. A usage error is printed here, naming ``prog``
    (``credprov doctor`` in both front ends), with its hint.

    Raises:
        credprov.errors.CredprovError: a failing environment, for
            :func:`credprov.cmdoptions.run_command` to print.
    """
    from credprov.doctor import DoctorOptions, render_text, run_doctor

    options = DoctorOptions(
        root=args.node_root,
        config=args.config,
        bin_dir=args.bin_dir,
        kubelet_config=args.kubelet_config,
        node=args.node,
        images=list(args.images),
        no_exec=args.no_exec,
        objects=args.objects,
        cri=args.cri,
        images_file=args.node_images,
        plugin_timeout_ns=args.plugin_timeout,
        plugin_deadline_ns=args.plugins_deadline,
    )
    try:
        report = run_doctor(options)
    except UsageError as exc:
        return opts.report_error(prog, exc)
    if args.output == "json":
        opts.print_json(report.to_dict())
    else:
        sys.stdout.write(render_text(report, colour=_colour(sys.stdout)))
    return EXIT_FAILURE if report.failed else EXIT_OK


# -- the standalone command ----------------------------------------------------------------------


def build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    """The standalone parser: :func:`add_arguments`, with ``-v`` defaulting to 0."""
    p = opts.OneLineErrorParser(prog=prog, description=DESCRIPTION)
    add_arguments(p)
    p.set_defaults(verbosity=0)
    return p


def main(argv: Sequence[str] | None = None, prog: str = PROG) -> int:
    """``credprov doctor`` without the credprov CLI: parse ``argv`` (default
    ``sys.argv[1:]``), run, return the exit status; never a traceback."""
    opts.safe_streams()
    args = build_parser(prog).parse_args(argv)
    from credprov._go.goenv import follow_go_version
    from credprov.base.logs import setup_logging

    setup_logging(args.verbosity)
    bad_go_version = follow_go_version(args.go_version)
    if bad_go_version is not None:
        return opts.usage_error(prog, bad_go_version)
    return opts.run_command(prog, lambda: run(args, prog))


if __name__ == "__main__":
    sys.exit(main())
