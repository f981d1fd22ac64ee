"""Plugin telemetry as a fleet reads it: an installed plugin, node_exporter, Prometheus.

``static-credential-provider`` is installed with ``credprov install`` and run as the kubelet
runs it, with ``CREDPROV_METRICS_FILE`` set as a provider config's ``env:`` list sets it, in
the directory Debian's node_exporter exports with its textfile collector. Debian's Prometheus
scrapes the exporter and answers the queries ``docs/plugin-telemetry.md`` suggests. With
``CREDPROV_METRICS_SAMPLE=FILE`` the scrape is also written there (the sample in the docs).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from credprov.install import install
from tests.conftest import CANARY
from tests.e2e.prometheus import start_node_exporter, start_prometheus, wait_for
from tests.unit.plugins.test_telemetry import NAME, request

pytestmark = pytest.mark.e2e


def test_prometheus_scrapes_an_installed_plugins_metrics(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (launcher,) = install(str(bin_dir), [NAME])
    creds = tmp_path / "config.json"
    creds.write_text(
        json.dumps({"auths": {"registry.example.com": {"username": "u", "password": CANARY}}})
    )
    textfile_dir = tmp_path / "textfile_collector"
    textfile_dir.mkdir()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "CREDPROV_PLUGIN_CACHE_DIR": str(tmp_path / "cache"),
        "CREDPROV_METRICS_FILE": str(textfile_dir / "credprov_plugin_static.prom"),
    }
    # Four runs for one registry (three answered from the plugin's cache) and a bad request.
    for body, want in [(request("registry.example.com/team/app:v1"), 0)] * 4 + [(b"{", 1)]:
        proc = subprocess.run([launcher.path, "--config", str(creds)], input=body, env=env,
                              capture_output=True, timeout=60, check=False)  # fmt: skip
        assert proc.returncode == want, proc.stderr
    exporter = start_node_exporter(textfile_dir)
    try:
        scrape = exporter.get()
        assert "node_textfile_scrape_error 0" in scrape  # node_exporter parsed the file
        assert CANARY not in scrape and "team/app" not in scrape
        if sample := os.environ.get("CREDPROV_METRICS_SAMPLE"):
            Path(sample).write_text(scrape)
        prometheus = start_prometheus([exporter.url.removeprefix("http://")])
        try:
            calls = wait_for(prometheus, 'credprov_plugin_calls_total{result="ok"} > 0')
            assert [(s["metric"]["registry"], s["value"][1]) for s in calls] == [
                ("registry.example.com", "4")
            ]
            hits = prometheus.query("credprov_plugin_cache_hits_total > 0")
            assert [s["value"][1] for s in hits] == ["3"]
            errors = prometheus.query("credprov_plugin_errors_total")
            assert [(s["metric"]["reason"], s["value"][1]) for s in errors] == [("request", "1")]
            expiring = prometheus.query(
                "credprov_plugin_credentials_expiry_timestamp_seconds - time() > 0"
            )
            assert [s["metric"]["registry"] for s in expiring] == ["registry.example.com"]
            p99 = prometheus.query(
                "histogram_quantile(0.99, sum by (le, plugin) (credprov_plugin_duration_seconds_bucket))"
            )
            assert p99 and float(p99[0]["value"][1]) < 30
        finally:
            prometheus.stop()
    finally:
        exporter.stop()
