"""Fixtures of the auth-provider-gcp tests: loopback fakes of the metadata server and STS,
and a helper that runs the plugin in-process exactly as its console script would."""

from __future__ import annotations

import functools
import io
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from credprov_gcp.main import main
from credprov_gcp.plugin import provide

from tests.conftest import CANARY
from tests.fakes.gcp import FakeMetadataServer, FakeSTSServer

G = "credentialprovider.kubelet.k8s.io"
#: Tokens carry the canary, so a leak of either shows up in the canary assertions.
NODE_TOKEN = f"ya29.node-{CANARY}"
FEDERATED_TOKEN = f"ya29.federated-{CANARY}"
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARS:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def mds() -> Iterator[FakeMetadataServer]:
    with FakeMetadataServer(token=NODE_TOKEN) as server:
        yield server


@pytest.fixture
def sts() -> Iterator[FakeSTSServer]:
    with FakeSTSServer(token=FEDERATED_TOKEN) as server:
        yield server


def request_bytes(
    image: str,
    version: str = "v1",
    token: str = "",
    annotations: Mapping[str, str] | None = None,
) -> bytes:
    body: dict[str, Any] = {
        "kind": "CredentialProviderRequest",
        "apiVersion": f"{G}/{version}",
        "image": image,
    }
    if token:
        body["serviceAccountToken"] = token
    if annotations:
        body["serviceAccountAnnotations"] = dict(annotations)
    return json.dumps(body).encode()


class Result:
    """One run: exit code, raw stdout, decoded response (or None), stderr, retry sleeps."""

    def __init__(self, code: int, raw: bytes, stderr: str, sleeps: list[float]) -> None:
        self.code = code
        self.raw = raw
        self.response: dict[str, Any] | None = json.loads(raw) if raw else None
        self.stderr = stderr
        self.sleeps = sleeps

    @property
    def auth(self) -> dict[str, Any]:
        assert self.response is not None, self.stderr
        auth: dict[str, Any] = self.response.get("auth", {})
        return auth

    def __repr__(self) -> str:
        return f"Result(code={self.code}, stderr={self.stderr!r})"


def call(
    argv: Sequence[str],
    env: Mapping[str, str],
    cache_dir: Path,
    image: str = "gcr.io/my-project/app",
    *,
    version: str = "v1",
    token: str = "",
    annotations: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
) -> Result:
    """Run ``auth-provider-gcp ARGV`` in-process; retries do not wait (sleeps recorded)."""
    sleeps: list[float] = []
    out = io.BytesIO()
    err = io.StringIO()
    code = main(
        list(argv),
        dict(env),
        handler=functools.partial(provide, sleep=sleeps.append),
        stdin=io.BytesIO(
            stdin if stdin is not None else request_bytes(image, version, token, annotations)
        ),
        stdout=out,
        stderr=err,
        cache_dir=str(cache_dir),
    )
    return Result(code, out.getvalue(), err.getvalue(), sleeps)


def assert_one_clean_line(result: Result, *secrets: str) -> str:
    """Exit 1, nothing on stdout, one stderr line naming the plugin, no secret or traceback."""
    assert result.code == 1, result
    assert result.raw == b""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("auth-provider-gcp: "), lines[0]
    assert "Traceback" not in result.stderr
    for secret in (CANARY, *secrets):
        assert secret not in result.stderr
    return lines[0]
