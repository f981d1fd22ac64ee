"""The kubelet's service-account token cache (``pkg/kubelet/token``), for the emulator.

The kubelet does not send a TokenRequest for every image lookup of a KEP-4412 provider:
its token manager keeps each token it got, keyed by everything the request asked for (the
service account and the UID precondition, the audiences, the expiration, the bound
object), and asks the API server again only when

* the token is older than 24 hours, or
* less than 20% of its lifetime is left.

When a refresh fails, a token that has not expired yet is still served (and the failure
logged); an expired one, or no token at all, is an error. Pods sharing a service account
still get distinct tokens (each is bound to its own pod), so a ``cacheType: Token``
provider runs once per pod; one pod's repeated lookups reuse its token and hit the
provider's cache.

Differences from the kubelet, all in what a test can observe and none in any answer:

* no random jitter (upstream subtracts up to 10 s from both refresh thresholds), so
  refreshes happen at predictable times under an injected clock;
* concurrent misses for one key share one TokenRequest (singleflight): the kubelet would
  send one each and hand the callers different tokens, so concurrent lookups of one pod
  would not share a plugin execution. Serial lookups behave identically.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from credprov._go.singleflight import Group
from credprov.base.clock import Clock, RealClock
from credprov.errors import NodeAccessError

__all__ = [
    "MAX_TTL_SECONDS",
    "IssuedToken",
    "TokenManager",
    "TokenManagerError",
    "TokenRequestKey",
]

log = logging.getLogger("credprov.nodeauth")

#: A token older than this is refreshed whatever its expiry (upstream ``maxTTL``).
MAX_TTL_SECONDS = 24 * 60 * 60
#: Refresh when less than this share of the lifetime is left (upstream: 20%).
REFRESH_REMAINING_PERCENT = 20


@dataclass(frozen=True)
class TokenRequestKey:
    """What one TokenRequest asks for; equal keys share a cached token.

    ``service_account_uid`` is the request's UID precondition (``""`` for none);
    ``expiration_seconds`` None leaves the API server's default (one hour).
    """

    namespace: str
    service_account: str
    service_account_uid: str
    audiences: tuple[str, ...]
    pod_name: str
    pod_uid: str
    expiration_seconds: int | None = None


@dataclass(frozen=True)
class IssuedToken:
    """A TokenRequest's status: the token (never in ``repr``) and when it expires.

    ``expiration_seconds`` is the lifetime the API server granted (``spec`` after
    defaulting), ``expires_at`` Unix seconds.
    """

    token: str = field(repr=False)
    expires_at: float
    expiration_seconds: int

    @property
    def issued_at(self) -> float:
        """When the token was issued (its expiry minus its lifetime)."""
        return self.expires_at - self.expiration_seconds


class TokenManagerError(NodeAccessError):
    """No usable token: the request failed and nothing unexpired is cached.

    ``cause`` is the request's own error, for callers that map it to their type.
    """

    def __init__(self, message: str, cause: Exception) -> None:
        super().__init__(message)
        self.cause = cause


class TokenManager:
    """Tokens by :class:`TokenRequestKey`, requested through ``request`` when needed.

    Args:
        request: sends one TokenRequest; returns the token or raises (its ``str`` must not
            quote a token).
        clock: the issuer's :class:`credprov.base.clock.Clock` (its ``time()`` stamps tokens).

    Thread-safe.
    """

    def __init__(
        self,
        request: Callable[[TokenRequestKey], IssuedToken],
        clock: Clock | None = None,
    ) -> None:
        self._request = request
        self._clock = clock or RealClock()
        self._lock = threading.Lock()
        self._cache: dict[TokenRequestKey, IssuedToken] = {}
        self._flights: Group[IssuedToken] = Group()
        #: TokenRequests sent (successful or not).
        self.requests = 0

    def get(self, key: TokenRequestKey) -> str:
        """A token for ``key``: the cached one while it is fresh, else a new one.

        Raises:
            TokenManagerError: ``failed to fetch token: <err>`` (nothing cached), or
                ``token … expired and refresh failed: <err>``.
        """
        with self._lock:
            cached = self._cache.get(key)
        if cached is not None and not self._requires_refresh(cached):
            return cached.token
        try:
            issued, _shared = self._flights.do(repr(key), lambda: self._fetch(key))
        except Exception as exc:
            if cached is None:
                raise TokenManagerError(f"failed to fetch token: {exc}", exc) from None
            if self._expired(cached):
                raise TokenManagerError(
                    f"token for {_describe(key)} expired and refresh failed: {exc}", exc
                ) from None
            log.error("couldn't update token for %s: %s", _describe(key), exc)
            return cached.token
        return issued.token

    def _fetch(self, key: TokenRequestKey) -> IssuedToken:
        with self._lock:
            self.requests += 1
        issued = self._request(key)
        with self._lock:
            self._cache[key] = issued
        return issued

    def _expired(self, token: IssuedToken) -> bool:
        return self._clock.time() >= token.expires_at

    def _requires_refresh(self, token: IssuedToken) -> bool:
        now = self._clock.time()
        if now > token.issued_at + MAX_TTL_SECONDS:
            return True
        margin = token.expiration_seconds * REFRESH_REMAINING_PERCENT // 100
        return now > token.expires_at - margin

    def delete_pod(self, pod_uid: str) -> None:
        """Forget the tokens bound to a pod (``DeleteServiceAccountToken``: pod deleted)."""
        with self._lock:
            for key in [k for k in self._cache if k.pod_uid == pod_uid]:
                del self._cache[key]

    def cleanup(self) -> None:
        """Drop expired tokens (the kubelet does this every minute)."""
        with self._lock:
            for key in [k for k, t in self._cache.items() if self._expired(t)]:
                del self._cache[key]

    def __len__(self) -> int:
        with self._lock:
            return len(self._cache)


def _describe(key: TokenRequestKey) -> str:
    return (
        f"{key.namespace}/{key.service_account} (pod {key.pod_name}, "
        f"audiences {','.join(key.audiences)})"
    )
