"""The ``credprov`` logger on stderr, set up once per command from ``-v N``.

Shared by both front ends, the ``credprov`` CLI and the bundle's commands (the standalone
doctor, which may not import the CLI), through :func:`credprov.cmdoptions.run_main`: one
format, one mapping of verbosity to level, applied only if something imports
:mod:`logging` (a command that never logs, ``config validate`` or ``explain`` at ``-v 0``,
never imports it: about 7 ms of start-up).
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing costs start-up; the annotations need it only when checked
if TYPE_CHECKING:
    from typing import Any

__all__ = ["setup_logging", "setup_logging_lazily"]


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


class _SetUpLoggingWhenImported:
    """A meta-path finder for ``logging`` alone: the module is loaded as usual, then the
    set-up (:func:`setup_logging`) is applied before anything can log through it.

    With ``-v 0`` a command that never imports a module that logs (``config validate``,
    ``explain``) thus never imports ``logging`` (about 7 ms of start-up).
    """

    def __init__(self, spec: Any, verbosity: int) -> None:
        exec_module = spec.loader.exec_module

        def exec_then_set_up(module: Any) -> None:
            exec_module(module)
            setup_logging(verbosity)

        spec.loader.exec_module = exec_then_set_up
        self._spec = spec

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        """The spec of ``logging`` (once; then this finder steps aside), else None."""
        if fullname != "logging":
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        return self._spec


def setup_logging_lazily(verbosity: int) -> None:
    """Set up logging at ``verbosity`` now if :mod:`logging` is loaded, else when it is."""
    if "logging" not in sys.modules:
        from _frozen_importlib_external import PathFinder  # already loaded: no cost

        spec = PathFinder.find_spec("logging")
        if spec is not None and hasattr(spec.loader, "exec_module"):
            sys.meta_path[:] = [
                f for f in sys.meta_path if not isinstance(f, _SetUpLoggingWhenImported)
            ]
            sys.meta_path.insert(0, _SetUpLoggingWhenImported(spec, verbosity))
            return
    setup_logging(verbosity)
