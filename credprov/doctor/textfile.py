"""The doctor's report for node_exporter's textfile collector (``doctor --textfile PATH``).

node_exporter's textfile collector reads every ``*.prom`` file of one directory at each
scrape and exports its samples as they are; a file it cannot parse fails the whole
collector, and it may read a file while it is being written. So the file is:

* one series per check and subject, ``credprov_doctor_check{id,status,subject} 1`` (two
  findings of one check about one subject keep the worse status: the collector rejects a
  scrape holding one series twice), subjects printable (controls escaped as the text report
  escapes them) and at most :data:`MAX_SUBJECT` characters (a longer one is cut and ends in
  a hash of the whole, so two subjects never merge); never a finding's message or hint,
  which may quote what a plugin said;
* ``credprov_doctor_checks{status}`` (the report's summary, every status present),
  ``credprov_doctor_last_run_timestamp_seconds`` (when the run ended: alert on its age),
  ``credprov_doctor_last_run_duration_seconds`` and ``credprov_doctor_up`` (0: the run
  failed or did not finish, and then no check series, so nothing stale is left behind);
* written by :func:`write_textfile`: a temp file in the same directory, fsynced, renamed
  over the target, mode 0644 (:func:`credprov.base.textfile.write_textfile`); the temp name
  does not end in ``.prom``, so the collector never reads it; it is removed however the
  write ends (SIGTERM during the write included), and one older than
  :data:`STALE_TEMP_SECONDS` (a SIGKILL) is removed by the next write. The target must end in
  ``.prom`` and must not be a symlink, FIFO or anything but a regular file.

The exposition (HELP/TYPE lines, label escaping) is :mod:`credprov.base.textfile`'s, which
writes ``prometheus_client``'s bytes and is shared with the plugins' telemetry
(:mod:`credprov.sdk.telemetry`).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable

from credprov.base.report import Status, text
from credprov.base.textfile import SUFFIX, MetricFamily, not_replaceable
from credprov.doctor.context import DoctorUsageError
from credprov.doctor.report import SUMMARY_ORDER, Report
from credprov.errors import FileError

__all__ = [
    "MAX_SUBJECT",
    "SUFFIX",
    "TextfileError",
    "check_target",
    "render",
    "write_textfile",
]

#: A temp file of the textfile this old was left by a killed writer (a write takes
#: milliseconds; two doctors, the DaemonSet's and NPD's, may write one file at once).
STALE_TEMP_SECONDS = 60.0
#: Longest subject label value, in characters (paths and image names can be long).
MAX_SUBJECT = 128
_HASH_CHARS = 12

#: Worse first: the status a series keeps when one check says two things of one subject.
_SEVERITY = {Status.FAIL: 3, Status.WARN: 2, Status.PASS: 1, Status.SKIP: 0}


class TextfileError(FileError, OSError):
    """The textfile could not be written (one line, no secret)."""


def check_target(path: str) -> None:
    """Refuse a ``--textfile`` that node_exporter would not read or that must not be
    replaced: a name not ending in ``.prom``, a missing directory, a symlink, a FIFO or
    anything else that is not a regular file.

    Raises:
        DoctorUsageError: the path cannot be used (exit 2, before anything runs).
    """
    if not os.path.basename(path).endswith(SUFFIX) or os.path.basename(path) == SUFFIX:
        raise DoctorUsageError(
            f"--textfile {path}: the name must end in {SUFFIX} (node_exporter's textfile "
            "collector reads only those)"
        )
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise DoctorUsageError(f"--textfile {path}: directory {directory} does not exist")
    problem = not_replaceable(path)
    if problem:
        raise DoctorUsageError(f"--textfile {path}: {problem}")


def subject_label(subject: str) -> str:
    """A finding's subject as a label value: printable, at most :data:`MAX_SUBJECT`
    characters; a longer one is cut and ends in ``~`` and a hash of the whole subject."""
    shown = text(subject)
    if len(shown) <= MAX_SUBJECT:
        return shown
    digest = hashlib.sha256(subject.encode("utf-8", "surrogateescape")).hexdigest()
    return f"{shown[: MAX_SUBJECT - _HASH_CHARS - 1]}~{digest[:_HASH_CHARS]}"


def _series(report: Report) -> dict[tuple[str, str], Status]:
    """(check id, subject label) -> status: one series each, the worse status kept."""
    series: dict[tuple[str, str], Status] = {}
    for finding in report.checks:
        key = (text(finding.id), subject_label(finding.subject))
        known = series.get(key)
        if known is None or _SEVERITY[finding.status] > _SEVERITY[known]:
            series[key] = finding.status
    return series


def _families(report: Report | None, timestamp: float, duration: float) -> Iterable[MetricFamily]:
    if report is not None:
        check = MetricFamily(
            "credprov_doctor_check",
            "gauge",
            "One credprov doctor check's verdict on a subject (the value is always 1).",
        )
        for (check_id, subject), status in _series(report).items():
            check.add({"id": check_id, "status": str(status), "subject": subject}, 1)
        yield check
        counts = MetricFamily(
            "credprov_doctor_checks",
            "gauge",
            "How many of the last run's findings have each status.",
        )
        for name, count in report.counts(SUMMARY_ORDER).items():
            counts.add({"status": name}, count)
        yield counts
    for name, doc, value in (
        (
            "credprov_doctor_up",
            "1 if the last doctor run finished and produced a report, 0 if it failed.",
            0 if report is None else 1,
        ),
        (
            "credprov_doctor_last_run_timestamp_seconds",
            "When the last doctor run ended, in Unix seconds.",
            timestamp,
        ),
        (
            "credprov_doctor_last_run_duration_seconds",
            "How long the last doctor run took, in seconds.",
            duration,
        ),
    ):
        family = MetricFamily(name, "gauge", doc)
        family.add({}, value)
        yield family


def render(report: Report | None, *, timestamp: float, duration: float) -> bytes:
    """The textfile for ``report`` (None: the run failed, ``credprov_doctor_up 0`` and no
    check series) that ended at ``timestamp`` (Unix seconds) after ``duration`` seconds."""
    from credprov.base import textfile

    return textfile.render(_families(report, timestamp, duration))


def write_textfile(path: str, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically (temp file in the same directory, fsync,
    rename, mode 0644), refusing a target that is not a regular file.

    Raises:
        TextfileError: the target cannot be replaced, or the write failed.
    """
    from credprov.base import textfile

    textfile.remove_stale_temps(path, STALE_TEMP_SECONDS)
    try:
        textfile.write_textfile(path, data)
    except OSError as exc:
        raise TextfileError(f"cannot write --textfile {path}: {exc.strerror or exc}") from None
