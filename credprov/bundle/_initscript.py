"""The frozen runtime's init script: what runs between the interpreter and the entry module.

cx_Freeze's own ``console`` init script finds the entry module with ``importlib.util`` and
imports ``typing`` for its annotations: about 15 ms of imports on every plugin start, before
credprov's code runs, for nothing a plugin uses. This one sets ``sys.frozen`` (which the
cloud SDKs and credprov read) and imports the entry module, which runs the multicall
dispatcher (:mod:`credprov.bundle._multicall`). Standard library only, and only ``sys``.
"""

import sys

sys.frozen = True  # type: ignore[attr-defined]


def run(name: str) -> None:
    """Run the entry module ``name`` (cx_Freeze's ``__startup__`` calls this)."""
    __import__(name)
