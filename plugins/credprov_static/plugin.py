"""The handler of ``static-credential-provider``: credentials from a file, with a mirror.

Without a mirror (or for an image the mirror does not serve) the answer is what the kubelet
would find if the file were the node's docker config: every credential whose key matches the
image, under that key, so the kubelet's keyring applies its own order (reverse bytewise by
key) and the ``index.docker.io`` fallback. Which keys are returned depends on
``cacheKeyType``, because the kubelet (and the plugin cache) reuse one answer for every image
that shares the cache key: ``Image`` returns the keys matching the image, ``Registry`` the
keys whose host matches the image's registry, ``Global`` every key.

For an image a mirror serves, the answer follows dynamic-credential-provider: one credential
for the mirror (looked up for the image's path on the mirror endpoint) and, unless the
strategy is ``MirrorCredentialsOnly``, one for the upstream registry. An ``auth`` map holds
one credential per key, and the kubelet tries the credentials of every matching key, the
keys in reverse bytewise order, so the two are ordered by their keys: the one to try first
goes under the image's repository (``docker.io/library/nginx``), the other under its
registry (``docker.io``), a prefix of it, which therefore sorts after it.
dynamic-credential-provider uses a globbed domain (``*.*``) for the second key; the registry
sorts last for the same reason and reads better. Such answers are always cached per
``Image``: their first key matches this repository only.
"""

from __future__ import annotations

from credprov.sdk import (
    Context,
    InvalidImageError,
    ProviderError,
    Request,
    Response,
    is_default_registry_match,
    parse_image_name,
    urls_match_str,
)
from credprov_static.config import (
    Credential,
    Mirror,
    StaticConfig,
    config_path,
    load,
)
from credprov_static.fields import MIRROR_FIRST, MIRROR_ONLY

_DOCKER_HUB_KEY = "index.docker.io"


def provide(request: Request, ctx: Context) -> Response:
    """Answer ``request`` from the credentials file named by ``--config``."""
    if ctx.options.get("go-version"):
        from credprov.sdk import CredprovError, use_go

        try:
            use_go(ctx.options["go-version"])
        except CredprovError as exc:
            raise ProviderError(f"--go-version: {exc}") from None
    cfg = load(config_path(ctx.options.get("config")))
    ctx.log(3, f"loaded {len(cfg.credentials)} credential(s) from {cfg.path} ({cfg.format})")
    try:
        # The kubelet sends the repository already normalised (no tag or digest); parse
        # anyway so that the image-specific keys below always match what it looks up.
        image = parse_image_name(request.image)
    except InvalidImageError as exc:
        raise ProviderError(f"invalid image {request.image!r}: {exc}") from None
    if cfg.mirror is not None and is_mirrored(cfg.mirror, image):
        return _mirrored(cfg, cfg.mirror, image, ctx)
    key_type = _cache_key_type(cfg, image)
    creds = select(cfg.credentials, image, key_type)
    ctx.log(2, f"{image}: {len(creds)} credential(s) under {_keys(creds)} ({key_type})")
    return Response({c.key: (c.username, c.password) for c in creds}, key_type, cfg.cache_duration)


def _keys(creds: list[Credential]) -> str:
    return ", ".join(c.key for c in creds) or "no key"


def _host(key: str) -> str:
    return key.split("/", 1)[0]


def lookup(creds: tuple[Credential, ...], image: str) -> list[Credential]:
    """The credentials the kubelet's keyring would try for ``image``, in its order."""
    found = [c for c in creds if urls_match_str(c.key, image)]  # creds are in keyring order
    if not found and is_default_registry_match(image):
        found = [c for c in creds if c.key == _DOCKER_HUB_KEY]
    return found


def select(creds: tuple[Credential, ...], image: str, key_type: str) -> list[Credential]:
    """The credentials to answer with, so that the answer holds for every image that
    shares its cache key (see the module docstring)."""
    if key_type == "Image":
        return lookup(creds, image)
    if key_type == "Global":
        return list(creds)
    registry = _host(image)
    hub = is_default_registry_match(image)
    return [
        c
        for c in creds
        if urls_match_str(_host(c.key), registry) or (hub and c.key == _DOCKER_HUB_KEY)
    ]


def is_mirrored(mirror: Mirror, image: str) -> bool:
    """Whether ``image`` is served by ``mirror`` (never an image on the mirror itself)."""
    if _host(image) == mirror.host:
        return False
    if mirror.upstreams is None:
        return True
    return any(urls_match_str(pattern, image) for pattern in mirror.upstreams)


def _cache_key_type(cfg: StaticConfig, image: str) -> str:
    mirror = cfg.mirror
    if mirror is None or cfg.cache_key_type != "Registry" or mirror.upstreams is None:
        # Without upstreams only the mirror's own images are not mirrored, and no mirrored
        # image shares their registry. (Global with a mirror is refused by the config.)
        return cfg.cache_key_type
    registry = _host(image)
    if any(urls_match_str(_host(pattern), registry) for pattern in mirror.upstreams):
        # Other images of this registry are mirrored: a Registry answer cached for this
        # one would be reused for them without the mirror credentials.
        return "Image"
    return "Registry"


def _mirrored(cfg: StaticConfig, mirror: Mirror, image: str, ctx: Context) -> Response:
    registry, _, repository = image.partition("/")
    # As dynamic-credential-provider: the mirror serves upstream paths under its own path.
    mirror_image = f"{mirror.host}{mirror.path}/{repository}"
    mirror_cred = next(iter(lookup(cfg.credentials, mirror_image)), None)
    upstream_cred = None
    if mirror.strategy != MIRROR_ONLY:
        upstream_cred = next(iter(lookup(cfg.credentials, image)), None)
    if mirror.strategy == MIRROR_FIRST:
        order = [mirror_cred, upstream_cred]
    else:
        order = [upstream_cred, mirror_cred]
    present = [c for c in order if c is not None]
    auth: dict[str, tuple[str, str]] = {}
    if present:
        auth[image] = (present[0].username, present[0].password)
    if len(present) == 2 and (present[1].username, present[1].password) != auth[image]:
        auth[registry] = (present[1].username, present[1].password)
    ctx.log(
        2,
        f"{image}: mirrored by {mirror.host}{mirror.path} ({mirror.strategy}): "
        f"mirror credential {'found' if mirror_cred else 'not found'} for {mirror_image}"
        + (
            ""
            if mirror.strategy == MIRROR_ONLY
            else f", upstream credential {'found' if upstream_cred else 'not found'}"
        ),
    )
    return Response(auth, "Image", cfg.cache_duration)
