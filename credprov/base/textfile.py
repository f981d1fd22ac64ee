"""Files for node_exporter's textfile collector: the Prometheus text format, written safely.

node_exporter's textfile collector reads every ``*.prom`` file of one directory at each
scrape and exports its samples as they are; a file it cannot parse fails the whole
collector, and it may read a file while it is being written. Both credprov writers of such
files (``doctor --textfile`` and the plugins' opt-in telemetry, :mod:`credprov.sdk.telemetry`)
go through this module:

* :class:`MetricFamily` and :func:`render`: the text exposition format (version 0.0.4) as
  ``prometheus_client.generate_latest`` writes it, byte for byte (``# HELP``/``# TYPE``
  lines, label names sorted, label values escaped, values as Go formats floats), without
  importing ``prometheus_client`` (~40 ms: too much for a plugin's warm path);
* :func:`parse_samples`: the inverse of :func:`render`, for a writer that accumulates
  across runs (the plugins' telemetry re-reads its own file): linear in the file's length
  (a file anyone who can write the collector's directory may have planted), lines of at
  most :data:`MAX_LINE` characters;
* :func:`write_textfile`: a temp file in the same directory, fsynced, renamed over the
  target (:func:`credprov.base.fileio.write_atomic`), mode 0644; the temp name does not end
  in ``.prom``, so the collector never reads it, and it is removed on every way out but
  SIGKILL; :func:`remove_stale_temps` removes what a killed writer left. :func:`not_replaceable` says why a target
  must not be replaced (a symlink, FIFO, directory...).

Standard library only.
"""

from __future__ import annotations

import os
import stat

from credprov.errors import FileError

TYPE_CHECKING = False  # typing costs start-up; the annotations need it only when checked
if TYPE_CHECKING:
    import re
    from collections.abc import Iterable, Mapping

#: The name node_exporter's textfile collector reads (``--collector.textfile.directory``).
SUFFIX = ".prom"

_INF = float("inf")


class TextfileWriteError(FileError, OSError):
    """A textfile that cannot be replaced or written; ``strerror`` says why (one line)."""


class MetricFamily:
    """One metric family: its name, type (``gauge``, ``counter``, ``histogram``...), help
    text and samples (sample name, labels, value).

    The name is the one exposed: a counter's ends in ``_total`` (as Prometheus's text
    format writes it), a histogram's samples add ``_bucket``, ``_sum`` and ``_count``.
    """

    __slots__ = ("help", "name", "samples", "type")

    def __init__(self, name: str, type: str, help: str) -> None:
        self.name = name
        self.type = type
        self.help = help
        self.samples: list[tuple[str, Mapping[str, str], float]] = []

    def add(self, labels: Mapping[str, str], value: float, suffix: str = "") -> None:
        """Add the sample ``<name><suffix>{labels} value``."""
        self.samples.append((self.name + suffix, labels, value))


def go_float(value: float) -> str:
    """``value`` as Prometheus's Go code writes it (``prometheus_client``'s
    ``floatToGoString``): ``1.0``, ``+Inf``, ``1.7000001235e+09``."""
    d = float(value)
    if d == _INF:
        return "+Inf"
    if d == -_INF:
        return "-Inf"
    if d != d:
        return "NaN"
    s = repr(d)
    dot = s.find(".")
    if d > 0 and dot > 6:  # Go switches to exponents sooner than Python
        mantissa = f"{s[0]}.{s[1:dot]}{s[dot + 1 :]}".rstrip("0.")
        return f"{mantissa}e+{dot - 1:02d}"
    return s


def escape_label_value(value: str) -> str:
    """A label value as the text format quotes it: backslash, newline and ``"`` escaped."""
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def render(families: Iterable[MetricFamily]) -> bytes:
    """The text exposition of ``families``, in order (``generate_latest``'s bytes)."""
    out: list[str] = []
    for family in families:
        doc = family.help.replace("\\", "\\\\").replace("\n", "\\n")
        out.append(f"# HELP {family.name} {doc}\n# TYPE {family.name} {family.type}\n")
        for name, labels, value in family.samples:
            if labels:
                inner = ",".join(
                    f'{k}="{escape_label_value(v)}"' for k, v in sorted(labels.items())
                )
                name = f"{name}{{{inner}}}"
            out.append(f"{name} {go_float(value)}\n")
    return "".join(out).encode("utf-8")


#: The longest sample line :func:`parse_samples` reads (a telemetry line is under 600 bytes).
MAX_LINE = 16 * 1024

_VALUE_RE: re.Pattern[str] | None = None


def _label_value(line: str, start: int) -> tuple[str, int]:
    """The label value that starts at ``line[start]`` (after its opening quote), unescaped,
    and the index just past its closing quote. Linear in the value's length, and at the
    speed of C: a label without a backslash is one ``find``; one with backslashes is
    matched by a regular expression (``re`` is imported then only: the plugins' warm path
    never writes a backslash) and unescaped by ``split``/``replace``.
    """
    quote = line.find('"', start)
    if quote < 0:
        raise ValueError("unterminated label value")
    backslash = line.find("\\", start, quote)
    if backslash < 0:
        return line[start:quote], quote + 1
    global _VALUE_RE
    if _VALUE_RE is None:
        import re

        _VALUE_RE = re.compile(r'(?:[^"\\]|\\[\s\S])*"')
    match = _VALUE_RE.match(line, start)
    if match is None:
        raise ValueError("unterminated label value")
    raw = match.group()[:-1]
    parts = raw.split("\\\\")
    for i, part in enumerate(parts):
        part = part.replace("\\n", "\n").replace('\\"', '"')
        if "\\" in part:
            raise ValueError("bad escape in a label value")
        parts[i] = part
    return "\\".join(parts), match.end()


def _labels(line: str, start: int, end: int) -> dict[str, str]:
    """The labels written between ``line[start]`` and ``line[end]`` (the inside of the
    braces: ``a="x",b="y"``), as a dict."""
    labels: dict[str, str] = {}
    i = start
    while i < end:
        eq = line.find('="', i, end)
        name = line[i:eq] if eq >= 0 else ""
        if not name.isidentifier() or name in labels:
            raise ValueError("bad label")
        labels[name], i = _label_value(line, eq + 2)
        if i > end:
            raise ValueError("a sample line with unbalanced braces")
        if i < end:
            if line[i] != ",":
                raise ValueError("bad label separator")
            i += 1
    return labels


def parse_samples(text: str) -> list[tuple[str, dict[str, str], float]]:
    """The samples of a file :func:`render` wrote: ``(name, labels, value)`` in order;
    comment lines (``#``) and blank lines are skipped. Linear in the text's length.

    Raises:
        ValueError: a line that :func:`render` would not have written (timestamps
            included), or longer than :data:`MAX_LINE`.
    """
    samples: list[tuple[str, dict[str, str], float]] = []
    for line in text.split("\n"):
        if len(line) > MAX_LINE:
            raise ValueError(f"a line longer than {MAX_LINE} characters")
        if not line or line.startswith("#"):
            continue
        space = line.rfind(" ")
        if space < 0:
            raise ValueError("a sample line without a value")
        brace = line.find("{", 0, space)
        if brace >= 0:
            if line[space - 1] != "}":
                raise ValueError("a sample line with unbalanced braces")
            name = line[:brace]
            labels = _labels(line, brace + 1, space - 1)
        else:
            name = line[:space]
            labels = {}
        if not name.replace(":", "_").isidentifier():
            raise ValueError("a bad metric name")
        try:
            value = float(line[space + 1 :])
        except ValueError:
            raise ValueError("a sample value that is not a number") from None
        samples.append((name, labels, value))
    return samples


def not_replaceable(path: str) -> str | None:
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


#: Directory entries :func:`remove_stale_temps` looks at, at most.
MAX_SCAN = 4096
_HEX = frozenset("0123456789abcdef")


def is_temp_of(name: str, target: str) -> bool:
    """Whether ``name`` is a temp file :func:`write_textfile` makes for ``target`` (a base
    name): ``<target>.<pid>.<16 hex digits>.tmp``."""
    if not name.startswith(target + ".") or not name.endswith(".tmp"):
        return False
    pid, dot, random = name[len(target) + 1 : -4].partition(".")
    return bool(dot) and pid.isdigit() and len(random) == 16 and _HEX.issuperset(random)


def remove_stale_temps(path: str, min_age: float, now: float | None = None) -> int:
    """Remove the temp files of ``path`` that a killed writer left (SIGKILL, a kill at the
    kubelet's exec timeout, a power loss) and that are at least ``min_age`` seconds old
    (0: all; only when every writer of ``path`` holds a lock the caller holds too); at most
    :data:`MAX_SCAN` directory entries are looked at. Errors are ignored.

    Returns:
        How many were removed.
    """
    import time

    directory, target = os.path.split(os.path.abspath(path))
    now = time.time() if now is None else now
    removed = 0
    try:
        with os.scandir(directory) as entries:
            for i, entry in enumerate(entries):
                if i >= MAX_SCAN:
                    break
                if not is_temp_of(entry.name, target):
                    continue
                try:
                    st = entry.stat(follow_symlinks=False)
                    if stat.S_ISREG(st.st_mode) and now - st.st_mtime >= min_age:
                        os.unlink(entry.path)
                        removed += 1
                except OSError:
                    continue
    except OSError:
        pass
    return removed


def write_textfile(path: str, data: bytes, *, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` atomically (temp file in the same directory, fsync,
    rename, mode 0644; with ``durable`` the directory is fsynced too), refusing a target
    that is not a regular file.

    Raises:
        TextfileWriteError: the target cannot be replaced (``strerror`` says why), or the
            write failed (``strerror`` is the system's reason).
    """
    from credprov.base.fileio import write_atomic

    problem = not_replaceable(path)
    if problem:
        raise TextfileWriteError(0, problem, path)
    try:
        write_atomic(path, data, mode=0o644, durable=durable)
    except OSError as exc:
        raise TextfileWriteError(exc.errno or 0, exc.strerror or str(exc), path) from None
