"""Credential choice, in upstream's order (``TestNewAcrProvider_CredentialSelection`` and the
``TestNewAcrProvider_WithServiceAccountToken*`` cases), and the exchange tenant."""

from __future__ import annotations

from typing import Any

import pytest
from credprov_acr.config import AzureConfig
from credprov_acr.credentials import (
    CLIENT_ID_ANNOTATION,
    IDENTITY_BINDINGS,
    MANAGED_IDENTITY,
    SERVICE_ACCOUNT,
    SERVICE_PRINCIPAL,
    TENANT_ID_ANNOTATION,
    CredentialError,
    choose,
)
from credprov_acr.identity_bindings import IdentityBindings

MI = {"use_managed_identity_extension": True, "tenant_id": "tenant-node"}
IB = IdentityBindings("ib.example", "ib-default-client", "ib-default-tenant", "10.0.0.1")
BOTH = {CLIENT_ID_ANNOTATION: "sa-client", TENANT_ID_ANNOTATION: "sa-tenant"}
RES_ID = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.ManagedIdentity/x/id"

# (name, config, ib flags, token, annotations, mirrored, expected Choice fields or error)
CASES: list[tuple[str, dict[str, Any], IdentityBindings, str, dict[str, str], bool, Any]] = [
    ("no MI flag: service principal", {"aad_client_id": "sp"}, IdentityBindings(), "", {}, False,
     {"method": SERVICE_PRINCIPAL, "client_id": "sp"}),
    ("no MI flag: a token is ignored", {}, IdentityBindings(), "tok", BOTH, False,
     {"method": SERVICE_PRINCIPAL}),
    ("no MI flag: a token without annotations does not fail", {}, IdentityBindings(), "tok", {},
     False, {"method": SERVICE_PRINCIPAL}),
    ("no MI flag: identity bindings are ignored", {}, IB, "tok", BOTH, False,
     {"method": SERVICE_PRINCIPAL}),
    ("MI, no token: system-assigned", MI, IdentityBindings(), "", {}, False,
     {"method": MANAGED_IDENTITY, "client_id": "", "exchange_tenant": "tenant-node"}),
    ("MI, user-assigned client id", {**MI, "user_assigned_identity_id": "mi-client"},
     IdentityBindings(), "", {}, False, {"method": MANAGED_IDENTITY, "client_id": "mi-client"}),
    ("MI, user-assigned resource id", {**MI, "user_assigned_identity_id": RES_ID.upper()},
     IdentityBindings(), "", {}, False,
     {"method": MANAGED_IDENTITY, "client_id": "", "resource_id": RES_ID.upper()}),
    ("MI, token with annotations: service account", MI, IdentityBindings(), "tok", BOTH, False,
     {"method": SERVICE_ACCOUNT, "client_id": "sa-client", "tenant_id": "sa-tenant",
      "exchange_tenant": "sa-tenant"}),
    ("MI, token, no client id annotation", MI, IdentityBindings(), "tok",
     {TENANT_ID_ANNOTATION: "t"}, False,
     "client id annotation kubernetes.azure.com/acr-client-id is not found or the value is empty"),
    ("MI, token, empty client id annotation", MI, IdentityBindings(), "tok",
     {CLIENT_ID_ANNOTATION: "", TENANT_ID_ANNOTATION: "t"}, False, "client id annotation"),
    ("MI, token, no tenant id annotation", MI, IdentityBindings(), "tok",
     {CLIENT_ID_ANNOTATION: "c"}, False,
     "tenant id annotation kubernetes.azure.com/acr-tenant-id is not found or the value is empty"),
    ("MI, token, empty tenant id annotation", MI, IdentityBindings(), "tok",
     {CLIENT_ID_ANNOTATION: "c", TENANT_ID_ANNOTATION: ""}, False, "tenant id annotation"),
    ("MI, mirrored image: node identity even with a token", MI, IdentityBindings(), "tok", BOTH,
     True, {"method": MANAGED_IDENTITY}),
    ("MI, mirrored image: node identity even with identity bindings", MI, IB, "tok", BOTH, True,
     {"method": MANAGED_IDENTITY}),
    ("MI, identity bindings first", MI, IB, "tok", BOTH, False,
     {"method": IDENTITY_BINDINGS, "client_id": "sa-client", "tenant_id": "sa-tenant",
      "exchange_tenant": "sa-tenant"}),
    ("MI, identity bindings: default client and tenant", MI, IB, "tok", {}, False,
     {"method": IDENTITY_BINDINGS, "client_id": "ib-default-client",
      "tenant_id": "ib-default-tenant", "exchange_tenant": "ib-default-tenant"}),
    ("MI, identity bindings: no tenant anywhere falls back to azure.json",
     MI, IdentityBindings("ib.example", "c", "", "10.0.0.1"), "tok", {}, False,
     {"method": IDENTITY_BINDINGS, "tenant_id": "", "exchange_tenant": "tenant-node"}),
    ("MI, identity bindings: no client id at all", MI,
     IdentityBindings("ib.example", "", "", "10.0.0.1"), "tok", {}, False,
     "client ID not found in service account annotations (checked "
     "kubernetes.azure.com/acr-client-id) and no default client ID configured"),
    ("MI, identity bindings without a token: node identity", MI, IB, "", {}, False,
     {"method": MANAGED_IDENTITY}),
]  # fmt: skip


@pytest.mark.parametrize(
    ("config", "ib", "token", "annotations", "mirrored", "expected"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_choose(
    config: dict[str, Any],
    ib: IdentityBindings,
    token: str,
    annotations: dict[str, str],
    mirrored: bool,
    expected: Any,
) -> None:
    cfg = AzureConfig(path="azure.json", **config)
    if isinstance(expected, str):
        with pytest.raises(CredentialError) as err:
            choose(cfg, ib, token, annotations, mirrored)
        assert str(err.value).startswith(expected)
        return
    choice = choose(cfg, ib, token, annotations, mirrored)
    for name, value in expected.items():
        assert getattr(choice, name) == value, name
