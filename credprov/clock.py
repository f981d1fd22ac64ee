"""Clocks, injected wherever time matters so tests never sleep.

Mirrors the kubelet's use of ``k8s.io/utils/clock``: the engine asks ``now()`` and never
reads the system time itself. Times are ``int`` nanoseconds from an arbitrary origin.
"""

from __future__ import annotations

import threading
import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> int:
        """Current time in nanoseconds."""
        ...


class RealClock:
    """Monotonic time: cache expiry must not jump with the wall clock."""

    def now(self) -> int:
        return time.monotonic_ns()


class FakeClock:
    """A clock that moves only when told to (``step``/``set``)."""

    def __init__(self, start: int = 0) -> None:
        self._now = start
        self._lock = threading.Lock()

    def now(self) -> int:
        with self._lock:
            return self._now

    def step(self, ns: int) -> None:
        with self._lock:
            self._now += ns

    def set(self, ns: int) -> None:
        with self._lock:
            self._now = ns
