"""The arm64 bundle on an arm64 node without Python, on this machine under qemu.

``credprov bundle --arch arm64`` (``arm64_bundle_tarball``) is unpacked into a
``debootstrap --arch=arm64 --variant=minbase`` root (glibc, zlib, dash; no Python) and
everything ``tests/e2e/test_bundle.py`` checks on the amd64 root runs here again, the same
test functions with this module's ``root`` fixture: ``install`` under ``chroot``, every plugin
answering a CredentialProviderRequest (static with a canary password, ECR against moto, GCP
against a metadata server, ACR failing exactly as the venv plugin does, the docker helper
bridges), the engine and ``plugin test`` driving them, ``--force`` and ``--uninstall``.
Under ``chroot`` the kernel hands every arm64 executable to qemu-aarch64 (binfmt_misc), as an
arm64 node's kernel would run it natively. What is arm64-specific is checked on top: the
runtime's ELF machine, the tarball's name and ``REQUIREMENTS``.
"""

from __future__ import annotations

import struct
import subprocess
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e import test_bundle as amd64
from tests.e2e.noderoot import chroot, find_python, inside, node_root
from tests.e2e.test_bundle import STATIC_FILE, STATIC_YAML

pytestmark = pytest.mark.e2e

EM_AARCH64 = 183

# test_bundle's tests, run again with this module's ``root``, in their order there: they
# share one installed root (the first installs, the last uninstalls; the static plugin's
# first answer must not come from the cache an earlier test filled).
installed = amd64.installed
test_install_in_the_root_then_again_changes_nothing = (
    amd64.test_install_in_the_root_then_again_changes_nothing
)
test_static_plugin_answers_as_the_venv_one_and_caches = (
    amd64.test_static_plugin_answers_as_the_venv_one_and_caches
)
test_engine_drives_the_installed_plugins = amd64.test_engine_drives_the_installed_plugins
test_plugin_test_results_match_the_venv_plugin = (
    amd64.test_plugin_test_results_match_the_venv_plugin
)
test_ecr_plugin_in_the_root_against_moto = amd64.test_ecr_plugin_in_the_root_against_moto
test_gcp_plugin_in_the_root_against_a_metadata_server = (
    amd64.test_gcp_plugin_in_the_root_against_a_metadata_server
)
test_acr_plugin_in_the_root_fails_as_the_venv_plugin = (
    amd64.test_acr_plugin_in_the_root_fails_as_the_venv_plugin
)
test_docker_helper_plugins_in_the_root = amd64.test_docker_helper_plugins_in_the_root
test_force_uninstall_and_foreign_files = amd64.test_force_uninstall_and_foreign_files


@pytest.fixture(scope="module")
def root(arm64_bundle_tarball: Path) -> Iterator[Path]:
    """A Python-less arm64 node root with the arm64 bundle unpacked in /opt."""
    with node_root(arch="arm64") as node:
        assert find_python(node) == [], "the node root must not have Python"
        probe = chroot(node, ["uname", "-m"])  # the root's own coreutils, run by qemu
        assert probe.stdout == b"aarch64\n", probe.stderr
        opt = inside(node, "/opt")
        subprocess.run(["tar", "xzf", str(arm64_bundle_tarball), "-C", str(opt)], check=True)
        static = inside(node, STATIC_FILE)
        static.parent.mkdir(parents=True, exist_ok=True)
        static.write_text(STATIC_YAML)
        yield node


def elf_machine(path: Path) -> int:
    with path.open("rb") as fh:
        header = fh.read(20)
    assert header[:4] == b"\x7fELF", path
    endian = "<" if header[5] == 1 else ">"
    (machine,) = struct.unpack_from(endian + "H", header, 18)
    return int(machine)


def test_the_arm64_tarball_says_arm64_and_holds_aarch64_code(
    arm64_bundle_tarball: Path, tmp_path: Path
) -> None:
    from credprov.bundle.build import tarball_name, unpack

    assert arm64_bundle_tarball.name == tarball_name("arm64")
    assert arm64_bundle_tarball.name.endswith("-linux-arm64.tar.gz")
    with tarfile.open(arm64_bundle_tarball) as tar:
        names = set(tar.getnames())
    assert {"credprov-plugins/install", "credprov-plugins/runtime/credprov-plugins"} <= names
    bundle = unpack(arm64_bundle_tarball, tmp_path)
    assert (bundle / "REQUIREMENTS").read_text().startswith("linux/arm64; glibc >= 2.")
    runtime = bundle / "runtime"
    assert elf_machine(runtime / "credprov-plugins") == EM_AARCH64
    # Every shared library the runtime carries is aarch64 too (none leaked in from the host).
    libraries = [p for p in runtime.rglob("*.so*") if p.is_file() and not p.is_symlink()]
    assert libraries and {elf_machine(p) for p in libraries} == {EM_AARCH64}


def test_the_runtime_lists_its_plugins_on_the_arm64_node(root: Path) -> None:
    proc = chroot(root, ["/opt/credprov-plugins/runtime/credprov-plugins", "--list"])
    assert proc.returncode == 0, proc.stderr
    names = inside(root, "/opt/credprov-plugins/PLUGINS").read_text().split()
    assert proc.stdout.decode().split() == names


def test_the_build_root_has_what_an_arm64_installer_image_takes(
    arm64_bundle_tarball: Path,
) -> None:
    """``cross.build_root`` is the arm64 sysroot of the installer image: a static arm64
    busybox and arm64 glibc (cached: the tarball fixture made or reused it)."""
    from credprov.base.elf import parse
    from credprov.bundle.cross import build_root
    from credprov.bundle.layout import go_arch

    if go_arch() == "arm64":
        pytest.skip("an arm64 machine takes its own busybox")
    sysroot = build_root("arm64")
    busybox = sysroot / "bin" / "busybox"
    assert elf_machine(busybox) == EM_AARCH64
    info = parse(busybox.read_bytes())
    assert info is not None and info.interpreter is None and info.needed == ()
    for library in ("lib/ld-linux-aarch64.so.1", "lib/aarch64-linux-gnu/libc.so.6"):
        assert elf_machine(sysroot / library) == EM_AARCH64
