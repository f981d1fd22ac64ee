"""deploy/: the installer DaemonSet and the distribution profiles README's table shows."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"


def daemonset() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((DEPLOY / "daemonset.yaml").read_text())
    return doc


def profiles() -> dict[str, dict[str, Any]]:
    doc = yaml.safe_load((DEPLOY / "profiles" / "profiles.yaml").read_text())
    result: dict[str, dict[str, Any]] = doc["profiles"]
    return result


def test_daemonset_runs_everywhere_before_the_cni() -> None:
    ds = daemonset()
    assert (ds["apiVersion"], ds["kind"]) == ("apps/v1", "DaemonSet")
    pod = ds["spec"]["template"]["spec"]
    assert pod["hostNetwork"] is True
    assert pod["tolerations"] == [{"operator": "Exists"}]  # every taint, every effect
    labels = ds["spec"]["template"]["metadata"]["labels"]
    assert labels.items() >= ds["spec"]["selector"]["matchLabels"].items()
    (init,) = pod["initContainers"]
    (pause,) = pod["containers"]
    assert init["image"].startswith("localhost/credprov-plugins-installer:")
    assert "pause" in pause["image"]
    assert {e["name"] for e in init["env"]} == {"PLUGINS", "CREDPROV_CONFIG"}


def test_daemonset_mounts_the_host_dirs_where_the_image_expects_them() -> None:
    pod = daemonset()["spec"]["template"]["spec"]
    (init,) = pod["initContainers"]
    mounts = {m["name"]: m["mountPath"] for m in init["volumeMounts"]}
    assert mounts == {"plugin-bin-dir": "/host/bin", "provider-config-dir": "/host/config"}
    assert not any(m.get("readOnly") for m in init["volumeMounts"])
    volumes = {v["name"]: v["hostPath"] for v in pod["volumes"]}
    kubeadm = profiles()["kubeadm"]
    assert volumes["plugin-bin-dir"]["path"] == kubeadm["binDir"]
    assert volumes["provider-config-dir"]["path"] == kubeadm["configDir"]
    assert {v["type"] for v in volumes.values()} == {"DirectoryOrCreate"}


@pytest.mark.parametrize("name", ["kubeadm", "k3s", "rke2", "eks-nodeadm", "talos", "bottlerocket"])
def test_profiles_are_in_the_readme_table(name: str) -> None:
    profile = profiles()[name]
    assert profile["kubelet"]
    readme = (REPO / "README.md").read_text()
    table = readme.split("## Put it on your nodes", 1)[1].split("\n## ", 1)[0]
    if profile["binDir"]:
        assert f"`{profile['binDir']}`" in table
    if profile["configDir"]:
        assert f"`{profile['configDir']}/`" in table


def test_readme_image_commands_match_the_image() -> None:
    from credprov import __version__
    from credprov.bundle.oci import IMAGE_NAME

    readme = (REPO / "README.md").read_text()
    refs = set(re.findall(r"localhost/credprov-plugins-installer:[\w.]+", readme))
    assert refs == {f"{IMAGE_NAME}:{__version__}"}
    assert f"{IMAGE_NAME}:{__version__}" in (DEPLOY / "daemonset.yaml").read_text()
