"""Plugin telemetry (opt-in): what every run of a credprov plugin did, for Prometheus.

A plugin is one short process per kubelet cache miss, so it cannot be scraped. When
telemetry is on, each run adds what it did to a file that node_exporter's textfile
collector exports (docs/plugin-telemetry.md):

* on: ``CREDPROV_METRICS_FILE=/var/lib/node_exporter/textfile_collector/credprov_plugin_<name>.prom``
  in the plugin's environment (the provider config's ``env:`` list), or the SDK's option
  ``--metrics-file PATH`` (the config's ``args:``), which wins; an empty value is off. Off
  by default, and then this module is not even imported (``credprov.sdk._runtime`` reads
  the switch: ``METRICS_FILE_ENV``, ``METRICS_FILE``).
* per plugin and registry host (``registry``: the image's host as Docker and containerd
  read it, ``docker.io`` for ``nginx``; never the repository, tag or digest; ``invalid``
  for a host that is not a host name; empty when the request could not be read):
  ``credprov_plugin_calls_total{result="ok"|"error"}``,
  ``credprov_plugin_errors_total{reason}`` (:data:`REASONS`),
  ``credprov_plugin_duration_seconds`` (a histogram, :data:`BUCKETS`: the time inside
  ``run()``, not the interpreter's start-up), ``credprov_plugin_cache_hits_total``,
  ``credprov_plugin_credentials_expiry_timestamp_seconds`` (when the last answer's
  credentials expire: their own expiry if the handler said (``Response(expires_at=)``),
  else now + the cacheDuration; absent when the answer left the duration to the kubelet)
  and ``credprov_plugin_last_call_timestamp_seconds``;
* the file accumulates across runs: each run takes an exclusive ``flock`` on
  ``<file>.lock`` (the kubelet runs plugins concurrently; waiting at most
  :data:`LOCK_TIMEOUT_SECONDS`), reads the file (at most :data:`MAX_FILE_BYTES`, in linear
  time; a file this module did not write, or cannot read back, or holding a value that is
  not a finite number, is started over), adds its observation and the pending ones, and
  replaces the file atomically, mode 0644 (:func:`credprov.base.textfile.write_textfile`);
* no count lost: a run that cannot take the lock in time leaves its observation in a
  pending file, which the next run holding the lock adds (:func:`record`); temp files a
  killed run left are removed by the next run holding the lock;
* bounded: at most :data:`MAX_SERIES` (plugin, registry) pairs; the one called longest ago
  is dropped first. Labels never hold a secret, an image name or a message.

Telemetry never changes the plugin's answer or exit code: a failure is at most one line on
stderr at ``-v 1``. Standard library only.
"""

from __future__ import annotations

import os

from credprov.base.hostname import is_domain_and_port
from credprov.base.textfile import MAX_SCAN, MetricFamily, go_float, parse_samples, render
from credprov.errors import PluginSDKError

TYPE_CHECKING = False  # typing costs start-up time; mypy reads this name as typing's
if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = [
    "BUCKETS",
    "LOCK_TIMEOUT_SECONDS",
    "MAX_FILE_BYTES",
    "MAX_PENDING",
    "MAX_SERIES",
    "REASONS",
    "Observation",
    "Telemetry",
    "TelemetryError",
    "failure_reason",
    "record",
    "registry_host",
]

#: The most (plugin, registry) pairs a file keeps; the one called longest ago goes first.
MAX_SERIES = 256
#: A larger file is not read back (it is started over).
MAX_FILE_BYTES = 4 * 1024 * 1024
#: How long a run waits for another plugin process holding the file's lock; then it leaves
#: its observation in a pending file (see :func:`record`).
LOCK_TIMEOUT_SECONDS = 1.0
#: Pending observations waiting for a run that holds the lock, at most (beyond, a run that
#: cannot take the lock is not counted, and says so at ``-v 1``).
MAX_PENDING = 1024
#: The name that ends a pending observation (not ``.prom``: the collector skips it).
PENDING_SUFFIX = ".pending"
_MAX_PENDING_BYTES = 4096
_STALE_PENDING_SECONDS = 60.0
#: The latency histogram's upper bounds, in seconds (``+Inf`` is implied).
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
#: Why a run failed: bad arguments (exit 2), a request it refused, the provider's refusal
#: (exit 1), a timeout (a ``TimeoutError`` in the failure's chain), an unexpected
#: exception (exit 3), an interrupt.
REASONS = ("usage", "request", "provider", "timeout", "internal", "interrupted")
RESULTS = ("ok", "error")

#: The first line of every file this module writes: a file without it is not read back.
HEADER = "# credprov plugin telemetry, format 1 (rewritten by each plugin run; do not edit)\n"

_P = "credprov_plugin_"
_MAX_HOST = 255
_LE = [go_float(b) for b in BUCKETS] + ["+Inf"]
_INF = float("inf")


class TelemetryError(PluginSDKError):
    """The metrics file could not be updated (one line; the plugin's answer stands)."""


def registry_host(image: str) -> str:
    """The registry host of ``image`` for the ``registry`` label, as Docker's reference
    parser splits it (``splitDockerDomain``): the first path component when it has a ``.``
    or ``:``, is ``localhost`` or has upper case, else ``docker.io``; never the repository,
    tag or digest. ``invalid`` when that component is not ``host[:port]`` by the reference
    grammar (:func:`credprov.base.hostname.is_domain_and_port`: ``:::``, ``a b``); empty
    for an empty image."""
    if not image:
        return ""
    first, slash, _ = image.partition("/")
    if not slash or (
        "." not in first and ":" not in first and first != "localhost" and first == first.lower()
    ):
        return "docker.io"
    if len(first) > _MAX_HOST or not is_domain_and_port(first):
        return "invalid"
    return first


def failure_reason(reason: str, error: BaseException | None) -> str:
    """``reason`` (how the run failed), or ``timeout`` when ``error``'s chain of causes
    holds a ``TimeoutError`` (a handler's HTTP call that timed out)."""
    seen = 0
    while error is not None and seen < 16:
        if isinstance(error, TimeoutError):
            return "timeout"
        error = error.__cause__ or error.__context__
        seen += 1
    return reason if reason in REASONS else "internal"


class Observation:
    """What one run did: its registry host, result, failure reason, latency (seconds),
    whether the plugin cache answered, its answer's expiry (Unix seconds) and when (now)."""

    __slots__ = ("cache_hit", "expiry", "now", "plugin", "reason", "registry", "seconds")

    def __init__(
        self,
        plugin: str,
        registry: str,
        *,
        reason: str | None = None,
        seconds: float = 0.0,
        cache_hit: bool = False,
        expiry: float | None = None,
        now: float = 0.0,
    ) -> None:
        if reason is not None and reason not in REASONS:
            raise ValueError(f"unknown failure reason {reason!r}")
        self.plugin = plugin
        self.registry = registry
        self.reason = reason
        self.seconds = seconds
        self.cache_hit = cache_hit
        self.expiry = expiry
        self.now = now


class _Series:
    """The counters of one (plugin, registry) pair."""

    __slots__ = ("buckets", "cache_hits", "calls", "count", "errors", "expiry", "last", "sum")

    def __init__(self) -> None:
        self.calls = dict.fromkeys(RESULTS, 0)
        self.errors: dict[str, int] = {}
        self.buckets = [0] * len(_LE)  # cumulative, as exposed; the last is +Inf
        self.sum = 0.0
        self.count = 0
        self.cache_hits = 0
        self.expiry: float | None = None
        self.last = 0.0


def _finite(value: float) -> float:
    if value != value or value in (_INF, -_INF):
        raise ValueError("a value that is not finite")
    return value


def _count(value: float) -> int:
    if _finite(value) < 0 or value != int(value):
        raise ValueError("a counter that is not a whole number")
    return int(value)


class Telemetry:
    """The contents of one metrics file: every (plugin, registry) pair's counters."""

    def __init__(self) -> None:
        self.series: dict[tuple[str, str], _Series] = {}

    @classmethod
    def loads(cls, text: str) -> Telemetry:
        """Read back a file :meth:`dumps` wrote.

        Raises:
            ValueError: not such a file (no :data:`HEADER`, a foreign metric or label, a
                value that cannot be).
        """
        if not text.startswith(HEADER):
            raise ValueError("not a credprov plugin telemetry file")
        self = cls()
        for name, labels, value in parse_samples(text):
            if not name.startswith(_P):
                raise ValueError("a foreign metric")
            self._load_sample(name[len(_P) :], labels, value)
        if len(self.series) > MAX_SERIES:
            raise ValueError("too many series")
        return self

    def _load_sample(self, name: str, labels: dict[str, str], value: float) -> None:
        extra = {k: v for k, v in labels.items() if k not in ("plugin", "registry")}
        s = self.series.setdefault((labels["plugin"], labels["registry"]), _Series())
        if name == "calls_total" and extra.get("result") in RESULTS and len(extra) == 1:
            s.calls[extra["result"]] = _count(value)
        elif name == "errors_total" and extra.get("reason") in REASONS and len(extra) == 1:
            s.errors[extra["reason"]] = _count(value)
        elif name == "duration_seconds_bucket" and extra.get("le") in _LE and len(extra) == 1:
            s.buckets[_LE.index(extra["le"])] = _count(value)
        elif extra:
            raise ValueError("a foreign label")
        elif name == "duration_seconds_sum":
            s.sum = _finite(value)
        elif name == "duration_seconds_count":
            s.count = _count(value)
        elif name == "cache_hits_total":
            s.cache_hits = _count(value)
        elif name == "credentials_expiry_timestamp_seconds":
            s.expiry = _finite(value)
        elif name == "last_call_timestamp_seconds":
            s.last = _finite(value)
        else:
            raise ValueError("a foreign metric")

    def observe(self, obs: Observation) -> None:
        """Add one run; drop the pair called longest ago beyond :data:`MAX_SERIES`."""
        key = (obs.plugin, obs.registry)
        s = self.series.get(key)
        if s is None:
            s = self.series[key] = _Series()
            while len(self.series) > MAX_SERIES:
                others = (k for k in self.series if k != key)
                del self.series[min(others, key=lambda k: self.series[k].last)]
        if obs.reason is None:
            s.calls["ok"] += 1
            s.expiry = obs.expiry
        else:
            s.calls["error"] += 1
            s.errors[obs.reason] = s.errors.get(obs.reason, 0) + 1
        for i, bound in enumerate(BUCKETS):
            if obs.seconds <= bound:
                s.buckets[i] += 1
        s.buckets[-1] += 1
        s.sum += obs.seconds
        s.count += 1
        s.cache_hits += obs.cache_hit
        s.last = obs.now

    def dumps(self) -> bytes:
        """The file: :data:`HEADER`, then the metric families (series sorted)."""
        return HEADER.encode() + render(self._families())

    def _families(self) -> Iterator[MetricFamily]:
        items = sorted(self.series.items())
        calls = MetricFamily(f"{_P}calls_total", "counter", "Plugin runs, by result.")
        errors = MetricFamily(f"{_P}errors_total", "counter", "Failed plugin runs, by reason.")
        latency = MetricFamily(
            f"{_P}duration_seconds", "histogram", "Time a plugin run took, in seconds."
        )
        hits = MetricFamily(
            f"{_P}cache_hits_total", "counter", "Runs answered from the plugin's answer cache."
        )
        expiry = MetricFamily(
            f"{_P}credentials_expiry_timestamp_seconds",
            "gauge",
            "When the credentials of the last answer expire, in Unix seconds.",
        )
        last = MetricFamily(
            f"{_P}last_call_timestamp_seconds",
            "gauge",
            "When the plugin last ran, in Unix seconds.",
        )
        for (plugin, registry), s in items:
            labels = {"plugin": plugin, "registry": registry}
            for result in RESULTS:
                calls.add({**labels, "result": result}, s.calls[result])
            for reason in REASONS:
                if reason in s.errors:
                    errors.add({**labels, "reason": reason}, s.errors[reason])
            for le, n in zip(_LE, s.buckets, strict=True):
                latency.add({**labels, "le": le}, n, "_bucket")
            latency.add(labels, s.count, "_count")
            latency.add(labels, s.sum, "_sum")
            hits.add(labels, s.cache_hits)
            if s.expiry is not None:
                expiry.add(labels, s.expiry)
            last.add(labels, s.last)
        yield from (calls, errors, latency, hits, expiry, last)


class _Busy(TelemetryError):
    """The lock stayed held for :data:`LOCK_TIMEOUT_SECONDS`."""


def _lock(path: str) -> int:
    """An fd holding an exclusive ``flock`` on ``<path>.lock``.

    Raises:
        _Busy: another process held the lock for :data:`LOCK_TIMEOUT_SECONDS`.
        TelemetryError: the lock file cannot be opened or locked.
    """
    import fcntl
    import time

    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    try:
        fd = os.open(path + ".lock", flags, 0o644)
    except OSError as exc:
        raise TelemetryError(f"cannot open {path}.lock: {exc.strerror}") from None
    deadline = time.monotonic() + LOCK_TIMEOUT_SECONDS
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() > deadline:
                os.close(fd)
                raise _Busy(f"{path}.lock is held by another process") from None
            time.sleep(0.002)
        except OSError as exc:
            os.close(fd)
            raise TelemetryError(f"cannot lock {path}.lock: {exc.strerror}") from None


def _load(path: str) -> tuple[Telemetry, str]:
    """The file's contents, and a note when it was started over (else empty)."""
    from credprov.base.fileio import read_bounded

    try:
        data = read_bounded(path, MAX_FILE_BYTES, follow_symlinks=False)
    except FileNotFoundError:
        return Telemetry(), ""
    except OSError as exc:  # too large, not a regular file, unreadable
        return Telemetry(), f"started {path} over ({exc.strerror or exc})"
    try:
        return Telemetry.loads(data.decode("utf-8")), ""
    except (ValueError, KeyError, OverflowError) as exc:  # UnicodeDecodeError too
        return Telemetry(), f"started {path} over ({exc})"


# -- pending observations: a run that could not take the lock in time ---------------------------


def _pending_name(target: str, name: str) -> bool:
    """Whether ``name`` is a pending observation of ``target`` (a base name):
    ``<target>.<pid>.<16 hex digits>.pending``."""
    from credprov.base.textfile import is_temp_of

    stem = name[: -len(PENDING_SUFFIX)]
    return name.endswith(PENDING_SUFFIX) and is_temp_of(stem + ".tmp", target)


def _scan(path: str) -> tuple[list[str], list[str]]:
    """The pending observations of ``path`` (at most :data:`MAX_PENDING`), and the temp
    files a killed run left: ``path``'s own (only lock holders write it, and the caller
    holds the lock) and pending files' older than :data:`_STALE_PENDING_SECONDS`."""
    import time

    from credprov.base.textfile import is_temp_of

    directory, target = os.path.split(os.path.abspath(path))
    pending: list[str] = []
    stale: list[str] = []
    now = time.time()
    try:
        with os.scandir(directory) as entries:
            for i, entry in enumerate(entries):
                name = entry.name
                if i >= MAX_SCAN:
                    break
                if not name.startswith(target + "."):
                    continue
                if _pending_name(target, name):
                    if len(pending) < MAX_PENDING:
                        pending.append(entry.path)
                elif is_temp_of(name, target):
                    stale.append(entry.path)
                elif name.endswith(".tmp"):
                    owner = name[:-4].rsplit(".", 2)[0]
                    if _pending_name(target, owner) and is_temp_of(name, owner):
                        try:
                            age = now - entry.stat(follow_symlinks=False).st_mtime
                        except OSError:
                            continue
                        if age >= _STALE_PENDING_SECONDS:
                            stale.append(entry.path)
    except OSError:
        pass
    return pending, stale


def _unlink(files: list[str]) -> None:
    for file in files:
        try:  # noqa: SIM105 (contextlib costs start-up)
            os.unlink(file)
        except OSError:
            pass


def _leave_pending(path: str, obs: Observation) -> None:
    """Write ``obs`` to its own pending file for the next run that takes the lock.

    Raises:
        TelemetryError: :data:`MAX_PENDING` are waiting already, or the write failed.
    """
    import json

    from credprov.base.fileio import write_atomic

    if len(_scan(path)[0]) >= MAX_PENDING:
        raise TelemetryError(
            f"{path}.lock is held by another process and {MAX_PENDING} runs are pending: "
            "this run is not counted"
        )
    fields = {name: getattr(obs, name) for name in Observation.__slots__}
    pending = f"{path}.{os.getpid()}.{os.urandom(8).hex()}{PENDING_SUFFIX}"
    try:
        write_atomic(pending, json.dumps(fields).encode(), mode=0o644, durable=False)
    except OSError as exc:
        raise TelemetryError(f"cannot write {pending}: {exc.strerror or exc}") from None


def _read_pending(file: str) -> Observation | None:
    """The observation a pending file holds; None for one that does not hold one."""
    import json

    from credprov.base.fileio import read_bounded

    try:
        fields = json.loads(read_bounded(file, _MAX_PENDING_BYTES, follow_symlinks=False))
        if not isinstance(fields, dict) or set(fields) != set(Observation.__slots__):
            return None
        plugin, registry = fields["plugin"], fields["registry"]
        expiry = fields["expiry"]
        if not (isinstance(plugin, str) and isinstance(registry, str)):
            return None
        if not isinstance(fields["cache_hit"], bool):
            return None
        numbers = [fields["seconds"], fields["now"]] + ([] if expiry is None else [expiry])
        if not all(isinstance(n, (int, float)) and not isinstance(n, bool) for n in numbers):
            return None
        for n in numbers:
            _finite(float(n))
        return Observation(
            plugin,
            registry,
            reason=fields["reason"],
            seconds=float(fields["seconds"]),
            cache_hit=fields["cache_hit"],
            expiry=None if expiry is None else float(expiry),
            now=float(fields["now"]),
        )
    except (OSError, ValueError, TypeError, OverflowError):
        return None


def record(path: str, obs: Observation) -> str:
    """Add ``obs`` to the metrics file ``path`` (locked, read back, replaced atomically),
    with the observations of the runs that could not take the lock in time.

    A run that waits :data:`LOCK_TIMEOUT_SECONDS` for the lock in vain leaves its
    observation in a pending file next to ``path`` (``<file>.<pid>.<random>.pending``,
    written atomically) and returns: the next run that holds the lock adds it and removes
    the file, so no count is lost (it shows in ``path`` one run later). While holding the
    lock, a run also removes the temp files of ``path`` that a killed run left.

    Returns:
        A note when the previous file could not be read back and was started over, or
        the run is pending, else an empty string.

    Raises:
        TelemetryError: the path is not a ``.prom`` file in an existing directory, or the
            file could not be locked or written.
    """
    from credprov.base.textfile import SUFFIX, write_textfile

    name = os.path.basename(path)
    if not name.endswith(SUFFIX) or name == SUFFIX:
        raise TelemetryError(f"{path}: the name must end in {SUFFIX}")
    try:
        fd = _lock(path)
    except _Busy:
        _leave_pending(path, obs)
        return f"{path}.lock is held by another process: counted by the next run"
    try:
        telemetry, note = _load(path)
        pending, stale = _scan(path)
        for file in pending:
            observed = _read_pending(file)
            if observed is not None:
                telemetry.observe(observed)
        telemetry.observe(obs)
        _unlink(stale)
        try:
            write_textfile(path, telemetry.dumps(), durable=False)
        except OSError as exc:
            raise TelemetryError(f"cannot write {path}: {exc.strerror or exc}") from None
        _unlink(pending)  # after the write: a crash before it loses no count
    finally:
        os.close(fd)  # releases the lock
    return note
