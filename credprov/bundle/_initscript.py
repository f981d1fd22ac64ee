"""The frozen runtime's init script: what runs between the interpreter and the entry module.

cx_Freeze's own ``console`` init script finds the entry module with ``importlib.util`` and
imports ``typing`` for its annotations: about 15 ms of imports on every plugin start, before
credprov's code runs, for nothing a plugin uses. This one sets ``sys.frozen`` (which the
cloud SDKs and credprov read) and imports the entry module, which runs the multicall
dispatcher (:mod:`credprov.bundle._multicall`).

It also sets the signal dispositions CPython's own start-up sets and freeze-core's ``console``
base leaves alone (it initialises Python without signal handlers): ``SIGPIPE`` and
``SIGXFSZ`` ignored, so a write to a socket or pipe its peer has closed raises
``BrokenPipeError`` (which the cloud SDKs retry) instead of killing the plugin, and
``SIGINT`` raising ``KeyboardInterrupt`` (unless it was ignored when the process started,
as in a shell's background job: CPython leaves it ignored then), so the doctor cleans up
its sandbox on Ctrl-C.
Children started by :mod:`subprocess` get the defaults back (``restore_signals``).
Built-in modules only (``sys``, ``_signal``): nothing read from the archive.
"""

import _signal
import sys

sys.frozen = True  # type: ignore[attr-defined]
_signal.signal(_signal.SIGPIPE, _signal.SIG_IGN)
_signal.signal(_signal.SIGXFSZ, _signal.SIG_IGN)
if _signal.getsignal(_signal.SIGINT) == _signal.SIG_DFL:  # an inherited SIG_IGN stays
    _signal.signal(_signal.SIGINT, _signal.default_int_handler)


def run(name: str) -> None:
    """Run the entry module ``name`` (cx_Freeze's ``__startup__`` calls this)."""
    __import__(name)
