"""The kubelet's credential provider metrics, with its names, labels and help text.

Mirrors ``pkg/credentialprovider/plugin/metrics.go``:
``kubelet_credential_provider_plugin_errors_total`` (counter), ``..._plugin_duration``
(histogram, ``metrics.DefBuckets``) and ``kubelet_credential_provider_config_info{hash}``
(a gauge of 1 for the last recorded config hash). Each :class:`Metrics` has its own
registry, so several engines in one process do not share counts.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry, Counter, Histogram
    from prometheus_client.core import Metric

#: ``k8s.io/component-base/metrics.DefBuckets`` (Prometheus' defaults).
DEF_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

_STABILITY = "[ALPHA] "
_MAX_PENDING = 1024  # observations kept before the registry is built anyway


def _config_info_collector() -> Any:
    # Built on first use: importing prometheus_client costs start-up time that a CLI run
    # which never exposes metrics should not pay.
    from prometheus_client.core import GaugeMetricFamily
    from prometheus_client.registry import Collector

    class _ConfigInfo(Collector):
        def __init__(self) -> None:
            self._hash: str | None = None
            self._lock = threading.Lock()

        def set(self, config_hash: str) -> None:
            with self._lock:
                self._hash = config_hash

        def collect(self) -> Iterator[Metric]:
            with self._lock:
                config_hash = self._hash
            if config_hash is None:
                return
            family = GaugeMetricFamily(
                "kubelet_credential_provider_config_info",
                _STABILITY
                + "Information about the last applied credential provider configuration with "
                "hash as label",
                labels=["hash"],
            )
            family.add_metric([config_hash], 1.0)
            yield family

    return _ConfigInfo()


class _WithoutCreated:
    """A registry's metrics without client_python's ``_created`` samples.

    component-base exposes none; client_python adds them unless
    ``disable_created_metrics()`` is called, which would change every registry of the
    process (a host application's too). Filtering at exposition changes nothing else.
    """

    def __init__(self, registry: Any) -> None:
        self.registry = registry

    def collect(self) -> Any:
        for metric in self.registry.collect():
            metric.samples = [s for s in metric.samples if not s.name.endswith("_created")]
            yield metric


def exposition(registry: Any) -> bytes:
    """``generate_latest(registry)`` as the kubelet exposes it (no ``_created`` series)."""
    from prometheus_client import generate_latest

    return bytes(generate_latest(_WithoutCreated(registry)))


class Metrics:
    """The three credential provider metrics, on a registry of their own.

    ``prometheus_client`` is imported when the registry is first needed (``registry``,
    ``exposition``, ``plugin_errors``, ``plugin_duration``); until then observations are
    kept in a list and replayed into it, so the figures are the same.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._built: tuple[CollectorRegistry, Counter, Histogram, Any] | None = None
        self._pending: list[tuple[str, str, float]] = []
        self._config_hash: str | None = None

    def _build(self) -> tuple[CollectorRegistry, Counter, Histogram, Any]:
        built = self._built
        if built is not None:
            return built
        from prometheus_client import CollectorRegistry, Counter, Histogram

        with self._lock:
            if self._built is not None:
                return self._built
            registry = CollectorRegistry(auto_describe=True)
            errors = Counter(
                "kubelet_credential_provider_plugin_errors",
                _STABILITY + "Number of errors from credential provider plugin",
                ["plugin_name"],
                registry=registry,
            )
            duration = Histogram(
                "kubelet_credential_provider_plugin_duration",
                _STABILITY + "Duration of execution in seconds for credential provider plugin",
                ["plugin_name"],
                buckets=DEF_BUCKETS,
                registry=registry,
            )
            config_info = _config_info_collector()
            registry.register(config_info)
            if self._config_hash is not None:
                config_info.set(self._config_hash)
            for what, plugin_name, seconds in self._pending:
                if what == "duration":
                    duration.labels(plugin_name=plugin_name).observe(seconds)
                else:
                    errors.labels(plugin_name=plugin_name).inc()
            self._pending = []
            self._built = (registry, errors, duration, config_info)
            return self._built

    @property
    def registry(self) -> CollectorRegistry:
        """The Prometheus registry holding the kubelet's plugin metrics."""
        return self._build()[0]

    @property
    def plugin_errors(self) -> Counter:
        """``kubelet_credential_provider_plugin_errors`` by plugin name."""
        return self._build()[1]

    @property
    def plugin_duration(self) -> Histogram:
        """``kubelet_credential_provider_plugin_duration`` by plugin name."""
        return self._build()[2]

    def record_config_hash(self, config_hash: str) -> None:
        """Set the config-hash info metric (kept until the metrics are built)."""
        with self._lock:
            if self._built is None:
                self._config_hash = config_hash
                return
        self._built[3].set(config_hash)

    def observe_duration(self, plugin_name: str, seconds: float) -> None:
        """Record one plugin run of ``seconds``."""
        with self._lock:
            if self._built is None:
                self._pending.append(("duration", plugin_name, seconds))
                if len(self._pending) < _MAX_PENDING:
                    return
        if self._built is None:
            self._build()  # too many kept: replay them into the registry
            return
        self._built[2].labels(plugin_name=plugin_name).observe(seconds)

    def count_error(self, plugin_name: str) -> None:
        """Count one failed plugin run."""
        with self._lock:
            if self._built is None:
                self._pending.append(("error", plugin_name, 0.0))
                if len(self._pending) < _MAX_PENDING:
                    return
        if self._built is None:
            self._build()  # too many kept: replay them into the registry
            return
        self._built[1].labels(plugin_name=plugin_name).inc()

    def exposition(self) -> bytes:
        """The Prometheus text exposition (no ``_created`` series: the kubelet has none)."""
        return exposition(self.registry)
