"""The foundation every layer uses and that knows no Kubernetes: the clock, SHA-256,
bounded file reads and atomic writes,
a root directory read as ``openat2(RESOLVE_IN_ROOT)`` would, and redaction of secrets.

The package itself holds one helper, :func:`lazy_names` (PEP 562 lazy public names, for
:mod:`credprov` and :mod:`credprov.sdk`): this package is on every plugin's warm path anyway,
so the helper costs no module there, and the SDK reaches it without importing the root
package's public API, which sits above the SDK in the layers (pyproject.toml).
"""

from __future__ import annotations

# typing costs start-up time (this package is on every plugin's warm path); mypy reads this
# name as typing's.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping


def lazy_names(
    package: str, names: Mapping[str, tuple[str, str]], public: Iterable[str]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for the module ``package``: the one implementation of
    lazy public names, for :mod:`credprov` and :mod:`credprov.sdk`.

    Args:
        package: the module's ``__name__``.
        names: public name -> (module that defines it, its name there).
        public: the module's ``__all__`` (what ``dir()`` lists).

    Returns:
        ``(__getattr__, __dir__)``: the first imports a name's module on first use and keeps
        the value in the package's namespace, so later lookups are plain attribute reads.
    """
    listed = sorted(public)

    def __getattr__(name: str) -> object:
        entry = names.get(name)
        if entry is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        import importlib

        value = getattr(importlib.import_module(entry[0]), entry[1])
        import sys

        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return list(listed)

    return __getattr__, __dir__
