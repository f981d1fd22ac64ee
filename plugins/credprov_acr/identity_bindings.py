"""The AKS identity-bindings token endpoint (``--ib-*`` flags, upstream PR #9907).

A pod's service-account token is exchanged for an AAD access token at ``https://<sni>/``
(root path), form ``grant_type=client_credentials``,
``client_assertion_type=urn:ietf:params:oauth:client-assertion-type:jwt-bearer``,
``scope``, ``client_assertion=<token>``, ``client_id``; the answer is JSON
``{access_token, expires_in}``. The connection always goes to ``--ib-apiserver-ip`` (an IP,
or a name resolved once, first address), TLS 1.2 or newer with SNI and certificate name
``--ib-sni-name``, trusting only the cluster CA (``/etc/kubernetes/certs/ca.crt``), and never
through a proxy.

Advanced/test knobs: ``$CREDPROV_ACR_IB_CA_FILE`` replaces the CA file and
``$CREDPROV_ACR_IB_PORT`` the port (443).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from credprov.sdk import ProviderError
from credprov_acr import _http

if TYPE_CHECKING:
    import ssl  # imported when used: not on the path of answers that need no TLS

CA_FILE = "/etc/kubernetes/certs/ca.crt"
CA_FILE_ENV = "CREDPROV_ACR_IB_CA_FILE"
PORT_ENV = "CREDPROV_ACR_IB_PORT"
DEFAULT_PORT = 443
RESOLVE_TIMEOUT = 10.0

CLIENT_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

Log = Callable[[int, str], None]


class IdentityBindingsError(ProviderError):
    """The identity-bindings exchange failed; one line, never a token."""


class IdentityBindings(NamedTuple):
    """The ``--ib-*`` flags."""

    sni_name: str = ""
    default_client_id: str = ""
    default_tenant_id: str = ""
    apiserver_ip: str = ""

    @property
    def enabled(self) -> bool:
        """Whether identity bindings are configured (``--ib-sni-name`` set)."""
        return bool(self.sni_name)


def resolve_apiserver(address: str, timeout: float = RESOLVE_TIMEOUT) -> str:
    """``address`` if it is an IP, else the first address it resolves to (within ``timeout``).

    Raises:
        IdentityBindingsError: not an IP and not resolvable in time.
    """
    import ipaddress
    import socket
    import threading

    try:
        return str(ipaddress.ip_address(address))
    except ValueError:
        pass
    result: list[str] = []

    def lookup() -> None:
        try:
            infos = socket.getaddrinfo(address, None, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError):
            return
        if infos:
            result.append(str(infos[0][4][0]))

    thread = threading.Thread(target=lookup, daemon=True)
    thread.start()
    thread.join(timeout)
    if not result:
        raise IdentityBindingsError(
            f"--ib-apiserver-ip must be a valid IP address or resolvable FQDN, got: {address}"
        )
    return result[0]


def _ca_file() -> str:
    return os.environ.get(CA_FILE_ENV, "").strip() or CA_FILE


def _port() -> int:
    raw = os.environ.get(PORT_ENV, "").strip()
    return int(raw) if raw.isdigit() and 0 < int(raw) < 65536 else DEFAULT_PORT


def _ssl_context(ca_file: str) -> ssl.SSLContext:
    import ssl

    try:
        with open(ca_file, "rb") as fh:
            pem = fh.read(1024 * 1024)
    except OSError as exc:
        raise IdentityBindingsError(f"read CA file {ca_file!r}: {exc.strerror or exc}") from None
    if not pem.strip():
        raise IdentityBindingsError(f"CA file {ca_file!r} is empty")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        ctx.load_verify_locations(cadata=pem.decode("ascii", "replace"))
    except (ssl.SSLError, ValueError):
        raise IdentityBindingsError(
            f"parse CA file {ca_file!r}: no valid certificates found"
        ) from None
    return ctx


def get_token(
    ib: IdentityBindings,
    client_id: str,
    assertion: str,
    scope: str,
    sleep: _http.Sleep = _http.sleep,
    retries: int | None = None,
    log: Log | None = None,
) -> tuple[str, float]:
    """(access token, expires_in seconds) from the identity-bindings endpoint.

    Raises:
        IdentityBindingsError: bad CA file, unresolvable address, refused or malformed.

    (Over 80 lines on purpose: the identity-binding exchange is one request with its TLS, SNI
    and retry set-up, as upstream's.)
    """
    from urllib.parse import urlencode

    import urllib3

    log = log or (lambda level, message: None)
    retries = _http.max_retries() if retries is None else retries
    if not assertion:
        raise IdentityBindingsError("service account token not found")
    if not client_id:
        raise IdentityBindingsError("client ID not configured")
    ctx = _ssl_context(_ca_file())
    address = resolve_apiserver(ib.apiserver_ip)
    port = _port()
    body = urlencode(
        {
            "grant_type": "client_credentials",
            "client_assertion_type": CLIENT_ASSERTION_TYPE,
            "scope": scope,
            "client_assertion": assertion,
            "client_id": client_id,
        }
    )
    host_header = ib.sni_name if port == DEFAULT_PORT else f"{ib.sni_name}:{port}"
    where = f"identity-bindings endpoint {ib.sni_name} ({address}:{port})"
    log(4, f"requesting a token from the {where} with scope {scope}")
    from credprov_acr._retry import retry

    with urllib3.HTTPSConnectionPool(
        address,
        port=port,
        ssl_context=ctx,
        server_hostname=ib.sni_name,
        assert_hostname=ib.sni_name,
        timeout=urllib3.Timeout(connect=_http.TIMEOUT[0], read=_http.TIMEOUT[1]),
    ) as pool:
        try:
            resp = pool.request(
                "POST",
                "/",
                body=body,
                headers={
                    "Host": host_header,
                    "Content-Type": "application/x-www-form-urlencoded",
                    "User-Agent": _http.USER_AGENT,
                },
                preload_content=False,
                redirect=False,
                retries=retry(retries, sleep, log),
            )
            try:
                data = resp.read(_http.MAX_BODY_BYTES + 1)
            finally:
                resp.release_conn()
        except urllib3.exceptions.HTTPError as exc:
            last = getattr(exc, "reason", None) or exc  # MaxRetryError: the last error
            if isinstance(last, urllib3.exceptions.SSLError):
                raise IdentityBindingsError(
                    f"TLS handshake with the {where} failed (certificate not trusted?)"
                ) from None
            raise IdentityBindingsError(
                f"cannot reach the {where} ({type(last).__name__})"
            ) from None
    if resp.status != 200:
        raise IdentityBindingsError(
            f"token request to the {where} failed: {_http.status_text(resp.status)}"
        )
    if len(data) > _http.MAX_BODY_BYTES:
        raise IdentityBindingsError(f"the answer of the {where} is larger than the read limit")
    try:
        doc = json.loads(data)
    except ValueError:
        raise IdentityBindingsError(f"failed to parse the token response of the {where}") from None
    token = doc.get("access_token") if isinstance(doc, dict) else None
    if not isinstance(token, str) or not token:
        raise IdentityBindingsError(f"the {where} returned no access_token")
    expires_in = doc.get("expires_in")
    seconds = float(expires_in) if isinstance(expires_in, int | float) else 0.0
    return token, seconds
