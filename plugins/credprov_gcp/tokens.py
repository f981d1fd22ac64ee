"""Access tokens and the cacheDuration they allow.

Upstream ignores ``expires_in`` and answers ``cacheDuration: 0s`` (every pull asks the
metadata server again) or the operator's ``KUBE_SIDECAR_CACHE_DURATION`` (which may outlive
the token). Here the duration is the token's remaining lifetime minus
:data:`EXPIRY_SKEW_SECONDS`, and ``KUBE_SIDECAR_CACHE_DURATION``, when set, can only shorten
it: a cached credential never outlives its token (GoogleCloudPlatform/docker-credential-gcr#183).
A token without ``expires_in`` (absent or null) is used as upstream uses it, with an unknown
lifetime, so it is answered with ``cacheDuration: 0s`` (not cached).
"""

from __future__ import annotations

import json
import math
from typing import Any

from credprov.sdk import SECOND, format_duration
from credprov_gcp.errors import GCPError

#: Kept back from a token's lifetime: the kubelet looks credentials up before queueing a
#: pull, and serialized pulls can wait minutes; google-auth refreshes 3m45s early.
EXPIRY_SKEW_SECONDS = 300

#: Google access tokens live at most an hour; a larger ``expires_in`` is not trusted.
MAX_LIFETIME_SECONDS = 3600


class AccessToken:
    """A bearer token for Google registries and how long it stays valid."""

    __slots__ = ("expires_in", "source", "token")

    def __init__(self, token: str, expires_in: float | None, source: str) -> None:
        self.token = token
        self.expires_in = expires_in
        self.source = source

    def __repr__(self) -> str:  # never the token
        return f"AccessToken(<redacted>, expires_in={self.expires_in!r}, source={self.source!r})"


def token_from_json(doc: Any, what: str, source: str) -> AccessToken:
    """An OAuth token response (``access_token``, ``expires_in``) as an :class:`AccessToken`;
    ``expires_in`` None when the response has none (upstream never reads it).

    Raises:
        GCPError: not an object, no token, a non-numeric ``expires_in``, or already expired.
    """
    if not isinstance(doc, dict):
        raise GCPError(f"{what}: malformed token response (not a JSON object)")
    token = doc.get("access_token")
    if not isinstance(token, str) or not token:
        raise GCPError(f"{what}: malformed token response (no access_token)")
    expires_in = doc.get("expires_in")
    if expires_in is None:
        return AccessToken(token, None, source)
    if (
        isinstance(expires_in, bool)
        or not isinstance(expires_in, int | float)
        or not math.isfinite(expires_in)
    ):
        raise GCPError(f"{what}: malformed token response (no numeric expires_in)")
    if expires_in <= 0:
        raise GCPError(f"{what}: the token has already expired (expires_in {expires_in:g}s)")
    return AccessToken(token, float(expires_in), source)


def parse_token_response(data: bytes, what: str, source: str) -> AccessToken:
    """:func:`token_from_json` of a raw body; the body is never quoted in errors."""
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        raise GCPError(f"{what}: malformed token response (not JSON)") from None
    return token_from_json(doc, what, source)


def token_cache_duration(expires_in: float | None, sidecar_ns: int | None) -> str:
    """The Go duration to answer with for a token valid ``expires_in`` more seconds (None:
    unknown, so ``0s``).

    ``sidecar_ns`` is ``KUBE_SIDECAR_CACHE_DURATION`` (None when unset): the smaller wins,
    so ``0s`` still disables caching and a negative value is passed on as upstream does.
    """
    if expires_in is None:
        expires_in = 0
    usable = math.floor(min(expires_in, MAX_LIFETIME_SECONDS)) - EXPIRY_SKEW_SECONDS
    token_ns = max(usable, 0) * SECOND
    return format_duration(token_ns if sidecar_ns is None else min(sidecar_ns, token_ns))


def token_expires_at(token: AccessToken, now: float) -> float | None:
    """When ``token`` expires (Unix seconds), for the telemetry's expiry gauge: ``now`` plus
    its ``expires_in`` (at most :data:`MAX_LIFETIME_SECONDS`); None when it gave none."""
    if token.expires_in is None:
        return None
    return now + min(max(token.expires_in, 0.0), MAX_LIFETIME_SECONDS)
