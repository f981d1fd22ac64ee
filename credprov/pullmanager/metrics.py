"""The kubelet's image pull manager metrics, with its names, labels and help text.

Mirrors ``pkg/kubelet/images/metrics.go`` (``kubelet_image_manager_ensure_image_requests_total``,
recorded once per ``EnsureImageExists``) and ``pkg/kubelet/images/pullmanager/metrics.go``
(``kubelet_imagemanager_image_mustpull_checks_total`` and the on-disk / in-memory size
gauges). All are ALPHA upstream, hence the ``[ALPHA] `` help prefix component-base adds.
Like :class:`credprov.credentialprovider.plugin.metrics.Metrics`, each :class:`PullManagerMetrics` has its own
registry, so several managers in one process (or in tests) do not share counts.

The must-pull counter is counted once per pull check, the pull manager's hottest path, so
it is not a ``prometheus_client.Counter``: a labelled child's ``inc()`` takes a lock and
costs about 300 ns, a fifth of a check answered from memory. :class:`_MustPullChecks`
appends the result to a ``deque`` (thread-safe without a lock, about 30 ns) and folds what
accumulated into its totals when the registry collects, or every 1,024 checks so the queue
stays short; the exposition is the same series, help text and type.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge
from prometheus_client.core import CounterMetricFamily, Metric

from credprov.credentialprovider.plugin.metrics import exposition

__all__ = [
    "CHECK_RESULTS",
    "CHECK_RESULT_CREDENTIAL_POLICY_ALLOWED",
    "CHECK_RESULT_CREDENTIAL_RECORD_FOUND",
    "CHECK_RESULT_ERROR",
    "CHECK_RESULT_MUST_AUTHENTICATE",
    "PullManagerMetrics",
]

_STABILITY = "[ALPHA] "

#: ``mustAttemptImagePullResult`` values, the ``result`` label of the must-pull counter.
CHECK_RESULT_CREDENTIAL_POLICY_ALLOWED = "credentialPolicyAllowed"
CHECK_RESULT_CREDENTIAL_RECORD_FOUND = "credentialRecordFound"
CHECK_RESULT_MUST_AUTHENTICATE = "mustAuthenticate"
CHECK_RESULT_ERROR = "error"
CHECK_RESULTS = (
    CHECK_RESULT_CREDENTIAL_POLICY_ALLOWED,
    CHECK_RESULT_CREDENTIAL_RECORD_FOUND,
    CHECK_RESULT_MUST_AUTHENTICATE,
    CHECK_RESULT_ERROR,
)


_CHECK_RESULT_SET = frozenset(CHECK_RESULTS)
# Checks queued before they are folded into the totals even when nobody collects.
_FOLD_AT = 1024


class _MustPullChecks:
    """``kubelet_imagemanager_image_mustpull_checks_total`` as a custom collector.

    Only results counted at least once are exposed, in the order first counted, as a
    labelled ``Counter`` shows its children.
    """

    def __init__(self, name: str, documentation: str) -> None:
        self._name = name
        self._documentation = documentation
        #: Results not yet folded into the totals; append to count one.
        self.pending: deque[str] = deque()
        self._totals: dict[str, int] = {}
        self._fold_lock = threading.Lock()

    def fold(self) -> None:
        """Move the pending results into the totals."""
        with self._fold_lock:
            pending, totals = self.pending, self._totals
            # Only folders pop, under this lock: the first len() items are there to take.
            for _ in range(len(pending)):
                result = pending.popleft()
                totals[result] = totals.get(result, 0) + 1

    def collect(self) -> Iterator[Metric]:
        self.fold()
        family = CounterMetricFamily(self._name, self._documentation, labels=["result"])
        for result, count in list(self._totals.items()):
            family.add_metric([result], count)
        yield family


def _tri_state(value: bool | None) -> str:
    # The kubelet passes *bool: nil is "unknown" (e.g. the image could not be inspected).
    if value is None:
        return "unknown"
    return "true" if value else "false"


class PullManagerMetrics:
    """The six pull manager metrics, on a registry of their own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        # Subsystem "kubelet" + "_" + "image_manager": the underscore is upstream's.
        self.ensure_image_requests = Counter(
            "kubelet_image_manager_ensure_image_requests",
            _STABILITY + "Number of ensure-image requests processed by the kubelet.",
            ["pull_policy", "present_locally", "pull_required"],
            registry=self.registry,
        )
        self.mustpull_checks = _MustPullChecks(
            "kubelet_imagemanager_image_mustpull_checks",
            _STABILITY + "Counter for how many times kubelet checked whether credentials need "
            "to be re-verified to access an image",
        )
        self.registry.register(self.mustpull_checks)
        self._mustpull_pending = self.mustpull_checks.pending
        self.ondisk_pullintents = Gauge(
            "kubelet_imagemanager_ondisk_pullintents",
            _STABILITY + "Number of ImagePullIntents stored on disk.",
            registry=self.registry,
        )
        self.ondisk_pulledrecords = Gauge(
            "kubelet_imagemanager_ondisk_pulledrecords",
            _STABILITY + "Number of ImagePulledRecords stored on disk.",
            registry=self.registry,
        )
        self.inmemory_pullintents_usage_percent = Gauge(
            "kubelet_imagemanager_inmemory_pullintents_usage_percent",
            _STABILITY + "The ImagePullIntents in-memory cache usage in percent.",
            registry=self.registry,
        )
        self.inmemory_pulledrecords_usage_percent = Gauge(
            "kubelet_imagemanager_inmemory_pulledrecords_usage_percent",
            _STABILITY + "The ImagePulledRecords in-memory cache usage in percent.",
            registry=self.registry,
        )

    def ensure_image_request(
        self, pull_policy: str, present_locally: bool | None, pull_required: bool | None
    ) -> None:
        """``recordEnsureImageRequest``: ``None`` is recorded as ``unknown``.

        ``pull_policy`` is the container's ``imagePullPolicy`` (``Always``, ``IfNotPresent``,
        ``Never``); the label is lowercased as upstream.
        """
        self.ensure_image_requests.labels(
            pull_policy=pull_policy.lower(),
            present_locally=_tri_state(present_locally),
            pull_required=_tri_state(pull_required),
        ).inc()

    def must_pull_check(self, result: str) -> None:
        """``recordMustAttemptImagePullResult``; an empty result counts as ``error``.

        Raises:
            ValueError: ``result`` is not one of :data:`CHECK_RESULTS` (a typo would
                otherwise create a series no dashboard looks at).
        """
        if result not in _CHECK_RESULT_SET:
            if result:
                raise ValueError(f"unknown must-pull check result {result!r}")
            result = CHECK_RESULT_ERROR
        pending = self._mustpull_pending
        pending.append(result)
        if len(pending) >= _FOLD_AT:
            self.mustpull_checks.fold()

    def set_ondisk(self, intents: int, records: int) -> None:
        """The number of intent and record files on disk."""
        self.ondisk_pullintents.set(intents)
        self.ondisk_pulledrecords.set(records)

    def set_inmemory(self, intents_pct: int, records_pct: int) -> None:
        """How full the in-memory caches are, in percent (0-100).

        Its signature fits ``CachedPullRecordsAccessor(on_change=...)``.
        """
        self.inmemory_pullintents_usage_percent.set(intents_pct)
        self.inmemory_pulledrecords_usage_percent.set(records_pct)

    def exposition(self) -> bytes:
        """The Prometheus text exposition (no ``_created`` series: the kubelet has none)."""
        return exposition(self.registry)
