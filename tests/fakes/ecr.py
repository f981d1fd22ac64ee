"""A loopback AWS endpoint for plugin subprocesses: moto's ECR and STS behind real HTTP.

A plugin run as a subprocess cannot use moto's in-process decorator, and moto's own
``ThreadedMotoServer`` needs Flask (``moto[server]``), which the project does not install.
So this serves HTTP on ``127.0.0.1`` (a free port) with the standard library and hands each
request to moto's request dispatcher (the same one ``mock_aws`` uses inside botocore),
after rewriting the URL back to the AWS endpoint the request was signed for (SigV4
credential scope: region and service). Point a plugin at it with ``AWS_ENDPOINT_URL``.

Besides moto it can:

* answer with scripted responses (:meth:`FakeAws.script`): throttling, 5xx, malformed
  JSON, any status and body, for the next N calls of an operation;
* make ECR tokens expire in the future (moto's always expired on 2015-01-01), so answers
  carry a real ``cacheDuration`` and exercise the plugin cache;
* record every request (service, region, operation, signed or not), for assertions.

Unsigned requests (``AssumeRoleWithWebIdentity`` carries no SigV4 scope) go to STS.

Given a :class:`tests.fakes.tls.ServerCertificate` (``tls=``) it serves HTTPS instead.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from tests.fakes.tls import TLSServerMixin

if TYPE_CHECKING:
    from tests.fakes.tls import ServerCertificate

_SCOPE = re.compile(r"Credential=[^/]+/\d{8}/([^/]+)/([^/]+)/aws4_request")
_HOSTS = {
    "ecr": "api.ecr.{region}.amazonaws.com",
    "ecr-public": "api.ecr-public.{region}.amazonaws.com",
    "sts": "sts.{region}.amazonaws.com",
}
JSON_11 = "application/x-amz-json-1.1"


@dataclass(frozen=True)
class Seen:
    """One request the fake received."""

    service: str
    region: str
    operation: str
    signed: bool
    headers: dict[str, str]


@dataclass
class _Scripted:
    operation: str
    region: str | None
    status: int
    content_type: str
    body: bytes
    times: int


class FakeAws:
    """The server; use :func:`fake_aws` to start and always stop it."""

    def __init__(
        self,
        token_lifetime: timedelta | None = timedelta(hours=12),
        tls: ServerCertificate | None = None,
    ) -> None:
        self.token_lifetime = token_lifetime
        self.tls = tls
        self.seen: list[Seen] = []
        self._scripts: list[_Scripted] = []
        self._lock = threading.Lock()
        # moto's backends are not made for concurrent requests (the doctor and the matrix
        # run plugins in parallel): one request at a time reaches them.
        self._moto_lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        scheme = "https" if self.tls else "http"
        return f"{scheme}://127.0.0.1:{self._server.server_address[1]}"

    def script(
        self,
        operation: str,
        status: int,
        body: bytes | str,
        content_type: str = JSON_11,
        times: int = 1_000_000,
        region: str | None = None,
    ) -> None:
        """Answer the next ``times`` calls of ``operation`` (signed for ``region``, or any)
        with this status and body."""
        data = body.encode() if isinstance(body, str) else body
        with self._lock:
            self._scripts.append(_Scripted(operation, region, status, content_type, data, times))

    def clear_scripts(self) -> None:
        with self._lock:
            self._scripts.clear()

    def operations(self) -> list[str]:
        return [s.operation for s in self.seen]

    # -- serving ------------------------------------------------------------------------------

    def _scripted(self, operation: str, region: str) -> _Scripted | None:
        with self._lock:
            for entry in self._scripts:
                if (
                    entry.operation == operation
                    and entry.region in (None, region)
                    and entry.times > 0
                ):
                    entry.times -= 1
                    return entry
        return None

    def handle(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, dict[str, str], bytes]:
        from botocore.awsrequest import AWSPreparedRequest
        from moto.core.models import botocore_stubber

        scope = _SCOPE.search(headers.get("Authorization", ""))
        region, service = (scope.group(1), scope.group(2)) if scope else ("us-east-1", "sts")
        target = headers.get("X-Amz-Target", "")
        operation = target.rpartition(".")[2] if target else _query_action(body)
        with self._lock:
            self.seen.append(Seen(service, region, operation, scope is not None, dict(headers)))
        scripted = self._scripted(operation, region)
        if scripted is not None:
            return scripted.status, {"Content-Type": scripted.content_type}, scripted.body
        host = _HOSTS.get(service, f"{service}.{{region}}.amazonaws.com").format(region=region)
        request = AWSPreparedRequest(method, f"https://{host}{path}", headers, body, False)
        with self._moto_lock:
            answer = botocore_stubber.process_request(request)
        if answer is None:
            return 404, {"Content-Type": "text/plain"}, b"no such service"
        status, out_headers, out_body = answer
        data = out_body.encode() if isinstance(out_body, str) else bytes(out_body or b"")
        return status, {str(k): str(v) for k, v in out_headers.items()}, data

    def start(self) -> None:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                status, headers, data = fake.handle(
                    "POST", self.path, dict(self.headers.items()), body
                )
                self.send_response(status)
                for key, value in headers.items():
                    if key.lower() not in ("content-length", "server", "date", "connection"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = _Server(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._server.tls = self.tls.server_context() if self.tls else None
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


class _Server(TLSServerMixin, ThreadingHTTPServer):
    pass


def _query_action(body: bytes) -> str:
    from urllib.parse import parse_qs

    values = parse_qs(body.decode("utf-8", "replace")).get("Action", [""])
    return values[0]


@contextlib.contextmanager
def future_token_expiry(lifetime: timedelta | None) -> Iterator[None]:
    """Make moto's ECR tokens expire ``lifetime`` from now (None: moto's 2015 date)."""
    if lifetime is None:
        yield
        return
    from moto.ecr.responses import ECRResponse

    original = ECRResponse.get_authorization_token

    def patched(self: Any) -> Any:
        result = original(self)
        payload: Any = result.result
        for entry in payload["authorizationData"]:
            entry["expiresAt"] = datetime.now(UTC) + lifetime
        return result

    ECRResponse.get_authorization_token = patched  # type: ignore[method-assign]
    try:
        yield
    finally:
        ECRResponse.get_authorization_token = original  # type: ignore[method-assign]


@contextlib.contextmanager
def fake_aws(
    token_lifetime: timedelta | None = timedelta(hours=12), tls: ServerCertificate | None = None
) -> Iterator[FakeAws]:
    """A started :class:`FakeAws` backed by a fresh moto state; stopped on exit."""
    from moto import mock_aws

    fake = FakeAws(token_lifetime, tls)
    with mock_aws(), future_token_expiry(token_lifetime):
        fake.start()
        try:
            yield fake
        finally:
            fake.stop()
