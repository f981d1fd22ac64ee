"""The installer image on a real containerd: import it, run it against a node root's bin dir.

``credprov bundle --oci-archive`` is imported with ``ctr images import`` into a private
containerd (``tests/e2e/containerd.py``) and run with ``ctr run --read-only``, mounted as the
DaemonSet in ``deploy/`` mounts it: the Python-less root's bin dir at ``/host/bin``, a config
directory at ``/host/config``, the root itself read-only at ``/host/root`` (``HOST_BIN_DIR``
set to the bin dir's path in it) and a private directory at ``/tmp``. Then the installed
plugins run inside the root, and the kubelet-exact loader reads the config directory.

The refusals that matter most for a fleet run here on the real image too: a config the
kubelet would refuse (checked by the image's own ``validate-config``), and a node whose
glibc (Debian bullseye's 2.31) cannot run the runtime (checked by running it inside the
node's root): one line, exit 1, nothing installed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tarfile
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from credprov.bundle._multicall import PLUGINS
from credprov.credentialprovider.plugin.config import load_config
from tests.e2e.containerd import Containerd
from tests.e2e.noderoot import BIN_DIR, chroot, glibcless_root, inside, node_root

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]

CONFIG_DIR = "/etc/kubernetes/credential-providers"
CONFIG = (
    "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n"
    "  - name: static-credential-provider\n"
    "    apiVersion: credentialprovider.kubelet.k8s.io/v1\n"
    '    args: ["--config", "/etc/credprov/static.yaml"]\n'
    '    matchImages: ["registry.example.com"]\n    defaultCacheDuration: "1m"'
)
#: A provider config of the node's own (EKS's nodeadm writes one like it as config.json).
NODE_CONFIG = json.dumps({
    "apiVersion": "kubelet.config.k8s.io/v1", "kind": "CredentialProviderConfig",
    "providers": [{"name": "ecr-credential-provider", "matchImages": ["*.dkr.ecr.*.amazonaws.com"],
                   "apiVersion": "credentialprovider.kubelet.k8s.io/v1",
                   "defaultCacheDuration": "12h"}]})  # fmt: skip


@pytest.fixture(scope="module")
def root() -> Iterator[Path]:
    with node_root() as node:
        inside(node, CONFIG_DIR).mkdir(parents=True)
        yield node


@pytest.fixture
def fresh_root() -> Iterator[Path]:
    """A node root of the test's own (bookworm: the runtime's glibc is there)."""
    with node_root() as node:
        inside(node, CONFIG_DIR).mkdir(parents=True)
        yield node


def host_mounts(root: Path) -> dict[str, str]:
    """The DaemonSet's mounts of ``root``: bin dir, config directory, and / read-only."""
    return {"/host/bin": str(inside(root, BIN_DIR)), "/host/config": str(inside(root, CONFIG_DIR)),
            "/host/root:ro": str(root)}  # fmt: skip


def run_image(
    containerd: Containerd,
    ref: str,
    mounts: dict[str, str],
    env: dict[str, str],
    command: tuple[str, ...] = (),
    flags: tuple[str, ...] = (),
) -> subprocess.CompletedProcess[str]:
    """``ctr run --read-only`` of the image with a private ``/tmp`` (the DaemonSet's
    emptyDir): its entrypoint, or ``command`` (looked up on its PATH). ``HOST_BIN_DIR`` is
    :data:`BIN_DIR` whenever ``/host/root`` is mounted and ``env`` does not say otherwise.
    ``flags`` go to ``ctr run`` (capabilities)."""
    tmp = tempfile.mkdtemp(prefix="credprov-image-tmp.")
    args = ["run", "--rm", "--read-only", "--snapshotter", "native", *flags]
    for dst, src in {**mounts, "/tmp": tmp}.items():
        ro = dst.endswith(":ro")
        dst = dst.removesuffix(":ro")
        opts = "rbind:ro" if ro else "rbind:rw"
        args += ["--mount", f"type=bind,src={src},dst={dst},options={opts}"]
    if "/host/root:ro" in mounts and "HOST_BIN_DIR" not in env:
        env = {**env, "HOST_BIN_DIR": BIN_DIR}
    for key, value in env.items():
        args += ["--env", f"{key}={value}"]
    try:
        return containerd.ctr(*args, ref, f"credprov-installer-{uuid.uuid4().hex[:8]}", *command)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_the_daemonsets_capabilities_are_enough_and_narrowing_prunes(
    containerd: Containerd, installer_ref: str, fresh_root: Path
) -> None:
    """deploy/base: all capabilities dropped but SYS_CHROOT (the on-node check's chroot);
    PLUGINS narrowed later removes the plugin it no longer lists."""
    import yaml

    from tests.e2e.test_doctor_fleet_matrix import CONTAINERD_DEFAULT_CAPS

    ds = yaml.safe_load((REPO / "deploy/base/daemonset.yaml").read_text())
    (init,) = ds["spec"]["template"]["spec"]["initContainers"]
    caps = init["securityContext"]["capabilities"]
    assert caps["drop"] == ["ALL"]
    keep = {f"CAP_{c}" for c in caps["add"]}
    assert keep == {"CAP_SYS_CHROOT"}
    flags = tuple(a for c in CONTAINERD_DEFAULT_CAPS if c not in keep for a in ("--cap-drop", c))
    env = {"PLUGINS": "static-credential-provider,ecr-credential-provider",
           "CREDPROV_CONFIG": CONFIG}  # fmt: skip
    first = run_image(containerd, installer_ref, host_mounts(fresh_root), env, flags=flags)
    assert first.returncode == 0, first.stderr
    bin_dir = inside(fresh_root, BIN_DIR)
    assert visible(bin_dir) == ["ecr-credential-provider", "static-credential-provider"]
    narrowed = run_image(containerd, installer_ref, host_mounts(fresh_root),
                         {**env, "PLUGINS": "static-credential-provider"}, flags=flags)  # fmt: skip
    assert narrowed.returncode == 0, narrowed.stderr
    assert "uninstalled: /host/bin/ecr-credential-provider (not in the plugins named, --prune)" in (
        narrowed.stdout.splitlines()
    )
    assert visible(bin_dir) == ["static-credential-provider"]


def visible(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if not p.name.startswith("."))


def test_image_installs_plugins_and_config_then_changes_nothing(
    containerd: Containerd, installer_ref: str, root: Path
) -> None:
    bin_dir = inside(root, BIN_DIR)
    config_dir = inside(root, CONFIG_DIR)
    (config_dir / "node.json").write_text(NODE_CONFIG)  # someone else's providers
    env = {"PLUGINS": "static-credential-provider,ecr-credential-provider",
           "CREDPROV_CONFIG": CONFIG}  # fmt: skip

    first = run_image(containerd, installer_ref, host_mounts(root), env)
    assert first.returncode == 0, first.stderr
    out = first.stdout.splitlines()
    assert out[0].startswith("unpacked: /host/bin/.credprov-plugins-")
    assert out[1:] == [
        "installed: /host/bin/static-credential-provider",
        "installed: /host/bin/ecr-credential-provider",
        "installed: /host/config/credprov-plugins.yaml",
    ]
    # The installer is also a command on the image's PATH (as `doctor` is).
    second = run_image(containerd, installer_ref, host_mounts(root), env, ("credprov-install",))
    assert second.returncode == 0, second.stderr
    assert second.stdout.splitlines() == [
        "unchanged: /host/bin/static-credential-provider",
        "unchanged: /host/bin/ecr-credential-provider",
        "unchanged: /host/config/credprov-plugins.yaml",
    ]
    assert (config_dir / "node.json").read_text() == NODE_CONFIG

    # The plugins it installed run on the node (inside the root), and the config directory
    # it wrote into is one the kubelet accepts.
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
    assert visible(bin_dir) == sorted(["static-credential-provider", "ecr-credential-provider"])
    config, _hash = load_config(str(config_dir))
    assert [p.name for p in config.providers] == [
        "static-credential-provider", "ecr-credential-provider"]  # fmt: skip


REFUSED = {
    "wrong apiVersion": (
        {"CREDPROV_CONFIG": CONFIG.replace("kubelet.config.k8s.io/v1", "kubelet.config.k8s.io/v1beta9", 1)},
        1, "credprov-installer: error: CREDPROV_CONFIG would break the kubelet's config "
        'directory: error decoding config "/host/config/credprov-plugins.yaml": no kind '
        '"CredentialProviderConfig" is registered for version "kubelet.config.k8s.io/v1beta9" '
        'in scheme "pkg/credentialprovider/plugin/plugin.go:69"; nothing was changed'),
    "name another file has": (
        {"CREDPROV_CONFIG": CONFIG.replace("static-credential-provider", "ecr-credential-provider")},
        1, "credprov-installer: error: CREDPROV_CONFIG would break the kubelet's config "
        'directory: duplicate provider name "ecr-credential-provider" found in configuration '
        'file(s) (in "/host/config/credprov-plugins.yaml" and "/host/config/node.json"); '
        "nothing was changed"),
    "PLUGINS as an option": (
        {"PLUGINS": "--bin-dir=/tmp"}, 2,
        "credprov-installer: error: PLUGINS holds plugin names only, got --bin-dir=/tmp"),
}  # fmt: skip


@pytest.mark.parametrize("env, code, line", REFUSED.values(), ids=REFUSED.keys())
def test_image_refuses_what_would_break_the_kubelet_and_changes_nothing(
    containerd: Containerd,
    installer_ref: str,
    fresh_root: Path,
    env: dict[str, str],
    code: int,
    line: str,
) -> None:
    config_dir = inside(fresh_root, CONFIG_DIR)
    (config_dir / "node.json").write_text(NODE_CONFIG)
    proc = run_image(containerd, installer_ref, host_mounts(fresh_root),
                     {"PLUGINS": "static-credential-provider", **env})  # fmt: skip
    assert (proc.returncode, proc.stdout, proc.stderr) == (code, "", line + "\n")
    assert list(inside(fresh_root, BIN_DIR).iterdir()) == []
    assert [p.name for p in config_dir.iterdir()] == ["node.json"]


def bundle_requirement(tarball: Path) -> str:
    """The glibc the bundle needs, from its REQUIREMENTS (``glibc >= X.Y``)."""
    with tarfile.open(tarball) as tar:
        fh = tar.extractfile("credprov-plugins/REQUIREMENTS")
        assert fh is not None
        text = fh.read().decode()
    return text.split("glibc >= ", 1)[1].split(";", 1)[0]


def test_image_refuses_a_node_whose_glibc_cannot_run_the_runtime(
    containerd: Containerd, installer_ref: str, bundle_tarball: Path
) -> None:
    """A node without glibc (below the 2.17 floor; bullseye's 2.31 runs the runtime): the
    runtime is run inside the node's root before any name is linked, so the node keeps what
    it had, and the refusal names the floor."""
    needed = bundle_requirement(bundle_tarball)
    assert needed.startswith("2.17 ")
    with glibcless_root() as old:
        inside(old, CONFIG_DIR).mkdir(parents=True)
        proc = run_image(containerd, installer_ref, host_mounts(old),
                         {"PLUGINS": "static-credential-provider", "CREDPROV_CONFIG": CONFIG})  # fmt: skip
        lines = proc.stderr.splitlines()
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert len(lines) == 1, proc.stderr
        assert "cannot run on this node" in lines[0] and f"glibc >= {needed}" in lines[0]
        assert list(inside(old, BIN_DIR).iterdir()) == []  # no name, no runtime dir
        assert list(inside(old, CONFIG_DIR).iterdir()) == []


def test_image_installs_beside_the_nodes_own_plugin_and_uninstalls_config_first(
    containerd: Containerd, installer_ref: str, fresh_root: Path
) -> None:
    """EKS's layout: the node's own ecr-credential-provider and its config.json in one
    directory; ours as credprov-ecr-credential-provider with a JSON config of our own, which
    is updated and uninstalled (ownership without a comment marker)."""
    bin_dir = inside(fresh_root, BIN_DIR)
    config_dir = inside(fresh_root, CONFIG_DIR)
    own = bin_dir / "ecr-credential-provider"
    own.write_text("#!/bin/sh\necho node's own\n")
    own.chmod(0o755)
    (config_dir / "config.json").write_text(NODE_CONFIG)
    ours = json.loads(NODE_CONFIG)
    ours["providers"][0]["name"] = "credprov-ecr-credential-provider"
    env = {"PLUGINS": "ecr-credential-provider", "NAME_PREFIX": "credprov-",
           "CREDPROV_CONFIG": json.dumps(ours), "CREDPROV_CONFIG_NAME": "credprov.json"}  # fmt: skip
    mounts = host_mounts(fresh_root)

    first = run_image(containerd, installer_ref, mounts, env)
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines()[1:] == [
        "installed: /host/bin/credprov-ecr-credential-provider",
        "installed: /host/config/credprov.json",
    ]
    ran = chroot(fresh_root, [f"{BIN_DIR}/credprov-ecr-credential-provider", "--version"])
    assert ran.returncode == 0 and ran.stdout.startswith(b"ecr-credential-provider "), ran.stderr
    config, _hash = load_config(str(config_dir))
    assert sorted(p.name for p in config.providers) == [
        "credprov-ecr-credential-provider", "ecr-credential-provider"]  # fmt: skip

    ours["providers"][0]["defaultCacheDuration"] = "6h"
    update = run_image(
        containerd, installer_ref, mounts, {**env, "CREDPROV_CONFIG": json.dumps(ours)}
    )
    assert update.returncode == 0, update.stderr
    assert update.stdout.splitlines()[-1] == "updated: /host/config/credprov.json"

    gone = run_image(containerd, installer_ref, mounts, {**env, "UNINSTALL": "1"})
    assert gone.returncode == 0, gone.stderr
    assert gone.stdout.splitlines()[:2] == [
        "uninstalled: /host/config/credprov.json",
        "uninstalled: /host/bin/credprov-ecr-credential-provider",
    ]
    assert visible(bin_dir) == ["ecr-credential-provider"]
    assert own.read_text() == "#!/bin/sh\necho node's own\n"
    assert [p.name for p in config_dir.iterdir()] == ["config.json"]
    assert not [p for p in bin_dir.iterdir() if p.name.startswith(".credprov-plugins-")]


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
    no_root = run_image(containerd, installer_ref, {"/host/bin": str(tmp_path)}, {})
    assert (no_root.returncode, no_root.stderr) == (1, (
        "credprov-installer: error: /host/root is not mounted: mount the node's / there "
        "read-only (the runtime is run on the node before any plugin is linked)\n"))  # fmt: skip
    assert set(PLUGINS) >= {p.name for p in tmp_path.iterdir() if not p.name.startswith(".")}
    assert list(tmp_path.iterdir()) == []
