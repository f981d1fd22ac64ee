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
  across runs (the plugins' telemetry re-reads its own file);
* :func:`write_textfile`: a temp file in the same directory, fsynced, renamed over the
  target (:func:`credprov.base.fileio.write_atomic`), mode 0644; the temp name does not end
  in ``.prom``, so the collector never reads it. :func:`not_replaceable` says why a target
  must not be replaced (a symlink, FIFO, directory...).

Standard library only.
"""

from __future__ import annotations

import os
import stat

from credprov.errors import FileError

TYPE_CHECKING = False  # typing costs start-up; the annotations need it only when checked
if TYPE_CHECKING:
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


def _unescape(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            nxt = text[i + 1 : i + 2]
            if nxt not in ("\\", "n", '"'):
                raise ValueError("bad escape in a label value")
            out.append("\n" if nxt == "n" else nxt)
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _labels(text: str) -> dict[str, str]:
    """``a="x",b="y"`` (the inside of the braces) as a dict."""
    labels: dict[str, str] = {}
    while text:
        name, eq, rest = text.partition('="')
        if not eq or not name.isidentifier() or name in labels:
            raise ValueError("bad label")
        end = 0
        while True:  # the closing quote: one not preceded by an odd run of backslashes
            end = rest.find('"', end)
            if end < 0:
                raise ValueError("unterminated label value")
            backslashes = len(rest[:end]) - len(rest[:end].rstrip("\\"))
            if backslashes % 2 == 0:
                break
            end += 1
        labels[name] = _unescape(rest[:end])
        text = rest[end + 1 :]
        if text.startswith(","):
            text = text[1:]
        elif text:
            raise ValueError("bad label separator")
    return labels


def parse_samples(text: str) -> list[tuple[str, dict[str, str], float]]:
    """The samples of a file :func:`render` wrote: ``(name, labels, value)`` in order;
    comment lines (``#``) and blank lines are skipped.

    Raises:
        ValueError: a line that :func:`render` would not have written (timestamps
            included).
    """
    samples: list[tuple[str, dict[str, str], float]] = []
    for line in text.split("\n"):
        if not line or line.startswith("#"):
            continue
        head, sep, value = line.rpartition(" ")
        if not sep:
            raise ValueError("a sample line without a value")
        name, brace, inner = head.partition("{")
        if brace:
            if not inner.endswith("}"):
                raise ValueError("a sample line with unbalanced braces")
            labels = _labels(inner[:-1])
        else:
            labels = {}
        if not name.replace(":", "_").isidentifier():
            raise ValueError("a bad metric name")
        samples.append((name, labels, float(value)))
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
