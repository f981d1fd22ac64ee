"""Shared fixtures: fake plugin binaries, config files, a fake clock."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from credprov.base.clock import FakeClock

FIXTURES = Path(__file__).parent / "fixtures"

#: A canary secret: tests assert it never reaches logs, errors or default output.
CANARY = "canary-s3cr3t-7d1f0c"


def install_fake_plugin(bin_dir: Path, name: str) -> Path:
    """Install the fake plugin as ``bin_dir/name``, started with a lean interpreter."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    target = bin_dir / name
    source = (FIXTURES / "fake_plugin.py").read_text()
    target.write_text(f"#!{sys.executable} -IS\n{source}")
    target.chmod(0o755)
    return target


@pytest.fixture
def bin_dir(tmp_path: Path) -> Path:
    d = tmp_path / "bin"
    d.mkdir()
    return d


@pytest.fixture
def fake_plugin(bin_dir: Path) -> Callable[[str], Path]:
    return lambda name="fake": install_fake_plugin(bin_dir, name)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(start=1_000_000_000_000)


def write_config(path: Path, providers: list[dict[str, object]]) -> Path:
    """Write a v1 CredentialProviderConfig (JSON) with ``providers``."""
    import json

    doc = {
        "apiVersion": "kubelet.config.k8s.io/v1",
        "kind": "CredentialProviderConfig",
        "providers": providers,
    }
    path.write_text(json.dumps(doc))
    return path


def provider(
    name: str = "fake",
    match_images: list[str] | None = None,
    env: dict[str, str] | None = None,
    default_cache_duration: str = "10m",
    api_version: str = "credentialprovider.kubelet.k8s.io/v1",
    **extra: object,
) -> dict[str, object]:
    out: dict[str, object] = {
        "name": name,
        "matchImages": match_images or ["*.registry.io", "registry.io"],
        "defaultCacheDuration": default_cache_duration,
        "apiVersion": api_version,
    }
    if env:
        out["env"] = [{"name": k, "value": v} for k, v in env.items()]
    out.update(extra)
    return out


def has_tool(name: str) -> bool:
    return shutil.which(name) is not None
