"""Small ELF files with (or without) Go build information, written from Python.

For the build-info reader's fast tests and for CLI tests of ``--kubelet-binary``: the
layout Go's linker writes (a ``.go.buildinfo`` section in a writable ``PT_LOAD`` segment,
the ``\\xff Go buildinf:`` header, inline varint-prefixed strings, the module information
between its two 16-byte sentinels), without a Go toolchain. Real binaries are covered by
``tests/differential/test_buildinfo_diff.py``.
"""

from __future__ import annotations

import struct
from pathlib import Path

MAGIC = b"\xff Go buildinf:"
#: cmd/go's sentinels around the module information (modload.infoStart / infoEnd).
INFO_START = bytes.fromhex("3077af0c9274080241e1c107e6d618e6")
INFO_END = bytes.fromhex("f932433186182072008242104116d8f2")

_VADDR = 0x400000


def uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def modinfo(
    *,
    path: str = "k8s.io/kubernetes/cmd/kubelet",
    module: str = "k8s.io/kubernetes",
    default_godebug: str | None = "urlstrictcolons=0",
    goarch: str = "amd64",
    extra: str = "",
) -> bytes:
    lines = [
        f"path\t{path}",
        f"mod\t{module}\t(devel)\t",
        "dep\tsigs.k8s.io/yaml\tv1.6.0\th1:abc=",
        "build\t-buildmode=exe",
        "build\t-compiler=gc",
        "build\t-ldflags=\"-s -w -X 'k8s.io/component-base/version.gitVersion=v1.34.2'\"",
    ]
    if default_godebug is not None:
        lines.append(f"build\tDefaultGODEBUG={default_godebug}")
    lines += ["build\tCGO_ENABLED=0", f"build\tGOARCH={goarch}", "build\tGOOS=linux"]
    text = "\n".join(lines) + "\n" + extra
    return INFO_START + text.encode() + INFO_END


def blob(version: str = "go1.26.6", info: bytes | None = None, *, flags: int = 2) -> bytes:
    info = modinfo() if info is None else info
    header = MAGIC + bytes([8, flags]) + bytes(16)
    return header + uvarint(len(version)) + version.encode() + uvarint(len(info)) + info + b"\0"


def elf(
    data: bytes | None = None,
    *,
    machine: int = 62,
    section_name: bytes = b".go.buildinfo",
    with_sections: bool = True,
    pad: int = 0,
) -> bytes:
    """An ELF64 little-endian executable whose one writable segment holds ``pad`` zero
    bytes and then ``data`` (default: :func:`blob`), named by a section ``section_name``."""
    data = blob() if data is None else data
    payload = bytes(pad) + data
    ehsize, phentsize, shentsize = 64, 56, 64
    phoff = ehsize
    data_off = 0x1000
    names = b"\0" + section_name + b"\0.shstrtab\0"
    names_off = data_off + len(payload)
    shoff = (names_off + len(names) + 7) & ~7
    shnum = 3 if with_sections else 0
    header = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    header += struct.pack(
        "<HHIQQQIHHHHHH", 2, machine, 1, _VADDR, phoff, shoff if with_sections else 0, 0,
        ehsize, phentsize, 1, shentsize, shnum, 2 if with_sections else 0,
    )  # fmt: skip
    phdr = struct.pack("<IIQQQQQQ", 1, 6, data_off, _VADDR, _VADDR, len(payload),
                       len(payload), 0x1000)  # fmt: skip
    out = bytearray(header + phdr)
    out += bytes(data_off - len(out))
    out += payload + names
    out += bytes(shoff - len(out))
    if with_sections:
        out += bytes(shentsize)  # the null section
        out += struct.pack("<IIQQQQIIQQ", 1, 1, 3, _VADDR, data_off, len(payload), 0, 0, 16, 0)
        out += struct.pack(
            "<IIQQQQIIQQ", 2 + len(section_name), 3, 0, 0, names_off, len(names), 0, 0, 1, 0
        )
    return bytes(out)


def write(path: Path, content: bytes) -> Path:
    path.write_bytes(content)
    path.chmod(0o755)
    return path
