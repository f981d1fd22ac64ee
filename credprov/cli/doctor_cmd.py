"""``credprov doctor``: the subcommand; its options, checks and report are
:mod:`credprov.doctor.cli` (shared with the bundle's standalone ``doctor``)."""

from __future__ import annotations

import argparse
from typing import Any

from credprov.cli.main import add_common


def add_parser(sub: Any) -> None:
    from credprov.doctor.cli import DESCRIPTION, HELP, add_arguments

    p = sub.add_parser("doctor", help=HELP, description=DESCRIPTION)
    add_arguments(p)
    add_common(p, output=True, go_version=True)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from credprov.doctor.cli import run as run_doctor_cli

    return run_doctor_cli(args)
