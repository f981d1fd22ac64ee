"""The handler of ``ecr-credential-provider``: an ECR authorization token for the image's host.

Behaviour of upstream's plugin (kubernetes/cloud-provider-aws ``cmd/ecr-credential-provider``):

1. The host is the image's URL hostname (:mod:`credprov_ecr.registry`).
2. KEP-4412: with a service-account token, the role is the annotation
   ``eks.amazonaws.com/ecr-role-arn``, else ``$AWS_ECR_ROLE_ARN``; STS
   ``AssumeRoleWithWebIdentity`` (session name ``ecr-credential-provider``) gives the
   credentials of the one ECR call. Without a role: the default credential chain.
3. ECR Public hosts: ``ecr-public`` ``GetAuthorizationToken`` in us-east-1. Any other host:
   ``ecr`` ``GetAuthorizationToken`` (no registry ids: the caller's token works for every
   registry it may pull from) in the host's region, or the default region for a host that is
   not an ECR name (a mirror or CNAME in front of ECR).
4. The token is base64 ``user:password``; the answer is ``{host: (user, password)}``,
   ``cacheKeyType: Registry``, ``cacheDuration`` half the token's remaining lifetime in
   whole seconds (omitted when that is not positive, ``0s`` when ECR gave no expiry).

Beyond upstream: ``-fips`` and dual-stack hosts use the matching API endpoints, botocore's
standard retries are kept within a time budget (:mod:`credprov_ecr._retry`), and the answer
stays in the plugin's own cache for ``cacheDuration`` (see ``main.py``). Failures raise
:class:`~credprov.sdk.ProviderError` with one line that never quotes a response body, the
service-account token or any credential.
"""

from __future__ import annotations

import base64
import binascii
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from credprov.sdk import Clock, Context, ProviderError, RealClock, Redactor, Request, Response
from credprov_ecr import _aws
from credprov_ecr._retry import CallRetries, RetryPolicy
from credprov_ecr.registry import (
    ECR_PUBLIC_REGION,
    ImageReferenceError,
    Registry,
    parse_host_from_image_reference,
    parse_registry,
)

#: The service-account annotation naming the role to assume (KEP-4412 mode).
ROLE_ANNOTATION = "eks.amazonaws.com/ecr-role-arn"
#: The environment variable naming it when the annotation is absent.
ROLE_ENV = "AWS_ECR_ROLE_ARN"
#: ``RoleSessionName`` of ``AssumeRoleWithWebIdentity``, as upstream.
ROLE_SESSION_NAME = "ecr-credential-provider"

Log = Callable[[int, str], None]


@dataclass(frozen=True)
class AuthorizationData:
    """The two fields of ECR's ``AuthorizationData`` the plugin uses."""

    token: str | None
    expires_at: datetime | None


def decode_authorization_token(token: str | None) -> tuple[str, str]:
    """``base64("user:password")`` → (user, password), split at the first colon.

    Raises:
        ProviderError: upstream's texts for a missing token or one without a colon; the token
            itself is never quoted.
    """
    if token is None:
        raise ProviderError("authorization token in response was nil")
    if not isinstance(token, str):
        raise ProviderError("malformed response: the authorization token is not a string")
    try:
        # Go's base64.StdEncoding: padding required, CR and LF ignored.
        raw = base64.b64decode(token.replace("\r", "").replace("\n", ""), validate=True)
    except (binascii.Error, ValueError):
        raise ProviderError("error decoding authorization token: illegal base64 data") from None
    username, colon, password = raw.decode("utf-8", "replace").partition(":")
    if not colon:
        raise ProviderError("error parsing username and password from authorization token")
    return username, password


def cache_duration(expires_at: datetime | None, now_ns: int) -> int | None:
    """Upstream's ``getCacheDuration`` in seconds: ``0`` without an expiry (do not cache),
    half the remaining whole seconds when positive, else None (the kubelet's default)."""
    if expires_at is None:
        return 0
    remaining = int(expires_at.timestamp() // 1) - now_ns // 1_000_000_000
    seconds = int(remaining / 2)  # Go's integer division truncates toward zero
    return seconds if seconds > 0 else None


class EcrCredentialProvider:
    """Gets ECR credentials for one image (one plugin run).

    Args:
        env: the environment (role ARN, region, ``AWS_MAX_ATTEMPTS``); default ``os.environ``.
        clients: the AWS client factory (tests hook its clients).
        clock: its wall-clock ``time()`` is what ``cacheDuration`` is computed against.
        sleep, monotonic: the retries' waiting and time budget (botocore's standard mode
            decides what to retry and how long to wait; see :mod:`credprov_ecr._retry`).
        log: ``log(level, message)``, shown at ``-v level``; never given a secret.
    """

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        clients: _aws.Clients | None = None,
        clock: Clock | None = None,
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
        log: Log | None = None,
    ) -> None:
        self.env: Mapping[str, str] = os.environ if env is None else env
        self.clients = clients if clients is not None else _aws.Clients(self.env)
        self.clock: Clock = clock if clock is not None else RealClock()
        self.policy = RetryPolicy.from_env(self.env)
        self._sleep = sleep
        self._monotonic = monotonic
        self._log: Log = log if log is not None else (lambda level, message: None)
        # Values that must never appear in a message, whatever an error says.
        self._secrets = [
            v for k in ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN") if (v := self.env.get(k))
        ]

    # -- the request --------------------------------------------------------------------------

    def get_credentials(
        self,
        image: str,
        service_account_token: str = "",
        service_account_annotations: Mapping[str, str] | None = None,
    ) -> Response:
        """The plugin's answer for ``image``.

        Raises:
            ProviderError: one line, secrets removed.
        """
        if not image:
            raise ProviderError("image in plugin request was empty")
        if service_account_token:
            self._secrets.append(service_account_token)
        try:
            host = parse_host_from_image_reference(image)
        except ImageReferenceError as exc:
            raise ProviderError(str(exc)) from None
        registry = parse_registry(host)
        # Resolve the region before any call: a host that is not an ECR name needs a default.
        region = ECR_PUBLIC_REGION if registry.public else self._private_region(registry)

        credentials = None
        if service_account_token:
            annotations = service_account_annotations or {}
            role_arn = annotations.get(ROLE_ANNOTATION) or self.env.get(ROLE_ENV, "")
            if role_arn:
                credentials = self._assume_role(role_arn, service_account_token, registry)
            else:
                self._log(1, "no arn provided, cannot assume role using ServiceAccountToken")

        if registry.public:
            self._log(1, "Getting creds for public registry")
            data = self._public_authorization(registry, credentials)
        else:
            self._log(1, f"Getting creds for private image {image}")
            data = self._private_authorization(registry, region, credentials)

        username, password = decode_authorization_token(data.token)
        # Token expiry is wall-clock time: the clock's time(), in whole seconds.
        seconds = cache_duration(data.expires_at, int(self.clock.time()) * 1_000_000_000)
        self._log(
            2,
            f"token for {host} as {username!r}; cacheDuration "
            + (f"{seconds}s" if seconds is not None else "omitted (expired)"),
        )
        # The token's own expiry, for the telemetry's expiry gauge (when it is on).
        expires_at = data.expires_at.timestamp() if data.expires_at is not None else None
        return Response({host: (username, password)}, "Registry", seconds, expires_at=expires_at)

    # -- AWS calls ----------------------------------------------------------------------------

    def _assume_role(self, role_arn: str, token: str, registry: Registry) -> dict[str, str]:
        region = registry.region if registry.region and not registry.public else None
        region = region or self._default_region() or ECR_PUBLIC_REGION
        self._log(2, f"assuming role {role_arn} with the service-account token (STS {region})")

        def call(retries: CallRetries) -> dict[str, str]:
            sts = self.clients.client(
                "sts",
                region,
                fips=registry.fips,
                dualstack=registry.dualstack,
                unsigned=True,  # the token is the credential: never resolve the node's
                retries=retries,
            )
            out = sts.assume_role_with_web_identity(
                RoleArn=role_arn, RoleSessionName=ROLE_SESSION_NAME, WebIdentityToken=token
            )
            creds = out.get("Credentials") if isinstance(out, dict) else None
            if not isinstance(creds, dict) or not all(
                isinstance(creds.get(k), str)
                for k in ("AccessKeyId", "SecretAccessKey", "SessionToken")
            ):
                raise _aws.MalformedResponse("no credentials in the answer")
            return creds

        creds = self._call(
            "AssumeRoleWithWebIdentity", "STS", region, call, "failed to assume role"
        )
        self._secrets.extend((creds["SecretAccessKey"], creds["SessionToken"]))
        return creds

    def _public_authorization(
        self, registry: Registry, credentials: Mapping[str, str] | None
    ) -> AuthorizationData:
        def call(retries: CallRetries) -> AuthorizationData:
            client = self.clients.client(
                "ecr-public",
                ECR_PUBLIC_REGION,
                dualstack=registry.dualstack,
                credentials=credentials,
                retries=retries,
            )
            out = client.get_authorization_token()
            data = out.get("authorizationData") if isinstance(out, dict) else None
            if data is None:
                raise ProviderError("authorization data was empty")
            return _authorization_data(data)

        return self._call("GetAuthorizationToken", "ECR Public", ECR_PUBLIC_REGION, call)

    def _private_region(self, registry: Registry) -> str:
        if registry.region:
            return registry.region
        self._log(
            1,
            "No region found in the image reference, the default region will be used. "
            "Please refer to AWS SDK documentation for configuration purpose.",
        )
        region = self._default_region()
        if not region:
            raise ProviderError(
                f"{registry.host} is not an ECR registry host and no default AWS region is "
                "configured (set AWS_REGION or AWS_DEFAULT_REGION, or a profile's region)"
            )
        return region

    def _private_authorization(
        self, registry: Registry, region: str, credentials: Mapping[str, str] | None
    ) -> AuthorizationData:
        def call(retries: CallRetries) -> AuthorizationData:
            client = self.clients.client(
                "ecr",
                region,
                fips=registry.fips,
                dualstack=registry.dualstack,
                credentials=credentials,
                retries=retries,
            )
            out = client.get_authorization_token()
            data = out.get("authorizationData") if isinstance(out, dict) else None
            if not data:
                raise ProviderError("authorization data was empty")
            if not isinstance(data, list):
                raise _aws.MalformedResponse("authorizationData is not a list")
            return _authorization_data(data[0])

        return self._call("GetAuthorizationToken", "ECR", region, call)

    def _default_region(self) -> str | None:
        try:
            return self.clients.default_region()
        except Exception as exc:  # e.g. ProfileNotFound for a bad AWS_PROFILE
            raise ProviderError(self._scrub(f"AWS configuration: {_aws.describe(exc)}")) from None

    def _call(
        self,
        operation: str,
        service: str,
        region: str,
        fn: Callable[[CallRetries], Any],
        prefix: str = "",
    ) -> Any:
        """``fn(retries)``: one API call on clients it makes with ``retries``; its failure
        as one line (with the number of attempts when there were several)."""

        def on_retry(kind: str, attempt: int, delay: float) -> None:
            self._log(1, f"{operation}: {kind} on attempt {attempt}, retrying in {delay:.2f}s")

        where = f"{operation} ({service}, {region})"
        retries = CallRetries(
            self.policy, sleep=self._sleep, monotonic=self._monotonic, on_retry=on_retry
        )
        try:
            return fn(retries)
        except ProviderError as exc:
            raise ProviderError(self._scrub(_join(prefix, str(exc)))) from None
        except Exception as exc:
            self._log(4, f"{where}: {_where_raised(exc)}")
            detail = f"{where}: {_aws.describe(exc)}"
            if retries.attempts > 1:
                detail += f" (gave up after {retries.attempts} attempts)"
            raise ProviderError(self._scrub(_join(prefix, detail))) from None

    def _scrub(self, message: str) -> str:
        return Redactor(self._secrets)(message)


def _where_raised(exc: BaseException) -> str:
    """``TypeName in file:line`` of the innermost frame: for ``-v 4``, without the message
    (which may quote the answer)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None:
        return type(exc).__name__
    return f"{type(exc).__name__} in {tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}"


def _join(prefix: str, message: str) -> str:
    return f"{prefix}: {message}" if prefix else message


def _authorization_data(data: Any) -> AuthorizationData:
    if not isinstance(data, dict):
        raise _aws.MalformedResponse("authorizationData has the wrong shape")
    expires = data.get("expiresAt")
    return AuthorizationData(
        token=data.get("authorizationToken"),
        expires_at=expires if isinstance(expires, datetime) else None,
    )


def provide(request: Request, ctx: Context) -> Response:
    """The SDK handler: answer ``request`` from ECR (see the module docstring)."""
    provider = EcrCredentialProvider(log=ctx.log)
    return provider.get_credentials(
        request.image, request.service_account_token, request.service_account_annotations
    )
