"""One installer image for amd64 and arm64, checked with the real tools that consume it.

``credprov bundle --from-tarball A --from-tarball B --sysroot arm64=ROOT --oci-archive F``
is given two stand-in bundles whose runtimes are real dynamic executables of each
architecture (``/usr/bin/true`` of this machine and of an arm64 Debian root), so each layer
must carry its own architecture's loader and glibc, from this machine and from the arm64
root (``debootstrap --arch=arm64 --include=busybox-static``, cached by
``tests/e2e/noderoot.py``; built under qemu-user-static). Then:

* ``skopeo inspect --raw oci-archive:F`` reads one image index with a manifest per platform;
* ``skopeo copy --all`` pushes it to a registry, which serves the index and each platform;
* ``ctr images import --all-platforms`` into a private containerd accepts it, and ``ctr run
  --platform`` runs each platform's runtime (arm64 under qemu's binfmt handler) with the
  loader and libraries of its own layer, and each platform's busybox.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from credprov.bundle.build import assemble, write_tarball
from credprov.bundle.layout import go_arch
from tests.e2e.containerd import Containerd, require_containerd
from tests.e2e.noderoot import pristine_root
from tests.e2e.registry import Registry, clean_env, require_tools, running_registry

pytestmark = pytest.mark.e2e

REF = "localhost/credprov-plugins-installer:multi-e2e"
ARM64 = Path("/proc/sys/fs/binfmt_misc/qemu-aarch64")


def require_arm64_emulation() -> None:
    require_tools("qemu-aarch64-static", "debootstrap", "skopeo", "docker-registry")
    if go_arch() != "amd64" or not ARM64.exists() or "enabled" not in ARM64.read_text():
        reason = "qemu-aarch64 is not registered with binfmt_misc (see .ci/run)"
        if os.environ.get("CREDPROV_REQUIRE_E2E") == "1":
            pytest.fail(reason)
        pytest.skip(reason)


@pytest.fixture(scope="module")
def arm64_root() -> Path:
    """An arm64 Debian root with busybox-static and glibc: the arm64 layer's sysroot."""
    require_arm64_emulation()
    return pristine_root(arch="arm64", include=("busybox-static",))


def stand_in_bundle(out: Path, arch: str, executable: Path) -> Path:
    """A bundle (laid out by the real ``assemble``) whose runtime is ``executable``."""
    runtime = out / f"runtime-{arch}"
    runtime.mkdir(parents=True)
    shutil.copyfile(executable, runtime / "credprov-plugins")
    (runtime / "credprov-plugins").chmod(0o755)
    bundle, _build_id, _glibc = assemble(runtime, ["static-credential-provider"], out / arch)
    requirements = bundle / "REQUIREMENTS"
    requirements.write_text(
        requirements.read_text().replace(f"linux/{go_arch()};", f"linux/{arch};")
    )
    tarball = out / f"credprov-plugins-0.1.0-linux-{arch}.tar.gz"
    write_tarball(bundle, tarball)
    return tarball


@pytest.fixture(scope="module")
def multi_archive(arm64_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from credprov.cli.main import main

    require_tools("busybox")
    out = tmp_path_factory.mktemp("multi")
    amd64 = stand_in_bundle(out, "amd64", Path("/usr/bin/true").resolve())
    arm64 = stand_in_bundle(out, "arm64", arm64_root / "usr" / "bin" / "true")
    archive = out / "installer.oci.tar"
    argv = ["bundle", "--from-tarball", str(amd64), "--from-tarball", str(arm64),
            "--sysroot", f"arm64={arm64_root}", "--oci-archive", str(archive),
            "--image-ref", REF]  # fmt: skip
    assert main(argv) == 0
    return archive


def skopeo(*args: str) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory(prefix="credprov-skopeo-home-") as home:
        return subprocess.run(
            ["skopeo", "--insecure-policy", *args],
            capture_output=True,
            text=True,
            env=clean_env(Path(home)),
            timeout=120,
            check=False,
        )


def platforms(index: dict[str, object]) -> list[tuple[str, str]]:
    assert index["mediaType"] == "application/vnd.oci.image.index.v1+json"
    return [
        (m["platform"]["os"], m["platform"]["architecture"])  # type: ignore[index]
        for m in index["manifests"]  # type: ignore[attr-defined]
    ]


def test_skopeo_reads_one_index_and_pushes_every_platform(multi_archive: Path) -> None:
    raw = skopeo("inspect", "--raw", f"oci-archive:{multi_archive}")
    assert raw.returncode == 0, raw.stderr
    assert platforms(json.loads(raw.stdout)) == [("linux", "amd64"), ("linux", "arm64")]

    registry: Registry
    with running_registry({}) as registry:
        dest = f"{registry.address}/credprov/installer:multi"
        copied = skopeo("copy", "--all", "--dest-tls-verify=false", "--dest-no-creds",
                        f"oci-archive:{multi_archive}", f"docker://{dest}")  # fmt: skip
        assert copied.returncode == 0, copied.stderr
        served = skopeo("inspect", "--raw", "--tls-verify=false", "--no-creds",
                        f"docker://{dest}")  # fmt: skip
        assert served.returncode == 0, served.stderr
        assert json.loads(served.stdout) == json.loads(raw.stdout)
        for arch in ("amd64", "arm64"):
            config = skopeo("inspect", "--config", "--tls-verify=false", "--no-creds",
                            "--override-arch", arch, f"docker://{dest}")  # fmt: skip
            assert config.returncode == 0, config.stderr
            assert json.loads(config.stdout)["architecture"] == arch


@pytest.fixture(scope="module")
def imported(multi_archive: Path, containerd: Containerd) -> Iterator[Containerd]:
    require_containerd()
    proc = containerd.ctr("images", "import", "--all-platforms", "--snapshotter", "native",
                          str(multi_archive))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    yield containerd


@pytest.mark.parametrize("platform, machine", [("linux/amd64", "x86_64"),
                                               ("linux/arm64", "aarch64")])  # fmt: skip
def test_containerd_imports_it_and_runs_each_platform(
    imported: Containerd, platform: str, machine: str
) -> None:
    listing = imported.ctr("images", "ls")
    line = next(line for line in listing.stdout.splitlines() if line.startswith(REF + " "))
    assert "linux/amd64,linux/arm64" in line

    def run(*command: str) -> subprocess.CompletedProcess[str]:
        name = f"credprov-multi-{uuid.uuid4().hex[:8]}"
        return imported.ctr("run", "--rm", "--snapshotter", "native", "--platform", platform,
                            REF, name, *command)  # fmt: skip

    # The runtime (here `true`) starts with its own layer's loader and glibc.
    runtime = run("/credprov-plugins/runtime/credprov-plugins")
    assert runtime.returncode == 0, runtime.stderr
    uname = run("busybox", "uname", "-m")
    assert (uname.returncode, uname.stdout) == (0, f"{machine}\n"), uname.stderr
