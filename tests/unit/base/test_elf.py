"""credprov.base.elf: the one ELF reader, against binutils' ``readelf`` on real files of this
machine, and on hostile bytes (truncated, pointing outside, huge counts): an answer or None,
never an exception."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from credprov.base import elf

FILES = [
    p
    for p in (
        "/bin/ls",
        "/bin/busybox",
        "/usr/lib/x86_64-linux-gnu/libssl.so.3",
        "/usr/lib/aarch64-linux-gnu/libssl.so.3",
        "/lib/x86_64-linux-gnu/libz.so.1",
    )
    if Path(p).is_file()
]


def readelf_needs(path: str) -> list[tuple[str, str]]:
    """``(library, version)`` pairs of ``readelf -V``'s version-needs section."""
    out = subprocess.run(
        ["readelf", "-V", "-W", path], capture_output=True, text=True, check=True
    ).stdout
    section = out.split(".gnu.version_r", 1)[1] if ".gnu.version_r" in out else ""
    needs, library = [], ""
    for line in section.splitlines():
        file_match = re.search(r"File: (\S+)", line)
        if file_match:
            library = file_match.group(1)
        name_match = re.search(r"Name: (\S+)\s+Flags", line)
        if name_match:
            needs.append((library, name_match.group(1)))
    return needs


@pytest.mark.skipif(shutil.which("readelf") is None, reason="binutils' readelf not installed")
@pytest.mark.parametrize("path", FILES)
def test_version_needs_match_readelf(path: str) -> None:
    info = elf.parse(Path(path).read_bytes())
    assert info is not None
    assert [(n.library, n.version) for n in info.version_needs] == readelf_needs(path)


GLIBC = {
    "GLIBC_2.17": (2, 17),
    "GLIBC_2.2.5": (2, 2, 5),
    "GLIBC_PRIVATE": None,
    "GLIBCXX_3.4": None,
    "OPENSSL_3.0.0": None,
    "GLIBC_": None,
    "GLIBC_2.999999999": None,
}


@pytest.mark.parametrize("name, version", GLIBC.items(), ids=GLIBC.keys())
def test_glibc_version_names(name: str, version: tuple[int, ...] | None) -> None:
    assert elf.glibc_version(name) == version


def test_the_symbols_behind_a_version_are_named() -> None:
    ls = Path("/bin/ls")
    if not ls.is_file():
        pytest.skip("no /bin/ls")
    info = elf.parse(ls.read_bytes())
    assert info is not None
    named = {s for n in info.version_needs for s in n.symbols}
    assert "__libc_start_main" in named or "malloc" in named


def test_hostile_bytes_never_raise() -> None:
    data = Path(FILES[0]).read_bytes() if FILES else b""
    if not data:
        pytest.skip("no ELF file here")
    for size in (0, 4, 16, 51, 52, 63, 64, 120, 4096, len(data) // 3, len(data) - 1):
        elf.parse(data[:size])
    for at in range(16, 64, 2):  # every header field set to an absurd value in turn
        bad = bytearray(data)
        bad[at : at + 2] = b"\xff\xff"
        elf.parse(bytes(bad))
    assert elf.parse(b"\x7fELF" + bytes([3, 1]) + bytes(60)) is None  # unknown class
    assert elf.arch_of(b"#!/bin/sh\n" + bytes(20)) is None


# -- the one reader ---------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[3]


def elf_readers(root: Path, folders: tuple[str, ...] = ("credprov", "plugins")) -> list[str]:
    """Modules other than ``credprov/base/elf.py`` that spell ELF's magic themselves (a
    second reader starts there; the others use ``elf.MAGIC`` and ``elf.read_header``)."""
    found = []
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            if rel == "credprov/base/elf.py":
                continue
            text = path.read_text(encoding="utf-8")
            if re.search(r"\\x7fELF|\\177ELF|x7f\\x45\\x4c\\x46", text):
                found.append(rel)
    return found


def test_there_is_one_elf_reader() -> None:
    assert elf_readers(ROOT) == []


def test_a_second_elf_reader_is_found(tmp_path: Path) -> None:
    (tmp_path / "credprov" / "_go").mkdir(parents=True)
    (tmp_path / "credprov" / "_go" / "x.py").write_text('if head[:4] != b"\\x7fELF": pass\n')
    assert elf_readers(tmp_path, ("credprov",)) == ["credprov/_go/x.py"]


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (b"\x7fELF\x02\x01" + bytes(58), (0, 64, True)),
        (b"\x7fELF\x01\x02" + bytes(46), (0, 32, False)),
        (b"\x7fELF\x02\x01" + bytes(50), None),  # a 64-bit header cut short
        (b"\x7fELF\x03\x01" + bytes(58), None),  # no such class
        (b"MZ" + bytes(62), None),
    ],
)
def test_read_header(head: bytes, expected: tuple | None) -> None:
    header = elf.read_header(head)
    got = None if header is None else (header.machine, header.bits, header.little_endian)
    assert got == expected
