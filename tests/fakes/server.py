"""A scripted HTTP server on 127.0.0.1, for the plugins' and the SDK's HTTP tests.

Standard library only (``http.server`` on a free loopback port, one thread). Use it as a
context manager so it is always stopped. Replies are scripted per (method, path): a list is
served in order and its last reply repeats, so "429 twice, then 200" is
``[Reply(429), Reply(429), Reply(200, ...)]``; what was asked is kept in ``requests``.
Subclasses (:mod:`tests.fakes.gcp`) add the checks of the server they stand for. Given a
:class:`tests.fakes.tls.ServerCertificate` (``tls=``) it serves HTTPS instead.
"""

from __future__ import annotations

import json
import socket
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from tests.fakes.tls import TLSServerMixin

if TYPE_CHECKING:
    from tests.fakes.tls import ServerCertificate

__all__ = ["FakeServer", "RecordedRequest", "Reply", "closed_port"]


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

    def __init__(self, tls: ServerCertificate | None = None) -> None:
        self.tls = tls
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
        """``http://127.0.0.1:<port><path>`` (``https`` when serving TLS)."""
        return f"{'https' if self.tls else 'http'}://{self.host}{path}"

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

        self._server = _Server(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._server.tls = self.tls.server_context() if self.tls else None
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


class _Server(TLSServerMixin, ThreadingHTTPServer):
    pass


def closed_port() -> int:
    """A loopback port nothing listens on (connection refused): an absent server."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port
