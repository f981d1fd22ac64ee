"""``credprov doctor``: the subcommand; its options, checks and report are
:mod:`credprov.doctor.cli` (shared with the bundle's standalone ``doctor``)."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(sub: Any) -> None:
    """Add ``doctor`` to ``credprov``'s subcommands."""
    from credprov.doctor.cli import DESCRIPTION, HELP, add_arguments

    p = sub.add_parser("doctor", help=HELP, description=DESCRIPTION)
    add_arguments(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run the doctor (:func:`credprov.doctor.cli.run`)."""
    from credprov.doctor.cli import run as run_doctor_cli

    return run_doctor_cli(args)
