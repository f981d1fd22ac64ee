"""The ``credprov`` logger on stderr, set up once per command from ``-v N``.

Shared by the ``credprov`` CLI and the bundle's standalone doctor (which may not import the
CLI): one format, one mapping of verbosity to level.
"""

from __future__ import annotations

import sys

__all__ = ["setup_logging"]


def setup_logging(verbosity: int) -> None:
    """Log to stderr at ``verbosity``'s level: 0 silent, 1 warnings and errors, 2-3 info,
    4 and more debug."""
    import logging

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
