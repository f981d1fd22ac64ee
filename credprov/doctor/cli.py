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

The fleet modes (README, "Run it across a fleet"): ``--textfile PATH`` also writes the report
for node_exporter's textfile collector (:mod:`credprov.doctor.textfile`), ``--every
DURATION`` repeats the run until SIGTERM (:mod:`credprov.doctor.periodic`, the DaemonSet in
``deploy/doctor/``), and ``--npd`` answers as a node-problem-detector custom plugin
(:mod:`credprov.doctor.npd`, the config in ``deploy/npd/``) instead of printing the report.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

from credprov import cmdoptions as opts
from credprov.errors import EXIT_FAILURE, EXIT_OK, CredprovError, UsageError

TYPE_CHECKING = False  # typing costs start-up; the annotations need it only when checked
if TYPE_CHECKING:
    from credprov.doctor import DoctorOptions, Report
    from credprov.doctor.periodic import Run

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
    "(chroot in a private mount namespace, read-only, as root with only the "
    "capabilities to read files, with the provider's env only); without, as the kubelet runs them. Exit 0 when nothing fails, 1 when a "
    "check fails, 2 on usage errors."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """All the doctor's options, from :mod:`credprov.cmdoptions` where shared (``-v``
    defaults to nothing here: ``credprov -v N doctor`` sets it before the subcommand; the
    standalone :func:`build_parser` defaults it to 0)."""
    opts.NODE_ROOT.add(p)
    opts.CONFIG.add(p, note="instead of the node's")
    opts.BIN_DIR.add(p, note="instead of the node's")
    p.add_argument("--kubelet-config", metavar="FILE", help="the KubeletConfiguration file")
    opts.NODE.add(p, note="default: this node's hostname")
    opts.IMAGE.add(
        p, note="to check which providers match it, also the sample image of plugin runs"
    )
    p.add_argument("--no-exec", action="store_true", help="do not run the plugins")
    opts.OBJECTS.add(p)
    images = p.add_mutually_exclusive_group()
    opts.CRI.add(images)
    opts.NODE_IMAGES.add(images)
    opts.PLUGIN_TIMEOUT.add(p)
    opts.PLUGINS_DEADLINE.add(p)
    opts.CONTAINERD_CONFIG_PATH.add(
        p, note="inside --node-root; default there: the config_path of /etc/containerd/config.toml"
    )
    opts.REGISTRIES_CONF.add(p, note="inside --node-root; default there: that file when present")
    opts.TEXTFILE.add(p)
    opts.EVERY.add(p)
    opts.NPD.add(p)
    opts.add_common(p, *opts.GO_BEHAVIOUR)


def _colour(stream: Any) -> bool:
    return bool(getattr(stream, "isatty", lambda: False)()) and not os.environ.get("NO_COLOR")


def _options(args: argparse.Namespace) -> DoctorOptions:
    from credprov.doctor import DoctorOptions

    return DoctorOptions(
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
        containerd_config_path=args.containerd_config_path,
        registries_conf=args.registries_conf,
        go_choice=_go_choice(args),
        go_debug=args.go_debug,
    )


def _go_choice(args: argparse.Namespace) -> str | None:
    """The option that chose the Go behaviour, or None (the node's kubelet binary decides)."""
    from credprov._go.goenv import GO_VERSION_ENV

    for flag, value in (
        ("--kubelet-binary", args.kubelet_binary),
        ("--kubelet-version", args.kubelet_version),
        ("--go-version", args.go_version),
    ):
        if value is not None:
            return flag
    return GO_VERSION_ENV if os.environ.get(GO_VERSION_ENV) else None


def _check_fleet_options(args: argparse.Namespace) -> None:
    """Refuse combinations of ``--textfile``, ``--every`` and ``--npd`` that cannot work.

    Raises:
        credprov.doctor.DoctorUsageError: one line, exit 2.
    """
    from credprov.doctor import DoctorUsageError
    from credprov.doctor.textfile import check_target

    if args.every is not None and not args.textfile:
        raise DoctorUsageError("--every needs --textfile: each run's results are written there")
    if args.every is not None and args.npd:
        raise DoctorUsageError(
            "--npd runs once per call (node-problem-detector's invoke_interval is the period); "
            "drop --every"
        )
    if args.textfile:
        check_target(args.textfile)


def _print_report(args: argparse.Namespace, report: Report) -> None:
    from credprov.doctor import render_text

    if args.output == "json":
        opts.print_json(report.to_dict())
    else:
        sys.stdout.write(render_text(report, colour=_colour(sys.stdout)))
    sys.stdout.flush()  # a DaemonSet's log shows each run as it ends


def _write_textfile(args: argparse.Namespace, run: Run) -> None:
    from credprov.doctor.textfile import render, write_textfile

    write_textfile(args.textfile, render(run.report, timestamp=run.ended, duration=run.duration))


def _reason(error: BaseException) -> str:
    """An error's one line for stdout (NPD's message): a credprov error's own, else its kind."""
    from credprov.doctor.periodic import RunTimeout

    if isinstance(error, CredprovError):
        return opts.one_line(str(error))
    if isinstance(error, RunTimeout):
        return "the run did not finish within --every"
    return f"internal error ({type(error).__name__})"


def _report_run_error(prog: str, error: BaseException) -> None:
    """One line (and a hint) on stderr for a failed run; the loop goes on."""
    if isinstance(error, CredprovError):
        opts.report_error(prog, error)
    else:
        print(f"{prog}: error: {_reason(error)}", file=sys.stderr, flush=True)


def _run_npd(args: argparse.Namespace, options: DoctorOptions, prog: str) -> int:
    """``--npd``: one bounded line on stdout, NPD's exit status (0 OK, 1 problem, 2 unknown)
    on every path: a textfile that cannot be written is said on stderr only (it is not the
    node's problem), and anything unexpected is unknown, never a traceback."""
    from credprov.doctor import npd, run_doctor
    from credprov.doctor.periodic import timed_run

    try:
        run = timed_run(lambda: run_doctor(options))
        if run.report is not None:
            status, message = npd.verdict(run.report)
        else:
            assert run.error is not None
            _report_run_error(prog, run.error)
            status, message = npd.unknown(_reason(run.error))
        if args.textfile:
            try:
                _write_textfile(args, run)
            except CredprovError as exc:
                opts.report_error(prog, exc)
    except Exception as exc:  # the one line NPD reads must be printed whatever happened
        _report_run_error(prog, exc)
        status, message = npd.unknown(_reason(exc))
    print(message, flush=True)
    return status


def _run_every(args: argparse.Namespace, options: DoctorOptions, prog: str) -> int:
    """``--every``: run, print, rewrite the textfile, every period until SIGTERM (exit 0)."""
    from credprov.doctor import run_doctor
    from credprov.doctor.periodic import run_periodic

    def on_run(run: Run) -> None:
        if run.report is not None:
            _print_report(args, run.report)
        elif run.error is not None:
            _report_run_error(prog, run.error)
        _write_textfile(args, run)

    return run_periodic(lambda: run_doctor(options), args.every, on_run)


def run(args: argparse.Namespace, prog: str = PROG) -> int:
    """Run the checks ``args`` (parsed by a parser with :func:`add_arguments`) ask for and
    print the report; the exit status. A usage error is printed here, naming ``prog``
    (``credprov doctor`` in both front ends), with its hint.

    Raises:
        credprov.errors.CredprovError: a failing environment, for
            :func:`credprov.cmdoptions.run_command` to print.
    """
    from credprov.doctor import run_doctor
    from credprov.doctor.periodic import timed_run

    options = _options(args)
    try:
        _check_fleet_options(args)
    except UsageError as exc:
        if args.npd:
            from credprov.doctor import npd

            opts.report_error(prog, exc)
            status, message = npd.unknown(opts.one_line(str(exc)))
            print(message, flush=True)
            return status
        return opts.report_error(prog, exc)
    if args.every is not None:
        return _run_every(args, options, prog)
    if args.npd:
        return _run_npd(args, options, prog)
    run = timed_run(lambda: run_doctor(options))
    if run.report is None:
        if args.textfile:
            _write_textfile(args, run)  # credprov_doctor_up 0, not a stale file
        if isinstance(run.error, UsageError):
            return opts.report_error(prog, run.error)
        assert run.error is not None
        raise run.error
    _print_report(args, run.report)
    if args.textfile:
        _write_textfile(args, run)
    return EXIT_FAILURE if run.report.failed else EXIT_OK


# -- the standalone command ----------------------------------------------------------------------


def npd_usage_line(message: str) -> str:
    """NPD's stdout line for a usage error (``message``, one line): with ``--npd`` on the
    command line, a parser prints it too (:attr:`credprov.cmdoptions.OneLineErrorParser.
    stdout_line`), so NPD never reads an empty message."""
    from credprov.doctor import npd

    return npd.unknown(f"usage: {message}")[1]


def build_parser(prog: str = PROG, argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The standalone parser: :func:`add_arguments`, with ``-v`` defaulting to 0; ``argv``
    (the words it will parse) says whether ``--npd`` is asked for before they are parsed."""
    p = opts.OneLineErrorParser(prog=prog, description=DESCRIPTION)
    if "--npd" in argv:
        p.stdout_line = npd_usage_line
    add_arguments(p)
    p.set_defaults(verbosity=0)
    return p


def main(argv: Sequence[str] | None = None, prog: str = PROG) -> int:
    """``credprov doctor`` without the credprov CLI: parse ``argv`` (default
    ``sys.argv[1:]``), run, return the exit status; never a traceback."""
    return opts.run_main(
        prog, lambda words: build_parser(prog, words), argv, lambda args: run(args, prog)
    )


if __name__ == "__main__":
    sys.exit(main())
