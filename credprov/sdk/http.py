"""HTTP for the cloud plugins: urllib3's retries kept within a time budget, status text and a
body cap, in one place.

A plugin has a minute: the kubelet kills it after that, without a word. Upstream's Go clients
try once and wait up to the deadline; the cloud plugins retry throttling (429), server errors
and lost connections instead, and this module is how they do it alike:

- :meth:`Retries.urllib3_retry` gives a urllib3 ``Retry`` (for a ``requests`` adapter or a
  urllib3 pool) whose retries start only while :class:`Budget` holds the longest wait plus the
  attempt's timeout, whose ``Retry-After`` is honoured up to a cap (an HTTP date that does not
  parse falls back to the backoff instead of failing the request), and which waits through an
  injected ``sleep`` (tests never wait), says each wait to an ``on_retry`` hook, and counts
  the attempts of a request that failed (urllib3's ``MaxRetryError`` does not say);
- :class:`Budget` is the wall-clock time left (injected clock), also for a budget around
  another SDK's retries (botocore's, in the ECR plugin);
- :func:`status_text` (``429 Too Many Requests``), :func:`read_capped` (a body read up to a
  cap, larger is :class:`BodyTooLarge`) and :func:`last_error` (the last attempt's error
  behind urllib3's and requests' wrappers).

Why wrap urllib3 instead of writing a retry loop: urllib3's ``Retry`` already knows which
methods and statuses are retryable, reads ``Retry-After`` (seconds or an HTTP date), computes
the exponential backoff with jitter, keeps the history of attempts and re-sends through its
own pool, and ``requests`` sessions and azure-core use it too. What it has no setting for (a
time budget, an injected sleep, a cap on ``Retry-After`` on every urllib3 2.x, a hook per
wait) is added by one small subclass, here.

Only the standard library is imported with this module; urllib3 is imported when a ``Retry``
is made or an error is examined, on a plugin's cold path. ``import credprov.sdk`` does not
import this module.
"""

from __future__ import annotations

import contextlib
import functools
import http
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

from credprov.errors import CredprovError

if TYPE_CHECKING:
    from urllib3.util.retry import Retry

Sleep = Callable[[float], None]
Monotonic = Callable[[], float]

#: Bytes read at a time by the callers of :func:`read_capped`.
CHUNK_BYTES = 64 * 1024


class Budget:
    """The wall-clock time left for a run's (or a call's) requests; the clock is injected.

    The clock is read once when the budget is made and once per question asked.
    """

    def __init__(self, seconds: float, monotonic: Monotonic = time.monotonic) -> None:
        self._monotonic = monotonic
        self._end = monotonic() + seconds

    def remaining(self) -> float:
        """Seconds left; negative once spent."""
        return self._end - self._monotonic()

    def allows(self, seconds: float) -> bool:
        """Whether ``seconds`` more still fit in the budget."""
        return self.remaining() >= seconds


def status_text(status: int) -> str:
    """``429 Too Many Requests`` (the code alone when Python knows no reason phrase)."""
    try:
        return f"{status} {http.HTTPStatus(status).phrase}"
    except ValueError:
        return str(status)


class BodyTooLarge(CredprovError):
    """A response body over the cap :func:`read_capped` was given (its text is generic; the
    callers say what was being read)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(f"response body larger than {limit} bytes")


def read_capped(chunks: Iterable[bytes], limit: int) -> bytes:
    """The body made of ``chunks`` (``response.iter_content(CHUNK_BYTES)`` of ``requests``,
    ``response.stream(CHUNK_BYTES)`` of urllib3), read no further than ``limit`` bytes.

    Raises:
        BodyTooLarge: the body is longer than ``limit``.
    """
    parts: list[bytes] = []
    size = 0
    for chunk in chunks:
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(limit)
        parts.append(chunk)
    return b"".join(parts)


def last_error(exc: BaseException) -> BaseException:
    """The last attempt's error behind a failed request: urllib3's ``MaxRetryError`` keeps it
    as ``reason``, and ``requests`` wraps that ``MaxRetryError`` as its first argument. Any
    other error is its own last error."""
    from urllib3.exceptions import MaxRetryError

    for candidate in (exc, *exc.args[:1]):
        if isinstance(candidate, MaxRetryError) and candidate.reason is not None:
            return candidate.reason
    return exc


class RetryEvent(NamedTuple):
    """A retry about to wait, as told to ``on_retry``."""

    url: str | None
    status: int | None  # the status of the failed attempt, or None when it had no response
    error: BaseException | None  # what failed when there was no response
    number: int  # 1 for the first retry
    delay: float  # seconds about to be waited


class Retries:
    """The retry policy of one client, and the state its urllib3 ``Retry`` copies share.

    Args:
        retries: how many retries after the first attempt.
        statuses: the HTTP statuses retried (connection failures and timeouts always are).
        backoff: urllib3's ``backoff_factor``: retry n waits ``backoff * 2 ** (n - 1)`` s (the
            first at once) plus up to ``backoff`` s of jitter.
        max_delay: the longest wait, ``Retry-After`` included.
        budget: when given, a retry starts only if ``max_delay`` plus the attempt's timeout
            (:meth:`begin`) fit in what is left of it.
        sleep: waits (tests pass their own).
        on_retry: told each wait before it starts (for logs).

    GET, POST and the other methods urllib3 deems idempotent are retried: the plugins' POSTs
    only mint tokens. After the last attempt the last response is returned, not raised, so
    the callers' messages can name its status.
    """

    def __init__(
        self,
        retries: int,
        statuses: Iterable[int],
        backoff: float,
        max_delay: float,
        *,
        budget: Budget | None = None,
        sleep: Sleep = time.sleep,
        on_retry: Callable[[RetryEvent], None] | None = None,
    ) -> None:
        self.retries = max(0, retries)
        self.statuses = frozenset(statuses)
        self.backoff = backoff
        self.max_delay = max_delay
        self.budget = budget
        self.sleep = sleep
        self.on_retry = on_retry
        self.timeout = 0.0  # the attempt timeout of the request in flight
        self.failed = 0  # attempts of the request in flight that failed so far

    def begin(self, timeout: float) -> None:
        """Start a request whose attempts may each take ``timeout`` seconds."""
        self.timeout, self.failed = timeout, 0

    def may_retry(self) -> bool:
        """Whether the budget holds one more wait and attempt."""
        return self.budget is None or self.budget.allows(self.timeout + self.max_delay)

    def wait(self, history: tuple[Any, ...], delay: float) -> None:
        """Tell ``on_retry`` about the wait after ``history``'s last attempt, then wait."""
        if self.on_retry is not None:
            last = history[-1]
            self.on_retry(RetryEvent(last.url, last.status, last.error, len(history), delay))
        self.sleep(delay)

    def urllib3_retry(self) -> Retry:
        """A urllib3 ``Retry`` of this policy (imports urllib3)."""
        from urllib3.util.retry import Retry

        retry: Any = _budget_retry_class()(
            total=self.retries,
            status_forcelist=self.statuses,
            allowed_methods=Retry.DEFAULT_ALLOWED_METHODS | {"POST"},
            backoff_factor=self.backoff,
            backoff_jitter=self.backoff,
            backoff_max=self.max_delay,
            respect_retry_after_header=True,
            raise_on_status=False,
        )
        retry.policy = self
        result: Retry = retry
        return result


@functools.cache
def _budget_retry_class() -> type[Retry]:
    """The ``Retry`` subclass, made on first use so that urllib3 is imported only then."""
    from urllib3.exceptions import InvalidHeader
    from urllib3.util.retry import Retry

    class BudgetRetry(Retry):
        """urllib3's ``Retry`` asking its :class:`Retries` (see the module docstring)."""

        policy: Retries

        def new(self, **kw: Any) -> BudgetRetry:
            copy = super().new(**kw)
            copy.policy = self.policy
            self.policy.failed = len(copy.history)
            return copy

        def is_exhausted(self) -> bool:
            return super().is_exhausted() or not self.policy.may_retry()

        def sleep(self, response: Any = None) -> None:
            delay = None
            if response is not None:
                with contextlib.suppress(InvalidHeader):  # a bad date: the backoff instead
                    delay = self.get_retry_after(response)
            if delay is None:
                delay = self.get_backoff_time()
            self.policy.wait(self.history, min(delay, self.policy.max_delay))

    return BudgetRetry
