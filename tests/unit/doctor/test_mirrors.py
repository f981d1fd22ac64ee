"""The doctor's ``runtime.mirrors`` check on fixture nodes: containerd's config_path found in
config.toml (and k3s's), CRI-O's registries.conf, the anonymous-pull trap, broken files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from credprov.doctor import DoctorOptions, Report, run_doctor
from tests.unit.doctor import nodes

CONTAINERD_CONFIG = (
    'version = 2\n[plugins."io.containerd.grpc.v1.cri".registry]\n'
    '  config_path = "/etc/containerd/certs.d"\n'
)


def mirrors(report: Report) -> list[tuple[str, str, str]]:
    return [
        (str(f.status), f.subject, f.message) for f in report.checks if f.id == "runtime.mirrors"
    ]


def doctor(root: Path, **kw: object) -> Report:
    return run_doctor(DoctorOptions(root=str(root), no_exec=True, **kw))  # type: ignore[arg-type]


@pytest.fixture
def node(tmp_path: Path) -> Path:
    return nodes.kubeadm_node(tmp_path / "node")


def plant_containerd(root: Path, namespace: str, hosts_toml: str) -> None:
    nodes.write(root, "/etc/containerd/config.toml", CONTAINERD_CONFIG)
    nodes.write(root, f"/etc/containerd/certs.d/{namespace}/hosts.toml", hosts_toml)


def test_no_mirror_configuration_no_finding(node: Path) -> None:
    assert mirrors(doctor(node)) == []
    nodes.write(node, "/etc/containerd/config.toml", CONTAINERD_CONFIG)
    assert mirrors(doctor(node)) == []


def test_mirror_without_credentials_while_upstream_has_warns(node: Path) -> None:
    plant_containerd(
        node, "registry-a.example.com",
        'server = "https://registry-a.example.com"\n[host."https://cache.internal"]\n'
        '  capabilities = ["pull", "resolve"]\n',
    )  # fmt: skip
    report = doctor(node, images=[nodes.APP_IMAGE])
    [(status, subject, message)] = mirrors(report)
    assert (status, subject) == ("warn", nodes.APP_IMAGE)
    assert message.startswith(
        "containerd (/etc/containerd/certs.d/registry-a.example.com/hosts.toml (in "
    )
    assert "contacts cache.internal (mirror; resolve, pull) then registry-a.example.com" in message
    assert (
        "gets the credentials for registry-a.example.com (provider registry-a-provider)" in message
    )
    assert "no source has credentials for cache.internal" in message
    finding = next(f for f in report.checks if f.id == "runtime.mirrors")
    assert "docs/mirrors.md" in finding.hint


def test_mirror_own_provider_is_never_asked(node: Path) -> None:
    # mirror-provider matches mirror.example.com:5000/team: the mirror has its own
    # credentials, but the kubelet asks registry-a-provider for the image as written.
    plant_containerd(
        node, "registry-a.example.com",
        '[host."https://mirror.example.com:5000"]\n  capabilities = ["pull", "resolve"]\n',
    )  # fmt: skip
    [(status, _, message)] = mirrors(doctor(node, images=[nodes.APP_IMAGE]))
    assert status == "warn"
    assert "not its own (provider mirror-provider)" in message


def test_sample_images_without_image_and_shared_provider_passes(node: Path) -> None:
    # An ECR pull-through cache in another region: one provider covers both.
    plant_containerd(
        node, "111.dkr.ecr.us-east-1.amazonaws.com",
        '[host."https://222.dkr.ecr.eu-west-1.amazonaws.com"]\n  capabilities = ["pull", "resolve"]\n',
    )  # fmt: skip
    [(status, subject, message)] = mirrors(doctor(node))
    assert status == "pass"
    assert subject == "111.dkr.ecr.us-east-1.amazonaws.com/credprov-doctor/sample"
    assert "from provider ecr-style-provider, which also cover 222.dkr.ecr" in message


def test_node_docker_config_is_a_source(node: Path) -> None:
    plant_containerd(
        node, "registry-a.example.com",
        '[host."https://cache.internal"]\n  capabilities = ["pull", "resolve"]\n',
    )  # fmt: skip
    nodes.write(
        node, "/var/lib/kubelet/config.json",
        json.dumps({"auths": {"cache.internal": {"username": "u", "password": "p-never-shown"}}}),
    )  # fmt: skip
    report = doctor(node, images=[nodes.APP_IMAGE])
    [(status, _, message)] = mirrors(report)
    assert status == "warn" and "not its own (node docker config)" in message
    assert "p-never-shown" not in json.dumps(report.to_dict())


def test_config_path_option_overrides_config_toml(tmp_path: Path) -> None:
    root = nodes.kubeadm_node(tmp_path / "node")
    nodes.write(
        root, "/srv/certs/registry-a.example.com/hosts.toml",
        '[host."https://cache.internal"]\n',
    )  # fmt: skip
    assert mirrors(doctor(root, images=[nodes.APP_IMAGE])) == []
    found = mirrors(doctor(root, images=[nodes.APP_IMAGE], containerd_config_path="/srv/certs"))
    assert [s for s, _, _ in found] == ["warn"]


def test_crio_registries_conf(node: Path) -> None:
    nodes.write(
        node, "/etc/containers/registries.conf",
        '[[registry]]\nlocation = "registry-a.example.com"\n'
        '[[registry.mirror]]\nlocation = "cache.internal/a"\n',
    )  # fmt: skip
    [(status, _, message)] = mirrors(doctor(node, images=[nodes.APP_IMAGE]))
    assert status == "warn"
    assert message.startswith("cri-o (/etc/containers/registries.conf (in ")
    assert "contacts cache.internal (mirror; resolve, pull) then registry-a.example.com" in message


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("/etc/containerd/config.toml", "version = [\n"),
        ("/etc/containers/registries.conf", '[[registry]]\nprefix = "*.x.com/a"\n'),
    ],
)
def test_broken_runtime_config_fails_in_one_line(node: Path, path: str, text: str) -> None:
    nodes.write(node, path, text)
    [(status, _, message)] = mirrors(doctor(node))
    assert status == "fail"
    assert "\n" not in message and path in message


def test_broken_hosts_toml_fails(node: Path) -> None:
    plant_containerd(node, "registry-a.example.com", "server = [\n")
    [(status, subject, message)] = mirrors(doctor(node, images=[nodes.APP_IMAGE]))
    assert (status, subject) == ("fail", "containerd")
    assert "invalid TOML" in message


@pytest.mark.parametrize(
    "hosts_toml",
    ["x = " + "[" * 50_000 + "]" * 50_000 + "\n", "x = " + "7" * 5_000 + "\n"],
    ids=["deep", "digits"],
)
def test_hostile_hosts_toml_fails_the_check_not_the_doctor(node: Path, hosts_toml: str) -> None:
    """Issue 32, "Why" 1: the doctor had no report at all; now one FAIL naming the file and
    every other check still reported."""
    plant_containerd(node, "docker.io", hosts_toml)
    report = doctor(node)
    [(status, subject, message)] = mirrors(report)
    assert (status, subject) == ("fail", "containerd")
    assert "/etc/containerd/certs.d/docker.io/hosts.toml" in message and "\n" not in message
    assert len({f.id for f in report.checks}) > 5
