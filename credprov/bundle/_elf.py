"""What an ELF file needs from the system to start: its program interpreter and libraries.

The installer image is ``FROM scratch``; to run the bundle's runtime there (the doctor), the
image carries the system libraries the runtime's ELF files name (``DT_NEEDED``) and do not
bring themselves, and the dynamic loader (``PT_INTERP``), copied from the machine that
makes the image. Only these two lists are read, from the file's program headers and its
dynamic segment, as the System V ABI lays them out (ELF32/ELF64, either byte order); the
bytes come from the bundle tarball in memory, so nothing here opens or runs a file.
:func:`machine` reads ``e_machine``, so a file of another architecture (an amd64 busybox
offered for an arm64 image) is refused before it is packed. ``credprov.doctor.binaries``
reads the interpreter for its own, different question
(will this plugin start on that node?) and sits in a sibling layer.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

__all__ = ["Dynamic", "dynamic_info", "machine"]

_PT_LOAD, _PT_DYNAMIC, _PT_INTERP = 1, 2, 3

#: ``e_machine`` → the architecture as Go and container images name it (the ones a Linux
#: node runs; 64-bit little-endian where the name depends on it).
_MACHINES = {3: "386", 40: "arm", 62: "amd64", 183: "arm64", 243: "riscv64", 21: "ppc64le",
             22: "s390x"}  # fmt: skip
_DT_NULL, _DT_NEEDED, _DT_STRTAB = 0, 1, 5


@dataclass(frozen=True)
class Dynamic:
    """An ELF file's ``PT_INTERP`` (None when static or a shared library without one) and
    ``DT_NEEDED`` sonames, in file order."""

    interpreter: str | None
    needed: tuple[str, ...]


def _cstring(data: bytes, offset: int) -> str:
    end = data.find(b"\0", offset)
    return data[offset : end if end >= 0 else len(data)].decode("utf-8", "replace")


def machine(data: bytes) -> str | None:
    """The architecture an ELF file is for (``"amd64"``, ``"arm64"``, ...; ``"EM_<n>"`` for
    others); None if ``data`` does not start with an ELF header."""
    if len(data) < 20 or data[:4] != b"\x7fELF" or data[5] not in (1, 2):
        return None
    (number,) = struct.unpack_from("<H" if data[5] == 1 else ">H", data, 18)
    return _MACHINES.get(number, f"EM_{number}")


def dynamic_info(data: bytes) -> Dynamic | None:
    """The interpreter and needed libraries of the ELF file ``data``; None if not ELF (or
    too short to be one). Offsets outside ``data`` are ignored, never an exception."""
    if len(data) < 52 or data[:4] != b"\x7fELF" or data[4] not in (1, 2):
        return None
    wide = data[4] == 2
    end = "<" if data[5] == 1 else ">"
    try:
        if wide:
            phoff, phentsize, phnum = (
                *struct.unpack_from(end + "Q", data, 32),
                *struct.unpack_from(end + "HH", data, 54),
            )
            header = end + "IIQQQQQQ"  # type, flags, offset, vaddr, paddr, filesz, memsz, align
        else:
            phoff, phentsize, phnum = (
                *struct.unpack_from(end + "I", data, 28),
                *struct.unpack_from(end + "HH", data, 42),
            )
            header = end + "IIIIIIII"  # type, offset, vaddr, paddr, filesz, memsz, flags, align
        loads: list[tuple[int, int, int]] = []  # (vaddr, offset, filesz)
        dynamic: tuple[int, int] | None = None
        interpreter = None
        for i in range(phnum):
            at = phoff + i * phentsize
            if at + struct.calcsize(header) > len(data):
                break
            fields = struct.unpack_from(header, data, at)
            if wide:
                p_type, _flags, offset, vaddr, _paddr, filesz = fields[:6]
            else:
                p_type, offset, vaddr, _paddr, filesz = fields[:5]
            if p_type == _PT_LOAD:
                loads.append((vaddr, offset, filesz))
            elif p_type == _PT_DYNAMIC:
                dynamic = (offset, filesz)
            elif p_type == _PT_INTERP:
                interpreter = _cstring(data, offset) or None
        return Dynamic(interpreter, _needed(data, dynamic, loads, wide, end))
    except struct.error:
        return None


def _needed(
    data: bytes,
    dynamic: tuple[int, int] | None,
    loads: list[tuple[int, int, int]],
    wide: bool,
    end: str,
) -> tuple[str, ...]:
    if dynamic is None:
        return ()
    entry = end + ("qQ" if wide else "iI")
    size = struct.calcsize(entry)
    offset, filesz = dynamic
    names: list[int] = []
    strtab_vaddr = None
    for at in range(offset, min(offset + filesz, len(data)) - size + 1, size):
        tag, value = struct.unpack_from(entry, data, at)
        if tag == _DT_NULL:
            break
        if tag == _DT_NEEDED:
            names.append(value)
        elif tag == _DT_STRTAB:
            strtab_vaddr = value
    if strtab_vaddr is None:
        return ()
    # DT_STRTAB is an address: the file offset is found through the load segment holding it.
    for vaddr, seg_offset, seg_size in loads:
        if vaddr <= strtab_vaddr < vaddr + seg_size:
            strtab = seg_offset + (strtab_vaddr - vaddr)
            return tuple(_cstring(data, strtab + n) for n in names if strtab + n < len(data))
    return ()
