"""Plugin telemetry end to end: an installed plugin, run as the kubelet runs it, writes
its metrics file.

``static-credential-provider`` is installed with ``credprov install`` (the launcher the
kubelet executes), configured through the environment exactly as a provider config's
``env:`` list would, and run as many concurrent processes (the kubelet runs several at once):
every run is counted once (the file's lock), the file is 0644, no temp file is left for the
textfile collector, and Prometheus's parser reads it.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from credprov.install import install

G = "credentialprovider.kubelet.k8s.io"
NAME = "static-credential-provider"


def request(image: str) -> bytes:
    return json.dumps(
        {"kind": "CredentialProviderRequest", "apiVersion": f"{G}/v1", "image": image}
    ).encode()


def test_concurrent_runs_of_an_installed_plugin_are_all_counted(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (launcher,) = install(str(bin_dir), [NAME])
    creds = tmp_path / "config.json"
    creds.write_text(
        json.dumps({"auths": {"r.example.com": {"username": "u", "password": "hunter2"}}})
    )
    textfile_dir = tmp_path / "textfile_collector"
    textfile_dir.mkdir()
    prom = textfile_dir / "credprov_plugin_static.prom"
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "CREDPROV_PLUGIN_CACHE_DIR": str(tmp_path / "cache"),
        "CREDPROV_METRICS_FILE": str(prom),  # as a provider config's env: list sets it
    }
    jobs = [request("r.example.com/team/app:v1")] * 12 + [request("nginx")] * 4 + [b"{"] * 4
    procs = [
        subprocess.Popen(
            [launcher.path, "--config", str(creds)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        for _ in jobs
    ]
    codes = []
    for proc, body in zip(procs, jobs, strict=True):
        proc.communicate(body, timeout=60)
        codes.append(proc.returncode)
    # An image of docker.io matches no credentials: an empty answer is still an answer.
    assert codes == [0] * 16 + [1] * 4

    got: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    families = list(text_string_to_metric_families(prom.read_text()))
    for family in families:
        for s in family.samples:
            got[(s.name, tuple(sorted(s.labels.items())))] = s.value

    def v(name: str, registry: str, **labels: str) -> float:
        key = tuple(sorted({"plugin": NAME, "registry": registry, **labels}.items()))
        return got[(name, key)]

    assert v("credprov_plugin_calls_total", "r.example.com", result="ok") == 12
    assert v("credprov_plugin_calls_total", "docker.io", result="ok") == 4
    assert v("credprov_plugin_calls_total", "", result="error") == 4
    assert v("credprov_plugin_errors_total", "", reason="request") == 4
    assert v("credprov_plugin_duration_seconds_count", "r.example.com") == 12
    hits = v("credprov_plugin_cache_hits_total", "r.example.com")
    assert 0 <= hits <= 11
    assert v("credprov_plugin_credentials_expiry_timestamp_seconds", "r.example.com") > 0
    assert stat.S_IMODE(prom.stat().st_mode) == 0o644
    assert sorted(p.name for p in textfile_dir.iterdir()) == [prom.name, prom.name + ".lock"]
    assert "hunter2" not in prom.read_text() and "team/app" not in prom.read_text()

    # A later (warm) run adds to the same file.
    warm = subprocess.run(
        [launcher.path, "--config", str(creds)],
        input=request("r.example.com/team/app:v1"),
        capture_output=True,
        env=env,
        check=True,
    )
    assert json.loads(warm.stdout)["auth"]
    text = prom.read_text()
    assert (
        f'credprov_plugin_cache_hits_total{{plugin="{NAME}",registry="r.example.com"}} '
        f"{float(hits + 1)}\n" in text
    )


def test_readme_provider_entry_is_valid_for_the_kubelet(tmp_path: Path) -> None:
    """README's telemetry example, wrapped in its CredentialProviderConfig, passes the
    kubelet's decoding and validation, and names the variable the SDK reads."""
    from credprov.credentialprovider.plugin.config import load_config

    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    start = readme.index("# in the kubelet's CredentialProviderConfig")
    block = readme[start : readme.index("```", start)]
    assert "CREDPROV_METRICS_FILE" in block
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\n" + block
    )
    (provider,) = load_config(str(config))[0].providers
    assert [(e.name, e.value) for e in provider.env] == [
        (
            "CREDPROV_METRICS_FILE",
            "/var/lib/node_exporter/textfile_collector/credprov_plugin_ecr.prom",
        )
    ]
