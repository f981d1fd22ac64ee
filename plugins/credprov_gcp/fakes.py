"""Loopback fakes of the GCE metadata server and of STS, for offline tests and benchmarks.

Standard library only (``http.server`` on 127.0.0.1, a free port, one thread). Point the
plugin at them with ``GCE_METADATA_HOST=<fake.host>`` and
``CREDPROV_GCP_STS_ENDPOINT=<fake.endpoint>``. Use them as context managers so they are
always stopped::

    with FakeMetadataServer() as mds, FakeSTSServer() as sts:
        mds.set_token("ya29.fake", expires_in=3599)
        ...                                   # run the plugin
        mds.requests                          # what it asked, in order

Replies are scripted per (method, path): a list is served in order and its last reply
repeats, so "429 twice, then 200" is ``[Reply(429), Reply(429), token_reply]``.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

__all__ = ["FakeMetadataServer", "FakeSTSServer", "RecordedRequest", "Reply", "closed_port"]


class Reply:
    """One scripted HTTP reply."""

    __slots__ = ("body", "headers", "status")

    def __init__(
        self,
        status: int = 200,
        body: bytes | str | dict[str, Any] = b"",
        headers: dict[str, str] | None = None,
    ) -> None:
        self.status = status
        self.headers = dict(headers or {})
        if isinstance(body, dict):
            self.body = json.dumps(body).encode()
            self.headers.setdefault("Content-Type", "application/json")
        else:
            self.body = body.encode() if isinstance(body, str) else body
            self.headers.setdefault("Content-Type", "application/text")


class RecordedRequest:
    """What the fake received: method, path, query, headers (lower-case names), body."""

    __slots__ = ("body", "headers", "method", "path", "query")

    def __init__(
        self, method: str, path: str, query: str, headers: dict[str, str], body: bytes
    ) -> None:
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body

    def form(self) -> dict[str, str]:
        """The body as a form (``application/x-www-form-urlencoded``)."""
        return dict(urllib.parse.parse_qsl(self.body.decode(), keep_blank_values=True))

    def __repr__(self) -> str:
        return f"RecordedRequest({self.method} {self.path})"


class FakeServer:
    """A scripted HTTP server on 127.0.0.1 (see the module docstring)."""

    def __init__(self) -> None:
        self._routes: dict[tuple[str, str], list[Reply]] = {}
        self._lock = threading.Lock()
        self.requests: list[RecordedRequest] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- scripting -----------------------------------------------------------------------------

    def script(self, method: str, path: str, *replies: Reply) -> None:
        """Serve ``replies`` in order for ``method path``; the last one repeats."""
        with self._lock:
            self._routes[(method, path)] = list(replies)

    def reply(self, method: str, path: str) -> Reply:
        """The next reply for a request (404 when nothing is scripted)."""
        with self._lock:
            replies = self._routes.get((method, path))
            if not replies:
                return Reply(404, "Not Found")
            return replies.pop(0) if len(replies) > 1 else replies[0]

    def paths(self) -> list[str]:
        """The paths requested so far, in order."""
        return [r.path for r in self.requests]

    # -- life cycle ----------------------------------------------------------------------------

    @property
    def host(self) -> str:
        """``127.0.0.1:<port>``."""
        if self._server is None:
            raise RuntimeError("the fake server is not running")
        return f"127.0.0.1:{self._server.server_address[1]}"

    def url(self, path: str) -> str:
        """``http://127.0.0.1:<port><path>``."""
        return f"http://{self.host}{path}"

    def start(self) -> Self:
        """Listen on a free loopback port and serve from a daemon thread."""
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                parts = urllib.parse.urlsplit(self.path)
                headers = {k.lower(): v for k, v in self.headers.items()}
                with fake._lock:
                    fake.requests.append(
                        RecordedRequest(self.command, parts.path, parts.query, headers, body)
                    )
                reply = fake.handle(self.command, parts.path, headers)
                self.send_response(reply.status)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)

            do_GET = _serve
            do_POST = _serve

            def log_message(self, format: str, *args: Any) -> None:
                pass  # quiet

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.02,), daemon=True
        )
        self._thread.start()
        return self

    def handle(self, method: str, path: str, headers: dict[str, str]) -> Reply:
        """Choose the reply for a request; subclasses add checks."""
        return self.reply(method, path)

    def stop(self) -> None:
        """Stop serving and close the socket (idempotent)."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


METADATA_ROOT = "/computeMetadata/v1/"
TOKEN_PATH = METADATA_ROOT + "instance/service-accounts/default/token"
EMAIL_PATH = METADATA_ROOT + "instance/service-accounts/default/email"
ATTRIBUTES_PATH = METADATA_ROOT + "instance/attributes/"


def token_reply(token: str, expires_in: Any = 3599) -> Reply:
    """A metadata/STS token response."""
    return Reply(200, {"access_token": token, "expires_in": expires_in, "token_type": "Bearer"})


class FakeMetadataServer(FakeServer):
    """The GCE metadata server: refuses requests without ``Metadata-Flavor: Google`` (403,
    as the real one), answers with ``Metadata-Flavor: Google``, and serves a token and an
    email for the default service account until told otherwise."""

    def __init__(
        self,
        token: str = "ya29.fake-node-token",
        email: str = "node@example.iam.gserviceaccount.com",
    ) -> None:
        super().__init__()
        self.set_token(token)
        self.script("GET", EMAIL_PATH, Reply(200, email))

    def set_token(self, token: str, expires_in: Any = 3599) -> None:
        """Serve this token from now on."""
        self.script("GET", TOKEN_PATH, token_reply(token, expires_in))

    def set_attribute(self, name: str, value: str | bytes) -> None:
        """Serve instance attribute ``name``."""
        self.script("GET", ATTRIBUTES_PATH + name, Reply(200, value))

    def handle(self, method: str, path: str, headers: dict[str, str]) -> Reply:
        if path.startswith(METADATA_ROOT) and headers.get("metadata-flavor") != "Google":
            return Reply(403, "Missing Metadata-Flavor:Google header.")
        reply = self.reply(method, path)
        if path.startswith(METADATA_ROOT):
            reply.headers.setdefault("Metadata-Flavor", "Google")
        return reply


STS_PATH = "/v1/token"


class FakeSTSServer(FakeServer):
    """Google's Security Token Service (``POST /v1/token``): answers a federated token."""

    def __init__(self, token: str = "ya29.fake-federated-token") -> None:
        super().__init__()
        self.set_token(token)

    @property
    def endpoint(self) -> str:
        """The token exchange URL."""
        return self.url(STS_PATH)

    def set_token(self, token: str, expires_in: Any = 3599) -> None:
        """Exchange every token for this one from now on."""
        reply = token_reply(token, expires_in)
        reply.body = json.dumps(
            {
                "access_token": token,
                "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
                "token_type": "Bearer",
                "expires_in": expires_in,
            }
        ).encode()
        self.script("POST", STS_PATH, reply)


def closed_port() -> int:
    """A loopback port nothing listens on (connection refused): an absent server."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def main() -> int:
    """``python -m credprov_gcp.fakes``: serve both fakes until interrupted, printing the
    environment that points the plugin at them."""
    import signal

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with FakeMetadataServer() as mds, FakeSTSServer() as sts:
        print(f"export GCE_METADATA_HOST={mds.host}", flush=True)
        print(f"export CREDPROV_GCP_STS_ENDPOINT={sts.endpoint}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            stop.wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
