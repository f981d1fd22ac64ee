"""The GCE metadata server, as upstream uses it.

``http://<GCE_METADATA_HOST>/computeMetadata/v1/<path>`` with ``Metadata-Flavor: Google``
and upstream's ``User-Agent``, a 10 s timeout per request, no query string (google-auth's
``compute_engine.Credentials`` would add ``?scopes=``, upstream does not), never through a
proxy. Any status but 200 is an error, as upstream; unlike upstream, errors are reported
(exit 1) instead of becoming an empty answer.
"""

from __future__ import annotations

from credprov.sdk.http import status_text
from credprov_gcp._http import HttpFailure, Transport, attempts_note
from credprov_gcp.errors import GCPError
from credprov_gcp.tokens import AccessToken, parse_token_response

METADATA_TIMEOUT = 10.0
TOKEN_PATH = "instance/service-accounts/default/token"
EMAIL_PATH = "instance/service-accounts/default/email"
ATTRIBUTE_PATH = "instance/attributes/"


class MetadataClient:
    """Reads from one metadata server through ``transport`` (injected)."""

    def __init__(self, host: str, transport: Transport) -> None:
        self.host = host
        self.root = f"http://{host}/computeMetadata/v1/"
        self.transport = transport

    def get(self, path: str, what: str) -> bytes:
        """The body of ``path`` (relative to the root).

        Raises:
            GCPError: unreachable, or a status other than 200.
        """
        try:
            resp = self.transport(
                self.root + path,
                "GET",
                headers={"Metadata-Flavor": "Google"},
                timeout=METADATA_TIMEOUT,
            )
        except HttpFailure as exc:
            if not exc.unreachable:
                raise GCPError(f"metadata server {self.host}: {what}: {exc.detail}") from None
            raise GCPError(
                f"cannot reach the metadata server at {self.host} for {what} "
                f"({exc.detail}): not a GCE/GKE node? "
                "(GCE_METADATA_HOST names another metadata server)"
            ) from None
        if resp.status != 200:
            raise GCPError(
                f"metadata server {self.host}: {what}: HTTP {status_text(resp.status)}"
                f"{attempts_note(resp.attempts)}"
            )
        return resp.data

    def service_account_token(self) -> AccessToken:
        """The default service account's access token (``expires_in`` kept, not ignored).

        Raises:
            GCPError: unreachable, an error status, or a malformed or expired token.
        """
        what = "the node service account token"
        data = self.get(TOKEN_PATH, what)
        return parse_token_response(
            data, f"metadata server {self.host}: {what}", "the node service account"
        )

    def service_account_email(self) -> str:
        """The default service account's email (upstream reads it too, then drops it).

        Raises:
            GCPError: unreachable, an error status, or not text.
        """
        data = self.get(EMAIL_PATH, "the node service account email")
        try:
            return data.decode("utf-8").strip()
        except UnicodeDecodeError:
            raise GCPError(
                f"metadata server {self.host}: the node service account email is not text"
            ) from None

    def attribute(self, name: str) -> bytes:
        """Instance attribute ``name`` (``google-dockercfg``, ``google-dockercfg-url``).

        Raises:
            GCPError: unreachable, or an error status (404: the attribute is not set).
        """
        return self.get(ATTRIBUTE_PATH + name, f"instance attribute {name}")
