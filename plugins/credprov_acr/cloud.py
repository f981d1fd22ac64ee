"""The Azure cloud a node lives in: AAD authority, ACR DNS suffix and the ACR token scope.

Upstream resolves the environment from ``azure.json``:

* ``cloud`` names a well-known cloud (``AzurePublicCloud`` and its aliases ``AzureCloud``;
  ``AzureChinaCloud``; ``AzureUSGovernment``/``AzureUSGovernmentCloud``), compared
  case-insensitively; an unknown or empty name is the public cloud;
* ``AzureStackCloud`` reads the environment JSON named by ``$AZURE_ENVIRONMENT_FILEPATH``
  (``containerRegistryDNSSuffix``, ``activeDirectoryEndpoint``, ``tokenAudience``,
  ``resourceManagerEndpoint``; keys case-insensitive);
* ``resourceManagerEndpoint`` set: GET ``<endpoint>/metadata/endpoints?api-version=2019-05-01``
  and take the entry named like ``cloud`` (or the first when ``cloud`` is empty):
  ``authentication.loginEndpoint``, ``authentication.audiences[0]``,
  ``suffixes.acrLoginServer``.

The token scope is where credprov differs on purpose. Upstream asks every cloud for
``https://containerregistry.azure.net/.default``, the public cloud's ACR audience. Sovereign
clouds issue ACR refresh tokens for their own Azure Resource Manager audience (the audience
the Azure SDKs' ``ContainerRegistryAudience`` names for them), so that is what is asked
for there: ``https://management.chinacloudapi.cn/.default`` in Azure China,
``https://management.usgovcloudapi.net/.default`` in Azure Government, and the metadata's or
environment file's Resource Manager audience in custom clouds.
"""

from __future__ import annotations

import json
import os
from typing import Any, NamedTuple

from credprov.sdk import ProviderError
from credprov.sdk.http import CHUNK_BYTES, BodyTooLarge, read_capped

ENVIRONMENT_FILEPATH_ENV = "AZURE_ENVIRONMENT_FILEPATH"

PUBLIC_ACR_SCOPE = "https://containerregistry.azure.net/.default"

METADATA_API_VERSION = "2019-05-01"
_MAX_METADATA_BYTES = 4 * 1024 * 1024


class Environment(NamedTuple):
    """What the plugin needs to know about a cloud."""

    name: str
    authority_host: str  # AAD authority, e.g. https://login.microsoftonline.com
    acr_suffix: str  # ContainerRegistryDNSSuffix, e.g. azurecr.io (no leading dot)
    acr_scope: str  # the AAD scope of the token exchanged for an ACR refresh token


PUBLIC = Environment(
    "AzurePublicCloud", "https://login.microsoftonline.com", "azurecr.io", PUBLIC_ACR_SCOPE
)
CHINA = Environment(
    "AzureChinaCloud",
    "https://login.chinacloudapi.cn",
    "azurecr.cn",
    "https://management.chinacloudapi.cn/.default",
)
US_GOVERNMENT = Environment(
    "AzureUSGovernmentCloud",
    "https://login.microsoftonline.us",
    "azurecr.us",
    "https://management.usgovcloudapi.net/.default",
)
STACK = "AZURESTACKCLOUD"

#: Upper-cased cloud names (``azure.json`` ``cloud``) → environment.
KNOWN_CLOUDS = {
    "AZURECLOUD": PUBLIC,
    "AZUREPUBLICCLOUD": PUBLIC,
    "AZURECHINACLOUD": CHINA,
    "AZUREUSGOVERNMENT": US_GOVERNMENT,
    "AZUREUSGOVERNMENTCLOUD": US_GOVERNMENT,
}


class CloudError(ProviderError):
    """The cloud environment cannot be determined; one line, no secrets."""


def known_environment(cloud: str) -> Environment:
    """The well-known environment called ``cloud`` (the public cloud when unknown)."""
    return KNOWN_CLOUDS.get(cloud.strip().upper(), PUBLIC)


def _scope_for(audience: str) -> str:
    audience = audience.strip()
    if not audience:
        return PUBLIC_ACR_SCOPE
    return audience.rstrip("/") + "/.default"


def _get_folded(doc: dict[str, Any], key: str) -> Any:
    """``doc[key]`` matched case-insensitively, the later key winning (Go's decoder)."""
    found = None
    for k, v in doc.items():
        if isinstance(k, str) and k.casefold() == key.casefold():
            found = v
    return found


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def from_environment_file(path: str) -> Environment:
    """An ``AzureStackCloud`` environment from the JSON file at ``path``.

    Raises:
        CloudError: unreadable file or invalid JSON.
    """
    try:
        with open(path, "rb") as fh:
            doc = json.loads(fh.read(_MAX_METADATA_BYTES))
    except OSError as exc:
        raise CloudError(
            f"cannot read the environment file {path} (${ENVIRONMENT_FILEPATH_ENV}): "
            f"{exc.strerror or exc}"
        ) from None
    except ValueError:
        raise CloudError(f"the environment file {path} is not valid JSON") from None
    if not isinstance(doc, dict):
        raise CloudError(f"the environment file {path} is not a JSON object")
    name = _str(_get_folded(doc, "name")) or "AzureStackCloud"
    authority = _str(_get_folded(doc, "activeDirectoryEndpoint")).rstrip("/")
    audience = _str(_get_folded(doc, "tokenAudience")) or _str(
        _get_folded(doc, "resourceManagerEndpoint")
    )
    return Environment(
        name=name,
        authority_host=authority or PUBLIC.authority_host,
        acr_suffix=_str(_get_folded(doc, "containerRegistryDNSSuffix")),
        acr_scope=_scope_for(audience),
    )


def apply_metadata(base: Environment, cloud: str, metadata: Any) -> Environment:
    """``base`` overridden by the ARM metadata document (a list of clouds) for ``cloud``."""
    entries = metadata if isinstance(metadata, list) else [metadata]
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        name = _str(entry.get("name"))
        if cloud and name.casefold() != cloud.casefold():
            continue
        auth = entry.get("authentication")
        auth = auth if isinstance(auth, dict) else {}
        suffixes = entry.get("suffixes")
        suffixes = suffixes if isinstance(suffixes, dict) else {}
        audiences = auth.get("audiences")
        audience = _str(audiences[0]) if isinstance(audiences, list) and audiences else ""
        known = KNOWN_CLOUDS.get(name.upper())
        login = _str(auth.get("loginEndpoint")).rstrip("/")
        return Environment(
            name=name or base.name,
            authority_host=login or base.authority_host,
            acr_suffix=_str(suffixes.get("acrLoginServer")) or base.acr_suffix,
            # A well-known cloud keeps its ACR scope; a custom one uses its ARM audience.
            acr_scope=known.acr_scope
            if known
            else _scope_for(audience)
            if audience
            else base.acr_scope,
        )
    return base


def fetch_metadata(endpoint: str, timeout: float = 10.0) -> Any:
    """GET the ARM metadata document of ``endpoint`` (``resourceManagerEndpoint``).

    Raises:
        CloudError: unreachable endpoint, non-200 status, oversized or invalid JSON.
    """
    import requests

    from credprov.sdk.cacerts import CertPoolError
    from credprov_acr._http import ca_file

    url = f"{endpoint.rstrip('/')}/metadata/endpoints?api-version={METADATA_API_VERSION}"
    where = endpoint.rstrip("/")
    try:
        verify = ca_file()
    except CertPoolError as exc:
        raise CloudError(f"cannot read cloud metadata from {where}: {exc}") from None
    try:
        with requests.get(url, timeout=(5.0, timeout), stream=True, verify=verify) as resp:
            if resp.status_code != 200:
                raise CloudError(f"cloud metadata from {where} answered HTTP {resp.status_code}")
            body = read_capped(resp.iter_content(CHUNK_BYTES), _MAX_METADATA_BYTES)
    except requests.RequestException as exc:
        raise CloudError(f"cannot read cloud metadata from {where}: {type(exc).__name__}") from None
    except BodyTooLarge:
        raise CloudError(f"cloud metadata from {where} is too large") from None
    try:
        return json.loads(body)
    except ValueError:
        raise CloudError(f"cloud metadata from {where} is not valid JSON") from None


def resolve(cloud: str, resource_manager_endpoint: str = "") -> Environment:
    """The environment for ``azure.json``'s ``cloud`` and ``resourceManagerEndpoint``.

    Raises:
        CloudError: see :func:`from_environment_file` and :func:`fetch_metadata`.
    """
    env = known_environment(cloud)
    if cloud.strip().upper() == STACK:
        path = os.environ.get(ENVIRONMENT_FILEPATH_ENV, "")
        if path:
            env = from_environment_file(path)
    if resource_manager_endpoint.strip():
        env = apply_metadata(env, cloud.strip(), fetch_metadata(resource_manager_endpoint.strip()))
    return env
