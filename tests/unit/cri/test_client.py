"""The CRI client without containerd: endpoint parsing, the AuthConfig the kubelet sends,
and how the runtime's answers become credprov errors, against an in-process gRPC server
that implements ``runtime.v1`` with canned answers. The real runtime is in
tests/e2e/test_cri_client.py."""

from __future__ import annotations

import base64
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from credprov.cri.client import (
    CRIError,
    CRIRuntime,
    auth_config,
    format_grpc_error,
    parse_endpoint,
    pull_image_request,
)
from credprov.imageauth.keyring import TrackedAuthConfig
from credprov.pullmanager.interfaces import PullError
from tests.conftest import CANARY

grpc = pytest.importorskip("grpc")
api_pb2 = pytest.importorskip("cri_api.v1.api_pb2")
api_pb2_grpc = pytest.importorskip("cri_api.v1.api_pb2_grpc")

# -- parse_endpoint ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("endpoint", "target"),
    [
        ("unix:///run/containerd/containerd.sock", "unix:///run/containerd/containerd.sock"),
        ("/run/crio/crio.sock", "unix:///run/crio/crio.sock"),  # the kubelet's fallback
        ("unix:///var/run/a b/cri.sock", "unix:///var/run/a%20b/cri.sock"),
        ("unix:///run/x%y.sock", "unix:///run/x%25y.sock"),
        ("  unix:///run/x.sock\n", "unix:///run/x.sock"),
    ],
)
def test_parse_endpoint(endpoint: str, target: str) -> None:
    assert parse_endpoint(endpoint) == target


@pytest.mark.parametrize(
    ("endpoint", "message"),
    [
        ("", "empty CRI endpoint: want unix:///path/to/socket"),
        (
            "tcp://127.0.0.1:1234",
            "CRI endpoint 'tcp://127.0.0.1:1234': protocol 'tcp' not supported, only unix "
            "sockets are (want unix:///path/to/socket)",
        ),
        (
            "npipe:////./pipe/containerd-containerd",
            "CRI endpoint 'npipe:////./pipe/containerd-containerd': protocol 'npipe' not "
            "supported, only unix sockets are (want unix:///path/to/socket)",
        ),
        (
            "unix://run/containerd.sock",
            "CRI endpoint 'unix://run/containerd.sock': the socket path must be absolute "
            "(want unix:///path/to/socket)",
        ),
        ("containerd.sock", "CRI endpoint 'containerd.sock': want unix:///path/to/socket"),
        (
            "unix:///" + "d" * 120,
            f"CRI endpoint 'unix:///{'d' * 120}': socket path longer than 107 bytes",
        ),
    ],
)
def test_parse_endpoint_refuses(endpoint: str, message: str) -> None:
    with pytest.raises(CRIError) as exc:
        parse_endpoint(endpoint)
    assert str(exc.value) == message


# -- the AuthConfig ----------------------------------------------------------------------------


def test_auth_config_is_username_and_password_only() -> None:
    cred = TrackedAuthConfig(
        username="robot", password=CANARY, email="a@b.c", key="registry.example.com"
    )
    config = auth_config(cred)
    assert config is not None
    assert (config.username, config.password) == ("robot", CANARY)
    # No server_address: containerd drops credentials whose address does not match the
    # image's host, and the kubelet has none for a keyring entry. No email in the CRI.
    assert (config.auth, config.server_address) == ("", "")
    assert (config.identity_token, config.registry_token) == ("", "")


def test_anonymous_pull_sends_no_auth_at_all() -> None:
    assert auth_config(None) is None
    request = pull_image_request("registry.example.com/app:v1", None)
    assert request.image.image == "registry.example.com/app:v1"
    assert not request.HasField("auth")
    assert not request.HasField("sandbox_config")
    with_creds = pull_image_request("registry.example.com/app:v1", TrackedAuthConfig("u", "p"))
    assert with_creds.HasField("auth")
    assert with_creds.auth.username == "u"


def test_format_grpc_error() -> None:
    assert (
        format_grpc_error("NotFound", "x: not found")
        == "rpc error: code = NotFound desc = x: not found"
    )


def test_cri_error_is_one_line() -> None:
    assert str(CRIError("a\n  b\n\nc", "Unknown")) == "a b c"


def test_importing_the_client_does_not_import_grpc() -> None:
    code = (
        "import sys, credprov.cri.client, credprov.kubelet.ensure;"
        "print('grpc' in sys.modules, 'cri_api' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.split() == ["False", "False"]


def test_missing_extra_is_a_cri_error(monkeypatch: pytest.MonkeyPatch, sockdir: Path) -> None:
    sock = sockdir / "fake.sock"
    import socket

    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(sock))
    monkeypatch.setitem(sys.modules, "grpc", None)
    try:
        with pytest.raises(CRIError) as exc:
            CRIRuntime(f"unix://{sock}")
        assert str(exc.value).startswith(
            "the CRI client needs the 'cri' extra (pip install 'credprov[cri]'): "
        )
        with pytest.raises(CRIError):
            auth_config(TrackedAuthConfig("u", "p"))
    finally:
        listener.close()


# -- an in-process runtime.v1 server -----------------------------------------------------------


@dataclass
class Answer:
    """What the fake answers: a value, or a gRPC status code name and details."""

    value: Any = None
    code: str | None = None
    details: str = ""


@dataclass
class FakeCRI:
    """RuntimeService.Version and the ImageService calls, with canned answers."""

    pull: Answer = field(default_factory=lambda: Answer("sha256:" + "a" * 64))
    status: Answer = field(default_factory=Answer)
    remove: Answer = field(default_factory=Answer)
    pulls: list[Any] = field(default_factory=list)

    def _answer(self, answer: Answer, context: Any) -> Any:
        if answer.code is not None:
            context.abort(getattr(grpc.StatusCode, answer.code), answer.details)
        return answer.value

    # RuntimeService
    def Version(self, request: Any, context: Any) -> Any:
        return api_pb2.VersionResponse(
            version="0.1.0", runtime_name="fake", runtime_version="9.9", runtime_api_version="v1"
        )

    # ImageService
    def PullImage(self, request: Any, context: Any) -> Any:
        self.pulls.append(request)
        return api_pb2.PullImageResponse(image_ref=self._answer(self.pull, context) or "")

    def ImageStatus(self, request: Any, context: Any) -> Any:
        image = self._answer(self.status, context)
        return api_pb2.ImageStatusResponse(image=image) if image else api_pb2.ImageStatusResponse()

    def RemoveImage(self, request: Any, context: Any) -> Any:
        self._answer(self.remove, context)
        return api_pb2.RemoveImageResponse()

    def ListImages(self, request: Any, context: Any) -> Any:
        return api_pb2.ListImagesResponse(
            images=[api_pb2.Image(id="sha256:" + "b" * 64, repo_tags=["r/x:1"], size=5)]
        )


@pytest.fixture
def sockdir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="cp-cri-"))  # short: unix socket paths
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def fake(sockdir: Path) -> Iterator[tuple[FakeCRI, CRIRuntime]]:
    servicer = FakeCRI()

    # The generated servicers answer Unimplemented for every method we do not override.
    runtime_servicer = type(
        "Runtime",
        (api_pb2_grpc.RuntimeServiceServicer,),
        {"Version": staticmethod(servicer.Version)},
    )()
    image_servicer = type(
        "Images",
        (api_pb2_grpc.ImageServiceServicer,),
        {
            name: staticmethod(getattr(servicer, name))
            for name in ("PullImage", "ImageStatus", "RemoveImage", "ListImages")
        },
    )()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    api_pb2_grpc.add_RuntimeServiceServicer_to_server(runtime_servicer, server)
    api_pb2_grpc.add_ImageServiceServicer_to_server(image_servicer, server)
    server.add_insecure_port(f"unix://{sockdir}/cri.sock")
    server.start()
    try:
        with CRIRuntime(str(sockdir / "cri.sock"), timeout=5) as runtime:
            yield servicer, runtime
    finally:
        server.stop(0)


def test_version(fake: tuple[FakeCRI, CRIRuntime]) -> None:
    _, runtime = fake
    version = runtime.version()
    assert (version.runtime_name, version.runtime_version) == ("fake", "9.9")
    assert version.runtime_api_version == "v1"


def test_pull_sends_what_the_kubelet_sends(fake: tuple[FakeCRI, CRIRuntime]) -> None:
    servicer, runtime = fake
    cred = TrackedAuthConfig("robot", CANARY, email="x@y.z")
    assert runtime.pull_image("r.example/app:v1", cred) == "sha256:" + "a" * 64
    assert runtime.pull_image("r.example/app:v1", None) == "sha256:" + "a" * 64
    with_creds, anonymous = servicer.pulls
    assert with_creds.image.image == "r.example/app:v1"
    assert (with_creds.auth.username, with_creds.auth.password) == ("robot", CANARY)
    assert with_creds.auth.server_address == ""
    assert not anonymous.HasField("auth")


@pytest.mark.parametrize(
    ("code", "details", "message"),
    [
        # cri-client strips the code of Unknown statuses (and only those).
        ("UNKNOWN", "failed to pull: 401 Unauthorized", "failed to pull: 401 Unauthorized"),
        (
            "UNKNOWN",
            "RegistryUnavailable: dial tcp: connection refused",
            "RegistryUnavailable: dial tcp: connection refused",
        ),
        ("NOT_FOUND", "r/x:v1: not found", "rpc error: code = NotFound desc = r/x:v1: not found"),
        (
            "PERMISSION_DENIED",
            "signature policy",
            "rpc error: code = PermissionDenied desc = signature policy",
        ),
        ("UNKNOWN", "multi\nline\n  error", "multi line error"),
    ],
)
def test_pull_errors_read_as_the_kubelets(
    fake: tuple[FakeCRI, CRIRuntime], code: str, details: str, message: str
) -> None:
    servicer, runtime = fake
    servicer.pull = Answer(code=code, details=details)
    with pytest.raises(PullError) as exc:
        runtime.pull_image("r/x:v1", TrackedAuthConfig("u", "s3cr3t-pw"))
    assert str(exc.value) == message


def test_pull_error_never_echoes_the_password(fake: tuple[FakeCRI, CRIRuntime]) -> None:
    servicer, runtime = fake
    basic = base64.b64encode(f"robot:{CANARY}".encode()).decode()
    servicer.pull = Answer(code="UNKNOWN", details=f"bad creds {CANARY} (auth {basic})")
    with pytest.raises(PullError) as exc:
        runtime.pull_image("r/x:v1", TrackedAuthConfig("robot", CANARY))
    assert str(exc.value) == "bad creds <redacted> (auth <redacted>)"


def test_registry_unavailable_reaches_the_image_manager(
    fake: tuple[FakeCRI, CRIRuntime],
) -> None:
    from credprov.credentialprovider.chain import PodInfo
    from credprov.kubelet.ensure import ERR_REGISTRY_UNAVAILABLE, Container, EnsureImage

    servicer, runtime = fake
    servicer.pull = Answer(code="UNKNOWN", details="RegistryUnavailable: connection refused")
    result = EnsureImage(runtime).ensure_image_exists(PodInfo(), Container("r/x:v1", "Always"))
    assert result.error == ERR_REGISTRY_UNAVAILABLE
    assert result.message == (
        "image pull failed for r/x:v1 because the registry is unavailable: connection refused"
    )


def test_empty_image_ref_is_a_pull_error(fake: tuple[FakeCRI, CRIRuntime]) -> None:
    servicer, runtime = fake
    servicer.pull = Answer("")
    with pytest.raises(PullError) as exc:
        runtime.pull_image("r/x:v1", None)
    assert str(exc.value) == 'imageRef of image "r/x:v1" is not set'


def test_image_status(fake: tuple[FakeCRI, CRIRuntime]) -> None:
    servicer, runtime = fake
    assert runtime.image_status("r/x:v1") is None
    assert runtime.image_ref("r/x:v1") is None
    servicer.status = Answer(
        api_pb2.Image(id="sha256:" + "c" * 64, repo_tags=["r/x:v1"], repo_digests=["r/x@d"], size=7)
    )
    found = runtime.image_status("r/x:v1")
    assert found is not None
    assert (found.id, tuple(found.repo_tags), tuple(found.repo_digests), found.size) == (
        "sha256:" + "c" * 64,
        ("r/x:v1",),
        ("r/x@d",),
        7,
    )
    assert runtime.image_ref("r/x:v1") == "sha256:" + "c" * 64
    servicer.status = Answer(code="INTERNAL", details="boom")
    with pytest.raises(CRIError) as exc:
        runtime.image_ref("r/x:v1")
    assert str(exc.value) == "rpc error: code = Internal desc = boom"
    assert exc.value.code == "Internal"


def test_list_images(fake: tuple[FakeCRI, CRIRuntime]) -> None:
    _, runtime = fake
    (image,) = runtime.list_images()
    assert (image.id, tuple(image.repo_tags), image.size) == ("sha256:" + "b" * 64, ("r/x:1",), 5)


def test_remove_image_is_idempotent(fake: tuple[FakeCRI, CRIRuntime]) -> None:
    servicer, runtime = fake
    runtime.remove_image("r/x:v1")
    servicer.remove = Answer(code="NOT_FOUND", details="no such image")
    runtime.remove_image("r/x:v1")
    servicer.remove = Answer(code="FAILED_PRECONDITION", details="image is in use")
    with pytest.raises(CRIError, match="image is in use"):
        runtime.remove_image("r/x:v1")


def test_unimplemented_image_call(fake: tuple[FakeCRI, CRIRuntime]) -> None:
    _, runtime = fake
    with pytest.raises(CRIError) as exc:
        runtime.image_fs_info()  # the fake does not implement it
    assert str(exc.value) == (
        "ImageService.ImageFsInfo: rpc error: code = Unimplemented desc = Method not implemented!"
    )


def test_closed_client(fake: tuple[FakeCRI, CRIRuntime]) -> None:
    _, runtime = fake
    runtime.close()
    runtime.close()
    for call in (runtime.list_images, runtime.version, lambda: runtime.pull_image("r/x", None)):
        with pytest.raises(CRIError, match="the CRI client is closed"):
            call()
