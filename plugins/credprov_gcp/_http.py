"""HTTP for the plugin: a google-auth transport with upstream's headers and better manners.

:class:`Transport` implements :class:`google.auth.transport.Request`, so google-auth's own
clients (the STS client) use it as they would use ``google.auth.transport.requests.Request``.
Compared with upstream's Go client it keeps the ``User-Agent``, the per-request timeouts
and the 10 MiB body cap, and adds:

- retries (upstream tries once) by urllib3's ``Retry`` on the ``requests`` session's
  adapter: connection errors, timeouts and HTTP 408/429/500/502/503/504, GET and POST (the
  STS exchange is safe to repeat), ``Retry-After`` honoured up to :data:`MAX_RETRY_DELAY`,
  else urllib3's backoff (the first retry at once, then 200 ms, … plus jitter);
- one :class:`Budget` for the whole run, kept under the kubelet's one-minute deadline, so
  retries never turn a slow server into a killed plugin;
- metadata requests never go through a proxy (``trust_env=False``): the metadata server is
  link-local, and a proxy would see the token. Upstream honours ``HTTP_PROXY`` there too
  and needs the host in ``NO_PROXY``;
- HTTPS (STS, a ``google-dockercfg-url``) verifies against the node's CA store as
  upstream's Go client does (:mod:`credprov.sdk.cacerts`: ``SSL_CERT_FILE``,
  ``SSL_CERT_DIR``, then Go's list of files and directories), passed with each request, so
  ``REQUESTS_CA_BUNDLE`` / ``CURL_CA_BUNDLE`` (which Go ignores) are not read.

The retry policy is :class:`credprov.sdk.http.Retries`, the cloud plugins' one urllib3
``Retry`` subclass: it keeps retries within the run's budget (a retry starts here only if its
longest wait and its timeout fit in the time left), caps ``Retry-After`` (an unparsable
header falls back to the backoff), waits through an injected ``sleep`` (tests never wait) and
counts the attempts of a request that failed.

Failures raise :class:`HttpFailure` with a short reason; URLs in messages lose their
userinfo and query (a ``google-dockercfg-url`` may carry a signed query).
"""

from __future__ import annotations

import time
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any

import requests
from google.auth import transport
from requests.adapters import HTTPAdapter
from urllib3.exceptions import ReadTimeoutError

from credprov.sdk.cacerts import CertPoolError
from credprov.sdk.cacerts import system_cert_pool as _system_cert_pool
from credprov.sdk.http import (
    CHUNK_BYTES,
    BodyTooLarge,
    Budget,
    Retries,
    last_error,
    read_capped,
)
from credprov_gcp.errors import GCPError

USER_AGENT = "GKE auth-provider-gcp image pull"
MAX_BODY_BYTES = 10 * 1024 * 1024
DEFAULT_TIMEOUT = 10.0
RETRY_STATUSES = frozenset((408, 429, 500, 502, 503, 504))
ATTEMPTS = 3
#: urllib3's ``backoff_factor``: retry n waits ``BACKOFF_BASE * 2 ** (n - 1)`` s (none for the
#: first) plus up to ``BACKOFF_BASE`` s of jitter.
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


def _ca_file() -> str:
    """The node's CA store as a PEM file (read once per process)."""
    return _system_cert_pool().ca_file()


def run_budget(monotonic: Callable[[], float] = time.monotonic) -> Budget:
    """The time budget of one run (:data:`RUN_DEADLINE`), shared by its transports."""
    return Budget(RUN_DEADLINE, monotonic)


class HttpResponse(transport.Response):
    """A complete response (body read, at most :data:`MAX_BODY_BYTES`)."""

    def __init__(self, status: int, headers: Mapping[str, str], data: bytes, attempts: int):
        self._status = status
        self._headers = dict(headers)
        self._data = data
        self.attempts = attempts

    @property
    def status(self) -> int:
        """The HTTP status code."""
        return self._status

    @property
    def headers(self) -> dict[str, str]:
        """The response headers."""
        return self._headers

    @property
    def data(self) -> bytes:
        """The body, read whole (at most MAX_BODY_BYTES)."""
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
    # After retries a read timeout reaches requests as a ConnectionError around urllib3's
    # MaxRetryError; its ``reason`` is the last attempt's error.
    if isinstance(exc, requests.Timeout) or isinstance(last_error(exc), ReadTimeoutError):
        return f"timed out after {timeout:g}s"
    if isinstance(exc, requests.exceptions.SSLError):
        trusting = _system_cert_pool().describe()
        return f"TLS handshake failed (certificate not trusted?; trusting {trusting})"
    if isinstance(exc, requests.ConnectionError):
        return _os_reason(exc) or "connection failed"
    return type(exc).__name__


class Transport(transport.Request):
    """``google.auth.transport.Request`` over a ``requests`` session (see module docstring).

    Args:
        budget: the run's time budget, shared by every transport of the run.
        trust_env: honour proxy and CA-bundle environment variables (not for metadata).
        attempts: tries per request, for retryable failures.
        sleep: injected for tests (backoff without waiting).
    """

    def __init__(
        self,
        budget: Budget,
        *,
        trust_env: bool = True,
        attempts: int = ATTEMPTS,
        sleep: Callable[[float], None] = time.sleep,
        session: requests.Session | None = None,
    ) -> None:
        self.budget = budget
        self._retries = Retries(
            max(1, attempts) - 1,
            RETRY_STATUSES,
            BACKOFF_BASE,
            MAX_RETRY_DELAY,
            budget=budget,
            sleep=sleep,
        )
        self.session = session or requests.Session()
        self.session.trust_env = trust_env
        for prefix in ("http://", "https://"):
            self.session.mount(prefix, HTTPAdapter(max_retries=self._retries.urllib3_retry()))
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
        """Send one request; urllib3 retries what is worth retrying, the last response wins.

        Raises:
            HttpFailure: no response after the retries, or a body over the cap.
        """
        self.last_response = None
        remaining = self.budget.remaining()
        if remaining <= 0:
            raise HttpFailure(url, "no time left for the request", 0)
        send_headers = {"User-Agent": USER_AGENT, **(headers or {})}
        per_try = DEFAULT_TIMEOUT if timeout is None else float(timeout)
        this_timeout = min(per_try, remaining)
        self._retries.begin(this_timeout)
        try:
            verify = _ca_file() if url[:8].lower() == "https://" else True
        except CertPoolError as exc:
            raise HttpFailure(url, str(exc), 0, False) from None
        try:
            response = self._once(method, url, body, send_headers, this_timeout, verify)
        except requests.RequestException as exc:
            unreachable = isinstance(exc, requests.ConnectionError | requests.Timeout)
            reason = _failure_reason(exc, this_timeout)
            raise HttpFailure(url, reason, max(1, self._retries.failed), unreachable) from None
        self.last_response = response
        return response

    def _once(
        self,
        method: str,
        url: str,
        body: bytes | None,
        headers: Mapping[str, str],
        timeout: float,
        verify: str | bool = True,
    ) -> HttpResponse:
        with self.session.request(
            method,
            url,
            data=body,
            headers=dict(headers),
            timeout=timeout,
            stream=True,
            verify=verify,
        ) as resp:
            # The response urllib3 kept (the last one) knows the retries before it.
            retries = getattr(resp.raw, "retries", None)
            attempts = len(retries.history) + 1 if retries is not None else 1
            try:
                data = read_capped(resp.iter_content(CHUNK_BYTES), MAX_BODY_BYTES)
            except BodyTooLarge:
                raise HttpFailure(url, "response larger than 10 MiB", attempts, False) from None
            return HttpResponse(resp.status_code, resp.headers, data, attempts)
