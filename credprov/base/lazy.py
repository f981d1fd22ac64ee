"""Lazy public names (PEP 562): a package lists what it exports and imports each name's
module on first use, so importing the package costs nothing.

The root package and the plugin SDK both export this way; the helper lives in the
foundation (standard library only) so that the SDK reaches it without importing the root
package's public API, which sits above the SDK in the layers (pyproject.toml).
"""

from __future__ import annotations

# typing costs start-up time (this module is on every plugin's warm path); mypy reads this
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
