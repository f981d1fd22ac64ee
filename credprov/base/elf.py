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

from credprov.base.arch import by_e_machine

__all__ = [
    "MAGIC",
    "MAX_ENTRIES",
    "Elf",
    "Header",
    "VersionNeed",
    "arch_of",
    "glibc_version",
    "parse",
    "program_header",
    "read_header",
    "section_header",
]

#: The first four bytes of every ELF file.
MAGIC = b"\x7fELF"

#: At most this many program headers, dynamic entries, version needs or symbols are read.
MAX_ENTRIES = 1 << 16


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


@dataclass(frozen=True)
class Header:
    """The ELF header's fields a reader needs to find everything else: the machine, class
    and byte order, and where the program and section headers are."""

    machine: int
    bits: int
    little_endian: bool
    phoff: int
    phentsize: int
    phnum: int
    shoff: int
    shentsize: int
    shnum: int
    shstrndx: int

    @property
    def byte_order(self) -> str:
        """``struct``'s byte-order prefix of the file."""
        return "<" if self.little_endian else ">"


def read_header(head: bytes) -> Header | None:
    """The header of the ELF file whose first bytes (64 suffice) are ``head``; None if they
    are not a whole ELF header (no magic, a bad class or byte order, too short)."""
    if len(head) < 52 or head[:4] != MAGIC or head[4] not in (1, 2) or head[5] not in (1, 2):
        return None
    bo = "<" if head[5] == 1 else ">"
    (machine,) = struct.unpack_from(bo + "H", head, 18)
    if head[4] == 2:
        if len(head) < 64:
            return None
        phoff, shoff = struct.unpack_from(bo + "QQ", head, 32)
        fields = struct.unpack_from(bo + "HHHHH", head, 54)
    else:
        phoff, shoff = struct.unpack_from(bo + "II", head, 28)
        fields = struct.unpack_from(bo + "HHHHH", head, 42)
    phentsize, phnum, shentsize, shnum, shstrndx = fields
    bits = 64 if head[4] == 2 else 32
    return Header(
        machine, bits, head[5] == 1, phoff, phentsize, phnum, shoff, shentsize, shnum, shstrndx
    )


def _unpack(header: Header, fmt: str, data: bytes, at: int) -> tuple[int, ...]:
    fmt = header.byte_order + fmt
    if at < 0 or at + struct.calcsize(fmt) > len(data):
        raise struct.error("outside the data")
    return struct.unpack_from(fmt, data, at)


def program_header(header: Header, data: bytes, at: int) -> tuple[int, int, int, int, int]:
    """``(type, flags, offset, vaddr, filesz)`` of the program header at ``at`` in ``data``.

    Raises:
        struct.error: the entry is not wholly inside ``data``.
    """
    if header.bits == 64:
        p_type, flags, offset, vaddr, _paddr, filesz = _unpack(header, "IIQQQQ", data, at)
    else:
        p_type, offset, vaddr, _paddr, filesz, _memsz, flags = _unpack(header, "IIIIIII", data, at)
    return p_type, flags, offset, vaddr, filesz


def section_header(header: Header, data: bytes, at: int) -> tuple[int, ...]:
    """``(name, type, flags, addr, offset, size, link, info, addralign, entsize)`` of the
    section header at ``at`` in ``data``.

    Raises:
        struct.error: the entry is not wholly inside ``data``.
    """
    return _unpack(header, "IIQQQQIIQQ" if header.bits == 64 else "IIIIIIIIII", data, at)


def arch_of(data: bytes) -> str | None:
    """The architecture an ELF file is for (``"amd64"``, ``"arm64"``, ...; ``"EM_<n>"`` for
    others); None if ``data`` does not start with an ELF header."""
    if len(data) < 20 or data[:4] != MAGIC or data[5] not in (1, 2):
        return None
    (number,) = struct.unpack_from("<H" if data[5] == 1 else ">H", data, 18)
    known = by_e_machine(number)
    return known.go if known is not None and known.go else f"EM_{number}"


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

    def __init__(self, data: bytes, header: Header) -> None:
        self.data = data
        self.header = header
        self.wide = header.bits == 64

    def unpack(self, fmt: str, offset: int) -> tuple[int, ...]:
        return _unpack(self.header, fmt, self.data, offset)


def _program_headers(r: _Reader) -> list[tuple[int, int, int, int]]:
    """``(type, offset, vaddr, filesz)`` of each program header."""
    h = r.header
    headers = []
    for i in range(min(h.phnum, MAX_ENTRIES)):
        try:
            p_type, _flags, offset, vaddr, filesz = program_header(
                h, r.data, h.phoff + i * h.phentsize
            )
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
    h = r.header
    try:
        sections = [
            section_header(h, r.data, h.shoff + i * h.shentsize)
            for i in range(min(h.shnum, MAX_ENTRIES))
        ]
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
    header = read_header(data[:64])
    if header is None:
        return None
    r = _Reader(data, header)
    machine, bits = header.machine, header.bits
    headers = _program_headers(r)
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
