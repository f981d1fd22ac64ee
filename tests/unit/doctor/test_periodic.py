"""``doctor --every``: runs on the period, each bounded, a failed run reported as such, and
SIGTERM a clean exit 0. The loop is driven by a fake clock and a fake sleep (no test sleeps
through a period); one test sends a real SIGTERM to a real process."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from credprov.base.clock import FakeClock
from credprov.doctor import DoctorUsageError, Finding, Report, Status
from credprov.doctor.cli import main
from credprov.doctor.periodic import Run, RunTimeout, Terminated, alarm_bound, run_periodic
from tests.unit.doctor import nodes
from tests.unit.doctor.test_textfile import parse

MINUTE = 60_000_000_000


def ok_report() -> Report:
    return Report(node={}, checks=[Finding("kubelet.flags", Status.PASS)])


class Loop:
    """A fake clock and sleep: ``sleep`` moves the clock; after ``runs`` runs it raises
    :class:`Terminated` as SIGTERM would."""

    def __init__(self, runs: int) -> None:
        self.clock = FakeClock(start=0, wall=1_700_000_000.0)
        self.runs = runs
        self.seen: list[Run] = []
        self.sleeps: list[float] = []

    def on_run(self, run: Run) -> None:
        self.seen.append(run)

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        if len(self.seen) >= self.runs:
            raise Terminated
        self.clock.step(int(seconds * 1e9))


def no_bound(seconds: float) -> contextlib.nullcontext[None]:
    return contextlib.nullcontext()


def test_runs_every_period_until_sigterm_then_exit_0() -> None:
    loop = Loop(runs=3)

    def run_once() -> Report:
        loop.clock.step(2_000_000_000)  # 2 s per run
        return ok_report()

    code = run_periodic(run_once, 10 * MINUTE, loop.on_run, clock=loop.clock, sleep=loop.sleep,
                        bound=no_bound)  # fmt: skip
    assert code == 0
    assert [r.ended - 1_700_000_000.0 for r in loop.seen] == [2.0, 602.0, 1202.0]
    assert [r.duration for r in loop.seen] == [2.0, 2.0, 2.0]
    assert loop.sleeps == [598.0, 598.0, 598.0]


def test_an_overrun_skips_to_the_next_period_boundary() -> None:
    loop = Loop(runs=2)
    lengths = iter([25 * MINUTE, MINUTE])

    def run_once() -> Report:
        loop.clock.step(next(lengths))
        return ok_report()

    run_periodic(run_once, 10 * MINUTE, loop.on_run, clock=loop.clock, sleep=loop.sleep,
                 bound=no_bound)  # fmt: skip
    # The first run ended at 25m: the next starts at 30m, not at once and not twice.
    assert loop.sleeps[0] == 300.0
    assert loop.seen[1].ended - 1_700_000_000.0 == 31 * 60


def test_a_failed_run_is_handed_on_and_the_loop_goes_on() -> None:
    loop = Loop(runs=3)
    outcomes: list[BaseException | None] = [DoctorUsageError("--objects x: gone"), None,
                                            RuntimeError("bug")]  # fmt: skip

    def run_once() -> Report:
        error = outcomes[len(loop.seen)]
        if error is not None:
            raise error
        return ok_report()

    assert run_periodic(run_once, MINUTE, loop.on_run, clock=loop.clock, sleep=loop.sleep,
                        bound=no_bound) == 0  # fmt: skip
    assert [type(r.error).__name__ if r.error else "ok" for r in loop.seen] == [
        "DoctorUsageError", "ok", "RuntimeError"]  # fmt: skip
    assert [r.report is None for r in loop.seen] == [True, False, True]


def test_each_run_is_bounded_by_the_period() -> None:
    bounds: list[float] = []
    loop = Loop(runs=1)

    @contextlib.contextmanager
    def raising(seconds: float) -> Iterator[None]:
        bounds.append(seconds)
        raise RunTimeout
        yield  # a generator, for contextmanager

    run_periodic(ok_report, 10 * MINUTE, loop.on_run, clock=loop.clock, sleep=loop.sleep,
                 bound=raising)  # fmt: skip
    assert bounds == [600.0]
    assert isinstance(loop.seen[0].error, RunTimeout) and loop.seen[0].report is None


def test_alarm_bound_interrupts_a_blocked_run() -> None:
    blocked = threading.Event()
    started = time.monotonic()
    with pytest.raises(RunTimeout), alarm_bound(0.05):
        blocked.wait(30)
    assert time.monotonic() - started < 5
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_every_through_the_command_rewrites_the_textfile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    node = nodes.kubeadm_node(tmp_path / "node")
    prom = tmp_path / "credprov_doctor.prom"
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        assert parse(prom.read_text())["credprov_doctor_up"] == [({}, 1.0)]
        if len(sleeps) == 2:
            raise Terminated
        prom.unlink()

    monkeypatch.setattr(time, "sleep", sleep)
    code = main(["--node-root", str(node), "--no-exec", "--every", "10m", "--textfile",
                 str(prom)])  # fmt: skip
    assert code == 0
    # The real clock did not move in the fake sleep: the second waits for the 20m mark.
    assert len(sleeps) == 2 and 590 < sleeps[0] <= 600 and 1190 < sleeps[1] <= 1200
    assert capsys.readouterr().out.count("\nkubelet\n") == 2  # the report, once per run


def test_sigterm_ends_a_real_periodic_doctor_with_exit_0(tmp_path: Path) -> None:
    node = nodes.kubeadm_node(tmp_path / "node")
    prom = tmp_path / "credprov_doctor.prom"
    proc = subprocess.Popen(
        [sys.executable, "-m", "credprov.doctor.cli", "--node-root", str(node), "--no-exec",
         "--every", "1h", "--textfile", str(prom)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not prom.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert prom.exists(), proc.stderr.read() if proc.stderr else ""
        os.kill(proc.pid, signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert (proc.returncode, err) == (0, "")
    assert parse(prom.read_text())["credprov_doctor_up"] == [({}, 1.0)]


@pytest.mark.parametrize(
    ("every", "accepted"),
    [
        ("1s", True),
        ("10m", True),
        ("8784h", True),
        ("8784h0m1s", False),
        ("2562047h47m16.854775807s", False),  # Go's largest duration: exit 70 before
        ("2562047h", False),
        ("0s", False),
        ("-1m", False),
    ],
)
def test_periods_the_loop_cannot_sleep_are_a_usage_error(every: str, accepted: bool) -> None:
    from credprov.doctor.cli import build_parser

    if accepted:
        assert build_parser().parse_args(["--every", every]).every > 0
        return
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["--every", every])
    assert exc.value.code == 2


def test_sigterm_during_the_textfile_write_leaves_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: the atomic writer removed its temp file on OSError only; SIGTERM (raised as
    Terminated by the loop) left ``<file>.prom.<pid>.<hex>.tmp`` for good."""
    from credprov.base import fileio

    node = nodes.kubeadm_node(tmp_path / "node")
    out = tmp_path / "collector"
    out.mkdir()
    prom = out / "credprov_doctor.prom"
    stale = out / "credprov_doctor.prom.4242.0123456789abcdef.tmp"  # a SIGKILL's leftover
    stale.write_text("partial")
    old = time.time() - 3600
    os.utime(stale, (old, old))

    def fsync(fd: int) -> None:
        raise Terminated

    monkeypatch.setattr(fileio.os, "fsync", fsync)
    code = main(["--node-root", str(node), "--no-exec", "--every", "10m", "--textfile",
                 str(prom)])  # fmt: skip
    assert code == 0
    assert sorted(p.name for p in out.iterdir()) == []
