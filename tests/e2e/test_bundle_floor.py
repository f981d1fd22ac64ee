"""The glibc floor, audited on freshly built bundles of both architectures.

Every ELF file of the runtime is read with credprov's ELF reader (``DT_VERNEED``, what the
dynamic loader checks) and must need at most ``GLIBC_2.17`` (manylinux2014, the floor written
into ``REQUIREMENTS``); the audit names the file and the symbol when one does not. Planting a
library of this machine's glibc into a copy of the runtime proves the audit would fail.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from credprov.base import elf
from credprov.bundle._multicall import RUNTIME_FILE
from credprov.bundle.build import audit_glibc, glibc_needs, unpack
from credprov.bundle.freeze import FLOOR

pytestmark = pytest.mark.e2e


@pytest.fixture(params=["amd64", "arm64"])
def runtime(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    tarball = request.getfixturevalue(
        "bundle_tarball" if request.param == "amd64" else "arm64_bundle_tarball"
    )
    return unpack(tarball, tmp_path) / "runtime"


def test_every_elf_file_needs_at_most_the_floor(runtime: Path) -> None:
    needs = glibc_needs(runtime)
    # The executable, the standard library's and the wheels' extension modules, OpenSSL...
    assert len(needs) > 30
    assert any(n.path == RUNTIME_FILE for n in needs)  # runtime/credprov-plugins links to it
    assert audit_glibc(runtime) == [], [str(n) for n in audit_glibc(runtime)]
    assert max(n.version for n in needs) <= FLOOR
    requirements = (runtime.parent / "REQUIREMENTS").read_text()
    assert "; glibc >= 2.17 (the floor: manylinux2014; newest needed: 2.17);" in requirements


def _host_library_above_the_floor() -> Path:
    for candidate in ("libssl.so.3", "libcrypto.so.3", "libstdc++.so.6", "libzstd.so.1"):
        for directory in ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib64"):
            path = Path(directory, candidate)
            info = elf.parse(path.read_bytes()) if path.is_file() else None
            versions = [elf.glibc_version(n.version) for n in (info.version_needs if info else ())]
            if any(v is not None and v > FLOOR for v in versions):
                return path
    pytest.skip("no library of this machine needs a glibc above the floor")


def test_a_planted_library_above_the_floor_is_named_with_its_symbol(runtime: Path) -> None:
    planted = _host_library_above_the_floor()
    shutil.copyfile(planted, runtime / "lib" / planted.name)
    found = audit_glibc(runtime)
    assert [n.path for n in found] == [f"lib/{planted.name}"]
    text = str(found[0])
    assert text.startswith(f"lib/{planted.name} needs ") and "@GLIBC_2." in text
    assert found[0].symbols, "the symbols bound to the newest version are named"
