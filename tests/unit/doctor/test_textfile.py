"""``doctor --textfile``: the report as node_exporter's textfile collector reads it.

The file is parsed back with ``prometheus_client``'s own parser (what a scrape of
node_exporter re-exposes), and checked for: one series per check and subject, label values
escaped and bounded, the counts, the run's timestamp and duration from the injected clock,
``credprov_doctor_up 0`` for a failed run, an atomic 0644 write through a temp file that the
collector ignores, the targets refused, and the exit statuses left as they were.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from credprov.base.clock import FakeClock
from credprov.doctor import DoctorUsageError, Finding, Report, Status
from credprov.doctor import textfile as tf
from credprov.doctor.cli import main
from credprov.doctor.periodic import timed_run
from tests.unit.doctor import nodes

FAMILIES = {
    "credprov_doctor_check",
    "credprov_doctor_checks",
    "credprov_doctor_up",
    "credprov_doctor_last_run_timestamp_seconds",
    "credprov_doctor_last_run_duration_seconds",
}


def parse(data: bytes | str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Family name -> [(labels, value)], as Prometheus's text parser reads the file."""
    text = data.decode() if isinstance(data, bytes) else data
    return {
        family.name: [(dict(s.labels), s.value) for s in family.samples]
        for family in text_string_to_metric_families(text)
    }


def report(*findings: Finding) -> Report:
    return Report(node={"root": "/"}, checks=list(findings))


def test_one_series_per_check_and_subject_with_help_type_and_counts() -> None:
    r = report(
        Finding("kubelet.flags", Status.PASS),
        Finding("plugin.responds", Status.PASS, "ecr"),
        Finding("plugin.responds", Status.FAIL, "ecr"),  # the worse verdict wins
        Finding("plugin.responds", Status.SKIP, "gcp"),
        Finding("image.match", Status.WARN, "registry.example.com/app"),
    )
    data = tf.render(r, timestamp=1_700_000_123.5, duration=1.25)
    text = data.decode()
    for name in FAMILIES:
        assert f"# HELP {name} " in text and f"# TYPE {name} gauge" in text
    got = parse(data)
    assert set(got) == FAMILIES
    assert got["credprov_doctor_check"] == [
        ({"id": "kubelet.flags", "status": "pass", "subject": ""}, 1.0),
        ({"id": "plugin.responds", "status": "fail", "subject": "ecr"}, 1.0),
        ({"id": "plugin.responds", "status": "skip", "subject": "gcp"}, 1.0),
        ({"id": "image.match", "status": "warn", "subject": "registry.example.com/app"}, 1.0),
    ]
    counts = {labels["status"]: value for labels, value in got["credprov_doctor_checks"]}
    assert counts == {"pass": 2.0, "warn": 1.0, "fail": 1.0, "skip": 1.0}
    assert got["credprov_doctor_up"] == [({}, 1.0)]
    assert got["credprov_doctor_last_run_timestamp_seconds"] == [({}, 1_700_000_123.5)]
    assert got["credprov_doctor_last_run_duration_seconds"] == [({}, 1.25)]


@pytest.mark.parametrize(
    "subject, shown",
    [
        ('a "quoted" \\ name', 'a "quoted" \\ name'),
        ("two\nlines", "two\\nlines"),  # one line, as the text report prints it
        ("esc\x1b[31mred", "esc\\x1b[31mred"),
        ("ünïcode", "ünïcode"),
    ],
    ids=["quote-backslash", "newline", "escape", "unicode"],
)
def test_label_values_are_escaped_and_read_back_exactly(subject: str, shown: str) -> None:
    data = tf.render(report(Finding("plugin.present", Status.FAIL, subject)), timestamp=0,
                     duration=0)  # fmt: skip
    ((labels, _),) = parse(data)["credprov_doctor_check"]
    assert labels["subject"] == shown
    assert all(line.startswith(("#", "credprov_doctor_")) for line in data.decode().splitlines())


def test_long_subjects_are_bounded_and_stay_distinct() -> None:
    a, b = "x" * 300 + "a", "x" * 300 + "b"
    data = tf.render(report(Finding("image.match", Status.PASS, a),
                            Finding("image.match", Status.PASS, b)), timestamp=0, duration=0)  # fmt: skip
    subjects = [labels["subject"] for labels, _ in parse(data)["credprov_doctor_check"]]
    assert len(subjects) == 2 and len(set(subjects)) == 2
    assert all(len(s) == tf.MAX_SUBJECT and s.startswith("x" * 100) for s in subjects)
    assert tf.subject_label("short") == "short"


def test_a_failed_run_is_up_0_with_no_check_series() -> None:
    got = parse(tf.render(None, timestamp=42.0, duration=3.5))
    assert got == {
        "credprov_doctor_up": [({}, 0.0)],
        "credprov_doctor_last_run_timestamp_seconds": [({}, 42.0)],
        "credprov_doctor_last_run_duration_seconds": [({}, 3.5)],
    }


def test_timestamp_and_duration_come_from_the_injected_clock() -> None:
    clock = FakeClock(start=0, wall=1_800_000_000.0)

    def slow() -> Report:
        clock.step(2_500_000_000)
        return report(Finding("kubelet.flags", Status.PASS))

    run = timed_run(slow, clock)
    got = parse(tf.render(run.report, timestamp=run.ended, duration=run.duration))
    assert got["credprov_doctor_last_run_timestamp_seconds"] == [({}, 1_800_000_002.5)]
    assert got["credprov_doctor_last_run_duration_seconds"] == [({}, 2.5)]


def test_write_is_atomic_0644_through_a_temp_file_the_collector_ignores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "credprov_doctor.prom"
    target.write_text("old\n")
    renames: list[tuple[str, str]] = []
    real_replace = os.replace

    def replace(src: str, dst: str) -> None:
        renames.append((str(src), str(dst)))
        assert target.read_text() == "old\n"  # readers see the old file until the rename
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    old_umask = os.umask(0o077)
    try:
        tf.write_textfile(str(target), b"new 1\n")
    finally:
        os.umask(old_umask)
    ((src, dst),) = renames
    assert dst == str(target)
    assert os.path.dirname(src) == str(tmp_path) and not src.endswith(".prom")
    assert target.read_bytes() == b"new 1\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["credprov_doctor.prom"]


@pytest.mark.parametrize("kind", ["symlink", "fifo", "directory"])
def test_a_target_that_is_not_a_regular_file_is_refused(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "x.prom"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("keep\n")
    if kind == "symlink":
        target.symlink_to(elsewhere)
    elif kind == "fifo":
        os.mkfifo(target)
    else:
        target.mkdir()
    with pytest.raises(DoctorUsageError, match=r"^--textfile .*x\.prom: "):
        tf.check_target(str(target))
    with pytest.raises(tf.TextfileError, match=r"^cannot write --textfile "):
        tf.write_textfile(str(target), b"x 1\n")
    assert elsewhere.read_text() == "keep\n"
    assert os.path.lexists(target) and not (target.is_file() and not target.is_symlink())


@pytest.mark.parametrize(
    "name, why",
    [("report.txt", "the name must end in .prom"), ("missing/x.prom", "does not exist")],
)
def test_check_target_refuses_names_the_collector_would_not_read(
    tmp_path: Path, name: str, why: str
) -> None:
    with pytest.raises(DoctorUsageError, match=why):
        tf.check_target(str(tmp_path / name))


# -- through the command ----------------------------------------------------------------------


@pytest.fixture
def node(tmp_path: Path) -> Path:
    return nodes.kubeadm_node(tmp_path / "node")


def test_textfile_keeps_the_exit_status_and_the_report(
    node: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prom = tmp_path / "credprov_doctor.prom"
    args = ["--node-root", str(node), "--no-exec"]
    assert main(args) == 0
    plain = capsys.readouterr().out
    assert main([*args, "--textfile", str(prom)]) == 0
    assert capsys.readouterr().out == plain
    got = parse(prom.read_text())
    assert got["credprov_doctor_up"] == [({}, 1.0)]
    statuses = {labels["status"] for labels, _ in got["credprov_doctor_check"]}
    assert "fail" not in statuses
    assert nodes.CANARY not in prom.read_text()

    nodes.write(node, nodes.CONFIG, "apiVersion: nope\n")
    assert main([*args, "--textfile", str(prom)]) == 1
    got = parse(prom.read_text())
    failed = [labels["id"] for labels, _ in got["credprov_doctor_check"]
              if labels["status"] == "fail"]  # fmt: skip
    assert "provider-config.valid" in failed


def test_a_run_that_cannot_start_writes_up_0(
    node: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prom = tmp_path / "credprov_doctor.prom"
    prom.write_text("credprov_doctor_up 1\n")  # a previous run's
    code = main(["--node-root", str(node), "--objects", str(tmp_path / "missing.json"),
                 "--textfile", str(prom)])  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("credprov doctor: error: ") and len(err.splitlines()) <= 2
    assert parse(prom.read_text())["credprov_doctor_up"] == [({}, 0.0)]


@pytest.mark.parametrize(
    "extra, line",
    [
        (["--textfile", "out.txt"], "the name must end in .prom"),
        (["--every", "10m"], "--every needs --textfile"),
        (["--every", "10m", "--textfile", "x.prom", "--npd"], "--npd runs once per call"),
    ],
    ids=["not-prom", "every-alone", "every-npd"],
)
def test_fleet_option_mistakes_are_one_line_exit_2(
    node: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    line: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["--node-root", str(node), *extra]) == 2
    out, err = capsys.readouterr()
    assert len(err.splitlines()) == 1 and line in err
    if "--npd" in extra:  # NPD reads stdout: its one line, on every path (issue 32)
        assert out.startswith("credprov doctor could not run: ") and out.count("\n") == 1
    else:
        assert out == ""
    assert not list(tmp_path.glob("*.prom"))
