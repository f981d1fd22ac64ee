"""Plugin telemetry against a hostile metrics directory and a busy node (issue 32, items 2-3).

Whoever can write node_exporter's textfile directory can plant the file a plugin reads
back: a label value of escapes (parsed in quadratic time before: the plugin answered, then
spent a minute parsing, and the kubelet discarded the answer), non-finite counters
(``OverflowError``: telemetry stayed dead), lines without end. Each is started over, in
bounded time. Concurrent runs never lose a count: a run that cannot take the lock in time
leaves a pending observation that the next run adds. Temp files go on every way out, and
the ones a killed run left go with the next run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from credprov.base import fileio
from credprov.base.textfile import parse_samples
from credprov.sdk import telemetry as tm

NOW = 1_700_000_000.0
LABELS = 'plugin="p",registry="r.example.com"'
BACKSLASHES = "\\\\" * 50_000  # 50,000 escaped backslashes


def obs(registry: str = "r.example.com", now: float = NOW) -> tm.Observation:
    return tm.Observation("p", registry, seconds=0.01, now=now)


def calls(prom: Path) -> int:
    return sum(
        int(v)
        for name, labels, v in parse_samples(prom.read_text())
        if name == "credprov_plugin_calls_total"
    )


@pytest.fixture
def prom(tmp_path: Path) -> Path:
    return tmp_path / "credprov_plugin_p.prom"


def _line(sample: str, value: str) -> str:
    return f"credprov_plugin_{sample} {value}\n"


HOSTILE = {
    "+Inf counter": _line(f'calls_total{{{LABELS},result="ok"}}', "+Inf"),
    "1e999 counter": _line(f'calls_total{{{LABELS},result="ok"}}', "1e999"),
    "NaN counter": _line(f'calls_total{{{LABELS},result="ok"}}', "NaN"),
    "-Inf bucket": _line(f'duration_seconds_bucket{{{LABELS},le="+Inf"}}', "-Inf"),
    "+Inf sum": _line(f"duration_seconds_sum{{{LABELS}}}", "+Inf"),
    "NaN last call": _line(f"last_call_timestamp_seconds{{{LABELS}}}", "NaN"),
    "1e999 expiry": _line(f"credentials_expiry_timestamp_seconds{{{LABELS}}}", "1e999"),
    "a value that is not a number": _line(f"cache_hits_total{{{LABELS}}}", "\x1b[31mx"),
    "a line of 100,000 characters": _line(
        f'calls_total{{{LABELS},result="ok",x="{"a" * 100_000}"}}', "1"
    ),
    "a label of 50,000 escapes": _line(
        f'calls_total{{plugin="{BACKSLASHES}",registry="r",result="ok"}}', "1"
    ),
}


@pytest.mark.parametrize("row", list(HOSTILE))
def test_a_hostile_file_is_started_over(prom: Path, row: str) -> None:
    prom.write_text(tm.HEADER + HOSTILE[row])
    note = tm.record(str(prom), obs())
    assert note.startswith(f"started {prom} over (") and "\x1b" not in note
    assert calls(prom) == 1


#: The address-space cap and the time a plugin may spend reading its file back.
MEMORY_CAP = 256 << 20
GUARD_SECONDS = 20

CHILD = r"""
import resource, sys, time
resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[1]), int(sys.argv[1])))
from credprov.sdk import telemetry as tm
path, kind = sys.argv[2], sys.argv[3]
size = tm.MAX_FILE_BYTES - 4096
if kind == "one line":  # beyond MAX_LINE: refused before it is parsed
    value = '\\"' * (size // 2 - 100)
    count = 1
else:  # lines just under MAX_LINE, each a label of escapes
    unit = {"escaped quotes": '\\"', "backslashes": "\\\\", "newlines": "a\\n"}[kind]
    value = unit * ((15_000) // len(unit))
    count = size // (len(value) + 80)
line = f'credprov_plugin_calls_total{{plugin="{value}",registry="r",result="ok"}} 1\n'
body = line * count
open(path, "w").write(tm.HEADER + body)
started = time.monotonic()
print(tm.record(path, tm.Observation("p", "r", now=1.0)))
print(time.monotonic() - started)
"""


@pytest.mark.parametrize("kind", ["one line", "escaped quotes", "backslashes", "newlines"])
def test_a_multi_megabyte_hostile_file_is_read_in_bounded_time(prom: Path, kind: str) -> None:
    """Before: quadratic in the label's length (a 400 KB file took over a minute)."""
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(MEMORY_CAP), str(prom), kind],
        capture_output=True,
        text=True,
        timeout=GUARD_SECONDS,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    note, _seconds = proc.stdout.splitlines()
    if kind == "one line":
        assert note.startswith(f"started {prom} over (a line longer than")
        assert calls(prom) == 1
    else:  # a file the plugin could have written: read back, in bounded time
        assert note == "" and calls(prom) == 2


@pytest.mark.parametrize(
    ("image", "registry"),
    [
        (":::/app", "invalid"),
        ("a:b/app", "invalid"),
        ("a:/app", "invalid"),
        ("[::1/app", "invalid"),
        ("-a.io/app", "invalid"),
        ("a..io/app", "invalid"),
        ("a_b.io/app", "invalid"),
        ("a\x1b.io/app", "invalid"),
        ("r.example.com:5000/app", "r.example.com:5000"),
        ("[::1]:5000/app", "[::1]:5000"),
    ],
)
def test_registry_is_invalid_for_anything_but_a_host(image: str, registry: str) -> None:
    assert tm.registry_host(image) == registry


def test_concurrent_runs_lose_no_count(prom: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """100 processes at once, none waiting for the lock (the worst a saturated node can
    do): each is in the file, or pending and added by the next run. Before: a run that
    waited 1 s in vain dropped its count (35 of 100 counted on a busy node)."""
    monkeypatch.setattr(tm, "LOCK_TIMEOUT_SECONDS", 0.0)
    children = []
    for i in range(100):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            code = 0
            try:
                tm.record(str(prom), obs(now=NOW + i))
            except BaseException:
                code = 1
            os._exit(code)
        children.append(pid)
    statuses = [os.waitpid(pid, 0)[1] for pid in children]
    assert statuses == [0] * 100
    assert tm.record(str(prom), obs()) == ""  # the next run adds what was pending
    assert calls(prom) == 101
    assert sorted(p.name for p in prom.parent.iterdir()) == [prom.name, prom.name + ".lock"]


def test_pending_runs_beyond_the_cap_say_they_are_not_counted(
    prom: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tm, "MAX_PENDING", 2)
    monkeypatch.setattr(tm, "LOCK_TIMEOUT_SECONDS", 0.0)
    holder = tm._lock(str(prom))
    try:
        assert "counted by the next run" in tm.record(str(prom), obs())
        assert "counted by the next run" in tm.record(str(prom), obs())
        with pytest.raises(tm.TelemetryError, match="2 runs are pending: this run is not"):
            tm.record(str(prom), obs())
    finally:
        os.close(holder)
    tm.record(str(prom), obs())
    assert calls(prom) == 3


@pytest.mark.parametrize(
    "pending",
    ['{"plugin": "p"}', "not json", '{"x": ' * 10_000, "[]"],
    ids=["fields", "json", "deep", "list"],
)
def test_a_foreign_pending_file_is_removed_not_counted(prom: Path, pending: str) -> None:
    planted = prom.parent / f"{prom.name}.{os.getpid()}.0123456789abcdef.pending"
    planted.write_text(pending)
    assert tm.record(str(prom), obs()) == ""
    assert calls(prom) == 1 and not planted.exists()


def test_temp_files_a_killed_run_left_are_removed_by_the_next(prom: Path) -> None:
    mine = prom.parent / f"{prom.name}.4242.0123456789abcdef.tmp"
    pending_tmp = prom.parent / f"{prom.name}.1.fedcba9876543210.pending.1.0123456789abcdef.tmp"
    fresh_pending_tmp = (
        prom.parent / f"{prom.name}.2.fedcba9876543210.pending.2.aa23456789abcdef.tmp"
    )
    other = prom.parent / "other.prom.4242.0123456789abcdef.tmp"
    for f in (mine, pending_tmp, fresh_pending_tmp, other):
        f.write_text("partial")
    old = time.time() - 3600
    os.utime(pending_tmp, (old, old))
    tm.record(str(prom), obs())
    assert not mine.exists() and not pending_tmp.exists()
    assert fresh_pending_tmp.exists() and other.exists()  # being written; not ours


@pytest.mark.parametrize("error", [KeyboardInterrupt, SystemExit, OSError])
def test_an_interrupted_write_leaves_no_temp_file(
    prom: Path, monkeypatch: pytest.MonkeyPatch, error: type[BaseException]
) -> None:
    """Before: only an OSError removed the temp file (SIGTERM in ``--every`` left one)."""

    def fsync(fd: int) -> None:
        raise error

    monkeypatch.setattr(fileio.os, "fsync", fsync)
    with pytest.raises((error, tm.TelemetryError)):  # type: ignore[arg-type]
        tm.record(str(prom), obs())
    assert sorted(p.name for p in prom.parent.iterdir()) == [prom.name + ".lock"]


def test_a_line_beyond_the_bound_is_refused_before_it_is_parsed() -> None:
    line = 'm{a="' + "\\\\" * 200_000 + '"} 1'
    with pytest.raises(ValueError, match="longer than"):
        parse_samples(line)
