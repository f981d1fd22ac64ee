"""auth-provider-gcp as a real process: installed launcher, conformance, ``get-credentials``.

The plugin is installed with ``credprov install`` into a temporary bin dir and run as the
kubelet runs it, against the loopback fakes (reached through ``GCE_METADATA_HOST`` and
``CREDPROV_GCP_STS_ENDPOINT`` in its environment): directly, through ``credprov plugin test``
and through ``credprov get-credentials`` with the example config in ``config/``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from credprov.install import install
from tests.conftest import CANARY
from tests.fakes.gcp import TOKEN_PATH, FakeMetadataServer, FakeSTSServer
from tests.fakes.server import Reply, closed_port
from tests.unit.plugins.gcp.conftest import (
    FEDERATED_TOKEN,
    NODE_TOKEN,
    PROXY_VARS,
    request_bytes,
)

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[4]
EXAMPLE_CONFIG = REPO / "config" / "gcp-credential-provider-config.yaml"
ARGS = ["get-credentials", "--v=3"]  # as in the documented kubelet config


@pytest.fixture
def plugin(tmp_path: Path) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (result,) = install(str(bin_dir), ["auth-provider-gcp"])
    return Path(result.path)


def environment(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in PROXY_VARS}
    env["CREDPROV_PLUGIN_CACHE_DIR"] = str(tmp_path / "plugin-cache")
    env.update(extra)
    return env


def run_plugin(
    cmd: list[str], env: dict[str, str], image: str = "gcr.io/my-project/app"
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        cmd,
        input=request_bytes(image),
        capture_output=True,
        env=env,
        timeout=60,
        check=False,
    )


def credprov(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "credprov", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
        check=False,
    )


# Imports only what main() imports, then reports whether the cold path's modules were loaded.
PROBE = (
    "import sys\n"
    "from credprov_gcp.main import main\n"
    "code = main()\n"
    "heavy = sorted(m for m in ('requests', 'google.auth', 'credprov_gcp.plugin', 'pydantic')"
    " if m in sys.modules)\n"
    "sys.stderr.write('heavy=%s\\n' % ','.join(heavy))\n"
    "raise SystemExit(code)\n"
)


def test_installed_plugin_then_warm_path_imports_nothing_heavy(
    plugin: Path, tmp_path: Path, mds: FakeMetadataServer
) -> None:
    env = environment(tmp_path, GCE_METADATA_HOST=mds.host)
    first = run_plugin([str(plugin), *ARGS], env)
    assert first.returncode == 0, first.stderr
    resp = json.loads(first.stdout)
    assert resp["cacheKeyType"] == "Image" and resp["cacheDuration"] == "54m59s"
    assert resp["auth"]["gcr.io"] == {"username": "_token", "password": NODE_TOKEN}
    assert CANARY.encode() not in first.stderr
    calls = len(mds.requests)

    warm = run_plugin([sys.executable, "-c", PROBE, *ARGS], env)
    assert warm.returncode == 0, warm.stderr
    assert b"answered gcr.io/my-project/app from the plugin cache" in warm.stderr
    assert b"heavy=\n" in warm.stderr
    assert json.loads(warm.stdout)["auth"] == resp["auth"]
    assert len(mds.requests) == calls

    cold = run_plugin([sys.executable, "-c", PROBE, *ARGS], env, "eu.gcr.io/p/app")
    assert cold.returncode == 0, cold.stderr
    assert b"heavy=credprov_gcp.plugin,google.auth,requests\n" in cold.stderr


BAD = {
    "throttled": ([Reply(429, CANARY)], "HTTP 429 Too Many Requests (3 attempts)"),
    "malformed JSON": ([Reply(200, '{"access_token": "' + NODE_TOKEN)], "(not JSON)"),
}


@pytest.mark.parametrize("replies, message", BAD.values(), ids=BAD.keys())
def test_bad_answers_one_line_exit_1(
    plugin: Path, tmp_path: Path, mds: FakeMetadataServer, replies: list[Reply], message: str
) -> None:
    mds.script("GET", TOKEN_PATH, *replies)
    proc = run_plugin([str(plugin), *ARGS], environment(tmp_path, GCE_METADATA_HOST=mds.host))
    assert proc.returncode == 1
    assert proc.stdout == b""
    stderr = proc.stderr.decode()
    assert len(stderr.splitlines()) == 1, stderr
    assert stderr.startswith("auth-provider-gcp: metadata server 127.0.0.1:")
    assert message in stderr
    assert CANARY not in stderr and "Traceback" not in stderr


def test_metadata_server_absent(plugin: Path, tmp_path: Path) -> None:
    env = environment(tmp_path, GCE_METADATA_HOST=f"127.0.0.1:{closed_port()}")
    proc = run_plugin([str(plugin), *ARGS], env)
    assert proc.returncode == 1
    (line,) = proc.stderr.decode().splitlines()
    assert "cannot reach the metadata server" in line and "connection refused" in line


def test_usage_error_is_upstream_like(plugin: Path, tmp_path: Path) -> None:
    proc = run_plugin([str(plugin), "get-credentials", "--authFlow=oauth"], environment(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr.decode() == (
        'auth-provider-gcp: invalid value "oauth" for authFlow (must be one of "gcr", '
        '"dockercfg", or "dockercfg-url") (see \'auth-provider-gcp get-credentials --help\')\n'
    )


def plugin_test(plugin: Path, *extra: str) -> list[str]:
    return [
        "plugin",
        "test",
        str(plugin),
        "--image",
        "gcr.io/my-project/app:v1",
        "--image",
        "us-docker.pkg.dev/my-project/repo/app",
        *(f"--arg={a}" for a in ARGS),
        *extra,
    ]


def test_conformance(plugin: Path, tmp_path: Path, mds: FakeMetadataServer) -> None:
    proc = credprov(
        plugin_test(plugin, "--env", f"GCE_METADATA_HOST={mds.host}", "-o", "json"),
        environment(tmp_path),
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    statuses = {(c["name"], c["status"]) for c in report["checks"]}
    assert not [c for c in report["checks"] if c["status"] == "fail"]
    assert ("service-account fields accepted", "pass") in statuses
    assert NODE_TOKEN not in proc.stdout and CANARY not in proc.stdout


def test_conformance_with_workload_identity(
    plugin: Path, tmp_path: Path, mds: FakeMetadataServer, sts: FakeSTSServer
) -> None:
    token_file = tmp_path / "ksa-token"
    token_file.write_text(f"eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.{CANARY}")
    proc = credprov(
        plugin_test(
            plugin,
            "--arg=--identity-provider=https://container.googleapis.com/v1/projects/p/x",
            "--arg=--project-id=p",
            "--env",
            f"GCE_METADATA_HOST={mds.host}",
            "--env",
            f"CREDPROV_GCP_STS_ENDPOINT={sts.endpoint}",
            "--service-account-token-file",
            str(token_file),
            "--annotation",
            "iam.gke.io/enable-wi-image-pull=true",
            "--api-version",
            "v1",  # older versions carry no token: those requests use the node's
        ),
        environment(tmp_path),
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "FAIL" not in proc.stdout
    assert sts.requests and mds.requests == []
    assert sts.requests[0].form()["subject_token"] == token_file.read_text()
    assert FEDERATED_TOKEN not in proc.stdout and CANARY not in proc.stdout


def test_get_credentials_with_the_example_config(
    plugin: Path, tmp_path: Path, mds: FakeMetadataServer
) -> None:
    images = [
        "gcr.io/my-project/app:v1",
        "europe-docker.pkg.dev/p/r/app",
        "docker.io/library/nginx",
    ]
    proc = credprov(
        [
            "get-credentials",
            *images,
            "--config",
            str(EXAMPLE_CONFIG.relative_to(REPO)),
            "--bin-dir",
            str(plugin.parent),
            "-o",
            "json",
        ],
        environment(tmp_path, GCE_METADATA_HOST=mds.host),
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = json.loads(proc.stdout)
    by_image = {r["image"]: r for r in out["images"]}
    for image in images[:2]:
        creds = by_image[image]["credentials"]
        assert creds and {c["username"] for c in creds} == {"_token"}
        assert {c["password"] for c in creds} == {"<redacted>"}
        assert {c["source"] for c in creds} == {"provider:auth-provider-gcp"}
        (provider,) = by_image[image]["providers"]
        assert (provider["cacheKeyType"], provider["cacheDuration"]) == ("Image", "54m59s")
    assert by_image["docker.io/library/nginx"]["credentials"] == []
    assert not by_image["docker.io/library/nginx"]["providers"][0]["matched"]
    assert out["executions"] == {"auth-provider-gcp": 2}
    assert NODE_TOKEN not in proc.stdout


def test_get_credentials_surfaces_one_line_errors(
    plugin: Path, tmp_path: Path, mds: FakeMetadataServer
) -> None:
    body = '{"access_token": "' + NODE_TOKEN + '", "expires_in": "3599"}'
    mds.script("GET", TOKEN_PATH, Reply(200, body))
    proc = credprov(
        [
            "get-credentials",
            "gcr.io/my-project/app",
            "--config",
            str(EXAMPLE_CONFIG),
            "--bin-dir",
            str(plugin.parent),
            "-o",
            "json",
        ],
        environment(tmp_path, GCE_METADATA_HOST=mds.host),
    )
    assert proc.returncode == 1
    (image,) = json.loads(proc.stdout)["images"]
    error = image["providers"][0]["error"]
    assert error.rstrip("\n").endswith(
        f"exit status 1: auth-provider-gcp: metadata server {mds.host}: the node service account "
        "token: malformed token response (no numeric expires_in)"
    ), error
    assert CANARY not in proc.stdout + proc.stderr
