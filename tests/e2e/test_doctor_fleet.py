"""The doctor where the plugins run: the bundle's ``doctor`` on a node without Python.

One Python-less ``debootstrap`` root (``tests/e2e/noderoot.py``) is made a kubeadm node: the
bundle unpacked in ``/opt`` and installed with its own ``install`` (under ``chroot``), a
systemd unit with kubeadm's drop-in, ``/etc/default/kubelet`` with the two provider flags, a
KubeletConfiguration, a provider config naming ``static-credential-provider`` with its
credentials file, KEP-2535 records, and the cluster's objects and images for the
preflight. Then the same node is judged three ways, README's fleet paths:

* the installer image in a private containerd, as ``kubectl debug node/NAME
  --profile=sysadmin --image=IMAGE -- doctor --node-root /host`` runs it: privileged, the node's
  ``/`` bind-mounted read-only at ``/host``, ``doctor`` found on the image's ``PATH`` (and
  through the entrypoint, for runtimes that pass ``doctor ...`` as its arguments);
* ``credprov-plugins/doctor --node-root ROOT`` from the unpacked tarball on this machine;
* ``./credprov-plugins/doctor --node-root /`` on the node itself (under ``chroot``: no Python).

Each run must find the kubeadm setup, pass every check but the expected skip, get an answer
from the bundled plugin, print no secret, and leave the root exactly as it was.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import shlex
import stat
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import CANARY
from tests.e2e.containerd import Containerd
from tests.e2e.noderoot import BIN_DIR, chroot, find_python, inside, node_root
from tests.unit.doctor import nodes

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
#: README's fleet commands, as run here: the container's command, ``ctr run``'s flags and
#: the node's ``/`` mount, and the command on the node.
IMAGE_COMMAND = ("doctor", "--node-root", "/host")
RUN_FLAGS = ("--rm", "--privileged")
HOST_MOUNT = "type=bind,src={src},dst=/host,options=rbind:ro"
ON_NODE = ("./credprov-plugins/doctor", "--node-root", "/")
CONFIG = "/etc/kubernetes/credential-provider-config.yaml"
STATIC_FILE = "/etc/credprov/static.yaml"
#: The cluster's objects and the node's images, for the KEP preflight (inside the root).
INPUTS = "/var/tmp/credprov-doctor"
PASSWORD = f"robot-{CANARY}"

#: Check id -> status on the planted node. kep4412.rbac is skipped: no provider has
#: tokenAttributes (the static plugin answers without a service-account token).
EXPECTED = {
    "kubelet.flags": "pass",
    "kubelet.go": "pass",
    "feature-gates": "pass",
    "provider-config.valid": "pass",
    "provider-config.lint": "pass",
    "bin-dir.exec": "pass",
    "plugin.present": "pass",
    "plugin.runnable": "pass",
    "plugin.responds": "pass",
    "image.match": "pass",
    "pull-policy.valid": "pass",
    "pull-records.health": "pass",
    "kep4412.rbac": "skip",
    "kep2535.preflight": "pass",
}


def plant(root: Path, path: str, text: str) -> None:
    """Write ``path`` in the root as a new file: the root is a hard-linked copy of the cached
    one, so an existing file is unlinked first, never written through."""
    target = inside(root, path)
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists() or target.is_symlink():
        target.unlink()
    target.write_text(text)


def plant_kubeadm_node(root: Path) -> None:
    plant(root, "/etc/hostname", f"{nodes.NODE}\n")
    # A node image has no live /proc; this mount table is what bin-dir.exec reads instead
    # (without one it would say "noexec was not checked" and skip).
    plant(root, "/proc/mounts", "/dev/sda1 / ext4 rw,relatime 0 0\n")
    plant(
        root, "/usr/lib/systemd/system/kubelet.service", "[Service]\nExecStart=/usr/bin/kubelet\n"
    )
    # The kubelet's Go build information (kubelet.go reads it; nothing runs it).
    kubelet = inside(root, "/usr/bin/kubelet")
    if kubelet.exists() or kubelet.is_symlink():
        kubelet.unlink()
    nodes.write_kubelet(root)
    plant(
        root,
        "/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf",
        "[Service]\n"
        'Environment="KUBELET_KUBECONFIG_ARGS=--kubeconfig=/etc/kubernetes/kubelet.conf"\n'
        'Environment="KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml"\n'
        "EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env\n"
        "EnvironmentFile=-/etc/default/kubelet\n"
        "ExecStart=\n"
        "ExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS "
        "$KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS\n",
    )
    plant(
        root,
        "/var/lib/kubelet/kubeadm-flags.env",
        'KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///run/containerd/'
        'containerd.sock"\n',
    )
    plant(
        root,
        "/etc/default/kubelet",
        f'KUBELET_EXTRA_ARGS="--image-credential-provider-config={CONFIG} '
        f'--image-credential-provider-bin-dir={BIN_DIR}"\n',
    )
    plant(
        root,
        "/var/lib/kubelet/config.yaml",
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
        "featureGates:\n  KubeletEnsureSecretPulledImages: true\n"
        "imagePullCredentialsVerificationPolicy: NeverVerifyPreloadedImages\n",
    )
    plant(
        root,
        CONFIG,
        "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n"
        "  - name: static-credential-provider\n"
        "    apiVersion: credentialprovider.kubelet.k8s.io/v1\n"
        f'    args: ["--config", "{STATIC_FILE}"]\n'
        '    matchImages: ["registry-a.example.com"]\n'
        '    defaultCacheDuration: "10m"\n',
    )
    plant(
        root,
        STATIC_FILE,
        "apiVersion: credprov.io/v1alpha1\nkind: StaticCredentials\ncredentials:\n"
        f'  - match: ["registry-a.example.com"]\n    username: robot\n    password: {PASSWORD}\n',
    )
    # Root's alone, as on real nodes: the kubelet runs its plugins as root.
    inside(root, STATIC_FILE).chmod(0o600)
    inside(root, STATIC_FILE).parent.chmod(0o700)
    from credprov.pullmanager.fsstore import FSPullRecordsAccessor
    from credprov.pullmanager.types import ImagePullCredentials, ImagePulledRecord

    FSPullRecordsAccessor(
        str(inside(root, "/var/lib/kubelet")), migrate=False
    ).write_image_pulled_record(
        ImagePulledRecord(
            lastUpdatedTime=dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC),
            imageRef=nodes.APP_REF,
            credentialMapping={
                "registry-a.example.com/team/app": ImagePullCredentials(nodePodsAccessible=True)
            },
        )
    )
    inputs = inside(root, INPUTS)
    inputs.mkdir(parents=True)
    nodes.write_objects(inputs / "cluster.json", rbac=False)
    nodes.write_images(inputs / "images.json")


@pytest.fixture(scope="module")
def node(bundle_tarball: Path) -> Iterator[Path]:
    """The planted kubeadm node, with every bundled plugin installed by the bundle's own
    ``install`` on the node (README: tar xzf, then install)."""
    with node_root() as root:
        assert find_python(root) == [], "the node root must not have Python"
        subprocess.run(["tar", "xzf", str(bundle_tarball), "-C", str(inside(root, "/opt"))],
                       check=True)  # fmt: skip
        proc = chroot(root, ["/opt/credprov-plugins/install", "--bin-dir", BIN_DIR])
        assert proc.returncode == 0, proc.stderr
        plant_kubeadm_node(root)
        yield root


def tree_state(root: Path) -> str:
    """A digest of everything under ``root``: paths, types and modes, owners, link targets,
    file sizes, mtimes and contents (symlinks not followed)."""
    digest = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(dirnames + filenames):
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            rel = os.path.relpath(path, root)
            digest.update(f"{rel}\0{st.st_mode:o}\0{st.st_uid}:{st.st_gid}\0".encode())
            if stat.S_ISLNK(st.st_mode):
                digest.update(os.readlink(path).encode())
            elif stat.S_ISREG(st.st_mode):
                digest.update(f"{st.st_size}\0{st.st_mtime_ns}\0".encode())
                with open(path, "rb") as fh:
                    for chunk in iter(lambda: fh.read(1 << 20), b""):
                        digest.update(chunk)
    return digest.hexdigest()


def inputs(root: str) -> list[str]:
    """The doctor's options besides ``--node-root`` for the planted node seen at ``root``."""
    where = f"{root.rstrip('/')}{INPUTS}"
    return ["--image", nodes.APP_IMAGE, "--objects", f"{where}/cluster.json",
            "--node-images", f"{where}/images.json", "-o", "json"]  # fmt: skip


def judge(proc: subprocess.CompletedProcess[str], root: str) -> None:
    """The report of a run on the planted node: the kubeadm setup found, every check as
    :data:`EXPECTED`, no secret printed, exit 0."""
    assert proc.stdout, proc.stderr
    assert CANARY not in proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    setup = doc["node"]
    assert setup["root"] == root
    assert setup["flavor"] == "kubeadm"
    assert setup["imageCredentialProviderBinDir"]["value"] == BIN_DIR
    assert (
        setup["imageCredentialProviderConfig"]["source"]
        == "$KUBELET_EXTRA_ARGS from /etc/default/kubelet"
    )
    assert setup["nodeName"]["value"] == nodes.NODE
    statuses = {c["id"]: c["status"] for c in doc["checks"]}
    assert set(statuses) == set(EXPECTED)
    subjects = {c["id"]: c["subject"] for c in doc["checks"] if c["id"].startswith("plugin.")}
    assert set(subjects.values()) == {"static-credential-provider"}
    runnable = next(c for c in doc["checks"] if c["id"] == "plugin.runnable")
    assert runnable["message"].startswith("ELF 64-bit"), runnable
    others = {k: v for k, v in statuses.items() if k != "plugin.responds"}
    assert others == {k: v for k, v in EXPECTED.items() if k != "plugin.responds"}, doc["checks"]
    # Run by its node path (inside the root), the multicall runtime dispatches on its name.
    responds = next(c for c in doc["checks"] if c["id"] == "plugin.responds")
    assert responds["status"] == "pass", responds
    repo = nodes.APP_IMAGE.rsplit(":", 1)[0]  # the request carries the repository
    assert responds["message"].startswith(f"for {repo}: answered in "), responds
    assert proc.returncode == 0, proc.stderr


def run_image(
    containerd: Containerd, ref: str, root: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    """``ctr run`` of the installer image with the node's ``/`` read-only at ``/host`` and
    ``args`` as the container's command (README: the ``kubectl debug`` equivalent)."""
    return containerd.ctr("run", *RUN_FLAGS, "--snapshotter", "native",
                          "--mount", HOST_MOUNT.format(src=root),
                          ref, f"credprov-doctor-{uuid.uuid4().hex[:8]}", *args)  # fmt: skip


def test_doctor_in_the_installer_image_on_the_read_only_host(
    containerd: Containerd, installer_ref: str, node: Path
) -> None:
    before = tree_state(node)
    proc = run_image(containerd, installer_ref, node, *IMAGE_COMMAND, *inputs("/host"))
    assert tree_state(node) == before
    judge(proc, "/host")


def test_image_entrypoint_runs_the_doctor_and_refuses_what_it_cannot(
    containerd: Containerd, installer_ref: str, node: Path
) -> None:
    # `doctor ARGS` given to the entrypoint (runtimes that keep the image's entrypoint).
    entry = "/credprov-plugins/image-entrypoint"
    proc = run_image(containerd, installer_ref, node, entry, "doctor", "--node-root", "/host",
                     "--no-exec", "-o", "json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["node"]["flavor"] == "kubeadm"
    assert {c["id"]: c["status"] for c in doc["checks"]}["plugin.responds"] == "skip"

    # No CRI client in the bundle: one line, exit 2, before anything runs.
    cri = run_image(containerd, installer_ref, node, "doctor", "--node-root", "/host", "--cri",
                    "unix:///run/containerd/containerd.sock")  # fmt: skip
    assert (cri.returncode, cri.stdout) == (2, "")
    assert cri.stderr == (
        "credprov doctor: error: --cri needs the credprov CLI with the cri extra; pass "
        "--node-images FILE (crictl images -o json)\n"
    )
    unknown = run_image(containerd, installer_ref, node, entry, "docter")
    assert unknown.returncode == 2
    assert unknown.stderr.strip().splitlines() == [
        "credprov-installer: error: unknown command docter: want credprov-install (the "
        "default) or doctor ARGS"
    ]


def test_doctor_from_the_unpacked_tarball_on_this_machine(
    bundle_tarball: Path, node: Path, tmp_path: Path
) -> None:
    subprocess.run(["tar", "xzf", str(bundle_tarball), "-C", str(tmp_path)], check=True)
    doctor = tmp_path / "credprov-plugins" / "doctor"
    assert os.readlink(doctor) == "runtime/credprov-plugins"
    before = tree_state(node)
    proc = subprocess.run([str(doctor), "--node-root", str(node), *inputs(str(node))], capture_output=True,
                          text=True, timeout=120, check=False)  # fmt: skip
    assert tree_state(node) == before
    judge(proc, str(node))
    # `credprov-plugins/runtime/credprov-plugins doctor ARGS` is the same program.
    runtime = tmp_path / "credprov-plugins" / "runtime" / "credprov-plugins"
    same = subprocess.run([str(runtime), "doctor", "--node-root", str(node), "--no-exec"],
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert same.returncode == 0, same.stderr
    assert same.stdout.startswith("node\n  root: ")


def test_doctor_on_the_node_itself_without_python(node: Path) -> None:
    """README: ``./credprov-plugins/doctor --node-root /`` where the tarball was unpacked."""
    before = tree_state(node)
    args = shlex.join([*ON_NODE, *inputs("/")])
    proc = chroot(node, ["sh", "-c", f"cd /opt && {args}"])
    assert tree_state(node) == before
    judge(subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(),
                                      proc.stderr.decode()), "/")  # fmt: skip
    # The doctor is not a plugin: install neither lists nor installs it.
    listed = chroot(node, ["/opt/credprov-plugins/install", "--list"])
    assert "doctor" not in listed.stdout.decode().split()
    assert not inside(node, f"{BIN_DIR}/doctor").exists()


def test_readme_fleet_commands_are_the_ones_run_here() -> None:
    from credprov import __version__

    readme = (REPO / "README.md").read_text()
    section = readme.split("## Diagnose a node", 1)[1].split("\n## ", 1)[0]
    block = section.split("**On the nodes themselves**", 1)[1].split("```sh\n", 1)[1]
    lines = block.split("```", 1)[0].replace("\\\n", " ").splitlines()
    on_node, kubectl, ctr = [shlex.split(ln) for ln in lines if ln and not ln.startswith("#")]
    assert tuple(on_node) == ON_NODE
    assert kubectl[:3] == ["kubectl", "debug", "node/NAME"] and "--profile=sysadmin" in kubectl
    assert tuple(kubectl[kubectl.index("--") + 1 :]) == IMAGE_COMMAND
    ref = f"localhost/credprov-plugins-installer:{__version__}"
    assert ctr == ["ctr", "-n", "k8s.io", "run", *RUN_FLAGS, "--mount",
                   HOST_MOUNT.format(src="/"), ref, "credprov-doctor", *IMAGE_COMMAND]  # fmt: skip
