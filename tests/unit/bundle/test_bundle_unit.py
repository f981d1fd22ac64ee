"""credprov.bundle without freezing: the installer script on a stand-in runtime, the OCI
archive's structure and the image's system libraries (the command itself:
tests/unit/bundle/test_bundle_cli.py)."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from credprov.bundle.build import assemble, select_plugins, write_tarball
from credprov.bundle.layout import BundleError
from credprov.bundle.oci import write_oci_archive

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


# The command's error paths: tests/unit/bundle/test_bundle_cli.py.


# -- the doctor in the bundle and the image -------------------------------------------------


def test_multicall_runs_tools_by_name_and_lists_only_plugins(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from credprov.bundle import _multicall

    table = {"static-credential-provider": _multicall.PLUGINS["static-credential-provider"]}
    for argv in (["/opt/credprov-plugins/doctor", "--node-root", "/nonexistent/x"],
                 ["credprov-plugins", "doctor", "--node-root", "/nonexistent/x"]):  # fmt: skip
        monkeypatch.setattr(sys, "argv", argv)
        assert _multicall.main(table) == 2
        assert capsys.readouterr().err == (
            "credprov doctor: error: --node-root /nonexistent/x: not a directory\n"
        )
    monkeypatch.setattr(sys, "argv", ["credprov-plugins", "--list"])
    assert _multicall.main(table) == 0
    assert capsys.readouterr().out == "static-credential-provider\n"
    assert _multicall.TOOLS == {
        "doctor": "credprov.doctor.cli:main",
        "validate-config": "credprov.bundle.validate_config:main",
    }


def test_bundle_links_the_doctor_which_install_never_installs(tmp_path: Path) -> None:
    bundle = fake_bundle(tmp_path)
    assert os.readlink(bundle / "doctor") == "runtime/credprov-plugins"
    ran = subprocess.run([str(bundle / "doctor")], capture_output=True, text=True, check=True)
    assert ran.stdout == "doctor\n"  # the runtime dispatches on this name
    assert (bundle / "PLUGINS").read_text().split() == list(NAMES)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    assert install(bundle, "--list").stdout.split() == list(NAMES)
    assert install(bundle, "--bin-dir", str(bin_dir)).returncode == 0
    assert sorted(p.name for p in bin_dir.iterdir() if not p.name.startswith(".")) == sorted(NAMES)
    # The tarball keeps the link (README: tar xzf, then ./credprov-plugins/doctor).
    tarball = tmp_path / "b.tar.gz"
    write_tarball(bundle, tarball)
    with tarfile.open(tarball) as tar:
        link = tar.getmember("credprov-plugins/doctor")
    assert link.issym() and link.linkname == "runtime/credprov-plugins"


def test_bundle_keeps_grpc_out_and_the_doctors_packages_in() -> None:
    from credprov.bundle.build import EXCLUDES

    assert {"grpc", "credprov.cri.client", "credprov.cli"} <= set(EXCLUDES)
    assert not {"credprov.doctor", "credprov.nodeauth", "credprov.pullmanager",
                "credprov.kubelet"} & set(EXCLUDES)  # fmt: skip


ENTRYPOINT = {
    "unknown command": (["docter"], "credprov-installer: error: unknown command docter: want "
                        "credprov-install (the default) or doctor ARGS"),
    "install takes no arguments": (["credprov-install", "x"], "credprov-installer: error: "
                                   "credprov-install takes no arguments (settings are "
                                   "environment variables)"),
}  # fmt: skip


@pytest.mark.parametrize("argv, line", ENTRYPOINT.values(), ids=ENTRYPOINT.keys())
def test_image_entrypoint_refuses_other_commands(
    tmp_path: Path, argv: list[str], line: str
) -> None:
    bundle = fake_bundle(tmp_path)
    proc = subprocess.run(["sh", str(bundle / "image-entrypoint"), *argv], capture_output=True,
                          text=True, check=False)  # fmt: skip
    assert (proc.returncode, proc.stdout, proc.stderr) == (2, "", line + "\n")


def layer_of(archive: Path) -> dict[str, tarfile.TarInfo | bytes]:
    """The image's one layer: name -> contents (files) or the member (everything else)."""
    with tarfile.open(archive) as tar:
        blobs = {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}  # type: ignore[union-attr]
    manifest_digest = json.loads(blobs["index.json"])["manifests"][0]["digest"]
    manifest = json.loads(blobs["blobs/sha256/" + manifest_digest[7:]])
    layer = gzip.decompress(blobs["blobs/sha256/" + manifest["layers"][0]["digest"][7:]])
    out: dict[str, tarfile.TarInfo | bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(layer)) as tar:
        for member in tar:
            fh = tar.extractfile(member) if member.isfile() else None
            out[member.name] = fh.read() if fh is not None else member
    return out


def dynamic_executable() -> Path:
    """A dynamically linked executable of this machine (``/bin/true``'s coreutils)."""
    from credprov.base.elf import parse

    path = Path(shutil.which("true") or "/bin/true").resolve()
    info = parse(path.read_bytes())
    if info is None or info.interpreter is None:
        pytest.skip(f"{path} is not a dynamically linked ELF executable")
    return path


@pytest.mark.skipif(shutil.which("busybox") is None, reason="busybox not installed")
def test_image_has_the_doctor_on_path_and_the_runtimes_system_libraries(tmp_path: Path) -> None:
    """A stand-in runtime that is a real dynamic executable: the image gets its loader and
    libc from this machine."""
    from credprov.base.elf import parse

    exe = dynamic_executable()
    runtime = tmp_path / "runtime-src"
    runtime.mkdir()
    shutil.copyfile(exe, runtime / "credprov-plugins")
    (runtime / "credprov-plugins").chmod(0o755)
    info = parse(exe.read_bytes())
    assert info is not None and info.interpreter and "libc.so.6" in info.needed
    bundle, _build_id, _glibc = assemble(runtime, NAMES, tmp_path / "out")
    tarball = tmp_path / "b.tar.gz"
    write_tarball(bundle, tarball)
    write_oci_archive(tarball, tmp_path / "image.tar", busybox="/bin/busybox")
    layer = layer_of(tmp_path / "image.tar")
    doctor = layer["bin/doctor"]
    assert isinstance(doctor, tarfile.TarInfo) and doctor.linkname == "../credprov-plugins/doctor"
    install_cmd = layer["bin/credprov-install"]
    assert isinstance(install_cmd, tarfile.TarInfo)
    assert install_cmd.linkname == "../credprov-plugins/image-entrypoint"
    assert layer[info.interpreter.lstrip("/")] == Path(info.interpreter).read_bytes()
    libc = [name for name in layer if name.endswith("/libc.so.6")]
    assert len(libc) == 1 and layer[libc[0]] == Path("/" + libc[0]).read_bytes()
    assert b"nobody:x:65534:65534:" in layer["etc/passwd"]  # type: ignore[operator]


def test_image_copies_only_libraries_the_bundle_does_not_bring() -> None:
    """The executable's libraries always come from the system (the loader finds them before
    the runtime can point at ``_internal/``); a bundled shared object's, only when the
    bundle lacks them."""
    from credprov.bundle.oci import RuntimeNeeds, _library_dirs, system_libraries

    dirs = _library_dirs()
    found = {n: f"{d}/{n}" for n in ("libssl.so.3", "libcrypto.so.3", "libz.so.1")
             for d in reversed(dirs) if os.path.exists(f"{d}/{n}")}  # fmt: skip
    if len(found) < 3:
        pytest.skip("needs libssl.so.3, libcrypto.so.3 and libz.so.1 on this machine")
    runtime = RuntimeNeeds()
    runtime.add("credprov-plugins/runtime/credprov-plugins", dynamic_executable().read_bytes())
    for name in ("libssl.so.3", "libcrypto.so.3", "libz.so.1"):  # libssl needs libcrypto
        runtime.add(f"credprov-plugins/runtime/_internal/{name}", Path(found[name]).read_bytes())
    copied = {path.rsplit("/", 1)[-1] for path in system_libraries(runtime, dirs)}
    assert "libc.so.6" in copied
    assert not {"libssl.so.3", "libcrypto.so.3"} & copied
    runtime.system_needed.add("libz.so.1")  # as the frozen interpreter's zlib module needs it
    assert "libz.so.1" in {p.rsplit("/", 1)[-1] for p in system_libraries(runtime, dirs)}


def test_image_refuses_a_machine_without_the_runtimes_libraries(tmp_path: Path) -> None:
    from credprov.bundle.oci import RuntimeNeeds, system_libraries

    exe = dynamic_executable().read_bytes()
    runtime = RuntimeNeeds()
    runtime.add("credprov-plugins/runtime/credprov-plugins", exe)
    libs = tmp_path / "lib"
    libs.mkdir()
    with pytest.raises(BundleError) as missing:
        system_libraries(runtime, [str(libs)])
    assert str(missing.value).startswith("the bundle's runtime needs lib")
    assert str(missing.value).endswith(f"which is in none of {libs} here: make the image where "
                                       "the bundle was built")  # fmt: skip
    # An older glibc than the runtime was linked against.
    runtime.glibc = (2, 99)
    for name in runtime.system_needed:
        (libs / name).write_bytes(b"GLIBC_2.17\0")
    with pytest.raises(BundleError, match=r"needs glibc >= 2\.99 and .*libc\.so\.6 is glibc "
                       r"2\.17: make the image where the bundle was built"):  # fmt: skip
        system_libraries(runtime, [str(libs)])


def test_elf_reader_never_fails_on_bad_input() -> None:
    from credprov.base.elf import parse

    exe = dynamic_executable().read_bytes()
    info = parse(exe)
    assert info is not None and info.interpreter and "libc.so.6" in info.needed
    assert parse(b"#!/bin/sh\n") is None
    if Path("/bin/busybox").exists():  # Debian's busybox-static: no loader, no libraries
        static = parse(Path("/bin/busybox").read_bytes())
        assert static is not None and (static.interpreter, static.needed) == (None, ())
    for size in (0, 4, 51, 52, 63, 64, 200, 4096, len(exe) // 2):
        parse(exe[:size])  # truncated: an answer or None, never an exception
    garbage = bytearray(exe[:64])
    garbage[32:40] = (2**63).to_bytes(8, "little")  # program headers far past the end
    assert parse(bytes(garbage)) == parse(bytes(garbage))
