"""The pull manager's metrics: names, labels, help text, values, isolation."""

from __future__ import annotations

import pytest

from credprov.pullmanager.metrics import CHECK_RESULTS, PullManagerMetrics


def lines(m: PullManagerMetrics) -> list[str]:
    return m.exposition().decode().splitlines()


def test_help_and_types_match_the_kubelet() -> None:
    text = lines(PullManagerMetrics())
    for expected in [
        "# HELP kubelet_image_manager_ensure_image_requests_total [ALPHA] Number of "
        "ensure-image requests processed by the kubelet.",
        "# TYPE kubelet_image_manager_ensure_image_requests_total counter",
        "# HELP kubelet_imagemanager_image_mustpull_checks_total [ALPHA] Counter for how many "
        "times kubelet checked whether credentials need to be re-verified to access an image",
        "# TYPE kubelet_imagemanager_image_mustpull_checks_total counter",
        "# HELP kubelet_imagemanager_ondisk_pullintents [ALPHA] Number of ImagePullIntents "
        "stored on disk.",
        "# TYPE kubelet_imagemanager_ondisk_pullintents gauge",
        "# HELP kubelet_imagemanager_ondisk_pulledrecords [ALPHA] Number of ImagePulledRecords "
        "stored on disk.",
        "# TYPE kubelet_imagemanager_ondisk_pulledrecords gauge",
        "# HELP kubelet_imagemanager_inmemory_pullintents_usage_percent [ALPHA] The "
        "ImagePullIntents in-memory cache usage in percent.",
        "# TYPE kubelet_imagemanager_inmemory_pullintents_usage_percent gauge",
        "# HELP kubelet_imagemanager_inmemory_pulledrecords_usage_percent [ALPHA] The "
        "ImagePulledRecords in-memory cache usage in percent.",
        "# TYPE kubelet_imagemanager_inmemory_pulledrecords_usage_percent gauge",
    ]:
        assert expected in text


@pytest.mark.parametrize(
    ("policy", "present", "required", "series"),
    [
        ("Always", None, True, 'present_locally="unknown",pull_policy="always",pull_required="true"'),
        ("IfNotPresent", False, True, 'present_locally="false",pull_policy="ifnotpresent",pull_required="true"'),
        ("Never", False, None, 'present_locally="false",pull_policy="never",pull_required="unknown"'),
        ("IfNotPresent", True, False, 'present_locally="true",pull_policy="ifnotpresent",pull_required="false"'),
        ("Never", None, None, 'present_locally="unknown",pull_policy="never",pull_required="unknown"'),
    ],
)  # fmt: skip
def test_ensure_image_request_labels(
    policy: str, present: bool | None, required: bool | None, series: str
) -> None:
    m = PullManagerMetrics()
    m.ensure_image_request(policy, present, required)
    m.ensure_image_request(policy, present, required)
    # prometheus_client sorts label names in the exposition.
    assert f"kubelet_image_manager_ensure_image_requests_total{{{series}}} 2.0" in lines(m)


@pytest.mark.parametrize("result", CHECK_RESULTS)
def test_must_pull_check_results(result: str) -> None:
    m = PullManagerMetrics()
    m.must_pull_check(result)
    assert f'kubelet_imagemanager_image_mustpull_checks_total{{result="{result}"}} 1.0' in lines(m)


def test_empty_result_counts_as_error_and_unknown_is_rejected() -> None:
    m = PullManagerMetrics()
    m.must_pull_check("")
    assert 'kubelet_imagemanager_image_mustpull_checks_total{result="error"} 1.0' in lines(m)
    with pytest.raises(ValueError):
        m.must_pull_check("credentialsFound")


def test_gauges() -> None:
    m = PullManagerMetrics()
    m.set_ondisk(7, 12)
    m.set_inmemory(14, 100)
    text = lines(m)
    assert "kubelet_imagemanager_ondisk_pullintents 7.0" in text
    assert "kubelet_imagemanager_ondisk_pulledrecords 12.0" in text
    assert "kubelet_imagemanager_inmemory_pullintents_usage_percent 14.0" in text
    assert "kubelet_imagemanager_inmemory_pulledrecords_usage_percent 100.0" in text
    m.set_ondisk(0, 1)
    assert "kubelet_imagemanager_ondisk_pullintents 0.0" in lines(m)


def test_no_created_series_and_registries_are_separate() -> None:
    a, b = PullManagerMetrics(), PullManagerMetrics()
    a.must_pull_check("mustAuthenticate")
    a.ensure_image_request("Always", None, True)
    assert not any("_created" in line for line in lines(a))
    assert not any(
        line.startswith("kubelet_imagemanager_image_mustpull_checks_total{") for line in lines(b)
    )


def test_set_inmemory_fits_the_cache_callback() -> None:
    from credprov.pullmanager.memstore import CachedPullRecordsAccessor
    from tests.unit.pullmanager.test_memstore import FakeStore

    m = PullManagerMetrics()
    CachedPullRecordsAccessor(FakeStore(intents=5, records=1), 10, 10, on_change=m.set_inmemory)
    text = lines(m)
    assert "kubelet_imagemanager_inmemory_pullintents_usage_percent 50.0" in text
    assert "kubelet_imagemanager_inmemory_pulledrecords_usage_percent 10.0" in text


def test_must_pull_counts_are_exact_across_threads_and_folds() -> None:
    # Results are queued and folded into the totals on collection or every 1,024 checks:
    # whatever the interleaving, no check is lost or counted twice.
    import threading

    m = PullManagerMetrics()
    per_thread = 3000  # several folds per thread

    def worker(results: tuple[str, ...]) -> None:
        for i in range(per_thread):
            m.must_pull_check(results[i % len(results)])
            if i % 700 == 0:
                m.exposition()  # collections racing the checks

    threads = [threading.Thread(target=worker, args=(CHECK_RESULTS[n % 2 :],)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    text = lines(m)
    total = 0.0
    for line in text:
        if line.startswith("kubelet_imagemanager_image_mustpull_checks_total{"):
            total += float(line.rsplit(" ", 1)[1])
    assert total == 4 * per_thread
    series = [line.split('"')[1] for line in text if "mustpull_checks_total{" in line]
    assert sorted(series) == sorted(CHECK_RESULTS)
