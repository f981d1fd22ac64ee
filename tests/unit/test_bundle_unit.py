"""credprov.bundle without PyInstaller: the installer script on a stand-in runtime, the OCI
archive's structure, and the CLI's one-line errors."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from credprov.bundle.build import BundleError, assemble, select_plugins, write_tarball
from credprov.bundle.oci import write_oci_archive
from credprov.cli.main import main

NAMES = ("static-credential-provider", "ecr-credential-provider")


def fake_bundle(tmp_path: Path, exit_code: int = 0) -> Path:
    runtime = tmp_path / "runtime-src"
    runtime.mkdir()
    exe = runtime / "credprov-plugins"
    exe.write_text(f'#!/bin/sh\necho "$(basename "$0")"\nexit {exit_code}\n')
    exe.chmod(0o755)
    bundle, _build_id, _glibc = assemble(runtime, NAMES, tmp_path / "out")
    return bundle


def install(bundle: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["sh", str(bundle / "install"), *args], capture_output=True, text=True, check=False
    )


def test_install_idempotent_force_uninstall(tmp_path: Path) -> None:
    bundle = fake_bundle(tmp_path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    first = install(bundle, "--bin-dir", str(bin_dir))
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines()[1:] == [f"installed: {bin_dir}/{n}" for n in NAMES]
    second = install(bundle, "--bin-dir", str(bin_dir))
    assert second.stdout.splitlines() == [f"unchanged: {bin_dir}/{n}" for n in NAMES]
    ran = subprocess.run([str(bin_dir / NAMES[0])], capture_output=True, text=True, check=True)
    assert ran.stdout == f"{NAMES[0]}\n"  # argv[0] is the plugin's name
    gone = install(bundle, "--bin-dir", str(bin_dir), "--uninstall")
    assert gone.returncode == 0
    assert list(bin_dir.iterdir()) == []


ERRORS = {
    "no bin dir": ((), 2, "install: error: --bin-dir is required"),
    "missing bin dir": (("--bin-dir", "/nonexistent/x"), 1,
                        "install: error: bin dir /nonexistent/x does not exist (create it first)"),
    "unknown plugin": (("--bin-dir", "BIN", "nope"), 1, "install: error: unknown plugin nope; "
                       "this bundle has: static-credential-provider ecr-credential-provider"),
    "unknown option": (("--bogus",), 2, "install: error: unknown option --bogus"),
}  # fmt: skip


@pytest.mark.parametrize("args, code, line", ERRORS.values(), ids=ERRORS.keys())
def test_install_errors_are_one_line(
    tmp_path: Path, args: tuple[str, ...], code: int, line: str
) -> None:
    bundle = fake_bundle(tmp_path)
    (tmp_path / "bin").mkdir()
    argv = [str(tmp_path / "bin") if a == "BIN" else a for a in args]
    proc = install(bundle, *argv)
    assert proc.returncode == code
    assert proc.stderr.splitlines()[0] == line
    assert "Traceback" not in proc.stderr


def test_install_refuses_a_runtime_that_cannot_run_here(tmp_path: Path) -> None:
    bundle = fake_bundle(tmp_path, exit_code=127)
    (tmp_path / "bin").mkdir()
    proc = install(bundle, "--bin-dir", str(tmp_path / "bin"))
    assert proc.returncode == 1
    assert proc.stderr.startswith("install: error: the runtime cannot run on this node:")
    assert not (tmp_path / "bin" / NAMES[0]).exists()


@pytest.mark.skipif(shutil.which("busybox") is None, reason="busybox not installed")
def test_oci_archive_is_a_consistent_image_layout(tmp_path: Path) -> None:
    bundle = fake_bundle(tmp_path)
    tarball = tmp_path / "b.tar.gz"
    write_tarball(bundle, tarball)
    archive = tmp_path / "image.tar"
    result = write_oci_archive(tarball, archive, busybox="/bin/busybox", reference="x/y:1")
    with tarfile.open(archive) as tar:
        files = {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}  # type: ignore[union-attr]
    for name, data in files.items():
        if name.startswith("blobs/sha256/"):
            assert hashlib.sha256(data).hexdigest() == name.rsplit("/", 1)[1]
    index = json.loads(files["index.json"])
    (desc,) = index["manifests"]
    assert desc["digest"] == result.manifest_digest
    assert desc["annotations"]["io.containerd.image.name"] == "x/y:1"
    manifest = json.loads(files["blobs/sha256/" + desc["digest"][7:]])
    config = json.loads(files["blobs/sha256/" + manifest["config"]["digest"][7:]])
    assert config["config"]["Entrypoint"] == ["/credprov-plugins/image-entrypoint"]
    # Rebuilding gives the same bytes.
    again = write_oci_archive(tarball, tmp_path / "again.tar", busybox="/bin/busybox",
                              reference="x/y:1")  # fmt: skip
    assert again.manifest_digest == result.manifest_digest


def test_select_plugins() -> None:
    assert select_plugins(["ecr-credential-provider"]) == ("ecr-credential-provider",)
    with pytest.raises(BundleError, match="unknown plugin"):
        select_plugins(["nope"])


CLI = {
    "no --out": (["bundle"], "credprov: error: --out DIR is required (where the tarball goes)"),
    "image only needs an archive": (
        ["bundle", "--from-tarball", "x.tar.gz"],
        "credprov: error: --from-tarball needs --oci-archive",
    ),
    "unknown plugin": (
        ["bundle", "--out", ".", "nope"],
        "credprov: error: unknown plugin(s) nope; available: static-credential-provider, "
        "docker-credential-helper-provider, docker-credential-credprov, "
        "ecr-credential-provider, auth-provider-gcp, acr-credential-provider",
    ),
}


@pytest.mark.parametrize("argv, line", CLI.values(), ids=CLI.keys())
def test_cli_errors(argv: list[str], line: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 1
    assert capsys.readouterr().err == line + "\n"
