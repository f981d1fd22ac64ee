"""A client of a container runtime's CRI ``ImageService`` (``runtime.v1`` over gRPC).

Speaks to containerd, CRI-O or any runtime the kubelet can use, over the unix socket the
kubelet's ``--container-runtime-endpoint`` names, and behaves as the kubelet's remote
image service (``k8s.io/cri-client``, ``remote_image.go``) does:

* the connection is validated with ``RuntimeService.Version``; a runtime answering
  ``Unimplemented`` speaks only an older API (``v1alpha2``) and is refused, as the kubelet
  refuses it since 1.26;
* ``PullImage`` carries the credential the way ``kuberuntime_image.go`` builds
  ``runtimeapi.AuthConfig`` from a keyring entry: username and password only (a docker
  config entry has no server address or token; containerd would drop the credential if a
  server address did not match the image's host), and no ``auth`` at all for an anonymous
  pull;
* a failed pull whose gRPC status is ``Unknown`` reads as the runtime's bare message, every
  other status as Go's ``rpc error: code = NotFound desc = ...``, exactly the text the
  kubelet puts in its ``Failed to pull image`` event and tests against
  ``RegistryUnavailable``; an empty ``image_ref`` is an error, as upstream;
* ``ImageStatus`` with no ``image`` means "not present", and ``image_ref`` is its id
  (``GetImageRef``); ``RemoveImage`` of a missing image is not an error.

grpc and the generated ``runtime.v1`` stubs (the ``cri`` extra: grpcio and
``container-runtime-interface-api``) are imported when a client is created, never when
credprov is, so plugin executables and the rest of the CLI do not pay for them.

Errors: :class:`CRIError` (one line) when the runtime cannot be reached or answers an
RPC other than ``PullImage`` with an error; :class:`credprov.testing.runtime.PullError`
when a pull fails. Neither ever contains the password that was sent.
"""

from __future__ import annotations

import base64
import os
import re
import stat
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType, TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from credprov.base.redact import Redactor
from credprov.errors import CredprovError
from credprov.imageauth.keyring import TrackedAuthConfig
from credprov.pullmanager.interfaces import PullError, RuntimeImage

if TYPE_CHECKING:
    from cri_api.v1 import api_pb2

__all__ = [
    "CRIError",
    "CRIRuntime",
    "RuntimeVersion",
    "auth_config",
    "format_grpc_error",
    "parse_endpoint",
    "pull_image_request",
]

#: The kubelet's gRPC message cap for the CRI (``maxMsgSize`` in cri-client): 16 MiB.
MAX_MESSAGE_SIZE = 16 * 1024 * 1024

#: Unix socket paths are limited by ``sun_path`` (108 bytes on Linux, NUL included).
MAX_SOCKET_PATH = 107

#: Python's ``grpc.StatusCode`` names -> Go's ``codes.Code.String()``, which is what the
#: kubelet's messages (``rpc error: code = NotFound desc = ...``) show.
_GO_CODE_NAMES = {
    "OK": "OK",
    "CANCELLED": "Canceled",
    "UNKNOWN": "Unknown",
    "INVALID_ARGUMENT": "InvalidArgument",
    "DEADLINE_EXCEEDED": "DeadlineExceeded",
    "NOT_FOUND": "NotFound",
    "ALREADY_EXISTS": "AlreadyExists",
    "PERMISSION_DENIED": "PermissionDenied",
    "RESOURCE_EXHAUSTED": "ResourceExhausted",
    "FAILED_PRECONDITION": "FailedPrecondition",
    "ABORTED": "Aborted",
    "OUT_OF_RANGE": "OutOfRange",
    "UNIMPLEMENTED": "Unimplemented",
    "INTERNAL": "Internal",
    "UNAVAILABLE": "Unavailable",
    "DATA_LOSS": "DataLoss",
    "UNAUTHENTICATED": "Unauthenticated",
}

#: Statuses that say the runtime itself could not be talked to (not what it thinks of the
#: request): they are :class:`CRIError` even for ``PullImage``.
_TRANSPORT_CODES = frozenset({"Unavailable", "DeadlineExceeded", "Canceled"})

_T = TypeVar("_T")


class CRIError(CredprovError):
    """The runtime could not be reached, does not speak ``runtime.v1``, or refused a
    request other than a pull. ``str()`` is one line and never holds a password;
    ``code`` is the Go name of the gRPC status (``Unavailable``, ...) when there was one."""

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(_one_line(message))
        self.code = code


@dataclass(frozen=True)
class RuntimeVersion:
    """``RuntimeService.Version``: who answers on the socket."""

    runtime_name: str
    runtime_version: str
    runtime_api_version: str


# -- pure helpers (no grpc needed) --------------------------------------------------------------


def parse_endpoint(endpoint: str) -> str:
    """The gRPC target (``unix:///abs/path``) of a kubelet ``--container-runtime-endpoint``.

    Accepts ``unix:///abs/path`` and, like the kubelet's fallback, a bare absolute path.

    Raises:
        CRIError: another scheme (``tcp://``, ``npipe://``), a relative or empty path, or
            a path longer than a unix socket address can hold.
    """
    value = endpoint.strip()
    if not value:
        raise CRIError("empty CRI endpoint: want unix:///path/to/socket")
    if value.startswith("unix://"):
        path = value[len("unix://") :]
    elif value.startswith("/"):
        path = value
    else:
        scheme, sep, _ = value.partition("://")
        if sep:
            raise CRIError(
                f"CRI endpoint {endpoint!r}: protocol {scheme!r} not supported, only unix "
                "sockets are (want unix:///path/to/socket)"
            )
        raise CRIError(f"CRI endpoint {endpoint!r}: want unix:///path/to/socket")
    if not path.startswith("/"):
        raise CRIError(
            f"CRI endpoint {endpoint!r}: the socket path must be absolute "
            "(want unix:///path/to/socket)"
        )
    if len(os.fsencode(path)) > MAX_SOCKET_PATH:
        raise CRIError(
            f"CRI endpoint {endpoint!r}: socket path longer than {MAX_SOCKET_PATH} bytes"
        )
    # grpc percent-decodes the target's path; keep "/" and the usual path characters.
    return "unix://" + urllib.parse.quote(path, safe="/-._~:@+,=")


def _socket_path(target: str) -> str:
    return urllib.parse.unquote(target[len("unix://") :])


def _one_line(message: str) -> str:
    return " ".join(part.strip() for part in str(message).splitlines() if part.strip())


def _secrets_of(auth: TrackedAuthConfig | None) -> list[str]:
    """The strings that must never appear in an error: the password and the base64
    ``auth`` forms a runtime might echo. Scrubbed however short: a mangled word in an
    error is better than a leaked password."""
    if auth is None or not auth.password:
        return []
    pair = f"{auth.username}:{auth.password}".encode()
    return [
        base64.b64encode(pair).decode(),
        base64.urlsafe_b64encode(pair).decode(),
        auth.password,
    ]


def _scrub(message: str, secrets: list[str]) -> str:
    return _one_line(Redactor(secrets)(message))


def format_grpc_error(code: str, details: str) -> str:
    """Go's ``status.Error(...).Error()``: ``rpc error: code = <Code> desc = <details>``."""
    return f"rpc error: code = {code} desc = {details}"


def _stubs() -> tuple[ModuleType, ModuleType, ModuleType]:
    """(grpc, api_pb2, api_pb2_grpc), imported on first use.

    Raises:
        CRIError: the ``cri`` extra is not installed.
    """
    try:
        import grpc
        from cri_api.v1 import api_pb2, api_pb2_grpc
    except ImportError as exc:
        raise CRIError(
            f"the CRI client needs the 'cri' extra (pip install 'credprov[cri]'): {exc}"
        ) from None
    return grpc, api_pb2, api_pb2_grpc


def auth_config(auth: TrackedAuthConfig | None) -> api_pb2.AuthConfig | None:
    """The ``runtimeapi.AuthConfig`` the kubelet sends for ``auth`` (None: anonymous).

    ``kuberuntime_image.go`` copies ``Username``, ``Password``, ``Auth``,
    ``ServerAddress``, ``IdentityToken`` and ``RegistryToken`` from the keyring's
    ``AuthConfig``; a keyring entry (pull secret, node config or plugin answer) only ever
    fills the first two, and the email is not part of the CRI message.
    """
    if auth is None:
        return None
    _, pb, _ = _stubs()
    config: api_pb2.AuthConfig = pb.AuthConfig(username=auth.username, password=auth.password)
    return config


def pull_image_request(image: str, auth: TrackedAuthConfig | None) -> api_pb2.PullImageRequest:
    """``PullImageRequest{Image: {Image: image}, Auth: auth}``; no ``auth`` field at all
    for an anonymous pull, and no sandbox config (there is no pod sandbox)."""
    _, pb, _ = _stubs()
    config = auth_config(auth)
    spec = pb.ImageSpec(image=image)
    if config is None:
        request: api_pb2.PullImageRequest = pb.PullImageRequest(image=spec)
    else:
        request = pb.PullImageRequest(image=spec, auth=config)
    return request


def _runtime_image(image: api_pb2.Image) -> RuntimeImage:
    return RuntimeImage(
        id=image.id,
        repo_tags=tuple(image.repo_tags),
        repo_digests=tuple(image.repo_digests),
        size=int(image.size),
    )


#: grpc's connection failure text: ``failed to connect to all addresses; last error:
#: UNAVAILABLE: unix:/run/x.sock: Connection refused``; the part after the address.
_LAST_ERROR = re.compile(r"last error: [A-Z_]+: (?:unix:\S+: )?(?P<reason>.*)$")


def _connect_reason(details: str) -> str:
    """A short reason for a failed connection, from grpc's wordy text."""
    match = _LAST_ERROR.search(details)
    reason = match["reason"] if match else details
    lowered = reason.lower()
    if "connection refused" in lowered:
        return "connection refused: nothing is listening on the socket"
    if "no such file" in lowered:
        return "no such socket"
    if "permission denied" in lowered:
        return "permission denied"
    if "http1" in lowered or "http/2" in lowered:
        return "not a gRPC server (the socket does not speak HTTP/2)"
    if any(w in lowered for w in ("reset by peer", "broken pipe", "closed", "end of file")):
        return "the socket closed the connection (is this a CRI runtime's socket?)"
    return reason or "unavailable"


# -- the client -------------------------------------------------------------------------------


class CRIRuntime:
    """The CRI ``ImageService`` of the runtime at ``endpoint``; an
    :class:`credprov.testing.runtime.ImageService`, so a drop-in for ``FakeRuntime``.

    Args:
        endpoint: ``unix:///abs/path`` (or the bare path) of the runtime's CRI socket.
        timeout: seconds for every call but ``PullImage`` (also the connection check).
        pull_timeout: seconds for one ``PullImage``.

    Raises:
        CRIError: bad endpoint, no socket, nothing listening, not a CRI ``runtime.v1``
            server, or the ``cri`` extra missing.

    Thread-safe (one gRPC channel, shared). Use as a context manager or call
    :meth:`close`.
    """

    def __init__(
        self, endpoint: str, *, timeout: float = 10.0, pull_timeout: float = 300.0
    ) -> None:
        self.endpoint = endpoint
        self.target = parse_endpoint(endpoint)
        self.timeout = timeout
        self.pull_timeout = pull_timeout
        self._channel: Any = None
        self._check_socket(_socket_path(self.target))
        grpc, pb, pb_grpc = _stubs()
        self._grpc = grpc
        self._pb = pb
        self._channel = grpc.insecure_channel(
            self.target,
            options=[
                ("grpc.max_receive_message_length", MAX_MESSAGE_SIZE),
                ("grpc.max_send_message_length", MAX_MESSAGE_SIZE),
                ("grpc.enable_http_proxy", 0),
            ],
        )
        self._runtime_stub = pb_grpc.RuntimeServiceStub(self._channel)
        self._image_stub = pb_grpc.ImageServiceStub(self._channel)
        try:
            self._version = self._fetch_version()
        except BaseException:
            self.close()
            raise

    @staticmethod
    def _check_socket(path: str) -> None:
        """Clear errors for the usual mistakes before grpc words them vaguely."""
        try:
            mode = os.stat(path).st_mode
        except FileNotFoundError:
            raise CRIError("no such socket (is the container runtime running?)") from None
        except PermissionError:
            raise CRIError("permission denied (the CRI socket is usually root's)") from None
        except OSError as exc:
            raise CRIError(f"cannot use the socket: {exc.strerror or exc}") from None
        if not stat.S_ISSOCK(mode):
            raise CRIError("not a unix socket")

    # -- plumbing --

    def _check_open(self) -> None:
        if self._channel is None:
            raise CRIError("the CRI client is closed")

    def _call(self, name: str, stub_method: Callable[..., _T], request: Any, timeout: float) -> _T:
        """Call one RPC; every gRPC failure becomes a one-line :class:`CRIError`."""
        self._check_open()
        try:
            return stub_method(request, timeout=timeout)
        except self._grpc.RpcError as exc:
            raise self._error(name, exc, timeout, []) from None

    def _status(self, exc: Any) -> tuple[str, str]:
        """(Go code name, details) of a grpc error."""
        code = exc.code() if callable(getattr(exc, "code", None)) else None
        name = getattr(code, "name", "UNKNOWN") or "UNKNOWN"
        details = exc.details() if callable(getattr(exc, "details", None)) else ""
        return _GO_CODE_NAMES.get(name, "Unknown"), details or ""

    def _error(self, name: str, exc: Any, timeout: float, secrets: list[str]) -> CRIError:
        code, details = self._status(exc)
        details = _scrub(details, secrets)
        if code == "Unavailable":
            return CRIError(f"cannot reach the runtime: {_connect_reason(details)}", code)
        if code == "DeadlineExceeded":
            return CRIError(f"{name}: no answer from the runtime within {timeout:g}s", code)
        if code == "Unimplemented":
            return CRIError(f"{name}: {format_grpc_error(code, details)}", code)
        return CRIError(format_grpc_error(code, details), code)

    def _fetch_version(self) -> RuntimeVersion:
        self._check_open()
        try:
            resp = self._runtime_stub.Version(
                self._pb.VersionRequest(version="v1"), timeout=self.timeout
            )
        except self._grpc.RpcError as exc:
            code, _ = self._status(exc)
            if code == "Unimplemented":
                # The kubelet's validateServiceConnection: the v1 service is not there.
                raise CRIError(
                    "RuntimeService.Version: the runtime does not implement the CRI "
                    "runtime.v1 API (unimplemented)",
                    code,
                ) from None
            if code == "DeadlineExceeded":
                raise CRIError(
                    f"RuntimeService.Version: no answer within {self.timeout:g}s "
                    "(is this a CRI runtime's socket?)",
                    code,
                ) from None
            raise self._error("RuntimeService.Version", exc, self.timeout, []) from None
        return RuntimeVersion(
            runtime_name=resp.runtime_name,
            runtime_version=resp.runtime_version,
            runtime_api_version=resp.runtime_api_version,
        )

    # -- RuntimeService --

    def version(self) -> RuntimeVersion:
        """``RuntimeService.Version`` (asked again: the runtime may have been restarted).

        Raises:
            CRIError: the runtime went away or does not speak ``runtime.v1``.
        """
        self._version = self._fetch_version()
        return self._version

    # -- ImageService --

    def pull_image(self, image: str, auth: TrackedAuthConfig | None) -> str:
        """``PullImage`` with ``auth`` (None: anonymous); the ``image_ref`` it returns.

        Raises:
            PullError: the runtime refused or failed the pull; the kubelet's text (the
                bare message for an ``Unknown`` status), password scrubbed.
            CRIError: the runtime could not be reached or did not answer in
                ``pull_timeout`` seconds.
        """
        self._check_open()
        request = pull_image_request(image, auth)
        secrets = _secrets_of(auth)
        try:
            resp = self._image_stub.PullImage(request, timeout=self.pull_timeout)
        except self._grpc.RpcError as exc:
            code, details = self._status(exc)
            if code in _TRANSPORT_CODES:
                raise self._error(
                    "ImageService.PullImage", exc, self.pull_timeout, secrets
                ) from None
            details = _scrub(details, secrets)
            # cri-client strips the code from Unknown statuses: they add nothing, and the
            # kubelet recognises RegistryUnavailable by the message's prefix.
            message = details if code == "Unknown" else format_grpc_error(code, details)
            raise PullError(message) from None
        if not resp.image_ref:
            raise PullError(f'imageRef of image "{image}" is not set')
        ref: str = resp.image_ref
        return ref

    def image_status(self, image: str) -> RuntimeImage | None:
        """``ImageStatus``: the image ``image`` (a name, ``name@digest`` or an id)
        names, None when the runtime does not have it.

        Raises:
            CRIError: the runtime failed the request or could not be reached.
        """
        resp = self._call(
            "ImageService.ImageStatus",
            self._image_stub.ImageStatus,
            self._pb.ImageStatusRequest(image=self._pb.ImageSpec(image=image)),
            self.timeout,
        )
        if not resp.HasField("image") or not resp.image.id:
            return None
        return _runtime_image(resp.image)

    def image_ref(self, image: str) -> str | None:
        """``GetImageRef``: the id ``ImageStatus`` reports, None when not present.

        Raises:
            CRIError: as :meth:`image_status`.
        """
        found = self.image_status(image)
        return found.id if found is not None else None

    def list_images(self) -> list[RuntimeImage]:
        """``ListImages`` with no filter: every image the runtime has (CRI-managed).

        Raises:
            CRIError: as :meth:`image_status`.
        """
        resp = self._call(
            "ImageService.ListImages",
            self._image_stub.ListImages,
            self._pb.ListImagesRequest(),
            self.timeout,
        )
        return [_runtime_image(i) for i in resp.images]

    def remove_image(self, image: str) -> None:
        """``RemoveImage`` (a name or an id); removing an absent image is not an error,
        as the CRI requires.

        Raises:
            CRIError: as :meth:`image_status`.
        """
        try:
            self._call(
                "ImageService.RemoveImage",
                self._image_stub.RemoveImage,
                self._pb.RemoveImageRequest(image=self._pb.ImageSpec(image=image)),
                self.timeout,
            )
        except CRIError as exc:
            if exc.code != "NotFound":
                raise

    def image_fs_info(self) -> list[dict[str, object]]:
        """``ImageFsInfo``: per image filesystem, ``mountpoint``, ``used_bytes``,
        ``inodes_used`` and ``timestamp`` (ns), for diagnostics.

        Raises:
            CRIError: as :meth:`image_status`.
        """
        resp = self._call(
            "ImageService.ImageFsInfo",
            self._image_stub.ImageFsInfo,
            self._pb.ImageFsInfoRequest(),
            self.timeout,
        )
        return [
            {
                "mountpoint": fs.fs_id.mountpoint,
                "used_bytes": fs.used_bytes.value,
                "inodes_used": fs.inodes_used.value,
                "timestamp": fs.timestamp,
            }
            for fs in resp.image_filesystems
        ]

    # -- lifetime --

    def close(self) -> None:
        """Close the channel; idempotent."""
        channel = self._channel
        if channel is not None:
            self._channel = None
            channel.close()

    def __enter__(self) -> CRIRuntime:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"CRIRuntime({self.endpoint!r})"
