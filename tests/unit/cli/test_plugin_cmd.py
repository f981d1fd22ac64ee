"""``credprov plugin exec``: the kubelet's request to one provider, raw and decoded answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from credprov.cli.main import main
from tests.conftest import CANARY, install_fake_plugin, provider, write_config


@pytest.fixture
def cfg(tmp_path: Path, bin_dir: Path) -> Path:
    install_fake_plugin(bin_dir, "good")
    install_fake_plugin(bin_dir, "broken")
    return write_config(
        tmp_path / "c.json",
        [
            provider("good", env={"FAKE_PASSWORD": CANARY, "FAKE_CACHE_DURATION": "5m"}),
            provider("broken", env={"FAKE_MODE": "unknown-field", "FAKE_PASSWORD": CANARY}),
        ],
    )


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_exec_shows_request_and_redacted_response(
    capsys: pytest.CaptureFixture[str], cfg: Path, bin_dir: Path
) -> None:
    code, out, _ = run(
        capsys,
        "plugin",
        "exec",
        "good",
        "--config",
        str(cfg),
        "--bin-dir",
        str(bin_dir),
        "--image",
        "a.registry.io/app:1",
        "-o",
        "json",
    )
    assert code == 0
    doc = json.loads(out)
    assert doc["request"] == (
        '{"kind":"CredentialProviderRequest","apiVersion":"credentialprovider.kubelet.k8s.io/v1",'
        '"image":"a.registry.io/app"}\n'
    )
    assert doc["matched"] is True
    assert doc["response"]["cacheDuration"] == "5m0s"
    assert doc["response"]["auth"]["a.registry.io"]["password"] == "<redacted>"
    assert CANARY not in out
    assert doc["env"] == ["FAKE_PASSWORD", "FAKE_CACHE_DURATION"]


def test_show_secrets(capsys: pytest.CaptureFixture[str], cfg: Path, bin_dir: Path) -> None:
    _, out, _ = run(
        capsys,
        "plugin",
        "exec",
        "good",
        "--config",
        str(cfg),
        "--bin-dir",
        str(bin_dir),
        "--image",
        "a.registry.io/app",
        "--show-secrets",
    )
    assert CANARY in out


def test_undecodable_output_is_hidden(
    capsys: pytest.CaptureFixture[str], cfg: Path, bin_dir: Path
) -> None:
    code, out, _ = run(
        capsys,
        "plugin",
        "exec",
        "broken",
        "--config",
        str(cfg),
        "--bin-dir",
        str(bin_dir),
        "--image",
        "a.registry.io/app",
    )
    assert code == 1
    assert "error decoding credential provider plugin response from stdout" in out
    assert CANARY not in out and "not shown" in out


def test_unknown_provider_and_unmatched_image(
    capsys: pytest.CaptureFixture[str], cfg: Path, bin_dir: Path
) -> None:
    code, _, err = run(
        capsys,
        "plugin",
        "exec",
        "nope",
        "--config",
        str(cfg),
        "--bin-dir",
        str(bin_dir),
        "--image",
        "x",
    )
    assert code == 1 and "no provider 'nope'" in err and "good, broken" in err
    code, out, _ = run(
        capsys,
        "plugin",
        "exec",
        "good",
        "--config",
        str(cfg),
        "--bin-dir",
        str(bin_dir),
        "--image",
        "other.io/x",
    )
    assert code == 0 and "the kubelet would not run it" in out
