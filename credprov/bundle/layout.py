"""What every part of a bundle agrees on: its top directory, its architectures, its error.

:mod:`credprov.bundle.build` writes bundles, :mod:`credprov.bundle.tarball` reads them back
as untrusted input and :mod:`credprov.bundle.oci` and :mod:`credprov.bundle.cross` make
images and foreign-architecture bundles from them. The names they share live here, below
all of them, so that none of those modules has to import another one just for a constant
(the reader and the writer used to import each other).
"""

from __future__ import annotations

import platform

from credprov.base.arch import BUNDLED, by_go, by_uname
from credprov.errors import CredprovError

__all__ = ["ARCHES", "BUNDLE_DIR", "BundleError", "go_arch", "machine_of"]

#: The top directory of every bundle tarball (and the runtime executable's name).
BUNDLE_DIR = "credprov-plugins"

#: The architectures a bundle or an installer image can be made for (``linux/<arch>``, Go's
#: names): :data:`credprov.base.arch.BUNDLED`, the one table's.
ARCHES = BUNDLED


class BundleError(CredprovError):
    """The bundle cannot be built, read or imaged; ``str()`` is one line."""


def go_arch(machine: str | None = None) -> str:
    """This machine's architecture (or ``machine``'s) as Go and container images name it.

    Raises:
        BundleError: an architecture bundles are not made for.
    """
    machine = (machine or platform.machine()).lower()
    known = by_uname(machine)
    if known is None or known.go not in ARCHES:
        raise BundleError(f"unsupported architecture {machine!r}")
    return known.go


def machine_of(arch: str) -> str:
    """The kernel's name (``uname -m``; also qemu's and manylinux wheels') of the
    architecture Go names ``arch``.

    Raises:
        BundleError: an architecture bundles are not made for.
    """
    known = by_go(arch)
    if known is None or arch not in ARCHES:
        raise BundleError(f"unknown architecture {arch!r}; supported: {', '.join(sorted(ARCHES))}")
    return known.machine
