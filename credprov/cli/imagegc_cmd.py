"""``credprov image-gc``: placeholder until it lands."""

from __future__ import annotations

import argparse
from typing import Any

from credprov.cli.main import add_common


def add_parser(sub: Any) -> None:
    p = sub.add_parser("image-gc", help="(not implemented yet)")
    add_common(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from credprov.cli.main import CLIError

    raise CLIError("image-gc is not implemented yet")
