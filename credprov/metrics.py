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

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

#: ``k8s.io/component-base/metrics.DefBuckets`` (Prometheus' defaults).
DEF_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

_STABILITY = "[ALPHA] "

# component-base exposes no _created series; client_python does unless told not to.
disable_created_metrics()


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


class Metrics:
    """The three credential provider metrics, on a registry of their own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.plugin_errors = Counter(
            "kubelet_credential_provider_plugin_errors",
            _STABILITY + "Number of errors from credential provider plugin",
            ["plugin_name"],
            registry=self.registry,
        )
        self.plugin_duration = Histogram(
            "kubelet_credential_provider_plugin_duration",
            _STABILITY + "Duration of execution in seconds for credential provider plugin",
            ["plugin_name"],
            buckets=DEF_BUCKETS,
            registry=self.registry,
        )
        self._config_info = _ConfigInfo()
        self.registry.register(self._config_info)

    def record_config_hash(self, config_hash: str) -> None:
        self._config_info.set(config_hash)

    def observe_duration(self, plugin_name: str, seconds: float) -> None:
        self.plugin_duration.labels(plugin_name=plugin_name).observe(seconds)

    def count_error(self, plugin_name: str) -> None:
        self.plugin_errors.labels(plugin_name=plugin_name).inc()

    def exposition(self) -> bytes:
        """The Prometheus text exposition (no ``_created`` series: the kubelet has none)."""
        return generate_latest(self.registry)
