"""One configured provider: matching, caching and singleflight around its plugin.

Mirrors ``pluginProvider.provide`` in ``pkg/credentialprovider/plugin/plugin.go`` (1.34+):

1. images outside ``matchImages`` get nothing;
2. with ``tokenAttributes`` (KEP-4412) the pod's service account supplies a token and
   annotations, or the plugin is skipped;
3. the cache is searched by image, then registry, then ``<global>``, after purging expired
   entries every 15 minutes;
4. a miss runs the plugin once per concurrent key (singleflight); errors are never cached;
5. the response's ``cacheKeyType`` picks the cache key; ``cacheDuration`` (or the provider's
   ``defaultCacheDuration``) of ``0`` means "do not cache".
"""

from __future__ import annotations

import functools
import logging
import threading
from typing import NamedTuple

from credprov._go.fmt import go_quote
from credprov._go.singleflight import Group
from credprov.api import internal
from credprov.base.clock import Clock, RealClock
from credprov.base.hashing import sha256
from credprov.credentialprovider.cache import (
    GLOBAL_CACHE_KEY,
    CacheEntry,
    CacheKeyError,
    ExpirationCache,
    generate_cache_key,
    generate_service_account_cache_key,
    generate_single_flight_key,
)
from credprov.credentialprovider.chain import (
    GetServiceAccount,
    GetServiceAccountToken,
    MissingAnnotationError,
    PodInfo,
    ProvideResult,
    ServiceAccountError,
    TokenRequest,
)
from credprov.credentialprovider.plugin.exec import ExecPlugin, PluginError
from credprov.imageauth.images import parse_registry
from credprov.imageauth.keyring import (
    CredentialOrigin,
    ServiceAccountCoordinates,
    tracked_auth_configs,
)
from credprov.imageauth.matching import (
    host_match_paths,
    split_plain_target,
    urls_match_str,
)

log = logging.getLogger("credprov.plugin")


class _Identity(NamedTuple):
    """Who a lookup is for: the KEP-4412 token and annotations sent to the plugin, the
    service-account part of the cache key, and the singleflight key."""

    token: str
    annotations: dict[str, str]
    sa_cache_key: bytes
    flight_key: bytes | str


def _cache_key_base(image: str, key_type: str) -> str | None:
    """The cache key's base for a response's ``cacheKeyType``; None for an invalid type."""
    if key_type == internal.CACHE_KEY_IMAGE:
        return image
    if key_type == internal.CACHE_KEY_REGISTRY:
        return parse_registry(image)
    if key_type == internal.CACHE_KEY_GLOBAL:
        return GLOBAL_CACHE_KEY
    return None


class PluginProvider:
    """A provider from the config with its plugin, cache and singleflight group."""

    def __init__(
        self,
        provider: internal.CredentialProvider,
        plugin: ExecPlugin,
        clock: Clock | None = None,
        service_account_token_gate: bool = True,
        get_service_account: GetServiceAccount | None = None,
        get_service_account_token: GetServiceAccountToken | None = None,
    ) -> None:
        self.provider = provider
        self.name = provider.name
        self.plugin = plugin
        self.clock = clock or RealClock()
        self.cache = ExpirationCache(self.clock)
        self._group: Group[internal.CredentialProviderResponse] = Group()
        ta = provider.token_attributes
        self.token_attributes = (
            ta
            if service_account_token_gate and ta is not None and ta.service_account_token_audience
            else None
        )
        self.get_service_account = get_service_account
        self.get_service_account_token = get_service_account_token
        self.executions = 0
        self._executions_lock = threading.Lock()
        # authority -> paths of the matchImages whose host part matches it (see
        # matching.split_plain_target): matching is worked out once per registry.
        self._host_paths: dict[str, tuple[str, ...]] = {}

    def is_image_allowed(self, image: str) -> bool:
        """Whether ``image`` matches one of the provider's ``matchImages``
        (matching is worked out once per registry host).
        """
        split = split_plain_target(image)
        if split is None:
            return _image_allowed(self.provider.match_images, image)
        host, path = split
        paths = self._host_paths.get(host)
        if paths is None:
            paths = host_match_paths(self.provider.match_images, host)
            if len(self._host_paths) >= _HOST_MEMO_SIZE:
                self._host_paths = {}
            self._host_paths[host] = paths
        return any(path.startswith(prefix) for prefix in paths)

    def provide(self, image: str, pod: PodInfo | None = None) -> ProvideResult:
        """Credentials for ``image`` (already normalised by ``parse_image_name``)."""
        return self.provide_entry(image, pod)[0]

    def provide_entry(
        self, image: str, pod: PodInfo | None = None
    ) -> tuple[ProvideResult, CacheEntry | None]:
        """``provide``, plus the cache entry that answered (None unless a cache hit).

        The kubelet's ``provide()`` step by step, in upstream's order: matchImages, the
        service account (KEP-4412), the cache, the plugin once per key (singleflight), and
        the answer checked and cached.
        """
        result = ProvideResult(name=self.name)
        if not self.is_image_allowed(image):
            return result, None
        result.matched = True
        identity = self._identity(image, pod or PodInfo(), result)
        if identity is None:
            return result, None
        try:
            entry = self._cached(image, identity.sa_cache_key)
        except CacheKeyError as exc:
            result.error = f"error generating cache key: {exc}"
            return result, None
        if entry is not None:
            result.cached = True
            result.auth = dict(entry.credentials)
            result.credentials = list(entry.tracked)
            result.cache_key_type = entry.cache_key_type
            result.cache_duration = entry.cache_duration
            return result, entry

        request = internal.CredentialProviderRequest(
            image=image,
            service_account_token=identity.token,
            service_account_annotations=identity.annotations,
        )
        result.executed = True
        try:
            response, joined = self._group.do(identity.flight_key, lambda: self._exec(request))
        except PluginError as exc:
            result.error = str(exc)
            log.error(
                "Failed getting credential from external registry credential provider: %s", exc
            )
            return result, None
        # A caller that joined another caller's in-flight run did not execute the plugin.
        result.executed = not joined
        self._accept(image, identity, response, result)
        return result, None

    def _identity(self, image: str, pod: PodInfo, result: ProvideResult) -> _Identity | None:
        """Who asks: the pod's service-account token, annotations and cache keys when the
        provider has ``tokenAttributes``. None when the lookup ends here, with
        ``result.skipped`` or ``result.error`` saying why."""
        ta = self.token_attributes
        if ta is None or not pod.service_account_name:
            if ta is not None and ta.require_service_account:
                result.skipped = "provider requires a service account and the pod has none"
                log.debug("%s: %s", self.name, result.skipped)
                return None
            return _Identity("", {}, b"", image)
        try:
            token, annotations, coords = self._service_account(pod, ta)
        except MissingAnnotationError as exc:
            result.skipped = str(exc)
            log.debug("%s: %s", self.name, exc)
            return None
        except ServiceAccountError as exc:
            result.error = str(exc)
            log.error("%s: %s", self.name, exc)
            return None
        token_hash = _token_hash(token)
        try:
            sa_cache_key = generate_service_account_cache_key(
                pod.namespace,
                pod.service_account_name,
                coords.uid,
                annotations,
                ta.cache_type,
                token_hash,
            )
            flight_key = generate_single_flight_key(image, token_hash, annotations)
        except CacheKeyError as exc:
            result.error = f"error generating cache key: {exc}"
            return None
        result.service_account = coords
        return _Identity(token, annotations, sa_cache_key, flight_key)

    def _accept(
        self,
        image: str,
        identity: _Identity,
        response: internal.CredentialProviderResponse,
        result: ProvideResult,
    ) -> None:
        """Check the plugin's answer, record it in ``result`` and cache it for its
        ``cacheKeyType`` and duration; a refused answer sets ``result.error`` instead."""
        ta = self.token_attributes
        token = identity.token
        echo_allowed = ta is not None and ta.cache_type == internal.TOKEN_CACHE_TYPE_TOKEN
        if token and not echo_allowed and any(a.password == token for a in response.auth.values()):
            result.error = (
                "credential provider plugin returned the service account token as the "
                "password, which is not allowed when cacheType is not Token"
            )
            log.error("%s: %s", self.name, result.error)
            return
        key_type = response.cache_key_type
        base = _cache_key_base(image, key_type)
        if base is None:
            result.error = (
                "credential provider plugin did not return a valid cacheKeyType: "
                + go_quote(key_type)
            )
            log.error("%s", result.error)
            return
        result.cache_key_type = key_type
        result.auth = dict(response.auth)
        source = (
            CredentialOrigin(service_account=result.service_account)
            if result.service_account is not None
            else None
        )
        result.credentials = tracked_auth_configs(response.auth, source, self.name)
        duration = response.cache_duration
        if duration is None:
            duration = self.provider.default_cache_duration or 0
        result.cache_duration = duration
        if duration == 0:  # the plugin's 0 or the provider's: do not cache
            return
        try:
            key = generate_cache_key(base, identity.sa_cache_key)
        except CacheKeyError as exc:
            result.error = f"error generating cache key: {exc}"
            result.auth = {}
            result.credentials = []
            return
        self.cache.add(
            CacheEntry(
                key=key,
                credentials=dict(response.auth),
                expires_at=self.clock.now() + duration,
                cache_key_type=key_type,
                cache_duration=duration,
                tracked=result.credentials,
            )
        )

    def _exec(
        self, request: internal.CredentialProviderRequest
    ) -> internal.CredentialProviderResponse:
        with self._executions_lock:
            self.executions += 1
        return self.plugin.exec(request)

    def _cached(self, image: str, sa_cache_key: bytes) -> CacheEntry | None:
        # Purge if due, then probe image, registry, <global>: one lock for all four steps.
        try:
            if sa_cache_key:
                keys = (
                    generate_cache_key(image, sa_cache_key),
                    generate_cache_key(parse_registry(image), sa_cache_key),
                    generate_cache_key(GLOBAL_CACHE_KEY, sa_cache_key),
                )
            else:
                registry = parse_registry(image)
                registry_key = _REGISTRY_KEYS.get(registry)
                if registry_key is None:
                    registry_key = generate_cache_key(registry)
                    if len(_REGISTRY_KEYS) >= _HOST_MEMO_SIZE:
                        _REGISTRY_KEYS.clear()
                    _REGISTRY_KEYS[registry] = registry_key
                keys = (generate_cache_key(image), registry_key, _GLOBAL_KEY)
        except CacheKeyError:
            self.cache.maybe_purge()  # the kubelet purges before it builds the first key
            raise
        return self.cache.lookup(keys)

    def _service_account(
        self, pod: PodInfo, ta: internal.ServiceAccountTokenAttributes
    ) -> tuple[str, dict[str, str], ServiceAccountCoordinates]:
        if self.get_service_account is None or self.get_service_account_token is None:
            raise ServiceAccountError(
                "provider needs a service account token, but no service account source is set"
            )
        sa = self.get_service_account(pod.namespace, pod.service_account_name)
        annotations: dict[str, str] = {}
        for key in ta.required_service_account_annotation_keys:
            if key not in sa.annotations:
                raise MissingAnnotationError(
                    f"required annotation {key} not found on service account "
                    f"{pod.namespace}/{pod.service_account_name}"
                )
            annotations[key] = sa.annotations[key]
        for key in ta.optional_service_account_annotation_keys:
            if key in sa.annotations:
                annotations[key] = sa.annotations[key]
        token = self.get_service_account_token(
            TokenRequest(
                namespace=pod.namespace,
                service_account_name=pod.service_account_name,
                service_account_uid=sa.uid,
                audience=ta.service_account_token_audience,
                pod_name=pod.name,
                pod_uid=pod.uid,
            )
        )
        coords = ServiceAccountCoordinates(
            uid=sa.uid, namespace=pod.namespace, name=pod.service_account_name
        )
        return token, annotations, coords


_HOST_MEMO_SIZE = 4096
_GLOBAL_KEY = generate_cache_key(GLOBAL_CACHE_KEY)
_REGISTRY_KEYS: dict[str, bytes] = {}  # registry -> generate_cache_key(registry)


@functools.lru_cache(maxsize=1024)
def _image_allowed(match_images: tuple[str, ...], image: str) -> bool:
    # The cold path, for targets that are not plain (never a normalised image name).
    return any(urls_match_str(m, image) for m in match_images)


def _token_hash(token: str) -> str:
    if not token:
        return ""
    return "sha256:" + sha256(token.encode("utf-8")).hexdigest()
