"""HTTP settings shared by the ACR exchange, the identity-bindings client and the AAD calls.

Every request has its own timeouts well inside the kubelet's minute, and is retried at most
:func:`max_retries` times: by urllib3's ``Retry`` for the ACR endpoints
(:mod:`credprov_acr._retry`), by azure-core's retry policy for AAD and IMDS
(:mod:`credprov_acr.credentials`). Only the standard library is imported here.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

#: Advanced/test knob: how many times a throttled or failed request is retried (default 2).
MAX_RETRIES_ENV = "CREDPROV_ACR_MAX_RETRIES"
DEFAULT_MAX_RETRIES = 2

#: (connect, read) timeouts of every request, in seconds.
TIMEOUT = (5.0, 15.0)

#: Longest wait between two attempts, whatever ``Retry-After`` says.
MAX_BACKOFF_SECONDS = 5.0

#: Cap on the bodies read from the ACR endpoints (upstream: 10 MiB).
MAX_BODY_BYTES = 10 * 1024 * 1024

USER_AGENT = "kubernetes-credentialprovider-acr"

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})

Sleep = Callable[[float], None]


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
