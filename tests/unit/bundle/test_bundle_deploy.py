"""deploy/: the installer DaemonSet, its distribution profiles, and the docs that name them.

Each profile (``deploy/profiles/<name>/``) is built as ``kubectl kustomize`` builds it
(``tests/kustomize.py``; checked against a real ``kubectl kustomize`` where one exists) and
checked against the installer image's interface: the mounts it expects (``/host/bin``,
``/host/config``, ``/host/root`` read-only with HostToContainer, an emptyDir ``/tmp``),
``HOST_BIN_DIR`` equal to the bin dir's hostPath, and the profile's paths and prefix.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import yaml

from credprov.bundle._multicall import PLUGINS
from tests import kustomize
from tests.unit.doctor import nodes

REPO = Path(__file__).resolve().parents[3]
DEPLOY = REPO / "deploy"
INIT_ENV = {"HOST_BIN_DIR", "PLUGINS", "NAME_PREFIX", "CREDPROV_CONFIG", "CREDPROV_CONFIG_NAME",
            "FORCE", "UNINSTALL"}  # fmt: skip


class Profile(NamedTuple):
    bin_dir: str
    config_dir: str
    prefix: str
    host_path_type: str  # DirectoryOrCreate, or Directory where the dir must be the distro's


KUBEADM_BIN = "/usr/libexec/kubernetes/kubelet-plugins/credential-provider/exec"
RANCHER = "/var/lib/rancher/credentialprovider"
PROFILES = {
    "kubeadm": Profile(
        KUBEADM_BIN, "/etc/kubernetes/credential-providers", "", "DirectoryOrCreate"
    ),
    "k3s": Profile(f"{RANCHER}/bin", f"{RANCHER}/config.d", "", "DirectoryOrCreate"),
    "rke2": Profile(f"{RANCHER}/bin", f"{RANCHER}/config.d", "", "DirectoryOrCreate"),
    # nodeadm's own directory is both: its config.json stays in force next to ours.
    "eks-nodeadm": Profile(nodes.EKS_BIN, nodes.EKS_BIN, "credprov-", "Directory"),
}
#: Documented, but the DaemonSet cannot install there (read-only roots).
NOT_APPLICABLE = ("talos", "bottlerocket")


def build(name: str) -> dict[str, Any]:
    return kustomize.daemonset(kustomize.build(DEPLOY / "profiles" / name))


def init_container(ds: dict[str, Any]) -> dict[str, Any]:
    (init,) = ds["spec"]["template"]["spec"]["initContainers"]
    container: dict[str, Any] = init
    return container


def env(ds: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in init_container(ds)["env"]}


def test_every_profile_directory_is_in_the_table() -> None:
    assert sorted(p.name for p in (DEPLOY / "profiles").iterdir() if p.is_dir()) == sorted(PROFILES)


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_profile_mounts_what_the_installer_image_expects(name: str) -> None:
    profile = PROFILES[name]
    ds = build(name)
    pod = ds["spec"]["template"]["spec"]
    init = init_container(ds)
    mounts = {m["mountPath"]: m for m in init["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert set(mounts) == {"/host/bin", "/host/config", "/host/root", "/tmp"}

    def volume(path: str) -> dict[str, Any]:
        result: dict[str, Any] = volumes[mounts[path]["name"]]
        return result

    assert volume("/host/bin")["hostPath"] == {"path": profile.bin_dir,
                                               "type": profile.host_path_type}  # fmt: skip
    assert volume("/host/config")["hostPath"] == {"path": profile.config_dir,
                                                  "type": profile.host_path_type}  # fmt: skip
    assert not mounts["/host/bin"].get("readOnly") and not mounts["/host/config"].get("readOnly")
    assert volume("/host/root")["hostPath"] == {"path": "/", "type": "Directory"}
    assert mounts["/host/root"]["readOnly"] is True
    assert mounts["/host/root"]["mountPropagation"] == "HostToContainer"
    assert "emptyDir" in volume("/tmp")
    variables = env(ds)
    assert set(variables) == INIT_ENV
    assert variables["HOST_BIN_DIR"] == volume("/host/bin")["hostPath"]["path"]
    assert variables["NAME_PREFIX"] == profile.prefix
    assert variables["FORCE"] == variables["UNINSTALL"] == "0"
    assert variables["CREDPROV_CONFIG"] == {"configMapKeyRef": {
        "name": "credprov-provider-config", "key": "credprov-plugins.yaml", "optional": True}}  # fmt: skip
    assert variables["CREDPROV_CONFIG_NAME"] == "credprov-plugins.yaml"


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_profile_runs_everywhere_before_the_cni_and_safely(name: str) -> None:
    from credprov import __version__
    from credprov.bundle.oci import IMAGE_NAME

    ds = build(name)
    assert (ds["apiVersion"], ds["kind"]) == ("apps/v1", "DaemonSet")
    assert ds["metadata"]["namespace"] == "kube-system"
    pod = ds["spec"]["template"]["spec"]
    assert pod["hostNetwork"] is True
    assert pod["tolerations"] == [{"operator": "Exists"}]  # every taint, every effect
    assert pod["automountServiceAccountToken"] is False
    labels = ds["spec"]["template"]["metadata"]["labels"]
    assert labels.items() >= ds["spec"]["selector"]["matchLabels"].items()
    init = init_container(ds)
    assert init["image"] == f"{IMAGE_NAME}:{__version__}"
    assert init["securityContext"]["readOnlyRootFilesystem"] is True
    assert init["securityContext"]["allowPrivilegeEscalation"] is False
    # chroot into /host/root for the on-node check; nothing else (root owns what it writes).
    assert init["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["SYS_CHROOT"]}
    # A single-architecture image: only on its nodes.
    assert pod["nodeSelector"] == {"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}
    # validate-config and the runtime check each start the bundled Python runtime.
    assert _mebibytes(init["resources"]["limits"]["memory"]) >= 256
    (pause,) = pod["containers"]
    assert "pause" in pause["image"] and pause["securityContext"]["runAsNonRoot"] is True
    strategy = ds["spec"]["updateStrategy"]
    assert strategy["type"] == "RollingUpdate"
    assert strategy["rollingUpdate"]["maxUnavailable"] == "10%"


def test_every_deploy_path_a_manifest_names_exists() -> None:
    """A comment naming ``deploy/...`` points at a file or directory that is there."""
    for manifest in sorted(DEPLOY.rglob("*.yaml")) + sorted(DEPLOY.rglob("*.json")):
        for path in re.findall(r"\bdeploy/[A-Za-z0-9_./-]*[A-Za-z0-9_-]", manifest.read_text()):
            assert (REPO / path).exists(), f"{manifest.relative_to(REPO)} names {path}"


def _mebibytes(quantity: str) -> int:
    number, unit = re.fullmatch(r"(\d+)(Mi|Gi)", quantity).groups()  # type: ignore[union-attr]
    return int(number) * (1024 if unit == "Gi" else 1)


def test_eks_profile_keeps_nodeadm_providers_in_force(tmp_path: Path) -> None:
    """The AMI's ``ecr-credential-provider`` and nodeadm's ``config.json`` stay: our names are
    prefixed, and nodeadm's directory read as one kubelet config directory with the
    profile's example config is valid (no duplicate provider name) and names only plugins
    that are there (the AMI's) or that the profile installs (``credprov-<plugin>``)."""
    from credprov.credentialprovider.plugin.config import load_config

    variables = env(build("eks-nodeadm"))
    prefix = variables["NAME_PREFIX"]
    assert prefix == "credprov-"
    config_dir = tmp_path / "image-credential-provider"
    config_dir.mkdir()
    (config_dir / "config.json").write_text(nodes.nodeadm_provider_config())
    ours = DEPLOY / "profiles" / "eks-nodeadm" / variables["CREDPROV_CONFIG_NAME"]
    shutil.copy(ours, config_dir / ours.name)
    config, _ = load_config(str(config_dir))
    names = [p.name for p in config.providers]
    assert names[0] == "ecr-credential-provider"  # config.json sorts first: nodeadm's
    mine = names[1:]
    assert mine and all(n.startswith(prefix) and n.removeprefix(prefix) in PLUGINS for n in mine)


def test_image_reference_is_set_with_kustomize_images(tmp_path: Path) -> None:
    """deploy/README.md: an overlay of the operator's own sets the registry with ``images:``."""
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    image = {
        "name": "localhost/credprov-plugins-installer",
        "newName": "registry.example.com/infra/credprov-plugins-installer",
        "newTag": "0.2.0",
    }
    kustomization = {"resources": [str(DEPLOY / "profiles" / "k3s")], "images": [image]}
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    ds = kustomize.daemonset(kustomize.build(overlay))
    assert init_container(ds)["image"] == (
        "registry.example.com/infra/credprov-plugins-installer:0.2.0"
    )
    assert ds["spec"]["template"]["spec"]["containers"][0]["image"].startswith("registry.k8s.io/")


def test_builder_refuses_what_it_does_not_implement(tmp_path: Path) -> None:
    (tmp_path / "kustomization.yaml").write_text("resources: []\nnamePrefix: x-\n")
    with pytest.raises(kustomize.Unsupported, match="namePrefix"):
        kustomize.build(tmp_path)


def _kubectl_kustomize() -> bool:
    if shutil.which("kubectl") is None:
        return False
    proc = subprocess.run(["kubectl", "kustomize", "--help"], capture_output=True, check=False)
    return proc.returncode == 0


@pytest.mark.skipif(not _kubectl_kustomize(), reason="no kubectl with kustomize here")
@pytest.mark.parametrize("name", ["", *sorted(f"profiles/{p}" for p in PROFILES)])
def test_builds_as_kubectl_kustomize_builds(name: str) -> None:
    directory = DEPLOY / name if name else DEPLOY
    proc = subprocess.run(["kubectl", "kustomize", str(directory)], capture_output=True,
                          text=True, check=False, timeout=60)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert [d for d in yaml.safe_load_all(proc.stdout) if d] == kustomize.build(directory)


def readme_section() -> str:
    readme = (REPO / "README.md").read_text()
    return readme.split("## Put it on your nodes", 1)[1].split("\n## ", 1)[0]


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_profiles_are_in_the_readme_table(name: str) -> None:
    profile = PROFILES[name]
    rows = [line for line in readme_section().splitlines() if f"`{name}`" in line]
    assert len(rows) == 1, f"one README table row names the profile `{name}`"
    assert f"`{profile.bin_dir}`" in rows[0]
    assert f"`{profile.config_dir}/`" in rows[0]


@pytest.mark.parametrize("name", NOT_APPLICABLE)
def test_read_only_distributions_are_documented_as_not_applicable(name: str) -> None:
    rows = [line for line in readme_section().splitlines() if line.lower().startswith(f"| {name}")]
    assert len(rows) == 1 and "not applicable" in rows[0]
    deploy_readme = (DEPLOY / "README.md").read_text()
    assert re.search(rf"(?i)\*\*{name}\*\*[^\n]*not applicable", deploy_readme)


def test_deploy_readme_documents_every_setting_and_profile() -> None:
    text = (DEPLOY / "README.md").read_text()
    for variable in INIT_ENV:
        assert f"`{variable}`" in text, variable
    for name in PROFILES:
        assert f"deploy/profiles/{name}" in text, name
    assert "kubelet ≥ 1.34" in text  # config directories (kubernetes/kubernetes#131658)
    assert "images:" in text and "rollout status" in text


def test_readme_image_commands_match_the_image() -> None:
    from credprov import __version__
    from credprov.bundle.oci import IMAGE_NAME

    readme = (REPO / "README.md").read_text()
    refs = set(re.findall(r"localhost/credprov-plugins-installer:[\w.]+", readme))
    assert refs == {f"{IMAGE_NAME}:{__version__}"}
    assert f"{IMAGE_NAME}:{__version__}" in (DEPLOY / "base" / "daemonset.yaml").read_text()
