"""``azure.json`` decoding and the cloud environment."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from credprov_acr import cloud
from credprov_acr.config import AzureConfig, ConfigError, decode, load

from tests.conftest import CANARY

DECODED = [
    # (document, expected fields)
    ('{"aadClientId": "foo", "aadClientSecret": "bar"}',
     {"aad_client_id": "foo", "aad_client_secret": "bar"}),
    ('{"tenantID": "t", "USEMANAGEDIDENTITYEXTENSION": true}',
     {"tenant_id": "t", "use_managed_identity_extension": True}),
    ('{"tenantId": "a", "tenantID": "b"}', {"tenant_id": "b"}),  # the later key wins
    ('{"tenantID": "b", "tenantId": "a"}', {"tenant_id": "a"}),
    ('{"tenantId": 123, "cloud": true}', {"tenant_id": "123", "cloud": "true"}),
    ('{"unknown": [1, 2], "nested": {"tenantId": "x"}}', {}),
    ('{"tenantId": null}', {}),
    ("", {}),
    ("# only a comment\n", {}),
    ("tenantId: t\nuseManagedIdentityExtension: yes\nuserAssignedIdentityID: abc\n",
     {"tenant_id": "t", "use_managed_identity_extension": True, "user_assigned_identity_id": "abc"}),
    ("cloud: AzureChinaCloud\nresourceManagerEndpoint: https://arm.local\n",
     {"cloud": "AzureChinaCloud", "resource_manager_endpoint": "https://arm.local"}),
]  # fmt: skip


@pytest.mark.parametrize(("text", "fields"), DECODED)
def test_decode(text: str, fields: dict[str, Any]) -> None:
    assert decode("azure.json", text) == AzureConfig(path="azure.json", **fields)


REFUSED = [
    ("random-config", "not a mapping but a string"),
    ("- a\n- b\n", "not a mapping but a list"),
    ('{"useManagedIdentityExtension": "true"}', "useManagedIdentityExtension must be a boolean, not a string"),
    ('{"aadClientSecret": ["' + CANARY + '"]}', "aadClientSecret must be a string, not a list"),
    ('{"aadClientSecret": "' + CANARY + '",}', "invalid JSON at line 1"),
    ('{"aadClientSecret": "' + CANARY, "invalid JSON at line 1"),
    ("aadClientSecret: " + CANARY + "\n\tx: 1\n", "invalid YAML at line 2, column 1"),
    ('aadClientSecret: "' + CANARY + "\n", "invalid YAML"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "message"), REFUSED)
def test_refused_without_the_secret(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "azure.json"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load(str(path))
    assert str(err.value).startswith(f"failed to load config: {path}: {message}")
    assert CANARY not in str(err.value)
    assert "\n" not in str(err.value)


def test_unreadable(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"failed to load config: cannot read .*missing\.json"):
        load(str(tmp_path / "missing.json"))
    with pytest.raises(ConfigError, match="config file is not specified"):
        load("")
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (1024 * 1024 + 1))
    with pytest.raises(ConfigError, match="larger than"):
        load(str(big))


def test_secret_not_in_repr() -> None:
    assert CANARY not in repr(AzureConfig(path="x", aad_client_secret=CANARY))


CLOUDS = [
    # (cloud, authority, suffix, scope)
    ("", "https://login.microsoftonline.com", "azurecr.io", "https://containerregistry.azure.net/.default"),
    ("AzurePublicCloud", "https://login.microsoftonline.com", "azurecr.io", "https://containerregistry.azure.net/.default"),
    ("azurecloud", "https://login.microsoftonline.com", "azurecr.io", "https://containerregistry.azure.net/.default"),
    ("SomethingElse", "https://login.microsoftonline.com", "azurecr.io", "https://containerregistry.azure.net/.default"),
    ("AzureChinaCloud", "https://login.chinacloudapi.cn", "azurecr.cn", "https://management.chinacloudapi.cn/.default"),
    ("AzureUSGovernment", "https://login.microsoftonline.us", "azurecr.us", "https://management.usgovcloudapi.net/.default"),
    ("AZUREUSGOVERNMENTCLOUD", "https://login.microsoftonline.us", "azurecr.us", "https://management.usgovcloudapi.net/.default"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "authority", "suffix", "scope"), CLOUDS)
def test_known_clouds(
    name: str, authority: str, suffix: str, scope: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AZURE_ENVIRONMENT_FILEPATH", raising=False)
    env = cloud.resolve(name)
    assert (env.authority_host, env.acr_suffix, env.acr_scope) == (authority, suffix, scope)


def test_azure_stack_environment_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "env.json"
    path.write_text(
        json.dumps(
            {
                "name": "AzureStackCloud",
                "ContainerRegistryDNSSuffix": ".azurecr.my.cloud",
                "activeDirectoryEndpoint": "https://login.my.cloud/",
                "tokenAudience": "https://management.my.cloud/",
            }
        )
    )
    monkeypatch.setenv("AZURE_ENVIRONMENT_FILEPATH", str(path))
    env = cloud.resolve("AzureStackCloud")
    assert env.acr_suffix == ".azurecr.my.cloud"
    assert env.authority_host == "https://login.my.cloud"
    assert env.acr_scope == "https://management.my.cloud/.default"
    # only for AzureStackCloud, as upstream
    assert cloud.resolve("AzurePublicCloud") == cloud.PUBLIC
    path.write_text("{not json")
    with pytest.raises(cloud.CloudError, match="not valid JSON"):
        cloud.resolve("AzureStackCloud")
    monkeypatch.setenv("AZURE_ENVIRONMENT_FILEPATH", str(tmp_path / "nope.json"))
    with pytest.raises(cloud.CloudError, match="cannot read the environment file"):
        cloud.resolve("AzureStackCloud")


METADATA = [
    {
        "name": "AzureCloud",
        "authentication": {"loginEndpoint": "https://login.microsoftonline.com/"},
        "suffixes": {"acrLoginServer": "azurecr.io"},
    },
    {
        "name": "MyCloud",
        "authentication": {
            "loginEndpoint": "https://login.my.cloud/",
            "audiences": ["https://management.my.cloud/", "https://other"],
        },
        "suffixes": {"acrLoginServer": ".azurecr.my.cloud"},
    },
]


def test_metadata_selects_the_named_cloud() -> None:
    env = cloud.apply_metadata(cloud.PUBLIC, "mycloud", METADATA)
    assert env == cloud.Environment(
        "MyCloud",
        "https://login.my.cloud",
        ".azurecr.my.cloud",
        "https://management.my.cloud/.default",
    )
    first = cloud.apply_metadata(cloud.CHINA, "", METADATA)
    assert first.acr_scope == cloud.PUBLIC_ACR_SCOPE  # a known cloud keeps its ACR scope
    assert cloud.apply_metadata(cloud.CHINA, "Nope", METADATA) == cloud.CHINA
    assert cloud.apply_metadata(cloud.CHINA, "", "garbage") == cloud.CHINA
