"""The CLI's logging set-up, applied only if something imports :mod:`logging`.

With ``-v 0`` a command that never imports a module that logs (``config validate``,
``explain``) thus never imports ``logging`` (about 7 ms of start-up).
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing costs start-up; the annotations need it only when checked
if TYPE_CHECKING:
    from typing import Any


class _SetUpLoggingWhenImported:
    """A meta-path finder for ``logging`` alone: the module is loaded as usual, then the
    CLI's set-up is applied before anything can log through it.

    With ``-v 0`` a command that never imports a module that logs (``config validate``,
    ``explain``) thus never imports ``logging`` (about 7 ms of start-up).
    """

    def __init__(self, spec: Any, verbosity: int) -> None:
        exec_module = spec.loader.exec_module

        def exec_then_set_up(module: Any) -> None:
            exec_module(module)
            _setup_logging(verbosity)

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
    _setup_logging(verbosity)


def _setup_logging(verbosity: int) -> None:
    from credprov.base.logs import setup_logging

    setup_logging(verbosity)
