"""Shared fixtures: fake plugin binaries, config files, a fake clock."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable, Iterator
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


@pytest.fixture(autouse=True)
def _default_go_release() -> Iterator[None]:
    """Every test starts and ends with the default Go release (``--go-version`` and
    :func:`credprov._go.version.use_go` change it for the whole process)."""
    from credprov._go.version import DEFAULT_GO_VERSION, use_go

    use_go(DEFAULT_GO_VERSION)
    yield
    use_go(DEFAULT_GO_VERSION)


@pytest.fixture
def pre_cve_go() -> None:
    """Follow Go 1.25.1, the last release before CVE-2025-47912's fix, whose ``url.Parse``
    accepts ``[...]`` globs in a host: for tests of glob matching itself."""
    from credprov._go.version import use_go

    use_go("1.25.1")


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


def modules_loaded_by(statement: str) -> set[str]:
    """The modules ``statement`` adds to ``sys.modules`` in a fresh ``python -I -S`` (no
    site, as installed plugin launchers run) with this checkout first on ``sys.path``."""
    import subprocess

    root = str(Path(__file__).resolve().parents[1])
    code = (
        f"import sys; sys.path.insert(0, {root!r}); before = set(sys.modules); {statement}; "
        "print('\\n'.join(sorted(set(sys.modules) - before)))"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, check=True
    ).stdout
    return set(out.split())
