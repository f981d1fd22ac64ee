"""Running the doctor once or every period, timed and bounded, for the fleet modes.

:func:`timed_run` runs the checks once and says when the run ended, how long it took and,
instead of raising, why it failed: what ``--textfile`` needs to write ``credprov_doctor_up
0`` rather than leave a stale file. :func:`run_periodic` is ``doctor --every DURATION``, the
DaemonSet's loop: a run at start, then one every period on the monotonic clock (a run that
overran skips the runs it missed rather than running back to back), each bounded by the
period (a run still going when the next is due is stopped and counts as failed), until
SIGTERM, which ends the loop at once (a plugin the run started is killed with its process
group by :func:`credprov.base.proc.run_bounded`'s cleanup) with exit status 0; the textfile
keeps the last complete run.

Time is injected (:class:`credprov.base.clock.Clock` and a ``sleep``), as is the bound
(:func:`alarm_bound` by default: ``SIGALRM``, which interrupts a blocking read too), so tests
never sleep.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from credprov.base.clock import Clock, RealClock
from credprov.doctor.report import Report
from credprov.errors import EXIT_OK

__all__ = [
    "Run",
    "RunTimeout",
    "Terminated",
    "alarm_bound",
    "run_periodic",
    "timed_run",
]


class Terminated(BaseException):
    """SIGTERM arrived: stop now (not an error, so not caught by ``except Exception``)."""


class RunTimeout(BaseException):
    """The run passed its bound (a BaseException, so the checks cannot swallow it)."""


#: A context manager bounding what runs inside it to the given seconds.
Bound = Callable[[float], contextlib.AbstractContextManager[None]]


@contextlib.contextmanager
def alarm_bound(seconds: float) -> Iterator[None]:
    """Raise :class:`RunTimeout` in the block after ``seconds`` (``SIGALRM``; in the main
    thread only, elsewhere the block is not bounded)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_alarm(signum: int, frame: object) -> None:
        raise RunTimeout

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@dataclass(frozen=True)
class Run:
    """One doctor run: its report (None when it failed), why it failed, when it ended
    (Unix seconds) and how long it took (seconds)."""

    report: Report | None
    error: BaseException | None
    ended: float
    duration: float


def timed_run(
    run_once: Callable[[], Report],
    clock: Clock | None = None,
    *,
    bound: Bound | None = None,
    bound_seconds: float | None = None,
) -> Run:
    """Run ``run_once`` (within ``bound_seconds`` under ``bound``, if given); any exception
    (:class:`RunTimeout` included, :class:`Terminated` and ``KeyboardInterrupt`` not) is
    returned as :attr:`Run.error`."""
    clock = clock or RealClock()
    started = clock.now()
    report: Report | None = None
    error: BaseException | None = None
    try:
        if bound is not None and bound_seconds is not None:
            with bound(bound_seconds):
                report = run_once()
        else:
            report = run_once()
    except (Exception, RunTimeout) as exc:
        error = exc
    return Run(report, error, clock.time(), (clock.now() - started) / 1e9)


@contextlib.contextmanager
def _sigterm_raises() -> Iterator[None]:
    """While inside, SIGTERM raises :class:`Terminated` (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_term(signum: int, frame: object) -> None:
        raise Terminated

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_periodic(
    run_once: Callable[[], Report],
    every_ns: int,
    on_run: Callable[[Run], None],
    *,
    clock: Clock | None = None,
    sleep: Callable[[float], None] | None = None,
    bound: Bound = alarm_bound,
) -> int:
    """Run ``run_once`` now and every ``every_ns`` nanoseconds, each run bounded by the
    period, handing each :class:`Run` to ``on_run`` (which writes the textfile; what it
    raises ends the loop), until SIGTERM (or ``sleep``/``on_run`` raising
    :class:`Terminated`): then exit status 0."""
    import time

    clock = clock or RealClock()
    sleep = sleep or time.sleep
    with _sigterm_raises():
        try:
            due = clock.now()
            while True:
                on_run(timed_run(run_once, clock, bound=bound, bound_seconds=every_ns / 1e9))
                due += every_ns
                now = clock.now()
                if due <= now:  # overran: the next period boundary still ahead
                    due += ((now - due) // every_ns + 1) * every_ns
                sleep((due - now) / 1e9)
        except Terminated:
            return EXIT_OK
