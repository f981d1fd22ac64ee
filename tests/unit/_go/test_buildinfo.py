"""The Go build-info reader on ELF files written here (:mod:`tests.goelf`), well formed and
hostile; real Go binaries are in ``tests/differential/test_buildinfo_diff.py``."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from credprov._go.buildinfo import MAX_SECTIONS, BuildInfoError, read_build_info
from credprov._go.goenv import release_of_binary
from tests import goelf


def _with_u16(data: bytes, offset: int, value: int) -> bytes:
    return data[:offset] + struct.pack("<H", value) + data[offset + 2 :]


def _with_u64(data: bytes, offset: int, value: int) -> bytes:
    return data[:offset] + struct.pack("<Q", value) + data[offset + 8 :]


_GOOD = goelf.elf()

#: (name, file content, what is read: (go version, machine, DefaultGODEBUG) or an error)
READS = [
    ("kubelet-like, amd64", _GOOD, ("go1.26.6", "amd64", "urlstrictcolons=0")),
    ("arm64", goelf.elf(machine=183, data=goelf.blob(info=goelf.modinfo(goarch="arm64"))),
     ("go1.26.6", "arm64", "urlstrictcolons=0")),
    ("no DefaultGODEBUG", goelf.elf(goelf.blob(info=goelf.modinfo(default_godebug=None))),
     ("go1.26.6", "amd64", "")),
    ("no section headers: the writable segment", goelf.elf(with_sections=False, pad=32),
     ("go1.26.6", "amd64", "urlstrictcolons=0")),
    ("header past misaligned magic", goelf.elf(goelf.MAGIC + b"\0" + goelf.blob(), pad=16 - 15),
     ("go1.26.6", "amd64", "urlstrictcolons=0")),
    ("GOPATH build: no module information", goelf.elf(goelf.blob(info=b"")),
     ("go1.26.6", "amd64", "")),
    ("experiment suffix", goelf.elf(goelf.blob("go1.25.5 X:boringcrypto")),
     ("go1.25.5 X:boringcrypto", "amd64", "urlstrictcolons=0")),
    ("not ELF", b"#!/bin/sh\necho kubelet\n", "not an ELF file"),
    ("empty", b"", "not an ELF file"),
    ("ELF without Go", goelf.elf(b"\0" * 256), "not a Go binary"),
    ("magic, header cut off", goelf.elf(goelf.MAGIC + b"\x08\x02"), "not a Go binary"),
    ("magic only misaligned", goelf.elf(goelf.blob(), pad=3), "not a Go binary"),
    ("version length past the end", goelf.elf(goelf.MAGIC + b"\x08\x02" + bytes(16)
     + goelf.uvarint(1 << 40) + b"go1"), "not a Go binary"),
    ("varint that never ends", goelf.elf(goelf.MAGIC + b"\x08\x02" + bytes(16) + b"\xff" * 40),
     "not a Go binary"),
    ("too many sections", _with_u16(_GOOD, 60, MAX_SECTIONS + 1), "malformed ELF file"),
    ("section headers past the end", _with_u64(_GOOD, 40, 1 << 40), "malformed ELF file"),
    ("program headers past the end", _with_u64(_GOOD, 32, len(_GOOD) - 8), "malformed ELF file"),
    ("truncated ELF header", _GOOD[:40], "malformed ELF header"),
]  # fmt: skip


@pytest.mark.parametrize("content, want", [r[1:] for r in READS], ids=[r[0] for r in READS])
def test_read(tmp_path: Path, content: bytes, want: tuple[str, str, str] | str) -> None:
    path = goelf.write(tmp_path / "kubelet", content)
    if isinstance(want, str):
        with pytest.raises(BuildInfoError, match=want) as info:
            read_build_info(str(path))
        assert "\n" not in str(info.value)
        return
    got = read_build_info(str(path))
    assert (got.go_version, got.machine, got.default_godebug) == want


def test_module_information(tmp_path: Path) -> None:
    info = read_build_info(str(goelf.write(tmp_path / "kubelet", _GOOD)))
    assert info.path == "k8s.io/kubernetes/cmd/kubelet"
    assert info.main == ("k8s.io/kubernetes", "(devel)")
    assert info.deps == {"sigs.k8s.io/yaml": "v1.6.0"}
    # A quoted value (Go quotes one with spaces or quotes) is unquoted.
    assert info.settings["-ldflags"].startswith("-s -w -X 'k8s.io")
    assert info.to_dict()["defaultGODEBUG"] == "urlstrictcolons=0"


@pytest.mark.parametrize(
    "make, want",
    [
        (lambda p: os.mkfifo(p), "not a regular file"),
        (lambda p: os.mkdir(p), "not a regular file"),
    ],
    ids=["fifo", "directory"],
)
def test_refuses_what_is_not_a_file(tmp_path: Path, make: object, want: str) -> None:
    path = tmp_path / "kubelet"
    make(path)  # type: ignore[operator]
    with pytest.raises((BuildInfoError, OSError), match=want):
        read_build_info(str(path))


def test_device_is_refused_before_any_read() -> None:
    with pytest.raises(BuildInfoError, match="not a regular file"):
        read_build_info("/dev/zero")


def test_reads_are_bounded(tmp_path: Path) -> None:
    # A 64 MiB sparse file whose header points everywhere: the reader looks at headers and
    # one 64 KiB window, never the whole file.
    path = tmp_path / "kubelet"
    with path.open("wb") as fh:
        fh.write(goelf.elf(b"\0" * 64))
        fh.truncate(64 << 20)
    with pytest.raises(BuildInfoError, match="not a Go binary"):
        read_build_info(str(path))


#: (DefaultGODEBUG, toolchain, what credprov follows)
RELEASES = [
    ("urlstrictcolons=0", "go1.26.6", "1.26.6 with GODEBUG urlstrictcolons=0"),
    ("", "go1.26.6", "1.26.6"),
    ("urlstrictcolons=1", "go1.26.6", "1.26.6"),
    ("panicnil=1,urlstrictcolons=0", "go1.26.0", "1.26.0 with GODEBUG urlstrictcolons=0"),
    ("urlstrictcolons=0", "go1.25.5", "1.25.5"),  # Go 1.25 has no such setting
    ("", "go1.23", "1.23.0"),
]


@pytest.mark.parametrize("godebug, toolchain, want", RELEASES)
def test_release_of_binary(tmp_path: Path, godebug: str, toolchain: str, want: str) -> None:
    content = goelf.elf(goelf.blob(toolchain, goelf.modinfo(default_godebug=godebug)))
    info = read_build_info(str(goelf.write(tmp_path / "kubelet", content)))
    assert str(release_of_binary(info)) == want


def test_run_time_godebug_overrides_the_binary(tmp_path: Path) -> None:
    info = read_build_info(str(goelf.write(tmp_path / "kubelet", _GOOD)))
    assert str(release_of_binary(info, "urlstrictcolons=1")) == "1.26.6"


def _system_elf_files() -> list[str]:
    """ELF files of the kinds the bundle packs: the Python runtime, the dynamic loader, a
    system library and an extension module (none of them Go)."""
    import glob
    import sys
    import sysconfig

    from credprov.base.elf import parse

    python = os.path.realpath(sys.executable)
    with open(python, "rb") as fh:
        info = parse(fh.read())
    loader = info.interpreter if info is not None else None
    candidates = [
        python,
        loader or "",
        *sorted(glob.glob("/lib/*-linux-gnu/libc.so.6"))[:1],
        *sorted(
            glob.glob(os.path.join(sysconfig.get_paths()["platstdlib"], "lib-dynload", "*.so"))
        )[:1],
        "/bin/busybox",
    ]
    return [p for p in candidates if p and os.path.isfile(p)]


@pytest.mark.parametrize("path", _system_elf_files())
def test_elf_files_that_are_not_go(path: str) -> None:
    with pytest.raises(BuildInfoError, match=r"^not a Go binary \(no Go build information\)$"):
        read_build_info(path)
