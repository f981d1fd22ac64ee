"""AWS SDK plumbing: clients built as upstream's Go SDK config would, and error messages.

The ``ecr`` extra installs boto3; this module uses its core, botocore, directly (boto3's
own layer adds nothing here but ~40 ms of imports on every cache miss).

Upstream (Go SDK v2) builds every client from ``LoadDefaultConfig``. botocore's default chain
is the same in nearly everything (static keys, profiles and shared files, web identity /
IRSA, ECS and IMDS credentials, ``AWS_ENDPOINT_URL[_<SERVICE>]``, ``AWS_USE_FIPS_ENDPOINT``,
``AWS_CA_BUNDLE``, proxies); the one gap is the region: botocore ignores ``AWS_REGION``,
which the Go SDK reads before ``AWS_DEFAULT_REGION``, so :class:`Clients` passes it itself.

Trust: the Go SDK verifies TLS against the node's CA store (Go's ``x509.SystemCertPool``:
``SSL_CERT_FILE``, ``SSL_CERT_DIR``, then Go's list of files and directories), unless a
custom bundle is configured (``AWS_CA_BUNDLE`` or a profile's ``ca_bundle``), which then
replaces the store (``resolveCustomCABundle`` starts from an empty pool). botocore honours
the same two settings the same way, but without them trusts ``certifi``; so when neither
is set, :meth:`Clients.session` sets the session's ``ca_bundle`` to the node's store
(:mod:`credprov.sdk.cacerts`), for every client of the run, the credential chain's own STS
and SSO clients included.

Every client gets: the FIPS / dual-stack variant the registry host names (upstream ignores
both), HTTP timeouts that keep a call inside the kubelet's deadline (upstream: 30 s per
call), botocore's standard retry mode behind the call's time budget
(:mod:`credprov_ecr._retry`), and a check that a 200 answer is JSON at all (botocore
silently reads malformed JSON as ``{}``).

Error messages are built here from error codes and AWS's own messages, never from response
bodies (botocore's parser errors quote the body, which may hold a token, and botocore takes
the whole body of an error answer that is not AWS's, e.g. a proxy's HTML page, as its
message: such a body is dropped before botocore parses it, leaving the HTTP status).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import botocore.exceptions as bx
import botocore.session
from botocore import UNSIGNED
from botocore.config import Config
from botocore.parsers import ResponseParserError

from credprov.sdk import CredprovError
from credprov.sdk.cacerts import system_cert_pool
from credprov.sdk.http import status_text
from credprov.version import __version__
from credprov_ecr._retry import CallRetries

#: Per-attempt HTTP timeouts in seconds (connect, read): together with the retry budget they
#: keep a run well inside the kubelet's one-minute deadline.
CONNECT_TIMEOUT = 10
READ_TIMEOUT = 20

_MAX_MESSAGE = 300


class MalformedResponse(CredprovError):
    """A 200 answer whose body is not the JSON the API defines (the body is not kept)."""


def _check_json_body(response_dict: dict[str, Any], operation_model: Any, **_: Any) -> None:
    if operation_model.metadata.get("protocol") != "json":
        return
    status = response_dict.get("status_code")
    body = response_dict.get("body") or b""
    if status == 200:
        # botocore parses a malformed JSON body as {}: the caller would then report "empty
        # authorization data". Say what really happened instead.
        try:
            json.loads(body)
        except ValueError:
            raise MalformedResponse("the answer is not valid JSON") from None
    elif isinstance(status, int) and status >= 300 and not _is_aws_error(response_dict):
        # botocore quotes an error body it cannot read as the error's message (a proxy's
        # or load balancer's HTML page, whatever it holds). Without the body it reports the
        # status alone, which is all that is known about an answer that is not AWS's.
        response_dict["body"] = b""


def _is_aws_error(response_dict: dict[str, Any]) -> bool:
    """Whether an error answer is AWS's own: a JSON object naming its error type (``__type``),
    or one sent with the ``x-amzn-ErrorType`` header."""
    try:
        doc = json.loads(response_dict.get("body") or b"")
    except ValueError:
        return False
    if not isinstance(doc, dict):
        return False
    headers = {str(k).lower() for k in (response_dict.get("headers") or {})}
    return isinstance(doc.get("__type"), str) or "x-amzn-errortype" in headers


class Clients:
    """Creates the SDK clients of one plugin run (one session, shared).

    Tests subclass it to attach a ``botocore.stub.Stubber`` or an event hook to the clients
    it returns; everything else about them is real. ``botocore_session`` makes the underlying
    botocore session (default: a fresh one, as boto3 makes).
    """

    def __init__(
        self,
        env: Mapping[str, str],
        botocore_session: Callable[[], botocore.session.Session] | None = None,
    ) -> None:
        self._env = env
        self._botocore_session = botocore_session
        self._session: botocore.session.Session | None = None

    def session(self) -> botocore.session.Session:
        """The SDK session, with ``AWS_REGION`` honoured and the node's CA store trusted as
        the Go SDK does."""
        if self._session is None:
            session = (
                self._botocore_session() if self._botocore_session else botocore.session.Session()
            )
            region = self._env.get("AWS_REGION")
            if region:
                session.set_config_variable("region", region)
            if not session.get_config_variable("ca_bundle"):
                session.set_config_variable("ca_bundle", system_cert_pool(self._env).ca_file())
            self._session = session
        return self._session

    def default_region(self) -> str | None:
        """``AWS_REGION``, ``AWS_DEFAULT_REGION``, then the profile's region, or None."""
        region = self.session().get_config_variable("region")
        return str(region) if region else None

    def client(
        self,
        service: str,
        region: str | None,
        *,
        fips: bool = False,
        dualstack: bool = False,
        credentials: Mapping[str, str] | None = None,
        unsigned: bool = False,
        retries: CallRetries | None = None,
    ) -> Any:
        """A client for ``service`` in ``region`` (None: the default region).

        ``fips``/``dualstack`` force that endpoint variant; when False the SDK's own settings
        (``AWS_USE_FIPS_ENDPOINT``, the profile) still apply. An endpoint override
        (``AWS_ENDPOINT_URL_<SERVICE>``, ``AWS_ENDPOINT_URL``) wins over both. ``retries``:
        the call's retries (without: botocore's standard mode and its default attempts).
        """
        config = Config(
            connect_timeout=CONNECT_TIMEOUT,
            read_timeout=READ_TIMEOUT,
            retries={
                "mode": "standard",
                **({"total_max_attempts": retries.policy.max_attempts} if retries else {}),
            },
            use_fips_endpoint=True if fips else None,
            use_dualstack_endpoint=True if dualstack else None,
            user_agent_extra=f"credprov-ecr/{__version__}",
            **({"signature_version": UNSIGNED} if unsigned else {}),
        )
        kwargs: dict[str, Any] = {}
        if credentials is not None:
            kwargs = {
                "aws_access_key_id": credentials["AccessKeyId"],
                "aws_secret_access_key": credentials["SecretAccessKey"],
                "aws_session_token": credentials["SessionToken"],
            }
        client = self.session().create_client(service, region_name=region, config=config, **kwargs)
        client.meta.events.register("before-parse", _check_json_body)
        if retries is not None:
            retries.install(client)
        return client


def _one_line(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 1] + "…"


def describe(exc: BaseException) -> str:
    """One line about an AWS failure, without any response body.

    ``AccessDeniedException (HTTP 400): User: … is not authorized …`` for API errors (AWS's
    own message), ``HTTP 503 Service Unavailable`` when the body was not an AWS error,
    botocore's fixed-format text for client-side errors, and only the kind of problem for
    malformed answers.
    """
    if isinstance(exc, bx.ClientError):
        error = exc.response.get("Error", {})
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        code = str(error.get("Code", "") or "")
        message = _one_line(error.get("Message", "") or "")
        if not code or code == str(status):
            if not message and isinstance(status, int):
                return f"HTTP {status_text(status)}"  # an answer that said nothing else
            return f"HTTP {status} {message}".rstrip()
        return f"{code} (HTTP {status}): {message}" if message else f"{code} (HTTP {status})"
    if isinstance(exc, MalformedResponse):
        return f"malformed response: {exc}"
    if isinstance(exc, CredprovError):  # the CA store's file could not be written
        return str(exc)
    if isinstance(exc, bx.NoCredentialsError):
        return (
            "no AWS credentials found (environment, shared config and credentials files, "
            "web identity, container and instance metadata were tried)"
        )
    if isinstance(exc, ResponseParserError):
        return "malformed response: it does not parse"
    if isinstance(exc, bx.BotoCoreError):
        return _one_line(str(exc))
    # botocore's parser trips over JSON of the wrong shape with AttributeError, TypeError...
    return f"malformed response: unexpected content ({type(exc).__name__})"
