"""``credprov bundle --arch``: the host checks, the pinned distributions and the tarball cache
of :mod:`credprov.bundle.cross`, without emulation (tests/e2e/test_bundle_arm64.py builds and
runs a real arm64 bundle)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from credprov.bundle import cross
from credprov.bundle.layout import BundleError, go_arch
from credprov.cli.main import main

HOST = go_arch()
FOREIGN = "arm64" if HOST == "amd64" else "amd64"
MACHINE = cross.ARCHES[FOREIGN]
HINT = (
    "(apt install qemu-user-static binfmt-support; mount -t binfmt_misc binfmt_misc "
    f"/proc/sys/fs/binfmt_misc; update-binfmts --enable qemu-{MACHINE})"
)
ENTRY = f"enabled\ninterpreter /usr/libexec/qemu-binfmt/{MACHINE}-binfmt-P\nflags: {{}}\n"


@pytest.fixture
def host(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A host that can build for :data:`FOREIGN`: root, debootstrap, and a binfmt_misc
    directory (returned) with qemu registered with the F flag."""
    monkeypatch.setattr(cross.os, "geteuid", lambda: 0)
    monkeypatch.setattr(cross.shutil, "which", lambda name: f"/usr/sbin/{name}")
    binfmt = tmp_path / "binfmt_misc"
    binfmt.mkdir()
    (binfmt / "status").write_text("enabled\n")
    (binfmt / f"qemu-{MACHINE}").write_text(ENTRY.format("PF"))
    return binfmt


def test_a_host_with_qemu_registered_with_f_passes(host: Path) -> None:
    cross.check_host(FOREIGN, binfmt_dir=host)


HOSTS = {
    "not root": (
        "geteuid",
        f"building for {FOREIGN} on this {go_arch()} machine needs root (debootstrap, chroot)",
    ),
    "no debootstrap": (
        "which",
        f"building for {FOREIGN} needs debootstrap (apt install debootstrap)",
    ),
    "binfmt_misc not mounted": (
        "status",
        f"cannot run {FOREIGN} programs here: binfmt_misc is not mounted {HINT}",
    ),
    "qemu not registered": (
        "entry",
        f"cannot run {FOREIGN} programs here: qemu-{MACHINE} is not registered {HINT}",
    ),
    "qemu disabled": (
        "disabled",
        f"cannot run {FOREIGN} programs here: qemu-{MACHINE} is disabled {HINT}",
    ),
    "qemu without F": (
        "flags",
        f"qemu-{MACHINE} is registered without the F flag, so it cannot run inside a chroot "
        "(Debian's qemu-user-static registers it with F)",
    ),
}


@pytest.mark.parametrize("fault, line", HOSTS.values(), ids=HOSTS.keys())
def test_host_refusals_are_one_line(
    fault: str, line: str, host: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry = host / f"qemu-{MACHINE}"
    if fault == "geteuid":
        monkeypatch.setattr(cross.os, "geteuid", lambda: 1000)
    elif fault == "which":
        monkeypatch.setattr(cross.shutil, "which", lambda name: None)
    elif fault == "status":
        (host / "status").unlink()
    elif fault == "entry":
        entry.unlink()
    elif fault == "disabled":
        entry.write_text(ENTRY.replace("enabled", "disabled").format("PF"))
    else:
        entry.write_text(ENTRY.format("P"))
    with pytest.raises(BundleError) as err:
        cross.check_host(FOREIGN, binfmt_dir=host)
    assert str(err.value) == line


def test_binfmt_entries_are_read_bounded_and_a_fifo_is_no_entry(host: Path) -> None:
    entry = host / f"qemu-{MACHINE}"
    entry.write_text(ENTRY.format("PF") + "x" * 1_000_000)
    cross.check_host(FOREIGN, binfmt_dir=host)  # the first 4 KiB hold the answer
    entry.unlink()
    import os

    os.mkfifo(entry)  # would block an unbounded open; the refusal is immediate
    with pytest.raises(BundleError, match="is not registered"):
        cross.check_host(FOREIGN, binfmt_dir=host)


CLI = {
    "unknown arch": (
        ["bundle", "--out", ".", "--arch", "sparc64"],
        "credprov: error: unknown architecture 'sparc64'; supported: amd64, arm64",
    ),
    "keep-dir of another arch": (
        ["bundle", "--out", ".", "--arch", FOREIGN, "--keep-dir"],
        "credprov: error: --keep-dir is for this machine's architecture only",
    ),
    "arch with from-tarball": (
        ["bundle", "--arch", FOREIGN, "--from-tarball", "t.tar.gz", "--oci-archive", "x.tar"],
        "credprov: error: --arch builds bundles; --from-tarball uses built ones: give one",
    ),
    "unknown plugin": (
        ["bundle", "--out", ".", "--arch", FOREIGN, "nope"],
        "credprov: error: unknown plugin(s) nope; available: static-credential-provider, "
        "docker-credential-helper-provider, docker-credential-credprov, "
        "ecr-credential-provider, auth-provider-gcp, acr-credential-provider",
    ),
}


@pytest.mark.parametrize("argv, line", CLI.values(), ids=CLI.keys())
def test_cli_errors(
    argv: list[str],
    line: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    # The relative --out/--oci-archive land in a temporary directory if a refusal ever
    # regresses into a real build (one once wrote its tarball and image into the checkout).
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 1
    assert capsys.readouterr().err == line + "\n"


def test_cli_refuses_a_host_without_emulation_in_one_line(
    host: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setattr(cross.os, "geteuid", lambda: 1000)
    assert main(["bundle", "--out", str(tmp_path), "--arch", FOREIGN]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "needs root" in err


def test_pins_are_the_installed_closure_for_the_target() -> None:
    pins = cross.pinned_distributions(FOREIGN)
    names = {p.partition("==")[0] for p in pins}
    # The runtime's own dependencies, each plugin's SDK, and the freezer.
    assert {"pydantic", "pydantic-core", "pyyaml", "prometheus-client", "boto3", "google-auth",
            "azure-identity", "cryptography", "pyinstaller"} <= names  # fmt: skip
    # Never: credprov itself (copied as sources), the venv's own tools, test tools, gRPC.
    assert not names & {"credprov", "pip", "setuptools", "pytest", "moto", "grpcio", "mypy"}
    assert list(pins) == sorted(pins) and all("==" in p for p in pins)
    import importlib.metadata

    assert f"pydantic=={importlib.metadata.version('pydantic')}" in pins


def test_platforms_reach_back_to_manylinux2014_newest_first() -> None:
    plats = cross.platforms("arm64")
    assert plats[0] == "manylinux_2_36_aarch64" and plats[-1] == "manylinux2014_aarch64"
    assert "manylinux_2_17_aarch64" in plats and "manylinux_2_16_aarch64" not in plats


def test_sources_digest_follows_content_not_bytecode(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "__pycache__").mkdir(parents=True)
    (package / "mod.py").write_text("A = 1\n")
    first = cross.sources_digest([package])
    (package / "__pycache__" / "mod.cpython-311.pyc").write_bytes(b"\0")
    assert cross.sources_digest([package]) == first
    # A copy elsewhere (the build root's) has the same digest.
    copy = tmp_path / "elsewhere" / "pkg"
    shutil.copytree(package, copy)
    assert cross.sources_digest([copy]) == first
    (package / "mod.py").write_text("A = 2\n")
    assert cross.sources_digest([package]) != first


def test_an_unchanged_tree_is_not_built_again(
    host: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The tarball cache: with an entry for this exact input, nothing is built (a build
    root would need debootstrap; ``build_root`` failing proves it is never called)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(cross, "check_host", lambda arch: None)

    def no_build(arch: str) -> Path:
        raise AssertionError("built although nothing changed")

    monkeypatch.setattr(cross, "build_root", no_build)
    plugins = ("static-credential-provider",)
    pins = cross.pinned_distributions(FOREIGN)
    digest = cross.sources_digest(cross._package_dirs(cross._packages(plugins)))
    key = cross._key(cross.SUITE, *cross.BASE_PACKAGES, *pins, *plugins, digest)
    entry = tmp_path / "cache" / "credprov" / "bundles" / f"{FOREIGN}-{key}"
    entry.mkdir(parents=True)
    name = f"credprov-plugins-0.1.0-linux-{FOREIGN}.tar.gz"
    (entry / name).write_bytes(b"tarball")
    meta = {"tarball": name, "build_id": "0.1.0-abc", "glibc": "2.34", "size": 7,
            "unpacked_size": 99}  # fmt: skip
    (entry / "result.json").write_text(json.dumps(meta))
    out = tmp_path / "out"
    out.mkdir()
    result = cross.build_for_arch(out, FOREIGN, list(plugins))
    assert (result.tarball, result.build_id, result.unpacked_size) == (out / name, "0.1.0-abc", 99)
    assert result.tarball.read_bytes() == b"tarball" and result.cached

    # A damaged entry is a miss (and is removed), never a traceback.
    for damage in ("{not json", json.dumps({**meta, "tarball": "../../etc/x.tar.gz"})):
        (entry / "result.json").write_text(damage)
        with pytest.raises(AssertionError, match="built although"):
            cross.build_for_arch(out, FOREIGN, list(plugins))
        assert not entry.exists()
        entry.mkdir()
        (entry / name).write_bytes(b"tarball")

    # Another plugin selection is another input: it would be built.
    with pytest.raises(AssertionError, match="built although"):
        cross.build_for_arch(out, FOREIGN, ["ecr-credential-provider"])


def test_this_machines_arch_is_the_native_build(monkeypatch: pytest.MonkeyPatch) -> None:
    called: list[tuple[object, ...]] = []
    monkeypatch.setattr(cross, "build_bundle", lambda out, plugins: called.append((out, plugins)))
    monkeypatch.setattr(cross, "check_host", lambda arch: pytest.fail("no emulation needed"))
    cross.build_for_arch("dist", go_arch(), ["static-credential-provider"])
    assert called == [(Path("dist"), ("static-credential-provider",))]


def test_prune_keeps_the_newest_complete_entries(tmp_path: Path) -> None:
    import os

    for age, name in enumerate(["arm64-a", "arm64-b", "arm64-c", "arm64-d.tmp.x", "amd64-e"]):
        (tmp_path / name).mkdir()
        os.utime(tmp_path / name, (1000 - age, 1000 - age))
    cross._prune(tmp_path, "arm64-", keep=2)
    # The oldest complete arm64 entry goes; one being written and other arches stay.
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "amd64-e", "arm64-a", "arm64-b", "arm64-d.tmp.x"]  # fmt: skip


def test_several_arches_make_one_image_with_the_build_roots_as_sysroots(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--arch HOST,FOREIGN --oci-archive``: the native build, the emulated one, and one
    image whose foreign layer takes busybox and glibc from that architecture's build root."""
    import credprov.bundle.build as build
    import credprov.bundle.oci as oci
    from credprov.bundle.build import BundleResult

    def result(arch: str) -> BundleResult:
        tarball = tmp_path / f"credprov-plugins-0.1.0-linux-{arch}.tar.gz"
        return BundleResult(tarball, "id", ("static-credential-provider",), 1, 2, "2.36", 0.1)

    written: dict[str, object] = {}

    def fake_write(tarballs: list[Path], archive: str, **kw: object) -> object:
        written.update(tarballs=tarballs, archive=archive, **kw)

        class Image:
            archive = "x.tar"
            reference = "ref"
            platforms = ("linux/amd64", "linux/arm64")
            size = 3

        return Image()

    monkeypatch.setattr(build, "build_bundle", lambda out, plugins, keep_dir: result(HOST))
    monkeypatch.setattr(cross, "build_for_arch", lambda out, arch, plugins: result(arch))
    monkeypatch.setattr(cross, "build_root", lambda arch: tmp_path / f"root-{arch}")
    monkeypatch.setattr(oci, "write_oci_archive", fake_write)
    argv = ["bundle", "--arch", f"{HOST},{FOREIGN},{HOST}", "--oci-archive", "x.tar"]
    assert main(argv) == 0
    assert [p.name for p in written["tarballs"]] == [  # type: ignore[attr-defined]
        f"credprov-plugins-0.1.0-linux-{HOST}.tar.gz",
        f"credprov-plugins-0.1.0-linux-{FOREIGN}.tar.gz",
    ]
    assert written["sysroots"] == {FOREIGN: str(tmp_path / f"root-{FOREIGN}")}
    assert "image: x.tar (ref, linux/amd64, linux/arm64" in capsys.readouterr().out
