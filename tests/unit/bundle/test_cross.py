"""``credprov bundle --arch``: the sysroot's host checks and the build dispatch of
:mod:`credprov.bundle.cross`, without emulation (tests/e2e/test_bundle_arm64.py builds and
runs a real arm64 bundle; tests/unit/bundle/test_freeze.py covers pins and platform tags)."""

from __future__ import annotations

from pathlib import Path

import pytest

from credprov.bundle import cross
from credprov.bundle.layout import BundleError, go_arch, machine_of
from credprov.cli.main import main

HOST = go_arch()
FOREIGN = "arm64" if HOST == "amd64" else "amd64"
MACHINE = machine_of(FOREIGN)
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
        f"making the {FOREIGN} sysroot needs root (debootstrap, chroot)",
    ),
    "no debootstrap": (
        "which",
        f"making the {FOREIGN} sysroot needs debootstrap (apt install debootstrap)",
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


def test_cli_refuses_a_foreign_image_without_a_sysroot_in_one_line(
    host: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A foreign bundle needs no emulation; its installer image needs the sysroot, whose
    refusal is one line (before anything is frozen)."""
    monkeypatch.setattr(cross.os, "geteuid", lambda: 1000)
    import credprov.bundle.build as build

    monkeypatch.setattr(build, "_freeze", lambda *a: pytest.fail("froze before the refusal"))
    monkeypatch.setattr(cross, "build_for_arch", lambda *a: pytest.fail("built first"))
    argv = ["bundle", "--arch", FOREIGN, "--oci-archive", str(tmp_path / "i.tar")]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "needs root" in err


def test_any_arch_is_built_here_without_emulation(monkeypatch: pytest.MonkeyPatch) -> None:
    called: list[tuple[object, ...]] = []
    monkeypatch.setattr(
        cross, "build_bundle", lambda out, plugins, arch: called.append((out, plugins, arch))
    )
    monkeypatch.setattr(cross, "check_host", lambda arch: pytest.fail("no emulation needed"))
    for arch in ("amd64", "arm64"):
        cross.build_for_arch("dist", arch, ["static-credential-provider"])
    assert called == [
        ("dist", ("static-credential-provider",), "amd64"),
        ("dist", ("static-credential-provider",), "arm64"),
    ]
