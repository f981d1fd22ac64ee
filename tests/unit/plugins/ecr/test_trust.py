"""``credprov_ecr._aws.Clients``: the AWS SDK trusts the node's CA store unless the AWS
settings name a bundle (``AWS_CA_BUNDLE``, a profile's ``ca_bundle``), as the Go SDK does."""

from __future__ import annotations

from pathlib import Path

import pytest
from credprov_ecr._aws import Clients

from tests.fakes.tls import TestCA
from tests.unit.plugins.ecr.conftest import isolate_aws_environment

RHEL7 = "etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem"

CASES = {
    "no AWS setting: the node's store": ({}, "", RHEL7),
    "AWS_CA_BUNDLE wins": ({"AWS_CA_BUNDLE": "/corp/aws-ca.pem"}, "", "/corp/aws-ca.pem"),
    "a profile's ca_bundle wins": ({}, "ca_bundle = /corp/profile-ca.pem", "/corp/profile-ca.pem"),
}


@pytest.mark.parametrize(("env", "profile", "want"), CASES.values(), ids=CASES.keys())
def test_ca_bundle(
    env: dict[str, str],
    profile: str,
    want: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    isolate_aws_environment(monkeypatch, tmp_path)
    root = tmp_path / "node"
    (root / RHEL7).parent.mkdir(parents=True)
    (root / RHEL7).write_bytes(TestCA().pem)
    config = tmp_path / "aws-config"
    config.write_text(f"[default]\n{profile}\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    plugin_env = {"CREDPROV_CA_ROOT": str(root), "SSL_CERT_DIR": "/none"}
    session = Clients(plugin_env).session()
    expected = str(root / want) if want == RHEL7 else want
    assert session.get_config_variable("ca_bundle") == expected
