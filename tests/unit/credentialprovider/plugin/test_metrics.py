"""The kubelet's credential provider metrics: names, labels, help text, buckets."""

from __future__ import annotations

from credprov.credentialprovider.plugin.metrics import DEF_BUCKETS, Metrics


def test_exposition_matches_kubelet_names_and_help() -> None:
    m = Metrics()
    m.record_config_hash("sha256:abc")
    m.record_config_hash("sha256:def")  # only the last hash is exposed
    m.count_error("ecr")
    m.count_error("ecr")
    m.observe_duration("ecr", 0.3)
    text = m.exposition().decode()
    expected = [
        "# HELP kubelet_credential_provider_plugin_errors_total [ALPHA] Number of errors from "
        "credential provider plugin",
        "# TYPE kubelet_credential_provider_plugin_errors_total counter",
        'kubelet_credential_provider_plugin_errors_total{plugin_name="ecr"} 2.0',
        "# HELP kubelet_credential_provider_plugin_duration [ALPHA] Duration of execution in "
        "seconds for credential provider plugin",
        "# TYPE kubelet_credential_provider_plugin_duration histogram",
        'kubelet_credential_provider_plugin_duration_bucket{le="0.25",plugin_name="ecr"} 0.0',
        'kubelet_credential_provider_plugin_duration_bucket{le="0.5",plugin_name="ecr"} 1.0',
        'kubelet_credential_provider_plugin_duration_count{plugin_name="ecr"} 1.0',
        "# HELP kubelet_credential_provider_config_info [ALPHA] Information about the last "
        "applied credential provider configuration with hash as label",
        "# TYPE kubelet_credential_provider_config_info gauge",
        'kubelet_credential_provider_config_info{hash="sha256:def"} 1.0',
    ]
    for line in expected:
        assert line in text.splitlines(), line
    assert "sha256:abc" not in text
    assert "_created" not in text


def test_def_buckets() -> None:
    assert DEF_BUCKETS == (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)


def test_registries_are_independent() -> None:
    a, b = Metrics(), Metrics()
    a.count_error("p")
    assert "plugin_errors_total{" not in b.exposition().decode()


def test_no_config_info_before_a_hash() -> None:
    assert "config_info{" not in Metrics().exposition().decode()


def test_credprov_never_changes_prometheus_client_for_the_host() -> None:
    """No process-wide ``disable_created_metrics()``: a host application's own registry
    still gets its ``_created`` series, while credprov's expositions have none."""
    import subprocess
    import sys

    code = (
        "import prometheus_client as p\n"
        "import credprov.pullmanager.metrics as pm\n"
        "from credprov.credentialprovider.plugin.metrics import Metrics\n"
        "m = Metrics(); m.count_error('x'); assert b'_created' not in m.exposition()\n"
        "mm = pm.PullManagerMetrics(); assert b'_created' not in mm.exposition()\n"
        "r = p.CollectorRegistry(); c = p.Counter('host_things', 'h', registry=r); c.inc()\n"
        "print(b'host_things_created' in p.generate_latest(r))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
