"""Which Azure identity answers a request, and its AAD access token.

The choice is upstream's, in upstream's order (:func:`choose`; the order is the policy, so it
is written once, as a table):

====  ==========================================  ==========================================
 #    when                                        credential
====  ==========================================  ==========================================
 0    ``useManagedIdentityExtension`` is false    service principal: ``aadClientId`` /
                                                  ``aadClientSecret`` handed to the kubelet
                                                  as they are (no token exchange at all)
 1    not mirrored, ``--ib-sni-name`` set and     identity bindings: the token at the AKS
      the request carries a token                 endpoint, client id from the
                                                  ``kubernetes.azure.com/acr-client-id``
                                                  annotation, else ``--ib-default-client-id``
 2    not mirrored and the request carries a      ``ClientAssertionCredential``: the token as
      service-account token (KEP-4412)            client assertion, tenant and client id from
                                                  the ``kubernetes.azure.com/acr-tenant-id`` /
                                                  ``acr-client-id`` annotations (both required)
 3    otherwise (also every mirrored image)       ``ManagedIdentityCredential``: the node's
                                                  identity; ``userAssignedIdentityID``
                                                  holding ``/SUBSCRIPTIONS/`` is a resource
                                                  id, else a client id
====  ==========================================  ==========================================

Upstream builds the credential before it knows whether the image is ACR and whether the
managed-identity gate (row 0) applies, so a token without annotations fails even a request
that needs no token; here a credential is only built when it is used. Row 1 needs a token:
upstream fails a token-less request when ``--ib-sni-name`` is set, credprov lets it fall
through to the node identity, as upstream does for row 2.

The exchange tenant (the ``tenant`` form field of ``/oauth2/exchange``) is that of the
credential: the annotation's (or ``--ib-default-tenant-id``) for rows 1 and 2, and
``azure.json``'s ``tenantId`` for row 3 and as the fallback (upstream always sends
``tenantId``, which ACR refuses when the pod's identity lives in another tenant).

``azure.identity`` is imported only inside :func:`get_token`.
"""

from __future__ import annotations

import os
from typing import Any, NamedTuple

from credprov.sdk import ProviderError
from credprov_acr import _http
from credprov_acr.config import AzureConfig
from credprov_acr.identity_bindings import IdentityBindings

CLIENT_ID_ANNOTATION = "kubernetes.azure.com/acr-client-id"
TENANT_ID_ANNOTATION = "kubernetes.azure.com/acr-tenant-id"

SERVICE_PRINCIPAL = "service principal"
IDENTITY_BINDINGS = "identity bindings"
SERVICE_ACCOUNT = "service account token"
MANAGED_IDENTITY = "managed identity"

#: Advanced/test knob honoured by azure-identity itself; it overrides the cloud's authority.
AUTHORITY_HOST_ENV = "AZURE_AUTHORITY_HOST"

Log = _http.Log


class CredentialError(ProviderError):
    """No credential can be built or it yields no token; one line, never a secret."""


class Choice(NamedTuple):
    """The credential :func:`choose` picked for a request."""

    method: str
    client_id: str = ""
    tenant_id: str = ""  # AAD tenant of a service-account / identity-bindings credential
    resource_id: str = ""  # user-assigned identity given by resource id
    exchange_tenant: str = ""  # ``tenant`` sent to /oauth2/exchange

    def describe(self) -> str:
        """For logs and messages (ids are not secrets)."""
        details = []
        if self.client_id:
            details.append(f"client id {self.client_id}")
        if self.resource_id:
            details.append(f"resource id {self.resource_id}")
        if self.tenant_id:
            details.append(f"tenant {self.tenant_id}")
        return self.method + (f" ({', '.join(details)})" if details else "")


def choose(
    cfg: AzureConfig,
    ib: IdentityBindings,
    token: str,
    annotations: dict[str, str],
    mirrored: bool,
) -> Choice:
    """The credential for a request (see the module docstring's table).

    Raises:
        CredentialError: row 1 or 2 applies but a client or tenant id is missing.
    """
    if not cfg.use_managed_identity_extension:
        return Choice(SERVICE_PRINCIPAL, client_id=cfg.aad_client_id)
    if not mirrored and token and ib.enabled:
        client_id = annotations.get(CLIENT_ID_ANNOTATION) or ib.default_client_id
        if not client_id:
            raise CredentialError(
                f"client ID not found in service account annotations (checked "
                f"{CLIENT_ID_ANNOTATION}) and no default client ID configured"
            )
        tenant = annotations.get(TENANT_ID_ANNOTATION) or ib.default_tenant_id
        return Choice(
            IDENTITY_BINDINGS,
            client_id=client_id,
            tenant_id=tenant,
            exchange_tenant=tenant or cfg.tenant_id,
        )
    if not mirrored and token:
        client_id = annotations.get(CLIENT_ID_ANNOTATION, "")
        if not client_id:
            raise CredentialError(
                f"client id annotation {CLIENT_ID_ANNOTATION} is not found or the value is empty"
            )
        tenant = annotations.get(TENANT_ID_ANNOTATION, "")
        if not tenant:
            raise CredentialError(
                f"tenant id annotation {TENANT_ID_ANNOTATION} is not found or the value is empty"
            )
        return Choice(
            SERVICE_ACCOUNT, client_id=client_id, tenant_id=tenant, exchange_tenant=tenant
        )
    identity = cfg.user_assigned_identity_id
    if identity and "/SUBSCRIPTIONS/" in identity.upper():
        return Choice(MANAGED_IDENTITY, resource_id=identity, exchange_tenant=cfg.tenant_id)
    return Choice(MANAGED_IDENTITY, client_id=identity, exchange_tenant=cfg.tenant_id)


def _summary(exc: BaseException) -> str:
    """The status and first line of an azure-identity error (the caller scrubs secrets and
    shortens: a cut here could leave part of a token that can no longer be scrubbed)."""
    text = str(exc).strip()
    text = " ".join(text.splitlines()[0].split()) if text else type(exc).__name__
    status = getattr(exc, "status_code", None)
    return f"{_http.status_text(status)}: {text}" if isinstance(status, int) else text


def _quiet_azure_logging() -> None:
    """azure-identity logs failures (with response bodies) at WARNING; with no handler
    configured Python would print them on stderr, where the kubelet shows them."""
    import logging

    for name in ("azure", "msal", "urllib3"):
        logger = logging.getLogger(name)
        logger.addHandler(logging.NullHandler())
        logger.propagate = False


def _azure_credential(
    choice: Choice, authority_host: str, assertion: str, pipeline: dict[str, Any]
) -> Any:
    """The azure-identity credential of a service-account or managed-identity choice."""
    if choice.method == SERVICE_ACCOUNT:
        from azure.identity import ClientAssertionCredential

        authority = os.environ.get(AUTHORITY_HOST_ENV, "").strip() or authority_host
        return ClientAssertionCredential(
            choice.tenant_id, choice.client_id, lambda: assertion, authority=authority, **pipeline
        )
    if choice.method != MANAGED_IDENTITY:  # pragma: no cover - callers never ask
        raise CredentialError(f"no token for the {choice.method} credential")
    from azure.identity import ManagedIdentityCredential

    if choice.resource_id:
        return ManagedIdentityCredential(
            identity_config={"resource_id": choice.resource_id}, **pipeline
        )
    return ManagedIdentityCredential(client_id=choice.client_id or None, **pipeline)


def get_token(
    choice: Choice,
    scope: str,
    authority_host: str,
    assertion: str = "",
    ib: IdentityBindings | None = None,
    sleep: _http.Sleep = _http.sleep,
    log: Log | None = None,
) -> str:
    """An AAD access token for ``scope`` from the chosen credential.

    Args:
        choice: from :func:`choose` (not the service-principal row).
        scope: e.g. ``https://containerregistry.azure.net/.default``.
        authority_host: the cloud's AAD authority; ``$AZURE_AUTHORITY_HOST`` wins.
        assertion: the request's service-account token (rows 1 and 2).

    Raises:
        CredentialError: the credential yields no token.
    """
    log = log or (lambda level, message: None)
    retries = _http.max_retries()
    if choice.method == IDENTITY_BINDINGS:
        from credprov_acr import identity_bindings

        token, _ = identity_bindings.get_token(
            ib or IdentityBindings(), choice.client_id, assertion, scope, sleep, retries, log
        )
        return token

    _quiet_azure_logging()
    from azure.core.exceptions import AzureError

    from credprov.sdk.cacerts import CertPoolError

    try:
        verify = _http.ca_file()
    except CertPoolError as exc:
        raise CredentialError(
            f"failed to get an AAD token with the {choice.describe()}: {exc}"
        ) from None

    # azure-core's retry policy, bounded: azure-identity's defaults (IMDS: 5 retries, backoff
    # up to 60 s, 75 s for a 410) retry past the kubelet's deadline.
    pipeline: dict[str, Any] = {
        "retry_total": retries,
        "retry_backoff_factor": 0.5,
        "retry_backoff_max": _http.MAX_BACKOFF_SECONDS,
        "connection_timeout": _http.TIMEOUT[0],
        "read_timeout": _http.TIMEOUT[1],
        # the node's CA store, as azidentity's Go client trusts it (not REQUESTS_CA_BUNDLE)
        "connection_verify": verify,
    }
    try:
        credential = _azure_credential(choice, authority_host, assertion, pipeline)
        with credential:
            return str(credential.get_token(scope).token)
    except CredentialError:
        raise
    except (AzureError, ValueError) as exc:
        raise CredentialError(
            f"failed to get an AAD token with the {choice.describe()}: {_summary(exc)}"
        ) from None
