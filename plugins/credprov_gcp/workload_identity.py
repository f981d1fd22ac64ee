"""Workload identity image pulls (KEP-4412): the pod's service-account token, exchanged at STS.

Active only when ``--identity-provider`` is set and the request's service account is
annotated ``iam.gke.io/enable-wi-image-pull: "true"`` (the kubelet passes the annotation when
the provider's ``tokenAttributes`` lists it). The service-account token from the request is
exchanged at the Security Token Service for a federated access token of the principal
``identitynamespace:<project>.svc.id.goog:<identity provider>``, used directly as the
password (no IAM impersonation), as upstream. Failures fail the request: there is no fallback
to the node's service account.

The exchange uses google-auth's RFC 8693 client (``google.oauth2.sts.Client``), which posts a
form (upstream posts JSON; STS accepts both) with upstream's fields.
"""

from __future__ import annotations

import json
import re
from typing import Any

from credprov.sdk import Request
from credprov.sdk.http import status_text
from credprov_gcp._http import HttpFailure, HttpResponse, Transport, attempts_note, safe_url
from credprov_gcp.errors import GCPError
from credprov_gcp.settings import Settings
from credprov_gcp.tokens import AccessToken, token_from_json

ANNOTATION = "iam.gke.io/enable-wi-image-pull"
GRANT_TYPE = "urn:ietf:params:oauth:grant-type:token-exchange"
REQUESTED_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
SUBJECT_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:jwt"
SCOPE = "https://www.googleapis.com/auth/cloud-platform"
STS_TIMEOUT = 30.0

# Anything token-like in a server's error text (JWT segments, access tokens) is dropped.
_JWT_LIKE = re.compile(r"[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*")
_TOKEN_LIKE = re.compile(r"[A-Za-z0-9_+/=.-]{20,}")
_MAX_DESCRIPTION = 200


def enabled(settings: Settings, request: Request) -> bool:
    """Whether this request pulls with workload identity (upstream's condition)."""
    return (
        settings.auth_flow == "gcr"
        and bool(settings.identity_provider)
        and request.service_account_annotations.get(ANNOTATION) == "true"
    )


def audience(project_id: str, identity_provider: str) -> str:
    """The STS audience: the cluster's workload identity pool and provider."""
    return f"identitynamespace:{project_id}.svc.id.goog:{identity_provider}"


def _safe_text(text: str, secret: str) -> str:
    text = " ".join(text.split())
    if secret:
        text = text.replace(secret, "<redacted>")
    text = _TOKEN_LIKE.sub("<redacted>", _JWT_LIKE.sub("<redacted>", text))
    return text if len(text) <= _MAX_DESCRIPTION else text[: _MAX_DESCRIPTION - 1] + "…"


def _oauth_error(body: bytes, secret: str) -> str:
    """``invalid_grant: <description>`` from an OAuth error body, sanitized; or nothing."""
    try:
        doc = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return ""
    if not isinstance(doc, dict) or not isinstance(doc.get("error"), str):
        return ""
    parts = [doc["error"]]
    if isinstance(doc.get("error_description"), str) and doc["error_description"]:
        parts.append(doc["error_description"])
    return ": " + _safe_text(": ".join(parts), secret)


def exchange(settings: Settings, request: Request, transport: Transport) -> AccessToken:
    """The federated access token for the request's service account.

    Raises:
        GCPError: no service-account token in the request, STS unreachable, an error status,
            or a malformed or expired token (no fallback to the node's service account).
    """
    if not request.service_account_token:
        raise GCPError(
            f"workload identity: the service account is annotated {ANNOTATION}=true but the "
            "request has no service account token (list the annotation in the provider's "
            "tokenAttributes and set serviceAccountTokenAudience)"
        )
    if not settings.project_id:
        raise GCPError(
            "workload identity: --project-id is required when --identity-provider is set"
        )

    from google.auth import exceptions
    from google.oauth2 import sts

    endpoint = settings.sts_endpoint
    what = f"workload identity: token exchange at {safe_url(endpoint)}"
    client = sts.Client(endpoint)

    def request_with_timeout(**kwargs: Any) -> HttpResponse:
        kwargs.setdefault("timeout", STS_TIMEOUT)
        return transport(**kwargs)

    try:
        doc = client.exchange_token(
            request_with_timeout,
            grant_type=GRANT_TYPE,
            subject_token=request.service_account_token,
            subject_token_type=SUBJECT_TOKEN_TYPE,
            audience=audience(settings.project_id, settings.identity_provider),
            scopes=[SCOPE],
            requested_token_type=REQUESTED_TOKEN_TYPE,
        )
    except HttpFailure as exc:
        problem = "unreachable" if exc.unreachable else "failed"
        raise GCPError(f"{what}: {problem} ({exc.detail})") from None
    except exceptions.OAuthError:
        resp = transport.last_response
        status = status_text(resp.status) if resp is not None else "error"
        detail = _oauth_error(resp.data, request.service_account_token) if resp else ""
        attempts = attempts_note(resp.attempts) if resp is not None else ""
        raise GCPError(f"{what}: HTTP {status}{attempts}{detail}") from None
    except (ValueError, UnicodeDecodeError):
        raise GCPError(f"{what}: malformed token response (not JSON)") from None
    return token_from_json(doc, what, "workload identity")
