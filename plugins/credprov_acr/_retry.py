"""urllib3's ``Retry`` for the ACR endpoints: the ``/v2/`` challenge, ``/oauth2/exchange`` and
the identity-bindings token endpoint.

Upstream retries nothing (and its HTTP client waits up to 60 s, the kubelet's whole
deadline), so one 429 fails the pull. Here urllib3 retries those requests (through the
``requests`` session's adapter for the challenge and exchange, per request on the
identity-bindings pool) on 429, 5xx and connection failures, GET and POST alike (both
POSTs only mint a token and may be repeated), at most ``$CREDPROV_ACR_MAX_RETRIES`` times
(:func:`credprov_acr._http.max_retries`), waiting ``Retry-After`` or urllib3's backoff
(the first retry at once, then 0.5 s, 1 s, … plus jitter, at most 5 s). After the last
attempt the last response is returned (``raise_on_status=False``) so the callers' messages
name its status.

The AAD and IMDS calls need none of this: azure-identity sends them through azure-core's
own retry policy (configured in :mod:`credprov_acr.credentials`).

:class:`LoggedRetry` adds only what ``Retry`` has no setting for: the wait goes through an
injected ``sleep`` (tests never wait) and is logged at ``-v 2``; ``Retry-After`` is capped at
:data:`~credprov_acr._http.MAX_BACKOFF_SECONDS` on every urllib3 2.x (``retry_after_max``
is recent), and an HTTP date that does not parse falls back to the backoff instead of
failing the request.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from urllib3.exceptions import InvalidHeader
from urllib3.util.retry import Retry

from credprov_acr import _http

#: urllib3's ``backoff_factor`` (retry n waits ``0.25 * 2 ** (n - 1)`` s, none for the first)
#: and the most jitter added to it.
BACKOFF_FACTOR = 0.25

Log = Callable[[int, str], None]


@dataclass(frozen=True)
class _Waiting:
    sleep: _http.Sleep
    log: Log
    retries: int


class LoggedRetry(Retry):
    """urllib3's ``Retry``, waiting through an injected sleep (see the module docstring)."""

    waiting: _Waiting

    def new(self, **kw: Any) -> LoggedRetry:
        copy = super().new(**kw)
        copy.waiting = self.waiting
        return copy

    def sleep(self, response: Any = None) -> None:
        wait = None
        if response is not None:
            try:
                wait = self.get_retry_after(response)
            except InvalidHeader:  # an HTTP date that does not parse
                wait = None
        wait = min(self.get_backoff_time() if wait is None else wait, _http.MAX_BACKOFF_SECONDS)
        last = self.history[-1]
        why = _http.status_text(last.status) if last.status else type(last.error).__name__
        self.waiting.log(
            2, f"{last.url}: {why}; retry {len(self.history)}/{self.waiting.retries} in {wait:.1f}s"
        )
        self.waiting.sleep(wait)


def retry(retries: int, sleep: _http.Sleep, log: Log) -> LoggedRetry:
    """The retries of one client (``retries``: how many after the first attempt)."""
    policy = LoggedRetry(
        total=retries,
        status_forcelist=_http.RETRY_STATUSES,
        allowed_methods=Retry.DEFAULT_ALLOWED_METHODS | {"POST"},
        backoff_factor=BACKOFF_FACTOR,
        backoff_jitter=BACKOFF_FACTOR,
        backoff_max=_http.MAX_BACKOFF_SECONDS,
        respect_retry_after_header=True,
        raise_on_status=False,
    )
    policy.waiting = _Waiting(sleep, log, retries)
    return policy
