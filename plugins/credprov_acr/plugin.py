"""The handler of ``acr-credential-provider``: ACR credentials for one kubelet request.

The answer is upstream's (``GetCredentials`` in ``azure_credentials.go``):

* not an ACR image (after the mirror): ``cacheKeyType: Registry``, ``cacheDuration: 0s``,
  no ``auth``;
* ``useManagedIdentityExtension`` false: the service principal for ``*.azurecr.io``,
  ``*.azurecr.cn``, ``*.azurecr.de``, ``*.azurecr.us`` (and a custom cloud's suffix), plus the
  anonymous ``*.azurecr.*`` entry, cached for an hour;
* otherwise an AAD token of the chosen credential (:mod:`credprov_acr.credentials`) is
  exchanged for an ACR refresh token (:mod:`credprov_acr.exchange`), answered with username
  ``00000000-0000-0000-0000-000000000000`` for the login server and, for a mirrored image,
  the mirror's source, plus the anonymous entry.

Upstream caches every ACR answer for one hour; here a refresh-token answer lives as long as
the token (its ``exp``, less :data:`REFRESH_MARGIN_SECONDS`), an expired token is an error,
and an answer for a mirror source with a path is keyed per image (a registry-wide key would
hand the answer to images the mirror does not serve).

Every failure is one :class:`~credprov.sdk.ProviderError` line; the client secret, the AAD
token and the refresh token are scrubbed from it whatever produced it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from credprov.sdk import Context, ProviderError, Redactor, Request, Response
from credprov_acr import _http
from credprov_acr.cloud import Environment
from credprov_acr.config import AzureConfig
from credprov_acr.identity_bindings import IdentityBindings
from credprov_acr.registry import (
    ANONYMOUS_KEY,
    LoginServer,
    parse_login_server,
    parse_registry_mirror,
    service_principal_keys,
)

if TYPE_CHECKING:
    from credprov_acr.credentials import Choice

#: Upstream's cache duration of every ACR answer (``defaultCacheTTL``).
DEFAULT_CACHE_SECONDS = 3600

#: A refresh-token answer is cached until this long before the token expires.
REFRESH_MARGIN_SECONDS = 300

#: Answers that would live shorter than this are not cached at all (``0s``).
MIN_CACHE_SECONDS = 60

#: Error messages are cut to this length, after secrets are scrubbed.
MAX_MESSAGE = 400


class Options(NamedTuple):
    """The plugin's arguments, as ``credprov_acr.main`` hands them to the SDK."""

    config_path: str
    registry_mirror: str = ""
    ib: IdentityBindings = IdentityBindings()

    @classmethod
    def from_mapping(cls, options: Mapping[str, Any]) -> Options:
        """From the SDK's ``ctx.options`` (option name → value)."""

        def text(name: str) -> str:
            value = options.get(name)
            return value if isinstance(value, str) else ""

        return cls(
            config_path=text("azure-config"),
            registry_mirror=text("registry-mirror"),
            ib=IdentityBindings(
                sni_name=text("ib-sni-name"),
                default_client_id=text("ib-default-client-id"),
                default_tenant_id=text("ib-default-tenant-id"),
                apiserver_ip=text("ib-apiserver-ip"),
            ),
        )


class _Secrets:
    """Every secret the handler has seen, to scrub from messages."""

    def __init__(self) -> None:
        self.redactor = Redactor()

    def add(self, value: str) -> str:
        """Remember ``value`` (and, for a JWT, its payload and signature on their own, in
        case a server quotes only part of it); returns it."""
        parts = value.split(".") if value.count(".") == 2 else []
        for part in [value, *(p for p in parts if len(p) >= 16)]:
            self.redactor.add(part)
        return value

    def scrub(self, message: str) -> str:
        """``message`` without any remembered secret, then shortened to one line of at most
        :data:`MAX_MESSAGE` characters."""
        message = " ".join(self.redactor(message).split())
        return message if len(message) <= MAX_MESSAGE else message[: MAX_MESSAGE - 3] + "..."


class AcrProvider:
    """Answers requests for one set of options (one plugin run).

    Args:
        options: the parsed arguments.
        log: ``log(level, message)``; never given a secret.
        clock: seconds since the epoch (injectable for tests).
        sleep: waits between retries (injectable for tests).
    """

    def __init__(
        self,
        options: Options,
        log: Callable[[int, str], None] | None = None,
        clock: Callable[[], float] = time.time,
        sleep: _http.Sleep = _http.sleep,
    ) -> None:
        self.options = options
        self.log = log or (lambda level, message: None)
        self.clock = clock
        self.sleep = sleep
        self.secrets = _Secrets()

    def provide(self, request: Request) -> Response:
        """The response for ``request`` (see the module docstring).

        Raises:
            ProviderError: one line, secrets scrubbed.
        """
        self.secrets.add(request.service_account_token)
        try:
            return self._provide(request)
        except ProviderError as exc:
            raise ProviderError(self.secrets.scrub(str(exc))) from None

    def _provide(self, request: Request) -> Response:
        from credprov_acr import cloud, config

        cfg = config.load(self.options.config_path)
        self.secrets.add(cfg.aad_client_secret)
        env = cloud.resolve(cfg.cloud, cfg.resource_manager_endpoint)
        mirrors, invalid = parse_registry_mirror(self.options.registry_mirror)
        for entry in invalid:
            self.log(0, f"ignoring invalid --registry-mirror entry {entry!r} (want SOURCE:TARGET)")
        target = parse_login_server(request.image, mirrors, env.acr_suffix)
        if target is None:
            self.log(2, f"image({request.image}) is not from ACR, return empty authentication")
            return Response({}, "Registry", 0)
        self.log(
            2,
            f"{request.image}: login server {target.server}"
            + (f" (mirror of {target.mirror.source})" if target.mirror else ""),
        )
        if not cfg.use_managed_identity_extension:
            return self._service_principal(cfg, env)
        return self._refresh_token(request, cfg, env, target)

    def _service_principal(self, cfg: AzureConfig, env: Environment) -> Response:
        self.log(2, "useManagedIdentityExtension is false: answering with the service principal")
        auth: dict[str, tuple[str, str]] = {ANONYMOUS_KEY: ("", "")}
        for key in service_principal_keys(env.acr_suffix):
            auth[key] = (cfg.aad_client_id, cfg.aad_client_secret)
        return Response(auth, "Registry", DEFAULT_CACHE_SECONDS)

    def _refresh_token(
        self, request: Request, cfg: AzureConfig, env: Environment, target: LoginServer
    ) -> Response:
        from credprov_acr import credentials
        from credprov_acr.exchange import DOCKER_TOKEN_LOGIN_USERNAME_GUID, AcrClient

        choice: Choice = credentials.choose(
            cfg,
            self.options.ib,
            request.service_account_token,
            request.service_account_annotations,
            mirrored=target.mirror is not None,
        )
        self.log(2, f"using the {choice.describe()} for {target.server}, scope {env.acr_scope}")
        aad_token = self.secrets.add(
            credentials.get_token(
                choice,
                env.acr_scope,
                env.authority_host,
                assertion=request.service_account_token,
                ib=self.options.ib,
                sleep=self.sleep,
                log=self.log,
            )
        )
        client = AcrClient(env.acr_suffix, sleep=self.sleep, log=self.log)
        refresh = self.secrets.add(
            client.refresh_token(target.server, choice.exchange_tenant, aad_token)
        )
        seconds = self._cache_seconds(refresh, target.server)
        creds = (DOCKER_TOKEN_LOGIN_USERNAME_GUID, refresh)
        auth: dict[str, tuple[str, str]] = {ANONYMOUS_KEY: ("", ""), target.server: creds}
        key_type = "Registry"
        if target.mirror is not None:
            auth[target.mirror.source] = creds
            if target.mirror.has_path:
                key_type = "Image"
        return Response(auth, key_type, seconds)

    def _cache_seconds(self, refresh_token: str, server: str) -> int:
        from credprov_acr.exchange import ExchangeError, refresh_token_lifetime

        lifetime = refresh_token_lifetime(refresh_token, self.clock())
        if lifetime is None:
            self.log(3, "the refresh token has no readable exp: caching for the default hour")
            return DEFAULT_CACHE_SECONDS
        if lifetime <= 0:
            raise ExchangeError(
                f"ACR token exchange for {server} returned an expired refresh token "
                f"(expired {int(-lifetime)}s ago; is the node's clock right?)"
            )
        seconds = int(lifetime - REFRESH_MARGIN_SECONDS)
        if seconds < MIN_CACHE_SECONDS:
            self.log(2, f"the refresh token expires in {int(lifetime)}s: not caching the answer")
            return 0
        return seconds


def provide(request: Request, ctx: Context) -> Response:
    """The SDK handler (``credprov_acr.plugin:provide``)."""
    return AcrProvider(Options.from_mapping(ctx.options), log=ctx.log).provide(request)
