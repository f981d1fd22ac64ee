"""HTTP for the plugin: a google-auth transport with upstream's headers and better manners.

:class:`Transport` implements :class:`google.auth.transport.Request`, so google-auth's own
clients (the STS client) use it as they would use ``google.auth.transport.requests.Request``.
Compared with upstream's Go client it keeps the ``User-Agent``, the per-request timeouts
and the 10 MiB body cap, and adds:

- bounded retries with jittered exponential backoff on connection errors, timeouts and
  HTTP 408/429/500/502/503/504 (``Retry-After`` honoured up to :data:`MAX_RETRY_DELAY`);
  upstream tries once;
- one :class:`Budget` for the whole run, kept under the kubelet's one-minute deadline, so
  retries never turn a slow server into a killed plugin;
- metadata requests never go through a proxy (``trust_env=False``): the metadata server is
  link-local, and a proxy would see the token. Upstream honours ``HTTP_PROXY`` there too
  and needs the host in ``NO_PROXY``.

Failures raise :class:`HttpFailure` with a short reason; URLs in messages lose their
userinfo and query (a ``google-dockercfg-url`` may carry a signed query).
"""

from __future__ import annotations

import http
import random
import time
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any

import requests
from google.auth import transport

from credprov_gcp.errors import GCPError

USER_AGENT = "GKE auth-provider-gcp image pull"
MAX_BODY_BYTES = 10 * 1024 * 1024
DEFAULT_TIMEOUT = 10.0
RETRY_STATUSES = frozenset((408, 429, 500, 502, 503, 504))
ATTEMPTS = 3
BACKOFF_BASE = 0.1
MAX_RETRY_DELAY = 2.0
#: Seconds for all HTTP of one run: the kubelet kills a plugin after one minute.
RUN_DEADLINE = 45.0


class HttpFailure(GCPError):
    """No usable HTTP response (after retries); ``reason`` is short and secret-free.

    ``unreachable``: no response at all (connection failure, timeout, no time left), as
    opposed to a request that cannot be sent or a response over the size cap.
    """

    def __init__(self, url: str, reason: str, attempts: int, unreachable: bool = True) -> None:
        self.url = url
        self.reason = reason
        self.attempts = attempts
        self.unreachable = unreachable
        super().__init__(f"{safe_url(url)}: {self.detail}")

    @property
    def detail(self) -> str:
        """``connection refused, 3 attempts`` (the attempts only when retried)."""
        return f"{self.reason}, {self.attempts} attempts" if self.attempts > 1 else self.reason


def attempts_note(attempts: int) -> str:
    """`` (3 attempts)`` when a request was retried, else nothing."""
    return f" ({attempts} attempts)" if attempts > 1 else ""


def safe_url(url: str) -> str:
    """``url`` without userinfo, query and fragment, for messages."""
    try:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return "<invalid URL>"
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{port}" if port is not None else host
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def status_text(status: int) -> str:
    """``429 Too Many Requests``."""
    try:
        return f"{status} {http.HTTPStatus(status).phrase}"
    except ValueError:
        return str(status)


class Budget:
    """The time left for the run's HTTP requests (injected clock)."""

    def __init__(
        self, seconds: float = RUN_DEADLINE, monotonic: Callable[[], float] = time.monotonic
    ) -> None:
        self._monotonic = monotonic
        self._end = monotonic() + seconds

    def remaining(self) -> float:
        """Seconds left; negative once spent."""
        return self._end - self._monotonic()


class HttpResponse(transport.Response):
    """A complete response (body read, at most :data:`MAX_BODY_BYTES`)."""

    def __init__(self, status: int, headers: Mapping[str, str], data: bytes, attempts: int):
        self._status = status
        self._headers = dict(headers)
        self._data = data
        self.attempts = attempts

    @property
    def status(self) -> int:
        return self._status

    @property
    def headers(self) -> dict[str, str]:
        return self._headers

    @property
    def data(self) -> bytes:
        return self._data


def _os_reason(exc: BaseException) -> str | None:
    """The first OS-level reason (``connection refused``) in an exception's chain."""
    seen: set[int] = set()
    todo: list[Any] = [exc]
    while todo:
        item = todo.pop(0)
        if not isinstance(item, BaseException) or id(item) in seen:
            continue
        seen.add(id(item))
        # A plain OSError (ConnectionRefusedError, socket.gaierror), not urllib3's wrappers.
        if (
            isinstance(item, OSError)
            and type(item).__module__ in ("builtins", "socket")
            and item.strerror
        ):
            return str(item.strerror).lower()
        todo.extend((item.__cause__, item.__context__, getattr(item, "reason", None)))
        todo.extend(item.args)
    return None


def _failure_reason(exc: requests.RequestException, timeout: float) -> str:
    if isinstance(exc, requests.Timeout):
        return f"timed out after {timeout:g}s"
    if isinstance(exc, requests.ConnectionError):
        return _os_reason(exc) or "connection failed"
    return type(exc).__name__


class Transport(transport.Request):
    """``google.auth.transport.Request`` over a ``requests`` session (see module docstring).

    Args:
        budget: the run's time budget, shared by every transport of the run.
        trust_env: honour proxy and CA-bundle environment variables (not for metadata).
        attempts: tries per request, for retryable failures.
        sleep, rand: injected for tests (backoff without waiting, deterministic jitter).
    """

    def __init__(
        self,
        budget: Budget,
        *,
        trust_env: bool = True,
        attempts: int = ATTEMPTS,
        sleep: Callable[[float], None] = time.sleep,
        rand: Callable[[], float] = random.random,
        session: requests.Session | None = None,
    ) -> None:
        self.budget = budget
        self.attempts = max(1, attempts)
        self._sleep = sleep
        self._rand = rand
        self.session = session or requests.Session()
        self.session.trust_env = trust_env
        self.last_response: HttpResponse | None = None

    def __call__(
        self,
        url: str,
        method: str = "GET",
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
        **kwargs: Any,
    ) -> HttpResponse:
        """Send one request, retrying what is worth retrying; the last response wins.

        Raises:
            HttpFailure: no response after the retries, or a body over the cap.
        """
        send_headers = {"User-Agent": USER_AGENT, **(headers or {})}
        per_try = DEFAULT_TIMEOUT if timeout is None else float(timeout)
        response: HttpResponse | None = None
        reason = "no time left for the request"
        unreachable = True
        attempt = 0
        while attempt < self.attempts:
            remaining = self.budget.remaining()
            if remaining <= 0:
                break
            attempt += 1
            this_timeout = min(per_try, remaining)
            try:
                response = self._once(method, url, body, send_headers, this_timeout, attempt)
            except requests.RequestException as exc:
                response = None
                reason = _failure_reason(exc, this_timeout)
                if not isinstance(exc, requests.ConnectionError | requests.Timeout):
                    unreachable = False
                    break  # an invalid URL or similar: retrying will not help
            else:
                if response.status not in RETRY_STATUSES:
                    break
            if attempt >= self.attempts:
                break
            delay = self._delay(attempt, response)
            if delay >= self.budget.remaining():
                break
            self._sleep(delay)
        self.last_response = response
        if response is None:
            raise HttpFailure(url, reason, attempt, unreachable)
        return response

    def _delay(self, attempt: int, response: HttpResponse | None) -> float:
        backoff = BACKOFF_BASE * 2 ** (attempt - 1)
        delay = backoff * (0.5 + self._rand() / 2)  # jitter: 50-100% of the backoff
        if response is not None:
            retry_after = response.headers.get("Retry-After", "").strip()
            if retry_after.isdigit():
                delay = max(delay, float(retry_after))
        return min(delay, MAX_RETRY_DELAY)

    def _once(
        self,
        method: str,
        url: str,
        body: bytes | None,
        headers: Mapping[str, str],
        timeout: float,
        attempt: int,
    ) -> HttpResponse:
        with self.session.request(
            method, url, data=body, headers=dict(headers), timeout=timeout, stream=True
        ) as resp:
            chunks: list[bytes] = []
            size = 0
            for chunk in resp.iter_content(64 * 1024):
                size += len(chunk)
                if size > MAX_BODY_BYTES:
                    raise HttpFailure(url, "response larger than 10 MiB", attempt, False)
                chunks.append(chunk)
            return HttpResponse(resp.status_code, resp.headers, b"".join(chunks), attempt)
