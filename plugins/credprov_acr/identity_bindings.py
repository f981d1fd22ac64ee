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
from typing import TYPE_CHECKING, NamedTuple

from credprov.sdk import ProviderError
from credprov.sdk.http import CHUNK_BYTES, BodyTooLarge, last_error, read_capped
from credprov_acr import _http

if TYPE_CHECKING:
    import ssl  # imported when used: not on the path of answers that need no TLS

    from urllib3.util.retry import Retry

CA_FILE = "/etc/kubernetes/certs/ca.crt"
CA_FILE_ENV = "CREDPROV_ACR_IB_CA_FILE"
PORT_ENV = "CREDPROV_ACR_IB_PORT"
DEFAULT_PORT = 443
RESOLVE_TIMEOUT = 10.0

CLIENT_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

Log = _http.Log


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
    """
    log = log or (lambda level, message: None)
    retries = _http.max_retries() if retries is None else retries
    if not assertion:
        raise IdentityBindingsError("service account token not found")
    if not client_id:
        raise IdentityBindingsError("client ID not configured")
    ctx = _ssl_context(_ca_file())
    endpoint = _Endpoint(ib.sni_name, resolve_apiserver(ib.apiserver_ip), _port())
    log(4, f"requesting a token from the {endpoint.where} with scope {scope}")
    form = _token_form(client_id, assertion, scope)
    status, data = _post(endpoint, ctx, form, _http.retry(retries, sleep, log))
    if status != 200:
        raise IdentityBindingsError(
            f"token request to the {endpoint.where} failed: {_http.status_text(status)}"
        )
    if data is None:
        raise IdentityBindingsError(
            f"the answer of the {endpoint.where} is larger than the read limit"
        )
    return _parse_token(data, endpoint.where)


class _Endpoint(NamedTuple):
    """Where the token request goes: the SNI (and certificate) name, the address, the port."""

    sni_name: str
    address: str
    port: int

    @property
    def where(self) -> str:
        """``identity-bindings endpoint <sni> (<address>:<port>)``, for messages."""
        return f"identity-bindings endpoint {self.sni_name} ({self.address}:{self.port})"

    @property
    def host_header(self) -> str:
        """The ``Host`` header: the SNI name, with the port unless it is 443."""
        return self.sni_name if self.port == DEFAULT_PORT else f"{self.sni_name}:{self.port}"


def _token_form(client_id: str, assertion: str, scope: str) -> str:
    """The urlencoded client-credentials form, the service-account token as the assertion."""
    from urllib.parse import urlencode

    return urlencode(
        {
            "grant_type": "client_credentials",
            "client_assertion_type": CLIENT_ASSERTION_TYPE,
            "scope": scope,
            "client_assertion": assertion,
            "client_id": client_id,
        }
    )


def _post(
    endpoint: _Endpoint, ctx: ssl.SSLContext, form: str, retry: Retry
) -> tuple[int, bytes | None]:
    """POST ``form`` to the endpoint's root (TLS to the SNI name, never a proxy, ``retry``'s
    retries): the last status and its body (None when over the read limit).

    Raises:
        IdentityBindingsError: no answer (TLS failure, unreachable).
    """
    import urllib3

    with urllib3.HTTPSConnectionPool(
        endpoint.address,
        port=endpoint.port,
        ssl_context=ctx,
        server_hostname=endpoint.sni_name,
        assert_hostname=endpoint.sni_name,
        timeout=urllib3.Timeout(connect=_http.TIMEOUT[0], read=_http.TIMEOUT[1]),
    ) as pool:
        try:
            resp = pool.request(
                "POST",
                "/",
                body=form,
                headers={
                    "Host": endpoint.host_header,
                    "Content-Type": "application/x-www-form-urlencoded",
                    "User-Agent": _http.USER_AGENT,
                },
                preload_content=False,
                redirect=False,
                retries=retry,
            )
            try:
                data: bytes | None = read_capped(resp.stream(CHUNK_BYTES), _http.MAX_BODY_BYTES)
            except BodyTooLarge:
                data = None  # reported after the status, which says more
            finally:
                resp.release_conn()
        except urllib3.exceptions.HTTPError as exc:
            last = last_error(exc)
            if isinstance(last, urllib3.exceptions.SSLError):
                raise IdentityBindingsError(
                    f"TLS handshake with the {endpoint.where} failed (certificate not trusted?)"
                ) from None
            raise IdentityBindingsError(
                f"cannot reach the {endpoint.where} ({type(last).__name__})"
            ) from None
    return resp.status, data


def _parse_token(data: bytes, where: str) -> tuple[str, float]:
    """(access token, expires_in seconds) of the endpoint's JSON answer.

    Raises:
        IdentityBindingsError: not JSON, or no access token.
    """
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
