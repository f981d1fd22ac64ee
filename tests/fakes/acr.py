"""A fake Azure on 127.0.0.1 for ``acr-credential-provider``: IMDS, AAD, identity bindings,
ARM metadata and an ACR login server (``/v2/`` challenge and ``/oauth2/exchange``).

Two ``http.server`` servers on free ports: plain HTTP for IMDS (as the real one), and HTTPS
with a self-signed certificate generated at run time (``cryptography``) for everything else,
because azure-identity refuses an authority that is not https. The certificate names
``127.0.0.1``, ``localhost`` and :data:`IB_SNI_NAME`, and is its own CA.

Every endpoint has a queue of *modes* (:meth:`FakeAzure.set`): the first is used and dropped
while more follow, the last one stays. ``ok`` behaves like Azure; the others misbehave in
the ways the plugin must survive. Tokens are JWTs whose signature part holds
:data:`SECRET_MARK`, so a test can assert that no token reached stderr. Also used by
``benchmarks/bench_plugin_acr.py``.
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import json
import socket
import ssl
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.fakes.tls import ServerCertificate

#: Inside every token and secret the fake hands out (the tests' canary).
SECRET_MARK = "canary-s3cr3t-7d1f0c"

IB_SNI_NAME = "ib.credprov.test"
DEFAULT_TENANT = "tenant-node"
ACR_SERVICE = "fake.azurecr.io"
REFRESH_TTL = 3 * 3600
#: A body one byte over the plugin's read limit (10 MiB).
OVERSIZED = b" " * (10 * 1024 * 1024 + 1)


@dataclass(frozen=True)
class Certificate:
    """A self-signed server certificate (also the CA to trust) written to ``directory``."""

    ca_file: Path
    key_file: Path

    @classmethod
    def create(cls, directory: Path) -> Certificate:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID

        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "credprov fake azure")])
        now = datetime.datetime.now(datetime.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(
                x509.SubjectAlternativeName(
                    [
                        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                        x509.DNSName("localhost"),
                        x509.DNSName(IB_SNI_NAME),
                    ]
                ),
                critical=False,
            )
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256())
        )
        directory.mkdir(parents=True, exist_ok=True)
        ca_file = directory / "fake-azure-ca.pem"
        key_file = directory / "fake-azure-key.pem"
        ca_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key_file.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        key_file.chmod(0o600)
        return cls(ca_file, key_file)

    def server_context(self) -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(str(self.ca_file), str(self.key_file))
        return ctx


def _b64(data: dict[str, Any]) -> str:
    raw = json.dumps(data, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def make_jwt(claims: dict[str, Any], kind: str) -> str:
    """An unsigned-looking JWT whose signature part carries :data:`SECRET_MARK`."""
    return f"{_b64({'alg': 'RS256', 'typ': 'JWT'})}.{_b64(claims)}.{kind}-{SECRET_MARK}"


def jwt_claims(token: str) -> dict[str, Any]:
    part = token.split(".")[1]
    claims: dict[str, Any] = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    return claims


@dataclass
class Call:
    """One request the fake received."""

    server: str  # "imds" or "https"
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    form: dict[str, str]
    sni: str = ""


@dataclass
class FakeAzure:
    """The fake's state; see the module docstring. URLs are set once started."""

    imds_url: str = ""
    https_url: str = ""
    port: int = 0
    calls: list[Call] = field(default_factory=list)
    aad_tokens: dict[str, dict[str, Any]] = field(default_factory=dict)
    refresh_ttl: int = REFRESH_TTL
    realm: str = ""  # default: <https_url>/oauth2/token
    metadata: Any = None
    _modes: dict[str, deque[str]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    ENDPOINTS = ("imds", "aad", "ib", "challenge", "exchange", "metadata")

    def set(self, endpoint: str, *modes: str) -> None:
        """Queue ``modes`` for ``endpoint`` (one of :attr:`ENDPOINTS`)."""
        assert endpoint in self.ENDPOINTS, endpoint
        with self._lock:
            self._modes[endpoint] = deque(modes or ("ok",))

    def mode(self, endpoint: str) -> str:
        with self._lock:
            queue = self._modes.setdefault(endpoint, deque(["ok"]))
            return queue.popleft() if len(queue) > 1 else queue[0]

    def requests(self, kind: str) -> list[Call]:
        """The calls to one endpoint kind (same names as :attr:`ENDPOINTS`)."""
        return [c for c in self.calls if _kind(c) == kind]

    def issue_aad_token(self, tenant: str, audience: str, subject: str) -> str:
        claims = {
            "tid": tenant,
            "aud": audience,
            "sub": subject,
            "exp": int(time.time()) + 3600,
        }
        token = make_jwt(claims, "aad")
        with self._lock:
            self.aad_tokens[token] = claims
        return token


def _kind(call: Call) -> str:
    if call.server == "imds":
        return "imds"
    if call.path.startswith("/metadata/endpoints"):
        return "metadata"
    if call.path.startswith("/v2"):
        return "challenge"
    if call.path.startswith("/oauth2/exchange"):
        return "exchange"
    if call.path.endswith("/oauth2/v2.0/token"):
        return "aad"
    if call.method == "POST" and call.path == "/":
        return "ib"
    return "other"


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    # -- plumbing -------------------------------------------------------------------------

    def _record(self, method: str) -> Call:
        parts = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode() if length else ""
        form = {k: v[0] for k, v in parse_qs(body, keep_blank_values=True).items()}
        sni = getattr(self.connection, "credprov_sni", "") or ""
        call = Call(self.server.name, method, parts.path, query, dict(self.headers), form, sni)
        self.server.fake.calls.append(call)
        return call

    def _send(
        self, status: int, body: Any = None, headers: list[tuple[str, str]] | None = None
    ) -> None:
        data = body if isinstance(body, bytes) else json.dumps(body or {}).encode()
        reason = self.responses.get(status, ("",))[0]
        lines = [
            f"{self.protocol_version} {status} {reason}",
            "Content-Type: application/json",
            f"Content-Length: {len(data)}",
            *(f"{name}: {value}" for name, value in headers or []),
        ]
        # One write: headers and body in two small writes meet delayed ACKs (40 ms each).
        self.wfile.write(("\r\n".join(lines) + "\r\n\r\n").encode() + data)

    def _common_failure(self, mode: str) -> bool:
        if mode in ("429", "500", "503"):
            self._send(int(mode), {"error": "throttled" if mode == "429" else "server_error"})
            return True
        if mode == "malformed":
            self._send(200, b'{"access_token": "half a token')
            return True
        if mode == "oversized":
            self._send(200, OVERSIZED)
            return True
        if mode == "oversized-503":
            self._send(503, OVERSIZED)
            return True
        return False

    # -- routes ---------------------------------------------------------------------------

    def do_GET(self) -> None:
        call = self._record("GET")
        fake = self.server.fake
        kind = _kind(call)
        if kind == "imds":
            return self._imds(call, fake.mode("imds"))
        if kind == "challenge":
            return self._challenge(fake.mode("challenge"))
        if kind == "metadata":
            return self._send(200, fake.metadata or [])
        self._send(404, {"error": "not found"})

    def do_POST(self) -> None:
        call = self._record("POST")
        kind = _kind(call)
        fake = self.server.fake
        if kind == "aad":
            return self._aad(call, fake.mode("aad"))
        if kind == "ib":
            return self._ib(call, fake.mode("ib"))
        if kind == "exchange":
            return self._exchange(call, fake.mode("exchange"))
        self._send(404, {"error": "not found"})

    def _imds(self, call: Call, mode: str) -> None:
        if call.headers.get("Metadata") != "true":
            return self._send(400, {"error": "invalid_request", "error_description": "Metadata"})
        if self._common_failure(mode):
            return None
        if mode == "no-identity":
            return self._send(
                400, {"error": "invalid_request", "error_description": "Identity not found"}
            )
        subject = call.query.get("client_id") or call.query.get("msi_res_id") or "system"
        token = self.server.fake.issue_aad_token(
            DEFAULT_TENANT, call.query.get("resource", ""), subject
        )
        now = int(time.time())
        self._send(
            200,
            {
                "access_token": token,
                "expires_in": "3600",
                "expires_on": str(now + 3600),
                "resource": call.query.get("resource", ""),
                "token_type": "Bearer",
            },
        )

    def _aad(self, call: Call, mode: str) -> None:
        tenant = call.path.split("/")[1]
        if self._common_failure(mode):
            return None
        if mode == "unknown-tenant":
            return self._send(
                400,
                {
                    "error": "invalid_request",
                    "error_description": f"AADSTS90002: Tenant '{tenant}' not found.",
                },
            )
        if mode == "echo":  # a hostile answer quoting the assertion it was sent
            return self._send(
                401,
                {"error": "invalid_client", "error_description": call.form["client_assertion"]},
            )
        form = call.form
        if form.get("client_assertion_type") != (
            "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
        ) or not form.get("client_assertion"):
            return self._send(400, {"error": "invalid_request"})
        audience = form.get("scope", "").removesuffix("/.default")
        token = self.server.fake.issue_aad_token(tenant, audience, form.get("client_id", ""))
        self._send(200, {"access_token": token, "expires_in": 3600, "token_type": "Bearer"})

    def _ib(self, call: Call, mode: str) -> None:
        if self._common_failure(mode):
            return None
        form = call.form
        if form.get("grant_type") != "client_credentials" or not form.get("client_assertion"):
            return self._send(400, {"error": "invalid_request"})
        audience = form.get("scope", "").removesuffix("/.default")
        token = self.server.fake.issue_aad_token("tenant-ib", audience, form.get("client_id", ""))
        self._send(200, {"access_token": token, "expires_in": 3600})

    def _challenge(self, mode: str) -> None:
        fake = self.server.fake
        realm = fake.realm or f"{fake.https_url}/oauth2/token"
        bearer = f'Bearer realm="{realm}",service="{ACR_SERVICE}"'
        if mode in ("429", "500"):
            return self._send(int(mode), {"errors": [{"code": "TOOMANYREQUESTS"}]})
        headers = {
            "ok": [("WWW-Authenticate", bearer)],
            "two-headers": [("WWW-Authenticate", bearer), ("WWW-Authenticate", bearer)],
            "basic": [("WWW-Authenticate", 'Basic realm="x"')],
            "no-realm": [("WWW-Authenticate", f'Bearer service="{ACR_SERVICE}"')],
            "no-header": [],
        }
        if mode == "no-challenge":
            return self._send(200, {})
        self._send(401, {"errors": [{"code": "UNAUTHORIZED"}]}, headers[mode])

    def _exchange(self, call: Call, mode: str) -> None:
        fake = self.server.fake
        form = call.form
        if mode in ("429", "500"):
            return self._send(int(mode), {"errors": [{"code": "TOOMANYREQUESTS"}]})
        if mode == "oversized":
            return self._send(200, OVERSIZED)
        if mode == "echo":  # a hostile answer quoting the AAD token
            return self._send(
                401,
                {"errors": [{"code": "UNAUTHORIZED", "message": form.get("access_token", "")}]},
            )
        if (
            form.get("grant_type") != "access_token_refresh_token"
            or form.get("service") != ACR_SERVICE
            or form.get("access_token") != form.get("refresh_token")
        ):
            return self._send(400, {"errors": [{"code": "BAD_REQUEST"}]})
        claims = fake.aad_tokens.get(form.get("access_token", ""))
        if claims is None:
            return self._send(
                401, {"errors": [{"code": "UNAUTHORIZED", "message": "invalid token"}]}
            )
        if form.get("tenant") and form["tenant"] != claims["tid"]:
            return self._send(
                401,
                {"errors": [{"code": "UNAUTHORIZED", "message": "tenant does not match token"}]},
            )
        now = int(time.time())
        exp = {
            "expired": now - 60,
            "short": now + 120,
        }.get(mode, now + fake.refresh_ttl)
        refresh = make_jwt({"tid": claims["tid"], "grant_type": "refresh_token", "exp": exp}, "rt")
        if mode == "no-exp":
            refresh = f"opaque-refresh-{SECRET_MARK}"
        if mode == "malformed":  # truncated JSON that quotes the token
            return self._send(200, f'{{"refresh_token": "{refresh}'.encode())
        if mode == "no-token":
            return self._send(200, {"access_token": "x"})
        self._send(200, {"refresh_token": refresh}, [("X-Ms-Correlation-Request-Id", "corr-1")])


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, name: str, fake: FakeAzure, tls: ssl.SSLContext | None) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.name = name
        self.fake = fake
        self.tls = tls
        if tls is not None:
            tls.sni_callback = _remember_sni

    def finish_request(self, request: Any, client_address: Any) -> None:
        # TLS in the request's thread, so a slow or failed handshake blocks nobody else.
        request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.tls is not None:
            try:
                request = self.tls.wrap_socket(request, server_side=True)
            except (ssl.SSLError, OSError):
                request.close()
                return
        super().finish_request(request, client_address)


def _remember_sni(sslsock: Any, name: str | None, ctx: Any) -> None:
    sslsock.credprov_sni = name or ""


@contextmanager
def running(cert: Certificate | ServerCertificate) -> Iterator[FakeAzure]:
    """Start the two servers; stop them on exit, also when the body raises. ``cert``: the
    fake's own self-signed one, or one issued by a :class:`tests.fakes.tls.TestCA`."""
    fake = FakeAzure()
    imds = _Server("imds", fake, None)
    https = _Server("https", fake, cert.server_context())
    threads = [
        threading.Thread(target=s.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
        for s in (imds, https)
    ]
    fake.imds_url = f"http://127.0.0.1:{imds.server_port}"
    fake.https_url = f"https://127.0.0.1:{https.server_port}"
    fake.port = https.server_port
    for t in threads:
        t.start()
    try:
        yield fake
    finally:
        for s in (imds, https):
            s.shutdown()
            s.server_close()
        for t in threads:
            t.join(timeout=5)


def environment(fake: FakeAzure, cert: Certificate) -> dict[str, str]:
    """The environment variables that point the plugin at ``fake``."""
    return {
        "AZURE_POD_IDENTITY_AUTHORITY_HOST": fake.imds_url,
        "AZURE_AUTHORITY_HOST": fake.https_url,
        # Go's override, which the plugin reads as Go does (the node's directories stay on)
        "SSL_CERT_FILE": str(cert.ca_file),
        "CREDPROV_ACR_LOGIN_SERVER_URL": fake.https_url,
        "CREDPROV_ACR_IB_CA_FILE": str(cert.ca_file),
        "CREDPROV_ACR_IB_PORT": str(fake.port),
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    }


#: Variables of the real environment that would send the plugin elsewhere.
FOREIGN_VARIABLES = (
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "IDENTITY_ENDPOINT",
    "IDENTITY_HEADER",
    "IDENTITY_SERVER_THUMBPRINT",
    "IMDS_ENDPOINT",
    "MSI_ENDPOINT",
    "MSI_SECRET",
    "AZURE_FEDERATED_TOKEN_FILE",
    "AZURE_CLIENT_ID",
    "AZURE_TENANT_ID",
    "AZURE_CLIENT_SECRET",
    "AZURE_ENVIRONMENT_FILEPATH",
    "CURL_CA_BUNDLE",
    "REQUESTS_CA_BUNDLE",
    "SSL_CERT_DIR",
    "CREDPROV_CA_ROOT",
    "CREDPROV_ACR_MAX_RETRIES",
)
