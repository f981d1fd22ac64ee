"""HTTP settings shared by the ACR exchange, the identity-bindings client and the AAD calls.

Every request has its own timeouts well inside the kubelet's minute, and is retried at most
:func:`max_retries` times: by the cloud plugins' urllib3 ``Retry`` (:func:`retry`, from
:class:`credprov.sdk.http.Retries`) for the ACR endpoints, by azure-core's retry policy for
AAD and IMDS (:mod:`credprov_acr.credentials`).

Upstream retries nothing (and its HTTP client waits up to 60 s, the kubelet's whole
deadline), so one 429 fails the pull. Here the ``/v2/`` challenge, ``/oauth2/exchange`` and
the identity-bindings token endpoint are retried (through the ``requests`` session's adapter
for the challenge and exchange, per request on the identity-bindings pool) on 429, 5xx and
connection failures, GET and POST alike (both POSTs only mint a token and may be repeated),
waiting ``Retry-After`` (at most :data:`MAX_BACKOFF_SECONDS`; an HTTP date that does not
parse falls back to the backoff) or urllib3's backoff (the first retry at once, then 0.5 s,
1 s, … plus jitter), each wait logged at ``-v 2`` and taken through an injected ``sleep``
(tests never wait). After the last attempt the last response is returned so the callers'
messages name its status.

HTTPS verifies against the node's CA store as a Go client would (:func:`ca_file`).

Only the standard library (and :mod:`credprov.sdk.http`, which imports urllib3 only when a
``Retry`` is made) is imported here.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from credprov.sdk.http import Retries, RetryEvent

if TYPE_CHECKING:
    from urllib3.util.retry import Retry

#: Advanced/test knob: how many times a throttled or failed request is retried (default 2).
MAX_RETRIES_ENV = "CREDPROV_ACR_MAX_RETRIES"
DEFAULT_MAX_RETRIES = 2

#: (connect, read) timeouts of every request, in seconds.
TIMEOUT = (5.0, 15.0)

#: Longest wait between two attempts, whatever ``Retry-After`` says.
MAX_BACKOFF_SECONDS = 5.0

#: urllib3's ``backoff_factor`` (retry n waits ``0.25 * 2 ** (n - 1)`` s, none for the first)
#: and the most jitter added to it.
BACKOFF_FACTOR = 0.25

#: Cap on the bodies read from the ACR endpoints (upstream: 10 MiB).
MAX_BODY_BYTES = 10 * 1024 * 1024

USER_AGENT = "kubernetes-credentialprovider-acr"

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})

Sleep = Callable[[float], None]
Log = Callable[[int, str], None]


def ca_file() -> str:
    """The PEM file of the CAs every HTTPS request verifies against: the node's store, found
    as upstream's Go client finds it (:mod:`credprov.sdk.cacerts`: ``SSL_CERT_FILE``,
    ``SSL_CERT_DIR``, then Go's list). ``REQUESTS_CA_BUNDLE`` and ``CURL_CA_BUNDLE`` are not
    read: the request passes this file explicitly. Identity bindings trust their own CA
    file instead, as upstream does.

    Raises:
        credprov.sdk.cacerts.CertPoolError: the pool's file cannot be written.
    """
    from credprov.sdk.cacerts import system_cert_pool

    return system_cert_pool().ca_file()


def trusted() -> str:
    """What :func:`ca_file` holds, for messages about a failed handshake."""
    from credprov.sdk.cacerts import system_cert_pool

    return "trusting " + system_cert_pool().describe()


def max_retries() -> int:
    """``$CREDPROV_ACR_MAX_RETRIES`` (0-10), else :data:`DEFAULT_MAX_RETRIES`."""
    raw = os.environ.get(MAX_RETRIES_ENV, "").strip()
    if raw.isdigit():
        return min(int(raw), 10)
    return DEFAULT_MAX_RETRIES


def sleep(seconds: float) -> None:
    """The default sleeper (tests inject their own)."""
    time.sleep(seconds)


def status_text(status: int) -> str:
    """``HTTP 429 (throttled)`` and the like, for messages."""
    reason = {
        401: "unauthorized",
        403: "forbidden",
        404: "not found",
        429: "throttled",
        500: "server error",
        502: "bad gateway",
        503: "unavailable",
        504: "gateway timeout",
    }.get(status)
    return f"HTTP {status}" + (f" ({reason})" if reason else "")


def retry(retries: int, sleep: Sleep, log: Log) -> Retry:
    """The urllib3 ``Retry`` of one client (``retries``: how many after the first attempt);
    see the module docstring."""

    def on_retry(event: RetryEvent) -> None:
        why = status_text(event.status) if event.status else type(event.error).__name__
        log(2, f"{event.url}: {why}; retry {event.number}/{retries} in {event.delay:.1f}s")

    policy = Retries(
        retries,
        RETRY_STATUSES,
        BACKOFF_FACTOR,
        MAX_BACKOFF_SECONDS,
        sleep=sleep,
        on_retry=on_retry,
    )
    return policy.urllib3_retry()
