"""Where the doctor finds a node's setup: EKS nodeadm nodes, KubeletConfiguration drop-ins,
nodes without a kubelet, k3s nodes without providers, and honest bin-dir and plugin hints."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from credprov.doctor import DoctorOptions, Report, Status, run_doctor
from tests.unit.doctor import nodes
from tests.unit.doctor.nodes import write

SA_GATE = "KubeletServiceAccountTokenForCredentialProviders"


def doctor(root: Path, **kw: object) -> Report:
    return run_doctor(DoctorOptions(root=str(root), no_exec=True, **kw))  # type: ignore[arg-type]


def only(report: Report, check_id: str) -> tuple[Status, str]:
    (finding,) = report.by_id(check_id)
    return finding.status, finding.message


def statuses(report: Report) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for finding in report.checks:
        out.setdefault(finding.id, set()).add(str(finding.status))
    return out


@pytest.fixture
def eks(tmp_path: Path) -> Path:
    return nodes.eks_node(tmp_path / "eks")


def drop_in(root: Path, name: str, body: dict[str, object]) -> None:
    doc = {"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration", **body}
    write(root, f"{nodes.EKS_DROP_INS}/{name}", json.dumps(doc))


# -- EKS nodeadm ----------------------------------------------------------------------------


def test_eks_nodeadm_node_is_detected_and_healthy(eks: Path) -> None:
    report = doctor(eks)
    node = report.node
    assert node["flavor"] == "eks"
    assert node["imageCredentialProviderConfig"] == {
        "value": nodes.EKS_CONFIG,
        "source": "$NODEADM_KUBELET_ARGS from /etc/eks/kubelet/environment",
    }
    assert node["configDir"]["value"] == nodes.EKS_DROP_INS
    assert node["nodeName"]["value"] == "ip-10-0-0-1.ec2.internal"
    # The gate comes from nodeadm's drop-in, not the main (JSON) file.
    assert node["featureGates"]["KubeletEnsureSecretPulledImages"] == {
        "value": True,
        "source": f"featureGates in KubeletConfiguration drop-in {nodes.EKS_DROP_INS}/00-nodeadm.conf",
    }
    assert not report.failed, report.to_dict()


def test_a_gate_turned_off_in_a_drop_in_fails_token_providers(eks: Path) -> None:
    """The kubelet exits: a tokenAttributes provider with the KEP-4412 gate off. Before
    drop-ins were read, this node passed."""
    drop_in(eks, "90-user.conf", {"featureGates": {SA_GATE: False}})
    report = doctor(eks)
    status, message = only(report, "provider-config.valid")
    assert status == Status.FAIL
    assert "tokenAttributes is not supported" in message
    message = only(report, "feature-gates")[1]
    assert f"{SA_GATE}=false (featureGates in KubeletConfiguration drop-in" in message
    assert "90-user.conf" in message


def test_drop_ins_merge_objects_and_later_files_win(eks: Path) -> None:
    drop_in(eks, "10-a.conf", {"imagePullCredentialsVerificationPolicy": "AlwaysVerify"})
    drop_in(
        eks,
        "20-b.conf",
        {
            "imagePullCredentialsVerificationPolicy": "NeverVerifyAllowlistedImages",
            "preloadedImagesVerificationAllowlist": ["registry.example.com/team/*"],
        },
    )
    # Not a drop-in: the kubelet reads only *.conf files.
    drop_in(eks, "30-c.json", {"imagePullCredentialsVerificationPolicy": "NeverVerify"})
    report = doctor(eks)
    policy = report.node["imagePullCredentialsVerificationPolicy"]
    assert policy["value"] == "NeverVerifyAllowlistedImages"
    assert policy["source"].endswith("20-b.conf")
    # featureGates from the main file and from 00-nodeadm.conf both survive (merged).
    assert report.node["featureGates"]["KubeletEnsureSecretPulledImages"]["value"] is True
    assert only(report, "pull-policy.valid")[0] == Status.PASS


def test_an_invalid_drop_in_stops_the_kubelet(eks: Path) -> None:
    write(eks, f"{nodes.EKS_DROP_INS}/50-broken.conf", "featureGates: [\n")
    status, message = only(doctor(eks), "pull-policy.valid")
    assert status == Status.FAIL
    assert "50-broken.conf" in message and "the kubelet exits" in message


def test_a_policy_in_a_drop_in_is_validated(eks: Path) -> None:
    drop_in(eks, "10-a.conf", {"imagePullCredentialsVerificationPolicy": "Sometimes"})
    assert only(doctor(eks), "pull-policy.valid")[0] == Status.FAIL


# -- no kubelet --------------------------------------------------------------------------------


def test_no_kubelet_at_all_fails_and_judges_nothing(tmp_path: Path) -> None:
    root = tmp_path / "empty"
    write(root, "/etc/hostname", "lonely\n")
    report = doctor(root)
    assert report.failed
    status, message = only(report, "kubelet.flags")
    assert status == Status.FAIL and "no kubelet" in message
    assert not [f for f in report.checks if f.status == Status.PASS], report.to_dict()


def test_no_kubelet_but_the_operator_names_a_setup(tmp_path: Path) -> None:
    root = nodes.kubeadm_node(tmp_path / "node")
    for unit in (root / "usr/lib/systemd/system").rglob("kubelet.service*"):
        if unit.is_file():
            unit.unlink()
    report = doctor(root, config=nodes.CONFIG, bin_dir=nodes.BIN)
    assert only(report, "provider-config.valid")[0] == Status.PASS
    assert only(report, "kubelet.flags")[0] == Status.PASS


# -- k3s without providers ---------------------------------------------------------------------


def test_k3s_without_provider_files_warns_once_and_skips_the_rest(tmp_path: Path) -> None:
    """k3s enables providers only when both default paths exist: none there is a node that
    does not use them, not a broken config, a missing bin dir and a missing plugin."""
    root = nodes.k3s_node(tmp_path / "k3s")
    import shutil

    shutil.rmtree(root / "var/lib/rancher/credentialprovider")
    report = doctor(root)
    status, message = only(report, "kubelet.flags")
    assert status == Status.WARN and "not enabled" in message
    got = statuses(report)
    for check_id in ("provider-config.valid", "bin-dir.exec", "plugin.present"):
        assert got.get(check_id, {"skip"}) == {"skip"}, report.to_dict()
    assert not report.failed


def test_k3s_with_only_the_config_fails_in_one_place(tmp_path: Path) -> None:
    root = nodes.k3s_node(tmp_path / "k3s")
    import shutil

    shutil.rmtree(root / nodes.K3S_BIN.lstrip("/"))
    report = doctor(root)
    assert only(report, "kubelet.flags")[0] == Status.FAIL
    got = statuses(report)
    assert got["bin-dir.exec"] == {"skip"} and got["plugin.present"] == {"skip"}


# -- bin-dir.exec honesty, plugin hints -------------------------------------------------------


def test_noexec_not_checked_is_not_a_pass(tmp_path: Path) -> None:
    root = nodes.kubeadm_node(tmp_path / "node")
    (root / "proc/mounts").unlink()
    status, message = only(doctor(root), "bin-dir.exec")
    assert status == Status.SKIP and "noexec was not checked" in message


def test_noexec_mount_fails(tmp_path: Path) -> None:
    root = nodes.kubeadm_node(tmp_path / "node")
    write(
        root,
        "/proc/mounts",
        "/dev/sda1 / ext4 rw 0 0\n/dev/sda3 /usr/libexec ext4 rw,noexec 0 0\n",
    )
    assert only(doctor(root), "bin-dir.exec")[0] == Status.FAIL


def test_hints_never_suggest_renaming_another_providers_plugin(tmp_path: Path) -> None:
    root = nodes.kubeadm_node(tmp_path / "node")
    # "mirror-provider2" is close to "mirror-provider", which another provider uses.
    config = json.loads(nodes.provider_config())
    extra = dict(config["providers"][2], name="mirror-provider2")
    config["providers"].append(extra)
    write(root, nodes.CONFIG, json.dumps(config))
    write(root, f"{nodes.BIN}/mirror-providr2", "#!/bin/sh\n", 0o755)  # a real near miss
    report = doctor(root)
    finding = next(f for f in report.by_id("plugin.present") if f.subject == "mirror-provider2")
    assert finding.status == Status.FAIL
    assert "mirror-providr2" in finding.hint
    assert "mirror-provider," not in finding.hint and "mirror-provider?" not in finding.hint


@pytest.mark.parametrize(
    ("provider", "file", "offered"),
    [
        pytest.param("ecr-credential-provider", "acr-credential-provider", False, id="ecr/acr"),
        pytest.param(
            "static-credential-provider", "ecr-credential-provider", False, id="static/ecr"
        ),
        pytest.param("my-provider", "my-provider-old", False, id="another file"),
        pytest.param(
            "ecr-credential-provider",
            "ecr-credential-provider-v1.31.0-linux-amd64",
            True,
            id="a download's name",
        ),
        pytest.param(
            "ecr-credential-provider", "ECR_credential_provider", True, id="case and underscores"
        ),
        pytest.param("mirror-provider2", "mirror-providr2", True, id="a typo"),
    ],
)
def test_did_you_mean_offers_only_what_a_reader_would_pick(
    tmp_path: Path, provider: str, file: str, offered: bool
) -> None:
    root = nodes.kubeadm_node(tmp_path / "node")
    config = json.loads(nodes.provider_config())
    config["providers"].append(dict(config["providers"][2], name=provider))
    write(root, nodes.CONFIG, json.dumps(config))
    write(root, f"{nodes.BIN}/{file}", "#!/bin/sh\n", 0o755)
    report = doctor(root)
    finding = next(f for f in report.by_id("plugin.present") if f.subject == provider)
    assert finding.status == Status.FAIL
    assert (f"did you mean {file} " in finding.hint) == offered, finding.hint


def test_a_duplicate_provider_across_files_names_both_files(tmp_path: Path) -> None:
    root = nodes.kubeadm_node(tmp_path / "node")
    config = nodes.provider_config()
    write(root, "/etc/kubernetes/credential-providers/a.json", config)
    write(root, "/etc/kubernetes/credential-providers/b.json", config)
    report = run_doctor(
        DoctorOptions(root=str(root), config="/etc/kubernetes/credential-providers")
    )
    (valid,) = report.by_id("provider-config.valid")
    assert valid.status == Status.FAIL
    assert valid.message.endswith(
        'found in configuration file(s) (in "/etc/kubernetes/credential-providers/a.json" and '
        '"/etc/kubernetes/credential-providers/b.json")'
    ), valid.message
