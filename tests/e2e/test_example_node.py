"""End to end: the installed ``credprov`` command on the runnable examples in ``config/``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
CREDPROV = str(Path(sys.executable).parent / "credprov")


def credprov(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CREDPROV, *args], capture_output=True, text=True, cwd=REPO, timeout=120)


def test_console_script_version() -> None:
    proc = credprov("--version")
    assert proc.returncode == 0 and proc.stdout.startswith("credprov ")


def test_example_config_validates() -> None:
    proc = credprov("config", "validate", "config/credential-provider-config.yaml", "-o", "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["valid"] is True


def test_example_node_resolves_in_kubelet_order() -> None:
    proc = credprov(
        "get-credentials",
        "registry.example.com/team/app:v1",
        "mirror.registry.example.com/library/redis:7",
        "nginx:1.27",
        "--config",
        "config/credential-provider-config.yaml",
        "--bin-dir",
        "config/bin",
        "--pull-secret",
        "config/pull-secret.yaml",
        "-o",
        "json",
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    app, mirror, nginx = doc["images"]
    assert [c["source"] for c in app["credentials"]] == [
        "secret:default/regcred",
        "provider:example-credential-provider",
    ]
    assert [c["source"] for c in mirror["credentials"]] == ["provider:example-credential-provider"]
    assert nginx["repo"] == "docker.io/library/nginx" and nginx["credentials"] == []
    # Registry cache key: one execution per registry.
    assert doc["executions"] == {"example-credential-provider": 2}
    assert "not-a-real-password" not in proc.stdout
    assert "secret-from-pod" not in proc.stdout


def test_example_plugin_timeout_kills_cleanly(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    hang = bin_dir / "example-credential-provider"
    hang.write_text("#!/bin/sh\nsleep 30 &\nsleep 30\n")
    hang.chmod(0o755)
    proc = credprov(
        "get-credentials",
        "registry.example.com/x",
        "--config",
        "config/credential-provider-config.yaml",
        "--bin-dir",
        str(bin_dir),
        "--plugin-timeout",
        "300ms",
        "-o",
        "json",
    )
    assert proc.returncode == 1
    err = json.loads(proc.stdout)["images"][0]["providers"][0]["error"]
    assert "context deadline exceeded" in err
    assert os.path.exists(hang)


def test_example_plugin_passes_conformance() -> None:
    proc = credprov(
        "plugin",
        "test",
        "config/bin/example-credential-provider",
        "--image",
        "registry.example.com/team/app",
        "-o",
        "json",
    )
    assert proc.returncode == 0, proc.stdout[-2000:]
