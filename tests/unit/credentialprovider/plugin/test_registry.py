"""``RegisterCredentialProviderPlugins``: bin dir, binaries, order of checks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from credprov.credentialprovider.plugin.config import ConfigError
from credprov.credentialprovider.plugin.metrics import Metrics
from credprov.credentialprovider.plugin.registry import register_credential_provider_plugins
from tests.conftest import install_fake_plugin, provider, write_config


def test_missing_bin_dir(tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "c.json", [provider()])
    with pytest.raises(ConfigError) as err:
        register_credential_provider_plugins(str(cfg), str(tmp_path / "nope"))
    assert str(err.value) == f"plugin binary directory {tmp_path / 'nope'} did not exist"


def test_bin_dir_checked_before_config(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="plugin binary directory"):
        register_credential_provider_plugins(str(tmp_path / "missing.json"), str(tmp_path / "x"))


def test_missing_binary_message_has_kubelet_double_space(tmp_path: Path, bin_dir: Path) -> None:
    cfg = write_config(tmp_path / "c.json", [provider("absent")])
    with pytest.raises(ConfigError) as err:
        register_credential_provider_plugins(str(cfg), str(bin_dir))
    assert str(err.value) == "plugin binary executable  did not exist"


def test_non_executable_binary(tmp_path: Path, bin_dir: Path) -> None:
    (bin_dir / "plain").write_text("#!/bin/sh\n")
    (bin_dir / "plain").chmod(0o644)
    cfg = write_config(tmp_path / "c.json", [provider("plain")])
    with pytest.raises(ConfigError) as err:
        register_credential_provider_plugins(str(cfg), str(bin_dir))
    assert str(err.value) == (
        f'error inspecting binary executable : exec: "{bin_dir / "plain"}": permission denied'
    )


def test_directory_as_binary(tmp_path: Path, bin_dir: Path) -> None:
    (bin_dir / "adir").mkdir()
    cfg = write_config(tmp_path / "c.json", [provider("adir")])
    with pytest.raises(ConfigError, match="is a directory"):
        register_credential_provider_plugins(str(cfg), str(bin_dir))


def test_providers_in_config_order_and_hash_metric(tmp_path: Path, bin_dir: Path) -> None:
    for name in ("zeta", "alpha"):
        install_fake_plugin(bin_dir, name)
    cfg = write_config(tmp_path / "c.json", [provider("zeta"), provider("alpha")])
    metrics = Metrics()
    providers = register_credential_provider_plugins(str(cfg), str(bin_dir), metrics=metrics)
    assert [p.name for p in providers.providers] == ["zeta", "alpha"]
    text = metrics.exposition().decode()
    assert f'kubelet_credential_provider_config_info{{hash="{providers.config_hash}"}} 1.0' in text
    assert (
        "# HELP kubelet_credential_provider_config_info [ALPHA] Information about the last" in text
    )


def test_earlier_provider_first_for_same_key(tmp_path: Path, bin_dir: Path) -> None:
    for name in ("zeta", "alpha"):
        install_fake_plugin(bin_dir, name)
    cfg = write_config(
        tmp_path / "c.json",
        [
            provider("zeta", env={"FAKE_USERNAME": "zeta"}),
            provider("alpha", env={"FAKE_USERNAME": "alpha"}),
        ],
    )
    providers = register_credential_provider_plugins(str(cfg), str(bin_dir))
    creds, results = providers.lookup("a.registry.io/app")
    assert [c.username for c in creds] == ["zeta", "alpha"]
    assert [r.executed for r in results] == [True, True]
    assert os.path.basename(providers.providers[0].plugin.path) == "zeta"
