"""The ``credprov`` CLI: output shapes, exit codes, one-line errors, no secrets."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from credprov.cli.main import main
from tests.conftest import CANARY, install_fake_plugin, provider, write_config

REPO = Path(__file__).resolve().parents[3]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def setup(tmp_path: Path, bin_dir: Path) -> tuple[Path, Path]:
    install_fake_plugin(bin_dir, "good")
    install_fake_plugin(bin_dir, "bad")
    cfg = write_config(
        tmp_path / "config.json",
        [
            provider("good", match_images=["*.registry.io"], env={"FAKE_PASSWORD": CANARY}),
            provider(
                "bad",
                match_images=["fail.registry.io"],
                env={"FAKE_MODE": "exit1"},
            ),
        ],
    )
    return cfg, bin_dir


def test_validate_ok_json(capsys: pytest.CaptureFixture[str], setup: tuple[Path, Path]) -> None:
    cfg, _ = setup
    code, out, _ = run(capsys, "config", "validate", str(cfg), "-o", "json")
    assert code == 0
    doc = json.loads(out)
    assert doc["valid"] is True and doc["hash"].startswith("sha256:")
    assert [p["name"] for p in doc["providers"]] == ["good", "bad"]
    assert CANARY not in out


def test_validate_error_text(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cfg = write_config(
        tmp_path / "c.json", [provider("a/b"), provider("x", default_cache_duration="-1m")]
    )
    code, out, err = run(capsys, "config", "validate", str(cfg))
    assert code == 1 and out == ""
    assert err.strip() == (
        "credprov: error: failed to validate credential provider config: [providers.name: Invalid value: "
        "\"a/b\": provider name cannot contain '/', providers.defaultCacheDuration: Invalid "
        'value: "-1m0s": must be greater than or equal to 0]'
    )


def test_validate_feature_gate_off(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    attrs = {
        "serviceAccountTokenAudience": "a",
        "cacheType": "Token",
        "requireServiceAccount": True,
    }
    cfg = write_config(tmp_path / "c.json", [provider("p", tokenAttributes=attrs)])
    assert run(capsys, "config", "validate", str(cfg))[0] == 0
    code, _, err = run(
        capsys,
        "config",
        "validate",
        str(cfg),
        "--feature-gates",
        "KubeletServiceAccountTokenForCredentialProviders=false",
    )
    assert code == 1 and "feature gate is disabled" in err


@pytest.mark.parametrize(
    "content",
    [b"\x00\xff\xfe garbage", b"{", b"kind: [", b"", b"- a\n- b\n"],
    ids=["binary", "truncated-json", "bad-yaml", "empty", "list"],
)
def test_validate_garbage_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: bytes
) -> None:
    path = tmp_path / "c.yaml"
    path.write_bytes(content)
    code, _, err = run(capsys, "config", "validate", str(path))
    assert code == 1
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_get_credentials_json(capsys: pytest.CaptureFixture[str], setup: tuple[Path, Path]) -> None:
    cfg, bin_dir = setup
    code, out, err = run(
        capsys,
        "get-credentials",
        "a.registry.io/app:1",
        "a.registry.io/other",
        "nginx",
        "--config",
        str(cfg),
        "--bin-dir",
        str(bin_dir),
        "-o",
        "json",
    )
    assert code == 0, err
    doc = json.loads(out)
    first = doc["images"][0]
    assert first["repo"] == "a.registry.io/app"
    assert first["credentials"] == [
        {
            "username": "user",
            "password": "<redacted>",
            "email": "",
            "key": "a.registry.io",
            "source": "provider:good",
            "credentialHash": first["credentials"][0]["credentialHash"],
        }
    ]
    assert first["providers"][0] == {
        "name": "good",
        "matched": True,
        "executed": True,
        "cached": False,
        "cacheKeyType": "Registry",
        "cacheDuration": "10m0s",
        "error": None,
    }
    assert doc["images"][1]["providers"][0]["cached"] is True
    assert doc["images"][2]["repo"] == "docker.io/library/nginx"
    assert doc["executions"] == {"good": 1, "bad": 0}
    assert CANARY not in out + err


def test_show_secrets(capsys: pytest.CaptureFixture[str], setup: tuple[Path, Path]) -> None:
    cfg, bin_dir = setup
    _, out, _ = run(
        capsys,
        "get-credentials",
        "a.registry.io/x",
        "--config",
        str(cfg),
        "--bin-dir",
        str(bin_dir),
        "--show-secrets",
    )
    assert CANARY in out


def test_failing_provider_exit_1_others_continue(
    capsys: pytest.CaptureFixture[str], setup: tuple[Path, Path], tmp_path: Path
) -> None:
    cfg, bin_dir = setup
    metrics = tmp_path / "metrics.txt"
    code, out, _ = run(
        capsys,
        "get-credentials",
        "fail.registry.io/x",
        "--config",
        str(cfg),
        "--bin-dir",
        str(bin_dir),
        "-o",
        "json",
        "--metrics-out",
        str(metrics),
        "-v",
        "2",
    )
    assert code == 1
    providers = json.loads(out)["images"][0]["providers"]
    assert providers[0]["error"] is None and providers[0]["executed"]
    assert providers[1]["error"].endswith("exit status 1: plugin failed: no credentials for you")
    text = metrics.read_text()
    assert 'kubelet_credential_provider_plugin_errors_total{plugin_name="bad"} 1.0' in text
    assert CANARY not in out


def test_pull_secret_and_node_config(
    capsys: pytest.CaptureFixture[str], setup: tuple[Path, Path], tmp_path: Path
) -> None:
    cfg, bin_dir = setup
    node = tmp_path / "node-docker-config.json"
    node.write_text(
        json.dumps({"auths": {"a.registry.io": {"username": "node", "password": CANARY}}})
    )
    code, out, err = run(
        capsys,
        "get-credentials",
        "a.registry.io/x",
        "--config",
        str(cfg),
        "--bin-dir",
        str(bin_dir),
        "--pull-secret",
        str(REPO / "config" / "pull-secret.yaml"),
        "--node-docker-config",
        str(node),
        "-o",
        "json",
    )
    assert code == 0, out + err
    sources = [c["source"] for c in json.loads(out)["images"][0]["credentials"]]
    assert sources == ["node", "provider:good"]  # the example secret is for registry.example.com


def test_parallel_lookups_share_one_singleflight(
    capsys: pytest.CaptureFixture[str], setup: tuple[Path, Path]
) -> None:
    cfg, bin_dir = setup
    images = ["a.registry.io/same:1"] * 8
    code, out, _ = run(
        capsys,
        "get-credentials",
        *images,
        "--config",
        str(cfg),
        "--bin-dir",
        str(bin_dir),
        "--parallel",
        "8",
        "-o",
        "json",
    )
    assert code == 0
    assert json.loads(out)["executions"]["good"] == 1


def test_invalid_image(capsys: pytest.CaptureFixture[str], setup: tuple[Path, Path]) -> None:
    cfg, bin_dir = setup
    code, out, _ = run(
        capsys,
        "get-credentials",
        "UPPER/Case",
        "--config",
        str(cfg),
        "--bin-dir",
        str(bin_dir),
    )
    assert code == 1 and "must be lowercase" in out


def test_explain(capsys: pytest.CaptureFixture[str], setup: tuple[Path, Path]) -> None:
    cfg, _ = setup
    code, out, _ = run(capsys, "explain", "registry.io/x", "--config", str(cfg), "-o", "json")
    assert code == 0
    doc = json.loads(out)
    good = doc["providers"][0]["matchImages"][0]
    assert good["matched"] is False and "label" in good["reason"]


@pytest.mark.parametrize(
    "argv",
    [
        ["get-credentials", "x", "--config", "/nonexistent/c.yaml", "--bin-dir", "/"],
        ["get-credentials", "x", "--config", "c", "--bin-dir", "/nonexistent"],
        ["explain", "x", "--config", "/nonexistent"],
        [
            "get-credentials",
            "x",
            "--config",
            "c",
            "--bin-dir",
            "/",
            "--pull-secret",
            "/nonexistent",
        ],
        ["config", "validate", "/etc", "--feature-gates", "Bogus=true"],
    ],
    ids=[
        "missing-config",
        "missing-bin-dir",
        "explain-missing",
        "bad-secret",
        "bad-gate",
    ],
)
def test_errors_are_one_line_subprocess(argv: list[str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "credprov", *argv], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_canary_never_logged_at_max_verbosity(
    capsys: pytest.CaptureFixture[str], setup: tuple[Path, Path]
) -> None:
    cfg, bin_dir = setup
    code, out, err = run(
        capsys,
        "-v",
        "9",
        "get-credentials",
        "a.registry.io/x",
        "fail.registry.io/y",
        "--config",
        str(cfg),
        "--bin-dir",
        str(bin_dir),
    )
    assert code == 1
    assert CANARY not in out and CANARY not in err


@pytest.mark.parametrize(
    "doc",
    [
        {"apiVersion": "kubelet.config.k8s.io/v1", "providers": [{"env": [{"value": CANARY}]}]},
        {"kind": "CredentialProviderConfig", "env": CANARY},
        {
            "kind": "CredentialProviderConfig",
            "apiVersion": "kubelet.config.k8s.io/v1",
            "providers": [{"name": "p", "env": [{"name": "K", "value": CANARY}], "bogus": 1}],
        },
    ],
    ids=["missing-kind", "missing-apiversion", "unknown-field"],
)
def test_config_errors_never_quote_secrets(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, doc: dict[str, object]
) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps(doc))
    code, out, err = run(capsys, "config", "validate", str(path), "-o", "json")
    assert code == 1
    assert CANARY not in out + err


def test_validate_warns_but_succeeds(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "c.json", [provider("p", match_images=["registry-1?.io"])])
    code, out, err = run(capsys, "config", "validate", str(cfg))
    assert code == 0 and out.startswith("valid: 1 provider(s)")
    assert err.startswith("warning: provider 'p' matchImages entry 'registry-1?.io': '?' starts")
    code, out, _ = run(capsys, "config", "validate", str(cfg), "-o", "json")
    assert code == 0 and len(json.loads(out)["warnings"]) == 1
