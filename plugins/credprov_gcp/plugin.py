"""The handler of ``auth-provider-gcp``: one request, one answer (the cold path).

``gcr`` flow: refuse a registry that is not Google's (unless allowed), get a token — the
pod's federated token with workload identity, else the node service account's from the
metadata server (then its email, as upstream) — and answer it as ``_token`` under
upstream's key set, ``cacheKeyType`` from ``KUBE_SIDECAR_CACHE_TYPE`` and a
``cacheDuration`` the token outlives. ``dockercfg`` / ``dockercfg-url`` flows: the
credentials stored in instance metadata, verbatim.

Only this module and the ones it imports need the ``gcp`` extra.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from credprov.sdk import HOUR, Context, Request, Response, format_duration
from credprov_gcp import dockercfg, workload_identity
from credprov_gcp._http import Transport, run_budget
from credprov_gcp.metadata import MetadataClient
from credprov_gcp.registries import (
    TOKEN_USERNAME,
    image_registry,
    is_google_registry,
    registry_keys,
)
from credprov_gcp.settings import Settings
from credprov_gcp.tokens import AccessToken, token_cache_duration, token_expires_at

#: How long a "not a Google registry" answer may be cached when no
#: ``KUBE_SIDECAR_CACHE_DURATION`` is set: it depends only on the arguments.
REFUSAL_CACHE_NS = 1 * HOUR


class Transports:
    """The run's two transports, sharing one time budget: metadata (no proxy) and external
    (STS, ``google-dockercfg-url``: proxy settings honoured)."""

    def __init__(self, sleep: Callable[[float], None] = time.sleep) -> None:
        budget = run_budget()
        self.metadata = Transport(budget, trust_env=False, sleep=sleep)
        self.external = Transport(budget, trust_env=True, sleep=sleep)


def provide(
    request: Request, ctx: Context, *, sleep: Callable[[float], None] | None = None
) -> Response:
    """Answer ``request`` (see the module docstring).

    Args:
        sleep: replaces ``time.sleep`` between retries (tests).

    Raises:
        GCPError: the answer cannot be given (one line, no secrets; exit 1).
    """
    settings = Settings.from_options(ctx.options)
    transports = Transports(sleep or time.sleep)
    metadata = MetadataClient(settings.metadata_host, transports.metadata)
    if settings.auth_flow == "dockercfg":
        auth = dockercfg.from_attribute(metadata)
        return _stored_credentials(auth, settings, ctx)
    if settings.auth_flow == "dockercfg-url":
        auth = dockercfg.from_url(metadata, transports.external)
        return _stored_credentials(auth, settings, ctx)

    registry = image_registry(request.image)
    if (
        registry is not None
        and not settings.allow_non_google_registries
        and not is_google_registry(registry)
    ):
        ctx.log(
            1,
            f"{registry} is not a Google registry: no credentials "
            "(--allow-non-google-registries sends the token anyway)",
        )
        ns = settings.sidecar_duration_ns
        return Response({}, "Registry", format_duration(REFUSAL_CACHE_NS if ns is None else ns))

    token = _token(request, settings, ctx, metadata, transports)
    keys = registry_keys(request.image)
    duration = token_cache_duration(token.expires_in, settings.sidecar_duration_ns)
    expiry = "no expires_in" if token.expires_in is None else f"expires in {token.expires_in:g}s"
    ctx.log(
        2,
        f"{request.image}: token of {token.source} ({expiry}) under "
        f"{', '.join(keys)}; cacheKeyType {settings.cache_key_type}, cacheDuration {duration}",
    )
    return Response(
        {key: (TOKEN_USERNAME, token.token) for key in keys},
        settings.cache_key_type,
        duration,
        expires_at=token_expires_at(token, time.time()),
    )


def _token(
    request: Request,
    settings: Settings,
    ctx: Context,
    metadata: MetadataClient,
    transports: Transports,
) -> AccessToken:
    if workload_identity.enabled(settings, request):
        # Level 4: a line logged before a failure would reach the kubelet's error message,
        # and the documented config runs with --v=3.
        ctx.log(4, f"workload identity: token exchange at {settings.sts_endpoint}")
        return workload_identity.exchange(settings, request, transports.external)
    token = metadata.service_account_token()
    email = metadata.service_account_email()
    ctx.log(3, f"node service account {email or '(no email)'} from {settings.metadata_host}")
    return token


def _stored_credentials(
    auth: dict[str, tuple[str, str]], settings: Settings, ctx: Context
) -> Response:
    # No expiry is known: KUBE_SIDECAR_CACHE_DURATION if set, else no cacheDuration, so the
    # kubelet applies the provider's defaultCacheDuration (upstream answers 0s).
    ns = settings.sidecar_duration_ns
    ctx.log(2, f"{settings.auth_flow}: {len(auth)} registr{'y' if len(auth) == 1 else 'ies'}")
    return Response(auth, settings.cache_key_type, None if ns is None else format_duration(ns))
