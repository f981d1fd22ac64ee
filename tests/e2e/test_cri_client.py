"""End to end: credprov's CRI client against a real containerd 1.6 (CRI plugin) pulling
from real ``docker-registry`` instances (htpasswd over HTTP, htpasswd over self-signed
TLS, and anonymous).

One containerd and three registries serve the whole module (see tests/e2e/conftest.py);
each test pulls its own repository, so the order of the tests does not matter. Tests that
rotate accounts or stop a registry start their own with ``registry_factory``. The
connection failures (no socket, a plain file, something else listening) need no tool and
always run.
"""

from __future__ import annotations

import base64
import json
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from pathlib import Path

import pytest

from credprov.cri.client import CRIError, CRIRuntime, RuntimeVersion
from credprov.imageauth.keyring import TrackedAuthConfig
from credprov.pullmanager.interfaces import PullError
from tests.conftest import CANARY
from tests.e2e.containerd import Containerd, start_containerd
from tests.e2e.registry import PushedImage, Registry, push_image

pytestmark = pytest.mark.e2e


def creds(registry: Registry, password: str | None = None) -> TrackedAuthConfig:
    """The registry's account as a keyring credential (``password`` overrides it)."""
    username, real = next(iter(registry.users.items()))
    return TrackedAuthConfig(username=username, password=real if password is None else password)


# -- the happy paths ---------------------------------------------------------------------------


def test_version(cri_runtime: CRIRuntime) -> None:
    version = cri_runtime.version()
    assert isinstance(version, RuntimeVersion)
    assert version.runtime_name == "containerd"
    assert version.runtime_api_version == "v1"
    assert version.runtime_version


def test_image_status_of_a_missing_image_is_none(
    cri_runtime: CRIRuntime, auth_registry: Registry
) -> None:
    image = auth_registry.image("absent/app", "v1")
    assert cri_runtime.image_status(image) is None
    assert cri_runtime.image_ref(image) is None
    assert cri_runtime.image_ref("sha256:" + "0" * 64) is None


def test_private_image_needs_credentials(cri_runtime: CRIRuntime, auth_registry: Registry) -> None:
    pushed = push_image(auth_registry, "cri/private")
    password = creds(auth_registry).password

    with pytest.raises(PullError) as anonymous:
        cri_runtime.pull_image(pushed.ref, None)
    message = str(anonymous.value)
    assert "401 Unauthorized" in message
    # cri-client strips "rpc error: code = Unknown desc = " as the kubelet does.
    assert message.startswith(f'failed to pull and unpack image "{pushed.ref}"')
    assert "\n" not in message
    assert cri_runtime.image_ref(pushed.ref) is None

    with pytest.raises(PullError) as wrong:
        cri_runtime.pull_image(pushed.ref, creds(auth_registry, "not-" + password))
    assert "401 Unauthorized" in str(wrong.value)
    assert password not in str(wrong.value)

    ref = cri_runtime.pull_image(pushed.ref, creds(auth_registry))
    assert ref == pushed.image_id
    assert ref.startswith("sha256:")
    assert cri_runtime.image_ref(pushed.ref) == ref


def test_image_status_reports_tags_digests_and_size(
    cri_runtime: CRIRuntime, auth_registry: Registry
) -> None:
    pushed = push_image(auth_registry, "cri/status")
    cri_runtime.pull_image(pushed.ref, creds(auth_registry))
    status = cri_runtime.image_status(pushed.ref)
    assert status is not None
    assert status.id == pushed.image_id
    assert list(status.repo_tags) == [pushed.ref]
    assert list(status.repo_digests) == [pushed.by_digest]
    assert status.size == pushed.size
    # The id and the digest name the same image.
    assert cri_runtime.image_ref(pushed.image_id) == pushed.image_id
    assert cri_runtime.image_ref(pushed.by_digest) == pushed.image_id


def test_pull_by_digest(cri_runtime: CRIRuntime, auth_registry: Registry) -> None:
    pushed = push_image(auth_registry, "cri/bydigest")
    ref = cri_runtime.pull_image(pushed.by_digest, creds(auth_registry))
    assert ref == pushed.image_id
    status = cri_runtime.image_status(pushed.by_digest)
    assert status is not None
    assert list(status.repo_tags) == []  # a by-digest pull adds no tag
    assert list(status.repo_digests) == [pushed.by_digest]
    assert cri_runtime.image_ref(pushed.ref) is None


def test_pull_over_tls_with_the_registry_ca(
    cri_runtime: CRIRuntime, containerd: Containerd, tls_registry: Registry
) -> None:
    pushed = push_image(tls_registry, "cri/tls")
    assert pushed.ref.startswith(tls_registry.address)
    containerd.add_registry(tls_registry)  # hosts.toml: https + the CA
    with pytest.raises(PullError, match="401 Unauthorized"):
        cri_runtime.pull_image(pushed.ref, None)
    assert cri_runtime.pull_image(pushed.ref, creds(tls_registry)) == pushed.image_id


def test_anonymous_registry(cri_runtime: CRIRuntime, anonymous_registry: Registry) -> None:
    pushed = push_image(anonymous_registry, "public/app")
    assert cri_runtime.pull_image(pushed.ref, None) == pushed.image_id


def test_list_images(cri_runtime: CRIRuntime, auth_registry: Registry) -> None:
    pushed = push_image(auth_registry, "cri/listed")
    cri_runtime.pull_image(pushed.ref, creds(auth_registry))
    images = {i.id: i for i in cri_runtime.list_images()}
    assert pushed.image_id in images
    listed = images[pushed.image_id]
    assert pushed.ref in listed.repo_tags
    assert pushed.by_digest in listed.repo_digests
    assert listed.size == pushed.size


def test_remove_image(cri_runtime: CRIRuntime, auth_registry: Registry) -> None:
    pushed = push_image(auth_registry, "cri/removed")
    cri_runtime.pull_image(pushed.ref, creds(auth_registry))
    cri_runtime.remove_image(pushed.ref)
    assert cri_runtime.image_ref(pushed.ref) is None
    assert cri_runtime.image_ref(pushed.by_digest) is None
    assert pushed.image_id not in {i.id for i in cri_runtime.list_images()}
    cri_runtime.remove_image(pushed.ref)  # idempotent
    cri_runtime.remove_image(pushed.image_id)


def test_image_fs_info(cri_runtime: CRIRuntime) -> None:
    filesystems = cri_runtime.image_fs_info()
    assert filesystems
    assert "snapshotter" in str(filesystems[0]["mountpoint"])


def test_status_and_list_make_no_registry_round_trip(
    cri_runtime: CRIRuntime, auth_registry: Registry
) -> None:
    pushed = push_image(auth_registry, "cri/local")
    mark = auth_registry.request_count()
    cri_runtime.pull_image(pushed.ref, creds(auth_registry))
    pulled = auth_registry.wait_for_requests(since=mark)
    assert any(r.path == "/v2/cri/local/manifests/v1" for r in pulled)

    mark = auth_registry.request_count()
    cri_runtime.image_ref(pushed.ref)
    cri_runtime.image_status(pushed.by_digest)
    cri_runtime.list_images()
    time.sleep(0.05)  # the log line follows the response: give a stray one time to land
    assert auth_registry.requests(since=mark) == []


def test_credentials_are_not_cached_by_the_runtime(
    cri_runtime: CRIRuntime, auth_registry: Registry
) -> None:
    """A present image pulled again without credentials is still refused: containerd asks
    the registry on every PullImage (why the kubelet checks presence with ImageStatus)."""
    pushed = push_image(auth_registry, "cri/present")
    cri_runtime.pull_image(pushed.ref, creds(auth_registry))
    with pytest.raises(PullError, match="401 Unauthorized"):
        cri_runtime.pull_image(pushed.ref, None)


# -- rotation, a registry down, and secrets ----------------------------------------------------


def test_rotated_password(
    cri_runtime: CRIRuntime, registry_factory: Callable[..., Registry]
) -> None:
    registry = registry_factory({"rotating": "old-" + CANARY})
    pushed = push_image(registry, "cri/rotated")
    old = TrackedAuthConfig("rotating", "old-" + CANARY)
    assert cri_runtime.pull_image(pushed.ref, old) == pushed.image_id

    registry.set_users({"rotating": "new-" + CANARY})
    with pytest.raises(PullError, match="401 Unauthorized") as refused:
        cri_runtime.pull_image(pushed.ref, old)
    assert CANARY not in str(refused.value)
    new = TrackedAuthConfig("rotating", "new-" + CANARY)
    assert cri_runtime.pull_image(pushed.ref, new) == pushed.image_id


def test_registry_down_and_back(
    cri_runtime: CRIRuntime, registry_factory: Callable[..., Registry]
) -> None:
    registry = registry_factory()
    pushed = push_image(registry, "cri/flaky")
    with registry.down():
        with pytest.raises(PullError) as down:
            cri_runtime.pull_image(pushed.ref, creds(registry))
        assert "connection refused" in str(down.value)
    assert registry.running()
    assert cri_runtime.pull_image(pushed.ref, creds(registry)) == pushed.image_id


def test_canary_password_never_in_an_error(
    cri_runtime: CRIRuntime, registry_factory: Callable[..., Registry]
) -> None:
    registry = registry_factory({"canary-user": "real-password-" + CANARY[::-1]})
    pushed = push_image(registry, "cri/canary")
    canary = TrackedAuthConfig("canary-user", CANARY)
    basic = base64.b64encode(f"canary-user:{CANARY}".encode()).decode()
    messages = []
    for image in (pushed.ref, pushed.by_digest, registry.image("cri/missing"), "Bad Name"):
        with pytest.raises(PullError) as exc:
            cri_runtime.pull_image(image, canary)
        messages.append(str(exc.value))
    with registry.down(), pytest.raises(PullError) as exc:
        cri_runtime.pull_image(pushed.ref, canary)
    messages.append(str(exc.value))
    messages.append(repr(canary))
    for message in messages:
        assert CANARY not in message
        assert basic not in message
        assert "\n" not in message


# -- the runtime itself unreachable ------------------------------------------------------------


@pytest.fixture
def sockdir() -> Iterator[Path]:
    """A short private directory for unix sockets (pytest's tmp_path can be too long)."""
    import shutil

    path = Path(tempfile.mkdtemp(prefix="cp-cri-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def connect_error(endpoint: str, timeout: float = 2.0) -> tuple[CRIError, float]:
    start = time.monotonic()
    with pytest.raises(CRIError) as exc:
        CRIRuntime(endpoint, timeout=timeout)
    return exc.value, time.monotonic() - start


def test_missing_socket(sockdir: Path) -> None:
    error, took = connect_error(f"unix://{sockdir}/absent.sock")
    assert str(error) == "no such socket (is the container runtime running?)"
    assert took < 1


def test_plain_file_is_not_a_socket(sockdir: Path) -> None:
    (sockdir / "file.sock").write_text("")
    error, took = connect_error(str(sockdir / "file.sock"))
    assert str(error) == "not a unix socket"
    assert took < 1


def test_nothing_listening(sockdir: Path) -> None:
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(sockdir / "stale.sock"))
    stale.close()  # the file stays, nobody accepts
    error, took = connect_error(f"unix://{sockdir}/stale.sock")
    assert (
        str(error)
        == "cannot reach the runtime: connection refused: nothing is listening on the socket"
    )
    assert error.code == "Unavailable"
    assert took < 2


def _serve(listener: socket.socket, answer: bytes | None) -> None:
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        with conn:
            if answer is not None:
                conn.recv(4096)
                conn.sendall(answer)


@pytest.mark.parametrize(
    ("answer", "want"),
    [
        pytest.param(
            b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            "cannot reach the runtime: not a gRPC server (the socket does not speak HTTP/2)",
            id="http1-server",
        ),
        pytest.param(
            None,
            "cannot reach the runtime: the socket closed the connection "
            "(is this a CRI runtime's socket?)",
            id="closes-at-once",
        ),
    ],
)
def test_something_else_listening(sockdir: Path, answer: bytes | None, want: str) -> None:
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(sockdir / "other.sock"))
    listener.listen(8)
    threading.Thread(target=_serve, args=(listener, answer), daemon=True).start()
    try:
        error, took = connect_error(f"unix://{sockdir}/other.sock")
    finally:
        listener.close()
    assert str(error) == want
    assert took < 2


def test_silent_listener_times_out(sockdir: Path) -> None:
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(sockdir / "silent.sock"))
    listener.listen(8)  # accepts into the backlog, never answers
    try:
        error, took = connect_error(f"unix://{sockdir}/silent.sock", timeout=0.3)
    finally:
        listener.close()
    assert str(error) == (
        "RuntimeService.Version: no answer within 0.3s (is this a CRI runtime's socket?)"
    )
    assert took < 2


def test_grpc_server_without_cri_v1(sockdir: Path) -> None:
    import grpc

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    server.add_insecure_port(f"unix://{sockdir}/grpc.sock")
    server.start()
    try:
        error, took = connect_error(f"unix://{sockdir}/grpc.sock")
    finally:
        server.stop(0)
    assert str(error) == (
        "RuntimeService.Version: the runtime does not implement the CRI runtime.v1 API "
        "(unimplemented)"
    )
    assert error.code == "Unimplemented"
    assert took < 2


def test_runtime_gone_mid_session(auth_registry: Registry) -> None:
    """containerd stops under a connected client: calls fail with CRIError, not PullError
    (the runtime's trouble, not the registry's), one line, quickly."""
    pushed: PushedImage = push_image(auth_registry, "cri/gone")
    with start_containerd() as ctrd:
        runtime = CRIRuntime(ctrd.endpoint, timeout=2, pull_timeout=2)
        ctrd.stop()
    try:
        for call in (
            lambda: runtime.pull_image(pushed.ref, creds(auth_registry)),
            lambda: runtime.image_ref(pushed.ref),
            runtime.list_images,
            runtime.version,
        ):
            start = time.monotonic()
            with pytest.raises(CRIError) as exc:
                call()
            assert time.monotonic() - start < 3
            assert exc.value.code in ("Unavailable", "DeadlineExceeded")
            assert "\n" not in str(exc.value)
    finally:
        runtime.close()
    with pytest.raises(CRIError, match="closed"):
        runtime.list_images()


# -- a drop-in for FakeRuntime ----------------------------------------------------------------


def test_ensure_image_with_a_real_runtime(
    cri_runtime: CRIRuntime, auth_registry: Registry, tmp_path: Path
) -> None:
    """KEP-2535 on a real runtime: pod A's pull secret pulls the image; pod B, with no
    secret, finds it present but must pull itself, and the registry refuses it."""
    from credprov.credentialprovider.chain import PodInfo
    from credprov.kubelet.ensure import Container, EnsureImage
    from credprov.pullmanager import ImagePullManager

    pushed = push_image(auth_registry, "cri/ensure")
    username, password = next(iter(auth_registry.users.items()))
    auth = base64.b64encode(f"{username}:{password}".encode()).decode()
    docker_config = {"auths": {auth_registry.address: {"auth": auth}}}
    secret = {
        "metadata": {"namespace": "ns", "name": "regcred", "uid": "uid-1"},
        "type": "kubernetes.io/dockerconfigjson",
        "data": {
            ".dockerconfigjson": base64.b64encode(json.dumps(docker_config).encode()).decode()
        },
    }
    manager = ImagePullManager(tmp_path, "NeverVerifyPreloadedImages", runtime=cri_runtime)
    engine = EnsureImage(cri_runtime, manager)
    container = Container(pushed.ref, "IfNotPresent")

    a = engine.ensure_image_exists(PodInfo("ns", "a", "uid-a"), container, [secret])
    assert (a.error, a.pulled, a.image_ref) == (None, True, pushed.image_id)

    b = engine.ensure_image_exists(PodInfo("ns", "b", "uid-b"), container)
    assert b.present_locally is True
    assert b.pull_required is True
    assert b.error == "ErrImagePull"
    assert "401 Unauthorized" in b.message
    assert password not in b.message
