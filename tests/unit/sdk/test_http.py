"""credprov.sdk.http: urllib3's retries within a budget, status text, the body cap.

The retries run against a scripted loopback server (:mod:`tests.fakes.server`) through a real
urllib3 pool; sleeping and the clock are injected, so nothing waits.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest
import urllib3
from urllib3.exceptions import MaxRetryError, ReadTimeoutError

from credprov.errors import CredprovError
from credprov.sdk.http import (
    BodyTooLarge,
    Budget,
    Retries,
    RetryEvent,
    last_error,
    read_capped,
    status_text,
)
from tests.fakes.server import FakeServer, Reply, closed_port


class Clock:
    """A monotonic clock that moves only when told; counts how often it is read."""

    def __init__(self) -> None:
        self.now = 100.0
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        return self.now


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as fake:
        yield fake


def get(url: str, retries: Retries, timeout: float = 5.0) -> urllib3.BaseHTTPResponse:
    retries.begin(timeout)
    with urllib3.PoolManager() as pool:
        return pool.request("GET", url, retries=retries.urllib3_retry(), timeout=timeout)


# -- Budget ----------------------------------------------------------------------------------


def test_budget_counts_down_on_the_injected_clock() -> None:
    clock = Clock()
    budget = Budget(10.0, monotonic=clock)
    clock.now += 4.0
    assert budget.remaining() == 6.0
    assert budget.allows(6.0) and not budget.allows(6.5)
    clock.now += 7.0
    assert budget.remaining() == -1.0 and not budget.allows(0.0)
    assert clock.reads == 6  # once when made, once per question


# -- status text, body cap, last error ---------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "text"),
    [
        (200, "200 OK"),
        (429, "429 Too Many Requests"),
        (503, "503 Service Unavailable"),
        (599, "599"),  # no reason phrase known
    ],
)
def test_status_text(status: int, text: str) -> None:
    assert status_text(status) == text


@pytest.mark.parametrize(
    ("chunks", "limit", "body"),
    [
        ([], 4, b""),
        ([b"ab", b"cd"], 4, b"abcd"),  # exactly the cap
        ([b"ab", b"cd", b"e"], 4, None),  # one byte over
        ([b"abcdef"], 4, None),
    ],
)
def test_read_capped(chunks: list[bytes], limit: int, body: bytes | None) -> None:
    if body is not None:
        assert read_capped(iter(chunks), limit) == body
        return
    with pytest.raises(BodyTooLarge) as info:
        read_capped(iter(chunks), limit)
    assert info.value.limit == limit and isinstance(info.value, CredprovError)


def test_read_capped_stops_at_the_first_chunk_over_the_cap() -> None:
    read: list[int] = []

    def chunks() -> Iterator[bytes]:
        for i in range(100):
            read.append(i)
            yield b"x" * 10

    with pytest.raises(BodyTooLarge):
        read_capped(chunks(), 25)
    assert read == [0, 1, 2]


def test_last_error_sees_through_the_wrappers() -> None:
    timeout = ReadTimeoutError(None, "/x", "read timed out")  # type: ignore[arg-type]
    max_retry = MaxRetryError(None, "/x", timeout)  # type: ignore[arg-type]
    assert last_error(max_retry) is timeout
    assert last_error(OSError(max_retry)) is timeout  # how requests wraps it
    plain = ValueError("x")
    assert last_error(plain) is plain


# -- Retries ---------------------------------------------------------------------------------


def policy(
    sleeps: list[float], events: list[RetryEvent] | None = None, budget: Budget | None = None
) -> Retries:
    """Two retries of 429 and 503, backoff 0.1 s, waits of at most 2 s."""
    on_retry = events.append if events is not None else None
    return Retries(2, {429, 503}, 0.1, 2.0, budget=budget, sleep=sleeps.append, on_retry=on_retry)


def test_statuses_are_retried_then_the_answer_returned(server: FakeServer) -> None:
    server.script("GET", "/x", Reply(503), Reply(429), Reply(200, "ok"))
    sleeps: list[float] = []
    events: list[RetryEvent] = []
    resp = get(server.url("/x"), policy(sleeps, events))
    assert (resp.status, resp.data, server.paths()) == (200, b"ok", ["/x"] * 3)
    assert resp.retries is not None and len(resp.retries.history) == 2
    # urllib3's backoff: the first retry at once, the second after 0.2 s plus up to 0.1 s.
    assert sleeps[0] == 0.0 and 0.2 <= sleeps[1] <= 0.3
    assert [(e.url, e.status, e.number, e.delay) for e in events] == [
        ("/x", 503, 1, sleeps[0]),
        ("/x", 429, 2, sleeps[1]),
    ]


def test_after_the_last_retry_the_last_response_is_returned(server: FakeServer) -> None:
    server.script("GET", "/x", Reply(503))
    sleeps: list[float] = []
    resp = get(server.url("/x"), policy(sleeps))
    assert (resp.status, len(server.paths()), len(sleeps)) == (503, 3, 2)


def test_statuses_not_listed_are_not_retried(server: FakeServer) -> None:
    server.script("GET", "/x", Reply(500), Reply(200))
    sleeps: list[float] = []
    assert get(server.url("/x"), policy(sleeps)).status == 500
    assert sleeps == []


@pytest.mark.parametrize(
    ("retry_after", "low", "high"),
    [
        ("1", 1.0, 1.0),
        ("600", 2.0, 2.0),  # capped at max_delay
        ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0, 0.0),  # a date in the past: at once
        ("soon", 0.0, 0.0),  # does not parse: the backoff (none for a first retry)
    ],
)
def test_retry_after_is_honoured_up_to_the_cap(
    server: FakeServer, retry_after: str, low: float, high: float
) -> None:
    server.script("GET", "/x", Reply(429, headers={"Retry-After": retry_after}), Reply(200))
    sleeps: list[float] = []
    assert get(server.url("/x"), policy(sleeps)).status == 200
    assert len(sleeps) == 1 and low <= sleeps[0] <= high


def test_no_retry_starts_that_the_budget_cannot_hold(server: FakeServer) -> None:
    server.script("GET", "/x", Reply(503), Reply(200))
    clock = Clock()
    # 6 s left: less than the attempt's timeout (5 s) plus the longest wait (2 s).
    sleeps: list[float] = []
    retries = policy(sleeps, budget=Budget(6.0, monotonic=clock))
    resp = get(server.url("/x"), retries, timeout=5.0)
    assert (resp.status, sleeps, server.paths()) == (503, [], ["/x"])
    # 7 s left: one more attempt fits.
    server.requests.clear()
    server.script("GET", "/x", Reply(503), Reply(200))
    retries = policy(sleeps, budget=Budget(7.0, monotonic=clock))
    assert get(server.url("/x"), retries, timeout=5.0).status == 200
    assert server.paths() == ["/x", "/x"]


def test_connection_failures_are_retried_and_counted() -> None:
    sleeps: list[float] = []
    events: list[RetryEvent] = []
    retries = policy(sleeps, events)
    with pytest.raises(MaxRetryError) as info:
        get(f"http://127.0.0.1:{closed_port()}/x", retries)
    assert retries.failed == 3 and len(sleeps) == 2
    assert isinstance(last_error(info.value), urllib3.exceptions.NewConnectionError)
    assert [(e.status, type(e.error).__name__) for e in events] == [
        (None, "NewConnectionError")
    ] * 2


def test_begin_resets_the_count_of_failed_attempts(server: FakeServer) -> None:
    retries = policy([])
    retries.failed = 5
    server.script("GET", "/x", Reply(200))
    get(server.url("/x"), retries)
    assert retries.failed == 0


def test_importing_the_module_does_not_import_urllib3() -> None:
    code = (
        "import sys, credprov.sdk, credprov.sdk.http\n"
        "print(sorted(n for n in ('urllib3', 'requests') if n in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    assert out.strip() == "[]"


def test_the_sdk_package_does_not_import_the_module() -> None:
    code = "import sys, credprov.sdk\nprint('credprov.sdk.http' in sys.modules)\n"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    assert out.strip() == "False"
