"""Loopback fakes of the GCE metadata server and of STS, for offline tests and benchmarks.

Scripted servers of :mod:`tests.fakes.server` (standard library only). Point the plugin at them with ``GCE_METADATA_HOST=<fake.host>`` and
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
import threading
from typing import Any

from tests.fakes.server import FakeServer, Reply
from tests.fakes.tls import ServerCertificate

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

    def __init__(
        self, token: str = "ya29.fake-federated-token", tls: ServerCertificate | None = None
    ) -> None:
        super().__init__(tls)
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


def main() -> int:
    """``python -m tests.fakes.gcp`` (from the repository root): serve both fakes until
    interrupted, printing the environment that points the plugin at them."""
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
