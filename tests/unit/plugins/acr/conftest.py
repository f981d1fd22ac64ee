"""Fixtures of the ``acr-credential-provider`` tests: the fake Azure and azure.json files."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes import acr as fakes


@pytest.fixture(scope="session")
def fake_cert(tmp_path_factory: pytest.TempPathFactory) -> fakes.Certificate:
    """A self-signed certificate for the fake's TLS endpoints, made once per session."""
    return fakes.Certificate.create(tmp_path_factory.mktemp("fake-azure-cert"))


@pytest.fixture
def fake_azure(fake_cert: fakes.Certificate) -> Iterator[fakes.FakeAzure]:
    """The fake Azure, running; stopped after the test even when it fails."""
    with fakes.running(fake_cert) as fake:
        yield fake


@pytest.fixture
def azure_env(
    fake_azure: fakes.FakeAzure, fake_cert: fakes.Certificate, monkeypatch: pytest.MonkeyPatch
) -> dict[str, str]:
    """Point this process (in-process tests) at the fake; returns the variables set."""
    for name in fakes.FOREIGN_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    env = fakes.environment(fake_azure, fake_cert)
    env["CREDPROV_ACR_MAX_RETRIES"] = "0"  # retry tests turn retries on
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return env


@pytest.fixture
def azure_json(tmp_path: Path) -> Callable[..., Path]:
    """``azure_json(**fields)`` writes an azure.json (JSON) and returns its path."""

    def write(name: str = "azure.json", **fields: Any) -> Path:
        path = tmp_path / name
        path.write_text(json.dumps(fields, indent=2))
        return path

    return write
