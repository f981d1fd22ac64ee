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
  over the target (:func:`credprov.base.fileio.write_atomic`), mode 0644; the temp name does
  not end in ``.prom``, so the collector never reads it. The target must end in ``.prom``
  and must not be a symlink, FIFO or anything but a regular file.

The exposition (HELP/TYPE lines, label escaping) is ``prometheus_client``'s, the library
the plugin metrics use.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable
from typing import Any

from credprov.base.report import Status, text
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

#: The name node_exporter's textfile collector reads (``--collector.textfile.directory``).
SUFFIX = ".prom"
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
    problem = _not_replaceable(path)
    if problem:
        raise DoctorUsageError(f"--textfile {path}: {problem}")


def _not_replaceable(path: str) -> str | None:
    """Why ``path`` must not be replaced, or None (absent, or a regular file)."""
    from credprov.base.fileio import file_kind

    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return exc.strerror or "cannot be inspected"
    if stat.S_ISLNK(st.st_mode):
        return "is a symlink; refusing to replace it"
    if not stat.S_ISREG(st.st_mode):
        return f"is {file_kind(st.st_mode)}, not a regular file"
    return None


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


def _families(report: Report | None, timestamp: float, duration: float) -> Iterable[Any]:
    from prometheus_client.core import GaugeMetricFamily

    if report is not None:
        check = GaugeMetricFamily(
            "credprov_doctor_check",
            "One credprov doctor check's verdict on a subject (the value is always 1).",
            labels=["id", "status", "subject"],
        )
        for (check_id, subject), status in _series(report).items():
            check.add_metric([check_id, str(status), subject], 1)
        yield check
        counts = GaugeMetricFamily(
            "credprov_doctor_checks",
            "How many of the last run's findings have each status.",
            labels=["status"],
        )
        for name, count in report.counts(SUMMARY_ORDER).items():
            counts.add_metric([name], count)
        yield counts
    yield GaugeMetricFamily(
        "credprov_doctor_up",
        "1 if the last doctor run finished and produced a report, 0 if it failed.",
        value=0 if report is None else 1,
    )
    yield GaugeMetricFamily(
        "credprov_doctor_last_run_timestamp_seconds",
        "When the last doctor run ended, in Unix seconds.",
        value=timestamp,
    )
    yield GaugeMetricFamily(
        "credprov_doctor_last_run_duration_seconds",
        "How long the last doctor run took, in seconds.",
        value=duration,
    )


class _Families:
    """A collector of fixed metric families (``prometheus_client``'s collector protocol)."""

    def __init__(self, families: Iterable[Any]) -> None:
        self._families = list(families)

    def collect(self) -> Iterable[Any]:
        """The families, as given."""
        return iter(self._families)


def render(report: Report | None, *, timestamp: float, duration: float) -> bytes:
    """The textfile for ``report`` (None: the run failed, ``credprov_doctor_up 0`` and no
    check series) that ended at ``timestamp`` (Unix seconds) after ``duration`` seconds."""
    from prometheus_client import CollectorRegistry, generate_latest

    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Families(_families(report, timestamp, duration)))
    return generate_latest(registry)


def write_textfile(path: str, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically (temp file in the same directory, fsync,
    rename, mode 0644), refusing a target that is not a regular file.

    Raises:
        TextfileError: the target cannot be replaced, or the write failed.
    """
    from credprov.base.fileio import write_atomic

    problem = _not_replaceable(path)
    if problem:
        raise TextfileError(f"cannot write --textfile {path}: {problem}")
    try:
        write_atomic(path, data, mode=0o644)
    except OSError as exc:
        raise TextfileError(f"cannot write --textfile {path}: {exc.strerror or exc}") from None
