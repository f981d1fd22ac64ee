"""Bounded retries with full jitter for throttled or transiently failing AWS calls.

Upstream relies on the Go SDK's standard retryer (3 attempts). ``GetAuthorizationToken`` has
a low TPS quota, and a node pulling many images after a restart can hit it, so the plugin
retries throttling and transient errors itself, with two bounds the kubelet needs: a number
of attempts (default 3, ``AWS_MAX_ATTEMPTS`` as in the SDKs) and a time budget well inside
the kubelet's one-minute deadline. Backoff is "full jitter" (a random delay between 0 and an
exponentially growing cap), so many plugins started at once spread out instead of retrying
in lockstep. Clock, sleep and randomness are injected: tests never sleep.

botocore's own retries are switched off for these calls (one attempt each), so that this is
the only retry loop and its bounds hold.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")

#: Attempts per call unless ``AWS_MAX_ATTEMPTS`` says otherwise (the SDKs' standard mode).
DEFAULT_MAX_ATTEMPTS = 3
#: ``AWS_MAX_ATTEMPTS`` is capped here: the kubelet kills the plugin after a minute anyway.
MAX_ATTEMPTS_CAP = 10
#: First backoff cap in seconds; doubles per retry up to :data:`MAX_BACKOFF`.
BASE_BACKOFF = 1.0
MAX_BACKOFF = 8.0
#: No retry starts once this many seconds have passed since the first attempt (the kubelet
#: deadline is 60 s; an attempt may take up to the client's connect + read timeouts).
RETRY_BUDGET = 25.0


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry one call."""

    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    base_backoff: float = BASE_BACKOFF
    max_backoff: float = MAX_BACKOFF
    budget: float = RETRY_BUDGET

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> RetryPolicy:
        """The default policy, with ``AWS_MAX_ATTEMPTS`` (1-10) honoured when it is valid."""
        raw = env.get("AWS_MAX_ATTEMPTS", "").strip()
        if raw.isdigit() and int(raw) >= 1:
            return cls(max_attempts=min(int(raw), MAX_ATTEMPTS_CAP))
        return cls()

    def backoff(self, retry: int, rand: Callable[[], float]) -> float:
        """Seconds to wait before retry number ``retry`` (1-based): full jitter."""
        cap = min(self.max_backoff, self.base_backoff * (2 ** (retry - 1)))
        return rand() * cap


class RetriesExhausted(Exception):
    """The last error of a call that was retried; ``attempts`` says how many were made."""

    def __init__(self, error: BaseException, attempts: int) -> None:
        super().__init__(str(error))
        self.error = error
        self.attempts = attempts


def call_with_retries(
    fn: Callable[[], T],
    retryable: Callable[[BaseException], bool],
    policy: RetryPolicy,
    *,
    sleep: Callable[[float], None] = time.sleep,
    monotonic: Callable[[], float] = time.monotonic,
    rand: Callable[[], float] = random.random,
    on_retry: Callable[[BaseException, int, float], None] | None = None,
) -> T:
    """Call ``fn`` until it succeeds, fails for good, or the policy's bounds are reached.

    Raises:
        RetriesExhausted: wrapping the last error, when ``fn`` failed with a retryable error
            on every attempt the policy allowed.
        Exception: whatever ``fn`` raised, unchanged, when it is not retryable.
    """
    start = monotonic()
    attempt = 1
    while True:
        try:
            return fn()
        except Exception as exc:
            if not retryable(exc):
                raise
            delay = policy.backoff(attempt, rand)
            if attempt >= policy.max_attempts or monotonic() - start + delay > policy.budget:
                raise RetriesExhausted(exc, attempt) from None
            if on_retry is not None:
                on_retry(exc, attempt, delay)
            sleep(delay)
            attempt += 1
