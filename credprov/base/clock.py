"""The one clock type, injected wherever time matters so tests never sleep.

Mirrors the kubelet's use of ``k8s.io/utils/clock``: nothing reads the system time itself.
A :class:`Clock` answers two questions:

* :meth:`Clock.now`: monotonic nanoseconds from an arbitrary origin, for durations and
  expiry (the plugin response cache, singleflight): they must not jump with the wall clock;
* :meth:`Clock.time`: wall-clock Unix seconds, for what is stamped or compared with other
  machines (pull records' ``lastUpdatedTime``, service-account tokens' ``iat``/``exp``).

:func:`utc_now` turns the second into the aware UTC datetime the pull records use.
"""

from __future__ import annotations

import threading
import time

# mypy reads this name as typing's; typing itself costs start-up on the CLI's hot path.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import datetime as dt
    from typing import Protocol
else:
    Protocol = object

__all__ = ["Clock", "FakeClock", "RealClock", "utc_now"]


class Clock(Protocol):
    """What reads the time: monotonic nanoseconds and wall-clock seconds."""

    def now(self) -> int:
        """Monotonic time in nanoseconds."""
        ...

    def time(self) -> float:
        """Wall-clock time in Unix seconds."""
        ...


class RealClock:
    """The system's clocks: monotonic for ``now``, the wall clock for ``time``."""

    def now(self) -> int:
        """``time.monotonic_ns()``."""
        return time.monotonic_ns()

    def time(self) -> float:
        """``time.time()``."""
        return time.time()


class FakeClock:
    """A clock that moves only when told to (``step``/``set``); both readings move together.

    Args:
        start: the first :meth:`now` (nanoseconds).
        wall: the :meth:`time` at ``start`` (Unix seconds).
    """

    def __init__(self, start: int = 0, wall: float = 1_700_000_000.0) -> None:
        self._now = start
        self._wall_offset = wall - start / 1e9
        self._lock = threading.Lock()

    def now(self) -> int:
        """The fake monotonic time in nanoseconds."""
        with self._lock:
            return self._now

    def time(self) -> float:
        """The fake wall-clock time: the start's, moved as the monotonic time moved."""
        with self._lock:
            return self._wall_offset + self._now / 1e9

    def step(self, ns: int) -> None:
        """Move both readings ``ns`` nanoseconds on."""
        with self._lock:
            self._now += ns

    def set(self, ns: int) -> None:
        """Set the monotonic reading to ``ns`` (the wall clock follows)."""
        with self._lock:
            self._now = ns


def utc_now(clock: Clock) -> dt.datetime:
    """``clock.time()`` as an aware UTC datetime."""
    import datetime as dt  # 2-3 ms of start-up that only the pull records need

    return dt.datetime.fromtimestamp(clock.time(), dt.UTC)
