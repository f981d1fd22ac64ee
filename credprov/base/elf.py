"""What an ELF file asks of the system that loads it: one reader for credprov.

Read from an ELF file's bytes, as the System V ABI and the GNU symbol-versioning extension lay
them out (ELF32/ELF64, either byte order):

* the header: ``e_machine``, class and byte order;
* the program headers: ``PT_INTERP`` (the dynamic loader a binary needs) and, through
  ``PT_DYNAMIC``, the ``DT_NEEDED`` sonames and the ``DT_VERNEED`` list, which is what the
  loader checks: every ``(library, version)`` the file needs, e.g. ``libc.so.6`` at
  ``GLIBC_2.17``;
* the section headers, when present, for the symbol behind each version need (``.dynsym``
  with ``.gnu.version``), so an audit can name ``hypot@GLIBC_2.35`` rather than a version.

Users: the bundle's glibc audit and ``REQUIREMENTS`` (:mod:`credprov.bundle.build`), the
installer image's system libraries (:mod:`credprov.bundle.oci`) and the doctor's "will this
binary start on the node" (:mod:`credprov.doctor.binaries`).

The bytes are untrusted (a node image's binaries): every offset is checked against the data,
every list is bounded (:data:`MAX_ENTRIES`), and a malformed file reads as "not ELF" or as
fewer entries, never an exception. Nothing here opens or runs a file. No maintained
pure-Python ELF reader is a dependency here (pyelftools would be one for these few fields).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

__all__ = ["MAX_ENTRIES", "Elf", "VersionNeed", "arch_of", "glibc_version", "parse"]

#: At most this many program headers, dynamic entries, version needs or symbols are read.
MAX_ENTRIES = 1 << 16

#: ``e_machine`` -> the architecture as Go and container images name it (the ones a Linux
#: node runs; 64-bit little-endian where the name depends on it).
_GO_ARCH = {3: "386", 40: "arm", 62: "amd64", 183: "arm64", 243: "riscv64", 21: "ppc64le",
            22: "s390x"}  # fmt: skip

_PT_LOAD, _PT_DYNAMIC, _PT_INTERP = 1, 2, 3
_DT_NULL, _DT_NEEDED, _DT_STRTAB = 0, 1, 5
_DT_VERNEED, _DT_VERNEEDNUM = 0x6FFFFFFE, 0x6FFFFFFF
_SHT_DYNSYM, _SHT_VERSYM = 11, 0x6FFFFFFF


@dataclass(frozen=True)
class VersionNeed:
    """One ``DT_VERNEED`` entry: ``library`` (``libc.so.6``) needs ``version``
    (``GLIBC_2.17``); ``symbols`` the undefined symbols bound to it, when the file has
    section headers."""

    library: str
    version: str
    symbols: tuple[str, ...] = ()


@dataclass(frozen=True)
class Elf:
    """An ELF file's loading requirements (see the module docstring)."""

    machine: int
    bits: int
    little_endian: bool
    interpreter: str | None = None
    needed: tuple[str, ...] = ()
    version_needs: tuple[VersionNeed, ...] = field(default=())


def arch_of(data: bytes) -> str | None:
    """The architecture an ELF file is for (``"amd64"``, ``"arm64"``, ...; ``"EM_<n>"`` for
    others); None if ``data`` does not start with an ELF header."""
    if len(data) < 20 or data[:4] != b"\x7fELF" or data[5] not in (1, 2):
        return None
    (number,) = struct.unpack_from("<H" if data[5] == 1 else ">H", data, 18)
    return _GO_ARCH.get(number, f"EM_{number}")


def glibc_version(name: str) -> tuple[int, ...] | None:
    """``(2, 17)`` for ``GLIBC_2.17``; None for any other version name."""
    if not name.startswith("GLIBC_"):
        return None
    parts = name[6:].split(".")
    if not all(p.isdigit() and len(p) < 6 for p in parts):
        return None
    return tuple(int(p) for p in parts)


def _cstring(data: bytes, offset: int) -> str:
    if offset < 0 or offset >= len(data):
        return ""
    end = data.find(b"\0", offset, offset + 4096)
    return data[offset : end if end >= 0 else offset + 4096].decode("utf-8", "replace")


class _Reader:
    """Bounds-checked ``struct`` reads of one file's bytes."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.wide = data[4] == 2
        self.end = "<" if data[5] == 1 else ">"

    def unpack(self, fmt: str, offset: int) -> tuple[int, ...]:
        fmt = self.end + fmt
        if offset < 0 or offset + struct.calcsize(fmt) > len(self.data):
            raise struct.error("outside the file")
        return struct.unpack_from(fmt, self.data, offset)

    def word(self) -> str:
        return "Q" if self.wide else "I"


def _program_headers(r: _Reader) -> list[tuple[int, int, int, int]]:
    """``(type, offset, vaddr, filesz)`` of each program header."""
    if r.wide:
        phoff, = r.unpack("Q", 32)  # fmt: skip
        phentsize, phnum = r.unpack("HH", 54)
    else:
        phoff, = r.unpack("I", 28)  # fmt: skip
        phentsize, phnum = r.unpack("HH", 42)
    headers = []
    for i in range(min(phnum, MAX_ENTRIES)):
        at = phoff + i * phentsize
        try:
            if r.wide:
                p_type, _f, offset, vaddr, _p, filesz = r.unpack("IIQQQQ", at)
            else:
                p_type, offset, vaddr, _p, filesz = r.unpack("IIIII", at)
        except struct.error:
            break
        headers.append((p_type, offset, vaddr, filesz))
    return headers


def _file_offset(loads: list[tuple[int, int, int, int]], address: int) -> int | None:
    for _t, offset, vaddr, filesz in loads:
        if vaddr <= address < vaddr + filesz:
            return offset + (address - vaddr)
    return None


def _dynamic(r: _Reader, offset: int, size: int) -> dict[int, list[int]]:
    entry = "qQ" if r.wide else "iI"
    step = struct.calcsize(entry)
    tags: dict[int, list[int]] = {}
    for at in range(offset, offset + min(size, MAX_ENTRIES * step), step):
        try:
            tag, value = r.unpack(entry, at)
        except struct.error:
            break
        if tag == _DT_NULL:
            break
        tags.setdefault(tag, []).append(value)
    return tags


def _verneed(r: _Reader, at: int, count: int, strtab: int) -> list[tuple[str, str, int]]:
    """``(library, version, index)`` of each need (index: ``vna_other``, .gnu.version's)."""
    needs: list[tuple[str, str, int]] = []
    for _ in range(min(count, MAX_ENTRIES)):
        try:
            _v, cnt, file_name, aux, nxt = r.unpack("HHIII", at)
        except struct.error:
            break
        library = _cstring(r.data, strtab + file_name)
        aux_at = at + aux
        for _ in range(min(cnt, MAX_ENTRIES)):
            try:
                _h, _fl, other, name, aux_next = r.unpack("IHHII", aux_at)
            except struct.error:
                break
            needs.append((library, _cstring(r.data, strtab + name), other))
            if not aux_next or len(needs) >= MAX_ENTRIES:
                break
            aux_at += aux_next
        if not nxt:
            break
        at += nxt
    return needs


def _symbols_by_version(r: _Reader) -> dict[int, list[str]]:
    """Undefined dynamic symbols by their ``.gnu.version`` index (from section headers)."""
    try:
        if r.wide:
            shoff, = r.unpack("Q", 40)  # fmt: skip
            shentsize, shnum = r.unpack("HH", 58)
        else:
            shoff, = r.unpack("I", 32)  # fmt: skip
            shentsize, shnum = r.unpack("HH", 46)
        fmt = "IIQQQQIIQQ" if r.wide else "IIIIIIIIII"
        sections = [r.unpack(fmt, shoff + i * shentsize) for i in range(min(shnum, MAX_ENTRIES))]
    except struct.error:
        return {}
    # (name, type, flags, addr, offset, size, link, info, addralign, entsize)
    dynsym = next((s for s in sections if s[1] == _SHT_DYNSYM), None)
    versym = next((s for s in sections if s[1] == _SHT_VERSYM), None)
    if dynsym is None or versym is None or not 0 <= dynsym[6] < len(sections):
        return {}
    strtab = sections[dynsym[6]][4]
    entsize = dynsym[9] or (24 if r.wide else 16)
    found: dict[int, list[str]] = {}
    for i in range(min(dynsym[5] // entsize, MAX_ENTRIES)):
        try:
            if r.wide:
                name, _info, _other, shndx = r.unpack("IBBH", dynsym[4] + i * entsize)
            else:
                name, _v, _s, _info, _other, shndx = r.unpack("IIIBBH", dynsym[4] + i * entsize)
            index, = r.unpack("H", versym[4] + 2 * i)  # fmt: skip
        except struct.error:
            break
        if shndx == 0:  # undefined: bound to a needed library's version
            found.setdefault(index & 0x7FFF, []).append(_cstring(r.data, strtab + name))
    return found


def parse(data: bytes) -> Elf | None:
    """The loading requirements of the ELF file ``data``; None if it is not ELF (or too
    short to be one). Parts outside ``data`` are left out, never an exception."""
    if len(data) < 52 or data[:4] != b"\x7fELF" or data[4] not in (1, 2) or data[5] not in (1, 2):
        return None
    r = _Reader(data)
    machine, = r.unpack("H", 18)  # fmt: skip
    bits = 64 if r.wide else 32
    try:
        headers = _program_headers(r)
    except struct.error:
        return Elf(machine, bits, data[5] == 1)
    loads = [h for h in headers if h[0] == _PT_LOAD]
    interpreter = None
    tags: dict[int, list[int]] = {}
    for p_type, offset, _vaddr, filesz in headers:
        if p_type == _PT_INTERP and interpreter is None:
            interpreter = _cstring(data, offset) or None
        elif p_type == _PT_DYNAMIC and not tags:
            tags = _dynamic(r, offset, filesz)
    strtab = _file_offset(loads, tags.get(_DT_STRTAB, [-1])[0])
    needed: tuple[str, ...] = ()
    needs: tuple[VersionNeed, ...] = ()
    if strtab is not None:
        needed = tuple(_cstring(data, strtab + n) for n in tags.get(_DT_NEEDED, []))
        verneed = _file_offset(loads, tags.get(_DT_VERNEED, [-1])[0])
        if verneed is not None:
            count = tags.get(_DT_VERNEEDNUM, [0])[0]
            symbols = _symbols_by_version(r)
            needs = tuple(
                VersionNeed(library, version, tuple(sorted(set(symbols.get(index, [])))))
                for library, version, index in _verneed(r, verneed, count, strtab)
            )
    return Elf(machine, bits, data[5] == 1, interpreter, needed, needs)
