"""HTTP plumbing shared by the ACR exchange and the identity-bindings client.

Bounded retries with jitter for throttling and server errors: upstream retries nothing (and
its HTTP client waits up to 60 s, the kubelet's whole deadline), so one 429 fails the pull.
Here a request is retried on 429, 5xx and connection failures, at most
:func:`max_retries` times, waiting ``Retry-After`` (capped) or an exponential backoff with
jitter, and every request has its own timeouts well inside the kubelet's minute.
"""

from __future__ import annotations

import os
import random
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


def backoff(attempt: int, retry_after: str | None = None) -> float:
    """Seconds to wait before retry number ``attempt`` (1-based)."""
    if retry_after:
        try:
            return min(max(float(retry_after), 0.0), MAX_BACKOFF_SECONDS)
        except ValueError:
            pass  # an HTTP date: fall back to the backoff
    base = min(0.25 * (2 ** (attempt - 1)), MAX_BACKOFF_SECONDS)
    return base * random.uniform(0.5, 1.0)


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
