"""The eks-nodeadm profile on a node laid out as nodeadm lays it out, under containerd.

The node is a Python-less bullseye root (``tests/e2e/noderoot.py``; glibc 2.31, older than
Amazon Linux 2023's 2.34, which the bundle's 2.17 floor runs on) with nodeadm's files
planted (``tests/unit/doctor/nodes.py::eks_nodeadm_node``): the AMI's
``ecr-credential-provider`` (a stand-in sh script with a fixed answer) and nodeadm's
``config.json`` in ``/etc/eks/image-credential-provider``, and the kubelet's flags in
``/etc/eks/kubelet/environment`` with the NodeConfig flag that points the kubelet at that
directory appended. The DaemonSet of ``deploy/profiles/eks-nodeadm`` (built with
``tests/kustomize.py``) is turned into ``ctr run``: exactly its init container's mounts
(hostPaths inside the root, the emptyDir as a temporary directory, ``--read-only`` for its
read-only root filesystem) and environment (``CREDPROV_CONFIG`` from the operator's
ConfigMap made of the profile's example ``credprov-plugins.yaml``). Then: the AMI's plugin
and config are untouched, ours answer under ``chroot`` as ``credprov-<name>``, credprov's
engine (standing in for the kubelet) reading the config *directory* resolves an ECR image
through the AMI's provider and a private registry's through ours, and the bundle's doctor
on that root finds no failing provider check.
"""

from __future__ import annotations

import json
import os
import subprocess
import tarfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from credprov.bundle._multicall import PLUGINS
from tests import kustomize
from tests.conftest import CANARY
from tests.e2e.containerd import Containerd
from tests.e2e.noderoot import chroot, find_python, inside, node_root
from tests.unit.doctor import nodes

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
PROFILE = REPO / "deploy" / "profiles" / "eks-nodeadm"
G = "credentialprovider.kubelet.k8s.io"
ECR_REGISTRY = "123456789012.dkr.ecr.us-east-1.amazonaws.com"
ECR_IMAGE = f"{ECR_REGISTRY}/team/app:v1"
PRIVATE_IMAGE = "registry.example.com/team/app:v1"
ECR_TOKEN = f"ecr-token-{CANARY}"
PASSWORD = f"robot-{CANARY}"
STATIC_FILE = "/etc/credprov/static-credentials.yaml"  # the example config's --config
ECR_ANSWER = json.dumps({
    "kind": "CredentialProviderResponse", "apiVersion": f"{G}/v1", "cacheKeyType": "Registry",
    "cacheDuration": "1m", "auth": {nodes.EKS_ECR_PATTERNS[0]: {"username": "AWS",
                                                                  "password": ECR_TOKEN}},
})  # fmt: skip
#: The AMI's plugin, as far as the kubelet can tell: reads the request, answers for any ECR
#: registry of the commercial partition (a glob auth key, so also the doctor's sample image).
AMI_ECR_PLUGIN = f"#!/bin/sh\ncat >/dev/null\nprintf '%s\\n' '{ECR_ANSWER}'\n"
#: What nodeadm appends for NodeConfig ``spec.kubelet.flags`` (deploy/README.md, step 4).
POINT_KUBELET = f"--image-credential-provider-config={nodes.EKS_BIN}"


def plant(root: Path, path: str, text: str, mode: int = 0o644) -> None:
    nodes.write(root, path, text, mode)


@pytest.fixture(scope="module")
def eks_root() -> Iterator[Path]:
    # bullseye (glibc 2.31): the oldest root the archive here serves; AL2023 has 2.34.
    with node_root("bullseye") as root:
        assert find_python(root) == [], "the node root must not have Python"
        nodes.eks_nodeadm_node(root, AMI_ECR_PLUGIN, extra_args=POINT_KUBELET)
        plant(root, "/proc/mounts", "/dev/nvme0n1p1 / xfs rw,relatime 0 0\n")
        plant(root, STATIC_FILE,
              "apiVersion: credprov.io/v1alpha1\nkind: StaticCredentials\ncredentials:\n"
              f'  - match: ["registry.example.com"]\n    username: robot\n'
              f"    password: {PASSWORD}\n")  # fmt: skip
        yield root


def operator_configmaps() -> dict[str, dict[str, str]]:
    """deploy/README.md's configMapGenerator over the profile's example config."""
    example = (PROFILE / "credprov-plugins.yaml").read_text()
    return {"credprov-provider-config": {"credprov-plugins.yaml": example}}


def pod_as_ctr_run(
    ds: dict[str, Any], root: Path, scratch: Path, configmaps: dict[str, dict[str, str]]
) -> tuple[list[str], dict[str, str]]:
    """``ctr run`` flags and environment for the DaemonSet's init container on ``root``."""
    pod = ds["spec"]["template"]["spec"]
    (init,) = pod["initContainers"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    flags = ["--read-only"] if init["securityContext"]["readOnlyRootFilesystem"] else []
    for mount in init["volumeMounts"]:
        volume = volumes[mount["name"]]
        if "hostPath" in volume:
            src = inside(root, volume["hostPath"]["path"])
            if volume["hostPath"].get("type") == "Directory":
                assert src.is_dir(), f"the pod would not start: no {volume['hostPath']['path']}"
        else:
            assert "emptyDir" in volume, volume
            src = scratch / mount["name"]
            src.mkdir(exist_ok=True)
        mode = "rbind:ro" if mount.get("readOnly") else "rbind:rw"
        flags += ["--mount", f"type=bind,src={src},dst={mount['mountPath']},options={mode}"]
    env: dict[str, str] = {}
    for var in init["env"]:
        if "value" in var:
            env[var["name"]] = var["value"]
            continue
        ref = var["valueFrom"]["configMapKeyRef"]
        value = configmaps.get(ref["name"], {}).get(ref["key"])
        if value is None:
            assert ref.get("optional"), var
        else:
            env[var["name"]] = value
    return flags, env


def run_pod(
    containerd: Containerd, ref: str, flags: list[str], env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    args = ["run", "--rm", "--snapshotter", "native", *flags]
    for key, value in env.items():
        args += ["--env", f"{key}={value}"]
    return containerd.ctr(*args, ref, f"credprov-eks-{uuid.uuid4().hex[:8]}")


def snapshot(path: Path) -> tuple[bytes, int, int]:
    st = path.stat()
    return path.read_bytes(), st.st_ino, st.st_mtime_ns


def request(image: str) -> bytes:
    return json.dumps({"kind": "CredentialProviderRequest", "apiVersion": f"{G}/v1",
                       "image": image}).encode()  # fmt: skip


@pytest.fixture(scope="module")
def installed(
    containerd: Containerd,
    installer_ref: str,
    eks_root: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Path:
    """The profile's pod run once on the EKS root; the AMI's files checked untouched."""
    bin_dir = inside(eks_root, nodes.EKS_BIN)
    before = {p.name: snapshot(p) for p in bin_dir.iterdir()}
    assert set(before) == {"config.json", "ecr-credential-provider"}
    ds = kustomize.daemonset(kustomize.build(PROFILE))
    flags, env = pod_as_ctr_run(ds, eks_root, tmp_path_factory.mktemp("pod"), operator_configmaps())
    assert env["NAME_PREFIX"] == "credprov-" and env["HOST_BIN_DIR"] == nodes.EKS_BIN
    first = run_pod(containerd, installer_ref, flags, env)
    assert first.returncode == 0, first.stderr
    assert CANARY not in first.stdout + first.stderr
    assert {p.name: snapshot(p) for p in bin_dir.iterdir() if p.name in before} == before
    # A second pod (a restart, a re-applied DaemonSet) changes nothing.
    second = run_pod(containerd, installer_ref, flags, env)
    assert second.returncode == 0, second.stderr
    assert all(line.startswith("unchanged: ") for line in second.stdout.splitlines())
    return eks_root


def test_ours_are_installed_prefixed_and_answer_on_the_node(installed: Path) -> None:
    bin_dir = inside(installed, nodes.EKS_BIN)
    visible = sorted(p.name for p in bin_dir.iterdir() if not p.name.startswith("."))
    ours = [f"credprov-{name}" for name in PLUGINS]
    assert visible == sorted(["config.json", "credprov-plugins.yaml", "ecr-credential-provider",
                              *ours])  # fmt: skip
    static = chroot(installed, [f"{nodes.EKS_BIN}/credprov-static-credential-provider",
                                "--config", STATIC_FILE], stdin=request(PRIVATE_IMAGE))  # fmt: skip
    assert static.returncode == 0, static.stderr
    assert json.loads(static.stdout)["auth"]["registry.example.com"]["password"] == PASSWORD
    ecr = chroot(installed, [f"{nodes.EKS_BIN}/credprov-ecr-credential-provider", "--version"])
    assert ecr.returncode == 0 and ecr.stdout.startswith(b"ecr-credential-provider "), ecr
    ami = chroot(installed, [f"{nodes.EKS_BIN}/ecr-credential-provider"], stdin=request(ECR_IMAGE))
    assert ami.returncode == 0 and ECR_TOKEN.encode() in ami.stdout  # still the AMI's


def test_engine_reads_the_config_directory_with_both_providers(
    installed: Path, tmp_path: Path
) -> None:
    """The kubelet's view: nodeadm's directory as ``--image-credential-provider-config``."""
    from credprov.credentialprovider.engine import Engine
    from credprov.credentialprovider.plugin.config import load_config
    from credprov.credentialprovider.plugin.registry import register_credential_provider_plugins

    config_dir = inside(installed, nodes.EKS_BIN)
    config, _ = load_config(str(config_dir))
    names = [p.name for p in config.providers]
    assert names == ["ecr-credential-provider", "credprov-static-credential-provider"]
    wrappers = tmp_path / "bin"  # the plugins run inside the node's root
    wrappers.mkdir()
    for name in names:
        wrapper = wrappers / name
        wrapper.write_text(f'#!/bin/sh\nexec chroot "{installed}" "{nodes.EKS_BIN}/{name}" "$@"\n')
        wrapper.chmod(0o755)
    engine = Engine(register_credential_provider_plugins(str(config_dir), str(wrappers)))
    ecr = engine.resolve(ECR_IMAGE)
    assert [(c.username, c.password) for c in ecr.credentials] == [("AWS", ECR_TOKEN)]
    private = engine.resolve(PRIVATE_IMAGE)
    assert [(c.username, c.password) for c in private.credentials] == [("robot", PASSWORD)]


def test_bundled_doctor_finds_no_failing_provider_check(
    installed: Path, bundle_tarball: Path, tmp_path: Path
) -> None:
    with tarfile.open(bundle_tarball) as tar:
        tar.extractall(tmp_path, filter="tar")
    checks: dict[str, list[dict[str, Any]]] = {}
    for image in (ECR_IMAGE, PRIVATE_IMAGE):
        proc = subprocess.run(
            [str(tmp_path / "credprov-plugins" / "doctor"), "--node-root", str(installed),
             "--image", image, "-o", "json"],
            capture_output=True, text=True, timeout=300, check=False,
            env={"PATH": os.environ["PATH"]},
        )  # fmt: skip
        assert proc.stdout, proc.stderr
        assert CANARY not in proc.stdout + proc.stderr
        doc = json.loads(proc.stdout)
        config = doc["node"]["imageCredentialProviderConfig"]
        assert config["value"] == nodes.EKS_BIN, config  # the NodeConfig flag wins
        checks[image] = doc["checks"]
    failed = [(image, c["id"], c.get("subject"), c.get("message"))
              for image, found in checks.items() for c in found if c["status"] == "fail"]  # fmt: skip
    assert failed == []
    responds = {c.get("subject") for found in checks.values() for c in found
                if c["id"] == "plugin.responds" and c["status"] == "pass"}  # fmt: skip
    assert {"ecr-credential-provider", "credprov-static-credential-provider"} <= responds
