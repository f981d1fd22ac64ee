"""``acr-credential-provider`` as the kubelet meets it: a real process installed with
``credprov install``, checked by ``credprov plugin test`` and run by ``credprov
get-credentials``, against the fake Azure (all on 127.0.0.1)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from credprov.install import install
from tests.conftest import CANARY
from tests.fakes import acr as fakes
from tests.fakes.acr import DEFAULT_TENANT, FakeAzure

# The plugin's optional extra (credprov[acr]) and the fake's certificate maker.
pytest.importorskip("azure.identity")
pytest.importorskip("cryptography")

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[4]
NAME = "acr-credential-provider"
G = "credentialprovider.kubelet.k8s.io"
ZERO = "00000000-0000-0000-0000-000000000000"


@pytest.fixture
def plugin(tmp_path: Path) -> Path:
    """The plugin installed as the kubelet would run it (a ``-I -S`` launcher)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (result,) = install(str(bin_dir), [NAME])
    return Path(result.path)


@pytest.fixture
def env(fake_azure: FakeAzure, fake_cert: fakes.Certificate, tmp_path: Path) -> dict[str, str]:
    """This process's environment, cleaned, pointed at the fake, with a private cache."""
    environ = {k: v for k, v in os.environ.items() if k not in fakes.FOREIGN_VARIABLES}
    environ.update(fakes.environment(fake_azure, fake_cert))
    environ["CREDPROV_ACR_MAX_RETRIES"] = "0"
    environ["CREDPROV_PLUGIN_CACHE_DIR"] = str(tmp_path / "plugin-cache")
    return environ


@pytest.fixture
def mi_config(azure_json: Callable[..., Path]) -> Path:
    return azure_json(useManagedIdentityExtension=True, tenantId=DEFAULT_TENANT)


def request(image: str) -> bytes:
    doc = {"kind": "CredentialProviderRequest", "apiVersion": f"{G}/v1", "image": image}
    return json.dumps(doc).encode()


def spawn(
    cmd: list[str], env: dict[str, str], stdin: bytes = b"", cwd: Path | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        cmd, input=stdin, capture_output=True, env=env, timeout=60, check=False, cwd=cwd
    )


# Reports which heavy modules a run imported (the warm path must import none).
PROBE = (
    "import sys\n"
    "from credprov_acr.main import main\n"
    "code = main()\n"
    "heavy = sorted({m.split('.')[0] for m in sys.modules} & {'azure', 'requests', 'yaml', "
    "'urllib3', 'msal', 'pydantic', 'boto3', 'botocore', 'google'})\n"
    "sys.stderr.write('heavy=%s\\n' % ','.join(heavy))\n"
    "raise SystemExit(code)\n"
)


def test_cold_then_warm(
    plugin: Path, env: dict[str, str], fake_azure: FakeAzure, mi_config: Path
) -> None:
    args = [str(mi_config), "--registry-mirror=mcr.microsoft.com:myacr.azurecr.io", "-v", "2"]
    cold = spawn([str(plugin), *args], env, request("mcr.microsoft.com/dotnet/runtime"))
    assert cold.returncode == 0, cold.stderr
    resp = json.loads(cold.stdout)
    assert resp["auth"]["mcr.microsoft.com"]["username"] == ZERO
    assert CANARY.encode() not in cold.stderr

    warm = spawn([sys.executable, "-I", "-c", PROBE, *args], env, request("mcr.microsoft.com/x"))
    assert warm.returncode == 0, warm.stderr
    assert b"answered mcr.microsoft.com/x from the plugin cache" in warm.stderr
    assert b"heavy=\n" in warm.stderr  # only credprov.sdk and the standard library
    assert json.loads(warm.stdout)["auth"] == resp["auth"]
    assert len(fake_azure.requests("exchange")) == 1

    # an edited azure.json is not answered from the cache
    mi_config.write_text(
        json.dumps({"useManagedIdentityExtension": True, "tenantId": DEFAULT_TENANT, "x": 1})
    )
    again = spawn([str(plugin), *args], env, request("mcr.microsoft.com/x"))
    assert again.returncode == 0, again.stderr
    assert len(fake_azure.requests("exchange")) == 2


@pytest.mark.parametrize(
    ("endpoint", "mode", "message"),
    [
        ("exchange", "echo", "failed: HTTP 401 (unauthorized): UNAUTHORIZED: <redacted>"),
        ("imds", "429", "failed to get an AAD token with the managed identity"),
    ],
)
def test_bad_answers_in_a_real_process(
    plugin: Path,
    env: dict[str, str],
    fake_azure: FakeAzure,
    mi_config: Path,
    endpoint: str,
    mode: str,
    message: str,
) -> None:
    fake_azure.set(endpoint, mode)
    proc = spawn([str(plugin), str(mi_config), "-v", "9"], env, request("myacr.azurecr.io/app"))
    assert proc.returncode == 1
    assert proc.stdout == b""
    lines = proc.stderr.decode().splitlines()
    assert lines[-1].startswith(f"{NAME}: ") and message in lines[-1], lines
    assert b"Traceback" not in proc.stderr
    assert CANARY.encode() not in proc.stderr


def test_service_principal_secret_never_on_stderr(
    plugin: Path, env: dict[str, str], azure_json: Callable[..., Path]
) -> None:
    config = azure_json(aadClientId="sp", aadClientSecret=f"secret-{CANARY}")
    proc = spawn([str(plugin), str(config), "-v", "9"], env, request("myacr.azurecr.io/app"))
    assert proc.returncode == 0, proc.stderr
    assert CANARY.encode() in proc.stdout  # the kubelet gets it...
    assert CANARY.encode() not in proc.stderr  # ...nobody else


def test_argument_errors_exit_1(plugin: Path, env: dict[str, str]) -> None:
    for args, message in [
        ([], b"config file is not specified"),
        (["a.json", "--ib-sni-name=x"], b"--ib-apiserver-ip must be set"),
        (["a.json", "--bogus"], b"unknown flag: --bogus"),
    ]:
        proc = spawn([str(plugin), *args], env, request("myacr.azurecr.io/app"))
        assert proc.returncode == 1
        assert proc.stderr.startswith(f"{NAME}: ".encode() + message)
        assert proc.stderr.count(b"\n") == 1


def credprov(
    *args: str, env: dict[str, str], cwd: Path = REPO
) -> subprocess.CompletedProcess[bytes]:
    return spawn([sys.executable, "-m", "credprov", *args], env, cwd=cwd)


def test_conformance(plugin: Path, env: dict[str, str], mi_config: Path) -> None:
    proc = credprov(
        "plugin",
        "test",
        str(plugin),
        "--image",
        "myacr.azurecr.io/team/app",
        "--image",
        "mcr.microsoft.com/dotnet/runtime",
        "--arg",
        str(mi_config),
        "--arg=--registry-mirror=mcr.microsoft.com:myacr.azurecr.io",
        "-o",
        "json",
        env=env,
    )
    report = json.loads(proc.stdout)
    failures = [c for c in report["checks"] if c["status"] == "fail"]
    assert proc.returncode == 0 and not failures, failures
    assert CANARY not in proc.stdout.decode()
    # the dummy token carries no acr annotations: rejected, with a warning, not a failure
    probe = next(c for c in report["checks"] if c["name"] == "service-account fields accepted")
    assert probe["status"] == "warn" and "client id annotation" in probe["detail"]


def _resolved(doc: dict[str, Any]) -> dict[str, list[tuple[str, str]]]:
    return {
        img["image"]: [(c["username"], c["key"]) for c in img["credentials"]]
        for img in doc["images"]
    }


def test_get_credentials_with_the_example_config(plugin: Path, env: dict[str, str]) -> None:
    """config/acr-credential-provider-config.yaml as written (service principal, no network)."""
    proc = credprov(
        "get-credentials",
        "myregistry.azurecr.io/team/app",
        "mcr.microsoft.com/dotnet/runtime",
        "docker.io/library/nginx",
        "--config",
        "config/acr-credential-provider-config.yaml",
        "--bin-dir",
        str(plugin.parent),
        "-o",
        "json",
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    got = _resolved(json.loads(proc.stdout))
    sp = "11111111-1111-1111-1111-111111111111"
    assert got == {
        "myregistry.azurecr.io/team/app": [(sp, "*.azurecr.io"), ("", "*.azurecr.*")],
        "mcr.microsoft.com/dotnet/runtime": [],
        "docker.io/library/nginx": [],
    }
    assert b"not-a-real-client-secret" not in proc.stdout  # redacted by default


def test_get_credentials_with_managed_identity(
    plugin: Path, env: dict[str, str], mi_config: Path, tmp_path: Path, fake_azure: FakeAzure
) -> None:
    config = tmp_path / "provider-config.yaml"
    config.write_text(
        json.dumps(
            {
                "apiVersion": "kubelet.config.k8s.io/v1",
                "kind": "CredentialProviderConfig",
                "providers": [
                    {
                        "name": NAME,
                        "apiVersion": f"{G}/v1",
                        "defaultCacheDuration": "10m",
                        "matchImages": ["*.azurecr.io", "mcr.microsoft.com"],
                        "args": [
                            str(mi_config),
                            "--registry-mirror=mcr.microsoft.com:myacr.azurecr.io",
                        ],
                    }
                ],
            }
        )
    )
    proc = credprov(
        "get-credentials",
        "myacr.azurecr.io/team/app",
        "mcr.microsoft.com/dotnet/runtime",
        "--config",
        str(config),
        "--bin-dir",
        str(plugin.parent),
        "-o",
        "json",
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    got = _resolved(doc)
    assert got["myacr.azurecr.io/team/app"] == [(ZERO, "myacr.azurecr.io"), ("", "*.azurecr.*")]
    assert got["mcr.microsoft.com/dotnet/runtime"] == [(ZERO, "mcr.microsoft.com")]
    durations = {p["cacheDuration"] for img in doc["images"] for p in img["providers"]}
    # 2h55m less the seconds the run took (a loaded CI machine takes several).
    seconds = {int(h) * 3600 + int(m) * 60 + int(s) for h, m, s in
               (re.fullmatch(r"(\d+)h(\d+)m(\d+)s", d).groups() for d in durations)}  # type: ignore[union-attr]  # fmt: skip
    assert seconds and all(10_500 - 15 <= s <= 10_500 for s in seconds), durations
    assert CANARY not in proc.stdout.decode()
