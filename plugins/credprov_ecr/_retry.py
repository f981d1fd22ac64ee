"""Retries: botocore's standard retry mode, kept inside the kubelet's one-minute deadline.

Upstream relies on the Go SDK's standard retryer (3 attempts). ``GetAuthorizationToken`` has
a low TPS quota, and a node pulling many images after a restart can hit it. The plugin uses
botocore's own standard mode for every call (``Config(retries={"mode": "standard"})``): its
retry conditions (throttling codes, HTTP 429 and 5xx, modelled retryable errors, STS's
``IDPCommunicationError``, timeouts and lost connections), its attempt limit, its retry quota,
its full-jitter exponential backoff (``x-amz-retry-after`` honoured) and its loop, which
re-signs and re-sends the request. The attempt limit is ``AWS_MAX_ATTEMPTS`` as in the SDKs
(default 3), capped at 10. Adaptive mode would add a client-side rate limiter, which a
process making one call has no use for.

Why a wrapper is left (:class:`CallRetries`, a few lines): botocore bounds attempts, not
time. Each attempt may take the connect + read timeouts (30 s), so three attempts, or an
STS call followed by an ECR call, can outlast the kubelet's minute, and the kubelet then
kills the plugin without a word. No botocore setting expresses "no retry starts after
:data:`RETRY_BUDGET` seconds", so the wrapper puts botocore's own standard handler (the one
``Config`` registers, obtained through ``botocore.retries.standard.register_retry_handler``)
behind that one check (the cloud plugins' :class:`credprov.sdk.http.Budget`, on an injected
clock). It also does the waiting itself, through an injected ``sleep``, so tests never sleep
(botocore's endpoint would call ``time.sleep``), and counts the attempts for the error
message.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from credprov.sdk.http import Budget

#: Attempts per call unless ``AWS_MAX_ATTEMPTS`` says otherwise (the SDKs' standard mode).
DEFAULT_MAX_ATTEMPTS = 3
#: ``AWS_MAX_ATTEMPTS`` is capped here: the kubelet kills the plugin after a minute anyway.
MAX_ATTEMPTS_CAP = 10
#: No retry starts once this many seconds have passed since the call began (the kubelet
#: deadline is 60 s; an attempt may take up to the client's connect + read timeouts).
RETRY_BUDGET = 25.0

#: ``on_retry(kind, attempt, delay)``: kind is ``throttled`` or ``transient error``.
OnRetry = Callable[[str, int, float], None]


@dataclass(frozen=True)
class RetryPolicy:
    """How many attempts, and how long retries may start, for one call."""

    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    budget: float = RETRY_BUDGET

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> RetryPolicy:
        """The default policy, with ``AWS_MAX_ATTEMPTS`` (1-10) honoured when it is valid."""
        raw = env.get("AWS_MAX_ATTEMPTS", "").strip()
        if raw.isdigit() and int(raw) >= 1:
            return cls(max_attempts=min(int(raw), MAX_ATTEMPTS_CAP))
        return cls()


class CallRetries:
    """The retries of one call: botocore's standard handler behind the policy's budget.

    The clock starts when the object is made; :meth:`install` goes on every client the call
    uses. ``attempts`` is the number of attempts made so far.
    """

    def __init__(
        self,
        policy: RetryPolicy,
        *,
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
        on_retry: OnRetry | None = None,
    ) -> None:
        self.policy = policy
        self.attempts = 0
        self._sleep = sleep
        self._on_retry = on_retry
        self._budget = Budget(policy.budget, monotonic)

    def install(self, client: Any) -> None:
        """Put the standard-mode handler of ``client`` (made with ``mode: standard``) behind
        the budget."""
        from botocore.retries import standard

        name = client.meta.service_model.service_id.hyphenize()
        event, unique_id = f"needs-retry.{name}", f"retry-config-{name}"
        events = client.meta.events
        # botocore registered its handler from the client's Config; registering it again is
        # the public way to hold the handler object, which then answers through the budget.
        events.unregister(event, unique_id=unique_id)
        handler = standard.register_retry_handler(client, max_attempts=self.policy.max_attempts)
        events.unregister(event, unique_id=unique_id)
        throttling = standard.ThrottlingErrorDetector(standard.RetryEventAdapter())

        def needs_retry(**kwargs: Any) -> float | None:
            self.attempts = kwargs["attempts"]
            delay = handler.needs_retry(**kwargs)
            if delay is None or not self._budget.allows(delay):
                return None
            if self._on_retry is not None:
                kind = (
                    "throttled" if throttling.is_throttling_error(**kwargs) else "transient error"
                )
                self._on_retry(kind, self.attempts, delay)
            self._sleep(delay)
            return 0.0  # waited already: botocore's endpoint retries at once

        events.register(event, needs_retry, unique_id=unique_id)
