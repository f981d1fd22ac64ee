"""credprov.bundle.freeze without freezing: the pinned closure, the platform tags at the
glibc floor, the cache's pruning and the interpreter read from freeze-core's files."""

from __future__ import annotations

import importlib.metadata
import json
import os
from pathlib import Path

import pytest

from credprov.bundle import freeze
from credprov.bundle.layout import BundleError


def test_pins_are_the_installed_closure_for_the_target() -> None:
    pins = freeze.pinned_distributions("arm64")
    names = {p.partition("==")[0] for p in pins}
    # The runtime's own dependencies, each plugin's SDK, and the interpreter.
    assert {"pydantic", "pydantic-core", "pyyaml", "prometheus-client", "boto3", "google-auth",
            "azure-identity", "cryptography", "freeze-core"} <= names  # fmt: skip
    # Never: credprov itself (copied as sources), the venv's own tools, test tools, gRPC,
    # the freezer itself (it runs here; only its run-time wheel is frozen).
    assert not names & {"credprov", "pip", "setuptools", "pytest", "moto", "grpcio", "mypy",
                        "cx-freeze", "pyinstaller"}  # fmt: skip
    assert list(pins) == sorted(pins) and all("==" in p for p in pins)
    assert f"pydantic=={importlib.metadata.version('pydantic')}" in pins


PLATFORMS = {
    "amd64": ("manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux_2_12_x86_64",
              "manylinux2010_x86_64", "manylinux_2_5_x86_64", "manylinux1_x86_64"),
    "arm64": ("manylinux_2_17_aarch64", "manylinux2014_aarch64"),
}  # fmt: skip


@pytest.mark.parametrize("arch, tags", PLATFORMS.items(), ids=PLATFORMS.keys())
def test_platform_tags_never_rise_above_the_floor(arch: str, tags: tuple[str, ...]) -> None:
    assert freeze.platforms(arch) == tags
    assert freeze.FLOOR == (2, 17)


def test_an_unknown_arch_is_one_line() -> None:
    with pytest.raises(
        BundleError, match=r"^unknown architecture 'sparc64'; supported: amd64, arm64$"
    ):
        freeze.platforms("sparc64")


def test_prune_keeps_the_newest_complete_entries(tmp_path: Path) -> None:
    for age, name in enumerate(["site-arm64-a", "site-arm64-b", "site-arm64-c",
                                "site-arm64-d.tmp.x", "site-amd64-e"]):  # fmt: skip
        (tmp_path / name).mkdir()
        os.utime(tmp_path / name, (1000 - age, 1000 - age))
    freeze.prune(tmp_path, "site-arm64-", keep=2)
    # The oldest complete arm64 entry goes; one being written and other arches stay.
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "site-amd64-e", "site-arm64-a", "site-arm64-b", "site-arm64-d.tmp.x"]  # fmt: skip


def test_the_interpreter_is_read_from_freeze_cores_files(tmp_path: Path) -> None:
    core = tmp_path / "freeze_core"
    (core / "frozen").mkdir(parents=True)
    (core / "frozen" / "frozen-cpython-311-x86_64-linux-gnu.json").write_text(
        json.dumps({"__version__": "3.11.17 (main, Oct 21 2026) [GCC 10.2.1]", "abc": "frozen"})
    )
    (tmp_path / "freeze_core.libs").mkdir()
    (tmp_path / "freeze_core.libs" / "libcrypto-1.so.3").write_bytes(b"\0OpenSSL 3.5.9 29 Sep\0")
    (tmp_path / "freeze_core-0.8.1.dist-info").mkdir()
    found = freeze.interpreter(tmp_path)
    assert (found.freeze_core, found.python, found.openssl) == ("0.8.1", "3.11.17", "3.5.9")


def test_damaged_freeze_core_files_read_as_unknown(tmp_path: Path) -> None:
    (tmp_path / "freeze_core" / "frozen").mkdir(parents=True)
    (tmp_path / "freeze_core" / "frozen" / "frozen-cpython-311-x.json").write_text("{not json")
    found = freeze.interpreter(tmp_path)
    assert (found.freeze_core, found.python, found.openssl) == ("unknown",) * 3


def test_a_build_cpython_of_another_minor_release_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(freeze, "site_dir", lambda arch: tmp_path)
    monkeypatch.setattr(
        freeze, "interpreter", lambda site: freeze.Interpreter("0.8.1", "3.12.9", "3", "3.11.7")
    )
    with pytest.raises(BundleError, match=r"carries CPython 3\.12\.9; build with a CPython"):
        freeze.freeze(tmp_path / "x.py", "x", tmp_path / "t", "amd64", sources=[], packages=[],
                      includes=[], excludes=[])  # fmt: skip
