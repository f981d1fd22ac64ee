"""Processor architectures, in one table: how ELF, the kernel, Go and container images name
each one.

A plugin binary says what it was built for in ELF's ``e_machine``; a node says what it is in
``uname -m`` (``x86_64``, ``aarch64``); Go, container images and bundle names say ``amd64``,
``arm64``; qemu, manylinux wheels and Debian's multiarch triplets use the kernel's name.
Every part of credprov that meets one of those names (the doctor's "will this binary start
on the node", the ELF reader, a Go binary's build information, bundles, installer images
and their sysroots) translates it through :data:`ARCHES`, so that adding an architecture is
one row here. ``tests/unit/base/test_arch.py`` checks that no second table appears.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ARCHES", "BUNDLED", "Arch", "by_e_machine", "by_go", "by_uname"]


@dataclass(frozen=True)
class Arch:
    """One architecture.

    Attributes:
        e_machine: ELF's ``e_machine`` (62 for x86-64).
        name: what people call it in a message (``x86-64``, ``AArch64``).
        unames: the kernel's ``uname -m`` spellings, the usual one first (``x86_64``).
        go: Go's ``GOARCH`` and the container image platform's name (``amd64``); None for
            one Go does not build Linux binaries under one name for.
        bundled: credprov builds bundles and installer images for it.
    """

    e_machine: int
    name: str
    unames: tuple[str, ...]
    go: str | None = None
    bundled: bool = False

    @property
    def machine(self) -> str:
        """The kernel's usual name (``x86_64``): qemu's, manylinux wheels' and Debian's
        multiarch triplet's (``x86_64-linux-gnu``) too."""
        return self.unames[0]


#: Every architecture credprov names (the ones Linux nodes run; 64-bit little-endian where
#: Go's name depends on it).
ARCHES: tuple[Arch, ...] = (
    Arch(3, "x86 (i386)", ("i386", "i486", "i586", "i686"), go="386"),
    Arch(8, "MIPS", ("mips", "mips64")),
    Arch(20, "PowerPC", ("ppc",)),
    Arch(21, "PowerPC64", ("ppc64", "ppc64le"), go="ppc64le"),
    Arch(22, "s390x", ("s390x", "s390"), go="s390x"),
    Arch(40, "ARM", ("armv7l", "armv6l", "arm"), go="arm"),
    Arch(62, "x86-64", ("x86_64", "amd64"), go="amd64", bundled=True),
    Arch(183, "AArch64", ("aarch64", "arm64"), go="arm64", bundled=True),
    Arch(243, "RISC-V", ("riscv64",), go="riscv64"),
    Arch(258, "LoongArch", ("loongarch64",)),
)

_BY_E_MACHINE = {a.e_machine: a for a in ARCHES}
_BY_GO = {a.go: a for a in ARCHES if a.go}
_BY_UNAME = {u: a for a in ARCHES for u in a.unames}

#: Go's names of the architectures bundles and installer images are made for.
BUNDLED = frozenset(a.go for a in ARCHES if a.bundled and a.go)


def by_e_machine(e_machine: int) -> Arch | None:
    """The architecture of ELF's ``e_machine``; None for one credprov does not know."""
    return _BY_E_MACHINE.get(e_machine)


def by_go(go: str) -> Arch | None:
    """The architecture Go names ``go`` (``amd64``); None for one credprov does not know."""
    return _BY_GO.get(go)


def by_uname(machine: str) -> Arch | None:
    """The architecture of a ``uname -m`` spelling (``x86_64``, ``arm64``); None if unknown."""
    return _BY_UNAME.get(machine)
