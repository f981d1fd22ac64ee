"""The installer image on a real containerd: import it, run it against a node root's bin dir.

``credprov bundle --oci-archive`` is imported with ``ctr images import`` into a private
containerd (``tests/e2e/containerd.py``) and run with ``ctr run``, the Python-less root's bin
dir bind-mounted at ``/host/bin`` and a config directory at ``/host/config``, as the
DaemonSet in ``deploy/`` mounts them. Then the installed plugins run inside the root.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from credprov.bundle._multicall import PLUGINS
from tests.e2e.containerd import Containerd
from tests.e2e.noderoot import BIN_DIR, chroot, inside, node_root

pytestmark = pytest.mark.e2e

CONFIG = (
    "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n"
    "  - name: static-credential-provider\n"
    "    apiVersion: credentialprovider.kubelet.k8s.io/v1\n"
    '    args: ["--config", "/etc/credprov/static.yaml"]\n'
    '    matchImages: ["registry.example.com"]\n    defaultCacheDuration: "1m"'
)


@pytest.fixture(scope="module")
def root() -> Iterator[Path]:
    with node_root() as node:
        inside(node, "/etc/kubernetes/credential-providers").mkdir(parents=True)
        yield node


def run_image(
    containerd: Containerd,
    ref: str,
    mounts: dict[str, str],
    env: dict[str, str],
    command: tuple[str, ...] = (),
) -> subprocess.CompletedProcess[str]:
    """``ctr run`` of the image: its entrypoint, or ``command`` (looked up on its PATH)."""
    args = ["run", "--rm", "--snapshotter", "native"]
    for dst, src in mounts.items():
        ro = dst.endswith(":ro")
        dst = dst.removesuffix(":ro")
        opts = "rbind:ro" if ro else "rbind:rw"
        args += ["--mount", f"type=bind,src={src},dst={dst},options={opts}"]
    for key, value in env.items():
        args += ["--env", f"{key}={value}"]
    return containerd.ctr(*args, ref, f"credprov-installer-{uuid.uuid4().hex[:8]}", *command)


def test_image_installs_plugins_and_config_then_changes_nothing(
    containerd: Containerd, installer_ref: str, root: Path
) -> None:
    bin_dir = inside(root, BIN_DIR)
    config_dir = inside(root, "/etc/kubernetes/credential-providers")
    (config_dir / "other.yaml").write_text("# someone else's providers\n")
    mounts = {"/host/bin": str(bin_dir), "/host/config": str(config_dir)}
    env = {"PLUGINS": "static-credential-provider,ecr-credential-provider",
           "CREDPROV_CONFIG": CONFIG}  # fmt: skip

    first = run_image(containerd, installer_ref, mounts, env)
    assert first.returncode == 0, first.stderr
    out = first.stdout.splitlines()
    assert out[0].startswith("unpacked: /host/bin/.credprov-plugins-")
    assert out[1:] == [
        "installed: /host/bin/static-credential-provider",
        "installed: /host/bin/ecr-credential-provider",
        "installed: /host/config/credprov-plugins.yaml",
    ]
    # The installer is also a command on the image's PATH (as `doctor` is).
    second = run_image(containerd, installer_ref, mounts, env, ("credprov-install",))
    assert second.returncode == 0, second.stderr
    assert second.stdout.splitlines() == [
        "unchanged: /host/bin/static-credential-provider",
        "unchanged: /host/bin/ecr-credential-provider",
        "unchanged: /host/config/credprov-plugins.yaml",
    ]
    assert (config_dir / "other.yaml").read_text() == "# someone else's providers\n"

    # The plugins it installed run on the node (inside the root), and the config it wrote
    # is one the kubelet accepts.
    static = inside(root, "/etc/credprov/static.yaml")
    static.parent.mkdir(parents=True, exist_ok=True)
    static.write_text(
        "apiVersion: credprov.io/v1alpha1\nkind: StaticCredentials\ncredentials:\n"
        '  - match: ["registry.example.com"]\n    username: robot\n    password: pw\n'
    )
    req = json.dumps({"kind": "CredentialProviderRequest", "image": "registry.example.com/a",
                      "apiVersion": "credentialprovider.kubelet.k8s.io/v1"}).encode()  # fmt: skip
    proc = chroot(root, [f"{BIN_DIR}/static-credential-provider", "--config",
                         "/etc/credprov/static.yaml"], stdin=req)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["auth"]["registry.example.com"]["username"] == "robot"
    ecr = chroot(root, [f"{BIN_DIR}/ecr-credential-provider", "--version"])
    assert ecr.returncode == 0 and ecr.stdout.startswith(b"ecr-credential-provider ")
    assert sorted(p.name for p in bin_dir.iterdir() if not p.name.startswith(".")) == sorted(
        ["static-credential-provider", "ecr-credential-provider"]
    )
    from credprov.credentialprovider.plugin.config import load_config

    config, _hash = load_config(str(config_dir / "credprov-plugins.yaml"))
    assert [p.name for p in config.providers] == ["static-credential-provider"]


def test_missing_or_read_only_mounts_fail_with_one_line(
    containerd: Containerd, installer_ref: str, root: Path, tmp_path: Path
) -> None:
    missing = run_image(containerd, installer_ref, {}, {})
    assert missing.returncode != 0
    assert missing.stderr.strip().splitlines()[-1] == (
        "credprov-installer: error: /host/bin is not mounted: mount the kubelet's plugin "
        "bin dir there (hostPath)"
    )
    ro = run_image(containerd, installer_ref, {"/host/bin:ro": str(tmp_path)}, {})
    assert ro.returncode != 0
    assert ro.stderr.strip().splitlines()[-1] == (
        "credprov-installer: error: /host/bin is read-only: mount the kubelet's plugin bin "
        "dir read-write"
    )
    no_config = run_image(containerd, installer_ref, {"/host/bin": str(tmp_path)},
                          {"CREDPROV_CONFIG": CONFIG, "PLUGINS": "static-credential-provider"})  # fmt: skip
    assert no_config.returncode != 0
    assert "/host/config is not mounted" in no_config.stderr.strip().splitlines()[-1]
    assert set(PLUGINS) >= {p.name for p in tmp_path.iterdir() if not p.name.startswith(".")}
