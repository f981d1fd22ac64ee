"""Fixtures of the ECR plugin tests: an isolated AWS environment, moto, hooked clients."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from credprov_ecr import _aws
from credprov_ecr.plugin import EcrCredentialProvider

from credprov.base.clock import FakeClock

ACCOUNT = "123456789012"
ROLE_ACCOUNT = "210987654321"
ROLE_ARN = f"arn:aws:iam::{ROLE_ACCOUNT}:role/ecr-pull"
#: moto's ECR tokens expire at this instant.
MOTO_EXPIRY = datetime(2015, 1, 1, tzinfo=UTC)
#: A wall clock 12 h before that: moto's tokens then have 12 h left, as real ones do.
CLOCK_START_NS = int(MOTO_EXPIRY.timestamp() - 12 * 3600) * 1_000_000_000
JSON_11 = "application/x-amz-json-1.1"


def isolate_aws_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No AWS_* from the developer's shell, no shared files, no instance metadata."""
    for key in list(os.environ):
        if key.startswith("AWS_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDTESTING")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing-secret-key")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """An isolated AWS environment without moto (canned or stubbed answers only)."""
    isolate_aws_environment(monkeypatch, tmp_path)


@pytest.fixture
def moto(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """moto's ECR and STS in this process, fresh for each test, in an isolated environment
    (set after moto starts, which installs fake keys of its own)."""
    from moto import mock_aws

    with mock_aws():
        isolate_aws_environment(monkeypatch, tmp_path)
        yield


class Call:
    """One API call a client made: where to, and with which headers."""

    def __init__(self, service: str, operation: str, url: str) -> None:
        self.service = service
        self.operation = operation
        self.url = url
        self.headers: dict[str, str] = {}


_LOADER: list[Any] = []


def _botocore_session() -> Any:
    # One data loader for all tests: loading botocore's JSON models is most of a session's
    # cost (~80 ms), and they never change.
    import botocore.loaders
    import botocore.session

    if not _LOADER:
        _LOADER.append(botocore.loaders.create_loader())
    session = botocore.session.Session()
    session.register_component("data_loader", _LOADER[0])
    return session


class HookedClients(_aws.Clients):
    """The real client factory, recording every call's endpoint and headers, and letting a
    test attach a ``Stubber`` or canned answers to each client it creates."""

    def __init__(self, env: Any = None) -> None:
        super().__init__(os.environ if env is None else env, botocore_session=_botocore_session)
        self.calls: list[Call] = []
        self.on_client: list[Callable[[str, Any], None]] = []

    def client(self, service: str, region: str | None, **kwargs: Any) -> Any:
        client = super().client(service, region, **kwargs)

        def before_call(model: Any, params: dict[str, Any], **_: Any) -> None:
            self.calls.append(Call(service, model.name, params["url"]))

        def before_send(request: Any, **_: Any) -> None:
            if self.calls:
                self.calls[-1].headers = {k: str(v) for k, v in request.headers.items()}

        # ".*.*": the most specific handlers run first, before a Stubber's or moto's.
        client.meta.events.register_first("before-call.*.*", before_call)
        client.meta.events.register_first("before-send.*.*", before_send)
        for hook in self.on_client:
            hook(service, client)
        return client

    def urls(self, service: str | None = None) -> list[str]:
        return [c.url for c in self.calls if service is None or c.service == service]


class _Body:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self.data


def canned(
    answers: list[tuple[int, bytes | str | dict[str, Any]]], content_type: str = JSON_11
) -> Callable[[str, Any], None]:
    """A client hook answering each HTTP request with the next (status, body) — after the
    request was fully built and signed, so only the network is left out."""
    from botocore.awsrequest import AWSResponse

    queue = list(answers)

    def hook(service: str, client: Any) -> None:
        def send(request: Any, **_: Any) -> Any:
            status, body = queue.pop(0) if len(queue) > 1 else queue[0]
            data = (
                json.dumps(body).encode()
                if isinstance(body, dict)
                else body.encode()
                if isinstance(body, str)
                else body
            )
            return AWSResponse(request.url, status, {"Content-Type": content_type}, _Body(data))

        client.meta.events.register("before-send", send)

    return hook


def token_answer(token: str, expires_at: float | None = None) -> dict[str, Any]:
    """An ECR GetAuthorizationToken JSON body."""
    data: dict[str, Any] = {"authorizationToken": token}
    if expires_at is not None:
        data["expiresAt"] = expires_at
    return {"authorizationData": [data]}


@pytest.fixture
def clients() -> HookedClients:
    return HookedClients()


@pytest.fixture
def wall_clock() -> FakeClock:
    return FakeClock(wall=CLOCK_START_NS / 1e9)


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def logs() -> list[str]:
    return []


@pytest.fixture
def provider(
    clients: HookedClients, wall_clock: FakeClock, sleeps: list[float], logs: list[str]
) -> Callable[..., EcrCredentialProvider]:
    """``provider(env=None, **overrides)``: a provider with hooked clients, a fake wall
    clock, recorded sleeps (never slept) and logs."""

    def make(**overrides: Any) -> EcrCredentialProvider:
        kwargs: dict[str, Any] = {
            "clients": clients,
            "clock": wall_clock,
            "sleep": sleeps.append,
            "log": lambda level, message: logs.append(message),
        }
        kwargs.update(overrides)
        return EcrCredentialProvider(**kwargs)

    return make


def assumed_roles() -> list[tuple[str, str]]:
    from moto.sts.models import sts_backends

    return [
        (role.role_arn, role.session_name)
        for regions in sts_backends.values()
        for backend in regions.values()
        for role in backend.assumed_roles
    ]
