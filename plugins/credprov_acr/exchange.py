"""Trading an AAD access token for an ACR refresh token (``/v2/`` challenge, ``/oauth2/exchange``).

The protocol of upstream's ``azure_acr_helper.go`` (from Azure/acr-docker-credential-helper):

1. ``GET https://<login server>/v2/`` with ``User-Agent: kubernetes-credentialprovider-acr``;
   the answer must be 401 with exactly one ``Www-Authenticate`` header, scheme ``Bearer``
   (any case) with non-empty ``realm`` and ``service`` parameters (quoted or not; upstream
   panics on an unquoted last value, this parser does not);
2. ``POST <realm scheme>://<realm host>/oauth2/exchange``, form ``service``,
   ``grant_type=access_token_refresh_token``, ``access_token`` and ``refresh_token`` (both
   the AAD token) and ``tenant``; the answer must be 200 with JSON ``refresh_token``.

Differences, all on the side of safety: the AAD token is sent only to an ``https`` realm on
the login server or another ACR host (upstream follows any realm the registry names); a
failure never quotes a response body that could hold a token (upstream's "unable to read
response %s" prints the refresh token when the JSON is malformed); throttling and server
errors are retried (urllib3's ``Retry``, :func:`credprov_acr._http.retry`); and
:func:`refresh_token_lifetime` reads the refresh token's ``exp`` so the answer is cached for
as long as the token lives.

Advanced/test knob: ``$CREDPROV_ACR_LOGIN_SERVER_URL`` (e.g. ``https://127.0.0.1:8443``)
sends the challenge there instead of ``https://<login server>``; its host is then also an
accepted realm host.
"""

from __future__ import annotations

import base64
import json
import os
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from credprov.sdk import ProviderError
from credprov.sdk.http import CHUNK_BYTES, BodyTooLarge, last_error, read_capped
from credprov_acr import _http

LOGIN_SERVER_URL_ENV = "CREDPROV_ACR_LOGIN_SERVER_URL"

#: The username of every ACR refresh-token credential.
DOCKER_TOKEN_LOGIN_USERNAME_GUID = "00000000-0000-0000-0000-000000000000"

#: Parent domains of ACR hosts a realm may live on (besides the login server itself).
ACR_DOMAINS = ("azurecr.io", "azurecr.cn", "azurecr.de", "azurecr.us")

Log = _http.Log


class ExchangeError(ProviderError):
    """The registry refused or garbled the exchange; one line, never a token."""


class AuthDirective(NamedTuple):
    """The ``Bearer`` challenge of a login server."""

    service: str
    realm: str


def parse_assignments(text: str) -> dict[str, str]:
    """``key1=value1, key2="value 2", key3=""`` → dict (upstream's ``parseAssignments``).

    Quoted values keep commas and spaces (no escapes); unquoted values are trimmed and must
    not be empty.

    Raises:
        ExchangeError: a malformed list.
    """
    result: dict[str, str] = {}
    i, n = 0, len(text)
    while True:
        eq = text.find("=", i)
        if eq < 0:
            raise ExchangeError("malformed Www-Authenticate parameters")
        key = text[i:eq].strip()
        j = eq + 1
        while j < n and text[j].isspace():
            j += 1
        if j >= n:
            raise ExchangeError("malformed Www-Authenticate parameters")
        if text[j] == '"':
            close = text.find('"', j + 1)
            if close < 0:
                raise ExchangeError("malformed Www-Authenticate parameters")
            result[key] = text[j + 1 : close]
            k = close + 1
            while k < n and text[k].isspace():
                k += 1
            if k >= n:
                return result
            if text[k] != ",":
                raise ExchangeError("malformed Www-Authenticate parameters")
            i = k + 1
        else:
            comma = text.find(",", j)
            value = (text[j:] if comma < 0 else text[j:comma]).strip()
            if not value:
                raise ExchangeError("malformed Www-Authenticate parameters")
            result[key] = value
            if comma < 0:
                return result
            i = comma + 1


def parse_challenge(headers: list[str]) -> AuthDirective:
    """The directive of a 401's ``Www-Authenticate`` header values.

    Raises:
        ExchangeError: not exactly one header, not ``Bearer``, no realm or service.
    """
    if not headers:
        raise ExchangeError("challenge response does not contain header 'Www-Authenticate'")
    if len(headers) != 1:
        raise ExchangeError(
            f"registry did not issue a valid AAD challenge ({len(headers)} Www-Authenticate "
            "headers)"
        )
    scheme, _, params = headers[0].strip().partition(" ")
    if scheme.lower() != "bearer":
        raise ExchangeError(
            f"Www-Authenticate: expected realm: Bearer, actual: {scheme.lower()[:40]}"
        )
    values = parse_assignments(params)
    if not values.get("service"):
        raise ExchangeError('Www-Authenticate: missing header "service"')
    if not values.get("realm"):
        raise ExchangeError('Www-Authenticate: missing header "realm"')
    return AuthDirective(service=values["service"], realm=values["realm"])


def _b64url_json(part: str) -> Any:
    padded = part + "=" * (-len(part) % 4)
    return json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))


def jwt_claims(token: str) -> dict[str, Any] | None:
    """The (unverified) claims of a JWT, or None when ``token`` is not one."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        claims = _b64url_json(parts[1])
    except (ValueError, UnicodeError):
        return None
    return claims if isinstance(claims, dict) else None


def refresh_token_lifetime(token: str, now: float) -> float | None:
    """Seconds until the refresh token's ``exp`` (negative: expired), or None if unknown."""
    claims = jwt_claims(token)
    exp = claims.get("exp") if claims else None
    if isinstance(exp, bool) or not isinstance(exp, int | float):
        return None
    return float(exp) - now


class AcrClient:
    """Challenge and exchange against ACR login servers (see the module docstring).

    Args:
        acr_suffix: the cloud's ACR DNS suffix; its hosts are accepted realm hosts too.
        session: a ``requests.Session`` (default: a new one, honouring the proxy variables
            as upstream's Go client does); every request verifies against the node's CA
            store (:func:`credprov_acr._http.ca_file`).
        sleep: called with the seconds to wait between attempts.
        retries: how many times to retry (default :func:`credprov_acr._http.max_retries`).
        log: ``log(level, message)``; messages never hold a token.
    """

    def __init__(
        self,
        acr_suffix: str = "",
        session: Any = None,
        sleep: _http.Sleep = _http.sleep,
        retries: int | None = None,
        log: Log | None = None,
    ) -> None:
        import requests
        from requests.adapters import HTTPAdapter

        self._requests = requests
        self.session = session if session is not None else requests.Session()
        self.retries = _http.max_retries() if retries is None else retries
        self.log: Log = log or (lambda level, message: None)
        adapter = HTTPAdapter(max_retries=_http.retry(self.retries, sleep, self.log))
        for prefix in ("https://", "http://"):
            self.session.mount(prefix, adapter)
        self.acr_suffix = acr_suffix.strip().lstrip(".").lower()
        self.base_override = os.environ.get(LOGIN_SERVER_URL_ENV, "").strip().rstrip("/")

    # -- HTTP -------------------------------------------------------------------------------

    def _send(self, method: str, url: str, what: str, **kwargs: Any) -> tuple[Any, bytes]:
        """(last response, body up to the cap); the session's adapter retries.

        Raises:
            ExchangeError: no response, or a body over the cap.
        """
        from credprov.sdk.cacerts import CertPoolError

        requests = self._requests
        host = urlsplit(url).netloc
        try:
            verify = _http.ca_file()
        except CertPoolError as exc:
            raise ExchangeError(f"{what}: {exc}") from None
        try:
            resp = self.session.request(
                method,
                url,
                headers={"User-Agent": _http.USER_AGENT},
                timeout=_http.TIMEOUT,
                stream=True,
                allow_redirects=False,
                verify=verify,
                **kwargs,
            )
            with resp:
                return resp, self._read(resp, what)
        except requests.Timeout:
            raise ExchangeError(f"{what}: timed out talking to {host}") from None
        except requests.exceptions.SSLError:
            raise ExchangeError(
                f"{what}: TLS handshake with {host} failed (certificate not trusted?; "
                f"{_http.trusted()})"
            ) from None
        except requests.ConnectionError as exc:
            from urllib3.exceptions import ReadTimeoutError

            # After retries a read timeout arrives as urllib3's MaxRetryError.
            if isinstance(last_error(exc), ReadTimeoutError):
                raise ExchangeError(f"{what}: timed out talking to {host}") from None
            raise ExchangeError(f"{what}: cannot connect to {host}") from None
        except requests.RequestException as exc:
            raise ExchangeError(
                f"{what}: request to {host} failed ({type(exc).__name__})"
            ) from None

    @staticmethod
    def _read(resp: Any, what: str) -> bytes:
        try:
            return read_capped(resp.iter_content(CHUNK_BYTES), _http.MAX_BODY_BYTES)
        except BodyTooLarge:
            raise ExchangeError(f"{what}: the response is larger than the read limit") from None

    # -- protocol ---------------------------------------------------------------------------

    def challenge_url(self, login_server: str) -> str:
        """Where the ``/v2/`` challenge is fetched from."""
        base = self.base_override or f"https://{login_server}"
        return f"{base}/v2/"

    def challenge(self, login_server: str) -> AuthDirective:
        """Fetch and parse the login server's ``Bearer`` challenge.

        Raises:
            ExchangeError: unreachable, not a 401, or an unusable challenge.
        """
        url = self.challenge_url(login_server)
        self.log(4, f"discovering auth redirects for: {login_server} ({url})")
        resp, _ = self._send("GET", url, f"AAD challenge from {login_server}")
        if resp.status_code != 401:
            reason = _http.status_text(resp.status_code).partition(" (")[2]
            raise ExchangeError(
                f"registry {login_server} did not issue a valid AAD challenge, "
                f"status: {resp.status_code}" + (f" ({reason}" if reason else "")
            )
        raw_headers = getattr(resp.raw, "headers", None)
        if raw_headers is not None and hasattr(raw_headers, "getlist"):
            values = list(raw_headers.getlist("Www-Authenticate"))
        else:  # pragma: no cover - requests always has urllib3 headers
            value = resp.headers.get("Www-Authenticate")
            values = [value] if value is not None else []
        return parse_challenge(values)

    def exchange_url(self, login_server: str, directive: AuthDirective) -> str:
        """``<realm scheme>://<realm host>/oauth2/exchange``, once the realm is checked.

        Raises:
            ExchangeError: the realm is not https on an ACR host (or the override's host).
        """
        parts = urlsplit(directive.realm)
        host = (parts.hostname or "").lower()
        allowed_http = self.base_override.startswith("http://")
        if parts.scheme not in ("https", "http") or (parts.scheme == "http" and not allowed_http):
            raise ExchangeError(
                f"Www-Authenticate: the realm of {login_server} is not an https URL; "
                "not sending it the AAD token"
            )
        override_host = (urlsplit(self.base_override).hostname or "").lower()
        domains = (*ACR_DOMAINS, self.acr_suffix) if self.acr_suffix else ACR_DOMAINS
        if not (
            host == login_server.lower()
            or (override_host and host == override_host)
            or any(host.endswith("." + d) for d in domains if d)
        ):
            raise ExchangeError(
                f"Www-Authenticate: the realm host {host[:80]!r} of {login_server} is not an "
                "ACR host; not sending it the AAD token"
            )
        return f"{parts.scheme}://{parts.netloc}/oauth2/exchange"

    def exchange(
        self, login_server: str, directive: AuthDirective, tenant: str, aad_token: str
    ) -> str:
        """POST the AAD token to the realm's ``/oauth2/exchange``; the ACR refresh token.

        Raises:
            ExchangeError: refused, unreachable, not JSON, or no refresh token.
        """
        url = self.exchange_url(login_server, directive)
        form = {
            "service": directive.service,
            "grant_type": "access_token_refresh_token",
            "access_token": aad_token,
            "refresh_token": aad_token,
            "tenant": tenant,
        }
        self.log(4, f"exchanging an acr refresh_token at {urlsplit(url).netloc}")
        what = f"ACR token exchange for {login_server}"
        resp, body = self._send("POST", url, what, data=form)
        correlation = resp.headers.get("X-Ms-Correlation-Request-Id")
        if correlation:
            self.log(4, f"exchange correlation id: {correlation[:80]}")
        if resp.status_code != 200:
            raise ExchangeError(
                f"{what} failed: {_http.status_text(resp.status_code)}{_acr_error(body)}"
            )
        try:
            doc = json.loads(body)
        except ValueError:
            raise ExchangeError(f"{what} returned a response that is not JSON") from None
        token = doc.get("refresh_token") if isinstance(doc, dict) else None
        if not isinstance(token, str) or not token:
            raise ExchangeError(f"{what} returned no refresh_token")
        return token

    def refresh_token(self, login_server: str, tenant: str, aad_token: str) -> str:
        """Challenge, then exchange: the ACR refresh token for ``login_server``."""
        return self.exchange(login_server, self.challenge(login_server), tenant, aad_token)


def _acr_error(body: bytes) -> str:
    """``: CODE: message`` from an ACR error body (the caller scrubs secrets, then shortens)."""
    try:
        doc = json.loads(body)
    except ValueError:
        return ""
    errors = doc.get("errors") if isinstance(doc, dict) else None
    if not isinstance(errors, list) or not errors or not isinstance(errors[0], dict):
        return ""
    code = errors[0].get("code")
    message = errors[0].get("message")
    text = ": ".join(str(x) for x in (code, message) if isinstance(x, str) and x)
    # Not shortened here: a cut could leave part of a token the caller can no longer scrub.
    text = " ".join(text.split())
    return f": {text}" if text else ""
