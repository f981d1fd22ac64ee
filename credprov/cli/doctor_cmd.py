"""``credprov doctor``: argument parsing and rendering; the checks are :mod:`credprov.doctor`."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from credprov.cli.main import add_common


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "doctor",
        help="why does this node get no credentials? check its kubelet setup",
        description=(
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
        ),
    )
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
    add_common(p, output=True, go_version=True)
    p.set_defaults(run=run)


def _colour(stream: Any) -> bool:
    return bool(getattr(stream, "isatty", lambda: False)()) and not os.environ.get("NO_COLOR")


def run(args: argparse.Namespace) -> int:
    from credprov._go.durations import DurationError, parse_duration
    from credprov.cli._output import print_json
    from credprov.doctor import DoctorOptions, DoctorUsageError, render_text, run_doctor

    durations: dict[str, int] = {}
    for option, value in (
        ("--plugin-timeout", args.plugin_timeout),
        ("--plugins-deadline", args.plugins_deadline),
    ):
        try:
            durations[option] = parse_duration(value)
        except DurationError as exc:
            return _usage(f"{option}: {exc}")
        if durations[option] <= 0:
            return _usage(f"{option} must be positive")
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
        return _usage(str(exc))
    if args.output == "json":
        print_json(report.to_dict())
    else:
        sys.stdout.write(render_text(report, colour=_colour(sys.stdout)))
    return 1 if report.failed else 0


def _usage(message: str) -> int:
    from credprov.cli.main import one_line

    print(f"credprov doctor: error: {one_line(message)}", file=sys.stderr)
    return 2
